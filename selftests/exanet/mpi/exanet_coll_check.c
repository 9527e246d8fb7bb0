// SPDX-License-Identifier: MIT
/*
 * MPI_Allreduce / MPI_Barrier checks for the coll/exanet component
 * (lib/coll-exanet, Documentation/exanet/coll-exanet.md).  Started by
 * mpirun: in the emulated cluster by the in-VM test exanet_coll, on the
 * host by selftests/host/test_coll_exanet.sh (with and without a fake NI).
 *
 *   mpirun ... exanet_coll_check [CASE-PREFIX...]    (default: every case)
 *
 * Every rank runs every case; a case passes when it passed on every rank.
 * Rank 0 prints "ok N - NAME" or "not ok N - NAME" per case, then "1..N"
 * and "checks: P passed, F failed"; the exit status is 1 if anything
 * failed.  Failing ranks print "# rank R: ..." lines.
 *
 * Cases:
 *   allreduce TYPE OP  every datatype x op the component takes, 1 .. 16384
 *                      elements, inputs made from (rank, index, seed):
 *                      integers against the value computed locally; float
 *                      and double against a reference allreduce with a
 *                      user-defined op doing the same arithmetic (MIN/MAX
 *                      exactly, SUM within rounding), and the result bytes
 *                      must be the same on every rank (hashes allgathered);
 *                      nothing written past count
 *   in_place           MPI_IN_PLACE, same checks
 *   large_chunked      2.4 MB vectors (more than one NI operation)
 *   split_halves       MPI_Comm_split into halves (by block and by parity),
 *                      both halves reducing at the same time
 *   dup_free           MPI_Comm_dup / MPI_Comm_free, five times
 *   fallback_ops       user-defined ops (one on a derived datatype), MPI_PROD,
 *                      MPI_SHORT, interleaved with offloadable calls
 *
 * Open MPI 4.1.4's own MIN/MAX of MPI_UNSIGNED_LONG compare as signed long
 * (its op/base kernels); the NI (and so the component) compares unsigned.
 * Where Open MPI has that bug (probed with MPI_Reduce_local) a result of
 * MPI_UNSIGNED_LONG MIN/MAX may be either, with a "# note" line; it must
 * still be the same on every rank.
 *   barrier            nobody leaves before the last one entered
 *
 * Whether the NI did the work is not visible here: the component counts
 * its operations and prints "coll_exanet: N offloaded ops" at
 * MPI_Finalize with COLL_EXANET_STATS=1; the harness greps that.
 */
#include <mpi.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, nranks;
static int case_failed;
/* Open MPI 4.1.4 reduces MIN/MAX of MPI_UNSIGNED_LONG as signed long */
static int ulong_minmax_bug;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (case_failed++ > 20)		/* enough said */
		return;
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

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "# rank %d: out of memory (%zu B)\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint64_t rnd(int r, size_t i, uint32_t seed)
{
	return mix((uint64_t)(uint32_t)r << 40 ^ (uint64_t)i * 0x9e3779b97f4a7c15ull ^
		   (uint64_t)seed << 20);
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* ---- datatypes and ops ---- */

enum kind { SINT, UINT, FLT };

struct dtype {
	MPI_Datatype dt;
	const char *name;
	enum kind kind;
	int size;
};

static struct dtype types[12];
static unsigned int ntypes;

static void add_type(MPI_Datatype dt, const char *name, enum kind kind)
{
	int size;

	MPI_Type_size(dt, &size);
	types[ntypes++] = (struct dtype){ dt, name, kind, size };
}

static void init_types(void)
{
	add_type(MPI_INT, "MPI_INT", SINT);
	add_type(MPI_INT32_T, "MPI_INT32_T", SINT);
	add_type(MPI_UNSIGNED, "MPI_UNSIGNED", UINT);
	add_type(MPI_UINT32_T, "MPI_UINT32_T", UINT);
	add_type(MPI_LONG, "MPI_LONG", SINT);
	add_type(MPI_LONG_LONG, "MPI_LONG_LONG", SINT);
	add_type(MPI_INT64_T, "MPI_INT64_T", SINT);
	add_type(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", UINT);
	add_type(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", UINT);
	add_type(MPI_UINT64_T, "MPI_UINT64_T", UINT);
	add_type(MPI_FLOAT, "MPI_FLOAT", FLT);
	add_type(MPI_DOUBLE, "MPI_DOUBLE", FLT);
}

enum opk { O_SUM, O_MIN, O_MAX, O_BAND, O_BOR, O_BXOR, O_NUM };
static const char *const op_names[O_NUM] = {
	"MPI_SUM", "MPI_MIN", "MPI_MAX", "MPI_BAND", "MPI_BOR", "MPI_BXOR",
};

static MPI_Op mpi_op(enum opk o)
{
	static MPI_Op ops[O_NUM];

	ops[O_SUM] = MPI_SUM;
	ops[O_MIN] = MPI_MIN;
	ops[O_MAX] = MPI_MAX;
	ops[O_BAND] = MPI_BAND;
	ops[O_BOR] = MPI_BOR;
	ops[O_BXOR] = MPI_BXOR;
	return ops[o];
}

/* ---- inputs and expected values ---- */

/* Element i of rank r's input, written into dst (t->size bytes). */
static void gen(const struct dtype *t, enum opk o, int r, size_t i, uint32_t seed, void *dst)
{
	uint64_t h = rnd(r, i, seed);

	if (t->kind == FLT) {
		double v = (double)((int64_t)(h % 2000001) - 1000000) / 997.0 +
			   (double)(h >> 44) * 1e-9;

		if (t->size == 4) {
			float f = (float)v;

			memcpy(dst, &f, 4);
		} else {
			memcpy(dst, &v, 8);
		}
		return;
	}
	if (o == O_SUM)		/* small: no signed overflow with any rank count */
		h = (uint64_t)((int64_t)(h % 2001) - 1000);
	if (t->size == 4) {
		uint32_t w = (uint32_t)h;

		memcpy(dst, &w, 4);
	} else {
		memcpy(dst, &h, 8);
	}
}

static int64_t as_signed(const struct dtype *t, const void *p)
{
	if (t->size == 4) {
		int32_t v;

		memcpy(&v, p, 4);
		return v;
	}
	int64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint64_t as_unsigned(const struct dtype *t, const void *p)
{
	if (t->size == 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		return v;
	}
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static double as_double(const struct dtype *t, const void *p)
{
	if (t->size == 4) {
		float f;

		memcpy(&f, p, 4);
		return f;
	}
	double d;

	memcpy(&d, p, 8);
	return d;
}

/* Integers: the exact result of element i, computed from every rank's
 * input (two's complement wrap-around as the hardware does). */
static void expect_int(const struct dtype *t, enum opk o, size_t i, uint32_t seed, void *out)
{
	unsigned char v[8];
	uint64_t acc = 0;

	for (int r = 0; r < nranks; r++) {
		uint64_t u;
		int64_t s;

		gen(t, o, r, i, seed, v);
		u = as_unsigned(t, v);
		s = as_signed(t, v);
		if (r == 0) {
			acc = t->kind == SINT ? (uint64_t)s : u;
			continue;
		}
		switch (o) {
		case O_SUM: acc += t->kind == SINT ? (uint64_t)s : u; break;
		case O_MIN:
			if (t->kind == SINT ? s < (int64_t)acc : u < acc)
				acc = t->kind == SINT ? (uint64_t)s : u;
			break;
		case O_MAX:
			if (t->kind == SINT ? s > (int64_t)acc : u > acc)
				acc = t->kind == SINT ? (uint64_t)s : u;
			break;
		case O_BAND: acc &= u; break;
		case O_BOR: acc |= u; break;
		case O_BXOR: acc ^= u; break;
		default: break;
		}
	}
	if (t->size == 4) {
		uint32_t w = (uint32_t)acc;

		memcpy(out, &w, 4);
	} else {
		memcpy(out, &acc, 8);
	}
}

/* The reference for float/double: a user-defined op (never offloaded)
 * doing the same arithmetic. */
static void ref_fn(void *in, void *inout, int *len, MPI_Datatype *dt, int o)
{
	if (*dt == MPI_FLOAT) {
		float *a = in, *b = inout;

		for (int i = 0; i < *len; i++)
			b[i] = o == O_SUM ? a[i] + b[i] : o == O_MIN ? (a[i] < b[i] ? a[i] : b[i]) :
			       (a[i] > b[i] ? a[i] : b[i]);
	} else {
		double *a = in, *b = inout;

		for (int i = 0; i < *len; i++)
			b[i] = o == O_SUM ? a[i] + b[i] : o == O_MIN ? (a[i] < b[i] ? a[i] : b[i]) :
			       (a[i] > b[i] ? a[i] : b[i]);
	}
}
static void ref_sum(void *in, void *inout, int *len, MPI_Datatype *dt) { ref_fn(in, inout, len, dt, O_SUM); }
static void ref_min(void *in, void *inout, int *len, MPI_Datatype *dt) { ref_fn(in, inout, len, dt, O_MIN); }
static void ref_max(void *in, void *inout, int *len, MPI_Datatype *dt) { ref_fn(in, inout, len, dt, O_MAX); }
static MPI_Op ref_ops[3];

/* Every rank has the same bytes in buf. */
static int same_everywhere(MPI_Comm comm, const void *buf, size_t bytes)
{
	int n;
	uint64_t h = hash_bytes(buf, bytes), *all;
	int same = 1;

	MPI_Comm_size(comm, &n);
	all = xmalloc(sizeof(*all) * (size_t)n);
	MPI_OK(MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm));
	for (int r = 0; r < n; r++)
		same &= all[r] == h;
	free(all);
	return same;
}

static const size_t sizes[] = { 1, 2, 7, 64, 1000, 16384 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* One allreduce of n elements on MPI_COMM_WORLD, checked. */
static void check_one(const struct dtype *t, enum opk o, size_t n, uint32_t seed, int in_place)
{
	size_t es = (size_t)t->size, bytes = n * es;
	unsigned char *in = xmalloc(bytes), *out = xmalloc(bytes + es), *ref = NULL;
	unsigned char guard[8], e[8];
	const char *mode = in_place ? " in place" : "";

	for (size_t i = 0; i < n; i++)
		gen(t, o, rank, i, seed, in + i * es);
	memset(guard, 0xa5, sizeof(guard));
	memcpy(out + bytes, guard, es);
	if (in_place) {
		memcpy(out, in, bytes);
		MPI_OK(MPI_Allreduce(MPI_IN_PLACE, out, (int)n, t->dt, mpi_op(o), MPI_COMM_WORLD));
	} else {
		memset(out, 0x5a, bytes);
		MPI_OK(MPI_Allreduce(in, out, (int)n, t->dt, mpi_op(o), MPI_COMM_WORLD));
	}
	CHECK(!memcmp(out + bytes, guard, es), "%s %s n=%zu%s: written past the end", t->name,
	      op_names[o], n, mode);
	if (t->kind != FLT) {
		int lenient = ulong_minmax_bug && t->dt == MPI_UNSIGNED_LONG &&
			      (o == O_MIN || o == O_MAX);
		int signed_seen = 0;

		for (size_t i = 0; i < n; i++) {
			expect_int(t, o, i, seed, e);
			if (lenient && memcmp(e, out + i * es, es)) {
				struct dtype st = *t;

				st.kind = SINT;		/* what Open MPI's kernel does */
				expect_int(&st, o, i, seed, e);
				signed_seen = 1;
			}
			if (memcmp(e, out + i * es, es)) {
				fail("%s %s n=%zu%s: [%zu] = %llu, expected %llu", t->name, op_names[o],
				     n, mode, i, (unsigned long long)as_unsigned(t, out + i * es),
				     (unsigned long long)as_unsigned(t, e));
				break;
			}
		}
		if (signed_seen && rank == 0)
			printf("# note: %s %s n=%zu%s compared as signed (Open MPI's own kernel)\n",
			       t->name, op_names[o], n, mode);
	} else {
		ref = xmalloc(bytes);
		MPI_OK(MPI_Allreduce(in, ref, (int)n, t->dt, ref_ops[o], MPI_COMM_WORLD));
		for (size_t i = 0; i < n; i++) {
			double got = as_double(t, out + i * es), want = as_double(t, ref + i * es);
			double mag = 0, tol;

			if (o != O_SUM) {
				if (memcmp(out + i * es, ref + i * es, es)) {
					fail("%s %s n=%zu%s: [%zu] = %.9g, expected %.9g", t->name,
					     op_names[o], n, mode, i, got, want);
					break;
				}
				continue;
			}
			for (int r = 0; r < nranks; r++) {
				unsigned char v[8];

				gen(t, o, r, i, seed, v);
				mag += fabs(as_double(t, v));
			}
			tol = mag * (t->size == 4 ? 1e-5 : 1e-13) + 1e-30;
			if (!(fabs(got - want) <= tol)) {
				fail("%s %s n=%zu%s: [%zu] = %.17g, reference %.17g", t->name,
				     op_names[o], n, mode, i, got, want);
				break;
			}
		}
	}
	CHECK(same_everywhere(MPI_COMM_WORLD, out, bytes),
	      "%s %s n=%zu%s: the result differs between ranks", t->name, op_names[o], n, mode);
	free(in);
	free(out);
	free(ref);
}

/* ---- cases ---- */

static const struct dtype *cur_t;
static enum opk cur_o;

static void case_allreduce(void)
{
	for (unsigned int k = 0; k < NSIZES; k++)
		check_one(cur_t, cur_o, sizes[k], 1000u * (unsigned)cur_o + k + 17u * (unsigned)(cur_t - types), 0);
}

static void case_in_place(void)
{
	for (unsigned int ti = 0; ti < ntypes; ti++) {
		enum opk o = types[ti].kind == FLT ? O_SUM : (ti % 2 ? O_BXOR : O_SUM);

		for (unsigned int k = 0; k < NSIZES; k++)
			check_one(&types[ti], o, sizes[k], 5000 + ti * 10 + k, 1);
		check_one(&types[ti], O_MAX, 1000, 5500 + ti, 1);
	}
}

static void case_large_chunked(void)
{
	size_t n = 300000;	/* 2.4 MB of 8-byte elements, 1.2 MB of 4-byte ones */

	for (unsigned int ti = 0; ti < ntypes; ti++)
		if (types[ti].dt == MPI_INT64_T || types[ti].dt == MPI_DOUBLE ||
		    types[ti].dt == MPI_INT) {
			check_one(&types[ti], O_SUM, n, 7000 + ti, 0);
			check_one(&types[ti], O_SUM, n + 1, 7100 + ti, 1);
		}
}

/* Sum over the members of comm (world ranks in members[]) of a vector. */
static void reduce_on(MPI_Comm comm, const char *what, int seed)
{
	int n, me, wrank = rank;
	int *ranks;
	enum { N = 5000 };
	int64_t *in = xmalloc(sizeof(int64_t) * N), *out = xmalloc(sizeof(int64_t) * N);
	double din, dout;

	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &me);
	ranks = xmalloc(sizeof(int) * (size_t)n);
	MPI_OK(MPI_Allgather(&wrank, 1, MPI_INT, ranks, 1, MPI_INT, comm));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++)
			in[i] = (int64_t)(mix((uint64_t)wrank * 7919 + (uint64_t)i + (uint64_t)seed * 31 +
					      (uint64_t)round) % 100000);
		MPI_OK(MPI_Allreduce(in, out, N, MPI_INT64_T, MPI_SUM, comm));
		for (int i = 0; i < N; i++) {
			int64_t want = 0;

			for (int r = 0; r < n; r++)
				want += (int64_t)(mix((uint64_t)ranks[r] * 7919 + (uint64_t)i +
						      (uint64_t)seed * 31 + (uint64_t)round) % 100000);
			if (out[i] != want) {
				fail("%s round %d: [%d] = %lld, expected %lld", what, round, i,
				     (long long)out[i], (long long)want);
				break;
			}
		}
		din = wrank + 0.25 * round;
		MPI_OK(MPI_Allreduce(&din, &dout, 1, MPI_DOUBLE, MPI_MAX, comm));
		{
			int mx = 0;

			for (int r = 0; r < n; r++)
				mx = ranks[r] > mx ? ranks[r] : mx;
			CHECK(dout == mx + 0.25 * round, "%s: max %g", what, dout);
		}
		MPI_OK(MPI_Barrier(comm));
	}
	free(ranks);
	free(in);
	free(out);
}

static void case_split_halves(void)
{
	MPI_Comm half;

	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank < nranks / 2, rank, &half));
	reduce_on(half, "block halves", 1);
	MPI_OK(MPI_Comm_free(&half));
	/* by parity: with several ranks per node both halves have a leader
	 * on every node, at the same time */
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, nranks - rank, &half));
	reduce_on(half, "parity halves", 2);
	reduce_on(MPI_COMM_WORLD, "world between halves", 3);
	MPI_OK(MPI_Comm_free(&half));
}

static void case_dup_free(void)
{
	for (int k = 0; k < 5; k++) {
		MPI_Comm d;

		MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
		reduce_on(d, "dup", 10 + k);
		if (k == 2)	/* two alive at once */
			reduce_on(MPI_COMM_WORLD, "world beside a dup", 20);
		MPI_OK(MPI_Comm_free(&d));
	}
}

/* a user-defined op: element-wise sum modulo 1000003 (never offloaded) */
static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	int64_t *a = in, *b = inout;

	(void)dt;
	for (int i = 0; i < *len; i++)
		b[i] = (a[i] + b[i]) % 1000003;
}

/* element-wise max of ints, for a derived datatype of int pairs (the
 * predefined ops are for basic datatypes only) */
static void pair_max_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	int *a = in, *b = inout;

	(void)dt;
	for (int i = 0; i < 2 * *len; i++)
		b[i] = a[i] > b[i] ? a[i] : b[i];
}

static void case_fallback_ops(void)
{
	enum { N = 777 };
	MPI_Op uop, pmax;
	MPI_Datatype pair;
	int64_t in[N], out[N];
	int iin[2 * N], iout[2 * N];
	short sin_[N], sout[N];
	double pin[3], pout[3];

	MPI_OK(MPI_Op_create(user_fn, 1, &uop));
	MPI_OK(MPI_Op_create(pair_max_fn, 1, &pmax));
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++)
			in[i] = (int64_t)((mix((uint64_t)rank * 31 + (uint64_t)i) % 1000) + round);
		MPI_OK(MPI_Allreduce(in, out, N, MPI_INT64_T, uop, MPI_COMM_WORLD));
		for (int i = 0; i < N; i++) {
			int64_t want = 0;

			for (int r = 0; r < nranks; r++)
				want = (want + (int64_t)((mix((uint64_t)r * 31 + (uint64_t)i) % 1000) +
							 round)) % 1000003;
			if (out[i] != want) {
				fail("user op: [%d] = %lld, expected %lld", i, (long long)out[i],
				     (long long)want);
				break;
			}
		}
		/* an offloadable call between two that are not */
		reduce_on(MPI_COMM_WORLD, "between fallbacks", 40 + round);
		/* MPI_PROD */
		for (int i = 0; i < 3; i++)
			pin[i] = (rank % 3 == i) ? 2.0 : 1.0;
		MPI_OK(MPI_Allreduce(pin, pout, 3, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
		for (int i = 0; i < 3; i++) {
			int k = 0;

			for (int r = 0; r < nranks; r++)
				k += r % 3 == i;
			CHECK(pout[i] == ldexp(1.0, k), "MPI_PROD [%d] = %g", i, pout[i]);
		}
		/* a derived (contiguous) datatype of two ints */
		MPI_OK(MPI_Type_contiguous(2, MPI_INT, &pair));
		MPI_OK(MPI_Type_commit(&pair));
		for (int i = 0; i < 2 * N; i++)
			iin[i] = rank + i;
		MPI_OK(MPI_Allreduce(iin, iout, N, pair, pmax, MPI_COMM_WORLD));
		for (int i = 0; i < 2 * N; i++)
			if (iout[i] != nranks - 1 + i) {
				fail("derived datatype: [%d] = %d", i, iout[i]);
				break;
			}
		MPI_OK(MPI_Type_free(&pair));
		/* a type the NI does not have */
		for (int i = 0; i < N; i++)
			sin_[i] = (short)(rank + i % 100);
		MPI_OK(MPI_Allreduce(sin_, sout, N, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD));
		for (int i = 0; i < N; i++)
			if (sout[i] != (short)(nranks * (i % 100) + nranks * (nranks - 1) / 2)) {
				fail("MPI_SHORT: [%d] = %d", i, sout[i]);
				break;
			}
	}
	MPI_OK(MPI_Op_free(&uop));
	MPI_OK(MPI_Op_free(&pmax));
}

static void case_barrier(void)
{
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	for (int round = 0; round < 2; round++) {
		double t0 = MPI_Wtime(), waited;

		if (rank == nranks - 1) {
			struct timespec ts = { 0, 500000000 };

			nanosleep(&ts, NULL);
		}
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
		waited = MPI_Wtime() - t0;
		CHECK(rank == nranks - 1 || waited >= 0.25, "Barrier returned after %.3f s", waited);
	}
	for (int k = 0; k < 50; k++)
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

static void probe_ulong_bug(void)
{
	unsigned long a = 1ul << 63, b = 1;

	MPI_Reduce_local(&a, &b, 1, MPI_UNSIGNED_LONG, MPI_MAX);
	ulong_minmax_bug = b != 1ul << 63;
	if (ulong_minmax_bug && rank == 0)
		printf("# note: this Open MPI computes MIN/MAX of MPI_UNSIGNED_LONG as signed\n");
}

/* ---- main ---- */

static int passed, failed, ncase;

static int wanted(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return 1;
	for (int a = 1; a < argc; a++)
		if (!strncmp(name, argv[a], strlen(argv[a])))
			return 1;
	return 0;
}

static void run(const char *name, void (*fn)(void))
{
	int any = 0;

	case_failed = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	fn();
	/* (itself an allreduce the component takes: if that fails, so did
	 * the case) */
	if (MPI_Allreduce(&case_failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
		any = 1;
	ncase++;
	if (rank == 0) {
		printf("%s %d - %s\n", any ? "not ok" : "ok", ncase, name);
		fflush(stdout);
	}
	if (any)
		failed++;
	else
		passed++;
}

int main(int argc, char **argv)
{
	char name[128];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	init_types();
	probe_ulong_bug();
	MPI_Op_create(ref_sum, 1, &ref_ops[O_SUM]);
	MPI_Op_create(ref_min, 1, &ref_ops[O_MIN]);
	MPI_Op_create(ref_max, 1, &ref_ops[O_MAX]);
	if (rank == 0)
		printf("# %d ranks\n", nranks);
	for (unsigned int ti = 0; ti < ntypes; ti++)
		for (int o = 0; o < O_NUM; o++) {
			if (types[ti].kind == FLT && o >= O_BAND)
				continue;
			snprintf(name, sizeof(name), "allreduce %s %s", types[ti].name, op_names[o]);
			if (!wanted(argc, argv, name))
				continue;
			cur_t = &types[ti];
			cur_o = (enum opk)o;
			run(name, case_allreduce);
		}
	if (wanted(argc, argv, "in_place"))
		run("in_place", case_in_place);
	if (wanted(argc, argv, "large_chunked"))
		run("large_chunked", case_large_chunked);
	if (wanted(argc, argv, "split_halves"))
		run("split_halves", case_split_halves);
	if (wanted(argc, argv, "dup_free"))
		run("dup_free", case_dup_free);
	if (wanted(argc, argv, "fallback_ops"))
		run("fallback_ops", case_fallback_ops);
	if (wanted(argc, argv, "barrier"))
		run("barrier", case_barrier);
	if (rank == 0) {
		printf("1..%d\n", ncase);
		printf("checks: %d passed, %d failed\n", passed, failed);
	}
	for (int o = 0; o < 3; o++)
		MPI_Op_free(&ref_ops[o]);
	MPI_Finalize();
	return failed ? 1 : 0;
}
