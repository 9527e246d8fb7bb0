// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of region access through the translation cache a node
 * exports (qemu-devices/common/fabric-direct-xlat.c): fills, lookups,
 * pieces, the fence and its wait for accesses in progress (also of a peer
 * killed inside one), and a new incarnation.  Guest RAM is a memfd of
 * this process; peers live here or in forked processes.
 */
#include "fabric_fixture.h"
#include "fabric-direct.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#define PG          FABRIC_DIRECT_PAGE
#define RAM_SIZE    (64u * PG)
#define CANARY      0x5a
#define OWNER       7
#define PROT        0x1234
#define RW          (FABRIC_DIRECT_X_READ | FABRIC_DIRECT_X_WRITE)

struct rig {
    int fd;
    uint8_t *ram;
    struct fabric_direct *o, *w;    /* node 0 (target), node 1 (accessor) */
};

static struct fabric_direct *dopen(uint32_t node)
{
    struct fabric_direct *d;
    char err[256] = "";

    if (fabric_direct_open(&d, tmpdir, node, 2, err, sizeof(err))) {
        diag("fabric_direct_open(%u): %s", node, err);
        return NULL;
    }
    return d;
}

static void rig_open(struct __test_metadata *_metadata, struct rig *k)
{
    ASSERT_EQ(0, mkdir(tmpdir, 0700)) TH_LOG("%s: %s", tmpdir, strerror(errno));
    k->fd = memfd_create("ram", 0);
    ASSERT_LE(0, k->fd) TH_LOG("memfd_create: %s", strerror(errno));
    ASSERT_EQ(0, ftruncate(k->fd, RAM_SIZE)) TH_LOG("%s", strerror(errno));
    k->ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd,
                  0);
    ASSERT_NE(MAP_FAILED, k->ram) TH_LOG("mmap: %s", strerror(errno));
    memset(k->ram, CANARY, RAM_SIZE);
    k->o = dopen(0);
    ASSERT_NE(NULL, k->o);
    k->w = dopen(1);
    ASSERT_NE(NULL, k->w);
    fabric_direct_set_ram(k->o, k->fd, RAM_SIZE);
}

/* Closes both nodes: each leaves its state file, which goes too. */
static void rig_close(struct __test_metadata *_metadata, struct rig *k)
{
    char path[160];

    fabric_direct_close(k->w);
    fabric_direct_close(k->o);
    munmap(k->ram, RAM_SIZE);
    close(k->fd);
    for (int n = 0; n < 2; n++) {
        snprintf(path, sizeof(path), "%s/direct-%d", tmpdir, n);
        ASSERT_EQ(0, unlink(path)) TH_LOG("%s: %s", path, strerror(errno));
    }
}

/* What an access did: its pieces, and the bytes written from src */
struct pieces {
    unsigned n;
    uint32_t off[16], len[16];
    uint8_t *host[16];
    const uint8_t *src;     /* write these (NULL: read into dst) */
    uint8_t *dst;
    useconds_t linger;      /* sleep inside the access */
    int *inside;            /* set once inside (shared with the parent) */
};

static void piece(void *opaque, uint8_t *host, uint32_t off, uint32_t len)
{
    struct pieces *p = opaque;

    if (p->inside) {
        __atomic_store_n(p->inside, 1, __ATOMIC_SEQ_CST);
    }
    if (p->linger) {
        usleep(p->linger);
    }
    if (p->n < 16) {
        p->off[p->n] = off;
        p->len[p->n] = len;
        p->host[p->n] = host;
    }
    p->n++;
    if (p->src) {
        memcpy(host, p->src + off, len);
    } else if (p->dst) {
        memcpy(p->dst + off, host, len);
    }
}

/* NI pages 100.. map to RAM pages: 100->5, 101->6 (adjacent), 102->20 */
static void fill_three(struct rig *k, unsigned perm)
{
    fabric_direct_xlat_fill(k->o, 100, 5 * PG, OWNER, perm, PROT);
    fabric_direct_xlat_fill(k->o, 101, 6 * PG, OWNER, perm, PROT);
    fabric_direct_xlat_fill(k->o, 102, 20 * PG, OWNER, perm, PROT);
}

static enum fabric_direct_result acc(struct rig *k, uint64_t addr,
                                     uint32_t len, unsigned owner,
                                     unsigned perm, uint32_t prot,
                                     struct pieces *p)
{
    return fabric_direct_access(k->w, 0, addr, len, owner, perm, prot, piece,
                                p);
}

/* Bytes land where the cache says, adjacent RAM pages in one piece */
TEST_F(fabric, xlat_write_lands_through_the_cache)
{
    static struct rig k;
    static uint8_t src[3 * PG];
    struct pieces p = { .src = src };
    uint64_t addr = 100 * PG + 100;
    uint32_t len = 2 * PG + 50;

    rig_open(_metadata, &k);
    for (size_t i = 0; i < sizeof(src); i++) {
        src[i] = (uint8_t)(i * 13 + 1);
    }
    fill_three(&k, RW);
    EXPECT_TRUE(fabric_direct_xlat_cached(k.o, 101));
    EXPECT_FALSE(fabric_direct_xlat_cached(k.o, 103));
    ASSERT_EQ(FABRIC_DIRECT_DONE, acc(&k, addr, len, OWNER,
                                      FABRIC_DIRECT_X_WRITE, PROT, &p));
    ASSERT_EQ(2, p.n);
    EXPECT_EQ(0, p.off[0]);
    EXPECT_EQ(2 * PG - 100, p.len[0]);
    EXPECT_EQ(2 * PG - 100, p.off[1]);
    EXPECT_EQ(150, p.len[1]);
    EXPECT_EQ(0, memcmp(k.ram + 5 * PG + 100, src, 2 * PG - 100));
    EXPECT_EQ(0, memcmp(k.ram + 20 * PG, src + 2 * PG - 100, 150));
    /* around it: canaries */
    EXPECT_EQ(CANARY, k.ram[5 * PG + 99]);
    EXPECT_EQ(CANARY, k.ram[20 * PG + 150]);
    EXPECT_EQ(CANARY, k.ram[7 * PG]);
    rig_close(_metadata, &k);
}

/* Anything not cached exactly so: nothing touched, NO_PATH */
TEST_F(fabric, xlat_miss_touches_nothing)
{
    static struct rig k;
    static uint8_t src[4 * PG];
    struct pieces p = { .src = src };
    struct fabric_direct_xlat_stats st;

    rig_open(_metadata, &k);
    fill_three(&k, FABRIC_DIRECT_X_READ);
    /* the last page not cached */
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, acc(&k, 101 * PG, 3 * PG, OWNER,
                                         FABRIC_DIRECT_X_READ, PROT, &p));
    /* not writable, another owner, another protection id */
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, acc(&k, 100 * PG, 8, OWNER,
                                         FABRIC_DIRECT_X_WRITE, PROT, &p));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, acc(&k, 100 * PG, 8, OWNER + 1,
                                         FABRIC_DIRECT_X_READ, PROT, &p));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, acc(&k, 100 * PG, 8, OWNER,
                                         FABRIC_DIRECT_X_READ, PROT + 1, &p));
    /* wrapping around the address space */
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, acc(&k, UINT64_MAX - 4, 8, OWNER,
                                         FABRIC_DIRECT_X_READ, PROT, &p));
    EXPECT_EQ(0, p.n);
    for (size_t i = 0; i < RAM_SIZE; i++) {
        ASSERT_EQ(CANARY, k.ram[i]);
    }
    fabric_direct_get_xlat_stats(k.w, &st);
    EXPECT_EQ(5, st.access_miss);
    EXPECT_EQ(0, st.access);
    /* a read with the right permission works */
    p.src = NULL;
    p.dst = src;
    EXPECT_EQ(FABRIC_DIRECT_DONE, acc(&k, 100 * PG, 16, OWNER,
                                      FABRIC_DIRECT_X_READ, PROT, &p));
    EXPECT_EQ(CANARY, src[15]);
    rig_close(_metadata, &k);
}

/* A fence forgets every entry; an idle fence is free */
TEST_F(fabric, xlat_fence_forgets)
{
    static struct rig k;
    struct pieces p = { 0 };
    struct fabric_direct_xlat_stats st;

    rig_open(_metadata, &k);
    fabric_direct_xlat_fence(k.o);
    fill_three(&k, RW);
    ASSERT_EQ(FABRIC_DIRECT_DONE, acc(&k, 100 * PG, 8, OWNER, RW, PROT, &p));
    fabric_direct_xlat_fence(k.o);
    fabric_direct_xlat_fence(k.o);
    EXPECT_FALSE(fabric_direct_xlat_cached(k.o, 100));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, acc(&k, 100 * PG, 8, OWNER, RW, PROT,
                                         &p));
    fabric_direct_get_xlat_stats(k.o, &st);
    EXPECT_EQ(1, st.fences);
    EXPECT_EQ(3, st.fills);
    /* filled again: usable again */
    fabric_direct_xlat_fill(k.o, 100, 9 * PG, OWNER, RW, PROT);
    p.src = (const uint8_t *)"fresh";
    ASSERT_EQ(FABRIC_DIRECT_DONE, acc(&k, 100 * PG, 5, OWNER, RW, PROT, &p));
    EXPECT_EQ(0, memcmp(k.ram + 9 * PG, "fresh", 5));
    EXPECT_EQ(CANARY, k.ram[5 * PG]);
    rig_close(_metadata, &k);
}

/* A forked accessor (node 1) inside an access of linger_us, or stuck */
static pid_t accessor(struct rig *k, int *inside, useconds_t linger)
{
    pid_t parent = getpid(), pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        static uint8_t src[PG];
        struct pieces p = { .src = src, .linger = linger, .inside = inside };

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(100);
        }
        memset(src, 0xee, sizeof(src));
        k->w = dopen(1);    /* as a QEMU of its own: its pid in the record */
        if (!k->w) {
            _exit(2);
        }
        _exit(acc(k, 100 * PG, PG, OWNER, RW, PROT, &p) ==
              FABRIC_DIRECT_DONE ? 0 : 1);
    }
    return pid;
}

static uint64_t us_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The fence returns only after an access of the old epoch ended */
TEST_F(fabric, xlat_fence_waits_for_an_access)
{
    static struct rig k;
    int *inside = mmap(NULL, PG, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct fabric_direct_xlat_stats st;
    uint64_t t0;
    int status;
    pid_t pid;

    ASSERT_NE(MAP_FAILED, (void *)inside);
    rig_open(_metadata, &k);
    fill_three(&k, RW);
    pid = accessor(&k, inside, 300 * 1000);
    ASSERT_GT(pid, 0);
    while (!__atomic_load_n(inside, __ATOMIC_SEQ_CST)) {
        usleep(1000);
    }
    t0 = us_now();
    fabric_direct_xlat_fence(k.o);
    /* the accessor wrote its page before the fence returned */
    EXPECT_EQ(0xee, k.ram[5 * PG + PG - 1]);
    EXPECT_GE(us_now() - t0, 100 * 1000);
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_EQ(0, WEXITSTATUS(status));
    fabric_direct_get_xlat_stats(k.o, &st);
    EXPECT_EQ(1, st.fence_waits);
    rig_close(_metadata, &k);
}

/* An accessor killed inside its access does not hold the fence forever */
TEST_F(fabric, xlat_fence_survives_a_killed_accessor)
{
    static struct rig k;
    int *inside = mmap(NULL, PG, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int status;
    pid_t pid;

    ASSERT_NE(MAP_FAILED, (void *)inside);
    rig_open(_metadata, &k);
    fill_three(&k, RW);
    pid = accessor(&k, inside, 3600u * 1000 * 1000);
    ASSERT_GT(pid, 0);
    while (!__atomic_load_n(inside, __ATOMIC_SEQ_CST)) {
        usleep(1000);
    }
    kill(pid, SIGKILL);
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    fabric_direct_xlat_fence(k.o);
    EXPECT_FALSE(fabric_direct_xlat_cached(k.o, 100));
    rig_close(_metadata, &k);
}

/* A new owner of the node (restart) inherits no entry */
TEST_F(fabric, xlat_new_incarnation_starts_empty)
{
    static struct rig k;
    struct pieces p = { 0 };

    rig_open(_metadata, &k);
    fill_three(&k, RW);
    ASSERT_EQ(FABRIC_DIRECT_DONE, acc(&k, 100 * PG, 8, OWNER, RW, PROT, &p));
    fabric_direct_close(k.o);
    k.o = dopen(0);
    ASSERT_NE(NULL, k.o);
    fabric_direct_set_ram(k.o, k.fd, RAM_SIZE);
    EXPECT_FALSE(fabric_direct_xlat_cached(k.o, 100));
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, acc(&k, 100 * PG, 8, OWNER, RW, PROT,
                                         &p));
    rig_close(_metadata, &k);
}

/* fabric_direct_ready(): valid, not held, protection id, room */
TEST_F(fabric, xlat_queue_ready)
{
    static struct rig k;
    uint64_t pages[1] = { 30 * PG };
    const struct fabric_direct_msg m = {
        .payload = "w0w0w0w0", .len = 8, .status = 1, .prot = PROT,
    };
    bool wake;

    rig_open(_metadata, &k);
    memset(k.ram + 30 * PG, 0, PG);
    EXPECT_FALSE(fabric_direct_ready(k.w, 0, 70, PROT, false));
    ASSERT_EQ(0, fabric_direct_export(k.o, 70, 16, 256, 8, PROT, pages, 1));
    EXPECT_TRUE(fabric_direct_ready(k.w, 0, 70, PROT, true));
    EXPECT_FALSE(fabric_direct_ready(k.w, 0, 70, PROT + 1, false));
    fabric_direct_set_hold(k.o, 70, true);
    EXPECT_FALSE(fabric_direct_ready(k.w, 0, 70, PROT, false));
    EXPECT_TRUE(fabric_direct_ready(k.o, 0, 70, PROT, false));
    fabric_direct_set_hold(k.o, 70, false);
    for (int i = 0; i < 256; i++) {
        ASSERT_EQ(FABRIC_DIRECT_DONE,
                  fabric_direct_write(k.w, 0, 70, &m, &wake));
    }
    EXPECT_FALSE(fabric_direct_ready(k.w, 0, 70, PROT, true));
    EXPECT_TRUE(fabric_direct_ready(k.w, 0, 70, PROT, false));
    EXPECT_TRUE(fabric_direct_exporting(k.o));
    fabric_direct_invalidate(k.o, 70);
    EXPECT_FALSE(fabric_direct_exporting(k.o));
    EXPECT_FALSE(fabric_direct_ready(k.w, 0, 70, PROT, false));
    rig_close(_metadata, &k);
}

/*
 * Keys of any size fold into slots: a key far above the slot count is
 * cached; a second key of the same slot in the same epoch is not (the
 * first stays, readers of the epoch may use it), and takes it after a
 * fence.
 */
TEST_F(fabric, xlat_wide_keys_and_slot_clashes)
{
    static struct rig k;
    /* rank 3's VA 0x7f0000001000, as ExaNet keys it */
    const uint64_t key = ((3ull << 48) | 0x7f0000001000ull) / PG;
    /* the same slot: the fold XORs key >> 22 and key >> 44 in */
    const uint64_t clash = key ^ (1ull << 22) ^ 1;
    struct pieces p = { 0 };
    struct fabric_direct_xlat_stats st;
    uint8_t byte = 0x77;

    rig_open(_metadata, &k);
    EXPECT_FALSE(fabric_direct_xlat_cached(k.o, key));
    fabric_direct_xlat_fill(k.o, key, 9 * PG, OWNER, RW, PROT);
    EXPECT_TRUE(fabric_direct_xlat_cached(k.o, key));
    EXPECT_FALSE(fabric_direct_xlat_cached(k.o, key + 1));
    fabric_direct_xlat_fill(k.o, clash, 10 * PG, OWNER, RW, PROT);
    fabric_direct_get_xlat_stats(k.o, &st);
    EXPECT_EQ(1, st.fill_clashes);
    EXPECT_TRUE(fabric_direct_xlat_cached(k.o, key));
    EXPECT_FALSE(fabric_direct_xlat_cached(k.o, clash));
    p.src = &byte;
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH, acc(&k, clash * PG, 1, OWNER, RW, PROT,
                                         &p));
    ASSERT_EQ(FABRIC_DIRECT_DONE, acc(&k, key * PG + 5, 1, OWNER,
                                      FABRIC_DIRECT_X_WRITE, PROT, &p));
    EXPECT_EQ(0x77, k.ram[9 * PG + 5]);
    EXPECT_TRUE(fabric_direct_xlat_fence(k.o));
    fabric_direct_xlat_fill(k.o, clash, 10 * PG, OWNER, RW, PROT);
    EXPECT_TRUE(fabric_direct_xlat_cached(k.o, clash));
    EXPECT_FALSE(fabric_direct_xlat_cached(k.o, key));
    ASSERT_EQ(FABRIC_DIRECT_DONE, acc(&k, clash * PG, 1, OWNER,
                                      FABRIC_DIRECT_X_WRITE, PROT, &p));
    EXPECT_EQ(0x77, k.ram[10 * PG]);
    EXPECT_EQ(CANARY, k.ram[9 * PG]);
    rig_close(_metadata, &k);
}

struct gated {
    struct rig *k;
    bool ok;
    int runs;
    bool lock_held;     /* the gate's lock was ours inside */
};

static bool gated_fn(void *opaque)
{
    struct gated *g = opaque;
    struct fabric_direct_queue *dq = fabric_direct_queue(g->k->o, 71);

    g->runs++;
    g->lock_held = __atomic_load_n(&dq->lock, __ATOMIC_ACQUIRE) == getpid();
    return g->ok;
}

/*
 * A gate: writers run under its lock while it is valid, not held and of
 * their protection id; a refusal is counted; what fn did moves the
 * target's deliveries on.  Model counters add up at the target.
 */
TEST_F(fabric, xlat_gate_and_model_counters)
{
    static struct rig k;
    struct gated g = { .k = &k, .ok = true };
    uint64_t seen;
    bool wake;

    rig_open(_metadata, &k);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
              fabric_direct_gated(k.w, 0, 71, PROT, 1, gated_fn, &g, &wake));
    EXPECT_EQ(0, g.runs);
    ASSERT_EQ(0, fabric_direct_export_gate(k.o, 71, PROT));
    EXPECT_FALSE(fabric_direct_exporting(k.o));     /* nothing to poll */
    seen = fabric_direct_deliveries(k.o);
    EXPECT_EQ(FABRIC_DIRECT_DONE,
              fabric_direct_gated(k.w, 0, 71, PROT, 1, gated_fn, &g, &wake));
    EXPECT_EQ(1, g.runs);
    EXPECT_TRUE(g.lock_held);
    EXPECT_EQ(seen + 1, fabric_direct_deliveries(k.o));
    EXPECT_EQ(1, fabric_direct_rx_hops(k.o, 1));
    EXPECT_EQ(FABRIC_DIRECT_REFUSED,
              fabric_direct_gated(k.w, 0, 71, PROT + 1, 1, gated_fn, &g,
                                  &wake));
    EXPECT_EQ(1, fabric_direct_queue(k.o, 71)->refused);
    fabric_direct_set_hold(k.o, 71, true);
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
              fabric_direct_gated(k.w, 0, 71, PROT, 1, gated_fn, &g, &wake));
    fabric_direct_set_hold(k.o, 71, false);
    g.ok = false;
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
              fabric_direct_gated(k.w, 0, 71, PROT, 1, gated_fn, &g, &wake));
    EXPECT_EQ(2, g.runs);
    EXPECT_EQ(seen + 1, fabric_direct_deliveries(k.o));
    /* a gate holds no ring: a message write is not taken */
    {
        const struct fabric_direct_msg m = {
            .payload = "x", .len = 1, .status = 1, .prot = PROT,
        };
        EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
                  fabric_direct_write(k.w, 0, 71, &m, &wake));
    }
    fabric_direct_invalidate(k.o, 71);
    g.ok = true;
    EXPECT_EQ(FABRIC_DIRECT_NO_PATH,
              fabric_direct_gated(k.w, 0, 71, PROT, 1, gated_fn, &g, &wake));
    EXPECT_EQ(2, g.runs);
    fabric_direct_count(k.w, 0, 3, 5);
    fabric_direct_count(k.w, 0, 3, 2);
    fabric_direct_count(k.w, 0, FABRIC_DIRECT_MODEL_COUNTERS, 9);
    EXPECT_EQ(7, fabric_direct_counter(k.o, 3));
    EXPECT_EQ(0, fabric_direct_counter(k.o, 2));
    rig_close(_metadata, &k);
}

/* A copy between one's spans and a peer's pieces, across span ends */
TEST_F(fabric, xlat_spans_move)
{
    uint8_t a[5] = "abcde", b[3] = "fgh", out[8] = { 0 }, in[8] = "12345678";
    struct fabric_direct_spans s = { 0 };

    fabric_direct_spans_add(&s, a, 0, 5);
    fabric_direct_spans_add(&s, b, 5, 3);
    fabric_direct_spans_move(&s, out, 3, false);
    fabric_direct_spans_move(&s, out + 3, 5, false);
    EXPECT_EQ(0, memcmp(out, "abcdefgh", 8));
    s.cur = 0;
    s.cur_off = 0;
    fabric_direct_spans_move(&s, in, 8, true);
    EXPECT_EQ(0, memcmp(a, "12345", 5));
    EXPECT_EQ(0, memcmp(b, "678", 3));
    fabric_direct_spans_free(&s);
    EXPECT_EQ(0, s.n);
}

TEST_HARNESS_MAIN
