/* SPDX-License-Identifier: GPL-2.0 */
/*
 * extoll-regtest, the protection IDs of VELO, RMA and the ATU (prot mode);
 * part of the translation unit of extoll-regtest.c (extoll-dev.h).
 */

#define PA 0x0a0a
#define PB 0xb00b

/*
 * From a reset device: VPID 1 (a): VELO PA, RMA PA.  VPID 2 (b): VELO PA,
 * RMA PB (the two parts have independent IDs).  VPID 3 (c): VELO PB, RMA
 * PA.  srcA, dstB and dstC registered for their VPID with its RMA ID; badC
 * and badA for VPIDs 3 and 1 with the other ID.  A case leaves no
 * notification unread.
 */
FIXTURE(prot)
{
    struct ep a, b, c;
    uint8_t *srcA, *dstB, *dstC, *badC, *badA;
    uint64_t nA, nB, nC, nbadC, nbadA;
};

FIXTURE_SETUP(prot)
{
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&self->a, 1, 0);
    ep_init(&self->b, 2, 0);
    ep_init(&self->c, 3, 0);
    set_prot(1, PA, PA);
    set_prot(2, PA, PB);
    set_prot(3, PB, PA);
    self->srcA = locked(8192);
    self->dstB = locked(8192);
    self->dstC = locked(8192);
    self->badC = locked(4096);
    self->badA = locked(4096);
    self->nA = reg_prot(self->srcA, 8192, 16, 1,
                        EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PA);
    self->nB = reg_prot(self->dstB, 8192, 32, 2,
                        EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    self->nC = reg_prot(self->dstC, 8192, 48, 3,
                        EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PA);
    /* owner VPID right, protection ID not the owner's */
    self->nbadC = reg_prot(self->badC, 4096, 64, 3,
                           EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    self->nbadA = reg_prot(self->badA, 4096, 80, 1,
                           EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    for (size_t i = 0; i < 8192; i++) {
        self->srcA[i] = i * 29 + 7;
    }
    memset(self->dstB, 0x5a, 8192);
    memset(self->badC, 0x5a, 4096);
    memset(self->badA, 0x11, 4096);
}

FIXTURE_TEARDOWN(prot)
{
    EXPECT_NO_NOTI(&self->a, "no stray notification at VPID 1");
    EXPECT_NO_NOTI(&self->b, "no stray notification at VPID 2");
    EXPECT_NO_NOTI(&self->c, "no stray notification at VPID 3");
    end_case(_metadata);
}

TEST_F(prot, registers)
{
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VERSION) == EXTOLL_HW_VERSION &&
                EXTOLL_HW_VERSION >= 2 &&
                sysfs_hex(dev, "revision") == EXTOLL_HW_VERSION)
    TH_LOG("hardware version and PCI revision %u", EXTOLL_HW_VERSION);
    set_prot(7, 0x1234, 0x5678);
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) ==
                    0x1234 &&
                R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0x5678)
    TH_LOG("PROT registers read back");
    set_prot(7, 0xfffff0f0, 0xabcd0f0f);
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) ==
                    0xf0f0 &&
                R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0x0f0f)
    TH_LOG("PROT registers keep bits 0-15");
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) == 0 &&
                R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0)
    TH_LOG("PROT registers 0 after CTRL_RESET");
}

TEST_F(prot, refused_rma_commands)
{
    unsigned F = EXTOLL_RMA_FRAG_SIZE;
    uint64_t r0, f0;

    /* (a) RMA_PROT PA -> PB: every command refused, the target untouched */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    size_t L = 3000;
    unsigned lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             self->nA, self->nB);
    EXPECT_NOTI(&self->a, "refused put: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_CMPL,
                self->nA + lo, L - lo);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             7),
             self->nB + 8, 0x0102030405060708ull);
    EXPECT_NOTI(&self->a, "refused immediate put: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_CMPL,
                0x0102030405060708ull, 8);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 2,
                             EXTOLL_NOTI_COMPLETER, 0, 0x42),
             0xdeadbeef, 0);
    EXPECT_NOTI(&self->a, "refused notification put: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT,
                EXTOLL_NOTI_ERR_CMPL, 0xdeadbeef, 0x43);
    memset(self->srcA + 4096, 0x33, 4096);
    L = 2000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_RESPONDER |
                                 EXTOLL_NOTI_COMPLETER,
                             0, L - 1),
             self->nB, self->nA + 4096);
    EXPECT_NOTI(&self->a, "refused get: requester (sent)",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, 0,
                self->nA + 4096 + lo, L - lo);
    EXPECT_NOTI(&self->a, "refused get: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_RESP,
                self->nA + 4096 + lo, L - lo);
    EXPECT_TRUE(all_bytes(self->srcA + 4096, 4096, 0x33))
    TH_LOG("refused get: local destination unchanged");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_RESPONDER |
                                 EXTOLL_NOTI_COMPLETER,
                             0, 0),
             (100ull << 32) | 9, 5ull << 32);
    EXPECT_NOTI(&self->a, "refused lock: requester (sent)",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_LOCK_REQ, 0,
                EXTOLL_LOCK_W0(9, 0, 100), 0);
    EXPECT_NOTI(&self->a, "refused lock: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_LOCK_REQ,
                EXTOLL_NOTI_ERR_RESP, EXTOLL_LOCK_W0(9, 0, 0), 0);
    EXPECT_TRUE(all_bytes(self->dstB, 8192, 0x5a))
    TH_LOG("refused puts: target memory unchanged");
    EXPECT_NO_NOTI(&self->b, "refused commands: no notification at the target");
    EXPECT_TRUE(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 5)
    TH_LOG("prot_refused counted 5 refused commands (%llu)",
           (unsigned long long)(cnt(EXTOLL_CNT_PROT_REFUSED) - r0));
    EXPECT_TRUE(cnt(EXTOLL_CNT_ATU_FAULTS) == f0)
    TH_LOG("refused at the VPID: no ATU fault");
    /* the lock of VPID 2 was not touched: its owner (same ID) sees 0 */
    rma_post(2, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 2,
                             EXTOLL_NOTI_COMPLETER, 0, 0),
             (100ull << 32) | 9, 0);
    EXPECT_NOTI(&self->b, "own lock with the same ID: value still 0",
                EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_LOCK_RSP, 0,
                EXTOLL_LOCK_W0(9, 1, 0), 0);
    EXPECT_NO_NOTI(&self->b, "nothing else at VPID 2");
}

TEST_F(prot, same_ids_work)
{
    unsigned F = EXTOLL_RMA_FRAG_SIZE, lo;
    uint64_t r0;
    size_t L;

    /* (b) RMA_PROT PA -> PA (VPID 3), ATU entries PA: everything works */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    L = 3000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             self->nA + 1, self->nC + 2);
    EXPECT_NOTI(&self->c, "same ID put: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_BT_PUT, 0, self->nC + 2 + lo, L - lo);
    EXPECT_NOTI(&self->a, "same ID put: requester", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, 0, self->nA + 1 + lo, L - lo);
    EXPECT_TRUE(!memcmp(self->srcA + 1, self->dstC + 2, L))
    TH_LOG("same ID put data");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             3),
             self->nC + 4096, 0xa1b2c3d4);
    EXPECT_NOTI(&self->c, "same ID immediate put: completer",
                EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_IMM_PUT, 0, self->nC + 4096,
                4);
    EXPECT_NOTI(&self->a, "same ID immediate put: requester",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, 0, 0xa1b2c3d4, 4);
    EXPECT_TRUE(*(uint32_t *)(self->dstC + 4096) == 0xa1b2c3d4)
    TH_LOG("same ID immediate put data");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             0x42),
             0xfeed, 0);
    EXPECT_NOTI(&self->c, "same ID notification put: completer",
                EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_NOTI_PUT, 0, 0xfeed, 0x43);
    EXPECT_NOTI(&self->a, "same ID notification put: requester",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT, 0, 0xfeed, 0x43);
    memset(self->srcA + 4096, 0, 4096);
    L = 2000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             self->nC + 2, self->nA + 4096);
    EXPECT_NOTI(&self->c, "same ID get: responder", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_BT_GET, 0, self->nC + 2 + lo, L - lo);
    EXPECT_NOTI(&self->a, "same ID get: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_GET_BT_RSP, 0, self->nA + 4096 + lo, L - lo);
    EXPECT_TRUE(!memcmp(self->srcA + 4096, self->dstC + 2, L))
    TH_LOG("same ID get data");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             1),
             (100ull << 32) | 9, 5ull << 32);
    EXPECT_NOTI(&self->c, "same ID lock: responder", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_LOCK_REQ, 0, EXTOLL_LOCK_W0(9, 1, 5), 0);
    EXPECT_NOTI(&self->a, "same ID lock: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_LOCK_RSP, 0, EXTOLL_LOCK_W0(9, 1, 5), 0);
    EXPECT_TRUE(cnt(EXTOLL_CNT_PROT_REFUSED) == r0)
    TH_LOG("same IDs: nothing refused");
}

TEST_F(prot, remote_atu_entries_of_another_id)
{
    uint64_t r0, f0;

    /* (c) ATU entries whose ID differs from the VPID's */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             self->nA, self->nbadC + 16);
    EXPECT_NOTI(&self->a, "put to an entry of another ID: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_CMPL,
                self->nA, 100);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 3, 0, 0, 7),
             self->nbadC, 0x77);
    EXPECT_NOTI(&self->a,
                "immediate put to an entry of another ID: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_CMPL,
                0x77, 8);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER, 0, 99),
             self->nbadC, self->nA + 4096);
    EXPECT_NOTI(&self->a, "get from an entry of another ID: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_RESP,
                self->nA + 4096, 100);
    EXPECT_TRUE(all_bytes(self->badC, 4096, 0x5a))
    TH_LOG("entry of another ID: target memory unchanged");
    EXPECT_NO_NOTI(&self->c,
                   "entry of another ID: no notification at the target");
    EXPECT_TRUE(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 3 &&
                cnt(EXTOLL_CNT_ATU_FAULTS) - f0 == 3)
    TH_LOG("remote entries of another ID: 3 ATU faults, 3 prot_refused");
}

TEST_F(prot, local_atu_entries_of_another_id)
{
    uint64_t r0, f0;

    /* local addresses: the posting VPID's RMA_PROT must match too */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             self->nbadA, self->nC);
    EXPECT_NOTI(&self->a,
                "put from a local entry of another ID: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                self->nbadA, 0);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             self->nC, self->nbadA);
    EXPECT_NOTI(&self->a,
                "get into a local entry of another ID: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_REQ,
                self->nbadA, 0);
    EXPECT_TRUE(all_bytes(self->badA, 4096, 0x11))
    TH_LOG("local entry of another ID unchanged");
    EXPECT_NO_NOTI(&self->c, "local entries of another ID: nothing sent");
    EXPECT_TRUE(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 2 &&
                cnt(EXTOLL_CNT_ATU_FAULTS) - f0 == 2)
    TH_LOG("local entries of another ID: 2 ATU faults, 2 prot_refused");
}

TEST_F(prot, answers_with_an_old_id_dropped)
{
    unsigned F = EXTOLL_RMA_FRAG_SIZE;
    size_t L = 2000;
    unsigned lo = (L - 1) / F * F;
    uint64_t r0;
    double t0;

    /* lock 9 of VPID 3 as the same-ID case leaves it (5) */
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             1),
             (100ull << 32) | 9, 5ull << 32);
    ASSERT_TRUE(noti_is(&self->c, "same ID lock: responder",
                        EXTOLL_NOTI_RESPONDER, EXTOLL_CMD_LOCK_REQ, 0,
                        EXTOLL_LOCK_W0(9, 1, 5), 0));
    ASSERT_TRUE(noti_is(&self->a, "same ID lock: completer",
                        EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_LOCK_RSP, 0,
                        EXTOLL_LOCK_W0(9, 1, 5), 0));

    /*
     * Answers whose ID is no longer the origin's RMA_PROT are dropped: the
     * notification queue of VPID 3 is made full, so the put's last
     * fragment and the get and lock requests behind it are pushed back
     * while VPID 1 changes its RMA_PROT; then the queue drains.
     */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    for (unsigned i = 0; i < NOTIQ_ENT; i++) {
        self->c.notiq[2 * i + 1] = 1;
    }
    memset(self->srcA + 4096, 0x44, 4096);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             99),
             self->nA, self->nC);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             self->nC, self->nA + 4096);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             1),
             (100ull << 32) | 9, 1ull << 32);
    usleep(50000);
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 3)
    TH_LOG("3 commands pending behind a full notification queue");
    vreg32(1, EXTOLL_VPID_RMA_PROT, PA ^ 1);
    for (unsigned i = 1; i <= NOTIQ_ENT; i++) { /* the write index last */
        self->c.notiq[2 * ((self->c.nrd + i) % NOTIQ_ENT) + 1] = 0;
    }
    EXPECT_NOTI(&self->c, "put executed at the target", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_BT_PUT, 0, self->nC, 100);
    EXPECT_NOTI(&self->c, "get executed at the target", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_BT_GET, 0, self->nC + lo, L - lo);
    EXPECT_NOTI(&self->c, "lock executed at the target", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_LOCK_REQ, 0, EXTOLL_LOCK_W0(9, 1, 6), 0);
    t0 = now();
    while (R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) &&
           now() - t0 < 5) {
        usleep(1000);
    }
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0)
    TH_LOG("answers with the old ID finish the commands");
    EXPECT_NO_NOTI(&self->a,
                   "answers with the old ID: no notification at the origin");
    EXPECT_TRUE(all_bytes(self->srcA + 4096, 4096, 0x44))
    TH_LOG("get answer with the old ID not written");
    EXPECT_TRUE(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 3)
    TH_LOG("prot_refused counts the 3 answers (%llu)",
           (unsigned long long)(cnt(EXTOLL_CNT_PROT_REFUSED) - r0));
    vreg32(1, EXTOLL_VPID_RMA_PROT, PA);
}

TEST_F(prot, velo_ids)
{
    uint64_t r0, d0;
    double t0;
    int ok;

    /* (d) VELO PA -> VPID 3 (VELO PB): dropped, counted, credit back */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    d0 = cnt(EXTOLL_CNT_VELO_RX_DROPPED);
    ok = 1;
    unsigned n = 3 * EXTOLL_VELO_TX_CREDITS;
    for (unsigned i = 0; i < n && ok; i++) {
        uint64_t q = i;
        ok = velo_send(1, node_id, 3, 1, &q, 8) == 0;
    }
    EXPECT_TRUE(ok)
    TH_LOG("%u messages to a VPID of another VELO ID sent (credits come back)",
           n);
    t0 = now();
    while (R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) !=
               EXTOLL_VELO_TX_CREDITS &&
           now() - t0 < 5) {
        usleep(1000);
    }
    EXPECT_TRUE(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) ==
                EXTOLL_VELO_TX_CREDITS)
    TH_LOG("all sender credits back");
    ok = 1;
    for (unsigned i = 0; i < RING_SLOTS; i++) {
        ok &=
            *(volatile uint64_t *)(self->c.ring + 128 * i + 120) == 0; /* DMA */
    }
    EXPECT_TRUE(ok &&
                R32(bar0, EXTOLL_REG_VPID(3) + EXTOLL_VPID_VELO_RX_COUNT) == 0)
    TH_LOG("ring of VPID 3 untouched");
    EXPECT_TRUE(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == n &&
                cnt(EXTOLL_CNT_VELO_RX_DROPPED) - d0 == n)
    TH_LOG("velo_rx_dropped and prot_refused count %u refused messages", n);
    EXPECT_TRUE(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 0)
    TH_LOG("the sender's drop count stays 0");
    /* same VELO ID: VPID 2 (VELO PA, RMA PB) receives */
    {
        uint64_t q = 0x1122, got = 0, st;
        velo_send(1, node_id, 2, 9, &q, 8);
        st = velo_recv(&self->b, &got, 5);
        EXPECT_TRUE(st && got == q && EXTOLL_VELO_ST_VPID(st) == 1)
        TH_LOG("VELO with the same ID delivered");
        /* the register is live: VPID 3 takes PA from now on */
        vreg32(3, EXTOLL_VPID_VELO_PROT, PA);
        q = 0x3344;
        velo_send(1, node_id, 3, 9, &q, 8);
        st = velo_recv(&self->c, &got, 5);
        EXPECT_TRUE(st && got == q)
        TH_LOG("VELO delivered after VELO_PROT changed to the sender's ID");
    }
    usleep(100000);
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0)
    TH_LOG("no pending commands at VPID 1");
    EXPECT_NO_NOTI(&self->a, "no stray notifications at VPID 1");
}
