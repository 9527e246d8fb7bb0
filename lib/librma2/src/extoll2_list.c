// SPDX-License-Identifier: LGPL-2.1-or-later
/* extoll2_list: object pools (see include/extoll2_list.h). */
#include <stdlib.h>
#include <string.h>

#include "extoll2_list.h"

#define EXPORT __attribute__((visibility("default")))

static void lh_init(extoll_list_head_t *h)
{
	h->next = h;
	h->prev = h;
}

static void lh_add(extoll_list_head_t *n, extoll_list_head_t *h)
{
	n->next = h->next;
	n->prev = h;
	h->next->prev = n;
	h->next = n;
}

static void lh_del(extoll_list_head_t *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n;
	n->prev = n;
}

/* A chunk: header (aligned) followed by 'grow' elements. */
static int pool_grow(extoll2_list_t *l, uint32_t n)
{
	size_t hdr = (sizeof(extoll_list_head_t) + l->align - 1) / l->align * l->align;
	size_t bytes;
	unsigned char *chunk;
	uint32_t i;

	/* hdr + n * elem_size rounded up to align; refuse what wraps */
	if (__builtin_mul_overflow((size_t)n, l->elem_size, &bytes) ||
	    __builtin_add_overflow(bytes, hdr + (l->align - 1), &bytes))
		return -1;
	bytes = bytes / l->align * l->align;
	chunk = aligned_alloc(l->align, bytes);
	if (!chunk)
		return -1;
	memset(chunk, 0, bytes);
	lh_add((extoll_list_head_t *)chunk, &l->chunks);
	for (i = 0; i < n; i++)
		lh_add((extoll_list_head_t *)(chunk + hdr + (size_t)i * l->elem_size), &l->free);
	l->nfree += n;
	l->ntotal += n;
	return 0;
}

EXPORT int extoll2_construct_list(extoll2_list_t *l, size_t elem_size, size_t align,
				  uint32_t initial, uint32_t grow)
{
	if (!l)
		return -1;
	/* free.next == NULL: get/put refuse a list whose construction failed */
	memset(l, 0, sizeof(*l));
	if (elem_size < sizeof(extoll_list_head_t) || grow == 0)
		return -1;
	if (align < sizeof(void *))
		align = sizeof(void *);
	if ((align & (align - 1)) || elem_size > SIZE_MAX - (align - 1))
		return -1;
	lh_init(&l->free);
	lh_init(&l->chunks);
	l->align = align;
	l->elem_size = (elem_size + align - 1) / align * align;
	l->grow = grow;
	if (initial && pool_grow(l, initial)) {
		l->free.next = NULL;
		return -1;
	}
	return 0;
}

EXPORT void extoll2_destruct_list(extoll2_list_t *l)
{
	if (!l || !l->chunks.next)
		return;
	while (l->chunks.next != &l->chunks) {
		extoll_list_head_t *c = l->chunks.next;

		lh_del(c);
		free(c);
	}
	lh_init(&l->free);
	l->nfree = 0;
	l->ntotal = 0;
}

EXPORT void *extoll2_list_get(extoll2_list_t *l)
{
	extoll_list_head_t *e;

	if (!l || !l->free.next)
		return NULL;
	if (l->free.next == &l->free && pool_grow(l, l->grow))
		return NULL;
	e = l->free.next;
	lh_del(e);
	l->nfree--;
	memset(e, 0, l->elem_size);
	return e;
}

EXPORT int extoll2_list_put(extoll2_list_t *l, void *elem)
{
	if (!l || !elem || !l->free.next)
		return -1;
	lh_add((extoll_list_head_t *)elem, &l->free);
	l->nfree++;
	return 0;
}

EXPORT uint32_t extoll2_list_free_count(const extoll2_list_t *l)
{
	return l ? l->nfree : 0;
}
