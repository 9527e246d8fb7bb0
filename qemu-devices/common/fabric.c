/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host-side fabric transport, see fabric.h for the design: opening and
 * closing a node, datagrams, peers and their queues, routing over the
 * torus, receiving.  The shared-memory rings are in fabric-rings.c.
 */
#include "fabric-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ------------------------------------------------------------------ */

/* Standard CRC-32 (IEEE 802.3, zlib's); chainable: pass the previous result. */
uint32_t fabric_crc32(uint32_t crc, const void *buf, size_t len)
{
    return (uint32_t)crc32(crc, buf, (uInt)len);
}

/*
 * The wire header is struct fabric_hdr with its fields little endian:
 * magic 0, version 4, type 5, length 6, src 8, dst 12, crc 16, no padding.
 */
_Static_assert(sizeof(struct fabric_hdr) == FABRIC_HDR_SIZE &&
               offsetof(struct fabric_hdr, crc) == 16,
               "struct fabric_hdr is the wire layout");

void fabric_hdr_encode(uint8_t *w, const struct fabric_hdr *h)
{
    const struct fabric_hdr le = {
        .magic = htole32(h->magic),
        .version = h->version,
        .type = h->type,
        .length = htole16(h->length),
        .src = htole32(h->src),
        .dst = htole32(h->dst),
        .crc = htole32(h->crc),
    };

    memcpy(w, &le, FABRIC_HDR_SIZE);
}

void fabric_hdr_decode(struct fabric_hdr *h, const uint8_t *w)
{
    memcpy(h, w, FABRIC_HDR_SIZE);
    h->magic = le32toh(h->magic);
    h->length = le16toh(h->length);
    h->src = le32toh(h->src);
    h->dst = le32toh(h->dst);
    h->crc = le32toh(h->crc);
}

int fabric_sock_path(char *buf, size_t len, const char *dir, uint32_t node)
{
    int n = snprintf(buf, len, "%s/node%u.sock", dir, node);

    if (n < 0 || (size_t)n >= len) {
        return -ENAMETOOLONG;
    }
    return 0;
}

/* xorshift64*, seeded through splitmix64 */
uint64_t fabric_rng_next(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

uint64_t fabric_rng_seed(uint64_t seed, uint32_t node, uint64_t stream)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (node + 1) + stream;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 0x1234567887654321ull;
}

bool fabric_rng_hit(uint64_t *state, uint32_t ppm)
{
    if (!ppm) {
        return false;
    }
    if (ppm >= FABRIC_PPM) {
        return true;
    }
    return (fabric_rng_next(state) >> 11) % FABRIC_PPM < ppm;
}

/* ------------------------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *fmt, const char *a,
                    int e)
{
    if (err && errlen) {
        snprintf(err, errlen, fmt, a);
        if (e) {
            size_t l = strlen(err);

            snprintf(err + l, errlen - l, ": %s", strerror(e));
        }
    }
}

static int make_socket(void)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    return fd < 0 ? -errno : fd;
}

static int fill_addr(struct sockaddr_un *sa, const char *dir, uint32_t node)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    return fabric_sock_path(sa->sun_path, sizeof(sa->sun_path), dir, node);
}

int fabric_open(struct fabric **out, const struct fabric_config *cfg, char *err,
                size_t errlen)
{
    struct fabric *f;
    struct sockaddr_un sa;
    struct stat stb;
    int fd, r, one_mb = 1 << 20;

    *out = NULL;
    if (!cfg || !cfg->dir || !cfg->dir[0]) {
        set_err(err, errlen, "fabric directory not set%s", "", 0);
        return -EINVAL;
    }
    if (cfg->num_nodes == 0 || cfg->num_nodes > FABRIC_MAX_NODES ||
        cfg->node_id >= cfg->num_nodes) {
        set_err(err, errlen, "bad node id / node count%s", "", 0);
        return -EINVAL;
    }
    if (cfg->drop_ppm > FABRIC_PPM || cfg->corrupt_ppm > FABRIC_PPM) {
        set_err(err, errlen, "fault injection ppm above 1000000%s", "", 0);
        return -EINVAL;
    }
    if (fill_addr(&sa, cfg->dir, cfg->node_id) < 0) {
        set_err(err, errlen, "socket path too long in %s", cfg->dir, 0);
        return -ENAMETOOLONG;
    }
    if ((cfg->dims[0] || cfg->dims[1] || cfg->dims[2]) &&
        (uint64_t)cfg->dims[0] * cfg->dims[1] * cfg->dims[2] !=
            cfg->num_nodes) {
        if (err && errlen) {
            snprintf(err, errlen, "torus %ux%ux%u does not have %u nodes",
                     cfg->dims[0], cfg->dims[1], cfg->dims[2], cfg->num_nodes);
        }
        return -EINVAL;
    }

    f = calloc(1, sizeof(*f));
    if (!f) {
        return -ENOMEM;
    }
    f->cfg = *cfg;
    if (!f->cfg.max_queue) {
        f->cfg.max_queue = FABRIC_DEFAULT_QUEUE;
    }
    f->rxfd = -1;
    f->dir = strdup(cfg->dir);
    f->peers = calloc(cfg->num_nodes, sizeof(*f->peers));
    f->bin = calloc(cfg->num_nodes, sizeof(*f->bin));
    f->pin = calloc(cfg->num_nodes, sizeof(*f->pin));
    if (!f->dir || !f->peers || !f->bin || !f->pin) {
        r = -ENOMEM;
        goto fail;
    }
    if (!cfg->dims[0] && !cfg->dims[1] && !cfg->dims[2]) {
        fabric_torus_default_shape(cfg->num_nodes, f->cfg.dims);
    }
    f->cfg.dir = f->dir;
    memcpy(f->path, sa.sun_path, sizeof(f->path));
    rng_seed(f, cfg->seed);

    if (mkdir(cfg->dir, 0700) < 0 && errno != EEXIST) {
        r = -errno;
        set_err(err, errlen, "cannot create fabric directory %s", cfg->dir,
                errno);
        goto fail;
    }

    fd = make_socket();
    if (fd < 0) {
        r = fd;
        set_err(err, errlen, "socket%s", "", -fd);
        goto fail;
    }
    /* Refuse to steal the address of a live node with the same id. */
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        close(fd);
        r = -EADDRINUSE;
        set_err(err, errlen, "%s is in use by a running node", f->path, 0);
        goto fail;
    }
    close(fd);

    fd = make_socket();
    if (fd < 0) {
        r = fd;
        goto fail;
    }
    f->rxfd = fd;
    unlink(f->path);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        r = -errno;
        set_err(err, errlen, "bind %s", f->path, errno);
        goto fail;
    }
    if (stat(f->path, &stb) == 0) {
        f->ino = stb.st_ino;
        f->devno = stb.st_dev;
    }
    /* Best effort: room for bursts (root may exceed rmem_max). */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &one_mb, sizeof(one_mb)) <
        0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &one_mb, sizeof(one_mb));
    }
    r = fabric_torus_open(&f->torus, cfg->dir, cfg->node_id, f->cfg.dims,
                          cfg->link_mbps, cfg->link_ns, cfg->seed, err, errlen);
    if (r < 0) {
        goto fail;
    }
    *out = f;
    return 0;

fail:
    if (f->rxfd >= 0) {
        close(f->rxfd);
        unlink(f->path);
    }
    free(f->pin);
    free(f->bin);
    free(f->peers);
    free(f->dir);
    free(f);
    return r;
}

static void peer_unwatch(struct fabric *f, struct fabric_peer *p)
{
    if (p->watched) {
        p->watched = false;
        if (f->cfg.watch) {
            f->cfg.watch(f->cfg.watch_opaque, p->fd, false);
        }
    }
}

static void peer_watch(struct fabric *f, struct fabric_peer *p)
{
    if (!p->watched && p->fd >= 0) {
        p->watched = true;
        if (f->cfg.watch) {
            f->cfg.watch(f->cfg.watch_opaque, p->fd, true);
        }
    }
}

static void peer_disconnect(struct fabric *f, struct fabric_peer *p)
{
    if (p->fd >= 0) {
        peer_unwatch(f, p);
        close(p->fd);
        p->fd = -1;
    }
}

/* Drop every queued packet of a peer, counting them as lost. */
static void peer_purge(struct fabric *f, struct fabric_peer *p,
                       uint64_t *counter)
{
    while (p->qhead) {
        struct fabric_qpkt *q = p->qhead;

        p->qhead = q->next;
        free(q);
        (*counter)++;
    }
    p->qtail = NULL;
    f->total_queued -= p->qlen;
    p->qlen = 0;
}

void fabric_close(struct fabric *f)
{
    struct stat stb;

    if (!f) {
        return;
    }
    while (f->alloc_list) {
        struct fabric_peer *p = f->alloc_list;
        uint64_t dummy = 0;

        f->alloc_list = p->next_alloc;
        peer_purge(f, p, &dummy);
        peer_disconnect(f, p);
        fabric_bulk_release(f, p->bout);
        fabric_bulk_release(f, p->pout);
        free(p);
    }
    while (f->bin_list) {
        struct bulk_map *m = f->bin_list;

        f->bin_list = m->next_in;
        fabric_bulk_unmap(m);
    }
    while (f->pin_list) {
        struct bulk_map *m = f->pin_list;

        f->pin_list = m->next_in;
        fabric_bulk_unmap(m);
    }
    free(f->bin);
    free(f->pin);
    fabric_torus_close(f->torus);
    if (f->rxfd >= 0) {
        close(f->rxfd);
        /* Only remove the socket file if it is still ours. */
        if (stat(f->path, &stb) == 0 && stb.st_ino == f->ino &&
            stb.st_dev == f->devno) {
            unlink(f->path);
        }
    }
    free(f->peers);
    free(f->dir);
    free(f);
}

int fabric_rx_fd(const struct fabric *f)
{
    return f->rxfd;
}

struct fabric_peer *fabric_get_peer(struct fabric *f, uint32_t node)
{
    struct fabric_peer *p = f->peers[node];

    if (p) {
        return p;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        return NULL;
    }
    p->node = node;
    p->fd = -1;
    p->next_alloc = f->alloc_list;
    f->alloc_list = p;
    f->peers[node] = p;
    return p;
}

int fabric_peer_connect(struct fabric *f, struct fabric_peer *p)
{
    struct sockaddr_un sa;
    int fd, sndbuf = 1 << 20;

    if (fill_addr(&sa, f->dir, p->node) < 0) {
        return -ENAMETOOLONG;
    }
    fd = make_socket();
    if (fd < 0) {
        return fd;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;

        close(fd);
        return -e;
    }
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) <
        0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    }
    p->fd = fd;
    return 0;
}

bool fabric_peer_gone_errno(int e)
{
    return e == ECONNREFUSED || e == ENOTCONN || e == EPIPE ||
           e == ECONNRESET || e == ENOENT || e == EDESTADDRREQ;
}

/*
 * One send attempt (with one reconnect if the peer socket was replaced).
 * Returns 0 sent, -EAGAIN no room, -EHOSTUNREACH peer down, other -errno.
 */
int fabric_peer_xmit(struct fabric *f, struct fabric_peer *p,
                     const uint8_t *buf, size_t len)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        ssize_t n;
        int r;

        if (p->fd < 0) {
            r = fabric_peer_connect(f, p);
            if (r < 0) {
                return fabric_peer_gone_errno(-r) ? -EHOSTUNREACH : r;
            }
        }
        n = send(p->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0) {
            f->st.tx_packets++;
            f->st.tx_bytes += len;
            return 0;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
            return -EAGAIN;
        }
        if (errno == EINTR) {
            attempt--;
            continue;
        }
        if (!fabric_peer_gone_errno(errno)) {
            return -errno;
        }
        /* The receiver closed or was restarted: reconnect once. */
        peer_disconnect(f, p);
    }
    return -EHOSTUNREACH;
}

int fabric_peer_enqueue(struct fabric *f, struct fabric_peer *p,
                        const uint8_t *buf, size_t len)
{
    struct fabric_qpkt *q;

    if (p->qlen >= f->cfg.max_queue) {
        f->st.tx_queue_full++;
        return -ENOBUFS;
    }
    q = malloc(sizeof(*q) + len);
    if (!q) {
        f->st.tx_errors++;
        return -ENOMEM;
    }
    q->next = NULL;
    q->len = len;
    memcpy(q->data, buf, len);
    if (p->qtail) {
        p->qtail->next = q;
    } else {
        p->qhead = q;
    }
    p->qtail = q;
    p->qlen++;
    f->total_queued++;
    f->st.tx_queued++;
    peer_watch(f, p);
    return FABRIC_QUEUED;
}

int fabric_route(struct fabric *f, uint32_t dst, size_t bytes,
                 struct fabric_route_result *res)
{
    return fabric_route_from(f, f->cfg.node_id, dst, bytes, res);
}

int fabric_route_from(struct fabric *f, uint32_t src, uint32_t dst,
                      size_t bytes, struct fabric_route_result *res)
{
    struct fabric_route_result own;

    if (!res) {
        res = &own;
    }
    fabric_torus_route_from(f->torus, src, dst, bytes, res);
    if (res->detour) {
        f->st.tx_detours++;
    }
    switch (res->fate) {
    case FABRIC_ROUTE_NONE:
        f->st.tx_no_route++;
        return -EHOSTUNREACH;
    case FABRIC_ROUTE_DROPPED:
        f->st.tx_link_drop++;
        return -ENOLINK;
    case FABRIC_ROUTE_CORRUPT:
        f->st.tx_link_corrupt++;
        return 1;
    default:
        return 0;
    }
}

int fabric_send(struct fabric *f, uint32_t dst, uint8_t type,
                const void *payload, size_t len)
{
    uint8_t buf[FABRIC_HDR_SIZE + FABRIC_MAX_PAYLOAD];
    struct fabric_hdr h;
    struct fabric_peer *p;
    size_t n = FABRIC_HDR_SIZE + len;
    uint32_t crc;
    int r;

    if (!f || dst >= f->cfg.num_nodes || len > FABRIC_MAX_PAYLOAD ||
        (len && !payload) || type == FABRIC_TYPE_BULK) {
        return -EINVAL;
    }
    if (f->cfg.pkt_ring) {
        p = fabric_get_peer(f, dst);
        if (!p) {
            f->st.tx_errors++;
            return -ENOMEM;
        }
        return fabric_pkt_send(f, p, type, payload, len);
    }

    h.magic = FABRIC_MAGIC;
    h.version = FABRIC_VERSION;
    h.type = type;
    h.length = len;
    h.src = f->cfg.node_id;
    h.dst = dst;
    h.crc = 0;
    fabric_hdr_encode(buf, &h);
    if (len) {
        memcpy(buf + FABRIC_HDR_SIZE, payload, len);
    }
    crc = fabric_crc32(0, buf, n);
    fabric_hdr_put_crc(buf, crc);

    r = fabric_route(f, dst, n, NULL);
    if (r < 0) {
        return r == -ENOLINK ? FABRIC_SENT : r;
    }
    if (rng_hit(f, f->cfg.drop_ppm)) {
        f->st.tx_inject_drop++;
        return FABRIC_SENT;
    }
    if (r == 1 || rng_hit(f, f->cfg.corrupt_ppm)) {
        uint64_t bit = rng_next(f) % (n * 8);

        buf[bit / 8] ^= 1u << (bit % 8);
        f->st.tx_inject_corrupt++;
    }

    p = fabric_get_peer(f, dst);
    if (!p) {
        f->st.tx_errors++;
        return -ENOMEM;
    }
    /* Keep per-destination order: behind a queue, wait in the queue. */
    if (p->qhead) {
        fabric_flush(f);
        if (p->qhead) {
            return fabric_peer_enqueue(f, p, buf, n);
        }
    }
    r = fabric_peer_xmit(f, p, buf, n);
    if (r == 0) {
        return FABRIC_SENT;
    }
    if (r == -EAGAIN) {
        return fabric_peer_enqueue(f, p, buf, n);
    }
    if (r == -EHOSTUNREACH) {
        f->st.tx_no_peer++;
    } else {
        f->st.tx_errors++;
    }
    return r;
}

static void peer_flush(struct fabric *f, struct fabric_peer *p)
{
    while (p->qhead) {
        struct fabric_qpkt *q = p->qhead;
        int r = fabric_peer_xmit(f, p, q->data, q->len);

        if (r == -EAGAIN) {
            break;
        }
        if (r == -EHOSTUNREACH) {
            /* Node went down: everything queued for it is lost. */
            peer_purge(f, p, &f->st.tx_no_peer);
            break;
        }
        if (r < 0) {
            f->st.tx_errors++;
        }
        p->qhead = q->next;
        if (!p->qhead) {
            p->qtail = NULL;
        }
        p->qlen--;
        f->total_queued--;
        free(q);
    }
    if (!p->qhead) {
        peer_unwatch(f, p);
    } else {
        peer_watch(f, p);
    }
}

size_t fabric_flush(struct fabric *f)
{
    if (!f->total_queued) {
        return 0;
    }
    for (struct fabric_peer *p = f->alloc_list; p; p = p->next_alloc) {
        if (p->qhead) {
            peer_flush(f, p);
        }
    }
    return f->total_queued;
}

size_t fabric_queued(const struct fabric *f)
{
    return f->total_queued;
}

int fabric_poll_rx(struct fabric *f, int budget, fabric_rx_fn fn, void *opaque)
{
    int count = 0;

    while (count < budget) {
        struct fabric_hdr h;
        ssize_t n;
        uint32_t crc;

        n = recv(f->rxfd, f->rxbuf, sizeof(f->rxbuf), MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            break; /* EAGAIN or error: nothing more now */
        }
        count++;
        if ((size_t)n < FABRIC_HDR_SIZE || (size_t)n > sizeof(f->rxbuf) - 1) {
            f->st.rx_bad_length++;
            continue;
        }
        fabric_hdr_decode(&h, f->rxbuf);
        if (h.magic != FABRIC_MAGIC) {
            f->st.rx_bad_magic++;
            continue;
        }
        if (h.version != FABRIC_VERSION) {
            f->st.rx_bad_version++;
            continue;
        }
        if ((size_t)h.length != (size_t)n - FABRIC_HDR_SIZE) {
            f->st.rx_bad_length++;
            continue;
        }
        fabric_hdr_put_crc(f->rxbuf, 0);
        crc = fabric_crc32(0, f->rxbuf, n);
        if (crc != h.crc) {
            f->st.rx_bad_crc++;
            continue;
        }
        if (h.dst != f->cfg.node_id || h.src >= f->cfg.num_nodes) {
            f->st.rx_bad_addr++;
            continue;
        }
        if (h.type == FABRIC_TYPE_BULK) {
            fabric_bulk_doorbell(f, h.src, f->rxbuf + FABRIC_HDR_SIZE,
                                 h.length);
            continue;
        }
        f->st.rx_packets++;
        f->st.rx_bytes += n;
        if (fn) {
            fn(opaque, h.src, h.type, f->rxbuf + FABRIC_HDR_SIZE, h.length);
        }
    }
    if (count < budget && f->pin_list) {
        count += fabric_poll_pkts(f, budget - count, fn, opaque);
    }
    return count;
}

void fabric_get_stats(const struct fabric *f, struct fabric_stats *st)
{
    *st = f->st;
}

uint64_t fabric_ring_doorbells(const struct fabric *f)
{
    return f->st.tx_ring_doorbells;
}
