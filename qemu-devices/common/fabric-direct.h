/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Direct delivery (Documentation/fabric.md section 9): the NI model of the
 * sending node writes a message into the target node's guest memory
 * itself, as the target NI's DMA would, so nothing runs on the target's
 * host threads for it.
 *
 * Each node publishes its receive-side NI state in <fabric dir>/direct-<N>
 * (struct fabric_direct_hdr, then FABRIC_DIRECT_QUEUES queue records): who
 * owns the node now (incarnation, pid), where its guest RAM is (a shared
 * memory object every peer maps on demand: /proc/<pid>/fd/<ram_fd>), and
 * per receive queue the protection id, the write index and the RAM offsets
 * of the queue's pages: the translation the target exported.  A queue is a
 * ring of fixed-size slots, of one of two kinds: a slot is present when its
 * 8-byte status word is non-zero and free when software zeroed it again
 * (EXTOLL VELO), or present when the phase bit of its 4-byte flags word
 * matches the lap (the ExaNet mailbox's format, not used by the model yet;
 * the owner keeps the consumer's head in the record, a slot is free when
 * wp - head < nslots).
 *
 * Writers of a queue (every peer, and the owner for what reaches it over
 * the rings) take the queue's lock, check the queue is valid for the
 * current incarnation and the protection id matches, check the slot at the
 * write index is free, write the payload, then the status word (release),
 * and advance the write index.  The owner invalidates a queue (disable,
 * new translation, reset) under the same lock: once
 * fabric_direct_invalidate() returned, no peer writes through the old
 * translation.  A writer that dies holding the lock has not advanced the
 * write index: the next writer takes the lock over and reuses the slot.
 *
 * Region access (RDMA) goes through the translation cache of the same
 * file: the owner fills an entry per page its own NI translated (RAM
 * offset, owner id, permissions, protection id), peers look pages up, and
 * an owner's fence ends the cache's epoch and waits until no peer still
 * uses an entry of the old one (fabric_direct_xlat_fence()).
 *
 * Plain POSIX C, no QEMU dependency (host unit tests: test_fabric_direct,
 * test_fabric_xlat).
 */
#ifndef EXANET_FABRIC_DIRECT_H
#define EXANET_FABRIC_DIRECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FABRIC_DIRECT_MAGIC     0x31524458u /* "XDR1" */
#define FABRIC_DIRECT_VERSION   5
#define FABRIC_DIRECT_QUEUES    128         /* receive queues per node */
#define FABRIC_DIRECT_PAGE      4096u
#define FABRIC_DIRECT_MAX_PAGES 2048        /* 8 MiB per queue */
/*
 * Longest a writer waits for the links' delivery time before it writes;
 * a route booked further ahead takes the rings.
 */
#define FABRIC_DIRECT_MAX_WAIT_NS (50 * 1000)

#define FABRIC_DIRECT_MODEL_COUNTERS 16

/* Shared header of a node's file (one page). */
struct fabric_direct_hdr {
    uint32_t magic;
    uint32_t version;
    uint64_t incarnation;   /* bumped by every owner that opens the file */
    uint32_t live;          /* RAM published, owner running */
    int32_t pid;            /* owner's pid */
    int32_t ram_fd;         /* the owner's descriptor of its guest RAM */
    uint32_t pad0;
    uint64_t ram_size;
    /* every direct write adds 1 after its status word (wake protocol) */
    uint64_t deliveries;
    /* owner's vCPUs parked: a writer must wake the node (doorbell) */
    uint32_t parked;
    uint32_t pad1;
    uint64_t wakes_sent;    /* doorbells writers sent because of parked */
    /* messages written into this node, by hop count (15: 15 or more) */
    uint64_t rx_hops[16];
    /* counters writers add to, defined by the model (fabric_direct_count) */
    uint64_t rx_model[FABRIC_DIRECT_MODEL_COUNTERS];
};

/* A receive queue as the owner exported it. */
struct fabric_direct_queue {
    uint32_t lock;          /* 0 free, else the holder's pid */
    uint32_t valid;
    uint64_t incarnation;   /* the header's when exported */
    uint64_t generation;    /* bumped by every export and invalidation */
    uint32_t slot_size;     /* divides FABRIC_DIRECT_PAGE */
    uint32_t nslots;        /* power of two */
    uint32_t status_off;    /* offset of the 8-byte status word in a slot */
    uint32_t prot;          /* protection id a writer must carry */
    uint32_t wp;            /* next slot to write, free running */
    uint32_t mode;          /* FABRIC_DIRECT_NONZERO / FABRIC_DIRECT_PHASE */
    uint32_t head;          /* PHASE: the consumer's head, free running */
    uint32_t phase_flag;    /* PHASE: the flags word of a slot in lap 0 */
    uint32_t hold;          /* the owner takes every message itself (rings) */
    uint32_t pad;
    uint64_t delivered;     /* messages written (owner and peers) */
    uint64_t refused;       /* wrong protection id */
    uint64_t full;          /* found the slot at wp in use */
    uint64_t lock_steals;   /* lock taken over from a dead holder */
    uint64_t pages[FABRIC_DIRECT_MAX_PAGES]; /* RAM offset of each page */
};

/* Kinds of queue (see the top of this file) */
#define FABRIC_DIRECT_NONZERO   0
#define FABRIC_DIRECT_PHASE     1
/* No ring: a gate for writes into regions (fabric_direct_gated()) */
#define FABRIC_DIRECT_GATE      2

/* What a write met (fabric_direct_write()). */
enum fabric_direct_result {
    FABRIC_DIRECT_DONE = 0,     /* written */
    FABRIC_DIRECT_FULL,         /* slot at wp in use: push back */
    FABRIC_DIRECT_REFUSED,      /* protection id mismatch, counted */
    FABRIC_DIRECT_NO_PATH,      /* no direct path now: use the rings */
};

struct fabric_direct;

/* One slot to write: payload at offset 0 of the slot, then the status. */
struct fabric_direct_msg {
    const void *payload;
    size_t len;             /* <= status_off */
    uint64_t status;        /* NONZERO: non-zero; PHASE: the writer's */
    uint32_t prot;
    uint32_t hops;          /* of its route, counted at the target */
};

/*
 * Open (create) <dir>/direct-<node> as its owner: a new incarnation, every
 * queue of the previous one invalid.  num_nodes bounds the peers.
 * Returns 0 or -errno with a message in err.
 */
int fabric_direct_open(struct fabric_direct **out, const char *dir,
                       uint32_t node, uint32_t num_nodes, char *err,
                       size_t errlen);
/* Marks the node not live (peers stop writing) and unmaps everything. */
void fabric_direct_close(struct fabric_direct *d);

/*
 * Publish the owner's guest RAM (a MAP_SHARED object of ram_size bytes
 * that peers open as /proc/<pid>/fd/<fd>) and go live.
 */
void fabric_direct_set_ram(struct fabric_direct *d, int fd, uint64_t size);
bool fabric_direct_live(const struct fabric_direct *d);

/*
 * Owner: export queue q (ring of nslots slots of slot_size bytes whose
 * pages are at RAM offsets pages[0 .. npages-1], npages = the ring's bytes
 * rounded up to pages).  Replaces a previous
 * export (which is invalidated first); wp starts at 0.  -EINVAL for bad
 * geometry or offsets outside the RAM.
 */
int fabric_direct_export(struct fabric_direct *d, unsigned q,
                         uint32_t slot_size, uint32_t nslots,
                         uint32_t status_off, uint32_t prot,
                         const uint64_t *pages, uint32_t npages);
/*
 * The same for a PHASE queue: the 4-byte flags word at status_off is
 * phase_flag in even laps (wp / nslots) and 0 in odd ones; head starts at 0.
 */
int fabric_direct_export_phase(struct fabric_direct *d, unsigned q,
                               uint32_t slot_size, uint32_t nslots,
                               uint32_t status_off, uint32_t phase_flag,
                               uint32_t prot, const uint64_t *pages,
                               uint32_t npages);
/*
 * Owner: export queue q as a gate without a ring: valid for protection id
 * prot, held with fabric_direct_set_hold(), for fabric_direct_gated().
 */
int fabric_direct_export_gate(struct fabric_direct *d, unsigned q,
                              uint32_t prot);
/* Owner, PHASE queue: the consumer's head moved (free running). */
void fabric_direct_set_head(struct fabric_direct *d, unsigned q,
                            uint32_t head);
/*
 * Owner: while hold is set, writers other than the owner get
 * FABRIC_DIRECT_NO_PATH (the owner must see each message itself, e.g. to
 * raise an interrupt).  Once it returns, no write is in progress.
 */
void fabric_direct_set_hold(struct fabric_direct *d, unsigned q, bool hold);
/* Owner: no writer uses queue q's translation once this returns. */
void fabric_direct_invalidate(struct fabric_direct *d, unsigned q);
/* Owner: some queue of ours is exported (its software polls memory). */
bool fabric_direct_exporting(const struct fabric_direct *d);
void fabric_direct_set_prot(struct fabric_direct *d, unsigned q,
                            uint32_t prot);

/* Owner: the queue record (for its own writes under the lock, counters). */
struct fabric_direct_queue *fabric_direct_queue(struct fabric_direct *d,
                                                unsigned q);
void fabric_direct_lock(struct fabric_direct *d,
                        struct fabric_direct_queue *dq);
void fabric_direct_unlock(struct fabric_direct_queue *dq);

/* Owner: parked vCPUs (writers then ask for a wake-up doorbell). */
void fabric_direct_set_parked(struct fabric_direct *d, bool parked);
/* Owner: messages peers wrote into this node that crossed hops links */
uint64_t fabric_direct_rx_hops(const struct fabric_direct *d, unsigned hops);
/* Owner: direct writes so far (changes when something arrived) */
uint64_t fabric_direct_deliveries(const struct fabric_direct *d);

/*
 * Writer: write msg into queue q of node dst.  *wake is set when the
 * target has parked vCPUs: the caller sends it a doorbell.
 */
enum fabric_direct_result fabric_direct_write(struct fabric_direct *d,
                                              uint32_t dst, unsigned q,
                                              const struct fabric_direct_msg *m,
                                              bool *wake);

/*
 * Writer: run fn(opaque) under the lock of gate (or queue) q of node dst
 * when it is live, valid for this incarnation, not held and of protection
 * id prot (else REFUSED, counted, or NO_PATH).  fn returns whether it
 * wrote: then DONE, the target's deliveries move on (it may have parked:
 * *wake) and a message of hops links is counted at the target.  fn writes
 * into dst's regions with fabric_direct_access(); the owner cannot hold
 * the gate or invalidate it in the meantime.
 */
enum fabric_direct_result fabric_direct_gated(struct fabric_direct *d,
                                              uint32_t dst, unsigned q,
                                              uint32_t prot, uint32_t hops,
                                              bool (*fn)(void *opaque),
                                              void *opaque, bool *wake);
/* Writer: add n to model counter idx of node dst (rx_model) */
void fabric_direct_count(struct fabric_direct *d, uint32_t dst, unsigned idx,
                         uint64_t n);
/* Owner: model counter idx, as writers added to it */
uint64_t fabric_direct_counter(const struct fabric_direct *d, unsigned idx);

/* A writer's writes into peers' queues (not the owner's own deliveries) */
struct fabric_direct_stats {
    uint64_t tx_direct;     /* written into peers' queues */
    uint64_t tx_full;
    uint64_t tx_refused;
    uint64_t tx_no_path;
    uint64_t peer_maps;     /* peer RAM (re)mapped */
    uint64_t wakes;         /* writes after which the target wanted a wake */
};
void fabric_direct_get_stats(const struct fabric_direct *d,
                             struct fabric_direct_stats *st);

/* ------------------------------------------------------------------ */
/* Region access: the translation cache (fabric-direct-xlat.c) */

/*
 * Slots of the cache.  A page's key is its page number in the NI's address
 * space (e.g. an EXTOLL NLA page, or rank << 48 | VA for ExaNet, over
 * FABRIC_DIRECT_PAGE); keys fold into slots, consecutive pages into
 * consecutive slots.  Two keys of one slot: the first filled in an epoch
 * stays, the other is not cached (its accesses take the rings).
 */
#define FABRIC_DIRECT_XLAT_ENTRIES  (1u << 22)
/* An entry's value: the layout of an EXTOLL ATU entry, RAM offset for bus */
#define FABRIC_DIRECT_X_VALID       0x1ull
#define FABRIC_DIRECT_X_READ        0x2ull
#define FABRIC_DIRECT_X_WRITE       0x4ull
#define FABRIC_DIRECT_X_RAM(val)    ((uint64_t)(val) & 0x0000fffffffff000ull)
#define FABRIC_DIRECT_X_ENTRY(ram, owner, perm, prot)                   \
    (FABRIC_DIRECT_X_RAM(ram) |                                         \
     ((uint64_t)((prot) & 0xffff) << 48) |                              \
     ((uint64_t)((owner) & 0xff) << 4) |                                \
     ((uint64_t)(perm) & 0x6) | FABRIC_DIRECT_X_VALID)
#define FABRIC_DIRECT_X_OWNER(val)  ((unsigned)((val) >> 4) & 0xff)
#define FABRIC_DIRECT_X_PROT(val)   ((uint32_t)((val) >> 48))

/*
 * Owner: its NI translated page key idx to RAM offset ram (page aligned) for
 * owner id owner with permissions perm (X_READ | X_WRITE) under protection
 * id prot.  Valid until the next fence.
 */
void fabric_direct_xlat_fill(struct fabric_direct *d, uint64_t idx,
                             uint64_t ram, unsigned owner, unsigned perm,
                             uint32_t prot);
/* Owner: page idx is cached in this epoch (no need to fill it again) */
bool fabric_direct_xlat_cached(const struct fabric_direct *d, uint64_t idx);
/*
 * Owner: forget every entry; once this returns no peer accesses memory
 * through one (it waits for accesses in progress, or their holder's death).
 * Cheap when nothing was filled since the last fence: false, no new epoch.
 */
bool fabric_direct_xlat_fence(struct fabric_direct *d);

/* A piece of a region access: host address in the target's RAM */
typedef void (*fabric_direct_span_fn)(void *opaque, uint8_t *host,
                                      uint32_t off, uint32_t len);
/*
 * Writer: access [addr, addr + len) of node dst's NI address space (page
 * size FABRIC_DIRECT_PAGE) as owner id owner, needing permissions perm,
 * with protection id prot.  Every page must be cached with those: then fn
 * is called for each piece in order (off = offset in the region) while
 * the target cannot end the epoch, and DONE is returned; otherwise
 * NO_PATH and nothing was accessed (the caller takes the rings, where the
 * target itself translates, fills the cache or reports the fault).
 */
enum fabric_direct_result fabric_direct_access(struct fabric_direct *d,
                                               uint32_t dst, uint64_t addr,
                                               uint32_t len, unsigned owner,
                                               unsigned perm, uint32_t prot,
                                               fabric_direct_span_fn fn,
                                               void *opaque);
/*
 * Pieces of host memory in order, e.g. a region of one's own RAM gathered
 * with fabric_direct_access(.., fabric_direct_spans_add, &spans), and a
 * cursor for copies between it and a peer's pieces.
 */
struct fabric_direct_span {
    uint8_t *host;
    uint32_t len;
};
struct fabric_direct_spans {
    struct fabric_direct_span *v;
    unsigned n, cap;
    unsigned cur;           /* cursor: span and offset in it */
    uint32_t cur_off;
};
/* fabric_direct_span_fn: append a piece (opaque: the spans) */
void fabric_direct_spans_add(void *opaque, uint8_t *host, uint32_t off,
                             uint32_t len);
/* Copy n bytes at the cursor from host into the spans (to_spans) or back */
void fabric_direct_spans_move(struct fabric_direct_spans *s, uint8_t *host,
                              uint32_t n, bool to_spans);
void fabric_direct_spans_free(struct fabric_direct_spans *s);

/*
 * Writer: queue q of node dst takes a write from us now (live, valid, not
 * held, protection id prot, and with room when need_room).  A hint: the
 * write itself checks again.
 */
bool fabric_direct_ready(struct fabric_direct *d, uint32_t dst, unsigned q,
                         uint32_t prot, bool need_room);

/* Region accesses of a writer and the owner's fences */
struct fabric_direct_xlat_stats {
    uint64_t access;        /* done */
    uint64_t access_miss;   /* a page not cached (or refused): rings */
    uint64_t bytes;
    uint64_t fills;         /* owner: entries filled */
    uint64_t fill_clashes;  /* owner: slot held by another key this epoch */
    uint64_t fences;        /* owner: fences that ended an epoch */
    uint64_t fence_waits;   /* ... that waited for a peer's access */
};
void fabric_direct_get_xlat_stats(const struct fabric_direct *d,
                                  struct fabric_direct_xlat_stats *st);

#endif
