// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * librma2: notifications (queue protocol, decoding, matching, dumps),
 * memory registration, error strings, configuration.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include "extoll.h"
#include "extoll_hw.h"
#include "rma2_int.h"
#include "exa_wait.h"

#define EXPORT __attribute__((visibility("default")))

/* The API's wildcards and flags (rma2.h), mostly for matching. */
EXPORT const RMA2_Class RMA2_CLASS_ANY = 0xff;
EXPORT const RMA2_Nodeid RMA2_NODEID_ANY = 0xffff;
EXPORT const RMA2_VPID RMA2_VPID_ANY = 0xffff;
EXPORT const uint32_t RMA2_LOCK_ANY = 0xffffffffu;
EXPORT const RMA2_NLA RMA2_ANY_NLA = 0xffffffffffffffffull;
EXPORT const uint32_t RMA2_DEFAULT_FLAG = 0;
EXPORT const uint32_t RMA2_BLOCK_FLAG = 1;
EXPORT const uint32_t RMA2_MATCH_LAST_NLA_FLAG = 2;

static int port_ok(RMA2_Port p)
{
	return p && p->magic == RMA2_PORT_MAGIC;
}

/* ------------------------------------------------------------ decoding */

static uint64_t w0(const RMA2_Notification *n)
{
	return n->word0.value;
}

static uint64_t w1(const RMA2_Notification *n)
{
	return n->word1.value;
}

EXPORT RMA2_Command rma2_noti_get_cmd(RMA2_Notification *noti)
{
	return noti ? (RMA2_Command)EXTOLL_NOTI_W1_CMD(w1(noti)) : RMA2_ANY;
}

EXPORT RMA2_Notification_Spec rma2_noti_get_notification_type(RMA2_Notification *noti)
{
	return noti ? (RMA2_Notification_Spec)EXTOLL_NOTI_W1_TYPE(w1(noti)) : RMA2_NO_NOTIFICATION;
}

EXPORT RMA2_Notification_Modifier rma2_noti_get_mode(RMA2_Notification *noti)
{
	return noti ? (RMA2_Notification_Modifier)EXTOLL_NOTI_W1_MODE(w1(noti))
		    : (RMA2_Notification_Modifier)0;
}

EXPORT uint8_t rma2_noti_get_error(RMA2_Notification *noti)
{
	return noti ? (uint8_t)EXTOLL_NOTI_W1_ERR(w1(noti)) : 0;
}

EXPORT RMA2_Nodeid rma2_noti_get_remote_nodeid(RMA2_Notification *noti)
{
	return noti ? (RMA2_Nodeid)EXTOLL_NOTI_W1_RNODE(w1(noti)) : 0xffff;
}

EXPORT RMA2_VPID rma2_noti_get_remote_vpid(RMA2_Notification *noti)
{
	return noti ? (RMA2_VPID)EXTOLL_NOTI_W1_RVPID(w1(noti)) : 0xffff;
}

EXPORT uint64_t rma2_noti_get_local_address(RMA2_Notification *noti)
{
	return noti ? w0(noti) : 0;
}

EXPORT uint32_t rma2_noti_get_size(RMA2_Notification *noti)
{
	return noti ? EXTOLL_NOTI_W1_SIZE(w1(noti)) + 1u : 0;
}

EXPORT uint32_t rma2_noti_get_total_size(RMA2_NLA start_nla, RMA2_Notification *noti)
{
	if (!noti)
		return 0;
	return (uint32_t)(rma2_noti_get_local_address(noti) - start_nla) + rma2_noti_get_size(noti);
}

EXPORT uint32_t rma2_noti_get_lock_value(RMA2_Notification *noti)
{
	return noti ? EXTOLL_LOCK_W0_VALUE(w0(noti)) : 0;
}

EXPORT uint32_t rma2_noti_get_lock_number(RMA2_Notification *noti)
{
	return noti ? EXTOLL_LOCK_W0_NUM(w0(noti)) : 0;
}

EXPORT uint8_t rma2_noti_get_lock_result(RMA2_Notification *noti)
{
	return noti ? EXTOLL_LOCK_W0_RESULT(w0(noti)) : 0;
}

EXPORT uint64_t rma2_noti_get_notiput_payload(RMA2_Notification *noti)
{
	return noti ? w0(noti) : 0;
}

EXPORT uint8_t rma2_noti_get_notiput_class(RMA2_Notification *noti)
{
	return noti ? (uint8_t)(w1(noti) & 0xff) : 0;
}

/* ------------------------------------------------------------ queue */

static volatile RMA2_Notification *head(RMA2_Port p)
{
	return &p->queue[p->q_rd];
}

static int head_present(RMA2_Port p)
{
	return __atomic_load_n(&head(p)->word1.value, __ATOMIC_ACQUIRE) != 0;
}

/*
 * The queue looks empty: read EXTOLL_RMA_NOTI_COUNT, the register where the
 * NI sees a process waiting for a notification (an emulated NI takes in
 * pending traffic at once instead of when its fabric thread wakes up, as
 * libvelo2's credit read on an empty ring does), and look again; yield
 * first if the peer of the last command is on this node.  When peers
 * write notifications into the queue themselves (p->direct), only one
 * empty probe in spin_probes + 1 reads the register.
 */
static int head_present_polled(RMA2_Port p)
{
	if (head_present(p)) {
		p->empty_polls = 0;
		return 1;
	}
	/* peers write into the queue: the NI is read now and then only */
	if (p->direct && p->empty_polls < p->spin_probes) {
		p->empty_polls++;
		return 0;
	}
	(void)*(const volatile uint64_t *)(p->req_base + EXTOLL_RMA_NOTI_COUNT);
	if (head_present(p))
		return 1;
	/*
	 * The last command went to a process of this node: what it answers
	 * needs this node's CPU, maybe this very one.  Let it run.
	 */
	if (__atomic_load_n(&p->last_to_self, __ATOMIC_RELAXED))
		sched_yield();
	return head_present(p);
}

EXPORT RMA2_ERROR rma2_noti_probe(RMA2_Port port, RMA2_Notification **notification)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!notification)
		return RMA2_ERR_INV_VALUE;
	if (!port->queue || !head_present_polled(port))
		return RMA2_NO_NOTI;
	*notification = (RMA2_Notification *)head(port);
	return RMA2_SUCCESS;
}

/* Spin briefly, then yield: a 1-CPU node must let the peer process run. */
static RMA2_ERROR wait_head(RMA2_Port port)
{
	struct exa_wait wait;

	if (!port->queue)
		return RMA2_ERR_ERROR;
	exa_wait_init(&wait, EXA_WAIT_NO_LIMIT);
	while (!head_present_polled(port))
		exa_wait_poll(&wait);
	exa_wait_done(&wait);
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_noti_get_block(RMA2_Port port, RMA2_Notification **notification)
{
	RMA2_ERROR rc;

	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!notification)
		return RMA2_ERR_INV_VALUE;
	rc = wait_head(port);
	if (rc)
		return rc;
	*notification = (RMA2_Notification *)head(port);
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_noti_free(RMA2_Port port, RMA2_Notification *notification)
{
	volatile RMA2_Notification *h;

	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!port->queue)
		return RMA2_ERR_INV_VALUE;
	h = head(port);
	/* only the oldest entry, and only once it is present */
	if ((volatile RMA2_Notification *)notification != h || !head_present(port))
		return RMA2_ERR_INV_VALUE;
	h->word0.value = 0;
	__atomic_store_n(&h->word1.value, 0, __ATOMIC_RELEASE);
	port->q_rd = (port->q_rd + 1) % port->q_entries;
	if (++port->q_unpublished > RMA2_RP_LAZYNESS) {
		__atomic_store_n(port->rp_word, (uint64_t)port->q_rd, __ATOMIC_RELEASE);
		port->q_unpublished = 0;
	}
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_noti_dup(RMA2_Notification *input, RMA2_Notification *output)
{
	if (!input || !output)
		return RMA2_ERR_INV_VALUE;
	output->word0.value = input->word0.value;
	output->word1.value = input->word1.value;
	return RMA2_SUCCESS;
}

/* ------------------------------------------------------------ matching */

static int cmd_matches(RMA2_Command want, RMA2_Command have)
{
	if (want == RMA2_ANY || want == have)
		return 1;
	if (want == RMA2_GETS)
		return have == RMA2_BT_GET || have == RMA2_QW_GET ||
		       have == RMA2_GET_BT_RSP || have == RMA2_GET_QW_RSP;
	if (want == RMA2_PUTS)
		return have == RMA2_BT_PUT || have == RMA2_QW_PUT || have == RMA2_IMMEDIATE_PUT;
	return 0;
}

/*
 * The matchers inspect the head of the queue only (original semantics).
 * Checks the arguments before anything may block, takes the head (waiting
 * for one if block) and tests that it comes from nodeid / vpid (or any)
 * and that is_wanted(head, want) says it is the one asked for.
 */
static RMA2_ERROR head_match(RMA2_Port port, int block, RMA2_Nodeid nodeid, RMA2_VPID vpid,
			     int (*is_wanted)(RMA2_Notification *n, const void *want),
			     const void *want, RMA2_Notification **notification)
{
	RMA2_Notification *n;
	RMA2_ERROR rc;

	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!notification)
		return RMA2_ERR_INV_VALUE;
	rc = block ? rma2_noti_get_block(port, &n) : rma2_noti_probe(port, &n);
	if (rc)
		return rc;
	if ((vpid != RMA2_VPID_ANY && vpid != rma2_noti_get_remote_vpid(n)) ||
	    (nodeid != RMA2_NODEID_ANY && nodeid != rma2_noti_get_remote_nodeid(n)) ||
	    !is_wanted(n, want))
		return RMA2_ERR_NO_MATCH;
	*notification = n;
	return RMA2_SUCCESS;
}

/* rma2_noti_match(): a command (or a family), a notification type, an NLA. */
struct cmd_want {
	RMA2_Command cmd;
	RMA2_Notification_Spec type;
	RMA2_NLA nla;
	int flags;
};

static int is_cmd(RMA2_Notification *n, const void *want)
{
	const struct cmd_want *w = want;
	uint64_t nla = w->nla;

	if (rma2_noti_get_notification_type(n) != w->type ||
	    !cmd_matches(w->cmd, rma2_noti_get_cmd(n)))
		return 0;
	if (nla == RMA2_ANY_NLA)
		return 1;
	if ((uint32_t)w->flags & RMA2_MATCH_LAST_NLA_FLAG)
		nla -= rma2_noti_get_size(n);
	return nla == rma2_noti_get_local_address(n);
}

EXPORT RMA2_ERROR rma2_noti_match(RMA2_Port port, RMA2_Command cmd, RMA2_Nodeid nodeid,
				  RMA2_VPID vpid, RMA2_Notification_Spec type, RMA2_NLA nla,
				  int flags, RMA2_Notification **notification)
{
	struct cmd_want w = { cmd, type, nla, flags };

	return head_match(port, ((uint32_t)flags & RMA2_BLOCK_FLAG) != 0, nodeid, vpid, is_cmd,
			  &w, notification);
}

EXPORT RMA2_ERROR rma2_noti_match_block(RMA2_Port port, RMA2_Command cmd, RMA2_Nodeid nodeid,
					RMA2_VPID vpid, RMA2_Notification_Spec type, RMA2_NLA nla,
					int flags, RMA2_Notification **notification)
{
	struct cmd_want w = { cmd, type, nla, flags };

	return head_match(port, 1, nodeid, vpid, is_cmd, &w, notification);
}

/* A notification put of the class (or any). */
static int is_noti_put(RMA2_Notification *n, const void *want)
{
	RMA2_Class mclass = *(const RMA2_Class *)want;

	return rma2_noti_get_notification_type(n) == RMA2_COMPLETER_NOTIFICATION &&
	       rma2_noti_get_cmd(n) == RMA2_NOTIFICATION_PUT &&
	       (mclass == RMA2_CLASS_ANY || mclass == rma2_noti_get_notiput_class(n));
}

EXPORT RMA2_ERROR rma2_noti_noti_match(RMA2_Port port, RMA2_Class mclass, RMA2_Nodeid nodeid,
				       RMA2_VPID vpid, RMA2_Notification **notification)
{
	return head_match(port, 0, nodeid, vpid, is_noti_put, &mclass, notification);
}

EXPORT RMA2_ERROR rma2_noti_noti_match_block(RMA2_Port port, RMA2_Class mclass,
					     RMA2_Nodeid nodeid, RMA2_VPID vpid,
					     RMA2_Notification **notification)
{
	return head_match(port, 1, nodeid, vpid, is_noti_put, &mclass, notification);
}

/* A lock request or answer of the lock (or any). */
static int is_lock(RMA2_Notification *n, const void *want)
{
	uint32_t lockid = *(const uint32_t *)want;
	RMA2_Command c = rma2_noti_get_cmd(n);

	return (rma2_noti_get_notification_type(n) & RMA2_RESPONDER_NOTIFICATION) &&
	       (c == RMA2_LOCK_REQ || c == RMA2_LOCK_RSP) &&
	       (lockid == RMA2_LOCK_ANY || (lockid & 0xffffff) == rma2_noti_get_lock_number(n));
}

EXPORT RMA2_ERROR rma2_noti_lock_match(RMA2_Port port, uint32_t lockid, RMA2_Nodeid nodeid,
				       RMA2_VPID vpid, RMA2_Notification **notification)
{
	return head_match(port, 0, nodeid, vpid, is_lock, &lockid, notification);
}

EXPORT RMA2_ERROR rma2_noti_lock_match_block(RMA2_Port port, uint32_t lockid,
					     RMA2_Nodeid nodeid, RMA2_VPID vpid,
					     RMA2_Notification **notification)
{
	return head_match(port, 1, nodeid, vpid, is_lock, &lockid, notification);
}

/* ------------------------------------------------------------ dumps */

static const char *cmd_name(unsigned int c)
{
	static const char *const names[16] = {
		"BT_GET", "QW_GET", "BT_PUT", "QW_PUT", "INVALID(4)", "NOTIFICATION_PUT",
		"IMMEDIATE_PUT", "PUTS", "INVALID(8)", "INVALID(9)", "GET_BT_RSP",
		"GET_QW_RSP", "LOCK_REQ", "LOCK_RSP", "GETS", "ANY",
	};
	return names[c & 0xf];
}

static const char *type_name(unsigned int t)
{
	switch (t) {
	case 1: return "requester";
	case 2: return "responder";
	case 4: return "completer";
	default: return "mixed/invalid";
	}
}

static int format(RMA2_Notification *n, char *buf, size_t size)
{
	unsigned int c;

	if (!n)
		return snprintf(buf, size, "RMA2 notification: (null)\n");
	c = rma2_noti_get_cmd(n);
	if (c == RMA2_NOTIFICATION_PUT)
		return snprintf(buf, size,
			"RMA2 notification: word0=0x%016" PRIx64 " word1=0x%016" PRIx64 "\n"
			"  cmd %s (%u) type %s (%u) mode 0x%x error 0x%x remote node %u vpid %u\n"
			"  payload 0x%016" PRIx64 " class 0x%02x\n",
			w0(n), w1(n), cmd_name(c), c, type_name(rma2_noti_get_notification_type(n)),
			(unsigned int)rma2_noti_get_notification_type(n),
			(unsigned int)rma2_noti_get_mode(n), rma2_noti_get_error(n),
			rma2_noti_get_remote_nodeid(n), rma2_noti_get_remote_vpid(n),
			rma2_noti_get_notiput_payload(n), rma2_noti_get_notiput_class(n));
	if (c == RMA2_LOCK_REQ || c == RMA2_LOCK_RSP)
		return snprintf(buf, size,
			"RMA2 notification: word0=0x%016" PRIx64 " word1=0x%016" PRIx64 "\n"
			"  cmd %s (%u) type %s (%u) mode 0x%x error 0x%x remote node %u vpid %u\n"
			"  lock number %u result %u value %u\n",
			w0(n), w1(n), cmd_name(c), c, type_name(rma2_noti_get_notification_type(n)),
			(unsigned int)rma2_noti_get_notification_type(n),
			(unsigned int)rma2_noti_get_mode(n), rma2_noti_get_error(n),
			rma2_noti_get_remote_nodeid(n), rma2_noti_get_remote_vpid(n),
			rma2_noti_get_lock_number(n), rma2_noti_get_lock_result(n),
			rma2_noti_get_lock_value(n));
	return snprintf(buf, size,
		"RMA2 notification: word0=0x%016" PRIx64 " word1=0x%016" PRIx64 "\n"
		"  cmd %s (%u) type %s (%u) mode 0x%x error 0x%x remote node %u vpid %u\n"
		"  local address 0x%016" PRIx64 " size %u\n",
		w0(n), w1(n), cmd_name(c), c, type_name(rma2_noti_get_notification_type(n)),
		(unsigned int)rma2_noti_get_notification_type(n),
		(unsigned int)rma2_noti_get_mode(n), rma2_noti_get_error(n),
		rma2_noti_get_remote_nodeid(n), rma2_noti_get_remote_vpid(n),
		rma2_noti_get_local_address(n), rma2_noti_get_size(n));
}

EXPORT void rma2_noti_fdump(RMA2_Notification *noti, FILE *filedescriptor)
{
	char buf[512];

	if (!filedescriptor)
		return;
	format(noti, buf, sizeof(buf));
	fputs(buf, filedescriptor);
}

EXPORT void rma2_noti_dump(RMA2_Notification *noti)
{
	rma2_noti_fdump(noti, stdout);
}

/* Appends to the string already in pstring (size = total buffer bytes). */
EXPORT void rma2_noti_sdump(RMA2_Notification *noti, char *pstring, int size)
{
	size_t used;

	if (!pstring || size <= 0)
		return;
	used = strnlen(pstring, (size_t)size);
	if (used >= (size_t)size) {
		pstring[size - 1] = 0;
		return;
	}
	format(noti, pstring + used, (size_t)size - used);
}

/* ------------------------------------------------------------ registration */

static void region_fill(RMA2_Region *r, void *address, size_t size)
{
	uintptr_t a = (uintptr_t)address;
	uintptr_t start = a & ~(uintptr_t)(RMA2_REGION_PAGE_SIZE - 1);
	size_t count = (size + (a - start) + RMA2_REGION_PAGE_SIZE - 1) >> RMA2_REGION_PAGE_SHIFT;

	r->start = (void *)start;
	r->offset = (uint32_t)(a - start);
	r->count = (uint32_t)count;
	r->size = count << RMA2_REGION_PAGE_SHIFT;
	r->end = (void *)(start + r->size);
	r->refcount = 0;
}

/* Kernel registration (RMA2_IOCTL_REGISTER_REGION); fake endpoints use
 * NLA = virtual address. */
static RMA2_ERROR do_register(RMA2_Port port, RMA2_Region *r, void *address, size_t size)
{
	struct rma2_ioc_region io;

	if (port->fake) {
		r->nla = (unsigned long)(uintptr_t)r->start;
		return RMA2_SUCCESS;
	}
	memset(&io, 0, sizeof(io));
	io.addr = (uint64_t)(uintptr_t)address;
	io.len = size;
	if (ioctl(port->fd, RMA2_IOCTL_REGISTER_REGION, &io)) {
		switch (errno) {
		case ENOMEM: return RMA2_ERR_NO_MEM;
		case ENOSPC: return RMA2_ERR_ATU;
		case EINVAL: return RMA2_ERR_INV_VALUE;
		case EFAULT: return RMA2_ERR_INV_VALUE;
		default: return RMA2_ERR_ERROR;
		}
	}
	if (!io.nla || io.start != (uint64_t)(uintptr_t)r->start || io.count != r->count ||
	    io.offset != r->offset) {
		/* driver disagrees with the 4 KiB arithmetic: undo, fail */
		(void)ioctl(port->fd, RMA2_IOCTL_UNREGISTER_REGION, &io);
		return RMA2_ERR_ERROR;
	}
	r->nla = (unsigned long)io.nla;
	return RMA2_SUCCESS;
}

static RMA2_ERROR do_unregister(RMA2_Port port, RMA2_Region *r)
{
	struct rma2_ioc_region io;

	if (port->fake)
		return r->nla ? RMA2_SUCCESS : RMA2_ERR_ERROR;
	memset(&io, 0, sizeof(io));
	io.nla = r->nla;
	io.size = r->size;
	if (ioctl(port->fd, RMA2_IOCTL_UNREGISTER_REGION, &io))
		return RMA2_ERR_ERROR;
	return RMA2_SUCCESS;
}

static RMA2_ERROR check_reg(RMA2_Port port, void *address, size_t size)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!address || size == 0 || (uintptr_t)address + size < (uintptr_t)address ||
	    ((size + RMA2_REGION_PAGE_SIZE) >> RMA2_REGION_PAGE_SHIFT) > 0xfffffffful)
		return RMA2_ERR_INV_VALUE;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_register_nomalloc(RMA2_Port port, void *address, size_t size,
					 RMA2_Region *region)
{
	RMA2_Region r;
	RMA2_ERROR rc = check_reg(port, address, size);

	if (rc)
		return rc;
	if (!region)
		return RMA2_ERR_INV_VALUE;
	memset(&r, 0, sizeof(r));
	region_fill(&r, address, size);
	rc = do_register(port, &r, address, size);
	if (rc)
		return rc;
	region->start = r.start;
	region->nla = r.nla;
	region->count = r.count;
	region->offset = r.offset;
	region->end = r.end;
	region->size = r.size;
	region->refcount = 0;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_register(RMA2_Port port, void *address, size_t size, RMA2_Region **region)
{
	RMA2_Region *r;
	RMA2_ERROR rc = check_reg(port, address, size);

	if (rc)
		return rc;
	if (!region)
		return RMA2_ERR_INV_VALUE;
	pthread_mutex_lock(&port->post_lock);
	r = extoll2_list_get(&port->region_pool);
	pthread_mutex_unlock(&port->post_lock);
	if (!r)
		return RMA2_ERR_NO_MEM;
	rc = rma2_register_nomalloc(port, address, size, r);
	if (rc) {
		pthread_mutex_lock(&port->post_lock);
		extoll2_list_put(&port->region_pool, r);
		pthread_mutex_unlock(&port->post_lock);
		return rc;
	}
	r->endpoint = port;
	r->parent = NULL;
	*region = r;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_unregister_nofree(RMA2_Port port, RMA2_Region *region)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!region)
		return RMA2_ERR_INV_VALUE;
	return do_unregister(port, region);
}

EXPORT RMA2_ERROR rma2_unregister(RMA2_Port port, RMA2_Region *region)
{
	RMA2_ERROR rc;

	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!region || region->endpoint != port)
		return RMA2_ERR_INV_VALUE;
	rc = do_unregister(port, region);
	if (rc)
		return rc;
	region->endpoint = NULL;
	pthread_mutex_lock(&port->post_lock);
	extoll2_list_put(&port->region_pool, region);
	pthread_mutex_unlock(&port->post_lock);
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_register_cached(RMA2_Port port, void *address, size_t size,
				       RMA2_Region **region)
{
	return rma2_register(port, address, size, region);
}

EXPORT RMA2_ERROR rma2_unregister_cached(RMA2_Port port, RMA2_Region *region)
{
	return rma2_unregister(port, region);
}

/* Ad-hoc registration: the 4 KiB page containing 'address'. */
EXPORT RMA2_ERROR rma2_register_adhoc(RMA2_Port port, void *address, RMA2_Region **region)
{
	uintptr_t a = (uintptr_t)address;

	return rma2_register(port, address,
			     RMA2_REGION_PAGE_SIZE - (a & (RMA2_REGION_PAGE_SIZE - 1)), region);
}

EXPORT RMA2_ERROR rma2_unregister_adhoc(RMA2_Port port, RMA2_Region *region)
{
	return rma2_unregister(port, region);
}

EXPORT RMA2_ERROR rma2_get_nla(RMA2_Region *region, size_t offset, RMA2_NLA *nla)
{
	if (!region || !nla)
		return RMA2_ERR_INV_VALUE;
	*nla = (RMA2_NLA)region->nla + region->offset + offset;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_get_va(RMA2_Region *region, size_t offset, void **va)
{
	if (!region || !va)
		return RMA2_ERR_INV_VALUE;
	*va = (char *)region->start + region->offset + offset;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_get_size(RMA2_Region *region, size_t *size)
{
	if (!region || !size)
		return RMA2_ERR_INV_VALUE;
	*size = region->size;
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_get_page_count(RMA2_Region *region, size_t *count)
{
	if (!region || !count)
		return RMA2_ERR_INV_VALUE;
	*count = region->count;
	return RMA2_SUCCESS;
}

EXPORT int rma2_get_region_contained(RMA2_Region *region, void *start, size_t size)
{
	uintptr_t s = (uintptr_t)start;

	if (!region)
		return 0;
	return s >= (uintptr_t)region->start && s + size <= (uintptr_t)region->end;
}

EXPORT int rma2_get_region_overlap(RMA2_Region *region, void *start, size_t size)
{
	uintptr_t s = (uintptr_t)start;

	if (!region)
		return 0;
	return s <= (uintptr_t)region->end && s + size >= (uintptr_t)region->start;
}

EXPORT int rma2_get_region_equal(RMA2_Region *region, void *start, size_t size)
{
	if (!region)
		return 0;
	return region->start == start && region->size == size;
}

/* ------------------------------------------------------------ errors */

static const char *err_text(RMA2_ERROR e)
{
	switch (e) {
	case RMA2_SUCCESS: return "success";
	case RMA2_ERR_ERROR: return "generic error";
	case RMA2_ERR_INV_HANDLE: return "invalid connection handle";
	case RMA2_ERR_INV_PORT: return "invalid port";
	case RMA2_ERR_INV_VALUE: return "invalid parameter value";
	case RMA2_ERR_NO_ROUTE: return "no route to destination";
	case RMA2_ERR_PORTS_USED: return "all endpoints in use";
	case RMA2_ERR_NO_MEM: return "memory cannot be registered / out of memory";
	case RMA2_NO_NOTI: return "no notification available";
	case RMA2_ERR_POLL_EXCEEDED: return "polling limit exceeded";
	case RMA2_ERR_WRONG_ARG: return "wrong argument";
	case RMA2_ERR_NOT_YET: return "not implemented";
	case RMA2_ERR_NO_DESC_MEM: return "no descriptor memory, try later";
	case RMA2_ERR_NO_MATCH: return "notification did not match";
	case RMA2_ERR_WRONG_CMD: return "wrong command";
	case RMA2_ERR_NO_DEVICE: return "no EXTOLL device";
	case RMA2_ERR_NO_CONNECT: return "no connection";
	case RMA2_ERR_INVALID_VERSION: return "driver/library version mismatch";
	case RMA2_ERR_IOCTL: return "ioctl failed";
	case RMA2_ERR_MMAP: return "mmap failed";
	case RMA2_ERR_FD: return "cannot open the device file";
	case RMA2_ERR_MAP: return "region table allocation failure";
	case RMA2_ERR_DOUBLE_MAP: return "second-level table already present";
	case RMA2_ERR_NO_TABLE: return "table/region not present";
	case RMA2_ERR_NOT_FREE: return "resource still in use";
	case RMA2_ERR_PART: return "partial region match";
	case RMA2_ERR_ATU: return "ATU error";
	case RMA2_ERR_MLOCKLIMIT: return "RLIMIT_MEMLOCK reached";
	}
	return NULL;
}

EXPORT void rma2_serror(RMA2_ERROR error, char *buf, int buflen)
{
	const char *t;

	if (!buf || buflen <= 0)
		return;
	t = err_text(error);
	if (t)
		snprintf(buf, (size_t)buflen, "%s", t);
	else
		snprintf(buf, (size_t)buflen, "unknown RMA2 error %d", (int)error);
}

EXPORT void rma2_perror(RMA2_ERROR error, const char *header)
{
	char buf[128];

	rma2_serror(error, buf, sizeof(buf));
	if (header)
		fprintf(stderr, "%s: %s\n", header, buf);
	else
		fprintf(stderr, "%s\n", buf);
}

/* ------------------------------------------------------------ configuration */

static RMA2_ERROR conn_args(RMA2_Port port, RMA2_Handle handle)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (!handle || handle->magic != RMA2_CONN_MAGIC || handle->port != port)
		return RMA2_ERR_INV_HANDLE;
	return RMA2_SUCCESS;
}

static RMA2_ERROR set_options(RMA2_Port port, RMA2_Handle handle, uint32_t set, uint32_t clear)
{
	RMA2_ERROR rc = conn_args(port, handle);

	if (rc)
		return rc;
	pthread_mutex_lock(&port->post_lock);
	handle->options = (handle->options & ~clear) | set;
	handle->page = (volatile uint64_t *)(port->req_base + port->req_stride * handle->options);
	pthread_mutex_unlock(&port->post_lock);
	return RMA2_SUCCESS;
}

EXPORT RMA2_ERROR rma2_request_interrupt(RMA2_Port port, RMA2_Handle handle)
{
	return set_options(port, handle, RMA2_CONN_IRQ, 0);
}

EXPORT uint32_t rma2_get_interrupt(RMA2_Port port, RMA2_Handle handle)
{
	return conn_args(port, handle) ? 0 : !!(handle->options & RMA2_CONN_IRQ);
}

EXPORT RMA2_ERROR rma2_request_rra(RMA2_Port port, RMA2_Handle handle)
{
	return set_options(port, handle, RMA2_CONN_RRA, 0);
}

EXPORT uint32_t rma2_get_rra(RMA2_Port port, RMA2_Handle handle)
{
	return conn_args(port, handle) ? 0 : !!(handle->options & RMA2_CONN_RRA);
}

EXPORT RMA2_ERROR rma2_request_physical_access(RMA2_Port port, RMA2_Handle handle)
{
	return set_options(port, handle, 0, RMA2_CONN_TE);
}

EXPORT uint32_t rma2_get_physical_access(RMA2_Port port, RMA2_Handle handle)
{
	return conn_args(port, handle) ? 0 : !(handle->options & RMA2_CONN_TE);
}

EXPORT RMA2_ERROR rma2_request_tcs(RMA2_Port port, RMA2_Handle handle, uint32_t request_tc,
				   uint32_t response_tc)
{
	RMA2_ERROR rc = conn_args(port, handle);

	if (rc)
		return rc;
	if (request_tc > 3 || response_tc > 3)
		return RMA2_ERR_INV_VALUE;
	rc = set_options(port, handle, request_tc, 3);
	if (!rc)
		handle->response_tc = response_tc;
	return rc;
}

EXPORT RMA2_ERROR rma2_get_tcs(RMA2_Port port, RMA2_Handle handle, uint32_t *request_tc,
			       uint32_t *response_tc)
{
	RMA2_ERROR rc = conn_args(port, handle);

	if (rc)
		return rc;
	if (!request_tc || !response_tc)
		return RMA2_ERR_INV_VALUE;
	*request_tc = handle->options & 3;
	*response_tc = handle->response_tc;
	return RMA2_SUCCESS;
}

/*
 * The port's protection ID is its opener's domain (Documentation/
 * security.md).  Moving it to another ID needs CAP_NET_ADMIN: an
 * unprivileged caller gets RMA2_ERR_IOCTL with errno EPERM, unless @id is
 * already the port's ID (then nothing changes).
 */
EXPORT RMA2_ERROR rma2_set_protectionid(RMA2_Port port, uint16_t id)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (id == 0)
		return RMA2_ERR_INV_VALUE;
	if (port->fd < 0)
		return RMA2_ERR_NOT_YET;	/* fake endpoint: no device */
	if (ioctl(port->fd, RMA2_IOCTL_SET_PROTDESC, (unsigned long)id))
		return errno == EINVAL ? RMA2_ERR_INV_VALUE : RMA2_ERR_IOCTL;
	return RMA2_SUCCESS;
}

EXPORT uint32_t rma2_get_queue_size(RMA2_Port port)
{
	return port_ok(port) ? port->q_bytes : 0;
}

EXPORT RMA2_ERROR rma2_set_queue_size(RMA2_Port port, uint32_t bytes)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (bytes == 0 || (bytes & (RMA2_REGION_PAGE_SIZE - 1)))
		return RMA2_ERR_INV_VALUE;
	if (bytes == port->q_bytes)
		return RMA2_SUCCESS;
	/* The driver fixes the queue size when rma2_open maps the queue. */
	return RMA2_ERR_NOT_YET;
}

EXPORT uint32_t rma2_get_queue_segment_size(RMA2_Port port)
{
	return port_ok(port) ? port->q_seg : 0;
}

EXPORT RMA2_ERROR rma2_set_queue_segment_size(RMA2_Port port, uint32_t size)
{
	if (!port_ok(port))
		return RMA2_ERR_INV_PORT;
	if (size == 0 || (size & (RMA2_REGION_PAGE_SIZE - 1)))
		return RMA2_ERR_INV_VALUE;
	port->q_seg = size;	/* only affects how the kernel builds the queue */
	return RMA2_SUCCESS;
}

/* Commands are handed to the device synchronously by the post functions:
 * nothing is ever pending in the library, so draining is a no-op. */
EXPORT void rma2_replay_buffer_drain(RMA2_Port port)
{
	(void)port;
}

EXPORT void rma2_set_replay_mode(RMA2_Port port, RMA2_Replay_Buffer_Mode mode)
{
	if (port_ok(port) && (uint32_t)mode <= RMA2_REPLAY_ALL)
		port->replay = mode;
}

EXPORT RMA2_Replay_Buffer_Mode rma2_get_replay_buffer_mode(RMA2_Port port)
{
	return port_ok(port) ? port->replay : RMA2_REPLAY_MANUAL;
}
