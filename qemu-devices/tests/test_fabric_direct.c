// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of direct delivery (qemu-devices/common/fabric-direct.c):
 * a node's receive-queue state file <dir>/direct-<N> and the writes peers
 * make into the node's guest RAM.  The "guest RAM" is a memfd of this
 * process (peers open it as /proc/<pid>/fd/<fd>, as they would QEMU's);
 * peers live in this process or in forked writer processes.
 */
#include "fabric_fixture.h"
#include "fabric-direct.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#define PG          FABRIC_DIRECT_PAGE
#define RAM_SIZE    (1u << 20)
#define CANARY      0xa5
#define Q           3   /* not queue 0: the record index is used */

/*
 * diag(), flushed: a case's process leaves by _exit(), which drops what
 * stdio still buffers when the output is not a terminal.
 */
#define note(...)                   \
    do {                            \
        diag(__VA_ARGS__);          \
        fflush(stdout);             \
    } while (0)

/* ------------------------------------------------------------------ */
/* A ring as the owner exported it, to compute where a slot lands */

struct geom {
    uint32_t slot_size, nslots, status_off, prot, npages;
    uint64_t pages[FABRIC_DIRECT_MAX_PAGES];
};

/*
 * Pages of the ring in reverse order, each `stride` pages apart from
 * `base`: slot 0 is in the highest page, and with stride > 1 the pages
 * between the ring's stay untouched.
 */
static void geom_reversed(struct geom *g, uint32_t slot_size, uint32_t nslots,
                          uint32_t status_off, uint32_t prot, uint64_t base,
                          uint32_t stride)
{
    g->slot_size = slot_size;
    g->nslots = nslots;
    g->status_off = status_off;
    g->prot = prot;
    g->npages = (uint32_t)((uint64_t)slot_size * nslots / PG);
    for (uint32_t i = 0; i < g->npages; i++) {
        g->pages[i] = base + (uint64_t)(g->npages - 1 - i) * stride * PG;
    }
}

/* RAM offset of byte `off` of slot `slot` (free running index) */
static uint64_t ram_off(const struct geom *g, uint32_t slot, uint32_t off)
{
    uint64_t b = (uint64_t)(slot & (g->nslots - 1)) * g->slot_size + off;

    return g->pages[b / PG] + b % PG;
}

static int geom_export(struct fabric_direct *d, unsigned q,
                       const struct geom *g)
{
    return fabric_direct_export(d, q, g->slot_size, g->nslots, g->status_off,
                                g->prot, g->pages, g->npages);
}

/* Writes a message into an image of the RAM, as a writer would. */
static void put_msg(uint8_t *img, const struct geom *g, uint32_t slot,
                    const void *payload, size_t len, uint64_t status)
{
    memcpy(img + ram_off(g, slot, 0), payload, len);
    memcpy(img + ram_off(g, slot, g->status_off), &status, 8);
}

static uint64_t *status_word(uint8_t *ram, const struct geom *g,
                             uint32_t slot)
{
    return (uint64_t *)(ram + ram_off(g, slot, g->status_off));
}

/* The consumer frees a slot (in the RAM and in the image). */
static void free_slot(uint8_t *ram, uint8_t *img, const struct geom *g,
                      uint32_t slot)
{
    __atomic_store_n(status_word(ram, g, slot), 0, __ATOMIC_RELEASE);
    if (img) {
        memset(img + ram_off(g, slot, g->status_off), 0, 8);
    }
}

/* ------------------------------------------------------------------ */
/* Guest RAM: a memfd mapped shared, canary bytes, free status words */

struct ram {
    int fd;
    uint8_t *p;
    size_t size;
    uint8_t *img;   /* what the RAM must hold */
};

static bool ram_new(struct ram *r, size_t size)
{
    r->size = size;
    r->fd = memfd_create("ram", 0);
    if (r->fd < 0 || ftruncate(r->fd, size) < 0) {
        return false;
    }
    r->p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    r->img = malloc(size);
    if (r->p == MAP_FAILED || !r->img) {
        return false;
    }
    memset(r->p, CANARY, size);
    memcpy(r->img, r->p, size);
    return true;
}

/* Canaries everywhere, every status word of the ring zero (free). */
static void ram_reset(struct ram *r, const struct geom *g)
{
    memset(r->p, CANARY, r->size);
    for (uint32_t s = 0; s < g->nslots; s++) {
        *status_word(r->p, g, s) = 0;
    }
    memcpy(r->img, r->p, r->size);
}

static void ram_free(struct ram *r)
{
    munmap(r->p, r->size);
    close(r->fd);
    free(r->img);
}

/* Offset of the first byte where the RAM differs from its image, or -1. */
static long ram_diff(const struct ram *r)
{
    if (!memcmp(r->p, r->img, r->size)) {
        return -1;
    }
    for (size_t i = 0; i < r->size; i++) {
        if (r->p[i] != r->img[i]) {
            note("RAM differs at offset 0x%zx: 0x%x, expected 0x%x", i, r->p[i],
                 r->img[i]);
            return (long)i;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------ */

static struct fabric_direct *dopen(uint32_t node, uint32_t nodes)
{
    struct fabric_direct *d;
    char err[256] = "";
    int rc = fabric_direct_open(&d, tmpdir, node, nodes, err, sizeof(err));

    if (rc) {
        note("fabric_direct_open(%u/%u): %d %s", node, nodes, rc, err);
        return NULL;
    }
    return d;
}

/* The owner of node 0 with its RAM published and queue Q exported. */
static struct fabric_direct *owner_open(uint32_t nodes, struct ram *r,
                                        const struct geom *g)
{
    struct fabric_direct *d = dopen(0, nodes);

    if (!d) {
        return NULL;
    }
    ram_reset(r, g);
    fabric_direct_set_ram(d, r->fd, r->size);
    if (geom_export(d, Q, g)) {
        fabric_direct_close(d);
        return NULL;
    }
    return d;
}

/* The case's directory must be left empty (fabric_fixture.h). */
static int unlink_direct(uint32_t nodes)
{
    char path[160];
    int bad = 0;

    for (uint32_t n = 0; n < nodes; n++) {
        snprintf(path, sizeof(path), "%s/direct-%u", tmpdir, n);
        if (unlink(path) < 0 && errno != ENOENT) {
            bad++;
        }
    }
    return bad;
}

/* payload bytes from a seed */
static void fill_payload(uint8_t *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(seed * 131 + i * 7 + 1);
    }
}

static enum fabric_direct_result put_q(struct fabric_direct *d, uint32_t dst,
                                       unsigned q, const void *payload,
                                       size_t len, uint64_t status,
                                       uint32_t prot, bool *wake)
{
    const struct fabric_direct_msg m = {
        .payload = payload, .len = len, .status = status, .prot = prot,
    };
    bool w;

    return fabric_direct_write(d, dst, q, &m, wake ? wake : &w);
}

/* into queue Q */
static enum fabric_direct_result put(struct fabric_direct *d, uint32_t dst,
                                     const void *payload, size_t len,
                                     uint64_t status, uint32_t prot,
                                     bool *wake)
{
    return put_q(d, dst, Q, payload, len, status, prot, wake);
}

/* A forked helper process never returns into the harness. */
static pid_t fork_child(void)
{
    pid_t parent = getpid();
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(100);
        }
    }
    return pid;
}

static uint64_t ms_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */

/*
 * One write through a reversed page list lands where the translation
 * says, and nowhere else; the next ones fill the next slots, across the
 * ring's pages.
 */
TEST_F(fabric, export_and_write)
{
    static struct geom g;
    struct fabric_direct *o, *w;
    struct fabric_direct_queue *dq;
    struct fabric_direct_stats st;
    struct ram r;
    uint8_t buf[56];
    bool wake = true;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    /* 4 pages, reversed, every other page: 64 KiB .. 120 KiB */
    geom_reversed(&g, 64, 256, 56, 0x77, 16 * PG, 2);
    ASSERT_EQ(4, g.npages);
    ASSERT_NE(NULL, o = dopen(0, 2));
    EXPECT_FALSE(fabric_direct_live(o));
    ram_reset(&r, &g);
    fabric_direct_set_ram(o, r.fd, r.size);
    EXPECT_TRUE(fabric_direct_live(o));
    ASSERT_EQ(0, geom_export(o, Q, &g));
    ASSERT_NE(NULL, dq = fabric_direct_queue(o, Q));
    EXPECT_EQ(1, dq->valid);
    EXPECT_EQ(0, dq->wp);
    ASSERT_NE(NULL, w = dopen(1, 2));

    /* slot 0: the last page of the list, the highest address */
    fill_payload(buf, 40, 1);
    ASSERT_EQ(FABRIC_DIRECT_DONE,
              put(w, 0, buf, 40, 0x1122334455667788ull, 0x77, &wake));
    EXPECT_FALSE(wake);
    put_msg(r.img, &g, 0, buf, 40, 0x1122334455667788ull);
    EXPECT_EQ(22 * PG, ram_off(&g, 0, 0));
    EXPECT_EQ(0, memcmp(r.p + 22 * PG, buf, 40));
    EXPECT_EQ(0x1122334455667788ull, *(uint64_t *)(r.p + 22 * PG + 56));
    /* the bytes between payload and status are not the writer's */
    EXPECT_EQ(CANARY, r.p[22 * PG + 40]);
    EXPECT_EQ(CANARY, r.p[22 * PG + 55]);
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(1, dq->wp);
    EXPECT_EQ(1, dq->delivered);
    EXPECT_EQ(1, fabric_direct_deliveries(o));

    /* the next slots, into the second page of the list (one below) */
    for (uint32_t s = 1; s < 70; s++) {
        size_t len = 1 + s % 56;

        fill_payload(buf, len, s + 1);
        ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, len, s + 1, 0x77, NULL));
        put_msg(r.img, &g, s, buf, len, s + 1);
    }
    EXPECT_EQ(20 * PG + 5 * 64, ram_off(&g, 69, 0));
    EXPECT_EQ(70, *(uint64_t *)(r.p + 20 * PG + 5 * 64 + 56));
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(70, dq->wp);
    EXPECT_EQ(70, dq->delivered);
    EXPECT_EQ(70, fabric_direct_deliveries(o));
    EXPECT_EQ(0, dq->refused);
    EXPECT_EQ(0, dq->full);
    fabric_direct_get_stats(w, &st);
    EXPECT_EQ(70, st.tx_direct);
    EXPECT_EQ(1, st.peer_maps);
    EXPECT_EQ(0, st.tx_no_path + st.tx_full + st.tx_refused);

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(2));
}

/* A full ring refuses without writing; a freed slot 0 takes the wrap. */
TEST_F(fabric, ring_full_and_wrap)
{
    static struct geom g;
    struct fabric_direct *o, *w;
    struct fabric_direct_queue *dq;
    struct fabric_direct_stats st;
    struct ram r;
    uint8_t buf[256];

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    geom_reversed(&g, 512, 16, 504, 5, 8 * PG, 3);
    ASSERT_NE(NULL, o = owner_open(2, &r, &g));
    ASSERT_NE(NULL, w = dopen(1, 2));
    dq = fabric_direct_queue(o, Q);

    for (uint32_t s = 0; s < 16; s++) {
        fill_payload(buf, sizeof(buf), s);
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  put(w, 0, buf, sizeof(buf), 100 + s, 5, NULL));
        put_msg(r.img, &g, s, buf, sizeof(buf), 100 + s);
    }
    EXPECT_EQ(-1, ram_diff(&r));
    fill_payload(buf, sizeof(buf), 999);
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(w, 0, buf, sizeof(buf), 999, 5, NULL));
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(w, 0, buf, sizeof(buf), 999, 5, NULL));
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(16, dq->wp);
    EXPECT_EQ(16, dq->delivered);
    EXPECT_EQ(2, dq->full);
    EXPECT_EQ(16, fabric_direct_deliveries(o));

    /* freeing another slot than wp's does not help */
    free_slot(r.p, r.img, &g, 5);
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(w, 0, buf, sizeof(buf), 999, 5, NULL));
    EXPECT_EQ(-1, ram_diff(&r));

    /* the consumer frees slot 0: the next write wraps into it */
    free_slot(r.p, r.img, &g, 0);
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 100, 999, 5, NULL));
    put_msg(r.img, &g, 16, buf, 100, 999);
    EXPECT_EQ(999, *status_word(r.p, &g, 0));
    EXPECT_EQ(0, memcmp(r.p + ram_off(&g, 0, 0), buf, 100));
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(17, dq->wp);
    /* slot 1 is still in use */
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(w, 0, buf, 100, 1000, 5, NULL));
    EXPECT_EQ(-1, ram_diff(&r));
    fabric_direct_get_stats(w, &st);
    EXPECT_EQ(17, st.tx_direct);
    EXPECT_EQ(4, st.tx_full);
    EXPECT_EQ(4, dq->full);

    /* a ring smaller than a page (npages rounded up) on queue Q + 1 */
    {
        static struct geom h;

        h.slot_size = 128;
        h.nslots = 8;
        h.status_off = 64;
        h.npages = 1;
        h.pages[0] = 40 * PG;
        for (uint32_t s = 0; s < 8; s++) {
            free_slot(r.p, r.img, &h, s);
        }
        EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q + 1, 128, 8, 64, 5,
                                                h.pages, 0));
        EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q + 1, 128, 8, 64, 5,
                                                h.pages, 2));
        ASSERT_EQ(0, fabric_direct_export(o, Q + 1, 128, 8, 64, 5, h.pages,
                                          1));
        for (uint32_t s = 0; s < 8; s++) {
            fill_payload(buf, 64, 200 + s);
            ASSERT_EQ(FABRIC_DIRECT_DONE,
                      put_q(w, 0, Q + 1, buf, 64, 200 + s, 5, NULL));
            put_msg(r.img, &h, s, buf, 64, 200 + s);
        }
        EXPECT_EQ(FABRIC_DIRECT_FULL,
                  put_q(w, 0, Q + 1, buf, 64, 300, 5, NULL));
        EXPECT_EQ(-1, ram_diff(&r));
        /* nothing past the ring's 1 KiB in its page */
        EXPECT_EQ(CANARY, r.p[40 * PG + 1024]);
        free_slot(r.p, r.img, &h, 0);
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  put_q(w, 0, Q + 1, buf, 64, 300, 5, NULL));
        put_msg(r.img, &h, 8, buf, 64, 300);
        EXPECT_EQ(-1, ram_diff(&r));
        EXPECT_EQ(9, fabric_direct_queue(o, Q + 1)->wp);
        /* queue Q did not move */
        EXPECT_EQ(17, dq->wp);
    }

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(2));
}

/* A wrong protection id writes nothing and is counted; set_prot moves it. */
TEST_F(fabric, protection_id)
{
    static struct geom g;
    struct fabric_direct *o, *w;
    struct fabric_direct_queue *dq;
    struct fabric_direct_stats st;
    struct ram r;
    uint8_t buf[32];

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    geom_reversed(&g, 64, 64, 32, 0x1234, 4 * PG, 1);
    ASSERT_NE(NULL, o = owner_open(2, &r, &g));
    ASSERT_NE(NULL, w = dopen(1, 2));
    dq = fabric_direct_queue(o, Q);
    fill_payload(buf, sizeof(buf), 7);

    EXPECT_EQ(FABRIC_DIRECT_REFUSED, put(w, 0, buf, 32, 1, 0x1235, NULL));
    EXPECT_EQ(FABRIC_DIRECT_REFUSED, put(w, 0, buf, 32, 1, 0, NULL));
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(2, dq->refused);
    EXPECT_EQ(0, dq->wp);
    EXPECT_EQ(0, dq->delivered);
    EXPECT_EQ(0, fabric_direct_deliveries(o));

    fabric_direct_set_prot(o, Q, 0x4321);
    EXPECT_EQ(0x4321, dq->prot);
    EXPECT_EQ(FABRIC_DIRECT_REFUSED, put(w, 0, buf, 32, 1, 0x1234, NULL));
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(3, dq->refused);
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 32, 1, 0x4321, NULL));
    put_msg(r.img, &g, 0, buf, 32, 1);
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(1, dq->wp);
    EXPECT_EQ(3, dq->refused);
    fabric_direct_get_stats(w, &st);
    EXPECT_EQ(3, st.tx_refused);
    EXPECT_EQ(1, st.tx_direct);

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(2));
}

/* After fabric_direct_invalidate() nothing is written; a re-export works. */
TEST_F(fabric, invalidate_stops_writes)
{
    static struct geom g;
    struct fabric_direct *o, *w;
    struct fabric_direct_queue *dq;
    struct fabric_direct_stats st;
    struct ram r;
    uint8_t buf[48];
    uint64_t gen;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    geom_reversed(&g, 128, 64, 120, 9, 32 * PG, 2);
    ASSERT_NE(NULL, o = owner_open(2, &r, &g));
    ASSERT_NE(NULL, w = dopen(1, 2));
    dq = fabric_direct_queue(o, Q);
    for (uint32_t s = 0; s < 3; s++) {
        fill_payload(buf, sizeof(buf), s);
        ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 48, s + 1, 9, NULL));
        put_msg(r.img, &g, s, buf, 48, s + 1);
    }
    EXPECT_EQ(-1, ram_diff(&r));

    gen = dq->generation;
    fabric_direct_invalidate(o, Q);
    EXPECT_EQ(0, dq->valid);
    EXPECT_EQ(gen + 1, dq->generation);
    EXPECT_EQ(0, dq->lock);
    /* free slots, right protection: only the invalidation stops these */
    for (uint32_t s = 3; s < 64 + 3; s++) {
        EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 48, s + 1, 9, NULL));
    }
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(3, dq->wp);
    EXPECT_EQ(3, dq->delivered);
    EXPECT_EQ(3, fabric_direct_deliveries(o));
    fabric_direct_get_stats(w, &st);
    EXPECT_EQ(64, st.tx_no_path);
    /* the peer keeps its mapping: the queue record alone said no */
    EXPECT_EQ(1, st.peer_maps);

    /* a new export (the consumer reset the ring): wp starts again */
    ram_reset(&r, &g);
    ASSERT_EQ(0, geom_export(o, Q, &g));
    EXPECT_EQ(gen + 2, dq->generation);
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 48, 77, 9, NULL));
    put_msg(r.img, &g, 0, buf, 48, 77);
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(1, dq->wp);

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(2));
}

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

/* Wait until *v went past `from` (by `by`), at most 5 s. */
static bool wait_past(uint64_t *v, uint64_t from, uint64_t by)
{
    uint64_t t0 = ms_now();

    while (__atomic_load_n(v, __ATOMIC_ACQUIRE) - from < by) {
        if (ms_now() - t0 > 5000) {
            return false;
        }
        sched_yield();
    }
    return true;
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
    static struct geom g;
    struct fabric_direct_queue *dq;
    struct fabric_direct *o;
    struct stream_ctl *c;
    uint64_t base = 0, wps[RACE_ROUNDS];
    uint8_t *snap;
    struct ram r;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    int status;
    pid_t pid;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    ASSERT_NE(NULL, snap = malloc(RAM_SIZE));
    c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, c);
    c->run = -1;
    /* 128 pages (reversed) of 32-byte slots: 16384 slots */
    geom_reversed(&g, 32, 128 * PG / 32, 24, 3, 16 * PG, 1);
    ASSERT_NE(NULL, o = dopen(0, 2));
    fabric_direct_set_ram(o, r.fd, r.size);
    dq = fabric_direct_queue(o, Q);
    note("seed %u", seed);
    srand(seed);
    pid = fork_child();
    ASSERT_LE(0, pid);
    if (pid == 0) {
        stream_writer(c, g.prot);
    }

    for (int it = 0; it < RACE_ROUNDS; it++) {
        bool last = it == RACE_ROUNDS - 1;
        unsigned delay_us = (unsigned)rand() % (last ? 3000 : 300);
        uint64_t t0, no_path0, wp;

        /* the queue is invalid: the writer meets NO_PATH meanwhile */
        ram_reset(&r, &g);
        ASSERT_EQ(0, geom_export(o, Q, &g));
        ASSERT_TRUE(wait_past(&c->done, c->done, 1));
        if (delay_us) {
            usleep(delay_us);
        }
        fabric_direct_invalidate(o, Q);
        wp = dq->wp;
        memcpy(snap, r.p, RAM_SIZE);
        /* let the writer run on: 50 ms and more in the last round */
        t0 = ms_now();
        no_path0 = __atomic_load_n(&c->no_path, __ATOMIC_ACQUIRE);
        ASSERT_TRUE(wait_past(&c->no_path, no_path0, last ? 1000 : 10));
        while (last && ms_now() - t0 < 50) {
            usleep(1000);
        }
        /* not one byte changed since the invalidation returned */
        ASSERT_EQ(0, memcmp(snap, r.p, RAM_SIZE));
        /* exactly the messages the write index says, in their slots */
        ASSERT_EQ(wp, dq->wp);
        ASSERT_GE(g.nslots, wp);
        for (uint64_t s = 0; s < wp; s++) {
            struct stream_msg m = { base + s, STREAM_CHECK(base + s) };

            put_msg(r.img, &g, (uint32_t)s, &m, sizeof(m), base + s + 1);
        }
        ASSERT_EQ(-1, ram_diff(&r));
        wps[it] = wp;
        base += wp;
        if (it < 3 || last) {
            note("round %d: invalidated %u us after the first write, "
                 "%llu written", it, delay_us, (unsigned long long)wp);
        }
    }
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(0, WEXITSTATUS(status));
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
    EXPECT_EQ(0, dq->lock);

    fabric_direct_close(o);
    munmap(c, sizeof(*c));
    free(snap);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(2));
}

/*
 * The owner restarts (close, open, new RAM): a peer that mapped the old
 * incarnation gets no path until the new owner exports, and never writes
 * into the old RAM again; then its writes land in the new RAM.
 */
TEST_F(fabric, new_incarnation)
{
    static struct geom g;
    struct fabric_direct *o, *w;
    struct fabric_direct_queue *dq;
    struct fabric_direct_stats st;
    struct ram a, b;
    uint8_t buf[24];
    uint64_t inc;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&a, RAM_SIZE));
    ASSERT_TRUE(ram_new(&b, RAM_SIZE));
    geom_reversed(&g, 256, 32, 128, 4, 40 * PG, 2);
    ASSERT_NE(NULL, o = owner_open(2, &a, &g));
    ASSERT_NE(NULL, w = dopen(1, 2));
    fill_payload(buf, sizeof(buf), 1);
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 24, 11, 4, NULL));
    put_msg(a.img, &g, 0, buf, 24, 11);
    EXPECT_EQ(-1, ram_diff(&a));
    inc = fabric_direct_queue(o, Q)->incarnation;

    fabric_direct_close(o);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 24, 12, 4, NULL));
    ASSERT_NE(NULL, o = dopen(0, 2));
    dq = fabric_direct_queue(o, Q);
    EXPECT_EQ(0, dq->valid);
    EXPECT_FALSE(fabric_direct_live(o));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 24, 12, 4, NULL));
    /* live again with another RAM, queue Q not exported yet */
    ram_reset(&b, &g);
    fabric_direct_set_ram(o, b.fd, b.size);
    for (int i = 0; i < 10; i++) {
        EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 24, 12, 4, NULL));
    }
    EXPECT_EQ(-1, ram_diff(&a));
    EXPECT_EQ(-1, ram_diff(&b));

    ASSERT_EQ(0, geom_export(o, Q, &g));
    EXPECT_EQ(inc + 1, dq->incarnation);
    for (uint32_t s = 0; s < 3; s++) {
        fill_payload(buf, sizeof(buf), 20 + s);
        ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 24, 20 + s, 4, NULL));
        put_msg(b.img, &g, s, buf, 24, 20 + s);
    }
    EXPECT_EQ(-1, ram_diff(&b));
    /* the old RAM still holds the one message of the old incarnation */
    EXPECT_EQ(-1, ram_diff(&a));
    EXPECT_EQ(3, dq->wp);
    fabric_direct_get_stats(w, &st);
    EXPECT_EQ(2, st.peer_maps);
    EXPECT_EQ(4, st.tx_direct);

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&a);
    ram_free(&b);
    ASSERT_EQ(0, unlink_direct(2));
}

/*
 * The owner dies without closing (QEMU killed): the next owner's open
 * invalidates every queue the dead one exported before it publishes
 * anything, and a queue record of an older incarnation is never used,
 * whatever its valid flag says.
 */
TEST_F(fabric, crashed_owner)
{
    static struct geom g;
    struct fabric_direct *o, *w;
    struct fabric_direct_queue *dq;
    struct fabric_direct_stats st;
    struct ram a, b;
    uint8_t buf[32];
    int pfd[2], status, valid = 0;
    pid_t owner;
    char c = 1;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&a, RAM_SIZE));
    ASSERT_TRUE(ram_new(&b, RAM_SIZE));
    geom_reversed(&g, 64, 128, 32, 6, 24 * PG, 3);
    ram_reset(&a, &g);
    ASSERT_EQ(0, pipe(pfd));
    owner = fork_child();
    ASSERT_LE(0, owner);
    if (owner == 0) {
        struct fabric_direct *d = dopen(0, 2);

        if (!d) {
            _exit(1);
        }
        fabric_direct_set_ram(d, a.fd, a.size);
        if (geom_export(d, Q, &g) || geom_export(d, 0, &g) ||
            write(pfd[1], &c, 1) != 1) {
            _exit(2);
        }
        pause();
        _exit(0);
    }
    close(pfd[1]);
    ASSERT_EQ(1, read(pfd[0], &c, 1));
    close(pfd[0]);
    ASSERT_NE(NULL, w = dopen(1, 2));
    fill_payload(buf, sizeof(buf), 1);
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 32, 1, 6, NULL));
    put_msg(a.img, &g, 0, buf, 32, 1);
    ASSERT_EQ(-1, ram_diff(&a));
    ASSERT_EQ(0, kill(owner, SIGKILL));
    ASSERT_EQ(owner, waitpid(owner, &status, 0));

    ASSERT_NE(NULL, o = dopen(0, 2));
    for (unsigned q = 0; q < FABRIC_DIRECT_QUEUES; q++) {
        valid += fabric_direct_queue(o, q)->valid != 0;
    }
    EXPECT_EQ(0, valid);
    dq = fabric_direct_queue(o, Q);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 32, 2, 6, NULL));
    ram_reset(&b, &g);
    fabric_direct_set_ram(o, b.fd, b.size);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 32, 2, 6, NULL));
    /* as if the dead owner's record had been left valid */
    dq->valid = 1;
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 32, 2, 6, NULL));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 32, 2, 6, NULL));
    dq->valid = 0;
    EXPECT_EQ(-1, ram_diff(&a));
    EXPECT_EQ(-1, ram_diff(&b));

    ASSERT_EQ(0, geom_export(o, Q, &g));
    fill_payload(buf, sizeof(buf), 3);
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 32, 3, 6, NULL));
    put_msg(b.img, &g, 0, buf, 32, 3);
    EXPECT_EQ(-1, ram_diff(&b));
    EXPECT_EQ(-1, ram_diff(&a));
    fabric_direct_get_stats(w, &st);
    EXPECT_EQ(2, st.peer_maps);
    EXPECT_EQ(2, st.tx_direct);
    EXPECT_EQ(4, st.tx_no_path);

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&a);
    ram_free(&b);
    ASSERT_EQ(0, unlink_direct(2));
}

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
    static struct geom g;
    struct fabric_direct *o;
    struct fabric_direct_queue *dq;
    uint32_t next[MW_WRITERS + 1] = {0};
    uint32_t total = 0, torn = 0, dup = 0, rp = 0;
    pid_t pids[MW_WRITERS];
    uint32_t *go;   /* [0] start, [1] writers ready */
    struct ram r;
    uint64_t t0, last;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    geom_reversed(&g, 1024, 64, 1016, 0xabc, 10 * PG, 1);
    ASSERT_NE(NULL, o = owner_open(MW_WRITERS + 1, &r, &g));
    dq = fabric_direct_queue(o, Q);
    go = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
    ASSERT_NE(MAP_FAILED, go);
    for (uint32_t i = 0; i < MW_WRITERS; i++) {
        pids[i] = fork_child();
        ASSERT_LE(0, pids[i]);
        if (pids[i] == 0) {
            mw_writer(i + 1, g.prot, go);
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

        while ((status = __atomic_load_n(status_word(r.p, &g, rp),
                                         __ATOMIC_ACQUIRE))) {
            struct mw_msg m, want;
            uint32_t wid = (uint32_t)(status >> 32);
            uint32_t seq = (uint32_t)status - 1;

            memcpy(&m, r.p + ram_off(&g, rp, 0), sizeof(m));
            mw_fill(&want, wid, seq);
            if (wid < 1 || wid > MW_WRITERS || memcmp(&want, &m, sizeof(m))) {
                torn++;
            } else if (seq != next[wid]) {
                dup++;  /* lost, repeated or out of order */
                note("writer %u: seq %u, expected %u", wid, seq, next[wid]);
            } else {
                next[wid]++;
            }
            free_slot(r.p, NULL, &g, rp);
            rp++;
            total++;
            last = ms_now();
        }
        usleep(50);
    }
    note("%u messages in %llu ms", total,
         (unsigned long long)(ms_now() - t0));
    for (uint32_t i = 0; i < MW_WRITERS; i++) {
        int status;

        if (total < MW_WRITERS * MW_MSGS) {
            kill(pids[i], SIGKILL);     /* stuck on a slot never filled */
        }
        ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
        EXPECT_TRUE(WIFEXITED(status));
        EXPECT_EQ(0, WEXITSTATUS(status));
    }
    EXPECT_EQ(MW_WRITERS * MW_MSGS, total);
    EXPECT_EQ(0, torn);
    EXPECT_EQ(0, dup);
    for (uint32_t i = 1; i <= MW_WRITERS; i++) {
        EXPECT_EQ(MW_MSGS, next[i]);
    }
    /* nothing more arrived: every slot free, the counters agree */
    for (uint32_t s = 0; s < g.nslots; s++) {
        EXPECT_EQ(0, *status_word(r.p, &g, s));
    }
    EXPECT_EQ(MW_WRITERS * MW_MSGS, dq->wp);
    EXPECT_EQ(MW_WRITERS * MW_MSGS, dq->delivered);
    EXPECT_EQ(MW_WRITERS * MW_MSGS, fabric_direct_deliveries(o));
    EXPECT_EQ(0, dq->lock);
    EXPECT_EQ(0, dq->lock_steals);

    fabric_direct_close(o);
    munmap(go, PG);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(MW_WRITERS + 1));
}

/*
 * A lock held by a process that no longer exists is taken over; one held
 * by a live process is not.
 */
TEST_F(fabric, dead_lock_holder)
{
    static struct geom g;
    struct fabric_direct *o, *w;
    struct fabric_direct_queue *dq;
    struct ram r;
    uint8_t buf[16];
    pid_t dead, holder, writer;
    int pfd[2], status;
    char c;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    geom_reversed(&g, 64, 64, 16, 1, 4 * PG, 1);
    ASSERT_NE(NULL, o = owner_open(2, &r, &g));
    ASSERT_NE(NULL, w = dopen(1, 2));
    dq = fabric_direct_queue(o, Q);

    dead = fork_child();
    ASSERT_LE(0, dead);
    if (dead == 0) {
        _exit(0);
    }
    ASSERT_EQ(dead, waitpid(dead, &status, 0));
    dq->lock = (uint32_t)dead;
    fill_payload(buf, sizeof(buf), 1);
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 16, 1, 1, NULL));
    put_msg(r.img, &g, 0, buf, 16, 1);
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(1, dq->lock_steals);
    EXPECT_EQ(0, dq->lock);
    EXPECT_EQ(1, dq->wp);

    /* a live holder: the writer waits for it */
    ASSERT_EQ(0, pipe(pfd));
    holder = fork_child();
    ASSERT_LE(0, holder);
    if (holder == 0) {
        close(pfd[1]);
        _exit(read(pfd[0], &c, 1) == 0 ? 0 : 1);
    }
    close(pfd[0]);
    dq->lock = (uint32_t)holder;
    writer = fork_child();
    ASSERT_LE(0, writer);
    if (writer == 0) {
        struct fabric_direct *w2 = dopen(1, 2);

        fill_payload(buf, sizeof(buf), 2);
        _exit(w2 ? 10 + put(w2, 0, buf, 16, 2, 1, NULL) : 1);
    }
    usleep(50000);
    EXPECT_EQ(0, waitpid(writer, &status, WNOHANG));
    EXPECT_EQ((uint32_t)holder, dq->lock);
    EXPECT_EQ(1, dq->lock_steals);
    EXPECT_EQ(-1, ram_diff(&r));
    /* the holder lets go */
    __atomic_store_n(&dq->lock, 0, __ATOMIC_RELEASE);
    ASSERT_EQ(writer, waitpid(writer, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(10 + FABRIC_DIRECT_DONE, WEXITSTATUS(status));
    fill_payload(buf, sizeof(buf), 2);
    put_msg(r.img, &g, 1, buf, 16, 2);
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(1, dq->lock_steals);
    EXPECT_EQ(2, dq->wp);
    close(pfd[1]);
    ASSERT_EQ(holder, waitpid(holder, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(2));
}

/* Bad geometry, bad nodes, a missing node, bad messages. */
TEST_F(fabric, bad_arguments)
{
    static uint64_t big[2 * FABRIC_DIRECT_MAX_PAGES]; /* page 0 each */
    static struct geom g;
    struct fabric_direct *o, *w, *x;
    struct fabric_direct_queue *dq;
    struct fabric_direct_stats st;
    struct ram r;
    uint64_t pages[4] = { 8 * PG, 9 * PG, 10 * PG, 11 * PG };
    uint8_t buf[64];
    char err[256], path[160];
    uint64_t gen;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    ASSERT_NE(NULL, o = dopen(0, 4));
    dq = fabric_direct_queue(o, Q);
    EXPECT_EQ(NULL, fabric_direct_queue(o, FABRIC_DIRECT_QUEUES));
    /* no RAM published yet: every page is outside it */
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 64, 56, 1, pages, 1));
    fabric_direct_set_ram(o, r.fd, r.size);
    EXPECT_EQ(0, fabric_direct_export(o, Q, 64, 64, 56, 1, pages, 1));
    gen = dq->generation;

    /*
     * Each of these is wrong in one respect only: slot size not dividing
     * the page (the ring still a whole number of pages) ...
     */
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 0, 64, 0, 1, pages, 1));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 96, 128, 8, 1, pages, 3));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 24, 512, 8, 1, pages, 3));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 8192, 1, 8, 1, pages, 2));
    /* ... nslots zero or not a power of two ... */
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 0, 8, 1, pages, 0));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 4096, 3, 8, 1, pages, 3));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 1024, 12, 8, 1, pages, 3));
    /* status word beyond or across the slot end, unaligned */
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 64, 64, 1, pages, 1));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 64, 60, 1, pages, 1));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 64, 4096, 1, pages, 1));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 64, 52, 1, pages, 1));
    /* npages not what the ring needs, or more than a queue may have */
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 64, 56, 1, pages, 2));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 128, 56, 1, pages, 1));
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 128, 56, 1, pages, 3));
    EXPECT_EQ(-EINVAL,
              fabric_direct_export(o, Q, 4096, 4096, 8, 1, big, 4096));
    EXPECT_EQ(-EINVAL,
              fabric_direct_export(o, Q, 64, 64 * 4096, 8, 1, big, 4096));
    /* page offsets unaligned or outside the RAM */
    pages[1] = 9 * PG + 8;
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 128, 56, 1, pages, 2));
    pages[1] = RAM_SIZE;
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 128, 56, 1, pages, 2));
    pages[1] = RAM_SIZE - PG / 2;
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 128, 56, 1, pages, 2));
    pages[1] = 1ull << 40;
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 128, 56, 1, pages, 2));
    /* queue index */
    pages[1] = RAM_SIZE - PG;   /* the last page: fine */
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, FABRIC_DIRECT_QUEUES, 64, 128,
                                            56, 1, pages, 2));
    /* none of these touched the export in place */
    EXPECT_EQ(gen, dq->generation);
    EXPECT_EQ(1, dq->valid);
    EXPECT_EQ(64, dq->nslots);
    EXPECT_EQ(8 * PG, dq->pages[0]);
    geom_reversed(&g, 64, 128, 56, 1, 0, 1);
    memcpy(g.pages, pages, 2 * sizeof(pages[0]));
    ram_reset(&r, &g);
    EXPECT_EQ(0, geom_export(o, Q, &g));
    EXPECT_EQ(RAM_SIZE - PG, dq->pages[1]);

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
    ASSERT_NE(NULL, w = dopen(1, 4));
    fill_payload(buf, sizeof(buf), 3);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 2, buf, 8, 1, 1, NULL));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 4, buf, 8, 1, 1, NULL));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 8, 0, 1, NULL));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 57, 1, 1, NULL));
    {
        const struct fabric_direct_msg m = { buf, 8, 1, 1 };
        bool wake = true;

        EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
                  fabric_direct_write(w, 0, FABRIC_DIRECT_QUEUES, &m, &wake));
        EXPECT_FALSE(wake);
        EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
                  fabric_direct_write(NULL, 0, Q, &m, &wake));
        /* a queue never exported */
        EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
                  fabric_direct_write(w, 0, Q + 1, &m, &wake));
    }
    EXPECT_EQ(-1, ram_diff(&r));
    EXPECT_EQ(0, dq->wp);
    fabric_direct_get_stats(w, &st);
    EXPECT_EQ(6, st.tx_no_path);
    EXPECT_EQ(0, st.tx_direct);
    /* a payload up to the status word is fine */
    EXPECT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 56, 1, 1, NULL));
    put_msg(r.img, &g, 0, buf, 56, 1);
    EXPECT_EQ(0, memcmp(r.p + 8 * PG, buf, 56));
    EXPECT_EQ(-1, ram_diff(&r));

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(4));
}

/*
 * Offsets so large that "offset + size" wraps around must be refused as
 * well: a status word 8 bytes short of 4 GiB, a page 4 KiB short of 2^64.
 */
TEST_F(fabric, export_rejects_wrapping_offsets)
{
    struct fabric_direct *o;
    struct ram r;
    uint64_t page = 0;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    ASSERT_NE(NULL, o = dopen(0, 2));
    fabric_direct_set_ram(o, r.fd, r.size);
    EXPECT_EQ(-EINVAL,
              fabric_direct_export(o, Q, 64, 64, 0xfffffff8u, 1, &page, 1));
    page = 0xfffffffffffff000ull;
    EXPECT_EQ(-EINVAL, fabric_direct_export(o, Q, 64, 64, 56, 1, &page, 1));
    EXPECT_EQ(0, fabric_direct_queue(o, Q)->valid);

    fabric_direct_close(o);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(2));
}

/* Parked vCPUs: a delivery asks for a wake-up; deliveries count. */
TEST_F(fabric, parked_wake_and_deliveries)
{
    static struct geom g;
    struct fabric_direct *o, *w;
    struct ram r;
    uint8_t buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    uint64_t n;
    bool wake;

    ASSERT_EQ(0, mkdir(tmpdir, 0700));
    ASSERT_TRUE(ram_new(&r, RAM_SIZE));
    geom_reversed(&g, 64, 64, 8, 2, 4 * PG, 1);
    ASSERT_NE(NULL, o = owner_open(2, &r, &g));
    ASSERT_NE(NULL, w = dopen(1, 2));

    n = fabric_direct_deliveries(o);
    EXPECT_EQ(0, n);
    wake = true;
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 8, 1, 2, &wake));
    EXPECT_FALSE(wake);
    EXPECT_EQ(n + 1, fabric_direct_deliveries(o));

    fabric_direct_set_parked(o, true);
    for (uint64_t i = 2; i < 6; i++) {
        wake = false;
        ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 8, i, 2, &wake));
        EXPECT_TRUE(wake);
        EXPECT_EQ(n + i, fabric_direct_deliveries(o));
    }
    /* what is not delivered neither counts nor wakes */
    wake = true;
    EXPECT_EQ(FABRIC_DIRECT_REFUSED, put(w, 0, buf, 8, 9, 3, &wake));
    EXPECT_FALSE(wake);
    wake = true;
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(w, 0, buf, 8, 0, 2, &wake));
    EXPECT_FALSE(wake);
    /* the consumer took slot 0 only: after one lap, slot 1 is in use */
    free_slot(r.p, NULL, &g, 0);
    for (uint32_t s = 5; s < 65; s++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 8, 100 + s, 2, &wake));
    }
    wake = true;
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(w, 0, buf, 8, 9, 2, &wake));
    EXPECT_FALSE(wake);
    EXPECT_EQ(n + 65, fabric_direct_deliveries(o));

    fabric_direct_set_parked(o, false);
    free_slot(r.p, NULL, &g, 1);
    wake = true;
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(w, 0, buf, 8, 7, 2, &wake));
    EXPECT_FALSE(wake);
    EXPECT_EQ(n + 66, fabric_direct_deliveries(o));
    EXPECT_EQ(66, fabric_direct_queue(o, Q)->delivered);

    fabric_direct_close(w);
    fabric_direct_close(o);
    ram_free(&r);
    ASSERT_EQ(0, unlink_direct(2));
}

TEST_HARNESS_MAIN
