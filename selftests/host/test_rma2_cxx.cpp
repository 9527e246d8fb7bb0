// SPDX-License-Identifier: MIT
/*
 * The public headers in C++ (nhtl-extoll / libhbp are C++ clients), next to
 * a pscom-style Linux list.h that defines struct list_head, list_add,
 * LIST_HEAD, INIT_LIST_HEAD, likely/unlikely after our headers.  Prints TAP.
 */
#include <rma2.h>
#include <rma2_ioctl.h>	/* nhtl-extoll / libhbp include it */
#include <pmap.h>
#include <velo2.h>
#include <velo2_mod.h>
#include <sys/ioctl.h>

/* pscom's list.h (abridged): must not clash with anything from rma2.h */
#ifndef _LINUX_LIST_H
struct list_head { struct list_head *next, *prev; };
#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)
#define INIT_LIST_HEAD(ptr) do { (ptr)->next = (ptr); (ptr)->prev = (ptr); } while (0)
static inline void list_add(struct list_head *n, struct list_head *h)
{
	n->next = h->next; n->prev = h; h->next->prev = n; h->next = n;
}
#endif

#include <cstdio>

struct Conn {
	RMA2_Port port = nullptr;
	RMA2_Handle handle = nullptr;
	RMA2_VPID vpid = RMA2_VPID_ANY;		/* default member initializer (libhbp) */
	RMA2_Region region{};			/* by value */
	velo2_port_t vport{};
	velo2_connection_t vcon{};
};

int main()
{
	int n = 0, fail = 0;
	Conn c;
	LIST_HEAD(lh);
	struct list_head e;
	RMA2_Connection_Options o = RMA2_Connection_Options(uint32_t(RMA2_CONN_PHYSICAL) |
							    uint32_t(RMA2_CONN_RRA));
	char buf[100];

	list_add(&e, &lh);
	std::printf("TAP version 13\n1..5\n");
	++n;
	if (!(c.vpid == 0xffff && c.port == nullptr && o == 4)) { fail++; std::printf("not "); }
	std::printf("ok %d cxx_defaults\n", n);
	++n;
	if (c.vcon.dest.raw != 0 || c.vcon.state_map != nullptr || c.vport.map != nullptr) {
		fail++;
		std::printf("not ");
	}
	std::printf("ok %d cxx_velo_zero_init\n", n);
	++n;
	rma2_serror(RMA2_ERR_INV_PORT, buf, int(sizeof(buf)));
	if (buf[0] == 0) { fail++; std::printf("not "); }
	std::printf("ok %d cxx_serror\n", n);
	++n;
	if (uint32_t(VELO2_ADDR_PACK(1, 2)) != 0x20001u) { fail++; std::printf("not "); }
	std::printf("ok %d cxx_velo2_addr_pack\n", n);
	++n;
	if (_IOC_NR(RMA2_IOCTL_REGISTER_REGION) != 10 || _IOC_NR(PMAP_IOCTL_GET_PADDR) != 6 ||
	    RMA2_IOC_MAGIC != 'k') {
		fail++;
		std::printf("not ");
	}
	std::printf("ok %d cxx_ioctl_headers\n", n);
	rma2_perror(RMA2_SUCCESS, "test_rma2_cxx");
	return fail ? 1 : 0;
}
