/* SPDX-License-Identifier: MIT */
/* Helpers of the RDMA selftests: a registered buffer + notification page,
 * remote address exchange over oob, data patterns with guards. */
#ifndef EXA_RDMA_H
#define EXA_RDMA_H

#include "exa_test.h"
#include <sys/resource.h>

#define NREC 128			/* records in the notification page */
#define REC_IN 64			/* first record used for incoming notifications */
#define GUARD 0xee

struct rnode {
	struct exanet_dev *dev;
	struct exanet_rdma *rdma;
	uint8_t *buf;
	size_t len;
	struct exanet_rdma_notif *rec;	/* NREC records, registered */
	struct exanet_mr *mr, *mr_rec;
};

/* What every rank publishes. */
struct rpub {
	uint8_t buf[EXANET_RADDR_WIRE_SIZE];
	uint8_t rec[EXANET_RADDR_WIRE_SIZE];
	uint8_t extra[EXANET_RADDR_WIRE_SIZE];
	uint32_t node, rank;
};

static inline void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Open the device and map buf (len bytes, untouched) and the record page;
 * 0, or negative errno; -ENODEV means "no RDMA on this node" (skip).
 */
static inline int rnode_open(struct rnode *n, size_t len)
{
	struct exanet_rdma_info info;
	int err;

	memset(n, 0, sizeof(*n));
	err = exanet_open(NULL, &n->dev);
	if (err)
		return err == -ENOENT ? -ENODEV : err;
	err = exanet_rdma_query(n->dev, &info);
	if (err == -ENOTTY || (!err && (!info.num_ranks || !info.num_pages)))
		return -ENODEV;
	if (err)
		return err;
	n->len = len;
	n->buf = map_anon(len);
	n->rec = map_anon(4096);
	return n->buf && n->rec ? 0 : -ENOMEM;
}

/* 0, or negative errno; -ENODEV means "no RDMA on this node" (skip). */
static inline int rnode_up(struct rnode *n, size_t len, int with_page)
{
	int err = rnode_open(n, len);

	if (err)
		return err;
	err = exanet_reg_mr(n->dev, n->buf, len, 0, &n->mr);
	if (!err)
		err = exanet_reg_mr(n->dev, n->rec, 4096, 0, &n->mr_rec);
	if (!err && with_page)
		err = exanet_rdma_alloc(n->dev, &n->rdma);
	return err;
}

static inline void rnode_down(struct rnode *n)
{
	if (n->dev)
		exanet_close(n->dev);
	if (n->buf)
		munmap(n->buf, n->len);
	if (n->rec)
		munmap(n->rec, 4096);
	memset(n, 0, sizeof(*n));
}

static inline void rnode_pub(struct rnode *n, struct rpub *p)
{
	struct exanet_raddr ra;

	memset(p, 0, sizeof(*p));
	exanet_mr_raddr(n->mr, n->buf, &ra);
	exanet_raddr_encode(&ra, p->buf);
	exanet_mr_raddr(n->mr_rec, n->rec, &ra);
	exanet_raddr_encode(&ra, p->rec);
	p->node = n->mr->node;
	p->rank = n->mr->rank;
}

static inline struct exanet_raddr raddr_at(const uint8_t wire[EXANET_RADDR_WIRE_SIZE],
					   uint64_t off)
{
	struct exanet_raddr ra = { 0 };

	exanet_raddr_decode(wire, &ra);
	exanet_raddr_add(&ra, off);
	return ra;
}

/*
 * Completion of a slot: the local completion record (rec[slot]) when it
 * arrives; a descriptor rejected at the trigger ends in ERROR without one,
 * so the channel status is checked too.
 */
static inline int rwait(struct rnode *n, unsigned int slot, int64_t timeout_ns,
			struct exanet_rdma_notif *out)
{
	int64_t end = exa_now_ms() + timeout_ns / 1000000;
	unsigned int spin = 0;

	memset(out, 0, sizeof(*out));
	for (;;) {
		if (exanet_rdma_notif_poll(&n->rec[slot], out) == 1)
			return out->error ? exanet_rdma_error_errno(out->error) : 0;
		if (!(++spin & 63)) {
			uint64_t st = exanet_rdma_status(n->rdma, slot);

			if (EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_ERROR) {
				if (exanet_rdma_notif_poll(&n->rec[slot], out) == 1)
					return out->error ? exanet_rdma_error_errno(out->error) : 0;
				out->error = EXANET_RDMA_ST_ERROR(st);
				return exanet_rdma_status_errno(st);
			}
			if (exa_now_ms() > end)
				return -ETIMEDOUT;
		}
	}
}

/* Byte i of pattern 'seed' (any offset / length, fast). */
static inline uint8_t rpat_byte(uint32_t seed, uint64_t i)
{
	uint64_t x = (i >> 3) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed << 32 | seed);

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (uint8_t)(x >> (8 * (i & 7)));
}

static inline void rpat_fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = rpat_byte(seed, i);
}

/* -1 if equal, else the first differing offset. */
static inline long rpat_check(const uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != rpat_byte(seed, i))
			return (long)i;
	return -1;
}

/* Post on a given slot with the local completion record = rec[slot]. */
static inline int post_and_wait(struct rnode *n, int read, unsigned int slot, void *local,
				const struct exanet_raddr *ra, size_t len, uint64_t notify_va,
				uint64_t tag, int64_t timeout_ns, struct exanet_rdma_notif *out)
{
	struct exanet_rdma_opts op = { .notify_va = notify_va, .tag = tag,
				       .lcomp = &n->rec[slot] };
	struct exanet_rdma_notif rec;
	int ret;

	exanet_rdma_notif_reset(&n->rec[slot]);
	if (read)
		ret = exanet_rdma_post_read_on(n->rdma, slot, local, ra, len, &op);
	else
		ret = exanet_rdma_post_write_on(n->rdma, slot, local, ra, len, &op);
	if (ret < 0)
		return ret;
	ret = rwait(n, slot, timeout_ns, &rec);
	if (out)
		*out = rec;
	return ret;
}
/* VmPin of this process in kB (pinned_vm), or -1. */
static inline long vm_pin_kb(void)
{
	return (long)exa_file_field("/proc/self/status", "VmPin");
}

/* A field of /proc/meminfo in kB, or -1. */
static inline long meminfo_kb(const char *field)
{
	return (long)exa_file_field("/proc/meminfo", field);
}

static inline int bytes_equal(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

#endif
