/*
 * EXTOLL NIC: the notification queues of the VPIDs and the backlog of
 * locally caused notifications that wait for room in them.  See
 * extoll-nic.c for the overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qemu/atomic.h"

#include "extoll-int.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Notification queue */

bool extoll_rma_on(ExtVpid *v)
{
    return v->ctrl & EXTOLL_VPID_RMA;
}

/* RMA on, for NLAs (te) or, if the VPID may use them, bus addresses. */
bool extoll_rma_addr_ok(ExtVpid *v, bool te)
{
    return extoll_rma_on(v) && (te || (v->ctrl & EXTOLL_VPID_RMA_PHYS));
}

/* ------------------------------------------------------------------ */
/* Direct delivery (Documentation/fabric.md section 9) */

/*
 * RMA on: publish the queue's translation, so that peers doing a put or a
 * get directly write its completer / responder notification themselves.
 * The record carries the VPID's RMA_PROT, so that it also tells peers
 * whether RMA of the VPID takes their protection ID at all.
 */
void extoll_noti_export(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    int r;

    extoll_noti_unexport(s, vi);
    if (!fabric_nic_direct_on(&s->nic) || !extoll_rma_on(v)) {
        return;
    }
    /* 16-byte entries, the valid word at 8 */
    r = extoll_dq_export(s, EXT_NOTI_Q(vi), v->notiq, sizeof(ExtNoti),
                         v->notiq_entries, offsetof(ExtNoti, w1), v->rma_prot,
                         &v->noti_direct_seen);
    v->noti_direct = r == 0;
    v->noti_hold = false;
    trace_extoll_noti_export(s->nic.node_id, vi, v->notiq, v->notiq_entries,
                             r);
}

/* Fold what was written into the queue through the shared record. */
void extoll_noti_sync(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    uint64_t n;

    if (!v->noti_direct) {
        return;
    }
    n = extoll_dq_sync(s, EXT_NOTI_Q(vi), v->notiq_entries,
                       &v->noti_direct_seen, &v->notiq_wp);
    v->noti_count += n;
    s->counters[EXTOLL_CNT_NOTI_WRITTEN] += n;
}

/* RMA off, reset: no peer writes into the queue once this returns. */
void extoll_noti_unexport(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];

    if (!v->noti_direct) {
        return;
    }
    fabric_direct_invalidate(s->nic.dd, EXT_NOTI_Q(vi));
    extoll_noti_sync(s, vi);
    v->noti_direct = false;
    trace_extoll_noti_unexport(s->nic.node_id, vi);
}

/*
 * While notifications wait in the backlog, peers take the rings: theirs
 * queue up behind ours (NACK) instead of taking the room ours wait for.
 */
static void ext_noti_hold(ExtollState *s, ExtVpid *v, bool hold)
{
    if (v->noti_direct && v->noti_hold != hold) {
        fabric_direct_set_hold(s->nic.dd, EXT_NOTI_Q(v - s->vpid), hold);
        v->noti_hold = hold;
    }
}

/* ------------------------------------------------------------------ */
/* Notification queue */

/* Room for one entry at the write index (and nothing waiting before it). */
bool extoll_noti_room(ExtollState *s, ExtVpid *v)
{
    uint64_t w1;

    if (!extoll_rma_on(v) || !v->notiq_entries) {
        return false;
    }
    extoll_noti_sync(s, v - s->vpid);
    if (!extoll_read_u64(s, v->notiq + 16ull * v->notiq_wp + 8, &w1)) {
        return false;
    }
    return w1 == 0;
}

static void ext_noti_backlog(ExtollState *s, ExtVpid *v, uint64_t w0,
                             uint64_t w1);

/*
 * Into a queue peers write into too: through the record (its lock and
 * write index).  false: a peer took the slot since the caller's room check.
 */
static bool ext_noti_write_shared(ExtollState *s, ExtVpid *v, uint64_t w0,
                                  uint64_t w1)
{
    uint8_t b[8];
    struct fabric_direct_msg m = {
        .payload = b, .len = 8, .status = w1, .prot = v->rma_prot,
    };
    unsigned vi = v - s->vpid;
    bool wake;
    enum fabric_direct_result r;

    stq_le_p(b, w0);
    trace_extoll_noti_write(s->nic.node_id, vi, v->notiq_wp, w0, w1);
    r = fabric_direct_write(s->nic.dd, s->nic.node_id, EXT_NOTI_Q(vi), &m,
                            &wake);
    extoll_noti_sync(s, vi);
    if (r != FABRIC_DIRECT_DONE) {
        return false;
    }
    if (EXTOLL_NOTI_W1_ERR(w1)) {
        s->counters[EXTOLL_CNT_RMA_ERRORS]++;
    }
    return true;
}

/* Write one entry; caller checked extoll_noti_room(). */
void extoll_noti_write(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1)
{
    uint64_t a = v->notiq + 16ull * v->notiq_wp;

    if (v->noti_direct) {
        if (!ext_noti_write_shared(s, v, w0, w1)) {
            ext_noti_backlog(s, v, w0, w1);
        }
        return;
    }
    trace_extoll_noti_write(s->nic.node_id, v - s->vpid, v->notiq_wp, w0, w1);
    extoll_write_u64(s, a, w0);
    extoll_write_u64(s, a + 8, w1);
    v->notiq_wp = (v->notiq_wp + 1) & (v->notiq_entries - 1);
    v->noti_count++;
    s->counters[EXTOLL_CNT_NOTI_WRITTEN]++;
    if (EXTOLL_NOTI_W1_ERR(w1)) {
        s->counters[EXTOLL_CNT_RMA_ERRORS]++;
    }
}

/* Remote-caused notification: false = no room now (caller NACKs). */
bool extoll_noti_try(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1)
{
    if (!g_queue_is_empty(&v->backlog) || !extoll_noti_room(s, v)) {
        trace_extoll_noti_full(s->nic.node_id, v - s->vpid);
        s->counters[EXTOLL_CNT_NOTI_FULL]++;
        return false;
    }
    extoll_noti_write(s, v, w0, w1);
    return true;
}

static void ext_backlog_flush(ExtollState *s, ExtVpid *v)
{
    while (!g_queue_is_empty(&v->backlog) && extoll_noti_room(s, v)) {
        ExtNoti *n = g_queue_peek_head(&v->backlog);

        if (v->noti_direct) {
            if (!ext_noti_write_shared(s, v, n->w0, n->w1)) {
                break;
            }
        } else {
            extoll_noti_write(s, v, n->w0, n->w1);
        }
        g_free(g_queue_pop_head(&v->backlog));
    }
    if (g_queue_is_empty(&v->backlog)) {
        ext_noti_hold(s, v, false);
    }
}

static void ext_arm_poll(ExtollState *s)
{
    if (!timer_pending(s->poll_timer)) {
        timer_mod(s->poll_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + EXT_POLL_NS);
    }
}

/*
 * Locally caused notification (bounded by our own commands): never lost
 * unless the backlog overflows (counted).
 */
void extoll_noti_post(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1)
{
    if (!extoll_rma_on(v) || !v->notiq_entries) {
        return;
    }
    ext_backlog_flush(s, v);
    /* an exported queue's shared write looks for room itself (no DMA read) */
    if (g_queue_is_empty(&v->backlog) &&
        (v->noti_direct || extoll_noti_room(s, v))) {
        extoll_noti_write(s, v, w0, w1);
        return;
    }
    ext_noti_backlog(s, v, w0, w1);
}

static void ext_noti_backlog(ExtollState *s, ExtVpid *v, uint64_t w0,
                             uint64_t w1)
{
    ExtNoti *n;

    s->counters[EXTOLL_CNT_NOTI_FULL]++;
    if (g_queue_get_length(&v->backlog) >= EXT_BACKLOG_MAX) {
        return;     /* lost; counted as NOTI_FULL */
    }
    n = g_new(ExtNoti, 1);
    n->w0 = w0;
    n->w1 = w1;
    g_queue_push_tail(&v->backlog, n);
    ext_noti_hold(s, v, true);
    ext_arm_poll(s);
}

void extoll_poll_timer(void *opaque)
{
    ExtollState *s = opaque;
    bool more = false;

    for (unsigned i = 0; i < EXTOLL_NUM_VPIDS; i++) {
        ext_backlog_flush(s, &s->vpid[i]);
        more |= !g_queue_is_empty(&s->vpid[i].backlog);
    }
    if (more) {
        ext_arm_poll(s);
    }
}

void extoll_backlog_clear(ExtVpid *v)
{
    ExtNoti *n;

    while ((n = g_queue_pop_head(&v->backlog))) {
        g_free(n);
    }
}
