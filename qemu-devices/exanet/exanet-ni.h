/*
 * ExaNet NI core: the device state, the wire format of its packets and what
 * its parts share: exanet-ni.c (registers, interrupts, reset, BAR0, the BARs'
 * ops, QOM), exanet-pkt.c (packetizer, retransmission, BAR1),
 * exanet-mbox.c (mailboxes, receive path, BAR2).  Private to these files;
 * the RDMA engine and the context function see exanet-int.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef EXANET_NI_H
#define EXANET_NI_H

#include "hw/pci/pci.h"
#include "qom/object.h"
#include "exanet.h"
#include "fabric-nic.h"
#include "exanet-int.h"

OBJECT_DECLARE_SIMPLE_TYPE(ExanetState, EXANET)

#define EXANET_RETX_CAP_US      200000u    /* per-retry timeout cap */
#define EXANET_RETX_MIN_US      10u
#define EXANET_RETX_MAX_RETRIES 255u       /* STATUS has 8 bits for it */

/* Fabric packet types (the fabric header's 'type'). */
enum {
    EXA_PKT_DATA = 1,
    EXA_PKT_ACK = 2,
    EXA_PKT_NACK = 3,
};

/*
 * DATA packet body, little endian:
 *   0  u16  destination PDID            \  80-bit GVA
 *   2  u64  node << 42 | rank << 39 | VA /  (VA = target mailbox number)
 *  10  u32  source node
 *  14  u16  source packetizer interface
 *  16  u8   source channel
 *  17  u8   flags (0)
 *  18  u16  payload length (1..64)
 *  20  u32  sequence number (per source channel)
 *  24  u32  epoch of the sending device
 *  28  ...  payload
 */
#define W_PDID      0
#define W_GVA       2
#define W_SRC_NODE  10
#define W_SRC_IFACE 14
#define W_SRC_CHAN  16
#define W_FLAGS     17
#define W_LEN       18
#define W_SEQ       20
#define W_EPOCH     24
#define W_PAYLOAD   28
#define W_DATA_MAX  (W_PAYLOAD + EXANET_MAX_PAYLOAD)

/*
 * ACK / NACK body, little endian:
 *   0 u16 interface, 2 u8 channel, 3 u8 NACK reason, 4 u32 seq, 8 u32 epoch
 */
#define A_IFACE     0
#define A_CHAN      2
#define A_REASON    3
#define A_SEQ       4
#define A_EPOCH     8
#define A_SIZE      12

#define GVA_VA_MASK    ((1ull << EXANET_GVA_VA_BITS) - 1)
#define GVA_RANK_SHIFT EXANET_GVA_VA_BITS
#define GVA_RANK_MASK  ((1ull << EXANET_GVA_RANK_BITS) - 1)
#define GVA_NODE_SHIFT (EXANET_GVA_VA_BITS + EXANET_GVA_RANK_BITS)
#define GVA_NODE_MASK  ((1ull << EXANET_GVA_NODE_BITS) - 1)

/* Offset of 'flags' in struct exanet_mbox_slot: written last. */
#define SLOT_FLAGS_OFF offsetof(struct exanet_mbox_slot, flags)

typedef struct ExanetState ExanetState;

typedef struct ExanetChan {
    ExanetState *s;
    uint8_t iface;
    uint8_t chan;
    uint8_t state;
    uint8_t reason;
    uint8_t retries;
    uint32_t seq;
    uint32_t dst_node;
    bool on_rings;          /* its packet is on the fabric rings */
    uint8_t payload[EXANET_MAX_PAYLOAD];
    uint8_t pkt[W_DATA_MAX];
    uint32_t pkt_len;
    int64_t deadline;       /* retransmission due (QEMU_CLOCK_REALTIME ns) */
} ExanetChan;

typedef struct ExanetPktIface {
    uint32_t pdid;
    bool enabled;
    ExanetChan chan[EXANET_PKT_CHANNELS];
} ExanetPktIface;

typedef struct ExanetMbox {
    /* registers as written by the driver */
    uint32_t pdid;
    uint32_t qbase_lo;
    uint32_t qbase_hi;
    uint32_t nslots_reg;
    /* latched when enabled */
    bool enabled;
    uint64_t base;
    uint32_t nslots;
    uint32_t head;          /* free running */
    uint32_t tail;          /* free running; phase = !((tail / nslots) & 1) */
    uint32_t rx_count;
    uint32_t full_count;
    uint32_t irq;           /* EXANET_IRQ_ARM(vector) or 0 */
    /*
     * Exported for direct delivery (exanet-direct.c): tail, rx_count and
     * full_count fold in what peers wrote (exanet_mbox_sync()).
     */
    bool direct;
    bool direct_hold;       /* peers take the rings: an interrupt is armed */
    uint64_t direct_seen;   /* the record's delivered count, folded */
    uint64_t direct_full_seen;
} ExanetMbox;

/*
 * Receive-side duplicate detection per (source node, iface, chan): the last
 * packet answered from that channel and the answer it got.  A channel has one
 * packet outstanding, so one entry is enough.
 */
typedef struct ExanetDedup {
    uint32_t epoch;
    uint32_t seq;
    uint8_t type;           /* EXA_PKT_ACK or EXA_PKT_NACK; 0: none yet */
    uint8_t reason;         /* EXANET_NACK_* for a NACK */
} ExanetDedup;

struct ExanetState {
    PCIDevice parent_obj;

    MemoryRegion bar_ctrl;
    MemoryRegion bar_pkt;
    MemoryRegion bar_mbox;
    ExanetRdma *rdma;       /* RDMA engine (exanet-rdma.c), BAR3 */

    FabricNic nic;          /* properties and fabric transport */
    uint32_t epoch;
    uint32_t retx_timeout_us;
    uint32_t retx_max;
    uint32_t coll_direct;   /* property coll-direct-members */
    QEMUTimer *retx_timer;  /* backstop for the channels' retransmissions */
    int64_t retx_due;       /* see exanet_chan_arm() */
    uint64_t counters[EXANET_NUM_COUNTERS];
    uint64_t corrupt_base;  /* fabric drop counters at the last reset */
    uint64_t mbox_tail_reads;   /* QOM mbox-tail-reads */
    unsigned ring_ongoing;  /* channels with on_rings, unanswered */

    ExanetPktIface pkt[EXANET_NUM_PKT_IFACES];
    ExanetMbox mbox[EXANET_NUM_MBOX_IFACES];
    GHashTable *dedup;

    bool msix;              /* property: off = no interrupts (older NIs) */
    uint64_t irq_mbox_pending;
    uint32_t irq_rank_pending;
    uint32_t irq_count;
};

/* exanet-ni.c */
bool exanet_reentered(void);
MemTxResult exanet_dma_write(ExanetState *s, dma_addr_t addr, const void *buf,
                             dma_addr_t len);
void exanet_irq_event(ExanetState *s, uint32_t *irq, bool rank, unsigned src);
void exanet_xmit(ExanetState *s, uint32_t dst, uint8_t type, const void *buf,
                 size_t len);
void exanet_send_reply(ExanetState *s, uint32_t dst, uint8_t type,
                       uint16_t iface, uint8_t chan, uint8_t reason,
                       uint32_t seq, uint32_t epoch);
void exanet_mbox_head(ExanetState *s, unsigned m, uint32_t val);

/* exanet-pkt.c */
void exanet_chan_abort(ExanetChan *ch);
void exanet_retx_check(ExanetState *s);
void exanet_retx_timer(void *opaque);
void exanet_rx_reply(ExanetState *s, uint32_t src, uint8_t type,
                     const uint8_t *b, size_t len);
uint64_t exanet_pkt_read(void *opaque, hwaddr off, unsigned size);
void exanet_pkt_write(void *opaque, hwaddr off, uint64_t val, unsigned size);

/* exanet-direct.c */
void exanet_mbox_slot_fill(uint8_t *slot, const uint8_t *payload,
                           uint16_t plen, uint32_t src, uint16_t iface,
                           uint8_t chan, uint32_t seq);
void exanet_mbox_export(ExanetState *s, unsigned m);
void exanet_mbox_unexport(ExanetState *s, unsigned m);
void exanet_mbox_sync(ExanetState *s, unsigned m);
void exanet_mbox_direct_update(ExanetState *s, unsigned m);
int exanet_direct_tx(ExanetState *s, ExanetChan *ch, unsigned mbox,
                     uint16_t pdid, uint16_t size);

/* exanet-mbox.c */
void exanet_rx(void *opaque, uint32_t src, uint8_t type, const void *payload,
               size_t len);
void exanet_poll_fabric(ExanetState *s);
uint32_t exanet_pkt_busy(const ExanetPktIface *ifc);
uint64_t exanet_mbox_read(void *opaque, hwaddr off, unsigned size);
void exanet_mbox_write(void *opaque, hwaddr off, uint64_t val, unsigned size);

#endif
