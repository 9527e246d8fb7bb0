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
#include "exanet-coll-int.h"

const CollStep coll_direct_step = { CS_DIRECT, COLL_WIRE_DIRECT, 0 };

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

void coll_plan(CollGroup *g)
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
int coll_recv_step(const CollGroup *g, uint8_t wire, uint32_t src)
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
void coll_answer(ExanetRdma *r, uint32_t dst_node, const CollHdr *in,
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
void coll_drop_state(CollGroup *g, bool all_early)
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

void coll_finish(CollGroup *g, uint8_t err)
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
void coll_advance(CollGroup *g, uint32_t b)
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
uint8_t coll_failure_code(const CollGroup *g)
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

void coll_trigger(CollGroup *g)
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
void coll_send_failed(CollGroup *g, CollSend *s, uint8_t err)
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
void coll_timer(void *opaque)
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
void coll_orphan_timer(void *opaque)
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
