/*
 * ExaNet NI: emulated PCI device (packetizer + mailbox engines).
 *
 * The register map, doorbell/status encodings and the mailbox slot format
 * are defined by uapi/exanet.h; Documentation/exanet/hardware.md describes
 * the semantics.  Packets between nodes travel over the host-side fabric
 * (common/fabric.[ch]); packets to our own node are delivered directly.
 *
 * Locking: every entry point (MMIO callbacks, fabric fd handlers, timers
 * on the main loop) runs under the BQL, which protects all device state.
 * Mailbox DMA is synchronous inside those callbacks, so once an MMIO write
 * that disables a mailbox returns, no DMA into its queue can follow.
 *
 * Interrupts: MSI-X in BAR4 (table + PBA, EXANET_NUM_IRQ_VECTORS vectors).
 * A mailbox or an RDMA rank armed by the kernel fires once: the NI writes
 * the message (or record) first, then disarms the source, sets its bit in
 * the PENDING register and sends the MSI-X message.
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
#include "trace.h"

OBJECT_DECLARE_SIMPLE_TYPE(ExanetState, EXANET)

#define EXANET_RETX_CAP_US      200000u    /* per-retry timeout cap */
#define EXANET_RETX_MIN_US      10u
#define EXANET_RETX_MAX_RETRIES 255u       /* STATUS has 8 bits for it */

/* Fabric packet types (the fabric header's 'type'). */
enum {
    EXA_PKT_DATA = 1,
    EXA_PKT_ACK = 2,
    EXA_PKT_NACK = 3,
};

/*
 * DATA packet body, little endian:
 *   0  u16  destination PDID            \  80-bit GVA
 *   2  u64  node << 42 | rank << 39 | VA /  (VA = target mailbox number)
 *  10  u32  source node
 *  14  u16  source packetizer interface
 *  16  u8   source channel
 *  17  u8   flags (0)
 *  18  u16  payload length (1..64)
 *  20  u32  sequence number (per source channel)
 *  24  u32  epoch of the sending device
 *  28  ...  payload
 */
#define W_PDID      0
#define W_GVA       2
#define W_SRC_NODE  10
#define W_SRC_IFACE 14
#define W_SRC_CHAN  16
#define W_FLAGS     17
#define W_LEN       18
#define W_SEQ       20
#define W_EPOCH     24
#define W_PAYLOAD   28
#define W_DATA_MAX  (W_PAYLOAD + EXANET_MAX_PAYLOAD)

/*
 * ACK / NACK body, little endian:
 *   0 u16 interface, 2 u8 channel, 3 u8 NACK reason, 4 u32 seq, 8 u32 epoch
 */
#define A_IFACE     0
#define A_CHAN      2
#define A_REASON    3
#define A_SEQ       4
#define A_EPOCH     8
#define A_SIZE      12

#define GVA_VA_MASK    ((1ull << EXANET_GVA_VA_BITS) - 1)
#define GVA_RANK_SHIFT EXANET_GVA_VA_BITS
#define GVA_RANK_MASK  ((1ull << EXANET_GVA_RANK_BITS) - 1)
#define GVA_NODE_SHIFT (EXANET_GVA_VA_BITS + EXANET_GVA_RANK_BITS)
#define GVA_NODE_MASK  ((1ull << EXANET_GVA_NODE_BITS) - 1)

/* Offset of 'flags' in struct exanet_mbox_slot: written last. */
#define SLOT_FLAGS_OFF offsetof(struct exanet_mbox_slot, flags)

typedef struct ExanetState ExanetState;

typedef struct ExanetChan {
    ExanetState *s;
    uint8_t iface;
    uint8_t chan;
    uint8_t state;
    uint8_t reason;
    uint8_t retries;
    uint32_t seq;
    uint32_t dst_node;
    uint8_t payload[EXANET_MAX_PAYLOAD];
    uint8_t pkt[W_DATA_MAX];
    uint32_t pkt_len;
    int64_t deadline;       /* retransmission due (QEMU_CLOCK_REALTIME ns) */
} ExanetChan;

typedef struct ExanetPktIface {
    uint32_t pdid;
    bool enabled;
    ExanetChan chan[EXANET_PKT_CHANNELS];
} ExanetPktIface;

typedef struct ExanetMbox {
    /* registers as written by the driver */
    uint32_t pdid;
    uint32_t qbase_lo;
    uint32_t qbase_hi;
    uint32_t nslots_reg;
    /* latched when enabled */
    bool enabled;
    uint64_t base;
    uint32_t nslots;
    uint32_t head;          /* free running */
    uint32_t tail;          /* free running; phase = !((tail / nslots) & 1) */
    uint32_t rx_count;
    uint32_t full_count;
    uint32_t irq;           /* EXANET_IRQ_ARM(vector) or 0 */
} ExanetMbox;

/*
 * Receive-side duplicate detection per (source node, iface, chan): the last
 * packet answered from that channel and the answer it got.  A channel has one
 * packet outstanding, so one entry is enough.
 */
typedef struct ExanetDedup {
    uint32_t epoch;
    uint32_t seq;
    uint8_t type;           /* EXA_PKT_ACK or EXA_PKT_NACK; 0: none yet */
    uint8_t reason;         /* EXANET_NACK_* for a NACK */
} ExanetDedup;

struct ExanetState {
    PCIDevice parent_obj;

    MemoryRegion bar_ctrl;
    MemoryRegion bar_pkt;
    MemoryRegion bar_mbox;
    ExanetRdma *rdma;       /* RDMA engine (exanet_rdma.c), BAR3 */

    FabricNic nic;          /* properties and fabric transport */
    uint32_t epoch;
    uint32_t retx_timeout_us;
    uint32_t retx_max;
    uint32_t coll_direct;   /* property coll-direct-members */
    QEMUTimer *retx_timer;  /* backstop for the channels' retransmissions */
    int64_t retx_due;       /* see exanet_chan_arm() */
    uint64_t counters[EXANET_NUM_COUNTERS];
    uint64_t corrupt_base;  /* fabric drop counters at the last reset */

    ExanetPktIface pkt[EXANET_NUM_PKT_IFACES];
    ExanetMbox mbox[EXANET_NUM_MBOX_IFACES];
    GHashTable *dedup;

    bool msix;              /* property: off = no interrupts (older NIs) */
    uint64_t irq_mbox_pending;
    uint32_t irq_rank_pending;
    uint32_t irq_count;
};

unsigned exanet_dma_depth;

static bool exanet_reentered(void)
{
    return fabric_nic_reentered(exanet_dma_depth, TYPE_EXANET);
}

static MemTxResult exanet_dma_write(ExanetState *s, dma_addr_t addr,
                                    const void *buf, dma_addr_t len)
{
    return fabric_nic_dma_rw(PCI_DEVICE(s), &exanet_dma_depth, addr,
                             (void *)buf, len, DMA_DIRECTION_FROM_DEVICE);
}

/* ------------------------------------------------------------------ */

static uint64_t exanet_fabric_bad(ExanetState *s)
{
    struct fabric_stats st;

    if (!s->nic.fq) {
        return 0;
    }
    fabric_get_stats(fabric_qemu_fabric(s->nic.fq), &st);
    return st.rx_bad_magic + st.rx_bad_version + st.rx_bad_length +
           st.rx_bad_crc + st.rx_bad_addr;
}

static uint64_t exanet_counter(ExanetState *s, unsigned n)
{
    uint64_t v = s->counters[n];

    if (n == EXANET_CNT_RX_CORRUPT) {
        v += exanet_fabric_bad(s) - s->corrupt_base;
    }
    return v;
}

static void exanet_rx(void *opaque, uint32_t src, uint8_t type,
                      const void *payload, size_t len);

/* ------------------------------------------------------------------ */
/* Interrupts */

static unsigned exanet_irq_vectors(ExanetState *s)
{
    return s->msix ? EXANET_NUM_IRQ_VECTORS : 0;
}

/*
 * An event of a source whose IRQ register is *irq: if armed, disarm it
 * (one-shot), mark it pending and raise its vector.  The caller has
 * written the message / record before.
 */
static void exanet_irq_event(ExanetState *s, uint32_t *irq, bool rank,
                             unsigned src)
{
    unsigned vec = EXANET_IRQ_VECTOR(*irq);

    if (!(*irq & EXANET_IRQ_ARMED)) {
        return;
    }
    trace_exanet_irq(s->nic.node_id, rank ? "rank" : "mailbox", src, vec);
    *irq = 0;
    if (rank) {
        s->irq_rank_pending |= 1u << src;
    } else {
        s->irq_mbox_pending |= 1ull << src;
    }
    s->irq_count++;
    /* Masked or MSI-X disabled: the PBA keeps it pending. */
    if (msix_present(PCI_DEVICE(s))) {
        msix_notify(PCI_DEVICE(s), vec);
    }
}

void exanet_irq_rank_event(PCIDevice *ni, unsigned rank, uint32_t *irq)
{
    exanet_irq_event(EXANET(ni), irq, true, rank);
}

/* A kernel write to a source's IRQ register; false if refused. */
bool exanet_irq_arm(PCIDevice *ni, uint32_t *irq, uint32_t val,
                    const char *what, unsigned src)
{
    ExanetState *s = EXANET(ni);

    if (!(val & EXANET_IRQ_ARMED)) {
        *irq = 0;
        return true;
    }
    if (val & ~EXANET_IRQ_ARM(EXANET_IRQ_VECTOR_MASK) ||
        EXANET_IRQ_VECTOR(val) >= exanet_irq_vectors(s)) {
        EXANET_GUEST_ERR(exanet_err_irq_arm, "%s %u: bad IRQ arm value 0x%x "
                         "(%u vectors), stays disarmed", what, src, val,
                         exanet_irq_vectors(s));
        *irq = 0;
        return false;
    }
    *irq = val;
    /* Software sleeps until the interrupt: it polls no more. */
    fabric_nic_poll_end(&s->nic);
    return true;
}

/* Send a packet to a node; our own node is served without the fabric. */
static void exanet_xmit(ExanetState *s, uint32_t dst, uint8_t type,
                        const void *buf, size_t len)
{
    if (dst == s->nic.node_id) {
        exanet_rx(s, dst, type, buf, len);
        return;
    }
    fabric_nic_send(&s->nic, dst, type, buf, len);
}

static void exanet_send_reply(ExanetState *s, uint32_t dst, uint8_t type,
                              uint16_t iface, uint8_t chan, uint8_t reason,
                              uint32_t seq, uint32_t epoch)
{
    uint8_t b[A_SIZE];

    trace_exanet_reply(s->nic.node_id, dst,
                       type == EXA_PKT_ACK ? "ACK" : "NACK", iface, chan, seq,
                       reason);
    stw_le_p(b + A_IFACE, iface);
    b[A_CHAN] = chan;
    b[A_REASON] = reason;
    stl_le_p(b + A_SEQ, seq);
    stl_le_p(b + A_EPOCH, epoch);
    exanet_xmit(s, dst, type, b, sizeof(b));
}

/* ------------------------------------------------------------------ */
/* Packetizer (sender side) */

static int64_t exanet_retx_ns(ExanetState *s, unsigned retries)
{
    return fabric_nic_backoff(s->retx_timeout_us, retries,
                              EXANET_RETX_CAP_US) * SCALE_US;
}

/*
 * Retransmission deadlines are checked where the guest waits for them, on
 * its polls of the NI (exanet_poll_fabric(): STATUS, BUSY, TAIL), and by a
 * backstop timer that runs EXANET_RETX_BACKSTOP timeouts late, for senders
 * that do not poll.  A timer that followed every deadline would wake the
 * main loop (which takes the BQL and preempts a vCPU) for each expiry and
 * each move to an earlier time: one timer per channel woke each node's main
 * loop ~720 times a second during a 2-node ping-pong, one for all channels
 * ~350 times, the largest source of its slow round trips (cluster.md, "Host
 * noise").  retx_due is the earliest deadline of a waiting channel, or
 * earlier (lazy), INT64_MAX for none.
 */
#define EXANET_RETX_BACKSTOP 4

/* The backstop for a deadline, unless it is pending (for an earlier one). */
static void exanet_retx_backstop(ExanetState *s, int64_t deadline)
{
    if (!timer_pending(s->retx_timer)) {
        timer_mod(s->retx_timer, deadline +
                  exanet_retx_ns(s, 0) * EXANET_RETX_BACKSTOP);
    }
}

static void exanet_chan_arm(ExanetChan *ch)
{
    ExanetState *s = ch->s;

    ch->deadline = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                   exanet_retx_ns(s, ch->retries);
    s->retx_due = MIN(s->retx_due, ch->deadline);
    exanet_retx_backstop(s, ch->deadline);
}

static void exanet_chan_finish(ExanetChan *ch, uint8_t state, uint8_t reason)
{
    ch->state = state;
    ch->reason = reason;
    fabric_park_wake(FABRIC_WAKE_DEVICE);
}

static void exanet_chan_abort(ExanetChan *ch)
{
    ch->state = EXANET_CHAN_IDLE;
    ch->reason = EXANET_NACK_NONE;
    ch->retries = 0;
}

/* A channel whose packet went unanswered until its deadline. */
static void exanet_chan_expired(ExanetChan *ch)
{
    ExanetState *s = ch->s;

    if (ch->retries >= s->retx_max) {
        trace_exanet_tx_timeout(s->nic.node_id, ch->iface, ch->chan,
                                ch->dst_node, ch->seq);
        exanet_chan_finish(ch, EXANET_CHAN_TIMEOUT, EXANET_NACK_NONE);
        s->counters[EXANET_CNT_TX_TIMEOUTS]++;
        return;
    }
    ch->retries++;
    s->counters[EXANET_CNT_TX_RETRANSMITS]++;
    trace_exanet_retransmit(s->nic.node_id, ch->iface, ch->chan, ch->dst_node,
                            ch->seq, ch->retries);
    exanet_chan_arm(ch);
    exanet_xmit(s, ch->dst_node, EXA_PKT_DATA, ch->pkt, ch->pkt_len);
}

/* Retransmits what is due and finds the next deadline. */
static void exanet_retx_scan(ExanetState *s, int64_t now)
{
    s->retx_due = INT64_MAX;
    for (unsigned i = 0; i < EXANET_NUM_PKT_IFACES; i++) {
        for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
            ExanetChan *ch = &s->pkt[i].chan[c];

            if (ch->state != EXANET_CHAN_ONGOING) {
                continue;
            }
            if (now >= ch->deadline) {
                exanet_chan_expired(ch);    /* may arm it again */
            }
            if (ch->state == EXANET_CHAN_ONGOING) {
                s->retx_due = MIN(s->retx_due, ch->deadline);
            }
        }
    }
}

static void exanet_retx_check(ExanetState *s)
{
    int64_t now;

    if (s->retx_due == INT64_MAX) {
        return;
    }
    now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    if (now >= s->retx_due) {
        exanet_retx_scan(s, now);
    }
}

static void exanet_retx_timer(void *opaque)
{
    ExanetState *s = opaque;

    exanet_retx_scan(s, qemu_clock_get_ns(QEMU_CLOCK_REALTIME));
    if (s->retx_due != INT64_MAX) {
        exanet_retx_backstop(s, s->retx_due);
    }
}

/* A doorbell the NI answers itself with a NACK (nothing is sent). */
static void exanet_doorbell_refuse(ExanetChan *ch, uint8_t reason)
{
    trace_exanet_doorbell_refused(ch->s->nic.node_id, ch->iface, ch->chan,
                                  reason);
    exanet_chan_finish(ch, EXANET_CHAN_NACK, reason);
}

static void exanet_doorbell(ExanetState *s, unsigned i, unsigned c, uint64_t db)
{
    ExanetPktIface *ifc = &s->pkt[i];
    ExanetChan *ch = &ifc->chan[c];
    const uint64_t known = EXANET_DB_SIZE_MASK << EXANET_DB_SIZE_SHIFT |
                           EXANET_DB_MBOX_MASK << EXANET_DB_MBOX_SHIFT |
                           EXANET_DB_NODE_MASK << EXANET_DB_NODE_SHIFT;
    unsigned size = (db >> EXANET_DB_SIZE_SHIFT) & EXANET_DB_SIZE_MASK;
    unsigned mbox = (db >> EXANET_DB_MBOX_SHIFT) & EXANET_DB_MBOX_MASK;
    uint32_t node = (db >> EXANET_DB_NODE_SHIFT) & EXANET_DB_NODE_MASK;
    uint64_t gva;

    trace_exanet_doorbell(s->nic.node_id, i, c, db);
    if (!ifc->enabled) {
        return;
    }
    if (ch->state == EXANET_CHAN_ONGOING) {
        trace_exanet_doorbell_busy(s->nic.node_id, i, c);
        s->counters[EXANET_CNT_DOORBELL_BUSY]++;
        return;
    }
    ch->retries = 0;
    if ((db & ~known) || size == 0 || size > EXANET_MAX_PAYLOAD) {
        EXANET_GUEST_ERR(exanet_err_doorbell, "bad doorbell 0x%" PRIx64
                         " on iface %u chan %u", db, i, c);
        exanet_doorbell_refuse(ch, EXANET_NACK_BAD_PACKET);
        return;
    }
    if (node >= s->nic.num_nodes) {
        exanet_doorbell_refuse(ch, EXANET_NACK_NO_ROUTE);
        return;
    }
    if (ifc->pdid == EXANET_PDID_NONE) {
        exanet_doorbell_refuse(ch, EXANET_NACK_PDID);
        return;
    }

    ch->seq++;
    ch->dst_node = node;
    gva = (uint64_t)node << GVA_NODE_SHIFT | (uint64_t)mbox;
    memset(ch->pkt, 0, sizeof(ch->pkt));
    stw_le_p(ch->pkt + W_PDID, ifc->pdid);
    stq_le_p(ch->pkt + W_GVA, gva);
    stl_le_p(ch->pkt + W_SRC_NODE, s->nic.node_id);
    stw_le_p(ch->pkt + W_SRC_IFACE, i);
    ch->pkt[W_SRC_CHAN] = c;
    ch->pkt[W_FLAGS] = 0;
    stw_le_p(ch->pkt + W_LEN, size);
    stl_le_p(ch->pkt + W_SEQ, ch->seq);
    stl_le_p(ch->pkt + W_EPOCH, s->epoch);
    memcpy(ch->pkt + W_PAYLOAD, ch->payload, size);
    ch->pkt_len = W_PAYLOAD + size;

    ch->state = EXANET_CHAN_ONGOING;
    ch->reason = EXANET_NACK_NONE;
    s->counters[EXANET_CNT_TX_PACKETS]++;
    trace_exanet_tx(s->nic.node_id, i, c, node, mbox, ch->seq, size);
    exanet_chan_arm(ch);
    /* May complete synchronously (self delivery): the timer is armed first. */
    exanet_xmit(s, node, EXA_PKT_DATA, ch->pkt, ch->pkt_len);
}

static void exanet_rx_reply(ExanetState *s, uint32_t src, uint8_t type,
                            const uint8_t *b, size_t len)
{
    unsigned i, c;
    uint8_t reason;
    ExanetChan *ch;

    if (len != A_SIZE) {
        s->counters[EXANET_CNT_RX_NACK_BAD]++;
        return;
    }
    i = lduw_le_p(b + A_IFACE);
    c = b[A_CHAN];
    if (i >= EXANET_NUM_PKT_IFACES || c >= EXANET_PKT_CHANNELS) {
        s->counters[EXANET_CNT_RX_NACK_BAD]++;
        return;
    }
    ch = &s->pkt[i].chan[c];
    /* Stale answers (older sequence, previous epoch, aborted) are ignored. */
    if (ch->state != EXANET_CHAN_ONGOING || ch->dst_node != src ||
        ldl_le_p(b + A_SEQ) != ch->seq || ldl_le_p(b + A_EPOCH) != s->epoch) {
        trace_exanet_reply_stale(s->nic.node_id, src, i, c,
                                 ldl_le_p(b + A_SEQ));
        return;
    }
    if (type == EXA_PKT_ACK) {
        trace_exanet_ack(s->nic.node_id, src, i, c, ch->seq);
        exanet_chan_finish(ch, EXANET_CHAN_ACK, EXANET_NACK_NONE);
        s->counters[EXANET_CNT_TX_ACKED]++;
    } else {
        reason = b[A_REASON];
        if (reason == EXANET_NACK_NONE || reason > EXANET_NACK_NO_ROUTE) {
            reason = EXANET_NACK_BAD_PACKET;
        }
        trace_exanet_nack(s->nic.node_id, src, i, c, ch->seq, reason);
        exanet_chan_finish(ch, EXANET_CHAN_NACK, reason);
        s->counters[EXANET_CNT_TX_NACKED]++;
    }
}

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

    memset(slot, 0, sizeof(slot));
    memcpy(slot, b + W_PAYLOAD, plen);
    stl_le_p(slot + offsetof(struct exanet_mbox_slot, len), plen);
    stl_le_p(slot + offsetof(struct exanet_mbox_slot, src_node), src);
    stw_le_p(slot + offsetof(struct exanet_mbox_slot, src_iface), iface);
    slot[offsetof(struct exanet_mbox_slot, src_chan)] = chan;
    stl_le_p(slot + offsetof(struct exanet_mbox_slot, seq), seq);
    flags = ((mb->tail / mb->nslots) & 1) ? 0 : EXANET_SLOT_PHASE;
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
static void exanet_rx(void *opaque, uint32_t src, uint8_t type,
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

static void exanet_poll_fabric(ExanetState *s)
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

static uint32_t exanet_pkt_busy(const ExanetPktIface *ifc)
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
/* Reset and configuration */

static void exanet_pkt_disable(ExanetPktIface *ifc)
{
    ifc->enabled = false;
    for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
        exanet_chan_abort(&ifc->chan[c]);
    }
}

static void exanet_pkt_enable(ExanetPktIface *ifc)
{
    for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
        exanet_chan_abort(&ifc->chan[c]);
        memset(ifc->chan[c].payload, 0, EXANET_MAX_PAYLOAD);
    }
    ifc->enabled = true;
}

static void exanet_mbox_enable(ExanetState *s, unsigned m)
{
    ExanetMbox *mb = &s->mbox[m];
    uint64_t base = (uint64_t)mb->qbase_hi << 32 | mb->qbase_lo;
    uint32_t n = mb->nslots_reg;

    mb->enabled = false;
    if (n < EXANET_MBOX_MIN_SLOTS || n > EXANET_MBOX_MAX_SLOTS ||
        !is_power_of_2(n) || (base & (EXANET_MBOX_SLOT_SIZE - 1)) ||
        base + (uint64_t)n * EXANET_MBOX_SLOT_SIZE < base) {
        EXANET_GUEST_ERR(exanet_err_mbox_queue, "mailbox %u: invalid queue "
                         "0x%" PRIx64 " x %u slots, stays disabled", m, base,
                         n);
        return;
    }
    mb->base = base;
    mb->nslots = n;
    mb->head = 0;
    mb->tail = 0;
    mb->rx_count = 0;
    mb->full_count = 0;
    mb->irq = 0;
    mb->enabled = true;
}

static void exanet_mbox_head(ExanetState *s, unsigned m, uint32_t val)
{
    ExanetMbox *mb = &s->mbox[m];
    uint32_t delta;

    if (!mb->enabled || val >= mb->nslots) {
        return;
    }
    /*
     * Software publishes the index of the next slot it will consume.  The
     * device advances its free-running head by the distance to that index;
     * software cannot move past the tail.
     */
    delta = (val - mb->head) & (mb->nslots - 1);
    if (delta <= mb->tail - mb->head) {
        mb->head += delta;
    }
    trace_exanet_mbox_head(s->nic.node_id, m, mb->head);
}

static void exanet_reset_state(ExanetState *s)
{
    for (unsigned i = 0; i < EXANET_NUM_PKT_IFACES; i++) {
        exanet_pkt_disable(&s->pkt[i]);
        s->pkt[i].pdid = 0;
        for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
            memset(s->pkt[i].chan[c].payload, 0, EXANET_MAX_PAYLOAD);
        }
    }
    for (unsigned m = 0; m < EXANET_NUM_MBOX_IFACES; m++) {
        memset(&s->mbox[m], 0, sizeof(s->mbox[m]));
    }
    memset(s->counters, 0, sizeof(s->counters));
    s->irq_mbox_pending = 0;
    s->irq_rank_pending = 0;
    s->irq_count = 0;
    s->corrupt_base = exanet_fabric_bad(s);
    s->retx_timeout_us = EXANET_DEFAULT_RETX_TIMEOUT_US;
    s->retx_max = EXANET_DEFAULT_RETX_MAX;
    s->retx_due = INT64_MAX;
    if (s->dedup) {
        g_hash_table_remove_all(s->dedup);
    }
    /* A new epoch: packets of the previous life are never duplicates. */
    do {
        s->epoch = g_random_int();
    } while (s->epoch == 0);
    if (s->rdma) {
        exanet_rdma_reset(s->rdma, s->epoch);
    }
}

ExanetRdma *exanet_get_rdma(Object *ni)
{
    ExanetState *s = (ExanetState *)object_dynamic_cast(ni, TYPE_EXANET);

    return s ? s->rdma : NULL;
}

/* ------------------------------------------------------------------ */
/* BAR0: control */

static uint32_t exanet_ctrl_read32(ExanetState *s, hwaddr off)
{
    if (exanet_rdma_ctrl_owns(off)) {
        return exanet_rdma_ctrl_read(s->rdma, off);
    }
    if (FABRIC_NIC_OWNS_LINKS(off)) {
        return fabric_links_read(&s->nic, off - EXA_TORUS_BASE, 4);
    }
    if (off >= EXANET_REG_COUNTER(0) &&
        off < EXANET_REG_COUNTER(EXANET_NUM_COUNTERS)) {
        uint64_t v = exanet_counter(s, (off - EXANET_REG_COUNTER(0)) / 8);

        return fabric_nic_reg_part(v, off, 4);
    }
    if (off >= EXANET_REG_PKT_BASE(0) &&
        off < EXANET_REG_PKT_BASE(EXANET_NUM_PKT_IFACES)) {
        ExanetPktIface *ifc = &s->pkt[(off - EXANET_REG_PKT_BASE(0)) / 0x20];
        uint32_t busy = 0;

        switch (off & 0x1f) {
        case EXANET_PKT_PDID:
            return ifc->pdid;
        case EXANET_PKT_ENABLE:
            return ifc->enabled;
        case EXANET_PKT_BUSY:
            exanet_poll_fabric(s);
            busy = exanet_pkt_busy(ifc);
            if (busy) {
                fabric_nic_poll_idle(&s->nic);
                busy = exanet_pkt_busy(ifc);
            }
            return busy;
        }
        return 0;
    }
    if (off >= EXANET_REG_MBOX_BASE(0) &&
        off < EXANET_REG_MBOX_BASE(EXANET_NUM_MBOX_IFACES)) {
        ExanetMbox *mb = &s->mbox[(off - EXANET_REG_MBOX_BASE(0)) / 0x40];

        switch (off & 0x3f) {
        case EXANET_MBOX_PDID:
            return mb->pdid;
        case EXANET_MBOX_ENABLE:
            return mb->enabled;
        case EXANET_MBOX_QBASE_LO:
            return mb->qbase_lo;
        case EXANET_MBOX_QBASE_HI:
            return mb->qbase_hi;
        case EXANET_MBOX_NSLOTS:
            return mb->nslots_reg;
        case EXANET_MBOX_IRQ:
            return mb->irq;
        }
        return 0;
    }
    switch (off) {
    case EXANET_REG_ID:
        return EXANET_ID_MAGIC;
    case EXANET_REG_VERSION:
        return EXANET_HW_VERSION;
    case EXANET_REG_NODE_ID:
        return s->nic.node_id;
    case EXANET_REG_NUM_NODES:
        return s->nic.num_nodes;
    case EXANET_REG_CAPS:
        return EXANET_NUM_PKT_IFACES | EXANET_NUM_MBOX_IFACES << 8 |
               EXANET_PKT_CHANNELS << 16;
    case EXANET_REG_RETX_TIMEOUT_US:
        return s->retx_timeout_us;
    case EXANET_REG_RETX_MAX:
        return s->retx_max;
    case EXANET_REG_IRQ_CAPS:
        return exanet_irq_vectors(s);
    case EXANET_REG_IRQ_MBOX_PENDING:
        return (uint32_t)s->irq_mbox_pending;
    case EXANET_REG_IRQ_MBOX_PENDING + 4:
        return s->irq_mbox_pending >> 32;
    case EXANET_REG_IRQ_RANK_PENDING:
        return s->irq_rank_pending;
    case EXANET_REG_IRQ_COUNT:
        return s->irq_count;
    }
    return 0;
}

static void exanet_ctrl_write32(ExanetState *s, hwaddr off, uint32_t val)
{
    trace_exanet_ctrl_write(s->nic.node_id, off, val);
    if (exanet_rdma_ctrl_owns(off)) {
        exanet_rdma_ctrl_write(s->rdma, off, val);
        return;
    }
    if (off >= EXANET_REG_PKT_BASE(0) &&
        off < EXANET_REG_PKT_BASE(EXANET_NUM_PKT_IFACES)) {
        ExanetPktIface *ifc = &s->pkt[(off - EXANET_REG_PKT_BASE(0)) / 0x20];

        switch (off & 0x1f) {
        case EXANET_PKT_PDID:
            ifc->pdid = val & EXANET_PDID_MAX;
            break;
        case EXANET_PKT_ENABLE:
            if ((val & 1) && !ifc->enabled) {
                exanet_pkt_enable(ifc);
            } else if (!(val & 1) && ifc->enabled) {
                exanet_pkt_disable(ifc);
            }
            break;
        }
        return;
    }
    if (off >= EXANET_REG_MBOX_BASE(0) &&
        off < EXANET_REG_MBOX_BASE(EXANET_NUM_MBOX_IFACES)) {
        unsigned m = (off - EXANET_REG_MBOX_BASE(0)) / 0x40;
        ExanetMbox *mb = &s->mbox[m];

        switch (off & 0x3f) {
        case EXANET_MBOX_PDID:
            mb->pdid = val & EXANET_PDID_MAX;
            break;
        case EXANET_MBOX_ENABLE:
            if (val & 1) {
                exanet_mbox_enable(s, m);
            } else {
                mb->enabled = false;    /* no DMA from now on */
                mb->irq = 0;
            }
            break;
        case EXANET_MBOX_IRQ:
            if ((val & EXANET_IRQ_ARMED) && !mb->enabled) {
                EXANET_GUEST_ERR(exanet_err_mbox_irq_disabled, "mailbox %u: "
                                 "IRQ armed while disabled, stays disarmed",
                                 m);
                mb->irq = 0;
                break;
            }
            exanet_irq_arm(PCI_DEVICE(s), &mb->irq, val, "mailbox", m);
            break;
        case EXANET_MBOX_QBASE_LO:
            mb->qbase_lo = val;
            break;
        case EXANET_MBOX_QBASE_HI:
            mb->qbase_hi = val;
            break;
        case EXANET_MBOX_NSLOTS:
            mb->nslots_reg = val;
            break;
        }
        return;
    }
    switch (off) {
    case EXANET_REG_CTRL:
        if (val & EXANET_CTRL_RESET) {
            exanet_reset_state(s);
        }
        break;
    case EXANET_REG_RETX_TIMEOUT_US:
        if (val) {
            s->retx_timeout_us = MIN(MAX(val, EXANET_RETX_MIN_US),
                                     EXANET_RETX_CAP_US);
        }
        break;
    case EXANET_REG_RETX_MAX:
        s->retx_max = MIN(val, EXANET_RETX_MAX_RETRIES);
        break;
    case EXANET_REG_IRQ_MBOX_PENDING:
        s->irq_mbox_pending &= ~(uint64_t)val;
        break;
    case EXANET_REG_IRQ_MBOX_PENDING + 4:
        s->irq_mbox_pending &= ~((uint64_t)val << 32);
        break;
    case EXANET_REG_IRQ_RANK_PENDING:
        s->irq_rank_pending &= ~val;
        break;
    default:
        EXANET_GUEST_ERR(exanet_err_ctrl_write, "write to RO/unknown BAR0 "
                         "offset 0x%" HWADDR_PRIx, off);
        break;
    }
}

static uint64_t exanet_ctrl_read(void *opaque, hwaddr off, unsigned size)
{
    ExanetState *s = opaque;
    uint64_t v;

    if (exanet_reentered()) {
        return 0;
    }
    v = exanet_ctrl_read32(s, off);

    if (size == 8) {
        v |= (uint64_t)exanet_ctrl_read32(s, off + 4) << 32;
    }
    return v;
}

static void exanet_ctrl_write(void *opaque, hwaddr off, uint64_t val,
                              unsigned size)
{
    ExanetState *s = opaque;

    if (exanet_reentered()) {
        return;
    }
    exanet_ctrl_write32(s, off, val);
    if (size == 8) {
        exanet_ctrl_write32(s, off + 4, val >> 32);
    }
}

/* ------------------------------------------------------------------ */
/* BAR1: packetizer pages */

static uint64_t exanet_pkt_read(void *opaque, hwaddr off, unsigned size)
{
    ExanetState *s = opaque;
    unsigned i = off / EXANET_IFACE_PAGE_SIZE;
    unsigned c = (off % EXANET_IFACE_PAGE_SIZE) / EXANET_PKT_CHAN_STRIDE;
    unsigned reg = off % EXANET_PKT_CHAN_STRIDE;
    ExanetChan *ch;
    uint64_t st;

    if (i >= EXANET_NUM_PKT_IFACES || c >= EXANET_PKT_CHANNELS ||
        exanet_reentered()) {
        return 0;
    }
    ch = &s->pkt[i].chan[c];
    if (ch->state == EXANET_CHAN_ONGOING &&
        (reg & ~7u) == EXANET_PKT_STATUS) {
        /* A sender waits for the ACK: poll, then maybe park. */
        exanet_poll_fabric(s);
        if (ch->state == EXANET_CHAN_ONGOING) {
            fabric_nic_poll_idle(&s->nic);
        } else {
            fabric_nic_poll_found();
        }
    }
    st = ch->state | (uint64_t)ch->reason << 8 | (uint64_t)ch->retries << 16;
    if (reg == EXANET_PKT_STATUS) {
        return size == 8 ? st : (uint32_t)st;
    }
    if (reg == EXANET_PKT_STATUS + 4) {
        return st >> 32;
    }
    return 0;
}

static void exanet_pkt_write(void *opaque, hwaddr off, uint64_t val,
                             unsigned size)
{
    ExanetState *s = opaque;
    unsigned i = off / EXANET_IFACE_PAGE_SIZE;
    unsigned c = (off % EXANET_IFACE_PAGE_SIZE) / EXANET_PKT_CHAN_STRIDE;
    unsigned reg = off % EXANET_PKT_CHAN_STRIDE;
    ExanetChan *ch;

    if (i >= EXANET_NUM_PKT_IFACES || c >= EXANET_PKT_CHANNELS ||
        !s->pkt[i].enabled || exanet_reentered()) {
        return;     /* disabled interface: writes are ignored */
    }
    fabric_nic_poll_found();    /* a sender at work does not wait */
    ch = &s->pkt[i].chan[c];
    if (reg < EXANET_PKT_PAYLOAD + EXANET_MAX_PAYLOAD) {
        if (ch->state == EXANET_CHAN_ONGOING) {
            return;     /* payload is frozen while the packet is in flight */
        }
        trace_exanet_pkt_payload(s->nic.node_id, i, c, reg, size);
        if (size == 8) {
            stq_le_p(ch->payload + reg, val);
        } else {
            stl_le_p(ch->payload + reg, val);
        }
        return;
    }
    if (reg == EXANET_PKT_DOORBELL) {
        /* 64-bit store; a 32-bit store is a doorbell with node < 65536. */
        exanet_doorbell(s, i, c, size == 8 ? val : (uint32_t)val);
    }
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
    switch (reg) {
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

    if (m >= EXANET_NUM_MBOX_IFACES || !mb->enabled || mb->tail != mb->head) {
        fabric_nic_poll_found();
        return;
    }
    fabric_nic_poll_idle(&s->nic);
}

static uint64_t exanet_mbox_read(void *opaque, hwaddr off, unsigned size)
{
    ExanetState *s = opaque;
    uint64_t v;

    if (exanet_reentered()) {
        return 0;
    }
    if ((off % EXANET_IFACE_PAGE_SIZE) == EXANET_MBOX_TAIL) {
        exanet_poll_fabric(s);
        exanet_mbox_poll_park(s, off / EXANET_IFACE_PAGE_SIZE);
    }
    v = exanet_mbox_read32(s, off);

    if (size == 8) {
        v |= (uint64_t)exanet_mbox_read32(s, off + 4) << 32;
    }
    return v;
}

static void exanet_mbox_write(void *opaque, hwaddr off, uint64_t val,
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

static const MemoryRegionOps exanet_ctrl_ops = {
    .read = exanet_ctrl_read,
    .write = exanet_ctrl_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

static const MemoryRegionOps exanet_pkt_ops = {
    .read = exanet_pkt_read,
    .write = exanet_pkt_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

static const MemoryRegionOps exanet_mbox_ops = {
    .read = exanet_mbox_read,
    .write = exanet_mbox_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* QOM */

static void exanet_exit(PCIDevice *pdev);

static void exanet_realize(PCIDevice *pdev, Error **errp)
{
    ExanetState *s = EXANET(pdev);
    const FabricNicBar bars[] = {
        { EXANET_BAR_CTRL, 0, &s->bar_ctrl, &exanet_ctrl_ops,
          "exanet-ctrl", EXANET_BAR_CTRL_SIZE },
        { EXANET_BAR_PKT, 0, &s->bar_pkt, &exanet_pkt_ops,
          "exanet-pkt", EXANET_BAR_PKT_SIZE },
        { EXANET_BAR_MBOX, 0, &s->bar_mbox, &exanet_mbox_ops,
          "exanet-mbox", EXANET_BAR_MBOX_SIZE },
    };
    FabricQemuOptions opts = {
        .name = "exanet-rx",
        .bulk_rx = exanet_rdma_bulk_rx,
        .kick = exanet_rdma_kick_work,
    };

    if (!fabric_nic_realize(pdev, &s->nic, EXANET_MAX_NODES, bars,
                            ARRAY_SIZE(bars), errp)) {
        return;
    }
    s->rdma = exanet_rdma_new(pdev, s->nic.node_id, s->nic.num_nodes,
                              &s->retx_max);
    exanet_rdma_coll_direct(s->rdma, s->coll_direct);
    pci_register_bar(pdev, EXANET_BAR_RDMA, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     exanet_rdma_bar(s->rdma));
    pci_register_bar(pdev, EXANET_BAR_COLL, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     exanet_rdma_coll_bar(s->rdma));
    if (s->msix) {
        Error *err = NULL;

        /* Its own BAR: the driver never maps it to user space. */
        if (msix_init_exclusive_bar(pdev, EXANET_NUM_IRQ_VECTORS,
                                    EXANET_BAR_MSIX, &err)) {
            warn_reportf_err(err, "exanet: no MSI-X, interrupts disabled: ");
            s->msix = false;
        } else {
            for (unsigned v = 0; v < EXANET_NUM_IRQ_VECTORS; v++) {
                msix_vector_use(pdev, v);
            }
            fabric_nic_parkable(&pdev->msix_table_mmio);
            fabric_nic_parkable(&pdev->msix_pba_mmio);
        }
    }

    s->dedup = g_hash_table_new_full(g_direct_hash, g_direct_equal,
                                     NULL, g_free);
    for (unsigned i = 0; i < EXANET_NUM_PKT_IFACES; i++) {
        for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
            ExanetChan *ch = &s->pkt[i].chan[c];

            ch->s = s;
            ch->iface = i;
            ch->chan = c;
        }
    }
    s->retx_timer = timer_new_ns(QEMU_CLOCK_REALTIME, exanet_retx_timer, s);
    exanet_reset_state(s);
    /* Last: from here on packets may arrive (under the BQL). */
    opts.bulk_opaque = s->rdma;
    if (!fabric_nic_open(&s->nic, &opts, exanet_rx, s, errp)) {
        exanet_exit(pdev);
        return;
    }
    if (s->nic.fq) {
        s->corrupt_base = exanet_fabric_bad(s);
        exanet_rdma_set_fabric(s->rdma, s->nic.fq);
    }
}

static void exanet_exit(PCIDevice *pdev)
{
    ExanetState *s = EXANET(pdev);

    /* First stop the receive side (may drop the BQL to join its thread). */
    exanet_rdma_free(s->rdma);
    fabric_nic_close(&s->nic);
    if (s->retx_timer) {
        timer_free(s->retx_timer);
        s->retx_timer = NULL;
    }
    if (s->dedup) {
        g_hash_table_destroy(s->dedup);
        s->dedup = NULL;
    }
    if (msix_present(pdev)) {
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
    }
}

static void exanet_qdev_reset(DeviceState *dev)
{
    exanet_reset_state(EXANET(dev));
}

static Property exanet_properties[] = {
    DEFINE_FABRIC_NIC_PROPERTIES(ExanetState, nic),
    DEFINE_PROP_BOOL("msix", ExanetState, msix, true),
    /* Collective unit: largest group that uses the direct exchange */
    DEFINE_PROP_UINT32("coll-direct-members", ExanetState, coll_direct, 3),
    DEFINE_PROP_END_OF_LIST(),
};

static const VMStateDescription exanet_vmstate = {
    .name = "exanet",
    .unmigratable = 1,      /* fabric state lives outside the VM */
};

static void exanet_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = exanet_realize;
    k->exit = exanet_exit;
    k->vendor_id = EXANET_PCI_VENDOR_ID;
    k->device_id = EXANET_PCI_DEVICE_ID;
    k->revision = EXANET_HW_VERSION;
    k->class_id = PCI_CLASS_NETWORK_OTHER;
    dc->desc = "ExaNet NI (packetizer + mailbox + RDMA engine)";
    dc->reset = exanet_qdev_reset;
    dc->vmsd = &exanet_vmstate;
    device_class_set_props(dc, exanet_properties);
    FABRIC_NIC_PARK_CLASS_INIT(klass, ExanetState, nic);
    FABRIC_NIC_LINKS_CLASS_INIT(klass, ExanetState, nic);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void exanet_instance_init(Object *obj)
{
    fabric_park_init(&EXANET(obj)->nic.park, TYPE_EXANET);
}

static const TypeInfo exanet_info = {
    .name = TYPE_EXANET,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(ExanetState),
    .instance_init = exanet_instance_init,
    .class_init = exanet_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void exanet_register_types(void)
{
    type_register_static(&exanet_info);
}

type_init(exanet_register_types)
