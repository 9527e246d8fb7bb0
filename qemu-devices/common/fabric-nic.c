/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the NIC models on the fabric have in common, see fabric-nic.h.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qapi/visitor.h"
#include "exec/memory.h"
#include "exec/ramblock.h"
#include "hw/boards.h"
#include "fabric-nic.h"
#include "fabric-torus.h"
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
    DEFINE_PROP_BOOL("direct", FabricNic, direct, true),
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

/* The machine's RAM, if it is one shared object (memory-backend, share=on) */
static MemoryRegion *fabric_nic_shared_ram(void)
{
    MachineState *ms = MACHINE(qdev_get_machine());

    if (!ms->ram || !ms->ram->ram_block ||
        !qemu_ram_is_shared(ms->ram->ram_block) ||
        memory_region_get_fd(ms->ram) < 0) {
        return NULL;
    }
    return ms->ram;
}

/*
 * Direct delivery needs the guest RAM as a shared object peers can map
 * (exacluster starts nodes with memory-backend-memfd,share=on); without it
 * the node stays on the rings (trace event fabric_nic_direct_unavailable).
 */
void fabric_nic_direct_open(FabricNic *nic)
{
    MemoryRegion *ram = fabric_nic_shared_ram();
    char err[256];

    if (!nic->direct || !nic->fq) {
        return;
    }
    if (fabric_direct_open(&nic->dd, nic->dir, nic->node_id, nic->num_nodes,
                           err, sizeof(err)) < 0) {
        warn_report("%s (direct delivery off)", err);
        return;
    }
    if (!ram) {
        trace_fabric_nic_direct_unavailable(nic->node_id);
        return;
    }
    fabric_direct_set_ram(nic->dd, memory_region_get_fd(ram),
                          memory_region_size(ram));
    trace_fabric_nic_direct_open(nic->node_id, memory_region_size(ram));
}

/* RAM offset of the page at bus address addr, as pdev's DMA sees it */
static bool direct_ram_page(PCIDevice *pdev, MemoryRegion *ram,
                            dma_addr_t addr, bool write, uint64_t *off)
{
    hwaddr xlat, plen = FABRIC_DIRECT_PAGE;
    MemoryRegion *mr;
    RAMBlock *rb;
    ram_addr_t o;

    mr = address_space_translate(pci_get_address_space(pdev), addr, &xlat,
                                 &plen, write, MEMTXATTRS_UNSPECIFIED);
    if (!memory_region_is_ram(mr) || plen < FABRIC_DIRECT_PAGE) {
        return false;
    }
    rb = qemu_ram_block_from_host((uint8_t *)memory_region_get_ram_ptr(mr) +
                                  xlat, false, &o);
    *off = o;
    return rb == ram->ram_block && !(o & (FABRIC_DIRECT_PAGE - 1));
}

bool fabric_nic_direct_translate(PCIDevice *pdev, dma_addr_t addr,
                                 uint64_t len, uint64_t *pages)
{
    MemoryRegion *ram = fabric_nic_shared_ram();
    bool ok = ram && !(addr & (FABRIC_DIRECT_PAGE - 1)) &&
              !(len & (FABRIC_DIRECT_PAGE - 1));

    RCU_READ_LOCK_GUARD();
    for (uint64_t i = 0; ok && i < len / FABRIC_DIRECT_PAGE; i++) {
        ok = direct_ram_page(pdev, ram, addr + i * FABRIC_DIRECT_PAGE, true,
                             &pages[i]);
    }
    trace_fabric_nic_direct_translate(pdev->name, addr, len, ok);
    return ok;
}

unsigned fabric_nic_direct_page(PCIDevice *pdev, dma_addr_t addr,
                                uint64_t *off)
{
    MemoryRegion *ram = fabric_nic_shared_ram();
    uint64_t roff, woff;
    unsigned perm = 0;

    if (!ram || (addr & (FABRIC_DIRECT_PAGE - 1))) {
        return 0;
    }
    RCU_READ_LOCK_GUARD();
    if (direct_ram_page(pdev, ram, addr, false, &roff)) {
        perm |= FABRIC_DIRECT_X_READ;
        *off = roff;
    }
    if (direct_ram_page(pdev, ram, addr, true, &woff) &&
        (!perm || woff == roff)) {
        perm |= FABRIC_DIRECT_X_WRITE;
        *off = woff;
    }
    return perm;
}

bool fabric_nic_direct_route(FabricNic *nic, uint32_t dst, size_t bytes,
                             uint32_t *hops)
{
    return fabric_nic_direct_route_from(nic, nic->node_id, dst, bytes, hops);
}

bool fabric_nic_direct_route_from(FabricNic *nic, uint32_t src, uint32_t dst,
                                  size_t bytes, uint32_t *hops)
{
    struct fabric_route_result res;
    struct fabric *f = nic->fq ? fabric_qemu_fabric(nic->fq) : NULL;
    uint64_t now;

    if (!f || nic->drop_ppm || nic->corrupt_ppm) {
        return false;
    }
    /* a link booked far ahead holds senders back (flow control): rings */
    if (fabric_torus_booked_from(fabric_torus(f), src, dst,
                                 FABRIC_DIRECT_MAX_WAIT_NS)) {
        return false;
    }
    if (fabric_route_from(f, src, dst, bytes, &res) != 0) {
        return false;   /* counted on the links; the rings retransmit */
    }
    *hops = res.hops;
    trace_fabric_nic_direct_hops(src, dst, res.hops);
    /* visible no earlier than the links allow: a hop is ~0.3 us */
    do {
        now = get_clock();
    } while ((uint64_t)now < res.due_ns &&
             res.due_ns - now <= FABRIC_DIRECT_MAX_WAIT_NS);
    return true;
}

void fabric_nic_direct_done(FabricNic *nic, uint32_t dst, bool wake)
{
    if (wake) {
        fabric_nic_send(nic, dst, FABRIC_NIC_T_WAKE, NULL, 0);
    }
}

static void fabric_nic_direct_get(Object *obj, Visitor *v, const char *name,
                                  void *opaque, Error **errp)
{
    FabricNic *nic = (FabricNic *)((char *)obj + (uintptr_t)opaque);
    struct fabric_direct_stats st = { 0 };
    struct fabric_direct_xlat_stats xst = { 0 };
    uint64_t val;

    if (nic->dd) {
        fabric_direct_get_stats(nic->dd, &st);
        fabric_direct_get_xlat_stats(nic->dd, &xst);
    }
    if (!strcmp(name, "direct-access")) {
        val = xst.access;
    } else if (!strcmp(name, "direct-access-miss")) {
        val = xst.access_miss;
    } else if (!strcmp(name, "direct-access-bytes")) {
        val = xst.bytes;
    } else if (!strcmp(name, "direct-xlat-fills")) {
        val = xst.fills;
    } else if (!strcmp(name, "direct-xlat-fences")) {
        val = xst.fences;
    } else if (!strcmp(name, "direct-xlat-fence-waits")) {
        val = xst.fence_waits;
    } else if (!strcmp(name, "direct-xlat-fill-clashes")) {
        val = xst.fill_clashes;
    } else if (!strcmp(name, "direct-tx")) {
        val = st.tx_direct;
    } else if (!strcmp(name, "direct-tx-full")) {
        val = st.tx_full;
    } else if (!strcmp(name, "direct-tx-refused")) {
        val = st.tx_refused;
    } else if (!strcmp(name, "direct-tx-no-path")) {
        val = st.tx_no_path;
    } else {
        val = st.wakes;
    }
    visit_type_uint64(v, name, &val, errp);
}

void fabric_nic_direct_class_init(ObjectClass *oc, size_t nic_offset)
{
    static const char *const names[][2] = {
        { "direct-tx", "messages this node wrote into peers' memory" },
        { "direct-tx-full", "direct writes that found the slot in use" },
        { "direct-tx-refused", "direct writes refused: protection id" },
        { "direct-tx-no-path", "direct writes without a path (rings taken)" },
        { "direct-wakes", "doorbells sent to wake a parked target" },
        { "direct-access",
          "puts / gets, RDMA writes / reads / records done in peers' memory" },
        { "direct-access-miss",
          "puts / gets that found a page not translated (rings taken)" },
        { "direct-access-bytes", "bytes of puts / gets done in peers' memory" },
        { "direct-xlat-fills", "translations this node exported to peers" },
        { "direct-xlat-fences", "fences that emptied the translation cache" },
        { "direct-xlat-fence-waits",
          "fences that waited for a peer's access in progress" },
        { "direct-xlat-fill-clashes",
          "translations not cached: their slot held another page" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        object_class_property_add(oc, names[i][0], "uint64",
                                  fabric_nic_direct_get, NULL, NULL,
                                  (void *)(uintptr_t)nic_offset);
        object_class_property_set_description(oc, names[i][0], names[i][1]);
    }
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
    fabric_direct_close(nic->dd);
    nic->dd = NULL;
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
    int n;

    if (!nic->fq) {
        return 0;
    }
    n = fabric_qemu_poll(nic->fq, budget);
    /*
     * Software that takes messages from memory (an exported queue) polls
     * memory and reads a register only now and then: a poll lease would
     * leave ring traffic (RMA, replies) waiting until it ends (1 ms; a
     * 1 KiB MPI rendezvous over extoll took 1.4 ms per round trip).  Each
     * packet rings a doorbell instead.
     */
    if (fabric_direct_exporting(nic->dd)) {
        fabric_qemu_poll_end(nic->fq);
    }
    return n;
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

    if (nic->dd) {
        /*
         * Peers write without our threads: tell them to wake us, then
         * look whether one wrote since the guest last looked (seq_cst on
         * both sides: one of us sees the other).
         */
        fabric_direct_set_parked(nic->dd, true);
        if (fabric_direct_deliveries(nic->dd) != nic->direct_seen) {
            fabric_direct_set_parked(nic->dd, false);
            return true;
        }
    }
    return nic->fq && fabric_qemu_park_prepare(nic->fq);
}

void fabric_nic_poll_idle(FabricNic *nic)
{
    if (nic->dd) {
        uint64_t seen = fabric_direct_deliveries(nic->dd);

        if (seen != nic->direct_seen) {
            /* written into our memory since the last poll */
            nic->direct_seen = seen;
            fabric_park_poll_busy();
            return;
        }
    }
    fabric_park_poll_empty(&nic->park, fabric_nic_park_prepare, nic);
    if (nic->dd) {
        fabric_direct_set_parked(nic->dd, false);
        nic->direct_seen = fabric_direct_deliveries(nic->dd);
    }
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
