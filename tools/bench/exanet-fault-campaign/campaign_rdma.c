// SPDX-License-Identifier: MIT
/*
 * exanet-fault-campaign: the RDMA writes.  Every rank writes --rdma-bytes
 * to every other rank in transfers of --rdma-size (RDMA_SLOTS in flight),
 * each a pattern of (sender, receiver, transfer, offset), into the
 * sender's region of the receiver's registered target buffer; the
 * pattern helpers also serve the receiver's check (campaign_results.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "exa_util.h"
#include "campaign.h"

uint64_t transfer_offset(const struct campaign *c, uint32_t index)
{
	return (uint64_t)index * c->opt.rdma_size;
}

size_t transfer_len(const struct campaign *c, uint32_t index)
{
	uint64_t left = c->opt.rdma_bytes - transfer_offset(c, index);

	return (size_t)(left < c->opt.rdma_size ? left : c->opt.rdma_size);
}

uint64_t blocks_of(size_t len)
{
	return (len + EXANET_RDMA_BLOCK_SIZE - 1) / EXANET_RDMA_BLOCK_SIZE;
}

/* Where sender's region starts in receiver's target buffer. */
uint64_t region_offset(const struct campaign *c, int sender, int receiver)
{
	return (uint64_t)(sender < receiver ? sender : sender - 1) * c->opt.rdma_bytes;
}

uint64_t pattern_seed(int sender, int receiver, uint32_t index)
{
	return mix64((uint64_t)sender << 48 ^ (uint64_t)receiver << 40 ^ index);
}

/* Pattern bytes [from, from + len) of a transfer; word w = mix64(seed + w). */
static void pattern_fill(uint8_t *p, size_t len, uint64_t seed)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w = mix64(seed + i / 8);

		memcpy(p + i, &w, 8);
	}
	if (i < len) {
		uint64_t w = mix64(seed + i / 8);

		memcpy(p + i, &w, len - i);
	}
}

/* Is p[0, len) the pattern's bytes [from, from + len)?  from is 8-aligned. */
bool pattern_matches(const uint8_t *p, size_t len, uint64_t seed, uint64_t from)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t got, want = mix64(seed + (from + i) / 8);

		memcpy(&got, p + i, 8);
		if (got != want)
			return false;
	}
	if (i < len) {
		uint64_t want = mix64(seed + (from + i) / 8);

		if (memcmp(p + i, &want, len - i))
			return false;
	}
	return true;
}

bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static int next_rdma_dst(struct campaign *c)
{
	for (int tries = 0; tries < c->nnodes - 1; tries++) {
		int dst = step_to_rank(c, c->next_rdma_step);

		c->next_rdma_step = c->next_rdma_step % (c->nnodes - 1) + 1;
		if (c->peers[dst].rdma_next < c->transfers_per_peer)
			return dst;
	}
	return -1;
}

int rdma_fill(struct campaign *c)
{
	int started = 0;

	for (unsigned int s = 0; s < RDMA_SLOTS; s++) {
		struct rdma_slot *sl = &c->slot[s];
		uint8_t *src = c->source + (size_t)s * c->source_stride;
		struct exanet_raddr dst_ra;
		struct peer *p;
		size_t len;
		int dst, err;

		if (sl->busy)
			continue;
		dst = next_rdma_dst(c);
		if (dst < 0)
			break;
		p = &c->peers[dst];
		sl->dst = dst;
		sl->index = p->rdma_next;
		len = transfer_len(c, sl->index);
		pattern_fill(src, len, pattern_seed(c->rank, dst, sl->index));
		dst_ra = p->rdma_target;
		err = exanet_raddr_add(&dst_ra, region_offset(c, c->rank, dst) +
				       transfer_offset(c, sl->index));
		if (!err)
			err = exanet_rdma_post_write_on(c->rdma, s, src, &dst_ra, len, NULL);
		if (err == -EBUSY)
			continue;
		if (err < 0)
			die(EXIT_SETUP, "RDMA write to rank %d: %s", dst, strerror(-err));
		p->rdma_next++;
		sl->busy = true;
		started++;
	}
	return started;
}

int rdma_reap(struct campaign *c)
{
	int progressed = 0;

	for (unsigned int s = 0; s < RDMA_SLOTS; s++) {
		struct rdma_slot *sl = &c->slot[s];
		struct peer *p;
		uint64_t st;

		if (!sl->busy)
			continue;
		p = &c->peers[sl->dst];
		/* STATUS, not the completion record: a descriptor refused at
		 * the trigger ends in ERROR without a record */
		st = exanet_rdma_status(c->rdma, s);
		if (EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_ONGOING)
			continue;
		if (EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_DONE) {
			p->rdma_done++;
		} else {
			list_push(&p->rdma_failed, sl->index);
			if (c->failure_lines++ < FAILURE_LINES_MAX)
				fprintf(stderr, "campaign rank %d: RDMA to rank %d transfer %u: "
					"%s (status %#" PRIx64 ")\n", c->rank, sl->dst, sl->index,
					EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_ERROR ?
					exanet_rdma_error_str(EXANET_RDMA_ST_ERROR(st)) :
					"not started", st);
		}
		sl->busy = false;
		progressed++;
	}
	return progressed;
}

bool rdma_idle(const struct campaign *c)
{
	for (unsigned int s = 0; s < RDMA_SLOTS; s++)
		if (c->slot[s].busy)
			return false;
	return true;
}

static void raise_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	if (setrlimit(RLIMIT_MEMLOCK, &rl) && !getrlimit(RLIMIT_MEMLOCK, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
}

static void *map_zeroed(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* 0, -ENODEV when the node has no RDMA contexts, else a negative errno. */
int rdma_setup(struct campaign *c)
{
	struct exanet_rdma_info info;
	long long avail_kb;
	int err;

	err = exanet_rdma_query(c->dev, &info);
	if (err == -ENOTTY || (!err && (!info.num_ranks || !info.num_pages)))
		return -ENODEV;
	if (err)
		return err;
	c->transfers_per_peer = (uint32_t)((c->opt.rdma_bytes + c->opt.rdma_size - 1) /
					   c->opt.rdma_size);
	c->target_len = (size_t)(c->opt.rdma_bytes * (uint64_t)(c->nnodes - 1));
	c->source_stride = (size_t)(c->opt.rdma_size < c->opt.rdma_bytes ?
				    c->opt.rdma_size : c->opt.rdma_bytes);
	c->source_len = c->source_stride * RDMA_SLOTS;
	avail_kb = exa_file_field("/proc/meminfo", "MemAvailable");
	if (avail_kb > 0 && (uint64_t)c->target_len + c->source_len + MEM_MARGIN_BYTES >
	    (uint64_t)avail_kb << 10) {
		fprintf(stderr, "campaign rank %d: RDMA needs %zu MiB (rdma-bytes x %d peers + "
			"%d x rdma-size), MemAvailable is %lld MiB: lower --rdma-bytes\n",
			c->rank, (c->target_len + c->source_len) >> 20, c->nnodes - 1,
			RDMA_SLOTS, avail_kb >> 10);
		return -ENOMEM;
	}
	raise_memlock();
	c->target = map_zeroed(c->target_len);
	c->source = map_zeroed(c->source_len);
	if (!c->target || !c->source)
		return -ENOMEM;
	err = exanet_reg_mr(c->dev, c->target, c->target_len, 0, &c->target_mr);
	if (!err)
		err = exanet_reg_mr(c->dev, c->source, c->source_len, 0, &c->source_mr);
	if (!err)
		err = exanet_rdma_alloc(c->dev, &c->rdma);
	if (err == -ENOMEM)
		fprintf(stderr, "campaign rank %d: RDMA registration: out of memory "
			"(RLIMIT_MEMLOCK?)\n", c->rank);
	return err;
}

void rdma_teardown(struct campaign *c)
{
	if (c->rdma)
		exanet_rdma_free(c->rdma);
	if (c->source_mr)
		exanet_dereg_mr(c->source_mr);
	if (c->target_mr)
		exanet_dereg_mr(c->target_mr);
	if (c->source)
		munmap(c->source, c->source_len);
	if (c->target)
		munmap(c->target, c->target_len);
	c->rdma = NULL;
	c->source_mr = c->target_mr = NULL;
	c->source = c->target = NULL;
	c->rdma_on = false;
}
