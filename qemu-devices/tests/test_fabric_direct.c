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
    uint32_t phase_flag;    /* non-zero: a PHASE ring (4-byte flags word) */
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
    g->phase_flag = 0;
    g->npages = (uint32_t)((uint64_t)slot_size * nslots / PG);
    for (uint32_t i = 0; i < g->npages; i++) {
        g->pages[i] = base + (uint64_t)(g->npages - 1 - i) * stride * PG;
    }
}

/* The same for a PHASE ring whose flags word is phase_flag in lap 0 */
static void geom_phase(struct geom *g, uint32_t slot_size, uint32_t nslots,
                       uint32_t status_off, uint32_t phase_flag,
                       uint32_t prot, uint64_t base, uint32_t stride)
{
    geom_reversed(g, slot_size, nslots, status_off, prot, base, stride);
    g->phase_flag = phase_flag;
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
    if (g->phase_flag) {
        return fabric_direct_export_phase(d, q, g->slot_size, g->nslots,
                                          g->status_off, g->phase_flag,
                                          g->prot, g->pages, g->npages);
    }
    return fabric_direct_export(d, q, g->slot_size, g->nslots, g->status_off,
                                g->prot, g->pages, g->npages);
}

/* Bytes of a slot's status (NONZERO) or flags word (PHASE) */
static size_t status_len(const struct geom *g)
{
    return g->phase_flag ? 4 : 8;
}

/* PHASE: the flags word of the message with free running index `wp` */
static uint32_t lap_flag(const struct geom *g, uint32_t wp)
{
    return (wp / g->nslots) & 1 ? 0 : g->phase_flag;
}

/* PHASE: the flags word of slot `slot` in the RAM */
static uint32_t flags_word(const uint8_t *ram, const struct geom *g,
                           uint32_t slot)
{
    return __atomic_load_n((const uint32_t *)(ram + ram_off(g, slot,
                                                            g->status_off)),
                           __ATOMIC_ACQUIRE);
}

/*
 * Writes a message into an image of the RAM, as a writer would: `status`
 * is the status word, of a PHASE ring the flags word.
 */
static void put_msg(uint8_t *img, const struct geom *g, uint32_t slot,
                    const void *payload, size_t len, uint64_t status)
{
    uint32_t flags = (uint32_t)status;

    memcpy(img + ram_off(g, slot, 0), payload, len);
    memcpy(img + ram_off(g, slot, g->status_off),
           g->phase_flag ? (void *)&flags : (void *)&status, status_len(g));
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

static void ram_new(struct __test_metadata *_metadata, struct ram *r,
                    size_t size)
{
    r->size = size;
    r->fd = memfd_create("ram", 0);
    ASSERT_LE(0, r->fd) TH_LOG("memfd_create: %s", strerror(errno));
    ASSERT_EQ(0, ftruncate(r->fd, size)) TH_LOG("%s", strerror(errno));
    r->p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    ASSERT_NE(MAP_FAILED, r->p) TH_LOG("mmap: %s", strerror(errno));
    r->img = malloc(size);
    ASSERT_NE(NULL, r->img);
    memset(r->p, CANARY, size);
    memcpy(r->img, r->p, size);
}

/*
 * Canaries everywhere, every status word of the ring zero (free), every
 * flags word of a PHASE ring zero (not the consumer's in lap 0).
 */
static void ram_reset(struct ram *r, const struct geom *g)
{
    memset(r->p, CANARY, r->size);
    for (uint32_t s = 0; s < g->nslots; s++) {
        memset(r->p + ram_off(g, s, g->status_off), 0, status_len(g));
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

/* RAM r, reset for ring g, becomes o's guest RAM: o goes live. */
static void publish(struct fabric_direct *o, struct ram *r,
                    const struct geom *g)
{
    ram_reset(r, g);
    fabric_direct_set_ram(o, r->fd, r->size);
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

#define PUT_HOPS 3

static enum fabric_direct_result put_q(struct fabric_direct *d, uint32_t dst,
                                       unsigned q, const void *payload,
                                       size_t len, uint64_t status,
                                       uint32_t prot, bool *wake)
{
    /* every write crossed PUT_HOPS links (the target's rx-hops) */
    const struct fabric_direct_msg m = {
        .payload = payload, .len = len, .status = status, .prot = prot,
        .hops = PUT_HOPS,
    };
    bool w;

    return fabric_direct_write(d, dst, q, &m, wake ? wake : &w);
}

/* into queue Q */
#define put(d, dst, ...) put_q(d, dst, Q, __VA_ARGS__)

/* A writer's counters */
static struct fabric_direct_stats stats(const struct fabric_direct *d)
{
    struct fabric_direct_stats st;

    fabric_direct_get_stats(d, &st);
    return st;
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

/* Reaps child pid: its exit code, 128 + the signal that ended it, or -1. */
static int exit_code(pid_t pid)
{
    int status;

    if (waitpid(pid, &status, 0) != pid) {
        note("waitpid(%d): %s", (int)pid, strerror(errno));
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Anonymous memory shared with the forked children, or NULL. */
static void *shared(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

static uint64_t ms_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/*
 * A case's nodes: node 0's guest RAM r (and b for its next incarnation),
 * its owner o with queue Q (dq) exported as ring g, a writer w as node 1.
 * A case declares its rig static (zeroed: each case runs in a process of
 * its own) and sets g before rig_open() exports it.
 */
struct rig {
    uint32_t nodes;
    struct ram r, b;
    struct geom g;
    struct fabric_direct *o, *w;
    struct fabric_direct_queue *dq;
};

/* What rig_open() sets up besides the directory and the RAMs */
#define RIG_OWNER   1u                  /* o, dq */
#define RIG_LIVE    (RIG_OWNER | 2u)    /* o with r published (reset for g) */
#define RIG_EXPORT  (RIG_LIVE | 4u)     /* ... and queue Q exported as g */
#define RIG_WRITER  8u                  /* w */

static void rig_open(struct __test_metadata *_metadata, struct rig *k,
                     uint32_t nodes, unsigned how)
{
    k->nodes = nodes;
    ASSERT_EQ(0, mkdir(tmpdir, 0700)) TH_LOG("%s: %s", tmpdir, strerror(errno));
    ram_new(_metadata, &k->r, RAM_SIZE);
    ram_new(_metadata, &k->b, RAM_SIZE);
    if (how & RIG_OWNER) {
        k->o = dopen(0, nodes);
        ASSERT_NE(NULL, k->o);
        k->dq = fabric_direct_queue(k->o, Q);
    }
    if ((how & RIG_LIVE) == RIG_LIVE) {
        publish(k->o, &k->r, &k->g);
    }
    if ((how & RIG_EXPORT) == RIG_EXPORT) {
        ASSERT_EQ(0, geom_export(k->o, Q, &k->g))
        TH_LOG("export of queue %u refused", Q);
    }
    if (how & RIG_WRITER) {
        k->w = dopen(1, nodes);
        ASSERT_NE(NULL, k->w);
    }
}

/* Closes the nodes: the directory must hold nothing of theirs. */
static void rig_close(struct __test_metadata *_metadata, struct rig *k)
{
    fabric_direct_close(k->w);
    fabric_direct_close(k->o);
    ram_free(&k->r);
    ram_free(&k->b);
    ASSERT_EQ(0, unlink_direct(k->nodes));
}

/*
 * Writer w puts `len` payload bytes from `seed` with `status` and ring g's
 * protection id into queue q of node 0; once that is done, the image of
 * RAM r holds the message in slot `slot` (free running) of g, with the
 * flags word of that lap when g is a PHASE ring (`status` is ignored).
 */
static enum fabric_direct_result deliver_q(struct rig *k, unsigned q,
                                           const struct geom *g,
                                           struct ram *r, uint32_t slot,
                                           size_t len, uint32_t seed,
                                           uint64_t status)
{
    enum fabric_direct_result res;
    uint8_t buf[PG];

    fill_payload(buf, len, seed);
    res = put_q(k->w, 0, q, buf, len, status, g->prot, NULL);
    if (res == FABRIC_DIRECT_DONE) {
        put_msg(r->img, g, slot, buf, len,
                g->phase_flag ? lap_flag(g, slot) : status);
    }
    return res;
}

/* into queue Q, ring g */
static enum fabric_direct_result deliver(struct rig *k, struct ram *r,
                                         uint32_t slot, size_t len,
                                         uint32_t seed, uint64_t status)
{
    return deliver_q(k, Q, &k->g, r, slot, len, seed, status);
}

/* ------------------------------------------------------------------ */

/*
 * One write through a reversed page list lands where the translation
 * says, and nowhere else; the next ones fill the next slots, across the
 * ring's pages.
 */
TEST_F(fabric, export_and_write)
{
    static struct rig k;
    uint8_t buf[56];
    bool wake = true;

    /* 4 pages, reversed, every other page: 64 KiB .. 120 KiB */
    geom_reversed(&k.g, 64, 256, 56, 0x77, 16 * PG, 2);
    ASSERT_EQ(4, k.g.npages);
    rig_open(_metadata, &k, 2, RIG_OWNER | RIG_WRITER);
    EXPECT_FALSE(fabric_direct_live(k.o));
    publish(k.o, &k.r, &k.g);
    EXPECT_TRUE(fabric_direct_live(k.o));
    ASSERT_EQ(0, geom_export(k.o, Q, &k.g));
    ASSERT_NE(NULL, k.dq);
    EXPECT_EQ(1, k.dq->valid);
    EXPECT_EQ(0, k.dq->wp);

    /* slot 0: the last page of the list, the highest address */
    fill_payload(buf, 40, 1);
    ASSERT_EQ(FABRIC_DIRECT_DONE,
              put(k.w, 0, buf, 40, 0x1122334455667788ull, 0x77, &wake));
    EXPECT_FALSE(wake);
    put_msg(k.r.img, &k.g, 0, buf, 40, 0x1122334455667788ull);
    EXPECT_EQ(22 * PG, ram_off(&k.g, 0, 0));
    EXPECT_EQ(0, memcmp(k.r.p + 22 * PG, buf, 40));
    EXPECT_EQ(0x1122334455667788ull, *(uint64_t *)(k.r.p + 22 * PG + 56));
    /* the bytes between payload and status are not the writer's */
    EXPECT_EQ(CANARY, k.r.p[22 * PG + 40]);
    EXPECT_EQ(CANARY, k.r.p[22 * PG + 55]);
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(1, k.dq->wp);
    EXPECT_EQ(1, k.dq->delivered);
    EXPECT_EQ(1, fabric_direct_deliveries(k.o));

    /* the next slots, into the second page of the list (one below) */
    for (uint32_t s = 1; s < 70; s++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  deliver(&k, &k.r, s, 1 + s % 56, s + 1, s + 1));
    }
    EXPECT_EQ(20 * PG + 5 * 64, ram_off(&k.g, 69, 0));
    EXPECT_EQ(70, *(uint64_t *)(k.r.p + 20 * PG + 5 * 64 + 56));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(70, k.dq->wp);
    EXPECT_EQ(70, k.dq->delivered);
    EXPECT_EQ(70, fabric_direct_deliveries(k.o));
    EXPECT_EQ(70, fabric_direct_rx_hops(k.o, PUT_HOPS));
    EXPECT_EQ(0, fabric_direct_rx_hops(k.o, 0));
    EXPECT_EQ(0, k.dq->refused);
    EXPECT_EQ(0, k.dq->full);
    EXPECT_EQ(70, stats(k.w).tx_direct);
    EXPECT_EQ(1, stats(k.w).peer_maps);
    EXPECT_EQ(0, stats(k.w).tx_no_path + stats(k.w).tx_full +
                 stats(k.w).tx_refused);
    rig_close(_metadata, &k);
}

#include "test_fabric_direct-rings.h"

/* A wrong protection id writes nothing and is counted; set_prot moves it. */
TEST_F(fabric, protection_id)
{
    static struct rig k;
    uint8_t buf[32];

    geom_reversed(&k.g, 64, 64, 32, 0x1234, 4 * PG, 1);
    rig_open(_metadata, &k, 2, RIG_EXPORT | RIG_WRITER);
    fill_payload(buf, sizeof(buf), 7);
    EXPECT_EQ(FABRIC_DIRECT_REFUSED, put(k.w, 0, buf, 32, 1, 0x1235, NULL));
    EXPECT_EQ(FABRIC_DIRECT_REFUSED, put(k.w, 0, buf, 32, 1, 0, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(2, k.dq->refused);
    EXPECT_EQ(0, k.dq->wp);
    EXPECT_EQ(0, k.dq->delivered);
    EXPECT_EQ(0, fabric_direct_deliveries(k.o));

    k.g.prot = 0x4321;
    fabric_direct_set_prot(k.o, Q, k.g.prot);
    EXPECT_EQ(0x4321, k.dq->prot);
    EXPECT_EQ(FABRIC_DIRECT_REFUSED, put(k.w, 0, buf, 32, 1, 0x1234, NULL));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(3, k.dq->refused);
    ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, 0, 32, 7, 1));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(1, k.dq->wp);
    EXPECT_EQ(3, k.dq->refused);
    EXPECT_EQ(3, stats(k.w).tx_refused);
    EXPECT_EQ(1, stats(k.w).tx_direct);
    rig_close(_metadata, &k);
}

/* After fabric_direct_invalidate() nothing is written; a re-export works. */
TEST_F(fabric, invalidate_stops_writes)
{
    static struct rig k;
    uint64_t gen;

    geom_reversed(&k.g, 128, 64, 120, 9, 32 * PG, 2);
    rig_open(_metadata, &k, 2, RIG_EXPORT | RIG_WRITER);
    for (uint32_t s = 0; s < 3; s++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, s, 48, s, s + 1));
    }
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_TRUE(fabric_direct_exporting(k.o));
    EXPECT_FALSE(fabric_direct_exporting(k.w));

    gen = k.dq->generation;
    fabric_direct_invalidate(k.o, Q);
    EXPECT_FALSE(fabric_direct_exporting(k.o));
    EXPECT_EQ(0, k.dq->valid);
    EXPECT_EQ(gen + 1, k.dq->generation);
    EXPECT_EQ(0, k.dq->lock);
    /* free slots, right protection: only the invalidation stops these */
    for (uint32_t s = 3; s < 64 + 3; s++) {
        EXPECT_EQ(FABRIC_DIRECT_NO_PATH, deliver(&k, &k.r, s, 48, 2, s + 1));
    }
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(3, k.dq->wp);
    EXPECT_EQ(3, k.dq->delivered);
    EXPECT_EQ(3, fabric_direct_deliveries(k.o));
    EXPECT_EQ(64, stats(k.w).tx_no_path);
    /* the peer keeps its mapping: the queue record alone said no */
    EXPECT_EQ(1, stats(k.w).peer_maps);

    /* a new export (the consumer reset the ring): wp starts again */
    ram_reset(&k.r, &k.g);
    ASSERT_EQ(0, geom_export(k.o, Q, &k.g));
    EXPECT_TRUE(fabric_direct_exporting(k.o));
    EXPECT_EQ(gen + 2, k.dq->generation);
    ASSERT_EQ(FABRIC_DIRECT_DONE, deliver(&k, &k.r, 0, 48, 2, 77));
    EXPECT_EQ(-1, ram_diff(&k.r));
    EXPECT_EQ(1, k.dq->wp);
    rig_close(_metadata, &k);
}

/*
 * While the owner holds a queue, every peer's write gets NO_PATH and
 * writes nothing, whatever else it would have met, while the owner's own
 * writes go on; released, peers' writes go on.  A NONZERO queue (Q) and a
 * PHASE queue (Q + 1), each held alone.
 */
TEST_F(fabric, hold_refuses_writes)
{
    static struct rig k;
    static struct geom h;
    const struct geom *rings[] = { &k.g, &h };  /* queue Q + index */
    uint8_t buf[32];
    uint64_t no_path = 0, n = 0;

    geom_reversed(&k.g, 128, 64, 120, 0x21, 8 * PG, 2);
    geom_phase(&h, 128, 64, 124, 1, 0x22, 40 * PG, 1);
    rig_open(_metadata, &k, 2, RIG_EXPORT | RIG_WRITER);
    ASSERT_EQ(0, geom_export(k.o, Q + 1, &h));
    for (unsigned i = 0; i < 2; i++) {
        const struct geom *g = rings[i], *og = rings[!i];
        unsigned q = Q + i, oq = Q + !i;
        struct fabric_direct_queue *dq = fabric_direct_queue(k.o, q);
        struct fabric_direct_queue *odq = fabric_direct_queue(k.o, oq);
        uint32_t wp = dq->wp, owp = odq->wp;

        TH_LOG("queue %u, %s", q, g->phase_flag ? "PHASE" : "NONZERO");
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  deliver_q(&k, q, g, &k.r, wp, 32, 10 * i, 5));
        n++;
        fabric_direct_set_hold(k.o, q, true);
        EXPECT_EQ(1, dq->hold);
        EXPECT_EQ(0, dq->lock);
        for (int j = 0; j < 3; j++) {
            EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
                      deliver_q(&k, q, g, &k.r, wp + 1, 32, 10 * i + 1, 5));
        }
        /* nor does a wrong protection id get further (nor is counted) */
        fill_payload(buf, sizeof(buf), 77);
        EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
                  put_q(k.w, 0, q, buf, sizeof(buf), 5, g->prot + 1, NULL));
        no_path += 4;
        EXPECT_EQ(-1, ram_diff(&k.r));
        EXPECT_EQ(wp + 1, dq->wp);
        EXPECT_EQ(wp + 1, dq->delivered);
        EXPECT_EQ(0, dq->refused);
        EXPECT_EQ(0, dq->full);
        EXPECT_EQ(n, fabric_direct_deliveries(k.o));
        EXPECT_EQ(no_path, stats(k.w).tx_no_path);
        /* the owner's own write is not held */
        fill_payload(buf, sizeof(buf), 30 + i);
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  put_q(k.o, 0, q, buf, sizeof(buf), 8, g->prot, NULL));
        put_msg(k.r.img, g, wp + 1, buf, sizeof(buf),
                g->phase_flag ? lap_flag(g, wp + 1) : 8);
        n++;
        EXPECT_EQ(-1, ram_diff(&k.r));
        EXPECT_EQ(wp + 2, dq->wp);
        EXPECT_EQ(1, dq->hold);
        /* the other queue is not held */
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  deliver_q(&k, oq, og, &k.r, owp, 16, 20 + i, 6));
        n++;
        EXPECT_EQ(owp + 1, odq->wp);
        EXPECT_EQ(-1, ram_diff(&k.r));

        fabric_direct_set_hold(k.o, q, false);
        EXPECT_EQ(0, dq->hold);
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  deliver_q(&k, q, g, &k.r, wp + 2, 32, 10 * i + 1, 5));
        n++;
        EXPECT_EQ(-1, ram_diff(&k.r));
        EXPECT_EQ(wp + 3, dq->wp);
        EXPECT_EQ(wp + 3, dq->delivered);
        EXPECT_EQ(n, fabric_direct_deliveries(k.o));
        EXPECT_EQ(0, dq->lock);
    }
    EXPECT_EQ(4, k.dq->wp);
    EXPECT_EQ(4, fabric_direct_queue(k.o, Q + 1)->wp);
    EXPECT_EQ(1, flags_word(k.r.p, &h, 3));
    EXPECT_EQ(8, n);
    EXPECT_EQ(6, stats(k.w).tx_direct);
    EXPECT_EQ(8, stats(k.w).tx_no_path);
    /* the owner's own deliveries are not writes into peers */
    EXPECT_EQ(0, stats(k.o).tx_direct);
    EXPECT_EQ(0, stats(k.o).tx_no_path);
    rig_close(_metadata, &k);
}

#include "test_fabric_direct-owner.h"

#include "test_fabric_direct-writers.h"

#include "test_fabric_direct-args.h"

/* Parked vCPUs: a delivery asks for a wake-up; deliveries count. */
TEST_F(fabric, parked_wake_and_deliveries)
{
    static struct rig k;
    uint8_t buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    uint64_t n;
    bool wake;

    geom_reversed(&k.g, 64, 64, 8, 2, 4 * PG, 1);
    rig_open(_metadata, &k, 2, RIG_EXPORT | RIG_WRITER);
    n = fabric_direct_deliveries(k.o);
    EXPECT_EQ(0, n);
    wake = true;
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(k.w, 0, buf, 8, 1, 2, &wake));
    EXPECT_FALSE(wake);
    EXPECT_EQ(n + 1, fabric_direct_deliveries(k.o));

    fabric_direct_set_parked(k.o, true);
    for (uint64_t i = 2; i < 6; i++) {
        wake = false;
        ASSERT_EQ(FABRIC_DIRECT_DONE, put(k.w, 0, buf, 8, i, 2, &wake));
        EXPECT_TRUE(wake);
        EXPECT_EQ(n + i, fabric_direct_deliveries(k.o));
    }
    /* what is not delivered neither counts nor wakes */
    wake = true;
    EXPECT_EQ(FABRIC_DIRECT_REFUSED, put(k.w, 0, buf, 8, 9, 3, &wake));
    EXPECT_FALSE(wake);
    wake = true;
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, put(k.w, 0, buf, 8, 0, 2, &wake));
    EXPECT_FALSE(wake);
    /* the consumer took slot 0 only: after one lap, slot 1 is in use */
    free_slot(k.r.p, NULL, &k.g, 0);
    for (uint32_t s = 5; s < 65; s++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE, put(k.w, 0, buf, 8, 100 + s, 2, &wake));
    }
    wake = true;
    EXPECT_EQ(FABRIC_DIRECT_FULL, put(k.w, 0, buf, 8, 9, 2, &wake));
    EXPECT_FALSE(wake);
    EXPECT_EQ(n + 65, fabric_direct_deliveries(k.o));

    fabric_direct_set_parked(k.o, false);
    free_slot(k.r.p, NULL, &k.g, 1);
    wake = true;
    ASSERT_EQ(FABRIC_DIRECT_DONE, put(k.w, 0, buf, 8, 7, 2, &wake));
    EXPECT_FALSE(wake);
    EXPECT_EQ(n + 66, fabric_direct_deliveries(k.o));
    EXPECT_EQ(66, k.dq->delivered);
    rig_close(_metadata, &k);
}

TEST_HARNESS_MAIN
