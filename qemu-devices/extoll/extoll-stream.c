/*
 * EXTOLL NIC: the reliable stream per (this node -> peer node) pair:
 * transmit side, retransmission, failures (a silent stream, an answer
 * that does not come), and the ACKs it receives and sends.  The receive
 * side is extoll-stream-rx.c; extoll-nic.c describes the protocol.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qemu/guest-random.h"

#include "extoll-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Reliable stream, transmit side */

static void ext_timer_cb(void *opaque);
static void ext_stall_cb(void *opaque);
static void ext_wait_timer(void *opaque);

unsigned extoll_kind_chan(uint8_t kind)
{
    return kind == K_DONE || kind == K_GETRSP || kind == K_LOCKRSP;
}

ExtPeer *extoll_peer(ExtollState *s, uint32_t node)
{
    ExtPeer *p;

    if (node >= s->nic.num_nodes) {
        return NULL;
    }
    p = s->peers[node];
    if (!p) {
        p = g_new0(ExtPeer, 1);
        p->s = s;
        p->node = node;
        for (unsigned c = 0; c < EXT_NCHAN; c++) {
            ExtTx *t = &p->tx[c];

            t->peer = p;
            t->chan = c;
            t->epoch = s->epoch;
            g_queue_init(&t->txq);
            t->timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_timer_cb, t);
            t->stall_timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_stall_cb,
                                          t);
        }
        g_queue_init(&p->wait);
        g_queue_init(&p->velo_held);
        p->wait_timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_wait_timer, p);
        s->peers[node] = p;
    }
    return p;
}

/*
 * A packet of len bytes to this node itself, queued for the loopback
 * bottom half (which runs under the BQL, so after the caller filled it):
 * returns where its len bytes go.
 */
static uint8_t *ext_loop_reserve(ExtollState *s, uint8_t type, size_t len)
{
    GByteArray *b = g_byte_array_sized_new(len + 1);

    g_byte_array_set_size(b, len + 1);
    b->data[0] = type;
    g_queue_push_tail(&s->loopq, b);
    qemu_bh_schedule(s->loop_bh);
    return b->data + 1;
}

static void ext_xmit(ExtollState *s, uint32_t dst, uint8_t type,
                     const void *buf, size_t len)
{
    if (dst == s->nic.node_id) {
        memcpy(ext_loop_reserve(s, type, len), buf, len);
        return;
    }
    fabric_nic_send(&s->nic, dst, type, buf, len);
}

/*
 * The payload of a put from memory is not copied when the command is taken:
 * it is read from the origin's memory every time its packet is sent (as
 * the real NIC's requester reads it), straight into the bulk ring.  The
 * source is translated again each time under the BQL, so nothing is read
 * behind an ATU fence (uapi/extoll_hw.h 7) or for an owner that is gone; a
 * source that became unreadable turns the fragment into an error fragment
 * (F_ERR, zeros, kept for retransmissions): the target writes nothing and
 * the requester gets EXTOLL_NOTI_ERR_CMPL.  The requester notification
 * follows K_DONE, so every fragment has been taken when the user may reuse
 * the buffer.  buf holds the header (P_DATA bytes) and room for the data.
 */
static void ext_put_read(ExtollState *s, ExtPkt *k, uint8_t *buf)
{
    unsigned vi = k->data[D_SVPID];
    ExtVpid *v = &s->vpid[vi];
    bool te = k->data[P_MODE] & EXTOLL_RMA_OPT_TE;
    uint32_t n = k->len - P_DATA;

    if (!(k->data[P_FLAGS] & F_ERR) && extoll_rma_addr_ok(v, te) &&
        v->rma_gen == k->data[D_GEN] &&
        extoll_mem_rw(s, vi, extoll_pkt_prot(k->data), te,
                      ldq_le_p(k->data + P_ECHO), buf + P_DATA, n, false)) {
        return;
    }
    if (!(k->data[P_FLAGS] & F_ERR)) {
        trace_extoll_put_source_gone(s->nic.node_id, vi,
                                     ldq_le_p(k->data + P_ECHO), n);
        k->data[P_FLAGS] |= F_ERR;
    }
    buf[P_FLAGS] = k->data[P_FLAGS];
    memset(buf + P_DATA, 0, n);
}

/*
 * A DATA packet to another node goes into the bulk ring towards it: the
 * protocol header as the record header, the payload of a put or get
 * response as its data.  Returns false when the ring is full (nothing
 * sent, try again later); a packet that is lost otherwise (no fabric, file
 * error) is the retransmission's business.
 */
static bool ext_xmit_data(ExtollState *s, uint32_t dst, ExtPkt *k)
{
    uint8_t kind = k->data[D_KIND];
    size_t hlen = k->len;
    uint8_t *buf;
    int r;

    if (k->lazy && dst == s->nic.node_id) {
        /* header, then the payload read straight into the loopback packet */
        buf = ext_loop_reserve(s, EXT_T_DATA, k->len);
        memcpy(buf, k->data, P_DATA);
        ext_put_read(s, k, buf);
        return true;
    }
    if (dst == s->nic.node_id || !s->nic.fq) {
        /*
         * a stored packet to this node, or no fabric (nothing is sent,
         * so a lazy payload need not be read)
         */
        ext_xmit(s, dst, EXT_T_DATA, k->data, k->lazy ? P_DATA : k->len);
        return true;
    }
    if ((kind == K_PUT || kind == K_GETRSP) && hlen > P_DATA) {
        hlen = P_DATA;
    }
    if (!k->lazy) {
        r = fabric_bulk_send(fabric_qemu_fabric(s->nic.fq), dst, EXT_T_DATA,
                             k->data, hlen, k->data + hlen, k->len - hlen);
    } else {
        /* header, then the payload read straight into the ring */
        buf = fabric_bulk_reserve(fabric_qemu_fabric(s->nic.fq), dst, hlen,
                                  k->len - hlen, &r);
        if (buf) {
            memcpy(buf, k->data, hlen);
            ext_put_read(s, k, buf);
            r = fabric_bulk_commit(fabric_qemu_fabric(s->nic.fq), EXT_T_DATA);
        }
    }
    if (r == -EAGAIN || r == -EBUSY) {     /* ring full, link busy */
        trace_extoll_tx_ring_full(s->nic.node_id, dst,
                                  ldl_le_p(k->data + D_SEQ));
        return false;
    }
    return true;
}

void extoll_loop_bh(void *opaque)
{
    ExtollState *s = opaque;
    unsigned budget = 256;
    GByteArray *b;

    while (budget-- && (b = g_queue_pop_head(&s->loopq))) {
        extoll_rx(s, s->nic.node_id, b->data[0], b->data + 1, b->len - 1);
        g_byte_array_free(b, true);
    }
    if (!g_queue_is_empty(&s->loopq)) {
        qemu_bh_schedule(s->loop_bh);
    }
}

int64_t extoll_rto_ns(unsigned retries)
{
    return fabric_nic_backoff(EXT_RTO_MIN_NS, retries, EXT_RTO_MAX_NS);
}

static int64_t ext_rto(ExtTx *t)
{
    return extoll_rto_ns(t->retries);
}

/*
 * The stream's timer (retransmission, NACK back-off) is lazy
 * (fabric_nic_timer_arm()): deleted on every ACK and armed for the next
 * packet it woke the main loop ~2,800 times a second per node in a 2-node
 * VELO ping-pong.
 */
static void ext_arm(ExtTx *t, int64_t ns)
{
    fabric_nic_timer_arm(t->timer, &t->due, ns);
    t->stall_armed = false;
}

static void ext_disarm(ExtTx *t)
{
    t->due = 0;
}

static void ext_push(ExtTx *t)
{
    ExtollState *s = t->peer->s;
    bool sent = false;

    if (t->paused) {
        return;
    }
    while (t->next_unsent && t->inflight < EXT_WINDOW) {
        ExtPkt *k = t->next_unsent->data;

        if (!ext_xmit_data(s, t->peer->node, k)) {
            if (!timer_pending(t->stall_timer)) {
                timer_mod(t->stall_timer,
                          qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                          EXT_STALL_NS);
            }
            /*
             * A ring that a dead node never drains counts as silence too;
             * once something is sent, the timeout counts from then.
             */
            if (!t->due) {
                ext_arm(t, ext_rto(t));
                t->stall_armed = true;
            }
            break;
        }
        t->next_unsent = t->next_unsent->next;
        t->inflight++;
        trace_extoll_tx(s->nic.node_id, t->peer->node, t - t->peer->tx, k->seq,
                        k->data[D_KIND], k->len);
        sent = true;
    }
    if (sent && (t->stall_armed || !t->due)) {
        ext_arm(t, ext_rto(t));
    }
}

/* The bulk ring towards the peer was full: send what is waiting. */
static void ext_stall_cb(void *opaque)
{
    ext_push(opaque);
}

/* A packet of len bytes of which the first 'stored' are kept here. */
static uint8_t *ext_pkt_alloc(ExtPkt **out, uint8_t kind, unsigned svpid,
                              unsigned dvpid, uint8_t gen, uint16_t prot,
                              uint16_t tag, size_t len, size_t stored)
{
    ExtPkt *k = g_malloc(sizeof(*k) + stored);

    /* the payload of a put or get response is written over completely */
    memset(k, 0, sizeof(*k) + MIN(stored, P_DATA));
    k->len = len;
    k->credit_vpid = -1;
    k->lazy = stored < len;
    k->wait = NULL;
    k->data[D_KIND] = kind;
    k->data[D_SVPID] = svpid;
    k->data[D_DVPID] = dvpid;
    k->data[D_GEN] = gen;
    stw_le_p(k->data + D_PROT, prot);
    stw_le_p(k->data + D_TAG, tag);
    *out = k;
    return k->data;
}

uint8_t *extoll_pkt_new(ExtollState *s, ExtPeer *p, ExtPkt **out,
                        uint8_t kind, unsigned svpid, unsigned dvpid,
                        uint8_t gen, uint16_t prot, uint16_t tag,
                        size_t len)
{
    return ext_pkt_alloc(out, kind, svpid, dvpid, gen, prot, tag, len, len);
}

void extoll_pkt_queue(ExtollState *s, ExtPeer *p, ExtPkt *k)
{
    ExtTx *t = &p->tx[extoll_kind_chan(k->data[D_KIND])];

    stl_le_p(k->data + D_EPOCH, t->epoch);
    k->seq = t->next_seq++;
    stl_le_p(k->data + D_SEQ, k->seq);
    s->txq_bytes += k->len;
    s->counters[EXTOLL_CNT_TX_PACKETS]++;
    g_queue_push_tail(&t->txq, k);
    if (!t->next_unsent) {
        t->next_unsent = g_queue_peek_tail_link(&t->txq);
    }
    ext_push(t);
}

/* Reads n bytes at *pos of the translated range a (advances *pos). */
static bool ext_seg_read(ExtollState *s, GArray *a, uint64_t *pos,
                         uint8_t *dst, uint32_t n)
{
    uint64_t skip = *pos;

    *pos += n;
    for (unsigned i = 0; i < a->len && n; i++) {
        ExtSeg *sg = &g_array_index(a, ExtSeg, i);
        uint32_t m;

        if (skip >= sg->len) {
            skip -= sg->len;
            continue;
        }
        m = MIN(n, sg->len - skip);
        if (!extoll_dma_read(s, sg->bus + skip, dst, m)) {
            return false;
        }
        dst += m;
        n -= m;
        skip = 0;
    }
    return n == 0;
}

/*
 * Queues size bytes as packets of EXT_CHUNK at most (size 0: one empty
 * packet).  The source is translated once here, so a bad one fails the
 * command (false, nothing queued).  A put from memory of more than one
 * packet keeps no copy of its payload (read when sent, ext_put_read()),
 * which spares bulk puts a malloc and a copy per packet; one packet is
 * read now, as before (a second translation at send time would cost more
 * than the copy).  A get response is read into its packets now, because
 * the responder notification that follows tells the responder its memory
 * has been read.
 */
bool extoll_xfer_queue(ExtollState *s, ExtPeer *p, const ExtXfer *x,
                       const ExtSrc *src, uint32_t size)
{
    GQueue q = G_QUEUE_INIT;
    GArray *a = NULL;
    bool lazy = !src->buf && x->kind == K_PUT && size > EXT_CHUNK;
    uint64_t pos = 0;
    uint32_t off = 0;
    ExtPkt *k;

    if (!src->buf && size) {
        a = extoll_translate(s, src->vpid, src->prot, src->te, src->addr, size,
                             EXTOLL_ATU_READ);
        if (!a) {
            return false;
        }
    }

    do {
        uint32_t n = MIN(size - off, EXT_CHUNK);
        uint8_t *d = ext_pkt_alloc(&k, x->kind, x->svpid, x->dvpid, x->gen,
                                   x->prot, x->tag, P_DATA + n,
                                   lazy ? P_DATA : P_DATA + n);

        d[P_CMD] = x->cmd;
        d[P_SPEC] = x->spec;
        d[P_MODE] = x->mode;
        d[P_FLAGS] = x->flags | (off == 0 ? F_FIRST : 0) |
                     (off + n == size ? F_LAST : 0);
        stq_le_p(d + P_ADDR, x->addr + off);
        stl_le_p(d + P_LEN, n);
        stq_le_p(d + P_ECHO, x->echo + off);
        g_queue_push_tail(&q, k);
        if (!n || lazy) {
            /* nothing to read now */
        } else if (src->buf) {
            memcpy(d + P_DATA, src->buf + off, n);
        } else if (!ext_seg_read(s, a, &pos, d + P_DATA, n)) {
            while ((k = g_queue_pop_head(&q))) {
                g_free(k);
            }
            g_array_free(a, true);
            return false;
        }
        off += n;
    } while (off < size);
    if (a) {
        g_array_free(a, true);
    }
    while ((k = g_queue_pop_head(&q))) {
        extoll_pkt_queue(s, p, k);
    }
    return true;
}

static void ext_pkt_done(ExtollState *s, ExtPkt *k)
{
    if (k->wait) {
        k->wait->pkt = NULL;
    }
    if (k->credit_vpid >= 0) {
        ExtVpid *v = &s->vpid[k->credit_vpid];

        if (v->velo_gen == k->credit_gen &&
            v->velo_credits < s->velo_credits_max) {
            v->velo_credits++;
        }
    }
    s->txq_bytes -= k->len;
    g_free(k);
    if (s->cmdq_len && s->txq_bytes < EXT_TXQ_BYTES_MAX) {
        qemu_bh_schedule(s->cmdq_bh);
    }
}

/* ------------------------------------------------------------------ */
/* Failures: a silent stream, an answer that does not come */

/*
 * The RMA command of entry e (no longer queued) failed: the requester gets
 * its notification with EXTOLL_NOTI_ERR_REQ, whatever notifications the
 * command asked for (errors are always reported).  REQ because it is the
 * requester unit that gives up: the target never refused the command (that
 * is RESP or CMPL), it could not be reached or its answer was lost; a
 * destination node that does not exist at all reports REQ too.  The
 * command may nevertheless have been executed when only its acknowledgement
 * or its answer was lost.  A new owner of the VPID, or one with another
 * protection ID, hears nothing, as for answers (ext_command_finished()).
 */
static void ext_wait_fail(ExtollState *s, ExtPeer *p, ExtWait *e,
                          const char *why)
{
    ExtVpid *v = &s->vpid[e->vpid];

    trace_extoll_rma_failed(s->nic.node_id, e->vpid,
                            EXTOLL_NOTI_W1_CMD(e->w1), p->node, why);
    if (e->pkt) {
        e->pkt->wait = NULL;
    }
    if (extoll_rma_on(v) && v->rma_gen == e->gen) {
        if (v->rma_pending) {
            v->rma_pending--;
        }
        if (v->rma_prot == e->prot) {
            extoll_noti_post(s, v, e->w0,
                             e->w1 | EXTOLL_NOTI_W1(0, 0, 0, 0, 0, 0,
                                                    EXTOLL_NOTI_ERR_REQ));
        }
    }
    g_free(e);
}

/*
 * Answers may be silent for as long as the target's response stream keeps
 * trying to send them (its budget) and a little more: after
 * answer_wait_ns without any packet of that stream since the command was
 * acknowledged, the answer is lost.
 */
static void ext_wait_arm(ExtPeer *p, int64_t due)
{
    if (!timer_pending(p->wait_timer) ||
        (int64_t)timer_expire_time_ns(p->wait_timer) > due) {
        timer_mod(p->wait_timer, due);
    }
}

/*
 * Commands whose requests were all acknowledged have their answer queued
 * at the target (it queues the answer before it acknowledges), so the
 * oldest one fails when the target's response stream has been silent for
 * answer_wait_ns since it was acknowledged: that stream failed, or the
 * target is gone.  Commands not acknowledged yet are their own stream's
 * business (ext_tx_fail()); ext_ack_upto() arms the timer for them.
 */
static void ext_wait_timer(void *opaque)
{
    ExtPeer *p = opaque;
    ExtollState *s = p->s;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    ExtWait *e;

    while ((e = g_queue_peek_head(&p->wait)) && !e->pkt) {
        int64_t due = MAX(e->acked_ns, p->answer_ns) + s->answer_wait_ns;

        if (now < due) {
            ext_wait_arm(p, due);
            return;
        }
        g_queue_pop_head(&p->wait);
        s->counters[EXTOLL_CNT_RMA_NO_ANSWER]++;
        ext_wait_fail(s, p, e, "no answer");
    }
}

/*
 * Origin: the answer b to one of our commands to p arrived (all of it, or
 * a fragment of a get response when !last).  The target answers its
 * requests in order on one stream, so commands queued before this one
 * whose answer did not come will never get it (the target's response
 * stream failed, or the target restarted): they fail now.  Returns false
 * for an answer to a command that was already reported failed: dropped.
 */
bool extoll_wait_answered(ExtollState *s, ExtPeer *p, const uint8_t *b,
                          bool last)
{
    uint16_t tag = lduw_le_p(b + D_TAG);
    GList *l = p->wait.head;
    ExtWait *e;

    while (l && ((ExtWait *)l->data)->tag != tag) {
        l = l->next;
    }
    if (!l) {
        if (last) {
            trace_extoll_rma_late_answer(s->nic.node_id, p->node,
                                         b[D_DVPID], tag);
            s->counters[EXTOLL_CNT_RMA_LATE_ANSWERS]++;
        }
        return false;
    }
    while ((e = g_queue_peek_head(&p->wait)) != l->data) {
        g_queue_pop_head(&p->wait);
        s->counters[EXTOLL_CNT_RMA_NO_ANSWER]++;
        ext_wait_fail(s, p, e, "answer lost");
    }
    if (last) {
        g_queue_pop_head(&p->wait);
        if (e->pkt) {
            e->pkt->wait = NULL;   /* answered before the ACK came */
        }
        g_free(e);
    }
    return true;
}

/*
 * Origin: follow the command whose requests were just queued on p's
 * channel 0 (its last request is the tail of the queue) until its answer.
 */
void extoll_wait_add(ExtollState *s, ExtPeer *p, unsigned vi,
                     uint16_t prot, uint16_t tag, uint64_t w0, uint64_t w1)
{
    ExtWait *e = g_new0(ExtWait, 1);
    ExtPkt *k = g_queue_peek_tail(&p->tx[0].txq);

    g_assert(k && lduw_le_p(k->data + D_TAG) == tag);
    e->tag = tag;
    e->vpid = vi;
    e->gen = s->vpid[vi].rma_gen;
    e->prot = prot;
    e->w0 = w0;
    e->w1 = w1;
    e->pkt = k;
    k->wait = e;
    g_queue_push_tail(&p->wait, e);
}

/* A packet of a failed stream: counted, and told to whoever posted it. */
static void ext_pkt_fail(ExtollState *s, ExtPeer *p, ExtPkt *k)
{
    ExtWait *e = k->wait;
    uint16_t tag = lduw_le_p(k->data + D_TAG);

    s->counters[EXTOLL_CNT_TX_FAILED]++;
    switch (k->data[D_KIND]) {
    case K_VELO:
        /*
         * Its credit comes back (ext_pkt_done()).  VELO has no completion:
         * the drop count of the sender's page is all it can learn of it.
         */
        if (k->credit_vpid >= 0 &&
            s->vpid[k->credit_vpid].velo_gen == k->credit_gen) {
            s->vpid[k->credit_vpid].velo_drops++;
        }
        s->counters[EXTOLL_CNT_VELO_TX_DROPPED]++;
        trace_extoll_velo_drop(s->nic.node_id, k->data[D_SVPID],
                               k->data[V_LEN], k->credit_vpid >= 0 ?
                               s->vpid[k->credit_vpid].velo_credits : 0);
        return;
    case K_PUT:
    case K_NOTIPUT:
    case K_GETREQ:
    case K_LOCKREQ:
        /* the command's first packet here reports it, once */
        if (!e) {
            for (GList *l = p->wait.head; l; l = l->next) {
                if (((ExtWait *)l->data)->tag == tag) {
                    e = l->data;
                    break;
                }
            }
        }
        if (e) {
            g_queue_remove(&p->wait, e);
            ext_wait_fail(s, p, e, "not delivered");
        }
        return;
    default:
        /* an answer: its requester is gone or gives up by itself */
        return;
    }
}

/*
 * The stream has had no sign of its receiver for its whole budget: the
 * node is dead or cut off.  Every packet it holds is dropped and reported
 * (ext_pkt_fail()), and it starts afresh with a new epoch from sequence 0,
 * which a receiver that knew the old epoch takes as a new sender session
 * and a fresh one (the node restarted) adopts anyway (ext_rx_data()).
 * Our bulk ring towards the node is renewed: records of the dropped
 * packets still in it must never reach a node that comes back later.
 */
static void ext_tx_fail(ExtTx *t)
{
    ExtPeer *p = t->peer;
    ExtollState *s = p->s;
    ExtPkt *k;
    uint32_t e;

    trace_extoll_tx_failed(s->nic.node_id, p->node, t->chan,
                           g_queue_get_length(&t->txq), t->retries);
    timer_del(t->timer);
    ext_disarm(t);
    timer_del(t->stall_timer);
    t->next_unsent = NULL;
    t->inflight = 0;
    t->retries = 0;
    t->nacks = 0;
    t->paused = false;
    t->stall_armed = false;
    while ((k = g_queue_pop_head(&t->txq))) {
        ext_pkt_fail(s, p, k);
        ext_pkt_done(s, k);
    }
    do {
        qemu_guest_getrandom_nofail(&e, sizeof(e));
    } while (e == 0 || e == t->epoch);
    t->epoch = e;
    t->next_seq = 0;
    if (s->nic.fq && p->node != s->nic.node_id) {
        fabric_bulk_renew(fabric_qemu_fabric(s->nic.fq), p->node);
    }
}

/* Every packet with seq before 'upto' (exclusive) is acknowledged. */
static void ext_ack_upto(ExtTx *t, uint32_t upto)
{
    ExtPkt *k;

    while ((k = g_queue_peek_head(&t->txq)) && (int32_t)(upto - k->seq) > 0) {
        if (t->next_unsent == g_queue_peek_head_link(&t->txq)) {
            t->next_unsent = t->next_unsent->next;
        } else if (t->inflight) {
            t->inflight--;
        }
        g_queue_pop_head(&t->txq);
        if (k->wait) {
            /* the answer is queued at the target now */
            k->wait->acked_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
            ext_wait_arm(t->peer, k->wait->acked_ns +
                         t->peer->s->answer_wait_ns);
        }
        ext_pkt_done(t->peer->s, k);
        t->retries = 0;
    }
}

static void ext_rewind(ExtTx *t)
{
    t->next_unsent = g_queue_peek_head_link(&t->txq);
    t->inflight = 0;
}

void extoll_rx_ack(ExtollState *s, uint32_t src, uint8_t type,
                   const uint8_t *b, size_t len)
{
    ExtPeer *p = extoll_peer(s, src);
    uint32_t seq;
    ExtTx *t;

    if (!p || len < A_END || b[A_CHAN] >= EXT_NCHAN) {
        return;
    }
    t = &p->tx[b[A_CHAN]];
    if (ldl_le_p(b + A_EPOCH) != t->epoch) {
        return;     /* about a stream that failed or was reset */
    }
    seq = ldl_le_p(b + A_SEQ);
    trace_extoll_ack_rx(s->nic.node_id, src, type == EXT_T_ACK ? "ACK" :
                        type == EXT_T_NACK ? "NACK" : "RESUME", b[A_CHAN], seq);
    if ((int32_t)(seq - t->next_seq) >= 0) {
        return;     /* acknowledges something never sent */
    }
    if (type != EXT_T_ACK) {
        /* the receiver is there, short of room: not silence (budget) */
        t->retries = 0;
    }
    if (type == EXT_T_RESUME) {
        /* the receiver has room again: resend now, not after the back-off */
        if (t->paused) {
            t->paused = false;
            t->nacks = 0;
            ext_disarm(t);
            ext_push(t);
            if (t->inflight && !t->due) {
                ext_arm(t, ext_rto(t));
            }
        }
        return;
    }
    if (type == EXT_T_ACK) {
        ext_ack_upto(t, seq + 1);
        t->nacks = 0;
        if (!t->paused) {
            ext_disarm(t);
            if (t->inflight) {
                ext_arm(t, ext_rto(t));
            }
            ext_push(t);
        }
        return;
    }
    /* NACK: seq could not be taken; everything before it was */
    ext_ack_upto(t, seq);
    ext_rewind(t);
    if (t->paused) {
        return;
    }
    t->paused = true;
    ext_arm(t, fabric_nic_backoff(EXT_NACK_MIN_NS, t->nacks++,
                                  EXT_NACK_MAX_NS));
}

static void ext_timer_cb(void *opaque)
{
    ExtTx *t = opaque;

    if (!fabric_nic_timer_due(t->timer, &t->due)) {
        return;
    }
    if (g_queue_is_empty(&t->txq)) {
        t->paused = false;
        return;
    }
    if (t->paused) {
        t->paused = false;
    } else if (t->retries >= t->peer->s->retx_max) {
        ext_tx_fail(t);
        return;
    } else {
        t->retries++;
        t->peer->s->counters[EXTOLL_CNT_RETRANSMITS] += t->inflight;
        trace_extoll_retransmit(t->peer->s->nic.node_id, t->peer->node,
                                t - t->peer->tx, t->inflight, t->retries);
    }
    ext_rewind(t);
    ext_push(t);
    if (!t->due) {
        ext_arm(t, ext_rto(t));
    }
}

void extoll_send_ack(ExtollState *s, uint32_t dst, uint8_t type,
                     unsigned chan, uint32_t epoch, uint32_t seq)
{
    uint8_t b[A_END];

    trace_extoll_ack_tx(s->nic.node_id, dst, type == EXT_T_ACK ? "ACK" :
                        type == EXT_T_NACK ? "NACK" : "RESUME", chan, seq);
    stl_le_p(b + A_EPOCH, epoch);
    stl_le_p(b + A_SEQ, seq);
    b[A_CHAN] = chan;
    ext_xmit(s, dst, type, b, sizeof(b));
}

void extoll_peer_free(ExtPeer *p)
{
    ExtPkt *k;
    ExtWait *e;

    if (p->ack_listed) {
        g_queue_remove(&p->s->ack_peers, p);
    }
    if (p->nacked) {
        g_queue_remove(&p->s->nack_peers, p);
    }

    for (unsigned c = 0; c < EXT_NCHAN; c++) {
        timer_free(p->tx[c].timer);
        timer_free(p->tx[c].stall_timer);
        while ((k = g_queue_pop_head(&p->tx[c].txq))) {
            ext_pkt_done(p->s, k);
        }
    }
    timer_free(p->wait_timer);
    extoll_velo_held_free_all(p);
    while ((e = g_queue_pop_head(&p->wait))) {
        g_free(e);
    }
    g_free(p);
}
