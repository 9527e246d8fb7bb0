/*
 * ExaNet NI, RDMA engine: on-demand paging: the fault queue, blocks
 * held at the target on a fault, and their replay or failure once
 * software resolved it (FQ_HEAD, FQ_RESUME, FQ_FAIL, context disable).
 * See exanet-rdma.c for the overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/queue.h"
#include "sysemu/dma.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"
#include "trace.h"

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
bool exanet_rdma_fault(ExanetRdma *r, unsigned rank, uint64_t va, uint64_t len,
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

/*
 * x's last fault (of one of its blocks) is still in the queue: a block of
 * x arriving now would most likely fault on the same unmapped range, which
 * the driver maps in one go (it prefetches what follows the access).  The
 * block is held on that fault without a DMA attempt: one fault per range
 * rather than one per block.  The id is checked against the queue window,
 * so an id from before a queue reset never holds anything.
 */
bool exanet_rdma_rx_waits(ExanetRdma *r, const RdmaRx *x, unsigned rank)
{
    return x && x->fault_wait && r->ctx_odp[rank] && r->ctx_en[rank] &&
           r->fq_tail - x->fault_id <= r->fq_size &&
           !exanet_rdma_fault_consumed(r, x->fault_id);
}

/*
 * Receive side, the write of a block (or of its notification) to
 * [va, va + len) through rank failed, or would (exanet_rdma_rx_waits()): in
 * on-demand mode, report the fault (unless x's pending one covers it),
 * remember the block and answer "fault, wait"; FQ_HEAD past the fault or
 * FQ_RESUME answers RETRY.  False: not in on-demand mode.
 */
bool exanet_rdma_rx_hold(ExanetRdma *r, uint32_t src, const RdBlkHdr *h,
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
    if (hd && hd->id != RDMA_NO_FAULT &&
        !exanet_rdma_fault_consumed(r, hd->id) &&
        r->ctx_odp[h->dst_rank] && r->ctx_en[h->dst_rank]) {
        hd->a.xmit = h->xmit;
        goto answer;
    }
    if (kind == EXANET_FAULT_K_DST && exanet_rdma_rx_waits(r, x, h->dst_rank)) {
        id = x->fault_id;
        r->cnt[EXANET_RCNT_FAULT_HOLDS]++;
        trace_exanet_rdma_fault_coalesced(r->node_id, h->dst_rank, va, id);
    } else {
        if (!exanet_rdma_fault(r, h->dst_rank, va, len, true, kind, h,
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
    exanet_rdma_send_ack(r, src, h, RD_NACK_FAULT);
    return true;
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
bool exanet_rdma_fault_consumed(ExanetRdma *r, uint32_t id)
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
void exanet_rdma_fault_resume(ExanetRdma *r, uint32_t mask, bool consumed)
{
    RdmaTx *tx;

    trace_exanet_rdma_fault_resume(r->node_id, mask, consumed, r->fq_head);
    mask &= (1u << EXANET_RDMA_NUM_RANKS) - 1;
    for (uint32_t i = 0; i < r->nheld;) {
        RdmaHeld *hd = &r->held[i];

        if (!(mask & (1u << hd->rank)) ||
            (consumed && !exanet_rdma_fault_consumed(r, hd->id))) {
            i++;
            continue;
        }
        exanet_rdma_send_small(r, hd->dst, RD_ACK, &hd->a, sizeof(hd->a));
        r->cnt[EXANET_RCNT_FAULT_REPLAYS]++;
        rdma_held_drop(r, i);
    }
    QTAILQ_FOREACH(tx, &r->active, link) {
        if (tx->held && (mask & (1u << tx->rank)) &&
            (!consumed || exanet_rdma_fault_consumed(r, tx->held_id))) {
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
                (!consumed || exanet_rdma_fault_consumed(r, ch->lcomp_id))) {
                r->cnt[EXANET_RCNT_FAULT_REPLAYS]++;
                if (exanet_rdma_chan_lcomp(ch)) {
                    exanet_rdma_rank_event(r, ch->rank);
                }
            }
        }
    }
    exanet_rdma_kick(r);
}

/* Software refused fault id: the transfer held on it ends in error. */
void exanet_rdma_fault_fail(ExanetRdma *r, uint32_t id)
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
        x = g_hash_table_lookup(r->rx, exanet_rdma_rx_key(dst, a.page, a.chan));
        if (x && x->epoch == a.epoch && x->seq == a.seq && !x->complete) {
            x->err = a.op == EXANET_RDMA_OP_READ ? EXANET_RDMA_E_LOCAL_FAULT
                                                 : EXANET_RDMA_E_REMOTE_FAULT;
        }
        a.code = a.op == EXANET_RDMA_OP_READ ? EXANET_RDMA_E_LOCAL_FAULT
                                             : EXANET_RDMA_E_REMOTE_FAULT;
        exanet_rdma_send_small(r, dst, RD_ACK, &a, sizeof(a));
        if (a.op == EXANET_RDMA_OP_READ) {
            RdmaChan *ch = exanet_rdma_my_rchan(r, a.page, a.chan, a.seq,
                                                a.epoch);

            if (ch && ch->rnode == dst) {
                exanet_rdma_chan_complete(ch, EXANET_RDMA_E_LOCAL_FAULT);
            }
        }
        return;
    }
    QTAILQ_FOREACH_SAFE(tx, &r->active, link, next) {
        if (tx->held && tx->held_id == id) {
            r->cnt[EXANET_RCNT_FAULT_FAILS]++;
            exanet_rdma_tx_finish(tx, EXANET_RDMA_E_LOCAL_FAULT);
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
void exanet_rdma_fq_arm(ExanetRdma *r, uint32_t val)
{
    if (exanet_irq_arm(r->ni, &r->fq_irq, val, "fault queue", 0) &&
        r->fq_size && r->fq_head != r->fq_tail) {
        exanet_irq_rank_event(r->ni, EXANET_IRQ_RANK_FAULT, &r->fq_irq);
    }
}
