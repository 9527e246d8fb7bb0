/*
 * EXTOLL NIC: the notification queues of the VPIDs and the backlog of
 * locally caused notifications that wait for room in them.  See
 * extoll-nic.c for the overview.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"

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

/* Room for one entry at the write index (and nothing waiting before it). */
bool extoll_noti_room(ExtollState *s, ExtVpid *v)
{
    uint64_t w1;

    if (!extoll_rma_on(v) || !v->notiq_entries) {
        return false;
    }
    if (!extoll_read_u64(s, v->notiq + 16ull * v->notiq_wp + 8, &w1)) {
        return false;
    }
    return w1 == 0;
}

/* Write one entry; caller checked extoll_noti_room(). */
void extoll_noti_write(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1)
{
    uint64_t a = v->notiq + 16ull * v->notiq_wp;

    trace_extoll_noti_write(s->nic.node_id, v - s->vpid, v->notiq_wp, w0, w1);
    extoll_write_u64(s, a, w0);
    extoll_write_u64(s, a + 8, w1);
    v->notiq_wp = (v->notiq_wp + 1) & (v->notiq_entries - 1);
    v->noti_count++;
    s->counters[EXTOLL_CNT_NOTI_WRITTEN]++;
    if ((w1 >> 61) & 7) {
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
        ExtNoti *n = g_queue_pop_head(&v->backlog);

        extoll_noti_write(s, v, n->w0, n->w1);
        g_free(n);
    }
}

static void ext_arm_poll(ExtollState *s)
{
    if (!timer_pending(s->poll_timer)) {
        timer_mod(s->poll_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + EXT_POLL_NS);
    }
}

/* Locally caused notification (bounded by our own commands): never lost
 * unless the backlog overflows (counted). */
void extoll_noti_post(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1)
{
    if (!extoll_rma_on(v) || !v->notiq_entries) {
        return;
    }
    ext_backlog_flush(s, v);
    if (g_queue_is_empty(&v->backlog) && extoll_noti_room(s, v)) {
        extoll_noti_write(s, v, w0, w1);
        return;
    }
    s->counters[EXTOLL_CNT_NOTI_FULL]++;
    if (g_queue_get_length(&v->backlog) >= EXT_BACKLOG_MAX) {
        return;     /* lost; counted as NOTI_FULL */
    }
    ExtNoti *n = g_new(ExtNoti, 1);
    n->w0 = w0;
    n->w1 = w1;
    g_queue_push_tail(&v->backlog, n);
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
