/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the fabric transport (fabric.h): the state shared by the datagram
 * side (fabric.c) and the shared-memory rings (fabric-rings.c).  Private:
 * nothing outside these two files includes it.
 */
#ifndef EXANET_FABRIC_INT_H
#define EXANET_FABRIC_INT_H

#include "fabric.h"
#include "fabric-torus.h"

#include <endian.h>
#include <string.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>

struct fabric_qpkt {
    struct fabric_qpkt *next;
    size_t len;
    uint8_t data[];
};

/* Shared control block at the start of a bulk ring file. */
#define BULK_MAGIC 0x474e495242584558ull /* "EXBRING" */
#define BULK_CTL_SIZE 4096
#define BULK_REC_HDR 48
#define BULK_ALIGN 64
#define BULK_TYPE_PAD 0
#define BULK_TYPE_PKT 1 /* packet ring record; rsv0 = packet type */
#define DB_KIND_PKT 1   /* doorbell payload byte 8: a packet ring */

struct bulk_ctl {
    uint64_t magic;
    uint64_t session;
    uint32_t size; /* ring bytes, power of two */
    uint32_t src, dst;
    uint8_t pad0[BULK_ALIGN - 28];
    uint64_t tail; /* producer, free running */
    uint8_t pad1[BULK_ALIGN - 8];
    uint64_t head; /* consumer, free running */
    uint8_t pad2[BULK_ALIGN - 8];
    uint32_t armed; /* consumer idle: wants a doorbell */
};

struct bulk_map {
    struct bulk_ctl *ctl;
    uint8_t *ring;
    size_t maplen;
    uint64_t session;
    uint32_t size;
    uint32_t node;            /* peer */
    bool pkt;                 /* a packet ring (else bulk) */
    uint64_t last_db_ns;      /* producer: last doorbell */
    uint64_t last_due_ns;     /* producer: due time of the last record */
    struct bulk_map *next_in; /* consumer list */
};

struct fabric_peer {
    uint32_t node;
    struct bulk_map *bout; /* our ring towards this peer */
    struct bulk_map *pout; /* our packet ring towards this peer */
    int fd;                /* connected to node<N>.sock, -1 if not */
    bool watched;
    uint32_t qlen;
    struct fabric_qpkt *qhead, *qtail;
    struct fabric_peer *next_alloc;
};

struct fabric {
    struct fabric_config cfg;
    char *dir;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    ino_t ino;
    dev_t devno;
    int rxfd;
    struct fabric_peer **peers; /* indexed by node, lazily allocated */
    struct fabric_peer *alloc_list;
    size_t total_queued;
    uint64_t rng;
    struct fabric_stats st;
    struct bulk_map **bin; /* inbound rings by source, lazily */
    struct bulk_map *bin_list;
    struct bulk_map **pin; /* inbound packet rings by source */
    struct bulk_map *pin_list;
    struct bulk_map *rsv_map; /* open reservation */
    uint64_t rsv_off;         /* ring offset of the reserved record */
    uint32_t rsv_hlen, rsv_dlen, rsv_pad;
    struct fabric_torus *torus;
    unsigned rx_hops;  /* of the record being delivered */
    uint64_t next_due; /* earliest record waiting for its links */
    uint8_t rxbuf[FABRIC_HDR_SIZE + FABRIC_MAX_PAYLOAD + 1];
};

#define ld_acq64(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define st_rel64(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static inline uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The CRC field of an encoded header (computed with 0 there) */
static inline void fabric_hdr_put_crc(uint8_t *wire, uint32_t crc)
{
    crc = htole32(crc);
    memcpy(wire + offsetof(struct fabric_hdr, crc), &crc, sizeof(crc));
}

static inline uint64_t rng_next(struct fabric *f)
{
    return fabric_rng_next(&f->rng);
}

static inline void rng_seed(struct fabric *f, uint64_t seed)
{
    f->rng = fabric_rng_seed(seed, f->cfg.node_id, 0);
}

static inline bool rng_hit(struct fabric *f, uint32_t ppm)
{
    return fabric_rng_hit(&f->rng, ppm);
}

/* fabric.c */
struct fabric_peer *fabric_get_peer(struct fabric *f, uint32_t node);
int fabric_peer_connect(struct fabric *f, struct fabric_peer *p);
bool fabric_peer_gone_errno(int e);
int fabric_peer_xmit(struct fabric *f, struct fabric_peer *p,
                     const uint8_t *buf, size_t len);
int fabric_peer_enqueue(struct fabric *f, struct fabric_peer *p,
                        const uint8_t *buf, size_t len);

/* fabric-rings.c */
void fabric_bulk_release(struct fabric *f, struct bulk_map *m);
void fabric_bulk_unmap(struct bulk_map *m);
void fabric_bulk_doorbell(struct fabric *f, uint32_t src, const uint8_t *pl,
                          size_t len);
int fabric_pkt_send(struct fabric *f, struct fabric_peer *p, uint8_t type,
                    const void *payload, size_t len);
int fabric_bulk_path(char *buf, size_t len, const char *dir, uint32_t src,
                     uint32_t dst, bool pkt);

#endif
