/*
 * ExaNet NI, RDMA engine: the receive unit: blocks into the target's
 * memory, block ACKs to the send unit, read NACKs, and the dispatch of
 * the bulk records and local deliveries.  See exanet-rdma.c for the
 * overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitmap.h"
#include "qemu/queue.h"
#include "sysemu/dma.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Receive unit */

/* The initiator's own read channel for a read-response block / RNACK. */
RdmaChan *exanet_rdma_my_rchan(ExanetRdma *r, unsigned page, unsigned chan,
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
        exanet_rdma_send_ack(r, src, h, RD_NACK_RETRY);
        return;
    }
    if (rd) {
        rch = exanet_rdma_my_rchan(r, h->page, h->chan, h->seq, h->epoch);
    }

    key = exanet_rdma_rx_key(src, h->page, h->chan);
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
        exanet_rdma_send_ack(r, src, h, x->err);
        return;
    }
    if (x->err) {
        exanet_rdma_send_ack(r, src, h, x->err);
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
        exanet_rdma_send_ack(r, src, h, EXANET_RDMA_E_ABORTED);
        return;
    }
    /* The cells, straight from the ring into the destination. */
    if (exanet_rdma_rx_waits(r, x, h->dst_rank) ||
        exanet_rdma_dma(r, h->dst_rank, h->dst_va, (void *)data, blen,
                        DMA_DIRECTION_FROM_DEVICE) != MEMTX_OK) {
        if (exanet_rdma_rx_hold(r, src, h, x, h->dst_va, blen,
                                EXANET_FAULT_K_DST)) {
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
    if (rd && src < r->num_nodes) {
        r->peer_rd_blocks[src]++;
    }
    if (x->received == x->nblocks) {
        if (h->notify_va) {
            if (!exanet_rdma_write_notif(r, h->dst_rank, h->notify_va, h->tag,
                                         h->total_len,
                                         rd ? (rch ? rch->rnode : src) : src,
                                         rd ? (rch ? rch->rrank : 0) :
                                         h->src_rank,
                                         h->op, 0, h->page, h->chan, 0)) {
                if (exanet_rdma_rx_hold(r, src, h, x, h->notify_va,
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
                exanet_rdma_send_ack(r, src, h, x->err);
                if (rch) {
                    exanet_rdma_chan_complete(rch, x->err);
                }
                return;
            }
            r->cnt[EXANET_RCNT_NOTIFICATIONS]++;
            exanet_rdma_rank_event(r, h->dst_rank);
        }
        x->complete = true;
        g_free(x->map);     /* 'complete' answers every later duplicate */
        x->map = NULL;
        if (rch) {
            exanet_rdma_chan_complete(rch, 0);
        }
    }
    exanet_rdma_send_ack(r, src, h, 0);
    return;

fail:
    x->err = err;
    exanet_rdma_send_ack(r, src, h, err);
    if (rch) {
        /* A read's data lands in the initiator: any failure is local. */
        exanet_rdma_chan_complete(rch, EXANET_RDMA_E_LOCAL_DMA);
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
        exanet_rdma_tx_ack(&ch->tx, a);
    } else if (a->op == EXANET_RDMA_OP_READ) {
        RdmaResp *rs = g_hash_table_lookup(r->resp,
                                           exanet_rdma_rx_key(src, a->page,
                                                              a->chan));

        if (!rs || rs->finished || rs->seq != a->seq || rs->epoch != a->epoch ||
            a->origin_node != src) {
            return;
        }
        exanet_rdma_tx_ack(&rs->tx, a);
    } else {
        r->cnt[EXANET_RCNT_RX_BAD]++;
    }
}

static void rdma_rx_rnack(ExanetRdma *r, uint32_t src, const RdNackHdr *n)
{
    RdmaChan *ch = exanet_rdma_my_rchan(r, n->page, n->chan, n->seq, n->epoch);
    uint8_t e = n->code;

    trace_exanet_rdma_rnack(r->node_id, src, n->page, n->chan, n->seq, e);
    if (!ch || ch->rnode != src) {
        return;
    }
    if (e == 0 || e > EXANET_RDMA_E_LOCAL_FAULT) {
        e = EXANET_RDMA_E_REMOTE_DMA;
    }
    exanet_rdma_chan_complete(ch, e);
}

/*
 * The responder still works on our read: not a lost node.  Held on a
 * fault there, the read takes the longer bound of fault waits.
 */
static void rdma_rx_rbusy(ExanetRdma *r, uint32_t src, const RdNackHdr *n)
{
    RdmaChan *ch = exanet_rdma_my_rchan(r, n->page, n->chan, n->seq, n->epoch);

    trace_exanet_rdma_rbusy(r->node_id, src, n->page, n->chan, n->seq,
                            n->code);
    if (!ch || ch->rnode != src) {
        return;
    }
    ch->rfaulted = n->code == RD_RBUSY_FAULT;
    if (!ch->rfaulted) {
        ch->rretries = 0;
    }
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
    if (exanet_coll_bulk_rx(r->coll, src, type, hdr, hlen, data, dlen,
                            data_ok)) {
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
            exanet_rdma_pump_stalled(r);
            return;
        }
        break;
    case RD_RREQ:
        if (hlen == sizeof(RdReqHdr) && dlen == 0) {
            RdReqHdr q;

            memcpy(&q, hdr, sizeof(q));
            exanet_rdma_rx_rreq(r, src, &q);
            return;
        }
        break;
    case RD_RNACK:
    case RD_RBUSY:
        if (hlen == sizeof(RdNackHdr) && dlen == 0) {
            RdNackHdr n;

            memcpy(&n, hdr, sizeof(n));
            if (type == RD_RNACK) {
                rdma_rx_rnack(r, src, &n);
            } else {
                rdma_rx_rbusy(r, src, &n);
            }
            return;
        }
        break;
    }
    r->cnt[EXANET_RCNT_RX_BAD]++;
}

bool exanet_rdma_loop_drain(ExanetRdma *r, int budget)
{
    bool any = false;

    while (!QSIMPLEQ_EMPTY(&r->loop) && budget-- > 0) {
        RdmaLoop *l = QSIMPLEQ_FIRST(&r->loop);

        QSIMPLEQ_REMOVE_HEAD(&r->loop, link);
        exanet_rdma_bulk_rx(r, r->node_id, l->type, l->buf, l->hlen,
                            l->buf + l->hlen, l->dlen, true);
        g_free(l);
        any = true;
    }
    return any;
}

/* Bottom half: local deliveries, then block transmission. */
void exanet_rdma_kick_work(void *opaque)
{
    ExanetRdma *r = opaque;

    exanet_rdma_loop_drain(r, 256);
    exanet_rdma_pump_stalled(r);
    if (!QSIMPLEQ_EMPTY(&r->loop)) {
        exanet_rdma_kick(r);
    }
}
