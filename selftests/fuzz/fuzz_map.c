// SPDX-License-Identifier: MIT
/*
 * exa_fuzz: mappings of the devices (mmap at offsets the drivers returned
 * or made up, munmap, mprotect, mremap), MMIO accesses into them (raw and
 * structured: doorbells, RDMA descriptors, RMA and VELO requests) and the
 * well-behaved setup that gets the engines going (fuzz_ops.h).
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <exanet.h>
#include <exanet_rdma.h>
#include <extoll.h>
#include <extoll_hw.h>

#include "fuzz_ops.h"

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

int op_mmap(struct fz_proc *p, struct frng *r)
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

int op_munmap(struct fz_proc *p, struct frng *r)
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

int op_mprotect(struct fz_proc *p, struct frng *r)
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

int op_mremap(struct fz_proc *p, struct frng *r)
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

int op_mmio(struct fz_proc *p, struct frng *r)
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
int op_setup(struct fz_proc *p, struct frng *r)
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
