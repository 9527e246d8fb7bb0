/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Direct delivery: region access through the translation cache a node
 * exports (fabric-direct.h, Documentation/fabric.md section 9).
 *
 * Epochs: an entry is valid only while its epoch is the cache's.  An
 * accessor announces the epoch it uses in its busy record, then checks the
 * epoch is still current (both sequentially consistent); the owner's fence
 * makes a new epoch current, then waits until no busy record holds an
 * older one.  Either the accessor sees the new epoch (and uses no old
 * entry) or the fence sees its busy record (and waits for it).
 */
#include "fabric-direct-int.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Spins on a peer's access before asking whether the peer still lives */
#define FENCE_SPINS 4096

static struct direct_xlat_hdr *xhdr(struct fabric_direct_hdr *h)
{
    return (struct direct_xlat_hdr *)((uint8_t *)h + DIRECT_XLAT_OFF);
}

static struct direct_xlat_busy *xbusy(struct fabric_direct_hdr *h,
                                      uint32_t node)
{
    return (struct direct_xlat_busy *)((uint8_t *)h + DIRECT_XLAT_OFF +
                                       FABRIC_DIRECT_PAGE) + node;
}

/* Consecutive keys to consecutive slots; high parts (e.g. a rank) fold in */
static uint64_t xlat_slot(uint64_t key)
{
    return (key ^ (key >> 22) ^ (key >> 44)) & (FABRIC_DIRECT_XLAT_ENTRIES - 1);
}

static struct direct_xlat_entry *xent(struct fabric_direct *d,
                                      struct fabric_direct_hdr *h,
                                      uint64_t key)
{
    size_t busy = ((size_t)d->num_nodes * sizeof(struct direct_xlat_busy) +
                   FABRIC_DIRECT_PAGE - 1) & ~(size_t)(FABRIC_DIRECT_PAGE - 1);

    return (struct direct_xlat_entry *)((uint8_t *)h + DIRECT_XLAT_OFF +
                                        FABRIC_DIRECT_PAGE + busy) +
           xlat_slot(key);
}

void direct_xlat_reset(struct fabric_direct *d)
{
    struct direct_xlat_hdr *x = xhdr(d->hdr);

    /* never 0: a busy record of 0 means "no access" */
    if (__atomic_add_fetch(&x->epoch, 1, __ATOMIC_SEQ_CST) == 0) {
        __atomic_add_fetch(&x->epoch, 1, __ATOMIC_SEQ_CST);
    }
    d->xlat_filled = false;
}

void fabric_direct_xlat_fill(struct fabric_direct *d, uint64_t idx,
                             uint64_t ram, unsigned owner, unsigned perm,
                             uint32_t prot)
{
    struct direct_xlat_entry *e;
    uint64_t epoch;

    if (!d || (ram & (FABRIC_DIRECT_PAGE - 1)) || ram >= d->hdr->ram_size) {
        return;
    }
    e = xent(d, d->hdr, idx);
    epoch = __atomic_load_n(&xhdr(d->hdr)->epoch, __ATOMIC_RELAXED);
    /* readers of this epoch may hold the slot's key: it stays */
    if (e->epoch == epoch && e->key != idx) {
        d->xst.fill_clashes++;
        return;
    }
    __atomic_store_n(&e->val, FABRIC_DIRECT_X_ENTRY(ram, owner, perm, prot),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&e->key, idx, __ATOMIC_RELAXED);
    __atomic_store_n(&e->epoch, epoch, __ATOMIC_RELEASE);
    d->xlat_filled = true;
    d->xst.fills++;
}

bool fabric_direct_xlat_cached(const struct fabric_direct *d, uint64_t idx)
{
    struct fabric_direct *dm = (struct fabric_direct *)d;
    struct direct_xlat_entry *e;

    if (!d) {
        return false;
    }
    e = xent(dm, d->hdr, idx);
    return __atomic_load_n(&e->epoch, __ATOMIC_ACQUIRE) ==
           __atomic_load_n(&xhdr(d->hdr)->epoch, __ATOMIC_RELAXED) &&
           __atomic_load_n(&e->key, __ATOMIC_RELAXED) == idx;
}

bool fabric_direct_xlat_fence(struct fabric_direct *d)
{
    uint64_t epoch;
    bool waited = false;

    if (!d || !d->xlat_filled) {
        return false;
    }
    d->xlat_filled = false;
    epoch = __atomic_add_fetch(&xhdr(d->hdr)->epoch, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&xhdr(d->hdr)->fences, 1, __ATOMIC_RELAXED);
    d->xst.fences++;
    for (uint32_t n = 0; n < d->num_nodes; n++) {
        struct direct_xlat_busy *b = xbusy(d->hdr, n);
        unsigned spins = 0;
        uint64_t e;

        while ((e = __atomic_load_n(&b->epoch, __ATOMIC_SEQ_CST)) &&
               e < epoch) {
            waited = true;
            if (++spins < FENCE_SPINS) {
                __builtin_ia32_pause();
                continue;
            }
            spins = 0;
            /* a peer killed inside its access never ends it */
            if (!direct_pid_alive(__atomic_load_n(&b->pid,
                                                  __ATOMIC_RELAXED))) {
                __atomic_compare_exchange_n(&b->epoch, &e, 0, false,
                                            __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED);
                continue;
            }
            sched_yield();  /* the peer may wait for our host CPU */
        }
    }
    d->xst.fence_waits += waited;
    return true;
}

/* Host address of byte addr of the target's space, or NULL */
static uint8_t *xlat_page(struct fabric_direct *d, struct direct_peer *p,
                          uint64_t epoch, uint64_t idx, unsigned owner,
                          unsigned perm, uint32_t prot)
{
    struct direct_xlat_entry *e;
    uint64_t val, ram;

    e = xent(d, p->hdr, idx);
    if (__atomic_load_n(&e->epoch, __ATOMIC_ACQUIRE) != epoch ||
        __atomic_load_n(&e->key, __ATOMIC_RELAXED) != idx) {
        return NULL;
    }
    val = __atomic_load_n(&e->val, __ATOMIC_RELAXED);
    ram = FABRIC_DIRECT_X_RAM(val);
    if (!(val & FABRIC_DIRECT_X_VALID) || (val & perm) != perm ||
        FABRIC_DIRECT_X_OWNER(val) != owner ||
        FABRIC_DIRECT_X_PROT(val) != prot ||
        ram >= p->ram_size || p->ram_size - ram < FABRIC_DIRECT_PAGE) {
        return NULL;
    }
    return p->ram + ram;
}

enum fabric_direct_result fabric_direct_access(struct fabric_direct *d,
                                               uint32_t dst, uint64_t addr,
                                               uint32_t len, unsigned owner,
                                               unsigned perm, uint32_t prot,
                                               fabric_direct_span_fn fn,
                                               void *opaque)
{
    struct direct_peer *p;
    struct direct_xlat_busy *b;
    uint64_t epoch, a;
    uint32_t done;
    bool hit = true;

    p = d && dst < d->num_nodes && addr + len >= addr ?
        direct_peer_get(d, dst) : NULL;
    if (!p) {
        if (d) {
            d->xst.access_miss++;
        }
        return FABRIC_DIRECT_NO_PATH;
    }
    b = xbusy(p->hdr, d->node);
    __atomic_store_n(&b->pid, d->self, __ATOMIC_RELAXED);
    do {
        epoch = __atomic_load_n(&xhdr(p->hdr)->epoch, __ATOMIC_SEQ_CST);
        __atomic_store_n(&b->epoch, epoch, __ATOMIC_SEQ_CST);
    } while (__atomic_load_n(&xhdr(p->hdr)->epoch, __ATOMIC_SEQ_CST) !=
             epoch);
    /* every page first: nothing is touched unless all are there */
    for (a = addr & ~(uint64_t)(FABRIC_DIRECT_PAGE - 1);
         hit && a < addr + len; a += FABRIC_DIRECT_PAGE) {
        hit = xlat_page(d, p, epoch, a / FABRIC_DIRECT_PAGE, owner, perm,
                        prot) != NULL;
    }
    if (hit && !__atomic_load_n(&p->hdr->live, __ATOMIC_ACQUIRE)) {
        hit = false;
    }
    for (done = 0; hit && done < len;) {
        uint64_t at = addr + done;
        uint32_t off = at % FABRIC_DIRECT_PAGE;
        uint32_t n = FABRIC_DIRECT_PAGE - off;
        uint8_t *h = xlat_page(d, p, epoch, at / FABRIC_DIRECT_PAGE, owner,
                               perm, prot);

        if (n > len - done) {
            n = len - done;
        }
        /* pages adjacent in RAM too: one piece */
        while (done + n < len &&
               xlat_page(d, p, epoch, (at + n) / FABRIC_DIRECT_PAGE, owner,
                         perm, prot) == h + off + n) {
            uint32_t more = len - done - n;

            n += more < FABRIC_DIRECT_PAGE ? more : FABRIC_DIRECT_PAGE;
        }
        fn(opaque, h + off, done, n);
        done += n;
    }
    __atomic_store_n(&b->epoch, 0, __ATOMIC_RELEASE);
    /* the owner looking up its own memory is not an access to count */
    if (!hit) {
        d->xst.access_miss += dst != d->node;
        return FABRIC_DIRECT_NO_PATH;
    }
    if (dst != d->node) {
        d->xst.access++;
        d->xst.bytes += len;
    }
    return FABRIC_DIRECT_DONE;
}

void fabric_direct_spans_add(void *opaque, uint8_t *host, uint32_t off,
                             uint32_t len)
{
    struct fabric_direct_spans *s = opaque;

    (void)off;
    if (s->n == s->cap) {
        unsigned cap = s->cap ? s->cap * 2 : 16;
        struct fabric_direct_span *v = realloc(s->v, cap * sizeof(*v));

        if (!v) {
            abort();    /* as QEMU's g_malloc does */
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n].host = host;
    s->v[s->n].len = len;
    s->n++;
}

void fabric_direct_spans_move(struct fabric_direct_spans *s, uint8_t *host,
                              uint32_t n, bool to_spans)
{
    while (n && s->cur < s->n) {
        struct fabric_direct_span *sp = &s->v[s->cur];
        uint32_t k = sp->len - s->cur_off;

        if (k > n) {
            k = n;
        }
        if (to_spans) {
            memcpy(sp->host + s->cur_off, host, k);
        } else {
            memcpy(host, sp->host + s->cur_off, k);
        }
        host += k;
        n -= k;
        s->cur_off += k;
        if (s->cur_off == sp->len) {
            s->cur++;
            s->cur_off = 0;
        }
    }
}

void fabric_direct_spans_free(struct fabric_direct_spans *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

void fabric_direct_get_xlat_stats(const struct fabric_direct *d,
                                  struct fabric_direct_xlat_stats *st)
{
    *st = d->xst;
}
