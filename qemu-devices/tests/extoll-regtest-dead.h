/* SPDX-License-Identifier: GPL-2.0 */
/*
 * extoll-regtest, the retransmission budget: streams to nodes that are not
 * running (dead mode), and nodes that start afterwards (revive mode); part
 * of the translation unit of extoll-regtest.c (extoll-dev.h).
 */

/* From a reset device: VPID 1 (e). */
FIXTURE(silent_node)
{
    struct ep e;
};

FIXTURE_SETUP(silent_node)
{
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&self->e, 1, 0);
}

FIXTURE_TEARDOWN(silent_node)
{
    end_case(_metadata);
}

TEST_F(silent_node, retx_max_register)
{
    unsigned want_max = devtest_arg(1, 15), max;

    max = R32(bar0, EXTOLL_REG_RETX_MAX);
    EXPECT_TRUE(max == want_max)
    TH_LOG("RETX_MAX reads %u (retx-max)", max);
    W32(bar0, EXTOLL_REG_RETX_MAX, 99);
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_RETX_MAX) == max)
    TH_LOG("RETX_MAX is read-only");
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
TEST_F(silent_node, requests_fail_after_the_budget_stream_restarts)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(1); /* MMIO */
    unsigned dead = devtest_arg(0, 2), F = EXTOLL_RMA_FRAG_SIZE;
    unsigned max = R32(bar0, EXTOLL_REG_RETX_MAX);
    double t0, dt;

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
    EXPECT_TRUE(R64(pg, EXTOLL_VELO_CREDITS) == credits - 2)
    TH_LOG("2 VELO credits in flight");
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 4)
    TH_LOG("4 commands pending");
    EXPECT_NOTI(&self->e, "put to a silent node: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                nsrc + lo, L - lo);
    dt = now() - t0;
    ksft_print_msg(
        "failure reported after %.2f s (budget: %.2f s of silence)\n", dt,
        budget_s(max));
    EXPECT_TRUE(dt > 0.8 * budget_s(max) && dt < budget_s(max) + 3);
    EXPECT_NOTI(&self->e,
                "immediate put without notifications: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_REQ,
                0x1122334455ull, 5);
    EXPECT_NOTI(&self->e,
                "get: requester error 1 instead of its completer notification",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_QW_GET, EXTOLL_NOTI_ERR_REQ,
                ndst, 64);
    EXPECT_NOTI(&self->e, "lock without notifications: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_LOCK_REQ, EXTOLL_NOTI_ERR_REQ,
                EXTOLL_LOCK_W0(5, 0, 7), 0);
    settle(1, 2);
    EXPECT_TRUE(R64(pg, EXTOLL_VELO_CREDITS) == credits)
    TH_LOG("VELO credits back (%llu)",
           (unsigned long long)R64(pg, EXTOLL_VELO_CREDITS));
    EXPECT_TRUE(R64(pg, EXTOLL_VELO_DROPS) == 2)
    TH_LOG("the 2 VELO messages count in VELO_DROPS");
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0)
    TH_LOG("RMA_PENDING back to 0");
    EXPECT_TRUE(cnt(EXTOLL_CNT_TX_FAILED) - f0 == 6)
    TH_LOG("tx_failed counts 6 packets (4 requests, 2 VELO): %llu",
           (unsigned long long)(cnt(EXTOLL_CNT_TX_FAILED) - f0));
    EXPECT_TRUE(cnt(EXTOLL_CNT_VELO_TX_DROPPED) - d0 == 2)
    TH_LOG("velo_tx_dropped +2");
    EXPECT_TRUE(cnt(EXTOLL_CNT_RMA_ERRORS) - e0 == 4)
    TH_LOG("rma_errors +4");
    EXPECT_TRUE(cnt(EXTOLL_CNT_RETRANSMITS) - r0 >= max)
    TH_LOG("retransmitted %llu times first",
           (unsigned long long)(cnt(EXTOLL_CNT_RETRANSMITS) - r0));
    EXPECT_TRUE(all_bytes(dst, 8192, 0x5a))
    TH_LOG("nothing written for the failed get");
    EXPECT_NO_NOTI(
        &self->e,
        "no other notification (no completer notification for the get)");

    /* the stream starts afresh (new epoch): the next command fails the same way */
    t0 = now();
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, dead, 3, 0, 0, 0x42), 0xabcd,
             0);
    EXPECT_NOTI(&self->e,
                "notification put on the new stream: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT, EXTOLL_NOTI_ERR_REQ,
                0xabcd, 0x43);
    dt = now() - t0;
    ksft_print_msg("again after %.2f s\n", dt);
    EXPECT_TRUE(dt > 0.8 * budget_s(max) && dt < budget_s(max) + 3);
    settle(1, 2);
    EXPECT_TRUE(cnt(EXTOLL_CNT_TX_FAILED) - f0 == 7 &&
                R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0)
    TH_LOG("tx_failed +1, nothing pending");
    /* the own node is not affected */
    memset(src, 0x33, 100);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1,
                             EXTOLL_NOTI_REQUESTER, 0, 99),
             nsrc, ndst);
    EXPECT_NOTI(&self->e, "loopback put meanwhile", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, 0, nsrc, 100);
    EXPECT_TRUE(all_bytes(dst, 100, 0x33))
    TH_LOG("loopback put data");
    EXPECT_TRUE(cnt(EXTOLL_CNT_RMA_LATE_ANSWERS) == 0 &&
                cnt(EXTOLL_CNT_RMA_NO_ANSWER) == 0)
    TH_LOG("no late or lost answers");
}

/* The client (revive mode). */
FIXTURE(revive)
{
    struct client cl;
};

FIXTURE_SETUP(revive)
{
    client_init(&self->cl);
}

FIXTURE_TEARDOWN(revive)
{
    end_case(_metadata);
}

/*
 * Against node 'node' before it runs: a put and a VELO message fail; then
 * (run-extoll-vm-tests.sh starts node with "serve" when it sees "REVIVE:")
 * VELO pings until the echo server answers, and the pair works as before:
 * round trips, a put and a get.  The failed message is never echoed, and no
 * answer to the failed put arrives (the records of the failed stream are
 * gone with its bulk ring).
 */
TEST_F_TIMEOUT(revive, peer_works_once_it_runs, 450)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(5); /* MMIO */
    unsigned node = devtest_arg(0, 1), F = EXTOLL_RMA_FRAG_SIZE;
    unsigned stale = 0, pings = 0;
    uint8_t buf[128], *src = self->cl.src, *back = self->cl.back;
    uint64_t st, nsrc = self->cl.nsrc, nback = self->cl.nback,
                 nrem = 64ull << 12;
    double t0;
    int ok, up = 0;

    for (size_t i = 0; i < 65536; i++) {
        src[i] = i * 5 + 1;
    }
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER, 0, 99),
             nsrc, nrem + 1);
    velo_send(5, node, SRV_VPID, 0xee, "stale", 5);
    EXPECT_NOTI(&self->cl.e,
                "put to a node that does not run yet: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                nsrc, 100);
    settle(5, 2);
    EXPECT_TRUE(R64(pg, EXTOLL_VELO_DROPS) == 1 &&
                R64(pg, EXTOLL_VELO_CREDITS) ==
                    R32(bar0, EXTOLL_REG_VELO_CREDITS))
    TH_LOG("VELO message failed: credit back, VELO_DROPS 1");
    ksft_print_msg("REVIVE: peer failed, start it\n");

    /* until it answers: each ping fails (not running) or is dropped (booting) */
    t0 = now();
    while (!up && now() - t0 < 300) {
        if (velo_send(5, node, SRV_VPID, 0x10 + pings++ % 0x80, "ping", 4)) {
            break;
        }
        st = velo_recv(&self->cl.e, buf, 3);
        if (st) {
            stale += EXTOLL_VELO_ST_TAG(st) == 0xee;
            up = 1;
        }
    }
    ksft_print_msg("node %u answers once it runs (after %.0f s, %u pings)\n",
                   node, now() - t0, pings);
    EXPECT_TRUE(up);
    /* late echoes of earlier pings */
    while ((st = velo_recv(&self->cl.e, buf, 1))) {
        stale += EXTOLL_VELO_ST_TAG(st) == 0xee;
    }
    EXPECT_TRUE(!stale)
    TH_LOG("the VELO message reported failed never arrived");

    ok = up;
    for (int i = 0; i < 50 && ok; i++) {
        unsigned len = 1 + i * 7 % 120;
        uint8_t got[128];

        for (unsigned k = 0; k < len; k++) {
            buf[k] = i * 3 + k;
        }
        velo_send(5, node, SRV_VPID, i, buf, len);
        st = velo_recv(&self->cl.e, got, 10);
        if (!st || EXTOLL_VELO_ST_LEN(st) != len ||
            EXTOLL_VELO_ST_TAG(st) != (unsigned)i || memcmp(buf, got, len)) {
            ksft_print_msg("  round %d status 0x%llx\n", i,
                           (unsigned long long)st);
            ok = 0;
        }
    }
    EXPECT_TRUE(ok)
    TH_LOG("50 VELO round trips after the restart, in order, intact");

    size_t L = 40000;
    unsigned lo = (L - 1) / F * F;

    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER, 0, L - 1),
             nsrc, nrem + 1);
    EXPECT_NOTI(&self->cl.e, "put after the restart: requester",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, 0, nsrc + lo, L - lo);
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, L - 1),
             nrem + 1, nback);
    EXPECT_NOTI(&self->cl.e, "get after the restart: completer",
                EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_GET_BT_RSP, 0, nback + lo,
                L - lo);
    EXPECT_TRUE(!memcmp(src, back, L))
    TH_LOG("put + get data after the restart");
    settle(5, 2);
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(5) + EXTOLL_VPID_RMA_PENDING) == 0)
    TH_LOG("nothing pending");
    EXPECT_TRUE(cnt(EXTOLL_CNT_TX_FAILED) >= 2)
    TH_LOG("tx_failed %llu", (unsigned long long)cnt(EXTOLL_CNT_TX_FAILED));
    EXPECT_TRUE(cnt(EXTOLL_CNT_RMA_LATE_ANSWERS) == 0)
    TH_LOG("no answer to the failed put arrived (rma_late_answers 0)");
    EXPECT_NO_NOTI(&self->cl.e, "no stray notifications");
}
