// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * extoll-regtest, the retransmission budget: streams to nodes that
 * are not running, and nodes that start afterwards (extoll-regtest.h).
 */
#define _GNU_SOURCE
#include "extoll-regtest.h"

/* ---------------------------------------------- retransmission budget */

/*
 * Seconds of silence after which a stream with budget n fails (5 ms doubling
 * to 100 ms).
 */
static double budget_s(unsigned n)
{
    double t = 0;

    for (unsigned r = 0; r <= n; r++) {
        t += (r < 5 ? 5u << r : 100u) / 1000.0;
    }
    return t;
}

/* Until the VELO credits of VPID v are all back and it has no RMA command pending. */
static void settle(int v, double tmo)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(v); /* MMIO */
    double t0 = now();

    while (
        (R64(pg, EXTOLL_VELO_CREDITS) != R32(bar0, EXTOLL_REG_VELO_CREDITS) ||
         R32(bar0, EXTOLL_REG_VPID(v) + EXTOLL_VPID_RMA_PENDING)) &&
        now() - t0 < tmo) {
        usleep(1000);
    }
}

/*
 * Node 'dead' is in range but not running: nothing answers.  A put (requester +
 * completer notifications asked for), an immediate put (none asked for), a qw get
 * (completer only), a lock (none) and two VELO messages to it fail together when
 * the request stream has been silent for the budget: one requester notification
 * with error 1 (REQ) each, in order, with the words a success would have had;
 * the VELO credits come back and the messages count in VELO_DROPS; counters.
 * The stream starts afresh: the next command fails the same way.
 */
void dead_test(unsigned dead, unsigned want_max)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(1); /* MMIO */
    unsigned F = EXTOLL_RMA_FRAG_SIZE, max;
    struct ep e;
    double t0, dt;

    node_id = R32(bar0, EXTOLL_REG_NODE_ID);
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&e, 1, 0);
    max = R32(bar0, EXTOLL_REG_RETX_MAX);
    EXPECT(max == want_max, "RETX_MAX reads %u (retx-max)\n", max);
    W32(bar0, EXTOLL_REG_RETX_MAX, 99);
    EXPECT(R32(bar0, EXTOLL_REG_RETX_MAX) == max, "RETX_MAX is read-only\n");

    uint8_t *src = locked(8192), *dst = locked(8192);
    uint64_t nsrc = reg(src, 8192, 16, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
    uint64_t ndst = reg(dst, 8192, 32, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
    uint64_t credits = R32(bar0, EXTOLL_REG_VELO_CREDITS), nrem = 0x40000;
    uint64_t f0 = cnt(EXTOLL_CNT_TX_FAILED),
             d0 = cnt(EXTOLL_CNT_VELO_TX_DROPPED);
    uint64_t e0 = cnt(EXTOLL_CNT_RMA_ERRORS), r0 = cnt(EXTOLL_CNT_RETRANSMITS);
    size_t L = 3000;
    unsigned lo = (L - 1) / F * F;

    memset(dst, 0x5a, 8192);
    t0 = now();
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, dead, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nsrc, nrem);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, dead, 3, 0, 0, 4), nrem,
             0x1122334455ull);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_GET, dead, 3, EXTOLL_NOTI_COMPLETER,
                             0, 63),
             nrem, ndst);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, dead, 3, 0, 0, 0),
             (7ull << 32) | 5, 1ull << 32);
    velo_send(1, dead, 3, 0xee, "lost-1", 6);
    velo_send(1, dead, 3, 0xee, "lost-2", 6);
    EXPECT(R64(pg, EXTOLL_VELO_CREDITS) == credits - 2,
           "2 VELO credits in flight\n");
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 4,
           "4 commands pending\n");
    expect_noti(&e, "put to a silent node: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                nsrc + lo, L - lo, NULL);
    dt = now() - t0;
    EXPECT(dt > 0.8 * budget_s(max) && dt < budget_s(max) + 3,
           "failure reported after %.2f s (budget: %.2f s of silence)\n", dt,
           budget_s(max));
    expect_noti(&e, "immediate put without notifications: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_REQ,
                0x1122334455ull, 5, NULL);
    expect_noti(&e,
                "get: requester error 1 instead of its completer notification",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_QW_GET, EXTOLL_NOTI_ERR_REQ,
                ndst, 64, NULL);
    expect_noti(&e, "lock without notifications: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_LOCK_REQ, EXTOLL_NOTI_ERR_REQ,
                EXTOLL_LOCK_W0(5, 0, 7), 0, NULL);
    settle(1, 2);
    EXPECT(R64(pg, EXTOLL_VELO_CREDITS) == credits,
           "VELO credits back (%llu)\n",
           (unsigned long long)R64(pg, EXTOLL_VELO_CREDITS));
    EXPECT(R64(pg, EXTOLL_VELO_DROPS) == 2,
           "the 2 VELO messages count in VELO_DROPS\n");
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "RMA_PENDING back to 0\n");
    EXPECT(cnt(EXTOLL_CNT_TX_FAILED) - f0 == 6,
           "tx_failed counts 6 packets (4 requests, 2 VELO): %llu\n",
           (unsigned long long)(cnt(EXTOLL_CNT_TX_FAILED) - f0));
    EXPECT(cnt(EXTOLL_CNT_VELO_TX_DROPPED) - d0 == 2, "velo_tx_dropped +2\n");
    EXPECT(cnt(EXTOLL_CNT_RMA_ERRORS) - e0 == 4, "rma_errors +4\n");
    EXPECT(cnt(EXTOLL_CNT_RETRANSMITS) - r0 >= max,
           "retransmitted %llu times first\n",
           (unsigned long long)(cnt(EXTOLL_CNT_RETRANSMITS) - r0));
    EXPECT(all_bytes(dst, 8192, 0x5a), "nothing written for the failed get\n");
    expect_no_noti(
        &e, "no other notification (no completer notification for the get)");

    /* the stream starts afresh (new epoch): the next command fails the same way */
    t0 = now();
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, dead, 3, 0, 0, 0x42), 0xabcd,
             0);
    expect_noti(&e, "notification put on the new stream: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT, EXTOLL_NOTI_ERR_REQ,
                0xabcd, 0x43, NULL);
    dt = now() - t0;
    EXPECT(dt > 0.8 * budget_s(max) && dt < budget_s(max) + 3,
           "again after %.2f s\n", dt);
    settle(1, 2);
    EXPECT(cnt(EXTOLL_CNT_TX_FAILED) - f0 == 7 &&
               R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "tx_failed +1, nothing pending\n");
    /* the own node is not affected */
    memset(src, 0x33, 100);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1,
                             EXTOLL_NOTI_REQUESTER, 0, 99),
             nsrc, ndst);
    expect_noti(&e, "loopback put meanwhile", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, 0, nsrc, 100, NULL);
    EXPECT(all_bytes(dst, 100, 0x33), "loopback put data\n");
    EXPECT(cnt(EXTOLL_CNT_RMA_LATE_ANSWERS) == 0 &&
               cnt(EXTOLL_CNT_RMA_NO_ANSWER) == 0,
           "no late or lost answers\n");
    for (unsigned i = 0; i < EXTOLL_NUM_COUNTERS; i++) {
        printf("# counter %u = %llu\n", i, (unsigned long long)cnt(i));
    }
}

/*
 * Against node 'node' before it runs: a put and a VELO message fail; then
 * (run-extoll-vm-tests.sh starts node with "serve" when it sees "REVIVE:")
 * VELO pings until the echo server answers, and the pair works as before:
 * round trips, a put and a get.  The failed message is never echoed, and no
 * answer to the failed put arrives (the records of the failed stream are
 * gone with its bulk ring).
 */
void revive(unsigned node)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(5); /* MMIO */
    uint8_t buf[128], *src = locked(65536), *back = locked(65536);
    unsigned F = EXTOLL_RMA_FRAG_SIZE, stale = 0, pings = 0;
    struct ep e;
    uint64_t st;
    double t0;
    int ok, up = 0;

    node_id = R32(bar0, EXTOLL_REG_NODE_ID);
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&e, 5, 0);
    set_prot(5, PP, PP);
    uint64_t nsrc = reg_prot(src, 65536, 16, 5, EXTOLL_ATU_READ, PP);
    uint64_t nback = reg_prot(back, 65536, 32, 5, EXTOLL_ATU_WRITE, PP);
    uint64_t nrem = 64ull << 12;

    for (size_t i = 0; i < 65536; i++) {
        src[i] = i * 5 + 1;
    }
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER, 0, 99),
             nsrc, nrem + 1);
    velo_send(5, node, SRV_VPID, 0xee, "stale", 5);
    expect_noti(&e, "put to a node that does not run yet: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                nsrc, 100, NULL);
    settle(5, 2);
    EXPECT(R64(pg, EXTOLL_VELO_DROPS) == 1 &&
               R64(pg, EXTOLL_VELO_CREDITS) ==
                   R32(bar0, EXTOLL_REG_VELO_CREDITS),
           "VELO message failed: credit back, VELO_DROPS 1\n");
    printf("REVIVE: peer failed, start it\n");

    /* until it answers: each ping fails (not running) or is dropped (booting) */
    t0 = now();
    while (!up && now() - t0 < 300) {
        if (velo_send(5, node, SRV_VPID, 0x10 + pings++ % 0x80, "ping", 4)) {
            break;
        }
        st = velo_recv(&e, buf, 3);
        if (st) {
            stale += EXTOLL_VELO_ST_TAG(st) == 0xee;
            up = 1;
        }
    }
    EXPECT(up, "node %u answers once it runs (after %.0f s, %u pings)\n", node,
           now() - t0, pings);
    /* late echoes of earlier pings */
    while ((st = velo_recv(&e, buf, 1))) {
        stale += EXTOLL_VELO_ST_TAG(st) == 0xee;
    }
    EXPECT(!stale, "the VELO message reported failed never arrived\n");

    ok = up;
    for (int i = 0; i < 50 && ok; i++) {
        unsigned len = 1 + i * 7 % 120;
        uint8_t got[128];

        for (unsigned k = 0; k < len; k++) {
            buf[k] = i * 3 + k;
        }
        velo_send(5, node, SRV_VPID, i, buf, len);
        st = velo_recv(&e, got, 10);
        if (!st || EXTOLL_VELO_ST_LEN(st) != len ||
            EXTOLL_VELO_ST_TAG(st) != (unsigned)i || memcmp(buf, got, len)) {
            printf("  round %d status 0x%llx\n", i, (unsigned long long)st);
            ok = 0;
        }
    }
    EXPECT(ok, "50 VELO round trips after the restart, in order, intact\n");

    size_t L = 40000;
    unsigned lo = (L - 1) / F * F;

    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER, 0, L - 1),
             nsrc, nrem + 1);
    expect_noti(&e, "put after the restart: requester", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, 0, nsrc + lo, L - lo, NULL);
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, L - 1),
             nrem + 1, nback);
    expect_noti(&e, "get after the restart: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_GET_BT_RSP, 0, nback + lo, L - lo, NULL);
    EXPECT(!memcmp(src, back, L), "put + get data after the restart\n");
    settle(5, 2);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(5) + EXTOLL_VPID_RMA_PENDING) == 0,
           "nothing pending\n");
    EXPECT(cnt(EXTOLL_CNT_TX_FAILED) >= 2, "tx_failed %llu\n",
           (unsigned long long)cnt(EXTOLL_CNT_TX_FAILED));
    EXPECT(cnt(EXTOLL_CNT_RMA_LATE_ANSWERS) == 0,
           "no answer to the failed put arrived (rma_late_answers 0)\n");
    expect_no_noti(&e, "no stray notifications");
    for (unsigned i = 0; i < EXTOLL_NUM_COUNTERS; i++) {
        printf("# counter %u = %llu\n", i, (unsigned long long)cnt(i));
    }
}
