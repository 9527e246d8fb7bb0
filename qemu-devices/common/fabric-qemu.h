/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU glue for the fabric transport (fabric.h).
 *
 * Receive: either a read handler on the main loop, or (rx_thread) a
 * dedicated thread that sleeps in poll() on the node socket and handles
 * packets under the BQL.  The thread can run SCHED_FIFO (rt_prio > 0) so a
 * packet is handled within microseconds even when busy-polling vCPUs keep
 * every host core busy; without the privilege it stays a normal thread.
 * Send: per-peer sockets with queued packets get a main-loop write handler
 * that flushes them.  All fabric state is only touched under the BQL.
 */
#ifndef EXANET_FABRIC_QEMU_H
#define EXANET_FABRIC_QEMU_H

#include "fabric.h"

typedef struct FabricQemu FabricQemu;

typedef struct FabricQemuOptions {
    bool rx_thread;         /* dedicated receive thread */
    unsigned rt_prio;       /* SCHED_FIFO priority of that thread, 0 = none */
    const char *name;       /* thread name */
    fabric_bulk_fn bulk_rx; /* bulk records (NULL: rings are not drained) */
    void *bulk_opaque;
    /* Work to run in the receive context (under the BQL) on fabric_qemu_kick() */
    void (*kick)(void *opaque);
    bool pkt_ring;          /* packets over shared-memory rings (fabric.h) */
    uint32_t rx_spin_us;    /* receive thread: busy look after a wake-up */
} FabricQemuOptions;

/*
 * rx_spin_us: after a doorbell woke the receive thread, it keeps looking
 * for the next one for this long before it sleeps again (yielding), as
 * NAPI busy polling does: a thread woken from sleep runs tens of
 * microseconds later on a host that is itself a virtual machine, and a
 * request-answer exchange with a node whose vCPU does not poll (an RDMA
 * read or RMA get served by an idle node) pays that wake-up every time.
 * 0 = off (the default; the launcher's --rx-spin-us turns it on,
 * Documentation/cluster.md).  At most FABRIC_QEMU_RX_SPIN_MAX_US, which
 * fabric_nic_check() enforces for the device property.
 */
#define FABRIC_QEMU_RX_SPIN_MAX_US 1000

/*
 * With packet rings, a vCPU whose guest polls the NI (fabric_qemu_poll())
 * drains them itself and holds a lease of this length: while it runs, the
 * receive thread (or main loop) does not ask the senders for doorbells but
 * looks at the rings when the lease ends, so senders make no system call
 * and a guest that stops polling still gets its packets within the lease.
 */
#define FABRIC_QEMU_POLL_LEASE_NS 1000000   /* 1 ms */
/*
 * While the lease keeps being renewed the receive thread looks again after
 * twice as long each time, up to this (below the 5 ms retransmission
 * timeout of the NICs, so a guest that stops polling without saying so
 * still answers before its senders retransmit).  Each look preempts a
 * vCPU (the thread may run SCHED_FIFO): at 1 ms they were the largest
 * part of the 2-node ping-pong's p99.
 */
#define FABRIC_QEMU_LEASE_SLEEP_MAX_NS 4000000

/* Returns NULL and sets errp on failure. */
FabricQemu *fabric_qemu_open(const struct fabric_config *cfg,
                             const FabricQemuOptions *opts,
                             fabric_rx_fn rx, void *opaque, Error **errp);
/* Called with the BQL held; may drop it briefly to join the thread. */
void fabric_qemu_close(FabricQemu *fq);
int fabric_qemu_send(FabricQemu *fq, uint32_t dst, uint8_t type,
                     const void *payload, size_t len);
struct fabric *fabric_qemu_fabric(FabricQemu *fq);
/*
 * Under the BQL, from a vCPU whose guest polls the NI: hand up to budget
 * waiting packets to rx now, in the caller's context; returns the number
 * of packets read.  With packet rings only the rings are read (no system
 * call) and the poll lease is renewed.
 */
int fabric_qemu_poll(FabricQemu *fq, int budget);
/*
 * Under the BQL: the guest stops polling the NI (it arms an interrupt and
 * sleeps): end the poll lease now, so that the next packet rings a
 * doorbell instead of waiting for the end of the lease.
 */
void fabric_qemu_poll_end(FabricQemu *fq);
/*
 * Under the BQL: a vCPU is about to park (fabric-park.h): end the lease and
 * arm the rings even if the lease had run out, so the next packet rings a
 * doorbell.  Returns true if records wait (then it must not park).
 */
bool fabric_qemu_park_prepare(FabricQemu *fq);
/*
 * Ask the receive thread (or, without one, a main-loop bottom half) to call
 * opts->kick(bulk_opaque) soon.  Callable from any thread.
 */
void fabric_qemu_kick(FabricQemu *fq);

#endif
