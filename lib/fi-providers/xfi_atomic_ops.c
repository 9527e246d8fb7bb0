// SPDX-License-Identifier: MIT
/*
 * FI_ATOMIC arithmetic of the exanet provider: which op goes with which
 * datatype, and applying one to memory (the target's provider does it, see
 * xfi_atomic.c).  No device: host-testable.
 *
 * Each value is updated with a compare-and-swap loop of the CPU, so a
 * value is never torn and an update is never lost against another thread
 * of the process that uses atomic instructions on it.
 */
#include <string.h>

#include "xfi_atomic_ops.h"

_Static_assert(FI_MSWAP + 1 == XFI_AOP_LIMIT && FI_ATOMIC_READ == XFI_AOP_ATOMIC_READ &&
	       FI_CSWAP == XFI_AOP_CSWAP, "wire op codes are libfabric's");
_Static_assert(FI_DOUBLE + 1 == XFI_ADT_LIMIT && FI_INT8 == 0 && FI_FLOAT == 8,
	       "wire datatypes are libfabric's");

static int xfi_dt_is_int(enum fi_datatype dt)
{
	return dt <= FI_UINT64;
}

int xfi_atomic_valid(enum xfi_atomic_kind kind, enum fi_op op, enum fi_datatype dt)
{
	if ((unsigned int)dt >= XFI_ADT_LIMIT || (unsigned int)op >= XFI_AOP_LIMIT)
		return 0;
	switch (op) {
	case FI_MIN: case FI_MAX: case FI_SUM: case FI_PROD: case FI_ATOMIC_WRITE:
		return kind != XFI_KIND_COMPARE;
	case FI_LOR: case FI_LAND: case FI_BOR: case FI_BAND: case FI_LXOR: case FI_BXOR:
		/* logical and bitwise: integers only */
		return kind != XFI_KIND_COMPARE && xfi_dt_is_int(dt);
	case FI_ATOMIC_READ:
		return kind == XFI_KIND_FETCH;
	case FI_CSWAP: case FI_CSWAP_NE: case FI_CSWAP_LE: case FI_CSWAP_LT:
	case FI_CSWAP_GE: case FI_CSWAP_GT:
		return kind == XFI_KIND_COMPARE;
	case FI_MSWAP:
		return kind == XFI_KIND_COMPARE && xfi_dt_is_int(dt);
	default:
		return 0;
	}
}

/*
 * New value of one element of type T (U: the unsigned type of the same
 * width, for wrapping arithmetic) from old, operand a and compare value c:
 * 1 to store *res, 0 to leave the element alone (a compare that failed,
 * FI_ATOMIC_READ).  The caller checked op against the type.
 */
#define XFI_DEFINE_COMPUTE(name, T, U, INT_OPS)					\
static int name(enum fi_op op, void *res, const void *oldp, const void *ap,		\
		const void *cp)							\
{										\
	T old, a = 0, c = 0, r;							\
										\
	memcpy(&old, oldp, sizeof(T));						\
	if (ap)									\
		memcpy(&a, ap, sizeof(T));					\
	if (cp)									\
		memcpy(&c, cp, sizeof(T));					\
	switch (op) {								\
	case FI_MIN: r = a < old ? a : old; break;				\
	case FI_MAX: r = a > old ? a : old; break;				\
	case FI_SUM: r = INT_OPS ? (T)(U)((U)old + (U)a) : old + a; break;	\
	case FI_PROD: r = INT_OPS ? (T)(U)((U)old * (U)a) : old * a; break;	\
	case FI_LOR: r = (T)(old || a); break;					\
	case FI_LAND: r = (T)(old && a); break;				\
	case FI_LXOR: r = (T)(!old != !a); break;				\
	INT_OPS_CASES(INT_OPS, T)						\
	case FI_ATOMIC_WRITE: r = a; break;					\
	case FI_CSWAP: if (!(c == old)) return 0; r = a; break;		\
	case FI_CSWAP_NE: if (!(c != old)) return 0; r = a; break;		\
	case FI_CSWAP_LE: if (!(c <= old)) return 0; r = a; break;		\
	case FI_CSWAP_LT: if (!(c < old)) return 0; r = a; break;		\
	case FI_CSWAP_GE: if (!(c >= old)) return 0; r = a; break;		\
	case FI_CSWAP_GT: if (!(c > old)) return 0; r = a; break;		\
	default: return 0;	/* FI_ATOMIC_READ */				\
	}									\
	memcpy(res, &r, sizeof(T));						\
	return 1;								\
}

/* bitwise ops exist for integers only (xfi_atomic_valid) */
#define INT_OPS_CASES(INT_OPS, T) INT_OPS_CASES_##INT_OPS(T)
#define INT_OPS_CASES_1(T)						\
	case FI_BOR: r = old | a; break;					\
	case FI_BAND: r = old & a; break;					\
	case FI_BXOR: r = old ^ a; break;					\
	case FI_MSWAP: r = (T)((a & c) | (old & ~c)); break;
#define INT_OPS_CASES_0(T)

XFI_DEFINE_COMPUTE(xfi_compute_i8, int8_t, uint8_t, 1)
XFI_DEFINE_COMPUTE(xfi_compute_u8, uint8_t, uint8_t, 1)
XFI_DEFINE_COMPUTE(xfi_compute_i16, int16_t, uint16_t, 1)
XFI_DEFINE_COMPUTE(xfi_compute_u16, uint16_t, uint16_t, 1)
XFI_DEFINE_COMPUTE(xfi_compute_i32, int32_t, uint32_t, 1)
XFI_DEFINE_COMPUTE(xfi_compute_u32, uint32_t, uint32_t, 1)
XFI_DEFINE_COMPUTE(xfi_compute_i64, int64_t, uint64_t, 1)
XFI_DEFINE_COMPUTE(xfi_compute_u64, uint64_t, uint64_t, 1)
XFI_DEFINE_COMPUTE(xfi_compute_float, float, float, 0)
XFI_DEFINE_COMPUTE(xfi_compute_double, double, double, 0)

typedef int (*xfi_compute_fn)(enum fi_op op, void *res, const void *old, const void *a,
			      const void *c);

static const xfi_compute_fn xfi_compute[XFI_ADT_LIMIT] = {
	xfi_compute_i8, xfi_compute_u8, xfi_compute_i16, xfi_compute_u16, xfi_compute_i32,
	xfi_compute_u32, xfi_compute_i64, xfi_compute_u64, xfi_compute_float, xfi_compute_double,
};

/*
 * Load, and compare-and-swap, of a naturally aligned value of size bytes
 * (1, 2, 4 or 8) held in the low bytes of a uint64_t.
 */
#define XFI_SIZED(size, T, ...)						\
	switch (size) {								\
	case 1: { typedef uint8_t T; __VA_ARGS__ }				\
	case 2: { typedef uint16_t T; __VA_ARGS__ }				\
	case 4: { typedef uint32_t T; __VA_ARGS__ }				\
	default: { typedef uint64_t T; __VA_ARGS__ }				\
	}

static void xfi_atomic_load(const void *p, uint64_t *out, size_t size)
{
	XFI_SIZED(size, T, {
		T v = __atomic_load_n((const T *)p, __ATOMIC_SEQ_CST);

		memcpy(out, &v, sizeof(T));
		return;
	})
}

static int xfi_cas(void *p, const uint64_t *expect, const uint64_t *desired, size_t size)
{
	XFI_SIZED(size, T, {
		T e, d;

		memcpy(&e, expect, sizeof(T));
		memcpy(&d, desired, sizeof(T));
		return __atomic_compare_exchange_n((T *)p, &e, d, 0, __ATOMIC_SEQ_CST,
						   __ATOMIC_SEQ_CST);
	})
}

void xfi_atomic_apply(enum fi_op op, enum fi_datatype dt, size_t count, void *target,
		      const void *operand, const void *compare, void *fetched)
{
	size_t size = xfi_atomic_dt_size((unsigned int)dt), i;
	xfi_compute_fn compute = xfi_compute[dt];

	for (i = 0; i < count; i++) {
		uint8_t *p = (uint8_t *)target + i * size;
		const uint8_t *a = operand ? (const uint8_t *)operand + i * size : NULL;
		const uint8_t *c = compare ? (const uint8_t *)compare + i * size : NULL;
		uint64_t old, val;

		do {
			xfi_atomic_load(p, &old, size);
			if (!compute(op, &val, &old, a, c))
				break;
		} while (!xfi_cas(p, &old, &val, size));
		if (fetched)
			memcpy((uint8_t *)fetched + i * size, &old, size);
	}
}
