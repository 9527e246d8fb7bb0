/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The 3D torus of the fabric, see fabric-torus.h and Documentation/fabric.md.
 */
#include "fabric-torus.h"
#include "fabric.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LINKS_MAGIC 0x534b4e494c584558ull /* "EXLINKS" */
#define LINKS_VERSION 1
#define LINKS_HDR_SIZE 4096
/* How long a node's liveness (its QEMU process) is taken as known. */
#define ALIVE_TTL_NS 10000000ull

struct links_hdr {
    uint64_t magic;
    uint32_t version;
    uint32_t num_nodes;
    uint32_t dims[3];
};

struct node_rec {     /* 64 bytes */
    uint32_t pid;     /* its QEMU process */
    uint32_t running; /* cleared when the node closes the fabric */
    uint8_t pad[56];
};

struct link_rec {      /* 128 bytes: one port of one node */
    uint32_t admin_up; /* the owner's end is not set down */
    uint32_t mbps;     /* 0: unlimited */
    uint32_t ns;
    uint32_t drop_ppm;
    uint32_t corrupt_ppm;
    uint32_t pad0;
    uint64_t busy_until; /* CLOCK_MONOTONIC ns the cable is reserved to */
    uint64_t cnt[EXA_NUM_PORT_COUNTERS];
    uint8_t pad1[128 - 32 - 8 * EXA_NUM_PORT_COUNTERS];
};

_Static_assert(sizeof(struct link_rec) == 128, "link record size");
_Static_assert(sizeof(struct node_rec) == 64, "node record size");

struct fabric_torus {
    uint32_t node, n, dims[3];
    struct links_hdr *hdr;
    struct node_rec *nodes;
    struct link_rec *links;
    size_t maplen;
    uint64_t *alive_at; /* when nodes[i] was last seen alive */
    uint64_t rng;
    char path[4096];
    ino_t ino;
    uint32_t route[FABRIC_MAX_ROUTE]; /* link indices, scratch */
};

static const char *const port_names[EXA_NUM_PORTS] = {EXA_PORT_NAMES_INIT};

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void set_msg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_msg(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int fabric_port_parse(const char *name)
{
    for (int p = 0; p < EXA_NUM_PORTS; p++) {
        if (name && !strcmp(name, port_names[p])) {
            return p;
        }
    }
    return -1;
}

const char *fabric_port_name(unsigned port)
{
    return port < EXA_NUM_PORTS ? port_names[port] : "?";
}

int fabric_torus_parse(const char *shape, uint32_t num_nodes, uint32_t dims[3],
                       char *err, size_t errlen)
{
    const char *s = shape;
    uint64_t prod = 1;

    for (int d = 0; d < 3; d++) {
        unsigned long v = 0;

        /* digits by hand: the same code runs in QEMU and in the host test */
        if (*s < '0' || *s > '9') {
            goto bad;
        }
        while (*s >= '0' && *s <= '9') {
            v = v * 10 + (unsigned long)(*s++ - '0');
            if (v > FABRIC_TORUS_MAX_DIM) {
                goto bad;
            }
        }
        if (v < 1) {
            goto bad;
        }
        dims[d] = v;
        prod *= v;
        if (d < 2 && *s++ != 'x') {
            goto bad;
        }
    }
    if (*s) {
        goto bad;
    }
    if (prod != num_nodes) {
        set_msg(err, errlen, "torus %s has %llu nodes, not %u", shape,
                (unsigned long long)prod, num_nodes);
        return -EINVAL;
    }
    return 0;
bad:
    set_msg(err, errlen,
            "torus shape '%s' is not XxYxZ with each of X, Y, Z in 1..%u",
            shape, FABRIC_TORUS_MAX_DIM);
    return -EINVAL;
}

void fabric_torus_default_shape(uint32_t n, uint32_t dims[3])
{
    /* Smallest X, then smallest Y, with X >= Y >= Z and X * Y * Z = n. */
    dims[0] = n;
    dims[1] = 1;
    dims[2] = 1;
    for (uint32_t z = 1; (uint64_t)z * z * z <= n; z++) {
        if (n % z) {
            continue;
        }
        for (uint32_t y = z; (uint64_t)y * y <= n / z; y++) {
            uint32_t x;

            if ((n / z) % y) {
                continue;
            }
            x = n / z / y;
            if (x < dims[0] || (x == dims[0] && y < dims[1])) {
                dims[0] = x;
                dims[1] = y;
                dims[2] = z;
            }
        }
    }
}

void fabric_torus_dims(const struct fabric_torus *t, uint32_t dims[3])
{
    memcpy(dims, t->dims, sizeof(t->dims));
}

void fabric_torus_coords(const struct fabric_torus *t, uint32_t node,
                         uint32_t c[3])
{
    c[0] = node % t->dims[0];
    c[1] = node / t->dims[0] % t->dims[1];
    c[2] = node / t->dims[0] / t->dims[1];
}

static uint32_t node_at(const struct fabric_torus *t, const uint32_t c[3])
{
    return c[0] + t->dims[0] * (c[1] + t->dims[1] * c[2]);
}

uint32_t fabric_torus_neighbour(const struct fabric_torus *t, uint32_t node,
                                unsigned port)
{
    unsigned d = port / 2;
    uint32_t c[3];

    if (port >= EXA_NUM_PORTS || node >= t->n || t->dims[d] == 1) {
        return node;
    }
    fabric_torus_coords(t, node, c);
    c[d] = (c[d] + (port & 1 ? t->dims[d] - 1 : 1)) % t->dims[d];
    return node_at(t, c);
}

unsigned fabric_torus_distance(const struct fabric_torus *t, uint32_t a,
                               uint32_t b)
{
    uint32_t ca[3], cb[3];
    unsigned hops = 0;

    fabric_torus_coords(t, a, ca);
    fabric_torus_coords(t, b, cb);
    for (int d = 0; d < 3; d++) {
        uint32_t fwd = (cb[d] + t->dims[d] - ca[d]) % t->dims[d];

        hops += fwd <= t->dims[d] - fwd ? fwd : t->dims[d] - fwd;
    }
    return hops;
}

/* ------------------------------------------------------------------ */
/* Liveness and cable state */

/*
 * The process runs: it exists and is not a zombie (a node killed by a
 * launcher that has not reaped it yet is dead for the fabric).
 */
static bool pid_runs(uint32_t pid)
{
    char path[32], buf[256];
    const char *paren;
    ssize_t len;
    int fd;

    if (!pid || (kill(pid, 0) < 0 && errno != EPERM)) {
        return false;
    }
    snprintf(path, sizeof(path), "/proc/%u/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return true; /* no procfs: trust kill() */
    }
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0) {
        return false;
    }
    buf[len] = 0;
    paren = strrchr(buf, ')');
    return !paren || (paren[1] != ' ' || (paren[2] != 'Z' && paren[2] != 'X'));
}

static bool node_alive(struct fabric_torus *t, uint32_t n, uint64_t now)
{
    const struct node_rec *r = &t->nodes[n];
    uint32_t pid;

    if (n == t->node) {
        return true;
    }
    if (!__atomic_load_n(&r->running, __ATOMIC_ACQUIRE)) {
        return false;
    }
    if (now - t->alive_at[n] < ALIVE_TTL_NS) {
        return true;
    }
    pid = __atomic_load_n(&r->pid, __ATOMIC_RELAXED);
    if (pid_runs(pid)) {
        t->alive_at[n] = now;
        return true;
    }
    return false;
}

static uint32_t link_index(uint32_t node, unsigned port)
{
    return node * EXA_NUM_PORTS + port;
}

/*
 * The cable leaving node over port carries packets now.  The liveness of
 * the packet's destination (dst) does not count: a packet for a node that
 * is down is lost there (the transport reports it), not rerouted.
 */
static bool cable_up(struct fabric_torus *t, uint32_t node, unsigned port,
                     uint32_t dst, uint64_t now)
{
    uint32_t peer = fabric_torus_neighbour(t, node, port);

    if (peer == node) {
        return false;
    }
    return __atomic_load_n(&t->links[link_index(node, port)].admin_up,
                           __ATOMIC_RELAXED) &&
           __atomic_load_n(&t->links[link_index(peer, port ^ 1)].admin_up,
                           __ATOMIC_RELAXED) &&
           (node == dst || node_alive(t, node, now)) &&
           (peer == dst || node_alive(t, peer, now));
}

/* ------------------------------------------------------------------ */
/* Routes */

/* The six orders in which the dimensions are crossed; [0] is the rule. */
static const uint8_t dim_orders[6][3] = {
    {0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0},
};
/* Which dimensions go the long way round, fewest first. */
static const uint8_t long_ways[8] = {0, 1, 2, 4, 3, 5, 6, 7};

/*
 * The path from src to dst crossing the dimensions in the given order, the
 * dimensions in long_way the long way round (ties of the short way go +).
 * Writes link indices to out; returns the hop count or -1 if long_way
 * names a dimension without distance to cover (a duplicate path).
 */
static int path(const struct fabric_torus *t, uint32_t src, uint32_t dst,
                const uint8_t *order, unsigned long_way, uint32_t *out,
                unsigned room)
{
    uint32_t c[3], cd[3], cur = src;
    unsigned hops = 0;

    fabric_torus_coords(t, src, c);
    fabric_torus_coords(t, dst, cd);
    for (int i = 0; i < 3; i++) {
        unsigned d = order[i], D = t->dims[d];
        uint32_t fwd = (cd[d] + D - c[d]) % D, steps;
        bool plus = fwd <= D - fwd;

        if (!fwd) {
            if (long_way & (1u << d)) {
                return -1;
            }
            continue;
        }
        if (long_way & (1u << d)) {
            plus = !plus;
        }
        steps = plus ? fwd : D - fwd;
        for (uint32_t k = 0; k < steps; k++) {
            unsigned port = 2 * d + (plus ? 0 : 1);

            if (hops >= room) {
                return -1;
            }
            out[hops++] = link_index(cur, port);
            cur = fabric_torus_neighbour(t, cur, port);
        }
    }
    return hops;
}

/* Index of the first cable of the path that is down, or -1. */
static int first_down(struct fabric_torus *t, const uint32_t *p, int hops,
                      uint32_t dst, uint64_t now)
{
    for (int i = 0; i < hops; i++) {
        if (!cable_up(t, p[i] / EXA_NUM_PORTS, p[i] % EXA_NUM_PORTS, dst,
                      now)) {
            return i;
        }
    }
    return -1;
}

/* Any dimension order and direction choice from src: hops into out, or -1. */
static int search_orders(struct fabric_torus *t, uint32_t src, uint32_t dst,
                         uint32_t *out, unsigned room, uint64_t now)
{
    for (int w = 0; w < 8; w++) {
        for (int o = 0; o < 6; o++) {
            int h = path(t, src, dst, dim_orders[o], long_ways[w], out, room);

            if (h >= 0 && first_down(t, out, h, dst, now) < 0) {
                return h;
            }
        }
    }
    return -1;
}

/*
 * The detour rule (Documentation/fabric.md): first any dimension order with
 * the short or the long way round in each dimension, fewest long ways
 * first; then one hop to a neighbour over an up port (x+ first) and any
 * such route from there.  Returns the hop count in t->route, or -1.
 */
static int detour(struct fabric_torus *t, uint32_t src, uint32_t dst,
                  uint64_t now)
{
    int h = search_orders(t, src, dst, t->route, FABRIC_MAX_ROUTE, now);

    if (h >= 0) {
        return h;
    }
    for (unsigned port = 0; port < EXA_NUM_PORTS; port++) {
        uint32_t w = fabric_torus_neighbour(t, src, port);

        if (w == src || !cable_up(t, src, port, dst, now)) {
            continue;
        }
        t->route[0] = link_index(src, port);
        if (w == dst) {
            return 1;
        }
        h = search_orders(t, w, dst, t->route + 1, FABRIC_MAX_ROUTE - 1, now);
        if (h >= 0) {
            return h + 1;
        }
    }
    return -1;
}

static void count(struct link_rec *l, enum exa_port_counter c, uint64_t v)
{
    __atomic_fetch_add(&l->cnt[c], v, __ATOMIC_RELAXED);
}

/*
 * Reserve the cable from t on for ser ns (first come, first served);
 * returns the start of the reservation.
 */
static uint64_t reserve(struct link_rec *l, uint64_t t, uint64_t ser)
{
    uint64_t busy = __atomic_load_n(&l->busy_until, __ATOMIC_RELAXED), start;

    do {
        start = busy > t ? busy : t;
    } while (!__atomic_compare_exchange_n(&l->busy_until, &busy, start + ser,
                                          true, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return start;
}

/*
 * The route to dst now, into t->route: the dimension-order one, or the
 * detour when a cable on it is down (counted on that cable if count).
 * Returns the hop count, or -1 when every path is cut.
 */
static int choose(struct fabric_torus *t, uint32_t src, uint32_t dst,
                  uint64_t now, bool count_detour, bool *detoured)
{
    int hops = path(t, src, dst, dim_orders[0], 0, t->route, FABRIC_MAX_ROUTE);
    int down = first_down(t, t->route, hops, dst, now);

    *detoured = down >= 0;
    if (down < 0) {
        return hops;
    }
    if (count_detour) {
        count(&t->links[t->route[down]], EXA_PORT_CNT_DETOURED, 1);
    }
    return detour(t, src, dst, now);
}

bool fabric_torus_booked(struct fabric_torus *t, uint32_t dst,
                         uint64_t horizon_ns)
{
    return fabric_torus_booked_from(t, t->node, dst, horizon_ns);
}

bool fabric_torus_booked_from(struct fabric_torus *t, uint32_t src,
                              uint32_t dst, uint64_t horizon_ns)
{
    uint64_t now = mono_ns();
    bool detoured;
    int hops;

    if (dst == src || dst >= t->n || src >= t->n) {
        return false;
    }
    hops = choose(t, src, dst, now, false, &detoured);
    for (int i = 0; i < hops; i++) {
        if (__atomic_load_n(&t->links[t->route[i]].busy_until,
                            __ATOMIC_RELAXED) > now + horizon_ns) {
            return true;
        }
    }
    return false;
}

void fabric_torus_route(struct fabric_torus *t, uint32_t dst, size_t bytes,
                        struct fabric_route_result *res)
{
    fabric_torus_route_from(t, t->node, dst, bytes, res);
}

void fabric_torus_route_from(struct fabric_torus *t, uint32_t src,
                             uint32_t dst, size_t bytes,
                             struct fabric_route_result *res)
{
    uint64_t now = mono_ns(), head = now, ser = 0;
    int hops;

    memset(res, 0, sizeof(*res));
    res->due_ns = now;
    if (dst == src || dst >= t->n || src >= t->n) {
        return;
    }
    hops = choose(t, src, dst, now, true, &res->detour);
    if (hops < 0) {
        res->fate = FABRIC_ROUTE_NONE;
        return;
    }
    res->hops = hops;
    for (int i = 0; i < hops; i++) {
        struct link_rec *l = &t->links[t->route[i]];
        uint32_t mbps = __atomic_load_n(&l->mbps, __ATOMIC_RELAXED);
        uint64_t start;

        count(l, EXA_PORT_CNT_PACKETS, 1);
        count(l, EXA_PORT_CNT_BYTES, bytes);
        if (fabric_rng_hit(&t->rng,
                           __atomic_load_n(&l->drop_ppm, __ATOMIC_RELAXED))) {
            count(l, EXA_PORT_CNT_DROPS, 1);
            count(l, EXA_PORT_CNT_RETRANS, 1);
            res->fate = FABRIC_ROUTE_DROPPED;
            return;
        }
        if (res->fate == FABRIC_ROUTE_OK &&
            fabric_rng_hit(
                &t->rng, __atomic_load_n(&l->corrupt_ppm, __ATOMIC_RELAXED))) {
            count(l, EXA_PORT_CNT_CRC_ERRORS, 1);
            count(l, EXA_PORT_CNT_RETRANS, 1);
            res->fate = FABRIC_ROUTE_CORRUPT;
        }
        /* Cut-through: the head moves on after the hop's latency. */
        ser = mbps ? (uint64_t)bytes * 8000 / mbps : 0;
        start = ser ? reserve(l, head, ser) : head;
        if (ser) {
            count(l, EXA_PORT_CNT_BUSY_NS, ser);
        }
        head = start + __atomic_load_n(&l->ns, __ATOMIC_RELAXED);
    }
    res->due_ns = head + ser;
}

/* ------------------------------------------------------------------ */
/* Owner side */

int fabric_torus_set_port(struct fabric_torus *t, unsigned port, bool up,
                          uint32_t mbps, uint32_t ns, uint32_t drop_ppm,
                          uint32_t corrupt_ppm)
{
    struct link_rec *l;

    if (port >= EXA_NUM_PORTS || drop_ppm > 1000000u ||
        corrupt_ppm > 1000000u) {
        return -EINVAL;
    }
    l = &t->links[link_index(t->node, port)];
    if (!up && __atomic_exchange_n(&l->admin_up, 0, __ATOMIC_SEQ_CST)) {
        count(l, EXA_PORT_CNT_DOWN_EVENTS, 1);
    }
    __atomic_store_n(&l->mbps, mbps, __ATOMIC_RELAXED);
    __atomic_store_n(&l->ns, ns, __ATOMIC_RELAXED);
    __atomic_store_n(&l->drop_ppm, drop_ppm, __ATOMIC_RELAXED);
    __atomic_store_n(&l->corrupt_ppm, corrupt_ppm, __ATOMIC_RELAXED);
    if (up) {
        __atomic_store_n(&l->admin_up, 1, __ATOMIC_SEQ_CST);
    }
    return 0;
}

void fabric_torus_port_info(struct fabric_torus *t, unsigned port,
                            struct fabric_port_info *info)
{
    const struct link_rec *l;
    uint64_t now = mono_ns();

    memset(info, 0, sizeof(*info));
    if (port >= EXA_NUM_PORTS) {
        return;
    }
    l = &t->links[link_index(t->node, port)];
    info->peer = fabric_torus_neighbour(t, t->node, port);
    if (info->peer != t->node) {
        info->state |= EXA_PORT_USED;
    }
    if (__atomic_load_n(&l->admin_up, __ATOMIC_RELAXED)) {
        info->state |= EXA_PORT_ADMIN_UP;
    }
    if (info->peer != t->node && node_alive(t, info->peer, now)) {
        info->state |= EXA_PORT_PEER_ALIVE;
    }
    if (cable_up(t, t->node, port, t->n, now)) {
        info->state |= EXA_PORT_UP;
    }
    info->mbps = __atomic_load_n(&l->mbps, __ATOMIC_RELAXED);
    info->ns = __atomic_load_n(&l->ns, __ATOMIC_RELAXED);
    info->drop_ppm = __atomic_load_n(&l->drop_ppm, __ATOMIC_RELAXED);
    info->corrupt_ppm = __atomic_load_n(&l->corrupt_ppm, __ATOMIC_RELAXED);
    for (int c = 0; c < EXA_NUM_PORT_COUNTERS; c++) {
        info->counters[c] = __atomic_load_n(&l->cnt[c], __ATOMIC_RELAXED);
    }
}

/* ------------------------------------------------------------------ */
/* The shared file */

static size_t links_size(uint32_t n)
{
    return LINKS_HDR_SIZE + (size_t)n * sizeof(struct node_rec) +
           (size_t)n * EXA_NUM_PORTS * sizeof(struct link_rec);
}

/* A node recorded in the file still runs (its records are in use). */
static bool any_node_running(int fd, uint32_t n, uint32_t self)
{
    for (uint32_t i = 0; i < n; i++) {
        struct node_rec r;

        if (pread(fd, &r, sizeof(r), LINKS_HDR_SIZE + (off_t)i * sizeof(r)) !=
            (ssize_t)sizeof(r)) {
            return false;
        }
        if (i != self && r.running && pid_runs(r.pid)) {
            return true;
        }
    }
    return false;
}

/*
 * Under the file lock: check or (re)initialise the header.  Returns 1 for
 * a fresh file, 0 for one in use, or a negative errno.
 */
static int links_prepare(int fd, const char *path, uint32_t node,
                         const uint32_t dims[3], uint32_t n, char *err,
                         size_t errlen)
{
    struct links_hdr h;
    struct stat st;

    if (fstat(fd, &st) < 0) {
        return -errno;
    }
    if ((size_t)st.st_size >= sizeof(h) &&
        pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
        h.magic == LINKS_MAGIC && h.version == LINKS_VERSION) {
        if (h.num_nodes == n && !memcmp(h.dims, dims, sizeof(h.dims)) &&
            (size_t)st.st_size == links_size(n)) {
            return 0;
        }
        if (h.num_nodes <= FABRIC_TORUS_MAX_DIM * FABRIC_TORUS_MAX_DIM *
                               FABRIC_TORUS_MAX_DIM &&
            (size_t)st.st_size == links_size(h.num_nodes) &&
            any_node_running(fd, h.num_nodes, node)) {
            set_msg(err, errlen,
                    "torus %ux%ux%u does not match the %ux%ux%u of the running "
                    "nodes in %s",
                    dims[0], dims[1], dims[2], h.dims[0], h.dims[1], h.dims[2],
                    path);
            return -EINVAL;
        }
    }
    /* New, or left by a cluster that is gone: start afresh. */
    memset(&h, 0, sizeof(h));
    h.magic = LINKS_MAGIC;
    h.version = LINKS_VERSION;
    h.num_nodes = n;
    memcpy(h.dims, dims, sizeof(h.dims));
    if (ftruncate(fd, 0) < 0 || ftruncate(fd, links_size(n)) < 0 ||
        pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
        return -errno;
    }
    return 1;
}

int fabric_torus_open(struct fabric_torus **out, const char *dir, uint32_t node,
                      const uint32_t dims[3], uint32_t mbps, uint32_t ns,
                      uint64_t seed, char *err, size_t errlen)
{
    uint64_t n = (uint64_t)dims[0] * dims[1] * dims[2];
    struct fabric_torus *t;
    char path[4096];
    void *map;
    int fd, r;

    *out = NULL;
    if (!dims[0] || !dims[1] || !dims[2] || dims[0] > FABRIC_TORUS_MAX_DIM ||
        dims[1] > FABRIC_TORUS_MAX_DIM || dims[2] > FABRIC_TORUS_MAX_DIM ||
        node >= n) {
        set_msg(err, errlen, "bad torus %ux%ux%u for node %u", dims[0], dims[1],
                dims[2], node);
        return -EINVAL;
    }
    if (snprintf(path, sizeof(path), "%s/links", dir) >= (int)sizeof(path)) {
        return -ENAMETOOLONG;
    }
    t = calloc(1, sizeof(*t));
    if (!t) {
        return -ENOMEM;
    }
    t->alive_at = calloc(n, sizeof(*t->alive_at));
    if (!t->alive_at) {
        free(t);
        return -ENOMEM;
    }
    t->node = node;
    t->n = n;
    memcpy(t->dims, dims, sizeof(t->dims));
    t->rng = fabric_rng_seed(seed, node, 1);

    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        r = -errno;
        set_msg(err, errlen, "cannot open %s: %s", path, strerror(errno));
        goto fail;
    }
    if (flock(fd, LOCK_EX) < 0) {
        r = -errno;
        close(fd);
        goto fail;
    }
    r = links_prepare(fd, path, node, dims, n, err, errlen);
    if (r < 0) {
        if (!err || !err[0]) {
            set_msg(err, errlen, "cannot set up %s: %s", path, strerror(-r));
        }
        close(fd);
        goto fail;
    }
    t->maplen = links_size(n);
    snprintf(t->path, sizeof(t->path), "%s", path);
    {
        struct stat st;

        if (fstat(fd, &st) == 0) {
            t->ino = st.st_ino;
        }
    }
    map = mmap(NULL, t->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        r = -errno;
        set_msg(err, errlen, "cannot map %s: %s", path, strerror(errno));
        close(fd);
        goto fail;
    }
    t->hdr = map;
    t->nodes = (struct node_rec *)((uint8_t *)map + LINKS_HDR_SIZE);
    t->links = (struct link_rec *)(t->nodes + n);
    /*
     * Every cable starts up, also the ends of nodes that have not started
     * yet (a packet for such a node is lost at the node, not rerouted).
     */
    for (uint32_t i = r ? 0 : link_index(node, 0);
         i < (r ? n * EXA_NUM_PORTS : link_index(node + 1, 0)); i++) {
        struct link_rec *l = &t->links[i];

        memset(l, 0, sizeof(*l));
        l->mbps = mbps;
        l->ns = ns;
        l->admin_up = 1;
    }
    t->nodes[node].pid = getpid();
    __atomic_store_n(&t->nodes[node].running, 1, __ATOMIC_RELEASE);
    flock(fd, LOCK_UN);
    close(fd);
    *out = t;
    return 0;
fail:
    free(t->alive_at);
    free(t);
    return r;
}

void fabric_torus_close(struct fabric_torus *t)
{
    int fd;

    if (!t) {
        return;
    }
    fd = open(t->path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        flock(fd, LOCK_EX);
    }
    if (t->nodes[t->node].pid == (uint32_t)getpid()) {
        __atomic_store_n(&t->nodes[t->node].running, 0, __ATOMIC_RELEASE);
    }
    /* The last node out removes the file (if it is still this one). */
    if (fd >= 0) {
        struct stat st;

        if (fstat(fd, &st) == 0 && st.st_ino == t->ino &&
            !any_node_running(fd, t->n, t->node)) {
            unlink(t->path);
        }
        close(fd);
    }
    munmap(t->hdr, t->maplen);
    free(t->alive_at);
    free(t);
}
