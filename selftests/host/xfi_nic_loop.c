// SPDX-License-Identifier: MIT
/*
 * A loopback NIC for the provider's engine (lib/fi-providers/xfi_nic.h) in
 * process memory, so that host tests reach the engine through real
 * libfabric calls without a device: every domain of the process is on
 * node 0, an endpoint's mailbox is a ring of packets in memory, a send
 * copies the packet into the target's ring at once (its outcome is known
 * when the send returns or at the channel's next poll: xfi_nic_loop.h),
 * registrations are bookkeeping, and RDMA is a memcpy to or from a
 * registered range of the process, reported done at the slot's second
 * poll.  Errors as xfi_nic.h says: a full ring is -ENOBUFS (send again),
 * no such mailbox -ECONNREFUSED, another node -EHOSTUNREACH, RDMA outside
 * every registration -EFAULT, an impossible rank -EINVAL at the post.
 *
 * Resources can be made scarce to test what the engine does when they run
 * out, through the environment (read when the resource is taken):
 *   XFI_LOOP_MBOXES     endpoints (mailboxes) at most (default 64)
 *   XFI_LOOP_RDMA_SLOTS RDMA operations in flight per domain (default 32)
 *   XFI_LOOP_MR_MAX     registrations at most (default unlimited)
 * and XFI_LOOP_CALLS counts the engine's calls for a test (xfi_loop_calls.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfi_nic.h"
#include "xfi_proto.h"
#include "xfi_loop_calls.h"

#define LOOP_MBOX_LIMIT		64	/* mailbox ids fit 6 bits (xfi_proto.h) */
#define LOOP_RDMA_SLOT_LIMIT	64

struct loop_pkt {
	size_t len;
	uint8_t data[XFI_PKT_MAX];
};

struct xfi_nic {
	int unused;
};

struct xfi_nic_ep {
	unsigned int mbox;
	struct loop_pkt *ring;
	unsigned int slots, head, count;
	int chan_outcome[XFI_NIC_CHANNELS];
	int chan_unpolled[XFI_NIC_CHANNELS];	/* reported -EINPROGRESS once first */
};

struct loop_mr {
	struct xfi_nic_mr mr;
	struct loop_mr *next;
};

struct loop_slot {
	int busy;
	int unpolled;
	int draining;		/* abandoned: free at the next post or poll */
	int outcome;
};

struct xfi_nic_rdma {
	unsigned int nslots;
	struct loop_slot slot[LOOP_RDMA_SLOT_LIMIT];
};

/* Everything of the process's one "fabric": its mailboxes and registrations. */
static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xfi_nic_ep *loop_mbox[LOOP_MBOX_LIMIT];
static struct loop_mr *loop_mrs;
static unsigned int loop_mr_count;
static uint64_t loop_next_handle;

/* The test's counters (XFI_LOOP_CALLS, xfi_loop_calls.h), or NULL. */
static struct xfi_loop_calls *loop_calls(void)
{
	const char *s = getenv("XFI_LOOP_CALLS");
	void *p = NULL;

	if (!s || sscanf(s, "%p", &p) != 1)
		return NULL;
	return p;
}

/* A limit from the environment, within [1, max]; def when unset or bad. */
static unsigned int loop_limit(const char *name, unsigned int def, unsigned int max)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	return *end || !v || v > max ? def : (unsigned int)v;
}

int xfi_nic_open(const char *path, struct xfi_nic **nicp)
{
	struct xfi_nic *nic;

	if (!path)
		return -ENODEV;
	nic = calloc(1, sizeof(*nic));
	if (!nic)
		return -ENOMEM;
	*nicp = nic;
	return 0;
}

void xfi_nic_close(struct xfi_nic *nic)
{
	free(nic);
}

uint32_t xfi_nic_node_id(const struct xfi_nic *nic)
{
	(void)nic;
	return 0;
}

int xfi_nic_ep_open(struct xfi_nic *nic, unsigned int slots, struct xfi_nic_ep **epp)
{
	unsigned int limit = loop_limit("XFI_LOOP_MBOXES", LOOP_MBOX_LIMIT, LOOP_MBOX_LIMIT);
	struct xfi_nic_ep *ep;
	unsigned int i;

	(void)nic;
	if (slots < XFI_NIC_MBOX_MIN || slots > XFI_NIC_MBOX_MAX)
		return -EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ep->ring = calloc(slots, sizeof(*ep->ring));
	if (!ep->ring) {
		free(ep);
		return -ENOMEM;
	}
	ep->slots = slots;
	pthread_mutex_lock(&loop_lock);
	for (i = 0; i < limit && loop_mbox[i]; i++)
		;
	if (i < limit) {
		ep->mbox = i;
		loop_mbox[i] = ep;
	}
	pthread_mutex_unlock(&loop_lock);
	if (i == limit) {
		free(ep->ring);
		free(ep);
		return -EBUSY;
	}
	*epp = ep;
	return 0;
}

void xfi_nic_ep_close(struct xfi_nic_ep *ep)
{
	pthread_mutex_lock(&loop_lock);
	loop_mbox[ep->mbox] = NULL;
	pthread_mutex_unlock(&loop_lock);
	free(ep->ring);
	free(ep);
}

uint32_t xfi_nic_ep_mbox(const struct xfi_nic_ep *ep)
{
	return ep->mbox;
}

/* The packet into mailbox mbox of node: the send's outcome. */
static int loop_deliver(uint32_t node, uint32_t mbox, const void *pkt, size_t len)
{
	struct xfi_nic_ep *to;
	struct loop_pkt *p;

	if (node != 0)
		return -EHOSTUNREACH;
	to = mbox < LOOP_MBOX_LIMIT ? loop_mbox[mbox] : NULL;
	if (!to)
		return -ECONNREFUSED;
	if (to->count == to->slots)
		return -ENOBUFS;
	p = &to->ring[(to->head + to->count++) % to->slots];
	memcpy(p->data, pkt, len);
	p->len = len;
	return 0;
}

int xfi_nic_send(struct xfi_nic_ep *ep, unsigned int chan, uint32_t node, uint32_t mbox,
		 const void *pkt, size_t len)
{
	struct xfi_loop_calls *calls = loop_calls();

	if (calls)
		calls->sends++;
	if (chan >= XFI_NIC_CHANNELS || !len || len > XFI_PKT_MAX || !pkt)
		return -EINVAL;
	pthread_mutex_lock(&loop_lock);
	ep->chan_outcome[chan] = loop_deliver(node, mbox, pkt, len);
	pthread_mutex_unlock(&loop_lock);
	ep->chan_unpolled[chan] = !XFI_LOOP_AT_ONCE;
	return 0;
}

int xfi_nic_chan_status(struct xfi_nic_ep *ep, unsigned int chan)
{
	struct xfi_loop_calls *calls = loop_calls();

	if (calls)
		calls->status_reads++;
	if (chan >= XFI_NIC_CHANNELS)
		return -EINVAL;
	if (ep->chan_unpolled[chan]) {
		ep->chan_unpolled[chan] = 0;
		return -EINPROGRESS;	/* the ACK is on its way */
	}
	return ep->chan_outcome[chan];
}

ssize_t xfi_nic_recv(struct xfi_nic_ep *ep, void *buf, size_t len, uint32_t *src_node)
{
	struct loop_pkt *p;
	ssize_t n = 0;

	pthread_mutex_lock(&loop_lock);
	if (ep->count) {
		p = &ep->ring[ep->head];
		ep->head = (ep->head + 1) % ep->slots;
		ep->count--;
		n = p->len <= len ? (ssize_t)p->len : -EIO;	/* consumed either way */
		if (n > 0) {
			memcpy(buf, p->data, p->len);
			*src_node = 0;
		}
	}
	pthread_mutex_unlock(&loop_lock);
	return n;
}

int xfi_nic_reg_mr(struct xfi_nic *nic, void *addr, size_t len, uint32_t access,
		   struct xfi_nic_mr **mrp)
{
	unsigned int limit = loop_limit("XFI_LOOP_MR_MAX", ~0u, ~0u);
	struct loop_mr *m;

	(void)nic;
	if (!len || access & ~(XFI_NIC_MR_NI_READS | XFI_NIC_MR_NI_WRITES | XFI_NIC_MR_ON_DEMAND))
		return -EINVAL;
	if (!addr)
		return -EFAULT;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_lock(&loop_lock);
	if (loop_mr_count >= limit) {
		pthread_mutex_unlock(&loop_lock);
		free(m);
		return -ENOSPC;
	}
	m->mr.addr = addr;
	m->mr.len = len;
	m->mr.key = ++loop_next_handle << 8;	/* rank 0 in the low byte */
	m->mr.hw = m;
	m->next = loop_mrs;
	loop_mrs = m;
	loop_mr_count++;
	pthread_mutex_unlock(&loop_lock);
	*mrp = &m->mr;
	return 0;
}

void xfi_nic_dereg_mr(struct xfi_nic_mr *mr)
{
	struct xfi_loop_calls *calls = loop_calls();
	struct loop_mr **pp;

	if (calls)
		calls->deregs++;

	pthread_mutex_lock(&loop_lock);
	for (pp = &loop_mrs; *pp; pp = &(*pp)->next) {
		if (&(*pp)->mr == mr) {
			*pp = (*pp)->next;
			loop_mr_count--;
			break;
		}
	}
	pthread_mutex_unlock(&loop_lock);
	free(mr->hw);
}

void xfi_nic_mr_remote(const struct xfi_nic_mr *mr, const void *buf, uint32_t *node,
		       uint32_t *rank, uint64_t *raddr)
{
	(void)mr;
	*node = 0;
	*rank = 0;
	*raddr = (uintptr_t)buf;
}

int xfi_nic_key_raddr(uint64_t key, uint64_t va, uint32_t *rank, uint64_t *raddr)
{
	*rank = (uint32_t)(key & 0xff);
	*raddr = va;
	return 0;
}

int xfi_nic_rdma_alloc(struct xfi_nic *nic, struct xfi_nic_rdma **rdmap)
{
	struct xfi_nic_rdma *rdma = calloc(1, sizeof(*rdma));

	(void)nic;
	if (!rdma)
		return -ENOMEM;
	rdma->nslots = loop_limit("XFI_LOOP_RDMA_SLOTS", 32, LOOP_RDMA_SLOT_LIMIT);
	*rdmap = rdma;
	return 0;
}

void xfi_nic_rdma_free(struct xfi_nic_rdma *rdma)
{
	free(rdma);
}

/* Does a registration of the process hold [addr, addr + len)? (lock held) */
static int loop_registered(uint64_t addr, size_t len)
{
	const struct loop_mr *m;

	for (m = loop_mrs; m; m = m->next) {
		uint64_t start = (uintptr_t)m->mr.addr;

		if (addr >= start && addr - start <= m->mr.len && len <= m->mr.len - (addr - start))
			return 1;
	}
	return 0;
}

static void loop_reclaim(struct xfi_nic_rdma *rdma)
{
	unsigned int i;

	for (i = 0; i < rdma->nslots; i++) {
		if (rdma->slot[i].draining)
			rdma->slot[i] = (struct loop_slot){ 0 };
	}
}

int xfi_nic_rdma_post(struct xfi_nic_rdma *rdma, int is_read, void *buf,
		      const struct xfi_nic_mr *lmr, uint32_t node, uint32_t rank, uint64_t raddr,
		      size_t len)
{
	uintptr_t b = (uintptr_t)buf, l = (uintptr_t)lmr->addr;
	struct loop_slot *s = NULL;
	unsigned int i;
	int outcome = 0;

	if (rank != 0 || !len || len > XFI_NIC_RDMA_MAX_LEN)
		return -EINVAL;
	loop_reclaim(rdma);
	for (i = 0; i < rdma->nslots && !s; i++)
		if (!rdma->slot[i].busy)
			s = &rdma->slot[i];
	if (!s)
		return -EAGAIN;
	pthread_mutex_lock(&loop_lock);
	if (node != 0)
		outcome = -EHOSTUNREACH;
	else if (b < l || b - l > lmr->len || len > lmr->len - (b - l) ||
		 !loop_registered(raddr, len))
		outcome = -EFAULT;
	else if (is_read)
		memmove(buf, (void *)(uintptr_t)raddr, len);
	else
		memmove((void *)(uintptr_t)raddr, buf, len);
	pthread_mutex_unlock(&loop_lock);
	*s = (struct loop_slot){ .busy = 1, .unpolled = 1, .outcome = outcome };
	return (int)(s - rdma->slot);
}

int xfi_nic_rdma_poll(struct xfi_nic_rdma *rdma, unsigned int slot)
{
	struct loop_slot *s;

	loop_reclaim(rdma);
	if (slot >= rdma->nslots || !rdma->slot[slot].busy)
		return -EINVAL;
	s = &rdma->slot[slot];
	if (s->unpolled) {
		s->unpolled = 0;
		return -EINPROGRESS;
	}
	s->busy = 0;
	return s->outcome;
}

void xfi_nic_rdma_abandon(struct xfi_nic_rdma *rdma, unsigned int slot)
{
	if (slot < rdma->nslots && rdma->slot[slot].busy)
		rdma->slot[slot].draining = 1;
}
