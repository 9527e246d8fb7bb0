/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * extoll2_list.h - list type embedded in RMA2_Region / RMA2_Descriptor.
 *
 * Source compatible with the original EXTOLL header of the same name.  Only
 * the extoll_/extoll2_ prefixed names exist: no struct list_head, no
 * list_* / LIST_HEAD / INIT_LIST_HEAD (clients such as pscom bring their own
 * Linux-style list.h after rma2.h).  likely()/unlikely() are defined only
 * when nobody defined them before.
 *
 * This header also provides <string.h> (the original did, and clients rely
 * on it transitively through rma2.h).
 */
#ifndef EXTOLL2_LIST_H
#define EXTOLL2_LIST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

struct extoll_list_head {
	struct extoll_list_head *next, *prev;
};
typedef struct extoll_list_head extoll_list_head_t;

/*
 * Object pool: a free list of equally sized elements that each start with
 * an extoll_list_head_t.  The pool grows by 'grow' elements when empty.
 */
typedef struct extoll2_list {
	extoll_list_head_t free;	/* free elements */
	extoll_list_head_t chunks;	/* allocated chunks (for destruction) */
	size_t elem_size;		/* bytes per element (multiple of align) */
	size_t align;			/* element alignment */
	uint32_t grow;			/* elements added per growth step */
	uint32_t nfree;			/* current free count */
	uint32_t ntotal;		/* elements ever created */
	uint32_t reserved;
} extoll2_list_t;

/* All return 0 on success, -1 on failure (allocation / bad argument). */
int extoll2_construct_list(extoll2_list_t *list, size_t elem_size, size_t align,
			   uint32_t initial, uint32_t grow);
void extoll2_destruct_list(extoll2_list_t *list);
void *extoll2_list_get(extoll2_list_t *list);
int extoll2_list_put(extoll2_list_t *list, void *elem);
uint32_t extoll2_list_free_count(const extoll2_list_t *list);

#ifdef __cplusplus
}
#endif

#endif /* EXTOLL2_LIST_H */
