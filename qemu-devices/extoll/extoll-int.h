/*
 * EXTOLL NIC model: what its parts share (on the pattern of QEMU's
 * hw/nvme/nvme.h): the device state, the wire format of the fabric
 * protocol and the functions one part calls in another.  Private to
 * qemu-devices/extoll/; the register map and the formats shared with the
 * driver and the libraries are in uapi/extoll_hw.h, the overview is in
 * extoll-nic.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef EXTOLL_INT_H
#define EXTOLL_INT_H

#include "qemu/timer.h"
#include "hw/pci/pci.h"
#include "qom/object.h"

#include "extoll_hw.h"
#include "fabric-nic.h"

/* A guest programming error: LOG_GUEST_ERROR and the trace event 'event'. */
#define EXTOLL_GUEST_ERR(event, fmt, ...) \
    FABRIC_GUEST_ERR(event, "extoll: " fmt, ## __VA_ARGS__)

#define TYPE_EXTOLL "extoll"
OBJECT_DECLARE_SIMPLE_TYPE(ExtollState, EXTOLL)

/*
 * DMA in progress by any extoll device (fabric_nic_dma_rw()); MMIO to
 * extoll devices is ignored while it is non-zero (fabric-nic.h).
 * Defined in extoll-nic.c.
 */
extern unsigned extoll_dma_depth;

/* ------------------------------------------------------------------ */
/* Wire format of the EXTOLL fabric (fabric header 'type' byte) */

/*
 * Its short names are private to the extoll model (no other file sees
 * them): D_* the common DATA header, K_* the kinds, V_* N_* P_* R_* G_*
 * L_* the fields of each kind (byte offsets), F_* the fragment flags,
 * A_* the ACK / NACK body.
 */

enum {
    EXT_T_DATA = 1,     /* reliable stream packet */
    EXT_T_ACK = 2,      /* cumulative: every seq <= S received */
    EXT_T_NACK = 3,     /* seq S could not be taken now: resend from S */
    EXT_T_RESUME = 4,   /* room again after a NACK: resend now */
};

/*
 * DATA body: common header.  D_PROT is the protection ID of the packet
 * (uapi/extoll_hw.h, "Protection IDs"): the sending VPID part's VELO_PROT
 * or RMA_PROT for VELO messages and RMA requests, the ID of the request
 * for the responses the device generates (K_DONE, K_GETRSP, K_LOCKRSP).
 */
#define D_EPOCH     0   /* u32 sender's epoch */
#define D_SEQ       4   /* u32 */
#define D_KIND      8   /* u8 */
#define D_SVPID     9   /* u8 source VPID */
#define D_DVPID     10  /* u8 destination VPID */
#define D_GEN       11  /* u8 generation of the origin VPID part (echoed) */
#define D_PROT      12  /* u16 protection ID */
#define D_TAG       14  /* u16 command tag (ExtWait), echoed by answers */
#define D_HDR       16  /* kind-specific fields follow, offsets below */

enum {
    K_VELO = 1,     /* see V_* */
    K_PUT = 2,      /* fragment of put / immediate put, see P_* */
    K_NOTIPUT = 3,  /* see N_* */
    K_DONE = 4,     /* target -> origin: put-like command finished, see R_* */
    K_GETREQ = 5,   /* see G_* */
    K_GETRSP = 6,   /* fragment of get response, see P_* */
    K_LOCKREQ = 7,  /* see L_* */
    K_LOCKRSP = 8,  /* target -> origin: result of a lock, see L_* */
};

/* K_VELO */
#define V_MTT       (D_HDR + 0)     /* u8 */
#define V_TAG       (D_HDR + 1)     /* u8 */
#define V_LEN       (D_HDR + 2)     /* u8 payload bytes */
#define V_DATA      (D_HDR + 4)

/* K_NOTIPUT */
#define N_CLASS     (D_HDR + 0)     /* u8 */
#define N_SPEC      (D_HDR + 1)     /* u8 notification spec */
#define N_MODE      (D_HDR + 2)     /* u8 origin page options */
#define N_PAYLOAD   (D_HDR + 4)     /* u64 */
#define N_END       (D_HDR + 12)

/* K_PUT / K_GETRSP */
#define P_CMD       (D_HDR + 0)     /* u8 */
#define P_SPEC      (D_HDR + 1)     /* u8 notification spec of the command */
#define P_MODE      (D_HDR + 2)     /* u8 origin page options (TE / IRQ / ...) */
#define P_FLAGS     (D_HDR + 3)     /* u8 F_* */
#define P_ADDR      (D_HDR + 4)     /* u64 destination address of this fragment */
#define P_LEN       (D_HDR + 12)    /* u32 fragment length */
/* u64 origin source address of the fragment / immediate value */
#define P_ECHO      (D_HDR + 20)
#define P_DATA      (D_HDR + 28)
#define F_FIRST     1
#define F_LAST      2
#define F_ERR       4   /* GETRSP: responder failed; PUT: source unreadable (no data) */

/* K_DONE */
#define R_CMD       (D_HDR + 0)     /* u8 */
#define R_SPEC      (D_HDR + 1)     /* u8 */
#define R_MODE      (D_HDR + 2)     /* u8 */
#define R_ERR       (D_HDR + 3)     /* u8 EXTOLL_NOTI_ERR_* or 0 */
#define R_ECHO      (D_HDR + 4)     /* u64 word0 of the requester notification */
#define R_SIZE      (D_HDR + 12)    /* u32 size-1 / class field */
#define R_END       (D_HDR + 16)

/* K_GETREQ */
#define G_CMD       (D_HDR + 0)     /* u8 */
#define G_SPEC      (D_HDR + 1)     /* u8 */
#define G_MODE      (D_HDR + 2)     /* u8 */
#define G_RADDR     (D_HDR + 4)     /* u64 remote read address */
#define G_WADDR     (D_HDR + 12)    /* u64 origin write address */
#define G_SIZE      (D_HDR + 20)    /* u32 */
#define G_END       (D_HDR + 24)

/* K_LOCKREQ / K_LOCKRSP */
#define L_SPEC      (D_HDR + 0)     /* u8 notification spec */
#define L_MODE      (D_HDR + 1)     /* u8 origin page options */
#define L_UNIT      (D_HDR + 2)     /* u8 lock pool: 0 completer, 1 responder unit */
#define L_ERR       (D_HDR + 3)     /* u8 K_LOCKRSP: EXTOLL_NOTI_ERR_* or 0 */
#define L_NUM       (D_HDR + 4)     /* u32 lock number */
#define L_CMP       (D_HDR + 8)     /* u32 request: compare value; response: result */
#define L_ADD       (D_HDR + 12)    /* u32 request: add value; response: value after */
#define L_END       (D_HDR + 16)

QEMU_BUILD_BUG_ON(D_TAG + 2 > D_HDR);
/*
 * Payload of one K_PUT / K_GETRSP packet: a multiple of the fragment size
 * (notifications describe a transfer by its last EXTOLL_RMA_FRAG_SIZE
 * fragment) that fits a bulk record.
 */
#define EXT_CHUNK           (16u << 10)
QEMU_BUILD_BUG_ON(EXT_CHUNK % EXTOLL_RMA_FRAG_SIZE);
QEMU_BUILD_BUG_ON(EXT_CHUNK > FABRIC_BULK_MAX_DATA);
QEMU_BUILD_BUG_ON(P_DATA > FABRIC_BULK_MAX_HDR);

/* ACK / NACK body */
#define A_EPOCH     0   /* epoch of the stream acknowledged */
#define A_SEQ       4
#define A_CHAN      8   /* stream channel */
#define A_END       9

#define EXT_WINDOW          128
#define EXT_ACK_BATCH       32
#define EXT_RTO_MIN_NS      (5 * SCALE_MS)
#define EXT_RTO_MAX_NS      (100 * SCALE_MS)
#define EXT_RETX_MAX_LIMIT  255     /* retx-max property: 1 .. this */
#define EXT_NACK_MIN_NS     (100 * SCALE_US)
#define EXT_NACK_MAX_NS     (5 * SCALE_MS)
#define EXT_POLL_NS         (1 * SCALE_MS)
#define EXT_STALL_NS        (20 * SCALE_US)  /* bulk ring full: try again */
#define EXT_RESUME_NS       (20 * SCALE_US)  /* NACKed: look for room again */
#define EXT_RESUME_MAX_NS   (10 * SCALE_MS)  /* ... at most this long */
#define EXT_RESUME_SLOTS    16               /* free slots worth a RESUME */
#define EXT_VELO_HELD_NS    (20 * SCALE_US)  /* held by a full ring: try again */
#define EXT_RESUME_ANY_NS   (500 * SCALE_US) /* ... or one, after this long */
#define EXT_TXQ_BYTES_MAX   (48u << 20)      /* queued payload that defers new commands */
#define EXT_BACKLOG_MAX     4096             /* local notifications waiting per VPID */

typedef struct ExtPkt {
    uint32_t seq;
    uint32_t len;
    int16_t credit_vpid;    /* VELO credit to give back on ACK, -1 none */
    uint8_t credit_gen;
    bool lazy;              /* put: only the header is kept, see ext_put_read() */
    struct ExtWait *wait;   /* last request of a command, until acked */
    uint8_t data[];
} ExtPkt;

/*
 * An RMA command of ours that its target answers (put and immediate put:
 * K_DONE after the last packet; notification put: K_DONE; get: K_GETRSP;
 * lock: K_LOCKRSP), from when its requests are queued until its answer
 * arrives.  Should it fail instead, the origin VPID gets the requester
 * notification w0 / w1 with EXTOLL_NOTI_ERR_REQ (ext_wait_fail()).
 */
typedef struct ExtWait {
    uint16_t tag;           /* D_TAG of its requests and of its answer */
    uint8_t vpid, gen;      /* origin VPID and its RMA generation */
    uint16_t prot;          /* the VPID's RMA_PROT when the command was taken */
    ExtPkt *pkt;            /* its last request while not acknowledged */
    int64_t acked_ns;       /* when that was acknowledged */
    uint64_t w0, w1;        /* requester notification, error bits clear */
} ExtWait;

typedef struct ExtollState ExtollState;

/*
 * Two independent streams per direction and peer: channel 0 carries
 * requests (VELO, puts, notification puts, get requests), which the
 * receiver may NACK when it has no room; channel 1 carries responses
 * (DONE, get data), which are never NACKed, so responses can always
 * drain even while requests are pushed back (no request/response
 * deadlock).
 */
#define EXT_NCHAN 2

typedef struct ExtPeer ExtPeer;

typedef struct ExtTx {
    ExtPeer *peer;
    uint8_t chan;
    GQueue txq;             /* ExtPkt*, unacknowledged, in seq order */
    GList *next_unsent;     /* first element of txq not sent since the last rewind */
    unsigned inflight;      /* elements of txq sent since the last rewind */
    uint32_t next_seq;
    uint32_t epoch;         /* the device's; a new one after a failure */
    unsigned retries;       /* timeouts since the last sign of the receiver */
    unsigned nacks;
    bool paused;            /* NACK back-off running */
    bool stall_armed;       /* timer armed while nothing could be sent */
    int64_t due;            /* timer due (realtime ns), 0: not armed */
    QEMUTimer *timer;       /* lazy, see ext_arm() */
    QEMUTimer *stall_timer; /* bulk ring was full */
} ExtTx;

struct ExtPeer {
    ExtollState *s;
    uint32_t node;
    ExtTx tx[EXT_NCHAN];
    uint32_t rx_epoch[EXT_NCHAN];
    uint32_t rx_expected[EXT_NCHAN];
    bool put_err;           /* sticky error of the put being received */
    bool rsp_err;           /* sticky error of the get response being received */
    /* delayed cumulative ACK per channel */
    bool ack_due[EXT_NCHAN];
    unsigned ack_count[EXT_NCHAN];
    bool ack_listed;
    /*
     * Channel 0 request NACKed for lack of room in VPID nack_vpid: its VELO
     * ring (nack_velo) or its notification queue.  RESUME when it has room.
     */
    bool nacked;
    bool nack_velo;
    uint8_t nack_vpid;
    int64_t nack_ns;        /* when the watch started */
    /* our RMA commands to this node awaiting their answer, in order */
    GQueue wait;            /* ExtWait* */
    uint16_t next_tag;
    int64_t answer_ns;      /* last in-order packet of its response stream */
    /*
     * Direct delivery: VELO messages (ExtVeloMsg) the target's full ring
     * holds back, in order; retried by the timer, the next send to the
     * node and the sender's CREDITS polls (extoll-velo.c).
     */
    GQueue velo_held;
    QEMUTimer *velo_timer;
    bool velo_held_listed;  /* counted in ExtollState.velo_held_peers */
    QEMUTimer *wait_timer;  /* answers that do not come */
};

typedef struct ExtNoti {
    uint64_t w0, w1;
} ExtNoti;

/* An accepted RMA command waiting for room in the transmit queues. */
typedef struct ExtCmd {
    uint64_t w[3];
    uint8_t opts;
    uint16_t prot;          /* RMA_PROT of the VPID when the command was taken */
} ExtCmd;

typedef struct ExtVpid {
    uint32_t ctrl;
    uint64_t velo_ring;
    uint32_t velo_slots;
    uint32_t velo_wp;
    uint64_t notiq;
    uint32_t notiq_entries;
    uint32_t notiq_wp;
    uint32_t velo_rx_count;
    uint32_t velo_rx_polled;    /* velo_rx_count at the last CREDITS read */
    uint64_t noti_count;    /* notifications written (EXTOLL_RMA_NOTI_COUNT) */
    uint64_t noti_polled;   /* noti_count at the last NOTI_COUNT read */
    uint16_t velo_prot;     /* EXTOLL_VPID_VELO_PROT */
    /*
     * The ring is exported for direct delivery (fabric-direct.h): its
     * write index lives in the shared queue record; what peers wrote is
     * folded into velo_wp / velo_rx_count / counters by extoll_velo_sync().
     */
    bool velo_direct;
    uint64_t velo_direct_seen;  /* the record's delivered count, folded */
    uint16_t rma_prot;      /* EXTOLL_VPID_RMA_PROT */
    /*
     * The notification queue is exported (record EXT_NOTI_Q): peers that
     * put or get directly write notifications into it; folded by
     * extoll_noti_sync() as for VELO.  noti_hold: peers take the rings
     * while the backlog holds notifications.
     */
    bool noti_direct;
    bool noti_hold;
    uint64_t noti_direct_seen;
    /* VELO requester page */
    uint64_t velo_hdr;
    bool velo_hdr_valid;
    uint32_t velo_mask;
    uint64_t velo_data[15];
    uint32_t velo_credits;
    uint64_t velo_drops;
    uint8_t velo_gen;
    /* RMA */
    uint64_t rma_cmd[EXTOLL_RMA_PAGES_PER_VPID][3];
    uint8_t rma_mask[EXTOLL_RMA_PAGES_PER_VPID];
    uint32_t rma_pending;
    uint64_t rma_drops;
    uint8_t rma_gen;
    int32_t *locks;         /* [2][EXTOLL_RMA_LOCKS], allocated on first use */
    GQueue backlog;         /* ExtNoti* waiting for room in the queue */
    GQueue cmdq;            /* ExtCmd* accepted, not yet executed */
} ExtVpid;

struct ExtollState {
    PCIDevice parent_obj;

    MemoryRegion bar_ctrl, bar_velo, bar_rma;
    MemoryRegion bar_velo_win;  /* RAM: VELO send windows, one page per VPID */
    uint8_t *velo_win;
    uint32_t velo_held_peers;   /* peers with held VELO messages */
    uint64_t velo_credit_reads; /* QOM velo-credit-reads */
    /* property velo-credits: VELO messages in flight per VPID */
    uint32_t velo_credits_max;
    bool vcpu_polling;          /* inside the CREDITS read's fabric poll */

    FabricNic nic;          /* properties and fabric transport */
    uint32_t epoch;
    uint32_t retx_max;      /* property retx-max: retransmission budget */
    int64_t answer_wait_ns; /* how long an answer may be silent, see realize */
    uint64_t atu_base;
    uint32_t atu_entries;
    ExtVpid vpid[EXTOLL_NUM_VPIDS];
    ExtPeer **peers;        /* [num_nodes], lazily allocated */
    uint64_t txq_bytes;     /* payload bytes in all transmit queues */
    unsigned cmdq_len;      /* ExtCmd in all VPIDs' cmdq */
    QEMUBH *cmdq_bh;        /* runs them once the transmit queues drain */
    uint64_t counters[EXTOLL_NUM_COUNTERS];
    GQueue loopq;           /* GByteArray* packets to our own node */
    QEMUBH *loop_bh;
    QEMUBH *ack_bh;         /* sends delayed ACKs */
    GQueue ack_peers;       /* ExtPeer* with ack_due set */
    QEMUTimer *poll_timer;  /* retries notification backlogs */
    QEMUTimer *resume_timer; /* looks for room for NACKed peers */
    GQueue nack_peers;      /* ExtPeer* with nacked set */
};

/* Direct delivery record of VPID vi's notification queue (VELO: vi) */
#define EXT_NOTI_Q(vi)      (EXTOLL_NUM_VPIDS + (vi))
QEMU_BUILD_BUG_ON(EXT_NOTI_Q(EXTOLL_NUM_VPIDS) > FABRIC_DIRECT_QUEUES);

/* ATU: one physically contiguous piece of a translated range */
typedef struct ExtSeg {
    uint64_t bus;
    uint32_t len;
} ExtSeg;

/* What every fragment of a put or of a get response carries (P_*). */
typedef struct ExtXfer {
    uint8_t kind;           /* K_PUT or K_GETRSP */
    uint8_t svpid, dvpid, gen;
    uint16_t prot;          /* D_PROT */
    uint16_t tag;           /* D_TAG */
    uint8_t cmd, spec, mode;
    uint8_t flags;          /* F_ERR or 0, on top of F_FIRST / F_LAST */
    uint64_t addr;          /* destination of byte 0 */
    uint64_t echo;          /* origin address of byte 0 / immediate value */
} ExtXfer;

/* Where the payload of a transfer comes from. */
typedef struct ExtSrc {
    const uint8_t *buf;     /* the bytes, or NULL: read them from memory */
    unsigned vpid;          /* ... as this VPID */
    unsigned prot;          /* ... with this protection ID */
    bool te;                /* ... at this NLA (te) or bus address */
    uint64_t addr;
} ExtSrc;

/*
 * The payload of a received packet: in the packet after its header
 * (datagram, loopback: data NULL) or apart (bulk record).
 */
typedef struct ExtRxData {
    const uint8_t *data;
    size_t dlen;
} ExtRxData;

/* ------------------------------------------------------------------ */
/* extoll-atu.c: DMA helpers, protection IDs, ATU */

bool extoll_dma_read(ExtollState *s, uint64_t addr, void *buf, uint64_t len);
bool extoll_dma_write(ExtollState *s, uint64_t addr, const void *buf,
                      uint64_t len);
bool extoll_read_u64(ExtollState *s, uint64_t addr, uint64_t *v);
bool extoll_write_u64(ExtollState *s, uint64_t addr, uint64_t v);
uint16_t extoll_pkt_prot(const uint8_t *b);
void extoll_prot_refused(ExtollState *s, const char *what, uint32_t node,
                         unsigned svpid, unsigned dvpid, unsigned prot,
                         unsigned expected);
GArray *extoll_translate(ExtollState *s, unsigned vpid, unsigned prot,
                         bool te, uint64_t addr, uint32_t len,
                         uint64_t perm);
bool extoll_mem_rw(ExtollState *s, unsigned vpid, unsigned prot, bool te,
                   uint64_t addr, void *buf, uint32_t len, bool write);
void extoll_atu_fence(ExtollState *s);

/*
 * A VPID's memory queue that peers write themselves through record rec of
 * the fabric's direct-delivery file (its VELO ring, its notification queue)
 */
int extoll_dq_export(ExtollState *s, unsigned rec, uint64_t base,
                     uint32_t entry_size, uint32_t entries,
                     uint32_t status_off, uint16_t prot, uint64_t *seen);
uint64_t extoll_dq_sync(ExtollState *s, unsigned rec, uint32_t entries,
                        uint64_t *seen, uint32_t *wp);

/* ------------------------------------------------------------------ */
/* extoll-noti.c: notification queues */

bool extoll_rma_on(ExtVpid *v);
bool extoll_rma_addr_ok(ExtVpid *v, bool te);
void extoll_noti_export(ExtollState *s, unsigned vi);
void extoll_noti_sync(ExtollState *s, unsigned vi);
void extoll_noti_unexport(ExtollState *s, unsigned vi);
bool extoll_noti_room(ExtollState *s, ExtVpid *v);
void extoll_noti_write(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1);
bool extoll_noti_try(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1);
void extoll_noti_post(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1);
void extoll_poll_timer(void *opaque);
void extoll_backlog_clear(ExtVpid *v);

/* ------------------------------------------------------------------ */
/* extoll-stream.c: reliable stream, failures, ACKs; extoll-stream-rx.c:
 * receive side, RESUME, receive dispatch */

ExtPeer *extoll_peer(ExtollState *s, uint32_t node);
unsigned extoll_kind_chan(uint8_t kind);    /* a kind's stream channel */
void extoll_rx_ack(ExtollState *s, uint32_t src, uint8_t type,
                   const uint8_t *b, size_t len);
void extoll_send_ack(ExtollState *s, uint32_t dst, uint8_t type,
                     unsigned chan, uint32_t epoch, uint32_t seq);
void extoll_loop_bh(void *opaque);
int64_t extoll_rto_ns(unsigned retries);
uint8_t *extoll_pkt_new(ExtollState *s, ExtPeer *p, ExtPkt **out,
                        uint8_t kind, unsigned svpid, unsigned dvpid,
                        uint8_t gen, uint16_t prot, uint16_t tag,
                        size_t len);
void extoll_pkt_queue(ExtollState *s, ExtPeer *p, ExtPkt *k);
bool extoll_xfer_queue(ExtollState *s, ExtPeer *p, const ExtXfer *x,
                       const ExtSrc *src, uint32_t size);
bool extoll_wait_answered(ExtollState *s, ExtPeer *p, const uint8_t *b,
                          bool last);
void extoll_wait_add(ExtollState *s, ExtPeer *p, unsigned vi,
                     uint16_t prot, uint16_t tag, uint64_t w0, uint64_t w1);
void extoll_peer_free(ExtPeer *p);
void extoll_nack_watch(ExtollState *s, ExtPeer *p, unsigned vpid,
                       bool velo);
void extoll_resume_timer(void *opaque);
void extoll_rx(void *opaque, uint32_t src, uint8_t type,
               const void *payload, size_t len);
void extoll_bulk_rx(void *opaque, uint32_t src, uint8_t type,
                    const void *hdr, size_t hlen,
                    const void *data, size_t dlen, bool data_ok);
void extoll_ack_bh(void *opaque);

/* ------------------------------------------------------------------ */
/* extoll-velo.c: VELO */

void extoll_velo_check(ExtollState *s, unsigned vi);
void extoll_velo_win_send(ExtollState *s, unsigned vi, uint64_t h);
void extoll_velo_export(ExtollState *s, unsigned vi);
void extoll_velo_held_drain(ExtollState *s, ExtPeer *p);
void extoll_velo_held_poll(ExtollState *s);
void extoll_velo_held_free_all(ExtPeer *p);
void extoll_velo_unexport(ExtollState *s, unsigned vi);
void extoll_velo_sync(ExtollState *s, unsigned vi);
bool extoll_velo_rx(ExtollState *s, uint32_t src, const uint8_t *b,
                    size_t len);

/* ------------------------------------------------------------------ */
/* extoll-rma.c: RMA origin and target */

uint32_t extoll_rma_free(ExtVpid *v);
void extoll_rma_cmd(ExtollState *s, unsigned vi, unsigned opts);
void extoll_cmdq_bh(void *opaque);
void extoll_cmdq_clear(ExtollState *s, ExtVpid *v);
bool extoll_put_rx(ExtollState *s, ExtPeer *p, const uint8_t *b, size_t len,
                   ExtRxData rd);
bool extoll_notiput_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                       size_t len);
bool extoll_done_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                    size_t len);
bool extoll_getreq_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                      size_t len);
bool extoll_lockreq_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                       size_t len);
bool extoll_lockrsp_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                       size_t len);
bool extoll_getrsp_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                      size_t len, ExtRxData rd);
uint32_t extoll_last_off(uint32_t len);
unsigned extoll_noti_mode(unsigned opts);

/* ------------------------------------------------------------------ */
/* extoll-rma-direct.c: puts and gets by direct delivery */

/* A put, immediate put or get of ours as ext_rma_exec() took it */
typedef struct ExtDirectCmd {
    unsigned vi, dv, cmd, spec, opts;
    uint16_t prot;
    uint64_t laddr;         /* put: source, get: destination (ours) */
    uint64_t raddr;         /* the target's */
    uint32_t size;
    const uint8_t *imm;     /* immediate put: the bytes, laddr the value */
} ExtDirectCmd;

bool extoll_rma_direct(ExtollState *s, ExtPeer *p, const ExtDirectCmd *c);
bool extoll_rma_direct_notiput(ExtollState *s, ExtPeer *p,
                               const ExtDirectCmd *c);

#endif
