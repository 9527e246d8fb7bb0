// SPDX-License-Identifier: MIT
/*
 * MR cache for the rendezvous path (Documentation/exanet/libfabric.md,
 * "MR cache").
 *
 * Entries are on-demand registrations (EXANET_MR_ON_DEMAND, rdma.md
 * section 9) of page-aligned ranges.  Nothing is pinned: the driver maps
 * pages into the NI's IOMMU domain when a transfer faults on them and its
 * mmu notifier unmaps them before the kernel frees, moves or replaces a
 * page (free()/munmap, a new mmap at the same address, COW, swap).  So an
 * entry whose memory was freed and mapped again never shows the NI the old
 * pages: its next transfer faults in the pages the process has now.  No
 * unmap hook in the provider is needed for correctness; a stale entry only
 * costs a kernel registration until the LRU evicts it.
 *
 * Without on-demand paging (an NI without interrupts: the driver answers
 * -EOPNOTSUPP, or -EINVAL before driver 1.2) nothing is cached: every
 * rendezvous registers (pins) and deregisters its buffer, as before.  A
 * pinned registration could not be cached safely: after free() and a new
 * mmap at the same address it would still show the NI the old pages.
 *
 * Lookup is a walk of the LRU list (at most FI_EXANET_MR_CACHE_SIZE
 * entries): cheap next to a rendezvous.  An entry in use by an operation is
 * never evicted; with every entry in use the operation gets a registration
 * of its own.  The cache has its own mutex (taken inside the domain lock
 * or without it).
 */
#include <errno.h>
#include <stdlib.h>

#include "xfi.h"

#define XFI_PAGE 4096u

/* Rights of a cached entry: the NI may write into it (rendezvous
 * receive) and peers may read it (rendezvous send); never remote write. */
#define XFI_MRC_ACCESS (XFI_MR_NI_WRITES | XFI_NIC_MR_ON_DEMAND)

void xfi_mrc_init(struct xfi_mr_cache *c)
{
	pthread_mutex_init(&c->lock, NULL);
	c->odp = -1;
}

static void xfi_mrc_unlink(struct xfi_mr_cache *c, struct xfi_mrc_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
	c->count--;
}

static void xfi_mrc_push_front(struct xfi_mr_cache *c, struct xfi_mrc_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	else
		c->tail = e;
	c->head = e;
	c->count++;
}

static void xfi_mrc_drop(struct xfi_mr_cache *c, struct xfi_mrc_entry *e)
{
	xfi_mrc_unlink(c, e);
	xfi_nic_dereg_mr(e->mr);
	c->deregistrations++;
	free(e);
}

void xfi_mrc_fini(struct xfi_mr_cache *c)
{
	/* how well FI_EXANET_MR_CACHE_SIZE fitted this run's buffers */
	if (c->hits || c->misses)
		FI_INFO(&xfi_prov, FI_LOG_MR, "MR cache of %zu entries (%zu in it): %" PRIu64
			" hits, %" PRIu64 " misses, %" PRIu64 " evictions, %" PRIu64
			" registrations\n", xfi_params.mr_cache_size, c->count, c->hits, c->misses,
			c->evictions, c->registrations);
	while (c->head)
		xfi_mrc_drop(c, c->head);
	pthread_mutex_destroy(&c->lock);
}

/* Evict unused entries from the cold end until there is room for one. */
static void xfi_mrc_make_room(struct xfi_mr_cache *c)
{
	struct xfi_mrc_entry *e = c->tail, *prev;

	while (e && c->count >= xfi_params.mr_cache_size) {
		prev = e->prev;
		if (!e->refs) {
			xfi_mrc_drop(c, e);
			c->evictions++;
		}
		e = prev;
	}
}

static int xfi_mrc_own(struct xfi_mr_cache *c, struct xfi_domain *dom, void *addr, size_t len,
		       uint32_t access, struct xfi_mrh *h)
{
	int err = xfi_nic_reg_mr(dom->dev, addr, len, access, &h->mr);

	if (!err)
		c->registrations++;
	else
		/* not an error: a send from read-only memory goes eager */
		FI_INFO(&xfi_prov, FI_LOG_MR, "registration of %zu bytes at %p refused: %s\n",
			len, addr, strerror(-err));
	return err;
}

int xfi_mrc_get(struct xfi_domain *dom, void *addr, size_t len, uint32_t access,
		struct xfi_mrh *h)
{
	struct xfi_mr_cache *c = &dom->mrc;
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(XFI_PAGE - 1);
	uintptr_t end = ((uintptr_t)addr + len + XFI_PAGE - 1) & ~(uintptr_t)(XFI_PAGE - 1);
	struct xfi_mrc_entry *e;
	int err;

	h->mr = NULL;
	h->ent = NULL;
	if (!len || end < start)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (!xfi_params.mr_cache_size || !c->odp) {
		err = xfi_mrc_own(c, dom, addr, len, access, h);
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	for (e = c->head; e; e = e->next) {
		if (e->start <= start && end <= e->end) {
			xfi_mrc_unlink(c, e);
			xfi_mrc_push_front(c, e);
			e->refs++;
			c->hits++;
			h->mr = e->mr;
			h->ent = e;
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
	}
	c->misses++;
	xfi_mrc_make_room(c);
	if (c->count >= xfi_params.mr_cache_size) {	/* all in use */
		err = xfi_mrc_own(c, dom, addr, len, access, h);
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	err = xfi_nic_reg_mr(dom->dev, (void *)start, end - start, XFI_MRC_ACCESS, &e->mr);
	if (err == -EOPNOTSUPP || err == -EINVAL) {
		/* no on-demand paging on this NI (msix=off, old driver): pin
		 * per message from now on */
		if (c->odp < 0)
			c->odp = 0;
		free(e);
		err = xfi_mrc_own(c, dom, addr, len, access, h);
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	if (err) {
		free(e);
		err = xfi_mrc_own(c, dom, addr, len, access, h);
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	c->odp = 1;
	c->registrations++;
	e->start = start;
	e->end = end;
	e->refs = 1;
	xfi_mrc_push_front(c, e);
	h->mr = e->mr;
	h->ent = e;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void xfi_mrc_put(struct xfi_domain *dom, struct xfi_mrh *h)
{
	struct xfi_mr_cache *c = &dom->mrc;

	if (!h->mr)
		return;
	pthread_mutex_lock(&c->lock);
	if (h->ent) {
		h->ent->refs--;
		if (h->ent->dead && !h->ent->refs) {
			xfi_nic_dereg_mr(h->ent->mr);
			c->deregistrations++;
			free(h->ent);
		} else if (c->count > xfi_params.mr_cache_size && !h->ent->refs) {
			xfi_mrc_drop(c, h->ent);
			c->evictions++;
		}
	} else {
		xfi_nic_dereg_mr(h->mr);
		c->deregistrations++;
	}
	pthread_mutex_unlock(&c->lock);
	h->mr = NULL;
	h->ent = NULL;
}

void xfi_mrc_put_drop(struct xfi_domain *dom, struct xfi_mrh *h)
{
	struct xfi_mr_cache *c = &dom->mrc;

	if (!h->mr)
		return;
	if (h->ent) {
		pthread_mutex_lock(&c->lock);
		if (!h->ent->dead) {
			xfi_mrc_unlink(c, h->ent);
			h->ent->dead = 1;
		}
		pthread_mutex_unlock(&c->lock);
	}
	xfi_mrc_put(dom, h);
}
