/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Direct delivery: what fabric-direct.c (header, queues, writes) and
 * fabric-direct-xlat.c (translation cache, region access) share.
 * Private to those two files.
 */
#ifndef EXANET_FABRIC_DIRECT_INT_H
#define EXANET_FABRIC_DIRECT_INT_H

#include "fabric-direct.h"

/*
 * The file of a node: header page, queue records, then the translation
 * cache: its header page (epoch), one busy record per node of the fabric
 * and FABRIC_DIRECT_XLAT_ENTRIES entries (sparse: only filled pages cost).
 */
#define DIRECT_HDR_SIZE     FABRIC_DIRECT_PAGE
#define DIRECT_QREC_SIZE    ((sizeof(struct fabric_direct_queue) + 63) & \
                             ~(size_t)63)
#define DIRECT_XLAT_OFF     (((DIRECT_HDR_SIZE + FABRIC_DIRECT_QUEUES *     \
                               DIRECT_QREC_SIZE) + FABRIC_DIRECT_PAGE - 1) & \
                             ~(size_t)(FABRIC_DIRECT_PAGE - 1))

struct direct_xlat_hdr {
    uint64_t epoch;         /* entries of another epoch are not valid */
    uint64_t fences;
};

/* A peer's access in progress: the epoch it uses, 0 = none */
struct direct_xlat_busy {
    uint64_t epoch;
    int32_t pid;
    uint32_t pad;
};

/*
 * Slot xlat_slot(key) of the cache.  Within an epoch a slot holds one key:
 * a fill of another key that maps to a taken slot is dropped, so a reader
 * that saw the epoch (acquire) reads the key and value of one fill.
 */
struct direct_xlat_entry {
    uint64_t epoch;         /* written after val and key (release) */
    uint64_t val;           /* FABRIC_DIRECT_X_ENTRY() */
    uint64_t key;           /* the page it translates */
    uint64_t pad;
};

struct direct_peer {
    struct fabric_direct_hdr *hdr;  /* its file, NULL: not mapped */
    uint64_t retry_ns;
    uint8_t *ram;                   /* its guest RAM, for incarnation */
    uint64_t ram_size;
    uint64_t incarnation;
    uint64_t alive_ns;              /* owner's pid last seen alive */
};

struct fabric_direct {
    uint32_t node, num_nodes;
    char *dir;
    size_t file_size;
    struct fabric_direct_hdr *hdr;  /* own file */
    struct direct_peer *peers;
    int32_t self;                   /* lock token */
    unsigned exported;              /* own queues exported */
    uint64_t exported_mask[(FABRIC_DIRECT_QUEUES + 63) / 64];
    bool xlat_filled;               /* entries filled since the last fence */
    struct fabric_direct_stats st;
    struct fabric_direct_xlat_stats xst;
};

uint64_t direct_now_ns(void);
bool direct_pid_alive(int32_t pid);
/* Node dst's file and RAM mapped for its current incarnation, or NULL */
struct direct_peer *direct_peer_get(struct fabric_direct *d, uint32_t dst);
struct fabric_direct_queue *direct_qrec(struct fabric_direct_hdr *h,
                                        unsigned q);
/* Size of a node's file for a fabric of num_nodes */
size_t direct_file_size(uint32_t num_nodes);
/* The owner opened its file: no entry of an earlier owner is valid */
void direct_xlat_reset(struct fabric_direct *d);

#endif
