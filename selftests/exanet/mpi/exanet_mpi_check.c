// SPDX-License-Identifier: MIT
/*
 * MPI checks run by Debian's Open MPI across the emulated nodes (started by
 * the in-VM test exanet_mpi through mpirun; see selftests/README.md).
 *
 *   mpirun ... exanet_mpi_check [CASE...]     (default: every case)
 *
 * Every rank runs every case; a case passes when it passed on every rank.
 * Rank 0 prints one line per case, "ok - NAME" or "not ok - NAME", then
 * "checks: P passed, F failed"; the exit status is 1 if anything failed.
 * Failing ranks print "# rank R: ..." lines with what they saw.
 *
 * Cases: p2p_sizes (0 B .. 4 MiB, ring exchange, every byte checked),
 * any_source_any_tag, probe_mprobe (Probe/Iprobe/Mprobe/Improbe),
 * nonblocking_waitall (many Isend/Irecv, receives posted in reverse tag
 * order), collectives (Bcast, Reduce, Allreduce, Alltoall, Barrier with
 * results checked), onesided_put_get (MPI_Put/MPI_Get with fences),
 * onesided_pscw (Post/Start/Complete/Wait), onesided_lock_epochs (exclusive
 * and shared locks, lock_all + flush), onesided_accumulate (SUM, MAX,
 * Get_accumulate from every rank into one window), onesided_atomics
 * (Fetch_and_op with no lost update, Compare_and_swap as a lock),
 * ni_counters_moved (this node's ExaNet NI sent and delivered packets
 * while the program ran: the traffic went through the fabric, not TCP).
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, nranks;
static int case_failed;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	case_failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one write per line: mpirun forwards every rank's writes as they
	 * come, and pieces of lines from several ranks would interleave */
	fprintf(stderr, "# rank %d: %s\n", rank, msg);
}

#define CHECK(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)
#define MPI_OK(call) do { int _rc = (call); \
	if (_rc != MPI_SUCCESS) fail("%s: error %d (line %d)", #call, _rc, __LINE__); } while (0)

/* The byte at position i of a message from src, for case/round seed. */
static uint8_t pat(int src, uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)src * 2654435761u ^ seed * 40503u ^ (uint32_t)i * 2246822519u;

	x ^= x >> 15;
	return (uint8_t)(x ^ (uint32_t)(i >> 8));
}

static void fill(uint8_t *buf, size_t len, int src, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pat(src, seed, i);
}

/* Index of the first wrong byte, or -1. */
static long verify(const uint8_t *buf, size_t len, int src, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pat(src, seed, i))
			return (long)i;
	return -1;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "# rank %d: out of memory (%zu B)\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* ---- cases ---- */

static void case_p2p_sizes(void)
{
	static const size_t sizes[] = {
		0, 1, 7, 8, 63, 64, 65, 1023, 1024, 1025, 4096, 16383, 65536, 65537,
		262144, 1048576 + 3, 4194304,
	};
	size_t maxs = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
	uint8_t *sb = xmalloc(maxs), *rb = xmalloc(maxs + 64);
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;

	for (unsigned int k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		MPI_Request rq[2];
		MPI_Status st[2];
		int count = -1;
		long bad;

		fill(sb, n, rank, 100 + k);
		memset(rb, 0xee, n + 64);
		MPI_OK(MPI_Irecv(rb, (int)n + 64, MPI_BYTE, left, (int)k, MPI_COMM_WORLD, &rq[0]));
		MPI_OK(MPI_Isend(sb, (int)n, MPI_BYTE, right, (int)k, MPI_COMM_WORLD, &rq[1]));
		MPI_OK(MPI_Waitall(2, rq, st));
		MPI_Get_count(&st[0], MPI_BYTE, &count);
		CHECK(count == (int)n, "size %zu: received count %d", n, count);
		CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == (int)k,
		      "size %zu: source %d tag %d", n, st[0].MPI_SOURCE, st[0].MPI_TAG);
		bad = verify(rb, n, left, 100 + k);
		CHECK(bad < 0, "size %zu: byte %ld wrong", n, bad);
		CHECK(rb[n] == 0xee, "size %zu: written past the message", n);
		/* the blocking calls too, the other way round */
		fill(sb, n, rank, 200 + k);
		MPI_OK(MPI_Sendrecv(sb, (int)n, MPI_BYTE, left, 1000 + (int)k, rb, (int)n, MPI_BYTE,
				    right, 1000 + (int)k, MPI_COMM_WORLD, &st[0]));
		bad = verify(rb, n, right, 200 + k);
		CHECK(bad < 0, "sendrecv size %zu: byte %ld wrong", n, bad);
	}
	free(sb);
	free(rb);
}

static void case_any_source_any_tag(void)
{
	enum { LEN = 3000 };
	uint8_t *buf = xmalloc(LEN);

	if (rank == 0) {
		unsigned char *seen = calloc((size_t)nranks, 1);

		for (int i = 1; i < nranks; i++) {
			MPI_Status st;
			int count, src;

			memset(buf, 0, LEN);
			MPI_OK(MPI_Recv(buf, LEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
					MPI_COMM_WORLD, &st));
			src = st.MPI_SOURCE;
			MPI_Get_count(&st, MPI_BYTE, &count);
			if (src <= 0 || src >= nranks) {
				fail("source %d out of range", src);
				continue;
			}
			CHECK(!seen[src], "source %d twice", src);
			seen[src] = 1;
			CHECK(st.MPI_TAG == 7000 + src, "source %d: tag %d", src, st.MPI_TAG);
			CHECK(count == 100 + 29 * src, "source %d: count %d", src, count);
			CHECK(verify(buf, (size_t)count, src, 7) < 0, "source %d: data", src);
		}
		free(seen);
	} else {
		fill(buf, (size_t)(100 + 29 * rank), rank, 7);
		MPI_OK(MPI_Send(buf, 100 + 29 * rank, MPI_BYTE, 0, 7000 + rank, MPI_COMM_WORLD));
	}
	free(buf);
}

static void case_probe_mprobe(void)
{
	/* every rank sends two messages to its right neighbour: a small one
	 * (eager) and a large one (rendezvous), with different tags */
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	size_t small = 333, large, cap = 200000 + (size_t)nranks;
	uint8_t *s1 = xmalloc(small), *s2 = xmalloc(cap), *r = xmalloc(cap);
	MPI_Request rq[2];
	MPI_Status st;
	MPI_Message msg;
	int count, flag = 0;

	fill(s1, small, rank, 31);
	fill(s2, 200000 + (size_t)right, rank, 32);	/* what left expects is ours */
	large = 200000 + (size_t)rank;	/* sized by the receiver's rank */
	MPI_OK(MPI_Isend(s1, (int)small, MPI_BYTE, right, 31, MPI_COMM_WORLD, &rq[0]));
	MPI_OK(MPI_Isend(s2, 200000 + right, MPI_BYTE, right, 32, MPI_COMM_WORLD, &rq[1]));

	/* Probe for the large one first (by tag), then receive it */
	MPI_OK(MPI_Probe(left, 32, MPI_COMM_WORLD, &st));
	MPI_Get_count(&st, MPI_BYTE, &count);
	CHECK(count == (int)large && st.MPI_SOURCE == left && st.MPI_TAG == 32,
	      "Probe: count %d source %d tag %d", count, st.MPI_SOURCE, st.MPI_TAG);
	MPI_OK(MPI_Recv(r, count, MPI_BYTE, left, 32, MPI_COMM_WORLD, &st));
	CHECK(verify(r, large, left, 32) < 0, "Probe+Recv: data");

	/* Iprobe (any tag) until the small one shows, then Mprobe + Mrecv */
	while (!flag)
		MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
	CHECK(st.MPI_TAG == 31 && st.MPI_SOURCE == left, "Iprobe: source %d tag %d",
	      st.MPI_SOURCE, st.MPI_TAG);
	MPI_OK(MPI_Mprobe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
	MPI_Get_count(&st, MPI_BYTE, &count);
	CHECK(count == (int)small && st.MPI_TAG == 31, "Mprobe: count %d tag %d", count,
	      st.MPI_TAG);
	memset(r, 0, small);
	MPI_OK(MPI_Mrecv(r, count, MPI_BYTE, &msg, &st));
	CHECK(verify(r, small, left, 31) < 0, "Mprobe+Mrecv: data");
	MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));

	/* Improbe on a large message: the claimed message is still received
	 * intact although other messages with the same tag follow it */
	MPI_Barrier(MPI_COMM_WORLD);
	fill(s2, 70000, rank, 33);
	fill(s1, small, rank, 34);
	MPI_OK(MPI_Isend(s2, 70000, MPI_BYTE, right, 33, MPI_COMM_WORLD, &rq[0]));
	MPI_OK(MPI_Isend(s1, (int)small, MPI_BYTE, right, 33, MPI_COMM_WORLD, &rq[1]));
	flag = 0;
	while (!flag)
		MPI_OK(MPI_Improbe(left, 33, MPI_COMM_WORLD, &flag, &msg, &st));
	MPI_Get_count(&st, MPI_BYTE, &count);
	CHECK(count == 70000, "Improbe: count %d (messages overtook each other)", count);
	MPI_OK(MPI_Mrecv(r, count, MPI_BYTE, &msg, &st));
	CHECK(verify(r, 70000, left, 33) < 0, "Improbe+Mrecv: data");
	MPI_OK(MPI_Recv(r, (int)small, MPI_BYTE, left, 33, MPI_COMM_WORLD, &st));
	CHECK(verify(r, small, left, 34) < 0, "second message: data");
	MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
	free(s1);
	free(s2);
	free(r);
}

static void case_nonblocking_waitall(void)
{
	enum { PER_PEER = 8 };
	size_t len[PER_PEER] = { 0, 8, 1000, 1024, 1500, 9000, 65536, 300000 };
	int n = nranks * PER_PEER;
	MPI_Request *rq = xmalloc(sizeof(*rq) * (size_t)n * 2);
	MPI_Status *st = xmalloc(sizeof(*st) * (size_t)n * 2);
	uint8_t **sb = xmalloc(sizeof(*sb) * (size_t)n), **rb = xmalloc(sizeof(*rb) * (size_t)n);
	int k = 0;

	/* receives first, in reverse tag order, then the sends in tag order:
	 * matching must go by tag, not by arrival */
	for (int p = 0; p < nranks; p++)
		for (int t = PER_PEER - 1; t >= 0; t--) {
			int i = p * PER_PEER + t;

			rb[i] = xmalloc(len[t]);
			MPI_OK(MPI_Irecv(rb[i], (int)len[t], MPI_BYTE, p, t, MPI_COMM_WORLD, &rq[k++]));
		}
	for (int p = 0; p < nranks; p++)
		for (int t = 0; t < PER_PEER; t++) {
			int i = p * PER_PEER + t;

			sb[i] = xmalloc(len[t]);
			fill(sb[i], len[t], rank, 500 + (uint32_t)(p * PER_PEER + t));
			MPI_OK(MPI_Isend(sb[i], (int)len[t], MPI_BYTE, p, t, MPI_COMM_WORLD, &rq[k++]));
		}
	MPI_OK(MPI_Waitall(k, rq, st));
	for (int p = 0; p < nranks; p++)
		for (int t = 0; t < PER_PEER; t++) {
			int i = p * PER_PEER + t;
			long bad = verify(rb[i], len[t], p, 500 + (uint32_t)(rank * PER_PEER + t));

			CHECK(bad < 0, "from %d tag %d (%zu B): byte %ld wrong", p, t, len[t], bad);
			free(rb[i]);
			free(sb[i]);
		}
	free(rq);
	free(st);
	free(sb);
	free(rb);
}

static void case_collectives(void)
{
	static const size_t bsizes[] = { 8, 65536, 1048576 };
	int root = nranks - 1;
	int64_t mine[4], sum[4], max[4];
	double d = rank + 0.5, dsum = 0;
	int *a2a_s = xmalloc(sizeof(int) * (size_t)nranks * 3);
	int *a2a_r = xmalloc(sizeof(int) * (size_t)nranks * 3);

	for (unsigned int k = 0; k < 3; k++) {
		size_t n = bsizes[k];
		uint8_t *b = xmalloc(n);

		if (rank == root)
			fill(b, n, root, 60 + k);
		else
			memset(b, 0, n);
		MPI_OK(MPI_Bcast(b, (int)n, MPI_BYTE, root, MPI_COMM_WORLD));
		CHECK(verify(b, n, root, 60 + k) < 0, "Bcast %zu B: data", n);
		free(b);
	}
	for (int i = 0; i < 4; i++)
		mine[i] = (int64_t)(rank + 1) * (i + 1) * 1000003;
	memset(sum, 0, sizeof(sum));
	MPI_OK(MPI_Reduce(mine, sum, 4, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD));
	if (rank == 0)
		for (int i = 0; i < 4; i++)
			CHECK(sum[i] == (int64_t)nranks * (nranks + 1) / 2 * (i + 1) * 1000003,
			      "Reduce[%d] = %lld", i, (long long)sum[i]);
	MPI_OK(MPI_Allreduce(mine, max, 4, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD));
	for (int i = 0; i < 4; i++)
		CHECK(max[i] == (int64_t)nranks * (i + 1) * 1000003, "Allreduce max[%d] = %lld", i,
		      (long long)max[i]);
	MPI_OK(MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
	CHECK(dsum == nranks * (nranks - 1) / 2.0 + nranks * 0.5, "Allreduce sum = %g", dsum);
	for (int p = 0; p < nranks; p++)
		for (int j = 0; j < 3; j++)
			a2a_s[p * 3 + j] = rank * 10000 + p * 10 + j;
	MPI_OK(MPI_Alltoall(a2a_s, 3, MPI_INT, a2a_r, 3, MPI_INT, MPI_COMM_WORLD));
	for (int p = 0; p < nranks; p++)
		for (int j = 0; j < 3; j++)
			CHECK(a2a_r[p * 3 + j] == p * 10000 + rank * 10 + j,
			      "Alltoall from %d [%d] = %d", p, j, a2a_r[p * 3 + j]);
	/* Barrier: nobody leaves before the last one entered, who enters
	 * 1 s late: everyone else waits at least half of that.  Each rank
	 * times from its own start, so the rounds start together (straight
	 * after the Alltoall, ranks sharing a vCPU started late enough to see
	 * only 125 of 200 ms; with 2 ranks per node on 4 nodes sharing two
	 * host cores a rank once started its clock 100 ms late) */
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	for (int round = 0; round < 2; round++) {
		double t0 = MPI_Wtime(), waited;

		if (rank == nranks - 1) {
			struct timespec ts = { 1, 0 };

			nanosleep(&ts, NULL);
		}
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
		waited = MPI_Wtime() - t0;
		CHECK(rank == nranks - 1 || waited >= 0.5, "Barrier returned after %.3f s", waited);
	}
	free(a2a_s);
	free(a2a_r);
}

static void case_onesided_put_get(void)
{
	enum { N = 70000 };	/* past the eager size */
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	uint8_t *win_mem = xmalloc(2 * N), *src = xmalloc(N), *got = xmalloc(N);
	MPI_Win win;
	long bad;

	memset(win_mem, 0, 2 * N);
	fill(win_mem + N, N, rank, 90);			/* what others Get */
	fill(src, N, rank, 91);
	MPI_OK(MPI_Win_create(win_mem, 2 * N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_fence(0, win));
	MPI_OK(MPI_Put(src, N, MPI_BYTE, right, 0, N, MPI_BYTE, win));
	MPI_OK(MPI_Get(got, N, MPI_BYTE, left, N, N, MPI_BYTE, win));
	MPI_OK(MPI_Win_fence(0, win));
	bad = verify(win_mem, N, left, 91);
	CHECK(bad < 0, "Put from %d: byte %ld wrong", left, bad);
	bad = verify(got, N, left, 90);
	CHECK(bad < 0, "Get from %d: byte %ld wrong", left, bad);
	/* small ones, several per epoch */
	MPI_OK(MPI_Win_fence(0, win));
	for (int i = 0; i < 16; i++) {
		uint8_t v = (uint8_t)(rank * 16 + i);

		MPI_OK(MPI_Put(&v, 1, MPI_BYTE, right, N + i * 7, 1, MPI_BYTE, win));
	}
	MPI_OK(MPI_Win_fence(0, win));
	for (int i = 0; i < 16; i++)
		CHECK(win_mem[N + i * 7] == (uint8_t)(left * 16 + i), "small Put %d: %u", i,
		      win_mem[N + i * 7]);
	MPI_OK(MPI_Win_free(&win));
	free(win_mem);
	free(src);
	free(got);
}

/* Post/Start/Complete/Wait: each rank exposes its window to its left
 * neighbour and accesses its right one; a generalized active target
 * epoch, no fence. */
static void case_onesided_pscw(void)
{
	enum { N = 4096 };
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	uint8_t *win_mem = xmalloc(N), *src = xmalloc(N);
	MPI_Group world, g_left, g_right;
	MPI_Win win;
	long bad;

	memset(win_mem, 0, N);
	fill(src, N, rank, 92);
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
	MPI_OK(MPI_Group_incl(world, 1, &left, &g_left));
	MPI_OK(MPI_Group_incl(world, 1, &right, &g_right));
	MPI_OK(MPI_Win_create(win_mem, N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	for (int round = 0; round < 3; round++) {
		MPI_OK(MPI_Win_post(g_left, 0, win));
		MPI_OK(MPI_Win_start(g_right, 0, win));
		MPI_OK(MPI_Put(src, N, MPI_BYTE, right, 0, N, MPI_BYTE, win));
		MPI_OK(MPI_Win_complete(win));
		MPI_OK(MPI_Win_wait(win));
		bad = verify(win_mem, N, left, 92);
		CHECK(bad < 0, "PSCW round %d: Put from %d: byte %ld wrong", round, left, bad);
		memset(win_mem, 0, N);
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	}
	MPI_OK(MPI_Win_free(&win));
	MPI_Group_free(&g_left);
	MPI_Group_free(&g_right);
	MPI_Group_free(&world);
	free(win_mem);
	free(src);
}

/* Passive target: exclusive lock, Put, unlock (the data is at the target
 * when unlock returns); shared lock + Get; lock_all with flush. */
static void case_onesided_lock_epochs(void)
{
	enum { N = 1024 };
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	uint8_t *win_mem = xmalloc(2 * N), *src = xmalloc(N), *got = xmalloc(N);
	MPI_Win win;
	long bad;

	memset(win_mem, 0, 2 * N);
	fill(win_mem + N, N, rank, 93);
	fill(src, N, rank, 94);
	MPI_OK(MPI_Win_create(win_mem, 2 * N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
	MPI_OK(MPI_Put(src, N, MPI_BYTE, right, 0, N, MPI_BYTE, win));
	MPI_OK(MPI_Win_unlock(right, win));
	MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win));
	MPI_OK(MPI_Get(got, N, MPI_BYTE, left, N, N, MPI_BYTE, win));
	MPI_OK(MPI_Win_unlock(left, win));
	bad = verify(got, N, left, 93);
	CHECK(bad < 0, "Get under a shared lock from %d: byte %ld wrong", left, bad);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	/* our own window, read under a lock of our own: the left one's Put */
	MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
	bad = verify(win_mem, N, left, 94);
	MPI_OK(MPI_Win_unlock(rank, win));
	CHECK(bad < 0, "Put under an exclusive lock from %d: byte %ld wrong", left, bad);
	/* lock_all: a small Put to every rank, flushed one by one */
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Win_lock_all(0, win));
	for (int t = 0; t < nranks; t++) {
		uint8_t v = (uint8_t)(0x40 + rank);

		MPI_OK(MPI_Put(&v, 1, MPI_BYTE, t, rank, 1, MPI_BYTE, win));
		MPI_OK(MPI_Win_flush(t, win));
	}
	MPI_OK(MPI_Win_unlock_all(win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
	for (int r = 0; r < nranks; r++)
		CHECK(win_mem[r] == (uint8_t)(0x40 + r), "lock_all Put from %d: %#x", r, win_mem[r]);
	MPI_OK(MPI_Win_unlock(rank, win));
	MPI_OK(MPI_Win_free(&win));
	free(win_mem);
	free(src);
	free(got);
}

/* Accumulate from every rank into rank 0's window (SUM of int64, MAX of
 * double, element-wise atomic per MPI), Get_accumulate, REPLACE. */
static void case_onesided_accumulate(void)
{
	enum { N = 64, ROUNDS = 5 };
	int64_t *sums = xmalloc(N * sizeof(*sums)), *mine = xmalloc(N * sizeof(*mine));
	int64_t old[N];
	double *maxes = xmalloc(N * sizeof(*maxes)), dmine[N];
	MPI_Win win_i, win_d;

	memset(sums, 0, N * sizeof(*sums));
	for (int i = 0; i < N; i++) {
		maxes[i] = -1.0;
		mine[i] = (int64_t)rank * 1000 + i;
		dmine[i] = (double)((rank * 7 + i) % nranks) + 0.5;
	}
	MPI_OK(MPI_Win_create(sums, N * sizeof(*sums), sizeof(*sums), MPI_INFO_NULL,
			      MPI_COMM_WORLD, &win_i));
	MPI_OK(MPI_Win_create(maxes, N * sizeof(*maxes), sizeof(*maxes), MPI_INFO_NULL,
			      MPI_COMM_WORLD, &win_d));
	MPI_OK(MPI_Win_lock_all(0, win_i));
	MPI_OK(MPI_Win_lock_all(0, win_d));
	for (int r = 0; r < ROUNDS; r++) {
		MPI_OK(MPI_Accumulate(mine, N, MPI_INT64_T, 0, 0, N, MPI_INT64_T, MPI_SUM, win_i));
		MPI_OK(MPI_Win_flush(0, win_i));
	}
	MPI_OK(MPI_Accumulate(dmine, N, MPI_DOUBLE, 0, 0, N, MPI_DOUBLE, MPI_MAX, win_d));
	MPI_OK(MPI_Win_unlock_all(win_d));
	MPI_OK(MPI_Win_unlock_all(win_i));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0) {
		for (int i = 0; i < N; i++) {
			int64_t want = 0;
			double dwant = -1.0;

			for (int q = 0; q < nranks; q++) {
				double d = (double)((q * 7 + i) % nranks) + 0.5;

				want += ((int64_t)q * 1000 + i) * ROUNDS;
				dwant = d > dwant ? d : dwant;
			}
			CHECK(sums[i] == want, "SUM [%d]: %lld, want %lld", i, (long long)sums[i],
			      (long long)want);
			CHECK(maxes[i] == dwant, "MAX [%d]: %g, want %g", i, maxes[i], dwant);
		}
	}
	/* Get_accumulate with MPI_NO_OP reads what SUM left (every rank) */
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win_i));
	MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, old, N, MPI_INT64_T, 0, 0, N,
				  MPI_INT64_T, MPI_NO_OP, win_i));
	MPI_OK(MPI_Win_unlock(0, win_i));
	for (int i = 0; i < N; i++)
		CHECK(old[i] == (int64_t)i * nranks * ROUNDS +
		      (int64_t)1000 * ROUNDS * nranks * (nranks - 1) / 2,
		      "Get_accumulate NO_OP [%d]: %lld", i, (long long)old[i]);
	MPI_OK(MPI_Win_free(&win_d));
	MPI_OK(MPI_Win_free(&win_i));
	free(sums);
	free(mine);
	free(maxes);
}

/* Fetch_and_op: every rank adds 1 to one counter ITERS times, each add's
 * old value is unique (no lost or doubled update); Compare_and_swap as a
 * spin lock around a non-atomic read-modify-write of a second word. */
static void case_onesided_atomics(void)
{
	enum { ITERS = 50 };
	int64_t *words = xmalloc(3 * sizeof(*words)), one = 1, prev, total = 0;
	int64_t *seen = xmalloc(ITERS * sizeof(*seen));
	MPI_Win win;

	memset(words, 0, 3 * sizeof(*words));
	MPI_OK(MPI_Win_create(words, 3 * sizeof(*words), sizeof(*words), MPI_INFO_NULL,
			      MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < ITERS; i++) {
		MPI_OK(MPI_Fetch_and_op(&one, &seen[i], MPI_INT64_T, 0, 0, MPI_SUM, win));
		MPI_OK(MPI_Win_flush(0, win));
		CHECK(seen[i] >= 0 && seen[i] < (int64_t)ITERS * nranks &&
		      (i == 0 || seen[i] > seen[i - 1]),
		      "Fetch_and_op %d returned %lld after %lld", i, (long long)seen[i],
		      (long long)(i ? seen[i - 1] : -1));
	}
	for (int i = 0; i < 10; i++) {
		int64_t unlocked = 0, locked = rank + 1, got, val;

		do {	/* take the lock word (index 1) */
			MPI_OK(MPI_Compare_and_swap(&locked, &unlocked, &got, MPI_INT64_T, 0, 1,
						    win));
			MPI_OK(MPI_Win_flush(0, win));
		} while (got != 0 && !case_failed);
		MPI_OK(MPI_Get(&val, 1, MPI_INT64_T, 0, 2, 1, MPI_INT64_T, win));
		MPI_OK(MPI_Win_flush(0, win));
		val++;
		MPI_OK(MPI_Put(&val, 1, MPI_INT64_T, 0, 2, 1, MPI_INT64_T, win));
		MPI_OK(MPI_Win_flush(0, win));
		MPI_OK(MPI_Compare_and_swap(&unlocked, &locked, &got, MPI_INT64_T, 0, 1, win));
		MPI_OK(MPI_Win_flush(0, win));
		CHECK(got == locked, "lock word was %lld while we held it", (long long)got);
	}
	MPI_OK(MPI_Win_unlock_all(win));
	/* every fetched value is unique across ranks: their sum is 0+1+..+n-1 */
	for (int i = 0; i < ITERS; i++)
		total += seen[i];
	MPI_OK(MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
	prev = (int64_t)ITERS * nranks;
	CHECK(total == prev * (prev - 1) / 2, "fetched values sum to %lld, want %lld",
	      (long long)total, (long long)(prev * (prev - 1) / 2));
	if (rank == 0) {
		CHECK(words[0] == (int64_t)ITERS * nranks, "counter %lld, want %lld (lost update)",
		      (long long)words[0], (long long)ITERS * nranks);
		CHECK(words[1] == 0, "lock word left at %lld", (long long)words[1]);
		CHECK(words[2] == 10LL * nranks, "counter under the CAS lock %lld, want %lld",
		      (long long)words[2], 10LL * nranks);
	}
	MPI_OK(MPI_Win_free(&win));
	free(words);
	free(seen);
}

/* tx_packets + rx_delivered of this node's NI, or -1. */
static long long ni_packets(void)
{
	FILE *f = fopen("/sys/class/exanet/exanet0/counters", "r");
	char name[64];
	long long v, sum = 0;
	int found = 0;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", name, &v) == 2)
		if (!strcmp(name, "tx_packets") || !strcmp(name, "rx_delivered")) {
			sum += v;
			found++;
		}
	fclose(f);
	return found == 2 ? sum : -1;
}

static long long ni_start;

static void case_ni_counters_moved(void)
{
	long long now = ni_packets();

	CHECK(ni_start >= 0 && now >= 0, "no NI counters (/sys/class/exanet/exanet0/counters)");
	/* the earlier cases moved megabytes; even one case alone moves far
	 * more than the 2 packets asked here */
	CHECK(now - ni_start >= 2 * nranks, "NI packets moved %lld (from %lld to %lld)",
	      now - ni_start, ni_start, now);
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "p2p_sizes", case_p2p_sizes },
	{ "any_source_any_tag", case_any_source_any_tag },
	{ "probe_mprobe", case_probe_mprobe },
	{ "nonblocking_waitall", case_nonblocking_waitall },
	{ "collectives", case_collectives },
	{ "onesided_put_get", case_onesided_put_get },
	{ "onesided_pscw", case_onesided_pscw },
	{ "onesided_lock_epochs", case_onesided_lock_epochs },
	{ "onesided_accumulate", case_onesided_accumulate },
	{ "onesided_atomics", case_onesided_atomics },
	{ "ni_counters_moved", case_ni_counters_moved },
};

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	ni_start = ni_packets();
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (rank == 0)
		printf("# %d ranks\n", nranks);
	for (unsigned int c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		int wanted = argc < 2, any = 0;

		for (int a = 1; a < argc; a++)
			wanted |= !strcmp(argv[a], cases[c].name);
		if (!wanted)
			continue;
		case_failed = 0;
		MPI_Barrier(MPI_COMM_WORLD);
		cases[c].fn();
		MPI_Allreduce(&case_failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (rank == 0) {
			printf("%s - %s\n", any ? "not ok" : "ok", cases[c].name);
			fflush(stdout);
		}
		if (any)
			failed++;
		else
			passed++;
	}
	if (rank == 0)
		printf("checks: %d passed, %d failed\n", passed, failed);
	MPI_Finalize();
	return failed ? 1 : 0;
}
