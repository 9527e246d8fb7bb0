/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers of the on-demand paging (ODP) selftests: unpinned registrations,
 * the driver's rdma_odp counters, fast 64-bit patterns. */
#ifndef ODP_TEST_H
#define ODP_TEST_H

#include "exa_rdma.h"
#include <sys/wait.h>

/* Most a fault maps: the driver's EXANET_ODP_MAX_PAGES (exanet_odp.c). */
#define ODP_PREFETCH_MAX (4u << 20)

/* Counters of one rank in /sys/class/exanet/exanet0/rdma_odp. */
struct odp_cnt {
	long long faults, refused, replays, invalidations, unmapped, mapped;
	long long huge;		/* transparent huge pages mapped whole */
};

static inline int odp_cnt(unsigned int rank, struct odp_cnt *c)
{
	char line[256];
	unsigned int r;
	int found = -ENOENT;
	FILE *f = fopen("/sys/class/exanet/exanet0/rdma_odp", "re");

	memset(c, 0, sizeof(*c));
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "rank %u faults %lld refused %lld replays %lld invalidations %lld "
			   "unmapped %lld mapped %lld huge %lld", &r, &c->faults, &c->refused,
			   &c->replays, &c->invalidations, &c->unmapped, &c->mapped,
			   &c->huge) == 8 && r == rank) {
			found = 0;
			break;
		}
	fclose(f);
	return found;
}

/*
 * rnode with on-demand registrations: nothing of buf (len bytes, a fresh
 * anonymous mapping) is touched.  implicit: one registration of the whole
 * address space (mr == mr_rec), else one per buffer.  -ENODEV: skip (no
 * RDMA, or an NI without interrupts / fault queue).
 */
static inline int onode_up(struct rnode *n, size_t len, int with_page, int implicit)
{
	int err = rnode_open(n, len);

	if (err)
		return err;
	if (implicit) {
		err = exanet_reg_mr_implicit(n->dev, 0, &n->mr);
		n->mr_rec = n->mr;
	} else {
		err = exanet_reg_mr(n->dev, n->buf, len, EXANET_MR_ON_DEMAND, &n->mr);
		if (!err)
			err = exanet_reg_mr(n->dev, n->rec, 4096, EXANET_MR_ON_DEMAND,
					    &n->mr_rec);
	}
	if (err == -EOPNOTSUPP)
		return -ENODEV;
	if (!err && with_page)
		err = exanet_rdma_alloc(n->dev, &n->rdma);
	return err;
}

#define NEED_ODP(n, len, page, implicit)				\
	do {								\
		int __e = onode_up((n), (len), (page), (implicit));	\
		if (__e == -ENODEV)					\
			SKIP_TEST("no RDMA contexts / no on-demand paging"); \
		ASSERT_EQ(0, __e);					\
	} while (0)

/* Word i of pattern seed (buffers are 8-byte aligned, lengths multiples of 8). */
static inline uint64_t opat(uint32_t seed, uint64_t i)
{
	uint64_t x = i * 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed << 32 | seed);

	x ^= x >> 31;
	return x * 0xbf58476d1ce4e5b9ull | 1;	/* never 0: tells data from zero pages */
}

static inline void opat_fill(void *p, size_t len, uint32_t seed)
{
	uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = opat(seed, i);
}

/* -1 if equal, else the first differing byte offset. */
static inline long opat_check(const void *p, size_t len, uint32_t seed)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i] != opat(seed, i))
			return (long)(i * 8);
	return -1;
}

/* Page k of buf holds either bytes fill or exactly its pattern: -1, else k. */
static inline long opat_pages_fill_or_data(const uint8_t *p, size_t len, uint32_t seed,
					   uint8_t fill)
{
	const size_t pg = 4096;
	uint64_t f;

	memset(&f, fill, sizeof(f));
	for (size_t k = 0; k < len / pg; k++) {
		const uint64_t *w = (const uint64_t *)(p + k * pg);
		int is_fill = 1, data = 1;

		for (size_t i = 0; i < pg / 8; i++) {
			is_fill &= w[i] == f;
			data &= w[i] == opat(seed, k * pg / 8 + i);
		}
		if (!is_fill && !data)
			return (long)k;
	}
	return -1;
}

static inline long opat_pages_zero_or_data(const uint8_t *p, size_t len, uint32_t seed)
{
	return opat_pages_fill_or_data(p, len, seed, 0);
}

/* A counter of /proc/vmstat (pswpout, pgmigrate_success, ...), or -1. */
static inline long long vmstat_count(const char *field)
{
	return exa_file_field("/proc/vmstat", field);
}

/* Page frame of a virtual address (root: /proc/self/pagemap), 0 if none. */
static inline uint64_t page_frame(const void *va)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, sizeof(e), (off_t)((uintptr_t)va / 4096) * 8) != sizeof(e))
		e = 0;
	close(fd);
	return (e >> 63) & 1 ? e & ((1ull << 55) - 1) : 0;
}

/* Pages of [va, va + len) whose PTE is a swap entry (pagemap bit 62): the
 * evidence of a swap-out that needs no VM event counters (the debug
 * kernel has none).  -1 if pagemap cannot be read. */
static inline long pages_swapped(const void *va, size_t len)
{
	uint64_t e[512];
	size_t first = (uintptr_t)va / 4096, n = (len + 4095) / 4096, done = 0;
	long swapped = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (done < n) {
		size_t k = n - done < 512 ? n - done : 512, i;

		if (pread(fd, e, k * 8, (off_t)(first + done) * 8) != (ssize_t)(k * 8)) {
			close(fd);
			return -1;
		}
		for (i = 0; i < k; i++)
			swapped += (e[i] >> 62) & 1;
		done += k;
	}
	close(fd);
	return swapped;
}

/* Post without waiting, the completion record rec[slot] reset first: 0. */
static inline int opost(struct rnode *n, int read, unsigned int slot, void *local,
			const struct exanet_raddr *ra, size_t len, uint64_t notify_va)
{
	struct exanet_rdma_opts op = { .notify_va = notify_va, .tag = slot,
				       .lcomp = &n->rec[slot] };

	int ret;

	exanet_rdma_notif_reset(&n->rec[slot]);
	ret = read ? exanet_rdma_post_read_on(n->rdma, slot, local, ra, len, &op) :
		     exanet_rdma_post_write_on(n->rdma, slot, local, ra, len, &op);
	return ret < 0 ? ret : 0;
}

#endif
