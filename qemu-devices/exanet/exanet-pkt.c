/*
 * ExaNet NI: the packetizer (sender side): doorbells, channels, the
 * retransmission of unanswered packets, the answers (ACK / NACK) and BAR1.
 * Part of the NI core (exanet-ni.c; private header exanet-ni.h).
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

/* The channel's packet is answered or abandoned: no longer on the rings. */
static void exanet_chan_off_rings(ExanetChan *ch)
{
    if (ch->on_rings) {
        ch->on_rings = false;
        ch->s->ring_ongoing--;
    }
}

/*
 * Is a packet of ours to node still on the rings, unanswered?  Then the
 * next one takes the rings too: the rings deliver a pair's packets in
 * order, a direct write would overtake them (software such as the
 * kernel's IP path sends a packet's fragments on several channels at
 * once and counts on their order).
 */
static bool exanet_rings_ahead(ExanetState *s, uint32_t node)
{
    if (!s->ring_ongoing) {
        return false;
    }
    for (unsigned i = 0; i < EXANET_NUM_PKT_IFACES; i++) {
        for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
            const ExanetChan *o = &s->pkt[i].chan[c];

            if (o->on_rings && o->state == EXANET_CHAN_ONGOING &&
                o->dst_node == node) {
                return true;
            }
        }
    }
    return false;
}

static void exanet_chan_finish(ExanetChan *ch, uint8_t state, uint8_t reason)
{
    exanet_chan_off_rings(ch);
    ch->state = state;
    ch->reason = reason;
    fabric_park_wake(FABRIC_WAKE_DEVICE);
}

void exanet_chan_abort(ExanetChan *ch)
{
    exanet_chan_off_rings(ch);
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

void exanet_retx_check(ExanetState *s)
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

void exanet_retx_timer(void *opaque)
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
    /* Written into the target's mailbox by us: answered at once. */
    switch (exanet_rings_ahead(s, node) ? FABRIC_DIRECT_NO_PATH :
            exanet_direct_tx(s, ch, mbox, ifc->pdid, size)) {
    case FABRIC_DIRECT_DONE:
        exanet_chan_finish(ch, EXANET_CHAN_ACK, EXANET_NACK_NONE);
        s->counters[EXANET_CNT_TX_ACKED]++;
        return;
    case FABRIC_DIRECT_FULL:
        exanet_chan_finish(ch, EXANET_CHAN_NACK, EXANET_NACK_FULL);
        s->counters[EXANET_CNT_TX_NACKED]++;
        return;
    }
    if (node != s->nic.node_id) {
        ch->on_rings = true;
        s->ring_ongoing++;
    }
    exanet_chan_arm(ch);
    /* May complete synchronously (self delivery): the timer is armed first. */
    exanet_xmit(s, node, EXA_PKT_DATA, ch->pkt, ch->pkt_len);
}

void exanet_rx_reply(ExanetState *s, uint32_t src, uint8_t type,
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
/* BAR1: packetizer pages */

uint64_t exanet_pkt_read(void *opaque, hwaddr off, unsigned size)
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

void exanet_pkt_write(void *opaque, hwaddr off, uint64_t val,
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
