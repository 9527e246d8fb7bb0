/*
 * ExaNet NI, RDMA engine: the read responder (the "special mailbox"
 * of the send unit): checks a read request and answers it with an RDMA
 * write of the data, or a read NACK.  See exanet-rdma.c for the
 * overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Read responder */

static void rdma_send_rnack(ExanetRdma *r, uint32_t dst, uint8_t page,
                            uint8_t chan, uint32_t seq, uint32_t epoch,
                            uint8_t code)
{
    RdNackHdr n = {
        .seq = seq, .epoch = epoch, .page = page, .chan = chan, .code = code,
    };

    exanet_rdma_send_small(r, dst, RD_RNACK, &n, sizeof(n));
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

void exanet_rdma_resp_free(gpointer p)
{
    RdmaResp *rs = p;

    exanet_rdma_tx_stop(&rs->tx);
    if (rs->tx.timer) {
        timer_free(rs->tx.timer);
    }
    g_free(rs);
}

/* Read request: the responder answers with an RDMA write. */
void exanet_rdma_rx_rreq(ExanetRdma *r, uint32_t src, const RdReqHdr *q)
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
    key = exanet_rdma_rx_key(src, q->page, q->chan);
    rs = g_hash_table_lookup(r->resp, key);
    if (rs && rs->epoch == q->epoch && (int32_t)(q->seq - rs->seq) <= 0) {
        /* Duplicate request (or an old one): answer a failure again. */
        if (rs->seq == q->seq && rs->finished && rs->err &&
            rs->err != EXANET_RDMA_E_TIMEOUT) {
            rdma_send_rnack(r, src, q->page, q->chan, q->seq, q->epoch,
                            rs->err);
        } else if (rs->seq == q->seq && !rs->finished) {
            /*
             * The reader's probe of an answer still going: say so, or it
             * takes our silence (a fault at our source, our links'
             * queues, a host core shared by many nodes) for a lost node.
             */
            RdNackHdr b = {
                .seq = q->seq, .epoch = q->epoch, .page = q->page,
                .chan = q->chan,
                .code = rs->tx.held || rs->tx.faulted ? RD_RBUSY_FAULT
                                                      : RD_RBUSY_SENDING,
            };

            exanet_rdma_send_small(r, src, RD_RBUSY, &b, sizeof(b));
        }
        return;
    }
    if (!rs) {
        rs = g_new0(RdmaResp, 1);
        g_hash_table_insert(r->resp, key, rs);
    } else {
        exanet_rdma_tx_stop(&rs->tx);
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
    exanet_rdma_tx_start(r, &rs->tx);
}
