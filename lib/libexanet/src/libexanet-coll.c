// SPDX-License-Identifier: MIT
/*
 * libexanet: the collective unit (uapi/exanet_coll.h).  Setup through the
 * kernel (bind, group create/destroy), operations by stores to the mapped
 * collective page, completion by polling the slot's status (which lets
 * the NI model park the vCPU while nothing arrives).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "libexanet.h"
#include "libexanet-int.h"

struct exanet_coll_group {
	struct exanet_coll *coll;
	struct exanet_coll_group *next;
	uint32_t slot;
	uint32_t size;
	uint32_t rank;
	int busy;			/* started, completion not yet seen */
	/*
	 * The descriptor as last written: the NI keeps it between operations,
	 * so only what changed is stored again (each MMIO store is a trip to
	 * the device).
	 */
	int desc_valid;
	uint64_t desc[EXANET_COLL_D_CTRL / 8];
};

static inline volatile uint8_t *group_slot(const struct exanet_coll_group *g)
{
	return g->coll->regs + (size_t)g->slot * EXANET_COLL_SLOT_STRIDE;
}

EXPORT int exanet_coll_open(struct exanet_rdma *rdma, struct exanet_coll **collp)
{
	struct exanet_coll_bind req = { 0 };
	struct exanet_coll *c;
	void *page;
	int err;

	if (!rdma || !collp)
		return -EINVAL;
	*collp = NULL;
	if (rdma->coll)
		return -EBUSY;
	req.page = rdma->page;
	if (ioctl(rdma->dev->fd, EXANET_IOC_COLL_BIND, &req) < 0)
		return errno == ENOTTY ? -ENODEV : -errno;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	page = mmap(NULL, req.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    rdma->dev->fd, (off_t)req.mmap_offset);
	if (page == MAP_FAILED) {
		err = -errno;
		free(c);
		return err;
	}
	c->rdma = rdma;
	c->regs = page;
	rdma->coll = c;
	*collp = c;
	return 0;
}

EXPORT int exanet_coll_close(struct exanet_coll *c)
{
	if (!c)
		return -EINVAL;
	while (c->groups)
		exanet_coll_group_destroy(c->groups);
	munmap((void *)c->regs, EXANET_COLL_PAGE_SIZE);
	c->rdma->coll = NULL;
	free(c);
	return 0;
}

EXPORT int exanet_coll_group_create(struct exanet_coll *c, uint32_t key,
				    uint32_t size, uint32_t my_rank,
				    const uint32_t *nodes,
				    struct exanet_coll_group **grpp)
{
	struct exanet_coll_group_create req = { 0 };
	struct exanet_coll_group *g;

	if (!c || !nodes || !grpp)
		return -EINVAL;
	*grpp = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	req.page = c->rdma->page;
	req.key = key;
	req.size = size;
	req.my_rank = my_rank;
	req.members = (uintptr_t)nodes;
	if (ioctl(c->rdma->dev->fd, EXANET_IOC_COLL_GROUP_CREATE, &req) < 0) {
		int err = -errno;

		free(g);
		return err;
	}
	g->coll = c;
	g->slot = req.group;
	g->size = size;
	g->rank = my_rank;
	g->next = c->groups;
	c->groups = g;
	*grpp = g;
	return 0;
}

EXPORT int exanet_coll_group_destroy(struct exanet_coll_group *g)
{
	struct exanet_coll_group **pp;
	int err = 0;

	if (!g || !g->coll)
		return -EINVAL;
	for (pp = &g->coll->groups; *pp && *pp != g; pp = &(*pp)->next)
		;
	if (!*pp)
		return -EINVAL;
	*pp = g->next;
	if (ioctl(g->coll->rdma->dev->fd, EXANET_IOC_COLL_GROUP_DESTROY,
		  &g->slot) < 0)
		err = -errno;
	free(g);
	return err;
}

EXPORT uint32_t exanet_coll_group_size(const struct exanet_coll_group *g)
{
	return g ? g->size : 0;
}

EXPORT uint32_t exanet_coll_group_rank(const struct exanet_coll_group *g)
{
	return g ? g->rank : 0;
}

EXPORT uint32_t exanet_coll_group_slot(const struct exanet_coll_group *g)
{
	return g ? g->slot : 0;
}

EXPORT size_t exanet_coll_dtype_size(unsigned int dtype)
{
	return EXANET_COLL_DTYPE_SIZE(dtype);
}

EXPORT int exanet_coll_start(struct exanet_coll_group *g, const void *src,
			     void *dst, size_t count, unsigned int dtype,
			     unsigned int op, struct exanet_rdma_notif *lcomp,
			     uint64_t tag)
{
	volatile uint8_t *s;
	size_t esz = exanet_coll_dtype_size(dtype);
	uint64_t desc[EXANET_COLL_D_CTRL / 8];
	unsigned int i;

	if (!g || !EXANET_COLL_TYPE_VALID(dtype, op) ||
	    count > EXANET_COLL_MAX_LEN / esz || (count && (!src || !dst)) ||
	    ((uintptr_t)lcomp & 7))
		return -EINVAL;
	if (g->busy && exanet_coll_poll(g, NULL) == -EINPROGRESS)
		return -EBUSY;
	s = group_slot(g);
	desc[EXANET_COLL_D_SRC_VA / 8] = (uintptr_t)src;
	desc[EXANET_COLL_D_DST_VA / 8] = (uintptr_t)dst;
	desc[EXANET_COLL_D_COUNT / 8] = count;
	desc[EXANET_COLL_D_TYPE / 8] = EXANET_COLL_TYPE(dtype, op);
	desc[EXANET_COLL_D_LCOMP_VA / 8] = (uintptr_t)lcomp;
	desc[EXANET_COLL_D_TAG / 8] = tag;
	desc[6] = 0;			/* reserved */
	for (i = 0; i < EXANET_COLL_D_CTRL / 8; i++) {
		if (!g->desc_valid || g->desc[i] != desc[i])
			mmio_write64(s, i * 8, desc[i]);
		g->desc[i] = desc[i];
	}
	g->desc_valid = 1;
	g->busy = 1;
	/* The source must be in memory before the NI reads it. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	mmio_write64(s, EXANET_COLL_D_CTRL, 0);
	return 0;
}

EXPORT int exanet_coll_error_errno(unsigned int error)
{
	switch (error) {
	case EXANET_COLL_E_NONE:	return 0;
	case EXANET_COLL_E_BAD_DESC:	return -EINVAL;
	case EXANET_COLL_E_LOCAL_DMA:	return -EFAULT;
	case EXANET_COLL_E_MISMATCH:	return -EPROTO;
	case EXANET_COLL_E_NO_GROUP:	return -ECONNRESET;
	case EXANET_COLL_E_TIMEOUT:	return -ETIMEDOUT;
	case EXANET_COLL_E_PEER:	return -EREMOTEIO;
	case EXANET_COLL_E_ABORTED:	return -ECANCELED;
	case EXANET_COLL_E_FAILED:	return -EPIPE;
	case EXANET_COLL_E_NOMEM:	return -ENOMEM;
	default:			return -EIO;
	}
}

EXPORT const char *exanet_coll_error_str(unsigned int error)
{
	static const char *const names[] = {
		"none", "bad descriptor", "local DMA fault",
		"members started different operations",
		"a member has no such group", "a member stopped answering",
		"a member's operation failed", "aborted",
		"an earlier operation of the group failed",
		"NI out of buffer memory",
	};

	return error < sizeof(names) / sizeof(names[0]) ? names[error] :
							  "unknown";
}

EXPORT int exanet_coll_poll(struct exanet_coll_group *g, uint64_t *statusp)
{
	uint64_t st;

	if (!g)
		return -EINVAL;
	st = mmio_read64(group_slot(g), EXANET_COLL_S_STATUS);
	if (statusp)
		*statusp = st;
	if (EXANET_COLL_ST_STATE(st) != EXANET_COLL_ONGOING)
		g->busy = 0;
	switch (EXANET_COLL_ST_STATE(st)) {
	case EXANET_COLL_ONGOING:
		return -EINPROGRESS;
	case EXANET_COLL_DONE:
		/* The NI wrote the result before it reported the state. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		return 0;
	case EXANET_COLL_IDLE:
		return -ENOMSG;
	default: {
		int e = exanet_coll_error_errno(EXANET_COLL_ST_ERROR(st));

		return e ? e : -EIO;
	}
	}
}

EXPORT int exanet_coll_wait(struct exanet_coll_group *g, int64_t timeout_ns,
			    uint64_t *statusp)
{
	struct exa_wait d;
	int ret;

	exa_wait_init(&d, timeout_ns);
	for (;;) {
		ret = exanet_coll_poll(g, statusp);
		if (ret != -EINPROGRESS) {
			exa_wait_done(&d);
			return ret;
		}
		if (exa_wait_poll(&d))
			return ret;
	}
}

EXPORT int exanet_coll_allreduce(struct exanet_coll_group *g, const void *src,
				 void *dst, size_t count, unsigned int dtype,
				 unsigned int op, int64_t timeout_ns)
{
	size_t esz = exanet_coll_dtype_size(dtype);
	size_t chunk, done = 0;
	int ret;

	if (!esz)
		return -EINVAL;
	chunk = EXANET_COLL_MAX_LEN / esz;
	do {
		size_t n = count - done < chunk ? count - done : chunk;

		ret = exanet_coll_start(g, src ? (const char *)src + done * esz : NULL,
					(char *)dst + done * esz, n, dtype, op,
					NULL, 0);
		if (!ret)
			ret = exanet_coll_wait(g, timeout_ns, NULL);
		done += n;
	} while (!ret && done < count);
	return ret;
}
