/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Direct delivery: the shared receive-side NI state of a node and the
 * writes peers make through it (fabric-direct.h).
 */
#include "fabric-direct-int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A peer's file that is missing or not live is looked at again after this */
#define RETRY_NS    (100 * 1000 * 1000ull)
/*
 * A writer asks this often whether the owner's QEMU still runs: one that
 * was killed cannot clear live, and its RAM object lives on in our
 * mapping, so writes would vanish; the rings then report the loss.
 */
#define ALIVE_NS    (10 * 1000 * 1000ull)
/* Spins on a held lock before asking whether its holder still lives */
#define LOCK_SPINS  4096

_Static_assert(sizeof(struct fabric_direct_hdr) <= DIRECT_HDR_SIZE,
               "header page");

uint64_t direct_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct fabric_direct_queue *direct_qrec(struct fabric_direct_hdr *h,
                                        unsigned q)
{
    return (struct fabric_direct_queue *)((uint8_t *)h + DIRECT_HDR_SIZE +
                                          (size_t)q * DIRECT_QREC_SIZE);
}

size_t direct_file_size(uint32_t num_nodes)
{
    return DIRECT_XLAT_OFF + FABRIC_DIRECT_PAGE +
           (((size_t)num_nodes * sizeof(struct direct_xlat_busy) +
             FABRIC_DIRECT_PAGE - 1) & ~(size_t)(FABRIC_DIRECT_PAGE - 1)) +
           (size_t)FABRIC_DIRECT_XLAT_ENTRIES *
           sizeof(struct direct_xlat_entry);
}

static void *map_file(const char *path, bool create, size_t size)
{
    int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
    struct stat sb;
    void *p = MAP_FAILED;

    if (fd < 0) {
        return NULL;
    }
    if (fstat(fd, &sb) == 0 &&
        (create ? ((size_t)sb.st_size >= size || ftruncate(fd, size) == 0)
                : (size_t)sb.st_size >= size)) {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

bool direct_pid_alive(int32_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

void fabric_direct_lock(struct fabric_direct *d,
                        struct fabric_direct_queue *dq)
{
    unsigned spins = 0;

    for (;;) {
        uint32_t cur = 0;

        if (__atomic_compare_exchange_n(&dq->lock, &cur, (uint32_t)d->self,
                                        false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            return;
        }
        if (++spins < LOCK_SPINS) {
            __builtin_ia32_pause();
            continue;
        }
        spins = 0;
        /*
         * A holder that died mid-write never advanced wp: take the lock
         * over, the slot is written again by us.
         */
        if (cur && !direct_pid_alive((int32_t)cur) &&
            __atomic_compare_exchange_n(&dq->lock, &cur, (uint32_t)d->self,
                                        false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
            __atomic_fetch_add(&dq->lock_steals, 1, __ATOMIC_RELAXED);
            return;
        }
        sched_yield();  /* the holder may wait for our host CPU */
    }
}

void fabric_direct_unlock(struct fabric_direct_queue *dq)
{
    __atomic_store_n(&dq->lock, 0, __ATOMIC_RELEASE);
}

int fabric_direct_open(struct fabric_direct **out, const char *dir,
                       uint32_t node, uint32_t num_nodes, char *err,
                       size_t errlen)
{
    struct fabric_direct *d;
    char path[PATH_MAX];

    *out = NULL;
    if (!dir || !num_nodes || node >= num_nodes ||
        snprintf(path, sizeof(path), "%s/direct-%u", dir, node) >=
        (int)sizeof(path)) {
        snprintf(err, errlen, "direct delivery: bad directory or node");
        return -EINVAL;
    }
    d = calloc(1, sizeof(*d));
    if (!d) {
        return -ENOMEM;
    }
    d->node = node;
    d->num_nodes = num_nodes;
    d->self = getpid();
    d->dir = strdup(dir);
    d->peers = calloc(num_nodes, sizeof(*d->peers));
    d->file_size = direct_file_size(num_nodes);
    d->hdr = map_file(path, true, d->file_size);
    if (!d->dir || !d->peers || !d->hdr) {
        int e = errno ? errno : ENOMEM;

        snprintf(err, errlen, "direct delivery: %s: %s", path, strerror(e));
        fabric_direct_close(d);
        return -e;
    }
    /*
     * A previous owner (crashed, or this node's earlier boot) may have left
     * queues valid: peers still mapping the file see the incarnation
     * change and every queue invalid before this owner publishes anything.
     */
    __atomic_store_n(&d->hdr->live, 0, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&d->hdr->incarnation, 1, __ATOMIC_SEQ_CST);
    for (unsigned q = 0; q < FABRIC_DIRECT_QUEUES; q++) {
        fabric_direct_invalidate(d, q);
    }
    direct_xlat_reset(d);
    d->hdr->magic = FABRIC_DIRECT_MAGIC;
    d->hdr->version = FABRIC_DIRECT_VERSION;
    d->hdr->pid = d->self;
    d->hdr->ram_fd = -1;
    d->hdr->ram_size = 0;
    d->hdr->parked = 0;
    *out = d;
    return 0;
}

static void peer_unmap(struct fabric_direct *d, struct direct_peer *p)
{
    if (p->ram) {
        munmap(p->ram, p->ram_size);
        p->ram = NULL;
    }
    if (p->hdr) {
        munmap(p->hdr, d->file_size);
        p->hdr = NULL;
    }
    p->incarnation = 0;
}

void fabric_direct_close(struct fabric_direct *d)
{
    if (!d) {
        return;
    }
    if (d->hdr) {
        __atomic_store_n(&d->hdr->live, 0, __ATOMIC_SEQ_CST);
        for (unsigned q = 0; q < FABRIC_DIRECT_QUEUES; q++) {
            fabric_direct_invalidate(d, q);
        }
        munmap(d->hdr, d->file_size);
    }
    for (uint32_t n = 0; d->peers && n < d->num_nodes; n++) {
        peer_unmap(d, &d->peers[n]);
    }
    free(d->peers);
    free(d->dir);
    free(d);
}

void fabric_direct_set_ram(struct fabric_direct *d, int fd, uint64_t size)
{
    d->hdr->ram_fd = fd;
    d->hdr->ram_size = size;
    __atomic_store_n(&d->hdr->live, 1, __ATOMIC_SEQ_CST);
}

bool fabric_direct_live(const struct fabric_direct *d)
{
    return d && __atomic_load_n(&d->hdr->live, __ATOMIC_ACQUIRE);
}

struct fabric_direct_queue *fabric_direct_queue(struct fabric_direct *d,
                                                unsigned q)
{
    return q < FABRIC_DIRECT_QUEUES ? direct_qrec(d->hdr, q) : NULL;
}

void fabric_direct_invalidate(struct fabric_direct *d, unsigned q)
{
    struct fabric_direct_queue *dq = fabric_direct_queue(d, q);

    if (!dq) {
        return;
    }
    fabric_direct_lock(d, dq);
    dq->valid = 0;
    dq->generation++;
    fabric_direct_unlock(dq);
    if (d->exported_mask[q / 64] & (1ull << (q % 64))) {
        d->exported_mask[q / 64] &= ~(1ull << (q % 64));
        d->exported--;
    }
}

bool fabric_direct_exporting(const struct fabric_direct *d)
{
    return d && d->exported;
}

static int direct_export(struct fabric_direct *d, unsigned q, uint32_t mode,
                         uint32_t slot_size, uint32_t nslots,
                         uint32_t status_off, uint32_t phase_flag,
                         uint32_t prot, const uint64_t *pages, uint32_t npages)
{
    struct fabric_direct_queue *dq = fabric_direct_queue(d, q);
    uint64_t ram = d->hdr->ram_size;
    uint32_t ssize = mode == FABRIC_DIRECT_PHASE ? 4 : 8;

    if (!dq || !slot_size || FABRIC_DIRECT_PAGE % slot_size ||
        !nslots || (nslots & (nslots - 1)) ||
        (uint64_t)status_off + ssize > slot_size ||
        (status_off & (ssize - 1)) ||
        ((uint64_t)slot_size * nslots + FABRIC_DIRECT_PAGE - 1) /
        FABRIC_DIRECT_PAGE != npages ||
        npages > FABRIC_DIRECT_MAX_PAGES) {
        return -EINVAL;
    }
    for (uint32_t i = 0; i < npages; i++) {
        if ((pages[i] & (FABRIC_DIRECT_PAGE - 1)) || pages[i] >= ram ||
            ram - pages[i] < FABRIC_DIRECT_PAGE) {
            return -EINVAL;
        }
    }
    fabric_direct_lock(d, dq);
    dq->valid = 0;
    dq->generation++;
    dq->slot_size = slot_size;
    dq->nslots = nslots;
    dq->status_off = status_off;
    dq->prot = prot;
    dq->wp = 0;
    dq->mode = mode;
    dq->head = 0;
    dq->phase_flag = phase_flag;
    dq->hold = 0;
    memcpy(dq->pages, pages, (size_t)npages * sizeof(pages[0]));
    dq->incarnation = d->hdr->incarnation;
    dq->valid = 1;
    fabric_direct_unlock(dq);
    if (!(d->exported_mask[q / 64] & (1ull << (q % 64)))) {
        d->exported_mask[q / 64] |= 1ull << (q % 64);
        d->exported++;
    }
    return 0;
}

int fabric_direct_export_gate(struct fabric_direct *d, unsigned q,
                              uint32_t prot)
{
    struct fabric_direct_queue *dq = fabric_direct_queue(d, q);

    if (!dq) {
        return -EINVAL;
    }
    fabric_direct_lock(d, dq);
    dq->valid = 0;
    dq->generation++;
    dq->slot_size = 0;
    dq->nslots = 0;
    dq->status_off = 0;
    dq->prot = prot;
    dq->wp = 0;
    dq->mode = FABRIC_DIRECT_GATE;
    dq->head = 0;
    dq->hold = 0;
    dq->incarnation = d->hdr->incarnation;
    dq->valid = 1;
    fabric_direct_unlock(dq);
    /* not counted in exported: no software polls a gate's memory */
    return 0;
}

int fabric_direct_export(struct fabric_direct *d, unsigned q,
                         uint32_t slot_size, uint32_t nslots,
                         uint32_t status_off, uint32_t prot,
                         const uint64_t *pages, uint32_t npages)
{
    return direct_export(d, q, FABRIC_DIRECT_NONZERO, slot_size, nslots,
                         status_off, 0, prot, pages, npages);
}

int fabric_direct_export_phase(struct fabric_direct *d, unsigned q,
                               uint32_t slot_size, uint32_t nslots,
                               uint32_t status_off, uint32_t phase_flag,
                               uint32_t prot, const uint64_t *pages,
                               uint32_t npages)
{
    return direct_export(d, q, FABRIC_DIRECT_PHASE, slot_size, nslots,
                         status_off, phase_flag, prot, pages, npages);
}

void fabric_direct_set_head(struct fabric_direct *d, unsigned q,
                            uint32_t head)
{
    struct fabric_direct_queue *dq = fabric_direct_queue(d, q);

    if (dq) {
        fabric_direct_lock(d, dq);
        dq->head = head;
        fabric_direct_unlock(dq);
    }
}

void fabric_direct_set_hold(struct fabric_direct *d, unsigned q, bool hold)
{
    struct fabric_direct_queue *dq = fabric_direct_queue(d, q);

    if (dq) {
        fabric_direct_lock(d, dq);
        dq->hold = hold;
        fabric_direct_unlock(dq);
    }
}

void fabric_direct_set_prot(struct fabric_direct *d, unsigned q,
                            uint32_t prot)
{
    struct fabric_direct_queue *dq = fabric_direct_queue(d, q);

    if (dq) {
        fabric_direct_lock(d, dq);
        dq->prot = prot;
        fabric_direct_unlock(dq);
    }
}

void fabric_direct_set_parked(struct fabric_direct *d, bool parked)
{
    __atomic_store_n(&d->hdr->parked, parked, __ATOMIC_SEQ_CST);
}

uint64_t fabric_direct_rx_hops(const struct fabric_direct *d, unsigned hops)
{
    return d && hops < 16 ?
           __atomic_load_n(&d->hdr->rx_hops[hops], __ATOMIC_RELAXED) : 0;
}

uint64_t fabric_direct_deliveries(const struct fabric_direct *d)
{
    return __atomic_load_n(&d->hdr->deliveries, __ATOMIC_SEQ_CST);
}

/* Map node dst's file and, for its current incarnation, its RAM. */
struct direct_peer *direct_peer_get(struct fabric_direct *d, uint32_t dst)
{
    struct direct_peer *p = &d->peers[dst];
    struct fabric_direct_hdr *h;
    char path[PATH_MAX];
    uint64_t inc;
    int fd;

    if (!p->hdr) {
        uint64_t t = direct_now_ns();

        if (t < p->retry_ns) {
            return NULL;
        }
        p->retry_ns = t + RETRY_NS;
        snprintf(path, sizeof(path), "%s/direct-%u", d->dir, dst);
        p->hdr = map_file(path, false, d->file_size);
        if (!p->hdr) {
            return NULL;
        }
    }
    h = p->hdr;
    if (h->magic != FABRIC_DIRECT_MAGIC ||
        h->version != FABRIC_DIRECT_VERSION ||
        !__atomic_load_n(&h->live, __ATOMIC_ACQUIRE)) {
        return NULL;
    }
    inc = __atomic_load_n(&h->incarnation, __ATOMIC_ACQUIRE);
    if (p->ram && p->incarnation == inc) {
        uint64_t t = direct_now_ns();

        if (t - p->alive_ns < ALIVE_NS) {
            return p;
        }
        if (!direct_pid_alive(h->pid)) {
            return NULL;    /* killed: until a new incarnation opens */
        }
        p->alive_ns = t;
        return p;
    }
    /* A new incarnation: its RAM is another object. */
    if (p->ram) {
        munmap(p->ram, p->ram_size);
        p->ram = NULL;
    }
    if (direct_now_ns() < p->retry_ns && p->incarnation == inc) {
        return NULL;
    }
    p->retry_ns = direct_now_ns() + RETRY_NS;
    p->incarnation = inc;
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", h->pid, h->ram_fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return NULL;
    }
    p->ram_size = h->ram_size;
    p->ram = mmap(NULL, p->ram_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                  0);
    close(fd);
    if (p->ram == MAP_FAILED) {
        p->ram = NULL;
        return NULL;
    }
    /* the owner may have restarted while we opened its descriptor */
    if (__atomic_load_n(&h->incarnation, __ATOMIC_ACQUIRE) != inc) {
        munmap(p->ram, p->ram_size);
        p->ram = NULL;
        return NULL;
    }
    p->retry_ns = 0;
    p->alive_ns = direct_now_ns();
    d->st.peer_maps++;
    return p;
}

static uint8_t *slot_byte(struct direct_peer *p,
                          const struct fabric_direct_queue *dq,
                          uint32_t slot, uint32_t off)
{
    uint64_t b = (uint64_t)slot * dq->slot_size + off;
    uint64_t pg;

    /* the record is shared: check what an export checked once more */
    if (b / FABRIC_DIRECT_PAGE >= FABRIC_DIRECT_MAX_PAGES) {
        return NULL;
    }
    pg = dq->pages[b / FABRIC_DIRECT_PAGE];
    if (pg >= p->ram_size || p->ram_size - pg < FABRIC_DIRECT_PAGE) {
        return NULL;
    }
    return p->ram + pg + b % FABRIC_DIRECT_PAGE;
}

/* A writer's counters: the owner's own deliveries (rings) are not tx. */
static void count_write(struct fabric_direct *d, uint32_t dst,
                        enum fabric_direct_result r, bool wake)
{
    if (dst == d->node) {
        return;
    }
    switch (r) {
    case FABRIC_DIRECT_DONE:
        d->st.tx_direct++;
        d->st.wakes += wake;
        break;
    case FABRIC_DIRECT_FULL:
        d->st.tx_full++;
        break;
    case FABRIC_DIRECT_REFUSED:
        d->st.tx_refused++;
        break;
    case FABRIC_DIRECT_NO_PATH:
        d->st.tx_no_path++;
        break;
    }
}

/* A message is in dst's memory: count it there, and wake it if it parked */
static void delivered(struct fabric_direct *d, uint32_t dst,
                      struct direct_peer *p, uint32_t hops, bool *wake)
{
    if (dst != d->node) {
        __atomic_fetch_add(&p->hdr->rx_hops[hops < 15 ? hops : 15], 1,
                           __ATOMIC_RELAXED);
    }
    /*
     * After the status word: a parking owner either sees the count
     * change or has set parked before we read it (both seq_cst).
     */
    __atomic_fetch_add(&p->hdr->deliveries, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->hdr->parked, __ATOMIC_SEQ_CST)) {
        __atomic_fetch_add(&p->hdr->wakes_sent, 1, __ATOMIC_RELAXED);
        *wake = true;
    }
}

enum fabric_direct_result fabric_direct_write(struct fabric_direct *d,
                                              uint32_t dst, unsigned q,
                                              const struct fabric_direct_msg *m,
                                              bool *wake)
{
    struct direct_peer *p;
    struct fabric_direct_queue *dq;
    enum fabric_direct_result r = FABRIC_DIRECT_NO_PATH;
    uint8_t *status;   /* a 4- or 8-byte word, by kind */

    uint8_t *slot;
    uint32_t idx;

    *wake = false;
    if (!d) {
        return FABRIC_DIRECT_NO_PATH;
    }
    p = dst < d->num_nodes && q < FABRIC_DIRECT_QUEUES ? direct_peer_get(d, dst)
                                                        : NULL;
    if (!p) {
        count_write(d, dst, FABRIC_DIRECT_NO_PATH, false);
        return FABRIC_DIRECT_NO_PATH;
    }
    dq = direct_qrec(p->hdr, q);
    fabric_direct_lock(d, dq);
    if (!dq->valid || dq->incarnation != p->incarnation ||
        (dq->hold && dst != d->node) || dq->mode == FABRIC_DIRECT_GATE ||
        !__atomic_load_n(&p->hdr->live, __ATOMIC_ACQUIRE) ||
        m->len > dq->status_off ||
        (dq->mode == FABRIC_DIRECT_NONZERO && !m->status)) {
        goto out;
    }
    if (m->prot != dq->prot) {
        dq->refused++;
        r = FABRIC_DIRECT_REFUSED;
        goto out;
    }
    idx = dq->wp & (dq->nslots - 1);
    slot = slot_byte(p, dq, idx, 0);
    status = slot_byte(p, dq, idx, dq->status_off);
    if (!slot || !status) {
        goto out;
    }
    if (dq->mode == FABRIC_DIRECT_PHASE) {
        if (dq->wp - dq->head >= dq->nslots) {
            dq->full++;
            r = FABRIC_DIRECT_FULL;
            goto out;
        }
        memcpy(slot, m->payload, m->len);
        __atomic_store_n((uint32_t *)status,
                         ((dq->wp / dq->nslots) & 1) ? 0 : dq->phase_flag,
                         __ATOMIC_RELEASE);
    } else {
        if (__atomic_load_n((uint64_t *)status, __ATOMIC_ACQUIRE)) {
            dq->full++;
            r = FABRIC_DIRECT_FULL;
            goto out;
        }
        memcpy(slot, m->payload, m->len);
        __atomic_store_n((uint64_t *)status, m->status, __ATOMIC_RELEASE);
    }
    dq->wp++;
    dq->delivered++;
    r = FABRIC_DIRECT_DONE;
out:
    fabric_direct_unlock(dq);
    if (r == FABRIC_DIRECT_DONE) {
        delivered(d, dst, p, m->hops, wake);
    }
    count_write(d, dst, r, *wake);
    return r;
}

enum fabric_direct_result fabric_direct_gated(struct fabric_direct *d,
                                              uint32_t dst, unsigned q,
                                              uint32_t prot, uint32_t hops,
                                              bool (*fn)(void *opaque),
                                              void *opaque, bool *wake)
{
    struct direct_peer *p;
    struct fabric_direct_queue *dq;
    enum fabric_direct_result r = FABRIC_DIRECT_NO_PATH;

    *wake = false;
    p = d && dst < d->num_nodes && q < FABRIC_DIRECT_QUEUES ?
        direct_peer_get(d, dst) : NULL;
    if (!p) {
        if (d) {
            count_write(d, dst, r, false);
        }
        return r;
    }
    dq = direct_qrec(p->hdr, q);
    fabric_direct_lock(d, dq);
    if (!dq->valid || dq->incarnation != p->incarnation ||
        (dq->hold && dst != d->node) ||
        !__atomic_load_n(&p->hdr->live, __ATOMIC_ACQUIRE)) {
        goto out;
    }
    if (prot != dq->prot) {
        dq->refused++;
        r = FABRIC_DIRECT_REFUSED;
        goto out;
    }
    if (fn(opaque)) {
        dq->delivered++;
        r = FABRIC_DIRECT_DONE;
    }
out:
    fabric_direct_unlock(dq);
    if (r == FABRIC_DIRECT_DONE) {
        delivered(d, dst, p, hops, wake);
    }
    count_write(d, dst, r, *wake);
    return r;
}

void fabric_direct_count(struct fabric_direct *d, uint32_t dst, unsigned idx,
                         uint64_t n)
{
    struct direct_peer *p;

    p = d && dst < d->num_nodes && idx < FABRIC_DIRECT_MODEL_COUNTERS ?
        direct_peer_get(d, dst) : NULL;
    if (p) {
        __atomic_fetch_add(&p->hdr->rx_model[idx], n, __ATOMIC_RELAXED);
    }
}

uint64_t fabric_direct_counter(const struct fabric_direct *d, unsigned idx)
{
    return d && idx < FABRIC_DIRECT_MODEL_COUNTERS ?
           __atomic_load_n(&d->hdr->rx_model[idx], __ATOMIC_RELAXED) : 0;
}

bool fabric_direct_ready(struct fabric_direct *d, uint32_t dst, unsigned q,
                         uint32_t prot, bool need_room)
{
    struct direct_peer *p;
    struct fabric_direct_queue *dq;
    const uint8_t *status;
    bool ok;

    p = d && dst < d->num_nodes && q < FABRIC_DIRECT_QUEUES ?
        direct_peer_get(d, dst) : NULL;
    if (!p) {
        return false;
    }
    dq = direct_qrec(p->hdr, q);
    fabric_direct_lock(d, dq);
    ok = dq->valid && dq->incarnation == p->incarnation &&
         !(dq->hold && dst != d->node) && dq->prot == prot;
    if (ok && need_room && dq->mode != FABRIC_DIRECT_GATE) {
        if (dq->mode == FABRIC_DIRECT_PHASE) {
            ok = dq->wp - dq->head < dq->nslots;
        } else {
            status = slot_byte(p, dq, dq->wp & (dq->nslots - 1),
                               dq->status_off);
            ok = status &&
                 !__atomic_load_n((const uint64_t *)status, __ATOMIC_ACQUIRE);
        }
    }
    fabric_direct_unlock(dq);
    return ok;
}

void fabric_direct_get_stats(const struct fabric_direct *d,
                             struct fabric_direct_stats *st)
{
    *st = d->st;
}
