/* SPDX-License-Identifier: MIT */
/*
 * Reference of the NI's allreduce (uapi/exanet_coll.h) for the tests, in
 * the exact combining order of the hardware so that float and double
 * results compare bit for bit.  Pure C, header only, no device: used by
 * the in-VM test selftests/exanet/exanet_coll.c and checked itself by the
 * host test selftests/host/test_coll_ref.c.
 *
 * The order (recursive doubling), for a group of 'size' members and p2 the
 * largest power of two <= size:
 *   1. fold-in: member r >= p2 sends its vector to member r - p2, which
 *      continues with op(v[r - p2], v[r]);
 *   2. round k = 0 .. log2(p2) - 1: member m < p2 and its partner
 *      m ^ (1 << k) both continue with op(v[lower], v[higher]);
 *   3. fold-out: member r >= p2 gets the result of member r - p2.
 * Every member ends with the same bits:
 *   leaf(i)     = i + p2 < size ? op(v[i], v[i + p2]) : v[i]    (i < p2)
 *   tree(lo, n) = n == 1 ? leaf(lo)
 *                        : op(tree(lo, n / 2), tree(lo + n / 2, n / 2))
 *   result      = tree(0, p2)
 * e.g. 3 members: (v0 + v2) + v1; 4: (v0 + v1) + (v2 + v3);
 * 5: ((v0 + v4) + v1) + (v2 + v3).
 * Except the direct exchange: groups of up to COLL_REF_DIRECT_MEMBERS
 * (the device's coll-direct-members, default 3) reducing at most one block
 * (EXANET_COLL_BLOCK_SIZE bytes) combine in member order,
 * ((v0 + v1) + v2) ... (Documentation/exanet/collectives.md).
 *
 * op(a, b), a being the lower member's value:
 *   SUM   a + b (integers modulo 2^bits, the signed ones too; floating
 *         point in its own precision, round to nearest)
 *   MIN   b < a ? b : a      MAX   b > a ? b : a   (ties keep a)
 *   BAND, BOR, BXOR          integer types only
 *
 * coll_ref_input() makes the deterministic test vectors: member and index
 * give the value; integers include negative values, floating point values
 * are never 0 or NaN (so MIN/MAX are unambiguous) and spread over many
 * binades (so the order of a SUM shows in the low bits).
 */
#ifndef SELFTEST_COLL_REF_H
#define SELFTEST_COLL_REF_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <exanet_coll.h>

union coll_ref_val {
	int32_t i32;
	uint32_t u32;
	int64_t i64;
	uint64_t u64;
	float f;
	double d;
};

/* Bytes of one element, 0 for an unknown dtype. */
static inline size_t coll_ref_dtype_size(unsigned int dtype)
{
	return EXANET_COLL_DTYPE_SIZE(dtype);
}

static inline int coll_ref_is_float(unsigned int dtype)
{
	return dtype == EXANET_COLL_FLOAT || dtype == EXANET_COLL_DOUBLE;
}

/* 1 if the unit accepts (dtype, op): bitwise ops only on integer types. */
static inline int coll_ref_valid(unsigned int dtype, unsigned int op)
{
	return EXANET_COLL_TYPE_VALID(dtype, op);
}

static inline const char *coll_ref_dtype_name(unsigned int dtype)
{
	static const char *const n[] = {
		[EXANET_COLL_INT32] = "int32", [EXANET_COLL_INT64] = "int64",
		[EXANET_COLL_UINT64] = "uint64", [EXANET_COLL_FLOAT] = "float",
		[EXANET_COLL_DOUBLE] = "double", [EXANET_COLL_UINT32] = "uint32",
	};

	return dtype < EXANET_COLL_NUM_DTYPES ? n[dtype] : "?";
}

static inline const char *coll_ref_op_name(unsigned int op)
{
	static const char *const n[] = {
		[EXANET_COLL_SUM] = "sum", [EXANET_COLL_MIN] = "min", [EXANET_COLL_MAX] = "max",
		[EXANET_COLL_BAND] = "band", [EXANET_COLL_BOR] = "bor", [EXANET_COLL_BXOR] = "bxor",
	};

	return op < EXANET_COLL_NUM_OPS ? n[op] : "?";
}

#ifndef COLL_REF_DIRECT_MEMBERS
#define COLL_REF_DIRECT_MEMBERS 3	/* the device property's default */
#endif

/* Largest power of two <= size (size >= 1). */
static inline uint32_t coll_ref_p2(uint32_t size)
{
	uint32_t p = 1;

	while (p <= size / 2)
		p <<= 1;
	return p;
}

#define COLL_REF_MINMAX(a, b, field, op)				\
	do {								\
		if ((op) == EXANET_COLL_MIN ? (b)->field < (a)->field	\
					    : (b)->field > (a)->field)	\
			(a)->field = (b)->field;			\
	} while (0)

#define COLL_REF_BITS(a, b, field, op)					\
	do {								\
		if ((op) == EXANET_COLL_BAND)				\
			(a)->field &= (b)->field;			\
		else if ((op) == EXANET_COLL_BOR)			\
			(a)->field |= (b)->field;			\
		else							\
			(a)->field ^= (b)->field;			\
	} while (0)

/* a = op(a, b); a is the lower member's value.  (dtype, op) valid. */
static inline void coll_ref_combine(unsigned int dtype, unsigned int op,
				    union coll_ref_val *a, const union coll_ref_val *b)
{
	switch (dtype) {
	case EXANET_COLL_INT32:
		if (op == EXANET_COLL_SUM)
			a->u32 += b->u32;	/* modulo 2^32, no signed overflow */
		else if (op <= EXANET_COLL_MAX)
			COLL_REF_MINMAX(a, b, i32, op);
		else
			COLL_REF_BITS(a, b, u32, op);
		break;
	case EXANET_COLL_UINT32:
		if (op == EXANET_COLL_SUM)
			a->u32 += b->u32;
		else if (op <= EXANET_COLL_MAX)
			COLL_REF_MINMAX(a, b, u32, op);
		else
			COLL_REF_BITS(a, b, u32, op);
		break;
	case EXANET_COLL_INT64:
		if (op == EXANET_COLL_SUM)
			a->u64 += b->u64;
		else if (op <= EXANET_COLL_MAX)
			COLL_REF_MINMAX(a, b, i64, op);
		else
			COLL_REF_BITS(a, b, u64, op);
		break;
	case EXANET_COLL_UINT64:
		if (op == EXANET_COLL_SUM)
			a->u64 += b->u64;
		else if (op <= EXANET_COLL_MAX)
			COLL_REF_MINMAX(a, b, u64, op);
		else
			COLL_REF_BITS(a, b, u64, op);
		break;
	case EXANET_COLL_FLOAT:
		if (op == EXANET_COLL_SUM) {
			volatile float s = a->f + b->f;	/* rounded to float here */

			a->f = s;
		} else {
			COLL_REF_MINMAX(a, b, f, op);
		}
		break;
	case EXANET_COLL_DOUBLE:
		if (op == EXANET_COLL_SUM) {
			volatile double s = a->d + b->d;

			a->d = s;
		} else {
			COLL_REF_MINMAX(a, b, d, op);
		}
		break;
	}
}

/*
 * out[j] = the unit's result of element j over in[0..size-1] (member r's
 * vector is in[r], count elements of dtype each).  out may be one of the
 * inputs.  0, or -EINVAL for a bad dtype/op/size.
 */
static inline int coll_ref(unsigned int dtype, unsigned int op, uint32_t size,
			   const void *const *in, size_t count, void *out)
{
	union coll_ref_val w[EXANET_COLL_MAX_MEMBERS];
	size_t es = coll_ref_dtype_size(dtype), j;
	uint32_t p2, i, d, m;

	if (!coll_ref_valid(dtype, op) || size < 1 || size > EXANET_COLL_MAX_MEMBERS)
		return -EINVAL;
	p2 = coll_ref_p2(size);
	if (size > 1 && size <= COLL_REF_DIRECT_MEMBERS &&
	    count * es <= EXANET_COLL_BLOCK_SIZE) {
		for (j = 0; j < count; j++) {		/* direct exchange */
			memcpy(&w[0], (const char *)in[0] + j * es, es);
			for (i = 1; i < size; i++) {
				memcpy(&w[1], (const char *)in[i] + j * es, es);
				coll_ref_combine(dtype, op, &w[0], &w[1]);
			}
			memcpy((char *)out + j * es, &w[0], es);
		}
		return 0;
	}
	for (j = 0; j < count; j++) {
		for (i = 0; i < p2; i++)
			memcpy(&w[i], (const char *)in[i] + j * es, es);
		for (i = p2; i < size; i++) {		/* fold-in */
			union coll_ref_val b;

			memcpy(&b, (const char *)in[i] + j * es, es);
			coll_ref_combine(dtype, op, &w[i - p2], &b);
		}
		for (d = 1; d < p2; d <<= 1)		/* round log2(d) */
			for (m = 0; m < p2; m += 2 * d)
				coll_ref_combine(dtype, op, &w[m], &w[m + d]);
		memcpy((char *)out + j * es, &w[0], es);
	}
	return 0;
}

static inline uint64_t coll_ref_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * Element 'index' of member 'member''s test vector for (dtype, op, seed).
 * Integer SUMs of the signed types stay far from overflow (|v| < 2^24,
 * 2^52); every other integer case uses all bits.  Every 7th index has the
 * same value on all members (ties for MIN/MAX).  Floating point: random
 * sign and mantissa, binary exponent in [-24, 24] (float) / [-40, 40]
 * (double), never 0, infinite or NaN.
 */
static inline void coll_ref_input(unsigned int dtype, unsigned int op, uint32_t member,
				  uint32_t seed, uint64_t index, union coll_ref_val *v)
{
	uint64_t h;

	if (index % 7 == 3)
		member = 0xffffffffu;			/* same on every member */
	h = coll_ref_mix64(coll_ref_mix64(((uint64_t)seed << 32 | member) ^ (uint64_t)op << 24 ^
					  (uint64_t)dtype << 16) ^ index);
	memset(v, 0, sizeof(*v));
	switch (dtype) {
	case EXANET_COLL_INT32:
		if (op == EXANET_COLL_SUM)
			v->i32 = (int32_t)(h % (2u * (1u << 24) + 1)) - (1 << 24);
		else
			v->u32 = (uint32_t)h;
		break;
	case EXANET_COLL_INT64:
		if (op == EXANET_COLL_SUM)
			v->i64 = (int64_t)(h % (2ull * (1ull << 52) + 1)) - (int64_t)(1ull << 52);
		else
			v->u64 = h;
		break;
	case EXANET_COLL_UINT32:
		v->u32 = (uint32_t)(h >> 7);
		break;
	case EXANET_COLL_UINT64:
		v->u64 = h;
		break;
	case EXANET_COLL_FLOAT: {
		uint32_t e = (uint32_t)((h >> 40) % 49) + 127 - 24;

		v->u32 = (uint32_t)(h >> 63) << 31 | e << 23 | (uint32_t)(h & 0x7fffff);
		break;
	}
	case EXANET_COLL_DOUBLE: {
		uint64_t e = (h >> 53) % 81 + 1023 - 40;

		v->u64 = (coll_ref_mix64(h) & (1ull << 63)) | e << 52 | (h & ((1ull << 52) - 1));
		break;
	}
	}
}

/* buf[0..count-1] = member's test vector. */
static inline void coll_ref_fill(unsigned int dtype, unsigned int op, uint32_t member,
				 uint32_t seed, void *buf, size_t count)
{
	size_t es = coll_ref_dtype_size(dtype), j;

	for (j = 0; j < count; j++) {
		union coll_ref_val v;

		coll_ref_input(dtype, op, member, seed, j, &v);
		memcpy((char *)buf + j * es, &v, es);
	}
}

#endif
