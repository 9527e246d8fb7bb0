/*
 * EXTOLL NIC: the reliable stream per (peer node -> this node) pair, the
 * receive side: in-order delivery with ACK / NACK, RESUME once there is
 * room again after a NACK, and the dispatch to VELO and RMA.  The
 * transmit side is extoll-stream.c; extoll-nic.c describes the protocol.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"

#include "extoll-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Room again after a NACK */

/*
 * A request of peer p for local VPID vpid was NACKed for lack of room in
 * its VELO ring (velo) or notification queue: watch it and send RESUME
 * once there is room, instead of letting the sender wait out its back-off.
 */
void extoll_nack_watch(ExtollState *s, ExtPeer *p, unsigned vpid,
                       bool velo)
{
    p->nack_vpid = vpid;
    p->nack_velo = velo;
    if (!p->nacked) {
        p->nacked = true;
        p->nack_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        g_queue_push_tail(&s->nack_peers, p);
    }
    if (!timer_pending(s->resume_timer)) {
        timer_mod(s->resume_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + EXT_RESUME_NS);
    }
}

/* Slot wp + i of v's VELO ring is free (or unreadable: messages drop) */
static bool ext_velo_slot_free(ExtollState *s, ExtVpid *v, uint32_t i)
{
    uint32_t slot;
    uint64_t st;

    extoll_velo_sync(s, v - s->vpid);
    slot = (v->velo_wp + i) & (v->velo_slots - 1);
    return !extoll_read_u64(s, v->velo_ring + (uint64_t)EXTOLL_VELO_SLOT_SIZE *
                            slot + EXTOLL_VELO_STATUS_OFF, &st) || st == 0;
}

/*
 * Room (or nothing to wait for any more) for the request p was NACKed for,
 * waited for since waited ns.  A full VELO ring empties in order: resume
 * when EXT_RESUME_SLOTS slots are free (or half the ring), so the stream
 * does not stop again after one message; after EXT_RESUME_ANY_NS one slot
 * will do.
 */
static bool ext_nack_room(ExtollState *s, ExtPeer *p, int64_t waited)
{
    ExtVpid *v = &s->vpid[p->nack_vpid];

    if (!p->nack_velo) {
        return !extoll_rma_on(v) ||
               (g_queue_is_empty(&v->backlog) && extoll_noti_room(s, v));
    }
    if (!(v->ctrl & EXTOLL_VPID_VELO_RX) || !v->velo_slots) {
        return true;
    }
    if (waited >= EXT_RESUME_ANY_NS) {
        return ext_velo_slot_free(s, v, 0);
    }
    return ext_velo_slot_free(s, v, MIN(EXT_RESUME_SLOTS,
                                        v->velo_slots / 2) - 1) &&
           ext_velo_slot_free(s, v, 0);
}

void extoll_resume_timer(void *opaque)
{
    ExtollState *s = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    unsigned n = g_queue_get_length(&s->nack_peers);

    while (n--) {
        ExtPeer *p = g_queue_pop_head(&s->nack_peers);
        bool room = ext_nack_room(s, p, now - p->nack_ns);

        if (!room && now - p->nack_ns < EXT_RESUME_MAX_NS) {
            g_queue_push_tail(&s->nack_peers, p);
            continue;
        }
        p->nacked = false;
        if (room) {
            extoll_send_ack(s, p->node, EXT_T_RESUME, 0, p->rx_epoch[0],
                         p->rx_expected[0]);
        }
    }
    if (!g_queue_is_empty(&s->nack_peers)) {
        timer_mod(s->resume_timer, now + EXT_RESUME_NS);
    }
}

/* ------------------------------------------------------------------ */
/* Receive dispatch */

static bool ext_rx_kind(ExtollState *s, ExtPeer *p, const uint8_t *b,
                        size_t len, ExtRxData rd)
{
    switch (b[D_KIND]) {
    case K_VELO:
        return extoll_velo_rx(s, p->node, b, len);
    case K_PUT:
        return extoll_put_rx(s, p, b, len, rd);
    case K_NOTIPUT:
        return extoll_notiput_rx(s, p, b, len);
    case K_DONE:
        return extoll_done_rx(s, p, b, len);
    case K_GETREQ:
        return extoll_getreq_rx(s, p, b, len);
    case K_GETRSP:
        return extoll_getrsp_rx(s, p, b, len, rd);
    case K_LOCKREQ:
        return extoll_lockreq_rx(s, p, b, len);
    case K_LOCKRSP:
        return extoll_lockrsp_rx(s, p, b, len);
    default:
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
}

static void ext_rx_data(ExtollState *s, uint32_t src, const uint8_t *b,
                        size_t len, ExtRxData rd);

/*
 * Packets (ACKs, doorbells) waiting for room in a peer's socket (the host's
 * max_dgram_qlen is small) would otherwise wait for the main loop's write
 * handler; the receive thread retries them on every arrival.
 */
static void ext_flush_queued(ExtollState *s, uint32_t src)
{
    if (s->nic.fq && src != s->nic.node_id) {
        struct fabric *f = fabric_qemu_fabric(s->nic.fq);

        if (fabric_queued(f)) {
            fabric_flush(f);
        }
    }
}

void extoll_rx(void *opaque, uint32_t src, uint8_t type,
               const void *payload, size_t len)
{
    ExtollState *s = opaque;

    ext_flush_queued(s, src);

    if (type == FABRIC_NIC_T_WAKE) {
        return;     /* a direct writer woke our parked vCPUs */
    }
    if (type == EXT_T_ACK || type == EXT_T_NACK || type == EXT_T_RESUME) {
        extoll_rx_ack(s, src, type, payload, len);
        return;
    }
    if (type != EXT_T_DATA) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return;
    }
    ext_rx_data(s, src, payload, len, (ExtRxData) { NULL, 0 });
}

/*
 * A bulk record from another node: a DATA packet, the payload of a put or
 * get response apart.  The ring is shared with the sender: the header is
 * copied before it is looked at.
 */
void extoll_bulk_rx(void *opaque, uint32_t src, uint8_t type,
                    const void *hdr, size_t hlen,
                    const void *data, size_t dlen, bool data_ok)
{
    ExtollState *s = opaque;
    uint8_t h[FABRIC_BULK_MAX_HDR];

    ext_flush_queued(s, src);
    if (type != EXT_T_DATA || !data_ok || hlen > sizeof(h) ||
        src == s->nic.node_id || (dlen && hlen != P_DATA) ||
        dlen > EXT_CHUNK) {
        /* a corrupt payload is dropped: the sender sends it again */
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return;
    }
    memcpy(h, hdr, hlen);
    ext_rx_data(s, src, h, hlen, (ExtRxData) { dlen ? data : NULL, dlen });
}

/* A DATA packet of the reliable stream from node src. */
static void ext_rx_data(ExtollState *s, uint32_t src, const uint8_t *b,
                        size_t len, ExtRxData rd)
{
    ExtPeer *p = extoll_peer(s, src);
    uint32_t epoch, seq;
    unsigned c;

    if (len < D_HDR || !p) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return;
    }
    epoch = ldl_le_p(b + D_EPOCH);
    seq = ldl_le_p(b + D_SEQ);
    c = extoll_kind_chan(b[D_KIND]);
    trace_extoll_rx(s->nic.node_id, src, c, seq, b[D_KIND], len);
    if (epoch != p->rx_epoch[c]) {
        /* a new sender session starts at 0; a fresh receiver adopts any */
        if (seq != 0 && p->rx_epoch[c] != 0) {
            s->counters[EXTOLL_CNT_RX_DUPLICATES]++;
            return;
        }
        p->rx_epoch[c] = epoch;
        p->rx_expected[c] = seq;
        if (c) {
            p->rsp_err = false;
        } else {
            p->put_err = false;
        }
    }
    if (seq != p->rx_expected[c]) {
        trace_extoll_rx_duplicate(s->nic.node_id, src, c, seq,
                                  p->rx_expected[c]);
        s->counters[EXTOLL_CNT_RX_DUPLICATES]++;
        /*
         * The rest of a window behind a NACKed request: the sender rewinds
         * on the NACK (or on its timer if that was lost), an ACK per packet
         * would tell it nothing new.
         */
        if (!(c == 0 && p->nacked &&
              (int32_t)(seq - p->rx_expected[c]) > 0)) {
            extoll_send_ack(s, src, EXT_T_ACK, c, epoch, p->rx_expected[c] - 1);
        }
        return;
    }
    if (!ext_rx_kind(s, p, b, len, rd)) {
        extoll_send_ack(s, src, EXT_T_NACK, c, epoch, seq);
        return;
    }
    p->rx_expected[c]++;
    s->counters[EXTOLL_CNT_RX_PACKETS]++;
    if (c == 1 && !g_queue_is_empty(&p->wait)) {
        /* the answers are on their way (extoll-stream.c, ext_wait_timer()) */
        p->answer_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    }
    /* ACKs are cumulative: one per EXT_ACK_BATCH packets or per batch of
     * received packets (bottom half), whichever comes first */
    if (++p->ack_count[c] >= EXT_ACK_BATCH) {
        extoll_send_ack(s, src, EXT_T_ACK, c, epoch, seq);
        p->ack_count[c] = 0;
        p->ack_due[c] = false;
        return;
    }
    p->ack_due[c] = true;
    if (!p->ack_listed) {
        p->ack_listed = true;
        g_queue_push_tail(&s->ack_peers, p);
    }
    /* a polling vCPU sends them itself when its poll ends (ext_velo_read):
     * no main loop wake-up per poll */
    if (!s->vcpu_polling) {
        qemu_bh_schedule(s->ack_bh);
    }
}

void extoll_ack_bh(void *opaque)
{
    ExtollState *s = opaque;
    ExtPeer *p;

    while ((p = g_queue_pop_head(&s->ack_peers))) {
        p->ack_listed = false;
        for (unsigned c = 0; c < EXT_NCHAN; c++) {
            if (p->ack_due[c]) {
                extoll_send_ack(s, p->node, EXT_T_ACK, c, p->rx_epoch[c],
                             p->rx_expected[c] - 1);
                p->ack_due[c] = false;
                p->ack_count[c] = 0;
            }
        }
    }
}
