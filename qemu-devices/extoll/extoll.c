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
 * (ext_tx_fail()).  RMA commands are also followed until their answer
 * arrives (ExtWait), so that a target that took a command and then fell
 * silent ends it with an error too.  Packets to our own node take the same
 * path through a loopback queue drained by a bottom half.
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
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qemu/guest-random.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "sysemu/dma.h"
#include "qom/object.h"

#include "extoll_hw.h"
#include "fabric-nic.h"
#include "trace.h"

/* A guest programming error: LOG_GUEST_ERROR and the trace event 'event'. */
#define EXTOLL_GUEST_ERR(event, fmt, ...) \
    FABRIC_GUEST_ERR(event, "extoll: " fmt, ## __VA_ARGS__)

#define TYPE_EXTOLL "extoll"
OBJECT_DECLARE_SIMPLE_TYPE(ExtollState, EXTOLL)

/* ------------------------------------------------------------------ */
/* Wire format of the EXTOLL fabric (fabric header 'type' byte) */

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
#define P_ECHO      (D_HDR + 20)    /* u64 origin source address of the fragment / imm value */
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
#define EXT_RESUME_ANY_NS   (500 * SCALE_US) /* ... or one, after this long */
#define EXT_TXQ_BYTES_MAX   (48u << 20)      /* queued payload that defers new commands */
#define EXT_BACKLOG_MAX     4096             /* local notifications waiting per VPID */

static unsigned extoll_dma_depth;   /* DMA in progress, see fabric-nic.h */

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
    QEMUTimer *timer;
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
    uint16_t velo_prot;     /* EXTOLL_VPID_VELO_PROT */
    uint16_t rma_prot;      /* EXTOLL_VPID_RMA_PROT */
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
    uint32_t velo_credits_max;  /* property velo-credits: VELO messages in flight per VPID */
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

static void ext_rx(void *opaque, uint32_t src, uint8_t type,
                   const void *payload, size_t len);

/* ------------------------------------------------------------------ */
/* DMA helpers */

static bool ext_dma_rw(ExtollState *s, uint64_t addr, void *buf,
                       uint64_t len, DMADirection dir)
{
    if (fabric_nic_dma_rw(PCI_DEVICE(s), &extoll_dma_depth, addr, buf, len,
                          dir) != MEMTX_OK) {
        s->counters[EXTOLL_CNT_DMA_ERRORS]++;
        return false;
    }
    return true;
}

static bool ext_dma_read(ExtollState *s, uint64_t addr, void *buf, uint64_t len)
{
    return ext_dma_rw(s, addr, buf, len, DMA_DIRECTION_TO_DEVICE);
}

static bool ext_dma_write(ExtollState *s, uint64_t addr, const void *buf,
                          uint64_t len)
{
    return ext_dma_rw(s, addr, (void *)buf, len, DMA_DIRECTION_FROM_DEVICE);
}

static bool ext_read_u64(ExtollState *s, uint64_t addr, uint64_t *v)
{
    uint8_t b[8];

    if (!ext_dma_read(s, addr, b, 8)) {
        return false;
    }
    *v = ldq_le_p(b);
    return true;
}

/* One store: status words and tail markers are polled and cleared by the
 * guest (see fabric_nic_dma_store()). */
static bool ext_write_u64(ExtollState *s, uint64_t addr, uint64_t v)
{
    if (fabric_nic_dma_store(PCI_DEVICE(s), &extoll_dma_depth, addr, v, 8)
        != MEMTX_OK) {
        s->counters[EXTOLL_CNT_DMA_ERRORS]++;
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Protection IDs */

/* Protection ID of a DATA packet */
static uint16_t ext_pkt_prot(const uint8_t *b)
{
    return lduw_le_p(b + D_PROT);
}

/*
 * A packet for local VPID dvpid refused because its protection ID differs
 * from the one of the VPID part it is for (counted once per refused VELO
 * message, RMA command or response).
 */
static void ext_prot_refused(ExtollState *s, const char *what, uint32_t node,
                             unsigned svpid, unsigned dvpid, unsigned prot,
                             unsigned expected)
{
    s->counters[EXTOLL_CNT_PROT_REFUSED]++;
    EXTOLL_GUEST_ERR(extoll_err_prot, "%s from node %u VPID %u to VPID %u "
                     "refused: protection ID 0x%04x, VPID has 0x%04x",
                     what, node, svpid, dvpid, prot, expected);
}

/* ------------------------------------------------------------------ */
/* ATU */

typedef struct ExtSeg {
    uint64_t bus;
    uint32_t len;
} ExtSeg;

/*
 * Translate [addr, addr + len) for VPID vpid and protection ID prot with
 * permission perm (EXTOLL_ATU_READ / _WRITE).  te = NLA addressing, else
 * bus addresses.  prot is the ID of the access: the packet's for remote
 * addresses, the posting VPID's RMA_PROT for local ones.  Returns a GArray
 * of ExtSeg, or NULL on a fault.  The ATU entries are read EXT_ATU_BATCH at
 * a time.
 */
#define EXT_ATU_BATCH 64

static GArray *ext_translate(ExtollState *s, unsigned vpid, unsigned prot,
                             bool te, uint64_t addr, uint32_t len,
                             uint64_t perm)
{
    GArray *a = g_array_new(false, false, sizeof(ExtSeg));
    uint64_t ent[EXT_ATU_BATCH], first = 0, cnt = 0;

    if (len == 0) {
        return a;
    }
    if (addr + len < addr) {
        goto fault;
    }
    if (!te) {
        ExtSeg sg = { .bus = addr, .len = len };

        g_array_append_val(a, sg);
        return a;
    }
    while (len) {
        uint64_t idx = addr >> 12, e;
        uint32_t off = addr & 0xfff, n = MIN(len, 4096 - off);

        if (!s->atu_entries || idx >= s->atu_entries) {
            goto fault;
        }
        if (idx < first || idx >= first + cnt) {
            cnt = MIN(MIN((off + (uint64_t)len + 4095) >> 12, EXT_ATU_BATCH),
                      s->atu_entries - idx);
            first = idx;
            if (!ext_dma_read(s, s->atu_base + 8 * idx, ent, 8 * cnt)) {
                goto fault;
            }
        }
        e = le64_to_cpu(ent[idx - first]);
        if (!(e & EXTOLL_ATU_VALID) || (e & perm) != perm ||
            EXTOLL_ATU_VPID(e) != vpid) {
            goto fault;
        }
        if (EXTOLL_ATU_PROT(e) != prot) {
            s->counters[EXTOLL_CNT_PROT_REFUSED]++;
            EXTOLL_GUEST_ERR(extoll_err_atu_prot, "ATU entry %" PRIu64
                             " (VPID %u) refused: protection ID 0x%04x, "
                             "entry has 0x%04x", idx, vpid, prot,
                             (unsigned)EXTOLL_ATU_PROT(e));
            goto fault;
        }
        ExtSeg sg = { .bus = EXTOLL_ATU_ADDR(e) + off, .len = n };
        ExtSeg *last = a->len ? &g_array_index(a, ExtSeg, a->len - 1) : NULL;

        if (last && last->bus + last->len == sg.bus) {
            last->len += n;
        } else {
            g_array_append_val(a, sg);
        }
        addr += n;
        len -= n;
    }
    return a;
fault:
    s->counters[EXTOLL_CNT_ATU_FAULTS]++;
    g_array_free(a, true);
    return NULL;
}

static bool ext_mem_rw(ExtollState *s, unsigned vpid, unsigned prot, bool te,
                       uint64_t addr, void *buf, uint32_t len, bool write)
{
    GArray *a = ext_translate(s, vpid, prot, te, addr, len,
                              write ? EXTOLL_ATU_WRITE : EXTOLL_ATU_READ);
    uint8_t *p = buf;
    bool ok = true;

    if (!a) {
        return false;
    }
    for (unsigned i = 0; i < a->len && ok; i++) {
        ExtSeg *sg = &g_array_index(a, ExtSeg, i);
        bool last = i + 1 == a->len;

        if (!write) {
            ok = ext_dma_read(s, sg->bus, p, sg->len);
        } else if (last && sg->len > 8) {
            /*
             * The last quadword becomes visible only after everything
             * below it (clients poll a tail flag at the end of a put).
             */
            ok = ext_dma_write(s, sg->bus, p, sg->len - 8);
            ok = ok && ext_write_u64(s, sg->bus + sg->len - 8,
                                     ldq_le_p(p + sg->len - 8));
        } else {
            if (last) {
                smp_wmb();
            }
            ok = ext_dma_write(s, sg->bus, p, sg->len);
        }
        p += sg->len;
    }
    g_array_free(a, true);
    return ok;
}

/* ------------------------------------------------------------------ */
/* Notification queue */

static bool ext_rma_on(ExtVpid *v)
{
    return v->ctrl & EXTOLL_VPID_RMA;
}

/* RMA on, for NLAs (te) or, if the VPID may use them, bus addresses. */
static bool ext_rma_addr_ok(ExtVpid *v, bool te)
{
    return ext_rma_on(v) && (te || (v->ctrl & EXTOLL_VPID_RMA_PHYS));
}

/* Room for one entry at the write index (and nothing waiting before it). */
static bool ext_noti_room(ExtollState *s, ExtVpid *v)
{
    uint64_t w1;

    if (!ext_rma_on(v) || !v->notiq_entries) {
        return false;
    }
    if (!ext_read_u64(s, v->notiq + 16ull * v->notiq_wp + 8, &w1)) {
        return false;
    }
    return w1 == 0;
}

/* Write one entry; caller checked ext_noti_room(). */
static void ext_noti_write(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1)
{
    uint64_t a = v->notiq + 16ull * v->notiq_wp;

    trace_extoll_noti_write(s->nic.node_id, v - s->vpid, v->notiq_wp, w0, w1);
    ext_write_u64(s, a, w0);
    ext_write_u64(s, a + 8, w1);
    v->notiq_wp = (v->notiq_wp + 1) & (v->notiq_entries - 1);
    s->counters[EXTOLL_CNT_NOTI_WRITTEN]++;
    if ((w1 >> 61) & 7) {
        s->counters[EXTOLL_CNT_RMA_ERRORS]++;
    }
}

/* Remote-caused notification: false = no room now (caller NACKs). */
static bool ext_noti_try(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1)
{
    if (!g_queue_is_empty(&v->backlog) || !ext_noti_room(s, v)) {
        trace_extoll_noti_full(s->nic.node_id, v - s->vpid);
        s->counters[EXTOLL_CNT_NOTI_FULL]++;
        return false;
    }
    ext_noti_write(s, v, w0, w1);
    return true;
}

static void ext_backlog_flush(ExtollState *s, ExtVpid *v)
{
    while (!g_queue_is_empty(&v->backlog) && ext_noti_room(s, v)) {
        ExtNoti *n = g_queue_pop_head(&v->backlog);

        ext_noti_write(s, v, n->w0, n->w1);
        g_free(n);
    }
}

static void ext_arm_poll(ExtollState *s)
{
    if (!timer_pending(s->poll_timer)) {
        timer_mod(s->poll_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + EXT_POLL_NS);
    }
}

/* Locally caused notification (bounded by our own commands): never lost
 * unless the backlog overflows (counted). */
static void ext_noti_post(ExtollState *s, ExtVpid *v, uint64_t w0, uint64_t w1)
{
    if (!ext_rma_on(v) || !v->notiq_entries) {
        return;
    }
    ext_backlog_flush(s, v);
    if (g_queue_is_empty(&v->backlog) && ext_noti_room(s, v)) {
        ext_noti_write(s, v, w0, w1);
        return;
    }
    s->counters[EXTOLL_CNT_NOTI_FULL]++;
    if (g_queue_get_length(&v->backlog) >= EXT_BACKLOG_MAX) {
        return;     /* lost; counted as NOTI_FULL */
    }
    ExtNoti *n = g_new(ExtNoti, 1);
    n->w0 = w0;
    n->w1 = w1;
    g_queue_push_tail(&v->backlog, n);
    ext_arm_poll(s);
}

static void ext_poll_timer(void *opaque)
{
    ExtollState *s = opaque;
    bool more = false;

    for (unsigned i = 0; i < EXTOLL_NUM_VPIDS; i++) {
        ext_backlog_flush(s, &s->vpid[i]);
        more |= !g_queue_is_empty(&s->vpid[i].backlog);
    }
    if (more) {
        ext_arm_poll(s);
    }
}

static void ext_backlog_clear(ExtVpid *v)
{
    ExtNoti *n;

    while ((n = g_queue_pop_head(&v->backlog))) {
        g_free(n);
    }
}

/* Notification mode bits from requester page options */
static unsigned ext_mode(unsigned opts)
{
    return ((opts & EXTOLL_RMA_OPT_IRQ) ? EXTOLL_NOTI_MODE_IRQ : 0) |
           ((opts & EXTOLL_RMA_OPT_TE) ? EXTOLL_NOTI_MODE_TE : 0);
}

/* ------------------------------------------------------------------ */
/* Reliable stream, transmit side */

static void ext_timer_cb(void *opaque);
static void ext_stall_cb(void *opaque);
static void ext_wait_timer(void *opaque);

static unsigned ext_kind_chan(uint8_t kind)
{
    return kind == K_DONE || kind == K_GETRSP || kind == K_LOCKRSP;
}

static ExtPeer *ext_peer(ExtollState *s, uint32_t node)
{
    ExtPeer *p;

    if (node >= s->nic.num_nodes) {
        return NULL;
    }
    p = s->peers[node];
    if (!p) {
        p = g_new0(ExtPeer, 1);
        p->s = s;
        p->node = node;
        for (unsigned c = 0; c < EXT_NCHAN; c++) {
            ExtTx *t = &p->tx[c];

            t->peer = p;
            t->chan = c;
            t->epoch = s->epoch;
            g_queue_init(&t->txq);
            t->timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_timer_cb, t);
            t->stall_timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_stall_cb,
                                          t);
        }
        g_queue_init(&p->wait);
        p->wait_timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_wait_timer, p);
        s->peers[node] = p;
    }
    return p;
}

/*
 * A packet of len bytes to this node itself, queued for the loopback
 * bottom half (which runs under the BQL, so after the caller filled it):
 * returns where its len bytes go.
 */
static uint8_t *ext_loop_reserve(ExtollState *s, uint8_t type, size_t len)
{
    GByteArray *b = g_byte_array_sized_new(len + 1);

    g_byte_array_set_size(b, len + 1);
    b->data[0] = type;
    g_queue_push_tail(&s->loopq, b);
    qemu_bh_schedule(s->loop_bh);
    return b->data + 1;
}

static void ext_xmit(ExtollState *s, uint32_t dst, uint8_t type,
                     const void *buf, size_t len)
{
    if (dst == s->nic.node_id) {
        memcpy(ext_loop_reserve(s, type, len), buf, len);
        return;
    }
    fabric_nic_send(&s->nic, dst, type, buf, len);
}

/*
 * The payload of a put from memory is not copied when the command is taken:
 * it is read from the origin's memory every time its packet is sent (as
 * the real NIC's requester reads it), straight into the bulk ring.  The
 * source is translated again each time under the BQL, so nothing is read
 * behind an ATU fence (uapi/extoll_hw.h 7) or for an owner that is gone; a
 * source that became unreadable turns the fragment into an error fragment
 * (F_ERR, zeros, kept for retransmissions): the target writes nothing and
 * the requester gets EXTOLL_NOTI_ERR_CMPL.  The requester notification
 * follows K_DONE, so every fragment has been taken when the user may reuse
 * the buffer.  buf holds the header (P_DATA bytes) and room for the data.
 */
static void ext_put_read(ExtollState *s, ExtPkt *k, uint8_t *buf)
{
    unsigned vi = k->data[D_SVPID];
    ExtVpid *v = &s->vpid[vi];
    bool te = k->data[P_MODE] & EXTOLL_RMA_OPT_TE;
    uint32_t n = k->len - P_DATA;

    if (!(k->data[P_FLAGS] & F_ERR) && ext_rma_addr_ok(v, te) &&
        v->rma_gen == k->data[D_GEN] &&
        ext_mem_rw(s, vi, ext_pkt_prot(k->data), te,
                   ldq_le_p(k->data + P_ECHO), buf + P_DATA, n, false)) {
        return;
    }
    if (!(k->data[P_FLAGS] & F_ERR)) {
        trace_extoll_put_source_gone(s->nic.node_id, vi,
                                     ldq_le_p(k->data + P_ECHO), n);
        k->data[P_FLAGS] |= F_ERR;
    }
    buf[P_FLAGS] = k->data[P_FLAGS];
    memset(buf + P_DATA, 0, n);
}

/*
 * A DATA packet to another node goes into the bulk ring towards it: the
 * protocol header as the record header, the payload of a put or get
 * response as its data.  Returns false when the ring is full (nothing
 * sent, try again later); a packet that is lost otherwise (no fabric, file
 * error) is the retransmission's business.
 */
static bool ext_xmit_data(ExtollState *s, uint32_t dst, ExtPkt *k)
{
    uint8_t kind = k->data[D_KIND];
    size_t hlen = k->len;
    uint8_t *buf;
    int r;

    if (k->lazy && dst == s->nic.node_id) {
        /* header, then the payload read straight into the loopback packet */
        buf = ext_loop_reserve(s, EXT_T_DATA, k->len);
        memcpy(buf, k->data, P_DATA);
        ext_put_read(s, k, buf);
        return true;
    }
    if (dst == s->nic.node_id || !s->nic.fq) {
        /* a stored packet to this node, or no fabric (nothing is sent,
         * so a lazy payload need not be read) */
        ext_xmit(s, dst, EXT_T_DATA, k->data, k->lazy ? P_DATA : k->len);
        return true;
    }
    if ((kind == K_PUT || kind == K_GETRSP) && hlen > P_DATA) {
        hlen = P_DATA;
    }
    if (!k->lazy) {
        r = fabric_bulk_send(fabric_qemu_fabric(s->nic.fq), dst, EXT_T_DATA,
                             k->data, hlen, k->data + hlen, k->len - hlen);
    } else {
        /* header, then the payload read straight into the ring */
        buf = fabric_bulk_reserve(fabric_qemu_fabric(s->nic.fq), dst, hlen,
                                  k->len - hlen, &r);
        if (buf) {
            memcpy(buf, k->data, hlen);
            ext_put_read(s, k, buf);
            r = fabric_bulk_commit(fabric_qemu_fabric(s->nic.fq), EXT_T_DATA);
        }
    }
    if (r == -EAGAIN) {
        trace_extoll_tx_ring_full(s->nic.node_id, dst,
                                  ldl_le_p(k->data + D_SEQ));
        return false;
    }
    return true;
}

static void ext_loop_bh(void *opaque)
{
    ExtollState *s = opaque;
    unsigned budget = 256;
    GByteArray *b;

    while (budget-- && (b = g_queue_pop_head(&s->loopq))) {
        ext_rx(s, s->nic.node_id, b->data[0], b->data + 1, b->len - 1);
        g_byte_array_free(b, true);
    }
    if (!g_queue_is_empty(&s->loopq)) {
        qemu_bh_schedule(s->loop_bh);
    }
}

static int64_t ext_rto_ns(unsigned retries)
{
    return fabric_nic_backoff(EXT_RTO_MIN_NS, retries, EXT_RTO_MAX_NS);
}

static int64_t ext_rto(ExtTx *t)
{
    return ext_rto_ns(t->retries);
}

static void ext_arm(ExtTx *t, int64_t ns)
{
    timer_mod(t->timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + ns);
    t->stall_armed = false;
}

static void ext_push(ExtTx *t)
{
    ExtollState *s = t->peer->s;
    bool sent = false;

    if (t->paused) {
        return;
    }
    while (t->next_unsent && t->inflight < EXT_WINDOW) {
        ExtPkt *k = t->next_unsent->data;

        if (!ext_xmit_data(s, t->peer->node, k)) {
            if (!timer_pending(t->stall_timer)) {
                timer_mod(t->stall_timer,
                          qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                          EXT_STALL_NS);
            }
            /*
             * A ring that a dead node never drains counts as silence too;
             * once something is sent, the timeout counts from then.
             */
            if (!timer_pending(t->timer)) {
                ext_arm(t, ext_rto(t));
                t->stall_armed = true;
            }
            break;
        }
        t->next_unsent = t->next_unsent->next;
        t->inflight++;
        trace_extoll_tx(s->nic.node_id, t->peer->node, t - t->peer->tx, k->seq,
                        k->data[D_KIND], k->len);
        sent = true;
    }
    if (sent && (t->stall_armed || !timer_pending(t->timer))) {
        ext_arm(t, ext_rto(t));
    }
}

/* The bulk ring towards the peer was full: send what is waiting. */
static void ext_stall_cb(void *opaque)
{
    ext_push(opaque);
}

/* A packet of len bytes of which the first 'stored' are kept here. */
static uint8_t *ext_pkt_alloc(ExtPkt **out, uint8_t kind, unsigned svpid,
                              unsigned dvpid, uint8_t gen, uint16_t prot,
                              uint16_t tag, size_t len, size_t stored)
{
    ExtPkt *k = g_malloc(sizeof(*k) + stored);

    /* the payload of a put or get response is written over completely */
    memset(k, 0, sizeof(*k) + MIN(stored, P_DATA));
    k->len = len;
    k->credit_vpid = -1;
    k->lazy = stored < len;
    k->wait = NULL;
    k->data[D_KIND] = kind;
    k->data[D_SVPID] = svpid;
    k->data[D_DVPID] = dvpid;
    k->data[D_GEN] = gen;
    stw_le_p(k->data + D_PROT, prot);
    stw_le_p(k->data + D_TAG, tag);
    *out = k;
    return k->data;
}

static uint8_t *ext_pkt_new(ExtollState *s, ExtPeer *p, ExtPkt **out,
                            uint8_t kind, unsigned svpid, unsigned dvpid,
                            uint8_t gen, uint16_t prot, uint16_t tag,
                            size_t len)
{
    return ext_pkt_alloc(out, kind, svpid, dvpid, gen, prot, tag, len, len);
}

static void ext_pkt_queue(ExtollState *s, ExtPeer *p, ExtPkt *k)
{
    ExtTx *t = &p->tx[ext_kind_chan(k->data[D_KIND])];

    stl_le_p(k->data + D_EPOCH, t->epoch);
    k->seq = t->next_seq++;
    stl_le_p(k->data + D_SEQ, k->seq);
    s->txq_bytes += k->len;
    s->counters[EXTOLL_CNT_TX_PACKETS]++;
    g_queue_push_tail(&t->txq, k);
    if (!t->next_unsent) {
        t->next_unsent = g_queue_peek_tail_link(&t->txq);
    }
    ext_push(t);
}

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

/* Reads n bytes at *pos of the translated range a (advances *pos). */
static bool ext_seg_read(ExtollState *s, GArray *a, uint64_t *pos,
                         uint8_t *dst, uint32_t n)
{
    uint64_t skip = *pos;

    *pos += n;
    for (unsigned i = 0; i < a->len && n; i++) {
        ExtSeg *sg = &g_array_index(a, ExtSeg, i);
        uint32_t m;

        if (skip >= sg->len) {
            skip -= sg->len;
            continue;
        }
        m = MIN(n, sg->len - skip);
        if (!ext_dma_read(s, sg->bus + skip, dst, m)) {
            return false;
        }
        dst += m;
        n -= m;
        skip = 0;
    }
    return n == 0;
}

/*
 * Queues size bytes as packets of EXT_CHUNK at most (size 0: one empty
 * packet).  The source is translated once here, so a bad one fails the
 * command (false, nothing queued).  A put from memory of more than one
 * packet keeps no copy of its payload (read when sent, ext_put_read()),
 * which spares bulk puts a malloc and a copy per packet; one packet is
 * read now, as before (a second translation at send time would cost more
 * than the copy).  A get response is read into its packets now, because
 * the responder notification that follows tells the responder its memory
 * has been read.
 */
static bool ext_xfer_queue(ExtollState *s, ExtPeer *p, const ExtXfer *x,
                           const ExtSrc *src, uint32_t size)
{
    GQueue q = G_QUEUE_INIT;
    GArray *a = NULL;
    bool lazy = !src->buf && x->kind == K_PUT && size > EXT_CHUNK;
    uint64_t pos = 0;
    uint32_t off = 0;
    ExtPkt *k;

    if (!src->buf && size) {
        a = ext_translate(s, src->vpid, src->prot, src->te, src->addr, size,
                          EXTOLL_ATU_READ);
        if (!a) {
            return false;
        }
    }

    do {
        uint32_t n = MIN(size - off, EXT_CHUNK);
        uint8_t *d = ext_pkt_alloc(&k, x->kind, x->svpid, x->dvpid, x->gen,
                                   x->prot, x->tag, P_DATA + n,
                                   lazy ? P_DATA : P_DATA + n);

        d[P_CMD] = x->cmd;
        d[P_SPEC] = x->spec;
        d[P_MODE] = x->mode;
        d[P_FLAGS] = x->flags | (off == 0 ? F_FIRST : 0) |
                     (off + n == size ? F_LAST : 0);
        stq_le_p(d + P_ADDR, x->addr + off);
        stl_le_p(d + P_LEN, n);
        stq_le_p(d + P_ECHO, x->echo + off);
        g_queue_push_tail(&q, k);
        if (!n || lazy) {
            /* nothing to read now */
        } else if (src->buf) {
            memcpy(d + P_DATA, src->buf + off, n);
        } else if (!ext_seg_read(s, a, &pos, d + P_DATA, n)) {
            while ((k = g_queue_pop_head(&q))) {
                g_free(k);
            }
            g_array_free(a, true);
            return false;
        }
        off += n;
    } while (off < size);
    if (a) {
        g_array_free(a, true);
    }
    while ((k = g_queue_pop_head(&q))) {
        ext_pkt_queue(s, p, k);
    }
    return true;
}

static void ext_pkt_done(ExtollState *s, ExtPkt *k)
{
    if (k->wait) {
        k->wait->pkt = NULL;
    }
    if (k->credit_vpid >= 0) {
        ExtVpid *v = &s->vpid[k->credit_vpid];

        if (v->velo_gen == k->credit_gen &&
            v->velo_credits < s->velo_credits_max) {
            v->velo_credits++;
        }
    }
    s->txq_bytes -= k->len;
    g_free(k);
    if (s->cmdq_len && s->txq_bytes < EXT_TXQ_BYTES_MAX) {
        qemu_bh_schedule(s->cmdq_bh);
    }
}

/* ------------------------------------------------------------------ */
/* Failures: a silent stream, an answer that does not come */

/*
 * The RMA command of entry e (no longer queued) failed: the requester gets
 * its notification with EXTOLL_NOTI_ERR_REQ, whatever notifications the
 * command asked for (errors are always reported).  REQ because it is the
 * requester unit that gives up: the target never refused the command (that
 * is RESP or CMPL), it could not be reached or its answer was lost; a
 * destination node that does not exist at all reports REQ too.  The
 * command may nevertheless have been executed when only its acknowledgement
 * or its answer was lost.  A new owner of the VPID, or one with another
 * protection ID, hears nothing, as for answers (ext_command_finished()).
 */
static void ext_wait_fail(ExtollState *s, ExtPeer *p, ExtWait *e,
                          const char *why)
{
    ExtVpid *v = &s->vpid[e->vpid];

    trace_extoll_rma_failed(s->nic.node_id, e->vpid,
                            (unsigned)(e->w1 >> 51) & 0xf, p->node, why);
    if (e->pkt) {
        e->pkt->wait = NULL;
    }
    if (ext_rma_on(v) && v->rma_gen == e->gen) {
        if (v->rma_pending) {
            v->rma_pending--;
        }
        if (v->rma_prot == e->prot) {
            ext_noti_post(s, v, e->w0,
                          e->w1 | (uint64_t)EXTOLL_NOTI_ERR_REQ << 61);
        }
    }
    g_free(e);
}

/*
 * Answers may be silent for as long as the target's response stream keeps
 * trying to send them (its budget) and a little more: after
 * answer_wait_ns without any packet of that stream since the command was
 * acknowledged, the answer is lost.
 */
static void ext_wait_arm(ExtPeer *p, int64_t due)
{
    if (!timer_pending(p->wait_timer) ||
        (int64_t)timer_expire_time_ns(p->wait_timer) > due) {
        timer_mod(p->wait_timer, due);
    }
}

/*
 * Commands whose requests were all acknowledged have their answer queued
 * at the target (it queues the answer before it acknowledges), so the
 * oldest one fails when the target's response stream has been silent for
 * answer_wait_ns since it was acknowledged: that stream failed, or the
 * target is gone.  Commands not acknowledged yet are their own stream's
 * business (ext_tx_fail()); ext_ack_upto() arms the timer for them.
 */
static void ext_wait_timer(void *opaque)
{
    ExtPeer *p = opaque;
    ExtollState *s = p->s;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    ExtWait *e;

    while ((e = g_queue_peek_head(&p->wait)) && !e->pkt) {
        int64_t due = MAX(e->acked_ns, p->answer_ns) + s->answer_wait_ns;

        if (now < due) {
            ext_wait_arm(p, due);
            return;
        }
        g_queue_pop_head(&p->wait);
        s->counters[EXTOLL_CNT_RMA_NO_ANSWER]++;
        ext_wait_fail(s, p, e, "no answer");
    }
}

/*
 * Origin: the answer b to one of our commands to p arrived (all of it, or
 * a fragment of a get response when !last).  The target answers its
 * requests in order on one stream, so commands queued before this one
 * whose answer did not come will never get it (the target's response
 * stream failed, or the target restarted): they fail now.  Returns false
 * for an answer to a command that was already reported failed: dropped.
 */
static bool ext_wait_answered(ExtollState *s, ExtPeer *p, const uint8_t *b,
                              bool last)
{
    uint16_t tag = lduw_le_p(b + D_TAG);
    GList *l = p->wait.head;
    ExtWait *e;

    while (l && ((ExtWait *)l->data)->tag != tag) {
        l = l->next;
    }
    if (!l) {
        if (last) {
            trace_extoll_rma_late_answer(s->nic.node_id, p->node,
                                         b[D_DVPID], tag);
            s->counters[EXTOLL_CNT_RMA_LATE_ANSWERS]++;
        }
        return false;
    }
    while ((e = g_queue_peek_head(&p->wait)) != l->data) {
        g_queue_pop_head(&p->wait);
        s->counters[EXTOLL_CNT_RMA_NO_ANSWER]++;
        ext_wait_fail(s, p, e, "answer lost");
    }
    if (last) {
        g_queue_pop_head(&p->wait);
        if (e->pkt) {
            e->pkt->wait = NULL;   /* answered before the ACK came */
        }
        g_free(e);
    }
    return true;
}

/*
 * Origin: follow the command whose requests were just queued on p's
 * channel 0 (its last request is the tail of the queue) until its answer.
 */
static void ext_wait_add(ExtollState *s, ExtPeer *p, unsigned vi,
                         uint16_t prot, uint16_t tag, uint64_t w0, uint64_t w1)
{
    ExtWait *e = g_new0(ExtWait, 1);
    ExtPkt *k = g_queue_peek_tail(&p->tx[0].txq);

    g_assert(k && lduw_le_p(k->data + D_TAG) == tag);
    e->tag = tag;
    e->vpid = vi;
    e->gen = s->vpid[vi].rma_gen;
    e->prot = prot;
    e->w0 = w0;
    e->w1 = w1;
    e->pkt = k;
    k->wait = e;
    g_queue_push_tail(&p->wait, e);
}

/* A packet of a failed stream: counted, and told to whoever posted it. */
static void ext_pkt_fail(ExtollState *s, ExtPeer *p, ExtPkt *k)
{
    ExtWait *e = k->wait;
    uint16_t tag = lduw_le_p(k->data + D_TAG);

    s->counters[EXTOLL_CNT_TX_FAILED]++;
    switch (k->data[D_KIND]) {
    case K_VELO:
        /*
         * Its credit comes back (ext_pkt_done()).  VELO has no completion:
         * the drop count of the sender's page is all it can learn of it.
         */
        if (k->credit_vpid >= 0 &&
            s->vpid[k->credit_vpid].velo_gen == k->credit_gen) {
            s->vpid[k->credit_vpid].velo_drops++;
        }
        s->counters[EXTOLL_CNT_VELO_TX_DROPPED]++;
        trace_extoll_velo_drop(s->nic.node_id, k->data[D_SVPID],
                               k->data[V_LEN], k->credit_vpid >= 0 ?
                               s->vpid[k->credit_vpid].velo_credits : 0);
        return;
    case K_PUT:
    case K_NOTIPUT:
    case K_GETREQ:
    case K_LOCKREQ:
        /* the command's first packet here reports it, once */
        if (!e) {
            for (GList *l = p->wait.head; l; l = l->next) {
                if (((ExtWait *)l->data)->tag == tag) {
                    e = l->data;
                    break;
                }
            }
        }
        if (e) {
            g_queue_remove(&p->wait, e);
            ext_wait_fail(s, p, e, "not delivered");
        }
        return;
    default:
        /* an answer: its requester is gone or gives up by itself */
        return;
    }
}

/*
 * The stream has had no sign of its receiver for its whole budget: the
 * node is dead or cut off.  Every packet it holds is dropped and reported
 * (ext_pkt_fail()), and it starts afresh with a new epoch from sequence 0,
 * which a receiver that knew the old epoch takes as a new sender session
 * and a fresh one (the node restarted) adopts anyway (ext_rx_data()).
 * Our bulk ring towards the node is renewed: records of the dropped
 * packets still in it must never reach a node that comes back later.
 */
static void ext_tx_fail(ExtTx *t)
{
    ExtPeer *p = t->peer;
    ExtollState *s = p->s;
    ExtPkt *k;
    uint32_t e;

    trace_extoll_tx_failed(s->nic.node_id, p->node, t->chan,
                           g_queue_get_length(&t->txq), t->retries);
    timer_del(t->timer);
    timer_del(t->stall_timer);
    t->next_unsent = NULL;
    t->inflight = 0;
    t->retries = 0;
    t->nacks = 0;
    t->paused = false;
    t->stall_armed = false;
    while ((k = g_queue_pop_head(&t->txq))) {
        ext_pkt_fail(s, p, k);
        ext_pkt_done(s, k);
    }
    do {
        qemu_guest_getrandom_nofail(&e, sizeof(e));
    } while (e == 0 || e == t->epoch);
    t->epoch = e;
    t->next_seq = 0;
    if (s->nic.fq && p->node != s->nic.node_id) {
        fabric_bulk_renew(fabric_qemu_fabric(s->nic.fq), p->node);
    }
}

/* Every packet with seq before 'upto' (exclusive) is acknowledged. */
static void ext_ack_upto(ExtTx *t, uint32_t upto)
{
    ExtPkt *k;

    while ((k = g_queue_peek_head(&t->txq)) && (int32_t)(upto - k->seq) > 0) {
        if (t->next_unsent == g_queue_peek_head_link(&t->txq)) {
            t->next_unsent = t->next_unsent->next;
        } else if (t->inflight) {
            t->inflight--;
        }
        g_queue_pop_head(&t->txq);
        if (k->wait) {
            /* the answer is queued at the target now */
            k->wait->acked_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
            ext_wait_arm(t->peer, k->wait->acked_ns +
                         t->peer->s->answer_wait_ns);
        }
        ext_pkt_done(t->peer->s, k);
        t->retries = 0;
    }
}

static void ext_rewind(ExtTx *t)
{
    t->next_unsent = g_queue_peek_head_link(&t->txq);
    t->inflight = 0;
}

static void ext_rx_ack(ExtollState *s, uint32_t src, uint8_t type,
                       const uint8_t *b, size_t len)
{
    ExtPeer *p = ext_peer(s, src);
    uint32_t seq;
    ExtTx *t;

    if (!p || len < A_END || b[A_CHAN] >= EXT_NCHAN) {
        return;
    }
    t = &p->tx[b[A_CHAN]];
    if (ldl_le_p(b + A_EPOCH) != t->epoch) {
        return;     /* about a stream that failed or was reset */
    }
    seq = ldl_le_p(b + A_SEQ);
    trace_extoll_ack_rx(s->nic.node_id, src, type == EXT_T_ACK ? "ACK" :
                        type == EXT_T_NACK ? "NACK" : "RESUME", b[A_CHAN], seq);
    if ((int32_t)(seq - t->next_seq) >= 0) {
        return;     /* acknowledges something never sent */
    }
    if (type != EXT_T_ACK) {
        /* the receiver is there, short of room: not silence (budget) */
        t->retries = 0;
    }
    if (type == EXT_T_RESUME) {
        /* the receiver has room again: resend now, not after the back-off */
        if (t->paused) {
            t->paused = false;
            t->nacks = 0;
            timer_del(t->timer);
            ext_push(t);
            if (t->inflight && !timer_pending(t->timer)) {
                ext_arm(t, ext_rto(t));
            }
        }
        return;
    }
    if (type == EXT_T_ACK) {
        ext_ack_upto(t, seq + 1);
        t->nacks = 0;
        if (!t->paused) {
            timer_del(t->timer);
            if (t->inflight) {
                ext_arm(t, ext_rto(t));
            }
            ext_push(t);
        }
        return;
    }
    /* NACK: seq could not be taken; everything before it was */
    ext_ack_upto(t, seq);
    ext_rewind(t);
    if (t->paused) {
        return;
    }
    t->paused = true;
    ext_arm(t, fabric_nic_backoff(EXT_NACK_MIN_NS, t->nacks++,
                                  EXT_NACK_MAX_NS));
}

static void ext_timer_cb(void *opaque)
{
    ExtTx *t = opaque;

    if (g_queue_is_empty(&t->txq)) {
        t->paused = false;
        return;
    }
    if (t->paused) {
        t->paused = false;
    } else if (t->retries >= t->peer->s->retx_max) {
        ext_tx_fail(t);
        return;
    } else {
        t->retries++;
        t->peer->s->counters[EXTOLL_CNT_RETRANSMITS] += t->inflight;
        trace_extoll_retransmit(t->peer->s->nic.node_id, t->peer->node,
                                t - t->peer->tx, t->inflight, t->retries);
    }
    ext_rewind(t);
    ext_push(t);
    if (!timer_pending(t->timer)) {
        ext_arm(t, ext_rto(t));
    }
}

static void ext_send_ack(ExtollState *s, uint32_t dst, uint8_t type,
                         unsigned chan, uint32_t epoch, uint32_t seq)
{
    uint8_t b[A_END];

    trace_extoll_ack_tx(s->nic.node_id, dst, type == EXT_T_ACK ? "ACK" :
                        type == EXT_T_NACK ? "NACK" : "RESUME", chan, seq);
    stl_le_p(b + A_EPOCH, epoch);
    stl_le_p(b + A_SEQ, seq);
    b[A_CHAN] = chan;
    ext_xmit(s, dst, type, b, sizeof(b));
}

static void ext_peer_free(ExtPeer *p)
{
    ExtPkt *k;
    ExtWait *e;

    if (p->ack_listed) {
        g_queue_remove(&p->s->ack_peers, p);
    }
    if (p->nacked) {
        g_queue_remove(&p->s->nack_peers, p);
    }

    for (unsigned c = 0; c < EXT_NCHAN; c++) {
        timer_free(p->tx[c].timer);
        timer_free(p->tx[c].stall_timer);
        while ((k = g_queue_pop_head(&p->tx[c].txq))) {
            ext_pkt_done(p->s, k);
        }
    }
    timer_free(p->wait_timer);
    while ((e = g_queue_pop_head(&p->wait))) {
        g_free(e);
    }
    g_free(p);
}

/* ------------------------------------------------------------------ */
/* Room again after a NACK */

/*
 * A request of peer p for local VPID vpid was NACKed for lack of room in
 * its VELO ring (velo) or notification queue: watch it and send RESUME
 * once there is room, instead of letting the sender wait out its back-off.
 */
static void ext_nack_watch(ExtollState *s, ExtPeer *p, unsigned vpid,
                           bool velo)
{
    p->nack_vpid = vpid;
    p->nack_velo = velo;
    if (!p->nacked) {
        p->nacked = true;
        p->nack_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        g_queue_push_tail(&s->nack_peers, p);
    }
    if (!timer_pending(s->resume_timer)) {
        timer_mod(s->resume_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_REALTIME) + EXT_RESUME_NS);
    }
}

/* Slot wp + i of v's VELO ring is free (or unreadable: messages drop) */
static bool ext_velo_slot_free(ExtollState *s, ExtVpid *v, uint32_t i)
{
    uint32_t slot = (v->velo_wp + i) & (v->velo_slots - 1);
    uint64_t st;

    return !ext_read_u64(s, v->velo_ring + (uint64_t)EXTOLL_VELO_SLOT_SIZE *
                         slot + EXTOLL_VELO_STATUS_OFF, &st) || st == 0;
}

/*
 * Room (or nothing to wait for any more) for the request p was NACKed for,
 * waited for since waited ns.  A full VELO ring empties in order: resume
 * when EXT_RESUME_SLOTS slots are free (or half the ring), so the stream
 * does not stop again after one message; after EXT_RESUME_ANY_NS one slot
 * will do.
 */
static bool ext_nack_room(ExtollState *s, ExtPeer *p, int64_t waited)
{
    ExtVpid *v = &s->vpid[p->nack_vpid];

    if (!p->nack_velo) {
        return !ext_rma_on(v) ||
               (g_queue_is_empty(&v->backlog) && ext_noti_room(s, v));
    }
    if (!(v->ctrl & EXTOLL_VPID_VELO_RX) || !v->velo_slots) {
        return true;
    }
    if (waited >= EXT_RESUME_ANY_NS) {
        return ext_velo_slot_free(s, v, 0);
    }
    return ext_velo_slot_free(s, v, MIN(EXT_RESUME_SLOTS,
                                        v->velo_slots / 2) - 1) &&
           ext_velo_slot_free(s, v, 0);
}

static void ext_resume_timer(void *opaque)
{
    ExtollState *s = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    unsigned n = g_queue_get_length(&s->nack_peers);

    while (n--) {
        ExtPeer *p = g_queue_pop_head(&s->nack_peers);
        bool room = ext_nack_room(s, p, now - p->nack_ns);

        if (!room && now - p->nack_ns < EXT_RESUME_MAX_NS) {
            g_queue_push_tail(&s->nack_peers, p);
            continue;
        }
        p->nacked = false;
        if (room) {
            ext_send_ack(s, p->node, EXT_T_RESUME, 0, p->rx_epoch[0],
                         p->rx_expected[0]);
        }
    }
    if (!g_queue_is_empty(&s->nack_peers)) {
        timer_mod(s->resume_timer, now + EXT_RESUME_NS);
    }
}

/* ------------------------------------------------------------------ */
/* VELO */

static void ext_velo_send(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    uint64_t h = v->velo_hdr;
    uint32_t len = EXTOLL_VELO_HDR_LEN(h), node = EXTOLL_VELO_HDR_NODE(h);
    ExtPeer *p;
    ExtPkt *k;
    uint8_t *d;

    v->velo_hdr_valid = false;
    v->velo_mask = 0;
    if (!(v->ctrl & EXTOLL_VPID_VELO_TX) || !v->velo_credits ||
        len > EXTOLL_VELO_MAX_MSG || EXTOLL_VELO_HDR_MC_BITS(h) ||
        !(p = ext_peer(s, node))) {
        trace_extoll_velo_drop(s->nic.node_id, vi, len, v->velo_credits);
        v->velo_drops++;
        s->counters[EXTOLL_CNT_VELO_TX_DROPPED]++;
        return;
    }
    d = ext_pkt_new(s, p, &k, K_VELO, vi, EXTOLL_VELO_HDR_VPID(h), v->velo_gen,
                    v->velo_prot, 0, V_DATA + len);
    d[V_MTT] = EXTOLL_VELO_HDR_MTT(h);
    d[V_TAG] = EXTOLL_VELO_HDR_TAG(h);
    d[V_LEN] = len;
    for (uint32_t i = 0; i < len; i++) {
        d[V_DATA + i] = v->velo_data[i / 8] >> (8 * (i % 8));
    }
    k->credit_vpid = vi;
    k->credit_gen = v->velo_gen;
    v->velo_credits--;
    trace_extoll_velo_send(s->nic.node_id, vi, node, EXTOLL_VELO_HDR_VPID(h),
                           len, v->velo_credits);
    s->counters[EXTOLL_CNT_VELO_TX]++;
    ext_pkt_queue(s, p, k);
}

static void ext_velo_check(ExtollState *s, unsigned vi)
{
    ExtVpid *v = &s->vpid[vi];
    uint32_t len, need;

    if (!v->velo_hdr_valid) {
        return;
    }
    len = EXTOLL_VELO_HDR_LEN(v->velo_hdr);
    need = len > EXTOLL_VELO_MAX_MSG ? 0 : (1u << DIV_ROUND_UP(len, 8)) - 1;
    if ((v->velo_mask & need) == need) {
        ext_velo_send(s, vi);
    }
}

/*
 * Doorbell of the send window (uapi/extoll_hw.h, BAR3): the header word
 * was stored to EXTOLL_VELO_WIN_SEND; the payload is in the VPID's window
 * page, read now.  One device access per message instead of 1 + len/8.
 */
static void ext_velo_win_send(ExtollState *s, unsigned vi, uint64_t h)
{
    ExtVpid *v = &s->vpid[vi];
    uint32_t len = EXTOLL_VELO_HDR_LEN(h);

    trace_extoll_velo_win_send(s->nic.node_id, vi, h);
    if (len > EXTOLL_VELO_MAX_MSG || EXTOLL_VELO_HDR_MC_BITS(h) ||
        EXTOLL_VELO_HDR_NODE(h) >= s->nic.num_nodes) {
        EXTOLL_GUEST_ERR(extoll_err_velo_win,
                         "VPID %u send window doorbell with a bad header "
                         "0x%" PRIx64 ": dropped", vi, h);
        len = 0;    /* nothing is read; ext_velo_send drops and counts it */
    }
    memset(v->velo_data, 0, sizeof(v->velo_data));
    if (len) {
        memcpy(v->velo_data, s->velo_win + EXTOLL_VELO_WIN_PAGE(vi), len);
        for (unsigned k = 0; k < DIV_ROUND_UP(len, 8); k++) {
            v->velo_data[k] = le64_to_cpu(v->velo_data[k]);
        }
    }
    v->velo_hdr = h;
    v->velo_hdr_valid = true;
    ext_velo_send(s, vi);
}

/* true = consumed (delivered or dropped), false = no room (NACK) */
static bool ext_velo_rx(ExtollState *s, uint32_t src, const uint8_t *b,
                        size_t len)
{
    unsigned dv = b[D_DVPID], prot = ext_pkt_prot(b), mlen;
    ExtPeer *p = ext_peer(s, src);
    ExtVpid *v;
    uint64_t st, slot;

    if (len < V_DATA) {
        return true;
    }
    mlen = b[V_LEN];
    if (mlen > EXTOLL_VELO_MAX_MSG || len < V_DATA + mlen) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    if (dv >= EXTOLL_NUM_VPIDS || !(s->vpid[dv].ctrl & EXTOLL_VPID_VELO_RX)) {
        s->counters[EXTOLL_CNT_VELO_RX_DROPPED]++;
        return true;
    }
    v = &s->vpid[dv];
    if (prot != v->velo_prot) {
        /* dropped like a message for a disabled VPID: the ACK returns
         * the sender's credit, nothing is retried */
        s->counters[EXTOLL_CNT_VELO_RX_DROPPED]++;
        ext_prot_refused(s, "VELO message", src, b[D_SVPID], dv, prot,
                         v->velo_prot);
        return true;
    }
    slot = v->velo_ring + (uint64_t)EXTOLL_VELO_SLOT_SIZE * v->velo_wp;
    if (!ext_read_u64(s, slot + EXTOLL_VELO_STATUS_OFF, &st)) {
        s->counters[EXTOLL_CNT_VELO_RX_DROPPED]++;
        return true;
    }
    if (st != 0) {
        trace_extoll_velo_rx_full(s->nic.node_id, src, dv);
        s->counters[EXTOLL_CNT_VELO_RX_FULL]++;
        ext_nack_watch(s, p, dv, true);
        return false;
    }
    trace_extoll_velo_rx(s->nic.node_id, src, b[D_SVPID], dv, mlen, v->velo_wp);
    st = (uint64_t)(src & 0xffff) | ((uint64_t)b[D_SVPID] << 16) |
         ((uint64_t)(b[V_MTT] & 3) << 32) | EXTOLL_VELO_ST_EOM |
         ((uint64_t)b[V_TAG] << 40) | ((uint64_t)mlen << 48);
    if (mlen) {
        ext_dma_write(s, slot, b + V_DATA, mlen);
    }
    ext_write_u64(s, slot + EXTOLL_VELO_STATUS_OFF, st);
    v->velo_wp = (v->velo_wp + 1) & (v->velo_slots - 1);
    v->velo_rx_count++;
    s->counters[EXTOLL_CNT_VELO_RX]++;
    return true;
}

/* ------------------------------------------------------------------ */
/* RMA: origin side */

/*
 * Command slots of the VPID.  A count read here is a promise the library
 * spends without reading again, so it depends only on the VPID's own
 * commands: when the device-wide transmit queues are full, accepted
 * commands wait in v->cmdq instead of being refused.
 */
static uint32_t ext_rma_free(ExtVpid *v)
{
    uint32_t used = v->rma_pending + g_queue_get_length(&v->cmdq);

    if (!ext_rma_on(v) || used >= EXTOLL_RMA_CMDQ_DEPTH) {
        return 0;
    }
    return EXTOLL_RMA_CMDQ_DEPTH - used;
}

/* last-fragment offset for a transfer of len bytes */
static uint32_t ext_last_off(uint32_t len)
{
    return len ? (len - 1) / EXTOLL_RMA_FRAG_SIZE * EXTOLL_RMA_FRAG_SIZE : 0;
}

static void ext_req_error(ExtollState *s, ExtVpid *v, unsigned cmd,
                          unsigned node, unsigned dvpid, unsigned opts,
                          uint64_t w0)
{
    ext_noti_post(s, v, w0,
                  EXTOLL_NOTI_W1(0, dvpid, node, EXTOLL_NOTI_REQUESTER, cmd,
                                 ext_mode(opts), EXTOLL_NOTI_ERR_REQ));
}

/*
 * Runs a command of VPID vi taken from requester page opts while the
 * VPID's RMA_PROT was prot: every packet of the command carries prot, and
 * local addresses are translated with it.
 */
static void ext_rma_exec(ExtollState *s, unsigned vi, unsigned opts,
                         const uint64_t *w, uint16_t prot)
{
    ExtVpid *v = &s->vpid[vi];
    uint64_t w0 = w[0], w1 = w[1], w2 = w[2];
    unsigned cmd = EXTOLL_RMA_W0_CMD(w0), node = EXTOLL_RMA_W0_NODE(w0);
    unsigned dv = EXTOLL_RMA_W0_VPID(w0), spec = EXTOLL_RMA_W0_SPEC(w0);
    unsigned mod = EXTOLL_RMA_W0_MOD(w0), count = EXTOLL_RMA_W0_COUNT(w0);
    bool te = opts & EXTOLL_RMA_OPT_TE;
    unsigned mode = ext_mode(opts);
    uint16_t tag;
    ExtPeer *p;
    ExtPkt *k;
    uint8_t *d;

    if ((w0 & 3) != EXTOLL_RMA_W0_MAGIC || (opts & EXTOLL_RMA_OPT_RRA) ||
        (!te && !(v->ctrl & EXTOLL_VPID_RMA_PHYS)) ||
        (mod & (EXTOLL_MOD_MC | EXTOLL_MOD_ERA | EXTOLL_MOD_EWA)) ||
        !(p = ext_peer(s, node))) {
        ext_req_error(s, v, cmd, node, dv, opts, 0);
        return;
    }
    /* every command below that is queued is answered: followed by tag */
    tag = p->next_tag++;
    switch (cmd) {
    case EXTOLL_CMD_BT_PUT:
    case EXTOLL_CMD_QW_PUT: {
        uint32_t size = count + 1, lo = ext_last_off(size);
        ExtXfer x = {
            .kind = K_PUT, .svpid = vi, .dvpid = dv, .gen = v->rma_gen,
            .prot = prot, .tag = tag, .cmd = cmd, .spec = spec, .mode = opts,
            .addr = w2, .echo = w1,
        };
        ExtSrc src = { .vpid = vi, .prot = prot, .te = te, .addr = w1 };

        if ((cmd == EXTOLL_CMD_QW_PUT && (size & 7)) ||
            !ext_xfer_queue(s, p, &x, &src, size)) {
            ext_req_error(s, v, cmd, node, dv, opts, w1);
            return;
        }
        v->rma_pending++;
        ext_wait_add(s, p, vi, prot, tag, w1 + lo,
                     EXTOLL_NOTI_W1(size - lo - 1, dv, node,
                                    EXTOLL_NOTI_REQUESTER, cmd, mode, 0));
        return;
    }
    case EXTOLL_CMD_IMM_PUT: {
        ExtXfer x = {
            .kind = K_PUT, .svpid = vi, .dvpid = dv, .gen = v->rma_gen,
            .prot = prot, .tag = tag, .cmd = cmd, .spec = spec, .mode = opts,
            .addr = w1, .echo = w2,
        };
        uint8_t imm[8];
        ExtSrc src = { .buf = imm };

        stq_le_p(imm, w2);
        ext_xfer_queue(s, p, &x, &src, (count & 7) + 1);
        v->rma_pending++;
        ext_wait_add(s, p, vi, prot, tag, w2,
                     EXTOLL_NOTI_W1(count & 7, dv, node, EXTOLL_NOTI_REQUESTER,
                                    cmd, mode, 0));
        return;
    }
    case EXTOLL_CMD_NOTI_PUT:
        d = ext_pkt_new(s, p, &k, K_NOTIPUT, vi, dv, v->rma_gen, prot, tag,
                        N_END);
        d[N_CLASS] = count & 0xff;
        d[N_SPEC] = spec;
        d[N_MODE] = opts;
        stq_le_p(d + N_PAYLOAD, w1);
        ext_pkt_queue(s, p, k);
        v->rma_pending++;
        ext_wait_add(s, p, vi, prot, tag, w1,
                     EXTOLL_NOTI_W1(count & 0xff, dv, node,
                                    EXTOLL_NOTI_REQUESTER, cmd, mode, 0));
        return;
    case EXTOLL_CMD_BT_GET:
    case EXTOLL_CMD_QW_GET: {
        uint32_t size = count + 1, lo = ext_last_off(size);

        if (cmd == EXTOLL_CMD_QW_GET && (size & 7)) {
            ext_req_error(s, v, cmd, node, dv, opts, w2);
            return;
        }
        /* the local destination must be writable for us, checked up front */
        GArray *a = ext_translate(s, vi, prot, te, w2, size,
                                  EXTOLL_ATU_WRITE);
        if (!a) {
            ext_req_error(s, v, cmd, node, dv, opts, w2);
            return;
        }
        g_array_free(a, true);
        d = ext_pkt_new(s, p, &k, K_GETREQ, vi, dv, v->rma_gen, prot, tag,
                        G_END);
        d[G_CMD] = cmd;
        d[G_SPEC] = spec;
        d[G_MODE] = opts;
        stq_le_p(d + G_RADDR, w1);
        stq_le_p(d + G_WADDR, w2);
        stl_le_p(d + G_SIZE, size);
        ext_pkt_queue(s, p, k);
        v->rma_pending++;
        /*
         * A failure after the requester notification: the same one again,
         * with the error (the completer notification never comes).
         */
        ext_wait_add(s, p, vi, prot, tag, w2 + lo,
                     EXTOLL_NOTI_W1(size - lo - 1, dv, node,
                                    EXTOLL_NOTI_REQUESTER, cmd, mode, 0));
        if (spec & EXTOLL_NOTI_REQUESTER) {
            ext_noti_post(s, v, w2 + lo,
                          EXTOLL_NOTI_W1(size - lo - 1, dv, node,
                                         EXTOLL_NOTI_REQUESTER, cmd, mode, 0));
        }
        return;
    }
    case EXTOLL_CMD_LOCK_REQ: {
        uint32_t num = w1 & 0xffffff, cmp = w1 >> 32;
        uint64_t word0 = EXTOLL_LOCK_W0(num, 0, cmp);

        if (num >= EXTOLL_RMA_LOCKS) {
            ext_req_error(s, v, cmd, node, dv, opts, word0);
            return;
        }
        d = ext_pkt_new(s, p, &k, K_LOCKREQ, vi, dv, v->rma_gen, prot, tag,
                        L_END);
        d[L_SPEC] = spec;
        d[L_MODE] = opts;
        d[L_UNIT] = count & 1;
        stl_le_p(d + L_NUM, num);
        stl_le_p(d + L_CMP, cmp);
        stl_le_p(d + L_ADD, w2 >> 32);
        ext_pkt_queue(s, p, k);
        v->rma_pending++;
        ext_wait_add(s, p, vi, prot, tag, word0,
                     EXTOLL_NOTI_W1(0, dv, node, EXTOLL_NOTI_REQUESTER, cmd,
                                    mode, 0));
        if (spec & EXTOLL_NOTI_REQUESTER) {
            ext_noti_post(s, v, word0,
                          EXTOLL_NOTI_W1(0, dv, node, EXTOLL_NOTI_REQUESTER,
                                         cmd, mode, 0));
        }
        return;
    }
    default:    /* invalid codes */
        ext_req_error(s, v, cmd, node, dv, opts, w1);
        return;
    }
}

/* All three words of a command were stored on requester page 'opts'. */
static void ext_rma_cmd(ExtollState *s, unsigned vi, unsigned opts)
{
    ExtVpid *v = &s->vpid[vi];
    ExtCmd *c;

    v->rma_mask[opts] = 0;
    if (!ext_rma_free(v)) {
        trace_extoll_rma_cmd_drop(s->nic.node_id, vi);
        v->rma_drops++;
        s->counters[EXTOLL_CNT_RMA_CMD_DROPPED]++;
        return;
    }
    s->counters[EXTOLL_CNT_RMA_CMDS]++;
    trace_extoll_rma_cmd(s->nic.node_id, vi,
                         EXTOLL_RMA_W0_CMD(v->rma_cmd[opts][0]),
                         EXTOLL_RMA_W0_NODE(v->rma_cmd[opts][0]),
                         EXTOLL_RMA_W0_VPID(v->rma_cmd[opts][0]),
                         !(g_queue_is_empty(&v->cmdq) &&
                           s->txq_bytes < EXT_TXQ_BYTES_MAX));
    if (g_queue_is_empty(&v->cmdq) && s->txq_bytes < EXT_TXQ_BYTES_MAX) {
        ext_rma_exec(s, vi, opts, v->rma_cmd[opts], v->rma_prot);
        return;
    }
    c = g_new(ExtCmd, 1);
    memcpy(c->w, v->rma_cmd[opts], sizeof(c->w));
    c->opts = opts;
    c->prot = v->rma_prot;
    g_queue_push_tail(&v->cmdq, c);
    s->cmdq_len++;
}

/* Deferred commands, one per VPID in turn, while the queues have room. */
static void ext_cmdq_bh(void *opaque)
{
    ExtollState *s = opaque;
    bool ran = true;

    while (ran && s->cmdq_len && s->txq_bytes < EXT_TXQ_BYTES_MAX) {
        ran = false;
        for (unsigned i = 0; i < EXTOLL_NUM_VPIDS &&
                             s->txq_bytes < EXT_TXQ_BYTES_MAX; i++) {
            ExtCmd *c = g_queue_pop_head(&s->vpid[i].cmdq);

            if (c) {
                s->cmdq_len--;
                ext_rma_exec(s, i, c->opts, c->w, c->prot);
                g_free(c);
                ran = true;
            }
        }
    }
}

static void ext_cmdq_clear(ExtollState *s, ExtVpid *v)
{
    ExtCmd *c;

    while ((c = g_queue_pop_head(&v->cmdq))) {
        s->cmdq_len--;
        g_free(c);
    }
}

/* ------------------------------------------------------------------ */
/* RMA: target side and replies */

/*
 * Target: may the RMA request b for local VPID v (enabled) be executed?
 * Counts and logs a refusal.
 */
static bool ext_rma_prot_ok(ExtollState *s, ExtPeer *p, const uint8_t *b,
                            ExtVpid *v, const char *what)
{
    if (ext_pkt_prot(b) == v->rma_prot) {
        return true;
    }
    ext_prot_refused(s, what, p->node, b[D_SVPID], b[D_DVPID],
                     ext_pkt_prot(b), v->rma_prot);
    return false;
}

/* Answers the put-like command of packet b with K_DONE (see R_*). */
static void ext_send_done(ExtollState *s, ExtPeer *p, const uint8_t *b,
                          unsigned cmd, unsigned spec, unsigned mode,
                          uint64_t echo, uint32_t sizef, unsigned err)
{
    ExtPkt *k;
    uint8_t *d = ext_pkt_new(s, p, &k, K_DONE, b[D_DVPID], b[D_SVPID],
                             b[D_GEN], ext_pkt_prot(b), lduw_le_p(b + D_TAG),
                             R_END);

    d[R_CMD] = cmd;
    d[R_SPEC] = spec;
    d[R_MODE] = mode;
    d[R_ERR] = err;
    stq_le_p(d + R_ECHO, echo);
    stl_le_p(d + R_SIZE, sizef);
    ext_pkt_queue(s, p, k);
}

/*
 * The payload of a received packet: in the packet after its header
 * (datagram, loopback: data NULL) or apart (bulk record).
 */
typedef struct ExtRxData {
    const uint8_t *data;
    size_t dlen;
} ExtRxData;

/*
 * Payload length of a K_PUT / K_GETRSP packet (at most EXT_CHUNK) and
 * where it is; false if malformed.
 */
static bool ext_frag_len(ExtollState *s, const uint8_t *b, size_t len,
                         ExtRxData *rd, uint32_t *n)
{
    if (len >= P_DATA) {
        if (!rd->data) {
            rd->data = b + P_DATA;
            rd->dlen = len - P_DATA;
        }
        *n = ldl_le_p(b + P_LEN);
        if (*n <= EXT_CHUNK && rd->dlen >= *n) {
            return true;
        }
    }
    s->counters[EXTOLL_CNT_FABRIC_BAD]++;
    return false;
}

/* Writes a packet's payload unless its transfer failed (*err, sticky). */
static void ext_frag_store(ExtollState *s, unsigned vpid, bool te,
                           uint64_t addr, const uint8_t *b,
                           const ExtRxData *rd, uint32_t n, bool *err)
{
    if (*err) {
        return;
    }
    if (ext_mem_rw(s, vpid, ext_pkt_prot(b), te, addr, (void *)rd->data,
                   n, true)) {
        s->counters[EXTOLL_CNT_RMA_RX_BYTES] += n;
    } else {
        *err = true;
    }
}

static bool ext_put_rx(ExtollState *s, ExtPeer *p, const uint8_t *b, size_t len,
                       ExtRxData rd)
{
    unsigned dv = b[D_DVPID], flags, opts, cmd;
    uint32_t n, lo;
    uint64_t addr;
    bool te;
    ExtVpid *v;

    if (!ext_frag_len(s, b, len, &rd, &n)) {
        return true;
    }
    flags = b[P_FLAGS];
    opts = b[P_MODE];
    cmd = b[P_CMD];
    te = opts & EXTOLL_RMA_OPT_TE;
    addr = ldq_le_p(b + P_ADDR);
    if (flags & F_FIRST) {
        p->put_err = false;
    }
    v = dv < EXTOLL_NUM_VPIDS ? &s->vpid[dv] : NULL;
    if (!v || !ext_rma_addr_ok(v, te) || (flags & F_ERR)) {
        p->put_err = true;  /* F_ERR: the origin could not read its source */
    } else if (!p->put_err && !ext_rma_prot_ok(s, p, b, v, "put")) {
        p->put_err = true;  /* sticky: counted once per command */
    }
    if ((flags & F_LAST) && !p->put_err &&
        (b[P_SPEC] & EXTOLL_NOTI_COMPLETER) && !ext_noti_room(s, v)) {
        s->counters[EXTOLL_CNT_NOTI_FULL]++;
        ext_nack_watch(s, p, dv, false);
        return false;   /* NACK: retried when the consumer made room */
    }
    ext_frag_store(s, dv, te, addr, b, &rd, n, &p->put_err);
    if (!(flags & F_LAST)) {
        return true;
    }
    /* notifications describe the last wire fragment of the transfer */
    lo = ext_last_off(n);
    if (!p->put_err && (b[P_SPEC] & EXTOLL_NOTI_COMPLETER)) {
        ext_noti_write(s, v, addr + lo,
                       EXTOLL_NOTI_W1(n - lo - 1, b[D_SVPID], p->node,
                                      EXTOLL_NOTI_COMPLETER, cmd,
                                      te ? EXTOLL_NOTI_MODE_TE : 0, 0));
    }
    ext_send_done(s, p, b, cmd, b[P_SPEC], opts, ldq_le_p(b + P_ECHO) + lo,
                  n - lo - 1, p->put_err ? EXTOLL_NOTI_ERR_CMPL : 0);
    return true;
}

static bool ext_notiput_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                           size_t len)
{
    unsigned dv = b[D_DVPID], cls, spec;
    uint64_t payload;
    ExtVpid *v;
    unsigned err = 0;

    if (len < N_END) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    cls = b[N_CLASS];
    spec = b[N_SPEC];
    payload = ldq_le_p(b + N_PAYLOAD);
    v = dv < EXTOLL_NUM_VPIDS ? &s->vpid[dv] : NULL;
    if (!v || !ext_rma_on(v) ||
        !ext_rma_prot_ok(s, p, b, v, "notification put")) {
        err = EXTOLL_NOTI_ERR_CMPL;
    } else if (spec & EXTOLL_NOTI_COMPLETER) {
        if (!ext_noti_try(s, v, payload,
                          EXTOLL_NOTI_W1(cls, b[D_SVPID], p->node,
                                         EXTOLL_NOTI_COMPLETER,
                                         EXTOLL_CMD_NOTI_PUT, 0, 0))) {
            ext_nack_watch(s, p, dv, false);
            return false;
        }
    }
    ext_send_done(s, p, b, EXTOLL_CMD_NOTI_PUT, spec, b[N_MODE], payload,
                  cls, err);
    return true;
}

/*
 * Origin: the answer b (at least min bytes) finishes one of our commands.
 * Returns its VPID, or NULL when the packet is malformed, the command was
 * reported failed already, or the command's owner is gone (a new owner of
 * the VPID has another generation or another protection ID).
 */
static ExtVpid *ext_command_finished(ExtollState *s, ExtPeer *p,
                                     const uint8_t *b, size_t len, size_t min)
{
    unsigned dv = b[D_DVPID];
    ExtVpid *v;

    if (len < min || dv >= EXTOLL_NUM_VPIDS) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return NULL;
    }
    if (!ext_wait_answered(s, p, b, true)) {
        return NULL;    /* the command was reported failed */
    }
    v = &s->vpid[dv];
    if (!ext_rma_on(v) || b[D_GEN] != v->rma_gen) {
        return NULL;
    }
    if (v->rma_pending) {
        v->rma_pending--;
    }
    if (ext_pkt_prot(b) != v->rma_prot) {
        /* finished, but the part has another ID now: nothing reported */
        ext_prot_refused(s, b[D_KIND] == K_DONE ? "completion" :
                         "lock response", p->node, b[D_SVPID], dv,
                         ext_pkt_prot(b), v->rma_prot);
        return NULL;
    }
    return v;
}

/* Origin: a put-like command finished at the target. */
static bool ext_done_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                        size_t len)
{
    ExtVpid *v = ext_command_finished(s, p, b, len, R_END);

    if (!v) {
        return true;
    }
    if ((b[R_SPEC] & EXTOLL_NOTI_REQUESTER) || b[R_ERR]) {
        ext_noti_post(s, v, ldq_le_p(b + R_ECHO),
                      EXTOLL_NOTI_W1(ldl_le_p(b + R_SIZE), b[D_SVPID], p->node,
                                     EXTOLL_NOTI_REQUESTER, b[R_CMD],
                                     ext_mode(b[R_MODE]), b[R_ERR]));
    }
    return true;
}

/* Target: read and answer a get. */
static bool ext_getreq_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                          size_t len)
{
    unsigned dv = b[D_DVPID], cmd, spec, opts;
    uint32_t size, lo;
    uint64_t raddr, waddr;
    bool te, ok = false;
    ExtVpid *v;
    ExtXfer x;
    ExtSrc src;

    if (len < G_END) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    cmd = b[G_CMD];
    spec = b[G_SPEC];
    opts = b[G_MODE];
    te = opts & EXTOLL_RMA_OPT_TE;
    raddr = ldq_le_p(b + G_RADDR);
    waddr = ldq_le_p(b + G_WADDR);
    size = ldl_le_p(b + G_SIZE);
    if (size == 0 || size > EXTOLL_RMA_MAX_SIZE) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    lo = ext_last_off(size);
    x = (ExtXfer) {
        .kind = K_GETRSP, .svpid = dv, .dvpid = b[D_SVPID], .gen = b[D_GEN],
        .prot = ext_pkt_prot(b), .tag = lduw_le_p(b + D_TAG), .cmd = cmd,
        .spec = spec, .mode = opts, .addr = waddr, .echo = raddr,
    };
    src = (ExtSrc) {
        .vpid = dv, .prot = ext_pkt_prot(b), .te = te, .addr = raddr,
    };
    v = dv < EXTOLL_NUM_VPIDS ? &s->vpid[dv] : NULL;
    if (v && ext_rma_addr_ok(v, te) &&
        ext_rma_prot_ok(s, p, b, v, "get")) {
        if (s->txq_bytes >= EXT_TXQ_BYTES_MAX) {
            return false;   /* back-pressure */
        }
        if ((spec & EXTOLL_NOTI_RESPONDER) &&
            (!g_queue_is_empty(&v->backlog) || !ext_noti_room(s, v))) {
            ext_nack_watch(s, p, dv, false);
            return false;
        }
        ok = ext_xfer_queue(s, p, &x, &src, size);
    }
    if (!ok) {
        /* one empty fragment: the size of the last one in echo */
        x.flags = F_ERR;
        x.addr = waddr + lo;
        x.echo = size - lo;
        ext_xfer_queue(s, p, &x, &src, 0);
        return true;
    }
    if (spec & EXTOLL_NOTI_RESPONDER) {
        ext_noti_write(s, v, raddr + lo,
                       EXTOLL_NOTI_W1(size - lo - 1, b[D_SVPID], p->node,
                                      EXTOLL_NOTI_RESPONDER, cmd,
                                      te ? EXTOLL_NOTI_MODE_TE : 0, 0));
    }
    return true;
}

/*
 * Target: fetch-compare-and-add on a lock of the destination VPID (spec
 * 2.6): if the value is <= compare (signed), add and succeed; else fail.
 * The answer carries the value after the operation.
 */
static bool ext_lockreq_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                           size_t len)
{
    unsigned dv = b[D_DVPID], spec, opts, result = 0, err = 0;
    uint32_t num, value = 0;
    ExtVpid *v;
    ExtPkt *k;
    uint8_t *d;

    if (len < L_END) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    spec = b[L_SPEC];
    opts = b[L_MODE];
    num = ldl_le_p(b + L_NUM);
    v = dv < EXTOLL_NUM_VPIDS ? &s->vpid[dv] : NULL;
    if (!v || !ext_rma_on(v) || !ext_rma_prot_ok(s, p, b, v, "lock") ||
        num >= EXTOLL_RMA_LOCKS || b[L_UNIT] > 1) {
        err = EXTOLL_NOTI_ERR_RESP;
    } else {
        int32_t *lock;

        if ((spec & EXTOLL_NOTI_RESPONDER) &&
            (!g_queue_is_empty(&v->backlog) || !ext_noti_room(s, v))) {
            s->counters[EXTOLL_CNT_NOTI_FULL]++;
            ext_nack_watch(s, p, dv, false);
            return false;   /* retried; the lock is untouched */
        }
        if (!v->locks) {
            v->locks = g_new0(int32_t, 2 * EXTOLL_RMA_LOCKS);
        }
        lock = &v->locks[b[L_UNIT] * EXTOLL_RMA_LOCKS + num];
        if (*lock <= (int32_t)ldl_le_p(b + L_CMP)) {
            *lock = (int32_t)((uint32_t)*lock + ldl_le_p(b + L_ADD));
            result = 1;
        }
        value = (uint32_t)*lock;
        if (spec & EXTOLL_NOTI_RESPONDER) {
            ext_noti_write(s, v, EXTOLL_LOCK_W0(num, result, value),
                           EXTOLL_NOTI_W1(0, b[D_SVPID], p->node,
                                          EXTOLL_NOTI_RESPONDER,
                                          EXTOLL_CMD_LOCK_REQ,
                                          ext_mode(opts), 0));
        }
    }
    d = ext_pkt_new(s, p, &k, K_LOCKRSP, dv, b[D_SVPID], b[D_GEN],
                    ext_pkt_prot(b), lduw_le_p(b + D_TAG), L_END);
    d[L_SPEC] = spec;
    d[L_MODE] = opts;
    d[L_UNIT] = b[L_UNIT];
    d[L_ERR] = err;
    stl_le_p(d + L_NUM, num);
    stl_le_p(d + L_CMP, result);
    stl_le_p(d + L_ADD, value);
    ext_pkt_queue(s, p, k);
    return true;
}

/* Origin: the result of our lock command. */
static bool ext_lockrsp_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                           size_t len)
{
    ExtVpid *v = ext_command_finished(s, p, b, len, L_END);
    uint64_t word0;

    if (!v) {
        return true;
    }
    word0 = EXTOLL_LOCK_W0(ldl_le_p(b + L_NUM), ldl_le_p(b + L_CMP),
                           ldl_le_p(b + L_ADD));
    if (b[L_ERR]) {
        /* like a failed get: the origin always learns of the error */
        ext_noti_post(s, v, word0,
                      EXTOLL_NOTI_W1(0, b[D_SVPID], p->node,
                                     EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_LOCK_REQ,
                                     ext_mode(b[L_MODE]), b[L_ERR]));
    } else if (b[L_SPEC] & EXTOLL_NOTI_COMPLETER) {
        ext_noti_post(s, v, word0,
                      EXTOLL_NOTI_W1(0, b[D_SVPID], p->node,
                                     EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_LOCK_RSP,
                                     ext_mode(b[L_MODE]), 0));
    }
    return true;
}

/* Origin: data of our get arrives. */
static bool ext_getrsp_rx(ExtollState *s, ExtPeer *p, const uint8_t *b,
                          size_t len, ExtRxData rd)
{
    unsigned dv = b[D_DVPID], flags, opts, cmd, spec;
    uint32_t n, lo;
    uint64_t addr;
    ExtVpid *v;
    bool te;

    if (!ext_frag_len(s, b, len, &rd, &n)) {
        return true;
    }
    if (dv >= EXTOLL_NUM_VPIDS) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
    v = &s->vpid[dv];
    flags = b[P_FLAGS];
    opts = b[P_MODE];
    cmd = b[P_CMD];
    spec = b[P_SPEC];
    te = opts & EXTOLL_RMA_OPT_TE;
    addr = ldq_le_p(b + P_ADDR);
    if (!ext_wait_answered(s, p, b, flags & F_LAST)) {
        return true;    /* the get was reported failed: nothing is written */
    }
    if (!ext_rma_on(v) || b[D_GEN] != v->rma_gen) {
        return true;    /* owner gone: nothing is written */
    }
    if (ext_pkt_prot(b) != v->rma_prot) {
        /* the part has another ID now: nothing is written or reported */
        if (flags & F_FIRST) {
            ext_prot_refused(s, "get response", p->node, b[D_SVPID], dv,
                             ext_pkt_prot(b), v->rma_prot);
        }
        if ((flags & F_LAST) && v->rma_pending) {
            v->rma_pending--;
        }
        return true;
    }
    if (flags & F_FIRST) {
        p->rsp_err = false;
    }
    if (flags & F_ERR) {
        if (v->rma_pending) {
            v->rma_pending--;
        }
        ext_noti_post(s, v, addr,
                      EXTOLL_NOTI_W1(ldq_le_p(b + P_ECHO) - 1, b[D_SVPID],
                                     p->node, EXTOLL_NOTI_REQUESTER, cmd,
                                     ext_mode(opts), EXTOLL_NOTI_ERR_RESP));
        return true;
    }
    ext_frag_store(s, dv, te, addr, b, &rd, n, &p->rsp_err);
    if (!(flags & F_LAST)) {
        return true;
    }
    if (v->rma_pending) {
        v->rma_pending--;
    }
    lo = ext_last_off(n);
    if ((spec & EXTOLL_NOTI_COMPLETER) || p->rsp_err) {
        ext_noti_post(s, v, addr + lo,
                      EXTOLL_NOTI_W1(n ? n - lo - 1 : 0, b[D_SVPID], p->node,
                                     EXTOLL_NOTI_COMPLETER,
                                     cmd == EXTOLL_CMD_QW_GET ?
                                     EXTOLL_CMD_GET_QW_RSP :
                                     EXTOLL_CMD_GET_BT_RSP,
                                     ext_mode(opts),
                                     p->rsp_err ? EXTOLL_NOTI_ERR_CMPL : 0));
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Receive dispatch */

static bool ext_rx_kind(ExtollState *s, ExtPeer *p, const uint8_t *b,
                        size_t len, ExtRxData rd)
{
    switch (b[D_KIND]) {
    case K_VELO:
        return ext_velo_rx(s, p->node, b, len);
    case K_PUT:
        return ext_put_rx(s, p, b, len, rd);
    case K_NOTIPUT:
        return ext_notiput_rx(s, p, b, len);
    case K_DONE:
        return ext_done_rx(s, p, b, len);
    case K_GETREQ:
        return ext_getreq_rx(s, p, b, len);
    case K_GETRSP:
        return ext_getrsp_rx(s, p, b, len, rd);
    case K_LOCKREQ:
        return ext_lockreq_rx(s, p, b, len);
    case K_LOCKRSP:
        return ext_lockrsp_rx(s, p, b, len);
    default:
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return true;
    }
}

static void ext_rx_data(ExtollState *s, uint32_t src, const uint8_t *b,
                        size_t len, ExtRxData rd);

/*
 * Packets (ACKs, doorbells) waiting for room in a peer's socket (the host's
 * max_dgram_qlen is small) would otherwise wait for the main loop's write
 * handler; the receive thread retries them on every arrival.
 */
static void ext_flush_queued(ExtollState *s, uint32_t src)
{
    if (s->nic.fq && src != s->nic.node_id) {
        struct fabric *f = fabric_qemu_fabric(s->nic.fq);

        if (fabric_queued(f)) {
            fabric_flush(f);
        }
    }
}

static void ext_rx(void *opaque, uint32_t src, uint8_t type,
                   const void *payload, size_t len)
{
    ExtollState *s = opaque;

    ext_flush_queued(s, src);

    if (type == EXT_T_ACK || type == EXT_T_NACK || type == EXT_T_RESUME) {
        ext_rx_ack(s, src, type, payload, len);
        return;
    }
    if (type != EXT_T_DATA) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return;
    }
    ext_rx_data(s, src, payload, len, (ExtRxData) { NULL, 0 });
}

/*
 * A bulk record from another node: a DATA packet, the payload of a put or
 * get response apart.  The ring is shared with the sender: the header is
 * copied before it is looked at.
 */
static void ext_bulk_rx(void *opaque, uint32_t src, uint8_t type,
                        const void *hdr, size_t hlen,
                        const void *data, size_t dlen, bool data_ok)
{
    ExtollState *s = opaque;
    uint8_t h[FABRIC_BULK_MAX_HDR];

    ext_flush_queued(s, src);
    if (type != EXT_T_DATA || !data_ok || hlen > sizeof(h) ||
        src == s->nic.node_id || (dlen && hlen != P_DATA) ||
        dlen > EXT_CHUNK) {
        /* a corrupt payload is dropped: the sender sends it again */
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return;
    }
    memcpy(h, hdr, hlen);
    ext_rx_data(s, src, h, hlen, (ExtRxData) { dlen ? data : NULL, dlen });
}

/* A DATA packet of the reliable stream from node src. */
static void ext_rx_data(ExtollState *s, uint32_t src, const uint8_t *b,
                        size_t len, ExtRxData rd)
{
    ExtPeer *p = ext_peer(s, src);
    uint32_t epoch, seq;
    unsigned c;

    if (len < D_HDR || !p) {
        s->counters[EXTOLL_CNT_FABRIC_BAD]++;
        return;
    }
    epoch = ldl_le_p(b + D_EPOCH);
    seq = ldl_le_p(b + D_SEQ);
    c = ext_kind_chan(b[D_KIND]);
    trace_extoll_rx(s->nic.node_id, src, c, seq, b[D_KIND], len);
    if (epoch != p->rx_epoch[c]) {
        /* a new sender session starts at 0; a fresh receiver adopts any */
        if (seq != 0 && p->rx_epoch[c] != 0) {
            s->counters[EXTOLL_CNT_RX_DUPLICATES]++;
            return;
        }
        p->rx_epoch[c] = epoch;
        p->rx_expected[c] = seq;
        if (c) {
            p->rsp_err = false;
        } else {
            p->put_err = false;
        }
    }
    if (seq != p->rx_expected[c]) {
        trace_extoll_rx_duplicate(s->nic.node_id, src, c, seq,
                                  p->rx_expected[c]);
        s->counters[EXTOLL_CNT_RX_DUPLICATES]++;
        /*
         * The rest of a window behind a NACKed request: the sender rewinds
         * on the NACK (or on its timer if that was lost), an ACK per packet
         * would tell it nothing new.
         */
        if (!(c == 0 && p->nacked &&
              (int32_t)(seq - p->rx_expected[c]) > 0)) {
            ext_send_ack(s, src, EXT_T_ACK, c, epoch, p->rx_expected[c] - 1);
        }
        return;
    }
    if (!ext_rx_kind(s, p, b, len, rd)) {
        ext_send_ack(s, src, EXT_T_NACK, c, epoch, seq);
        return;
    }
    p->rx_expected[c]++;
    s->counters[EXTOLL_CNT_RX_PACKETS]++;
    if (c == 1 && !g_queue_is_empty(&p->wait)) {
        /* the answers are on their way (ext_wait_timer()) */
        p->answer_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    }
    /* ACKs are cumulative: one per EXT_ACK_BATCH packets or per batch of
     * received packets (bottom half), whichever comes first */
    if (++p->ack_count[c] >= EXT_ACK_BATCH) {
        ext_send_ack(s, src, EXT_T_ACK, c, epoch, seq);
        p->ack_count[c] = 0;
        p->ack_due[c] = false;
        return;
    }
    p->ack_due[c] = true;
    if (!p->ack_listed) {
        p->ack_listed = true;
        g_queue_push_tail(&s->ack_peers, p);
    }
    /* a polling vCPU sends them itself when its poll ends (ext_velo_read):
     * no main loop wake-up per poll */
    if (!s->vcpu_polling) {
        qemu_bh_schedule(s->ack_bh);
    }
}

static void ext_ack_bh(void *opaque)
{
    ExtollState *s = opaque;
    ExtPeer *p;

    while ((p = g_queue_pop_head(&s->ack_peers))) {
        p->ack_listed = false;
        for (unsigned c = 0; c < EXT_NCHAN; c++) {
            if (p->ack_due[c]) {
                ext_send_ack(s, p->node, EXT_T_ACK, c, p->rx_epoch[c],
                             p->rx_expected[c] - 1);
                p->ack_due[c] = false;
                p->ack_count[c] = 0;
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Reset */

/* A new owner of the VPID's VELO part never sees the previous one's bytes. */
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
    ext_cmdq_clear(s, v);
    g_free(v->locks);       /* locks start at 0 for the next owner */
    v->locks = NULL;
    memset(v->rma_mask, 0, sizeof(v->rma_mask));
    v->rma_pending = 0;
    v->rma_gen++;
    ext_backlog_clear(v);
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
            ext_peer_free(s->peers[n]);
            s->peers[n] = NULL;
        }
    }
    for (unsigned i = 0; i < EXTOLL_NUM_VPIDS; i++) {
        ExtVpid *v = &s->vpid[i];

        uint8_t vg = v->velo_gen + 1, rg = v->rma_gen + 1;

        /* generations survive resets so late replies never match */
        ext_backlog_clear(v);
        ext_cmdq_clear(s, v);
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
        }
        v->ctrl = nv;
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
        return;
    case EXTOLL_VPID_RMA_PROT:
        v->rma_prot = val & EXTOLL_PROT_MASK;
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
        v = s->counters[(base - EXTOLL_REG_COUNTER(0)) / 8];
        if (size == 8) {
            return v;
        }
        return (off & 4) ? v >> 32 : (uint32_t)v;
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
        return;
    case EXTOLL_REG_ATU_ENTRIES:
        s->atu_entries = MIN((uint32_t)val, EXTOLL_ATU_MAX_ENTRIES);
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

static uint64_t ext_velo_read(void *opaque, hwaddr off, unsigned size)
{
    ExtollState *s = opaque;
    ExtVpid *v = &s->vpid[off / EXTOLL_HW_PAGE_SIZE];
    hwaddr r = off % EXTOLL_HW_PAGE_SIZE;

    if (ext_reentered() || size != 8) {
        return 0;
    }
    if (r == EXTOLL_VELO_CREDITS) {
        /*
         * The poll of a waiting sender or receiver: deliver what waits,
         * then acknowledge it from here (the ACK returns the sender's
         * credits) instead of waiting for the main loop's bottom half.
         */
        s->vcpu_polling = true;
        fabric_nic_poll(&s->nic, EXT_MMIO_RX_BUDGET);
        s->vcpu_polling = false;
        if (!g_queue_is_empty(&s->ack_peers)) {
            ext_ack_bh(s);
        }
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
        ext_velo_win_send(s, vi, val);
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
    ext_velo_check(s, vi);
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
        return ext_rma_free(v);
    }
    if (r == EXTOLL_RMA_CMD_DROPS) {
        return v->rma_drops;
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
        ext_rma_cmd(s, vi, pg);
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
        .name = "extoll-rx", .bulk_rx = ext_bulk_rx, .bulk_opaque = s,
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
        s->answer_wait_ns += ext_rto_ns(r);
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
    s->loop_bh = qemu_bh_new(ext_loop_bh, s);
    g_queue_init(&s->ack_peers);
    s->ack_bh = qemu_bh_new(ext_ack_bh, s);
    s->poll_timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_poll_timer, s);
    g_queue_init(&s->nack_peers);
    s->resume_timer = timer_new_ns(QEMU_CLOCK_REALTIME, ext_resume_timer, s);
    s->cmdq_bh = qemu_bh_new(ext_cmdq_bh, s);
    for (unsigned i = 0; i < EXTOLL_NUM_VPIDS; i++) {
        g_queue_init(&s->vpid[i].backlog);
        g_queue_init(&s->vpid[i].cmdq);
    }
    ext_reset_state(s);
    if (!fabric_nic_open(&s->nic, &opts, ext_rx, s, errp)) {
        ext_exit(pdev);
    }
}

static void ext_exit(PCIDevice *pdev)
{
    ExtollState *s = EXTOLL(pdev);
    GByteArray *b;

    fabric_nic_close(&s->nic);
    if (s->peers) {
        for (uint32_t n = 0; n < s->nic.num_nodes; n++) {
            if (s->peers[n]) {
                ext_peer_free(s->peers[n]);
            }
        }
        g_free(s->peers);
        s->peers = NULL;
    }
    for (unsigned i = 0; i < EXTOLL_NUM_VPIDS; i++) {
        ext_backlog_clear(&s->vpid[i]);
        ext_cmdq_clear(s, &s->vpid[i]);
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

static Property ext_properties[] = {
    DEFINE_FABRIC_NIC_PROPERTIES(ExtollState, nic),
    DEFINE_PROP_UINT32("velo-credits", ExtollState, velo_credits_max,
                       EXTOLL_VELO_TX_CREDITS),
    DEFINE_PROP_UINT32("retx-max", ExtollState, retx_max,
                       EXTOLL_DEFAULT_RETX_MAX),
    DEFINE_PROP_END_OF_LIST(),
};

static const VMStateDescription ext_vmstate = {
    .name = "extoll",
    .unmigratable = 1,
};

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
    device_class_set_props(dc, ext_properties);
    FABRIC_NIC_PARK_CLASS_INIT(klass, ExtollState, nic);
    FABRIC_NIC_LINKS_CLASS_INIT(klass, ExtollState, nic);
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
