// SPDX-License-Identifier: MIT
/*
 * exa_fuzz operations: the attack surface of /dev/exanet0,
 * /dev/extoll/rma2, /dev/extoll/velo2 and the "exanet" generic netlink
 * family, driven with half-valid arguments (valid descriptors, sizes,
 * offsets and addresses mixed with bad ones).  See fuzz.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <exa_domain.h>
#include <exanet.h>
#include <exanet_rdma.h>
#include <extoll.h>
#include <extoll_hw.h>

#include "../lib/exa_util.h"
#include "fuzz.h"

static const char *const dev_path[FD_NUM] = {
	[FD_EXANET] = "/dev/exanet0",
	[FD_RMA2] = EXTOLL_DEV_RMA2,
	[FD_VELO2] = EXTOLL_DEV_VELO2,
};

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

static const char *const op_names[OP_NUM] = {
	"open", "close", "dup", "ioctl", "mmap", "munmap", "mprotect", "mremap",
	"mmio", "netlink", "poll", "buffer", "setup", "fork",
};

const char *fuzz_op_name(int op)
{
	return op_names[op];
}

/* ------------------------------------------------------------ values */

static uint64_t rv_u64(struct frng *r)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 4, 7, 8, 15, 16, 63, 64, 65, 127, 128, 255, 256, 1023, 1024,
		4095, 4096, 4097, 8191, 8192, 8193, 16384, 65535, 65536, 1 << 20, 1 << 22,
		1 << 23, (1 << 23) + 1, 0x7fffffff, 0x80000000, 0xffffffff, 1ull << 32,
		(1ull << 32) + 1, 1ull << 30, 1ull << 47, (1ull << 48) - 1, 1ull << 48,
		0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull, ~0ull - 4095,
	};

	switch (frng_below(r, 4)) {
	case 0:
		return frng_next(r);
	case 1:
		return frng_below(r, 256);
	default:
		return v[frng_below(r, sizeof(v) / sizeof(v[0]))];
	}
}

static uint32_t rv_pow2(struct frng *r, unsigned int lo_shift, unsigned int hi_shift)
{
	if (frng_one_in(r, 5))
		return (uint32_t)rv_u64(r);
	return 1u << (lo_shift + frng_below(r, hi_shift - lo_shift + 1));
}

static uint32_t rv_domain(struct frng *r)
{
	switch (frng_below(r, 6)) {
	case 0:
		return EXA_DOMAIN_OF_UID(getuid());
	case 1:
		return EXA_DOMAIN_JOB_MIN + (uint32_t)frng_below(r, EXA_DOMAIN_JOB_MAX);
	case 2:
		return EXA_DOMAIN_USER_BASE + (uint32_t)frng_below(r, 0x8000);
	case 3:
		return 0;
	case 4:
		return 0x10000 + (uint32_t)frng_below(r, 0x10000);
	default:
		return (uint32_t)rv_u64(r);
	}
}

static uint32_t rv_node(struct frng *r)
{
	switch (frng_below(r, 5)) {
	case 0:
	case 1:
		return fz->node_id;
	case 2:
		return (uint32_t)frng_below(r, fz->nnodes ? fz->nnodes : 1);
	case 3:
		return fz->nnodes;
	default:
		return (uint32_t)rv_u64(r);
	}
}

/* An address in the scratch buffers (the only memory the NICs may write). */
static uint64_t rv_buf_addr(struct fz_proc *p, struct frng *r, unsigned int align)
{
	uint8_t *b = p->buf[frng_below(r, FZ_BUFS)];
	uint64_t off = frng_below(r, FZ_BUF_LEN - 64);

	if (align)
		off &= ~(uint64_t)(align - 1);
	return (uint64_t)(uintptr_t)b + off;
}

/* A user address: mostly in the scratch buffers, else surely not usable. */
static uint64_t rv_addr(struct fz_proc *p, struct frng *r, unsigned int align)
{
	static const uint64_t bad[] = {
		0, 1, 8, 0x1000, 0x7ffffffff000ull, 0x800000000000ull, 0xffff888000000000ull,
		0xffffffff81000000ull, ~0ull - 7,
	};

	if (frng_below(r, 4))
		return rv_buf_addr(p, r, align);
	if (frng_one_in(r, 3))
		return (uint64_t)(uintptr_t)p->guard + 4096;	/* PROT_NONE */
	return bad[frng_below(r, sizeof(bad) / sizeof(bad[0]))];
}

/* A length that stays inside a scratch buffer from addr, or a wild one. */
static uint64_t rv_len(struct frng *r, int wild)
{
	if (wild)
		return rv_u64(r);
	return 1 + frng_below(r, frng_one_in(r, 4) ? FZ_BUF_LEN / 4 : 4096);
}

static int rv_id(struct fz_proc *p, struct frng *r, uint32_t *out)
{
	if (p->nids && frng_below(r, 3)) {
		*out = p->ids[frng_below(r, p->nids)];
		return 1;
	}
	*out = (uint32_t)(frng_one_in(r, 2) ? frng_below(r, 80) : rv_u64(r));
	return 0;
}

static void remember_id(struct fz_proc *p, uint32_t id)
{
	pthread_mutex_lock(&p->lock);
	if (p->nids < FZ_IDS)
		p->ids[p->nids++] = id;
	else
		p->ids[id % FZ_IDS] = id;
	pthread_mutex_unlock(&p->lock);
}

static void remember_off(struct fz_proc *p, int dev, uint64_t off, uint64_t len)
{
	struct fz_off o = { dev, off, len };

	pthread_mutex_lock(&p->lock);
	if (p->noffs < FZ_OFFS)
		p->offs[p->noffs++] = o;
	else
		p->offs[(off >> 24 ^ len) % FZ_OFFS] = o;
	pthread_mutex_unlock(&p->lock);
}

static void remember_nla(struct fz_proc *p, uint64_t nla, uint64_t size)
{
	unsigned int k;

	pthread_mutex_lock(&p->lock);
	k = p->nregs < FZ_REGS ? p->nregs++ : (unsigned int)((nla >> 12) % FZ_REGS);
	p->nla[k] = nla;
	p->nla_size[k] = size;
	pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------------ files */

static void note(struct fz_proc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct fz_proc *p, const char *fmt, ...)
{
	va_list ap;

	if (p->in_child)
		return;
	va_start(ap, fmt);
	vsnprintf(fz->worker[p->widx].last, sizeof(fz->worker[p->widx].last), fmt, ap);
	va_end(ap);
}

/* A file of the table (maybe stale: closing races are part of the game). */
static int pick_file(struct fz_proc *p, struct frng *r, int *dev)
{
	unsigned int i, start = (unsigned int)frng_below(r, FZ_FILES);

	for (i = 0; i < FZ_FILES; i++) {
		struct fz_file *f = &p->f[(start + i) % FZ_FILES];

		if (f->fd >= 0) {
			*dev = f->dev;
			return f->fd;
		}
	}
	return -1;
}

static int op_open(struct fz_proc *p, struct frng *r)
{
	static const int modes[] = { O_RDWR, O_RDWR, O_RDWR, O_RDONLY, O_WRONLY };
	int dev = (int)frng_below(r, FD_NUM), fd, i, flags;

	if (!fz->have[dev])
		dev = FD_EXANET;
	flags = modes[frng_below(r, 5)] | O_CLOEXEC | (frng_one_in(r, 4) ? O_NONBLOCK : 0);
	note(p, "open %s flags %#x", dev_path[dev], flags);
	fd = open(dev_path[dev], flags);
	if (fd < 0)
		return 0;
	atomic_store(&fz->opened[dev], 1);
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < FZ_FILES; i++)
		if (p->f[i].fd < 0)
			break;
	if (i == FZ_FILES) {
		pthread_mutex_unlock(&p->lock);
		close(fd);
		return 1;
	}
	p->f[i].fd = fd;
	p->f[i].dev = dev;
	pthread_mutex_unlock(&p->lock);
	return 1;
}

static int op_close(struct fz_proc *p, struct frng *r)
{
	unsigned int i = (unsigned int)frng_below(r, FZ_FILES);
	int fd;

	pthread_mutex_lock(&p->lock);
	fd = p->f[i].fd;
	p->f[i].fd = -1;
	pthread_mutex_unlock(&p->lock);
	if (fd < 0)
		return 0;
	note(p, "close fd %d", fd);
	return close(fd) == 0;
}

static int op_dup(struct fz_proc *p, struct frng *r)
{
	int dev, fd = pick_file(p, r, &dev), nfd, i;

	if (fd < 0)
		return 0;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (nfd < 0)
		return 0;
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < FZ_FILES; i++)
		if (p->f[i].fd < 0)
			break;
	if (i < FZ_FILES) {
		p->f[i].fd = nfd;
		p->f[i].dev = dev;
		nfd = -1;
	}
	pthread_mutex_unlock(&p->lock);
	if (nfd >= 0)
		close(nfd);
	return 1;
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

static int op_ioctl(struct fz_proc *p, struct frng *r)
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

/* ------------------------------------------------------------ mmap */

static uint64_t rv_mmap_off(struct fz_proc *p, struct frng *r, int dev, uint64_t *len)
{
	unsigned int k;

	pthread_mutex_lock(&p->lock);
	if (p->noffs && frng_below(r, 3)) {
		for (k = 0; k < 8; k++) {
			struct fz_off *o = &p->offs[frng_below(r, p->noffs)];

			if (o->dev == dev || frng_one_in(r, 6)) {
				uint64_t off = o->off;

				*len = o->len;
				pthread_mutex_unlock(&p->lock);
				return off;
			}
		}
	}
	pthread_mutex_unlock(&p->lock);
	*len = EXTOLL_PAGE_SIZE;
	switch (dev) {
	case FD_EXANET:
		if (frng_one_in(r, 4))
			return rv_u64(r) & ~4095ull;
		return EXANET_MMAP_OFFSET(frng_below(r, 7), frng_below(r, 72));
	default: {
		/* RMA2 and VELO2: an MMIO area, then the queue area (RP page first) */
		int rma = dev == FD_RMA2;
		uint64_t qoff = rma ? RMA2_MMAP_NOTIQ_OFFSET : VELO2_MMAP_MBOX_OFFSET;

		switch (frng_below(r, 4)) {
		case 0:
			*len = rma ? RMA2_MMAP_REQ_SIZE + EXTOLL_PAGE_SIZE : 2 * EXTOLL_PAGE_SIZE;
			return 0;
		case 1:	/* = RMA2_MMAP_NOTIQ_LEN / VELO2_MMAP_MBOX_LEN of a size */
			*len = EXTOLL_PAGE_SIZE + rv_pow2(r, 12, 22);
			return qoff;
		case 2:
			return frng_below(r, qoff / EXTOLL_PAGE_SIZE + 8) * EXTOLL_PAGE_SIZE;
		default:
			return rv_u64(r) & ~4095ull;
		}
	}
	}
}

static int op_mmap(struct fz_proc *p, struct frng *r)
{
	static const int prots[] = {
		PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE, PROT_READ, PROT_WRITE,
		PROT_READ | PROT_WRITE | PROT_EXEC, PROT_NONE, PROT_READ | PROT_EXEC,
	};
	int dev, fd = pick_file(p, r, &dev), prot, flags, i;
	uint64_t len, off;
	void *a;

	if (fd < 0)
		return 0;
	off = rv_mmap_off(p, r, dev, &len);
	switch (frng_below(r, 8)) {
	case 0:
		len = (1 + frng_below(r, 64)) * 4096;
		break;
	case 1:
		len = frng_one_in(r, 2) ? len + 4096 : len - 4096;
		break;
	case 2:
		len = rv_u64(r);
		break;
	case 3:
		off += 4096 * (1 + frng_below(r, 4));
		break;
	default:
		break;
	}
	if (!len || len > (64u << 20))
		len = 4096 + frng_below(r, 3) * 4096;	/* no huge reservations */
	prot = prots[frng_below(r, sizeof(prots) / sizeof(prots[0]))];
	flags = frng_below(r, 8) ? MAP_SHARED : MAP_PRIVATE;
	if (frng_one_in(r, 16))
		flags |= MAP_POPULATE;
	if (frng_one_in(r, 32))
		flags |= MAP_LOCKED;
	note(p, "mmap fd %d off %#llx len %#llx prot %d flags %#x", fd,
	     (unsigned long long)off, (unsigned long long)len, prot, flags);
	a = mmap(NULL, len, prot, flags, fd, (off_t)off);
	if (a == MAP_FAILED)
		return 0;
	pthread_rwlock_wrlock(&p->maplock);
	for (i = 0; i < FZ_MAPS; i++)
		if (!p->m[i].addr)
			break;
	if (i == FZ_MAPS) {
		pthread_rwlock_unlock(&p->maplock);
		munmap(a, len);
		return 1;
	}
	p->m[i] = (struct fz_map){ a, len, prot, dev, off };
	pthread_rwlock_unlock(&p->maplock);
	return 1;
}

static int op_munmap(struct fz_proc *p, struct frng *r)
{
	unsigned int i = (unsigned int)frng_below(r, FZ_MAPS);
	int ret = 0;

	pthread_rwlock_wrlock(&p->maplock);
	if (p->m[i].addr) {
		if (frng_one_in(r, 4) && p->m[i].len > 4096) {
			/* unmap the tail page only */
			p->m[i].len -= 4096;
			ret = munmap(p->m[i].addr + p->m[i].len, 4096) == 0;
		} else {
			ret = munmap(p->m[i].addr, p->m[i].len) == 0;
			p->m[i].addr = NULL;
		}
	}
	pthread_rwlock_unlock(&p->maplock);
	return ret;
}

static int op_mprotect(struct fz_proc *p, struct frng *r)
{
	unsigned int i = (unsigned int)frng_below(r, FZ_MAPS);
	int prot = (int)frng_below(r, 8), ret = 0;

	pthread_rwlock_wrlock(&p->maplock);
	if (p->m[i].addr) {
		note(p, "mprotect map off %#llx prot %d", (unsigned long long)p->m[i].off, prot);
		ret = mprotect(p->m[i].addr, p->m[i].len, prot) == 0;
		if (ret)
			p->m[i].prot = prot;
	}
	pthread_rwlock_unlock(&p->maplock);
	return ret;
}

static int op_mremap(struct fz_proc *p, struct frng *r)
{
	unsigned int i = (unsigned int)frng_below(r, FZ_MAPS);
	size_t nlen;
	void *a;
	int ret = 0;

	pthread_rwlock_wrlock(&p->maplock);
	if (p->m[i].addr) {
		nlen = frng_one_in(r, 2) ? p->m[i].len + 4096 :
		       p->m[i].len > 4096 ? p->m[i].len - 4096 : 4096;
		note(p, "mremap map off %#llx to %zu", (unsigned long long)p->m[i].off, nlen);
		a = mremap(p->m[i].addr, p->m[i].len, nlen, MREMAP_MAYMOVE);
		if (a != MAP_FAILED) {
			p->m[i].addr = a;
			p->m[i].len = nlen;
			ret = 1;
		}
	}
	pthread_rwlock_unlock(&p->maplock);
	return ret;
}

/* ------------------------------------------------------------ MMIO */

/*
 * A mapping another thread made unusable (an interface freed, the device
 * gone) faults: SIGSEGV/SIGBUS inside an MMIO access jumps back and
 * counts; anywhere else it is a real crash.
 */
static __thread sigjmp_buf mmio_env;
static __thread volatile int in_mmio;

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (in_mmio) {
		in_mmio = 0;
		siglongjmp(mmio_env, 1);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void fuzz_install_fault_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fault_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

static void st64(uint8_t *base, size_t len, uint64_t off, uint64_t v)
{
	if (off + 8 <= len)
		*(volatile uint64_t *)(base + off) = v;
}

/* What the mapping is, from its offset. */
enum mkind { MK_RAW, MK_PKT, MK_MREGS, MK_MQUEUE, MK_RDMA, MK_RMA_REQ, MK_RMA_Q, MK_VELO_REQ,
	     MK_VELO_RING };

static enum mkind map_kind(const struct fz_map *m)
{
	switch (m->dev) {
	case FD_EXANET:
		switch (m->off >> EXANET_MMAP_KIND_SHIFT) {
		case EXANET_MMAP_PKT:
			return MK_PKT;
		case EXANET_MMAP_MBOX_REGS:
			return MK_MREGS;
		case EXANET_MMAP_MBOX_QUEUE:
			return MK_MQUEUE;
		case EXANET_MMAP_RDMA:
			return MK_RDMA;
		default:
			return MK_RAW;
		}
	case FD_RMA2:
		return m->off < RMA2_MMAP_NOTIQ_OFFSET ? MK_RMA_REQ : MK_RMA_Q;
	default:
		return m->off < VELO2_MMAP_MBOX_OFFSET ? MK_VELO_REQ : MK_VELO_RING;
	}
}

static uint64_t rv_nla(struct fz_proc *p, struct frng *r)
{
	unsigned int k;

	if (!p->nregs || frng_one_in(r, 3))
		return rv_u64(r);
	k = (unsigned int)frng_below(r, p->nregs);
	return p->nla[k] + frng_below(r, p->nla_size[k] ? p->nla_size[k] + 64 : 4096);
}

static void mmio_structured(struct fz_proc *p, struct frng *r, struct fz_map *m, enum mkind k)
{
	uint8_t *b = m->addr;
	size_t len = m->len;
	uint64_t base, w0;
	unsigned int i, n;

	switch (k) {
	case MK_PKT:
		base = frng_below(r, frng_one_in(r, 8) ? 16 : EXANET_PKT_CHANNELS) *
		       EXANET_PKT_CHAN_STRIDE;
		n = (unsigned int)frng_below(r, 9);
		for (i = 0; i < n; i++)
			st64(b, len, base + 8 * i, frng_next(r));
		w0 = EXANET_DOORBELL(rv_node(r), frng_below(r, 64),
				     frng_below(r, 8) ? 1 + frng_below(r, 64) : frng_below(r, 128));
		if (frng_one_in(r, 8))
			w0 |= 1ull << (7 + frng_below(r, 57));
		st64(b, len, base + EXANET_PKT_DOORBELL, w0);
		break;
	case MK_MREGS:
		if (len >= 4)
			*(volatile uint32_t *)(b + EXANET_MBOX_HEAD) =
				(uint32_t)(frng_one_in(r, 2) ? frng_below(r, 64) : rv_u64(r));
		break;
	case MK_RDMA: {
		struct exanet_rdma_desc d;

		base = frng_below(r, EXANET_RDMA_CHANS) * EXANET_RDMA_CHAN_STRIDE;
		d.local_va = rv_addr(p, r, 0);
		d.remote_va = frng_below(r, 4) ? rv_buf_addr(p, r, 0) : rv_addr(p, r, 0);
		d.remote = frng_below(r, 8) ?
			   EXANET_RDMA_REMOTE(rv_node(r), frng_below(r, 2) ? p->rank :
									 frng_below(r, 8)) :
			   rv_u64(r);
		d.length = frng_below(r, 6) ? 1 + frng_below(r, 64 * 1024) : rv_u64(r);
		d.notify_va = frng_one_in(r, 2) ? 0 : rv_addr(p, r, 8);
		d.tag = frng_next(r);
		d.lcomp_va = frng_one_in(r, 2) ? 0 : rv_addr(p, r, 8);
		d.ctrl = frng_below(r, 8) ? 0 : rv_u64(r);
		for (i = 0; i < 7; i++)
			if (frng_below(r, 8))
				st64(b, len, base + 8 * i, ((uint64_t *)&d)[i]);
		if (frng_one_in(r, 8))
			*(volatile uint32_t *)(b + base + EXANET_RDMA_D_CTRL) = (uint32_t)d.ctrl;
		else
			st64(b, len, base + EXANET_RDMA_D_CTRL, d.ctrl);
		break;
	}
	case MK_RMA_REQ: {
		static const unsigned int cmds[] = {
			EXTOLL_CMD_BT_GET, EXTOLL_CMD_QW_GET, EXTOLL_CMD_BT_PUT, EXTOLL_CMD_QW_PUT,
			EXTOLL_CMD_NOTI_PUT, EXTOLL_CMD_IMM_PUT, EXTOLL_CMD_LOCK_REQ, 4, 7, 10,
			13, 15,
		};
		unsigned int cmd = cmds[frng_below(r, sizeof(cmds) / sizeof(cmds[0]))];
		uint64_t w[3];
		unsigned int order = (unsigned int)frng_below(r, 6);

		base = frng_below(r, RMA2_REQ_PAGES + 1) * EXTOLL_PAGE_SIZE;
		w[0] = EXTOLL_RMA_MKW0(cmd, rv_node(r) & 0xffff,
				       frng_below(r, 2) ? p->vpid[FD_RMA2] : frng_below(r, 256),
				       frng_below(r, 8), frng_below(r, 4) ? 0 : frng_below(r, 16),
				       frng_below(r, 4) ? frng_below(r, 1 << 14) :
							  frng_below(r, 1 << 23));
		if (frng_one_in(r, 10))
			w[0] = rv_u64(r);
		w[1] = rv_nla(p, r);
		w[2] = rv_nla(p, r);
		for (i = 0; i < 3; i++) {
			unsigned int k2 = (i + order) % 3;

			if (!frng_one_in(r, 16))
				st64(b, len, base + 8 * k2, w[k2]);
		}
		break;
	}
	case MK_VELO_REQ: {
		unsigned int l = (unsigned int)(frng_below(r, 6) ? frng_below(r, 121) :
								  frng_below(r, 128));

		w0 = EXTOLL_VELO_MKHDR(rv_node(r) & 0xffff, frng_below(r, 2) ? p->vpid[FD_VELO2] :
					frng_below(r, 256), frng_below(r, 4), frng_next(r) & 0xff, l);
		if (frng_one_in(r, 10))
			w0 = rv_u64(r);
		n = (l + 7) / 8;
		if (n > 15)
			n = 15;
		base = frng_below(r, 8) ? 0 : EXTOLL_PAGE_SIZE * frng_below(r, 2);
		for (i = 0; i < n; i++)
			if (!frng_one_in(r, 16))
				st64(b, len, base + EXTOLL_VELO_DATA(i), frng_next(r));
		st64(b, len, base + EXTOLL_VELO_HDR, w0);
		break;
	}
	case MK_RMA_Q:
	case MK_VELO_RING:
		/* the consumer side: free an entry / slot, move the read index */
		st64(b, len, frng_below(r, 4) ? 0 : frng_below(r, len / 8) * 8,
		     frng_below(r, 2) ? 0 : rv_u64(r));
		break;
	default:
		break;
	}
}

static int op_mmio(struct fz_proc *p, struct frng *r)
{
	unsigned int i, start = (unsigned int)frng_below(r, FZ_MAPS);
	struct fz_map *m = NULL;
	enum mkind k;
	uint64_t off;
	volatile int ok = 0;

	pthread_rwlock_rdlock(&p->maplock);
	for (i = 0; i < FZ_MAPS; i++) {
		struct fz_map *c = &p->m[(start + i) % FZ_MAPS];

		if (c->addr && (c->prot & PROT_READ)) {
			m = c;
			break;
		}
	}
	if (!m) {
		pthread_rwlock_unlock(&p->maplock);
		return 0;
	}
	k = map_kind(m);
	note(p, "mmio map dev %d off %#llx kind %d", m->dev, (unsigned long long)m->off, k);
	if (sigsetjmp(mmio_env, 1) == 0) {
		in_mmio = 1;
		if (!(m->prot & PROT_WRITE) || k == MK_MQUEUE || frng_one_in(r, 6)) {
			/* reads only */
			volatile uint64_t sink = 0;

			for (i = 0; i < 4; i++) {
				off = frng_below(r, m->len / 8) * 8;
				sink += *(volatile uint64_t *)(m->addr + off);
			}
			(void)sink;
		} else if (frng_one_in(r, 5)) {
			/* raw stores of every width anywhere in the mapping */
			for (i = 0; i < 4; i++) {
				off = frng_below(r, m->len);
				switch (frng_below(r, 4)) {
				case 0:
					*(volatile uint8_t *)(m->addr + off) = (uint8_t)frng_next(r);
					break;
				case 1:
					off &= ~1ull;
					*(volatile uint16_t *)(m->addr + off) = (uint16_t)frng_next(r);
					break;
				case 2:
					off &= ~3ull;
					*(volatile uint32_t *)(m->addr + off) = (uint32_t)rv_u64(r);
					break;
				default:
					off &= ~7ull;
					*(volatile uint64_t *)(m->addr + off) = rv_u64(r);
					break;
				}
			}
			atomic_fetch_add(&fz->mmio_stores, 4);
		} else {
			mmio_structured(p, r, m, k);
			atomic_fetch_add(&fz->mmio_stores, 1);
		}
		in_mmio = 0;
		ok = 1;
	} else {
		atomic_fetch_add(&fz->mmio_faults, 1);
	}
	pthread_rwlock_unlock(&p->maplock);
	return ok;
}

/* ------------------------------------------------------------ netlink */

struct nlmsg {
	struct nlmsghdr n;
	struct genlmsghdr g;
	uint8_t attrs[512];
};

static int nl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -EIO;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void nl_put(struct nlmsg *m, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((uint8_t *)m + NLMSG_ALIGN(m->n.nlmsg_len));

	if (NLMSG_ALIGN(m->n.nlmsg_len) + NLA_HDRLEN + NLA_ALIGN(len) > sizeof(*m))
		return;
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	if (len)
		memcpy((uint8_t *)a + NLA_HDRLEN, data, len);
	m->n.nlmsg_len = NLMSG_ALIGN(m->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* Send m, count the answers; -errno of the first error, else the count. */
static int nl_talk(int fd, struct nlmsg *m, int wait_done)
{
	static _Atomic uint32_t seq = 1;
	union {
		uint8_t b[16384];
		struct nlmsghdr align;
	} buf;
	int count = 0;

	m->n.nlmsg_seq = atomic_fetch_add(&seq, 1);
	if (send(fd, m, m->n.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t len = recv(fd, buf.b, sizeof(buf.b), 0);
		struct nlmsghdr *h;

		if (len <= 0)
			return count;
		for (h = &buf.align; NLMSG_OK(h, (unsigned int)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : count;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return count;
			count++;
			if (!(h->nlmsg_flags & NLM_F_MULTI) && !wait_done)
				return count;
		}
	}
}

/* A pid the fuzzer may bind: its own processes, or none at all. */
static uint32_t rv_pid(struct fz_proc *p, struct frng *r)
{
	switch (frng_below(r, 6)) {
	case 0:
		return (uint32_t)getpid();
	case 1:
		return (uint32_t)syscall(SYS_gettid);
	case 2: {
		pid_t k = p->kids[frng_below(r, FZ_KIDS)];

		return k > 0 ? (uint32_t)k : (uint32_t)getpid();
	}
	case 3: {
		pid_t w = fz->worker[frng_below(r, (uint64_t)fz->nprocs)].pid;

		return w > 0 ? (uint32_t)w : 0;
	}
	case 4:
		return 0;
	default:	/* above PID_MAX_LIMIT: never a process */
		return (4u << 20) + (uint32_t)frng_below(r, 1u << 30);
	}
}

static int op_netlink(struct fz_proc *p, struct frng *r)
{
	static const uint16_t flagsets[] = {
		NLM_F_REQUEST, NLM_F_REQUEST | NLM_F_ACK, NLM_F_REQUEST | NLM_F_DUMP,
		NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, 0,
	};
	struct nlmsg m;
	unsigned int n, i;
	int fd, ret;
	uint8_t cmd;

	if (p->nl_family < 0) {
		p->nl_family = exa_genl_family_id();
		if (p->nl_family < 0)
			return 0;
	}
	fd = nl_open();
	if (fd < 0)
		return 0;
	memset(&m, 0, sizeof(m));
	cmd = (uint8_t)frng_below(r, FUZZ_NL_CMDS);
	if (frng_one_in(r, 20))
		cmd = (uint8_t)frng_next(r);
	m.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m.n.nlmsg_type = (uint16_t)p->nl_family;
	m.n.nlmsg_flags = flagsets[frng_below(r, sizeof(flagsets) / sizeof(flagsets[0]))];
	m.g.cmd = cmd;
	m.g.version = frng_below(r, 8) ? EXANET_GENL_VERSION : (uint8_t)frng_next(r);
	n = (unsigned int)frng_below(r, 6);
	for (i = 0; i < n; i++) {
		uint16_t type = (uint16_t)(frng_below(r, 6) ? frng_below(r, EXANET_ATTR_MAX + 3) :
							     frng_next(r));
		uint32_t v32;
		uint64_t v64;
		uint8_t raw[64];
		uint16_t len;

		if (frng_one_in(r, 10))
			type |= NLA_F_NESTED;
		switch (type & NLA_TYPE_MASK) {
		case EXANET_ATTR_PID:
			v32 = rv_pid(p, r);
			break;
		case EXANET_ATTR_PDID:
			v32 = rv_domain(r);
			break;
		case EXANET_ATTR_DEV_INDEX:
			v32 = (uint32_t)(frng_below(r, 2) ? frng_below(r, 3) : rv_u64(r));
			break;
		default:
			v32 = (uint32_t)rv_u64(r);
			break;
		}
		switch (frng_below(r, 8)) {
		case 0:		/* wrong width */
			len = (uint16_t)frng_below(r, 4);
			memcpy(raw, &v32, 4);
			break;
		case 1:
			v64 = rv_u64(r);
			memcpy(raw, &v64, 8);
			len = 8;
			break;
		case 2:		/* strings and blobs, unterminated or long */
			len = (uint16_t)frng_below(r, sizeof(raw) + 1);
			for (unsigned int k = 0; k < len; k++)
				raw[k] = (uint8_t)(frng_below(r, 4) ? 'a' + frng_below(r, 26) :
								     frng_next(r));
			break;
		case 3: {	/* nested: a few u32 inside */
			struct nlattr *in = (struct nlattr *)raw;

			in->nla_type = (uint16_t)frng_below(r, 20);
			in->nla_len = (uint16_t)(frng_below(r, 4) ? NLA_HDRLEN + 4 : frng_next(r));
			memcpy(raw + NLA_HDRLEN, &v32, 4);
			len = NLA_HDRLEN + 4;
			type |= frng_below(r, 2) ? NLA_F_NESTED : 0;
			break;
		}
		default:
			memcpy(raw, &v32, 4);
			len = 4;
			break;
		}
		nl_put(&m, type, raw, len);
	}
	if (frng_one_in(r, 12)) {	/* a lying length somewhere */
		if (frng_one_in(r, 2) && m.n.nlmsg_len > NLMSG_LENGTH(GENL_HDRLEN))
			((struct nlattr *)((uint8_t *)&m + NLMSG_LENGTH(GENL_HDRLEN)))->nla_len =
				(uint16_t)frng_next(r);
		else
			m.n.nlmsg_len -= (uint32_t)frng_below(r, m.n.nlmsg_len - NLMSG_HDRLEN + 1);
	}
	if (cmd < FUZZ_NL_CMDS)
		atomic_fetch_add(&fz->nl_sent[cmd], 1);
	note(p, "netlink cmd %u flags %#x attrs %u len %u", cmd, m.n.nlmsg_flags, n,
	     m.n.nlmsg_len);
	ret = nl_talk(fd, &m, 0);
	close(fd);
	return ret >= 0;
}

/* ------------------------------------------------------------ setup */

static void add_map(struct fz_proc *p, void *a, size_t len, int prot, int dev, uint64_t off)
{
	int i;

	if (a == MAP_FAILED)
		return;
	pthread_rwlock_wrlock(&p->maplock);
	for (i = 0; i < FZ_MAPS; i++)
		if (!p->m[i].addr)
			break;
	if (i < FZ_MAPS)
		p->m[i] = (struct fz_map){ a, len, prot, dev, off };
	pthread_rwlock_unlock(&p->maplock);
	if (i == FZ_MAPS)
		munmap(a, len);
}

/*
 * What a well-behaved program does, in one step: allocate an object with
 * valid arguments and map it, so that the MMIO operations reach the
 * engines often (the half-valid operations get there only by luck).
 */
static int op_setup(struct fz_proc *p, struct frng *r)
{
	int dev, fd = pick_file(p, r, &dev);
	const int rw = PROT_READ | PROT_WRITE;
	void *a;

	if (fd < 0)
		return 0;
	note(p, "setup fd %d dev %d", fd, dev);
	if (dev == FD_EXANET) {
		switch (frng_below(r, 4)) {
		case 0: {
			struct exanet_pkt_alloc x = { 0 };

			if (ioctl(fd, EXANET_IOC_PKT_ALLOC, &x))
				return 0;
			remember_id(p, x.iface);
			a = mmap(NULL, EXANET_IFACE_PAGE_SIZE, rw, MAP_SHARED, fd,
				 (off_t)x.mmap_offset);
			add_map(p, a, EXANET_IFACE_PAGE_SIZE, rw, dev, x.mmap_offset);
			return a != MAP_FAILED;
		}
		case 1: {
			struct exanet_mbox_alloc x = { .nslots = 4u << frng_below(r, 6) };

			if (ioctl(fd, EXANET_IOC_MBOX_ALLOC, &x))
				return 0;
			remember_id(p, x.mbox);
			a = mmap(NULL, EXANET_IFACE_PAGE_SIZE, rw, MAP_SHARED, fd,
				 (off_t)x.regs_offset);
			add_map(p, a, EXANET_IFACE_PAGE_SIZE, rw, dev, x.regs_offset);
			a = mmap(NULL, x.queue_size, PROT_READ, MAP_SHARED, fd,
				 (off_t)x.queue_offset);
			add_map(p, a, x.queue_size, PROT_READ, dev, x.queue_offset);
			return 1;
		}
		case 2: {
			struct exanet_reg_mr x = {
				.addr = (uint64_t)(uintptr_t)p->buf[frng_below(r, FZ_BUFS)],
				.len = FZ_BUF_LEN,
				.access = frng_one_in(r, 3) ? EXANET_MR_ON_DEMAND : 0,
			};

			if (ioctl(fd, EXANET_IOC_REG_MR, &x))
				return 0;
			remember_id(p, x.handle);
			p->rank = x.rank;
			return 1;
		}
		default: {
			struct exanet_rdma_alloc x = { 0 };

			if (ioctl(fd, EXANET_IOC_RDMA_ALLOC, &x))
				return 0;
			remember_id(p, x.page);
			p->rank = x.rank;
			a = mmap(NULL, x.mmap_size, rw, MAP_SHARED, fd, (off_t)x.mmap_offset);
			add_map(p, a, x.mmap_size, rw, dev, x.mmap_offset);
			return a != MAP_FAILED;
		}
		}
	}
	if (dev == FD_RMA2) {
		struct rma2_ioc_info info;
		struct rma2_ioc_region reg = {
			.addr = (uint64_t)(uintptr_t)p->buf[frng_below(r, FZ_BUFS)],
			.len = FZ_BUF_LEN,
			.flags = frng_one_in(r, 4) ? RMA2_REGION_READONLY : 0,
		};

		if (frng_one_in(r, 2)) {
			if (ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &reg))
				return 0;
			remember_nla(p, reg.nla, reg.size);
			return 1;
		}
		if (ioctl(fd, RMA2_IOCTL_GET_INFO, &info))
			return 0;
		p->vpid[FD_RMA2] = info.vpid;
		a = mmap(NULL, RMA2_MMAP_REQ_SIZE + EXTOLL_PAGE_SIZE, rw, MAP_SHARED, fd, 0);
		add_map(p, a, RMA2_MMAP_REQ_SIZE + EXTOLL_PAGE_SIZE, rw, dev, 0);
		a = mmap(NULL, RMA2_MMAP_NOTIQ_LEN(info.notiq_size), rw, MAP_SHARED, fd,
			 RMA2_MMAP_NOTIQ_OFFSET);
		add_map(p, a, RMA2_MMAP_NOTIQ_LEN(info.notiq_size), rw, dev, RMA2_MMAP_NOTIQ_OFFSET);
		return 1;
	}
	{
		struct velo2_ioc_info info;

		if (ioctl(fd, VELO2_IOCG_GET_INFO, &info))
			return 0;
		p->vpid[FD_VELO2] = info.vpid;
		a = mmap(NULL, 2 * EXTOLL_PAGE_SIZE, rw, MAP_SHARED, fd, 0);
		add_map(p, a, 2 * EXTOLL_PAGE_SIZE, rw, dev, 0);
		a = mmap(NULL, VELO2_MMAP_MBOX_LEN(info.mbox_size), rw, MAP_SHARED, fd,
			 VELO2_MMAP_MBOX_OFFSET);
		add_map(p, a, VELO2_MMAP_MBOX_LEN(info.mbox_size), rw, dev, VELO2_MMAP_MBOX_OFFSET);
		return 1;
	}
}

/* ------------------------------------------------------------ misc */

static int op_poll(struct fz_proc *p, struct frng *r)
{
	struct pollfd pfd;
	int dev;

	pfd.fd = pick_file(p, r, &dev);
	if (pfd.fd < 0)
		return 0;
	pfd.events = (short)(frng_below(r, 4) ? POLLIN : frng_next(r));
	return poll(&pfd, 1, 0) >= 0;
}

/* The scratch memory changes under registrations and transfers. */
static int op_buffer(struct fz_proc *p, struct frng *r)
{
	uint8_t *b = p->buf[frng_below(r, FZ_BUFS)];
	size_t off = frng_below(r, FZ_BUF_LEN / 4096) * 4096;
	size_t len = 4096 * (1 + frng_below(r, (FZ_BUF_LEN - off) / 4096));

	switch (frng_below(r, 4)) {
	case 0:
		return madvise(b + off, len, MADV_DONTNEED) == 0;
	case 1:	/* new pages in place (no gap another mapping could take) */
		return mmap(b + off, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
	case 2:
		memset(b + off, (int)frng_below(r, 256), len > 4096 ? 4096 : len);
		return 1;
	default:
		return madvise(b + off, len, MADV_FREE) == 0;
	}
}

static int op_fork(struct fz_proc *p, struct frng *r)
{
	uint64_t cseed = frng_next(r);
	unsigned int slot = (unsigned int)frng_below(r, FZ_KIDS);
	int status, n;
	pid_t pid;

	if (p->in_child)
		return 0;
	note(p, "fork");
	pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		struct frng cr = { cseed };

		fuzz_proc_after_fork(p);
		n = 10 + (int)frng_below(&cr, 200);
		while (n-- > 0 && !atomic_load(&fz->stop))
			fuzz_one(p, &cr);
		_exit(0);
	}
	p->kids[slot] = pid;
	atomic_fetch_add(&fz->forks, 1);
	if (frng_below(r, 2)) {
		usleep((useconds_t)frng_below(r, 20000));
		kill(pid, SIGKILL);
	}
	if (waitpid(pid, &status, 0) == pid &&
	    !((WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
	      (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))) {
		atomic_fetch_add(&fz->child_failures, 1);
		fprintf(stderr, "# forked child %d of worker %d: status %#x\n", pid, p->widx,
			status);
	}
	p->kids[slot] = 0;
	return 1;
}

/* ------------------------------------------------------------ driver */

void fuzz_proc_init(struct fz_proc *p, int widx)
{
	uint8_t *res;
	int i;

	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	pthread_rwlock_init(&p->maplock, NULL);
	for (i = 0; i < FZ_FILES; i++)
		p->f[i].fd = -1;
	/*
	 * Scratch buffers inside one reservation: PROT_NONE gaps between
	 * them and 4 MiB PROT_NONE margins (more than an RDMA window) around
	 * them, so no registration or transfer that starts in a buffer can
	 * reach memory the fuzzer itself uses.
	 */
	res = mmap(NULL, FZ_RES_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		perror("mmap");
		_exit(3);
	}
	for (i = 0; i < FZ_BUFS; i++) {
		p->buf[i] = res + FZ_MARGIN + (size_t)i * (FZ_BUF_LEN + FZ_GAP);
		if (mprotect(p->buf[i], FZ_BUF_LEN, PROT_READ | PROT_WRITE)) {
			perror("mprotect");
			_exit(3);
		}
	}
	p->guard = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->guard == MAP_FAILED || mprotect(p->guard + 4096, 4096, PROT_NONE)) {
		perror("mmap");
		_exit(3);
	}
	p->nl_family = -1;
	p->widx = widx;
}

void fuzz_proc_after_fork(struct fz_proc *p)
{
	/* device mappings are not inherited (VM_DONTCOPY): forget them */
	memset(p->m, 0, sizeof(p->m));
	pthread_mutex_init(&p->lock, NULL);
	pthread_rwlock_init(&p->maplock, NULL);
	memset(p->kids, 0, sizeof(p->kids));
	p->in_child = 1;
}

int fuzz_one(struct fz_proc *p, struct frng *r)
{
	/* weights per operation */
	static const unsigned char w[OP_NUM] = {
		[OP_OPEN] = 6, [OP_CLOSE] = 3, [OP_DUP] = 1, [OP_IOCTL] = 34, [OP_MMAP] = 12,
		[OP_MUNMAP] = 4, [OP_MPROTECT] = 2, [OP_MREMAP] = 2, [OP_MMIO] = 24,
		[OP_NETLINK] = 6, [OP_POLL] = 2, [OP_BUFFER] = 2, [OP_SETUP] = 5, [OP_FORK] = 1,
	};
	unsigned int total = 0, x, op;
	int ok;

	for (op = 0; op < OP_NUM; op++)
		total += w[op];
	x = (unsigned int)frng_below(r, total);
	for (op = 0; x >= w[op]; op++)
		x -= w[op];
	switch (op) {
	case OP_OPEN:
		ok = op_open(p, r);
		break;
	case OP_CLOSE:
		ok = op_close(p, r);
		break;
	case OP_DUP:
		ok = op_dup(p, r);
		break;
	case OP_IOCTL:
		ok = op_ioctl(p, r);
		break;
	case OP_MMAP:
		ok = op_mmap(p, r);
		break;
	case OP_MUNMAP:
		ok = op_munmap(p, r);
		break;
	case OP_MPROTECT:
		ok = op_mprotect(p, r);
		break;
	case OP_MREMAP:
		ok = op_mremap(p, r);
		break;
	case OP_MMIO:
		ok = op_mmio(p, r);
		break;
	case OP_NETLINK:
		ok = op_netlink(p, r);
		break;
	case OP_POLL:
		ok = op_poll(p, r);
		break;
	case OP_BUFFER:
		ok = op_buffer(p, r);
		break;
	case OP_SETUP:
		ok = op_setup(p, r);
		break;
	default:
		ok = op_fork(p, r);
		break;
	}
	atomic_fetch_add(&fz->ops[op], 1);
	if (ok)
		atomic_fetch_add(&fz->ops_ok[op], 1);
	atomic_fetch_add(&fz->iterations, 1);
	return ok;
}
