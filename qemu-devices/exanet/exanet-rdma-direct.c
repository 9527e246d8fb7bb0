/*
 * ExaNet NI, RDMA engine: writes and reads by direct delivery
 * (Documentation/fabric.md section 9).  The initiator's model does the
 * target's part itself: it copies between its own guest RAM and the
 * target's, through the translations the target's IOMMU gave the target's
 * own model (the translation cache of fabric-direct.h, keyed by rank and
 * VA page), and writes the target's notification record.  One copy, and
 * nothing runs on the target's host threads.  Whatever the initiator cannot
 * do so (a page either side has not translated yet, another PDID, the
 * target's rank interrupt armed, faults injected on the links) takes the
 * rings, where the target checks, translates, fills the cache, faults on
 * demand and reports as before.
 *
 * The target side: every DMA of the engine fills the cache for the pages
 * it reached (exanet_rdma_direct_fill()); the driver's read of the rank's
 * EXANET_CTX_CFG_RANK after an IOMMU unmap, and any change of a rank's
 * context, end the cache's epoch (exanet_rdma_direct_fence()).  Each rank
 * has a gate record (its PDID; held while its interrupt is armed, so that
 * the owner raises it) under whose lock a peer writes data and notification.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"
#include "trace.h"

/* The cache's address space: a rank's VAs at rank << 48 */
#define RDMA_DIRECT_ADDR(rank, va) \
    ((uint64_t)(rank) << EXANET_RDMA_VA_BITS | (va))
/* A rank's gate record, after the mailboxes' queue records */
#define RDMA_GATE_Q(rank)       (EXANET_NUM_MBOX_IFACES + (rank))
#define RDMA_NOTIF_FLAGS_OFF    offsetof(struct exanet_rdma_notif, flags)
/*
 * The copy runs in the thread that triggered the transfer, with the BQL
 * held (a few ms for this much); larger transfers take the rings, whose
 * fabric thread moves them block by block.
 */
#define RDMA_DIRECT_MAX_LEN     (16u << 20)

/* Counters peers add to at the target (fabric_direct_count) */
enum {
    DC_RX_BLOCKS,
    DC_RX_BYTES,
    DC_NOTIFICATIONS,
    DC_READS_SERVED,
    DC_NOTIFS_RANK0,    /* + rank: records written for it */
};
QEMU_BUILD_BUG_ON(DC_NOTIFS_RANK0 + EXANET_RDMA_NUM_RANKS >
                  FABRIC_DIRECT_MODEL_COUNTERS);

static struct fabric_direct *rdma_dd(ExanetRdma *r)
{
    return r->nic && fabric_nic_direct_on(r->nic) ? r->nic->dd : NULL;
}

/* ------------------------------------------------------------------ */
/* Target side */

void exanet_rdma_direct_fill(ExanetRdma *r, unsigned rank, uint64_t va,
                             uint64_t len)
{
    struct fabric_direct *dd = rdma_dd(r);
    uint64_t a, end = va + len;

    if (!dd || !len || rank >= EXANET_RDMA_NUM_RANKS || !r->ctx[rank] ||
        r->ctx_pdid[rank] == EXANET_PDID_NONE) {
        return;
    }
    for (a = va & ~(uint64_t)(FABRIC_DIRECT_PAGE - 1); a < end;
         a += FABRIC_DIRECT_PAGE) {
        uint64_t key = RDMA_DIRECT_ADDR(rank, a) / FABRIC_DIRECT_PAGE;
        uint64_t ram = 0;
        unsigned perm;

        if (fabric_direct_xlat_cached(dd, key)) {
            continue;
        }
        perm = fabric_nic_direct_page(r->ctx[rank], a, &ram);
        if (perm) {
            fabric_direct_xlat_fill(dd, key, ram, rank, perm,
                                    r->ctx_pdid[rank]);
        }
    }
}

void exanet_rdma_direct_fence(ExanetRdma *r, unsigned rank, const char *why)
{
    struct fabric_direct *dd = rdma_dd(r);

    if (dd && fabric_direct_xlat_fence(dd)) {
        trace_exanet_rdma_direct_fence(r->node_id, rank, why);
    }
}

/*
 * Rank k's context changed (enable, PDID, interrupt, reset): no peer uses
 * a translation of its old state once this returns, and its gate says
 * whether peers may write into it.
 */
void exanet_rdma_direct_ctx(ExanetRdma *r, unsigned k)
{
    struct fabric_direct *dd = rdma_dd(r);
    bool on = r->ctx[k] && r->ctx_en[k] && r->ctx_pdid[k] != EXANET_PDID_NONE;
    bool hold = r->ctx_irq[k] & EXANET_IRQ_ARMED;

    if (!dd) {
        return;
    }
    if (!on) {
        if (r->gate_on[k]) {
            fabric_direct_invalidate(dd, RDMA_GATE_Q(k));
            r->gate_on[k] = false;
            trace_exanet_rdma_direct_gate(r->node_id, k, 0, false, false);
        }
        exanet_rdma_direct_fence(r, k, "context");
        return;
    }
    if (!r->gate_on[k] || r->gate_pdid[k] != r->ctx_pdid[k]) {
        if (r->gate_on[k]) {
            fabric_direct_invalidate(dd, RDMA_GATE_Q(k));
        }
        exanet_rdma_direct_fence(r, k, "context");
        r->gate_on[k] = !fabric_direct_export_gate(dd, RDMA_GATE_Q(k),
                                                    r->ctx_pdid[k]);
        r->gate_pdid[k] = r->ctx_pdid[k];
        r->gate_hold[k] = false;
    }
    if (r->gate_on[k] && hold != r->gate_hold[k]) {
        fabric_direct_set_hold(dd, RDMA_GATE_Q(k), hold);
        r->gate_hold[k] = hold;
    }
    trace_exanet_rdma_direct_gate(r->node_id, k, r->gate_pdid[k], hold,
                                  r->gate_on[k]);
}

/* Fold what peers counted in our shared header into the counters. */
void exanet_rdma_direct_sync(ExanetRdma *r)
{
    static const unsigned rcnt[DC_NOTIFS_RANK0] = {
        [DC_RX_BLOCKS] = EXANET_RCNT_RX_BLOCKS,
        [DC_RX_BYTES] = EXANET_RCNT_RX_BYTES,
        [DC_NOTIFICATIONS] = EXANET_RCNT_NOTIFICATIONS,
        [DC_READS_SERVED] = EXANET_RCNT_READS_SERVED,
    };
    struct fabric_direct *dd = r->nic ? r->nic->dd : NULL;

    for (unsigned i = 0; dd && i < FABRIC_DIRECT_MODEL_COUNTERS; i++) {
        uint64_t v = fabric_direct_counter(dd, i);
        uint64_t n = v - r->dc_seen[i];

        r->dc_seen[i] = v;
        if (i < DC_NOTIFS_RANK0) {
            r->cnt[rcnt[i]] += n;
        } else if (i < DC_NOTIFS_RANK0 + EXANET_RDMA_NUM_RANKS) {
            r->notifs[i - DC_NOTIFS_RANK0] += n;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Initiator side */

typedef struct RdmaDirect {
    ExanetRdma *r;
    RdmaChan *ch;
    struct fabric_direct *dd;
    struct fabric_direct_spans own;     /* our side, as host memory */
    uint64_t len;
    bool read;
    uint8_t tail[8];                    /* read: our last bytes, stored last */
    uint32_t tail_len;
    struct exanet_rdma_notif n;         /* write: the target's record */
} RdmaDirect;

/*
 * A piece of the target's memory: a write copies ours into it, a read
 * copies it into ours.  The last quadword becomes visible only after
 * everything below it (software polls a tail flag): a full fence, as
 * memcpy may have used non-temporal stores.
 */
static void rdma_direct_piece(void *opaque, uint8_t *host, uint32_t off,
                              uint32_t len)
{
    RdmaDirect *d = opaque;
    uint32_t head = len;

    if (off + len == d->len && d->len > 8) {
        head = len > 8 ? len - 8 : 0;
    }
    fabric_direct_spans_move(&d->own, host, head, d->read);
    if (head == len) {
        return;
    }
    if (d->read) {
        d->tail_len = len - head;
        memcpy(d->tail, host + head, d->tail_len);
        return;
    }
    smp_mb();   /* the tail after the bytes below it, also non-temporal */
    fabric_direct_spans_move(&d->own, host + head, len - head, false);
}

/* The notification record: body, then the flags word (release). */
static void rdma_direct_notif_piece(void *opaque, uint8_t *host, uint32_t off,
                                    uint32_t len)
{
    RdmaDirect *d = opaque;
    const uint8_t *rec = (const uint8_t *)&d->n;
    uint32_t body = off < RDMA_NOTIF_FLAGS_OFF ?
                    MIN(len, RDMA_NOTIF_FLAGS_OFF - off) : 0;

    memcpy(host, rec + off, body);
    if (off + len == sizeof(d->n)) {
        smp_mb();   /* the record's flags after its body and the data */
        qatomic_store_release((uint32_t *)(host + len - 4),
                              cpu_to_le32(EXANET_RDMA_N_VALID));
    }
}

/* Under the target rank's gate: the data, then the notification. */
static bool rdma_direct_write_gated(void *opaque)
{
    RdmaDirect *d = opaque;
    RdmaChan *ch = d->ch;

    if (fabric_direct_access(d->dd, ch->rnode,
                             RDMA_DIRECT_ADDR(ch->rrank, ch->remote_va),
                             ch->len, ch->rrank, FABRIC_DIRECT_X_WRITE,
                             d->r->page[ch->page].pdid, rdma_direct_piece,
                             d) != FABRIC_DIRECT_DONE) {
        return false;
    }
    return !ch->notify_va ||
           fabric_direct_access(d->dd, ch->rnode,
                                RDMA_DIRECT_ADDR(ch->rrank, ch->notify_va),
                                sizeof(d->n), ch->rrank, FABRIC_DIRECT_X_WRITE,
                                d->r->page[ch->page].pdid,
                                rdma_direct_notif_piece, d) ==
           FABRIC_DIRECT_DONE;
}

/* Our side of the transfer as host memory, from our own cache. */
static bool rdma_direct_own(RdmaDirect *d)
{
    ExanetRdma *r = d->r;
    RdmaChan *ch = d->ch;

    return fabric_direct_access(d->dd, r->node_id,
                                RDMA_DIRECT_ADDR(ch->rank, ch->local_va),
                                ch->len, ch->rank,
                                d->read ? FABRIC_DIRECT_X_WRITE :
                                FABRIC_DIRECT_X_READ,
                                r->ctx_pdid[ch->rank], fabric_direct_spans_add,
                                &d->own) == FABRIC_DIRECT_DONE;
}

static bool rdma_direct_write(RdmaDirect *d, uint32_t hops)
{
    RdmaChan *ch = d->ch;
    ExanetRdma *r = d->r;
    enum fabric_direct_result res;
    bool wake;

    d->n.tag = cpu_to_le64(ch->tag);
    d->n.length = cpu_to_le64(ch->len);
    d->n.node = cpu_to_le32(r->node_id);
    d->n.rank = ch->rank;
    d->n.op = EXANET_RDMA_OP_WRITE;
    d->n.page = ch->page;
    d->n.chan = cpu_to_le16(ch->chan);
    res = fabric_direct_gated(d->dd, ch->rnode, RDMA_GATE_Q(ch->rrank),
                              r->page[ch->page].pdid, hops,
                              rdma_direct_write_gated, d, &wake);
    if (res != FABRIC_DIRECT_DONE) {
        return false;
    }
    fabric_direct_count(d->dd, ch->rnode, DC_RX_BLOCKS,
                        DIV_ROUND_UP(ch->len, RDMA_BLOCK));
    fabric_direct_count(d->dd, ch->rnode, DC_RX_BYTES, ch->len);
    if (ch->notify_va) {
        fabric_direct_count(d->dd, ch->rnode, DC_NOTIFICATIONS, 1);
        fabric_direct_count(d->dd, ch->rnode, DC_NOTIFS_RANK0 + ch->rrank, 1);
    }
    fabric_nic_direct_done(r->nic, ch->rnode, wake);
    return true;
}

static bool rdma_direct_read(RdmaDirect *d)
{
    RdmaChan *ch = d->ch;
    ExanetRdma *r = d->r;

    if (fabric_direct_access(d->dd, ch->rnode,
                             RDMA_DIRECT_ADDR(ch->rrank, ch->remote_va),
                             ch->len, ch->rrank, FABRIC_DIRECT_X_READ,
                             r->page[ch->page].pdid, rdma_direct_piece, d) !=
        FABRIC_DIRECT_DONE) {
        return false;
    }
    smp_mb();   /* our tail after the bytes below it */
    fabric_direct_spans_move(&d->own, d->tail, d->tail_len, true);
    fabric_direct_count(d->dd, ch->rnode, DC_READS_SERVED, 1);
    r->cnt[EXANET_RCNT_RX_BLOCKS] += DIV_ROUND_UP(ch->len, RDMA_BLOCK);
    r->cnt[EXANET_RCNT_RX_BYTES] += ch->len;
    /* the initiator's notification of a read, as the rings path writes it */
    if (ch->notify_va) {
        if (!exanet_rdma_write_notif(r, ch->rank, ch->notify_va, ch->tag,
                                     ch->len, ch->rnode, ch->rrank,
                                     EXANET_RDMA_OP_READ, 0, ch->page,
                                     ch->chan, 0)) {
            return false;   /* the rings write data and record again */
        }
        r->cnt[EXANET_RCNT_NOTIFICATIONS]++;
        exanet_rdma_rank_event(r, ch->rank);
    }
    return true;
}

/*
 * Over the torus, as the rings would carry it: a write's data from us to
 * the target; a read's request to the target, then its data back to us.
 */
static bool rdma_direct_route(RdmaDirect *d, uint32_t *hops)
{
    FabricNic *nic = d->r->nic;
    RdmaChan *ch = d->ch;

    if (!d->read) {
        return fabric_nic_direct_route(nic, ch->rnode, ch->len, hops);
    }
    return fabric_nic_direct_route(nic, ch->rnode, sizeof(RdReqHdr), hops) &&
           fabric_nic_direct_route_from(nic, ch->rnode, d->r->node_id,
                                        ch->len, hops);
}

bool exanet_rdma_direct(ExanetRdma *r, RdmaChan *ch)
{
    RdmaDirect d = {
        .r = r, .ch = ch, .dd = rdma_dd(r), .len = ch->len,
        .read = ch->chan >= EXANET_RDMA_WCHANS,
    };
    uint32_t hops;
    bool ok;

    if (!d.dd || ch->rnode == r->node_id || ch->len > RDMA_DIRECT_MAX_LEN) {
        return false;
    }
    ok = rdma_direct_own(&d) && rdma_direct_route(&d, &hops) &&
         (d.read ? rdma_direct_read(&d) : rdma_direct_write(&d, hops));
    fabric_direct_spans_free(&d.own);
    trace_exanet_rdma_direct(r->node_id, ch->page, ch->chan, ch->rnode,
                             ch->rrank, ch->len, ok);
    if (ok) {
        exanet_rdma_chan_complete(ch, 0);
    }
    return ok;
}
