/* SPDX-License-Identifier: GPL-2.0 */
/*
 * test_fabric_direct, the owner's life while writers write: an invalidation
 * racing a streaming writer, a new incarnation, an owner that crashed; part
 * of the translation unit of test_fabric_direct.c (its rig and helpers).
 */

#define RACE_ROUNDS 40

/*
 * What a streaming writer process reports (shared anonymous memory).  A
 * "run" is the DONE results between two streaks of NO_PATH: the messages
 * one export of the queue took.
 */
struct stream_ctl {
    uint32_t stop;
    int32_t run;            /* current run, -1 before the first DONE */
    uint64_t done;          /* DONE results in all */
    uint64_t no_path;       /* NO_PATH results in all */
    uint64_t full;
    uint64_t other;
    uint64_t run_done[RACE_ROUNDS + 1];
};

struct stream_msg {
    uint64_t seq, check;
};

#define STREAM_CHECK(seq) ((seq) * 0x9e3779b97f4a7c15ull ^ 0x5555)

/* Writer (node 1): messages seq 0, 1, ... into node 0, until told to stop. */
static void stream_writer(struct stream_ctl *c, uint32_t prot)
{
    struct fabric_direct *w = dopen(1, 2);
    uint64_t t0 = ms_now();
    bool no_path = true;
    uint64_t seq = 0;

    if (!w) {
        _exit(1);
    }
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        struct stream_msg m = { seq, STREAM_CHECK(seq) };

        switch (put(w, 0, &m, sizeof(m), seq + 1, prot, NULL)) {
        case FABRIC_DIRECT_DONE:
            if (no_path) {
                no_path = false;
                if (c->run == RACE_ROUNDS) {
                    _exit(3);
                }
                c->run++;
            }
            c->run_done[c->run]++;
            seq++;
            __atomic_store_n(&c->done, seq, __ATOMIC_RELEASE);
            break;
        case FABRIC_DIRECT_NO_PATH:
            no_path = true;
            __atomic_add_fetch(&c->no_path, 1, __ATOMIC_RELEASE);
            break;
        case FABRIC_DIRECT_FULL:
            c->full++;
            break;
        default:
            c->other++;
            break;
        }
        if (ms_now() - t0 > 20000) {
            _exit(2);
        }
    }
    _exit(0);
}

/* Waits until *v went past `from` by `by`, at most 5 s. */
static void wait_past(struct __test_metadata *_metadata, uint64_t *v,
                      uint64_t from, uint64_t by)
{
    uint64_t t0 = ms_now();

    while (__atomic_load_n(v, __ATOMIC_ACQUIRE) - from < by &&
           ms_now() - t0 <= 5000) {
        sched_yield();
    }
    ASSERT_LE(by, __atomic_load_n(v, __ATOMIC_ACQUIRE) - from)
    TH_LOG("in 5 s from %llu", (unsigned long long)from);
}

/*
 * A writer streams as fast as it can; the owner exports the queue, lets
 * some messages in, and invalidates at a random moment, RACE_ROUNDS
 * times.  Once fabric_direct_invalidate() returned, not one byte of the
 * RAM changes (the last round lets the writer run on for 50 ms), and the
 * RAM holds exactly the messages the writer was told were written in that
 * round, which is also the write index the invalidation left.
 */
TEST_F(fabric, invalidate_races_a_streaming_writer)
{
    static struct rig k;
    struct stream_ctl *c;
    uint64_t base = 0, wps[RACE_ROUNDS];
    uint8_t *snap;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    pid_t pid;

    /* 128 pages (reversed) of 32-byte slots: 16384 slots */
    geom_reversed(&k.g, 32, 128 * PG / 32, 24, 3, 16 * PG, 1);
    rig_open(_metadata, &k, 2, RIG_LIVE);
    ASSERT_NE(NULL, snap = malloc(RAM_SIZE));
    ASSERT_NE(NULL, c = shared(sizeof(*c)));
    c->run = -1;
    note("seed %u", seed);
    srand(seed);
    pid = fork_child();
    ASSERT_LE(0, pid);
    if (pid == 0) {
        stream_writer(c, k.g.prot);
    }

    for (int it = 0; it < RACE_ROUNDS; it++) {
        bool last = it == RACE_ROUNDS - 1;
        unsigned delay_us = (unsigned)rand() % (last ? 3000 : 300);
        uint64_t t0, no_path0, wp;

        /* the queue is invalid: the writer meets NO_PATH meanwhile */
        ram_reset(&k.r, &k.g);
        ASSERT_EQ(0, geom_export(k.o, Q, &k.g));
        wait_past(_metadata, &c->done, c->done, 1);
        if (delay_us) {
            usleep(delay_us);
        }
        fabric_direct_invalidate(k.o, Q);
        wp = k.dq->wp;
        memcpy(snap, k.r.p, RAM_SIZE);
        /* let the writer run on: 50 ms and more in the last round */
        t0 = ms_now();
        no_path0 = __atomic_load_n(&c->no_path, __ATOMIC_ACQUIRE);
        wait_past(_metadata, &c->no_path, no_path0, last ? 1000 : 10);
        while (last && ms_now() - t0 < 50) {
            usleep(1000);
        }
        /* not one byte changed since the invalidation returned */
        ASSERT_EQ(0, memcmp(snap, k.r.p, RAM_SIZE));
        /* exactly the messages the write index says, in their slots */
        ASSERT_EQ(wp, k.dq->wp);
        ASSERT_GE(k.g.nslots, wp);
        for (uint64_t s = 0; s < wp; s++) {
            struct stream_msg m = { base + s, STREAM_CHECK(base + s) };

            put_msg(k.r.img, &k.g, (uint32_t)s, &m, sizeof(m), base + s + 1);
        }
        ASSERT_EQ(-1, ram_diff(&k.r));
        wps[it] = wp;
        base += wp;
        if (it < 3 || last) {
            note("round %d: invalidated %u us after the first write, "
                 "%llu written", it, delay_us, (unsigned long long)wp);
        }
    }
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    ASSERT_EQ(0, exit_code(pid));
    /* the writer's count of DONE, round by round, is what the RAM held */
    EXPECT_EQ(RACE_ROUNDS - 1, c->run);
    for (int it = 0; it < RACE_ROUNDS; it++) {
        EXPECT_EQ(wps[it], c->run_done[it]);
    }
    EXPECT_EQ(base, c->done);
    EXPECT_EQ(0, c->other);
    note("%llu written in all, %llu full, %llu no path",
         (unsigned long long)c->done, (unsigned long long)c->full,
         (unsigned long long)c->no_path);
    EXPECT_EQ(0, k.dq->lock);
    munmap(c, sizeof(*c));
    free(snap);
    rig_close(_metadata, &k);
}

/*
 * The owner restarts (close, open, new RAM): a peer that mapped the old
 * incarnation gets no path until the new owner exports, and never writes
 * into the old RAM again; then its writes land in the new RAM.
 */
TEST_F(fabric, new_incarnation)
{
    static struct rig k;
    uint64_t inc;

    geom_reversed(&k.g, 256, 32, 128, 4, 40 * PG, 2);
    rig_open(_metadata, &k, 2, RIG_EXPORT | RIG_WRITER);
    ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, 0, 24, 1, 11));
    EXPECT_EQ(-1, ram_diff(&k.r));
    inc = k.dq->incarnation;

    fabric_direct_close(k.o);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, deliver(&k, &k.r, 1, 24, 1, 12));
    ASSERT_NE(NULL, k.o = dopen(0, 2));
    k.dq = fabric_direct_queue(k.o, Q);
    EXPECT_EQ(0, k.dq->valid);
    EXPECT_FALSE(fabric_direct_live(k.o));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, deliver(&k, &k.b, 0, 24, 1, 12));
    /* live again with another RAM, queue Q not exported yet */
    publish(k.o, &k.b, &k.g);
    for (int i = 0; i < 10; i++) {
        EXPECT_EQ(FABRIC_DIRECT_NO_PATH, deliver(&k, &k.b, 0, 24, 1, 12));
    }
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(-1, ram_diff(&k.b));

    ASSERT_EQ(0, geom_export(k.o, Q, &k.g));
    EXPECT_EQ(inc + 1, k.dq->incarnation);
    for (uint32_t s = 0; s < 3; s++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  deliver(&k, &k.b, s, 24, 20 + s, 20 + s));
    }
    EXPECT_EQ(-1, ram_diff(&k.b));
    /* the old RAM still holds the one message of the old incarnation */
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(3, k.dq->wp);
    EXPECT_EQ(2, stats(k.w).peer_maps);
    EXPECT_EQ(4, stats(k.w).tx_direct);
    rig_close(_metadata, &k);
}

/*
 * The owner dies without closing (QEMU killed): the next owner's open
 * invalidates every queue the dead one exported before it publishes
 * anything, and a queue record of an older incarnation is never used,
 * whatever its valid flag says.
 */
TEST_F(fabric, crashed_owner)
{
    static struct rig k;
    int pfd[2], valid = 0;
    pid_t owner;
    char c = 1;

    geom_reversed(&k.g, 64, 128, 32, 6, 24 * PG, 3);
    rig_open(_metadata, &k, 2, RIG_WRITER);
    ram_reset(&k.r, &k.g);
    ASSERT_EQ(0, pipe(pfd));
    owner = fork_child();
    ASSERT_LE(0, owner);
    if (owner == 0) {
        struct fabric_direct *d = dopen(0, 2);

        if (!d) {
            _exit(1);
        }
        fabric_direct_set_ram(d, k.r.fd, k.r.size);
        if (geom_export(d, Q, &k.g) || geom_export(d, 0, &k.g) ||
            write(pfd[1], &c, 1) != 1) {
            _exit(2);
        }
        pause();
        _exit(0);
    }
    close(pfd[1]);
    ASSERT_EQ(1, read(pfd[0], &c, 1));
    close(pfd[0]);
    ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, 0, 32, 1, 1));
    ASSERT_EQ(-1, ram_diff(&k.r));
    ASSERT_EQ(0, kill(owner, SIGKILL));
    ASSERT_EQ(128 + SIGKILL, exit_code(owner));

    ASSERT_NE(NULL, k.o = dopen(0, 2));
    for (unsigned q = 0; q < FABRIC_DIRECT_QUEUES; q++) {
        valid += fabric_direct_queue(k.o, q)->valid != 0;
    }
    EXPECT_EQ(0, valid);
    k.dq = fabric_direct_queue(k.o, Q);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, deliver(&k, &k.b, 0, 32, 1, 2));
    publish(k.o, &k.b, &k.g);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, deliver(&k, &k.b, 0, 32, 1, 2));
    /* as if the dead owner's record had been left valid */
    k.dq->valid = 1;
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, deliver(&k, &k.b, 0, 32, 1, 2));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, deliver(&k, &k.b, 0, 32, 1, 2));
    k.dq->valid = 0;
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(-1, ram_diff(&k.b));

    ASSERT_EQ(0, geom_export(k.o, Q, &k.g));
    ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.b, 0, 32, 3, 3));
    EXPECT_EQ(-1, ram_diff(&k.b));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(2, stats(k.w).peer_maps);
    EXPECT_EQ(2, stats(k.w).tx_direct);
    EXPECT_EQ(4, stats(k.w).tx_no_path);
    rig_close(_metadata, &k);
}
