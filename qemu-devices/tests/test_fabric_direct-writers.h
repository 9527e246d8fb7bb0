/* SPDX-License-Identifier: GPL-2.0 */
/*
 * test_fabric_direct, several writers at once: both kinds of queue filled
 * by concurrent writer processes, a writer that died holding the lock; part
 * of the translation unit of test_fabric_direct.c (its rig and helpers).
 */

#define MW_WRITERS  3
#define MW_MSGS     2000
#define MW_LEN      1016

struct mw_msg {
    uint32_t writer, seq;
    uint8_t fill[MW_LEN - 8];
};

static uint64_t mw_status(uint32_t writer, uint32_t seq)
{
    return (uint64_t)writer << 32 | (seq + 1);
}

static void mw_fill(struct mw_msg *m, uint32_t writer, uint32_t seq)
{
    m->writer = writer;
    m->seq = seq;
    fill_payload(m->fill, sizeof(m->fill), writer * 100000 + seq);
}

/*
 * Writer `id` (node id of 4): MW_MSGS messages into node 0, retry on FULL;
 * starts when *go says so, with the others.
 */
static void mw_writer(uint32_t id, uint32_t prot, uint32_t *go)
{
    struct fabric_direct *w = dopen(id, MW_WRITERS + 1);
    uint64_t t0 = ms_now();

    if (!w) {
        _exit(1);
    }
    __atomic_add_fetch(&go[1], 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&go[0], __ATOMIC_ACQUIRE)) {
        if (ms_now() - t0 > 20000) {
            _exit(4);
        }
        sched_yield();
    }
    for (uint32_t seq = 0; seq < MW_MSGS;) {
        struct mw_msg m;

        mw_fill(&m, id, seq);
        switch (put(w, 0, &m, sizeof(m), mw_status(id, seq), prot, NULL)) {
        case FABRIC_DIRECT_DONE:
            seq++;
            break;
        case FABRIC_DIRECT_FULL:
            __builtin_ia32_pause();     /* at once at the freed slot */
            break;
        default:
            _exit(2);
        }
        if (ms_now() - t0 > 20000) {
            _exit(3);
        }
    }
    _exit(0);
}

/*
 * Three writer processes at once into one ring of 64 slots, the owner
 * consuming: every message exactly once, in each writer's order, whole.
 */
TEST_F(fabric, concurrent_writers)
{
    static struct rig k;
    uint32_t next[MW_WRITERS + 1] = {0};
    uint32_t total = 0, torn = 0, dup = 0, rp = 0;
    pid_t pids[MW_WRITERS];
    uint32_t *go;   /* [0] start, [1] writers ready */
    uint64_t t0, last;

    geom_reversed(&k.g, 1024, 64, 1016, 0xabc, 10 * PG, 1);
    rig_open(_metadata, &k, MW_WRITERS + 1, RIG_EXPORT);
    ASSERT_NE(NULL, go = shared(PG));
    for (uint32_t i = 0; i < MW_WRITERS; i++) {
        pids[i] = fork_child();
        ASSERT_LE(0, pids[i]);
        if (pids[i] == 0) {
            mw_writer(i + 1, k.g.prot, go);
        }
    }
    t0 = ms_now();
    while (__atomic_load_n(&go[1], __ATOMIC_ACQUIRE) < MW_WRITERS &&
           ms_now() - t0 < 5000) {
        usleep(100);
    }
    __atomic_store_n(&go[0], 1, __ATOMIC_RELEASE);

    /*
     * The consumer takes what is there, then sleeps a little: meanwhile
     * the writers race for the freed slots on every CPU.
     */
    t0 = last = ms_now();
    while (total < MW_WRITERS * MW_MSGS && ms_now() - last < 3000) {
        uint64_t status;

        while ((status = __atomic_load_n(status_word(k.r.p, &k.g, rp),
                                         __ATOMIC_ACQUIRE))) {
            struct mw_msg m, want;
            uint32_t wid = (uint32_t)(status >> 32);
            uint32_t seq = (uint32_t)status - 1;

            memcpy(&m, k.r.p + ram_off(&k.g, rp, 0), sizeof(m));
            mw_fill(&want, wid, seq);
            if (wid < 1 || wid > MW_WRITERS || memcmp(&want, &m, sizeof(m))) {
                torn++;
            } else if (seq != next[wid]) {
                dup++;  /* lost, repeated or out of order */
                note("writer %u: seq %u, expected %u", wid, seq, next[wid]);
            } else {
                next[wid]++;
            }
            free_slot(k.r.p, NULL, &k.g, rp);
            rp++;
            total++;
            last = ms_now();
        }
        usleep(50);
    }
    note("%u messages in %llu ms", total,
         (unsigned long long)(ms_now() - t0));
    for (uint32_t i = 0; i < MW_WRITERS; i++) {
        if (total < MW_WRITERS * MW_MSGS) {
            kill(pids[i], SIGKILL);     /* stuck on a slot never filled */
        }
        EXPECT_EQ(0, exit_code(pids[i]));
    }
    EXPECT_EQ(MW_WRITERS * MW_MSGS, total);
    EXPECT_EQ(0, torn);
    EXPECT_EQ(0, dup);
    for (uint32_t i = 1; i <= MW_WRITERS; i++) {
        EXPECT_EQ(MW_MSGS, next[i]);
    }
    /* nothing more arrived: every slot free, the counters agree */
    for (uint32_t s = 0; s < k.g.nslots; s++) {
        EXPECT_EQ(0, *status_word(k.r.p, &k.g, s));
    }
    EXPECT_EQ(MW_WRITERS * MW_MSGS, k.dq->wp);
    EXPECT_EQ(MW_WRITERS * MW_MSGS, k.dq->delivered);
    EXPECT_EQ(MW_WRITERS * MW_MSGS, fabric_direct_deliveries(k.o));
    EXPECT_EQ(0, k.dq->lock);
    EXPECT_EQ(0, k.dq->lock_steals);
    munmap(go, PG);
    rig_close(_metadata, &k);
}

/*
 * The same three writers into a PHASE ring of 64 slots, the owner
 * consuming as the ExaNet library does: a slot is there when its flags
 * word is the expected phase, which starts at phase_flag and flips when
 * the index wraps; the head goes to the owner every 8 slots and whenever
 * nothing was there.  Every message exactly once, in each writer's order,
 * whole, under the flags word of its lap.
 */
TEST_F(fabric, phase_queue_concurrent_writers)
{
    static struct rig k;
    uint32_t next[MW_WRITERS + 1] = {0};
    uint32_t total = 0, torn = 0, dup = 0, bad_flags = 0, idx = 0;
    uint32_t head = 0, unpublished = 0, phase, publishes = 0;
    pid_t pids[MW_WRITERS];
    uint32_t *go;   /* [0] start, [1] writers ready */
    uint64_t t0, last;

    /* 16 pages, reversed; the flags word right after the message */
    geom_phase(&k.g, 1024, 64, MW_LEN + 4, 1, 0xabd, 10 * PG, 1);
    rig_open(_metadata, &k, MW_WRITERS + 1, RIG_EXPORT);
    ASSERT_NE(NULL, go = shared(PG));
    for (uint32_t i = 0; i < MW_WRITERS; i++) {
        pids[i] = fork_child();
        ASSERT_LE(0, pids[i]);
        if (pids[i] == 0) {
            mw_writer(i + 1, k.g.prot, go);
        }
    }
    t0 = ms_now();
    while (__atomic_load_n(&go[1], __ATOMIC_ACQUIRE) < MW_WRITERS &&
           ms_now() - t0 < 5000) {
        usleep(100);
    }
    __atomic_store_n(&go[0], 1, __ATOMIC_RELEASE);

    phase = k.g.phase_flag;
    t0 = last = ms_now();
    while (total < MW_WRITERS * MW_MSGS && ms_now() - last < 3000) {
        uint32_t flags;

        while (((flags = flags_word(k.r.p, &k.g, idx)) & k.g.phase_flag) ==
               phase) {
            struct mw_msg m, want;

            memcpy(&m, k.r.p + ram_off(&k.g, idx, 0), sizeof(m));
            if (flags != lap_flag(&k.g, head)) {
                bad_flags++;
            }
            if (m.writer < 1 || m.writer > MW_WRITERS) {
                torn++;
            } else {
                mw_fill(&want, m.writer, m.seq);
                if (memcmp(&want, &m, sizeof(m))) {
                    torn++;
                } else if (m.seq != next[m.writer]) {
                    dup++;  /* lost, repeated or out of order */
                    note("writer %u: seq %u, expected %u", m.writer, m.seq,
                         next[m.writer]);
                } else {
                    next[m.writer]++;
                }
            }
            head++;
            total++;
            last = ms_now();
            if (++idx == k.g.nslots) {
                idx = 0;
                phase ^= k.g.phase_flag;
            }
            if (++unpublished == 8) {
                fabric_direct_set_head(k.o, Q, head);
                unpublished = 0;
                publishes++;
            }
        }
        if (unpublished) {
            fabric_direct_set_head(k.o, Q, head);
            unpublished = 0;
            publishes++;
        }
        usleep(50);
    }
    note("%u messages in %llu ms, %u heads published, %llu full", total,
         (unsigned long long)(ms_now() - t0), publishes,
         (unsigned long long)k.dq->full);
    for (uint32_t i = 0; i < MW_WRITERS; i++) {
        if (total < MW_WRITERS * MW_MSGS) {
            kill(pids[i], SIGKILL);     /* stuck on a slot never freed */
        }
        EXPECT_EQ(0, exit_code(pids[i]));
    }
    EXPECT_EQ(MW_WRITERS * MW_MSGS, total);
    EXPECT_EQ(0, torn);
    EXPECT_EQ(0, dup);
    EXPECT_EQ(0, bad_flags);
    for (uint32_t i = 1; i <= MW_WRITERS; i++) {
        EXPECT_EQ(MW_MSGS, next[i]);
    }
    /* nothing more arrived: each slot holds its last lap's flags word */
    bad_flags = 0;
    for (uint32_t s = 0; s < k.g.nslots; s++) {
        uint32_t wp = MW_WRITERS * MW_MSGS - k.g.nslots + s;

        bad_flags += lap_flag(&k.g, wp) != flags_word(k.r.p, &k.g, wp);
    }
    EXPECT_EQ(0, bad_flags);
    EXPECT_EQ(MW_WRITERS * MW_MSGS, k.dq->head);
    EXPECT_EQ(MW_WRITERS * MW_MSGS, k.dq->wp);
    EXPECT_EQ(MW_WRITERS * MW_MSGS, k.dq->delivered);
    EXPECT_EQ(MW_WRITERS * MW_MSGS, fabric_direct_deliveries(k.o));
    EXPECT_EQ(0, k.dq->lock);
    EXPECT_EQ(0, k.dq->lock_steals);
    munmap(go, PG);
    rig_close(_metadata, &k);
}

/*
 * A lock held by a process that no longer exists is taken over; one held
 * by a live process is not.
 */
TEST_F(fabric, dead_lock_holder)
{
    static struct rig k;
    uint8_t buf[16];
    pid_t dead, holder, writer;
    int pfd[2], status;
    char c;

    geom_reversed(&k.g, 64, 64, 16, 1, 4 * PG, 1);
    rig_open(_metadata, &k, 2, RIG_EXPORT | RIG_WRITER);
    dead = fork_child();
    ASSERT_LE(0, dead);
    if (dead == 0) {
        _exit(0);
    }
    ASSERT_EQ(0, exit_code(dead));
    k.dq->lock = (uint32_t)dead;
    ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, 0, 16, 1, 1));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(1, k.dq->lock_steals);
    EXPECT_EQ(0, k.dq->lock);
    EXPECT_EQ(1, k.dq->wp);

    /* a live holder: the writer waits for it */
    ASSERT_EQ(0, pipe(pfd));
    holder = fork_child();
    ASSERT_LE(0, holder);
    if (holder == 0) {
        close(pfd[1]);
        _exit(read(pfd[0], &c, 1) == 0 ? 0 : 1);
    }
    close(pfd[0]);
    k.dq->lock = (uint32_t)holder;
    fill_payload(buf, sizeof(buf), 2);
    writer = fork_child();
    ASSERT_LE(0, writer);
    if (writer == 0) {
        struct fabric_direct *w2 = dopen(1, 2);

        _exit(w2 ? 10 + put(w2, 0, buf, 16, 2, 1, NULL) : 1);
    }
    usleep(50000);
    EXPECT_EQ(0, waitpid(writer, &status, WNOHANG));
    EXPECT_EQ((uint32_t)holder, k.dq->lock);
    EXPECT_EQ(1, k.dq->lock_steals);
    EXPECT_EQ(-1, ram_diff(&k.r));
    /* the holder lets go */
    __atomic_store_n(&k.dq->lock, 0, __ATOMIC_RELEASE);
    EXPECT_EQ(10 + FABRIC_DIRECT_DONE, exit_code(writer));
    put_msg(k.r.img, &k.g, 1, buf, 16, 2);
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(1, k.dq->lock_steals);
    EXPECT_EQ(2, k.dq->wp);
    close(pfd[1]);
    EXPECT_EQ(0, exit_code(holder));
    rig_close(_metadata, &k);
}
