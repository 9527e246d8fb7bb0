/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the NIC models on the fabric have in common, see fabric-nic.h.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "fabric-nic.h"
#include "trace.h"

static bool fabric_nic_check(FabricNic *nic, const char *type,
                             uint32_t max_nodes, Error **errp)
{
    if (nic->num_nodes == 0 || nic->num_nodes > max_nodes) {
        error_setg(errp, "%s: num-nodes must be 1..%u", type, max_nodes);
        return false;
    }
    if (nic->node_id >= nic->num_nodes) {
        error_setg(errp, "%s: node-id %u must be below num-nodes %u",
                   type, nic->node_id, nic->num_nodes);
        return false;
    }
    if (nic->drop_ppm > FABRIC_PPM || nic->corrupt_ppm > FABRIC_PPM) {
        error_setg(errp, "%s: fabric-*-ppm must be at most %u", type,
                   FABRIC_PPM);
        return false;
    }
    if (nic->rx_rtprio > 99) {
        error_setg(errp, "%s: rx-rtprio must be 0..99", type);
        return false;
    }
    if (nic->rx_spin_us > FABRIC_QEMU_RX_SPIN_MAX_US) {
        error_setg(errp, "%s: rx-spin-us must be 0..%u", type,
                   FABRIC_QEMU_RX_SPIN_MAX_US);
        return false;
    }
    if ((!nic->dir || !nic->dir[0]) && nic->num_nodes > 1) {
        error_setg(errp, "%s: num-nodes > 1 needs the fabric property", type);
        return false;
    }
    return fabric_links_check(nic, type, nic->dims, errp);
}

static const Property fabric_nic_props_template[] = {
    DEFINE_PROP_UINT32("node-id", FabricNic, node_id, 0),
    DEFINE_PROP_UINT32("num-nodes", FabricNic, num_nodes, 1),
    DEFINE_PROP_STRING("fabric", FabricNic, dir),
    DEFINE_PROP_UINT32("fabric-drop-ppm", FabricNic, drop_ppm, 0),
    DEFINE_PROP_UINT32("fabric-corrupt-ppm", FabricNic, corrupt_ppm, 0),
    DEFINE_PROP_UINT64("fabric-seed", FabricNic, seed, 0),
    DEFINE_PROP_BOOL("rx-thread", FabricNic, rx_thread, true),
    DEFINE_PROP_UINT32("rx-rtprio", FabricNic, rx_rtprio, 1),
    DEFINE_PROP_UINT32("rx-spin-us", FabricNic, rx_spin_us, 0),
    DEFINE_PROP_BOOL("pkt-ring", FabricNic, pkt_ring, true),
    DEFINE_PROP_STRING("torus", FabricNic, torus),
    DEFINE_PROP_UINT32("link-mbps", FabricNic, link_mbps, 0),
    DEFINE_PROP_UINT32("link-ns", FabricNic, link_ns, FABRIC_LINK_NS),
};
QEMU_BUILD_BUG_ON(ARRAY_SIZE(fabric_nic_props_template) != FABRIC_NIC_NPROPS);

void fabric_nic_props(Property *props, size_t nic_offset, const Property *own)
{
    size_t n = 0;

    for (size_t i = 0; i < FABRIC_NIC_NPROPS; i++) {
        props[n] = fabric_nic_props_template[i];
        props[n++].offset += nic_offset;
    }
    do {
        props[n++] = *own;
    } while ((own++)->name);
}

void fabric_nic_parkable(MemoryRegion *mr)
{
    mr->disable_reentrancy_guard = true;
}

bool fabric_nic_realize(PCIDevice *pdev, FabricNic *nic, uint32_t max_nodes,
                        const FabricNicBar *bars, size_t nbars, Error **errp)
{
    if (!fabric_nic_check(nic, object_get_typename(OBJECT(pdev)), max_nodes,
                          errp)) {
        return false;
    }
    pci_config_set_interrupt_pin(pdev->config, 0);
    for (size_t i = 0; i < nbars; i++) {
        memory_region_init_io(bars[i].mr, OBJECT(pdev), bars[i].ops, pdev,
                              bars[i].name, bars[i].size);
        fabric_nic_parkable(bars[i].mr);
        pci_register_bar(pdev, bars[i].index,
                         PCI_BASE_ADDRESS_SPACE_MEMORY | bars[i].type,
                         bars[i].mr);
    }
    return true;
}

bool fabric_nic_open(FabricNic *nic, const FabricQemuOptions *model_opts,
                     fabric_rx_fn rx, void *opaque, Error **errp)
{
    struct fabric_config cfg = {
        .dir = nic->dir,
        .node_id = nic->node_id,
        .num_nodes = nic->num_nodes,
        .drop_ppm = nic->drop_ppm,
        .corrupt_ppm = nic->corrupt_ppm,
        .seed = nic->seed,
        .dims = { nic->dims[0], nic->dims[1], nic->dims[2] },
        .link_mbps = nic->link_mbps,
        .link_ns = nic->link_ns,
    };
    FabricQemuOptions opts = *model_opts;

    if (!nic->dir || !nic->dir[0]) {
        return true;
    }
    opts.rx_thread = nic->rx_thread;
    opts.rt_prio = nic->rx_rtprio;
    opts.rx_spin_us = nic->rx_spin_us;
    opts.pkt_ring = nic->pkt_ring;
    nic->fq = fabric_qemu_open(&cfg, &opts, rx, opaque, errp);
    return nic->fq != NULL;
}

void fabric_nic_close(FabricNic *nic)
{
    fabric_qemu_close(nic->fq);
    nic->fq = NULL;
}

void fabric_nic_send(FabricNic *nic, uint32_t dst, uint8_t type,
                     const void *payload, size_t len)
{
    int r;

    if (nic->fq) {
        r = fabric_qemu_send(nic->fq, dst, type, payload, len);
        trace_fabric_nic_send(nic->node_id, dst, type, len, r);
    }
}

int fabric_nic_poll(FabricNic *nic, int budget)
{
    return nic->fq ? fabric_qemu_poll(nic->fq, budget) : 0;
}

void fabric_nic_poll_end(FabricNic *nic)
{
    if (nic->fq) {
        fabric_qemu_poll_end(nic->fq);
    }
}

static bool fabric_nic_park_prepare(void *opaque)
{
    FabricNic *nic = opaque;

    return nic->fq && fabric_qemu_park_prepare(nic->fq);
}

void fabric_nic_poll_idle(FabricNic *nic)
{
    fabric_park_poll_empty(&nic->park, fabric_nic_park_prepare, nic);
}

void fabric_nic_timer_arm(QEMUTimer *timer, int64_t *due, int64_t ns)
{
    *due = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + ns;
    if (!timer_pending(timer) || (int64_t)timer_expire_time_ns(timer) > *due) {
        timer_mod(timer, *due);
    }
}

bool fabric_nic_timer_due(QEMUTimer *timer, int64_t *due)
{
    if (!*due) {
        return false;   /* disarmed since it was armed */
    }
    if (qemu_clock_get_ns(QEMU_CLOCK_REALTIME) < *due) {
        timer_mod(timer, *due);     /* armed again later: move on */
        return false;
    }
    *due = 0;
    return true;
}

uint64_t fabric_nic_backoff(uint64_t base, unsigned retries, uint64_t cap)
{
    while (retries-- && base < cap) {
        base <<= 1;
    }
    return MIN(base, cap);
}

MemTxResult fabric_nic_dma_rw(PCIDevice *pdev, unsigned *depth,
                              dma_addr_t addr, void *buf, dma_addr_t len,
                              DMADirection dir)
{
    MemTxResult r;

    (*depth)++;
    r = pci_dma_rw(pdev, addr, buf, len, dir, MEMTXATTRS_UNSPECIFIED);
    (*depth)--;
    if (dir == DMA_DIRECTION_TO_DEVICE) {
        trace_fabric_nic_dma_read(pdev->name, addr, len, r);
    } else {
        trace_fabric_nic_dma_write(pdev->name, addr, len, r);
        fabric_park_wake(FABRIC_WAKE_DEVICE);
    }
    return r;
}

MemTxResult fabric_nic_dma_store(PCIDevice *pdev, unsigned *depth,
                                 dma_addr_t addr, uint64_t val, unsigned size)
{
    AddressSpace *as = pci_get_address_space(pdev);
    MemTxResult r = MEMTX_OK;
    uint8_t buf[8];

    assert(size == 4 || size == 8);
    if (addr & (size - 1)) {
        stq_le_p(buf, val);
        return fabric_nic_dma_rw(pdev, depth, addr, buf, size,
                                 DMA_DIRECTION_FROM_DEVICE);
    }
    (*depth)++;
    smp_mb();   /* the body is visible before the word that publishes it */
    if (size == 8) {
        address_space_stq_le(as, addr, val, MEMTXATTRS_UNSPECIFIED, &r);
    } else {
        address_space_stl_le(as, addr, val, MEMTXATTRS_UNSPECIFIED, &r);
    }
    (*depth)--;
    trace_fabric_nic_dma_store(pdev->name, addr, val, size, r);
    fabric_park_wake(FABRIC_WAKE_DEVICE);
    return r;
}

bool fabric_nic_reentered(unsigned depth, const char *type)
{
    if (depth) {
        FABRIC_GUEST_ERR(fabric_nic_err_reentered, "%s: MMIO access from DMA "
                         "ignored", type);
        return true;
    }
    return false;
}
