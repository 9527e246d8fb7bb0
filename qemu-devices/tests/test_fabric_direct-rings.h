/* SPDX-License-Identifier: GPL-2.0 */
/*
 * test_fabric_direct, the rings: a full ring and its wrap, a PHASE queue
 * across laps and its head; part of the translation unit of
 * test_fabric_direct.c (its rig and helpers).
 */

/* A full ring refuses without writing; a freed slot 0 takes the wrap. */
TEST_F(fabric, ring_full_and_wrap)
{
    static struct rig k;
    /* a ring smaller than a page (npages rounded up) on queue Q + 1 */
    static struct geom h = {
        .slot_size = 128, .nslots = 8, .status_off = 64, .npages = 1,
        .pages = { 40 * PG },
    };
    uint8_t buf[256];

    geom_reversed(&k.g, 512, 16, 504, 5, 8 * PG, 3);
    rig_open(_metadata, &k, 2, RIG_EXPORT | RIG_WRITER);
    for (uint32_t s = 0; s < 16; s++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, s, 256, s, 100 + s));
    }
    EXPECT_EQ(-1, ram_diff(&k.r));
    fill_payload(buf, sizeof(buf), 999);
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(k.w, 0, buf, sizeof(buf), 999, 5, NULL));
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(k.w, 0, buf, sizeof(buf), 999, 5, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(16, k.dq->wp);
    EXPECT_EQ(16, k.dq->delivered);
    EXPECT_EQ(2, k.dq->full);
    EXPECT_EQ(16, fabric_direct_deliveries(k.o));

    /* freeing another slot than wp's does not help */
    free_slot(k.r.p, k.r.img, &k.g, 5);
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(k.w, 0, buf, sizeof(buf), 999, 5, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));

    /* the consumer frees slot 0: the next write wraps into it */
    free_slot(k.r.p, k.r.img, &k.g, 0);
    ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, 16, 100, 999, 999));
    EXPECT_EQ(999, *status_word(k.r.p, &k.g, 0));
    EXPECT_EQ(0, memcmp(k.r.p + ram_off(&k.g, 0, 0), buf, 100));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(17, k.dq->wp);
    /* slot 1 is still in use */
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(k.w, 0, buf, 100, 1000, 5, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(17, stats(k.w).tx_direct);
    EXPECT_EQ(4, stats(k.w).tx_full);
    EXPECT_EQ(4, k.dq->full);

    /* the ring h on queue Q + 1 */
    for (uint32_t s = 0; s < 8; s++) {
        free_slot(k.r.p, k.r.img, &h, s);
    }
    EXPECT_EQ(-EINVAL,
              fabric_direct_export(k.o, Q + 1, 128, 8, 64, 5, h.pages, 0));
    EXPECT_EQ(-EINVAL,
              fabric_direct_export(k.o, Q + 1, 128, 8, 64, 5, h.pages, 2));
    ASSERT_EQ(0, fabric_direct_export(k.o, Q + 1, 128, 8, 64, 5, h.pages, 1));
    for (uint32_t s = 0; s < 8; s++) {
        fill_payload(buf, 64, 200 + s);
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  put_q(k.w, 0, Q + 1, buf, 64, 200 + s, 5, NULL));
        put_msg(k.r.img, &h, s, buf, 64, 200 + s);
    }
    EXPECT_EQ(FABRIC_DIRECT_FULL, put_q(k.w, 0, Q + 1, buf, 64, 300, 5, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));
    /* nothing past the ring's 1 KiB in its page */
    EXPECT_EQ(CANARY, k.r.p[40 * PG + 1024]);
    free_slot(k.r.p, k.r.img, &h, 0);
    ASSERT_EQ(FABRIC_DIRECT_DONE, put_q(k.w, 0, Q + 1, buf, 64, 300, 5, NULL));
    put_msg(k.r.img, &h, 8, buf, 64, 300);
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(9, fabric_direct_queue(k.o, Q + 1)->wp);
    /* queue Q did not move */
    EXPECT_EQ(17, k.dq->wp);
    rig_close(_metadata, &k);
}

/*
 * A PHASE ring (ExaNet mailbox): the writer never looks at the slots, the
 * consumer's head the owner published says which are free.  Lap 0 writes
 * flags word phase_flag, lap 1 writes 0, lap 2 phase_flag again.
 */
TEST_F(fabric, phase_queue_wrap_and_head)
{
    static struct rig k;
    uint8_t buf[64];
    uint32_t wp = 0;

    /* 2 pages, reversed, 3 apart; the flags word not 8-byte aligned */
    geom_phase(&k.g, 1024, 8, 1020, 1, 0x99, 12 * PG, 3);
    ASSERT_EQ(2, k.g.npages);
    rig_open(_metadata, &k, 2, RIG_EXPORT | RIG_WRITER);
    EXPECT_EQ(FABRIC_DIRECT_PHASE, k.dq->mode);
    EXPECT_EQ(1, k.dq->phase_flag);
    EXPECT_EQ(0, k.dq->head);
    EXPECT_EQ(0, k.dq->hold);
    EXPECT_EQ(1020, k.dq->status_off);

    /* lap 0: flags word 1 (the status of the message is not used) */
    for (; wp < 8; wp++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  deliver(&k, &k.r, wp, 100 + wp * 113, wp, wp ? 0 : 7));
    }
    EXPECT_EQ(-1, ram_diff(&k.r));
    /* slot 0 is at the start of the ring's last page, slot 4 of its first */
    EXPECT_EQ(15 * PG, ram_off(&k.g, 0, 0));
    EXPECT_EQ(12 * PG + 1020, ram_off(&k.g, 4, 1020));
    EXPECT_EQ(1, *(uint32_t *)(k.r.p + 15 * PG + 1020));
    EXPECT_EQ(1, *(uint32_t *)(k.r.p + 12 * PG + 1020));
    for (uint32_t s = 0; s < 8; s++) {
        fill_payload(buf, sizeof(buf), s);
        EXPECT_EQ(0, memcmp(k.r.p + ram_off(&k.g, s, 0), buf, sizeof(buf)));
        EXPECT_EQ(1, flags_word(k.r.p, &k.g, s));
    }
    /* the bytes between payload and flags word are not the writer's */
    EXPECT_EQ(CANARY, k.r.p[15 * PG + 100]);
    EXPECT_EQ(CANARY, k.r.p[15 * PG + 1019]);
    EXPECT_EQ(8, k.dq->wp);

    /* head 0: the ring is full, whatever the slots say */
    fill_payload(buf, sizeof(buf), 999);
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(k.w, 0, buf, sizeof(buf), 0, 0x99, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(8, k.dq->wp);
    EXPECT_EQ(8, k.dq->delivered);
    EXPECT_EQ(1, k.dq->full);
    EXPECT_EQ(8, fabric_direct_deliveries(k.o));

    /* the consumer took two: exactly two more, lap 1, flags word 0 */
    fabric_direct_set_head(k.o, Q, 2);
    EXPECT_EQ(2, k.dq->head);
    EXPECT_EQ(0, k.dq->lock);
    for (; wp < 10; wp++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  deliver(&k, &k.r, wp, 200 + wp, 50 + wp, 0));
    }
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(0, flags_word(k.r.p, &k.g, 0));
    EXPECT_EQ(0, flags_word(k.r.p, &k.g, 1));
    for (uint32_t s = 2; s < 8; s++) {
        EXPECT_EQ(1, flags_word(k.r.p, &k.g, s));
    }
    fill_payload(buf, sizeof(buf), 59);
    EXPECT_EQ(0, memcmp(k.r.p + ram_off(&k.g, 1, 0), buf, sizeof(buf)));
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(k.w, 0, buf, sizeof(buf), 0, 0x99, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(10, k.dq->wp);
    EXPECT_EQ(10, k.dq->delivered);
    EXPECT_EQ(2, k.dq->full);
    EXPECT_EQ(10, fabric_direct_deliveries(k.o));

    /* all consumed: slots 2..7 get lap 1 (0), slots 0 and 1 lap 2 (1) */
    fabric_direct_set_head(k.o, Q, 10);
    for (; wp < 18; wp++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  deliver(&k, &k.r, wp, 300 + wp, 90 + wp, 0));
    }
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(k.w, 0, buf, sizeof(buf), 0, 0x99, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(1, flags_word(k.r.p, &k.g, 0));
    EXPECT_EQ(1, flags_word(k.r.p, &k.g, 1));
    for (uint32_t s = 2; s < 8; s++) {
        EXPECT_EQ(0, flags_word(k.r.p, &k.g, s));
    }
    EXPECT_EQ(18, k.dq->wp);
    EXPECT_EQ(18, k.dq->delivered);
    EXPECT_EQ(3, k.dq->full);
    EXPECT_EQ(0, k.dq->refused);
    EXPECT_EQ(18, fabric_direct_deliveries(k.o));
    EXPECT_EQ(18, stats(k.w).tx_direct);
    EXPECT_EQ(3, stats(k.w).tx_full);
    EXPECT_EQ(0, stats(k.w).tx_no_path + stats(k.w).tx_refused);
    rig_close(_metadata, &k);
}
