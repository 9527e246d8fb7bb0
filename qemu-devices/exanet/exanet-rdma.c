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
 * The parts of the engine: exanet-rdma-int.h (state, bulk record
 * headers, what the parts share), exanet-rdma-tx.c (send unit: sending
 * transfers and channels), exanet-rdma-rx.c (receive unit, dispatch),
 * exanet-rdma-read.c (read responder), exanet-rdma-odp.c (on-demand
 * paging: fault queue); this file: DMA through the contexts, transport,
 * registers, BAR3 and life cycle.
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
#include "exanet-rdma-int.h"
#include "trace.h"

/* An event for rank (record written, transfer completed): IRQ if armed. */
void exanet_rdma_rank_event(ExanetRdma *r, unsigned rank)
{
    if (rank < EXANET_RDMA_NUM_RANKS) {
        exanet_irq_rank_event(r->ni, rank, &r->ctx_irq[rank]);
        if (r->gate_hold[rank]) {
            exanet_rdma_direct_ctx(r, rank);    /* one-shot: disarmed */
        }
    }
}

gpointer exanet_rdma_rx_key(uint32_t node, unsigned page, unsigned chan)
{
    return GUINT_TO_POINTER((node << 10) | (page << 6) | chan);
}

/*
 * Run rdma_bh soon: in the fabric receive thread (SCHED_FIFO when
 * permitted) if there is one, else in a main-loop bottom half.
 */
void exanet_rdma_kick(ExanetRdma *r)
{
    if (r->fabric) {
        fabric_qemu_kick(r->fabric);
    } else {
        qemu_bh_schedule(r->bh);
    }
}

static void rdma_link_timer(void *opaque)
{
    exanet_rdma_kick(opaque);
}

/* A transfer waits for a busy link: pump the stalled ones again soon. */
void exanet_rdma_link_retry(ExanetRdma *r)
{
    if (!timer_pending(r->link_timer)) {
        timer_mod(r->link_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                                 RDMA_LINK_RETRY_NS);
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

MemTxResult exanet_rdma_dma(ExanetRdma *r, unsigned rank, uint64_t va,
                            void *buf, uint64_t len, DMADirection dir)
{
    PCIDevice *ctx;
    MemTxResult res = rdma_ctx(r, rank, va, len, &ctx);

    if (res == MEMTX_OK) {
        res = fabric_nic_dma_rw(ctx, &exanet_dma_depth, va, buf, len, dir);
    }
    if (res == MEMTX_OK) {
        /* peers then reach these pages directly */
        exanet_rdma_direct_fill(r, rank, va, len);
    }
    return res;
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
bool exanet_rdma_write_notif(ExanetRdma *r, unsigned rank, uint64_t va,
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
    if (exanet_rdma_dma(r, rank, va, &n,
                        offsetof(struct exanet_rdma_notif, flags),
                        DMA_DIRECTION_FROM_DEVICE) != MEMTX_OK ||
        rdma_store_flags(r, rank, va + offsetof(struct exanet_rdma_notif, flags),
                         flags | EXANET_RDMA_N_VALID) != MEMTX_OK) {
        r->cnt[EXANET_RCNT_RX_DMA_ERRORS]++;
        return false;
    }
    r->notifs[rank]++;
    return true;
}

/* ------------------------------------------------------------------ */
/* Transport: bulk rings, or the local queue for our own node */

void *exanet_rdma_reserve(ExanetRdma *r, uint32_t dst, size_t hlen,
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

void exanet_rdma_commit(ExanetRdma *r, uint32_t dst, uint8_t type)
{
    trace_exanet_rdma_send(r->node_id, dst, type);
    if (dst == r->node_id) {
        RdmaLoop *l = r->loop_rsv;

        r->loop_rsv = NULL;
        l->type = type;
        QSIMPLEQ_INSERT_TAIL(&r->loop, l, link);
        exanet_rdma_kick(r);
        return;
    }
    fabric_bulk_commit(fabric_qemu_fabric(r->fabric), type);
}

void exanet_rdma_cancel(ExanetRdma *r, uint32_t dst)
{
    if (dst == r->node_id) {
        g_free(r->loop_rsv);
        r->loop_rsv = NULL;
    } else {
        fabric_bulk_cancel(fabric_qemu_fabric(r->fabric));
    }
}

/* Small control packet; lost if the ring is full (retransmission covers). */
void exanet_rdma_send_small(ExanetRdma *r, uint32_t dst, uint8_t type,
                            const void *hdr, size_t hlen)
{
    int err;
    void *p = exanet_rdma_reserve(r, dst, hlen, 0, &err);

    if (p) {
        memcpy(p, hdr, hlen);
        exanet_rdma_commit(r, dst, type);
    }
}

void exanet_rdma_send_ack(ExanetRdma *r, uint32_t dst, const RdBlkHdr *h,
                          uint8_t code)
{
    RdAckHdr a = {
        .origin_node = h->origin_node, .seq = h->seq, .epoch = h->epoch,
        .block = h->block, .page = h->page, .chan = h->chan, .op = h->op,
        .code = code, .xmit = h->xmit,
    };

    exanet_rdma_send_small(r, dst, RD_ACK, &a, sizeof(a));
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
    exanet_coll_page_disabled(r->coll, pg - r->page);
    for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
        exanet_rdma_chan_abort(&pg->ch[c]);
    }
}

uint32_t exanet_rdma_ctrl_read(ExanetRdma *r, hwaddr off)
{
    if (exanet_coll_ctrl_owns(off)) {
        return exanet_coll_ctrl_read(r->coll, off);
    }
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
        uint64_t v;

        exanet_rdma_direct_sync(r);
        v = r->cnt[(off - EXANET_REG_RDMA_COUNTER(0)) / 8];
        return fabric_nic_reg_part(v, off, 4);
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
    if (exanet_coll_ctrl_owns(off)) {
        exanet_coll_ctrl_write(r->coll, off, val);
        return;
    }
    if (off >= EXANET_REG_CTX_BASE(0) &&
        off < EXANET_REG_CTX_BASE(EXANET_RDMA_NUM_RANKS)) {
        unsigned k = (off - EXANET_REG_CTX_BASE(0)) / 0x10;

        switch (off & 0xf) {
        case EXANET_CTX_PDID:
            r->ctx_pdid[k] = val & EXANET_PDID_MAX;
            exanet_rdma_direct_ctx(r, k);
            return;
        case EXANET_CTX_ENABLE:
            /* Synchronous: no DMA through the context after this returns. */
            r->ctx_en[k] = val & EXANET_CTX_EN_ON;
            r->ctx_odp[k] = r->ctx_en[k] && (val & EXANET_CTX_EN_ODP);
            r->ctx_irq[k] = 0;
            if (!r->ctx_odp[k]) {
                /* Held blocks replay now and fail the old way. */
                exanet_rdma_fault_resume(r, 1u << k, false);
            }
            exanet_rdma_direct_ctx(r, k);
            return;
        case EXANET_CTX_IRQ:
            exanet_irq_arm(r->ni, &r->ctx_irq[k], val, "rank", k);
            exanet_rdma_direct_ctx(r, k);
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
                pg->notifs_seen = r->notifs[pg->rank];
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
                exanet_rdma_fault_resume(r, ~0u, true);
            }
            return;
        case EXANET_REG_RDMA_FQ_IRQ:
            exanet_rdma_fq_arm(r, val);
            return;
        case EXANET_REG_RDMA_FQ_RESUME:
            exanet_rdma_fault_resume(r, val, false);
            return;
        case EXANET_REG_RDMA_FQ_FAIL:
            exanet_rdma_fault_fail(r, val);
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

typedef struct RdmaNotifPoll {
    const ExanetRdma *r;
    const RdmaPage *pg;
} RdmaNotifPoll;

static bool rdma_page_notified(void *opaque)
{
    const RdmaNotifPoll *np = opaque;

    return np->r->notifs[np->pg->rank] != np->pg->notifs_seen;
}

/*
 * NOTIFS: software waits for a record in memory.  Take in what the fabric
 * and the own-node queue hold, and count an unchanged value as an empty
 * poll (the vCPU may park until something arrives, fabric-park.h).
 */
static uint64_t rdma_page_notifs(ExanetRdma *r, RdmaPage *pg)
{
    RdmaNotifPoll np = { .r = r, .pg = pg };

    exanet_rdma_direct_sync(r);
    if (exanet_ni_poll(r->ni, rdma_page_notified, &np)) {
        /* only polls that find something: a waiting guest polls a lot */
        pg->notifs_seen = r->notifs[pg->rank];
        trace_exanet_rdma_notifs_poll(r->node_id, pg - r->page, pg->notifs_seen);
    }
    return pg->notifs_seen;
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
    case EXANET_RDMA_S_NOTIFS:
        v = rdma_page_notifs(r, &r->page[p]);
        break;
    default:
        return 0;
    }
    return fabric_nic_reg_part(v, reg, size);
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
        exanet_rdma_trigger(r, p, c, size == 8 ? val : (uint32_t)val);
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
    r->peer_rd_blocks = g_new0(uint64_t, num_nodes);
    r->srtt_ns = g_new0(int64_t, num_nodes);
    r->rttvar_ns = g_new0(int64_t, num_nodes);
    r->retx_max = retx_max;
    r->rx = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                  rdma_rx_free);
    r->resp = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                    exanet_rdma_resp_free);
    QTAILQ_INIT(&r->active);
    QSIMPLEQ_INIT(&r->loop);
    r->bh = qemu_bh_new(exanet_rdma_kick_work, r);
    r->link_timer = timer_new_ns(QEMU_CLOCK_REALTIME, rdma_link_timer, r);
    memory_region_init_io(&r->bar, OBJECT(ni), &rdma_bar_ops, r,
                          "exanet-rdma", EXANET_BAR_RDMA_SIZE);
    fabric_nic_parkable(&r->bar);
    r->coll = exanet_coll_new(r, OBJECT(ni));
    for (unsigned p = 0; p < EXANET_RDMA_PAGES; p++) {
        for (unsigned c = 0; c < EXANET_RDMA_CHANS; c++) {
            RdmaChan *ch = &r->page[p].ch[c];

            ch->r = r;
            ch->page = p;
            ch->chan = c;
            ch->tx.r = r;
            if (c >= EXANET_RDMA_WCHANS) {
                ch->rtimer = timer_new_ns(QEMU_CLOCK_REALTIME,
                                          exanet_rdma_rchan_timer, ch);
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

MemoryRegion *exanet_rdma_coll_bar(ExanetRdma *r)
{
    return exanet_coll_bar(r->coll);
}

void exanet_rdma_coll_direct(ExanetRdma *r, uint32_t members)
{
    exanet_coll_set_direct(r->coll, members);
}

void exanet_rdma_set_fabric(ExanetRdma *r, FabricNic *nic)
{
    r->nic = nic;
    r->fabric = nic->fq;
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
    for (unsigned k = 0; k < EXANET_RDMA_NUM_RANKS; k++) {
        exanet_rdma_direct_ctx(r, k);
    }
    exanet_coll_reset(r->coll);
    r->fq_base = 0;
    r->fq_size = r->fq_head = r->fq_tail = r->fq_irq = 0;
    r->nheld = 0;
    exanet_rdma_direct_sync(r);     /* what peers counted before is gone */
    memset(r->cnt, 0, sizeof(r->cnt));
    memset(r->notifs, 0, sizeof(r->notifs));
    memset(r->srtt_ns, 0, r->num_nodes * sizeof(*r->srtt_ns));
    memset(r->rttvar_ns, 0, r->num_nodes * sizeof(*r->rttvar_ns));
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
    timer_del(r->link_timer);
    for (unsigned k = 0; k < EXANET_RDMA_NUM_RANKS; k++) {
        r->ctx[k] = NULL;
    }
    r->fabric = NULL;
    r->nic = NULL;
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
        exanet_rdma_direct_ctx(r, rank);
    }
}
