// SPDX-License-Identifier: MIT
/*
 * exa_fuzz operations: the attack surface of /dev/exanet0,
 * /dev/extoll/rma2, /dev/extoll/velo2 and the "exanet" generic netlink
 * family, driven with half-valid arguments (valid descriptors, sizes,
 * offsets and addresses mixed with bad ones).  See fuzz.h.  This file:
 * the values, the file table, open/close/dup, poll, the scratch buffers,
 * fork and the driver that draws the operations; the other surfaces are
 * fuzz_ioctl.c, fuzz_map.c (mmap, MMIO, setup) and fuzz_netlink.c.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exa_domain.h>
#include <extoll.h>

#include "fuzz_ops.h"

static const char *const dev_path[FD_NUM] = {
	[FD_EXANET] = "/dev/exanet0",
	[FD_RMA2] = EXTOLL_DEV_RMA2,
	[FD_VELO2] = EXTOLL_DEV_VELO2,
};

static const char *const op_names[OP_NUM] = {
	"open", "close", "dup", "ioctl", "mmap", "munmap", "mprotect", "mremap",
	"mmio", "netlink", "poll", "buffer", "setup", "fork",
};

const char *fuzz_op_name(int op)
{
	return op_names[op];
}

/* ------------------------------------------------------------ values */

uint64_t rv_u64(struct frng *r)
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

uint32_t rv_pow2(struct frng *r, unsigned int lo_shift, unsigned int hi_shift)
{
	if (frng_one_in(r, 5))
		return (uint32_t)rv_u64(r);
	return 1u << (lo_shift + frng_below(r, hi_shift - lo_shift + 1));
}

uint32_t rv_domain(struct frng *r)
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

uint32_t rv_node(struct frng *r)
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
uint64_t rv_buf_addr(struct fz_proc *p, struct frng *r, unsigned int align)
{
	uint8_t *b = p->buf[frng_below(r, FZ_BUFS)];
	uint64_t off = frng_below(r, FZ_BUF_LEN - 64);

	if (align)
		off &= ~(uint64_t)(align - 1);
	return (uint64_t)(uintptr_t)b + off;
}

/* A user address: mostly in the scratch buffers, else surely not usable. */
uint64_t rv_addr(struct fz_proc *p, struct frng *r, unsigned int align)
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
uint64_t rv_len(struct frng *r, int wild)
{
	if (wild)
		return rv_u64(r);
	return 1 + frng_below(r, frng_one_in(r, 4) ? FZ_BUF_LEN / 4 : 4096);
}

int rv_id(struct fz_proc *p, struct frng *r, uint32_t *out)
{
	if (p->nids && frng_below(r, 3)) {
		*out = p->ids[frng_below(r, p->nids)];
		return 1;
	}
	*out = (uint32_t)(frng_one_in(r, 2) ? frng_below(r, 80) : rv_u64(r));
	return 0;
}

void remember_id(struct fz_proc *p, uint32_t id)
{
	pthread_mutex_lock(&p->lock);
	if (p->nids < FZ_IDS)
		p->ids[p->nids++] = id;
	else
		p->ids[id % FZ_IDS] = id;
	pthread_mutex_unlock(&p->lock);
}

void remember_off(struct fz_proc *p, int dev, uint64_t off, uint64_t len)
{
	struct fz_off o = { dev, off, len };

	pthread_mutex_lock(&p->lock);
	if (p->noffs < FZ_OFFS)
		p->offs[p->noffs++] = o;
	else
		p->offs[(off >> 24 ^ len) % FZ_OFFS] = o;
	pthread_mutex_unlock(&p->lock);
}

void remember_nla(struct fz_proc *p, uint64_t nla, uint64_t size)
{
	unsigned int k;

	pthread_mutex_lock(&p->lock);
	k = p->nregs < FZ_REGS ? p->nregs++ : (unsigned int)((nla >> 12) % FZ_REGS);
	p->nla[k] = nla;
	p->nla_size[k] = size;
	pthread_mutex_unlock(&p->lock);
}

/* ------------------------------------------------------------ files */

void note(struct fz_proc *p, const char *fmt, ...)
{
	va_list ap;

	if (p->in_child)
		return;
	va_start(ap, fmt);
	vsnprintf(fz->worker[p->widx].last, sizeof(fz->worker[p->widx].last), fmt, ap);
	va_end(ap);
}

/* A file of the table (maybe stale: closing races are part of the game). */
int pick_file(struct fz_proc *p, struct frng *r, int *dev)
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
