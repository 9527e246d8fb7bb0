/*
 * ExaNet NI: RDMA engine (send unit with 16 pages x 32 write + 32 read
 * channels, receive unit, read responder).
 *
 * ABI: uapi/exanet_rdma.h; semantics: Documentation/exanet/rdma.md.
 *
 * Every DMA of the engine goes through the PCI function of the rank's DMA
 * context (exanet-ctx), with the user VA as DMA address, so the platform
 * IOMMU translates it.  All packets of the engine (blocks, ACK/NACK, read
 * requests) travel over the fabric bulk path (shared-memory rings); packets
 * to our own node go through a local queue.
 *
 * Threads: everything runs under the BQL.  Block transmission runs in a
 * bottom half (main loop), reception in the fabric receive thread; the
 * vCPU only stages descriptors and schedules the bottom half.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qemu/queue.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "sysemu/dma.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet-int.h"
#include "trace.h"

#define RDMA_RETX_CAP_US   200000u
#define RDMA_RETX_MIN_US   100u
#define RDMA_VA_LIMIT      (1ull << EXANET_RDMA_VA_BITS)
#define RDMA_BLOCK         EXANET_RDMA_BLOCK_SIZE

/* Record types on the bulk path (the fabric's opaque 'type'). */
enum {
    RD_BLOCK = 16,
    RD_ACK = 17,        /* block ACK / NACK (code) */
    RD_RREQ = 18,       /* read request to the responder */
    RD_RNACK = 19,      /* read refused / failed at the responder */
};

#define RD_NACK_RETRY 0xff  /* ACK code: corrupt block, send it again */
#define RD_NACK_FAULT 0xfe  /* ACK code: on-demand fault, wait for a RETRY */
#define RDMA_NO_FAULT     0xffffffffu   /* fault id: not recorded */
#define RDMA_HELD_MAX     1024          /* target-side held blocks, all ranks */
/* Timer periods a transfer may wait for software to resolve its faults. */
#define RDMA_FAULT_WAITS_MAX 600

/*
 * Headers, host layout (both ends of a ring live on the same host; the
 * fabric record checksum covers them).
 */
typedef struct RdBlkHdr {
    uint64_t dst_va;        /* destination of this block */
    uint64_t total_len;
    uint64_t notify_va;
    uint64_t tag;
    uint32_t origin_node;   /* node of the initiating channel */
    uint32_t seq;
    uint32_t epoch;         /* of the initiator */
    uint32_t block;
    uint32_t nblocks;
    uint16_t pdid;
    uint8_t op;
    uint8_t page;
    uint8_t chan;
    uint8_t dst_rank;
    uint8_t src_rank;       /* initiator's rank (for the notification) */
    uint8_t ncells;
    uint32_t xmit;          /* sender's transmission number, echoed by the ACK */
    uint32_t pad;
} RdBlkHdr;

typedef struct RdAckHdr {
    uint32_t origin_node;
    uint32_t seq;
    uint32_t epoch;
    uint32_t block;
    uint8_t page;
    uint8_t chan;
    uint8_t op;
    uint8_t code;           /* 0 ACK, RD_NACK_RETRY, or an EXANET_RDMA_E_* */
    uint32_t xmit;          /* of the block transmission answered */
} RdAckHdr;

typedef struct RdReqHdr {
    uint64_t src_va;        /* at the responder */
    uint64_t dst_va;        /* at the initiator */
    uint64_t len;
    uint64_t notify_va;
    uint64_t tag;
    uint32_t seq;
    uint32_t epoch;
    uint16_t pdid;
    uint8_t page;
    uint8_t chan;
    uint8_t src_rank;       /* responder's rank to read from */
    uint8_t dst_rank;       /* initiator's rank */
    uint8_t pad[2];
} RdReqHdr;

typedef struct RdNackHdr {
    uint32_t seq;
    uint32_t epoch;
    uint8_t page;
    uint8_t chan;
    uint8_t code;
    uint8_t pad;
} RdNackHdr;

enum { BS_UNSENT = 0, BS_INFLIGHT, BS_ACKED, BS_RESEND, BS_HELD };

typedef struct RdmaTx RdmaTx;
typedef void RdmaTxDone(RdmaTx *tx, uint8_t err);

/* A sending transfer: write channel or read responder. */
struct RdmaTx {
    ExanetRdma *r;
    bool active;
    bool want_pump;
    bool held;              /* source read faulted: wait for FQ_RESUME */
    uint32_t held_id;       /* its fault id */
    uint8_t rank;           /* local context for source reads */
    uint8_t retries;
    uint16_t fault_waits;   /* timer periods spent waiting for faults */
    bool faulted;           /* a fault held it since the last progress */
    uint32_t dst_node;
    RdBlkHdr h;             /* template; block, dst_va set per block */
    uint64_t src_va;
    uint32_t base;          /* lowest unacknowledged block */
    uint32_t next;          /* next block never sent */
    uint32_t acked;
    uint32_t nresend;
    uint64_t acked_bytes;
    uint8_t *bstate;
    uint32_t *bxmit;        /* transmission number of each block's last send */
    uint32_t xmit;
    QEMUTimer *timer;
    RdmaTxDone *done;
    QTAILQ_ENTRY(RdmaTx) link;
};

typedef struct RdmaChan {
    ExanetRdma *r;
    uint8_t page;
    uint8_t chan;
    uint8_t state;
    uint8_t err;
    uint32_t seq;
    uint64_t done_bytes;
    uint8_t desc[EXANET_RDMA_CHAN_STRIDE];
    /* latched at the trigger */
    uint64_t local_va, remote_va, len, notify_va, tag, lcomp_va;
    uint32_t rnode;
    uint8_t rrank;
    uint8_t rank;           /* the page's rank at the trigger */
    bool lcomp_pending;     /* completion record faulted: write on resume */
    uint32_t lcomp_id;
    /* read channels */
    uint8_t rretries;
    bool rfaulted;          /* data held by a fault here since the last progress */
    uint16_t rfault_waits;
    uint64_t last_bytes;
    QEMUTimer *rtimer;
    RdmaTx tx;              /* write channels */
} RdmaChan;

typedef struct RdmaPage {
    uint32_t pdid;
    uint32_t rank;
    bool enabled;
    RdmaChan ch[EXANET_RDMA_CHANS];
} RdmaPage;

/* Receive-side state of the last transfer per (sender, page, channel). */
typedef struct RdmaRx {
    uint32_t epoch;
    uint32_t seq;
    uint32_t nblocks;
    uint32_t received;
    uint8_t err;            /* transfer failed here: NACK every block */
    bool complete;
    bool fault_wait;        /* fault_id of a block still in the queue */
    uint32_t fault_id;
    unsigned long *map;
} RdmaRx;

/* Responder state per (initiator, page, channel); kept after the end. */
typedef struct RdmaResp {
    uint32_t epoch;
    uint32_t seq;
    uint8_t err;
    bool finished;
    RdmaTx tx;
} RdmaResp;

/* Target side: a block answered RD_NACK_FAULT, to RETRY on FQ_RESUME. */
typedef struct RdmaHeld {
    uint32_t id;            /* fault id, RDMA_NO_FAULT if not recorded */
    uint32_t dst;           /* the block's sender */
    uint8_t rank;
    RdAckHdr a;             /* the answer (code set when released) */
} RdmaHeld;

typedef struct RdmaLoop {
    QSIMPLEQ_ENTRY(RdmaLoop) link;
    uint8_t type;
    size_t hlen, dlen;
    uint8_t buf[];
} RdmaLoop;

struct ExanetRdma {
    PCIDevice *ni;
    uint32_t node_id;
    uint32_t num_nodes;
    const uint32_t *retx_max;
    FabricQemu *fabric;
    uint32_t epoch;
    uint32_t retx_us;
    uint32_t window;

    PCIDevice *ctx[EXANET_RDMA_NUM_RANKS];
    uint32_t ctx_pdid[EXANET_RDMA_NUM_RANKS];
    bool ctx_en[EXANET_RDMA_NUM_RANKS];
    uint32_t ctx_irq[EXANET_RDMA_NUM_RANKS];    /* EXANET_CTX_IRQ */
    bool ctx_odp[EXANET_RDMA_NUM_RANKS];        /* EXANET_CTX_EN_ODP */

    /* Fault queue (on-demand paging) */
    uint64_t fq_base;
    uint32_t fq_size, fq_head, fq_tail, fq_irq;
    RdmaHeld held[RDMA_HELD_MAX];
    uint32_t nheld;

    RdmaPage page[EXANET_RDMA_PAGES];
    GHashTable *rx;         /* key: rx_key() -> RdmaRx */
    GHashTable *resp;       /* key: rx_key() -> RdmaResp */
    QTAILQ_HEAD(, RdmaTx) active;
    QSIMPLEQ_HEAD(, RdmaLoop) loop;
    QEMUBH *bh;
    MemoryRegion bar;
    RdmaLoop *loop_rsv;
    uint32_t loop_rsv_dst;
    uint64_t cnt[EXANET_RDMA_NUM_COUNTERS];
};

static void rdma_tx_pump(RdmaTx *tx);
static bool rdma_fault_consumed(ExanetRdma *r, uint32_t id);

/* An event for rank (record written, transfer completed): IRQ if armed. */
static void rdma_rank_event(ExanetRdma *r, unsigned rank)
{
    if (rank < EXANET_RDMA_NUM_RANKS) {
        exanet_irq_rank_event(r->ni, rank, &r->ctx_irq[rank]);
    }
}

static gpointer rx_key(uint32_t node, unsigned page, unsigned chan)
{
    return GUINT_TO_POINTER((node << 10) | (page << 6) | chan);
}

/*
 * Run rdma_bh soon: in the fabric receive thread (SCHED_FIFO when
 * permitted) if there is one, else in a main-loop bottom half.
 */
static void rdma_kick(ExanetRdma *r)
{
    if (r->fabric) {
        fabric_qemu_kick(r->fabric);
    } else {
        qemu_bh_schedule(r->bh);
    }
}

/* ------------------------------------------------------------------ */
/* DMA through a rank's context */

/* The context function through which rank's DMA to [va, va + len) goes. */
static MemTxResult rdma_ctx(ExanetRdma *r, unsigned rank, uint64_t va,
                            uint64_t len, PCIDevice **ctx)
{
    if (rank >= EXANET_RDMA_NUM_RANKS || !r->ctx[rank] || !r->ctx_en[rank]) {
        return MEMTX_ERROR;
    }
    if (va >= RDMA_VA_LIMIT || len > RDMA_VA_LIMIT - va) {
        return MEMTX_DECODE_ERROR;
    }
    *ctx = r->ctx[rank];
    return MEMTX_OK;
}

static MemTxResult rdma_dma(ExanetRdma *r, unsigned rank, uint64_t va,
                            void *buf, uint64_t len, DMADirection dir)
{
    PCIDevice *ctx;
    MemTxResult res = rdma_ctx(r, rank, va, len, &ctx);

    return res != MEMTX_OK ? res :
           fabric_nic_dma_rw(ctx, &exanet_dma_depth, va, buf, len, dir);
}

/* The flags word software polls and clears: one store (fabric-nic.h). */
static MemTxResult rdma_store_flags(ExanetRdma *r, unsigned rank, uint64_t va,
                                    uint32_t flags)
{
    PCIDevice *ctx;
    MemTxResult res = rdma_ctx(r, rank, va, 4, &ctx);

    return res != MEMTX_OK ? res :
           fabric_nic_dma_store(ctx, &exanet_dma_depth, va, flags, 4);
}

/* Notification / completion record: body first, then flags. */
static bool rdma_write_notif(ExanetRdma *r, unsigned rank, uint64_t va,
                             uint64_t tag, uint64_t len, uint32_t node,
                             uint8_t nrank, uint8_t op, uint8_t err,
                             uint8_t page, uint8_t chan, uint32_t flags)
{
    struct exanet_rdma_notif n;

    memset(&n, 0, sizeof(n));
    n.tag = cpu_to_le64(tag);
    n.length = cpu_to_le64(len);
    n.node = cpu_to_le32(node);
    n.rank = nrank;
    n.op = op;
    n.error = err;
    n.page = page;
    n.chan = cpu_to_le16(chan);
    trace_exanet_rdma_notify(r->node_id, rank, va, tag, op, err, flags);
    if (rdma_dma(r, rank, va, &n, offsetof(struct exanet_rdma_notif, flags),
                 DMA_DIRECTION_FROM_DEVICE) != MEMTX_OK ||
        rdma_store_flags(r, rank, va + offsetof(struct exanet_rdma_notif, flags),
                         flags | EXANET_RDMA_N_VALID) != MEMTX_OK) {
        r->cnt[EXANET_RCNT_RX_DMA_ERRORS]++;
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* On-demand paging: fault queue */

/*
 * A DMA of rank to [va, va + len) failed (ahead: blocks of the transfer
 * after this access, the driver's prefetch hint).  Contexts not in on-demand mode
 * (or disabled): false, the caller fails the transfer as before.  Else the
 * fault is written to the fault queue (unless it is full: *id =
 * RDMA_NO_FAULT, the block is retried later anyway), the fault interrupt
 * fires, and the caller holds the access until FQ_RESUME / FQ_FAIL.
 */
static bool rdma_fault(ExanetRdma *r, unsigned rank, uint64_t va, uint64_t len,
                       bool write, uint8_t kind, const RdBlkHdr *h,
                       uint32_t ahead, uint32_t *id)
{
    struct exanet_rdma_fault f;

    *id = RDMA_NO_FAULT;
    trace_exanet_rdma_fault(r->node_id, rank, va, len, write, kind,
                            r->fq_tail);
    if (rank >= EXANET_RDMA_NUM_RANKS || !r->ctx[rank] || !r->ctx_en[rank] ||
        !r->ctx_odp[rank] || va >= RDMA_VA_LIMIT || len > RDMA_VA_LIMIT - va) {
        return false;
    }
    r->cnt[EXANET_RCNT_FAULT_HOLDS]++;
    if (!r->fq_size || r->fq_tail - r->fq_head >= r->fq_size) {
        r->cnt[EXANET_RCNT_FAULT_QFULL]++;
        return true;
    }
    memset(&f, 0, sizeof(f));
    f.va = cpu_to_le64(va);
    f.len = cpu_to_le32(len);
    f.id = cpu_to_le32(r->fq_tail);
    f.rank = rank;
    f.access = write ? EXANET_FAULT_WRITE : EXANET_FAULT_READ;
    f.kind = kind;
    f.op = h->op;
    f.node = cpu_to_le32(h->origin_node);
    f.page = h->page;
    f.chan = h->chan;
    f.ahead = cpu_to_le16(MIN(ahead, UINT16_MAX));
    f.seq = cpu_to_le32(h->seq);
    if (fabric_nic_dma_rw(r->ni, &exanet_dma_depth, r->fq_base +
                          (uint64_t)(r->fq_tail & (r->fq_size - 1)) * sizeof(f),
                          &f, sizeof(f), DMA_DIRECTION_FROM_DEVICE) != MEMTX_OK) {
        r->cnt[EXANET_RCNT_FAULT_QFULL]++;
        return true;
    }
    *id = r->fq_tail++;
    r->cnt[EXANET_RCNT_FAULTS]++;
    exanet_irq_rank_event(r->ni, EXANET_IRQ_RANK_FAULT, &r->fq_irq);
    return true;
}

/* ------------------------------------------------------------------ */
/* Transport: bulk rings, or the local queue for our own node */

static void *rdma_reserve(ExanetRdma *r, uint32_t dst, size_t hlen,
                          size_t dlen, int *err)
{
    if (dst == r->node_id) {
        RdmaLoop *l = g_try_malloc(sizeof(*l) + hlen + dlen);

        if (!l) {
            *err = -ENOMEM;
            return NULL;
        }
        l->hlen = hlen;
        l->dlen = dlen;
        r->loop_rsv = l;
        *err = 0;
        return l->buf;
    }
    if (!r->fabric) {
        *err = -EHOSTUNREACH;
        return NULL;
    }
    return fabric_bulk_reserve(fabric_qemu_fabric(r->fabric), dst, hlen,
                               dlen, err);
}

static void rdma_commit(ExanetRdma *r, uint32_t dst, uint8_t type)
{
    trace_exanet_rdma_send(r->node_id, dst, type);
    if (dst == r->node_id) {
        RdmaLoop *l = r->loop_rsv;

        r->loop_rsv = NULL;
        l->type = type;
        QSIMPLEQ_INSERT_TAIL(&r->loop, l, link);
        rdma_kick(r);
        return;
    }
    fabric_bulk_commit(fabric_qemu_fabric(r->fabric), type);
}

static void rdma_cancel(ExanetRdma *r, uint32_t dst)
{
    if (dst == r->node_id) {
        g_free(r->loop_rsv);
        r->loop_rsv = NULL;
    } else {
        fabric_bulk_cancel(fabric_qemu_fabric(r->fabric));
    }
}

/* Small control packet; lost if the ring is full (retransmission covers). */
static void rdma_send_small(ExanetRdma *r, uint32_t dst, uint8_t type,
                            const void *hdr, size_t hlen)
{
    int err;
    void *p = rdma_reserve(r, dst, hlen, 0, &err);

    if (p) {
        memcpy(p, hdr, hlen);
        rdma_commit(r, dst, type);
    }
}

static void rdma_send_ack(ExanetRdma *r, uint32_t dst, const RdBlkHdr *h,
                          uint8_t code)
{
    RdAckHdr a = {
        .origin_node = h->origin_node, .seq = h->seq, .epoch = h->epoch,
        .block = h->block, .page = h->page, .chan = h->chan, .op = h->op,
        .code = code, .xmit = h->xmit,
    };

    rdma_send_small(r, dst, RD_ACK, &a, sizeof(a));
}

/*
 * x's last fault (of one of its blocks) is still in the queue: a block of
 * x arriving now would most likely fault on the same unmapped range, which
 * the driver maps in one go (it prefetches what follows the access).  The
 * block is held on that fault without a DMA attempt: one fault per range
 * rather than one per block.  The id is checked against the queue window,
 * so an id from before a queue reset never holds anything.
 */
static bool rdma_rx_waits(ExanetRdma *r, const RdmaRx *x, unsigned rank)
{
    return x && x->fault_wait && r->ctx_odp[rank] && r->ctx_en[rank] &&
           r->fq_tail - x->fault_id <= r->fq_size &&
           !rdma_fault_consumed(r, x->fault_id);
}

/*
 * Receive side, the write of a block (or of its notification) to
 * [va, va + len) through rank failed, or would (rdma_rx_waits()): in
 * on-demand mode, report the fault (unless x's pending one covers it),
 * remember the block and answer "fault, wait"; FQ_HEAD past the fault or
 * FQ_RESUME answers RETRY.  False: not in on-demand mode.
 */
static bool rdma_rx_hold(ExanetRdma *r, uint32_t src, const RdBlkHdr *h,
                         RdmaRx *x, uint64_t va, uint64_t len, uint8_t kind)
{
    RdmaHeld *hd = NULL;
    uint32_t id;

    for (uint32_t i = 0; i < r->nheld; i++) {
        if (r->held[i].dst == src && r->held[i].a.origin_node == h->origin_node &&
            r->held[i].a.page == h->page && r->held[i].a.chan == h->chan &&
            r->held[i].a.seq == h->seq && r->held[i].a.epoch == h->epoch &&
            r->held[i].a.block == h->block) {
            hd = &r->held[i];
            break;
        }
    }
    /* Sent again while its fault waits in the queue: no new entry. */
    if (hd && hd->id != RDMA_NO_FAULT && !rdma_fault_consumed(r, hd->id) &&
        r->ctx_odp[h->dst_rank] && r->ctx_en[h->dst_rank]) {
        hd->a.xmit = h->xmit;
        goto answer;
    }
    if (kind == EXANET_FAULT_K_DST && rdma_rx_waits(r, x, h->dst_rank)) {
        id = x->fault_id;
        r->cnt[EXANET_RCNT_FAULT_HOLDS]++;
        trace_exanet_rdma_fault_coalesced(r->node_id, h->dst_rank, va, id);
    } else {
        if (!rdma_fault(r, h->dst_rank, va, len, true, kind, h,
                        kind == EXANET_FAULT_K_DST ?
                        h->nblocks - h->block - 1 : 0, &id)) {
            return false;
        }
        if (kind == EXANET_FAULT_K_DST && x && id != RDMA_NO_FAULT) {
            x->fault_wait = true;
            x->fault_id = id;
        }
    }
    if (hd) {
        hd->id = id;            /* the same block faulted again */
        hd->a.xmit = h->xmit;
        goto answer;
    }
    if (r->nheld < RDMA_HELD_MAX) {
        hd = &r->held[r->nheld++];
        hd->id = id;
        hd->dst = src;
        hd->rank = h->dst_rank;
        hd->a = (RdAckHdr) {
            .origin_node = h->origin_node, .seq = h->seq, .epoch = h->epoch,
            .block = h->block, .page = h->page, .chan = h->chan, .op = h->op,
            .code = RD_NACK_RETRY, .xmit = h->xmit,
        };
    }
    /* Not remembered (too many held): the sender's timer resends it. */
answer:
    rdma_send_ack(r, src, h, RD_NACK_FAULT);
    return true;
}

/* ------------------------------------------------------------------ */
/* Sending transfers */

static int64_t rdma_retx_ns(ExanetRdma *r, unsigned retries)
{
    return fabric_nic_backoff(r->retx_us, retries, RDMA_RETX_CAP_US) *
           SCALE_US;
}

static void rdma_tx_arm(RdmaTx *tx)
{
    timer_mod(tx->timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
              rdma_retx_ns(tx->r, tx->retries + MIN(tx->fault_waits, 8)));
}

/* Stop a transfer (no callback). */
static void rdma_tx_stop(RdmaTx *tx)
{
    if (tx->active) {
        QTAILQ_REMOVE(&tx->r->active, tx, link);
        tx->active = false;
    }
    tx->held = false;
    if (tx->timer) {
        timer_del(tx->timer);
    }
    g_free(tx->bstate);
    tx->bstate = NULL;
    g_free(tx->bxmit);
    tx->bxmit = NULL;
}

static void rdma_tx_finish(RdmaTx *tx, uint8_t err)
{
    rdma_tx_stop(tx);
    tx->done(tx, err);
}

static void rdma_tx_timer(void *opaque)
{
    RdmaTx *tx = opaque;
    ExanetRdma *r = tx->r;

    bool waiting = tx->held || tx->faulted;

    if (!tx->active) {
        return;
    }
    for (uint32_t b = tx->base; !waiting && b < tx->next; b++) {
        waiting = tx->bstate[b] == BS_HELD;
    }
    /*
     * Waiting for software to resolve faults (here or at the target) is
     * not a network failure: it has its own, longer, bound.
     */
    if (waiting ? tx->fault_waits >= RDMA_FAULT_WAITS_MAX
                : tx->retries >= *r->retx_max) {
        trace_exanet_rdma_timeout(r->node_id, tx->dst_node, tx->h.seq);
        r->cnt[EXANET_RCNT_TX_TIMEOUTS]++;
        rdma_tx_finish(tx, EXANET_RDMA_E_TIMEOUT);
        return;
    }
    if (waiting) {
        tx->fault_waits++;
    } else {
        tx->retries++;
    }
    /* A held source read whose fault software has not seen: still held. */
    if (tx->held && (tx->held_id == RDMA_NO_FAULT ||
                     rdma_fault_consumed(r, tx->held_id))) {
        tx->held = false;
    }
    for (uint32_t b = tx->base; b < tx->next; b++) {
        /* Held at the target: its RETRY normally comes; seldom probe. */
        if (tx->bstate[b] == BS_INFLIGHT ||
            (tx->bstate[b] == BS_HELD && tx->fault_waits % 5 == 0)) {
            tx->bstate[b] = BS_RESEND;
            tx->nresend++;
        }
    }
    trace_exanet_rdma_retransmit(r->node_id, tx->dst_node, tx->h.seq,
                                 tx->retries, tx->nresend);
    rdma_tx_arm(tx);
    tx->want_pump = true;
    rdma_tx_pump(tx);
}

/* Start (or restart) a transfer; the bottom half sends the blocks. */
static void rdma_tx_start(ExanetRdma *r, RdmaTx *tx)
{
    tx->r = r;
    tx->base = tx->next = tx->acked = tx->nresend = 0;
    tx->acked_bytes = 0;
    tx->retries = 0;
    g_free(tx->bstate);
    tx->bstate = g_malloc0(tx->h.nblocks);
    g_free(tx->bxmit);
    tx->bxmit = g_new0(uint32_t, tx->h.nblocks);
    tx->xmit = 0;
    tx->held = false;
    tx->fault_waits = 0;
    tx->faulted = false;
    if (!tx->timer) {
        tx->timer = timer_new_ns(QEMU_CLOCK_REALTIME, rdma_tx_timer, tx);
    }
    tx->active = true;
    tx->want_pump = true;
    QTAILQ_INSERT_TAIL(&r->active, tx, link);
    rdma_tx_arm(tx);
    rdma_kick(r);
}

/* Send block b; false when the ring is full (try again later). */
static bool rdma_tx_block(RdmaTx *tx, uint32_t b, bool *failed)
{
    ExanetRdma *r = tx->r;
    uint64_t off = (uint64_t)b * RDMA_BLOCK;
    uint64_t blen = MIN((uint64_t)RDMA_BLOCK, tx->h.total_len - off);
    RdBlkHdr *h;
    uint8_t *p;
    int err;

    p = rdma_reserve(r, tx->dst_node, sizeof(RdBlkHdr), blen, &err);
    if (!p) {
        if (err == -EAGAIN) {
            r->cnt[EXANET_RCNT_RING_FULL]++;
        }
        return false;       /* the timer retries (and times out) */
    }
    /* Source straight into the ring slot, through the local context. */
    if (rdma_dma(r, tx->rank, tx->src_va + off, p + sizeof(RdBlkHdr), blen,
                 DMA_DIRECTION_TO_DEVICE) != MEMTX_OK) {
        rdma_cancel(r, tx->dst_node);
        /* On-demand: hold the transfer here until FQ_RESUME / FQ_FAIL. */
        tx->held = rdma_fault(r, tx->rank, tx->src_va + off, blen, false,
                              EXANET_FAULT_K_SRC, &tx->h,
                              tx->h.nblocks - b - 1, &tx->held_id);
        tx->faulted |= tx->held;
        *failed = !tx->held;
        return false;
    }
    h = (RdBlkHdr *)p;
    *h = tx->h;
    h->block = b;
    h->dst_va = tx->h.dst_va + off;
    h->ncells = DIV_ROUND_UP(blen, EXANET_RDMA_CELL_SIZE);
    h->xmit = ++tx->xmit;
    tx->bxmit[b] = h->xmit;
    rdma_commit(r, tx->dst_node, RD_BLOCK);
    return true;
}

static void rdma_tx_pump(RdmaTx *tx)
{
    ExanetRdma *r = tx->r;
    bool failed = false;

    tx->want_pump = false;
    if (!tx->active || tx->held) {
        return;
    }
    /* First the blocks to retransmit, oldest first. */
    for (uint32_t b = tx->base; tx->nresend && b < tx->next; b++) {
        if (tx->bstate[b] != BS_RESEND) {
            continue;
        }
        if (!rdma_tx_block(tx, b, &failed)) {
            goto stalled;
        }
        tx->bstate[b] = BS_INFLIGHT;
        tx->nresend--;
        r->cnt[EXANET_RCNT_TX_RETRANSMITS]++;
    }
    while (tx->next < tx->h.nblocks && tx->next - tx->base < r->window) {
        uint32_t b = tx->next;

        if (!rdma_tx_block(tx, b, &failed)) {
            goto stalled;
        }
        tx->bstate[b] = BS_INFLIGHT;
        tx->next++;
        r->cnt[EXANET_RCNT_TX_BLOCKS]++;
        r->cnt[EXANET_RCNT_TX_BYTES] +=
            MIN((uint64_t)RDMA_BLOCK, tx->h.total_len - (uint64_t)b * RDMA_BLOCK);
    }
    return;
stalled:
    if (failed) {
        rdma_tx_finish(tx, EXANET_RDMA_E_LOCAL_DMA);
        return;
    }
    /* Ring full: the next ACK from anybody (or the timer) resumes us. */
    tx->want_pump = !tx->held;
}

/* Resume transfers that stalled on a full ring. */
static void rdma_pump_stalled(ExanetRdma *r)
{
    RdmaTx *tx, *next;

    QTAILQ_FOREACH_SAFE(tx, &r->active, link, next) {
        if (tx->want_pump) {
            rdma_tx_pump(tx);
        }
    }
}

static void rdma_tx_ack(RdmaTx *tx, const RdAckHdr *a)
{
    ExanetRdma *r = tx->r;
    uint32_t b = a->block;

    if (!tx->active || b >= tx->h.nblocks || b >= tx->next) {
        return;
    }
    if (a->code == RD_NACK_FAULT) {
        /* Held at the target until its fault is resolved: no resend now. */
        tx->faulted = true;
        if (tx->bstate[b] == BS_INFLIGHT && tx->bxmit[b] == a->xmit) {
            tx->bstate[b] = BS_HELD;
        }
        return;
    }
    if (a->code == RD_NACK_RETRY) {
        r->cnt[EXANET_RCNT_TX_NACK_RETRY]++;
        if (tx->bstate[b] == BS_INFLIGHT || tx->bstate[b] == BS_HELD) {
            tx->bstate[b] = BS_RESEND;
            tx->nresend++;
            rdma_tx_pump(tx);
        }
        return;
    }
    if (a->code != 0) {
        uint8_t e = a->code;

        if (e != EXANET_RDMA_E_PDID && e != EXANET_RDMA_E_REMOTE_CTX &&
            e != EXANET_RDMA_E_REMOTE_DMA && e != EXANET_RDMA_E_NOTIFY_DMA &&
            e != EXANET_RDMA_E_BAD_DESC && e != EXANET_RDMA_E_ABORTED &&
            e != EXANET_RDMA_E_LOCAL_DMA && e != EXANET_RDMA_E_REMOTE_FAULT &&
            e != EXANET_RDMA_E_LOCAL_FAULT) {
            e = EXANET_RDMA_E_REMOTE_DMA;
        }
        rdma_tx_finish(tx, e);
        return;
    }
    /*
     * Fast retransmission: the bulk path delivers in order and answers in
     * order, so a block transmitted before the one answered here and still
     * unanswered was lost (or its answer was): send it again now.
     */
    for (uint32_t k = tx->base; k < tx->next; k++) {
        if (tx->bstate[k] == BS_INFLIGHT && tx->bxmit[k] < a->xmit) {
            tx->bstate[k] = BS_RESEND;
            tx->nresend++;
        }
    }
    if (tx->bstate[b] == BS_ACKED) {
        return;
    }
    if (tx->bstate[b] == BS_RESEND) {
        tx->nresend--;
    }
    tx->bstate[b] = BS_ACKED;
    tx->acked++;
    tx->acked_bytes += MIN((uint64_t)RDMA_BLOCK,
                           tx->h.total_len - (uint64_t)b * RDMA_BLOCK);
    tx->retries = 0;
    tx->fault_waits = 0;
    tx->faulted = false;
    while (tx->base < tx->next && tx->bstate[tx->base] == BS_ACKED) {
        tx->base++;
    }
    if (tx->acked == tx->h.nblocks) {
        rdma_tx_finish(tx, 0);
        return;
    }
    rdma_tx_arm(tx);
    /*
     * Refill the window right here (receive thread, BQL held): a hop
     * through the main loop costs a thread wake-up per window.  Safe: block
     * transmission never delivers synchronously (own node: local queue).
     */
    rdma_tx_pump(tx);
}

/* ------------------------------------------------------------------ */
/* Channels */

/* Local completion record; in on-demand mode a fault defers it. */
static bool rdma_chan_lcomp(RdmaChan *ch)
{
    ExanetRdma *r = ch->r;
    bool rd = ch->chan >= EXANET_RDMA_WCHANS;
    RdBlkHdr h = {
        .op = rd ? EXANET_RDMA_OP_READ : EXANET_RDMA_OP_WRITE,
        .origin_node = r->node_id, .page = ch->page, .chan = ch->chan,
        .seq = ch->seq,
    };

    ch->lcomp_pending = false;
    if (rdma_write_notif(r, ch->rank, ch->lcomp_va, ch->tag,
                         ch->err ? ch->done_bytes : ch->len, ch->rnode,
                         ch->rrank, h.op, ch->err, ch->page, ch->chan,
                         EXANET_RDMA_N_COMPLETION)) {
        return true;
    }
    ch->lcomp_pending = rdma_fault(r, ch->rank, ch->lcomp_va,
                                   sizeof(struct exanet_rdma_notif), true,
                                   EXANET_FAULT_K_LCOMP, &h, 0,
                                   &ch->lcomp_id);
    return false;
}

static void rdma_chan_complete(RdmaChan *ch, uint8_t err)
{
    ExanetRdma *r = ch->r;

    if (ch->rtimer) {
        timer_del(ch->rtimer);
    }
    trace_exanet_rdma_complete(r->node_id, ch->page, ch->chan, err);
    ch->state = err ? EXANET_RDMA_ERROR : EXANET_RDMA_DONE;
    ch->err = err;
    fabric_park_wake(FABRIC_WAKE_DEVICE);
    r->cnt[err ? EXANET_RCNT_TX_ERRORS : EXANET_RCNT_TX_DONE]++;
    if (!err) {
        ch->done_bytes = ch->len;
    }
    if (ch->lcomp_va && r->page[ch->page].enabled) {
        rdma_chan_lcomp(ch);
    }
    /* After the completion record (if any) is in memory. */
    rdma_rank_event(r, ch->rank);
}

static void rdma_wchan_done(RdmaTx *tx, uint8_t err)
{
    RdmaChan *ch = container_of(tx, RdmaChan, tx);

    ch->done_bytes = tx->acked_bytes;
    rdma_chan_complete(ch, err);
}

static void rdma_chan_abort(RdmaChan *ch)
{
    rdma_tx_stop(&ch->tx);
    ch->lcomp_pending = false;
    if (ch->rtimer) {
        timer_del(ch->rtimer);
    }
    if (ch->state == EXANET_RDMA_ONGOING) {
        ch->state = EXANET_RDMA_ERROR;
        ch->err = EXANET_RDMA_E_ABORTED;
        ch->r->cnt[EXANET_RCNT_TX_ERRORS]++;
    }
}

static void rdma_send_rreq(RdmaChan *ch)
{
    ExanetRdma *r = ch->r;
    RdReqHdr q = {
        .src_va = ch->remote_va, .dst_va = ch->local_va, .len = ch->len,
        .notify_va = ch->notify_va, .tag = ch->tag, .seq = ch->seq,
        .epoch = r->epoch, .pdid = r->page[ch->page].pdid, .page = ch->page,
        .chan = ch->chan, .src_rank = ch->rrank, .dst_rank = ch->rank,
    };

    rdma_send_small(r, ch->rnode, RD_RREQ, &q, sizeof(q));
}

/* Read channel: re-request until data flows; time out without progress. */
static void rdma_rchan_timer(void *opaque)
{
    RdmaChan *ch = opaque;
    ExanetRdma *r = ch->r;

    if (ch->state != EXANET_RDMA_ONGOING) {
        return;
    }
    if (ch->done_bytes != ch->last_bytes) {
        ch->last_bytes = ch->done_bytes;
        ch->rretries = 0;
        ch->rfaulted = false;
        ch->rfault_waits = 0;
    } else if (ch->rfaulted ? ch->rfault_waits >= RDMA_FAULT_WAITS_MAX
                            : ch->rretries >= *r->retx_max) {
        r->cnt[EXANET_RCNT_TX_TIMEOUTS]++;
        rdma_chan_complete(ch, EXANET_RDMA_E_TIMEOUT);
        return;
    } else if (ch->rfaulted) {
        ch->rfault_waits++;     /* waiting for our OS, not for the network */
    } else {
        ch->rretries++;
        if (!ch->done_bytes) {
            rdma_send_rreq(ch);     /* the request may have been lost */
        }
    }
    timer_mod(ch->rtimer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
              rdma_retx_ns(r, ch->rretries) * 2);
}

static void rdma_trigger(ExanetRdma *r, unsigned p, unsigned c, uint64_t ctrl)
{
    RdmaPage *pg = &r->page[p];
    RdmaChan *ch = &pg->ch[c];
    bool rd = c >= EXANET_RDMA_WCHANS;
    uint64_t remote;

    if (ch->state == EXANET_RDMA_ONGOING) {
        r->cnt[EXANET_RCNT_DESC_BUSY]++;
        return;
    }
    ch->local_va = ldq_le_p(ch->desc + EXANET_RDMA_D_LOCAL_VA);
    ch->remote_va = ldq_le_p(ch->desc + EXANET_RDMA_D_REMOTE_VA);
    remote = ldq_le_p(ch->desc + EXANET_RDMA_D_REMOTE);
    ch->len = ldq_le_p(ch->desc + EXANET_RDMA_D_LENGTH);
    ch->notify_va = ldq_le_p(ch->desc + EXANET_RDMA_D_NOTIFY_VA);
    ch->tag = ldq_le_p(ch->desc + EXANET_RDMA_D_TAG);
    ch->lcomp_va = ldq_le_p(ch->desc + EXANET_RDMA_D_LCOMP_VA);
    ch->rnode = EXANET_RDMA_REMOTE_NODE(remote);
    ch->rrank = EXANET_RDMA_REMOTE_RANK(remote);
    ch->rank = pg->rank;
    ch->done_bytes = 0;
    ch->last_bytes = 0;
    ch->rretries = 0;
    ch->rfaulted = false;
    ch->rfault_waits = 0;
    ch->err = 0;
    ch->lcomp_pending = false;

    if (ctrl != 0 || ch->len == 0 || ch->len > EXANET_RDMA_MAX_LEN ||
        ch->local_va >= RDMA_VA_LIMIT || ch->len > RDMA_VA_LIMIT - ch->local_va ||
        ch->remote_va >= RDMA_VA_LIMIT ||
        ch->len > RDMA_VA_LIMIT - ch->remote_va ||
        (ch->notify_va & 7) || ch->notify_va >= RDMA_VA_LIMIT ||
        (ch->lcomp_va & 7) || ch->lcomp_va >= RDMA_VA_LIMIT ||
        (remote & ~(EXANET_RDMA_REMOTE_NODE_MASK |
                    EXANET_RDMA_REMOTE_RANK_MASK << EXANET_RDMA_REMOTE_RANK_SHIFT))) {
        EXANET_GUEST_ERR(exanet_err_rdma_desc, "bad RDMA descriptor on page %u "
                         "chan %u", p, c);
        ch->state = EXANET_RDMA_ERROR;
        ch->err = EXANET_RDMA_E_BAD_DESC;
        r->cnt[EXANET_RCNT_TX_ERRORS]++;
        return;
    }
    if (ch->rnode >= r->num_nodes) {
        ch->state = EXANET_RDMA_ERROR;
        ch->err = EXANET_RDMA_E_NO_ROUTE;
        r->cnt[EXANET_RCNT_TX_ERRORS]++;
        return;
    }
    if (pg->pdid == EXANET_PDID_NONE) {
        ch->state = EXANET_RDMA_ERROR;
        ch->err = EXANET_RDMA_E_PDID;
        r->cnt[EXANET_RCNT_TX_ERRORS]++;
        return;
    }
    ch->seq++;
    ch->state = EXANET_RDMA_ONGOING;
    trace_exanet_rdma_trigger(r->node_id, p, c, ch->rnode, ch->rrank, ch->len,
                              ch->seq);
    if (rd) {
        r->cnt[EXANET_RCNT_TX_READS]++;
        rdma_send_rreq(ch);
        timer_mod(ch->rtimer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                  rdma_retx_ns(r, 0) * 2);
        return;
    }
    r->cnt[EXANET_RCNT_TX_WRITES]++;
    ch->tx.rank = ch->rank;
    ch->tx.dst_node = ch->rnode;
    ch->tx.src_va = ch->local_va;
    memset(&ch->tx.h, 0, sizeof(ch->tx.h));
    ch->tx.h.dst_va = ch->remote_va;
    ch->tx.h.total_len = ch->len;
    ch->tx.h.notify_va = ch->notify_va;
    ch->tx.h.tag = ch->tag;
    ch->tx.h.origin_node = r->node_id;
    ch->tx.h.seq = ch->seq;
    ch->tx.h.epoch = r->epoch;
    ch->tx.h.nblocks = DIV_ROUND_UP(ch->len, RDMA_BLOCK);
    ch->tx.h.pdid = pg->pdid;
    ch->tx.h.op = EXANET_RDMA_OP_WRITE;
    ch->tx.h.page = p;
    ch->tx.h.chan = c;
    ch->tx.h.dst_rank = ch->rrank;
    ch->tx.h.src_rank = ch->rank;
    ch->tx.done = rdma_wchan_done;
    rdma_tx_start(r, &ch->tx);
}

/* ------------------------------------------------------------------ */
/* Receive unit */

/* The initiator's own read channel for a read-response block / RNACK. */
static RdmaChan *rdma_my_rchan(ExanetRdma *r, unsigned page, unsigned chan,
                               uint32_t seq, uint32_t epoch)
{
    RdmaChan *ch;

    if (page >= EXANET_RDMA_PAGES || chan < EXANET_RDMA_WCHANS ||
        chan >= EXANET_RDMA_CHANS) {
        return NULL;
    }
    ch = &r->page[page].ch[chan];
    if (ch->state != EXANET_RDMA_ONGOING || ch->seq != seq ||
        epoch != r->epoch) {
        return NULL;
    }
    return ch;
}

static void rdma_rx_block(ExanetRdma *r, uint32_t src, const RdBlkHdr *h,
                          const uint8_t *data, size_t dlen, bool ok)
{
    uint64_t off, blen;
    RdmaChan *rch = NULL;
    RdmaRx *x;
    gpointer key;
    uint8_t err;
    bool rd;

    /* Malformed: cannot be trusted enough to answer. */
    if (h->nblocks == 0 || h->total_len == 0 ||
        h->total_len > EXANET_RDMA_MAX_LEN ||
        h->nblocks != DIV_ROUND_UP(h->total_len, RDMA_BLOCK) ||
        h->block >= h->nblocks || h->page >= EXANET_RDMA_PAGES ||
        h->chan >= EXANET_RDMA_CHANS || h->dst_rank >= EXANET_RDMA_NUM_RANKS ||
        (h->op != EXANET_RDMA_OP_WRITE && h->op != EXANET_RDMA_OP_READ) ||
        (h->op == EXANET_RDMA_OP_WRITE) != (h->chan < EXANET_RDMA_WCHANS) ||
        (h->op == EXANET_RDMA_OP_WRITE ? h->origin_node != src
                                       : h->origin_node != r->node_id) ||
        (h->notify_va & 7) || h->notify_va >= RDMA_VA_LIMIT) {
        r->cnt[EXANET_RCNT_RX_BAD]++;
        return;
    }
    off = (uint64_t)h->block * RDMA_BLOCK;
    blen = MIN((uint64_t)RDMA_BLOCK, h->total_len - off);
    if (dlen != blen || h->dst_va >= RDMA_VA_LIMIT ||
        blen > RDMA_VA_LIMIT - h->dst_va) {
        r->cnt[EXANET_RCNT_RX_BAD]++;
        return;
    }
    rd = h->op == EXANET_RDMA_OP_READ;
    trace_exanet_rdma_rx_block(r->node_id, src, h->page, h->chan, h->seq,
                               h->block, h->op, ok);
    if (!ok) {
        r->cnt[EXANET_RCNT_RX_CORRUPT]++;
        rdma_send_ack(r, src, h, RD_NACK_RETRY);
        return;
    }
    if (rd) {
        rch = rdma_my_rchan(r, h->page, h->chan, h->seq, h->epoch);
    }

    key = rx_key(src, h->page, h->chan);
    x = g_hash_table_lookup(r->rx, key);
    if (x && x->epoch == h->epoch && (int32_t)(h->seq - x->seq) < 0) {
        return;     /* older transfer: the sender gave up on it */
    }
    if (!x || x->epoch != h->epoch || x->seq != h->seq) {
        if (!x) {
            x = g_new0(RdmaRx, 1);
            g_hash_table_insert(r->rx, key, x);
        }
        g_free(x->map);
        x->map = bitmap_new(h->nblocks);
        x->epoch = h->epoch;
        x->seq = h->seq;
        x->nblocks = h->nblocks;
        x->received = 0;
        x->err = 0;
        x->complete = false;
        x->fault_wait = false;
    }
    if (x->nblocks != h->nblocks) {
        r->cnt[EXANET_RCNT_RX_BAD]++;
        return;
    }
    if (x->complete || test_bit(h->block, x->map)) {
        /* Exactly once: written already, our ACK was lost. */
        r->cnt[EXANET_RCNT_RX_DUPLICATES]++;
        rdma_send_ack(r, src, h, x->err);
        return;
    }
    if (x->err) {
        rdma_send_ack(r, src, h, x->err);
        return;
    }
    /* Protection: the target rank's context and its PDID. */
    if (!r->ctx[h->dst_rank] || !r->ctx_en[h->dst_rank]) {
        r->cnt[EXANET_RCNT_RX_NACK_CTX]++;
        err = EXANET_RDMA_E_REMOTE_CTX;
        goto fail;
    }
    if (h->pdid == EXANET_PDID_NONE || h->pdid != r->ctx_pdid[h->dst_rank]) {
        r->cnt[EXANET_RCNT_RX_NACK_PDID]++;
        err = EXANET_RDMA_E_PDID;
        goto fail;
    }
    if (rd && (!rch || h->dst_rank != rch->rank || h->total_len != rch->len ||
               h->dst_va != rch->local_va + off || src != rch->rnode)) {
        /* Our read channel moved on (or a bogus answer): write nothing. */
        rdma_send_ack(r, src, h, EXANET_RDMA_E_ABORTED);
        return;
    }
    /* The cells, straight from the ring into the destination. */
    if (rdma_rx_waits(r, x, h->dst_rank) ||
        rdma_dma(r, h->dst_rank, h->dst_va, (void *)data, blen,
                 DMA_DIRECTION_FROM_DEVICE) != MEMTX_OK) {
        if (rdma_rx_hold(r, src, h, x, h->dst_va, blen, EXANET_FAULT_K_DST)) {
            if (rch) {
                rch->rfaulted = true;
            }
            return;     /* on-demand: replayed once the fault is consumed */
        }
        r->cnt[EXANET_RCNT_RX_DMA_ERRORS]++;
        EXANET_GUEST_ERR(exanet_err_rdma_dma, "RDMA write to rank %u VA 0x%"
                         PRIx64 " failed", h->dst_rank, h->dst_va);
        err = rd ? EXANET_RDMA_E_LOCAL_DMA : EXANET_RDMA_E_REMOTE_DMA;
        goto fail;
    }
    set_bit(h->block, x->map);
    x->received++;
    r->cnt[EXANET_RCNT_RX_BLOCKS]++;
    r->cnt[EXANET_RCNT_RX_BYTES] += blen;
    if (rch) {
        rch->done_bytes += blen;
    }
    if (x->received == x->nblocks) {
        if (h->notify_va) {
            if (!rdma_write_notif(r, h->dst_rank, h->notify_va, h->tag,
                                  h->total_len,
                                  rd ? (rch ? rch->rnode : src) : src,
                                  rd ? (rch ? rch->rrank : 0) : h->src_rank,
                                  h->op, 0, h->page, h->chan, 0)) {
                if (rdma_rx_hold(r, src, h, x, h->notify_va,
                                 sizeof(struct exanet_rdma_notif),
                                 EXANET_FAULT_K_NOTIFY)) {
                    /* The replay of this block writes it again. */
                    clear_bit(h->block, x->map);
                    x->received--;
                    if (rch) {
                        rch->done_bytes -= blen;
                        rch->rfaulted = true;
                    }
                    return;
                }
                x->complete = true;
                g_free(x->map);
                x->map = NULL;
                x->err = EXANET_RDMA_E_NOTIFY_DMA;
                rdma_send_ack(r, src, h, x->err);
                if (rch) {
                    rdma_chan_complete(rch, x->err);
                }
                return;
            }
            r->cnt[EXANET_RCNT_NOTIFICATIONS]++;
            rdma_rank_event(r, h->dst_rank);
        }
        x->complete = true;
        g_free(x->map);     /* 'complete' answers every later duplicate */
        x->map = NULL;
        if (rch) {
            rdma_chan_complete(rch, 0);
        }
    }
    rdma_send_ack(r, src, h, 0);
    return;

fail:
    x->err = err;
    rdma_send_ack(r, src, h, err);
    if (rch) {
        /* A read's data lands in the initiator: any failure is local. */
        rdma_chan_complete(rch, EXANET_RDMA_E_LOCAL_DMA);
    }
}

static void rdma_rx_ack(ExanetRdma *r, uint32_t src, const RdAckHdr *a)
{
    if (a->page >= EXANET_RDMA_PAGES || a->chan >= EXANET_RDMA_CHANS) {
        r->cnt[EXANET_RCNT_RX_BAD]++;
        return;
    }
    trace_exanet_rdma_ack(r->node_id, src, a->page, a->chan, a->seq, a->block,
                          a->code);
    if (a->op == EXANET_RDMA_OP_WRITE) {
        RdmaChan *ch = &r->page[a->page].ch[a->chan];

        if (a->chan >= EXANET_RDMA_WCHANS || a->origin_node != r->node_id ||
            ch->state != EXANET_RDMA_ONGOING || ch->seq != a->seq ||
            a->epoch != r->epoch || ch->tx.dst_node != src) {
            return;     /* stale */
        }
        rdma_tx_ack(&ch->tx, a);
    } else if (a->op == EXANET_RDMA_OP_READ) {
        RdmaResp *rs = g_hash_table_lookup(r->resp,
                                           rx_key(src, a->page, a->chan));

        if (!rs || rs->finished || rs->seq != a->seq || rs->epoch != a->epoch ||
            a->origin_node != src) {
            return;
        }
        rdma_tx_ack(&rs->tx, a);
    } else {
        r->cnt[EXANET_RCNT_RX_BAD]++;
    }
}

static void rdma_send_rnack(ExanetRdma *r, uint32_t dst, uint8_t page,
                            uint8_t chan, uint32_t seq, uint32_t epoch,
                            uint8_t code)
{
    RdNackHdr n = {
        .seq = seq, .epoch = epoch, .page = page, .chan = chan, .code = code,
    };

    rdma_send_small(r, dst, RD_RNACK, &n, sizeof(n));
}

static void rdma_resp_done(RdmaTx *tx, uint8_t err)
{
    RdmaResp *rs = container_of(tx, RdmaResp, tx);

    rs->finished = true;
    if (err == EXANET_RDMA_E_LOCAL_DMA) {
        err = EXANET_RDMA_E_REMOTE_DMA;     /* source fault, seen remotely */
    } else if (err == EXANET_RDMA_E_LOCAL_FAULT) {
        err = EXANET_RDMA_E_REMOTE_FAULT;
    }
    rs->err = err;
    if (err && err != EXANET_RDMA_E_TIMEOUT) {
        rdma_send_rnack(tx->r, tx->dst_node, tx->h.page, tx->h.chan,
                        tx->h.seq, tx->h.epoch, err);
    }
}

static void rdma_resp_free(gpointer p)
{
    RdmaResp *rs = p;

    rdma_tx_stop(&rs->tx);
    if (rs->tx.timer) {
        timer_free(rs->tx.timer);
    }
    g_free(rs);
}

/* Read request: the responder answers with an RDMA write. */
static void rdma_rx_rreq(ExanetRdma *r, uint32_t src, const RdReqHdr *q)
{
    gpointer key;
    RdmaResp *rs;
    uint8_t err = 0;

    if (q->page >= EXANET_RDMA_PAGES || q->chan < EXANET_RDMA_WCHANS ||
        q->chan >= EXANET_RDMA_CHANS || q->src_rank >= EXANET_RDMA_NUM_RANKS ||
        q->dst_rank >= EXANET_RDMA_NUM_RANKS) {
        r->cnt[EXANET_RCNT_RX_BAD]++;
        return;
    }
    key = rx_key(src, q->page, q->chan);
    rs = g_hash_table_lookup(r->resp, key);
    if (rs && rs->epoch == q->epoch && (int32_t)(q->seq - rs->seq) <= 0) {
        /* Duplicate request (or an old one): answer a failure again. */
        if (rs->seq == q->seq && rs->finished && rs->err &&
            rs->err != EXANET_RDMA_E_TIMEOUT) {
            rdma_send_rnack(r, src, q->page, q->chan, q->seq, q->epoch,
                            rs->err);
        }
        return;
    }
    if (!rs) {
        rs = g_new0(RdmaResp, 1);
        g_hash_table_insert(r->resp, key, rs);
    } else {
        rdma_tx_stop(&rs->tx);
    }
    rs->epoch = q->epoch;
    rs->seq = q->seq;
    rs->finished = false;
    rs->err = 0;

    if (q->len == 0 || q->len > EXANET_RDMA_MAX_LEN ||
        q->src_va >= RDMA_VA_LIMIT || q->len > RDMA_VA_LIMIT - q->src_va ||
        q->dst_va >= RDMA_VA_LIMIT || q->len > RDMA_VA_LIMIT - q->dst_va ||
        (q->notify_va & 7)) {
        err = EXANET_RDMA_E_BAD_DESC;
    } else if (!r->ctx[q->src_rank] || !r->ctx_en[q->src_rank]) {
        r->cnt[EXANET_RCNT_RX_NACK_CTX]++;
        err = EXANET_RDMA_E_REMOTE_CTX;
    } else if (q->pdid == EXANET_PDID_NONE ||
               q->pdid != r->ctx_pdid[q->src_rank]) {
        r->cnt[EXANET_RCNT_RX_NACK_PDID]++;
        err = EXANET_RDMA_E_PDID;
    }
    if (err) {
        rs->finished = true;
        rs->err = err;
        rdma_send_rnack(r, src, q->page, q->chan, q->seq, q->epoch, err);
        return;
    }
    r->cnt[EXANET_RCNT_READS_SERVED]++;
    rs->tx.rank = q->src_rank;
    rs->tx.dst_node = src;
    rs->tx.src_va = q->src_va;
    memset(&rs->tx.h, 0, sizeof(rs->tx.h));
    rs->tx.h.dst_va = q->dst_va;
    rs->tx.h.total_len = q->len;
    rs->tx.h.notify_va = q->notify_va;
    rs->tx.h.tag = q->tag;
    rs->tx.h.origin_node = src;
    rs->tx.h.seq = q->seq;
    rs->tx.h.epoch = q->epoch;
    rs->tx.h.nblocks = DIV_ROUND_UP(q->len, RDMA_BLOCK);
    rs->tx.h.pdid = q->pdid;
    rs->tx.h.op = EXANET_RDMA_OP_READ;
    rs->tx.h.page = q->page;
    rs->tx.h.chan = q->chan;
    rs->tx.h.dst_rank = q->dst_rank;
    rs->tx.h.src_rank = q->src_rank;
    rs->tx.done = rdma_resp_done;
    rdma_tx_start(r, &rs->tx);
}

static void rdma_rx_rnack(ExanetRdma *r, uint32_t src, const RdNackHdr *n)
{
    RdmaChan *ch = rdma_my_rchan(r, n->page, n->chan, n->seq, n->epoch);
    uint8_t e = n->code;

    trace_exanet_rdma_rnack(r->node_id, src, n->page, n->chan, n->seq, e);
    if (!ch || ch->rnode != src) {
        return;
    }
    if (e == 0 || e > EXANET_RDMA_E_LOCAL_FAULT) {
        e = EXANET_RDMA_E_REMOTE_DMA;
    }
    rdma_chan_complete(ch, e);
}

void exanet_rdma_bulk_rx(void *opaque, uint32_t src, uint8_t type,
                         const void *hdr, size_t hlen,
                         const void *data, size_t dlen, bool data_ok)
{
    ExanetRdma *r = opaque;

    if (src >= r->num_nodes) {
        r->cnt[EXANET_RCNT_RX_BAD]++;
        return;
    }
    switch (type) {
    case RD_BLOCK:
        if (hlen == sizeof(RdBlkHdr)) {
            RdBlkHdr h;

            memcpy(&h, hdr, sizeof(h));
            rdma_rx_block(r, src, &h, data, dlen, data_ok);
            return;
        }
        break;
    case RD_ACK:
        if (hlen == sizeof(RdAckHdr) && dlen == 0) {
            RdAckHdr a;

            memcpy(&a, hdr, sizeof(a));
            rdma_rx_ack(r, src, &a);
            rdma_pump_stalled(r);
            return;
        }
        break;
    case RD_RREQ:
        if (hlen == sizeof(RdReqHdr) && dlen == 0) {
            RdReqHdr q;

            memcpy(&q, hdr, sizeof(q));
            rdma_rx_rreq(r, src, &q);
            return;
        }
        break;
    case RD_RNACK:
        if (hlen == sizeof(RdNackHdr) && dlen == 0) {
            RdNackHdr n;

            memcpy(&n, hdr, sizeof(n));
            rdma_rx_rnack(r, src, &n);
            return;
        }
        break;
    }
    r->cnt[EXANET_RCNT_RX_BAD]++;
}

/* Bottom half: local deliveries, then block transmission. */
void exanet_rdma_kick_work(void *opaque)
{
    ExanetRdma *r = opaque;
    int budget = 256;

    while (!QSIMPLEQ_EMPTY(&r->loop) && budget-- > 0) {
        RdmaLoop *l = QSIMPLEQ_FIRST(&r->loop);

        QSIMPLEQ_REMOVE_HEAD(&r->loop, link);
        exanet_rdma_bulk_rx(r, r->node_id, l->type, l->buf, l->hlen,
                            l->buf + l->hlen, l->dlen, true);
        g_free(l);
    }
    rdma_pump_stalled(r);
    if (!QSIMPLEQ_EMPTY(&r->loop)) {
        rdma_kick(r);
    }
}

/* ------------------------------------------------------------------ */
/* On-demand paging: resume / fail (FQ_RESUME, FQ_FAIL, context disable) */

static void rdma_held_drop(ExanetRdma *r, uint32_t i)
{
    r->held[i] = r->held[--r->nheld];
}

/*
 * Software consumed fault id (FQ_HEAD moved past it): resolved or failed.
 * A fault that could not be recorded (queue full) is retried once the
 * queue is half empty again.
 */
static bool rdma_fault_consumed(ExanetRdma *r, uint32_t id)
{
    if (id == RDMA_NO_FAULT) {
        return r->fq_tail - r->fq_head <= r->fq_size / 2;
    }
    return (int32_t)(id - r->fq_head) < 0;
}

/*
 * Replay what is held for the ranks in mask (vCPU thread, BQL): all of it
 * (FQ_RESUME, context disabled), or only what waited for a consumed fault
 * (FQ_HEAD advanced).
 */
static void rdma_fault_resume(ExanetRdma *r, uint32_t mask, bool consumed)
{
    RdmaTx *tx;

    trace_exanet_rdma_fault_resume(r->node_id, mask, consumed, r->fq_head);
    mask &= (1u << EXANET_RDMA_NUM_RANKS) - 1;
    for (uint32_t i = 0; i < r->nheld;) {
        RdmaHeld *hd = &r->held[i];

        if (!(mask & (1u << hd->rank)) ||
            (consumed && !rdma_fault_consumed(r, hd->id))) {
            i++;
            continue;
        }
        rdma_send_small(r, hd->dst, RD_ACK, &hd->a, sizeof(hd->a));
        r->cnt[EXANET_RCNT_FAULT_REPLAYS]++;
        rdma_held_drop(r, i);
    }
    QTAILQ_FOREACH(tx, &r->active, link) {
        if (tx->held && (mask & (1u << tx->rank)) &&
            (!consumed || rdma_fault_consumed(r, tx->held_id))) {
            tx->held = false;
            tx->want_pump = true;
            r->cnt[EXANET_RCNT_FAULT_REPLAYS]++;
        }
    }
    for (unsigned p = 0; p < EXANET_RDMA_PAGES; p++) {
        for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
            RdmaChan *ch = &r->page[p].ch[c];

            if (ch->lcomp_pending && (mask & (1u << ch->rank)) &&
                r->page[p].enabled &&
                (!consumed || rdma_fault_consumed(r, ch->lcomp_id))) {
                r->cnt[EXANET_RCNT_FAULT_REPLAYS]++;
                if (rdma_chan_lcomp(ch)) {
                    rdma_rank_event(r, ch->rank);
                }
            }
        }
    }
    rdma_kick(r);
}

/* Software refused fault id: the transfer held on it ends in error. */
static void rdma_fault_fail(ExanetRdma *r, uint32_t id)
{
    RdmaTx *tx, *next;

    if (id == RDMA_NO_FAULT) {
        return;
    }
    trace_exanet_rdma_fault_fail(r->node_id, id);
    for (uint32_t i = 0; i < r->nheld; i++) {
        RdmaHeld *hd = &r->held[i];
        RdAckHdr a = hd->a;
        uint32_t dst = hd->dst;
        RdmaRx *x;

        if (hd->id != id) {
            continue;
        }
        rdma_held_drop(r, i);
        r->cnt[EXANET_RCNT_FAULT_FAILS]++;
        x = g_hash_table_lookup(r->rx, rx_key(dst, a.page, a.chan));
        if (x && x->epoch == a.epoch && x->seq == a.seq && !x->complete) {
            x->err = a.op == EXANET_RDMA_OP_READ ? EXANET_RDMA_E_LOCAL_FAULT
                                                 : EXANET_RDMA_E_REMOTE_FAULT;
        }
        a.code = a.op == EXANET_RDMA_OP_READ ? EXANET_RDMA_E_LOCAL_FAULT
                                             : EXANET_RDMA_E_REMOTE_FAULT;
        rdma_send_small(r, dst, RD_ACK, &a, sizeof(a));
        if (a.op == EXANET_RDMA_OP_READ) {
            RdmaChan *ch = rdma_my_rchan(r, a.page, a.chan, a.seq, a.epoch);

            if (ch && ch->rnode == dst) {
                rdma_chan_complete(ch, EXANET_RDMA_E_LOCAL_FAULT);
            }
        }
        return;
    }
    QTAILQ_FOREACH_SAFE(tx, &r->active, link, next) {
        if (tx->held && tx->held_id == id) {
            r->cnt[EXANET_RCNT_FAULT_FAILS]++;
            rdma_tx_finish(tx, EXANET_RDMA_E_LOCAL_FAULT);
            return;
        }
    }
    for (unsigned p = 0; p < EXANET_RDMA_PAGES; p++) {
        for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
            RdmaChan *ch = &r->page[p].ch[c];

            if (ch->lcomp_pending && ch->lcomp_id == id) {
                ch->lcomp_pending = false;
                r->cnt[EXANET_RCNT_FAULT_FAILS]++;
                return;
            }
        }
    }
}

/* Fault queue interrupt armed while entries wait: fire at once. */
static void rdma_fq_arm(ExanetRdma *r, uint32_t val)
{
    if (exanet_irq_arm(r->ni, &r->fq_irq, val, "fault queue", 0) &&
        r->fq_size && r->fq_head != r->fq_tail) {
        exanet_irq_rank_event(r->ni, EXANET_IRQ_RANK_FAULT, &r->fq_irq);
    }
}

/* ------------------------------------------------------------------ */
/* Registers */

bool exanet_rdma_ctrl_owns(hwaddr off)
{
    return off >= 0x3000 && off < 0x4000;
}

static void rdma_page_disable(ExanetRdma *r, RdmaPage *pg)
{
    pg->enabled = false;
    for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
        rdma_chan_abort(&pg->ch[c]);
    }
}

uint32_t exanet_rdma_ctrl_read(ExanetRdma *r, hwaddr off)
{
    if (off >= EXANET_REG_CTX_BASE(0) &&
        off < EXANET_REG_CTX_BASE(EXANET_RDMA_NUM_RANKS)) {
        unsigned k = (off - EXANET_REG_CTX_BASE(0)) / 0x10;
        uint32_t st = 0;

        switch (off & 0xf) {
        case EXANET_CTX_PDID:
            return r->ctx_pdid[k];
        case EXANET_CTX_ENABLE:
            return r->ctx_en[k] | (r->ctx_odp[k] ? EXANET_CTX_EN_ODP : 0);
        case EXANET_CTX_IRQ:
            return r->ctx_irq[k];
        case EXANET_CTX_STATUS:
            if (r->ctx[k]) {
                st |= EXANET_CTX_ST_PRESENT;
                if (pci_get_word(r->ctx[k]->config + PCI_COMMAND) &
                    PCI_COMMAND_MASTER) {
                    st |= EXANET_CTX_ST_BUSMASTER;
                }
            }
            return st;
        }
        return 0;
    }
    if (off >= EXANET_REG_RPAGE_BASE(0) &&
        off < EXANET_REG_RPAGE_BASE(EXANET_RDMA_PAGES)) {
        RdmaPage *pg = &r->page[(off - EXANET_REG_RPAGE_BASE(0)) / 0x10];
        uint32_t busy = 0;

        switch (off & 0xf) {
        case EXANET_RPAGE_PDID:
            return pg->pdid;
        case EXANET_RPAGE_RANK:
            return pg->rank;
        case EXANET_RPAGE_ENABLE:
            return pg->enabled;
        case EXANET_RPAGE_BUSY:
            for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
                busy += pg->ch[c].state == EXANET_RDMA_ONGOING;
            }
            return busy;
        }
        return 0;
    }
    if (off >= EXANET_REG_RDMA_COUNTER(0) &&
        off < EXANET_REG_RDMA_COUNTER(EXANET_RDMA_NUM_COUNTERS)) {
        uint64_t v = r->cnt[(off - EXANET_REG_RDMA_COUNTER(0)) / 8];

        return (off & 4) ? v >> 32 : (uint32_t)v;
    }
    switch (off) {
    case EXANET_REG_RDMA_CAPS:
        return EXANET_RDMA_PAGES | EXANET_RDMA_WCHANS << 8 |
               EXANET_RDMA_RCHANS << 16 | EXANET_RDMA_NUM_RANKS << 24;
    case EXANET_REG_RDMA_RETX_US:
        return r->retx_us;
    case EXANET_REG_RDMA_WINDOW:
        return r->window;
    case EXANET_REG_RDMA_FQ_BASE_LO:
        return (uint32_t)r->fq_base;
    case EXANET_REG_RDMA_FQ_BASE_HI:
        return r->fq_base >> 32;
    case EXANET_REG_RDMA_FQ_SIZE:
        return r->fq_size;
    case EXANET_REG_RDMA_FQ_HEAD:
        return r->fq_head;
    case EXANET_REG_RDMA_FQ_TAIL:
        return r->fq_tail;
    case EXANET_REG_RDMA_FQ_IRQ:
        return r->fq_irq;
    }
    return 0;
}

void exanet_rdma_ctrl_write(ExanetRdma *r, hwaddr off, uint32_t val)
{
    if (off >= EXANET_REG_CTX_BASE(0) &&
        off < EXANET_REG_CTX_BASE(EXANET_RDMA_NUM_RANKS)) {
        unsigned k = (off - EXANET_REG_CTX_BASE(0)) / 0x10;

        switch (off & 0xf) {
        case EXANET_CTX_PDID:
            r->ctx_pdid[k] = val & EXANET_PDID_MAX;
            return;
        case EXANET_CTX_ENABLE:
            /* Synchronous: no DMA through the context after this returns. */
            r->ctx_en[k] = val & EXANET_CTX_EN_ON;
            r->ctx_odp[k] = r->ctx_en[k] && (val & EXANET_CTX_EN_ODP);
            r->ctx_irq[k] = 0;
            if (!r->ctx_odp[k]) {
                /* Held blocks replay now and fail the old way. */
                rdma_fault_resume(r, 1u << k, false);
            }
            return;
        case EXANET_CTX_IRQ:
            exanet_irq_arm(r->ni, &r->ctx_irq[k], val, "rank", k);
            return;
        }
    } else if (off >= EXANET_REG_RPAGE_BASE(0) &&
               off < EXANET_REG_RPAGE_BASE(EXANET_RDMA_PAGES)) {
        RdmaPage *pg = &r->page[(off - EXANET_REG_RPAGE_BASE(0)) / 0x10];

        switch (off & 0xf) {
        case EXANET_RPAGE_PDID:
            pg->pdid = val & EXANET_PDID_MAX;
            return;
        case EXANET_RPAGE_RANK:
            pg->rank = val % EXANET_RDMA_NUM_RANKS;
            return;
        case EXANET_RPAGE_ENABLE:
            if (val & 1) {
                rdma_page_disable(r, pg);
                for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
                    pg->ch[c].state = EXANET_RDMA_IDLE;
                    pg->ch[c].err = 0;
                    pg->ch[c].done_bytes = 0;
                    memset(pg->ch[c].desc, 0, sizeof(pg->ch[c].desc));
                }
                pg->enabled = true;
            } else if (pg->enabled) {
                rdma_page_disable(r, pg);
            }
            return;
        }
    } else {
        switch (off) {
        case EXANET_REG_RDMA_RETX_US:
            if (val) {
                r->retx_us = MIN(MAX(val, RDMA_RETX_MIN_US), RDMA_RETX_CAP_US);
            }
            return;
        case EXANET_REG_RDMA_WINDOW:
            if (val) {
                r->window = MIN(val, EXANET_RDMA_MAX_WINDOW);
            }
            return;
        case EXANET_REG_RDMA_FQ_BASE_LO:
            r->fq_base = deposit64(r->fq_base, 0, 32, val);
            return;
        case EXANET_REG_RDMA_FQ_BASE_HI:
            r->fq_base = deposit64(r->fq_base, 32, 32, val);
            return;
        case EXANET_REG_RDMA_FQ_SIZE:
            if (val && (!is_power_of_2(val) || val < EXANET_RDMA_FQ_MIN ||
                        val > EXANET_RDMA_FQ_MAX)) {
                EXANET_GUEST_ERR(exanet_err_rdma_fq_size,
                                 "bad fault queue size %u", val);
                val = 0;
            }
            r->fq_size = val;
            r->fq_head = r->fq_tail = 0;
            return;
        case EXANET_REG_RDMA_FQ_HEAD:
            /* Never past TAIL: a bogus value cannot fake free room. */
            if (val - r->fq_head <= r->fq_tail - r->fq_head) {
                r->fq_head = val;
                /* Faults consumed: replay what waited for them. */
                rdma_fault_resume(r, ~0u, true);
            }
            return;
        case EXANET_REG_RDMA_FQ_IRQ:
            rdma_fq_arm(r, val);
            return;
        case EXANET_REG_RDMA_FQ_RESUME:
            rdma_fault_resume(r, val, false);
            return;
        case EXANET_REG_RDMA_FQ_FAIL:
            rdma_fault_fail(r, val);
            return;
        }
    }
    EXANET_GUEST_ERR(exanet_err_rdma_reg, "write to RO/unknown RDMA register "
                     "0x%" HWADDR_PRIx, off);
}

/* BAR3: RDMA pages */

static bool rdma_chan_finished(void *opaque)
{
    const RdmaChan *ch = opaque;

    return ch->state != EXANET_RDMA_ONGOING;
}

static uint64_t rdma_bar_read(void *opaque, hwaddr off, unsigned size)
{
    ExanetRdma *r = opaque;
    unsigned p = off / EXANET_RDMA_PAGE_SIZE;
    unsigned c = (off % EXANET_RDMA_PAGE_SIZE) / EXANET_RDMA_CHAN_STRIDE;
    unsigned reg = off % EXANET_RDMA_CHAN_STRIDE;
    RdmaChan *ch;
    uint64_t v;

    if (p >= EXANET_RDMA_PAGES || !r->page[p].enabled || exanet_dma_depth) {
        return 0;
    }
    ch = &r->page[p].ch[c];
    switch (reg & ~7u) {
    case EXANET_RDMA_S_STATUS:
        if (ch->state == EXANET_RDMA_ONGOING) {
            exanet_ni_poll(r->ni, rdma_chan_finished, ch);
        }
        v = ch->state | (uint64_t)ch->err << 8 |
            (uint64_t)(ch->tx.retries | ch->rretries) << 16 |
            (uint64_t)ch->seq << 32;
        break;
    case EXANET_RDMA_S_DONE_BYTES:
        v = ch->chan < EXANET_RDMA_WCHANS && ch->tx.active ?
            ch->tx.acked_bytes : ch->done_bytes;
        break;
    default:
        return 0;
    }
    if (reg & 4) {
        return v >> 32;
    }
    return size == 8 ? v : (uint32_t)v;
}

static void rdma_bar_write(void *opaque, hwaddr off, uint64_t val,
                           unsigned size)
{
    ExanetRdma *r = opaque;
    unsigned p = off / EXANET_RDMA_PAGE_SIZE;
    unsigned c = (off % EXANET_RDMA_PAGE_SIZE) / EXANET_RDMA_CHAN_STRIDE;
    unsigned reg = off % EXANET_RDMA_CHAN_STRIDE;
    RdmaChan *ch;

    if (p >= EXANET_RDMA_PAGES || !r->page[p].enabled || exanet_dma_depth) {
        return;
    }
    ch = &r->page[p].ch[c];
    fabric_nic_poll_found();    /* posting software does not wait */
    if (ch->state == EXANET_RDMA_ONGOING) {
        if (reg == EXANET_RDMA_D_CTRL) {
            r->cnt[EXANET_RCNT_DESC_BUSY]++;
        }
        return;     /* the descriptor is frozen while in flight */
    }
    if (size == 8) {
        stq_le_p(ch->desc + reg, val);
    } else {
        stl_le_p(ch->desc + reg, val);
    }
    if (reg == EXANET_RDMA_D_CTRL) {
        rdma_trigger(r, p, c, size == 8 ? val : (uint32_t)val);
    }
}

static const MemoryRegionOps rdma_bar_ops = {
    .read = rdma_bar_read,
    .write = rdma_bar_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* Life cycle */

static void rdma_rx_free(gpointer p)
{
    RdmaRx *x = p;

    g_free(x->map);
    g_free(x);
}

ExanetRdma *exanet_rdma_new(PCIDevice *ni, uint32_t node_id,
                            uint32_t num_nodes, const uint32_t *retx_max)
{
    ExanetRdma *r = g_new0(ExanetRdma, 1);

    r->ni = ni;
    r->node_id = node_id;
    r->num_nodes = num_nodes;
    r->retx_max = retx_max;
    r->rx = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                  rdma_rx_free);
    r->resp = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                    rdma_resp_free);
    QTAILQ_INIT(&r->active);
    QSIMPLEQ_INIT(&r->loop);
    r->bh = qemu_bh_new(exanet_rdma_kick_work, r);
    memory_region_init_io(&r->bar, OBJECT(ni), &rdma_bar_ops, r,
                          "exanet-rdma", EXANET_BAR_RDMA_SIZE);
    fabric_nic_parkable(&r->bar);
    for (unsigned p = 0; p < EXANET_RDMA_PAGES; p++) {
        for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
            RdmaChan *ch = &r->page[p].ch[c];

            ch->r = r;
            ch->page = p;
            ch->chan = c;
            ch->tx.r = r;
            if (c >= EXANET_RDMA_WCHANS) {
                ch->rtimer = timer_new_ns(QEMU_CLOCK_REALTIME,
                                          rdma_rchan_timer, ch);
            }
        }
    }
    r->retx_us = EXANET_RDMA_DEFAULT_RETX_US;
    r->window = EXANET_RDMA_DEFAULT_WINDOW;
    r->epoch = 1;
    return r;
}

MemoryRegion *exanet_rdma_bar(ExanetRdma *r)
{
    return &r->bar;
}

void exanet_rdma_set_fabric(ExanetRdma *r, FabricQemu *fq)
{
    r->fabric = fq;
}

void exanet_rdma_reset(ExanetRdma *r, uint32_t epoch)
{
    for (unsigned p = 0; p < EXANET_RDMA_PAGES; p++) {
        RdmaPage *pg = &r->page[p];

        rdma_page_disable(r, pg);
        pg->pdid = 0;
        pg->rank = 0;
        for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
            pg->ch[c].state = EXANET_RDMA_IDLE;
            pg->ch[c].err = 0;
            pg->ch[c].done_bytes = 0;
            memset(pg->ch[c].desc, 0, sizeof(pg->ch[c].desc));
        }
    }
    g_hash_table_remove_all(r->resp);
    g_hash_table_remove_all(r->rx);
    while (!QSIMPLEQ_EMPTY(&r->loop)) {
        RdmaLoop *l = QSIMPLEQ_FIRST(&r->loop);

        QSIMPLEQ_REMOVE_HEAD(&r->loop, link);
        g_free(l);
    }
    memset(r->ctx_pdid, 0, sizeof(r->ctx_pdid));
    memset(r->ctx_en, 0, sizeof(r->ctx_en));
    memset(r->ctx_irq, 0, sizeof(r->ctx_irq));
    memset(r->ctx_odp, 0, sizeof(r->ctx_odp));
    r->fq_base = 0;
    r->fq_size = r->fq_head = r->fq_tail = r->fq_irq = 0;
    r->nheld = 0;
    memset(r->cnt, 0, sizeof(r->cnt));
    r->retx_us = EXANET_RDMA_DEFAULT_RETX_US;
    r->window = EXANET_RDMA_DEFAULT_WINDOW;
    r->epoch = epoch;
}

/*
 * Device unrealize: stop every activity.  The state stays allocated (the
 * BAR memory region is still referenced by the PCI core at this point).
 */
void exanet_rdma_free(ExanetRdma *r)
{
    if (!r) {
        return;
    }
    exanet_rdma_reset(r, 1);
    for (unsigned k = 0; k < EXANET_RDMA_NUM_RANKS; k++) {
        r->ctx[k] = NULL;
    }
    r->fabric = NULL;
}

bool exanet_rdma_attach_ctx(ExanetRdma *r, unsigned rank, PCIDevice *ctx,
                            Error **errp)
{
    if (rank >= EXANET_RDMA_NUM_RANKS) {
        error_setg(errp, "exanet-ctx: rank must be 0..%u",
                   EXANET_RDMA_NUM_RANKS - 1);
        return false;
    }
    if (r->ctx[rank]) {
        error_setg(errp, "exanet-ctx: rank %u already has a context", rank);
        return false;
    }
    r->ctx[rank] = ctx;
    return true;
}

void exanet_rdma_detach_ctx(ExanetRdma *r, unsigned rank, PCIDevice *ctx)
{
    if (rank < EXANET_RDMA_NUM_RANKS && r->ctx[rank] == ctx) {
        r->ctx[rank] = NULL;
        r->ctx_en[rank] = false;
        r->ctx_odp[rank] = false;
        r->ctx_irq[rank] = 0;
    }
}
