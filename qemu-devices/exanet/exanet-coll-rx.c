/*
 * ExaNet NI model, the collective unit: reception of collective packets
 * (data, ACKs, probes and their answers) from the RDMA engine's bulk path.
 * Part of exanet-coll.c (private header exanet-coll-int.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qemu/queue.h"
#include "hw/pci/pci.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet_coll.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"
#include "fabric-park.h"
#include "trace.h"
#include "exanet-coll-int.h"

/* ------------------------------------------------------------------ */
/* Reception */

static CollGroup *coll_find(ExanetColl *c, const CollHdr *h)
{
    for (unsigned i = 0; i < EXANET_COLL_GROUPS; i++) {
        CollGroup *g = &c->g[i];

        if (g->enabled && g->pdid == h->pdid && g->key == h->key &&
            g->myrank == h->dst_rank) {
            return g;
        }
    }
    return NULL;
}

/* The group a packet from src is for, if src really is that member. */
static CollGroup *coll_lookup(ExanetColl *c, uint32_t src, const CollHdr *h,
                              uint8_t answer_type)
{
    CollGroup *g = coll_find(c, h);

    if (!g || h->src_rank >= g->size || g->members[h->src_rank] != src) {
        c->cnt[EXANET_CCNT_RX_REFUSED]++;
        trace_exanet_coll_refused(c->r->node_id, src,
                                  h->pdid, h->key, h->dst_rank, h->src_rank);
        if (answer_type) {
            coll_answer(c->r, src, h, answer_type, EXANET_COLL_E_NO_GROUP);
        }
        return NULL;
    }
    return g;
}

static void coll_rx_data(ExanetColl *c, uint32_t src, const CollHdr *h,
                         const void *data, size_t dlen, bool data_ok)
{
    CollGroup *g = coll_lookup(c, src, h, RD_COLL_ACK);
    bool current;
    int i;
    CollEarly *e;
    gpointer key;

    if (!g) {
        return;
    }
    i = coll_recv_step(g, h->step, h->src_rank);
    if (i < 0 || h->block >= h->nblocks || h->nblocks > COLL_MAX_BLOCKS ||
        dlen > COLL_BLOCK) {
        c->cnt[EXANET_CCNT_RX_BAD]++;
        return;
    }
    if (!data_ok) {
        c->cnt[EXANET_CCNT_RX_CORRUPT]++;
        return;         /* not ACKed: the sender's timer sends it again */
    }
    current = g->state == EXANET_COLL_ONGOING && h->seq == g->seq;
    if (!current && h->seq != g->seq + 1) {
        if (h->seq == g->seq && g->state == EXANET_COLL_ERROR) {
            coll_answer(c->r, src, h, RD_COLL_ACK, coll_failure_code(g));
        } else if ((int32_t)(h->seq - g->seq) <= 0) {
            c->cnt[EXANET_CCNT_RX_DUPLICATES]++;
            coll_answer(c->r, src, h, RD_COLL_ACK, 0);
        } else {
            c->cnt[EXANET_CCNT_RX_BAD]++;
        }
        return;
    }
    if (current && (h->count != g->count || h->dtype != g->dtype ||
                    h->op != g->op || h->nblocks != g->nblocks)) {
        coll_answer(c->r, src, h, RD_COLL_ACK, EXANET_COLL_E_MISMATCH);
        coll_finish(g, EXANET_COLL_E_MISMATCH);
        return;
    }
    key = early_key(h->seq, h->step, h->src_rank, h->block);
    if ((current && g->bstep[h->block] > i) ||
        g_hash_table_contains(g->early, key)) {
        c->cnt[EXANET_CCNT_RX_DUPLICATES]++;
        coll_answer(c->r, src, h, RD_COLL_ACK, 0);
        return;
    }
    if (g->early_bytes + dlen > COLL_EARLY_CAP) {
        return;         /* not ACKed: comes again when there is room */
    }
    e = g_malloc(sizeof(*e) + dlen);
    e->h = *h;
    e->len = dlen;
    memcpy(e->data, data, dlen);
    g_hash_table_insert(g->early, key, e);
    g->early_bytes += dlen;
    coll_answer(c->r, src, h, RD_COLL_ACK, 0);
    trace_exanet_coll_rx(c->r->node_id, g->idx, h->seq, h->src_rank,
                         h->step, h->block, dlen);
    if (current) {
        g->moved = true;
        if (g->bstep[h->block] == i) {
            coll_advance(g, h->block);
        } else {
            c->cnt[EXANET_CCNT_RX_EARLY]++;
        }
    } else {
        c->cnt[EXANET_CCNT_RX_EARLY]++;
    }
}

static bool coll_send_is(const CollSend *s, const CollHdr *h)
{
    return s->h.seq == h->seq && s->h.dst_rank == h->src_rank &&
           s->h.step == h->step && s->h.block == h->block;
}

/* An answer to a send of a group disabled since. */
static void coll_rx_orphan_ack(ExanetColl *c, uint32_t src, const CollHdr *h)
{
    CollSend *s;

    QTAILQ_FOREACH(s, &c->orphans, link) {
        if (s->dst_node == src && s->h.pdid == h->pdid &&
            s->h.key == h->key && s->h.src_rank == h->dst_rank &&
            coll_send_is(s, h)) {
            QTAILQ_REMOVE(&c->orphans, s, link);
            g_free(s);
            return;
        }
    }
}

static void coll_rx_ack(ExanetColl *c, uint32_t src, const CollHdr *h)
{
    CollGroup *g = coll_find(c, h);
    CollSend *s;
    bool current;

    /* Not coll_lookup(): a NO_GROUP answer names no group there. */
    if (!g || h->src_rank >= g->size || g->members[h->src_rank] != src) {
        coll_rx_orphan_ack(c, src, h);
        return;
    }
    current = g->state == EXANET_COLL_ONGOING && h->seq == g->seq;
    if (current) {
        g->moved = true;
    }
    QTAILQ_FOREACH(s, &g->sends, link) {
        if (coll_send_is(s, h)) {
            break;
        }
    }
    if (!s) {
        if (current && h->code && h->code != EXANET_COLL_E_NO_GROUP) {
            coll_finish(g, h->code == EXANET_COLL_E_MISMATCH ?
                        EXANET_COLL_E_MISMATCH : EXANET_COLL_E_PEER);
        }
        return;
    }
    if (!h->code) {
        QTAILQ_REMOVE(&g->sends, s, link);
        g_free(s);
    } else if (h->code == EXANET_COLL_E_MISMATCH && current) {
        coll_finish(g, EXANET_COLL_E_MISMATCH);
    } else {
        coll_send_failed(g, s, h->code == EXANET_COLL_E_NO_GROUP ?
                         EXANET_COLL_E_NO_GROUP : EXANET_COLL_E_PEER);
    }
}

static void coll_rx_probe(ExanetColl *c, uint32_t src, const CollHdr *h)
{
    CollGroup *g = coll_lookup(c, src, h, RD_COLL_PROBE_ACK);

    if (g) {
        coll_answer(c->r, src, h, RD_COLL_PROBE_ACK,
                    g->failed ? coll_failure_code(g) : 0);
    }
}

static void coll_rx_probe_ack(ExanetColl *c, uint32_t src, const CollHdr *h)
{
    CollGroup *g = coll_find(c, h);

    if (!g || h->src_rank >= g->size || g->members[h->src_rank] != src ||
        g->state != EXANET_COLL_ONGOING || h->seq != g->seq) {
        return;
    }
    if (h->code) {
        coll_finish(g, h->code == EXANET_COLL_E_NO_GROUP ||
                       h->code == EXANET_COLL_E_MISMATCH ?
                    h->code : EXANET_COLL_E_PEER);
        return;
    }
    g->probe_out = false;
    g->probe_retries = 0;
}

bool exanet_coll_bulk_rx(ExanetColl *c, uint32_t src, uint8_t type,
                         const void *hdr, size_t hlen, const void *data,
                         size_t dlen, bool data_ok)
{
    CollHdr h;

    if (type < RD_COLL || type > RD_COLL_PROBE_ACK) {
        return false;
    }
    if (hlen != sizeof(h) || (type != RD_COLL && dlen)) {
        c->cnt[EXANET_CCNT_RX_BAD]++;
        return true;
    }
    memcpy(&h, hdr, sizeof(h));
    switch (type) {
    case RD_COLL:
        coll_rx_data(c, src, &h, data, dlen, data_ok);
        break;
    case RD_COLL_ACK:
        coll_rx_ack(c, src, &h);
        break;
    case RD_COLL_PROBE:
        coll_rx_probe(c, src, &h);
        break;
    default:
        coll_rx_probe_ack(c, src, &h);
        break;
    }
    return true;
}
