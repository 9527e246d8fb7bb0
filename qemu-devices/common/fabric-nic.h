/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What every PCI NIC model on the fabric (exanet, extoll) has in common:
 * the fabric properties, the memory BARs, opening and closing the fabric
 * transport (fabric-qemu.h), the retransmission back-off and the guard
 * against DMA into its own BARs.  Everything here runs under the BQL.
 */
#ifndef EXANET_FABRIC_NIC_H
#define EXANET_FABRIC_NIC_H

#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "sysemu/dma.h"
#include "qemu/log.h"
#include "fabric-qemu.h"
#include "fabric-park.h"
#include "fabric-direct.h"
#include "exa_torus.h"

/*
 * A guest programming error: logged with -d guest_errors and traced by the
 * trace event of that name (whose arguments are the format's arguments).
 * Each model wraps it (EXANET_GUEST_ERR, EXTOLL_GUEST_ERR) with its prefix.
 */
#define FABRIC_GUEST_ERR(event, fmt, ...)                                   \
    do {                                                                    \
        trace_##event(__VA_ARGS__);                                         \
        qemu_log_mask(LOG_GUEST_ERROR, fmt " (" #event ")\n",              \
                      ## __VA_ARGS__);                                      \
    } while (0)

/* A NIC's place on the fabric (its properties) and its transport. */
typedef struct FabricNic {
    uint32_t node_id;
    uint32_t num_nodes;
    char *dir;              /* "fabric": socket directory; unset: one node */
    uint32_t drop_ppm;
    uint32_t corrupt_ppm;
    uint64_t seed;
    bool rx_thread;
    uint32_t rx_rtprio;
    uint32_t rx_spin_us;    /* fabric-qemu.h */
    bool pkt_ring;          /* packets over shared-memory rings */
    char *torus;            /* "XxYxZ"; unset: the default shape */
    uint32_t dims[3];       /* the shape, from torus at realize */
    uint32_t link_mbps;     /* this node's links: rate (0 = unlimited) */
    uint32_t link_ns;       /* and latency per hop */
    bool direct;            /* direct delivery (fabric-direct.h) wanted */
    FabricQemu *fq;         /* NULL while the fabric is not open */
    /* direct delivery: NULL when off or without shared guest RAM */
    struct fabric_direct *dd;
    uint64_t direct_seen;   /* dd's deliveries at the last idle poll */
    FabricPark park;        /* poll parking (poll-* properties) */
} FabricNic;

/*
 * The fabric properties of a NIC (node-id, num-nodes, fabric, ...) for a
 * device whose FabricNic lies at nic_offset in its state: props[] receives
 * them, then own[] up to and with its DEFINE_PROP_END_OF_LIST().  props
 * needs room for FABRIC_NIC_NPROPS + ARRAY_SIZE(own).  Called from
 * class_init, before device_class_set_props(dc, props).
 */
#define FABRIC_NIC_NPROPS 14
void fabric_nic_props(Property *props, size_t nic_offset, const Property *own);

/*
 * Default latency of a hop: the ExaNeSt router's cost per extra hop
 * (seed: 1.3 us over one hop, 2.55 us over five).
 */
#define FABRIC_LINK_NS          300

/* One MMIO BAR; the device is the opaque of its ops. */
typedef struct FabricNicBar {
    int index;
    uint8_t type;           /* 0 or PCI_BASE_ADDRESS_MEM_TYPE_64 */
    MemoryRegion *mr;
    const MemoryRegionOps *ops;
    const char *name;
    uint64_t size;
} FabricNicBar;

/*
 * A vCPU that parks or yields in an MMIO read (fabric-park.h) leaves the
 * device's region "in I/O" with the BQL released: QEMU's per-device
 * re-entrancy guard would then refuse every access of the other vCPUs to
 * the whole device.  The models guard against DMA re-entering their MMIO
 * themselves (fabric_nic_reentered()), so every MMIO region of a NIC,
 * MSI-X table and PBA included, goes without QEMU's guard.
 */
void fabric_nic_parkable(MemoryRegion *mr);

/*
 * Checks the properties against the model's max_nodes, leaves the function
 * without an interrupt pin and registers the BARs (fabric_nic_parkable()).
 * On error sets errp, naming the device type, and returns false.
 */
bool fabric_nic_realize(PCIDevice *pdev, FabricNic *nic, uint32_t max_nodes,
                        const FabricNicBar *bars, size_t nbars, Error **errp);

/*
 * Opens the transport if the fabric property is set; from then on rx may
 * be called.  model_opts gives the thread name and the bulk / kick
 * handlers; the receive thread settings come from the properties.
 * Returns false and sets errp on failure.
 */
bool fabric_nic_open(FabricNic *nic, const FabricQemuOptions *model_opts,
                     fabric_rx_fn rx, void *opaque, Error **errp);
/* May drop the BQL briefly (see fabric_qemu_close()). */
void fabric_nic_close(FabricNic *nic);

/*
 * To another node; a packet that is lost (no fabric, peer down, queue
 * full) is the retransmission's business.
 */
void fabric_nic_send(FabricNic *nic, uint32_t dst, uint8_t type,
                     const void *payload, size_t len);

/*
 * Direct delivery (fabric-direct.h, Documentation/fabric.md section 9).
 * FABRIC_NIC_T_WAKE is a packet that carries nothing: it wakes a node
 * whose vCPUs parked (models ignore it).
 */
#define FABRIC_NIC_T_WAKE 0xfe
/*
 * After fabric_nic_open(), by a model that exports receive queues: publish
 * this node's shared NI state (property direct, default on).
 */
void fabric_nic_direct_open(FabricNic *nic);
static inline bool fabric_nic_direct_on(FabricNic *nic)
{
    return nic->dd && fabric_direct_live(nic->dd);
}
/*
 * The RAM offsets of the len bytes (whole pages) at bus address addr as
 * the device's DMA sees them now (through the IOMMU, if any); false if a
 * page is not in the node's shared guest RAM.
 */
bool fabric_nic_direct_translate(PCIDevice *pdev, dma_addr_t addr,
                                 uint64_t len, uint64_t *pages);
/*
 * The page at bus address addr (page aligned) as pdev's DMA reaches it:
 * its RAM offset in *off and the permissions (FABRIC_DIRECT_X_READ,
 * _X_WRITE) the IOMMU grants, 0 when it is not in shared RAM.
 */
unsigned fabric_nic_direct_page(PCIDevice *pdev, dma_addr_t addr,
                                uint64_t *off);
/*
 * Route a direct write of bytes to dst over the torus and wait for its
 * delivery time (fabric.md section 3); false: it must take the rings
 * (fault injection on, dropped or corrupted on a cable, no route, or a
 * link booked too far ahead).  *hops: the route's, for the target's
 * rx-hops (struct fabric_direct_msg).
 */
bool fabric_nic_direct_route(FabricNic *nic, uint32_t dst, size_t bytes,
                             uint32_t *hops);
/* The same for bytes from node src to dst: a read's answer (dst = us) */
bool fabric_nic_direct_route_from(FabricNic *nic, uint32_t src, uint32_t dst,
                                  size_t bytes, uint32_t *hops);
/* Read-only counters direct-tx, direct-tx-full, ... (QOM) of a model */
void fabric_nic_direct_class_init(ObjectClass *oc, size_t nic_offset);
/* After fabric_direct_write(): wake the target if it asked for it. */
void fabric_nic_direct_done(FabricNic *nic, uint32_t dst, bool wake);

/*
 * Receive up to budget waiting packets now, from the calling context (an
 * MMIO read the guest spins on); returns the number of datagrams read.
 */
int fabric_nic_poll(FabricNic *nic, int budget);
/* Software stops polling (it arms an interrupt): see fabric_qemu_poll_end(). */
void fabric_nic_poll_end(FabricNic *nic);
/*
 * From an MMIO read a waiting guest spins on, after fabric_nic_poll():
 * the poll found nothing new (may park the vCPU, fabric-park.h) or found
 * something (the spin restarts).
 */
void fabric_nic_poll_idle(FabricNic *nic);
/*
 * A read of size bytes at off of a 64-bit register whose value is v: the
 * upper half at off & 4, else the lower half, or all of it for an 8-byte
 * read.
 */
static inline uint64_t fabric_nic_reg_part(uint64_t v, hwaddr off,
                                           unsigned size)
{
    if (off & 4) {
        return v >> 32;
    }
    return size == 8 ? v : (uint32_t)v;
}

static inline void fabric_nic_poll_found(void)
{
    fabric_park_poll_busy();
}
/* Class and instance set-up of the poll-* properties of a model. */
#define FABRIC_NIC_PARK_CLASS_INIT(_oc, _state, _nic)                       \
    fabric_park_class_init(_oc, offsetof(_state, _nic.park))

/*
 * The torus (fabric-links.c): checks the torus / link-* properties and
 * works out the shape (realize); reads the link block of BAR0 at off from
 * EXA_TORUS_BASE (uapi/exa_torus.h; 32-bit halves of 64-bit registers
 * too); adds the per-port run-time properties (link-x+ ... link-z-, each
 * with -state, -counters, -mbps, -ns, -drop-ppm, -corrupt-ppm) and
 * torus-coords, rx-hops, no-route to a model's class.
 */
bool fabric_links_check(FabricNic *nic, const char *type, uint32_t dims[3],
                        Error **errp);
uint64_t fabric_links_read(FabricNic *nic, hwaddr off, unsigned size);
void fabric_links_class_init(ObjectClass *oc, size_t nic_offset);
#define FABRIC_NIC_LINKS_CLASS_INIT(_oc, _state, _nic)                      \
    fabric_links_class_init(_oc, offsetof(_state, _nic))
#define FABRIC_NIC_OWNS_LINKS(off)                                          \
    ((off) >= EXA_TORUS_BASE && (off) < EXA_TORUS_BASE + 0x800)

/* Retransmission back-off: base doubled per retry, at most cap (any unit). */
uint64_t fabric_nic_backoff(uint64_t base, unsigned retries, uint64_t cap);

/*
 * Lazy retransmission timers (QEMU_CLOCK_REALTIME).  *due is when the
 * timer is due, 0 while disarmed; disarming only clears *due and leaves
 * the timer pending.  Arming keeps a pending timer that expires no later
 * than the new due time, and the callback, which starts with
 * fabric_nic_timer_due(), moves it on.  Deleting a timer at every answer
 * and arming it for the next packet moves the earliest timer each time,
 * which wakes the main loop (a thread wake-up and the BQL, preempting a
 * vCPU): notes/measurements-2026.md, "Host noise".
 */
void fabric_nic_timer_arm(QEMUTimer *timer, int64_t *due, int64_t ns);
/* In the callback: true if due now (then disarmed), else false. */
bool fabric_nic_timer_due(QEMUTimer *timer, int64_t *due);

/*
 * A guest can point a NIC's DMA at MMIO, even at the NIC's own BARs: the
 * DMA would then re-enter the device (doorbell -> DMA -> doorbell ...).
 * Each model counts its DMA in progress in *depth (fabric_nic_dma_rw())
 * and ignores MMIO while it is non-zero (fabric_nic_reentered(): reads
 * return 0).
 */
MemTxResult fabric_nic_dma_rw(PCIDevice *pdev, unsigned *depth,
                              dma_addr_t addr, void *buf, dma_addr_t len,
                              DMADirection dir);
bool fabric_nic_reentered(unsigned depth, const char *type);

/*
 * Store a 4- or 8-byte little-endian word that hands a slot to the guest
 * (a status or flags word that software polls and then clears) with one
 * store, after the body written before it.  pci_dma_rw() copies with
 * memcpy(), which may store a small word twice (overlapping moves); if the
 * guest consumed and cleared the slot between the two, the second store
 * would hand it over again.  Unaligned words fall back to fabric_nic_dma_rw().
 */
MemTxResult fabric_nic_dma_store(PCIDevice *pdev, unsigned *depth,
                                 dma_addr_t addr, uint64_t val, unsigned size);

#endif
