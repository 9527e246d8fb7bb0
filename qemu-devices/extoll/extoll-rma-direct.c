/*
 * EXTOLL NIC: puts and gets by direct delivery (Documentation/fabric.md
 * section 9).  The origin's model does the target's part of the command
 * itself: it writes a put's data into the target's RAM, or reads a get's
 * data from it, through the translations the target's ATU gave its own
 * model (the translation cache, fabric-direct.h), and writes the target's
 * notification into its queue, which the target exported.  One copy,
 * between the two guests' RAM, and nothing runs on the target's host
 * threads.  Whatever the origin cannot do so (a page the target has not
 * translated yet, a protection ID that differs, a queue that is full or
 * held, a command of ours to that node still unanswered, faults injected
 * on the links) takes the rings, where the target checks, translates,
 * fills the cache and reports as before.  See extoll-nic.c for the
 * overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"

#include "extoll-int.h"
#include "trace.h"

/* A copy between our segments (ExtSeg) and the target's pieces */
typedef struct ExtDirectCopy {
    ExtollState *s;
    bool own_host;          /* ours as host memory (spans), or: */
    struct fabric_direct_spans spans;
    GArray *segs;           /* ours as bus addresses (ExtSeg); NULL: imm */
    const uint8_t *imm;
    unsigned seg;           /* cursor in segs: segment and offset in it */
    uint32_t seg_off;
    uint32_t size;
    bool get;
    bool ok;
    uint8_t tail[8];        /* get: our last quadword, stored last */
    uint32_t tail_len;
} ExtDirectCopy;

/*
 * Moves n bytes between host (the target's RAM) and our segments at the
 * cursor: put reads ours into host, get writes host into ours.
 */
static void ext_direct_move(ExtDirectCopy *c, uint8_t *host, uint32_t n)
{
    if (c->own_host) {
        fabric_direct_spans_move(&c->spans, host, n, c->get);
        return;
    }
    while (n && c->ok) {
        ExtSeg *sg = &g_array_index(c->segs, ExtSeg, c->seg);
        uint64_t bus = sg->bus + c->seg_off;
        uint32_t seg_len = sg->len, k = MIN(n, seg_len - c->seg_off);

        c->ok = c->get ? extoll_dma_write(c->s, bus, host, k)
                       : extoll_dma_read(c->s, bus, host, k);
        host += k;
        n -= k;
        c->seg_off += k;
        if (c->seg_off == seg_len) {
            c->seg++;
            c->seg_off = 0;
        }
    }
}

static void ext_direct_piece(void *opaque, uint8_t *host, uint32_t off,
                             uint32_t len)
{
    ExtDirectCopy *c = opaque;
    bool last = off + len == c->size;
    uint32_t head = len;

    if (c->imm) {
        memcpy(host, c->imm + off, len);
        return;
    }
    /*
     * The last quadword becomes visible only after everything below it
     * (clients poll a tail flag at the end of a put or a get).
     */
    if (last && c->size > 8) {
        head = len > 8 ? len - 8 : 0;
    }
    ext_direct_move(c, host, head);
    if (head == len) {
        return;
    }
    if (c->get) {
        /* ours: after the target's notification, see extoll_rma_direct() */
        c->tail_len = len - head;
        memcpy(c->tail, host + head, c->tail_len);
        return;
    }
    smp_mb();   /* the tail after the bytes below it, non-temporal too */
    ext_direct_move(c, host + head, len - head);
}

/*
 * Our side of the command: host memory when our own translation cache has
 * every page (no DMA through the IOMMU per page), else bus segments from
 * our ATU.  Our own cache cannot be fenced meanwhile: that takes a BAR0
 * read of ours, under the BQL we hold.
 */
static bool ext_direct_local(ExtollState *s, const ExtDirectCmd *c,
                             ExtDirectCopy *cp)
{
    bool get = cp->get;

    if (fabric_direct_access(s->nic.dd, s->nic.node_id, c->laddr, c->size,
                             c->vi, get ? FABRIC_DIRECT_X_WRITE :
                             FABRIC_DIRECT_X_READ, c->prot,
                             fabric_direct_spans_add, &cp->spans) ==
        FABRIC_DIRECT_DONE) {
        cp->own_host = true;
        return true;
    }
    fabric_direct_spans_free(&cp->spans);
    cp->segs = extoll_translate(s, c->vi, c->prot, true, c->laddr, c->size,
                                get ? EXTOLL_ATU_WRITE : EXTOLL_ATU_READ);
    return cp->segs != NULL;
}

/* Our part of a get's last quadword, after everything below it */
static bool ext_direct_tail(ExtDirectCopy *c)
{
    smp_mb();   /* the tail after the bytes below it, non-temporal too */
    ext_direct_move(c, c->tail, c->tail_len);
    return c->ok;
}

/*
 * The notification the target writes for the command (completer of a
 * put, responder of a get) into its queue: the same words its model
 * writes (extoll_put_rx(), extoll_getreq_rx()).
 */
static bool ext_direct_target_noti(ExtollState *s, ExtPeer *p,
                                   const ExtDirectCmd *c, bool get,
                                   uint32_t hops)
{
    bool te = c->opts & EXTOLL_RMA_OPT_TE;
    uint32_t lo = extoll_last_off(c->size);
    uint8_t w0[8];
    struct fabric_direct_msg m = {
        .payload = w0, .len = 8, .prot = c->prot, .hops = hops,
        .status = EXTOLL_NOTI_W1(c->size - lo - 1, c->vi, s->nic.node_id,
                                 get ? EXTOLL_NOTI_RESPONDER :
                                 EXTOLL_NOTI_COMPLETER, c->cmd,
                                 te ? EXTOLL_NOTI_MODE_TE : 0, 0),
    };
    bool wake;

    stq_le_p(w0, c->raddr + lo);
    if (fabric_direct_write(s->nic.dd, p->node, EXT_NOTI_Q(c->dv), &m,
                            &wake) != FABRIC_DIRECT_DONE) {
        return false;
    }
    fabric_nic_direct_done(&s->nic, p->node, wake);
    return true;
}

/* The origin's notifications, as its model posts them on the rings path */
static void ext_direct_origin_notis(ExtollState *s, ExtPeer *p,
                                    const ExtDirectCmd *c, bool get)
{
    ExtVpid *v = &s->vpid[c->vi];
    uint32_t lo = extoll_last_off(c->size);
    unsigned mode = extoll_noti_mode(c->opts);

    if (c->spec & EXTOLL_NOTI_REQUESTER) {
        extoll_noti_post(s, v, c->imm ? c->laddr : c->laddr + lo,
                         EXTOLL_NOTI_W1(c->size - lo - 1, c->dv, p->node,
                                        EXTOLL_NOTI_REQUESTER, c->cmd, mode,
                                        0));
    }
    if (get && (c->spec & EXTOLL_NOTI_COMPLETER)) {
        extoll_noti_post(s, v, c->laddr + lo,
                         EXTOLL_NOTI_W1(c->size - lo - 1, c->dv, p->node,
                                        EXTOLL_NOTI_COMPLETER,
                                        c->cmd == EXTOLL_CMD_QW_GET ?
                                        EXTOLL_CMD_GET_QW_RSP :
                                        EXTOLL_CMD_GET_BT_RSP, mode, 0));
    }
}

/*
 * Command c of ours to node p->node, done directly: true when it is
 * finished (data moved, notifications written), false when it takes the
 * rings (nothing the target could tell from a command it never got, but
 * for data the rings write once more).
 */
bool extoll_rma_direct(ExtollState *s, ExtPeer *p, const ExtDirectCmd *c)
{
    bool get = c->cmd == EXTOLL_CMD_BT_GET || c->cmd == EXTOLL_CMD_QW_GET;
    unsigned tnoti = get ? EXTOLL_NOTI_RESPONDER : EXTOLL_NOTI_COMPLETER;
    ExtDirectCopy cp = {
        .s = s, .imm = c->imm, .size = c->size, .get = get, .ok = true,
    };
    enum fabric_direct_result r = FABRIC_DIRECT_NO_PATH;
    uint32_t hops;

    if (!(c->opts & EXTOLL_RMA_OPT_TE) || !fabric_nic_direct_on(&s->nic) ||
        p->node == s->nic.node_id || !g_queue_is_empty(&p->wait) ||
        !c->size) {
        return false;
    }
    /*
     * The target's queue record says its VPID takes RMA with our ID (and
     * has room for the notification we owe it).
     */
    if (!fabric_direct_ready(s->nic.dd, p->node, EXT_NOTI_Q(c->dv), c->prot,
                             c->spec & tnoti)) {
        goto rings;
    }
    if (!c->imm && !ext_direct_local(s, c, &cp)) {
        goto rings;         /* the rings path reports the fault */
    }
    /* a get: its request to the target, then the data back to us */
    if (get ? !fabric_nic_direct_route(&s->nic, p->node, 8, &hops) ||
              !fabric_nic_direct_route_from(&s->nic, p->node, s->nic.node_id,
                                            c->size, &hops)
            : !fabric_nic_direct_route(&s->nic, p->node, c->size, &hops)) {
        goto rings;
    }
    r = fabric_direct_access(s->nic.dd, p->node, c->raddr, c->size, c->dv,
                             get ? FABRIC_DIRECT_X_READ : FABRIC_DIRECT_X_WRITE,
                             c->prot, ext_direct_piece, &cp);
    if (r != FABRIC_DIRECT_DONE || !cp.ok ||
        ((c->spec & tnoti) && !ext_direct_target_noti(s, p, c, get, hops)) ||
        (get && !ext_direct_tail(&cp))) {
        r = FABRIC_DIRECT_NO_PATH;
        goto rings;
    }
    if (get) {
        s->counters[EXTOLL_CNT_RMA_RX_BYTES] += c->size;
    }
    ext_direct_origin_notis(s, p, c, get);
rings:
    if (cp.segs) {
        g_array_free(cp.segs, true);
    }
    fabric_direct_spans_free(&cp.spans);
    trace_extoll_rma_direct(s->nic.node_id, c->vi, c->cmd, p->node, c->dv,
                            c->size, r == FABRIC_DIRECT_DONE);
    return r == FABRIC_DIRECT_DONE;
}

/*
 * Notification put c (class in size, payload in laddr) to node p->node,
 * done directly: the target's completer notification written into its
 * queue, our requester notification posted, as extoll_notiput_rx() and
 * extoll_done_rx() write them.  false: it takes the rings.
 */
bool extoll_rma_direct_notiput(ExtollState *s, ExtPeer *p,
                               const ExtDirectCmd *c)
{
    uint8_t w0[8];
    struct fabric_direct_msg m = {
        .payload = w0, .len = 8, .prot = c->prot,
        .status = EXTOLL_NOTI_W1(c->size, c->vi, s->nic.node_id,
                                 EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_NOTI_PUT,
                                 0, 0),
    };
    bool ok = false, wake = false;
    uint32_t hops;

    if (!fabric_nic_direct_on(&s->nic) || p->node == s->nic.node_id ||
        !g_queue_is_empty(&p->wait)) {
        return false;
    }
    stq_le_p(w0, c->laddr);
    if (fabric_direct_ready(s->nic.dd, p->node, EXT_NOTI_Q(c->dv), c->prot,
                            c->spec & EXTOLL_NOTI_COMPLETER) &&
        fabric_nic_direct_route(&s->nic, p->node, 8, &hops)) {
        m.hops = hops;
        ok = !(c->spec & EXTOLL_NOTI_COMPLETER) ||
             fabric_direct_write(s->nic.dd, p->node, EXT_NOTI_Q(c->dv), &m,
                                 &wake) == FABRIC_DIRECT_DONE;
    }
    if (ok) {
        fabric_nic_direct_done(&s->nic, p->node, wake);
        if (c->spec & EXTOLL_NOTI_REQUESTER) {
            extoll_noti_post(s, &s->vpid[c->vi], c->laddr,
                             EXTOLL_NOTI_W1(c->size, c->dv, p->node,
                                            EXTOLL_NOTI_REQUESTER,
                                            EXTOLL_CMD_NOTI_PUT,
                                            extoll_noti_mode(c->opts), 0));
        }
    }
    trace_extoll_rma_direct(s->nic.node_id, c->vi, c->cmd, p->node, c->dv, 8,
                            ok);
    return ok;
}
