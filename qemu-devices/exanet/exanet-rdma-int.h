/*
 * ExaNet NI model, RDMA engine: what its parts share (on the pattern of
 * QEMU's hw/rdma/vmw): the engine state, the headers of its bulk records
 * and the functions one part calls in another.  Private to the engine;
 * exanet-ni.c and exanet-ctx.c use the entry points in exanet-int.h, the ABI
 * is uapi/exanet_rdma.h, the overview is in exanet-rdma.c.
 *
 * Short names private to the engine: RD_* record types and ACK codes,
 * BS_* the states of a block of a sending transfer.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef EXANET_RDMA_INT_H
#define EXANET_RDMA_INT_H

#include "qemu/queue.h"
#include "hw/pci/pci.h"

#include "exanet_rdma.h"
#include "exanet-int.h"

#define RDMA_RETX_CAP_US   200000u
#define RDMA_RETX_MIN_US   100u
/*
 * Largest block timeout the measured round trip may ask for: a node whose
 * emulator shares the host's cores with many others answers late, not
 * never (retries double it up to this, at least RDMA_RETX_CAP_US).
 */
#define RDMA_RTO_MAX_US    1000000u
#define RDMA_VA_LIMIT      (1ull << EXANET_RDMA_VA_BITS)
#define RDMA_BLOCK         EXANET_RDMA_BLOCK_SIZE

/* Record types on the bulk path (the fabric's opaque 'type'). */
enum {
    RD_BLOCK = 16,
    RD_ACK = 17,        /* block ACK / NACK (code) */
    RD_RREQ = 18,       /* read request to the responder */
    RD_RNACK = 19,      /* read refused / failed at the responder */
    RD_COLL = 20,       /* collective unit (exanet-coll.c): a block */
    RD_COLL_ACK = 21,   /* its ACK, or a refusal (code) */
    RD_COLL_PROBE = 22, /* is the member there and still in the operation? */
    RD_COLL_PROBE_ACK = 23,
    RD_RBUSY = 24,      /* the responder still works on the read (code) */
};

/* RD_RBUSY codes: what the responder's answer waits for */
enum { RD_RBUSY_SENDING = 0, RD_RBUSY_FAULT = 1 };

#define RD_NACK_RETRY 0xff  /* ACK code: corrupt block, send it again */
#define RD_NACK_FAULT 0xfe  /* ACK code: on-demand fault, wait for a RETRY */
#define RDMA_NO_FAULT     0xffffffffu   /* fault id: not recorded */
#define RDMA_HELD_MAX     1024          /* target-side held blocks, all ranks */
/* Timer periods a transfer may wait for software to resolve its faults. */
#define RDMA_FAULT_WAITS_MAX 600

/*
 * Headers, host layout (both ends of a ring live on the same host; the
 * fabric record checksum covers them).
 */
typedef struct RdBlkHdr {
    uint64_t dst_va;        /* destination of this block */
    uint64_t total_len;
    uint64_t notify_va;
    uint64_t tag;
    uint32_t origin_node;   /* node of the initiating channel */
    uint32_t seq;
    uint32_t epoch;         /* of the initiator */
    uint32_t block;
    uint32_t nblocks;
    uint16_t pdid;
    uint8_t op;
    uint8_t page;
    uint8_t chan;
    uint8_t dst_rank;
    uint8_t src_rank;       /* initiator's rank (for the notification) */
    uint8_t ncells;
    uint32_t xmit;          /* sender's transmission number, echoed by the ACK */
    uint32_t pad;
} RdBlkHdr;

typedef struct RdAckHdr {
    uint32_t origin_node;
    uint32_t seq;
    uint32_t epoch;
    uint32_t block;
    uint8_t page;
    uint8_t chan;
    uint8_t op;
    uint8_t code;           /* 0 ACK, RD_NACK_RETRY, or an EXANET_RDMA_E_* */
    uint32_t xmit;          /* of the block transmission answered */
} RdAckHdr;

typedef struct RdReqHdr {
    uint64_t src_va;        /* at the responder */
    uint64_t dst_va;        /* at the initiator */
    uint64_t len;
    uint64_t notify_va;
    uint64_t tag;
    uint32_t seq;
    uint32_t epoch;
    uint16_t pdid;
    uint8_t page;
    uint8_t chan;
    uint8_t src_rank;       /* responder's rank to read from */
    uint8_t dst_rank;       /* initiator's rank */
    uint8_t pad[2];
} RdReqHdr;

typedef struct RdNackHdr {
    uint32_t seq;
    uint32_t epoch;
    uint8_t page;
    uint8_t chan;
    uint8_t code;
    uint8_t pad;
} RdNackHdr;

enum { BS_UNSENT = 0, BS_INFLIGHT, BS_ACKED, BS_RESEND, BS_HELD };

typedef struct ExanetColl ExanetColl;
typedef struct RdmaTx RdmaTx;
typedef void RdmaTxDone(RdmaTx *tx, uint8_t err);

/* The last send of a block: what its ACK echoes, and when (the round trip) */
typedef struct RdmaBlockSend {
    uint32_t xmit;          /* transmission number */
    int64_t ns;             /* realtime */
} RdmaBlockSend;

/* A sending transfer: write channel or read responder. */
struct RdmaTx {
    ExanetRdma *r;
    bool active;
    bool want_pump;
    bool link_wait;         /* stalled on a busy link (flow control) */
    bool held;              /* source read faulted: wait for FQ_RESUME */
    uint32_t held_id;       /* its fault id */
    uint8_t rank;           /* local context for source reads */
    uint8_t retries;
    uint16_t fault_waits;   /* timer periods spent waiting for faults */
    bool faulted;           /* a fault held it since the last progress */
    uint32_t dst_node;
    RdBlkHdr h;             /* template; block, dst_va set per block */
    uint64_t src_va;
    uint32_t base;          /* lowest unacknowledged block */
    uint32_t next;          /* next block never sent */
    uint32_t acked;
    uint32_t nresend;
    uint64_t acked_bytes;
    uint8_t *bstate;
    RdmaBlockSend *bsend;   /* each block's last send */
    uint32_t xmit;
    int64_t due;            /* timer due (realtime ns), 0: not armed */
    QEMUTimer *timer;       /* lazy, see rdma_tx_arm() */
    RdmaTxDone *done;
    QTAILQ_ENTRY(RdmaTx) link;
};

typedef struct RdmaChan {
    ExanetRdma *r;
    uint8_t page;
    uint8_t chan;
    uint8_t state;
    uint8_t err;
    uint32_t seq;
    uint64_t done_bytes;
    uint8_t desc[EXANET_RDMA_CHAN_STRIDE];
    /* latched at the trigger */
    uint64_t local_va, remote_va, len, notify_va, tag, lcomp_va;
    uint32_t rnode;
    uint8_t rrank;
    uint8_t rank;           /* the page's rank at the trigger */
    bool lcomp_pending;     /* completion record faulted: write on resume */
    uint32_t lcomp_id;
    /* read channels */
    uint8_t rretries;
    bool rfaulted;          /* data held by a fault here since the last progress */
    uint16_t rfault_waits;
    uint64_t last_bytes;
    uint64_t last_peer_blocks;  /* the peer's answers to us at the last tick */
    int64_t rdue;           /* read timer due, 0: not armed */
    QEMUTimer *rtimer;
    RdmaTx tx;              /* write channels */
} RdmaChan;

typedef struct RdmaPage {
    uint32_t pdid;
    uint32_t rank;
    bool enabled;
    uint64_t notifs_seen;   /* NOTIFS at this page's previous read */
    RdmaChan ch[EXANET_RDMA_CHANS];
} RdmaPage;

/* Receive-side state of the last transfer per (sender, page, channel). */
typedef struct RdmaRx {
    uint32_t epoch;
    uint32_t seq;
    uint32_t nblocks;
    uint32_t received;
    uint8_t err;            /* transfer failed here: NACK every block */
    bool complete;
    bool fault_wait;        /* fault_id of a block still in the queue */
    uint32_t fault_id;
    unsigned long *map;
} RdmaRx;

/* Responder state per (initiator, page, channel); kept after the end. */
typedef struct RdmaResp {
    uint32_t epoch;
    uint32_t seq;
    uint8_t err;
    bool finished;
    RdmaTx tx;
} RdmaResp;

/* Target side: a block answered RD_NACK_FAULT, to RETRY on FQ_RESUME. */
typedef struct RdmaHeld {
    uint32_t id;            /* fault id, RDMA_NO_FAULT if not recorded */
    uint32_t dst;           /* the block's sender */
    uint8_t rank;
    RdAckHdr a;             /* the answer (code set when released) */
} RdmaHeld;

typedef struct RdmaLoop {
    QSIMPLEQ_ENTRY(RdmaLoop) link;
    uint8_t type;
    size_t hlen, dlen;
    uint8_t buf[];
} RdmaLoop;

struct ExanetRdma {
    PCIDevice *ni;
    uint32_t node_id;
    uint32_t num_nodes;
    uint64_t *peer_rd_blocks;   /* per node: read answer blocks received */
    /* per node: smoothed ACK round trip and its deviation, ns (0: none) */
    int64_t *srtt_ns;
    int64_t *rttvar_ns;
    const uint32_t *retx_max;
    FabricQemu *fabric;
    uint32_t epoch;
    uint32_t retx_us;
    uint32_t window;

    PCIDevice *ctx[EXANET_RDMA_NUM_RANKS];
    uint32_t ctx_pdid[EXANET_RDMA_NUM_RANKS];
    bool ctx_en[EXANET_RDMA_NUM_RANKS];
    uint32_t ctx_irq[EXANET_RDMA_NUM_RANKS];    /* EXANET_CTX_IRQ */
    bool ctx_odp[EXANET_RDMA_NUM_RANKS];        /* EXANET_CTX_EN_ODP */

    /* Fault queue (on-demand paging) */
    uint64_t fq_base;
    uint32_t fq_size, fq_head, fq_tail, fq_irq;
    RdmaHeld held[RDMA_HELD_MAX];
    uint32_t nheld;

    RdmaPage page[EXANET_RDMA_PAGES];
    GHashTable *rx;         /* key: exanet_rdma_rx_key() -> RdmaRx */
    GHashTable *resp;       /* key: exanet_rdma_rx_key() -> RdmaResp */
    QTAILQ_HEAD(, RdmaTx) active;
    QSIMPLEQ_HEAD(, RdmaLoop) loop;
    QEMUBH *bh;
    QEMUTimer *link_timer;  /* pumps transfers that wait for a busy link */
    MemoryRegion bar;
    RdmaLoop *loop_rsv;
    uint32_t loop_rsv_dst;
    uint64_t cnt[EXANET_RDMA_NUM_COUNTERS];
    uint64_t notifs[EXANET_RDMA_NUM_RANKS];     /* records written, per rank */
    ExanetColl *coll;       /* the collective unit (exanet-coll.c) */

    /* direct delivery (exanet-rdma-direct.c) */
    FabricNic *nic;
    bool gate_on[EXANET_RDMA_NUM_RANKS];    /* rank's gate exported */
    bool gate_hold[EXANET_RDMA_NUM_RANKS];  /* ... held: interrupt armed */
    uint32_t gate_pdid[EXANET_RDMA_NUM_RANKS];
    uint64_t dc_seen[FABRIC_DIRECT_MODEL_COUNTERS]; /* peers' counts folded */
};

/* ------------------------------------------------------------------ */
/* exanet-rdma.c: DMA through the contexts, transport */

void exanet_rdma_rank_event(ExanetRdma *r, unsigned rank);
gpointer exanet_rdma_rx_key(uint32_t node, unsigned page, unsigned chan);
void exanet_rdma_kick(ExanetRdma *r);
void exanet_rdma_link_retry(ExanetRdma *r);
MemTxResult exanet_rdma_dma(ExanetRdma *r, unsigned rank, uint64_t va,
                            void *buf, uint64_t len, DMADirection dir);
bool exanet_rdma_write_notif(ExanetRdma *r, unsigned rank, uint64_t va,
                             uint64_t tag, uint64_t len, uint32_t node,
                             uint8_t nrank, uint8_t op, uint8_t err,
                             uint8_t page, uint8_t chan, uint32_t flags);
void *exanet_rdma_reserve(ExanetRdma *r, uint32_t dst, size_t hlen,
                          size_t dlen, int *err);
void exanet_rdma_commit(ExanetRdma *r, uint32_t dst, uint8_t type);
void exanet_rdma_cancel(ExanetRdma *r, uint32_t dst);
void exanet_rdma_send_small(ExanetRdma *r, uint32_t dst, uint8_t type,
                            const void *hdr, size_t hlen);
void exanet_rdma_send_ack(ExanetRdma *r, uint32_t dst, const RdBlkHdr *h,
                          uint8_t code);

/* ------------------------------------------------------------------ */
/* exanet-rdma-tx.c: send unit (sending transfers, channels) */

void exanet_rdma_tx_stop(RdmaTx *tx);
void exanet_rdma_tx_finish(RdmaTx *tx, uint8_t err);
void exanet_rdma_tx_start(ExanetRdma *r, RdmaTx *tx);
void exanet_rdma_pump_stalled(ExanetRdma *r);
void exanet_rdma_tx_ack(RdmaTx *tx, const RdAckHdr *a);
bool exanet_rdma_chan_lcomp(RdmaChan *ch);
void exanet_rdma_chan_complete(RdmaChan *ch, uint8_t err);
void exanet_rdma_chan_abort(RdmaChan *ch);
void exanet_rdma_rchan_timer(void *opaque);
/*
 * The first blocks of a transfer, up to this many bytes, leave from the
 * context that started it (the triggering vCPU, or the one that took a
 * read request): copying 64 KiB costs less than waking the fabric thread
 * (tens of microseconds on a host that is a virtual machine), which sends
 * the rest of a larger transfer so that the vCPU does not copy bulk data.
 */
#define RDMA_INLINE_MAX    (64 * 1024)
/* a transfer that waits for a busy link tries again after this */
#define RDMA_LINK_RETRY_NS (FABRIC_LINK_HORIZON_NS / 4)
void exanet_rdma_trigger(ExanetRdma *r, unsigned p, unsigned c, uint64_t ctrl);

/* ------------------------------------------------------------------ */
/* exanet-rdma-rx.c: receive unit */

RdmaChan *exanet_rdma_my_rchan(ExanetRdma *r, unsigned page, unsigned chan,
                               uint32_t seq, uint32_t epoch);

/* ------------------------------------------------------------------ */
/* exanet-rdma-read.c: read responder */

void exanet_rdma_resp_free(gpointer p);
void exanet_rdma_rx_rreq(ExanetRdma *r, uint32_t src, const RdReqHdr *q);

/* ------------------------------------------------------------------ */
/* exanet-rdma-odp.c: on-demand paging (fault queue) */

bool exanet_rdma_fault(ExanetRdma *r, unsigned rank, uint64_t va, uint64_t len,
                       bool write, uint8_t kind, const RdBlkHdr *h,
                       uint32_t ahead, uint32_t *id);
bool exanet_rdma_rx_waits(ExanetRdma *r, const RdmaRx *x, unsigned rank);
bool exanet_rdma_rx_hold(ExanetRdma *r, uint32_t src, const RdBlkHdr *h,
                         RdmaRx *x, uint64_t va, uint64_t len, uint8_t kind);
bool exanet_rdma_fault_consumed(ExanetRdma *r, uint32_t id);
void exanet_rdma_fault_resume(ExanetRdma *r, uint32_t mask, bool consumed);
void exanet_rdma_fault_fail(ExanetRdma *r, uint32_t id);
void exanet_rdma_fq_arm(ExanetRdma *r, uint32_t val);

/* ------------------------------------------------------------------ */
/* exanet-rdma-direct.c: direct delivery of writes and reads */

/* Initiator: channel ch's transfer done directly (completed); false: rings */
bool exanet_rdma_direct(ExanetRdma *r, RdmaChan *ch);
/* Target: rank's DMA reached [va, va + len): cache the translations */
void exanet_rdma_direct_fill(ExanetRdma *r, unsigned rank, uint64_t va,
                             uint64_t len);
/* Target: rank k's context changed: fence, gate export / hold */
void exanet_rdma_direct_ctx(ExanetRdma *r, unsigned k);
/* Target: fold peers' counts (RX_BYTES, NOTIFICATIONS, ...) into ours */
void exanet_rdma_direct_sync(ExanetRdma *r);

/* ------------------------------------------------------------------ */
/* exanet-coll.c: collective unit (uses the transport and the pages) */

ExanetColl *exanet_coll_new(ExanetRdma *r, Object *owner);
MemoryRegion *exanet_coll_bar(ExanetColl *c);
void exanet_coll_set_direct(ExanetColl *c, uint32_t members);
void exanet_coll_reset(ExanetColl *c);
bool exanet_coll_ctrl_owns(hwaddr off);
uint32_t exanet_coll_ctrl_read(ExanetColl *c, hwaddr off);
void exanet_coll_ctrl_write(ExanetColl *c, hwaddr off, uint32_t val);
void exanet_coll_page_disabled(ExanetColl *c, unsigned p);
/* false if type is not a collective packet */
bool exanet_coll_bulk_rx(ExanetColl *c, uint32_t src, uint8_t type,
                         const void *hdr, size_t hlen, const void *data,
                         size_t dlen, bool data_ok);

#endif
