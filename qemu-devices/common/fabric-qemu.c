/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU main-loop glue for the fabric transport, see fabric-qemu.h.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "fabric-qemu.h"

/* Packets handled per read-handler call; the handler is level triggered. */
#define FABRIC_QEMU_RX_BUDGET 64

struct FabricQemu {
    struct fabric *f;
    fabric_rx_fn rx;
    void *opaque;
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

FabricQemu *fabric_qemu_open(const struct fabric_config *cfg,
                             fabric_rx_fn rx, void *opaque, Error **errp)
{
    FabricQemu *fq = g_new0(FabricQemu, 1);
    struct fabric_config c = *cfg;
    char err[256] = "";
    int r;

    fq->rx = rx;
    fq->opaque = opaque;
    c.watch = fabric_qemu_watch;
    c.watch_opaque = fq;
    r = fabric_open(&fq->f, &c, err, sizeof(err));
    if (r < 0) {
        error_setg(errp, "fabric: %s", err[0] ? err : strerror(-r));
        g_free(fq);
        return NULL;
    }
    qemu_set_fd_handler(fabric_rx_fd(fq->f), fabric_qemu_read, NULL, fq);
    return fq;
}

void fabric_qemu_close(FabricQemu *fq)
{
    if (!fq) {
        return;
    }
    qemu_set_fd_handler(fabric_rx_fd(fq->f), NULL, NULL, NULL);
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
