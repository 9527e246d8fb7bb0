// SPDX-License-Identifier: MIT
/*
 * libexanet, RDMA: registrations, remote addresses, transfers,
 * notifications.
 * The library as a whole: libexanet.c; private header libexanet-int.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "libexanet.h"
#include "libexanet-int.h"
#include "exa_clock.h"
#include "exa_cpu.h"
#include "exa_endian.h"

/* ------------------------------------------------------------------ RDMA */


#define RDMA_VA_LIMIT (1ull << EXANET_RDMA_VA_BITS)

EXPORT int exanet_raddr_make(uint32_t node, uint32_t rank, uint64_t va,
			     struct exanet_raddr *out)
{
	if (!out || node > EXANET_RDMA_REMOTE_NODE_MASK ||
	    rank > EXANET_RDMA_REMOTE_RANK_MASK || va >= RDMA_VA_LIMIT)
		return -EINVAL;
	out->node = node;
	out->rank = rank;
	out->va = va;
	return 0;
}

EXPORT int exanet_raddr_encode(const struct exanet_raddr *ra,
			       uint8_t out[EXANET_RADDR_WIRE_SIZE])
{
	struct exanet_raddr chk;

	if (!ra || !out || exanet_raddr_make(ra->node, ra->rank, ra->va, &chk))
		return -EINVAL;
	exa_put_le64(out, EXANET_RDMA_REMOTE(ra->node, ra->rank));
	exa_put_le64(out + 8, ra->va);
	return 0;
}

EXPORT int exanet_raddr_decode(const uint8_t in[EXANET_RADDR_WIRE_SIZE],
			       struct exanet_raddr *out)
{
	uint64_t remote, va;

	if (!in || !out)
		return -EINVAL;
	remote = exa_get_le64(in);
	va = exa_get_le64(in + 8);
	if (remote & ~(EXANET_RDMA_REMOTE_NODE_MASK |
		       (EXANET_RDMA_REMOTE_RANK_MASK << EXANET_RDMA_REMOTE_RANK_SHIFT)))
		return -EINVAL;
	return exanet_raddr_make(EXANET_RDMA_REMOTE_NODE(remote),
				 EXANET_RDMA_REMOTE_RANK(remote), va, out);
}

EXPORT int exanet_raddr_add(struct exanet_raddr *ra, uint64_t off)
{
	if (!ra || off >= RDMA_VA_LIMIT || ra->va + off >= RDMA_VA_LIMIT)
		return -EINVAL;
	ra->va += off;
	return 0;
}

EXPORT int exanet_mr_raddr(const struct exanet_mr *mr, const void *ptr,
			   struct exanet_raddr *out)
{
	uintptr_t p = (uintptr_t)ptr, a;

	if (!mr || !out)
		return -EINVAL;
	a = (uintptr_t)mr->addr;
	if (p < a || p - a >= mr->len)
		return -EINVAL;
	return exanet_raddr_make(mr->node, mr->rank, (uint64_t)p, out);
}

EXPORT int exanet_rdma_query(struct exanet_dev *dev, struct exanet_rdma_info *info)
{
	if (!dev || !info)
		return -EINVAL;
	if (ioctl(dev->fd, EXANET_IOC_RDMA_INFO, info) < 0)
		return -errno;
	return 0;
}

EXPORT int exanet_reg_mr(struct exanet_dev *dev, void *addr, size_t len,
			 uint32_t access, struct exanet_mr **mrp)
{
	struct exanet_reg_mr req = { 0 };
	struct exanet_mr *mr;
	int err;

	if (!dev || !mrp)
		return -EINVAL;
	*mrp = NULL;
	if (access & ~(uint32_t)EXANET_MR_FLAGS_MASK)
		return -EINVAL;
	/* addr NULL and len 0 on demand: the implicit registration */
	if ((!addr || !len) &&
	    (addr || len || !(access & EXANET_MR_ON_DEMAND)))
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	req.addr = (uintptr_t)addr;
	req.len = len;
	req.access = access;
	if (ioctl(dev->fd, EXANET_IOC_REG_MR, &req) < 0) {
		err = -errno;
		free(mr);
		return err;
	}
	mr->addr = addr;
	/* implicit: every address below 2^47 (x86-64 user space) */
	mr->len = len ? len : (size_t)1 << 47;
	mr->handle = req.handle;
	mr->node = req.node_id;
	mr->rank = req.rank;
	mr->access = access & EXANET_MR_ACCESS_MASK ? access :
		     access | EXANET_MR_ACCESS_MASK;
	mr->dev = dev;
	mr->next = dev->mrs;
	dev->mrs = mr;
	*mrp = mr;
	return 0;
}

EXPORT int exanet_reg_mr_implicit(struct exanet_dev *dev, uint32_t access,
				  struct exanet_mr **mrp)
{
	return exanet_reg_mr(dev, NULL, 0, access | EXANET_MR_ON_DEMAND, mrp);
}

EXPORT int exanet_dereg_mr(struct exanet_mr *mr)
{
	struct exanet_mr **pp;
	int err = 0;

	if (!mr || !mr->dev)
		return -EINVAL;
	for (pp = &mr->dev->mrs; *pp && *pp != mr; pp = &(*pp)->next)
		;
	if (!*pp)
		return -EINVAL;
	*pp = mr->next;
	if (ioctl(mr->dev->fd, EXANET_IOC_DEREG_MR, &mr->handle) < 0)
		err = -errno;
	free(mr);
	return err;
}

/*
 * Notification waits read memory, which the NI does not see: between two
 * looks at the record they read EXANET_RDMA_S_NOTIFS of one of the
 * process's RDMA pages, so that the NI takes in pending traffic at once
 * (an emulated NI otherwise waits for its fabric thread to wake up, tens of
 * microseconds) and knows the process waits.  Any open page will do (the
 * newest is at hand); closing it waits for polls in progress (the lock prefers writers,
 * and an uncontended read lock makes no system call).
 */
static pthread_rwlock_t notif_poller_lock;
static pthread_once_t notif_poller_once = PTHREAD_ONCE_INIT;
static struct exanet_rdma *notif_pollers;	/* newest first */

static void notif_poller_init(void)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&notif_poller_lock, &a);
	pthread_rwlockattr_destroy(&a);
}

static void notif_poller_add(struct exanet_rdma *r)
{
	pthread_once(&notif_poller_once, notif_poller_init);
	pthread_rwlock_wrlock(&notif_poller_lock);
	r->pnext = notif_pollers;
	notif_pollers = r;
	pthread_rwlock_unlock(&notif_poller_lock);
}

static void notif_poller_remove(struct exanet_rdma *r)
{
	struct exanet_rdma **pp;

	pthread_once(&notif_poller_once, notif_poller_init);
	pthread_rwlock_wrlock(&notif_poller_lock);
	for (pp = &notif_pollers; *pp && *pp != r; pp = &(*pp)->pnext)
		;
	if (*pp)
		*pp = r->pnext;
	pthread_rwlock_unlock(&notif_poller_lock);
}

/* Read NOTIFS of an open RDMA page (the newest), if the process has one. */
static void notif_poll_ni(void)
{
	pthread_once(&notif_poller_once, notif_poller_init);
	if (pthread_rwlock_rdlock(&notif_poller_lock))
		return;
	if (notif_pollers)
		(void)mmio_read64(notif_pollers->regs, EXANET_RDMA_S_NOTIFS);
	pthread_rwlock_unlock(&notif_poller_lock);
}

EXPORT int exanet_rdma_alloc(struct exanet_dev *dev, struct exanet_rdma **rdmap)
{
	struct exanet_rdma_alloc req = { 0 };
	struct exanet_rdma *r;
	void *page;
	int err;

	if (!dev || !rdmap)
		return -EINVAL;
	*rdmap = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (ioctl(dev->fd, EXANET_IOC_RDMA_ALLOC, &req) < 0) {
		err = -errno;
		free(r);
		return err;
	}
	page = mmap(NULL, req.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    dev->fd, (off_t)req.mmap_offset);
	if (page == MAP_FAILED) {
		err = -errno;
		ioctl(dev->fd, EXANET_IOC_RDMA_FREE, &req.page);
		free(r);
		return err;
	}
	r->dev = dev;
	r->page = req.page;
	r->rank = req.rank;
	r->node = req.node_id;
	r->regs = page;
	r->next = dev->rdmas;
	dev->rdmas = r;
	notif_poller_add(r);
	*rdmap = r;
	return 0;
}

EXPORT int exanet_rdma_free(struct exanet_rdma *r)
{
	struct exanet_rdma **pp;
	int err = 0;

	if (!r || !r->dev)
		return -EINVAL;
	for (pp = &r->dev->rdmas; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (!*pp)
		return -EINVAL;
	*pp = r->next;
	notif_poller_remove(r);
	if (r->coll)
		exanet_coll_close(r->coll);
	munmap((void *)r->regs, EXANET_RDMA_PAGE_SIZE);
	if (ioctl(r->dev->fd, EXANET_IOC_RDMA_FREE, &r->page) < 0)
		err = -errno;
	free(r);
	return err;
}

EXPORT uint32_t exanet_rdma_page(const struct exanet_rdma *r)
{
	return r ? r->page : 0;
}

EXPORT uint32_t exanet_rdma_rank(const struct exanet_rdma *r)
{
	return r ? r->rank : EXANET_RDMA_NO_RANK;
}

EXPORT uint32_t exanet_rdma_node(const struct exanet_rdma *r)
{
	return r ? r->node : 0;
}

static inline volatile uint8_t *rdma_slot(const struct exanet_rdma *r, unsigned int slot)
{
	return r->regs + (size_t)slot * EXANET_RDMA_CHAN_STRIDE;
}

EXPORT uint64_t exanet_rdma_status(const struct exanet_rdma *r, unsigned int slot)
{
	if (!r || slot >= EXANET_RDMA_CHANS)
		return 0;
	return mmio_read64(rdma_slot(r, slot), EXANET_RDMA_S_STATUS);
}

EXPORT uint64_t exanet_rdma_done_bytes(const struct exanet_rdma *r, unsigned int slot)
{
	if (!r || slot >= EXANET_RDMA_CHANS)
		return 0;
	return mmio_read64(rdma_slot(r, slot), EXANET_RDMA_S_DONE_BYTES);
}

EXPORT int exanet_rdma_error_errno(unsigned int error)
{
	switch (error) {
	case EXANET_RDMA_E_NONE:	return 0;
	case EXANET_RDMA_E_BAD_DESC:	return -EINVAL;
	case EXANET_RDMA_E_NO_ROUTE:	return -EHOSTUNREACH;
	case EXANET_RDMA_E_PDID:	return -EACCES;
	case EXANET_RDMA_E_REMOTE_CTX:	return -ECONNREFUSED;
	case EXANET_RDMA_E_REMOTE_DMA:	return -EREMOTEIO;
	case EXANET_RDMA_E_LOCAL_DMA:	return -EFAULT;
	case EXANET_RDMA_E_TIMEOUT:	return -ETIMEDOUT;
	case EXANET_RDMA_E_NOTIFY_DMA:	return -EBADMSG;
	case EXANET_RDMA_E_ABORTED:	return -ECANCELED;
	case EXANET_RDMA_E_REMOTE_FAULT: return -ENXIO;
	case EXANET_RDMA_E_LOCAL_FAULT:	return -EPERM;
	default:			return -EIO;
	}
}

EXPORT const char *exanet_rdma_error_str(unsigned int error)
{
	static const char *const names[] = {
		"none", "bad descriptor", "no route", "PDID mismatch",
		"remote context absent/disabled", "remote DMA fault",
		"local DMA fault", "timeout", "notification DMA fault", "aborted",
		"remote on-demand fault refused", "local on-demand fault refused",
	};

	return error < sizeof(names) / sizeof(names[0]) ? names[error] : "unknown";
}

EXPORT int exanet_rdma_status_errno(uint64_t status)
{
	switch (EXANET_RDMA_ST_STATE(status)) {
	case EXANET_RDMA_DONE:
		return 0;
	case EXANET_RDMA_ONGOING:
		return -EINPROGRESS;
	case EXANET_RDMA_IDLE:
		return -ENOMSG;
	case EXANET_RDMA_ERROR: {
		int e = exanet_rdma_error_errno(EXANET_RDMA_ST_ERROR(status));

		return e ? e : -EIO;
	}
	default:
		return -EIO;
	}
}

static int rdma_args_ok(const struct exanet_rdma *r, const void *local,
			const struct exanet_raddr *ra, size_t len,
			const struct exanet_rdma_opts *o)
{
	uint64_t l = (uintptr_t)local;

	if (!r || !local || !ra || !len || len > EXANET_RDMA_MAX_LEN)
		return 0;
	if (l >= RDMA_VA_LIMIT || l + len > RDMA_VA_LIMIT)
		return 0;
	if (ra->node > EXANET_RDMA_REMOTE_NODE_MASK || ra->rank > EXANET_RDMA_REMOTE_RANK_MASK ||
	    ra->va >= RDMA_VA_LIMIT || ra->va + len > RDMA_VA_LIMIT)
		return 0;
	if (o && ((o->notify_va & 7) || ((uintptr_t)o->lcomp & 7)))
		return 0;
	return 1;
}

/* Stage the descriptor and trigger: 8 stores, fence before the trigger. */
static void rdma_write_desc(struct exanet_rdma *r, unsigned int slot, uint64_t local,
			    const struct exanet_raddr *ra, size_t len,
			    const struct exanet_rdma_opts *o)
{
	volatile uint8_t *s = rdma_slot(r, slot);

	if (o && o->lcomp)
		__atomic_store_n(&o->lcomp->flags, 0, __ATOMIC_RELAXED);
	mmio_write64(s, EXANET_RDMA_D_LOCAL_VA, local);
	mmio_write64(s, EXANET_RDMA_D_REMOTE_VA, ra->va);
	mmio_write64(s, EXANET_RDMA_D_REMOTE, EXANET_RDMA_REMOTE(ra->node, ra->rank));
	mmio_write64(s, EXANET_RDMA_D_LENGTH, len);
	mmio_write64(s, EXANET_RDMA_D_NOTIFY_VA, o ? o->notify_va : 0);
	mmio_write64(s, EXANET_RDMA_D_TAG, o ? o->tag : 0);
	mmio_write64(s, EXANET_RDMA_D_LCOMP_VA, o ? (uintptr_t)o->lcomp : 0);
	store_fence();
	mmio_write64(s, EXANET_RDMA_D_CTRL, 0);
}

/* Claim a free channel among n (bit set in *mask) starting near *cursor. */
static int rdma_claim(uint32_t *mask, uint32_t *cursor, unsigned int n)
{
	uint32_t start = __atomic_load_n(cursor, __ATOMIC_RELAXED);

	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = (start + k) % n;
		uint32_t bit = 1u << i;

		if (__atomic_load_n(mask, __ATOMIC_RELAXED) & bit)
			continue;
		if (!(__atomic_fetch_or(mask, bit, __ATOMIC_ACQUIRE) & bit)) {
			__atomic_store_n(cursor, (i + 1) % n, __ATOMIC_RELAXED);
			return (int)i;
		}
	}
	return -EAGAIN;
}

static void rdma_unclaim(struct exanet_rdma *r, unsigned int slot)
{
	if (slot < EXANET_RDMA_WCHANS)
		__atomic_fetch_and(&r->wclaim, ~(1u << slot), __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&r->rclaim, ~(1u << (slot - EXANET_RDMA_WCHANS)),
				   __ATOMIC_RELEASE);
}

static int rdma_post_on(struct exanet_rdma *r, unsigned int slot, uint64_t local,
			const struct exanet_raddr *ra, size_t len,
			const struct exanet_rdma_opts *o)
{
	uint64_t st = mmio_read64(rdma_slot(r, slot), EXANET_RDMA_S_STATUS);

	if (EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_ONGOING)
		return -EBUSY;
	rdma_write_desc(r, slot, local, ra, len, o);
	return (int)slot;
}

EXPORT int exanet_rdma_post_write_on(struct exanet_rdma *r, unsigned int slot,
				     const void *src, const struct exanet_raddr *dst,
				     size_t len, const struct exanet_rdma_opts *opts)
{
	if (!rdma_args_ok(r, src, dst, len, opts) || slot >= EXANET_RDMA_WCHANS)
		return -EINVAL;
	return rdma_post_on(r, slot, (uintptr_t)src, dst, len, opts);
}

EXPORT int exanet_rdma_post_read_on(struct exanet_rdma *r, unsigned int slot,
				    void *dst, const struct exanet_raddr *src,
				    size_t len, const struct exanet_rdma_opts *opts)
{
	if (!rdma_args_ok(r, dst, src, len, opts) || slot < EXANET_RDMA_WCHANS ||
	    slot >= EXANET_RDMA_CHANS)
		return -EINVAL;
	return rdma_post_on(r, slot, (uintptr_t)dst, src, len, opts);
}

EXPORT int exanet_rdma_post_write(struct exanet_rdma *r, const void *src,
				  const struct exanet_raddr *dst, size_t len,
				  const struct exanet_rdma_opts *opts)
{
	int i, ret;

	if (!rdma_args_ok(r, src, dst, len, opts))
		return -EINVAL;
	i = rdma_claim(&r->wclaim, &r->wcursor, EXANET_RDMA_WCHANS);
	if (i < 0)
		return i;
	ret = rdma_post_on(r, EXANET_RDMA_WCHAN(i), (uintptr_t)src, dst, len, opts);
	if (ret < 0)
		rdma_unclaim(r, EXANET_RDMA_WCHAN(i));
	return ret;
}

EXPORT int exanet_rdma_post_read(struct exanet_rdma *r, void *dst,
				 const struct exanet_raddr *src, size_t len,
				 const struct exanet_rdma_opts *opts)
{
	int i, ret;

	if (!rdma_args_ok(r, dst, src, len, opts))
		return -EINVAL;
	i = rdma_claim(&r->rclaim, &r->rcursor, EXANET_RDMA_RCHANS);
	if (i < 0)
		return i;
	ret = rdma_post_on(r, EXANET_RDMA_RCHAN(i), (uintptr_t)dst, src, len, opts);
	if (ret < 0)
		rdma_unclaim(r, EXANET_RDMA_RCHAN(i));
	return ret;
}

EXPORT int exanet_rdma_poll(struct exanet_rdma *r, unsigned int slot, uint64_t *statusp)
{
	uint64_t st;
	int ret;

	if (!r || slot >= EXANET_RDMA_CHANS)
		return -EINVAL;
	st = mmio_read64(rdma_slot(r, slot), EXANET_RDMA_S_STATUS);
	if (statusp)
		*statusp = st;
	ret = exanet_rdma_status_errno(st);
	if (ret != -EINPROGRESS) {
		/* The NI wrote the data before it reported the state. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		rdma_unclaim(r, slot);
	}
	return ret;
}

EXPORT int exanet_rdma_wait(struct exanet_rdma *r, unsigned int slot,
			    int64_t timeout_ns, uint64_t *statusp)
{
	struct exa_wait d;
	int ret;

	exa_wait_init(&d, timeout_ns);
	for (;;) {
		ret = exanet_rdma_poll(r, slot, statusp);
		if (ret != -EINPROGRESS) {
			exa_wait_done(&d);
			return ret;
		}
		if (exa_wait_poll(&d))
			return ret;
	}
}

EXPORT int exanet_rdma_notif_poll(struct exanet_rdma_notif *n, struct exanet_rdma_notif *out)
{
	uint32_t f;

	if (!n)
		return -EINVAL;
	f = __atomic_load_n((volatile uint32_t *)&n->flags, __ATOMIC_ACQUIRE);
	if (!(f & EXANET_RDMA_N_VALID))
		return 0;
	if (out) {
		memcpy(out, (const void *)n, sizeof(*out));
		out->flags = f;
	}
	__atomic_store_n((volatile uint32_t *)&n->flags, 0, __ATOMIC_RELEASE);
	return 1;
}

EXPORT int exanet_rdma_notif_wait(struct exanet_rdma_notif *n, struct exanet_rdma_notif *out,
				  int64_t timeout_ns)
{
	struct exa_wait d;
	int ret;

	if (!n)
		return -EINVAL;
	exa_wait_init(&d, timeout_ns);
	ret = exanet_rdma_notif_poll(n, out);
	while (!ret) {
		notif_poll_ni();
		ret = exanet_rdma_notif_poll(n, out);
		if (!ret && exa_wait_poll(&d))
			return -ETIMEDOUT;
	}
	exa_wait_done(&d);
	return ret;
}

EXPORT void exanet_rdma_notif_reset(struct exanet_rdma_notif *n)
{
	if (n)
		__atomic_store_n((volatile uint32_t *)&n->flags, 0, __ATOMIC_RELEASE);
}
