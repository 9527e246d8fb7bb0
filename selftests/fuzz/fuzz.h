/* SPDX-License-Identifier: MIT */
/*
 * exa_fuzz: structured fuzzer of every user-facing entry point of the
 * ExaNet and EXTOLL drivers (ioctl, mmap, MMIO stores into the mapped
 * pages, generic netlink).  See Documentation/fuzzing.md.
 *
 * One run = several worker processes (root and unprivileged users), each
 * with several threads, drawing operations from a deterministic stream:
 * splitmix64 seeded from (run seed, worker, generation, thread).  The
 * interleaving of threads and processes is the scheduler's, so a seed
 * replays the same operation streams, and with EXA_FUZZ_PROCS=1
 * EXA_FUZZ_THREADS=1 EXA_FUZZ_KILL=0 the same sequence exactly.
 */
#ifndef EXA_FUZZ_H
#define EXA_FUZZ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------ random */

struct frng {
	uint64_t s;
};

static inline uint64_t frng_next(struct frng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t frng_below(struct frng *r, uint64_t n)
{
	return n ? frng_next(r) % n : 0;
}

static inline int frng_one_in(struct frng *r, unsigned int n)
{
	return frng_below(r, n) == 0;
}

static inline uint64_t fuzz_mix(uint64_t a, uint64_t b)
{
	struct frng r = { a ^ (b * 0xd6e8feb86659fd93ull) };

	return frng_next(&r);
}

/* ------------------------------------------------------------ surfaces */

enum fuzz_dev { FD_EXANET, FD_RMA2, FD_VELO2, FD_NUM };

/* Operations, counted per kind in the shared statistics. */
enum fuzz_op {
	OP_OPEN, OP_CLOSE, OP_DUP, OP_IOCTL, OP_MMAP, OP_MUNMAP, OP_MPROTECT,
	OP_MREMAP, OP_MMIO, OP_NETLINK, OP_POLL, OP_BUFFER, OP_SETUP, OP_FORK, OP_NUM
};

/* Every ioctl command the fuzzer knows (uapi/exanet.h, uapi/extoll.h). */
#define FUZZ_MAX_IOCTLS 64
/* Generic netlink commands tried (0 .. EXANET_CMD_MAX + 2). */
#define FUZZ_NL_CMDS 7

#define FUZZ_MAX_WORKERS 16

/* Statistics and control shared by every process of a run (MAP_SHARED). */
struct fuzz_shared {
	atomic_int stop;
	atomic_ullong iterations;
	atomic_ullong ops[OP_NUM];
	atomic_ullong ops_ok[OP_NUM];
	atomic_ullong ioctl_calls[FUZZ_MAX_IOCTLS];
	atomic_ullong ioctl_ok[FUZZ_MAX_IOCTLS];
	atomic_ullong nl_sent[FUZZ_NL_CMDS];
	atomic_ullong mmio_stores;
	atomic_ullong mmio_faults;	/* SIGSEGV/SIGBUS on a mapping another thread freed */
	atomic_ullong forks, kills, respawns;
	atomic_ullong child_failures;	/* forked children that died unexpectedly */
	atomic_int opened[FD_NUM];	/* a device of this kind opened at least once */
	struct {
		pid_t pid;
		uid_t uid;
		uint32_t gen;
		char last[120];		/* last operation, for the failure report */
	} worker[FUZZ_MAX_WORKERS];
	uint64_t seed;
	int nprocs, nthreads, kill_ms;
	uint64_t seconds, max_iterations;
	uint32_t node_id, nnodes;
	int have[FD_NUM];
};

extern struct fuzz_shared *fz;

/* Per-process object tables. */
#define FZ_FILES 12
#define FZ_MAPS 24
#define FZ_OFFS 48
#define FZ_IDS 48
#define FZ_REGS 16
#define FZ_BUFS 6
#define FZ_BUF_LEN (256 * 1024)
#define FZ_GAP (64 * 1024)
#define FZ_MARGIN (4 * 1024 * 1024)
#define FZ_RES_LEN (2 * FZ_MARGIN + FZ_BUFS * (FZ_BUF_LEN + FZ_GAP))
#define FZ_KIDS 8

struct fz_file {
	int fd;			/* -1: free */
	int dev;
};

struct fz_map {
	uint8_t *addr;		/* NULL: free */
	size_t len;
	int prot;
	int dev;
	uint64_t off;
};

struct fz_off {
	int dev;
	uint64_t off, len;
};

struct fz_proc {
	pthread_mutex_t lock;		/* tables below */
	pthread_rwlock_t maplock;	/* held for reading around MMIO accesses */
	struct fz_file f[FZ_FILES];
	struct fz_map m[FZ_MAPS];
	struct fz_off offs[FZ_OFFS];	/* mmap offsets the drivers returned */
	unsigned int noffs;
	uint32_t ids[FZ_IDS];		/* interface / mailbox / page / MR handles */
	unsigned int nids;
	uint64_t nla[FZ_REGS], nla_size[FZ_REGS];	/* RMA2 registrations */
	unsigned int nregs;
	uint8_t *buf[FZ_BUFS];		/* RDMA / RMA scratch memory */
	uint8_t *guard;			/* page followed by a PROT_NONE page */
	int nl_family;			/* genl id of "exanet", -1 unknown */
	uint32_t vpid[FD_NUM];		/* a VPID this process had (RMA2, VELO2) */
	uint32_t rank;			/* an ExaNet RDMA rank it had */
	pid_t kids[FZ_KIDS];
	int widx;			/* worker index */
	int in_child;			/* forked child of a worker */
};

/* One operation drawn from r on p; returns 1 if the call succeeded. */
int fuzz_one(struct fz_proc *p, struct frng *r);
void fuzz_proc_init(struct fz_proc *p, int widx);
/* Forked child: forget the mappings (not inherited), reset the locks. */
void fuzz_proc_after_fork(struct fz_proc *p);
void fuzz_install_fault_handler(void);

/* Names for the report. */
const char *fuzz_op_name(int op);
int fuzz_ioctl_count(void);
const char *fuzz_ioctl_name(int i);
int fuzz_ioctl_dev(int i);

#endif
