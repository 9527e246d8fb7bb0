/*
 * ExaNet NI model: the collective (allreduce) unit.
 *
 * ABI: uapi/exanet_coll.h; algorithm, ordering promise and failure rules:
 * Documentation/exanet/collectives.md.
 *
 * A group (one of EXANET_COLL_GROUPS slots, written by the kernel) runs
 * one operation at a time.  The vector is cut into blocks of
 * EXANET_COLL_BLOCK_SIZE; each block walks the member's list of steps on
 * its own, so a long vector is pipelined (block b + 1 leaves for round 0
 * while block b waits in round 1).  The steps are recursive doubling among
 * the first p2 members (p2 = largest power of two <= size), members
 * r >= p2 folding their vector into r - p2 first and getting the result
 * back last.  Every combination is op(lower member's side, higher
 * member's side), so both sides of an exchange compute the same bits and
 * all members end with the same result.
 *
 * Transport: the RDMA engine's bulk path.  Every data packet is ACKed by
 * the receiving NI (also when it keeps it for a step not reached yet) and
 * kept by the sender until then; a group timer (RDMA_RETX_US) resends
 * what is unanswered and, when nothing moved for a period, probes the
 * member whose data the operation waits for: a member that is gone, failed
 * or unreachable ends the operation with an error instead of a hang.
 *
 * Threads: everything under the BQL (vCPU, fabric receive thread, timers).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/timer.h"
#include "qemu/bswap.h"
#include "qemu/queue.h"
#include "hw/pci/pci.h"

#include "exanet.h"
#include "exanet_rdma.h"
#include "exanet_coll.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"
#include "fabric-park.h"
#include "trace.h"

#define COLL_BLOCK          EXANET_COLL_BLOCK_SIZE
#define COLL_MAX_BLOCKS     (EXANET_COLL_MAX_LEN / COLL_BLOCK)
#define COLL_MAX_STEPS      14          /* fold-in + 10 rounds + fold-out */
#define COLL_EARLY_CAP      (8u * EXANET_COLL_MAX_LEN)  /* bytes per group */
#define COLL_WIRE_FOLD_IN   0x00
#define COLL_WIRE_ROUND(k)  (1 + (k))
#define COLL_WIRE_FOLD_OUT  0xff
#define COLL_WIRE_DIRECT    0x80
/*
 * Direct exchange: small groups and short vectors skip recursive doubling;
 * every member sends its vector to every other one and combines all of
 * them in member order (one hop of latency instead of log2(size)).
 */
#define COLL_DIRECT_MAX_MEMBERS 8
#define COLL_DIRECT_MAX_LEN     COLL_BLOCK

/* Kinds of step of a member. */
enum {
    CS_SEND_FOLD,       /* member >= p2: send the vector to member - p2 */
    CS_RECV_RESULT,     /* member >= p2: take the result from member - p2 */
    CS_RECV_FOLD,       /* member < size - p2: combine member + p2's vector */
    CS_EXCHANGE,        /* round k: send, then combine with member ^ 2^k */
    CS_SEND_RESULT,     /* member < size - p2: send the result to member + p2 */
    CS_DIRECT,          /* send to all, combine all in member order */
};

typedef struct CollStep {
    uint8_t kind;
    uint8_t wire;       /* step number on the wire */
    uint32_t peer;      /* member rank */
} CollStep;

/* Header of every collective packet; host layout (see RdBlkHdr). */
typedef struct CollHdr {
    uint32_t key;
    uint32_t seq;           /* operation sequence in the group, from 1 */
    uint32_t src_rank;      /* sending member */
    uint32_t dst_rank;      /* receiving member: with pdid + key, the group */
    uint32_t block;
    uint32_t nblocks;
    uint64_t count;
    uint32_t xmit;          /* sender's transmission number, echoed */
    uint16_t pdid;
    uint8_t step;           /* COLL_WIRE_* */
    uint8_t dtype;
    uint8_t op;
    uint8_t code;           /* answers: 0 or an EXANET_COLL_E_* */
    uint8_t pad[2];
} CollHdr;

/* A block sent and not yet ACKed (its bytes: what was sent). */
typedef struct CollSend {
    QTAILQ_ENTRY(CollSend) link;
    uint32_t dst_node;
    CollHdr h;
    uint8_t retries;
    int64_t sent_ns;
    size_t len;
    uint8_t data[];
} CollSend;

/* Partner data kept until its block reaches the step. */
typedef struct CollEarly {
    CollHdr h;
    size_t len;
    uint8_t data[];
} CollEarly;

typedef struct CollGroup {
    ExanetColl *c;
    unsigned idx;
    /* written by the kernel */
    bool enabled;
    uint32_t pdid, page, key, size, myrank, midx;
    uint32_t *members;
    /* derived at enable: recursive doubling */
    CollStep rd_steps[COLL_MAX_STEPS];
    unsigned rd_nsteps;
    /* of the current operation: rd_steps, or the one direct step */
    const CollStep *steps;
    unsigned nsteps;
    /* the current (or last) operation */
    uint32_t seq;
    uint8_t state, err;
    bool failed;            /* an operation failed: refuse until re-enabled */
    uint8_t desc[EXANET_COLL_SLOT_STRIDE];
    uint64_t src_va, dst_va, count, lcomp_va, tag, len;
    uint8_t dtype, op, rank;
    uint32_t nblocks, bdone;
    uint8_t *acc;
    uint8_t *bstep;         /* per block: index into steps */
    bool *bsent;            /* per block: this exchange step's send is out */
    QTAILQ_HEAD(, CollSend) sends;  /* unanswered, this and earlier ops */
    GHashTable *early;      /* early_key() -> CollEarly */
    size_t early_bytes;
    bool moved;             /* progress since the last timer period */
    bool probe_out;
    uint8_t probe_retries;
    int64_t due;
    QEMUTimer *timer;
} CollGroup;

struct ExanetColl {
    ExanetRdma *r;
    uint32_t sel;
    CollGroup g[EXANET_COLL_GROUPS];
    MemoryRegion bar;
    uint32_t xmit;
    uint32_t direct_max;    /* largest group of the direct exchange */
    /* Unanswered sends of groups disabled since: answered or given up. */
    QTAILQ_HEAD(, CollSend) orphans;
    int64_t due;
    QEMUTimer *timer;
    uint64_t cnt[EXANET_COLL_NUM_COUNTERS];
};

static gpointer early_key(uint32_t seq, uint8_t step, uint32_t src,
                          uint32_t block)
{
    return (gpointer)(uintptr_t)((uint64_t)(seq & 0xfffff) << 44 |
                                 (uint64_t)step << 36 |
                                 (uint64_t)(src & 0x3ff) << 26 |
                                 (block & 0x3ffffff));
}

static const CollStep coll_direct_step = { CS_DIRECT, COLL_WIRE_DIRECT, 0 };

/* ------------------------------------------------------------------ */
/* Arithmetic: acc = op(lo, hi), element-wise, little-endian */

#define COLL_INT_LOOP(T, LD, ST)                                          \
    for (size_t i = 0; i < n; i++) {                                      \
        T a = (T)LD(lo + i * sizeof(T)), b = (T)LD(hi + i * sizeof(T));   \
        T v;                                                              \
        switch (op) {                                                     \
        case EXANET_COLL_SUM:                                             \
            v = (T)(a + b);                                               \
            break;                                                        \
        case EXANET_COLL_MIN:                                             \
            v = b < a ? b : a;                                            \
            break;                                                        \
        case EXANET_COLL_MAX:                                             \
            v = b > a ? b : a;                                            \
            break;                                                        \
        case EXANET_COLL_BAND:                                            \
            v = a & b;                                                    \
            break;                                                        \
        case EXANET_COLL_BOR:                                             \
            v = a | b;                                                    \
            break;                                                        \
        default:                                                          \
            v = a ^ b;                                                    \
            break;                                                        \
        }                                                                 \
        ST(out + i * sizeof(T), v);                                       \
    }

#define COLL_FP_LOOP(T, U, LD, ST)                                        \
    for (size_t i = 0; i < n; i++) {                                      \
        union { U u; T f; } a = { .u = LD(lo + i * sizeof(T)) };          \
        union { U u; T f; } b = { .u = LD(hi + i * sizeof(T)) };          \
        union { U u; T f; } v;                                            \
        switch (op) {                                                     \
        case EXANET_COLL_SUM:                                             \
            v.f = a.f + b.f;                                              \
            break;                                                        \
        case EXANET_COLL_MIN:                                             \
            v.f = b.f < a.f ? b.f : a.f;                                  \
            break;                                                        \
        default:                                                          \
            v.f = b.f > a.f ? b.f : a.f;                                  \
            break;                                                        \
        }                                                                 \
        ST(out + i * sizeof(T), v.u);                                     \
    }

/* out may alias lo or hi. */
static void coll_combine(uint8_t *out, const uint8_t *lo, const uint8_t *hi,
                         size_t bytes, unsigned dtype, unsigned op)
{
    size_t n = bytes / EXANET_COLL_DTYPE_SIZE(dtype);

    switch (dtype) {
    case EXANET_COLL_INT32:
        COLL_INT_LOOP(int32_t, ldl_le_p, stl_le_p);
        break;
    case EXANET_COLL_UINT32:
        COLL_INT_LOOP(uint32_t, ldl_le_p, stl_le_p);
        break;
    case EXANET_COLL_INT64:
        COLL_INT_LOOP(int64_t, ldq_le_p, stq_le_p);
        break;
    case EXANET_COLL_UINT64:
        COLL_INT_LOOP(uint64_t, ldq_le_p, stq_le_p);
        break;
    case EXANET_COLL_FLOAT:
        COLL_FP_LOOP(float, uint32_t, ldl_le_p, stl_le_p);
        break;
    case EXANET_COLL_DOUBLE:
        COLL_FP_LOOP(double, uint64_t, ldq_le_p, stq_le_p);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Steps of a member */

static void coll_plan(CollGroup *g)
{
    uint32_t p2 = 1, me = g->myrank;
    unsigned n = 0;

    while (p2 * 2 <= g->size) {
        p2 *= 2;
    }
    if (me >= p2) {
        g->rd_steps[n++] = (CollStep){ CS_SEND_FOLD, COLL_WIRE_FOLD_IN,
                                       me - p2 };
        g->rd_steps[n++] = (CollStep){ CS_RECV_RESULT, COLL_WIRE_FOLD_OUT,
                                    me - p2 };
    } else {
        if (me + p2 < g->size) {
            g->rd_steps[n++] = (CollStep){ CS_RECV_FOLD, COLL_WIRE_FOLD_IN,
                                        me + p2 };
        }
        for (unsigned k = 0; (1u << k) < p2; k++) {
            g->rd_steps[n++] = (CollStep){ CS_EXCHANGE, COLL_WIRE_ROUND(k),
                                        me ^ (1u << k) };
        }
        if (me + p2 < g->size) {
            g->rd_steps[n++] = (CollStep){ CS_SEND_RESULT, COLL_WIRE_FOLD_OUT,
                                        me + p2 };
        }
    }
    g->rd_nsteps = n;
    g->steps = g->rd_steps;
    g->nsteps = n;
}

/* Index of the step in which this member receives 'wire' from src, or -1. */
static int coll_recv_step(const CollGroup *g, uint8_t wire, uint32_t src)
{
    if (wire == COLL_WIRE_DIRECT) {
        return src != g->myrank && g->size <= COLL_DIRECT_MAX_MEMBERS ? 0 : -1;
    }
    for (unsigned i = 0; i < g->rd_nsteps; i++) {
        const CollStep *s = &g->rd_steps[i];

        if (s->wire == wire && s->peer == src &&
            (s->kind == CS_EXCHANGE || s->kind == CS_RECV_FOLD ||
             s->kind == CS_RECV_RESULT)) {
            return i;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* Transport */

static ExanetRdma *coll_rdma(CollGroup *g)
{
    return g->c->r;
}

static uint32_t coll_node(CollGroup *g)
{
    return g->c->r->node_id;
}

static void coll_hdr_init(CollGroup *g, CollHdr *h, uint32_t dst_rank,
                          uint8_t step, uint32_t block)
{
    memset(h, 0, sizeof(*h));
    h->key = g->key;
    h->seq = g->seq;
    h->src_rank = g->myrank;
    h->dst_rank = dst_rank;
    h->block = block;
    h->nblocks = g->nblocks;
    h->count = g->count;
    h->pdid = g->pdid;
    h->step = step;
    h->dtype = g->dtype;
    h->op = g->op;
}

/* One transmission of a kept block; lost if the ring is full (timer). */
static void coll_xmit(ExanetColl *c, CollSend *s)
{
    ExanetRdma *r = c->r;
    uint32_t dst = s->dst_node;
    int err;
    uint8_t *p;

    s->h.xmit = ++c->xmit;
    s->sent_ns = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    p = exanet_rdma_reserve(r, dst, sizeof(s->h), s->len, &err);
    if (!p) {
        return;
    }
    memcpy(p, &s->h, sizeof(s->h));
    memcpy(p + sizeof(s->h), s->data, s->len);
    exanet_rdma_commit(r, dst, RD_COLL);
}

static void coll_send_block(CollGroup *g, const CollStep *st, uint32_t peer,
                            uint32_t b)
{
    size_t off = (size_t)b * COLL_BLOCK;
    size_t len = MIN((uint64_t)COLL_BLOCK, g->len - off);
    CollSend *s = g_malloc(sizeof(*s) + len);

    coll_hdr_init(g, &s->h, peer, st->wire, b);
    s->dst_node = g->members[peer];
    s->retries = 0;
    s->len = len;
    memcpy(s->data, g->acc + off, len);
    QTAILQ_INSERT_TAIL(&g->sends, s, link);
    g->c->cnt[EXANET_CCNT_TX_BLOCKS]++;
    g->c->cnt[EXANET_CCNT_TX_BYTES] += len;
    trace_exanet_coll_send(coll_node(g), g->idx, g->seq, peer, st->wire, b,
                           len);
    coll_xmit(g->c, s);
}

/* Answer a data packet or a probe (header fields mirrored). */
static void coll_answer(ExanetRdma *r, uint32_t dst_node, const CollHdr *in,
                        uint8_t type, uint8_t code)
{
    CollHdr a = *in;

    a.src_rank = in->dst_rank;
    a.dst_rank = in->src_rank;
    a.code = code;
    exanet_rdma_send_small(r, dst_node, type, &a, sizeof(a));
}

/* ------------------------------------------------------------------ */
/* Operation life cycle */

static void coll_free_sends(CollGroup *g)
{
    CollSend *s, *next;

    QTAILQ_FOREACH_SAFE(s, &g->sends, link, next) {
        QTAILQ_REMOVE(&g->sends, s, link);
        g_free(s);
    }
}

/* The operation's buffers; and the group's early packets if all_early. */
static void coll_drop_state(CollGroup *g, bool all_early)
{
    if (all_early) {
        g_hash_table_remove_all(g->early);
        g->early_bytes = 0;
    }
    g_free(g->acc);
    g_free(g->bstep);
    g_free(g->bsent);
    g->acc = NULL;
    g->bstep = NULL;
    g->bsent = NULL;
    g->probe_out = false;
}

static void coll_finish(CollGroup *g, uint8_t err)
{
    ExanetColl *c = g->c;
    ExanetRdma *r = c->r;

    if (g->state != EXANET_COLL_ONGOING) {
        return;
    }
    trace_exanet_coll_done(coll_node(g), g->idx, g->seq, err);
    g->state = err ? EXANET_COLL_ERROR : EXANET_COLL_DONE;
    g->err = err;
    if (err) {
        g->failed = true;
        coll_free_sends(g);     /* the others learn it from their probes */
        c->cnt[EXANET_CCNT_ERRORS]++;
        if (err == EXANET_COLL_E_TIMEOUT) {
            c->cnt[EXANET_CCNT_TIMEOUTS]++;
        }
    } else {
        c->cnt[EXANET_CCNT_DONE]++;
    }
    coll_drop_state(g, false);
    fabric_park_wake(FABRIC_WAKE_DEVICE);
    if (!r->page[g->page].enabled) {
        return;     /* aborted with its page: nobody to tell */
    }
    if (g->lcomp_va) {
        exanet_rdma_write_notif(r, g->rank, g->lcomp_va, g->tag, g->len,
                                coll_node(g), g->myrank & 0xff,
                                EXANET_RDMA_OP_COLL, err, g->page, g->idx,
                                EXANET_RDMA_N_COMPLETION);
    }
    /* After the completion record (if any) is in memory. */
    exanet_rdma_rank_event(r, g->rank);
}

/*
 * Done when the result is complete: sends still unanswered stay on
 * g->sends (their partner may need them again) and do not delay it.
 */
static void coll_maybe_done(CollGroup *g)
{
    if (g->state == EXANET_COLL_ONGOING && g->bdone == g->nblocks) {
        coll_finish(g, 0);
    }
}

/*
 * The direct step of block b: once every other member's vector is here,
 * combine all of them in member order (the same sequence on every
 * member).  False while some are missing.
 */
static bool coll_direct(CollGroup *g, uint32_t b, uint8_t *acc, size_t len)
{
    CollEarly *e[COLL_DIRECT_MAX_MEMBERS];
    g_autofree uint8_t *res = NULL;

    for (uint32_t m = 0; m < g->size; m++) {
        if (m == g->myrank) {
            continue;
        }
        e[m] = g_hash_table_lookup(g->early,
                                   early_key(g->seq, COLL_WIRE_DIRECT, m, b));
        if (!e[m]) {
            return false;
        }
        if (e[m]->len != len) {
            coll_finish(g, EXANET_COLL_E_MISMATCH);
            return false;
        }
    }
    res = g_malloc(MAX(len, 1));
    memcpy(res, g->myrank ? e[0]->data : acc, len);
    for (uint32_t m = 1; m < g->size; m++) {
        coll_combine(res, res, m == g->myrank ? acc : e[m]->data, len,
                     g->dtype, g->op);
    }
    memcpy(acc, res, len);
    for (uint32_t m = 0; m < g->size; m++) {
        if (m != g->myrank) {
            g->early_bytes -= e[m]->len;
            g_hash_table_remove(g->early,
                                early_key(g->seq, COLL_WIRE_DIRECT, m, b));
        }
    }
    g->c->cnt[EXANET_CCNT_RX_BLOCKS] += g->size - 1;
    g->c->cnt[EXANET_CCNT_RX_BYTES] += (g->size - 1) * len;
    return true;
}

/* Walk block b through its steps as far as the data present allows. */
static void coll_advance(CollGroup *g, uint32_t b)
{
    size_t off = (size_t)b * COLL_BLOCK;
    size_t len = MIN((uint64_t)COLL_BLOCK, g->len - off);

    while (g->state == EXANET_COLL_ONGOING && g->bstep[b] < g->nsteps) {
        const CollStep *st = &g->steps[g->bstep[b]];
        gpointer key = early_key(g->seq, st->wire, st->peer, b);
        CollEarly *e;
        uint8_t *acc = g->acc + off;

        if (st->kind == CS_SEND_FOLD || st->kind == CS_SEND_RESULT) {
            coll_send_block(g, st, st->peer, b);
            g->bstep[b]++;
            continue;
        }
        if (st->kind == CS_DIRECT) {
            if (!g->bsent[b]) {
                for (uint32_t m = 0; m < g->size; m++) {
                    if (m != g->myrank) {
                        coll_send_block(g, st, m, b);
                    }
                }
                g->bsent[b] = true;
            }
            if (!coll_direct(g, b, acc, len)) {
                return;
            }
            g->bsent[b] = false;
            g->bstep[b]++;
            continue;
        }
        if (st->kind == CS_EXCHANGE && !g->bsent[b]) {
            coll_send_block(g, st, st->peer, b);
            g->bsent[b] = true;
        }
        e = g_hash_table_lookup(g->early, key);
        if (!e) {
            return;
        }
        if (e->len != len) {
            coll_finish(g, EXANET_COLL_E_MISMATCH);
            return;
        }
        if (st->kind == CS_RECV_RESULT) {
            memcpy(acc, e->data, len);
        } else if (st->peer > g->myrank) {
            coll_combine(acc, acc, e->data, len, g->dtype, g->op);
        } else {
            coll_combine(acc, e->data, acc, len, g->dtype, g->op);
        }
        g->c->cnt[EXANET_CCNT_RX_BLOCKS]++;
        g->c->cnt[EXANET_CCNT_RX_BYTES] += len;
        g->early_bytes -= e->len;
        g_hash_table_remove(g->early, key);
        g->bsent[b] = false;
        g->bstep[b]++;
    }
    if (g->state != EXANET_COLL_ONGOING || g->bstep[b] != g->nsteps) {
        return;
    }
    g->bstep[b]++;      /* past the end: result written */
    if (len && exanet_rdma_dma(coll_rdma(g), g->rank, g->dst_va + off,
                               g->acc + off, len,
                               DMA_DIRECTION_FROM_DEVICE) != MEMTX_OK) {
        coll_finish(g, EXANET_COLL_E_LOCAL_DMA);
        return;
    }
    g->bdone++;
    coll_maybe_done(g);
}

static void coll_timer_arm(CollGroup *g)
{
    fabric_nic_timer_arm(g->timer, &g->due,
                         (int64_t)coll_rdma(g)->retx_us * SCALE_US);
}

/*
 * Early packets of the new operation must describe the same operation;
 * the members that sent others learn it (MISMATCH answers).
 */
static bool coll_early_match(CollGroup *g)
{
    GHashTableIter it;
    gpointer v;
    bool match = true;

    g_hash_table_iter_init(&it, g->early);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        const CollEarly *e = v;

        if (e->h.seq == g->seq &&
            (e->h.count != g->count || e->h.dtype != g->dtype ||
             e->h.op != g->op || e->h.nblocks != g->nblocks)) {
            coll_answer(coll_rdma(g), g->members[e->h.src_rank], &e->h,
                        RD_COLL_ACK, EXANET_COLL_E_MISMATCH);
            match = false;
        }
    }
    return match;
}

/* What a member answers about its failed operation. */
static uint8_t coll_failure_code(const CollGroup *g)
{
    return g->err == EXANET_COLL_E_MISMATCH ? EXANET_COLL_E_MISMATCH :
                                              EXANET_COLL_E_PEER;
}

static uint8_t coll_start(CollGroup *g)
{
    ExanetRdma *r = coll_rdma(g);
    const uint8_t *d = g->desc;
    uint64_t type = ldq_le_p(d + EXANET_COLL_D_TYPE);
    size_t esz;

    g->src_va = ldq_le_p(d + EXANET_COLL_D_SRC_VA);
    g->dst_va = ldq_le_p(d + EXANET_COLL_D_DST_VA);
    g->count = ldq_le_p(d + EXANET_COLL_D_COUNT);
    g->lcomp_va = ldq_le_p(d + EXANET_COLL_D_LCOMP_VA);
    g->tag = ldq_le_p(d + EXANET_COLL_D_TAG);
    g->dtype = EXANET_COLL_TYPE_DTYPE(type);
    g->op = EXANET_COLL_TYPE_OP(type);
    g->rank = r->page[g->page].rank;
    g->seq++;
    g->state = EXANET_COLL_ONGOING;
    g->err = 0;
    g->bdone = 0;
    g->moved = true;
    g->probe_retries = 0;
    g->c->cnt[EXANET_CCNT_OPS]++;
    esz = EXANET_COLL_DTYPE_SIZE(g->dtype);
    if (!EXANET_COLL_TYPE_VALID(g->dtype, g->op) || (type >> 16) ||
        ldq_le_p(d + EXANET_COLL_D_CTRL) ||
        ldq_le_p(d + 0x30) ||
        g->count > EXANET_COLL_MAX_LEN / esz ||
        (g->lcomp_va & 7)) {
        EXANET_GUEST_ERR(exanet_err_coll_desc, "group %u: bad descriptor "
                         "(type 0x%" PRIx64 " count %" PRIu64 ")", g->idx,
                         type, g->count);
        return EXANET_COLL_E_BAD_DESC;
    }
    g->len = g->count * esz;
    g->nblocks = MAX(1, DIV_ROUND_UP(g->len, COLL_BLOCK));
    if (g->size > 1 && g->size <= g->c->direct_max &&
        g->len <= COLL_DIRECT_MAX_LEN) {
        g->steps = &coll_direct_step;
        g->nsteps = 1;
    } else {
        g->steps = g->rd_steps;
        g->nsteps = g->rd_nsteps;
    }
    trace_exanet_coll_start(coll_node(g), g->idx, g->seq, g->dtype, g->op,
                            g->count, g->size, g->myrank);
    if (!coll_early_match(g)) {
        return EXANET_COLL_E_MISMATCH;
    }
    g->acc = g_try_malloc(MAX(g->len, 1));
    g->bstep = g_try_new0(uint8_t, g->nblocks);
    g->bsent = g_try_new0(bool, g->nblocks);
    if (!g->acc || !g->bstep || !g->bsent) {
        return EXANET_COLL_E_NOMEM;
    }
    if (g->len && exanet_rdma_dma(r, g->rank, g->src_va, g->acc, g->len,
                                  DMA_DIRECTION_TO_DEVICE) != MEMTX_OK) {
        return EXANET_COLL_E_LOCAL_DMA;
    }
    coll_timer_arm(g);
    for (uint32_t b = 0; b < g->nblocks && g->state == EXANET_COLL_ONGOING;
         b++) {
        coll_advance(g, b);
    }
    return 0;
}

static void coll_trigger(CollGroup *g)
{
    uint8_t err;

    if (g->failed) {
        g->seq++;
        g->state = EXANET_COLL_ONGOING;
        g->c->cnt[EXANET_CCNT_OPS]++;
        coll_finish(g, EXANET_COLL_E_FAILED);
        return;
    }
    err = coll_start(g);
    if (err) {
        coll_finish(g, err);
    }
}

/*
 * A send that will not be answered (err).  Only the current operation
 * while its result is incomplete fails: a partner that finished and left,
 * or failed afterwards, does not fail an operation that succeeded here.
 */
static void coll_send_failed(CollGroup *g, CollSend *s, uint8_t err)
{
    if (s->h.seq == g->seq && g->state == EXANET_COLL_ONGOING &&
        g->bdone < g->nblocks) {
        coll_finish(g, err);
        return;
    }
    QTAILQ_REMOVE(&g->sends, s, link);
    g_free(s);
}

/* Resend what is older than a period; false if g's operation ended. */
static bool coll_resend(CollGroup *g, int64_t now, int64_t period,
                        uint32_t retx_max)
{
    CollSend *s, *next;

    QTAILQ_FOREACH_SAFE(s, &g->sends, link, next) {
        if (now - s->sent_ns < period) {
            continue;
        }
        if (++s->retries > retx_max) {
            bool ongoing = g->state == EXANET_COLL_ONGOING;

            coll_send_failed(g, s, EXANET_COLL_E_TIMEOUT);
            if (ongoing && g->state != EXANET_COLL_ONGOING) {
                return false;
            }
            continue;
        }
        g->c->cnt[EXANET_CCNT_RETRANSMITS]++;
        trace_exanet_coll_retransmit(coll_node(g), g->idx, s->h.seq,
                                     s->h.dst_rank, s->h.step, s->h.block,
                                     s->retries);
        coll_xmit(g->c, s);
    }
    return true;
}

/* Probe the member the slowest block of the operation waits for. */
static void coll_probe(CollGroup *g)
{
    uint32_t slow = 0, peer;
    const CollStep *st;
    CollHdr h;

    for (uint32_t b = 1; b < g->nblocks; b++) {
        if (g->bstep[b] < g->bstep[slow]) {
            slow = b;
        }
    }
    if (g->bstep[slow] >= g->nsteps) {
        return;
    }
    st = &g->steps[g->bstep[slow]];
    peer = st->peer;
    if (st->kind == CS_DIRECT) {
        /* the first member whose vector is missing */
        for (peer = 0; peer < g->size; peer++) {
            if (peer != g->myrank &&
                !g_hash_table_contains(g->early,
                                       early_key(g->seq, COLL_WIRE_DIRECT,
                                                 peer, slow))) {
                break;
            }
        }
        if (peer == g->size) {
            return;
        }
    }
    coll_hdr_init(g, &h, peer, st->wire, slow);
    g->probe_out = true;
    g->c->cnt[EXANET_CCNT_PROBES]++;
    trace_exanet_coll_probe(coll_node(g), g->idx, g->seq, peer);
    exanet_rdma_send_small(coll_rdma(g), g->members[peer], RD_COLL_PROBE,
                           &h, sizeof(h));
}

/*
 * Group timer, every RDMA_RETX_US while an operation runs or sends are
 * unanswered: resend, and probe when nothing moved for a period.
 */
static void coll_timer(void *opaque)
{
    CollGroup *g = opaque;
    ExanetRdma *r = coll_rdma(g);
    uint32_t retx_max = *r->retx_max;
    int64_t period = (int64_t)r->retx_us * SCALE_US;

    if (!fabric_nic_timer_due(g->timer, &g->due)) {
        return;
    }
    if (!coll_resend(g, qemu_clock_get_ns(QEMU_CLOCK_REALTIME), period,
                     retx_max)) {
        goto rearm;
    }
    if (g->state == EXANET_COLL_ONGOING) {
        if (g->probe_out && ++g->probe_retries > retx_max) {
            coll_finish(g, EXANET_COLL_E_TIMEOUT);
            goto rearm;
        }
        if (!g->moved || g->probe_out) {
            coll_probe(g);
        }
        g->moved = false;
    }
rearm:
    if (g->state == EXANET_COLL_ONGOING || !QTAILQ_EMPTY(&g->sends)) {
        coll_timer_arm(g);
    }
}

/* Unit timer: the sends of disabled groups, until answered or given up. */
static void coll_orphan_timer(void *opaque)
{
    ExanetColl *c = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    int64_t period = (int64_t)c->r->retx_us * SCALE_US;
    CollSend *s, *next;

    if (!fabric_nic_timer_due(c->timer, &c->due)) {
        return;
    }
    QTAILQ_FOREACH_SAFE(s, &c->orphans, link, next) {
        if (now - s->sent_ns < period) {
            continue;
        }
        if (++s->retries > *c->r->retx_max) {
            QTAILQ_REMOVE(&c->orphans, s, link);
            g_free(s);
            continue;
        }
        c->cnt[EXANET_CCNT_RETRANSMITS]++;
        coll_xmit(c, s);
    }
    if (!QTAILQ_EMPTY(&c->orphans)) {
        fabric_nic_timer_arm(c->timer, &c->due, period);
    }
}

/* ------------------------------------------------------------------ */
/* Reception */

static CollGroup *coll_find(ExanetColl *c, const CollHdr *h)
{
    for (unsigned i = 0; i < EXANET_COLL_GROUPS; i++) {
        CollGroup *g = &c->g[i];

        if (g->enabled && g->pdid == h->pdid && g->key == h->key &&
            g->myrank == h->dst_rank) {
            return g;
        }
    }
    return NULL;
}

/* The group a packet from src is for, if src really is that member. */
static CollGroup *coll_lookup(ExanetColl *c, uint32_t src, const CollHdr *h,
                              uint8_t answer_type)
{
    CollGroup *g = coll_find(c, h);

    if (!g || h->src_rank >= g->size || g->members[h->src_rank] != src) {
        c->cnt[EXANET_CCNT_RX_REFUSED]++;
        trace_exanet_coll_refused(c->r->node_id, src,
                                  h->pdid, h->key, h->dst_rank, h->src_rank);
        if (answer_type) {
            coll_answer(c->r, src, h, answer_type, EXANET_COLL_E_NO_GROUP);
        }
        return NULL;
    }
    return g;
}

static void coll_rx_data(ExanetColl *c, uint32_t src, const CollHdr *h,
                         const void *data, size_t dlen, bool data_ok)
{
    CollGroup *g = coll_lookup(c, src, h, RD_COLL_ACK);
    bool current;
    int i;
    CollEarly *e;
    gpointer key;

    if (!g) {
        return;
    }
    i = coll_recv_step(g, h->step, h->src_rank);
    if (i < 0 || h->block >= h->nblocks || h->nblocks > COLL_MAX_BLOCKS ||
        dlen > COLL_BLOCK) {
        c->cnt[EXANET_CCNT_RX_BAD]++;
        return;
    }
    if (!data_ok) {
        c->cnt[EXANET_CCNT_RX_CORRUPT]++;
        return;         /* not ACKed: the sender's timer sends it again */
    }
    current = g->state == EXANET_COLL_ONGOING && h->seq == g->seq;
    if (!current && h->seq != g->seq + 1) {
        if (h->seq == g->seq && g->state == EXANET_COLL_ERROR) {
            coll_answer(c->r, src, h, RD_COLL_ACK, coll_failure_code(g));
        } else if ((int32_t)(h->seq - g->seq) <= 0) {
            c->cnt[EXANET_CCNT_RX_DUPLICATES]++;
            coll_answer(c->r, src, h, RD_COLL_ACK, 0);
        } else {
            c->cnt[EXANET_CCNT_RX_BAD]++;
        }
        return;
    }
    if (current && (h->count != g->count || h->dtype != g->dtype ||
                    h->op != g->op || h->nblocks != g->nblocks)) {
        coll_answer(c->r, src, h, RD_COLL_ACK, EXANET_COLL_E_MISMATCH);
        coll_finish(g, EXANET_COLL_E_MISMATCH);
        return;
    }
    key = early_key(h->seq, h->step, h->src_rank, h->block);
    if ((current && g->bstep[h->block] > i) ||
        g_hash_table_contains(g->early, key)) {
        c->cnt[EXANET_CCNT_RX_DUPLICATES]++;
        coll_answer(c->r, src, h, RD_COLL_ACK, 0);
        return;
    }
    if (g->early_bytes + dlen > COLL_EARLY_CAP) {
        return;         /* not ACKed: comes again when there is room */
    }
    e = g_malloc(sizeof(*e) + dlen);
    e->h = *h;
    e->len = dlen;
    memcpy(e->data, data, dlen);
    g_hash_table_insert(g->early, key, e);
    g->early_bytes += dlen;
    coll_answer(c->r, src, h, RD_COLL_ACK, 0);
    trace_exanet_coll_rx(c->r->node_id, g->idx, h->seq, h->src_rank,
                         h->step, h->block, dlen);
    if (current) {
        g->moved = true;
        if (g->bstep[h->block] == i) {
            coll_advance(g, h->block);
        } else {
            c->cnt[EXANET_CCNT_RX_EARLY]++;
        }
    } else {
        c->cnt[EXANET_CCNT_RX_EARLY]++;
    }
}

static bool coll_send_is(const CollSend *s, const CollHdr *h)
{
    return s->h.seq == h->seq && s->h.dst_rank == h->src_rank &&
           s->h.step == h->step && s->h.block == h->block;
}

/* An answer to a send of a group disabled since. */
static void coll_rx_orphan_ack(ExanetColl *c, uint32_t src, const CollHdr *h)
{
    CollSend *s;

    QTAILQ_FOREACH(s, &c->orphans, link) {
        if (s->dst_node == src && s->h.pdid == h->pdid &&
            s->h.key == h->key && s->h.src_rank == h->dst_rank &&
            coll_send_is(s, h)) {
            QTAILQ_REMOVE(&c->orphans, s, link);
            g_free(s);
            return;
        }
    }
}

static void coll_rx_ack(ExanetColl *c, uint32_t src, const CollHdr *h)
{
    CollGroup *g = coll_find(c, h);
    CollSend *s;
    bool current;

    /* Not coll_lookup(): a NO_GROUP answer names no group there. */
    if (!g || h->src_rank >= g->size || g->members[h->src_rank] != src) {
        coll_rx_orphan_ack(c, src, h);
        return;
    }
    current = g->state == EXANET_COLL_ONGOING && h->seq == g->seq;
    if (current) {
        g->moved = true;
    }
    QTAILQ_FOREACH(s, &g->sends, link) {
        if (coll_send_is(s, h)) {
            break;
        }
    }
    if (!s) {
        if (current && h->code && h->code != EXANET_COLL_E_NO_GROUP) {
            coll_finish(g, h->code == EXANET_COLL_E_MISMATCH ?
                        EXANET_COLL_E_MISMATCH : EXANET_COLL_E_PEER);
        }
        return;
    }
    if (!h->code) {
        QTAILQ_REMOVE(&g->sends, s, link);
        g_free(s);
    } else if (h->code == EXANET_COLL_E_MISMATCH && current) {
        coll_finish(g, EXANET_COLL_E_MISMATCH);
    } else {
        coll_send_failed(g, s, h->code == EXANET_COLL_E_NO_GROUP ?
                         EXANET_COLL_E_NO_GROUP : EXANET_COLL_E_PEER);
    }
}

static void coll_rx_probe(ExanetColl *c, uint32_t src, const CollHdr *h)
{
    CollGroup *g = coll_lookup(c, src, h, RD_COLL_PROBE_ACK);

    if (g) {
        coll_answer(c->r, src, h, RD_COLL_PROBE_ACK,
                    g->failed ? coll_failure_code(g) : 0);
    }
}

static void coll_rx_probe_ack(ExanetColl *c, uint32_t src, const CollHdr *h)
{
    CollGroup *g = coll_find(c, h);

    if (!g || h->src_rank >= g->size || g->members[h->src_rank] != src ||
        g->state != EXANET_COLL_ONGOING || h->seq != g->seq) {
        return;
    }
    if (h->code) {
        coll_finish(g, h->code == EXANET_COLL_E_NO_GROUP ||
                       h->code == EXANET_COLL_E_MISMATCH ?
                    h->code : EXANET_COLL_E_PEER);
        return;
    }
    g->probe_out = false;
    g->probe_retries = 0;
}

bool exanet_coll_bulk_rx(ExanetColl *c, uint32_t src, uint8_t type,
                         const void *hdr, size_t hlen, const void *data,
                         size_t dlen, bool data_ok)
{
    CollHdr h;

    if (type < RD_COLL || type > RD_COLL_PROBE_ACK) {
        return false;
    }
    if (hlen != sizeof(h) || (type != RD_COLL && dlen)) {
        c->cnt[EXANET_CCNT_RX_BAD]++;
        return true;
    }
    memcpy(&h, hdr, sizeof(h));
    switch (type) {
    case RD_COLL:
        coll_rx_data(c, src, &h, data, dlen, data_ok);
        break;
    case RD_COLL_ACK:
        coll_rx_ack(c, src, &h);
        break;
    case RD_COLL_PROBE:
        coll_rx_probe(c, src, &h);
        break;
    default:
        coll_rx_probe_ack(c, src, &h);
        break;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Groups: privileged registers */

static void coll_group_disable(CollGroup *g)
{
    ExanetColl *c = g->c;

    if (g->state == EXANET_COLL_ONGOING) {
        coll_finish(g, EXANET_COLL_E_ABORTED);
    }
    if (!QTAILQ_EMPTY(&g->sends)) {
        /* Partners of a finished operation may still need them. */
        while (!QTAILQ_EMPTY(&g->sends)) {
            CollSend *s = QTAILQ_FIRST(&g->sends);

            QTAILQ_REMOVE(&g->sends, s, link);
            QTAILQ_INSERT_TAIL(&c->orphans, s, link);
        }
        fabric_nic_timer_arm(c->timer, &c->due,
                             (int64_t)c->r->retx_us * SCALE_US);
    }
    coll_drop_state(g, true);
    g->enabled = false;
    g->due = 0;
}

static void coll_group_enable(CollGroup *g)
{
    coll_group_disable(g);
    if (!g->size || g->myrank >= g->size || g->page >= EXANET_RDMA_PAGES ||
        g->members[g->myrank] != g->c->r->node_id) {
        EXANET_GUEST_ERR(exanet_err_coll_group, "group %u: bad group "
                         "(size %u rank %u page %u)", g->idx, g->size,
                         g->myrank, g->page);
        return;
    }
    coll_plan(g);
    g->seq = 0;
    g->state = EXANET_COLL_IDLE;
    g->err = 0;
    g->failed = false;
    g->enabled = true;
    memset(g->desc, 0, sizeof(g->desc));
}

bool exanet_coll_ctrl_owns(hwaddr off)
{
    return off >= EXANET_REG_COLL_CAPS && off < 0x4000;
}

uint32_t exanet_coll_ctrl_read(ExanetColl *c, hwaddr off)
{
    CollGroup *g = &c->g[c->sel];

    if (off >= EXANET_REG_COLL_COUNTER(0) &&
        off < EXANET_REG_COLL_COUNTER(EXANET_COLL_NUM_COUNTERS)) {
        uint64_t v = c->cnt[(off - EXANET_REG_COLL_COUNTER(0)) / 8];

        return fabric_nic_reg_part(v, off, 4);
    }
    switch (off) {
    case EXANET_REG_COLL_CAPS:
        return EXANET_COLL_GROUPS | EXANET_COLL_MAX_MEMBERS << 8;
    case EXANET_REG_COLL_SEL:
        return c->sel;
    case EXANET_REG_COLL_G_CTRL:
        return g->enabled;
    case EXANET_REG_COLL_G_PDID:
        return g->pdid;
    case EXANET_REG_COLL_G_PAGE:
        return g->page;
    case EXANET_REG_COLL_G_KEY:
        return g->key;
    case EXANET_REG_COLL_G_SIZE:
        return g->size;
    case EXANET_REG_COLL_G_MYRANK:
        return g->myrank;
    case EXANET_REG_COLL_G_MIDX:
        return g->midx;
    case EXANET_REG_COLL_G_MNODE:
        return g->midx < EXANET_COLL_MAX_MEMBERS ? g->members[g->midx] : 0;
    case EXANET_REG_COLL_G_STATE:
        return g->state;
    }
    return 0;
}

void exanet_coll_ctrl_write(ExanetColl *c, hwaddr off, uint32_t val)
{
    CollGroup *g = &c->g[c->sel];

    if (off == EXANET_REG_COLL_SEL) {
        if (val < EXANET_COLL_GROUPS) {
            c->sel = val;
            return;
        }
    } else if (off == EXANET_REG_COLL_G_CTRL) {
        if (val & EXANET_COLL_G_ENABLE) {
            coll_group_enable(g);
        } else {
            coll_group_disable(g);
        }
        return;
    } else if (g->enabled) {
        /* fall through to the error: an enabled group is frozen */
    } else {
        switch (off) {
        case EXANET_REG_COLL_G_PDID:
            g->pdid = val & EXANET_PDID_MAX;
            return;
        case EXANET_REG_COLL_G_PAGE:
            g->page = val;
            return;
        case EXANET_REG_COLL_G_KEY:
            g->key = val;
            return;
        case EXANET_REG_COLL_G_SIZE:
            g->size = MIN(val, EXANET_COLL_MAX_MEMBERS);
            return;
        case EXANET_REG_COLL_G_MYRANK:
            g->myrank = val;
            return;
        case EXANET_REG_COLL_G_MIDX:
            g->midx = val;
            return;
        case EXANET_REG_COLL_G_MNODE:
            if (g->midx < EXANET_COLL_MAX_MEMBERS) {
                g->members[g->midx++] = val;
                return;
            }
            break;
        }
    }
    EXANET_GUEST_ERR(exanet_err_coll_reg, "refused write 0x%x to collective "
                     "register 0x%" HWADDR_PRIx, val, off);
}

/* The owner of RDMA page p lost it: its groups' operations end. */
void exanet_coll_page_disabled(ExanetColl *c, unsigned p)
{
    for (unsigned i = 0; i < EXANET_COLL_GROUPS; i++) {
        CollGroup *g = &c->g[i];

        if (g->enabled && g->page == p && g->state == EXANET_COLL_ONGOING) {
            coll_finish(g, EXANET_COLL_E_ABORTED);
        }
    }
}

/* ------------------------------------------------------------------ */
/* BAR5: collective pages */

static CollGroup *coll_slot(ExanetColl *c, hwaddr off)
{
    unsigned p = off / EXANET_COLL_PAGE_SIZE;
    unsigned s = (off % EXANET_COLL_PAGE_SIZE) / EXANET_COLL_SLOT_STRIDE;
    CollGroup *g;

    if (p >= EXANET_RDMA_PAGES || s >= EXANET_COLL_GROUPS ||
        exanet_dma_depth || !c->r->page[p].enabled) {
        return NULL;
    }
    g = &c->g[s];
    return g->enabled && g->page == p ? g : NULL;
}

static bool coll_group_finished(void *opaque)
{
    const CollGroup *g = opaque;

    return g->state != EXANET_COLL_ONGOING;
}

static uint64_t coll_bar_read(void *opaque, hwaddr off, unsigned size)
{
    ExanetColl *c = opaque;
    CollGroup *g = coll_slot(c, off);
    unsigned reg = off % EXANET_COLL_SLOT_STRIDE;
    uint64_t v;

    if (!g) {
        return 0;
    }
    switch (reg & ~7u) {
    case EXANET_COLL_S_STATUS:
        if (g->state == EXANET_COLL_ONGOING) {
            exanet_ni_poll(c->r->ni, coll_group_finished, g);
        }
        v = g->state | (uint64_t)g->err << 8 | (uint64_t)g->seq << 32;
        break;
    case EXANET_COLL_S_DONE_BLOCKS:
        v = g->bdone;
        break;
    default:
        return 0;
    }
    return fabric_nic_reg_part(v, reg, size);
}

static void coll_bar_write(void *opaque, hwaddr off, uint64_t val,
                           unsigned size)
{
    ExanetColl *c = opaque;
    CollGroup *g = coll_slot(c, off);
    unsigned reg = off % EXANET_COLL_SLOT_STRIDE;

    if (!g) {
        return;
    }
    fabric_nic_poll_found();    /* posting software does not wait */
    if (g->state == EXANET_COLL_ONGOING) {
        return;     /* the descriptor is frozen while in flight */
    }
    if (size == 8) {
        stq_le_p(g->desc + reg, val);
    } else {
        stl_le_p(g->desc + reg, val);
    }
    if (reg == EXANET_COLL_D_CTRL) {
        coll_trigger(g);
    }
}

static const MemoryRegionOps coll_bar_ops = {
    .read = coll_bar_read,
    .write = coll_bar_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 4, .max_access_size = 8 },
    .impl = { .min_access_size = 4, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* Life cycle */

ExanetColl *exanet_coll_new(ExanetRdma *r, Object *owner)
{
    ExanetColl *c = g_new0(ExanetColl, 1);

    c->r = r;
    for (unsigned i = 0; i < EXANET_COLL_GROUPS; i++) {
        CollGroup *g = &c->g[i];

        g->c = c;
        g->idx = i;
        g->members = g_new0(uint32_t, EXANET_COLL_MAX_MEMBERS);
        QTAILQ_INIT(&g->sends);
        g->early = g_hash_table_new_full(g_direct_hash, g_direct_equal,
                                         NULL, g_free);
        g->timer = timer_new_ns(QEMU_CLOCK_REALTIME, coll_timer, g);
    }
    QTAILQ_INIT(&c->orphans);
    c->timer = timer_new_ns(QEMU_CLOCK_REALTIME, coll_orphan_timer, c);
    memory_region_init_io(&c->bar, owner, &coll_bar_ops, c, "exanet-coll",
                          EXANET_BAR_COLL_SIZE);
    fabric_nic_parkable(&c->bar);
    return c;
}

void exanet_coll_set_direct(ExanetColl *c, uint32_t members)
{
    c->direct_max = MIN(members, COLL_DIRECT_MAX_MEMBERS);
}

MemoryRegion *exanet_coll_bar(ExanetColl *c)
{
    return &c->bar;
}

void exanet_coll_reset(ExanetColl *c)
{
    for (unsigned i = 0; i < EXANET_COLL_GROUPS; i++) {
        CollGroup *g = &c->g[i];

        coll_group_disable(g);
        g->pdid = g->page = g->key = g->size = g->myrank = g->midx = 0;
        g->seq = 0;
        g->state = EXANET_COLL_IDLE;
        g->err = 0;
        g->failed = false;
        memset(g->members, 0, EXANET_COLL_MAX_MEMBERS * sizeof(uint32_t));
    }
    while (!QTAILQ_EMPTY(&c->orphans)) {
        CollSend *s = QTAILQ_FIRST(&c->orphans);

        QTAILQ_REMOVE(&c->orphans, s, link);
        g_free(s);
    }
    c->due = 0;
    c->sel = 0;
    memset(c->cnt, 0, sizeof(c->cnt));
}
