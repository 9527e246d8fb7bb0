/* SPDX-License-Identifier: MIT */
/*
 * An RMA2 endpoint driven through the kernel ABI (uapi/extoll.h) and the
 * hardware contract (uapi/extoll_hw.h) directly, without librma2: for tests
 * that do what the library would refuse to do.
 */
#ifndef EXTOLL_RAW_H
#define EXTOLL_RAW_H

#include <fcntl.h>
#include <sys/ioctl.h>

#include <extoll.h>
#include <extoll_hw.h>

#include "extoll_test.h"

#define RMA_MMIO_LEN (RMA2_MMAP_REQ_SIZE + EXTOLL_PAGE_SIZE)

struct raw_ep {
	int fd;
	struct rma2_ioc_info info;
	volatile uint64_t *req;		/* 32 requester pages + state page */
	volatile uint64_t *q;		/* read-pointer page, then the queue */
	uint64_t qsize;
	uint32_t rd;
};

static inline int raw_open(struct raw_ep *e)
{
	memset(e, 0, sizeof(*e));
	e->fd = open(EXTOLL_DEV_RMA2, O_RDWR | O_CLOEXEC);
	if (e->fd < 0 || ioctl(e->fd, RMA2_IOCTL_GET_INFO, &e->info))
		return -1;
	e->qsize = e->info.notiq_size;
	e->req = mmap(NULL, RMA_MMIO_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, 0);
	e->q = mmap(NULL, RMA2_MMAP_NOTIQ_LEN(e->qsize), PROT_READ | PROT_WRITE, MAP_SHARED,
		    e->fd, RMA2_MMAP_NOTIQ_OFFSET);
	return e->req == MAP_FAILED || e->q == MAP_FAILED ? -1 : 0;
}

static inline void raw_close(struct raw_ep *e)
{
	if (e->req && e->req != MAP_FAILED)
		munmap((void *)e->req, RMA_MMIO_LEN);
	if (e->q && e->q != MAP_FAILED)
		munmap((void *)e->q, RMA2_MMAP_NOTIQ_LEN(e->qsize));
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
}

/* Three command words to requester page 'page' once the device has room (30 s). */
static inline int raw_post(struct raw_ep *e, unsigned int page, uint64_t w0, uint64_t w1,
			   uint64_t w2)
{
	volatile uint64_t *p = e->req + page * (EXTOLL_PAGE_SIZE / 8);
	double end = xt_now_s() + 30;

	while (e->req[EXTOLL_RMA_CMD_FREE / 8] == 0) {
		if (xt_now_s() > end)
			return -1;
		usleep(100);
	}
	p[0] = w0;
	p[1] = w1;
	p[2] = w2;
	__sync_synchronize();
	return 0;
}

static inline int raw_poll(struct raw_ep *e, uint64_t *w0, uint64_t *w1, double tmo)
{
	volatile uint64_t *ent;
	double end = xt_now_s() + tmo;

	for (;;) {
		ent = e->q + EXTOLL_PAGE_SIZE / 8 + 2 * (e->rd % (e->qsize / 16));
		if (ent[1]) {
			*w0 = ent[0];
			*w1 = ent[1];
			ent[1] = 0;
			e->rd++;
			return 0;
		}
		if (xt_now_s() > end)
			return -1;
		usleep(100);
	}
}

static inline int raw_reg(int fd, const void *a, uint64_t len, uint32_t flags,
			  struct rma2_ioc_region *r)
{
	memset(r, 0, sizeof(*r));
	r->addr = (uintptr_t)a;
	r->len = len;
	r->flags = flags;
	return ioctl(fd, RMA2_IOCTL_REGISTER_REGION, r);
}


#endif
