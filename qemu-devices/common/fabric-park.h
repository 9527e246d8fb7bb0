/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Poll parking: a vCPU whose guest keeps polling an empty NI gives its
 * host CPU away until something for it arrives (Documentation/cluster.md,
 * "Many nodes on few host cores").
 *
 * Software that waits on the NI spins on a register (mailbox TAIL, channel
 * STATUS, RDMA slot STATUS, VELO CREDITS).  Each such MMIO read that finds
 * nothing new is an empty poll (fabric_park_poll_empty()); a poll that
 * finds something, or a doorbell, ends the streak (fabric_park_poll_busy()).
 * When a streak of empty polls, each within FABRIC_PARK_GAP_NS (of guest
 * time) of the previous one, has lasted the spin budget (poll-spin-us), the read parks
 * the vCPU thread: it ends the fabric poll lease so that senders ring
 * doorbells again, then sleeps on the vCPU's halt condition with the BQL
 * released, as a halted vCPU does.  It wakes when
 *   - a fabric packet or bulk record for this node is handled (packet),
 *   - a device model writes guest memory by DMA or changes a status that
 *     software polls (device: completion, notification, timer),
 *   - the vCPU is kicked (interrupt): any interrupt, pause or exit request,
 *   - poll-park-ms passed (timeout),
 * and the read then returns the register's current value: the guest sees a
 * slower poll, never another result.  After a packet or device wake the
 * spin starts again (what arrived is most likely what the guest waits for,
 * and it may poll an empty queue once more before it acts on it); after an
 * interrupt or a timeout the streak goes on, so a poll that still finds
 * nothing parks again at once.
 *
 * Everything runs under the BQL.  The wake side is process wide (one QEMU
 * process is one node; a wake for any NIC of the node wakes every parked
 * vCPU, which is harmless: it polls again).
 */
#ifndef EXANET_FABRIC_PARK_H
#define EXANET_FABRIC_PARK_H

#include "qom/object.h"

typedef enum FabricWakeCause {
    FABRIC_WAKE_PACKET,
    FABRIC_WAKE_DEVICE,
    FABRIC_WAKE_INTERRUPT,
    FABRIC_WAKE_TIMEOUT,
    FABRIC_WAKE__MAX
} FabricWakeCause;

/* Defaults of the poll-spin-us and poll-park-ms properties */
#define FABRIC_PARK_SPIN_US     1000
#define FABRIC_PARK_MAX_MS      10
/* After this much of a spin, each empty poll yields the host CPU first. */
#define FABRIC_PARK_YIELD_NS    (1 * 1000)
/*
 * Guest time between two empty polls above which they are not one spin:
 * the guest ran something else in between (another process after a
 * sched_yield(), whose work must not wait for a park to end).  A polling
 * loop alone takes a few microseconds per turn under TCG, a guest context
 * switch alone about 10.
 */
#define FABRIC_PARK_GAP_NS      (20 * 1000)

typedef struct FabricPark {
    bool enabled;           /* poll-yield */
    bool defer_tick;        /* poll-defer-tick */
    uint32_t spin_us;       /* poll-spin-us: spin budget before parking */
    uint32_t max_ms;        /* poll-park-ms: longest park */
    const char *dev;        /* for the trace events */
    uint64_t parks;
    uint64_t yields;        /* host sched_yield()s while spinning */
    uint64_t ticks_deferred;    /* guest timer ticks that did not end a park */
    uint64_t parked_ns;
    uint64_t wakes[FABRIC_WAKE__MAX];
} FabricPark;

/*
 * Adds poll-yield, poll-spin-us, poll-park-ms (read/write, also at run
 * time with qom-set) and the read-only counters poll-parks, poll-parked-us,
 * poll-wakes-{packet,device,interrupt,timeout} to a device class whose
 * instance holds a FabricPark at offset park_offset.
 */
void fabric_park_class_init(ObjectClass *oc, size_t park_offset);
/* Defaults, from the device's instance_init. */
void fabric_park_init(FabricPark *p, const char *dev);

/*
 * The MMIO read a waiting guest spins on found nothing new.  May park
 * (drops and retakes the BQL).  prepare() is called right before parking:
 * it ends the fabric poll lease and returns true when packets wait after
 * all (then the read returns without parking).
 */
void fabric_park_poll_empty(FabricPark *p, bool (*prepare)(void *opaque),
                            void *opaque);
/* A poll found something, or the guest started work: the spin restarts. */
void fabric_park_poll_busy(void);

/* Under the BQL: something a parked vCPU may be waiting for happened. */
void fabric_park_wake(FabricWakeCause cause);

#endif
