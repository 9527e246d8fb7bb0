/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fabric's shared-memory rings (fabric.h, "Bulk path" and "Packet
 * rings"): bulk records and packet records per ordered node pair, their
 * doorbells, delivery no earlier than the links allow.
 */
#include "fabric-int.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void fabric_bulk_unmap(struct bulk_map *m)
{
    if (m) {
        munmap(m->ctl, m->maplen);
        free(m);
    }
}

int fabric_bulk_path(char *buf, size_t len, const char *dir, uint32_t src,
                     uint32_t dst, bool pkt)
{
    int n =
        snprintf(buf, len, "%s/%s-%u-%u", dir, pkt ? "pkt" : "bulk", src, dst);

    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Unmap one of our rings; remove its file if it is still ours. */
void fabric_bulk_release(struct fabric *f, struct bulk_map *m)
{
    char path[4096];

    if (!m) {
        return;
    }
    if (!fabric_bulk_path(path, sizeof(path), f->dir, f->cfg.node_id, m->node,
                          m->pkt)) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct bulk_ctl c;

        if (fd >= 0) {
            if (pread(fd, &c, sizeof(c), 0) == sizeof(c) &&
                c.session == m->session) {
                unlink(path);
            }
            close(fd);
        }
    }
    fabric_bulk_unmap(m);
}

/* ------------------------------------------------------------------ */
/* Bulk path: shared-memory rings, see fabric.h */

uint64_t fabric_csum(const void *buf, size_t len)
{
    /*
     * Low half: XOR of all 64-bit words folded to 32 bits, so any single
     * flipped bit flips exactly one result bit.  High half: running sum of
     * running sums (position sensitive: catches reordered words).
     */
    const uint8_t *p = buf;
    uint64_t x0 = 0, x1 = 0, a = 0x9e3779b97f4a7c15ull, b = len, w;
    size_t n = len;

    while (n >= 16) {
        uint64_t w0, w1;

        memcpy(&w0, p, 8);
        memcpy(&w1, p + 8, 8);
        x0 ^= w0;
        x1 ^= w1;
        a += w0;
        b += a;
        a += w1;
        b += a;
        p += 16;
        n -= 16;
    }
    if (n) {
        uint8_t t[16] = {0};

        memcpy(t, p, n);
        memcpy(&w, t, 8);
        x0 ^= w;
        a += w;
        b += a;
        memcpy(&w, t + 8, 8);
        x1 ^= w;
        a += w;
        b += a;
    }
    x0 ^= x1;
    b = (b ^ a) * 0xff51afd7ed558ccdull;
    b ^= b >> 33;
    return (uint32_t)(x0 ^ (x0 >> 32)) | (b & 0xffffffff00000000ull);
}

/* Record header, little endian host layout (both ends are the same host). */
struct bulk_rec {
    uint32_t size; /* whole record, multiple of BULK_ALIGN */
    uint8_t type;  /* BULK_TYPE_PAD or the user's type */
    uint8_t rsv0;
    uint16_t hlen;
    uint32_t dlen;
    uint32_t src;
    uint32_t dst;
    uint32_t hcsum;    /* over this header (hcsum = 0) + user header */
    uint32_t dcsum_lo; /* fabric_csum() of the data */
    uint32_t dcsum_hi;
    uint64_t due_ns; /* CLOCK_MONOTONIC: deliverable from (links) */
    uint8_t hops;    /* over the torus */
    uint8_t rsv1[7];
};
_Static_assert(sizeof(struct bulk_rec) == BULK_REC_HDR, "record header size");
#define BULK_SIDEBAND_OFF offsetof(struct bulk_rec, due_ns)
#define BULK_SIDEBAND 16
/* A due time further ahead than this is not believed (hostile producer). */
#define BULK_DUE_MAX_NS 1000000000ull
/*
 * In dlen: the data carries no checksum.  Shared memory between two
 * processes of one host does not flip bits, so the producer checksums the
 * data only while corruption injection is on (what a link's CRC engine
 * would do in hardware at no cost); the header CRC is always there.
 */
#define BULK_DLEN_NO_CSUM 0x80000000u

static struct bulk_map *bulk_map_fd(int fd, size_t maplen)
{
    struct bulk_map *m = calloc(1, sizeof(*m));
    void *p;

    if (!m) {
        return NULL;
    }
    p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        free(m);
        return NULL;
    }
    m->ctl = p;
    m->ring = (uint8_t *)p + BULK_CTL_SIZE;
    m->maplen = maplen;
    return m;
}

/*
 * Create our (packet or bulk) ring towards dst (a fresh file: a restarted
 * consumer remaps).
 */
static int bulk_create(struct fabric *f, struct fabric_peer *p, bool pkt)
{
    char path[4096], tmp[4200];
    uint32_t size = pkt ? FABRIC_PKT_RING_SIZE : FABRIC_BULK_RING_SIZE;
    size_t maplen = BULK_CTL_SIZE + size;
    struct bulk_map *m;
    int fd, r;

    r = fabric_bulk_path(path, sizeof(path), f->dir, f->cfg.node_id, p->node,
                         pkt);
    if (r < 0) {
        return r;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
    unlink(tmp);
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return -errno;
    }
    if (ftruncate(fd, maplen) < 0) {
        r = -errno;
        goto fail;
    }
    m = bulk_map_fd(fd, maplen);
    if (!m) {
        r = -ENOMEM;
        goto fail;
    }
    m->size = size;
    m->node = p->node;
    m->pkt = pkt;
    do {
        m->session = rng_next(f) ^ now_ns() ^ ((uint64_t)getpid() << 32);
    } while (!m->session);
    m->ctl->size = m->size;
    m->ctl->src = f->cfg.node_id;
    m->ctl->dst = p->node;
    m->ctl->session = m->session;
    m->ctl->head = 0;
    m->ctl->tail = 0;
    m->ctl->armed = 1; /* nobody mapped it yet: ring the first time */
    __atomic_store_n(&m->ctl->magic, BULK_MAGIC, __ATOMIC_RELEASE);
    if (rename(tmp, path) < 0) {
        r = -errno;
        fabric_bulk_unmap(m);
        goto fail;
    }
    close(fd);
    if (pkt) {
        p->pout = m;
    } else {
        p->bout = m;
    }
    return 0;
fail:
    close(fd);
    unlink(tmp);
    return r;
}

/*
 * The doorbell datagram: the ring's session (8 bytes), for a packet ring
 * followed by DB_KIND_PKT.  Returns 0 or the send error.
 */
static int bulk_ring(struct fabric *f, struct fabric_peer *p,
                     struct bulk_map *m)
{
    uint8_t buf[FABRIC_HDR_SIZE + 9];
    size_t len = m->pkt ? 9 : 8;
    struct fabric_hdr h = {
        .magic = FABRIC_MAGIC,
        .version = FABRIC_VERSION,
        .type = FABRIC_TYPE_BULK,
        .length = len,
        .src = f->cfg.node_id,
        .dst = p->node,
        .crc = 0,
    };
    int r;

    fabric_hdr_encode(buf, &h);
    memcpy(buf + FABRIC_HDR_SIZE, &m->session, 8);
    buf[FABRIC_HDR_SIZE + 8] = DB_KIND_PKT;
    fabric_hdr_put_crc(buf, fabric_crc32(0, buf, FABRIC_HDR_SIZE + len));
    m->last_db_ns = now_ns();
    if (m->pkt) {
        f->st.tx_ring_doorbells++;
    } else {
        f->st.tx_bulk_doorbells++;
    }
    /* Doorbells are not subject to fault injection; queued like packets. */
    if (p->qhead) {
        fabric_flush(f);
        if (p->qhead) {
            return fabric_peer_enqueue(f, p, buf, FABRIC_HDR_SIZE + len) < 0
                       ? -ENOBUFS
                       : 0;
        }
    }
    r = fabric_peer_xmit(f, p, buf, FABRIC_HDR_SIZE + len);
    if (r == -EAGAIN) {
        return fabric_peer_enqueue(f, p, buf, FABRIC_HDR_SIZE + len) < 0
                   ? -ENOBUFS
                   : 0;
    }
    return r;
}

/*
 * Room for a record of hlen + dlen bytes on m: its ring offset and the
 * padding to skip before it.  Returns 0 or -EAGAIN (ring full).
 */
static int bulk_room(struct bulk_map *m, size_t hlen, size_t dlen,
                     uint64_t *off, uint32_t *pad)
{
    uint64_t need, head, tail, o;

    need = (BULK_REC_HDR + hlen + dlen + BULK_ALIGN - 1) &
           ~(uint64_t)(BULK_ALIGN - 1);
    tail = m->ctl->tail;
    head = ld_acq64(&m->ctl->head);
    o = tail & (m->size - 1);
    *pad = o + need > m->size ? m->size - o : 0;
    if (tail - head > m->size || need + *pad > m->size - (tail - head)) {
        return -EAGAIN;
    }
    *off = *pad ? 0 : o;
    return 0;
}

/*
 * Publish the record written at off (type, sub: the packet type of a
 * packet record) behind pad bytes of padding, and ring the doorbell if the
 * consumer asked for one.  Fault injection (corruption) happens here; drop
 * is the caller's (it does not publish).
 */
static void bulk_publish(struct fabric *f, struct fabric_peer *p,
                         struct bulk_map *m, uint64_t off, uint32_t pad,
                         uint8_t type, uint8_t sub, size_t hlen, size_t dlen,
                         const struct fabric_route_result *res, bool flip)
{
    uint8_t *r = m->ring + off;
    size_t total = BULK_REC_HDR + hlen + dlen;
    uint64_t tail, need, dcsum;
    struct bulk_rec rec;

    need = (total + BULK_ALIGN - 1) & ~(uint64_t)(BULK_ALIGN - 1);
    memset(&rec, 0, sizeof(rec));
    rec.size = need;
    rec.type = type;
    rec.rsv0 = sub;
    rec.hlen = hlen;
    rec.dlen = dlen;
    rec.src = f->cfg.node_id;
    rec.dst = m->node;
    rec.hops = res->hops > 255 ? 255 : res->hops;
    /* Records of a ring leave in order: never due before the one ahead. */
    rec.due_ns = res->due_ns > m->last_due_ns ? res->due_ns : m->last_due_ns;
    m->last_due_ns = rec.due_ns;
    if (f->cfg.corrupt_ppm || flip) {
        dcsum = fabric_csum(r + BULK_REC_HDR + rec.hlen, dlen);
        rec.dcsum_lo = (uint32_t)dcsum;
        rec.dcsum_hi = dcsum >> 32;
    } else {
        rec.dlen |= BULK_DLEN_NO_CSUM;
    }
    memcpy(r, &rec, sizeof(rec));
    rec.hcsum = fabric_crc32(0, r, BULK_REC_HDR);
    rec.hcsum = fabric_crc32(rec.hcsum, r + BULK_REC_HDR, rec.hlen);
    memcpy(r + offsetof(struct bulk_rec, hcsum), &rec.hcsum, 4);
    if (flip || rng_hit(f, f->cfg.corrupt_ppm)) {
        /*
         * Any bit except the framing: the size word and the type
         * byte (a record turned into padding would vanish uncounted),
         * and the torus side band (due time, hops), which is the
         * emulation's, not the wire's.
         */
        uint64_t bit = 40 + rng_next(f) % ((total - 5 - BULK_SIDEBAND) * 8);

        if (bit >= BULK_SIDEBAND_OFF * 8) {
            bit += BULK_SIDEBAND * 8;
        }

        r[bit / 8] ^= 1u << (bit % 8);
        if (m->pkt) {
            f->st.tx_inject_corrupt++;
        } else {
            f->st.tx_bulk_inject_corrupt++;
        }
    }

    tail = m->ctl->tail;
    if (pad) {
        struct bulk_rec padrec;

        memset(&padrec, 0, sizeof(padrec));
        padrec.size = pad;
        padrec.type = BULK_TYPE_PAD;
        memcpy(m->ring + (tail & (m->size - 1)), &padrec, sizeof(padrec));
        tail += pad;
    }
    st_rel64(&m->ctl->tail, tail + need);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if ((__atomic_load_n(&m->ctl->armed, __ATOMIC_RELAXED) &&
         __atomic_exchange_n(&m->ctl->armed, 0, __ATOMIC_SEQ_CST)) ||
        now_ns() - m->last_db_ns >
            (m->pkt ? FABRIC_PKT_DB_NS : FABRIC_BULK_DB_NS)) {
        bulk_ring(f, p, m);
    }
}

/* One packet as a record of our packet ring towards p. */
int fabric_pkt_send(struct fabric *f, struct fabric_peer *p, uint8_t type,
                    const void *payload, size_t len)
{
    struct fabric_route_result res;
    uint64_t off;
    uint32_t pad;
    int r;

    /* A node that is down has no socket: lost, as a datagram would be. */
    if (p->fd < 0) {
        r = fabric_peer_connect(f, p);
        if (r < 0) {
            if (fabric_peer_gone_errno(-r)) {
                f->st.tx_no_peer++;
                return -EHOSTUNREACH;
            }
            f->st.tx_errors++;
            return r;
        }
    }
    if (!p->pout) {
        r = bulk_create(f, p, true);
        if (r < 0) {
            f->st.tx_errors++;
            return r;
        }
    }
    if (rng_hit(f, f->cfg.drop_ppm)) {
        f->st.tx_inject_drop++;
        return FABRIC_SENT;
    }
    if (bulk_room(p->pout, 0, len, &off, &pad) < 0) {
        f->st.tx_queue_full++;
        /* A consumer that never mapped the ring must learn of it. */
        if (now_ns() - p->pout->last_db_ns > FABRIC_PKT_DB_NS) {
            bulk_ring(f, p, p->pout);
        }
        return -ENOBUFS;
    }
    r = fabric_route(f, p->node, FABRIC_HDR_SIZE + len, &res);
    if (r < 0) {
        return r == -ENOLINK ? FABRIC_SENT : r;
    }
    if (len) {
        memcpy(p->pout->ring + off + BULK_REC_HDR, payload, len);
    }
    bulk_publish(f, p, p->pout, off, pad, BULK_TYPE_PKT, type, 0, len, &res,
                 r == 1);
    f->st.tx_packets++;
    f->st.tx_bytes += FABRIC_HDR_SIZE + len;
    f->st.tx_ring_packets++;
    return FABRIC_SENT;
}

void *fabric_bulk_reserve(struct fabric *f, uint32_t dst, size_t hlen,
                          size_t dlen, int *err)
{
    struct fabric_peer *p;
    struct bulk_map *m;
    uint64_t off;
    uint32_t pad;
    int r;

    if (!f || dst >= f->cfg.num_nodes || hlen > FABRIC_BULK_MAX_HDR ||
        dlen > FABRIC_BULK_MAX_DATA || f->rsv_map) {
        *err = -EINVAL;
        return NULL;
    }
    p = fabric_get_peer(f, dst);
    if (!p) {
        *err = -ENOMEM;
        return NULL;
    }
    if (!p->bout) {
        r = bulk_create(f, p, false);
        if (r < 0) {
            f->st.tx_errors++;
            *err = r;
            return NULL;
        }
    }
    m = p->bout;
    /* control records (no data: ACKs, requests) are never held back */
    if (dlen && fabric_torus_booked(f->torus, dst, FABRIC_LINK_HORIZON_NS)) {
        f->st.tx_link_busy++;
        *err = -EBUSY;
        return NULL;
    }
    if (bulk_room(m, hlen, dlen, &off, &pad) < 0) {
        f->st.tx_bulk_full++;
        /* Make sure a consumer that never mapped the ring learns of it. */
        if (now_ns() - m->last_db_ns > FABRIC_BULK_DB_NS) {
            bulk_ring(f, p, m);
        }
        *err = -EAGAIN;
        return NULL;
    }
    f->rsv_map = m;
    f->rsv_off = off;
    f->rsv_pad = pad;
    f->rsv_hlen = hlen;
    f->rsv_dlen = dlen;
    *err = 0;
    return m->ring + f->rsv_off + BULK_REC_HDR;
}

void fabric_bulk_cancel(struct fabric *f)
{
    f->rsv_map = NULL;
}

int fabric_bulk_commit(struct fabric *f, uint8_t type)
{
    struct bulk_map *m = f->rsv_map;
    struct fabric_route_result res;
    int r;

    if (!m) {
        return -EINVAL;
    }
    f->rsv_map = NULL;
    if (type == BULK_TYPE_PAD || type == FABRIC_TYPE_BULK) {
        return -EINVAL;
    }
    if (rng_hit(f, f->cfg.drop_ppm)) {
        f->st.tx_bulk_inject_drop++;
        return FABRIC_SENT;
    }
    r = fabric_route(f, m->node, BULK_REC_HDR + f->rsv_hlen + f->rsv_dlen,
                     &res);
    if (r < 0) {
        if (r == -ENOLINK) {
            f->st.tx_bulk_inject_drop++;
        }
        return r == -ENOLINK ? FABRIC_SENT : r;
    }
    f->st.tx_bulk_records++;
    f->st.tx_bulk_bytes += BULK_REC_HDR + f->rsv_hlen + f->rsv_dlen;
    bulk_publish(f, f->peers[m->node], m, f->rsv_off, f->rsv_pad, type, 0,
                 f->rsv_hlen, f->rsv_dlen, &res, r == 1);
    return FABRIC_SENT;
}

void fabric_bulk_renew(struct fabric *f, uint32_t dst)
{
    struct fabric_peer *p;

    if (!f || dst >= f->cfg.num_nodes) {
        return;
    }
    p = f->peers[dst];
    if (!p || !p->bout || f->rsv_map == p->bout) {
        return;
    }
    fabric_bulk_release(f, p->bout);
    p->bout = NULL;
}

int fabric_bulk_send(struct fabric *f, uint32_t dst, uint8_t type,
                     const void *hdr, size_t hlen, const void *data,
                     size_t dlen)
{
    int err;
    uint8_t *p = fabric_bulk_reserve(f, dst, hlen, dlen, &err);

    if (!p) {
        return err;
    }
    if (hlen) {
        memcpy(p, hdr, hlen);
    }
    if (dlen) {
        memcpy(p + hlen, data, dlen);
    }
    return fabric_bulk_commit(f, type);
}

/* Doorbell from src: (re)map its (packet) ring when the session is new. */
void fabric_bulk_doorbell(struct fabric *f, uint32_t src, const uint8_t *pl,
                          size_t len)
{
    bool pkt = len == 9 && pl[8] == DB_KIND_PKT;
    struct bulk_map **slot = pkt ? &f->pin[src] : &f->bin[src];
    struct bulk_map **list = pkt ? &f->pin_list : &f->bin_list;
    struct bulk_map *m = *slot, **pp;
    char path[4096];
    struct bulk_ctl c;
    struct stat stb;
    uint64_t session;
    int fd;

    if ((len != 8 && !pkt) || src == f->cfg.node_id) {
        f->st.rx_bad_length++;
        return;
    }
    memcpy(&session, pl, 8);
    if (m && m->session == session) {
        return;
    }
    if (fabric_bulk_path(path, sizeof(path), f->dir, src, f->cfg.node_id, pkt) <
        0) {
        return;
    }
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    if (fstat(fd, &stb) < 0 || pread(fd, &c, sizeof(c), 0) != sizeof(c) ||
        c.magic != BULK_MAGIC || c.size < 4096 || c.size > (64u << 20) ||
        (c.size & (c.size - 1)) || c.src != src || c.dst != f->cfg.node_id ||
        (uint64_t)stb.st_size < BULK_CTL_SIZE + (uint64_t)c.size) {
        f->st.rx_bulk_bad_hdr++;
        close(fd);
        return;
    }
    if (m) {
        for (pp = list; *pp; pp = &(*pp)->next_in) {
            if (*pp == m) {
                *pp = m->next_in;
                break;
            }
        }
        fabric_bulk_unmap(m);
        *slot = NULL;
    }
    m = bulk_map_fd(fd, BULK_CTL_SIZE + c.size);
    close(fd);
    if (!m) {
        return;
    }
    m->size = c.size;
    m->session = c.session;
    m->node = src;
    m->pkt = pkt;
    m->next_in = *list;
    *list = m;
    *slot = m;
    if (pkt) {
        f->st.rx_ring_maps++;
    } else {
        f->st.rx_bulk_maps++;
    }
}

/*
 * The ring looks empty: ask the producer for a doorbell (armed = 1), then
 * look again (Dekker: the producer publishes tail, then reads armed).
 * Returns true if it is still empty, i.e. it is safe to sleep.
 */
static bool bulk_arm(struct bulk_map *m)
{
    __atomic_store_n(&m->ctl->armed, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return ld_acq64(&m->ctl->tail) == m->ctl->head;
}

/* Where the records of a ring go. */
struct bulk_sink {
    fabric_bulk_fn bulk; /* bulk records */
    fabric_rx_fn pkt;    /* packet records */
    void *opaque;
};

/* A packet record: bad ones count and drop like datagrams with a bad CRC. */
static void pkt_deliver(struct fabric *f, struct bulk_map *m,
                        const struct bulk_rec *rec, const uint8_t *data,
                        bool ok, const struct bulk_sink *sink)
{
    if (!ok || rec->hlen || rec->dlen > FABRIC_MAX_PAYLOAD ||
        rec->type != BULK_TYPE_PKT || rec->rsv0 == FABRIC_TYPE_BULK) {
        f->st.rx_bad_crc++;
        return;
    }
    f->st.rx_packets++;
    f->st.rx_bytes += FABRIC_HDR_SIZE + rec->dlen;
    f->st.rx_ring_packets++;
    f->st.rx_hops[rec->hops < 15 ? rec->hops : 15]++;
    if (sink->pkt) {
        sink->pkt(sink->opaque, m->node, rec->rsv0, data, rec->dlen);
    }
}

/*
 * Consume records of one ring; returns the number consumed.  Rings are
 * armed only by fabric_pkt_pending() / fabric_bulk_pending() (the
 * consumer may be a poller that wants no doorbells).
 */
static int bulk_drain(struct fabric *f, struct bulk_map *m, int budget,
                      const struct bulk_sink *sink)
{
    struct bulk_ctl *c = m->ctl;
    uint64_t head = c->head, tail, now = 0;
    int n = 0;

    while (n < budget) {
        struct bulk_rec rec;
        uint8_t *r;
        uint64_t off;
        uint32_t hcsum, dlen;

        tail = ld_acq64(&c->tail);
        if (head == tail) {
            break;
        }
        off = head & (m->size - 1);
        r = m->ring + off;
        memcpy(&rec, r, sizeof(rec));
        if (tail - head > m->size || rec.size < BULK_REC_HDR ||
            (rec.size & (BULK_ALIGN - 1)) || rec.size > m->size - off ||
            rec.size > tail - head) {
            /* Broken framing: skip everything published so far. */
            if (m->pkt) {
                f->st.rx_bad_crc++;
            } else {
                f->st.rx_bulk_bad_hdr++;
            }
            head = tail;
            st_rel64(&c->head, head);
            continue;
        }
        if (rec.type == BULK_TYPE_PAD) {
            head += rec.size;
            st_rel64(&c->head, head);
            continue;
        }
        /* Still on its way over the links: it and those behind it wait. */
        if (rec.due_ns > now) {
            now = now_ns();
            if (rec.due_ns > now && rec.due_ns - now < BULK_DUE_MAX_NS) {
                if (!f->next_due || rec.due_ns < f->next_due) {
                    f->next_due = rec.due_ns;
                }
                break;
            }
        }
        n++;
        f->rx_hops = rec.hops;
        hcsum = rec.hcsum;
        rec.hcsum = 0;
        dlen = rec.dlen & ~BULK_DLEN_NO_CSUM;
        if (rec.hlen > FABRIC_BULK_MAX_HDR || dlen > FABRIC_BULK_MAX_DATA ||
            BULK_REC_HDR + (uint64_t)rec.hlen + dlen > rec.size ||
            rec.src != m->node || rec.dst != f->cfg.node_id ||
            fabric_crc32(fabric_crc32(0, &rec, sizeof(rec)), r + BULK_REC_HDR,
                         rec.hlen) != hcsum) {
            if (m->pkt) {
                f->st.rx_bad_crc++;
            } else {
                f->st.rx_bulk_bad_hdr++;
            }
        } else {
            bool ok = true;

            if (!(rec.dlen & BULK_DLEN_NO_CSUM)) {
                uint64_t d = fabric_csum(r + BULK_REC_HDR + rec.hlen, dlen);
                ok = (uint32_t)d == rec.dcsum_lo &&
                     (uint32_t)(d >> 32) == rec.dcsum_hi;
            }
            rec.dlen = dlen;

            if (m->pkt) {
                pkt_deliver(f, m, &rec, r + BULK_REC_HDR, ok, sink);
            } else {
                if (!ok) {
                    f->st.rx_bulk_bad_data++;
                }
                f->st.rx_bulk_records++;
                f->st.rx_bulk_bytes += BULK_REC_HDR + rec.hlen + rec.dlen;
                f->st.rx_hops[rec.hops < 15 ? rec.hops : 15]++;
                if (sink->bulk) {
                    sink->bulk(sink->opaque, m->node, rec.type,
                               r + BULK_REC_HDR, rec.hlen,
                               r + BULK_REC_HDR + rec.hlen, rec.dlen, ok);
                }
            }
        }
        head += rec.size;
        st_rel64(&c->head, head);
    }
    return n;
}

int fabric_poll_pkts(struct fabric *f, int budget, fabric_rx_fn fn,
                     void *opaque)
{
    struct bulk_sink sink = {.pkt = fn, .opaque = opaque};
    int n = 0;

    for (struct bulk_map *m = f->pin_list; m && n < budget; m = m->next_in) {
        n += bulk_drain(f, m, budget - n, &sink);
    }
    return n;
}

/*
 * The record at the head of a non-empty ring may be delivered now; if it
 * waits for its links, note when it may (f->next_due).
 */
static bool head_due(struct fabric *f, struct bulk_map *m, uint64_t *now)
{
    uint64_t head = m->ctl->head;
    struct bulk_rec rec;

    memcpy(&rec, m->ring + (head & (m->size - 1)), sizeof(rec));
    if (rec.type == BULK_TYPE_PAD || rec.due_ns <= *now) {
        return true;
    }
    *now = now_ns();
    if (rec.due_ns <= *now || rec.due_ns - *now >= BULK_DUE_MAX_NS) {
        return true;
    }
    if (!f->next_due || rec.due_ns < f->next_due) {
        f->next_due = rec.due_ns;
    }
    return false;
}

/*
 * Records that may be delivered wait on a ring of the list; arm or disarm
 * the empty ones.  A ring whose head waits for its links is left armed or
 * not as asked: the caller looks again at fabric_next_due().
 */
static bool rings_pending(struct fabric *f, struct bulk_map *list, bool arm)
{
    bool pending = false;
    uint64_t now = 0;

    for (struct bulk_map *m = list; m; m = m->next_in) {
        if (arm) {
            if (!bulk_arm(m) && head_due(f, m, &now)) {
                pending = true;
            }
            continue;
        }
        if (__atomic_load_n(&m->ctl->armed, __ATOMIC_RELAXED)) {
            __atomic_store_n(&m->ctl->armed, 0, __ATOMIC_RELAXED);
        }
        if (ld_acq64(&m->ctl->tail) != m->ctl->head && head_due(f, m, &now)) {
            pending = true;
        }
    }
    return pending;
}

bool fabric_pkt_pending(struct fabric *f, bool arm)
{
    f->next_due = 0;
    return rings_pending(f, f->pin_list, arm);
}

int fabric_poll_bulk(struct fabric *f, int budget, fabric_bulk_fn fn,
                     void *opaque)
{
    struct bulk_sink sink = {.bulk = fn, .opaque = opaque};
    int n = 0;

    for (struct bulk_map *m = f->bin_list; m && n < budget; m = m->next_in) {
        n += bulk_drain(f, m, budget - n, &sink);
    }
    return n;
}

bool fabric_bulk_pending(struct fabric *f, bool arm)
{
    return rings_pending(f, f->bin_list, arm);
}

uint64_t fabric_next_due(const struct fabric *f)
{
    return f->next_due;
}

struct fabric_torus *fabric_torus(struct fabric *f)
{
    return f->torus;
}

unsigned fabric_rx_hops(const struct fabric *f)
{
    return f->rx_hops;
}

bool fabric_bulk_active(const struct fabric *f)
{
    return f->bin_list != NULL;
}
