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
/* VELO */

static void ext_velo_send(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    uint64_t h = v->velo_hdr;
    uint32_t len = EXTOLL_VELO_HDR_LEN(h), node = EXTOLL_VELO_HDR_NODE(h);
    ExtPeer *p;
    ExtPkt *k;
    uint8_t *d;

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
    d = extoll_pkt_new(s, p, &k, K_VELO, vi, EXTOLL_VELO_HDR_VPID(h),
                       v->velo_gen, v->velo_prot, 0, V_DATA + len);
    d[V_MTT] = EXTOLL_VELO_HDR_MTT(h);
    d[V_TAG] = EXTOLL_VELO_HDR_TAG(h);
    d[V_LEN] = len;
    for (uint32_t i = 0; i < len; i++) {
        d[V_DATA + i] = v->velo_data[i / 8] >> (8 * (i % 8));
    }
    k->credit_vpid = vi;
    k->credit_gen = v->velo_gen;
    v->velo_credits--;
    trace_extoll_velo_send(s->nic.node_id, vi, node, EXTOLL_VELO_HDR_VPID(h),
                           len, v->velo_credits);
    s->counters[EXTOLL_CNT_VELO_TX]++;
    extoll_pkt_queue(s, p, k);
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
    st = (uint64_t)(src & 0xffff) | ((uint64_t)b[D_SVPID] << 16) |
         ((uint64_t)(b[V_MTT] & 3) << 32) | EXTOLL_VELO_ST_EOM |
         ((uint64_t)b[V_TAG] << 40) | ((uint64_t)mlen << 48);
    if (mlen) {
        extoll_dma_write(s, slot, b + V_DATA, mlen);
    }
    extoll_write_u64(s, slot + EXTOLL_VELO_STATUS_OFF, st);
    v->velo_wp = (v->velo_wp + 1) & (v->velo_slots - 1);
    v->velo_rx_count++;
    s->counters[EXTOLL_CNT_VELO_RX]++;
    return true;
}
