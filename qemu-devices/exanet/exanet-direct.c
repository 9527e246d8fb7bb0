/*
 * ExaNet NI: direct delivery of packetizer messages (Documentation/fabric.md
 * section 9).  The receiving side exports each enabled mailbox (its IOMMU
 * translation, PDID, write index and the consumer's head) as a PHASE queue
 * of fabric-direct.h; the sending side writes a message into the target's
 * mailbox itself and completes its channel at once (ACK, or NACK FULL as
 * the target would answer), without a packet.  Part of the NI core
 * (exanet-ni.c; private header exanet-ni.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/pci/pci.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet_coll.h"
#include "fabric-nic.h"
#include "exanet-int.h"
#include "exanet-ni.h"
#include "trace.h"

/* The slot the NI writes for a message (everything but the flags word). */
void exanet_mbox_slot_fill(uint8_t *slot, const uint8_t *payload,
                           uint16_t plen, uint32_t src, uint16_t iface,
                           uint8_t chan, uint32_t seq)
{
    memset(slot, 0, EXANET_MBOX_SLOT_SIZE);
    memcpy(slot, payload, plen);
    stl_le_p(slot + offsetof(struct exanet_mbox_slot, len), plen);
    stl_le_p(slot + offsetof(struct exanet_mbox_slot, src_node), src);
    stw_le_p(slot + offsetof(struct exanet_mbox_slot, src_iface), iface);
    slot[offsetof(struct exanet_mbox_slot, src_chan)] = chan;
    stl_le_p(slot + offsetof(struct exanet_mbox_slot, seq), seq);
}

/*
 * Mailbox m was enabled: publish its queue for peers' NIs.  A queue that
 * does not start on a page, or lies outside the shared RAM, stays on the
 * rings.
 */
void exanet_mbox_export(ExanetState *s, unsigned m)
{
    ExanetMbox *mb = &s->mbox[m];
    uint64_t len = ROUND_UP((uint64_t)mb->nslots * EXANET_MBOX_SLOT_SIZE,
                            FABRIC_DIRECT_PAGE);
    g_autofree uint64_t *pages = NULL;
    struct fabric_direct_queue *dq;
    int r = -ENODEV;

    exanet_mbox_unexport(s, m);
    if (!fabric_nic_direct_on(&s->nic) || !mb->enabled ||
        (mb->base & (FABRIC_DIRECT_PAGE - 1))) {
        return;
    }
    pages = g_new(uint64_t, len / FABRIC_DIRECT_PAGE);
    if (fabric_nic_direct_translate(PCI_DEVICE(s), mb->base, len, pages)) {
        r = fabric_direct_export_phase(s->nic.dd, m, EXANET_MBOX_SLOT_SIZE,
                                       mb->nslots, SLOT_FLAGS_OFF,
                                       EXANET_SLOT_PHASE, mb->pdid, pages,
                                       len / FABRIC_DIRECT_PAGE);
    }
    trace_exanet_mbox_export(s->nic.node_id, m, mb->base, mb->nslots, r);
    if (r) {
        return;
    }
    dq = fabric_direct_queue(s->nic.dd, m);
    mb->direct = true;
    mb->direct_seen = dq->delivered;
    mb->direct_full_seen = dq->full;
    mb->direct_hold = false;
}

/* Fold what was written through the shared record into the registers. */
void exanet_mbox_sync(ExanetState *s, unsigned m)
{
    ExanetMbox *mb = &s->mbox[m];
    struct fabric_direct_queue *dq;
    uint64_t n, full;

    if (!mb->direct) {
        return;
    }
    dq = fabric_direct_queue(s->nic.dd, m);
    n = qatomic_read(&dq->delivered) - mb->direct_seen;
    full = qatomic_read(&dq->full) - mb->direct_full_seen;
    mb->direct_seen += n;
    mb->direct_full_seen += full;
    mb->rx_count += n;
    mb->full_count += full;
    s->counters[EXANET_CNT_RX_DELIVERED] += n;
    s->counters[EXANET_CNT_RX_NACK_FULL] += full;
    mb->tail = qatomic_read(&dq->wp);
}

/* Disable, reset: no peer writes into the queue once this returns. */
void exanet_mbox_unexport(ExanetState *s, unsigned m)
{
    ExanetMbox *mb = &s->mbox[m];

    if (!mb->direct) {
        return;
    }
    fabric_direct_invalidate(s->nic.dd, m);
    exanet_mbox_sync(s, m);
    mb->direct = false;
    trace_exanet_mbox_unexport(s->nic.node_id, m);
}

/*
 * The owner's view changed: the consumer's head, the PDID, or whether an
 * armed interrupt needs the owner to see each message (then peers take
 * the rings, and the owner raises it).
 */
void exanet_mbox_direct_update(ExanetState *s, unsigned m)
{
    ExanetMbox *mb = &s->mbox[m];
    bool hold = mb->irq & EXANET_IRQ_ARMED;

    if (!mb->direct) {
        return;
    }
    fabric_direct_set_head(s->nic.dd, m, mb->head);
    fabric_direct_set_prot(s->nic.dd, m, mb->pdid);
    if (hold != mb->direct_hold) {
        fabric_direct_set_hold(s->nic.dd, m, hold);
        mb->direct_hold = hold;
    }
}

/*
 * Sender: write the message of channel ch into mailbox mbox of its
 * destination node ourselves.  Returns FABRIC_DIRECT_DONE (delivered: the
 * channel is ACKed), FABRIC_DIRECT_FULL (the mailbox is full: NACK FULL,
 * as the target would answer) or another value: send the packet (a
 * refusal the target must count, fault injection, no path).
 */
int exanet_direct_tx(ExanetState *s, ExanetChan *ch, unsigned mbox,
                     uint16_t pdid, uint16_t size)
{
    uint8_t slot[EXANET_MBOX_SLOT_SIZE];
    struct fabric_direct_msg m = {
        .payload = slot, .len = SLOT_FLAGS_OFF, .prot = pdid,
    };
    enum fabric_direct_result r;
    uint32_t hops;
    bool wake;

    if (!s->nic.dd || ch->dst_node == s->nic.node_id ||
        pdid == EXANET_PDID_NONE ||
        !fabric_nic_direct_route(&s->nic, ch->dst_node, ch->pkt_len, &hops)) {
        return FABRIC_DIRECT_NO_PATH;
    }
    m.hops = hops;
    exanet_mbox_slot_fill(slot, ch->payload, size, s->nic.node_id, ch->iface,
                          ch->chan, ch->seq);
    r = fabric_direct_write(s->nic.dd, ch->dst_node, mbox, &m, &wake);
    trace_exanet_tx_direct(s->nic.node_id, ch->iface, ch->chan, ch->dst_node,
                           mbox, ch->seq, r, wake);
    if (r == FABRIC_DIRECT_DONE) {
        fabric_nic_direct_done(&s->nic, ch->dst_node, wake);
    }
    return r;
}
