/*
 * ExaNet NI: emulated PCI device (packetizer + mailbox engines).
 *
 * The register map, doorbell/status encodings and the mailbox slot format
 * are defined by uapi/exanet.h; Documentation/exanet/hardware.md describes
 * the semantics.  Packets between nodes travel over the host-side fabric
 * (common/fabric.[ch]); packets to our own node are delivered directly.
 *
 * Locking: every entry point (MMIO callbacks, fabric fd handlers, timers
 * on the main loop) runs under the BQL, which protects all device state.
 * Mailbox DMA is synchronous inside those callbacks, so once an MMIO write
 * that disables a mailbox returns, no DMA into its queue can follow.
 *
 * Interrupts: MSI-X in BAR4 (table + PBA, EXANET_NUM_IRQ_VECTORS vectors).
 * A mailbox or an RDMA rank armed by the kernel fires once: the NI writes
 * the message (or record) first, then disarms the source, sets its bit in
 * the PENDING register and sends the MSI-X message.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/pci.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "sysemu/dma.h"
#include "qom/object.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet_coll.h"
#include "fabric-nic.h"
#include "exanet-int.h"
#include "exanet-ni.h"
#include "trace.h"

unsigned exanet_dma_depth;

bool exanet_reentered(void)
{
    return fabric_nic_reentered(exanet_dma_depth, TYPE_EXANET);
}

MemTxResult exanet_dma_write(ExanetState *s, dma_addr_t addr,
                             const void *buf, dma_addr_t len)
{
    return fabric_nic_dma_rw(PCI_DEVICE(s), &exanet_dma_depth, addr,
                             (void *)buf, len, DMA_DIRECTION_FROM_DEVICE);
}

/* ------------------------------------------------------------------ */

static uint64_t exanet_fabric_bad(ExanetState *s)
{
    struct fabric_stats st;

    if (!s->nic.fq) {
        return 0;
    }
    fabric_get_stats(fabric_qemu_fabric(s->nic.fq), &st);
    return st.rx_bad_magic + st.rx_bad_version + st.rx_bad_length +
           st.rx_bad_crc + st.rx_bad_addr;
}

static uint64_t exanet_counter(ExanetState *s, unsigned n)
{
    uint64_t v;

    if (n == EXANET_CNT_RX_DELIVERED || n == EXANET_CNT_RX_NACK_FULL) {
        for (unsigned m = 0; m < EXANET_NUM_MBOX_IFACES; m++) {
            exanet_mbox_sync(s, m);     /* what peers wrote */
        }
    }
    v = s->counters[n];

    if (n == EXANET_CNT_RX_CORRUPT) {
        v += exanet_fabric_bad(s) - s->corrupt_base;
    }
    return v;
}

/* ------------------------------------------------------------------ */
/* Interrupts */

static unsigned exanet_irq_vectors(ExanetState *s)
{
    return s->msix ? EXANET_NUM_IRQ_VECTORS : 0;
}

/*
 * An event of a source whose IRQ register is *irq: if armed, disarm it
 * (one-shot), mark it pending and raise its vector.  The caller has
 * written the message / record before.
 */
void exanet_irq_event(ExanetState *s, uint32_t *irq, bool rank,
                      unsigned src)
{
    unsigned vec = EXANET_IRQ_VECTOR(*irq);

    if (!(*irq & EXANET_IRQ_ARMED)) {
        return;
    }
    trace_exanet_irq(s->nic.node_id, rank ? "rank" : "mailbox", src, vec);
    *irq = 0;
    if (rank) {
        s->irq_rank_pending |= 1u << src;
    } else {
        s->irq_mbox_pending |= 1ull << src;
    }
    s->irq_count++;
    /* Masked or MSI-X disabled: the PBA keeps it pending. */
    if (msix_present(PCI_DEVICE(s))) {
        msix_notify(PCI_DEVICE(s), vec);
    }
}

void exanet_irq_rank_event(PCIDevice *ni, unsigned rank, uint32_t *irq)
{
    exanet_irq_event(EXANET(ni), irq, true, rank);
}

/* A kernel write to a source's IRQ register; false if refused. */
bool exanet_irq_arm(PCIDevice *ni, uint32_t *irq, uint32_t val,
                    const char *what, unsigned src)
{
    ExanetState *s = EXANET(ni);

    if (!(val & EXANET_IRQ_ARMED)) {
        *irq = 0;
        return true;
    }
    if (val & ~EXANET_IRQ_ARM(EXANET_IRQ_VECTOR_MASK) ||
        EXANET_IRQ_VECTOR(val) >= exanet_irq_vectors(s)) {
        EXANET_GUEST_ERR(exanet_err_irq_arm, "%s %u: bad IRQ arm value 0x%x "
                         "(%u vectors), stays disarmed", what, src, val,
                         exanet_irq_vectors(s));
        *irq = 0;
        return false;
    }
    *irq = val;
    /* Software sleeps until the interrupt: it polls no more. */
    fabric_nic_poll_end(&s->nic);
    return true;
}

/* Send a packet to a node; our own node is served without the fabric. */
void exanet_xmit(ExanetState *s, uint32_t dst, uint8_t type,
                 const void *buf, size_t len)
{
    if (dst == s->nic.node_id) {
        exanet_rx(s, dst, type, buf, len);
        return;
    }
    fabric_nic_send(&s->nic, dst, type, buf, len);
}

void exanet_send_reply(ExanetState *s, uint32_t dst, uint8_t type,
                       uint16_t iface, uint8_t chan, uint8_t reason,
                       uint32_t seq, uint32_t epoch)
{
    uint8_t b[A_SIZE];

    trace_exanet_reply(s->nic.node_id, dst,
                       type == EXA_PKT_ACK ? "ACK" : "NACK", iface, chan, seq,
                       reason);
    stw_le_p(b + A_IFACE, iface);
    b[A_CHAN] = chan;
    b[A_REASON] = reason;
    stl_le_p(b + A_SEQ, seq);
    stl_le_p(b + A_EPOCH, epoch);
    exanet_xmit(s, dst, type, b, sizeof(b));
}

/* ------------------------------------------------------------------ */
/* Reset and configuration */

static void exanet_pkt_disable(ExanetPktIface *ifc)
{
    ifc->enabled = false;
    for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
        exanet_chan_abort(&ifc->chan[c]);
    }
}

static void exanet_pkt_enable(ExanetPktIface *ifc)
{
    for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
        exanet_chan_abort(&ifc->chan[c]);
        memset(ifc->chan[c].payload, 0, EXANET_MAX_PAYLOAD);
    }
    ifc->enabled = true;
}

static void exanet_mbox_enable(ExanetState *s, unsigned m)
{
    ExanetMbox *mb = &s->mbox[m];
    uint64_t base = (uint64_t)mb->qbase_hi << 32 | mb->qbase_lo;
    uint32_t n = mb->nslots_reg;

    mb->enabled = false;
    if (n < EXANET_MBOX_MIN_SLOTS || n > EXANET_MBOX_MAX_SLOTS ||
        !is_power_of_2(n) || (base & (EXANET_MBOX_SLOT_SIZE - 1)) ||
        base + (uint64_t)n * EXANET_MBOX_SLOT_SIZE < base) {
        EXANET_GUEST_ERR(exanet_err_mbox_queue, "mailbox %u: invalid queue "
                         "0x%" PRIx64 " x %u slots, stays disabled", m, base,
                         n);
        return;
    }
    mb->base = base;
    mb->nslots = n;
    mb->head = 0;
    mb->tail = 0;
    mb->rx_count = 0;
    mb->full_count = 0;
    mb->irq = 0;
    mb->enabled = true;
}

void exanet_mbox_head(ExanetState *s, unsigned m, uint32_t val)
{
    ExanetMbox *mb = &s->mbox[m];
    uint32_t delta;

    if (!mb->enabled || val >= mb->nslots) {
        return;
    }
    exanet_mbox_sync(s, m);
    /*
     * Software publishes the index of the next slot it will consume.  The
     * device advances its free-running head by the distance to that index;
     * software cannot move past the tail.
     */
    delta = (val - mb->head) & (mb->nslots - 1);
    if (delta <= mb->tail - mb->head) {
        mb->head += delta;
    }
    trace_exanet_mbox_head(s->nic.node_id, m, mb->head);
    exanet_mbox_direct_update(s, m);
}

static void exanet_reset_state(ExanetState *s)
{
    for (unsigned i = 0; i < EXANET_NUM_PKT_IFACES; i++) {
        exanet_pkt_disable(&s->pkt[i]);
        s->pkt[i].pdid = 0;
        for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
            memset(s->pkt[i].chan[c].payload, 0, EXANET_MAX_PAYLOAD);
        }
    }
    for (unsigned m = 0; m < EXANET_NUM_MBOX_IFACES; m++) {
        exanet_mbox_unexport(s, m);
        memset(&s->mbox[m], 0, sizeof(s->mbox[m]));
    }
    memset(s->counters, 0, sizeof(s->counters));
    s->irq_mbox_pending = 0;
    s->irq_rank_pending = 0;
    s->irq_count = 0;
    s->corrupt_base = exanet_fabric_bad(s);
    s->retx_timeout_us = EXANET_DEFAULT_RETX_TIMEOUT_US;
    s->retx_max = EXANET_DEFAULT_RETX_MAX;
    s->retx_due = INT64_MAX;
    if (s->dedup) {
        g_hash_table_remove_all(s->dedup);
    }
    /* A new epoch: packets of the previous life are never duplicates. */
    do {
        s->epoch = g_random_int();
    } while (s->epoch == 0);
    if (s->rdma) {
        exanet_rdma_reset(s->rdma, s->epoch);
    }
}

ExanetRdma *exanet_get_rdma(Object *ni)
{
    ExanetState *s = (ExanetState *)object_dynamic_cast(ni, TYPE_EXANET);

    return s ? s->rdma : NULL;
}

/* ------------------------------------------------------------------ */
/* BAR0: control */

static uint32_t exanet_ctrl_read32(ExanetState *s, hwaddr off)
{
    if (exanet_rdma_ctrl_owns(off)) {
        return exanet_rdma_ctrl_read(s->rdma, off);
    }
    if (FABRIC_NIC_OWNS_LINKS(off)) {
        return fabric_links_read(&s->nic, off - EXA_TORUS_BASE, 4);
    }
    if (off >= EXANET_REG_COUNTER(0) &&
        off < EXANET_REG_COUNTER(EXANET_NUM_COUNTERS)) {
        uint64_t v = exanet_counter(s, (off - EXANET_REG_COUNTER(0)) / 8);

        return fabric_nic_reg_part(v, off, 4);
    }
    if (off >= EXANET_REG_PKT_BASE(0) &&
        off < EXANET_REG_PKT_BASE(EXANET_NUM_PKT_IFACES)) {
        ExanetPktIface *ifc = &s->pkt[(off - EXANET_REG_PKT_BASE(0)) / 0x20];
        uint32_t busy = 0;

        switch (off & 0x1f) {
        case EXANET_PKT_PDID:
            return ifc->pdid;
        case EXANET_PKT_ENABLE:
            return ifc->enabled;
        case EXANET_PKT_BUSY:
            exanet_poll_fabric(s);
            busy = exanet_pkt_busy(ifc);
            if (busy) {
                fabric_nic_poll_idle(&s->nic);
                busy = exanet_pkt_busy(ifc);
            }
            return busy;
        }
        return 0;
    }
    if (off >= EXANET_REG_MBOX_BASE(0) &&
        off < EXANET_REG_MBOX_BASE(EXANET_NUM_MBOX_IFACES)) {
        ExanetMbox *mb = &s->mbox[(off - EXANET_REG_MBOX_BASE(0)) / 0x40];

        switch (off & 0x3f) {
        case EXANET_MBOX_PDID:
            return mb->pdid;
        case EXANET_MBOX_ENABLE:
            return mb->enabled;
        case EXANET_MBOX_QBASE_LO:
            return mb->qbase_lo;
        case EXANET_MBOX_QBASE_HI:
            return mb->qbase_hi;
        case EXANET_MBOX_NSLOTS:
            return mb->nslots_reg;
        case EXANET_MBOX_IRQ:
            return mb->irq;
        }
        return 0;
    }
    switch (off) {
    case EXANET_REG_ID:
        return EXANET_ID_MAGIC;
    case EXANET_REG_VERSION:
        return EXANET_HW_VERSION;
    case EXANET_REG_NODE_ID:
        return s->nic.node_id;
    case EXANET_REG_NUM_NODES:
        return s->nic.num_nodes;
    case EXANET_REG_CAPS:
        return EXANET_NUM_PKT_IFACES | EXANET_NUM_MBOX_IFACES << 8 |
               EXANET_PKT_CHANNELS << 16;
    case EXANET_REG_RETX_TIMEOUT_US:
        return s->retx_timeout_us;
    case EXANET_REG_RETX_MAX:
        return s->retx_max;
    case EXANET_REG_IRQ_CAPS:
        return exanet_irq_vectors(s);
    case EXANET_REG_IRQ_MBOX_PENDING:
        return (uint32_t)s->irq_mbox_pending;
    case EXANET_REG_IRQ_MBOX_PENDING + 4:
        return s->irq_mbox_pending >> 32;
    case EXANET_REG_IRQ_RANK_PENDING:
        return s->irq_rank_pending;
    case EXANET_REG_IRQ_COUNT:
        return s->irq_count;
    }
    return 0;
}

static void exanet_ctrl_write32(ExanetState *s, hwaddr off, uint32_t val)
{
    trace_exanet_ctrl_write(s->nic.node_id, off, val);
    if (exanet_rdma_ctrl_owns(off)) {
        exanet_rdma_ctrl_write(s->rdma, off, val);
        return;
    }
    if (off >= EXANET_REG_PKT_BASE(0) &&
        off < EXANET_REG_PKT_BASE(EXANET_NUM_PKT_IFACES)) {
        ExanetPktIface *ifc = &s->pkt[(off - EXANET_REG_PKT_BASE(0)) / 0x20];

        switch (off & 0x1f) {
        case EXANET_PKT_PDID:
            ifc->pdid = val & EXANET_PDID_MAX;
            break;
        case EXANET_PKT_ENABLE:
            if ((val & 1) && !ifc->enabled) {
                exanet_pkt_enable(ifc);
            } else if (!(val & 1) && ifc->enabled) {
                exanet_pkt_disable(ifc);
            }
            break;
        }
        return;
    }
    if (off >= EXANET_REG_MBOX_BASE(0) &&
        off < EXANET_REG_MBOX_BASE(EXANET_NUM_MBOX_IFACES)) {
        unsigned m = (off - EXANET_REG_MBOX_BASE(0)) / 0x40;
        ExanetMbox *mb = &s->mbox[m];

        switch (off & 0x3f) {
        case EXANET_MBOX_PDID:
            mb->pdid = val & EXANET_PDID_MAX;
            exanet_mbox_direct_update(s, m);
            break;
        case EXANET_MBOX_ENABLE:
            exanet_mbox_unexport(s, m);     /* no peer writes from now on */
            if (val & 1) {
                exanet_mbox_enable(s, m);
                exanet_mbox_export(s, m);
            } else {
                mb->enabled = false;    /* no DMA from now on */
                mb->irq = 0;
            }
            break;
        case EXANET_MBOX_IRQ:
            if ((val & EXANET_IRQ_ARMED) && !mb->enabled) {
                EXANET_GUEST_ERR(exanet_err_mbox_irq_disabled, "mailbox %u: "
                                 "IRQ armed while disabled, stays disarmed",
                                 m);
                mb->irq = 0;
                break;
            }
            exanet_irq_arm(PCI_DEVICE(s), &mb->irq, val, "mailbox", m);
            exanet_mbox_direct_update(s, m);
            break;
        case EXANET_MBOX_QBASE_LO:
            mb->qbase_lo = val;
            break;
        case EXANET_MBOX_QBASE_HI:
            mb->qbase_hi = val;
            break;
        case EXANET_MBOX_NSLOTS:
            mb->nslots_reg = val;
            break;
        }
        return;
    }
    switch (off) {
    case EXANET_REG_CTRL:
        if (val & EXANET_CTRL_RESET) {
            exanet_reset_state(s);
        }
        break;
    case EXANET_REG_RETX_TIMEOUT_US:
        if (val) {
            s->retx_timeout_us = MIN(MAX(val, EXANET_RETX_MIN_US),
                                     EXANET_RETX_CAP_US);
        }
        break;
    case EXANET_REG_RETX_MAX:
        s->retx_max = MIN(val, EXANET_RETX_MAX_RETRIES);
        break;
    case EXANET_REG_IRQ_MBOX_PENDING:
        s->irq_mbox_pending &= ~(uint64_t)val;
        break;
    case EXANET_REG_IRQ_MBOX_PENDING + 4:
        s->irq_mbox_pending &= ~((uint64_t)val << 32);
        break;
    case EXANET_REG_IRQ_RANK_PENDING:
        s->irq_rank_pending &= ~val;
        break;
    default:
        EXANET_GUEST_ERR(exanet_err_ctrl_write, "write to RO/unknown BAR0 "
                         "offset 0x%" HWADDR_PRIx, off);
        break;
    }
}

static uint64_t exanet_ctrl_read(void *opaque, hwaddr off, unsigned size)
{
    ExanetState *s = opaque;
    uint64_t v;

    if (exanet_reentered()) {
        return 0;
    }
    v = exanet_ctrl_read32(s, off);

    if (size == 8) {
        v |= (uint64_t)exanet_ctrl_read32(s, off + 4) << 32;
    }
    return v;
}

static void exanet_ctrl_write(void *opaque, hwaddr off, uint64_t val,
                              unsigned size)
{
    ExanetState *s = opaque;

    if (exanet_reentered()) {
        return;
    }
    exanet_ctrl_write32(s, off, val);
    if (size == 8) {
        exanet_ctrl_write32(s, off + 4, val >> 32);
    }
}

/* ------------------------------------------------------------------ */
/* The BARs */

static const MemoryRegionOps exanet_ctrl_ops = {
    .read = exanet_ctrl_read,
    .write = exanet_ctrl_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

static const MemoryRegionOps exanet_pkt_ops = {
    .read = exanet_pkt_read,
    .write = exanet_pkt_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

static const MemoryRegionOps exanet_mbox_ops = {
    .read = exanet_mbox_read,
    .write = exanet_mbox_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* QOM */

static void exanet_exit(PCIDevice *pdev);

static void exanet_realize(PCIDevice *pdev, Error **errp)
{
    ExanetState *s = EXANET(pdev);
    const FabricNicBar bars[] = {
        { EXANET_BAR_CTRL, 0, &s->bar_ctrl, &exanet_ctrl_ops,
          "exanet-ctrl", EXANET_BAR_CTRL_SIZE },
        { EXANET_BAR_PKT, 0, &s->bar_pkt, &exanet_pkt_ops,
          "exanet-pkt", EXANET_BAR_PKT_SIZE },
        { EXANET_BAR_MBOX, 0, &s->bar_mbox, &exanet_mbox_ops,
          "exanet-mbox", EXANET_BAR_MBOX_SIZE },
    };
    FabricQemuOptions opts = {
        .name = "exanet-rx",
        .bulk_rx = exanet_rdma_bulk_rx,
        .kick = exanet_rdma_kick_work,
    };

    if (!fabric_nic_realize(pdev, &s->nic, EXANET_MAX_NODES, bars,
                            ARRAY_SIZE(bars), errp)) {
        return;
    }
    s->rdma = exanet_rdma_new(pdev, s->nic.node_id, s->nic.num_nodes,
                              &s->retx_max);
    exanet_rdma_coll_direct(s->rdma, s->coll_direct);
    pci_register_bar(pdev, EXANET_BAR_RDMA, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     exanet_rdma_bar(s->rdma));
    pci_register_bar(pdev, EXANET_BAR_COLL, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     exanet_rdma_coll_bar(s->rdma));
    if (s->msix) {
        Error *err = NULL;

        /* Its own BAR: the driver never maps it to user space. */
        if (msix_init_exclusive_bar(pdev, EXANET_NUM_IRQ_VECTORS,
                                    EXANET_BAR_MSIX, &err)) {
            warn_reportf_err(err, "exanet: no MSI-X, interrupts disabled: ");
            s->msix = false;
        } else {
            for (unsigned v = 0; v < EXANET_NUM_IRQ_VECTORS; v++) {
                msix_vector_use(pdev, v);
            }
            fabric_nic_parkable(&pdev->msix_table_mmio);
            fabric_nic_parkable(&pdev->msix_pba_mmio);
        }
    }

    s->dedup = g_hash_table_new_full(g_direct_hash, g_direct_equal,
                                     NULL, g_free);
    for (unsigned i = 0; i < EXANET_NUM_PKT_IFACES; i++) {
        for (unsigned c = 0; c < EXANET_PKT_CHANNELS; c++) {
            ExanetChan *ch = &s->pkt[i].chan[c];

            ch->s = s;
            ch->iface = i;
            ch->chan = c;
        }
    }
    s->retx_timer = timer_new_ns(QEMU_CLOCK_REALTIME, exanet_retx_timer, s);
    exanet_reset_state(s);
    /* Last: from here on packets may arrive (under the BQL). */
    opts.bulk_opaque = s->rdma;
    if (!fabric_nic_open(&s->nic, &opts, exanet_rx, s, errp)) {
        exanet_exit(pdev);
        return;
    }
    fabric_nic_direct_open(&s->nic);
    if (s->nic.fq) {
        s->corrupt_base = exanet_fabric_bad(s);
        exanet_rdma_set_fabric(s->rdma, &s->nic);
    }
}

static void exanet_exit(PCIDevice *pdev)
{
    ExanetState *s = EXANET(pdev);

    /* First stop the receive side (may drop the BQL to join its thread). */
    exanet_rdma_free(s->rdma);
    fabric_nic_close(&s->nic);
    if (s->retx_timer) {
        timer_free(s->retx_timer);
        s->retx_timer = NULL;
    }
    if (s->dedup) {
        g_hash_table_destroy(s->dedup);
        s->dedup = NULL;
    }
    if (msix_present(pdev)) {
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
    }
}

static void exanet_qdev_reset(DeviceState *dev)
{
    exanet_reset_state(EXANET(dev));
}

static Property exanet_own_properties[] = {
    DEFINE_PROP_BOOL("msix", ExanetState, msix, true),
    /* Collective unit: largest group that uses the direct exchange */
    DEFINE_PROP_UINT32("coll-direct-members", ExanetState, coll_direct, 3),
    DEFINE_PROP_END_OF_LIST(),
};

/* the fabric properties (fabric-nic.h), then ours */
static Property exanet_properties[FABRIC_NIC_NPROPS +
                                  ARRAY_SIZE(exanet_own_properties)];

static const VMStateDescription exanet_vmstate = {
    .name = "exanet",
    .unmigratable = 1,      /* fabric state lives outside the VM */
};

static void exanet_get_mbox_tail_reads(Object *obj, Visitor *v,
                                       const char *name, void *opaque,
                                       Error **errp)
{
    visit_type_uint64(v, name, &EXANET(obj)->mbox_tail_reads, errp);
}

static void exanet_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = exanet_realize;
    k->exit = exanet_exit;
    k->vendor_id = EXANET_PCI_VENDOR_ID;
    k->device_id = EXANET_PCI_DEVICE_ID;
    k->revision = EXANET_HW_VERSION;
    k->class_id = PCI_CLASS_NETWORK_OTHER;
    dc->desc = "ExaNet NI (packetizer + mailbox + RDMA engine)";
    dc->reset = exanet_qdev_reset;
    dc->vmsd = &exanet_vmstate;
    fabric_nic_props(exanet_properties, offsetof(ExanetState, nic),
                     exanet_own_properties);
    device_class_set_props(dc, exanet_properties);
    FABRIC_NIC_PARK_CLASS_INIT(klass, ExanetState, nic);
    FABRIC_NIC_LINKS_CLASS_INIT(klass, ExanetState, nic);
    fabric_nic_direct_class_init(klass, offsetof(ExanetState, nic));
    object_class_property_add(klass, "mbox-tail-reads", "uint64",
                              exanet_get_mbox_tail_reads, NULL, NULL, NULL);
    object_class_property_set_description(klass, "mbox-tail-reads",
        "MMIO reads of a mailbox TAIL (the NI poll of receiving software)");
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void exanet_instance_init(Object *obj)
{
    fabric_park_init(&EXANET(obj)->nic.park, TYPE_EXANET);
}

static const TypeInfo exanet_info = {
    .name = TYPE_EXANET,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(ExanetState),
    .instance_init = exanet_instance_init,
    .class_init = exanet_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void exanet_register_types(void)
{
    type_register_static(&exanet_info);
}

type_init(exanet_register_types)
