/*
 * ExaNet NI model, the collective unit (exanet-coll.c, exanet-coll-rx.c,
 * exanet-coll-regs.c): its state, packets and what the three files share.
 * Private to them; the rest of the model sees exanet-rdma-int.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef EXANET_COLL_INT_H
#define EXANET_COLL_INT_H

#include "qemu/queue.h"
#include "qemu/timer.h"
#include "exec/memory.h"
#include "exanet_coll.h"
#include "exanet-int.h"
#include "exanet-rdma-int.h"

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

static inline gpointer early_key(uint32_t seq, uint8_t step, uint32_t src,
                                 uint32_t block)
{
    return (gpointer)(uintptr_t)((uint64_t)(seq & 0xfffff) << 44 |
                                 (uint64_t)step << 36 |
                                 (uint64_t)(src & 0x3ff) << 26 |
                                 (block & 0x3ffffff));
}

extern const CollStep coll_direct_step;

/* exanet-coll.c */
void coll_plan(CollGroup *g);
int coll_recv_step(const CollGroup *g, uint8_t wire, uint32_t src);
void coll_answer(ExanetRdma *r, uint32_t dst_node, const CollHdr *in,
                 uint8_t type, uint8_t code);
void coll_drop_state(CollGroup *g, bool all_early);
void coll_finish(CollGroup *g, uint8_t err);
void coll_advance(CollGroup *g, uint32_t b);
uint8_t coll_failure_code(const CollGroup *g);
void coll_trigger(CollGroup *g);
void coll_send_failed(CollGroup *g, CollSend *s, uint8_t err);
void coll_timer(void *opaque);
void coll_orphan_timer(void *opaque);

#endif
