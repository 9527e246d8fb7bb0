/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU glue for the fabric transport, see fabric-qemu.h.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include <poll.h>
#include <sched.h>
#include "fabric-qemu.h"
#include "fabric-park.h"
#include "trace.h"

/* Packets handled per BQL acquisition / read-handler call. */
#define FABRIC_QEMU_RX_BUDGET 64
/* Bulk records (up to 16 KiB each) per BQL acquisition. */
#define FABRIC_QEMU_BULK_BUDGET 32
/* Poll period while inbound rings exist (a doorbell may have been consumed
 * by another caller of fabric_poll_rx). */
#define FABRIC_QEMU_BULK_POLL_NS (5 * SCALE_MS)

struct FabricQemu {
    struct fabric *f;
    uint32_t node;          /* for the trace events */
    const char *rx_ctx;     /* who is receiving: "thread", "loop" or "poll" */
    fabric_rx_fn rx;
    void *opaque;
    bool thread_running;
    bool stopping;          /* atomic */
    int stop_pipe[2];
    QemuThread thread;
    unsigned rt_prio;
    int64_t rx_spin_ns;
    fabric_bulk_fn bulk_rx;
    void *bulk_opaque;
    bool pkt_ring;
    int64_t poll_lease;     /* atomic: get_clock() until which a vCPU polls */
    bool lease_wait;        /* the receive side sleeps until the lease ends */
    QEMUTimer *rx_timer;    /* main-loop mode only: look again */
    void (*kick)(void *opaque);
    int kick_pipe[2];       /* thread mode */
    QEMUBH *kick_bh;        /* main-loop mode */
};

/* Every packet goes through here on its way to the model (under the BQL). */
static void fabric_qemu_rx_packet(void *opaque, uint32_t src, uint8_t type,
                                  const void *payload, size_t len)
{
    FabricQemu *fq = opaque;

    trace_fabric_qemu_rx(fq->node, fq->rx_ctx, src, type, len);
    trace_fabric_qemu_rx_hops(fq->node, src, fabric_rx_hops(fq->f));
    fabric_park_wake(FABRIC_WAKE_PACKET);
    fq->rx(fq->opaque, src, type, payload, len);
}

static void fabric_qemu_bulk_record(void *opaque, uint32_t src, uint8_t type,
                                    const void *hdr, size_t hlen,
                                    const void *data, size_t dlen,
                                    bool data_ok)
{
    FabricQemu *fq = opaque;

    trace_fabric_qemu_bulk_rx(fq->node, src, type, hlen, dlen, data_ok);
    trace_fabric_qemu_rx_hops(fq->node, src, fabric_rx_hops(fq->f));
    fabric_park_wake(FABRIC_WAKE_PACKET);
    fq->bulk_rx(fq->bulk_opaque, src, type, hdr, hlen, data, dlen, data_ok);
}

static int fabric_qemu_poll_ctx(FabricQemu *fq, int budget, const char *ctx)
{
    const char *outer = fq->rx_ctx;
    int n;

    fq->rx_ctx = ctx;
    n = fabric_poll_rx(fq->f, budget, fabric_qemu_rx_packet, fq);
    fq->rx_ctx = outer;
    return n;
}

/*
 * Under the BQL: datagrams and packet records, then bulk records.  Returns
 * when to look again without a wake-up: 0 now (more wait), a time limit
 * in ns, or -1 (after the next wake-up; the rings are armed).
 */
static int64_t fabric_qemu_rx_once(FabricQemu *fq, const char *ctx)
{
    int64_t lease = -1, due;
    bool arm, pending;

    fabric_qemu_poll_ctx(fq, FABRIC_QEMU_RX_BUDGET, ctx);
    if (fq->bulk_rx) {
        fabric_poll_bulk(fq->f, FABRIC_QEMU_BULK_BUDGET,
                         fabric_qemu_bulk_record, fq);
    }
    if (fq->pkt_ring) {
        lease = qatomic_read(&fq->poll_lease) - get_clock();
    }
    /* While a vCPU polls: no doorbells; look again when its lease ends. */
    arm = lease <= 0;
    pending = fabric_pkt_pending(fq->f, arm);
    if (fq->bulk_rx) {
        pending |= fabric_bulk_pending(fq->f, arm);
    }
    fq->lease_wait = false;
    if (pending) {
        return 0;
    }
    due = fabric_next_due(fq->f);
    if (due) {
        /* Records on their way over the links: look again when they land. */
        due = MAX((int64_t)(due - get_clock()), 1);
    }
    if (!arm) {
        trace_fabric_qemu_rx_lease(fq->node, lease);
    }
    if (fq->bulk_rx && fabric_bulk_active(fq->f) &&
        (arm || lease > FABRIC_QEMU_BULK_POLL_NS)) {
        return due ? MIN(due, FABRIC_QEMU_BULK_POLL_NS) :
                     FABRIC_QEMU_BULK_POLL_NS;
    }
    if (due && (arm || due < lease)) {
        return due;
    }
    fq->lease_wait = !arm;
    return arm ? -1 : lease;
}

/* End the poll lease (if any) and arm the rings; true if records wait. */
static bool fabric_qemu_lease_end(FabricQemu *fq, bool always)
{
    bool pending;

    if (!fq->pkt_ring) {
        return false;
    }
    if (qatomic_read(&fq->poll_lease) > get_clock()) {
        qatomic_set(&fq->poll_lease, 0);
        trace_fabric_qemu_poll_end(fq->node);
    } else if (!always) {
        return false;   /* the receive side armed the rings itself */
    }
    pending = fabric_pkt_pending(fq->f, true);
    if (fq->bulk_rx) {
        pending |= fabric_bulk_pending(fq->f, true);
    }
    if (pending || fabric_next_due(fq->f)) {
        fabric_qemu_kick(fq);
    }
    return pending;
}

void fabric_qemu_poll_end(FabricQemu *fq)
{
    fabric_qemu_lease_end(fq, false);
}

bool fabric_qemu_park_prepare(FabricQemu *fq)
{
    return fabric_qemu_lease_end(fq, true);
}

int fabric_qemu_poll(FabricQemu *fq, int budget)
{
    const char *outer = fq->rx_ctx;
    int n;

    if (!fq->pkt_ring) {
        return fabric_qemu_poll_ctx(fq, budget, "poll");
    }
    qatomic_set(&fq->poll_lease, get_clock() + FABRIC_QEMU_POLL_LEASE_NS);
    fq->rx_ctx = "poll";
    n = fabric_poll_pkts(fq->f, budget, fabric_qemu_rx_packet, fq);
    fq->rx_ctx = outer;
    if (fq->bulk_rx) {
        n += fabric_poll_bulk(fq->f, budget, fabric_qemu_bulk_record, fq);
    }
    return n;
}

static void fabric_qemu_read(void *opaque)
{
    FabricQemu *fq = opaque;
    int64_t next = fabric_qemu_rx_once(fq, "loop");

    if (next >= 0) {
        timer_mod(fq->rx_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + next);
    } else {
        timer_del(fq->rx_timer);
    }
}

static void fabric_qemu_write(void *opaque)
{
    FabricQemu *fq = opaque;
    size_t left = fabric_flush(fq->f);

    trace_fabric_qemu_flush(fq->node, left);
}

static void fabric_qemu_watch(void *opaque, int fd, bool want_write)
{
    qemu_set_fd_handler(fd, NULL, want_write ? fabric_qemu_write : NULL,
                        opaque);
}

/*
 * After a wake-up that handled records, with the rings armed: look for the
 * next doorbell for up to rx_spin_ns (fabric-qemu.h), yielding between
 * looks.  At the thread's own priority: at normal priority a spinning vCPU
 * could keep it off the CPU for a scheduler slice (milliseconds) just when
 * the doorbell comes.  True if one came.
 */
static bool fabric_qemu_rx_spin(FabricQemu *fq, struct pollfd *p, int np)
{
    struct timespec zero = { 0, 0 };
    int64_t start = get_clock(), now = start;
    bool got = false;

    while (!qatomic_read(&fq->stopping) && now - start < fq->rx_spin_ns) {
        if (ppoll(p, np, &zero, NULL) > 0) {
            got = true;
            break;
        }
        sched_yield();
        now = get_clock();
    }
    trace_fabric_qemu_rx_spin(fq->node, (now - start) / 1000, got);
    return got;
}

static void *fabric_qemu_rx_thread(void *opaque)
{
    FabricQemu *fq = opaque;
    struct pollfd p[3] = {
        { .fd = fabric_rx_fd(fq->f), .events = POLLIN },
        { .fd = fq->stop_pipe[0], .events = POLLIN },
        { .fd = fq->kick_pipe[0], .events = POLLIN },
    };

    rcu_register_thread();      /* DMA walks RCU protected memory maps */
    if (fq->rt_prio) {
        struct sched_param sp = { .sched_priority = fq->rt_prio };
        int r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);

        if (r) {
            warn_report("fabric: no SCHED_FIFO for the receive thread (%s), "
                        "running at normal priority", strerror(r));
        }
    }
    int64_t next = -1;
    int64_t lease_sleep = FABRIC_QEMU_POLL_LEASE_NS;

    while (!qatomic_read(&fq->stopping)) {
        struct timespec ts = {
            .tv_sec = next / NANOSECONDS_PER_SECOND,
            .tv_nsec = next % NANOSECONDS_PER_SECOND,
        };
        int n = ppoll(p, 3, next < 0 ? NULL : &ts, NULL);
        bool kicked = false;

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            error_report("fabric: poll: %s", strerror(errno));
            break;
        }
        if (p[1].revents) {
            break;
        }
        if (n > 0 && p[2].revents) {
            char buf[64];

            while (read(fq->kick_pipe[0], buf, sizeof(buf)) > 0) {
                /* drain */
            }
            kicked = true;
        }
        if (n == 0 && fq->lease_wait) {
            /* A vCPU still polls (the lease was renewed): sleep on. */
            next = qatomic_read(&fq->poll_lease) - get_clock();
            if (next > 0) {
                lease_sleep = MIN(lease_sleep * 2,
                                  FABRIC_QEMU_LEASE_SLEEP_MAX_NS);
                next = MAX(next, lease_sleep);
                trace_fabric_qemu_rx_lease(fq->node, next);
                continue;
            }
        }
        lease_sleep = FABRIC_QEMU_POLL_LEASE_NS;
        if (p[0].revents || kicked || n == 0) {
            trace_fabric_qemu_rx_wake(fq->node, !!p[0].revents, kicked);
            qemu_mutex_lock_iothread();
            if (!qatomic_read(&fq->stopping) && kicked && fq->kick) {
                fq->kick(fq->bulk_opaque);
            }
            if (!qatomic_read(&fq->stopping)) {
                next = fabric_qemu_rx_once(fq, "thread");
            }
            qemu_mutex_unlock_iothread();
            /* woken by a doorbell, nothing left, no vCPU polling */
            if (next != 0 && !fq->lease_wait && p[0].revents &&
                fq->rx_spin_ns && fabric_qemu_rx_spin(fq, p, 3)) {
                next = 0;
            }
        }
    }
    rcu_unregister_thread();
    return NULL;
}

FabricQemu *fabric_qemu_open(const struct fabric_config *cfg,
                             const FabricQemuOptions *opts,
                             fabric_rx_fn rx, void *opaque, Error **errp)
{
    FabricQemu *fq = g_new0(FabricQemu, 1);
    struct fabric_config c = *cfg;
    char err[256] = "";
    int r;

    fq->rx = rx;
    fq->opaque = opaque;
    fq->node = cfg->node_id;
    fq->rx_ctx = "loop";
    if (opts) {
        fq->bulk_rx = opts->bulk_rx;
        fq->bulk_opaque = opts->bulk_opaque;
        fq->kick = opts->kick;
        fq->pkt_ring = opts->pkt_ring;
        fq->rx_spin_ns = (int64_t)opts->rx_spin_us * 1000;
    }
    fq->stop_pipe[0] = fq->stop_pipe[1] = -1;
    fq->kick_pipe[0] = fq->kick_pipe[1] = -1;
    c.watch = fabric_qemu_watch;
    c.pkt_ring = fq->pkt_ring;
    c.watch_opaque = fq;
    r = fabric_open(&fq->f, &c, err, sizeof(err));
    if (r < 0) {
        error_setg(errp, "fabric: %s", err[0] ? err : strerror(-r));
        g_free(fq);
        return NULL;
    }
    if (opts && opts->rx_thread) {
        if (!g_unix_open_pipe(fq->stop_pipe, FD_CLOEXEC, NULL)) {
            error_setg_errno(errp, errno, "fabric: pipe");
            fabric_close(fq->f);
            g_free(fq);
            return NULL;
        }
        if (!g_unix_open_pipe(fq->kick_pipe, FD_CLOEXEC, NULL) ||
            !g_unix_set_fd_nonblocking(fq->kick_pipe[0], true, NULL) ||
            !g_unix_set_fd_nonblocking(fq->kick_pipe[1], true, NULL)) {
            error_setg_errno(errp, errno, "fabric: pipe");
            close(fq->stop_pipe[0]);
            close(fq->stop_pipe[1]);
            fabric_close(fq->f);
            g_free(fq);
            return NULL;
        }
        fq->rt_prio = opts->rt_prio;
        fq->thread_running = true;
        qemu_thread_create(&fq->thread, opts->name ? opts->name : "fabric-rx",
                           fabric_qemu_rx_thread, fq, QEMU_THREAD_JOINABLE);
    } else {
        fq->rx_timer = timer_new_ns(QEMU_CLOCK_REALTIME, fabric_qemu_read, fq);
        if (fq->kick) {
            fq->kick_bh = qemu_bh_new(fq->kick, fq->bulk_opaque);
        }
        qemu_set_fd_handler(fabric_rx_fd(fq->f), fabric_qemu_read, NULL, fq);
    }
    return fq;
}

void fabric_qemu_close(FabricQemu *fq)
{
    if (!fq) {
        return;
    }
    if (fq->thread_running) {
        char c = 0;

        qatomic_set(&fq->stopping, true);
        if (write(fq->stop_pipe[1], &c, 1) < 0) {
            /* cannot happen with an empty pipe; the flag is set anyway */
        }
        /* The thread may be waiting for the BQL we hold. */
        qemu_mutex_unlock_iothread();
        qemu_thread_join(&fq->thread);
        qemu_mutex_lock_iothread();
        close(fq->stop_pipe[0]);
        close(fq->stop_pipe[1]);
        close(fq->kick_pipe[0]);
        close(fq->kick_pipe[1]);
    } else {
        qemu_set_fd_handler(fabric_rx_fd(fq->f), NULL, NULL, NULL);
        timer_free(fq->rx_timer);
        if (fq->kick_bh) {
            qemu_bh_delete(fq->kick_bh);
        }
    }
    fabric_close(fq->f);    /* removes the write handlers via watch() */
    g_free(fq);
}

int fabric_qemu_send(FabricQemu *fq, uint32_t dst, uint8_t type,
                     const void *payload, size_t len)
{
    uint64_t db = fabric_ring_doorbells(fq->f);
    int r = fabric_send(fq->f, dst, type, payload, len);

    if (fabric_ring_doorbells(fq->f) != db) {
        trace_fabric_qemu_doorbell(fq->node, dst);
    }
    return r;
}

void fabric_qemu_kick(FabricQemu *fq)
{
    trace_fabric_qemu_kick(fq->node);
    if (fq->thread_running) {
        char c = 0;

        if (write(fq->kick_pipe[1], &c, 1) < 0) {
            /* pipe full: a wake-up is pending anyway */
        }
    } else if (fq->kick_bh) {
        qemu_bh_schedule(fq->kick_bh);
    }
}

struct fabric *fabric_qemu_fabric(FabricQemu *fq)
{
    return fq->f;
}
