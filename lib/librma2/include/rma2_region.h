/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rma2_region.h - registered memory region (user-space layout of the
 * original driver package header).  Clients embed RMA2_Region by value and
 * read/write .nla, .start, .size, .offset directly.
 *
 * Invariants (librma2): start = requested address rounded down to 4 KiB,
 * offset = address - start, count = number of 4 KiB pages, size = count *
 * 4096, end = start + size, NLA of byte p of the region = nla + (p - start),
 * nla != 0 for a valid registration.
 */
#ifndef RMA2_REGION_H
#define RMA2_REGION_H

#include <stddef.h>
#include <stdint.h>
#include <extoll2_list.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RMA2_REGION_PAGE_SHIFT 12
#define RMA2_REGION_PAGE_SIZE 4096UL

typedef struct _region {
	extoll_list_head_t list;	/* pool linkage */
	void *start;			/* page (4 KiB) aligned start */
	unsigned long nla;		/* NLA of start */
	uint32_t count;			/* number of 4 KiB pages */
	uint32_t offset;		/* requested address - start */
	void *end;			/* start + size */
	size_t size;			/* count * 4096 */
	uint64_t refcount;		/* registration cache use count */
	void *endpoint;			/* owning RMA2_Port (rma2_register) */
	struct _region *parent;		/* cache parent, else NULL */
} RMA2_Region;

#ifdef __cplusplus
}
#endif

#endif /* RMA2_REGION_H */
