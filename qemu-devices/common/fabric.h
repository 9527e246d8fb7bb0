/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host-side fabric transport between the NIC models of several QEMU
 * processes (one process = one node).  Plain POSIX C and zlib (CRC-32), no
 * QEMU dependency: the QEMU glue is fabric-qemu.c, the host unit tests use
 * it directly.
 *
 * Each node owns one bound unix SOCK_DGRAM socket <dir>/node<N>.sock that
 * receives every packet for the node.  Sending to node M uses a per-peer
 * socket connected to <dir>/node<M>.sock, so a send is one send() syscall
 * with no intermediate process, and poll(POLLOUT) on the per-peer socket
 * tells exactly when the receiver has room again (link-level flow control).
 *
 * Wire format (little endian), struct fabric_hdr followed by the payload:
 *   magic 'EXFB', version, type (opaque to the fabric), payload length,
 *   source node, destination node, CRC32 (IEEE) over header (crc = 0) and
 *   payload.  The receiver drops and counts packets with a bad magic,
 *   version, length, CRC or destination; the NIC's retransmission recovers.
 *
 * Sends never block.  When the receiver's socket is full the packet is
 * queued on the per-peer queue (bounded, FIFO, per destination order is
 * kept) and flushed by fabric_flush() when the peer socket becomes
 * writable; the embedder learns which sockets to watch through the
 * watch callback.  A destination without a socket (node down) loses the
 * packet.  Fault injection (drop / corrupt in parts per million) happens
 * on the send side with a seeded PRNG.
 *
 * Packet rings (config pkt_ring): instead of one datagram per packet,
 * packets to a node are records on a shared-memory ring per ordered node
 * pair (the bulk ring code below, a separate file pkt-<src>-<dst> so bulk
 * data cannot hold up small packets).  The sender then makes no system
 * call per packet: it sends a doorbell datagram only when the receiver has
 * armed the ring (it is about to sleep), every FABRIC_PKT_DB_NS (a
 * restarted receiver maps the ring again), and for the first record.  The
 * receiver drains the rings in fabric_poll_rx() or,
 * without touching the socket, in fabric_poll_pkts() (QEMU: from the vCPU
 * whose guest polls the NI).  Order per destination, fault injection and
 * the statistics stay those of datagrams; a full ring loses the packet
 * (-ENOBUFS, tx_queue_full) like a full per-peer queue.
 *
 * Not thread safe: one fabric is used from one thread (QEMU: under the BQL).
 */
#ifndef EXANET_FABRIC_H
#define EXANET_FABRIC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define FABRIC_MAGIC 0x42465845u /* "EXFB" little endian */
#define FABRIC_VERSION 1
#define FABRIC_HDR_SIZE 20
#define FABRIC_MAX_PAYLOAD 2048
#define FABRIC_MAX_NODES (1u << 22)
#define FABRIC_DEFAULT_QUEUE 4096 /* packets queued per peer */
#define FABRIC_PPM 1000000u

/* Decoded wire header (the wire itself is packed little endian). */
struct fabric_hdr {
    uint32_t magic;
    uint8_t version;
    uint8_t type;
    uint16_t length; /* payload bytes */
    uint32_t src;
    uint32_t dst;
    uint32_t crc;
};

struct fabric_config {
    const char *dir; /* directory holding node<N>.sock */
    uint32_t node_id;
    uint32_t num_nodes;   /* 1..FABRIC_MAX_NODES, node_id < num_nodes */
    uint32_t drop_ppm;    /* fault injection: drop probability */
    uint32_t corrupt_ppm; /* fault injection: flip one bit */
    uint64_t seed;        /* PRNG seed (mixed with node_id) */
    uint32_t max_queue;   /* per peer; 0 = FABRIC_DEFAULT_QUEUE */
    bool pkt_ring;        /* packets over shared-memory rings (see above) */
    /*
     * The 3D torus (fabric-torus.h): dims all 0 = the default shape for
     * num_nodes; the rate (0 = unlimited) and latency of this node's
     * links.  Packets and bulk records follow its routes; with packet
     * rings they are delivered no earlier than the links allow.
     */
    uint32_t dims[3];
    uint32_t link_mbps;
    uint32_t link_ns;
    /*
     * Called when a socket starts (want_write) or stops needing POLLOUT
     * notification; the embedder then calls fabric_flush().  Before a
     * watched socket is closed the callback is called with false.
     * May be NULL (then the embedder calls fabric_flush() as it likes).
     */
    void (*watch)(void *opaque, int fd, bool want_write);
    void *watch_opaque;
};

struct fabric_stats {
    uint64_t tx_packets; /* handed to the kernel */
    uint64_t tx_bytes;
    uint64_t tx_queued;         /* packets that had to wait in a queue */
    uint64_t tx_queue_full;     /* lost: per-peer queue full */
    uint64_t tx_no_peer;        /* lost: destination socket missing */
    uint64_t tx_errors;         /* lost: other send errors */
    uint64_t tx_inject_drop;    /* fault injection: dropped */
    uint64_t tx_inject_corrupt; /* fault injection: corrupted */
    uint64_t rx_packets;        /* delivered to the rx callback */
    uint64_t rx_bytes;
    uint64_t rx_bad_magic;
    uint64_t rx_bad_version;
    uint64_t rx_bad_length;
    uint64_t rx_bad_crc;
    uint64_t rx_bad_addr; /* wrong destination or bad source */
    /* bulk path (shared-memory rings) */
    uint64_t tx_bulk_records;     /* records published */
    uint64_t tx_bulk_bytes;       /* header + data bytes published */
    uint64_t tx_bulk_full;        /* reservations refused: ring full */
    uint64_t tx_bulk_doorbells;   /* doorbell datagrams sent */
    uint64_t tx_bulk_inject_drop; /* fault injection: records not published */
    /* fault injection: records with a flipped bit */
    uint64_t tx_bulk_inject_corrupt;
    uint64_t rx_bulk_records;   /* records handed to the bulk callback */
    uint64_t rx_bulk_bytes;
    uint64_t rx_bulk_bad_hdr;  /* dropped: bad framing or header checksum */
    uint64_t rx_bulk_bad_data; /* delivered with data_ok = false */
    uint64_t rx_bulk_maps;     /* inbound rings (re)mapped */
    /* packet rings (pkt_ring); the packets also count in tx_ / rx_packets */
    uint64_t tx_ring_packets;   /* packets published on a packet ring */
    uint64_t tx_ring_doorbells; /* doorbell datagrams for packet rings */
    uint64_t rx_ring_packets;   /* packets taken from packet rings */
    uint64_t rx_ring_maps;      /* inbound packet rings (re)mapped */
    /* torus */
    uint64_t tx_no_route;     /* lost: every path to the node cut */
    uint64_t tx_link_drop;    /* lost: a cable's injected drop */
    uint64_t tx_link_corrupt; /* a cable flipped a bit */
    uint64_t tx_detours;      /* sent around a cable that is down */
    uint64_t tx_link_busy;    /* bulk records refused: the cable is booked */
    uint64_t rx_hops[16];     /* delivered, by hop count (last: 15 or more) */
};

/* Return codes of fabric_send() (>= 0) */
#define FABRIC_SENT 0
#define FABRIC_QUEUED 1

struct fabric;

typedef void (*fabric_rx_fn)(void *opaque, uint32_t src, uint8_t type,
                             const void *payload, size_t len);

/*
 * Create the node's socket (an existing stale <dir>/node<N>.sock is
 * replaced).  Returns 0 or a negative errno; err (may be NULL) gets a
 * message.
 */
int fabric_open(struct fabric **out, const struct fabric_config *cfg, char *err,
                size_t errlen);
void fabric_close(struct fabric *f);

/* The receive socket, to poll for POLLIN. */
int fabric_rx_fd(const struct fabric *f);

/*
 * Send one packet.  Returns FABRIC_SENT, FABRIC_QUEUED, or a negative
 * errno when the packet is lost: -EINVAL (bad arguments), -EHOSTUNREACH
 * (no such node / node down), -ENOBUFS (per-peer queue full), other send
 * errors.  A packet dropped by fault injection reports FABRIC_SENT.
 */
int fabric_send(struct fabric *f, uint32_t dst, uint8_t type,
                const void *payload, size_t len);

/* Push queued packets out; returns the number still queued. */
size_t fabric_flush(struct fabric *f);
size_t fabric_queued(const struct fabric *f);

/*
 * Receive up to budget packets without blocking and hand the valid ones
 * to fn: datagrams first, then packet-ring records.  Returns the number of
 * datagrams and records read (valid or not).
 */
int fabric_poll_rx(struct fabric *f, int budget, fabric_rx_fn fn, void *opaque);

/*
 * Packet rings only (no system call): hand up to budget packets of the
 * inbound packet rings that doorbells mapped to fn.  Returns the number of
 * records read.
 */
int fabric_poll_pkts(struct fabric *f, int budget, fabric_rx_fn fn,
                     void *opaque);
/*
 * An inbound packet ring has records waiting.  arm: ask the producers of
 * the empty rings for a doorbell (before sleeping without a time limit);
 * !arm: withdraw that request, the caller looks again by itself (it polls,
 * or sleeps with a time limit), so producers need not make a system call.
 */
bool fabric_pkt_pending(struct fabric *f, bool arm);

void fabric_get_stats(const struct fabric *f, struct fabric_stats *st);
/* The torus this node sits in (NULL before fabric_open succeeded). */
struct fabric_torus *fabric_torus(struct fabric *f);
/*
 * Take a packet or record of bytes over the torus to dst (fabric-torus.h)
 * and account for its fate.  Returns 0 (res, if given, has the hop count and
 * due time), 1 (delivered with a bit flipped on a cable), -ENOLINK (dropped
 * by a cable) or -EHOSTUNREACH (every path cut).  The transport does it for
 * what it carries; direct delivery (fabric-direct.h) calls it itself.
 */
struct fabric_route_result;
int fabric_route(struct fabric *f, uint32_t dst, size_t bytes,
                 struct fabric_route_result *res);
/* The same from node src (a read's answer, fabric_torus_route_from()) */
int fabric_route_from(struct fabric *f, uint32_t src, uint32_t dst,
                      size_t bytes, struct fabric_route_result *res);
/* Hop count of the packet or record the rx / bulk callback has now. */
unsigned fabric_rx_hops(const struct fabric *f);
/*
 * CLOCK_MONOTONIC ns at which the earliest record that waits for its
 * links (not deliverable yet) becomes deliverable, 0 if none; found by
 * the last fabric_pkt_pending() / fabric_bulk_pending().
 */
uint64_t fabric_next_due(const struct fabric *f);
/* stats.tx_ring_doorbells, cheaply (to trace the sends that rang one) */
uint64_t fabric_ring_doorbells(const struct fabric *f);

/*
 * Bulk path.  For every ordered pair (this node -> dst) the sender creates
 * <dir>/bulk-<src>-<dst>, a shared file mapping with a byte ring of
 * records; the receiver maps it when the first doorbell datagram (reserved
 * type FABRIC_TYPE_BULK) arrives.  A record is a header (hlen bytes,
 * protocol header of the user) plus data (dlen bytes).  The header always
 * carries a CRC-32; the data a checksum of its own only while corruption
 * injection is on (shared memory does not flip bits: the pass over every
 * byte at both ends would be pure cost, what a link does in hardware for
 * free).  The producer writes records straight into the mapping
 * (fabric_bulk_reserve / fabric_bulk_commit) and rings the doorbell only
 * when the consumer declared itself idle (armed the ring, see
 * fabric_bulk_pending()), or every FABRIC_BULK_DB_NS.
 *
 * Fault injection applies per record: drop = not published, corrupt = one
 * bit flipped after the checksums (header -> dropped by the receiver and
 * counted, data -> delivered with data_ok = false).
 */
#define FABRIC_TYPE_BULK 0xff            /* reserved datagram type (doorbell) */
#define FABRIC_BULK_RING_SIZE (4u << 20) /* bytes of records per pair */
#define FABRIC_BULK_MAX_HDR 1024
#define FABRIC_BULK_MAX_DATA (64u << 10)
#define FABRIC_BULK_DB_NS 10000000ull   /* doorbell at least every 10 ms */
#define FABRIC_PKT_RING_SIZE (1u << 20) /* bytes of packet records per pair */
#define FABRIC_PKT_DB_NS 100000000ull   /* packet rings: every 100 ms */
/*
 * A bulk record is refused (-EBUSY, the engine retries) while a cable on
 * its route is booked further ahead than this: link-level flow control,
 * so that a slow link holds back its senders instead of queueing
 * seconds of data behind their retransmission timers.  Waiting for the
 * link is not a loss: engines do not count it against their
 * retransmission budget.  Records without data (ACKs, read requests) are
 * never held back, as if on a virtual channel of their own: dropping
 * them would turn congestion into retransmissions.
 */
#define FABRIC_LINK_HORIZON_NS 1000000ull

typedef void (*fabric_bulk_fn)(void *opaque, uint32_t src, uint8_t type,
                               const void *hdr, size_t hlen, const void *data,
                               size_t dlen, bool data_ok);

/*
 * Reserve room for one record to dst: returns a pointer to hlen + dlen
 * bytes (header first) in the shared ring, or NULL with *err = -EAGAIN
 * (ring full: retry later), -EBUSY (a link of the route is booked beyond
 * FABRIC_LINK_HORIZON_NS: retry soon), -EINVAL, -ENOMEM, or a file
 * error.  Only one reservation may be open; it ends with
 * fabric_bulk_commit() or fabric_bulk_cancel().  type must not be
 * FABRIC_TYPE_BULK or 0.
 */
void *fabric_bulk_reserve(struct fabric *f, uint32_t dst, size_t hlen,
                          size_t dlen, int *err);
/* Publish the reserved record; returns FABRIC_SENT or a negative errno. */
int fabric_bulk_commit(struct fabric *f, uint8_t type);
void fabric_bulk_cancel(struct fabric *f);
/* reserve + copy + commit */
int fabric_bulk_send(struct fabric *f, uint32_t dst, uint8_t type,
                     const void *hdr, size_t hlen, const void *data,
                     size_t dlen);
/*
 * Abandon our ring towards dst: the next record goes to a fresh ring (a new
 * file and session), which the consumer maps on its next doorbell instead
 * of the old one.  Records not consumed yet are never delivered: a user
 * that gave up on them (and reported them failed) must not have them
 * arrive later, e.g. at a node that starts after they were written.
 */
void fabric_bulk_renew(struct fabric *f, uint32_t dst);
/*
 * Consume up to budget records from the inbound rings (mapped by doorbells
 * that fabric_poll_rx() received).  Returns the number consumed.
 */
int fabric_poll_bulk(struct fabric *f, int budget, fabric_bulk_fn fn,
                     void *opaque);
/*
 * An inbound bulk ring has records waiting; arm / !arm as for
 * fabric_pkt_pending() (call with arm before sleeping without a time
 * limit).  fabric_bulk_active(): any inbound bulk ring mapped.
 */
bool fabric_bulk_pending(struct fabric *f, bool arm);
bool fabric_bulk_active(const struct fabric *f);

/* Fast 64-bit checksum used by the bulk path (detects any 1-bit flip). */
uint64_t fabric_csum(const void *buf, size_t len);

/*
 * The fault-injection PRNG (xorshift64*, seeded through splitmix64 from the
 * seed, the node and a stream number, so the fabric and the links of one
 * node draw independent sequences).
 */
uint64_t fabric_rng_seed(uint64_t seed, uint32_t node, uint64_t stream);
uint64_t fabric_rng_next(uint64_t *state);
bool fabric_rng_hit(uint64_t *state, uint32_t ppm); /* true with ppm / 10^6 */

/* Helpers, exposed for tests. */
uint32_t fabric_crc32(uint32_t crc, const void *buf, size_t len);
void fabric_hdr_encode(uint8_t *wire, const struct fabric_hdr *h);
void fabric_hdr_decode(struct fabric_hdr *h, const uint8_t *wire);
int fabric_sock_path(char *buf, size_t len, const char *dir, uint32_t node);

#endif /* EXANET_FABRIC_H */
