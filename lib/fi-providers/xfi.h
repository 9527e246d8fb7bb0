/* SPDX-License-Identifier: MIT */
/*
 * exanet libfabric provider: internal objects.  See
 * Documentation/exanet/libfabric.md for the design.
 *
 * Locking: one mutex per domain covers every object of the domain (AVs,
 * CQs, endpoints); an uncontended pthread mutex makes no system call.
 */
#ifndef XFI_H
#define XFI_H

#include <pthread.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include "exa_clock.h"
#include "xfi_nic.h"

#include "xfi_proto.h"

#define XFI_PROV_NAME		XFI_NIC_NAME
#define XFI_FABRIC_NAME		XFI_NIC_NAME
#define XFI_PROV_VERSION	FI_VERSION(0, 1)
#define XFI_API_VERSION		FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

#define XFI_RMA_CAPS		(FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
/* done by the target's provider (xfi_atomic.c): same keys and addresses as RMA */
#define XFI_ATOMIC_CAPS		(FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define XFI_CAPS		(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_SOURCE | \
				 FI_DIRECTED_RECV | FI_MULTI_RECV | FI_LOCAL_COMM | \
				 FI_REMOTE_COMM | XFI_RMA_CAPS | \
				 (XFI_NIC_HAS_ATOMIC ? XFI_ATOMIC_CAPS : 0))
/* Between atomics of one endpoint to one target (applied in stream order). */
#define XFI_ATOMIC_ORDER	(FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | \
				 FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)
/* RMA targets are (node, rank, virtual address): keys come from the
 * provider and the address is the virtual address of the target. */
#define XFI_RMA_MR_MODE		(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)
#define XFI_IOV_LIMIT		4
/* FI_OPT_MIN_MULTI_RECV default: a buffer is released below one packet */
#define XFI_MIN_MULTI_RECV	64
#define XFI_TAG_FORMAT		0xaaaaaaaaaaaaaaaaULL	/* all 64 bits, no structure */
#define XFI_QUEUE_SIZE		4096	/* advertised; queues grow on demand */
#define XFI_REORDER_WINDOW	16	/* packets in flight per peer */
#define XFI_CHANNELS		XFI_NIC_CHANNELS
/* fast sends done at once whose completions wait for the next progress
 * call; one more takes the general path */
#define XFI_FAST_DONE_MAX	64
#define XFI_PEER_BUCKETS	256
#define XFI_RX_BUDGET		256	/* mailbox slots handled per progress call */
#define XFI_MAX_PEERS		65536	/* receive state kept for at most this many senders */

extern struct fi_provider xfi_prov;

/*
 * Return @err, an error for the application, after saying why at
 * FI_LOG_LEVEL=warn (FI_WARN names the function).  Not for -FI_EAGAIN and
 * -FI_EAVAIL, which are flow control and the usual way to report error
 * completions, nor for fi_getinfo's -FI_ENODATA (FI_INFO: another
 * provider may answer).
 */
#define XFI_RETURN_ERR(subsys, err, ...)				\
	do {								\
		FI_WARN(&xfi_prov, subsys, __VA_ARGS__);		\
		return (err);						\
	} while (0)

/* Tunables (fi_param_define), read once at load. */
struct xfi_params {
	char *device;			/* FI_<NIC>_DEVICE (FI_EXANET_DEVICE, ...) */
	size_t rndv_threshold;		/* FI_EXANET_RNDV_THRESHOLD */
	size_t mbox_slots;		/* FI_EXANET_MBOX_SLOTS */
	size_t max_msg_size;		/* FI_EXANET_MAX_MSG_SIZE */
	size_t mr_cache_size;		/* FI_EXANET_MR_CACHE_SIZE (entries, 0: off) */
	size_t probe_ms;		/* FI_EXANET_PROBE_MS */
	int fast_send;			/* FI_EXANET_FAST_SEND (bool, default 1) */
};
extern struct xfi_params xfi_params;
/* fi_param_define and read them (at load: fi_prov_ini) */
void xfi_params_read(void);

/* The device file fi_getinfo probes and a domain opens. */
static inline const char *xfi_device_path(void)
{
	return xfi_params.device && *xfi_params.device ? xfi_params.device :
		XFI_NIC_DEFAULT_DEVICE;
}

struct xfi_fabric {
	struct fid_fabric fabric_fid;
};

struct xfi_ep;

/*
 * MR cache (xfi_mr_cache.c): on-demand registrations of page-aligned
 * ranges, reused by rendezvous sends and receives, LRU-bounded.  The
 * driver's mmu notifier keeps what the NI sees equal to what the process
 * maps, so an entry never goes stale, it only costs a kernel registration.
 */
struct xfi_mrc_entry {
	struct xfi_mrc_entry *prev, *next;	/* LRU list, most recent first */
	uintptr_t start, end;			/* page aligned */
	struct xfi_nic_mr *mr;
	unsigned int refs;			/* operations using it */
	int dead;				/* out of the cache: freed at refs 0 */
};

/* A registration held by one operation: cached (ent) or its own (mr only). */
struct xfi_mrh {
	struct xfi_nic_mr *mr;
	struct xfi_mrc_entry *ent;
};

struct xfi_mr_cache {
	pthread_mutex_t lock;
	struct xfi_mrc_entry *head, *tail;
	size_t count;
	int odp;			/* 1 on-demand works, 0 not, -1 untried */
	uint64_t hits, misses, registrations, deregistrations, evictions;
};

/*
 * Recycled objects of the eager path: several are allocated and freed per
 * message, and a malloc/free pair costs about 0.2 us on an emulated node.
 * Used under the domain lock; the objects are ordinary heap blocks (free()
 * is fine on them).
 */
#define XFI_CACHE_DEPTH 32

struct xfi_cache {
	void *items[XFI_CACHE_DEPTH];
	unsigned int n;
};

static inline void *xfi_cache_get(struct xfi_cache *c, size_t size)
{
	void *p;

	if (!c->n)
		return calloc(1, size);
	p = c->items[--c->n];
	memset(p, 0, size);
	return p;
}

static inline void xfi_cache_put(struct xfi_cache *c, void *p)
{
	if (p && c->n < XFI_CACHE_DEPTH)
		c->items[c->n++] = p;
	else
		free(p);
}

static inline void xfi_cache_drain(struct xfi_cache *c)
{
	while (c->n)
		free(c->items[--c->n]);
}

struct xfi_domain {
	struct fid_domain domain_fid;
	struct xfi_fabric *fabric;
	struct xfi_nic *dev;
	pthread_mutex_t lock;		/* see xfi_dom_lock() */
	int serialized;			/* FI_THREAD_DOMAIN: the caller serializes */
	uint64_t completions;		/* CQ entries written, errors included */
	struct xfi_ep *eps;		/* progressed by every CQ read */
	uint32_t node_id;
	int refs;			/* AVs, CQs, EPs, MRs open on it */
	uint64_t next_mr_key;
	struct xfi_nic_rdma *rdma;	/* for rendezvous reads, allocated on first use */
	int rdma_unavailable;		/* no rank / no IOMMU: eager only */
	struct xfi_mr_cache mrc;
	struct xfi_mr *mrs;		/* registrations for RMA: atomics look keys up here */
	struct xfi_cache op_cache, rx_cache, msg_cache;	/* under lock */
};

/*
 * The domain lock guards everything under the domain.  With FI_THREAD_DOMAIN
 * the application promises to serialize every call on the domain and its
 * objects (Open MPI's mtl ofi asks for it unless MPI_THREAD_MULTIPLE), and
 * the provider runs no thread of its own, so the lock is skipped: an
 * uncontended lock and unlock are two library calls on every progress
 * poll, a tenth of a poll's instructions on an emulated node.
 */
static inline void xfi_dom_lock(struct xfi_domain *dom)
{
	if (!dom->serialized)
		pthread_mutex_lock(&dom->lock);
}

static inline void xfi_dom_unlock(struct xfi_domain *dom)
{
	if (!dom->serialized)
		pthread_mutex_unlock(&dom->lock);
}

/* Count an object opened on dom / drop it, unless *users (objects bound to
 * it) is non-zero: then -FI_EBUSY. */
static inline void xfi_domain_get(struct xfi_domain *dom)
{
	xfi_dom_lock(dom);
	dom->refs++;
	xfi_dom_unlock(dom);
}

static inline int xfi_domain_put(struct xfi_domain *dom, const int *users)
{
	xfi_dom_lock(dom);
	if (users && *users) {
		xfi_dom_unlock(dom);
		return -FI_EBUSY;
	}
	dom->refs--;
	xfi_dom_unlock(dom);
	return 0;
}

struct xfi_av {
	struct fid_av av_fid;
	struct xfi_domain *dom;
	enum fi_av_type type;
	uint32_t *keys;			/* FI_AV_TABLE: index -> key (UINT32_MAX: removed) */
	size_t count, cap;
	uint64_t gen;			/* bumped by inserts/removes: invalidates caches */
	int refs;
};

/* One completion as stored; converted to the CQ format on read. */
struct xfi_cq_entry {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src;
};

struct xfi_cq_err {
	struct xfi_cq_err *next;
	struct fi_cq_err_entry err;
	fi_addr_t src;
};

struct xfi_cq {
	struct fid_cq cq_fid;
	struct xfi_domain *dom;
	enum fi_cq_format format;
	struct xfi_cq_entry *ring;
	size_t head, count, cap;	/* power-of-two ring, grows when full */
	struct xfi_cq_err *err_head, *err_tail;
	int refs;
	int signaled;			/* fi_cq_signal, not yet seen by sread */
	enum fi_cq_wait_cond wait_cond;	/* FI_CQ_COND_THRESHOLD: sread's cond counts */
};

struct xfi_eq {
	struct fid_eq eq_fid;
};

/* fi_cntr (xfi_cntr.c): counts updated with atomics, read without the lock */
struct xfi_cntr {
	struct fid_cntr cntr_fid;
	struct xfi_domain *dom;
	uint64_t value, err;
	enum fi_wait_obj wait_obj;	/* FI_WAIT_NONE or FI_WAIT_YIELD */
	int refs;			/* endpoint bindings */
};

struct xfi_mr {
	struct fid_mr mr_fid;
	struct xfi_domain *dom;
	struct xfi_nic_mr *xmr;		/* NULL if the memory could not be registered */
	uint64_t access;		/* FI_REMOTE_READ, FI_REMOTE_WRITE, ... as asked */
	struct xfi_mr *dom_next;	/* on dom->mrs (xmr set) */
};



/* Intrusive singly linked FIFO: items start with a struct xfi_link. */
struct xfi_link {
	struct xfi_link *next;
};
struct xfi_queue {
	struct xfi_link *head, *tail;
};

/* An RMA operation on the RDMA engine. */
struct xfi_rma_op {
	struct xfi_link link;
	void *context;
	uint64_t flags;			/* FI_RMA | FI_READ or FI_WRITE, op flags */
	uint64_t data;			/* FI_REMOTE_CQ_DATA (fi_writedata) */
	uint32_t peer_key;		/* the target (fi_writedata's notification) */
	void *bounce;			/* FI_INJECT: the caller's data, copied */
	size_t len;
	int slot;
	struct xfi_mrh tmp;		/* local buffer without a descriptor (MR cache) */
};

/* A posted receive, or the buffer a claimed message is delivered into. */
struct xfi_rx_entry {
	struct xfi_link link;
	void *context;
	struct iovec iov[XFI_IOV_LIMIT];
	size_t iov_count;
	size_t capacity;
	uint64_t tag, ignore;
	uint32_t src_key;		/* UINT32_MAX: any source */
	uint64_t flags;			/* FI_MSG or FI_TAGGED, plus op flags */
	/*
	 * FI_MULTI_RECV: a buffer (flags has FI_MULTI_RECV) hands out pieces,
	 * one per message, each an entry of its own whose multi points to it.
	 * The buffer leaves the posted queue when fewer than min_multi_recv
	 * bytes are left (released); the completion of its last piece, or an
	 * empty one, carries FI_MULTI_RECV.
	 */
	struct xfi_rx_entry *multi;	/* piece: its buffer */
	size_t used;			/* buffer: bytes handed out */
	unsigned int pending;		/* buffer: pieces not completed yet */
	int released;			/* buffer: takes no more messages */
};

/* A message being reassembled: matched (rx set) or unexpected (buf). */
struct xfi_rx_msg {
	struct xfi_link link;
	uint32_t src_key;
	uint64_t tag, data;
	uint32_t flags;			/* XFI_START_* */
	uint64_t len, received;
	uint8_t *buf;			/* unexpected: the whole message */
	struct xfi_rx_entry *rx;	/* receive it will land in */
	int complete;
	int rndv;			/* rendezvous: data stays at the sender */
	struct xfi_rndv rd;
	int queued;			/* on an unexpected queue */
	int discard;			/* FI_DISCARD or no memory: drop the bytes */
	uint64_t dc_cookie;		/* XFI_START_DC: the FIN owed once all is here */
	int32_t dc_status;		/* its status: 0, or FI_ENOMEM when dropped */
};

enum xfi_op_kind {
	XFI_OP_SEND,
	XFI_OP_FIN,		/* internal: tells a rendezvous sender we are done */
	XFI_OP_PING,		/* internal, out of sequence: is the stream still known? */
	XFI_OP_RESET,		/* internal, out of sequence: answer to a PING of an unknown stream */
	XFI_OP_ATOMIC,		/* an FI_ATOMIC request: completes with the target's answer */
	XFI_OP_ATOMIC_RESP,	/* internal: the answer to one */
};

struct xfi_tx_op {
	struct xfi_link link;
	enum xfi_op_kind kind;
	struct xfi_domain *dom;
	int counted;			/* in peer->tx_ops (or tx_next_ops) */
	uint32_t stream;		/* peer->tx_stream it belongs to */
	void *context;
	uint64_t flags;			/* FI_SEND | FI_MSG/FI_TAGGED, op flags */
	uint64_t tag, data;
	uint32_t start_flags;
	const uint8_t *buf;
	uint8_t *bounce;		/* inject / iov: private copy */
	uint8_t inline_data[64];	/* the bounce of small messages */
	uint64_t len, sent;		/* payload bytes handed to channels */
	int start_sent;
	int retired;			/* moved to tx_wait: completes at the last ACK */
	uint32_t key;			/* destination */
	struct xfi_peer *peer;
	unsigned int outstanding;	/* packets not yet ACKed */
	int err;			/* first error (negative errno) */
	/* rendezvous sender: the buffer stays registered until the FIN */
	struct xfi_mrh mrh;
	int rndv;
	int dc;				/* eager FI_DELIVERY_COMPLETE: waits for a FIN */
	uint64_t cookie;
	int fin_received;
	int64_t wait_since;		/* in rndv_wait since (ns) */
	/* XFI_OP_FIN */
	uint64_t fin_cookie;
	int32_t fin_status;
	/* XFI_OP_PING (the stream's epoch is taken when sent), XFI_OP_RESET */
	uint16_t ctrl_epoch;
	/* XFI_OP_ATOMIC, XFI_OP_ATOMIC_RESP: the packet is built at post time
	 * in inline_data (pre_len bytes); the header is filled in when sent */
	uint8_t pre_len;
	void *result;			/* XFI_OP_ATOMIC: where the old values go */
	size_t result_len;
};

/* A rendezvous receive: RDMA reads from the sender into the buffer. */
struct xfi_rndv_rx {
	struct xfi_link link;
	struct xfi_domain *dom;
	void *seg_base[XFI_IOV_LIMIT];
	struct xfi_rx_entry *rx;
	uint32_t src_key;
	uint64_t tag, data, len;
	uint32_t flags;
	struct xfi_rndv rd;
	struct xfi_mrh mrh[XFI_IOV_LIMIT];
	int slot[XFI_IOV_LIMIT];	/* RDMA read channel, -1: not posted */
	int seg_done[XFI_IOV_LIMIT];
	size_t seg_len[XFI_IOV_LIMIT];
	unsigned int nseg;
	int err;
};

/*
 * A send without an operation object (xfi_tx.c, xfi_send_fast): what its
 * completion needs.  Held by its channel until the NI's outcome (NICs
 * whose outcome comes later) or in the endpoint's fast_done list (NICs
 * whose outcome is final at once) until progress writes it.
 */
struct xfi_fast_send {
	void *context;
	uint64_t flags;			/* FI_SEND | FI_MSG/FI_TAGGED, op flags */
	uint32_t len;
	uint32_t stream;		/* peer->tx_stream it belongs to */
};

struct xfi_chan {
	int busy;
	struct xfi_tx_op *op;		/* NULL: a fast send, in 'fast' */
	struct xfi_fast_send fast;
	struct xfi_peer *peer;
	uint32_t seq;
	uint8_t len;
	uint8_t pkt[XFI_PKT_MAX];
};

struct xfi_peer {
	struct xfi_peer *hnext;
	uint32_t key;
	/* transmit */
	uint16_t tx_epoch;		/* of our stream to it; new after a broken stream */
	uint32_t tx_seq;
	int tx_error;			/* a packet to it failed: stream broken */
	unsigned int tx_ops;		/* operations to it not completed yet */
	uint32_t tx_stream;		/* restarts so far */
	unsigned int tx_next_ops;	/* posted after it broke: for the next stream */
	int64_t last_probe_ns;
	/* receive */
	int rx_known;
	uint16_t rx_epoch;
	uint32_t rx_seq;		/* next expected */
	uint8_t reorder_len[XFI_REORDER_WINDOW];	/* 0: empty slot */
	uint8_t reorder[XFI_REORDER_WINDOW][XFI_PKT_MAX];
	struct xfi_rx_msg *rx_cur;
	/* FI_AV_TABLE reverse lookup cache */
	fi_addr_t fi_addr;
	uint64_t av_gen;
};

struct xfi_ep {
	struct fid_ep ep_fid;
	struct xfi_domain *dom;
	/* the flags of the calls that take none (fi_send, fi_recv, fi_write, ...) */
	uint64_t tx_op_flags;		/* FI_COMPLETION, FI_DELIVERY_COMPLETE of tx_attr->op_flags */
	uint64_t rx_op_flags;		/* FI_COMPLETION of rx_attr->op_flags */
	uint64_t rx_multi;		/* FI_MULTI_RECV from rx_attr->op_flags: fi_recv's */
	struct xfi_ep *dom_next;
	struct xfi_av *av;
	struct xfi_cq *tx_cq, *rx_cq;
	int tx_selective, rx_selective;
	struct xfi_cntr *cntr_send, *cntr_recv, *cntr_read, *cntr_write;
	int enabled;
	uint64_t caps;
	struct xfi_nic_ep *nep;		/* send channels and mailbox */
	uint32_t mbox_id;
	uint16_t epoch;
	struct xfi_peer *peers[XFI_PEER_BUCKETS];
	struct xfi_queue txq;		/* xfi_tx_op not fully packetized yet */
	struct xfi_queue tx_wait;	/* xfi_tx_op packetized, waiting for ACKs */
	struct xfi_queue tx_done;	/* xfi_tx_op finished: progress completes them */
	struct xfi_fast_send fast_done[XFI_FAST_DONE_MAX];	/* done at once, not written */
	unsigned int fast_done_count;
	struct xfi_chan chans[XFI_CHANNELS];
	unsigned int chans_busy;	/* channels with a packet in flight */
	struct xfi_queue posted_tagged, posted_msg;	/* xfi_rx_entry */
	struct xfi_queue unexp_tagged, unexp_msg;	/* xfi_rx_msg */
	struct xfi_queue rndv_wait;	/* xfi_tx_op: RTS delivered, waiting for the FIN */
	struct xfi_queue rndv_rx;	/* xfi_rndv_rx: reads in progress */
	struct xfi_queue rma_ops;	/* xfi_rma_op in flight */
	uint64_t next_cookie;
	size_t min_multi_recv;		/* FI_OPT_MIN_MULTI_RECV */
	unsigned int npeers;
	uint64_t rx_dropped;		/* malformed or out-of-window packets */
	uint64_t stream_resets;		/* streams to peers restarted after a failure */
};

/* ---- helpers every part uses ---- */

/* The head of every libfabric object of ours. */
static inline void xfi_fid_init(struct fid *fid, size_t fclass, void *context, struct fi_ops *ops)
{
	fid->fclass = fclass;
	fid->context = context;
	fid->ops = ops;
}

#define XFI_CONTAINER(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define XFI_ITEM(l, type) XFI_CONTAINER(l, type, link)

static inline void xfi_q_push(struct xfi_queue *q, struct xfi_link *l)
{
	l->next = NULL;
	if (q->tail)
		q->tail->next = l;
	else
		q->head = l;
	q->tail = l;
}

/* Unlink l, whose predecessor is prev (NULL: l is the head). */
static inline void xfi_q_unlink(struct xfi_queue *q, struct xfi_link *prev, struct xfi_link *l)
{
	if (prev)
		prev->next = l->next;
	else
		q->head = l->next;
	if (q->tail == l)
		q->tail = prev;
	l->next = NULL;
}

static inline int xfi_q_remove(struct xfi_queue *q, struct xfi_link *l)
{
	struct xfi_link *prev = NULL, *cur;

	for (cur = q->head; cur; prev = cur, cur = cur->next) {
		if (cur == l) {
			xfi_q_unlink(q, prev, cur);
			return 1;
		}
	}
	return 0;
}

static inline size_t xfi_iov_total(const struct iovec *iov, size_t count)
{
	size_t i, t = 0;

	for (i = 0; i < count; i++)
		t += iov[i].iov_len;
	return t;
}

/* any source (matching) */
#define XFI_ANY_SRC UINT32_MAX

static inline struct xfi_ep *xfi_ep_of(struct fid_ep *fid)
{
	return XFI_CONTAINER(fid, struct xfi_ep, ep_fid);
}

/* FI_COMPLETION of an RMA or atomic call that takes no flags: op_flags' */
#define XFI_OP_FLAGS(fid) (xfi_ep_of(fid)->tx_op_flags & FI_COMPLETION)

/*
 * The fi_inject* calls: no completion, whatever the binding says (an op
 * flag of the provider's own, outside the bits libfabric defines; the
 * *msg calls mask user flags, so it never comes from the application).
 * fi_sendmsg / fi_writemsg with FI_INJECT complete as usual.
 */
#define XFI_NO_COMPLETION	(1ULL << 62)
/* A successful send of these flags writes a completion (FI_SELECTIVE_COMPLETION). */
static inline int xfi_tx_wants_completion(const struct xfi_ep *ep, uint64_t flags)
{
	return ep->tx_cq && !(flags & XFI_NO_COMPLETION) &&
	       (!ep->tx_selective || (flags & FI_COMPLETION));
}

/*
 * An operation of these flags (FI_SEND, FI_RECV, FI_RMA | FI_READ, ...)
 * completed, or failed (err): its counter on ep, if one is bound, counts
 * it (read without the lock: xfi_cntr.c).
 */
static inline void xfi_cntr_count(const struct xfi_ep *ep, uint64_t flags, int err)
{
	struct xfi_cntr *c;

	if (flags & (FI_RMA | FI_ATOMIC))
		c = (flags & FI_READ) ? ep->cntr_read : ep->cntr_write;
	else
		c = (flags & FI_RECV) ? ep->cntr_recv : ep->cntr_send;
	if (c)
		__atomic_add_fetch(err ? &c->err : &c->value, 1, __ATOMIC_RELEASE);
}

/* The domain's RDMA page, allocated on first use; NULL without RDMA. */
static inline struct xfi_nic_rdma *xfi_dom_rdma(struct xfi_domain *dom)
{
	int err;

	if (!dom->rdma && !dom->rdma_unavailable) {
		err = xfi_nic_rdma_alloc(dom->dev, &dom->rdma);
		if (err) {
			FI_WARN(&xfi_prov, FI_LOG_DOMAIN, "no RDMA page (%s): messages above "
				"the threshold go eager, rendezvous receives fail\n",
				strerror(-err));
			dom->rdma_unavailable = 1;
		}
	}
	return dom->rdma;
}

/*
 * Registration rights for memory the NI only reads (a send buffer, an RDMA
 * write source) and for memory it writes (a receive buffer, an RDMA read
 * destination).  On-demand registrations (the MR cache) are held to them
 * on every fault; pinned memory is mapped read-write whatever they say
 * (ExaNet: rdma.md 8.2).
 */
#define XFI_MR_NI_READS		XFI_NIC_MR_NI_READS
#define XFI_MR_NI_WRITES	XFI_NIC_MR_NI_WRITES

/*
 * ---- the files, each using only those listed before it ----
 *
 * Nothing calls back up the list: the tables of the objects (at the end)
 * open and drive the parts, xfi_progress.c calls each part in turn, and
 * completions are written by what progress calls (and by posting calls
 * that finish at once), never by a read of a CQ or counter itself.  Below
 * all of them: xfi_prov.c (the provider object and the tunables, above),
 * xfi_proto.c and xfi_atomic_ops.c (own headers), the NIC backend
 * (xfi_nic.h).
 */

/* xfi_prov.c: stubs shared by the object tables */
int xfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int xfi_no_control(struct fid *fid, int command, void *arg);
int xfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		    void *context);
int xfi_no_tostr(const struct fid *fid, char *buf, size_t len);
int xfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
		   void *context);

/* The struct fi_ops of an object whose only own operation is close. */
#define XFI_CLOSE_ONLY_OPS(name, close_fn)					\
	static struct fi_ops name = {						\
		.size = sizeof(struct fi_ops), .close = close_fn,		\
		.bind = xfi_no_bind, .control = xfi_no_control,			\
		.ops_open = xfi_no_ops_open, .tostr = xfi_no_tostr,		\
		.ops_set = xfi_no_ops_set,					\
	}

/* xfi_mr_cache.c: the MR cache */
void xfi_mrc_init(struct xfi_mr_cache *c);
void xfi_mrc_fini(struct xfi_mr_cache *c);
/* Registration of [addr, addr + len) for a rendezvous (access: what a
 * pinned per-message registration would ask for); cached when on-demand
 * registration works.  Release with xfi_mrc_put.  0 or -errno. */
int xfi_mrc_get(struct xfi_domain *dom, void *addr, size_t len, uint32_t access,
		struct xfi_mrh *h);
void xfi_mrc_put(struct xfi_domain *dom, struct xfi_mrh *h);
/* Same, and the registration goes away now (or when its last user puts it):
 * for memory the NI may still be transferring into when the owner leaves. */
void xfi_mrc_put_drop(struct xfi_domain *dom, struct xfi_mrh *h);

/* xfi_mr.c: registrations */
extern struct fi_ops_mr xfi_mr_ops;
/* The domain's registration with key for remote access that holds
 * [addr, addr + len) (lock held); NULL if none. */
struct xfi_mr *xfi_mr_find(struct xfi_domain *dom, uint64_t key, uint64_t addr, size_t len);

/* xfi_av.c: address vectors */
int xfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		void *context);
/* fi_addr -> peer key; -FI_EINVAL for an unknown address. */
int xfi_av_key(const struct xfi_av *av, fi_addr_t addr, uint32_t *key);
/* peer key -> fi_addr (FI_ADDR_NOTAVAIL if not in the AV). */
fi_addr_t xfi_av_addr(const struct xfi_av *av, uint32_t key);

/* xfi_cq_ring.c: the entries of a CQ */
int xfi_cq_ring_init(struct xfi_cq *cq);
void xfi_cq_ring_fini(struct xfi_cq *cq);
/* Size of an entry of format; 0 for a format not supported. */
size_t xfi_cq_entry_size(enum fi_cq_format format);
int xfi_cq_push(struct xfi_cq *cq, const struct xfi_cq_entry *e);
int xfi_cq_push_err(struct xfi_cq *cq, const struct xfi_cq_entry *e, int err, size_t olen);
/* Up to count entries into buf in the CQ's format (and their sources); how many. */
size_t xfi_cq_take(struct xfi_cq *cq, void *buf, size_t count, fi_addr_t *src_addr);
/* The oldest error entry, unlinked (free() it); NULL if none. */
struct xfi_cq_err *xfi_cq_take_err(struct xfi_cq *cq);

/* xfi_peer.c: peers, the stream to each, FIN / PING / RESET */
struct xfi_peer *xfi_peer_get(struct xfi_ep *ep, uint32_t key);
fi_addr_t xfi_peer_addr(struct xfi_ep *ep, struct xfi_peer *p);
void xfi_tx_op_free(struct xfi_tx_op *op);
/* FIN, PING, RESET: not part of the stream to the peer. */
int xfi_op_out_of_sequence(const struct xfi_tx_op *op);
/* Queue an operation to op->peer (set). */
void xfi_tx_enqueue(struct xfi_ep *ep, struct xfi_tx_op *op);
void xfi_tx_report(struct xfi_ep *ep, void *context, uint64_t flags, int err);
void xfi_complete_tx(struct xfi_ep *ep, struct xfi_tx_op *op);
void xfi_peer_tx_op_ended(struct xfi_ep *ep, struct xfi_peer *peer, uint32_t stream);
void xfi_peer_tx_broken(struct xfi_ep *ep, struct xfi_peer *peer, int err);
void xfi_send_fin(struct xfi_ep *ep, uint32_t key, uint64_t cookie, int err);
void xfi_send_ctrl(struct xfi_ep *ep, struct xfi_peer *peer, enum xfi_op_kind kind,
		   uint16_t epoch);

/* xfi_msg.c: matching, messages, receive completions */
/* The first posted receive msg matches (a piece of an FI_MULTI_RECV
 * buffer), unlinked; NULL if none. */
struct xfi_rx_entry *xfi_take_posted(struct xfi_ep *ep, const struct xfi_rx_msg *msg);
/* First unexpected message rx matches; unlinked from its queue if take. */
struct xfi_rx_msg *xfi_find_unexp(struct xfi_ep *ep, const struct xfi_rx_entry *rx, int take);
/* n bytes of src into rx's buffers from offset off; how many fitted. */
size_t xfi_iov_copy_in(const struct xfi_rx_entry *rx, size_t off, const uint8_t *src, size_t n);
uint64_t xfi_rx_cq_flags(const struct xfi_rx_msg *msg);
struct xfi_queue *xfi_unexp_queue(struct xfi_ep *ep, uint32_t start_flags);
void xfi_msg_free(struct xfi_domain *dom, struct xfi_rx_msg *msg);
void xfi_msg_discard(struct xfi_ep *ep, struct xfi_rx_msg *msg);
void xfi_msg_abort(struct xfi_ep *ep, struct xfi_rx_msg *msg);
void xfi_msg_done(struct xfi_ep *ep, struct xfi_rx_msg *msg);
void xfi_msg_bytes(struct xfi_rx_msg *msg, const uint8_t *src, size_t n);
void xfi_complete_rx(struct xfi_ep *ep, struct xfi_rx_entry *rx, const struct xfi_rx_msg *msg);
void xfi_rx_error(struct xfi_ep *ep, struct xfi_rx_entry *rx, uint64_t flags, int err);
void xfi_multi_release(struct xfi_ep *ep, struct xfi_rx_entry *m);
int xfi_multi_fits(const struct xfi_rx_entry *m, uint64_t len);
struct xfi_rx_entry *xfi_multi_piece(struct xfi_ep *ep, struct xfi_rx_entry *m, uint64_t len);

/* xfi_rndv.c: rendezvous receives (RDMA reads) */
/* Read msg (a rendezvous START, freed) into rx. */
void xfi_rndv_start(struct xfi_ep *ep, struct xfi_rx_msg *msg, struct xfi_rx_entry *rx);
void xfi_rndv_progress(struct xfi_ep *ep);

/* xfi_tx.c: channels, replies awaited, posting sends */
void xfi_tx_reap(struct xfi_ep *ep);
void xfi_tx_fill(struct xfi_ep *ep);
void xfi_tx_complete_done(struct xfi_ep *ep);
/* Queue op (peer, key set) and start sending (lock held). */
void xfi_tx_submit(struct xfi_ep *ep, struct xfi_tx_op *op);
/* The operation of kind to peer named cookie that waits for a reply, if
 * any: *done says it waited on rndv_wait only for that reply (it is
 * unlinked; the caller completes it), else its ACK completes it later. */
struct xfi_tx_op *xfi_take_reply_op(struct xfi_ep *ep, const struct xfi_peer *peer,
				    enum xfi_op_kind kind, uint64_t cookie, int *done);
/* Its reply came with status (0 or a positive FI_E* code): complete it if done. */
void xfi_reply_done(struct xfi_ep *ep, struct xfi_tx_op *op, int32_t status, int done);
void xfi_probe_peers(struct xfi_ep *ep);
int xfi_tx_rma_data(struct xfi_ep *ep, uint32_t key, uint64_t data, uint64_t flags, void *context);
ssize_t xfi_post_send(struct xfi_ep *ep, const struct iovec *iov, size_t count, fi_addr_t dest,
		      uint64_t tag, uint64_t data, uint64_t flags, void *context);

/* xfi_atomic.c: FI_ATOMIC, initiator and target */
extern struct fi_ops_atomic xfi_atomic_ops;
int xfi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
		     struct fi_atomic_attr *attr, uint64_t flags);
/* Target: apply the request in pkt and queue the answer.  Initiator: the answer. */
void xfi_atomic_serve(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt, size_t len);
void xfi_atomic_answer(struct xfi_ep *ep, struct xfi_peer *peer, const uint8_t *pkt, size_t len);

/* xfi_rma.c: FI_RMA */
extern struct fi_ops_rma xfi_rma_ops;
void xfi_rma_progress(struct xfi_ep *ep);
void xfi_rma_free_all(struct xfi_ep *ep);

/* xfi_rx.c: the receive path of every packet */
/* Take what waits in the endpoint's mailbox (a budget of it). */
void xfi_rx_poll(struct xfi_ep *ep);

/* xfi_progress.c */
void xfi_ep_progress(struct xfi_ep *ep);
/* Progress every endpoint of the domain (lock held). */
void xfi_domain_progress(struct xfi_domain *dom);

/* xfi_recv.c: posting receives */
ssize_t xfi_post_recv(struct xfi_ep *ep, const struct iovec *iov, size_t count, fi_addr_t src,
		      uint64_t tag, uint64_t ignore, uint64_t flags, void *context);

/* xfi_cq.c, xfi_cntr.c: completion queues and counters */
int xfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		void *context);
int xfi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntr, void *context);
/* fi_ep_bind of a counter (lock held); 0 or a negative FI_E* code. */
int xfi_cntr_bind(struct xfi_ep *ep, struct xfi_cntr *c, uint64_t flags);
void xfi_cntr_unbind_all(struct xfi_ep *ep);

/* xfi_ep.c: endpoints */
int xfi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		void *context);

/* xfi_info.c: fi_getinfo */
int xfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info);

/* xfi_domain.c (xfi_fabric.c, last, declares nothing) */
int xfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **dom, void *context);

#endif
