// SPDX-License-Identifier: MIT
/*
 * exa_fuzz: every ioctl command of the three devices (the table), with
 * arguments filled half-valid and passed by good and bad pointers; what
 * the drivers hand out is remembered for later operations (fuzz_ops.h).
 */
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>

#include <exanet.h>
#include <extoll.h>

#include "fuzz_ops.h"

/* ------------------------------------------------------------ ioctl table */

enum argk {
	A_PTR,		/* pointer to 'size' bytes (struct or __u64) */
	A_VAL,		/* the value itself is the argument */
};

struct ioc {
	const char *name;
	int dev;
	unsigned long cmd;
	int argk;
	size_t size;
};

#define IOC(d, c, k, s) { #c, d, c, k, s }
static const struct ioc ioctls[] = {
	IOC(FD_EXANET, EXANET_IOC_GET_INFO, A_PTR, sizeof(struct exanet_info)),
	IOC(FD_EXANET, EXANET_IOC_PKT_ALLOC, A_PTR, sizeof(struct exanet_pkt_alloc)),
	IOC(FD_EXANET, EXANET_IOC_PKT_FREE, A_PTR, 4),
	IOC(FD_EXANET, EXANET_IOC_MBOX_ALLOC, A_PTR, sizeof(struct exanet_mbox_alloc)),
	IOC(FD_EXANET, EXANET_IOC_MBOX_FREE, A_PTR, 4),
	IOC(FD_EXANET, EXANET_IOC_EVENT_ARM, A_PTR, sizeof(struct exanet_event_arm)),
	IOC(FD_EXANET, EXANET_IOC_RDMA_INFO, A_PTR, sizeof(struct exanet_rdma_info)),
	IOC(FD_EXANET, EXANET_IOC_RDMA_ALLOC, A_PTR, sizeof(struct exanet_rdma_alloc)),
	IOC(FD_EXANET, EXANET_IOC_RDMA_FREE, A_PTR, 4),
	IOC(FD_EXANET, EXANET_IOC_REG_MR, A_PTR, sizeof(struct exanet_reg_mr)),
	IOC(FD_EXANET, EXANET_IOC_DEREG_MR, A_PTR, 4),
	IOC(FD_RMA2, RMA2_IOCTL_GET_NOTIQ_SIZE, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_SET_NOTIQ_SIZE, A_VAL, 0),
	IOC(FD_RMA2, RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE, A_VAL, 0),
	IOC(FD_RMA2, RMA2_IOCTL_GET_NOTIQ_SEGMENT_SIZE, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_SET_NOTIQ_WP, A_VAL, 0),
	IOC(FD_RMA2, RMA2_IOCTL_SET_NOTIQ_RP, A_VAL, 0),
	IOC(FD_RMA2, RMA2_IOCTL_GET_NOTIQ_WP, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_GET_NOTIQ_RP, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_GET_NODEID, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_GET_VPID, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_REGISTER_REGION, A_PTR, sizeof(struct rma2_ioc_region)),
	IOC(FD_RMA2, RMA2_IOCTL_UNREGISTER_REGION, A_PTR, sizeof(struct rma2_ioc_region)),
	IOC(FD_RMA2, RMA2_IOCTL_GET_MAXNODEID, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_GET_MAXVPID, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_SET_PROTDESC, A_VAL, 0),
	IOC(FD_RMA2, RMA2_IOCTL_GET_PROTDESC, A_PTR, 8),
	IOC(FD_RMA2, RMA2_IOCTL_GET_INFO, A_PTR, sizeof(struct rma2_ioc_info)),
	IOC(FD_VELO2, VELO2_IOCG_GET_RP, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCT_SET_RP, A_VAL, 0),
	IOC(FD_VELO2, VELO2_IOCG_GET_WP, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCT_SET_WP, A_VAL, 0),
	IOC(FD_VELO2, VELO2_IOCG_GET_VPID, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_MBOX_SIZE, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_SET_MBOX_SIZE, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_SEGMENT_SIZE, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_SET_SEGMENT_SIZE, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_NODEID, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_SET_TX_PROTDESC, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_TX_PROTDESC, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_SET_RX_PROTDESC, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_RX_PROTDESC, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_PROCNUM, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_NODENUM, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_SLOT_SIZE, A_PTR, 8),
	IOC(FD_VELO2, VELO2_IOCG_GET_INFO, A_PTR, sizeof(struct velo2_ioc_info)),
};
#define NIOCTLS ((int)(sizeof(ioctls) / sizeof(ioctls[0])))
_Static_assert(sizeof(ioctls) / sizeof(ioctls[0]) <= FUZZ_MAX_IOCTLS, "ioctl table");

int fuzz_ioctl_count(void)
{
	return NIOCTLS;
}

const char *fuzz_ioctl_name(int i)
{
	return ioctls[i].name;
}

int fuzz_ioctl_dev(int i)
{
	return ioctls[i].dev;
}

/* ------------------------------------------------------------ ioctl */

/* A pointer for an argument of 'size' bytes whose good copy is at good. */
static void *arg_ptr(struct fz_proc *p, struct frng *r, void *good, size_t size)
{
	switch (frng_below(r, 16)) {
	case 0:
		return NULL;
	case 1:
		return (void *)(uintptr_t)1;
	case 2:	/* straddles into the PROT_NONE page */
		memcpy(p->guard + 4096 - size / 2, good, size / 2);
		return p->guard + 4096 - size / 2;
	case 3:
		return (void *)(uintptr_t)0xffffffff81000000ull;
	case 4:
		return p->guard + 4096;
	default:
		return good;
	}
}

/* Fill the argument of ioctl i with half-valid values. */
static void fill_arg(struct fz_proc *p, struct frng *r, const struct ioc *c, void *a)
{
	uint32_t id;

	memset(a, 0, c->size);
	switch (c->cmd) {
	case EXANET_IOC_PKT_ALLOC: {
		struct exanet_pkt_alloc *x = a;

		x->flags = frng_one_in(r, 4) ? (uint32_t)rv_u64(r) : 0;
		x->iface = (uint32_t)rv_u64(r);
		break;
	}
	case EXANET_IOC_MBOX_ALLOC: {
		struct exanet_mbox_alloc *x = a;

		x->nslots = frng_below(r, 4) ? rv_pow2(r, 2, 9) : rv_pow2(r, 0, 15);
		break;
	}
	case EXANET_IOC_PKT_FREE:
	case EXANET_IOC_MBOX_FREE:
	case EXANET_IOC_RDMA_FREE:
	case EXANET_IOC_DEREG_MR:
		rv_id(p, r, &id);
		memcpy(a, &id, 4);
		break;
	case EXANET_IOC_EVENT_ARM: {
		struct exanet_event_arm *x = a;

		x->flags = frng_below(r, 4) ? (uint32_t)frng_below(r, 4) : (uint32_t)rv_u64(r);
		x->mbox_mask = frng_one_in(r, 2) ? 0 :
			       frng_one_in(r, 2) ? 1ull << frng_below(r, 64) : rv_u64(r);
		x->reserved = frng_one_in(r, 8) ? 1 : 0;
		break;
	}
	case EXANET_IOC_RDMA_ALLOC: {
		struct exanet_rdma_alloc *x = a;

		x->flags = frng_one_in(r, 4) ? (uint32_t)rv_u64(r) : 0;
		break;
	}
	case EXANET_IOC_REG_MR: {
		struct exanet_reg_mr *x = a;
		int wild = frng_one_in(r, 6);

		x->access = frng_below(r, 4) ? (uint32_t)frng_below(r, 16) : (uint32_t)rv_u64(r);
		if (frng_one_in(r, 10)) {
			/* implicit: the whole address space, never remotely writable */
			x->addr = 0;
			x->len = 0;
			x->access = EXANET_MR_ON_DEMAND | EXANET_MR_LOCAL_WRITE |
				    (frng_one_in(r, 2) ? EXANET_MR_REMOTE_READ : 0);
			break;
		}
		x->addr = rv_addr(p, r, 0);
		x->len = rv_len(r, wild);
		/* Remote writes only into scratch memory (other workers write there). */
		if (wild || (x->access & ~(uint32_t)EXANET_MR_FLAGS_MASK) ||
		    !(x->access & EXANET_MR_ACCESS_MASK))
			x->access = (x->access & ~(uint32_t)EXANET_MR_REMOTE_WRITE) |
				    EXANET_MR_LOCAL_WRITE;
		break;
	}
	case RMA2_IOCTL_REGISTER_REGION: {
		struct rma2_ioc_region *x = a;

		x->addr = rv_addr(p, r, 0);
		x->len = rv_len(r, frng_one_in(r, 6));
		x->flags = frng_below(r, 4) ? (uint32_t)frng_below(r, 2) : (uint32_t)rv_u64(r);
		x->reserved = frng_one_in(r, 8) ? (uint32_t)rv_u64(r) : 0;
		x->start = rv_u64(r);
		break;
	}
	case RMA2_IOCTL_UNREGISTER_REGION: {
		struct rma2_ioc_region *x = a;

		pthread_mutex_lock(&p->lock);
		if (p->nregs && frng_below(r, 3)) {
			unsigned int k = (unsigned int)frng_below(r, p->nregs);

			x->nla = p->nla[k];
			x->size = p->nla_size[k];
		} else {
			x->nla = rv_u64(r);
			x->size = rv_u64(r);
		}
		pthread_mutex_unlock(&p->lock);
		if (frng_one_in(r, 6))
			x->size += 4096;
		break;
	}
	case VELO2_IOCG_SET_MBOX_SIZE:
	case VELO2_IOCG_SET_SEGMENT_SIZE: {
		uint64_t v = rv_pow2(r, 12, 22);

		memcpy(a, &v, 8);
		break;
	}
	case VELO2_IOCG_SET_TX_PROTDESC:
	case VELO2_IOCG_SET_RX_PROTDESC: {
		uint64_t v = frng_one_in(r, 4) ? rv_u64(r) : rv_domain(r);

		memcpy(a, &v, 8);
		break;
	}
	default:
		if (frng_one_in(r, 4)) {
			uint64_t v = rv_u64(r);

			memcpy(a, &v, c->size < 8 ? c->size : 8);
		}
		break;
	}
	if (frng_one_in(r, 12)) {	/* a few random bytes anywhere */
		int n = 1 + (int)frng_below(r, 4);

		while (n--)
			((uint8_t *)a)[frng_below(r, c->size)] = (uint8_t)frng_next(r);
	}
}

static unsigned long val_arg(struct frng *r, const struct ioc *c)
{
	switch (c->cmd) {
	case RMA2_IOCTL_SET_NOTIQ_SIZE:
	case RMA2_IOCTL_SET_NOTIQ_SEGMENT_SIZE:
		return rv_pow2(r, 12, 22);
	case RMA2_IOCTL_SET_PROTDESC:
		return frng_one_in(r, 4) ? rv_u64(r) : rv_domain(r);
	default:
		return frng_one_in(r, 2) ? frng_below(r, 1024) : rv_u64(r);
	}
}

/* Learn what the drivers handed out, so later operations use it. */
static void learn(struct fz_proc *p, int dev, const struct ioc *c, const void *a)
{
	switch (c->cmd) {
	case EXANET_IOC_PKT_ALLOC: {
		const struct exanet_pkt_alloc *x = a;

		remember_id(p, x->iface);
		remember_off(p, dev, x->mmap_offset, EXANET_IFACE_PAGE_SIZE);
		break;
	}
	case EXANET_IOC_MBOX_ALLOC: {
		const struct exanet_mbox_alloc *x = a;

		remember_id(p, x->mbox);
		remember_off(p, dev, x->regs_offset, EXANET_IFACE_PAGE_SIZE);
		remember_off(p, dev, x->queue_offset, x->queue_size);
		break;
	}
	case EXANET_IOC_RDMA_ALLOC: {
		const struct exanet_rdma_alloc *x = a;

		remember_id(p, x->page);
		remember_off(p, dev, x->mmap_offset, x->mmap_size);
		p->rank = x->rank;
		break;
	}
	case EXANET_IOC_REG_MR:
		remember_id(p, ((const struct exanet_reg_mr *)a)->handle);
		p->rank = ((const struct exanet_reg_mr *)a)->rank;
		break;
	case RMA2_IOCTL_REGISTER_REGION: {
		const struct rma2_ioc_region *x = a;

		remember_nla(p, x->nla, x->size);
		break;
	}
	case RMA2_IOCTL_GET_INFO: {
		const struct rma2_ioc_info *x = a;

		p->vpid[FD_RMA2] = x->vpid;
		remember_off(p, dev, x->notiq_offset, RMA2_MMAP_NOTIQ_LEN(x->notiq_size));
		break;
	}
	case VELO2_IOCG_GET_INFO: {
		const struct velo2_ioc_info *x = a;

		p->vpid[FD_VELO2] = x->vpid;
		remember_off(p, dev, x->mbox_offset, VELO2_MMAP_MBOX_LEN(x->mbox_size));
		break;
	}
	default:
		break;
	}
}

int op_ioctl(struct fz_proc *p, struct frng *r)
{
	union {
		uint8_t b[256];
		uint64_t align;
	} good;
	int dev, fd = pick_file(p, r, &dev), i, ret;
	const struct ioc *c;
	unsigned long cmd;
	void *ptr = NULL;

	if (fd < 0)
		return 0;
	/* mostly a command of the file's device, sometimes another one's */
	do
		i = (int)frng_below(r, NIOCTLS);
	while (ioctls[i].dev != dev && frng_below(r, 8));
	c = &ioctls[i];
	cmd = c->cmd;
	if (frng_one_in(r, 40)) {	/* a wrong size or direction in the number */
		cmd = _IOC(frng_below(r, 4), _IOC_TYPE(c->cmd), _IOC_NR(c->cmd),
			   frng_below(r, 512));
	}
	atomic_fetch_add(&fz->ioctl_calls[i], 1);
	if (c->argk == A_VAL) {
		unsigned long v = val_arg(r, c);

		note(p, "ioctl fd %d %s value %#lx", fd, c->name, v);
		ret = ioctl(fd, cmd, v);
	} else {
		fill_arg(p, r, c, good.b);
		ptr = arg_ptr(p, r, good.b, c->size);
		note(p, "ioctl fd %d %s ptr %p", fd, c->name, ptr);
		ret = ioctl(fd, cmd, ptr);
	}
	if (ret == 0) {
		atomic_fetch_add(&fz->ioctl_ok[i], 1);
		if (ptr == good.b && cmd == c->cmd)
			learn(p, dev, c, good.b);
	}
	return ret == 0;
}
