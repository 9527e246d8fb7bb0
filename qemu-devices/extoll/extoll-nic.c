/*
 * EXTOLL NIC: emulated PCI device (VELO + RMA + ATU).
 *
 * The register map and every format shared with the driver and the
 * libraries are in uapi/extoll_hw.h; Documentation/extoll/hardware.md
 * describes the behaviour.  Packets between nodes use the shared host
 * fabric (common/fabric.[ch], common/fabric-qemu.[ch]); on top of it the
 * device runs one reliable, in-order stream per (this node -> peer node)
 * pair: go-back-N with sequence numbers, cumulative ACKs, NACK when the
 * receiver has no room (ring / notification queue full) and retransmission
 * on timeout, within a budget (retx-max): a stream that stays silent that
 * long fails and reports what it held to the software that posted it
 * (ext_tx_fail(), extoll-stream.c).  RMA commands are also followed until
 * their answer arrives (ExtWait), so that a target that took a command and
 * then fell silent ends it with an error too.  Packets to our own node take
 * the same path through a loopback queue drained by a bottom half.
 *
 * DATA packets to other nodes travel over the fabric's shared-memory bulk
 * rings (one per ordered node pair, as the ExaNet RDMA engine's blocks),
 * so puts and get responses move in chunks of EXT_CHUNK bytes; ACK, NACK
 * and RESUME stay datagrams.  A full ring stalls the stream until the
 * receiver drained it.  A receiver that NACKed a request for lack of room
 * watches that room and sends RESUME as soon as the guest freed it.
 *
 * Locking: MMIO callbacks, fabric receive (thread under the BQL or main
 * loop), timers and bottom halves all run under the BQL.
 *
 * The parts of the model: extoll-int.h (device state, wire format, what
 * the parts share), extoll-atu.c (DMA, protection IDs, ATU),
 * extoll-noti.c (notification queues), extoll-stream.c (reliable stream,
 * retransmission, failures, receive dispatch), extoll-velo.c (VELO),
 * extoll-rma.c (RMA origin and target); this file: BARs and MMIO,
 * reset, properties, QOM.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/visitor.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/guest-random.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"

#include "extoll-int.h"
#include "trace.h"

unsigned extoll_dma_depth;   /* DMA in progress, see fabric-nic.h */

/* ------------------------------------------------------------------ */
/* Reset */

/* A new owner of the VPID's VELO part never sees the previous one's bytes. */
/*
 * Publish the translation of a queue of entries entries at guest address
 * base, so that peers write into it themselves (fabric-direct.h); *seen
 * starts at the record's delivered count.  0, or -errno (no shared RAM, a
 * page outside RAM): the queue stays on the rings.
 */
int extoll_dq_export(ExtollState *s, unsigned rec, uint64_t base,
                     uint32_t entry_size, uint32_t entries,
                     uint32_t status_off, uint16_t prot, uint64_t *seen)
{
    uint64_t len = ROUND_UP((uint64_t)entry_size * entries,
                            FABRIC_DIRECT_PAGE);
    g_autofree uint64_t *pages = g_new(uint64_t, len / FABRIC_DIRECT_PAGE);
    int r = -ENODEV;

    if (fabric_nic_direct_translate(PCI_DEVICE(s), base, len, pages)) {
        r = fabric_direct_export(s->nic.dd, rec, entry_size, entries,
                                 status_off, prot, pages,
                                 len / FABRIC_DIRECT_PAGE);
    }
    *seen = fabric_direct_queue(s->nic.dd, rec)->delivered;
    return r;
}

/* Entries peers wrote through record rec since *seen; *wp: the next one. */
uint64_t extoll_dq_sync(ExtollState *s, unsigned rec, uint32_t entries,
                        uint64_t *seen, uint32_t *wp)
{
    struct fabric_direct_queue *dq = fabric_direct_queue(s->nic.dd, rec);
    uint64_t n = qatomic_read(&dq->delivered) - *seen;

    *seen += n;
    *wp = qatomic_read(&dq->wp) & (entries - 1);
    return n;
}

static void ext_velo_win_clear(ExtollState *s, unsigned vi)
{
    if (s->velo_win) {
        memset(s->velo_win + EXTOLL_VELO_WIN_PAGE(vi), 0, EXTOLL_HW_PAGE_SIZE);
    }
}

static void ext_vpid_velo_reset(ExtollState *s, ExtVpid *v)
{
    v->velo_hdr_valid = false;
    v->velo_mask = 0;
    v->velo_credits = s->velo_credits_max;
    v->velo_gen++;
}

static void ext_vpid_rma_reset(ExtollState *s, ExtVpid *v)
{
    extoll_cmdq_clear(s, v);
    g_free(v->locks);       /* locks start at 0 for the next owner */
    v->locks = NULL;
    memset(v->rma_mask, 0, sizeof(v->rma_mask));
    v->rma_pending = 0;
    v->rma_gen++;
    extoll_backlog_clear(v);
}

static void ext_reset_state(ExtollState *s)
{
    GByteArray *b;
    uint32_t e;

    while ((b = g_queue_pop_head(&s->loopq))) {
        g_byte_array_free(b, true);
    }
    for (uint32_t n = 0; n < s->nic.num_nodes && s->peers; n++) {
        if (s->peers[n]) {
            extoll_peer_free(s->peers[n]);
            s->peers[n] = NULL;
        }
    }
    for (unsigned i = 0; i < EXTOLL_NUM_VPIDS; i++) {
        ExtVpid *v = &s->vpid[i];

        uint8_t vg = v->velo_gen + 1, rg = v->rma_gen + 1;

        extoll_velo_unexport(s, i);
        extoll_noti_unexport(s, i);
        /* generations survive resets so late replies never match */
        extoll_backlog_clear(v);
        extoll_cmdq_clear(s, v);
        g_free(v->locks);
        memset(v, 0, sizeof(*v));
        g_queue_init(&v->backlog);
        g_queue_init(&v->cmdq);
        v->velo_credits = s->velo_credits_max;
        v->velo_gen = vg;
        v->rma_gen = rg;
        ext_velo_win_clear(s, i);
    }
    s->atu_base = 0;
    s->atu_entries = 0;
    extoll_atu_fence(s);
    s->txq_bytes = 0;
    do {
        qemu_guest_getrandom_nofail(&e, sizeof(e));
    } while (e == 0 || e == s->epoch);
    s->epoch = e;
}

/* ------------------------------------------------------------------ */
/* BAR0 */

static bool ext_reentered(void)
{
    return fabric_nic_reentered(extoll_dma_depth, TYPE_EXTOLL);
}

static bool ext_pow2_in(uint32_t v, uint32_t lo, uint32_t hi)
{
    return v >= lo && v <= hi && !(v & (v - 1));
}

static uint64_t ext_vpid_read(ExtollState *s, unsigned vi, hwaddr r)
{
    ExtVpid *v = &s->vpid[vi];

    extoll_velo_sync(s, vi);
    extoll_noti_sync(s, vi);
    switch (r) {
    case EXTOLL_VPID_CTRL:
        return v->ctrl;
    case EXTOLL_VPID_VELO_RING:
        return v->velo_ring;
    case EXTOLL_VPID_VELO_RING + 4:
        return v->velo_ring >> 32;
    case EXTOLL_VPID_VELO_SLOTS:
        return v->velo_slots;
    case EXTOLL_VPID_VELO_WP:
        return v->velo_wp;
    case EXTOLL_VPID_NOTIQ:
        return v->notiq;
    case EXTOLL_VPID_NOTIQ + 4:
        return v->notiq >> 32;
    case EXTOLL_VPID_NOTIQ_ENTRIES:
        return v->notiq_entries;
    case EXTOLL_VPID_NOTIQ_WP:
        return v->notiq_wp;
    case EXTOLL_VPID_VELO_RX_COUNT:
        return v->velo_rx_count;
    case EXTOLL_VPID_RMA_PENDING:
        return v->rma_pending;
    case EXTOLL_VPID_VELO_PROT:
        return v->velo_prot;
    case EXTOLL_VPID_RMA_PROT:
        return v->rma_prot;
    }
    return 0;
}

static void ext_set64(uint64_t *reg, hwaddr half, uint64_t val, unsigned size)
{
    if (size == 8) {
        *reg = val;
    } else if (half) {
        *reg = (*reg & 0xffffffffull) | (val << 32);
    } else {
        *reg = (*reg & ~0xffffffffull) | (uint32_t)val;
    }
}

static void ext_vpid_write(ExtollState *s, unsigned vi, hwaddr r,
                           uint64_t val, unsigned size)
{
    ExtVpid *v = &s->vpid[vi];
    bool velo_rx_on = v->ctrl & EXTOLL_VPID_VELO_RX;
    bool rma_on = v->ctrl & EXTOLL_VPID_RMA;

    switch (r) {
    case EXTOLL_VPID_CTRL: {
        uint32_t nv = val & (EXTOLL_VPID_VELO_RX | EXTOLL_VPID_VELO_TX |
                             EXTOLL_VPID_RMA | EXTOLL_VPID_RMA_PHYS);

        if ((nv & EXTOLL_VPID_VELO_RX) && !velo_rx_on) {
            if (!v->velo_slots || (v->velo_ring & 0xfff)) {
                EXTOLL_GUEST_ERR(extoll_err_velo_ring,
                                 "VPID %u VELO ring not configured", vi);
                nv &= ~EXTOLL_VPID_VELO_RX;
            } else {
                v->velo_wp = 0;
                v->velo_rx_count = 0;
            }
        }
        if (!(nv & EXTOLL_VPID_VELO_RX)) {
            extoll_velo_unexport(s, vi);
        } else if (!velo_rx_on) {
            extoll_velo_export(s, vi);
        }
        if ((nv ^ v->ctrl) & EXTOLL_VPID_VELO_TX) {
            ext_vpid_velo_reset(s, v);
            ext_velo_win_clear(s, vi);
        }
        if ((nv & EXTOLL_VPID_RMA) && !rma_on) {
            if (!v->notiq_entries || (v->notiq & 0xfff)) {
                EXTOLL_GUEST_ERR(extoll_err_notiq,
                                 "VPID %u notification queue not configured",
                                 vi);
                nv &= ~(EXTOLL_VPID_RMA | EXTOLL_VPID_RMA_PHYS);
            } else {
                v->notiq_wp = 0;
                ext_vpid_rma_reset(s, v);
            }
        } else if (!(nv & EXTOLL_VPID_RMA) && rma_on) {
            ext_vpid_rma_reset(s, v);
        }
        if (!(nv & EXTOLL_VPID_RMA)) {
            nv &= ~EXTOLL_VPID_RMA_PHYS;
            extoll_noti_unexport(s, vi);
        }
        v->ctrl = nv;
        if ((nv & EXTOLL_VPID_RMA) && !rma_on) {
            extoll_noti_export(s, vi);
        }
        return;
    }
    case EXTOLL_VPID_VELO_RING:
    case EXTOLL_VPID_VELO_RING + 4:
        if (!velo_rx_on) {
            ext_set64(&v->velo_ring, r - EXTOLL_VPID_VELO_RING, val, size);
        }
        return;
    case EXTOLL_VPID_VELO_SLOTS:
        if (!velo_rx_on) {
            v->velo_slots = ext_pow2_in(val, EXTOLL_VELO_MIN_SLOTS,
                                        EXTOLL_VELO_MAX_SLOTS) ? val : 0;
        }
        return;
    case EXTOLL_VPID_NOTIQ:
    case EXTOLL_VPID_NOTIQ + 4:
        if (!rma_on) {
            ext_set64(&v->notiq, r - EXTOLL_VPID_NOTIQ, val, size);
        }
        return;
    case EXTOLL_VPID_NOTIQ_ENTRIES:
        if (!rma_on) {
            v->notiq_entries = ext_pow2_in(val, EXTOLL_NOTIQ_MIN_ENTRIES,
                                           EXTOLL_NOTIQ_MAX_ENTRIES) ? val : 0;
        }
        return;
    /*
     * Protection IDs: writable at any time, taken by every packet checked
     * or sent from then on (RMA commands already taken keep theirs); reset
     * to 0 only by a device reset.
     */
    case EXTOLL_VPID_VELO_PROT:
        v->velo_prot = val & EXTOLL_PROT_MASK;
        if (v->velo_direct) {
            fabric_direct_set_prot(s->nic.dd, vi, v->velo_prot);
        }
        return;
    case EXTOLL_VPID_RMA_PROT:
        v->rma_prot = val & EXTOLL_PROT_MASK;
        if (v->noti_direct) {
            fabric_direct_set_prot(s->nic.dd, EXT_NOTI_Q(vi), v->rma_prot);
        }
        return;
    }
    EXTOLL_GUEST_ERR(extoll_err_vpid_reg, "write to VPID register 0x%x",
                     (unsigned)r);
}

static uint64_t ext_ctrl_read(void *opaque, hwaddr off, unsigned size)
{
    ExtollState *s = opaque;
    uint64_t v = 0;
    hwaddr base = off & ~7ull;

    if (ext_reentered()) {
        return 0;
    }
    /* any BAR0 read ends the ATU entries the driver cleared before it */
    extoll_atu_fence(s);
    if (off >= EXTOLL_REG_VPID(0) &&
        off < EXTOLL_REG_VPID(EXTOLL_NUM_VPIDS)) {
        unsigned vi = (off - EXTOLL_REG_VPID(0)) / 0x40;
        hwaddr r = (off - EXTOLL_REG_VPID(0)) % 0x40;

        v = ext_vpid_read(s, vi, r);
        if (size == 8 && !(r & 7)) {
            if (r == EXTOLL_VPID_VELO_RING) {
                return s->vpid[vi].velo_ring;
            }
            if (r == EXTOLL_VPID_NOTIQ) {
                return s->vpid[vi].notiq;
            }
            v = (uint32_t)v | (ext_vpid_read(s, vi, r + 4) << 32);
        }
        return size == 8 ? v : (uint32_t)v;
    }
    if (FABRIC_NIC_OWNS_LINKS(off)) {
        return fabric_links_read(&s->nic, off - EXA_TORUS_BASE, size);
    }
    if (off >= EXTOLL_REG_COUNTER(0) &&
        off < EXTOLL_REG_COUNTER(EXTOLL_NUM_COUNTERS)) {
        if ((base - EXTOLL_REG_COUNTER(0)) / 8 == EXTOLL_CNT_VELO_RX) {
            for (unsigned vi = 0; vi < EXTOLL_NUM_VPIDS; vi++) {
                extoll_velo_sync(s, vi);    /* what peers wrote */
            }
        }
        v = s->counters[(base - EXTOLL_REG_COUNTER(0)) / 8];
        if (size == 8) {
            return v;
        }
        return fabric_nic_reg_part(v, off, 4);
    }
    switch (off) {
    case EXTOLL_REG_ID:
        v = EXTOLL_ID_MAGIC;
        break;
    case EXTOLL_REG_VERSION:
        v = EXTOLL_HW_VERSION;
        break;
    case EXTOLL_REG_NODE_ID:
        v = s->nic.node_id;
        break;
    case EXTOLL_REG_NUM_NODES:
        v = s->nic.num_nodes;
        break;
    case EXTOLL_REG_NUM_VPIDS:
        v = EXTOLL_NUM_VPIDS;
        break;
    case EXTOLL_REG_RMA_FRAG:
        v = EXTOLL_RMA_FRAG_SIZE;
        break;
    case EXTOLL_REG_VELO_SLOT:
        v = EXTOLL_VELO_SLOT_SIZE;
        break;
    case EXTOLL_REG_ATU_BASE:
        v = size == 8 ? s->atu_base : (uint32_t)s->atu_base;
        break;
    case EXTOLL_REG_ATU_BASE + 4:
        v = s->atu_base >> 32;
        break;
    case EXTOLL_REG_ATU_ENTRIES:
        v = s->atu_entries;
        break;
    case EXTOLL_REG_VELO_CREDITS:
        v = s->velo_credits_max;
        break;
    case EXTOLL_REG_RMA_CMDQ:
        v = EXTOLL_RMA_CMDQ_DEPTH;
        break;
    case EXTOLL_REG_RETX_MAX:
        v = s->retx_max;
        break;
    }
    return v;
}

static void ext_ctrl_write(void *opaque, hwaddr off, uint64_t val,
                           unsigned size)
{
    ExtollState *s = opaque;

    if (ext_reentered()) {
        return;
    }
    trace_extoll_ctrl_write(s->nic.node_id, off, val, size);
    if (off >= EXTOLL_REG_VPID(0) &&
        off < EXTOLL_REG_VPID(EXTOLL_NUM_VPIDS)) {
        ext_vpid_write(s, (off - EXTOLL_REG_VPID(0)) / 0x40,
                       (off - EXTOLL_REG_VPID(0)) % 0x40, val, size);
        return;
    }
    switch (off) {
    case EXTOLL_REG_CTRL:
        if (val & EXTOLL_CTRL_RESET) {
            ext_reset_state(s);
        }
        return;
    case EXTOLL_REG_ATU_BASE:
    case EXTOLL_REG_ATU_BASE + 4:
        ext_set64(&s->atu_base, off - EXTOLL_REG_ATU_BASE, val, size);
        s->atu_base &= ~0xfffull;
        extoll_atu_fence(s);
        return;
    case EXTOLL_REG_ATU_ENTRIES:
        s->atu_entries = MIN((uint32_t)val, EXTOLL_ATU_MAX_ENTRIES);
        extoll_atu_fence(s);
        return;
    }
    EXTOLL_GUEST_ERR(extoll_err_ctrl_reg, "write to ctrl 0x%x",
                     (unsigned)off);
}

/* ------------------------------------------------------------------ */
/* BAR2: VELO pages */

/*
 * Software waiting for VELO credits or messages reads CREDITS (libvelo2
 * does when its mailbox is empty): the read first hands up to this many
 * waiting fabric packets to the device in the polling vCPU (fabric-qemu.h).
 */
#define EXT_MMIO_RX_BUDGET 16

/*
 * The poll of a waiting process: deliver what waits (fabric and own-node
 * queue), then acknowledge it from here (the ACK returns the sender's
 * credits) instead of waiting for the main loop's bottom halves.
 */
static void ext_vcpu_poll(ExtollState *s)
{
    s->vcpu_polling = true;
    if (!g_queue_is_empty(&s->loopq)) {
        extoll_loop_bh(s);
    }
    fabric_nic_poll(&s->nic, EXT_MMIO_RX_BUDGET);
    s->vcpu_polling = false;
    if (!g_queue_is_empty(&s->ack_peers)) {
        extoll_ack_bh(s);
    }
}

static uint64_t ext_velo_read(void *opaque, hwaddr off, unsigned size)
{
    ExtollState *s = opaque;
    ExtVpid *v = &s->vpid[off / EXTOLL_HW_PAGE_SIZE];
    hwaddr r = off % EXTOLL_HW_PAGE_SIZE;

    if (ext_reentered() || size != 8) {
        return 0;
    }
    if (r == EXTOLL_VELO_FEATURES) {
        return v->velo_direct ? EXTOLL_VELO_F_DIRECT : 0;
    }
    if (r == EXTOLL_VELO_CREDITS) {
        s->velo_credit_reads++;
        ext_vcpu_poll(s);
        extoll_velo_held_poll(s);
        extoll_velo_sync(s, off / EXTOLL_HW_PAGE_SIZE);
        /*
         * No message for this VPID since its last such read, credits in
         * hand: a receiver that found its ring empty (a sender with
         * credits sends next, which ends the spin).  It may park
         * (fabric-park.h).  A sender out of credits does not: its
         * receiver may be a process on this very vCPU, which a park would
         * hold up (it keeps the sched_yield() below).
         */
        if (v->velo_rx_count == v->velo_rx_polled &&
            (!(v->ctrl & EXTOLL_VPID_VELO_TX) || v->velo_credits)) {
            fabric_nic_poll_idle(&s->nic);
        } else {
            fabric_nic_poll_found();
        }
        v->velo_rx_polled = v->velo_rx_count;
        if (!(v->ctrl & EXTOLL_VPID_VELO_TX) || v->velo_credits) {
            return (v->ctrl & EXTOLL_VPID_VELO_TX) ? v->velo_credits : 0;
        }
        /*
         * A sender out of credits spins on this register until the
         * receivers (other emulator processes on the same host CPUs)
         * have taken its messages: give them the host CPU once per poll.
         */
        trace_extoll_velo_credit_wait(s->nic.node_id, off / EXTOLL_HW_PAGE_SIZE);
        sched_yield();
        return 0;
    }
    if (r == EXTOLL_VELO_DROPS) {
        return v->velo_drops;
    }
    return 0;
}

static void ext_velo_write(void *opaque, hwaddr off, uint64_t val,
                           unsigned size)
{
    ExtollState *s = opaque;
    unsigned vi = off / EXTOLL_HW_PAGE_SIZE;
    ExtVpid *v = &s->vpid[vi];
    hwaddr r = off % EXTOLL_HW_PAGE_SIZE;

    if (ext_reentered() || size != 8) {
        return;
    }
    trace_extoll_velo_store(s->nic.node_id, vi, r, val);
    fabric_nic_poll_found();    /* a sender at work does not wait */
    if (r == EXTOLL_VELO_WIN_SEND) {
        extoll_velo_win_send(s, vi, val);
        return;
    }
    if (r == EXTOLL_VELO_HDR) {
        v->velo_hdr = val;
        v->velo_hdr_valid = true;
    } else if (r >= EXTOLL_VELO_DATA(0) && r < EXTOLL_VELO_DATA(15)) {
        unsigned k = (r - EXTOLL_VELO_DATA(0)) / 8;

        v->velo_data[k] = val;
        v->velo_mask |= 1u << k;
    } else {
        return;
    }
    extoll_velo_check(s, vi);
}

/* ------------------------------------------------------------------ */
/* BAR4: RMA requester pages */

static uint64_t ext_rmap_read(void *opaque, hwaddr off, unsigned size)
{
    ExtollState *s = opaque;
    ExtVpid *v = &s->vpid[off / EXTOLL_RMA_VPID_STRIDE];
    hwaddr r = off % EXTOLL_HW_PAGE_SIZE;

    if (ext_reentered() || size != 8) {
        return 0;
    }
    if (r == EXTOLL_RMA_CMD_FREE) {
        return extoll_rma_free(v);
    }
    if (r == EXTOLL_RMA_CMD_DROPS) {
        return v->rma_drops;
    }
    if (r == EXTOLL_RMA_FEATURES) {
        return v->noti_direct ? EXTOLL_RMA_F_DIRECT : 0;
    }
    if (r == EXTOLL_RMA_NOTI_COUNT) {
        /* A process found its notification queue empty (may park). */
        ext_vcpu_poll(s);
        extoll_noti_sync(s, v - s->vpid);
        if (v->noti_count == v->noti_polled) {
            /* may park without the BQL: the count can move meanwhile */
            fabric_nic_poll_idle(&s->nic);
        } else {
            fabric_nic_poll_found();
        }
        if (v->noti_polled != v->noti_count) {
            /* only polls that find something: a waiting guest polls a lot */
            trace_extoll_rma_noti_poll(s->nic.node_id, v - s->vpid,
                                       v->noti_count);
            v->noti_polled = v->noti_count;
        }
        return v->noti_count;
    }
    return 0;
}

static void ext_rmap_write(void *opaque, hwaddr off, uint64_t val,
                           unsigned size)
{
    ExtollState *s = opaque;
    unsigned vi = off / EXTOLL_RMA_VPID_STRIDE;
    unsigned pg = (off % EXTOLL_RMA_VPID_STRIDE) / EXTOLL_HW_PAGE_SIZE;
    hwaddr r = off % EXTOLL_HW_PAGE_SIZE;
    ExtVpid *v = &s->vpid[vi];

    if (ext_reentered() || size != 8 || r > EXTOLL_RMA_CMD_WORD(2)) {
        return;
    }
    trace_extoll_rma_store(s->nic.node_id, vi, pg, r / 8, val);
    fabric_nic_poll_found();    /* a requester at work does not wait */
    v->rma_cmd[pg][r / 8] = val;
    v->rma_mask[pg] |= 1u << (r / 8);
    if (v->rma_mask[pg] == 7) {
        extoll_rma_cmd(s, vi, pg);
    }
}

static const MemoryRegionOps ext_ctrl_ops = {
    .read = ext_ctrl_read,
    .write = ext_ctrl_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

static const MemoryRegionOps ext_velo_ops = {
    .read = ext_velo_read,
    .write = ext_velo_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

static const MemoryRegionOps ext_rmap_ops = {
    .read = ext_rmap_read,
    .write = ext_rmap_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */

static void ext_exit(PCIDevice *pdev);

static void ext_realize(PCIDevice *pdev, Error **errp)
{
    ExtollState *s = EXTOLL(pdev);
    const FabricNicBar bars[] = {
        { EXTOLL_BAR_CTRL, 0, &s->bar_ctrl, &ext_ctrl_ops,
          "extoll-ctrl", EXTOLL_BAR_CTRL_SIZE },
        { EXTOLL_BAR_VELO, 0, &s->bar_velo, &ext_velo_ops,
          "extoll-velo", EXTOLL_BAR_VELO_SIZE },
        { EXTOLL_BAR_RMA, PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar_rma,
          &ext_rmap_ops, "extoll-rma", EXTOLL_BAR_RMA_SIZE },
    };
    const FabricQemuOptions opts = {
        .name = "extoll-rx", .bulk_rx = extoll_bulk_rx, .bulk_opaque = s,
    };
    Error *err = NULL;

    if (s->velo_credits_max < 1 ||
        s->velo_credits_max > EXTOLL_VELO_TX_CREDITS) {
        error_setg(errp, "extoll: velo-credits must be 1..%u",
                   EXTOLL_VELO_TX_CREDITS);
        return;
    }
    if (s->retx_max < 1 || s->retx_max > EXT_RETX_MAX_LIMIT) {
        error_setg(errp, "extoll: retx-max must be 1..%u", EXT_RETX_MAX_LIMIT);
        return;
    }
    /*
     * A stream fails after the timeouts of retries 0 .. retx_max; an answer
     * is given up a last timeout later than the target's response stream
     * would give up sending it (same budget on every node assumed).
     */
    s->answer_wait_ns = EXT_RTO_MAX_NS;
    for (unsigned r = 0; r <= s->retx_max; r++) {
        s->answer_wait_ns += extoll_rto_ns(r);
    }
    if (!fabric_nic_realize(pdev, &s->nic, EXTOLL_MAX_NODES, bars,
                            ARRAY_SIZE(bars), errp)) {
        return;
    }
    /*
     * VELO send windows: plain RAM, so the guest's payload stores cost no
     * device access (TCG stores to RAM directly); only the doorbell does.
     */
    memory_region_init_ram_nomigrate(&s->bar_velo_win, OBJECT(pdev),
                                     "extoll-velo-win",
                                     EXTOLL_BAR_VELO_WIN_SIZE, &err);
    if (err) {
        error_propagate(errp, err);
        return;
    }
    s->velo_win = memory_region_get_ram_ptr(&s->bar_velo_win);
    pci_register_bar(pdev, EXTOLL_BAR_VELO_WIN,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->bar_velo_win);
    s->peers = g_new0(ExtPeer *, s->nic.num_nodes);
    g_queue_init(&s->loopq);
    s->loop_bh = qemu_bh_new(extoll_loop_bh, s);
    g_queue_init(&s->ack_peers);
    s->ack_bh = qemu_bh_new(extoll_ack_bh, s);
    s->poll_timer = timer_new_ns(QEMU_CLOCK_REALTIME, extoll_poll_timer, s);
    g_queue_init(&s->nack_peers);
    s->resume_timer = timer_new_ns(QEMU_CLOCK_REALTIME, extoll_resume_timer, s);
    s->cmdq_bh = qemu_bh_new(extoll_cmdq_bh, s);
    for (unsigned i = 0; i < EXTOLL_NUM_VPIDS; i++) {
        g_queue_init(&s->vpid[i].backlog);
        g_queue_init(&s->vpid[i].cmdq);
    }
    ext_reset_state(s);
    if (!fabric_nic_open(&s->nic, &opts, extoll_rx, s, errp)) {
        ext_exit(pdev);
        return;
    }
    fabric_nic_direct_open(&s->nic);
}

static void ext_exit(PCIDevice *pdev)
{
    ExtollState *s = EXTOLL(pdev);
    GByteArray *b;

    fabric_nic_close(&s->nic);
    if (s->peers) {
        for (uint32_t n = 0; n < s->nic.num_nodes; n++) {
            if (s->peers[n]) {
                extoll_peer_free(s->peers[n]);
            }
        }
        g_free(s->peers);
        s->peers = NULL;
    }
    for (unsigned i = 0; i < EXTOLL_NUM_VPIDS; i++) {
        extoll_backlog_clear(&s->vpid[i]);
        extoll_cmdq_clear(s, &s->vpid[i]);
        g_free(s->vpid[i].locks);
        s->vpid[i].locks = NULL;
    }
    while ((b = g_queue_pop_head(&s->loopq))) {
        g_byte_array_free(b, true);
    }
    if (s->loop_bh) {
        qemu_bh_delete(s->loop_bh);
        s->loop_bh = NULL;
    }
    if (s->ack_bh) {
        qemu_bh_delete(s->ack_bh);
        s->ack_bh = NULL;
    }
    if (s->cmdq_bh) {
        qemu_bh_delete(s->cmdq_bh);
        s->cmdq_bh = NULL;
    }
    if (s->poll_timer) {
        timer_free(s->poll_timer);
        s->poll_timer = NULL;
    }
    if (s->resume_timer) {
        timer_free(s->resume_timer);
        s->resume_timer = NULL;
    }
}

static void ext_qdev_reset(DeviceState *dev)
{
    ext_reset_state(EXTOLL(dev));
}

static Property ext_own_properties[] = {
    DEFINE_PROP_UINT32("velo-credits", ExtollState, velo_credits_max,
                       EXTOLL_VELO_TX_CREDITS),
    DEFINE_PROP_UINT32("retx-max", ExtollState, retx_max,
                       EXTOLL_DEFAULT_RETX_MAX),
    DEFINE_PROP_END_OF_LIST(),
};

/* the fabric properties (fabric-nic.h), then ours */
static Property ext_properties[FABRIC_NIC_NPROPS +
                               ARRAY_SIZE(ext_own_properties)];

static const VMStateDescription ext_vmstate = {
    .name = "extoll",
    .unmigratable = 1,
};

static void ext_get_velo_credit_reads(Object *obj, Visitor *v,
                                      const char *name, void *opaque,
                                      Error **errp)
{
    visit_type_uint64(v, name, &EXTOLL(obj)->velo_credit_reads, errp);
}

static void ext_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = ext_realize;
    k->exit = ext_exit;
    k->vendor_id = EXTOLL_PCI_VENDOR_ID;
    k->device_id = EXTOLL_PCI_DEVICE_ID;
    k->revision = EXTOLL_HW_VERSION;
    k->class_id = PCI_CLASS_NETWORK_OTHER;
    dc->desc = "EXTOLL NIC (VELO + RMA + ATU)";
    dc->reset = ext_qdev_reset;
    dc->vmsd = &ext_vmstate;
    fabric_nic_props(ext_properties, offsetof(ExtollState, nic),
                     ext_own_properties);
    device_class_set_props(dc, ext_properties);
    FABRIC_NIC_PARK_CLASS_INIT(klass, ExtollState, nic);
    FABRIC_NIC_LINKS_CLASS_INIT(klass, ExtollState, nic);
    fabric_nic_direct_class_init(klass, offsetof(ExtollState, nic));
    object_class_property_add(klass, "velo-credit-reads", "uint64",
                              ext_get_velo_credit_reads, NULL, NULL, NULL);
    object_class_property_set_description(klass, "velo-credit-reads",
        "MMIO reads of EXTOLL_VELO_CREDITS (the NI poll of VELO software)");
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void ext_instance_init(Object *obj)
{
    fabric_park_init(&EXTOLL(obj)->nic.park, TYPE_EXTOLL);
}

static const TypeInfo ext_info = {
    .name = TYPE_EXTOLL,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(ExtollState),
    .instance_init = ext_instance_init,
    .class_init = ext_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void ext_register_types(void)
{
    type_register_static(&ext_info);
}

type_init(ext_register_types)
