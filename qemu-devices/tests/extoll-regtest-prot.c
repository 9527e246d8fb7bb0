// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * extoll-regtest, the protection IDs of VELO, RMA and the ATU (extoll-regtest.h).
 */
#define _GNU_SOURCE
#include "extoll-regtest.h"

/* ---------------------------------------------------------------- protection IDs */

uint64_t cnt(unsigned i)
{
    return R64(bar0, EXTOLL_REG_COUNTER(i));
}

void set_prot(int vpid, unsigned velo, unsigned rma)
{
    vreg32(vpid, EXTOLL_VPID_VELO_PROT, velo);
    vreg32(vpid, EXTOLL_VPID_RMA_PROT, rma);
}

/* nothing in e's notification queue for a while */
void expect_no_noti(struct ep *e, const char *what)
{
    uint64_t w0, w1;
    int got = noti_get(e, &w0, &w1, 0.3);

    if (got) {
        dump("unexpected", w0, w1);
    }
    EXPECT(!got, "%s\n", what);
}

int all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != v) {
            return 0;
        }
    }
    return 1;
}

#define PA 0x0a0a
#define PB 0xb00b

/*
 * VPID 1 (a): VELO PA, RMA PA.  VPID 2 (b): VELO PA, RMA PB (the two parts
 * have independent IDs).  VPID 3 (c): VELO PB, RMA PA.
 */
void prot_test(void)
{
    struct ep a, b, c;
    uint64_t r0, f0, d0;
    double t0;
    unsigned F = EXTOLL_RMA_FRAG_SIZE;
    int ok;

    node_id = R32(bar0, EXTOLL_REG_NODE_ID);
    EXPECT(R32(bar0, EXTOLL_REG_VERSION) == EXTOLL_HW_VERSION &&
               EXTOLL_HW_VERSION >= 2 &&
               sysfs_hex(dev, "revision") == EXTOLL_HW_VERSION,
           "hardware version and PCI revision %u\n", EXTOLL_HW_VERSION);
    set_prot(7, 0x1234, 0x5678);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) == 0x1234 &&
               R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0x5678,
           "PROT registers read back\n");
    set_prot(7, 0xfffff0f0, 0xabcd0f0f);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) == 0xf0f0 &&
               R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0x0f0f,
           "PROT registers keep bits 0-15\n");
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) == 0 &&
               R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0,
           "PROT registers 0 after CTRL_RESET\n");

    atu_init();
    ep_init(&a, 1, 0);
    ep_init(&b, 2, 0);
    ep_init(&c, 3, 0);
    set_prot(1, PA, PA);
    set_prot(2, PA, PB);
    set_prot(3, PB, PA);
    uint8_t *srcA = locked(8192), *dstB = locked(8192), *dstC = locked(8192);
    uint8_t *badC = locked(4096), *badA = locked(4096);
    uint64_t nA =
        reg_prot(srcA, 8192, 16, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PA);
    uint64_t nB =
        reg_prot(dstB, 8192, 32, 2, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    uint64_t nC =
        reg_prot(dstC, 8192, 48, 3, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PA);
    /* owner VPID right, protection ID not the owner's */
    uint64_t nbadC =
        reg_prot(badC, 4096, 64, 3, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    uint64_t nbadA =
        reg_prot(badA, 4096, 80, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    for (size_t i = 0; i < 8192; i++) {
        srcA[i] = i * 29 + 7;
    }
    memset(dstB, 0x5a, 8192);
    memset(badC, 0x5a, 4096);
    memset(badA, 0x11, 4096);

    /* (a) RMA_PROT PA -> PB: every command refused, the target untouched */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    size_t L = 3000;
    unsigned lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nA, nB);
    expect_noti(&a, "refused put: requester error 4", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_CMPL, nA + lo, L - lo, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             7),
             nB + 8, 0x0102030405060708ull);
    expect_noti(&a, "refused immediate put: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_CMPL,
                0x0102030405060708ull, 8, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 2,
                             EXTOLL_NOTI_COMPLETER, 0, 0x42),
             0xdeadbeef, 0);
    expect_noti(&a, "refused notification put: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT,
                EXTOLL_NOTI_ERR_CMPL, 0xdeadbeef, 0x43, NULL);
    memset(srcA + 4096, 0x33, 4096);
    L = 2000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_RESPONDER |
                                 EXTOLL_NOTI_COMPLETER,
                             0, L - 1),
             nB, nA + 4096);
    expect_noti(&a, "refused get: requester (sent)", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_GET, 0, nA + 4096 + lo, L - lo, NULL);
    expect_noti(&a, "refused get: requester error 2", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_RESP, nA + 4096 + lo, L - lo,
                NULL);
    EXPECT(all_bytes(srcA + 4096, 4096, 0x33),
           "refused get: local destination unchanged\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_RESPONDER |
                                 EXTOLL_NOTI_COMPLETER,
                             0, 0),
             (100ull << 32) | 9, 5ull << 32);
    expect_noti(&a, "refused lock: requester (sent)", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_LOCK_REQ, 0, EXTOLL_LOCK_W0(9, 0, 100), 0, NULL);
    expect_noti(&a, "refused lock: requester error 2", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_LOCK_REQ, EXTOLL_NOTI_ERR_RESP,
                EXTOLL_LOCK_W0(9, 0, 0), 0, NULL);
    EXPECT(all_bytes(dstB, 8192, 0x5a),
           "refused puts: target memory unchanged\n");
    expect_no_noti(&b, "refused commands: no notification at the target");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 5,
           "prot_refused counted 5 refused commands (%llu)\n",
           (unsigned long long)(cnt(EXTOLL_CNT_PROT_REFUSED) - r0));
    EXPECT(cnt(EXTOLL_CNT_ATU_FAULTS) == f0,
           "refused at the VPID: no ATU fault\n");
    /* the lock of VPID 2 was not touched: its owner (same ID) sees 0 */
    rma_post(2, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 2,
                             EXTOLL_NOTI_COMPLETER, 0, 0),
             (100ull << 32) | 9, 0);
    expect_noti(&b, "own lock with the same ID: value still 0",
                EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_LOCK_RSP, 0,
                EXTOLL_LOCK_W0(9, 1, 0), 0, NULL);
    expect_no_noti(&b, "nothing else at VPID 2");

    /* (b) RMA_PROT PA -> PA (VPID 3), ATU entries PA: everything works */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    L = 3000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nA + 1, nC + 2);
    expect_noti(&c, "same ID put: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_BT_PUT, 0, nC + 2 + lo, L - lo, NULL);
    expect_noti(&a, "same ID put: requester", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, 0, nA + 1 + lo, L - lo, NULL);
    EXPECT(!memcmp(srcA + 1, dstC + 2, L), "same ID put data\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             3),
             nC + 4096, 0xa1b2c3d4);
    expect_noti(&c, "same ID immediate put: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_IMM_PUT, 0, nC + 4096, 4, NULL);
    expect_noti(&a, "same ID immediate put: requester", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_IMM_PUT, 0, 0xa1b2c3d4, 4, NULL);
    EXPECT(*(uint32_t *)(dstC + 4096) == 0xa1b2c3d4,
           "same ID immediate put data\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             0x42),
             0xfeed, 0);
    expect_noti(&c, "same ID notification put: completer",
                EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_NOTI_PUT, 0, 0xfeed, 0x43,
                NULL);
    expect_noti(&a, "same ID notification put: requester",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT, 0, 0xfeed, 0x43,
                NULL);
    memset(srcA + 4096, 0, 4096);
    L = 2000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nC + 2, nA + 4096);
    expect_noti(&c, "same ID get: responder", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_BT_GET, 0, nC + 2 + lo, L - lo, NULL);
    expect_noti(&a, "same ID get: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_GET_BT_RSP, 0, nA + 4096 + lo, L - lo, NULL);
    EXPECT(!memcmp(srcA + 4096, dstC + 2, L), "same ID get data\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             1),
             (100ull << 32) | 9, 5ull << 32);
    expect_noti(&c, "same ID lock: responder", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_LOCK_REQ, 0, EXTOLL_LOCK_W0(9, 1, 5), 0, NULL);
    expect_noti(&a, "same ID lock: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_LOCK_RSP, 0, EXTOLL_LOCK_W0(9, 1, 5), 0, NULL);
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) == r0, "same IDs: nothing refused\n");

    /* (c) ATU entries whose ID differs from the VPID's */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nA, nbadC + 16);
    expect_noti(&a, "put to an entry of another ID: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_CMPL,
                nA, 100, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 3, 0, 0, 7), nbadC,
             0x77);
    expect_noti(&a,
                "immediate put to an entry of another ID: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_CMPL,
                0x77, 8, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER, 0, 99),
             nbadC, nA + 4096);
    expect_noti(&a, "get from an entry of another ID: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_RESP,
                nA + 4096, 100, NULL);
    EXPECT(all_bytes(badC, 4096, 0x5a),
           "entry of another ID: target memory unchanged\n");
    expect_no_noti(&c, "entry of another ID: no notification at the target");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 3 &&
               cnt(EXTOLL_CNT_ATU_FAULTS) - f0 == 3,
           "remote entries of another ID: 3 ATU faults, 3 prot_refused\n");
    /* local addresses: the posting VPID's RMA_PROT must match too */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nbadA, nC);
    expect_noti(&a, "put from a local entry of another ID: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                nbadA, 0, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nC, nbadA);
    expect_noti(&a, "get into a local entry of another ID: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_REQ,
                nbadA, 0, NULL);
    EXPECT(all_bytes(badA, 4096, 0x11),
           "local entry of another ID unchanged\n");
    expect_no_noti(&c, "local entries of another ID: nothing sent");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 2 &&
               cnt(EXTOLL_CNT_ATU_FAULTS) - f0 == 2,
           "local entries of another ID: 2 ATU faults, 2 prot_refused\n");

    /*
     * Answers whose ID is no longer the origin's RMA_PROT are dropped: the
     * notification queue of VPID 3 is made full, so the put's last
     * fragment and the get and lock requests behind it are pushed back
     * while VPID 1 changes its RMA_PROT; then the queue drains.
     */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    for (unsigned i = 0; i < NOTIQ_ENT; i++) {
        c.notiq[2 * i + 1] = 1;
    }
    memset(srcA + 4096, 0x44, 4096);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             99),
             nA, nC);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nC, nA + 4096);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             1),
             (100ull << 32) | 9, 1ull << 32);
    usleep(50000);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 3,
           "3 commands pending behind a full notification queue\n");
    vreg32(1, EXTOLL_VPID_RMA_PROT, PA ^ 1);
    for (unsigned i = 1; i <= NOTIQ_ENT; i++) { /* the write index last */
        c.notiq[2 * ((c.nrd + i) % NOTIQ_ENT) + 1] = 0;
    }
    expect_noti(&c, "put executed at the target", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_BT_PUT, 0, nC, 100, NULL);
    expect_noti(&c, "get executed at the target", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_BT_GET, 0, nC + lo, L - lo, NULL);
    expect_noti(&c, "lock executed at the target", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_LOCK_REQ, 0, EXTOLL_LOCK_W0(9, 1, 6), 0, NULL);
    t0 = now();
    while (R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) &&
           now() - t0 < 5) {
        usleep(1000);
    }
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "answers with the old ID finish the commands\n");
    expect_no_noti(&a,
                   "answers with the old ID: no notification at the origin");
    EXPECT(all_bytes(srcA + 4096, 4096, 0x44),
           "get answer with the old ID not written\n");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 3,
           "prot_refused counts the 3 answers (%llu)\n",
           (unsigned long long)(cnt(EXTOLL_CNT_PROT_REFUSED) - r0));
    vreg32(1, EXTOLL_VPID_RMA_PROT, PA);

    /* (d) VELO PA -> VPID 3 (VELO PB): dropped, counted, credit back */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    d0 = cnt(EXTOLL_CNT_VELO_RX_DROPPED);
    ok = 1;
    unsigned n = 3 * EXTOLL_VELO_TX_CREDITS;
    for (unsigned i = 0; i < n && ok; i++) {
        uint64_t q = i;
        ok = velo_send(1, node_id, 3, 1, &q, 8) == 0;
    }
    EXPECT(
        ok,
        "%u messages to a VPID of another VELO ID sent (credits come back)\n",
        n);
    t0 = now();
    while (R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) !=
               EXTOLL_VELO_TX_CREDITS &&
           now() - t0 < 5) {
        usleep(1000);
    }
    EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) ==
               EXTOLL_VELO_TX_CREDITS,
           "all sender credits back\n");
    ok = 1;
    for (unsigned i = 0; i < RING_SLOTS; i++) {
        ok &= *(volatile uint64_t *)(c.ring + 128 * i + 120) == 0; /* DMA */
    }
    EXPECT(ok && R32(bar0, EXTOLL_REG_VPID(3) + EXTOLL_VPID_VELO_RX_COUNT) == 0,
           "ring of VPID 3 untouched\n");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == n &&
               cnt(EXTOLL_CNT_VELO_RX_DROPPED) - d0 == n,
           "velo_rx_dropped and prot_refused count %u refused messages\n", n);
    EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 0,
           "the sender's drop count stays 0\n");
    /* same VELO ID: VPID 2 (VELO PA, RMA PB) receives */
    {
        uint64_t q = 0x1122, got = 0, st;
        velo_send(1, node_id, 2, 9, &q, 8);
        st = velo_recv(&b, &got, 5);
        EXPECT(st && got == q && EXTOLL_VELO_ST_VPID(st) == 1,
               "VELO with the same ID delivered\n");
        /* the register is live: VPID 3 takes PA from now on */
        vreg32(3, EXTOLL_VPID_VELO_PROT, PA);
        q = 0x3344;
        velo_send(1, node_id, 3, 9, &q, 8);
        st = velo_recv(&c, &got, 5);
        EXPECT(st && got == q,
               "VELO delivered after VELO_PROT changed to the sender's ID\n");
    }
    usleep(100000);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "no pending commands at VPID 1\n");
    expect_no_noti(&a, "no stray notifications at VPID 1");
    for (unsigned i = 0; i < EXTOLL_NUM_COUNTERS; i++) {
        printf("# counter %u = %llu\n", i, (unsigned long long)cnt(i));
    }
}
