/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU main-loop glue for the fabric transport (fabric.h): the receive
 * socket gets a read handler, per-peer sockets with queued packets get a
 * write handler that flushes them.  Everything runs under the BQL.
 */
#ifndef EXANET_FABRIC_QEMU_H
#define EXANET_FABRIC_QEMU_H

#include "fabric.h"

typedef struct FabricQemu FabricQemu;

/* Returns NULL and sets errp on failure. */
FabricQemu *fabric_qemu_open(const struct fabric_config *cfg,
                             fabric_rx_fn rx, void *opaque, Error **errp);
void fabric_qemu_close(FabricQemu *fq);
int fabric_qemu_send(FabricQemu *fq, uint32_t dst, uint8_t type,
                     const void *payload, size_t len);
struct fabric *fabric_qemu_fabric(FabricQemu *fq);

#endif
