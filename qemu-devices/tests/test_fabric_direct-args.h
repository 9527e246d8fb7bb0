/* SPDX-License-Identifier: GPL-2.0 */
/*
 * test_fabric_direct, bad arguments: geometry, nodes, a missing node,
 * messages, offsets that wrap; part of the translation unit of
 * test_fabric_direct.c (its rig and helpers).
 */

/* Bad geometry, bad nodes, a missing node, bad messages. */
TEST_F(fabric, bad_arguments)
{
    static uint64_t big[2 * FABRIC_DIRECT_MAX_PAGES]; /* page 0 each */
    /*
     * exports wrong in one respect only (protection id 1, pages[]), of a
     * NONZERO queue (N) or a PHASE one (P, phase_flag 1: a 4-byte word)
     */
    enum { N, P };
    static const struct {
        uint32_t slot_size, nslots, status_off, npages, mode;
    } bad[] = {
        /* slot size not dividing the page (the ring whole pages) ... */
        { 0, 64, 0, 1, N }, { 96, 128, 8, 3, N }, { 24, 512, 8, 3, N },
        { 8192, 1, 8, 2, N }, { 96, 128, 8, 3, P },
        /* ... nslots zero or not a power of two ... */
        { 64, 0, 8, 0, N }, { 4096, 3, 8, 3, N }, { 1024, 12, 8, 3, N },
        { 1024, 12, 8, 3, P },
        /* status word beyond or across the slot end, unaligned */
        { 64, 64, 64, 1, N }, { 64, 64, 60, 1, N }, { 64, 64, 4096, 1, N },
        { 64, 64, 52, 1, N },
        /* flags word unaligned, beyond or across the slot end */
        { 64, 64, 58, 1, P }, { 64, 64, 2, 1, P }, { 64, 64, 62, 1, P },
        { 64, 64, 64, 1, P }, { 64, 64, 0xfffffffcu, 1, P },
        /* npages not what the ring needs */
        { 64, 64, 56, 2, N }, { 64, 128, 56, 1, N }, { 64, 128, 56, 3, N },
        { 64, 128, 60, 1, P },
    };
    /* the ring's second page unaligned or outside the RAM */
    static const uint64_t bad_page[] = {
        9 * PG + 8, RAM_SIZE, RAM_SIZE - PG / 2, 1ull << 40,
    };
    static struct rig k;
    struct fabric_direct *x;
    uint64_t pages[4] = { 8 * PG, 9 * PG, 10 * PG, 11 * PG };
    uint8_t buf[64];
    const struct fabric_direct_msg m = {
        .payload = buf, .len = 8, .status = 1, .prot = 1,
    };
    char err[256], path[160];
    uint64_t gen;
    bool wake = true;

    rig_open(_metadata, &k, 4, RIG_OWNER | RIG_WRITER);
    EXPECT_EQ(NULL, fabric_direct_queue(k.o, FABRIC_DIRECT_QUEUES));
    /* no RAM published yet: every page is outside it */
    EXPECT_EQ(-EINVAL, fabric_direct_export(k.o, Q, 64, 64, 56, 1, pages, 1));
    fabric_direct_set_ram(k.o, k.r.fd, k.r.size);
    EXPECT_EQ(0, fabric_direct_export(k.o, Q, 64, 64, 56, 1, pages, 1));
    gen = k.dq->generation;
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        int rc = bad[i].mode == P ?
            fabric_direct_export_phase(k.o, Q, bad[i].slot_size,
                                       bad[i].nslots, bad[i].status_off, 1,
                                       1, pages, bad[i].npages) :
            fabric_direct_export(k.o, Q, bad[i].slot_size, bad[i].nslots,
                                 bad[i].status_off, 1, pages, bad[i].npages);

        EXPECT_EQ(-EINVAL, rc) {
            TH_LOG("bad[%zu]", i);
        }
    }
    /* more pages than a queue may have */
    EXPECT_EQ(-EINVAL,
              fabric_direct_export(k.o, Q, 4096, 4096, 8, 1, big, 4096));
    EXPECT_EQ(-EINVAL,
              fabric_direct_export(k.o, Q, 64, 64 * 4096, 8, 1, big, 4096));
    for (size_t i = 0; i < ARRAY_SIZE(bad_page); i++) {
        pages[1] = bad_page[i];
        EXPECT_EQ(-EINVAL,
                  fabric_direct_export(k.o, Q, 64, 128, 56, 1, pages, 2)) {
            TH_LOG("bad_page[%zu]", i);
        }
    }
    /* queue index */
    pages[1] = RAM_SIZE - PG;   /* the last page: fine */
    EXPECT_EQ(-EINVAL, fabric_direct_export(k.o, FABRIC_DIRECT_QUEUES, 64,
                                            128, 56, 1, pages, 2));
    /* none of these touched the export in place */
    EXPECT_EQ(gen, k.dq->generation);
    EXPECT_EQ(1, k.dq->valid);
    EXPECT_EQ(64, k.dq->nslots);
    EXPECT_EQ(8 * PG, k.dq->pages[0]);
    EXPECT_EQ(FABRIC_DIRECT_NONZERO, k.dq->mode);
    /* a PHASE flags word needs 4-byte alignment only: the slot's end */
    EXPECT_EQ(0, fabric_direct_export_phase(k.o, Q, 64, 64, 60, 1, 1, pages,
                                            1));
    EXPECT_EQ(gen + 1, k.dq->generation);
    EXPECT_EQ(1, k.dq->valid);
    EXPECT_EQ(FABRIC_DIRECT_PHASE, k.dq->mode);
    EXPECT_EQ(60, k.dq->status_off);
    geom_reversed(&k.g, 64, 128, 56, 1, 0, 1);
    memcpy(k.g.pages, pages, 2 * sizeof(pages[0]));
    ram_reset(&k.r, &k.g);
    EXPECT_EQ(0, geom_export(k.o, Q, &k.g));
    EXPECT_EQ(RAM_SIZE - PG, k.dq->pages[1]);

    /* open: node out of range, no nodes, no directory, missing directory */
    x = (struct fabric_direct *)&x;
    err[0] = 0;
    EXPECT_EQ(-EINVAL, fabric_direct_open(&x, tmpdir, 4, 4, err, sizeof(err)));
    EXPECT_EQ(NULL, x);
    EXPECT_NE(0, err[0]);
    EXPECT_EQ(-EINVAL, fabric_direct_open(&x, tmpdir, 9, 4, err, sizeof(err)));
    EXPECT_EQ(-EINVAL, fabric_direct_open(&x, tmpdir, 0, 0, err, sizeof(err)));
    EXPECT_EQ(-EINVAL, fabric_direct_open(&x, NULL, 0, 4, err, sizeof(err)));
    snprintf(path, sizeof(path), "%s/none", tmpdir);
    EXPECT_EQ(-ENOENT, fabric_direct_open(&x, path, 1, 4, err, sizeof(err)));
    EXPECT_EQ(NULL, x);

    /* writes: node 2 has no file, node 4 does not exist, bad messages */
    fill_payload(buf, sizeof(buf), 3);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(k.w, 2, buf, 8, 1, 1, NULL));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(k.w, 4, buf, 8, 1, 1, NULL));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(k.w, 0, buf, 8, 0, 1, NULL));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(k.w, 0, buf, 57, 1, 1, NULL));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
              fabric_direct_write(k.w, 0, FABRIC_DIRECT_QUEUES, &m, &wake));
    EXPECT_FALSE(wake);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
              fabric_direct_write(NULL, 0, Q, &m, &wake));
    /* a queue never exported */
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
              fabric_direct_write(k.w, 0, Q + 1, &m, &wake));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(0, k.dq->wp);
    EXPECT_EQ(6, stats(k.w).tx_no_path);
    EXPECT_EQ(0, stats(k.w).tx_direct);
    /* a payload up to the status word is fine */
    EXPECT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, 0, 56, 3, 1));
    EXPECT_EQ(0, memcmp(k.r.p + 8 * PG, buf, 56));
    EXPECT_EQ(-1, ram_diff(&k.r));
    rig_close(_metadata, &k);
}

/*
 * Offsets so large that "offset + size" wraps around must be refused as
 * well: a status word 8 bytes short of 4 GiB, a page 4 KiB short of 2^64.
 */
TEST_F(fabric, export_rejects_wrapping_offsets)
{
    static struct rig k;
    uint64_t page = 0;

    rig_open(_metadata, &k, 2, RIG_LIVE);
    EXPECT_EQ(-EINVAL,
              fabric_direct_export(k.o, Q, 64, 64, 0xfffffff8u, 1, &page, 1));
    page = 0xfffffffffffff000ull;
    EXPECT_EQ(-EINVAL, fabric_direct_export(k.o, Q, 64, 64, 56, 1, &page, 1));
    EXPECT_EQ(0, k.dq->valid);
    rig_close(_metadata, &k);
}
