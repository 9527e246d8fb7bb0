// SPDX-License-Identifier: MIT
/*
 * A stand-in libexanet.so.1 for the host test of coll/exanet
 * (test_coll_exanet.sh): the calls the component makes, with the
 * collective unit emulated in POSIX shared memory between the processes of
 * one host, so the component's whole offload path (node sets, leaders,
 * groups, chunks, bounce buffers, fallback agreement) runs without a NI.
 * It is found before the real library through LD_LIBRARY_PATH.
 *
 * Environment:
 *   EXA_FAKE_JOB            name space of the shared-memory groups (unique
 *                           per run; default: the parent's pid)
 *   EXA_FAKE_RANKS_PER_NODE node id = OMPI_COMM_WORLD_RANK / this (1)
 *   EXA_FAKE_NODEV          "open": no device; "coll": no collective unit
 *   EXA_FAKE_NOSPC_NODE     group creation fails with -ENOSPC on this node
 *   EXA_FAKE_FAIL_AT        operation N of every group ends in
 *                           EXANET_COLL_E_PEER on every member (and the
 *                           group refuses the next ones, as the NI does)
 *
 * A group of key K is the file /dev/shm/exafake-JOB-K: a header (members'
 * claims, arrival and departure counters, each member's descriptor) and
 * one EXANET_COLL_MAX_LEN slot per member.  Operation s of a member: once
 * every member left operation s-1, copy the source into its slot, arrive;
 * once all arrived, reduce the slots in member order into the destination
 * (the same bytes on every member, like the NI), leave.  Start only
 * records the descriptor; poll does the steps as far as they can go.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libexanet.h>

#define EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_MEMBERS 64

struct exanet_dev {
	uint32_t node;
	struct exanet_mr *mrs;
};

struct exanet_rdma {
	struct exanet_dev *dev;
};

struct exanet_coll {
	struct exanet_rdma *rdma;
	int ngroups;
};

struct shm_hdr {
	_Atomic uint32_t claimed[FAKE_MAX_MEMBERS];
	_Atomic uint64_t arrived;
	_Atomic uint64_t departed;
	struct {
		uint64_t count, type;
	} desc[FAKE_MAX_MEMBERS];
};
#define SLOTS_OFF 4096

struct exanet_coll_group {
	struct exanet_coll *coll;
	uint32_t key, size, rank, slot;
	char name[96];
	size_t maplen;
	struct shm_hdr *hdr;
	/* the operation in flight */
	uint64_t seq;		/* operations started */
	int stage;		/* 0 idle/done, 1 waiting to write, 2 arrived */
	int failed;		/* an operation failed: refuse the next */
	unsigned int error;
	const void *src;
	void *dst;
	uint64_t count, type;
};

static int node_of_process(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK"), *p = getenv("EXA_FAKE_RANKS_PER_NODE");
	int rank = r ? atoi(r) : 0, per = p ? atoi(p) : 1;

	return rank / (per > 0 ? per : 1);
}

static const char *job(void)
{
	static char buf[32];
	const char *j = getenv("EXA_FAKE_JOB");

	if (j && *j)
		return j;
	snprintf(buf, sizeof(buf), "%d", (int)getppid());
	return buf;
}

EXPORT int exanet_open(const char *path, struct exanet_dev **devp)
{
	const char *nodev = getenv("EXA_FAKE_NODEV");

	(void)path;
	if (nodev && !strcmp(nodev, "open"))
		return -ENOENT;
	*devp = calloc(1, sizeof(**devp));
	if (!*devp)
		return -ENOMEM;
	(*devp)->node = (uint32_t)node_of_process();
	return 0;
}

EXPORT void exanet_close(struct exanet_dev *dev)
{
	while (dev && dev->mrs) {
		struct exanet_mr *mr = dev->mrs;

		dev->mrs = mr->next;
		free(mr);
	}
	free(dev);
}

EXPORT int exanet_query(const struct exanet_dev *dev, struct exanet_info *info)
{
	memset(info, 0, sizeof(*info));
	info->node_id = dev->node;
	info->num_nodes = 64;
	info->pdid = 1;
	return 0;
}

EXPORT int exanet_rdma_alloc(struct exanet_dev *dev, struct exanet_rdma **rdmap)
{
	*rdmap = calloc(1, sizeof(**rdmap));
	if (!*rdmap)
		return -ENOMEM;
	(*rdmap)->dev = dev;
	return 0;
}

EXPORT int exanet_rdma_free(struct exanet_rdma *rdma)
{
	free(rdma);
	return 0;
}

EXPORT uint32_t exanet_rdma_page(const struct exanet_rdma *rdma) { (void)rdma; return 0; }
EXPORT uint32_t exanet_rdma_rank(const struct exanet_rdma *rdma) { (void)rdma; return 0; }

EXPORT int exanet_reg_mr(struct exanet_dev *dev, void *addr, size_t len, uint32_t access,
			 struct exanet_mr **mrp)
{
	struct exanet_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return -ENOMEM;
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	mr->dev = dev;
	mr->node = dev->node;
	mr->next = dev->mrs;
	dev->mrs = mr;
	*mrp = mr;
	return 0;
}

EXPORT int exanet_dereg_mr(struct exanet_mr *mr)
{
	struct exanet_mr **pp = &mr->dev->mrs;

	while (*pp && *pp != mr)
		pp = &(*pp)->next;
	if (*pp)
		*pp = mr->next;
	free(mr);
	return 0;
}

static int registered(struct exanet_dev *dev, const void *p, size_t len)
{
	for (struct exanet_mr *mr = dev->mrs; mr; mr = mr->next)
		if ((const char *)p >= (const char *)mr->addr &&
		    (const char *)p + len <= (const char *)mr->addr + mr->len)
			return 1;
	return 0;
}

EXPORT int exanet_coll_open(struct exanet_rdma *rdma, struct exanet_coll **collp)
{
	const char *nodev = getenv("EXA_FAKE_NODEV");

	if (nodev && !strcmp(nodev, "coll"))
		return -ENODEV;
	*collp = calloc(1, sizeof(**collp));
	if (!*collp)
		return -ENOMEM;
	(*collp)->rdma = rdma;
	return 0;
}

EXPORT int exanet_coll_close(struct exanet_coll *coll)
{
	if (coll && coll->ngroups)
		fprintf(stderr, "fakeni: exanet_coll_close with %d group(s) open\n", coll->ngroups);
	free(coll);
	return 0;
}

EXPORT size_t exanet_coll_dtype_size(unsigned int dtype)
{
	switch (dtype) {
	case EXANET_COLL_INT32: case EXANET_COLL_UINT32: case EXANET_COLL_FLOAT: return 4;
	case EXANET_COLL_INT64: case EXANET_COLL_UINT64: case EXANET_COLL_DOUBLE: return 8;
	default: return 0;
	}
}

EXPORT int exanet_coll_group_create(struct exanet_coll *coll, uint32_t key, uint32_t size,
				    uint32_t my_rank, const uint32_t *nodes,
				    struct exanet_coll_group **grpp)
{
	const char *nospc = getenv("EXA_FAKE_NOSPC_NODE");
	struct exanet_dev *dev = coll->rdma->dev;
	struct exanet_coll_group *g;
	uint32_t zero = 0;
	int fd;

	if (!size || size > FAKE_MAX_MEMBERS || my_rank >= size || nodes[my_rank] != dev->node)
		return -EINVAL;
	if (nospc && (uint32_t)atoi(nospc) == dev->node)
		return -ENOSPC;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->coll = coll;
	g->key = key;
	g->size = size;
	g->rank = my_rank;
	g->slot = (uint32_t)coll->ngroups;
	snprintf(g->name, sizeof(g->name), "/exafake-%s-%08x", job(), key);
	g->maplen = SLOTS_OFF + (size_t)size * EXANET_COLL_MAX_LEN;
	fd = shm_open(g->name, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)g->maplen)) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		free(g);
		return err;
	}
	g->hdr = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (g->hdr == MAP_FAILED) {
		free(g);
		return -ENOMEM;
	}
	if (!atomic_compare_exchange_strong(&g->hdr->claimed[my_rank], &zero, 1)) {
		munmap(g->hdr, g->maplen);
		free(g);
		return -EEXIST;
	}
	coll->ngroups++;
	*grpp = g;
	return 0;
}

EXPORT int exanet_coll_group_destroy(struct exanet_coll_group *g)
{
	atomic_store(&g->hdr->claimed[g->rank], 0);
	if (g->rank == 0)
		shm_unlink(g->name);
	munmap(g->hdr, g->maplen);
	g->coll->ngroups--;
	free(g);
	return 0;
}

EXPORT uint32_t exanet_coll_group_size(const struct exanet_coll_group *g) { return g->size; }
EXPORT uint32_t exanet_coll_group_rank(const struct exanet_coll_group *g) { return g->rank; }
EXPORT uint32_t exanet_coll_group_slot(const struct exanet_coll_group *g) { return g->slot; }

EXPORT int exanet_coll_start(struct exanet_coll_group *g, const void *src, void *dst,
			     size_t count, unsigned int dtype, unsigned int op,
			     struct exanet_rdma_notif *lcomp, uint64_t tag)
{
	size_t es = exanet_coll_dtype_size(dtype);

	(void)lcomp;
	(void)tag;
	if (!es || op >= EXANET_COLL_NUM_OPS || count * es > EXANET_COLL_MAX_LEN ||
	    ((dtype == EXANET_COLL_FLOAT || dtype == EXANET_COLL_DOUBLE) && op >= EXANET_COLL_BAND))
		return -EINVAL;
	if (g->stage)
		return -EBUSY;
	g->seq++;
	g->src = src;
	g->dst = dst;
	g->count = count;
	g->type = EXANET_COLL_TYPE(dtype, op);
	g->error = EXANET_COLL_E_NONE;
	if (g->failed)
		g->error = EXANET_COLL_E_FAILED;
	else if (count && (!registered(g->coll->rdma->dev, src, count * es) ||
			   !registered(g->coll->rdma->dev, dst, count * es)))
		g->error = EXANET_COLL_E_LOCAL_DMA;
	g->stage = g->error ? 0 : 1;
	if (g->error)
		g->failed = 1;
	return 0;
}

#define REDUCE(T) do {							\
	T *d = (T *)dst; const T *s = (const T *)src;			\
	for (uint64_t i = 0; i < n; i++)				\
		switch (op) {						\
		case EXANET_COLL_SUM: d[i] = (T)(d[i] + s[i]); break;	\
		case EXANET_COLL_MIN: if (s[i] < d[i]) d[i] = s[i]; break; \
		case EXANET_COLL_MAX: if (s[i] > d[i]) d[i] = s[i]; break; \
		default: break;						\
		}							\
} while (0)
#define BITS(T) do {							\
	T *d = (T *)dst; const T *s = (const T *)src;			\
	for (uint64_t i = 0; i < n; i++)				\
		d[i] = op == EXANET_COLL_BAND ? (T)(d[i] & s[i]) :	\
		       op == EXANET_COLL_BOR ? (T)(d[i] | s[i]) : (T)(d[i] ^ s[i]); \
} while (0)

static void combine(void *dst, const void *src, uint64_t n, unsigned int dtype, unsigned int op)
{
	int bitwise = op >= EXANET_COLL_BAND;

	switch (dtype) {
	case EXANET_COLL_INT32: if (bitwise) BITS(uint32_t); else if (op == EXANET_COLL_SUM) REDUCE(uint32_t); else REDUCE(int32_t); break;
	case EXANET_COLL_UINT32: if (bitwise) BITS(uint32_t); else REDUCE(uint32_t); break;
	case EXANET_COLL_INT64: if (bitwise) BITS(uint64_t); else if (op == EXANET_COLL_SUM) REDUCE(uint64_t); else REDUCE(int64_t); break;
	case EXANET_COLL_UINT64: if (bitwise) BITS(uint64_t); else REDUCE(uint64_t); break;
	case EXANET_COLL_FLOAT: REDUCE(float); break;
	case EXANET_COLL_DOUBLE: REDUCE(double); break;
	default: break;
	}
}

static uint64_t status_of(const struct exanet_coll_group *g, unsigned int state)
{
	return (uint64_t)state | (uint64_t)g->error << 8 | (uint64_t)(uint32_t)g->seq << 32;
}

EXPORT int exanet_coll_poll(struct exanet_coll_group *g, uint64_t *statusp)
{
	struct shm_hdr *h = g->hdr;
	size_t es = exanet_coll_dtype_size(EXANET_COLL_TYPE_DTYPE(g->type));
	char *slots = (char *)h + SLOTS_OFF;

	if (g->stage == 1) {
		if (atomic_load(&h->departed) < (g->seq - 1) * g->size)
			goto busy;
		memcpy(slots + (size_t)g->rank * EXANET_COLL_MAX_LEN, g->src, g->count * es);
		h->desc[g->rank].count = g->count;
		h->desc[g->rank].type = g->type;
		atomic_fetch_add(&h->arrived, 1);
		g->stage = 2;
	}
	if (g->stage == 2) {
		if (atomic_load(&h->arrived) < g->seq * g->size)
			goto busy;
		const char *fail_at = getenv("EXA_FAKE_FAIL_AT");

		for (uint32_t m = 0; m < g->size; m++)
			if (h->desc[m].count != g->count || h->desc[m].type != g->type)
				g->error = EXANET_COLL_E_MISMATCH;
		if (fail_at && strtoull(fail_at, NULL, 0) == g->seq)
			g->error = EXANET_COLL_E_PEER;
		if (!g->error && g->count) {
			unsigned int dt = EXANET_COLL_TYPE_DTYPE(g->type), op = EXANET_COLL_TYPE_OP(g->type);
			void *acc = malloc(g->count * es);

			memcpy(acc, slots, g->count * es);
			for (uint32_t m = 1; m < g->size; m++)
				combine(acc, slots + (size_t)m * EXANET_COLL_MAX_LEN, g->count, dt, op);
			memcpy(g->dst, acc, g->count * es);
			free(acc);
		}
		atomic_fetch_add(&h->departed, 1);
		g->stage = 0;
		if (g->error)
			g->failed = 1;
	}
	if (statusp)
		*statusp = status_of(g, g->error ? EXANET_COLL_ERROR : EXANET_COLL_DONE);
	return g->error ? exanet_coll_error_errno(g->error) : 0;
busy:
	if (statusp)
		*statusp = status_of(g, EXANET_COLL_ONGOING);
	sched_yield();
	return -EINPROGRESS;
}

EXPORT int exanet_coll_wait(struct exanet_coll_group *g, int64_t timeout_ns, uint64_t *statusp)
{
	int err;

	(void)timeout_ns;
	while ((err = exanet_coll_poll(g, statusp)) == -EINPROGRESS)
		;
	return err;
}

EXPORT int exanet_coll_allreduce(struct exanet_coll_group *g, const void *src, void *dst,
				 size_t count, unsigned int dtype, unsigned int op,
				 int64_t timeout_ns)
{
	int err = exanet_coll_start(g, src, dst, count, dtype, op, NULL, 0);

	return err ? err : exanet_coll_wait(g, timeout_ns, NULL);
}

EXPORT int exanet_coll_error_errno(unsigned int error)
{
	static const int map[] = { 0, -EINVAL, -EFAULT, -EPROTO, -ECONNRESET, -ETIMEDOUT,
				   -EREMOTEIO, -ECANCELED, -EPIPE, -ENOMEM };

	return error < sizeof(map) / sizeof(map[0]) ? map[error] : -EIO;
}

EXPORT const char *exanet_coll_error_str(unsigned int error)
{
	static const char *const s[] = { "none", "bad descriptor", "local DMA", "mismatch",
					 "no group", "timeout", "peer", "aborted", "failed",
					 "no memory" };

	return error < sizeof(s) / sizeof(s[0]) ? s[error] : "unknown";
}
