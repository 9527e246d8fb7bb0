/*
 * ExaNet NI, RDMA engine: the send unit: sending transfers (write
 * channels and the read responder's answers), retransmission, and the
 * channels of the RDMA pages (trigger, completion, read requests).
 * See exanet-rdma.c for the overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "sysemu/dma.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"
#include "trace.h"

static void rdma_tx_pump(RdmaTx *tx);
static void rdma_tx_pump_n(RdmaTx *tx, uint32_t max_new);

/* ------------------------------------------------------------------ */
/* Sending transfers */

/*
 * Block timeout towards node: the configured one (RDMA_RETX_US), or more
 * where the measured ACK round trip says so (RFC 6298: smoothed round trip
 * plus four deviations).  Under an all-to-all load the links' queues and
 * the host's cores make round trips of hundreds of ms normal; a fixed
 * timeout then resends blocks that were only queued, which queues more.
 */
static uint64_t rdma_rto_us(ExanetRdma *r, uint32_t node)
{
    uint64_t rto;

    if (node >= r->num_nodes || !r->srtt_ns[node]) {
        return r->retx_us;
    }
    rto = (r->srtt_ns[node] + 4 * r->rttvar_ns[node]) / SCALE_US;
    return MIN(MAX(rto, (uint64_t)r->retx_us), (uint64_t)RDMA_RTO_MAX_US);
}

/* A timeout of rto_us after retries: doubled per retry, capped. */
static int64_t rdma_retx_ns(uint64_t rto_us, unsigned retries)
{
    return fabric_nic_backoff(rto_us, retries, MAX(rto_us, RDMA_RETX_CAP_US)) *
           SCALE_US;
}

/* An ACK answered the send of a block rtt ns ago: update node's estimate. */
static void rdma_rtt_sample(ExanetRdma *r, uint32_t node, int64_t rtt)
{
    int64_t *srtt, *var;

    if (node >= r->num_nodes || rtt <= 0) {
        return;
    }
    srtt = &r->srtt_ns[node];
    var = &r->rttvar_ns[node];
    if (!*srtt) {
        *srtt = rtt;
        *var = rtt / 2;
    } else {
        *var += (ABS(*srtt - rtt) - *var) / 4;
        *srtt += (rtt - *srtt) / 8;
    }
    trace_exanet_rdma_rtt(r->node_id, node, rtt / SCALE_US,
                          *srtt / SCALE_US, rdma_rto_us(r, node));
}

/*
 * The transfer's timer is lazy (fabric_nic_timer_arm()): armed at every
 * start and ACK and deleted at every end it woke the main loop for most
 * transfers.
 */
static void rdma_tx_arm(RdmaTx *tx)
{
    /*
     * Waiting for faults to resolve (here or at the target, whose RETRY
     * may not come when it held too many blocks): probe at the configured
     * pace; the network's round trip says nothing about the OS's.
     */
    uint64_t rto = tx->faulted || tx->held ? tx->r->retx_us
                                           : rdma_rto_us(tx->r, tx->dst_node);

    fabric_nic_timer_arm(tx->timer, &tx->due,
                         rdma_retx_ns(rto, tx->retries +
                                      MIN(tx->fault_waits, 8)));
}

/* Stop a transfer (no callback). */
void exanet_rdma_tx_stop(RdmaTx *tx)
{
    if (tx->active) {
        QTAILQ_REMOVE(&tx->r->active, tx, link);
        tx->active = false;
    }
    tx->held = false;
    tx->due = 0;    /* the timer stays pending: it finds nothing due */
    g_free(tx->bstate);
    tx->bstate = NULL;
    g_free(tx->bsend);
    tx->bsend = NULL;
}

void exanet_rdma_tx_finish(RdmaTx *tx, uint8_t err)
{
    exanet_rdma_tx_stop(tx);
    tx->done(tx, err);
}

static void rdma_tx_timer(void *opaque)
{
    RdmaTx *tx = opaque;
    ExanetRdma *r = tx->r;
    bool waiting = tx->held || tx->faulted;

    if (!fabric_nic_timer_due(tx->timer, &tx->due) || !tx->active) {
        return;
    }
    for (uint32_t b = tx->base; !waiting && b < tx->next; b++) {
        waiting = tx->bstate[b] == BS_HELD;
    }
    /*
     * Held back by a busy link since the last block went out: other
     * senders are using the link, nothing was lost.  Not a retry.
     */
    if (tx->link_wait && !waiting) {
        rdma_tx_arm(tx);
        tx->want_pump = true;
        rdma_tx_pump(tx);
        return;
    }
    /*
     * Waiting for software to resolve faults (here or at the target) is
     * not a network failure: it has its own, longer, bound.
     */
    if (waiting ? tx->fault_waits >= RDMA_FAULT_WAITS_MAX
                : tx->retries >= *r->retx_max) {
        trace_exanet_rdma_timeout(r->node_id, tx->dst_node, tx->h.seq);
        r->cnt[EXANET_RCNT_TX_TIMEOUTS]++;
        exanet_rdma_tx_finish(tx, EXANET_RDMA_E_TIMEOUT);
        return;
    }
    if (waiting) {
        tx->fault_waits++;
    } else {
        tx->retries++;
    }
    /* A held source read whose fault software has not seen: still held. */
    if (tx->held && (tx->held_id == RDMA_NO_FAULT ||
                     exanet_rdma_fault_consumed(r, tx->held_id))) {
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

/*
 * Start (or restart) a transfer: the caller sends its first blocks
 * (RDMA_INLINE_MAX), the bottom half the rest.
 */
void exanet_rdma_tx_start(ExanetRdma *r, RdmaTx *tx)
{
    tx->r = r;
    tx->base = tx->next = tx->acked = tx->nresend = 0;
    tx->acked_bytes = 0;
    tx->retries = 0;
    g_free(tx->bstate);
    tx->bstate = g_malloc0(tx->h.nblocks);
    g_free(tx->bsend);
    tx->bsend = g_new0(RdmaBlockSend, tx->h.nblocks);
    tx->xmit = 0;
    tx->held = false;
    tx->link_wait = false;
    tx->fault_waits = 0;
    tx->faulted = false;
    if (!tx->timer) {
        tx->timer = timer_new_ns(QEMU_CLOCK_REALTIME, rdma_tx_timer, tx);
    }
    tx->active = true;
    tx->want_pump = true;
    QTAILQ_INSERT_TAIL(&r->active, tx, link);
    rdma_tx_arm(tx);
    rdma_tx_pump_n(tx, RDMA_INLINE_MAX / RDMA_BLOCK);
    if (!tx->active || tx->held ||
        (!tx->want_pump && tx->next == tx->h.nblocks)) {
        return;     /* ended, waits for a fault to resolve, or all sent */
    }
    tx->want_pump = true;
    exanet_rdma_kick(r);
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

    p = exanet_rdma_reserve(r, tx->dst_node, sizeof(RdBlkHdr), blen, &err);
    if (!p) {
        if (err == -EAGAIN || err == -EBUSY) {
            r->cnt[EXANET_RCNT_RING_FULL]++;
        }
        if (err == -EBUSY) {
            /* link flow control: the link timer pumps us again */
            tx->link_wait = true;
            trace_exanet_rdma_link_wait(r->node_id, tx->dst_node, tx->h.seq,
                                        b);
            exanet_rdma_link_retry(r);
        }
        return false;       /* the timer retries (and times out) */
    }
    tx->link_wait = false;
    /* Source straight into the ring slot, through the local context. */
    if (exanet_rdma_dma(r, tx->rank, tx->src_va + off, p + sizeof(RdBlkHdr),
                        blen, DMA_DIRECTION_TO_DEVICE) != MEMTX_OK) {
        exanet_rdma_cancel(r, tx->dst_node);
        /* On-demand: hold the transfer here until FQ_RESUME / FQ_FAIL. */
        tx->held = exanet_rdma_fault(r, tx->rank, tx->src_va + off, blen, false,
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
    tx->bsend[b] = (RdmaBlockSend) {
        .xmit = h->xmit, .ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME),
    };
    exanet_rdma_commit(r, tx->dst_node, RD_BLOCK);
    return true;
}

static void rdma_tx_pump(RdmaTx *tx)
{
    rdma_tx_pump_n(tx, UINT32_MAX);
}

/* Retransmissions, then at most max_new blocks never sent. */
static void rdma_tx_pump_n(RdmaTx *tx, uint32_t max_new)
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
    while (tx->next < tx->h.nblocks && tx->next - tx->base < r->window &&
           max_new--) {
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
        exanet_rdma_tx_finish(tx, EXANET_RDMA_E_LOCAL_DMA);
        return;
    }
    /* Ring full: the next ACK from anybody (or the timer) resumes us. */
    tx->want_pump = !tx->held;
}

/*
 * Resume transfers that stalled on a full ring or a busy link, round
 * robin: each call starts one transfer further down the list, so that
 * the first of many transfers sharing a link does not always get it
 * (the others would starve into their timeouts).
 */
void exanet_rdma_pump_stalled(ExanetRdma *r)
{
    RdmaTx *tx, *next;

    tx = QTAILQ_FIRST(&r->active);
    if (tx && QTAILQ_NEXT(tx, link)) {
        QTAILQ_REMOVE(&r->active, tx, link);
        QTAILQ_INSERT_TAIL(&r->active, tx, link);
    }
    QTAILQ_FOREACH_SAFE(tx, &r->active, link, next) {
        if (tx->want_pump) {
            rdma_tx_pump(tx);
        }
    }
}

void exanet_rdma_tx_ack(RdmaTx *tx, const RdAckHdr *a)
{
    ExanetRdma *r = tx->r;
    uint32_t b = a->block;

    if (!tx->active || b >= tx->h.nblocks || b >= tx->next) {
        return;
    }
    if (a->code == RD_NACK_FAULT) {
        /* Held at the target until its fault is resolved: no resend now. */
        tx->faulted = true;
        if (tx->bstate[b] == BS_INFLIGHT && tx->bsend[b].xmit == a->xmit) {
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
        exanet_rdma_tx_finish(tx, e);
        return;
    }
    /*
     * Fast retransmission: the bulk path delivers in order and answers in
     * order, so a block transmitted before the one answered here and still
     * unanswered was lost (or its answer was): send it again now.
     */
    for (uint32_t k = tx->base; k < tx->next; k++) {
        if (tx->bstate[k] == BS_INFLIGHT && tx->bsend[k].xmit < a->xmit) {
            tx->bstate[k] = BS_RESEND;
            tx->nresend++;
        }
    }
    if (tx->bstate[b] == BS_ACKED) {
        return;
    }
    /* The answer to this very send (not to an earlier one of the block) */
    if (tx->bstate[b] == BS_INFLIGHT && tx->bsend[b].xmit == a->xmit) {
        int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

        rdma_rtt_sample(r, tx->dst_node, now - tx->bsend[b].ns);
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
        exanet_rdma_tx_finish(tx, 0);
        return;
    }
    rdma_tx_arm(tx);
    /*
     * Refill the window right after this ACK (receive thread, BQL held: a
     * hop through the main loop costs a thread wake-up per window), in
     * the caller's exanet_rdma_pump_stalled(), round robin with the
     * transfers that wait for a busy link: refilled here first, a transfer
     * with ACKs coming back would keep the link from those that have none
     * in flight until they time out.  Safe: block transmission never
     * delivers synchronously (own node: local queue).
     */
    tx->want_pump = true;
}

/* ------------------------------------------------------------------ */
/* Channels */

/* Local completion record; in on-demand mode a fault defers it. */
bool exanet_rdma_chan_lcomp(RdmaChan *ch)
{
    ExanetRdma *r = ch->r;
    bool rd = ch->chan >= EXANET_RDMA_WCHANS;
    RdBlkHdr h = {
        .op = rd ? EXANET_RDMA_OP_READ : EXANET_RDMA_OP_WRITE,
        .origin_node = r->node_id, .page = ch->page, .chan = ch->chan,
        .seq = ch->seq,
    };

    ch->lcomp_pending = false;
    if (exanet_rdma_write_notif(r, ch->rank, ch->lcomp_va, ch->tag,
                                ch->err ? ch->done_bytes : ch->len, ch->rnode,
                                ch->rrank, h.op, ch->err, ch->page, ch->chan,
                                EXANET_RDMA_N_COMPLETION)) {
        return true;
    }
    ch->lcomp_pending = exanet_rdma_fault(r, ch->rank, ch->lcomp_va,
                                          sizeof(struct exanet_rdma_notif),
                                          true, EXANET_FAULT_K_LCOMP, &h, 0,
                                          &ch->lcomp_id);
    return false;
}

/* The read timer is lazy like the transfers' (rdma_tx_arm()). */
/* The read channel's next period: twice the block timeout to its responder */
static void rdma_rchan_arm(RdmaChan *ch)
{
    fabric_nic_timer_arm(ch->rtimer, &ch->rdue,
                         rdma_retx_ns(rdma_rto_us(ch->r, ch->rnode),
                                      ch->rretries) * 2);
}

void exanet_rdma_chan_complete(RdmaChan *ch, uint8_t err)
{
    ExanetRdma *r = ch->r;

    ch->rdue = 0;   /* a pending read timer finds nothing due */
    trace_exanet_rdma_complete(r->node_id, ch->page, ch->chan, err);
    ch->state = err ? EXANET_RDMA_ERROR : EXANET_RDMA_DONE;
    ch->err = err;
    fabric_park_wake(FABRIC_WAKE_DEVICE);
    r->cnt[err ? EXANET_RCNT_TX_ERRORS : EXANET_RCNT_TX_DONE]++;
    if (!err) {
        ch->done_bytes = ch->len;
    }
    if (ch->lcomp_va && r->page[ch->page].enabled) {
        exanet_rdma_chan_lcomp(ch);
    }
    /* After the completion record (if any) is in memory. */
    exanet_rdma_rank_event(r, ch->rank);
}

static void rdma_wchan_done(RdmaTx *tx, uint8_t err)
{
    RdmaChan *ch = container_of(tx, RdmaChan, tx);

    ch->done_bytes = tx->acked_bytes;
    exanet_rdma_chan_complete(ch, err);
}

void exanet_rdma_chan_abort(RdmaChan *ch)
{
    exanet_rdma_tx_stop(&ch->tx);
    ch->lcomp_pending = false;
    ch->rdue = 0;
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

    exanet_rdma_send_small(r, ch->rnode, RD_RREQ, &q, sizeof(q));
}

/* Read answer blocks received from node so far. */
static uint64_t rdma_peer_rd_blocks(ExanetRdma *r, uint32_t node)
{
    return node < r->num_nodes ? r->peer_rd_blocks[node] : 0;
}

/*
 * Read channel: re-request until data flows; time out without progress of
 * this read or of the node's answers to our others.
 */
void exanet_rdma_rchan_timer(void *opaque)
{
    RdmaChan *ch = opaque;
    ExanetRdma *r = ch->r;

    if (!fabric_nic_timer_due(ch->rtimer, &ch->rdue) ||
        ch->state != EXANET_RDMA_ONGOING) {
        return;
    }
    if (ch->done_bytes != ch->last_bytes) {
        ch->last_bytes = ch->done_bytes;
        ch->last_peer_blocks = rdma_peer_rd_blocks(r, ch->rnode);
        ch->rretries = 0;
        ch->rfaulted = false;
        ch->rfault_waits = 0;
    } else if (rdma_peer_rd_blocks(r, ch->rnode) != ch->last_peer_blocks) {
        /*
         * The node answers our other reads: this one queues behind them
         * at its links (congestion), the node is not lost.  Not a retry.
         */
        ch->last_peer_blocks = rdma_peer_rd_blocks(r, ch->rnode);
    } else if (ch->rfaulted ? ch->rfault_waits >= RDMA_FAULT_WAITS_MAX
                            : ch->rretries >= *r->retx_max) {
        r->cnt[EXANET_RCNT_TX_TIMEOUTS]++;
        exanet_rdma_chan_complete(ch, EXANET_RDMA_E_TIMEOUT);
        return;
    } else {
        /*
         * A period without progress: the request may have been lost, or
         * (data flowed before) the request is a probe, which the responder
         * answers RD_RBUSY while it still works.  Waiting for a fault
         * (ours or the responder's), probe seldom.
         */
        if (ch->rfaulted) {
            ch->rfault_waits++;     /* waiting for an OS, not the network */
        } else {
            ch->rretries++;
        }
        if (!ch->rfaulted || ch->rfault_waits % 5 == 0) {
            rdma_send_rreq(ch);
        }
    }
    rdma_rchan_arm(ch);
}

void exanet_rdma_trigger(ExanetRdma *r, unsigned p, unsigned c, uint64_t ctrl)
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
    ch->last_peer_blocks = rdma_peer_rd_blocks(r, ch->rnode);
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
    r->cnt[rd ? EXANET_RCNT_TX_READS : EXANET_RCNT_TX_WRITES]++;
    if (exanet_rdma_direct(r, ch)) {
        return;
    }
    if (rd) {
        rdma_send_rreq(ch);
        rdma_rchan_arm(ch);
        return;
    }
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
    exanet_rdma_tx_start(r, &ch->tx);
}
