// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * extoll-regtest without the test harness (extoll-dev.h): the device, its
 * VELO and RMA parts and their notifications driven through the BARs.
 */
#define _GNU_SOURCE
#include "extoll-dev.h"

volatile uint8_t *bar0, *bar2, *bar3, *bar4; /* MMIO */
uint32_t node_id;
char dev[300]; /* sysfs directory of the device */
unsigned rma_stuck;

/* ---------------------------------------------------------------- setup */

volatile uint64_t *atu; /* 512 entries */

static void vreg64(int v, int r, uint64_t val)
{
    W64(bar0, EXTOLL_REG_VPID(v) + r, val);
}
void vreg32(int v, int r, uint32_t val)
{
    W32(bar0, EXTOLL_REG_VPID(v) + r, val);
}

void ep_init(struct ep *e, int vpid, int phys)
{
    e->vpid = vpid;
    e->ring = locked(4096);
    e->notiq = locked(4096);
    e->rd = e->nrd = 0;
    vreg32(vpid, EXTOLL_VPID_CTRL, 0);
    vreg64(vpid, EXTOLL_VPID_VELO_RING, phys_of((void *)e->ring));
    vreg32(vpid, EXTOLL_VPID_VELO_SLOTS, RING_SLOTS);
    vreg64(vpid, EXTOLL_VPID_NOTIQ, phys_of((void *)e->notiq));
    vreg32(vpid, EXTOLL_VPID_NOTIQ_ENTRIES, NOTIQ_ENT);
    vreg32(vpid, EXTOLL_VPID_CTRL,
           EXTOLL_VPID_VELO_RX | EXTOLL_VPID_VELO_TX | EXTOLL_VPID_RMA |
               (phys ? EXTOLL_VPID_RMA_PHYS : 0));
}

/* register len bytes at va as NLA pages starting at index first, protection ID prot */
uint64_t reg_prot(void *va, size_t len, unsigned first, int vpid, uint64_t perm,
                  unsigned prot)
{
    for (size_t o = 0; o < len; o += 4096) {
        atu[first + o / 4096] =
            EXTOLL_ATU_ENTRY(phys_of((char *)va + o), vpid, perm, prot);
    }
    (void)R32(bar0, EXTOLL_REG_ID);
    return (uint64_t)first << 12;
}

/* the same with protection ID 0 (the reset value of the VPID registers) */
uint64_t reg(void *va, size_t len, unsigned first, int vpid, uint64_t perm)
{
    return reg_prot(va, len, first, vpid, perm, 0);
}

void atu_init(void)
{
    atu = locked(4096);
    W64(bar0, EXTOLL_REG_ATU_BASE, phys_of((void *)atu));
    W32(bar0, EXTOLL_REG_ATU_ENTRIES, 512);
}

/* ---------------------------------------------------------------- VELO */

int velo_send(int vpid, unsigned node, unsigned dv, unsigned tag,
              const void *buf, unsigned len)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(vpid); /* MMIO */
    uint64_t q[15] = {0};
    double t0 = now();

    while (R64(pg, EXTOLL_VELO_CREDITS) == 0) {
        if (now() - t0 > 10) {
            return -1;
        }
    }
    memcpy(q, buf, len);
    W64(pg, EXTOLL_VELO_HDR, EXTOLL_VELO_MKHDR(node, dv, 1, tag, len));
    for (unsigned k = 0; k < (len + 7) / 8; k++) {
        W64(pg, EXTOLL_VELO_DATA(k), q[k]);
    }
    return 0;
}

/* returns status word or 0 on timeout */
uint64_t velo_recv(struct ep *e, void *buf, double tmo)
{
    volatile uint8_t *slot = e->ring + EXTOLL_VELO_SLOT_SIZE * e->rd; /* DMA */
    volatile uint64_t *st =                                           /* DMA */
        (volatile uint64_t *)(slot + EXTOLL_VELO_STATUS_OFF);         /* DMA */
    double t0 = now();
    uint64_t s;

    unsigned spin = 0;
    /* check the clock rarely: without a vDSO clocksource it is a syscall + MMIO */
    while (!(s = *st)) {
        if (!(++spin & 0xffff) && now() - t0 > tmo) {
            return 0;
        }
    }
    __sync_synchronize();
    memcpy(buf, (void *)slot, EXTOLL_VELO_ST_LEN(s));
    *st = 0;
    e->rd = (e->rd + 1) % RING_SLOTS;
    return s;
}

/*
 * Send window (BAR3): payload bytes into the VPID's window page (memory),
 * then one 64-bit header store to EXTOLL_VELO_WIN_SEND.  Waits for a credit
 * first unless nowait; returns -1 on timeout.
 */
int velo_win_send(int vpid, uint64_t hdr, const void *buf, unsigned len,
                  int nowait)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(vpid);      /* MMIO */
    volatile uint8_t *win = bar3 + EXTOLL_VELO_WIN_PAGE(vpid); /* MMIO */
    double t0 = now();

    while (!nowait && R64(pg, EXTOLL_VELO_CREDITS) == 0) {
        if (now() - t0 > 10) {
            return -1;
        }
    }
    for (unsigned i = 0; i < len; i++) {
        win[i] = ((const uint8_t *)buf)[i];
    }
    W64(pg, EXTOLL_VELO_WIN_SEND, hdr);
    return 0;
}

/* ---------------------------------------------------------------- RMA */

void rma_post(int vpid, unsigned opts, uint64_t w0, uint64_t w1, uint64_t w2)
{
    volatile uint8_t *pg = bar4 + EXTOLL_RMA_PAGE(vpid, opts); /* MMIO */
    double t0 = now();

    while (R64(pg, EXTOLL_RMA_CMD_FREE) == 0) {
        if (now() - t0 > 10) {
            printf("# CMD_FREE of VPID %d stuck\n", vpid);
            rma_stuck++;
            return;
        }
    }
    W64(pg, 0, w0);
    W64(pg, 8, w1);
    W64(pg, 16, w2);
}

int noti_get(struct ep *e, uint64_t *w0, uint64_t *w1, double tmo)
{
    volatile uint64_t *n = e->notiq + 2 * e->nrd; /* DMA */
    double t0 = now();

    unsigned spin = 0;
    while (!n[1]) {
        if (tmo == 0 || (!(++spin & 0xffff) && now() - t0 > tmo)) {
            return 0;
        }
    }
    __sync_synchronize();
    *w0 = n[0];
    *w1 = n[1];
    n[1] = 0;
    e->nrd = (e->nrd + 1) % NOTIQ_ENT;
    return 1;
}

#define N_SIZE(w) (EXTOLL_NOTI_W1_SIZE(w) + 1)

void dump(const char *what, uint64_t w0, uint64_t w1)
{
    printf("#   %s: w0=0x%llx size=%u vpid=%u node=%u type=%u cmd=%u err=%u\n",
           what, (unsigned long long)w0, N_SIZE(w1), EXTOLL_NOTI_W1_RVPID(w1),
           EXTOLL_NOTI_W1_RNODE(w1), EXTOLL_NOTI_W1_TYPE(w1),
           EXTOLL_NOTI_W1_CMD(w1), EXTOLL_NOTI_W1_ERR(w1));
}

/*
 * The next notification of e (within 5 s) has type, cmd and err, w0 w0x
 * (unless ~0) and size (unless 0); printed under the name what.
 */
bool noti_is(struct ep *e, const char *what, unsigned type, unsigned cmd,
             unsigned err, uint64_t w0x, unsigned size)
{
    uint64_t w0 = 0, w1 = 0;
    bool ok = noti_get(e, &w0, &w1, 5);

    if (ok) {
        dump(what, w0, w1);
    }
    return ok && EXTOLL_NOTI_W1_TYPE(w1) == type &&
           EXTOLL_NOTI_W1_CMD(w1) == cmd && EXTOLL_NOTI_W1_ERR(w1) == err &&
           (w0x == ~0ull || w0 == w0x) && (!size || N_SIZE(w1) == size);
}

/* Nothing in e's notification queue for a while; what names the check. */
bool no_noti(struct ep *e, const char *what)
{
    uint64_t w0, w1;
    bool got = noti_get(e, &w0, &w1, 0.3);

    if (got) {
        printf("# %s:\n", what);
        dump("unexpected", w0, w1);
    }
    return !got;
}

/* ---------------------------------------------------------------- misc */

uint64_t cnt(unsigned i)
{
    return R64(bar0, EXTOLL_REG_COUNTER(i));
}

void set_prot(int vpid, unsigned velo, unsigned rma)
{
    vreg32(vpid, EXTOLL_VPID_VELO_PROT, velo);
    vreg32(vpid, EXTOLL_VPID_RMA_PROT, rma);
}

int all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != v) {
            return 0;
        }
    }
    return 1;
}

/*
 * Seconds of silence after which a stream with budget n fails (5 ms doubling
 * to 100 ms).
 */
double budget_s(unsigned n)
{
    double t = 0;

    for (unsigned r = 0; r <= n; r++) {
        t += (r < 5 ? 5u << r : 100u) / 1000.0;
    }
    return t;
}

/* Until the VELO credits of VPID v are all back and it has no RMA command pending. */
void settle(int v, double tmo)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(v); /* MMIO */
    double t0 = now();

    while (
        (R64(pg, EXTOLL_VELO_CREDITS) != R32(bar0, EXTOLL_REG_VELO_CREDITS) ||
         R32(bar0, EXTOLL_REG_VPID(v) + EXTOLL_VPID_RMA_PENDING)) &&
        now() - t0 < tmo) {
        usleep(1000);
    }
}

void fuzz_mmio(long n)
{
    srandom(42);
    for (long i = 0; i < n; i++) {
        int which = random() % 3;
        uint64_t val = ((uint64_t)random() << 33) ^ random();
        if (random() % 4 == 0) {
            val &= 0xffff;
        }
        switch (which) {
        case 0: {
            uint32_t off = (random() % (EXTOLL_BAR_CTRL_SIZE / 4)) * 4;
            if (off == EXTOLL_REG_CTRL) {
                break;
            }
            if (random() & 1) {
                W32(bar0, off, val);
            } else {
                (void)R32(bar0, off);
            }
            break;
        }
        case 1: {
            uint32_t off = (random() % (EXTOLL_BAR_VELO_SIZE / 8)) * 8;
            if (random() & 1) {
                W64(bar2, off & ~0x7f8ul, val);
            } else {
                (void)R64(bar2, off);
            }
            break;
        }
        default: {
            uint32_t off = (random() % (EXTOLL_BAR_RMA_SIZE / 8)) * 8;
            if (random() & 1) {
                W64(bar4, off & ~0xfe0ul, val);
            } else {
                (void)R64(bar4, off);
            }
            break;
        }
        }
    }
    printf("# device alive after %ld accesses: id 0x%x\n", n,
           R32(bar0, EXTOLL_REG_ID));
}
