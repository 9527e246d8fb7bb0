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
#include <poll.h>
#include <sched.h>
#include "fabric-qemu.h"

/* Packets handled per BQL acquisition / read-handler call. */
#define FABRIC_QEMU_RX_BUDGET 64

struct FabricQemu {
    struct fabric *f;
    fabric_rx_fn rx;
    void *opaque;
    bool thread_running;
    bool stopping;          /* atomic */
    int stop_pipe[2];
    QemuThread thread;
    unsigned rt_prio;
};

static void fabric_qemu_read(void *opaque)
{
    FabricQemu *fq = opaque;

    fabric_poll_rx(fq->f, FABRIC_QEMU_RX_BUDGET, fq->rx, fq->opaque);
}

static void fabric_qemu_write(void *opaque)
{
    FabricQemu *fq = opaque;

    fabric_flush(fq->f);
}

static void fabric_qemu_watch(void *opaque, int fd, bool want_write)
{
    qemu_set_fd_handler(fd, NULL, want_write ? fabric_qemu_write : NULL,
                        opaque);
}

static void *fabric_qemu_rx_thread(void *opaque)
{
    FabricQemu *fq = opaque;
    struct pollfd p[2] = {
        { .fd = fabric_rx_fd(fq->f), .events = POLLIN },
        { .fd = fq->stop_pipe[0], .events = POLLIN },
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
    while (!qatomic_read(&fq->stopping)) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            error_report("fabric: poll: %s", strerror(errno));
            break;
        }
        if (p[1].revents) {
            break;
        }
        if (p[0].revents) {
            qemu_mutex_lock_iothread();
            if (!qatomic_read(&fq->stopping)) {
                fabric_poll_rx(fq->f, FABRIC_QEMU_RX_BUDGET, fq->rx,
                               fq->opaque);
            }
            qemu_mutex_unlock_iothread();
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
    fq->stop_pipe[0] = fq->stop_pipe[1] = -1;
    c.watch = fabric_qemu_watch;
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
        fq->rt_prio = opts->rt_prio;
        fq->thread_running = true;
        qemu_thread_create(&fq->thread, opts->name ? opts->name : "fabric-rx",
                           fabric_qemu_rx_thread, fq, QEMU_THREAD_JOINABLE);
    } else {
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
    } else {
        qemu_set_fd_handler(fabric_rx_fd(fq->f), NULL, NULL, NULL);
    }
    fabric_close(fq->f);    /* removes the write handlers via watch() */
    g_free(fq);
}

int fabric_qemu_send(FabricQemu *fq, uint32_t dst, uint8_t type,
                     const void *payload, size_t len)
{
    return fabric_send(fq->f, dst, type, payload, len);
}

struct fabric *fabric_qemu_fabric(FabricQemu *fq)
{
    return fq->f;
}
