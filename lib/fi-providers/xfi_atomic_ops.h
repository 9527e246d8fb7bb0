/* SPDX-License-Identifier: MIT */
/*
 * FI_ATOMIC arithmetic of the exanet provider (xfi_atomic_ops.c): which
 * op/datatype combinations exist, and applying one to memory.  No device.
 */
#ifndef XFI_ATOMIC_OPS_H
#define XFI_ATOMIC_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fi_domain.h>

#include "xfi_proto.h"

/* The three calls: fi_atomic, fi_fetch_atomic, fi_compare_atomic. */
enum xfi_atomic_kind {
	XFI_KIND_WRITE,
	XFI_KIND_FETCH,
	XFI_KIND_COMPARE,
};

/*
 * 1 if the call of that kind supports op on dt: MIN, MAX, SUM, PROD and
 * ATOMIC_WRITE on every type; LOR, LAND, LXOR, BOR, BAND, BXOR on integers
 * (FI_INT8 .. FI_UINT64); ATOMIC_READ with fetch only; the CSWAP family on
 * every type and MSWAP on integers, with compare only.
 */
int xfi_atomic_valid(enum xfi_atomic_kind kind, enum fi_op op, enum fi_datatype dt);

/*
 * Apply op to count values of dt at target (naturally aligned; valid
 * combination): operand (NULL for ATOMIC_READ), compare (compare ops) hold
 * count values each; fetched (may be NULL) gets the old values.
 */
void xfi_atomic_apply(enum fi_op op, enum fi_datatype dt, size_t count, void *target,
		      const void *operand, const void *compare, void *fetched);

#endif
