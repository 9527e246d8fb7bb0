/*
 * ExaNet NI: the mailboxes (receiver side): incoming DATA packets checked
 * and written into the mailbox queues, duplicate detection per source
 * channel, the fabric receive path and BAR2.  Part of the NI core
 * (exanet-ni.c; private header exanet-ni.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "sysemu/dma.h"
#include "qom/object.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet_coll.h"
#include "fabric-nic.h"
#include "exanet-int.h"
#include "exanet-ni.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Mailbox (receiver side) */

static gpointer dedup_key(uint32_t node, unsigned iface, unsigned chan)
{
    /* 22 + 6 + 2 bits: fits a pointer on every host QEMU supports */
    return GUINT_TO_POINTER((node << 8) | (iface << 2) | chan);
}

/* The dedup entry of a source channel (created empty). */
static ExanetDedup *exanet_dedup_get(ExanetState *s, uint32_t node,
                                     unsigned iface, unsigned chan)
{
    gpointer key = dedup_key(node, iface, chan);
    ExanetDedup *dd = g_hash_table_lookup(s->dedup, key);

    if (!dd) {
        dd = g_new0(ExanetDedup, 1);
        g_hash_table_insert(s->dedup, key, dd);
    }
    return dd;
}

/* Answer a packet and remember the answer for its retransmissions. */
static void exanet_rx_answer(ExanetState *s, ExanetDedup *dd, uint32_t src,
                             uint8_t type, unsigned iface, unsigned chan,
                             uint8_t reason, uint32_t seq, uint32_t epoch)
{
    dd->epoch = epoch;
    dd->seq = seq;
    dd->type = type;
    dd->reason = reason;
    exanet_send_reply(s, src, type, iface, chan, reason, seq, epoch);
}

/*
 * A message that reached us over the rings, for a mailbox that peers also
 * write into directly: the same lock, write index and head as theirs.
 */
static void exanet_rx_shared(ExanetState *s, ExanetMbox *mb, ExanetDedup *dd,
                             const uint8_t *slot, unsigned va, uint32_t src,
                             unsigned iface, unsigned chan, uint32_t seq,
                             uint32_t epoch)
{
    struct fabric_direct_msg m = {
        .payload = slot, .len = SLOT_FLAGS_OFF, .prot = mb->pdid,
    };
    enum fabric_direct_result r;
    bool wake;

    r = fabric_direct_write(s->nic.dd, s->nic.node_id, va, &m, &wake);
    exanet_mbox_sync(s, va);
    if (r == FABRIC_DIRECT_FULL) {
        exanet_rx_answer(s, dd, src, EXA_PKT_NACK, iface, chan,
                         EXANET_NACK_FULL, seq, epoch);
        return;
    }
    if (r != FABRIC_DIRECT_DONE) {
        EXANET_GUEST_ERR(exanet_err_mbox_dma, "DMA to mailbox %u at 0x%" PRIx64
                         " failed", va, mb->base);
        s->counters[EXANET_CNT_DMA_ERRORS]++;
        exanet_rx_answer(s, dd, src, EXA_PKT_NACK, iface, chan,
                         EXANET_NACK_DISABLED, seq, epoch);
        return;
    }
    trace_exanet_mbox_notify(s->nic.node_id, va, (mb->tail - 1) &
                             (mb->nslots - 1), ((mb->tail - 1) / mb->nslots)
                             & 1 ? 0 : EXANET_SLOT_PHASE);
    fabric_park_wake(FABRIC_WAKE_DEVICE);
    exanet_irq_event(s, &mb->irq, false, va);
    exanet_mbox_direct_update(s, va);   /* a one-shot interrupt went off */
    exanet_rx_answer(s, dd, src, EXA_PKT_ACK, iface, chan, EXANET_NACK_NONE,
                     seq, epoch);
}

static void exanet_rx_data(ExanetState *s, uint32_t src, const uint8_t *b,
                           size_t len)
{
    uint8_t slot[EXANET_MBOX_SLOT_SIZE];
    uint16_t pdid, plen, iface;
    uint64_t gva, va, rank, dnode;
    uint32_t seq, epoch, snode, flags;
    uint8_t chan;
    ExanetMbox *mb;
    ExanetDedup *dd;
    dma_addr_t addr;

    if (len < W_PAYLOAD) {
        s->counters[EXANET_CNT_RX_NACK_BAD]++;    /* cannot even answer */
        return;
    }
    pdid = lduw_le_p(b + W_PDID);
    gva = ldq_le_p(b + W_GVA);
    snode = ldl_le_p(b + W_SRC_NODE);
    iface = lduw_le_p(b + W_SRC_IFACE);
    chan = b[W_SRC_CHAN];
    plen = lduw_le_p(b + W_LEN);
    seq = ldl_le_p(b + W_SEQ);
    epoch = ldl_le_p(b + W_EPOCH);
    va = gva & GVA_VA_MASK;
    rank = (gva >> GVA_RANK_SHIFT) & GVA_RANK_MASK;
    dnode = (gva >> GVA_NODE_SHIFT) & GVA_NODE_MASK;

    if (plen == 0 || plen > EXANET_MAX_PAYLOAD || len != W_PAYLOAD + plen ||
        snode != src || iface >= EXANET_NUM_PKT_IFACES ||
        chan >= EXANET_PKT_CHANNELS || b[W_FLAGS] != 0 ||
        dnode != s->nic.node_id || rank != 0 || va >= EXANET_NUM_MBOX_IFACES) {
        s->counters[EXANET_CNT_RX_NACK_BAD]++;
        exanet_send_reply(s, src, EXA_PKT_NACK, iface, chan,
                          EXANET_NACK_BAD_PACKET, seq, epoch);
        return;
    }
    /*
     * A copy of a packet we already answered (the answer was lost or late
     * and the sender retransmitted) gets the same answer again before any
     * other check, and changes nothing.  A delivered packet is ACKed even if
     * its mailbox has been disabled since; a refused one is refused again
     * even if its mailbox has room by now, because the sender may already
     * have reported the refusal to software, which then sends the message
     * again as a new packet.
     */
    trace_exanet_rx(s->nic.node_id, src, iface, chan, va, seq, plen);
    dd = exanet_dedup_get(s, src, iface, chan);
    if (dd->type && dd->epoch == epoch && dd->seq == seq) {
        trace_exanet_rx_duplicate(s->nic.node_id, src, iface, chan, seq);
        s->counters[EXANET_CNT_RX_DUPLICATES]++;
        exanet_send_reply(s, src, dd->type, iface, chan, dd->reason, seq,
                          epoch);
        return;
    }
    mb = &s->mbox[va];
    exanet_mbox_sync(s, va);
    if (!mb->enabled) {
        s->counters[EXANET_CNT_RX_NACK_DISABLED]++;
        exanet_rx_answer(s, dd, src, EXA_PKT_NACK, iface, chan,
                         EXANET_NACK_DISABLED, seq, epoch);
        return;
    }
    if (pdid == EXANET_PDID_NONE || pdid != mb->pdid) {
        s->counters[EXANET_CNT_RX_NACK_PDID]++;
        exanet_rx_answer(s, dd, src, EXA_PKT_NACK, iface, chan,
                         EXANET_NACK_PDID, seq, epoch);
        return;
    }
    if (mb->tail - mb->head >= mb->nslots) {
        s->counters[EXANET_CNT_RX_NACK_FULL]++;
        mb->full_count++;
        exanet_rx_answer(s, dd, src, EXA_PKT_NACK, iface, chan,
                         EXANET_NACK_FULL, seq, epoch);
        return;
    }

    exanet_mbox_slot_fill(slot, b + W_PAYLOAD, plen, src, iface, chan, seq);
    flags = ((mb->tail / mb->nslots) & 1) ? 0 : EXANET_SLOT_PHASE;
    if (mb->direct) {
        exanet_rx_shared(s, mb, dd, slot, va, src, iface, chan, seq, epoch);
        return;
    }
    stl_le_p(slot + SLOT_FLAGS_OFF, flags);

    addr = mb->base + (dma_addr_t)(mb->tail & (mb->nslots - 1)) *
                      EXANET_MBOX_SLOT_SIZE;
    /* Body first, then the flags word that hands the slot to software. */
    trace_exanet_mbox_write(s->nic.node_id, va, mb->tail & (mb->nslots - 1),
                            addr, plen);
    if (exanet_dma_write(s, addr, slot, SLOT_FLAGS_OFF) != MEMTX_OK ||
        fabric_nic_dma_store(PCI_DEVICE(s), &exanet_dma_depth,
                             addr + SLOT_FLAGS_OFF, flags, 4) != MEMTX_OK) {
        EXANET_GUEST_ERR(exanet_err_mbox_dma, "DMA to mailbox %u at 0x%" PRIx64
                         " failed", (unsigned)va, (uint64_t)addr);
        s->counters[EXANET_CNT_DMA_ERRORS]++;
        exanet_rx_answer(s, dd, src, EXA_PKT_NACK, iface, chan,
                         EXANET_NACK_DISABLED, seq, epoch);
        return;
    }
    trace_exanet_mbox_notify(s->nic.node_id, va, mb->tail & (mb->nslots - 1),
                             flags);
    mb->tail++;
    mb->rx_count++;
    s->counters[EXANET_CNT_RX_DELIVERED]++;
    exanet_irq_event(s, &mb->irq, false, va);
    exanet_rx_answer(s, dd, src, EXA_PKT_ACK, iface, chan, EXANET_NACK_NONE,
                     seq, epoch);
}

/* Fabric receive callback (also used for packets to ourselves). */
void exanet_rx(void *opaque, uint32_t src, uint8_t type,
               const void *payload, size_t len)
{
    ExanetState *s = opaque;

    if (src >= s->nic.num_nodes) {
        s->counters[EXANET_CNT_RX_NACK_BAD]++;
        return;
    }
    switch (type) {
    case EXA_PKT_DATA:
        exanet_rx_data(s, src, payload, len);
        break;
    case EXA_PKT_ACK:
    case EXA_PKT_NACK:
        exanet_rx_reply(s, src, type, payload, len);
        break;
    default:
        s->counters[EXANET_CNT_RX_NACK_BAD]++;
        break;
    }
}

/*
 * Software waiting for a completion spins on STATUS (or BUSY / TAIL) with
 * MMIO reads that take the BQL each time, which can starve the main loop
 * that would process the answer.  So such reads pick up pending fabric
 * packets, and RDMA packets queued to the own node, themselves
 * (non-blocking; the main-loop handler and the RDMA bottom half stay the
 * normal path).
 */
#define EXANET_MMIO_RX_BUDGET 16

void exanet_poll_fabric(ExanetState *s)
{
    if (s->rdma) {
        exanet_rdma_loop_drain(s->rdma, EXANET_RDMA_LOOP_POLL_BUDGET);
    }
    fabric_nic_poll(&s->nic, EXANET_MMIO_RX_BUDGET);
    exanet_retx_check(s);
}

/*
 * The RDMA engine's STATUS read of a transfer in progress: the same poll,
 * and parking when it stays in progress (fabric-park.h).
 */
bool exanet_ni_poll(PCIDevice *ni, bool (*done)(void *opaque), void *opaque)
{
    ExanetState *s = EXANET(ni);

    exanet_poll_fabric(s);
    if (done(opaque)) {
        fabric_nic_poll_found();
        return true;
    }
    fabric_nic_poll_idle(&s->nic);
    return done(opaque);
}

uint32_t exanet_pkt_busy(const ExanetPktIface *ifc)
{
    uint32_t busy = 0;

    for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
        if (ifc->chan[c].state == EXANET_CHAN_ONGOING) {
            busy |= 1u << c;
        }
    }
    return busy;
}

/* ------------------------------------------------------------------ */
/* BAR2: mailbox pages */

static uint32_t exanet_mbox_read32(ExanetState *s, hwaddr off)
{
    unsigned m = off / EXANET_IFACE_PAGE_SIZE;
    unsigned reg = off % EXANET_IFACE_PAGE_SIZE;
    ExanetMbox *mb;

    if (m >= EXANET_NUM_MBOX_IFACES) {
        return 0;
    }
    mb = &s->mbox[m];
    exanet_mbox_sync(s, m);
    switch (reg) {
    case EXANET_MBOX_FEATURES:
        return mb->direct ? EXANET_MBOX_F_DIRECT : 0;
    case EXANET_MBOX_HEAD:
        return mb->enabled ? mb->head & (mb->nslots - 1) : 0;
    case EXANET_MBOX_TAIL:
        return mb->enabled ? mb->tail & (mb->nslots - 1) : 0;
    case EXANET_MBOX_SIZE:
        return mb->enabled ? mb->nslots : 0;
    case EXANET_MBOX_RX_COUNT:
        return mb->rx_count;
    case EXANET_MBOX_FULL_COUNT:
        return mb->full_count;
    }
    return 0;
}

/*
 * libexanet publishes HEAD before it reads TAIL on an empty queue: TAIL at
 * HEAD is a receiver that found nothing (it may park, fabric-park.h).
 */
static void exanet_mbox_poll_park(ExanetState *s, unsigned m)
{
    ExanetMbox *mb = &s->mbox[MIN(m, EXANET_NUM_MBOX_IFACES - 1)];

    if (m < EXANET_NUM_MBOX_IFACES) {
        exanet_mbox_sync(s, m);
    }
    if (m >= EXANET_NUM_MBOX_IFACES || !mb->enabled || mb->tail != mb->head) {
        fabric_nic_poll_found();
        return;
    }
    fabric_nic_poll_idle(&s->nic);
}

uint64_t exanet_mbox_read(void *opaque, hwaddr off, unsigned size)
{
    ExanetState *s = opaque;
    uint64_t v;

    if (exanet_reentered()) {
        return 0;
    }
    if ((off % EXANET_IFACE_PAGE_SIZE) == EXANET_MBOX_TAIL) {
        s->mbox_tail_reads++;
        exanet_poll_fabric(s);
        exanet_mbox_poll_park(s, off / EXANET_IFACE_PAGE_SIZE);
    }
    v = exanet_mbox_read32(s, off);

    if (size == 8) {
        v |= (uint64_t)exanet_mbox_read32(s, off + 4) << 32;
    }
    return v;
}

void exanet_mbox_write(void *opaque, hwaddr off, uint64_t val,
                       unsigned size)
{
    ExanetState *s = opaque;
    unsigned m = off / EXANET_IFACE_PAGE_SIZE;
    unsigned reg = off % EXANET_IFACE_PAGE_SIZE;

    if (m < EXANET_NUM_MBOX_IFACES && reg == EXANET_MBOX_HEAD &&
        !exanet_reentered()) {
        exanet_mbox_head(s, m, (uint32_t)val);
    }
}
