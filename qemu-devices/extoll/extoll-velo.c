/*
 * EXTOLL NIC: the VELO unit (small messages): send from a requester
 * page or a send window, receive into the VPID's ring.  See extoll-nic.c
 * for the overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"

#include "extoll-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Direct delivery (Documentation/fabric.md section 9) */

/* The status word of a message from VPID svpid of node src */
static uint64_t ext_velo_status(uint32_t src, unsigned svpid, unsigned mtt,
                                unsigned tag, unsigned mlen)
{
    return (uint64_t)(src & 0xffff) | ((uint64_t)svpid << 16) |
           ((uint64_t)(mtt & 3) << 32) | EXTOLL_VELO_ST_EOM |
           ((uint64_t)tag << 40) | ((uint64_t)mlen << 48);
}

/*
 * VELO_RX on: publish the ring's translation, so that peers write
 * messages into it themselves.  Without direct delivery (property
 * direct=off, RAM not shared, a page outside RAM) it stays on the rings.
 */
void extoll_velo_export(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    int r;

    extoll_velo_unexport(s, vi);
    if (!fabric_nic_direct_on(&s->nic)) {
        return;
    }
    r = extoll_dq_export(s, vi, v->velo_ring, EXTOLL_VELO_SLOT_SIZE,
                         v->velo_slots, EXTOLL_VELO_STATUS_OFF, v->velo_prot,
                         &v->velo_direct_seen);
    v->velo_direct = r == 0;
    trace_extoll_velo_export(s->nic.node_id, vi, v->velo_ring, v->velo_slots,
                             r);
}

/* Fold what was written into the ring through the shared record. */
void extoll_velo_sync(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    uint64_t n;

    if (!v->velo_direct) {
        return;
    }
    n = extoll_dq_sync(s, vi, v->velo_slots, &v->velo_direct_seen,
                       &v->velo_wp);
    v->velo_rx_count += n;
    s->counters[EXTOLL_CNT_VELO_RX] += n;
}

/* VELO_RX off, reset: no peer writes into the ring once this returns. */
void extoll_velo_unexport(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];

    if (!v->velo_direct) {
        return;
    }
    fabric_direct_invalidate(s->nic.dd, vi);
    extoll_velo_sync(s, vi);
    v->velo_direct = false;
    trace_extoll_velo_unexport(s->nic.node_id, vi);
}

/*
 * A VELO message of ours, from VPID vpid to VPID dvpid of node p->node, in
 * the form both paths take it from.
 */
typedef struct ExtVeloMsg {
    uint8_t vpid, gen, dvpid, len, mtt, tag;
    uint8_t hops;           /* of its route (the target's rx-hops) */
    uint16_t prot;
    uint8_t data[EXTOLL_VELO_MAX_MSG];
} ExtVeloMsg;

/* Over the rings: a K_VELO packet; its ACK returns the credit. */
static void ext_velo_pkt(ExtollState *s, ExtPeer *p, const ExtVeloMsg *m)
{
    ExtVpid *v = &s->vpid[m->vpid];
    ExtPkt *k;
    uint8_t *d;

    d = extoll_pkt_new(s, p, &k, K_VELO, m->vpid, m->dvpid, m->gen, m->prot,
                       0, V_DATA + m->len);
    d[V_MTT] = m->mtt;
    d[V_TAG] = m->tag;
    d[V_LEN] = m->len;
    memcpy(d + V_DATA, m->data, m->len);
    k->credit_vpid = m->vpid;
    k->credit_gen = m->gen;
    trace_extoll_velo_send(s->nic.node_id, m->vpid, p->node, m->dvpid, m->len,
                           v->velo_credits);
    extoll_pkt_queue(s, p, k);
}

static enum fabric_direct_result ext_velo_write(ExtollState *s, ExtPeer *p,
                                                const ExtVeloMsg *m)
{
    struct fabric_direct_msg dm = {
        .payload = m->data, .len = m->len, .prot = m->prot,
        .status = ext_velo_status(s->nic.node_id, m->vpid, m->mtt, m->tag,
                                  m->len),
        .hops = m->hops,
    };
    enum fabric_direct_result r;
    bool wake;

    r = fabric_direct_write(s->nic.dd, p->node, m->dvpid, &dm, &wake);
    trace_extoll_velo_direct(s->nic.node_id, m->vpid, p->node, m->dvpid,
                             m->len, r, wake);
    if (r == FABRIC_DIRECT_DONE) {
        fabric_nic_direct_done(&s->nic, p->node, wake);
    }
    return r;
}

/* A held message leaves: its credit returns (same VPID generation). */
static void ext_velo_held_free(ExtollState *s, ExtVeloMsg *m)
{
    ExtVpid *v = &s->vpid[m->vpid];

    if (v->velo_gen == m->gen && v->velo_credits < s->velo_credits_max) {
        v->velo_credits++;
    }
    g_free(m);
}

/*
 * Write what the target's full ring held back, in order.  A message that
 * cannot be written directly any more (refused, no path) takes the rings,
 * and so does everything behind it.
 */
void extoll_velo_held_drain(ExtollState *s, ExtPeer *p)
{
    ExtVeloMsg *m;

    while ((m = g_queue_peek_head(&p->velo_held))) {
        ExtVpid *v = &s->vpid[m->vpid];
        enum fabric_direct_result r = FABRIC_DIRECT_NO_PATH;

        if (v->velo_gen != m->gen || !(v->ctrl & EXTOLL_VPID_VELO_TX)) {
            /* the sending VPID was closed: as a failed stream's messages */
            g_queue_pop_head(&p->velo_held);
            g_free(m);
            continue;
        }
        if (s->nic.dd) {
            r = ext_velo_write(s, p, m);
        }
        if (r == FABRIC_DIRECT_FULL) {
            timer_mod(p->velo_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                      EXT_VELO_HELD_NS);
            return;
        }
        g_queue_pop_head(&p->velo_held);
        if (r == FABRIC_DIRECT_DONE) {
            ext_velo_held_free(s, m);
            continue;
        }
        /* the packet keeps the credit until its ACK */
        ext_velo_pkt(s, p, m);
        g_free(m);
    }
    s->velo_held_peers -= !!p->velo_held_listed;
    p->velo_held_listed = false;
}

static void ext_velo_held_timer(void *opaque)
{
    ExtPeer *p = opaque;

    extoll_velo_held_drain(p->s, p);
}

/* The sender polls CREDITS: its held messages move on from here too. */
void extoll_velo_held_poll(ExtollState *s)
{
    for (uint32_t n = 0; s->velo_held_peers && n < s->nic.num_nodes; n++) {
        if (s->peers[n] && s->peers[n]->velo_held_listed) {
            extoll_velo_held_drain(s, s->peers[n]);
        }
    }
}

void extoll_velo_held_free_all(ExtPeer *p)
{
    ExtVeloMsg *m;

    while ((m = g_queue_pop_head(&p->velo_held))) {
        g_free(m);
    }
    if (p->velo_timer) {
        timer_free(p->velo_timer);
        p->velo_timer = NULL;
    }
    if (p->velo_held_listed) {
        p->s->velo_held_peers--;
        p->velo_held_listed = false;
    }
}

/*
 * Write the message into the target's ring ourselves.  Only while no
 * request to that node waits for its ACK (VELO order per node pair), and
 * not what the target must see itself: a refusal (counted and traced
 * there), fault injection, a link booked far ahead.  A full ring holds the
 * message here (with its credit) until there is room, as the NIC would
 * hold a NACKed message; later messages to that node queue behind it.
 * true: taken (written or held).
 */
static bool ext_velo_direct(ExtollState *s, ExtPeer *p, ExtVeloMsg *m)
{
    enum fabric_direct_result r;
    ExtVeloMsg *held;
    uint32_t hops = 0;

    if (!s->nic.dd || p->node == s->nic.node_id) {
        return false;
    }
    if (!g_queue_is_empty(&p->velo_held)) {
        extoll_velo_held_drain(s, p);   /* perhaps onto the rings */
    }
    if (g_queue_is_empty(&p->velo_held)) {
        if (!g_queue_is_empty(&p->tx[0].txq) ||
            !fabric_nic_direct_route(&s->nic, p->node, V_DATA + m->len, &hops)) {
            return false;
        }
        m->hops = hops;
        r = ext_velo_write(s, p, m);
        if (r == FABRIC_DIRECT_DONE) {
            return true;
        }
        if (r != FABRIC_DIRECT_FULL) {
            return false;
        }
    }
    if (!m->hops) {
        /* behind held ones: charged to the links now, written later */
        fabric_nic_direct_route(&s->nic, p->node, V_DATA + m->len, &hops);
        m->hops = hops;
    }
    held = g_memdup2(m, sizeof(*m));
    g_queue_push_tail(&p->velo_held, held);
    s->vpid[m->vpid].velo_credits--;
    if (!p->velo_timer) {
        p->velo_timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_velo_held_timer,
                                     p);
    }
    if (!p->velo_held_listed) {
        p->velo_held_listed = true;
        s->velo_held_peers++;
    }
    if (!timer_pending(p->velo_timer)) {
        timer_mod(p->velo_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                  EXT_VELO_HELD_NS);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* VELO */

static void ext_velo_send(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    uint64_t h = v->velo_hdr;
    uint32_t len = EXTOLL_VELO_HDR_LEN(h), node = EXTOLL_VELO_HDR_NODE(h);
    ExtVeloMsg m = { 0 };
    ExtPeer *p;

    v->velo_hdr_valid = false;
    v->velo_mask = 0;
    if (!(v->ctrl & EXTOLL_VPID_VELO_TX) || !v->velo_credits ||
        len > EXTOLL_VELO_MAX_MSG || EXTOLL_VELO_HDR_MC_BITS(h)) {
        p = NULL;
    } else {
        p = extoll_peer(s, node);
    }
    if (!p) {
        trace_extoll_velo_drop(s->nic.node_id, vi, len, v->velo_credits);
        v->velo_drops++;
        s->counters[EXTOLL_CNT_VELO_TX_DROPPED]++;
        return;
    }
    m.vpid = vi;
    m.gen = v->velo_gen;
    m.dvpid = EXTOLL_VELO_HDR_VPID(h);
    m.len = len;
    m.mtt = EXTOLL_VELO_HDR_MTT(h);
    m.tag = EXTOLL_VELO_HDR_TAG(h);
    m.prot = v->velo_prot;
    for (uint32_t i = 0; i < len; i++) {
        m.data[i] = v->velo_data[i / 8] >> (8 * (i % 8));
    }
    s->counters[EXTOLL_CNT_VELO_TX]++;
    if (ext_velo_direct(s, p, &m)) {
        return;
    }
    v->velo_credits--;
    ext_velo_pkt(s, p, &m);
}

void extoll_velo_check(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    uint32_t len, need;

    if (!v->velo_hdr_valid) {
        return;
    }
    len = EXTOLL_VELO_HDR_LEN(v->velo_hdr);
    need = len > EXTOLL_VELO_MAX_MSG ? 0 : (1u << DIV_ROUND_UP(len, 8)) - 1;
    if ((v->velo_mask & need) == need) {
        ext_velo_send(s, vi);
    }
}

/*
 * Doorbell of the send window (uapi/extoll_hw.h, BAR3): the header word
 * was stored to EXTOLL_VELO_WIN_SEND; the payload is in the VPID's window
 * page, read now.  One device access per message instead of 1 + len/8.
 */
void extoll_velo_win_send(ExtollState *s, unsigned vi, uint64_t h)
{
    ExtVpid *v = &s->vpid[vi];
    uint32_t len = EXTOLL_VELO_HDR_LEN(h);

    trace_extoll_velo_win_send(s->nic.node_id, vi, h);
    if (len > EXTOLL_VELO_MAX_MSG || EXTOLL_VELO_HDR_MC_BITS(h) ||
        EXTOLL_VELO_HDR_NODE(h) >= s->nic.num_nodes) {
        EXTOLL_GUEST_ERR(extoll_err_velo_win,
                         "VPID %u send window doorbell with a bad header "
                         "0x%" PRIx64 ": dropped", vi, h);
        len = 0;    /* nothing is read; ext_velo_send drops and counts it */
    }
    memset(v->velo_data, 0, sizeof(v->velo_data));
    if (len) {
        memcpy(v->velo_data, s->velo_win + EXTOLL_VELO_WIN_PAGE(vi), len);
        for (unsigned k = 0; k < DIV_ROUND_UP(len, 8); k++) {
            v->velo_data[k] = le64_to_cpu(v->velo_data[k]);
        }
    }
    v->velo_hdr = h;
    v->velo_hdr_valid = true;
    ext_velo_send(s, vi);
}

/*
 * A message that reached us over the rings, for a ring that peers also
 * write into directly: the same lock and write index as theirs.
 */
static bool ext_velo_rx_shared(ExtollState *s, ExtPeer *p, uint32_t src,
                               const uint8_t *b, unsigned dv, unsigned mlen)
{
    ExtVpid *v = &s->vpid[dv];
    struct fabric_direct_msg m = {
        .payload = b + V_DATA, .len = mlen, .prot = v->velo_prot,
        .status = ext_velo_status(src, b[D_SVPID], b[V_MTT], b[V_TAG], mlen),
    };
    enum fabric_direct_result r;
    bool wake;

    r = fabric_direct_write(s->nic.dd, s->nic.node_id, dv, &m, &wake);
    extoll_velo_sync(s, dv);
    switch (r) {
    case FABRIC_DIRECT_DONE:
        trace_extoll_velo_rx(s->nic.node_id, src, b[D_SVPID], dv, mlen,
                             (v->velo_wp - 1) & (v->velo_slots - 1));
        fabric_park_wake(FABRIC_WAKE_DEVICE);
        return true;
    case FABRIC_DIRECT_FULL:
        trace_extoll_velo_rx_full(s->nic.node_id, src, dv);
        s->counters[EXTOLL_CNT_VELO_RX_FULL]++;
        extoll_nack_watch(s, p, dv, true);
        return false;
    default:
        /* our own RAM not mappable: as a DMA error */
        s->counters[EXTOLL_CNT_VELO_RX_DROPPED]++;
        s->counters[EXTOLL_CNT_DMA_ERRORS]++;
        return true;
    }
}

/* true = consumed (delivered or dropped), false = no room (NACK) */
bool extoll_velo_rx(ExtollState *s, uint32_t src, const uint8_t *b,
                    size_t len)
{
    unsigned dv = b[D_DVPID], prot = extoll_pkt_prot(b), mlen;
    ExtPeer *p = extoll_peer(s, src);
    ExtVpid *v;
    uint64_t st, slot;

    if (len < V_DATA) {
        return true;
    }
    mlen = b[V_LEN];
    if (mlen > EXTOLL_VELO_MAX_MSG || len < V_DATA + mlen) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    if (dv >= EXTOLL_NUM_VPIDS || !(s->vpid[dv].ctrl & EXTOLL_VPID_VELO_RX)) {
        s->counters[EXTOLL_CNT_VELO_RX_DROPPED]++;
        return true;
    }
    v = &s->vpid[dv];
    if (prot != v->velo_prot) {
        /* dropped like a message for a disabled VPID: the ACK returns
         * the sender's credit, nothing is retried */
        s->counters[EXTOLL_CNT_VELO_RX_DROPPED]++;
        extoll_prot_refused(s, "VELO message", src, b[D_SVPID], dv, prot,
                            v->velo_prot);
        return true;
    }
    if (v->velo_direct) {
        return ext_velo_rx_shared(s, p, src, b, dv, mlen);
    }
    slot = v->velo_ring + (uint64_t)EXTOLL_VELO_SLOT_SIZE * v->velo_wp;
    if (!extoll_read_u64(s, slot + EXTOLL_VELO_STATUS_OFF, &st)) {
        s->counters[EXTOLL_CNT_VELO_RX_DROPPED]++;
        return true;
    }
    if (st != 0) {
        trace_extoll_velo_rx_full(s->nic.node_id, src, dv);
        s->counters[EXTOLL_CNT_VELO_RX_FULL]++;
        extoll_nack_watch(s, p, dv, true);
        return false;
    }
    trace_extoll_velo_rx(s->nic.node_id, src, b[D_SVPID], dv, mlen, v->velo_wp);
    st = ext_velo_status(src, b[D_SVPID], b[V_MTT], b[V_TAG], mlen);
    if (mlen) {
        extoll_dma_write(s, slot, b + V_DATA, mlen);
    }
    extoll_write_u64(s, slot + EXTOLL_VELO_STATUS_OFF, st);
    v->velo_wp = (v->velo_wp + 1) & (v->velo_slots - 1);
    v->velo_rx_count++;
    s->counters[EXTOLL_CNT_VELO_RX]++;
    return true;
}
