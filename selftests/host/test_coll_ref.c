// SPDX-License-Identifier: GPL-2.0
/*
 * The allreduce reference of the tests (selftests/lib/coll_ref.h) against
 * hand-derived cases of the hardware's combining order (recursive doubling
 * with fold-in / fold-out, uapi/exanet_coll.h), and against an independent
 * recursive form of the same tree; the test vectors it generates.
 */
#include "../lib/kselftest_exa.h"
#include "../lib/coll_ref.h"

static uint32_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static uint64_t dbits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

/* 2^e as a float / double, without libm. */
static float f2(int e)
{
	uint32_t u = (uint32_t)(127 + e) << 23;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static double d2(int e)
{
	uint64_t u = (uint64_t)(1023 + e) << 52;
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* One element per member: the result of coll_ref over v[0..size-1]. */
static float ref_f(unsigned int op, const float *v, uint32_t size)
{
	const void *in[16];
	float out = -1;
	uint32_t i;

	for (i = 0; i < size; i++)
		in[i] = &v[i];
	if (coll_ref(EXANET_COLL_FLOAT, op, size, in, 1, &out))
		return -2;
	return out;
}

static double ref_d(unsigned int op, const double *v, uint32_t size)
{
	const void *in[16];
	double out = -1;
	uint32_t i;

	for (i = 0; i < size; i++)
		in[i] = &v[i];
	if (coll_ref(EXANET_COLL_DOUBLE, op, size, in, 1, &out))
		return -2;
	return out;
}

static int32_t ref_i32(unsigned int op, const int32_t *v, uint32_t size)
{
	const void *in[16];
	int32_t out = -12345;
	uint32_t i;

	for (i = 0; i < size; i++)
		in[i] = &v[i];
	if (coll_ref(EXANET_COLL_INT32, op, size, in, 1, &out))
		return -54321;
	return out;
}

TEST(largest_power_of_two)
{
	static const uint32_t n[] = { 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 1000, 1023, 1024 };
	static const uint32_t p[] = { 1, 2, 2, 4, 4, 4, 8, 8, 8, 16, 16, 512, 512, 1024 };
	unsigned int i;

	for (i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		EXPECT_EQ(p[i], coll_ref_p2(n[i]));
}

/*
 * Float sums whose rounding tells the orders apart (u = 2^-24: 1 + u is a
 * tie and rounds to 1, 1 + 2u is exact).
 */
TEST(float_sum_follows_the_tree)
{
	/* 2 members: v0 + v1 */
	float two[] = { 1.5f, 0.25f };
	/* 3, one block: the direct exchange, member order: (u + 1) + u = 1;
	 * longer (recursive doubling, below): (v0 + v2) + v1 = (u + u) + 1 = 1 + 2u */
	float three[] = { f2(-24), 1.0f, f2(-24) };
	/* 4: (v0 + v1) + (v2 + v3) = (2^-30 + 1) + (-1 + 2^-30) = 1 + -1 = 0;
	 * in member order: ((2^-30 + 1) - 1) + 2^-30 = 2^-30 */
	float four[] = { f2(-30), 1.0f, -1.0f, f2(-30) };
	/* 5: ((v0 + v4) + v1) + (v2 + v3) = ((u + u) + 1) + (0 + 0) = 1 + 2u */
	float five[] = { f2(-24), 1.0f, 0.0f, 0.0f, f2(-24) };
	/* 6: ((v0 + v4) + (v1 + v5)) + (v2 + v3):
	 * v4 = -v0 and v5 = -v1 cancel first, v2 + v3 = 2u stays */
	float six[] = { 1.0f, 4.0f, f2(-24), f2(-24), -1.0f, -4.0f };
	/* 8: ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)) */
	float eight[] = { 1.0f, f2(-24), f2(-24), 0.0f, f2(-24), f2(-24), 0.0f, 0.0f };

	EXPECT_EQ(fbits(1.75f), fbits(ref_f(EXANET_COLL_SUM, two, 2)));
	EXPECT_EQ(fbits(1.0f), fbits(ref_f(EXANET_COLL_SUM, three, 3)));
	EXPECT_EQ(fbits(0.0f), fbits(ref_f(EXANET_COLL_SUM, four, 4)));
	EXPECT_EQ(fbits(1.0f + f2(-23)), fbits(ref_f(EXANET_COLL_SUM, five, 5)));
	EXPECT_EQ(fbits(f2(-23)), fbits(ref_f(EXANET_COLL_SUM, six, 6)));
	/* (1 + u -> 1) + (u + 0) -> 1; (u + u) + 0 = 2u; 1 + 2u exact */
	EXPECT_EQ(fbits(1.0f + f2(-23)), fbits(ref_f(EXANET_COLL_SUM, eight, 8)));
	/* a single member: its own vector */
	EXPECT_EQ(fbits(f2(-24)), fbits(ref_f(EXANET_COLL_SUM, three, 1)));
}

TEST(double_sum_follows_the_tree)
{
	/* u = 2^-53 */
	double three[] = { d2(-53), 1.0, d2(-53) };
	double four[] = { d2(-60), 1.0, -1.0, d2(-60) };
	double seven[] = { d2(-53), 1.0, 3.0, -3.0, d2(-53), 0.5, -0.5 };

	EXPECT_EQ(dbits(1.0), dbits(ref_d(EXANET_COLL_SUM, three, 3)));
	EXPECT_EQ(dbits(0.0), dbits(ref_d(EXANET_COLL_SUM, four, 4)));
	/* 7: p2 4; ((v0 + v4) + (v1 + v5)) + ((v2 + v6) + v3)
	 *  = ((2u) + 1.5) + ((2.5) + -3) = (1.5 + 2u) - 0.5 = 1 + 2u */
	EXPECT_EQ(dbits(1.0 + d2(-52)), dbits(ref_d(EXANET_COLL_SUM, seven, 7)));
}

TEST(float_min_max)
{
	float v[] = { 3.5f, -2.0f, 7.25f, -2.0f, 1e-30f };

	EXPECT_EQ(fbits(-2.0f), fbits(ref_f(EXANET_COLL_MIN, v, 5)));
	EXPECT_EQ(fbits(7.25f), fbits(ref_f(EXANET_COLL_MAX, v, 5)));
	EXPECT_EQ(fbits(3.5f), fbits(ref_f(EXANET_COLL_MAX, v, 2)));
	EXPECT_EQ(fbits(1e-30f), fbits(ref_f(EXANET_COLL_MIN, v + 4, 1)));
}

TEST(integers)
{
	int32_t a[] = { -5, 17, -1000000, 3 };
	int32_t w[] = { INT32_MAX, 1 };
	int32_t b[] = { 0x0ff0, 0x0f0f, 0x7f00 };
	const void *in[3];
	uint64_t u[3] = { 0xffffffffffffffffull, 1, 0x8000000000000000ull }, uo;
	int64_t s[3] = { -1, 1, INT64_MIN }, so;
	uint32_t u32[2] = { 0xfffffff0u, 0x20 }, u32o;

	EXPECT_EQ(-999985, ref_i32(EXANET_COLL_SUM, a, 4));
	EXPECT_EQ(-1000000, ref_i32(EXANET_COLL_MIN, a, 4));
	EXPECT_EQ(17, ref_i32(EXANET_COLL_MAX, a, 4));
	EXPECT_EQ(-5 + 17 - 1000000, ref_i32(EXANET_COLL_SUM, a, 3));
	/* modulo 2^32 */
	EXPECT_EQ(INT32_MIN, ref_i32(EXANET_COLL_SUM, w, 2));
	EXPECT_EQ(0x0ff0 & 0x0f0f & 0x7f00, ref_i32(EXANET_COLL_BAND, b, 3));
	EXPECT_EQ(0x0ff0 | 0x0f0f | 0x7f00, ref_i32(EXANET_COLL_BOR, b, 3));
	EXPECT_EQ(0x0ff0 ^ 0x0f0f ^ 0x7f00, ref_i32(EXANET_COLL_BXOR, b, 3));

	/* unsigned compares unsigned, signed signed */
	in[0] = &u[0], in[1] = &u[1], in[2] = &u[2];
	ASSERT_EQ(0, coll_ref(EXANET_COLL_UINT64, EXANET_COLL_MIN, 3, in, 1, &uo));
	EXPECT_EQ(1, uo);
	ASSERT_EQ(0, coll_ref(EXANET_COLL_UINT64, EXANET_COLL_MAX, 3, in, 1, &uo));
	EXPECT_TRUE(uo == 0xffffffffffffffffull);
	ASSERT_EQ(0, coll_ref(EXANET_COLL_UINT64, EXANET_COLL_SUM, 3, in, 1, &uo));
	EXPECT_TRUE(uo == 0x8000000000000000ull);
	in[0] = &s[0], in[1] = &s[1], in[2] = &s[2];
	ASSERT_EQ(0, coll_ref(EXANET_COLL_INT64, EXANET_COLL_MIN, 3, in, 1, &so));
	EXPECT_TRUE(so == INT64_MIN);
	ASSERT_EQ(0, coll_ref(EXANET_COLL_INT64, EXANET_COLL_MAX, 3, in, 1, &so));
	EXPECT_EQ(1, so);
	in[0] = &u32[0], in[1] = &u32[1];
	ASSERT_EQ(0, coll_ref(EXANET_COLL_UINT32, EXANET_COLL_SUM, 2, in, 1, &u32o));
	EXPECT_EQ(0x10, u32o);
	ASSERT_EQ(0, coll_ref(EXANET_COLL_UINT32, EXANET_COLL_MIN, 2, in, 1, &u32o));
	EXPECT_EQ(0x20, u32o);
	ASSERT_EQ(0, coll_ref(EXANET_COLL_INT32, EXANET_COLL_MIN, 2, in, 1, &u32o));
	EXPECT_EQ(0xfffffff0u, u32o);		/* -16 < 32 */
}

TEST(vectors_and_in_place)
{
	int32_t m0[] = { 1, 2, 3, -4 }, m1[] = { 10, 20, 30, 40 }, m2[] = { 100, -200, 300, 400 };
	const void *in[3] = { m0, m1, m2 };
	int32_t out[5] = { 7, 7, 7, 7, 7 };

	ASSERT_EQ(0, coll_ref(EXANET_COLL_INT32, EXANET_COLL_SUM, 3, in, 4, out));
	EXPECT_EQ(111, out[0]);
	EXPECT_EQ(-178, out[1]);
	EXPECT_EQ(333, out[2]);
	EXPECT_EQ(436, out[3]);
	EXPECT_EQ(7, out[4]);			/* nothing past count */
	/* count 0 writes nothing */
	ASSERT_EQ(0, coll_ref(EXANET_COLL_INT32, EXANET_COLL_SUM, 3, in, 0, out + 4));
	EXPECT_EQ(7, out[4]);
	/* the result may overwrite member 0's vector */
	ASSERT_EQ(0, coll_ref(EXANET_COLL_INT32, EXANET_COLL_MAX, 3, in, 4, m0));
	EXPECT_EQ(100, m0[0]);
	EXPECT_EQ(20, m0[1]);
	EXPECT_EQ(300, m0[2]);
	EXPECT_EQ(400, m0[3]);
}

TEST(refuses_what_the_unit_refuses)
{
	float f[2] = { 1, 2 }, o;
	const void *in[2] = { &f[0], &f[1] };
	unsigned int op, dt, valid = 0;

	for (op = EXANET_COLL_BAND; op <= EXANET_COLL_BXOR; op++) {
		EXPECT_EQ(-EINVAL, coll_ref(EXANET_COLL_FLOAT, op, 2, in, 1, &o));
		EXPECT_EQ(-EINVAL, coll_ref(EXANET_COLL_DOUBLE, op, 2, in, 1, &o));
		EXPECT_FALSE(coll_ref_valid(EXANET_COLL_FLOAT, op));
		EXPECT_TRUE(coll_ref_valid(EXANET_COLL_INT32, op));
	}
	EXPECT_EQ(-EINVAL, coll_ref(EXANET_COLL_NUM_DTYPES, EXANET_COLL_SUM, 2, in, 1, &o));
	EXPECT_EQ(-EINVAL, coll_ref(EXANET_COLL_INT32, EXANET_COLL_NUM_OPS, 2, in, 1, &o));
	EXPECT_EQ(-EINVAL, coll_ref(EXANET_COLL_INT32, EXANET_COLL_SUM, 0, in, 1, &o));
	EXPECT_EQ(-EINVAL, coll_ref(EXANET_COLL_INT32, EXANET_COLL_SUM,
				    EXANET_COLL_MAX_MEMBERS + 1, in, 1, &o));
	/* 4 integer types x 6 ops + 2 floating point types x 3 ops */
	for (dt = 0; dt <= EXANET_COLL_NUM_DTYPES; dt++)
		for (op = 0; op <= EXANET_COLL_NUM_OPS; op++)
			valid += coll_ref_valid(dt, op);
	EXPECT_EQ(30, valid);
	EXPECT_EQ(4, coll_ref_dtype_size(EXANET_COLL_INT32));
	EXPECT_EQ(8, coll_ref_dtype_size(EXANET_COLL_INT64));
	EXPECT_EQ(8, coll_ref_dtype_size(EXANET_COLL_UINT64));
	EXPECT_EQ(4, coll_ref_dtype_size(EXANET_COLL_FLOAT));
	EXPECT_EQ(8, coll_ref_dtype_size(EXANET_COLL_DOUBLE));
	EXPECT_EQ(4, coll_ref_dtype_size(EXANET_COLL_UINT32));
	EXPECT_EQ(0, coll_ref_dtype_size(EXANET_COLL_NUM_DTYPES));
}

/* 3 members, more than one block: recursive doubling, (v0 + v2) + v1. */
TEST(three_members_longer_than_a_block_fold_in)
{
	enum { N = EXANET_COLL_BLOCK_SIZE / sizeof(float) + 1 };
	static float m[3][N], out[N];
	const void *in[3] = { m[0], m[1], m[2] };

	m[0][0] = f2(-24);
	m[1][0] = 1.0f;
	m[2][0] = f2(-24);
	ASSERT_EQ(0, coll_ref(EXANET_COLL_FLOAT, EXANET_COLL_SUM, 3, in, N, out));
	EXPECT_EQ(0x3f800001u, fbits(out[0]));
	/* one block: member order */
	ASSERT_EQ(0, coll_ref(EXANET_COLL_FLOAT, EXANET_COLL_SUM, 3, in, N - 1, out));
	EXPECT_EQ(fbits(1.0f), fbits(out[0]));
}

/* The same tree written the other way round: recursion over index ranges. */
static void tree(unsigned int dt, unsigned int op, uint32_t size, uint32_t p2,
		 const union coll_ref_val *v, uint32_t lo, uint32_t n, union coll_ref_val *r)
{
	union coll_ref_val b;

	if (n == 1) {
		*r = v[lo];
		if (lo + p2 < size)
			coll_ref_combine(dt, op, r, &v[lo + p2]);
		return;
	}
	tree(dt, op, size, p2, v, lo, n / 2, r);
	tree(dt, op, size, p2, v, lo + n / 2, n / 2, &b);
	coll_ref_combine(dt, op, r, &b);
}

#define NEL 300

TEST(matches_recursive_tree_every_size_dtype_op)
{
	static uint8_t bufs[20][NEL * 8], out[NEL * 8];
	const void *in[20];
	unsigned int dt, op, bad = 0;
	uint32_t size, i;
	size_t j;

	for (i = 0; i < 20; i++)
		in[i] = bufs[i];
	for (dt = 0; dt < EXANET_COLL_NUM_DTYPES; dt++)
		for (op = 0; op < EXANET_COLL_NUM_OPS; op++) {
			size_t es = coll_ref_dtype_size(dt);

			if (!coll_ref_valid(dt, op))
				continue;
			for (size = 1; size <= 20; size++) {
				uint32_t p2 = coll_ref_p2(size);

				for (i = 0; i < size; i++)
					coll_ref_fill(dt, op, i, 77 + size, bufs[i], NEL);
				ASSERT_EQ(0, coll_ref(dt, op, size, in, NEL, out));
				for (j = 0; j < NEL; j++) {
					union coll_ref_val v[20], r;

					for (i = 0; i < size; i++) {
						memset(&v[i], 0, sizeof(v[i]));
						memcpy(&v[i], bufs[i] + j * es, es);
					}
					if (size > 1 && size <= COLL_REF_DIRECT_MEMBERS &&
					    NEL * es <= EXANET_COLL_BLOCK_SIZE) {
						r = v[0];	/* direct exchange */
						for (i = 1; i < size; i++)
							coll_ref_combine(dt, op, &r, &v[i]);
					} else {
						tree(dt, op, size, p2, v, 0, p2, &r);
					}
					if (memcmp(&r, out + j * es, es) && bad++ < 5)
						TH_LOG("%s %s size %u element %zu differs",
						       coll_ref_dtype_name(dt), coll_ref_op_name(op),
						       size, j);
				}
			}
		}
	EXPECT_EQ(0, bad);
}

TEST(test_vectors_are_order_sensitive_and_well_formed)
{
	enum { N = 4096, M = 4 };
	static float fv[M][N], fr[N];
	static double dv[M][N], dr[N];
	static int32_t iv[M][N];
	const void *fin[M], *din[M];
	unsigned int fdiff = 0, ddiff = 0, neg = 0, ties = 0, spread_lo = 0, spread_hi = 0;
	size_t j;
	int m;

	for (m = 0; m < M; m++) {
		coll_ref_fill(EXANET_COLL_FLOAT, EXANET_COLL_SUM, m, 5, fv[m], N);
		coll_ref_fill(EXANET_COLL_DOUBLE, EXANET_COLL_SUM, m, 5, dv[m], N);
		coll_ref_fill(EXANET_COLL_INT32, EXANET_COLL_SUM, m, 5, iv[m], N);
		fin[m] = fv[m];
		din[m] = dv[m];
	}
	ASSERT_EQ(0, coll_ref(EXANET_COLL_FLOAT, EXANET_COLL_SUM, M, fin, N, fr));
	ASSERT_EQ(0, coll_ref(EXANET_COLL_DOUBLE, EXANET_COLL_SUM, M, din, N, dr));
	for (j = 0; j < N; j++) {
		volatile float fs = fv[0][j];
		volatile double ds = dv[0][j];
		uint32_t e;

		for (m = 1; m < M; m++) {
			fs = fs + fv[m][j];
			ds = ds + dv[m][j];
		}
		fdiff += fbits(fs) != fbits(fr[j]);
		ddiff += dbits(ds) != dbits(dr[j]);
		for (m = 0; m < M; m++) {
			e = fbits(fv[m][j]) >> 23 & 0xff;
			/* never 0, subnormal, infinite or NaN */
			EXPECT_TRUE(e != 0 && e != 0xff);
			spread_lo += e < 127 - 16;
			spread_hi += e > 127 + 16;
			EXPECT_TRUE((dbits(dv[m][j]) >> 52 & 0x7ff) != 0 &&
				    (dbits(dv[m][j]) >> 52 & 0x7ff) != 0x7ff);
			neg += iv[m][j] < 0;
		}
		if (j % 7 == 3) {
			ties++;
			for (m = 1; m < M; m++) {
				EXPECT_EQ(fbits(fv[0][j]), fbits(fv[m][j]));
				EXPECT_EQ(iv[0][j], iv[m][j]);
			}
		}
	}
	TH_LOG("4 members x %d: the tree and member order differ in %u float and %u double sums",
	       N, fdiff, ddiff);
	/* the order shows in the bits: a test that summed in another order fails */
	EXPECT_LT(N / 20, fdiff);
	EXPECT_LT(N / 20, ddiff);
	EXPECT_LT(N / 4, neg);
	EXPECT_LT(0, spread_lo);
	EXPECT_LT(0, spread_hi);
	EXPECT_LT(0, ties);
	/* different members, different vectors; the seed matters too */
	EXPECT_NE(0, memcmp(fv[0], fv[1], sizeof(fv[0])));
	{
		static float other[N];

		coll_ref_fill(EXANET_COLL_FLOAT, EXANET_COLL_SUM, 0, 6, other, N);
		EXPECT_NE(0, memcmp(fv[0], other, sizeof(other)));
	}
}

TEST_HARNESS_MAIN
