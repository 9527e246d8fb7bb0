// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Driverless register-level test of the extoll QEMU model, run as root in a
 * guest without IOMMU (qemu-devices/tests/run-extoll-vm-tests.sh boots it).
 * BARs are mapped through /sys/bus/pci/devices/<bdf>/resource<n>; rings,
 * queues, the ATU table and buffers are locked pages whose physical
 * addresses come from /proc/self/pagemap (buffers need not be physically
 * contiguous: the ATU maps them page by page).
 *
 *   extoll-regtest self           loopback checks (VELO, send window, flow
 *                                 control, RMA, ATU errors)
 *   extoll-regtest prot           loopback checks of the protection IDs
 *   extoll-regtest serve SECS     node 1: VELO echo server on VPID 3, RMA target region
 *   extoll-regtest ping NODE N    N VELO round trips + RMA put/get against NODE
 *   extoll-regtest fuzz N         N random MMIO accesses, then "self"
 *   extoll-regtest dead NODE MAX  commands and VELO to NODE, which is not running:
 *                                 they fail after the retransmission budget
 *                                 (RETX_MAX must read MAX)
 *   extoll-regtest revive NODE    the same to NODE before it starts, then (once
 *                                 NODE runs "serve") the pair works
 */
#define _GNU_SOURCE
#include "devtest.h"
#include "extoll_hw.h"

static volatile uint8_t *bar0, *bar2, *bar3, *bar4; /* MMIO */
static uint32_t node_id;
static char dev[300]; /* sysfs directory of the device */

/* ---------------------------------------------------------------- setup */

#define RING_SLOTS 32 /* one page */
#define NOTIQ_ENT 256 /* one page */

static volatile uint64_t *atu; /* 512 entries */
struct ep {
    int vpid;
    volatile uint8_t *ring; /* DMA */
    volatile uint64_t *notiq; /* DMA */
    unsigned rd, nrd;
};

static void vreg64(int v, int r, uint64_t val)
{
    W64(bar0, EXTOLL_REG_VPID(v) + r, val);
}
static void vreg32(int v, int r, uint32_t val)
{
    W32(bar0, EXTOLL_REG_VPID(v) + r, val);
}

static void ep_init(struct ep *e, int vpid, int phys)
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
static uint64_t reg_prot(void *va, size_t len, unsigned first, int vpid,
                         uint64_t perm, unsigned prot)
{
    for (size_t o = 0; o < len; o += 4096) {
        atu[first + o / 4096] =
            EXTOLL_ATU_ENTRY(phys_of((char *)va + o), vpid, perm, prot);
    }
    (void)R32(bar0, EXTOLL_REG_ID);
    return (uint64_t)first << 12;
}

/* the same with protection ID 0 (the reset value of the VPID registers) */
static uint64_t reg(void *va, size_t len, unsigned first, int vpid,
                    uint64_t perm)
{
    return reg_prot(va, len, first, vpid, perm, 0);
}

static void atu_init(void)
{
    atu = locked(4096);
    W64(bar0, EXTOLL_REG_ATU_BASE, phys_of((void *)atu));
    W32(bar0, EXTOLL_REG_ATU_ENTRIES, 512);
}

/* ---------------------------------------------------------------- VELO */

static int velo_send(int vpid, unsigned node, unsigned dv, unsigned tag,
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
static uint64_t velo_recv(struct ep *e, void *buf, double tmo)
{
    volatile uint8_t *slot = e->ring + EXTOLL_VELO_SLOT_SIZE * e->rd; /* DMA */
    volatile uint64_t *st = /* DMA */
        (volatile uint64_t *)(slot + EXTOLL_VELO_STATUS_OFF); /* DMA */
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
static int velo_win_send(int vpid, uint64_t hdr, const void *buf, unsigned len,
                         int nowait)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(vpid); /* MMIO */
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

static uint64_t velo_recv(struct ep *e, void *buf, double tmo);

/* VPID 1 -> VPID 2 (ring 32 slots, consumer b) through the send window */
static void window_test(struct ep *b)
{
    volatile uint8_t *pg1 = bar2 + EXTOLL_VELO_PAGE(1); /* MMIO */
    volatile uint8_t *win1 = bar3 + EXTOLL_VELO_WIN_PAGE(1); /* MMIO */
    uint8_t buf[128], got[128];
    uint64_t s, drops0 = R64(pg1, EXTOLL_VELO_DROPS),
                tx0 = R64(bar0, EXTOLL_REG_COUNTER(0));
    int ok = 1;

    /* every length 0..120: payload, source, tag, MTT, length */
    for (unsigned len = 0; len <= 120; len++) {
        for (unsigned i = 0; i < len; i++) {
            buf[i] = (uint8_t)(len * 3 + i * 11);
        }
        memset(got, 0, sizeof got);
        if (velo_win_send(
                1, EXTOLL_VELO_MKHDR(node_id, 2, len & 3, 0x80 | len, len), buf,
                len, 0)) {
            ok = 0;
            break;
        }
        s = velo_recv(b, got, 5);
        if (!s || EXTOLL_VELO_ST_LEN(s) != len ||
            EXTOLL_VELO_ST_NODE(s) != node_id || EXTOLL_VELO_ST_VPID(s) != 1 ||
            EXTOLL_VELO_ST_TAG(s) != (0x80 | len) ||
            EXTOLL_VELO_ST_MTT(s) != (len & 3) || memcmp(buf, got, len)) {
            printf("  window len %u status 0x%llx\n", len,
                   (unsigned long long)s);
            ok = 0;
            break;
        }
    }
    EXPECT(ok, "send window: every length 0..120 intact (payload, source, tag, "
               "MTT, length)\n");

    /* the doorbell takes the window as it is then: later stores do not count */
    for (unsigned i = 0; i < 64; i++) {
        buf[i] = (uint8_t)(0xa0 + i);
    }
    velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 1, 64), buf, 64, 0);
    for (unsigned i = 0; i < 64; i++) {
        win1[i] = 0x55;
    }
    s = velo_recv(b, got, 5);
    EXPECT(
        s && EXTOLL_VELO_ST_LEN(s) == 64 && !memcmp(got, buf, 64),
        "send window: stores after the doorbell do not change the message\n");

    /* garbage doorbells: len 121, multicast bits, node out of range; a 32-bit store */
    velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 121), buf, 0, 0);
    velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 8) | (1ull << 31), buf,
                  8, 0);
    velo_win_send(1, EXTOLL_VELO_MKHDR(0xfff0, 2, 0, 0, 8), buf, 8, 0);
    W32(pg1, EXTOLL_VELO_WIN_SEND,
        (uint32_t)EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 0));
    EXPECT(R64(pg1, EXTOLL_VELO_DROPS) - drops0 == 3,
           "send window: 3 bad doorbells dropped and counted (%llu), 32-bit "
           "store ignored\n",
           (unsigned long long)(R64(pg1, EXTOLL_VELO_DROPS) - drops0));
    EXPECT(velo_recv(b, got, 0.3) == 0,
           "send window: nothing delivered for them\n");

    /* credits: no consumer; the ring (32) fills, then the credits run out */
    unsigned sent = 0, n = EXTOLL_VELO_TX_CREDITS + RING_SLOTS + 16;
    double t0 = now();
    while (sent < n && now() - t0 < 20) {
        uint32_t v = sent;

        if (R64(pg1, EXTOLL_VELO_CREDITS) == 0) {
            usleep(100000);
            if (R64(pg1, EXTOLL_VELO_CREDITS) == 0) {
                break;
            }
            continue;
        }
        velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 4), &v, 4, 1);
        sent++;
    }
    EXPECT(sent >= RING_SLOTS && sent < n && R64(pg1, EXTOLL_VELO_CREDITS) == 0,
           "send window: credits run out with a full ring (%u messages "
           "accepted)\n",
           sent);
    /* a doorbell without credit is dropped and counted, never delivered */
    drops0 = R64(pg1, EXTOLL_VELO_DROPS);
    {
        uint32_t v = 0xdead;

        velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 4), &v, 4, 1);
    }
    EXPECT(R64(pg1, EXTOLL_VELO_DROPS) - drops0 == 1,
           "send window: doorbell without credit dropped\n");
    ok = 1;
    for (unsigned i = 0; i < sent && ok; i++) {
        uint32_t v = ~0u;

        s = velo_recv(b, &v, 5);
        if (!s || v != i) {
            printf("  msg %u got 0x%x st 0x%llx\n", i, v, (unsigned long long)s);
            ok = 0;
        }
    }
    EXPECT(ok && velo_recv(b, got, 0.3) == 0,
           "send window: all %u accepted messages delivered once, in order, "
           "after back-pressure\n",
           sent);
    t0 = now();
    while (R64(pg1, EXTOLL_VELO_CREDITS) !=
               R32(bar0, EXTOLL_REG_VELO_CREDITS) &&
           now() - t0 < 5) {
        usleep(1000);
    }
    EXPECT(R64(pg1, EXTOLL_VELO_CREDITS) == R32(bar0, EXTOLL_REG_VELO_CREDITS),
           "send window: all credits back (%llu)\n",
           (unsigned long long)R64(pg1, EXTOLL_VELO_CREDITS));
    EXPECT(R64(bar0, EXTOLL_REG_COUNTER(0)) - tx0 == 121 + 1 + sent,
           "velo_tx counts the window messages\n");

    /* the window is cleared when VELO_TX switches: no bytes for the next owner */
    for (unsigned i = 0; i < 4096; i++) {
        win1[i] = 0x77;
    }
    vreg32(1, EXTOLL_VPID_CTRL,
           EXTOLL_VPID_VELO_RX | EXTOLL_VPID_RMA | EXTOLL_VPID_RMA_PHYS);
    ok = 1;
    for (unsigned i = 0; i < 4096; i++) {
        ok &= win1[i] == 0;
    }
    vreg32(1, EXTOLL_VPID_CTRL,
           EXTOLL_VPID_VELO_RX | EXTOLL_VPID_VELO_TX | EXTOLL_VPID_RMA |
               EXTOLL_VPID_RMA_PHYS);
    EXPECT(ok, "send window zeroed when VELO_TX is switched off\n");
    /* a disabled sender: doorbell dropped */
    vreg32(3, EXTOLL_VPID_CTRL, 0);
    drops0 = R64(bar2 + EXTOLL_VELO_PAGE(3), EXTOLL_VELO_DROPS);
    velo_win_send(3, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 8), buf, 8, 1);
    EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(3), EXTOLL_VELO_DROPS) - drops0 == 1 &&
               velo_recv(b, got, 0.3) == 0,
           "send window of a VPID without VELO_TX: dropped\n");
}

/* ---------------------------------------------------------------- RMA */

static void rma_post(int vpid, unsigned opts, uint64_t w0, uint64_t w1,
                     uint64_t w2)
{
    volatile uint8_t *pg = bar4 + EXTOLL_RMA_PAGE(vpid, opts); /* MMIO */
    double t0 = now();

    while (R64(pg, EXTOLL_RMA_CMD_FREE) == 0) {
        if (now() - t0 > 10) {
            printf("FAIL: CMD_FREE stuck\n");
            fails++;
            return;
        }
    }
    W64(pg, 0, w0);
    W64(pg, 8, w1);
    W64(pg, 16, w2);
}

static int noti_get(struct ep *e, uint64_t *w0, uint64_t *w1, double tmo)
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

static void dump(const char *what, uint64_t w0, uint64_t w1)
{
    printf("  %s: w0=0x%llx size=%u vpid=%u node=%u type=%u cmd=%u err=%u\n",
           what, (unsigned long long)w0, N_SIZE(w1), EXTOLL_NOTI_W1_RVPID(w1),
           EXTOLL_NOTI_W1_RNODE(w1), EXTOLL_NOTI_W1_TYPE(w1),
           EXTOLL_NOTI_W1_CMD(w1), EXTOLL_NOTI_W1_ERR(w1));
}

static int expect_noti(struct ep *e, const char *what, unsigned type,
                       unsigned cmd, unsigned err, uint64_t w0x, unsigned size,
                       uint64_t *w0o)
{
    uint64_t w0 = 0, w1 = 0;
    int ok = noti_get(e, &w0, &w1, 5);

    if (ok) {
        dump(what, w0, w1);
    }
    ok = ok && EXTOLL_NOTI_W1_TYPE(w1) == type &&
         EXTOLL_NOTI_W1_CMD(w1) == cmd && EXTOLL_NOTI_W1_ERR(w1) == err &&
         (w0x == ~0ull || w0 == w0x) && (!size || N_SIZE(w1) == size);
    EXPECT(ok, "%s notification\n", what);
    if (w0o) {
        *w0o = w0;
    }
    return ok;
}

static void self_test(void)
{
    struct ep a, b;
    uint8_t buf[128], got[128];
    uint64_t s;

    EXPECT(R32(bar0, EXTOLL_REG_ID) == EXTOLL_ID_MAGIC, "ID\n");
    EXPECT(R32(bar0, EXTOLL_REG_NUM_VPIDS) == EXTOLL_NUM_VPIDS, "NUM_VPIDS\n");
    node_id = R32(bar0, EXTOLL_REG_NODE_ID);
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&a, 1, 1);
    ep_init(&b, 2, 0);

    /* VELO loopback, 1..120 bytes */
    int ok = 1;
    for (unsigned len = 0; len <= 120; len += 17) {
        for (unsigned i = 0; i < len; i++) {
            buf[i] = len + i * 7;
        }
        velo_send(1, node_id, 2, len & 0xff, buf, len);
        s = velo_recv(&b, got, 5);
        if (!s || EXTOLL_VELO_ST_LEN(s) != len ||
            EXTOLL_VELO_ST_NODE(s) != node_id || EXTOLL_VELO_ST_VPID(s) != 1 ||
            EXTOLL_VELO_ST_TAG(s) != (len & 0xff) ||
            EXTOLL_VELO_ST_MTT(s) != 1 || !(s & EXTOLL_VELO_ST_EOM) ||
            memcmp(buf, got, len)) {
            printf("  len %u status 0x%llx\n", len, (unsigned long long)s);
            ok = 0;
        }
    }
    EXPECT(ok, "VELO loopback messages: payload, source, tag, length, MTT\n");

    /* flow control: 90 messages into a 32-slot ring, consumer late */
    ok = 1;
    for (unsigned i = 0; i < 90; i++) {
        uint32_t v = i;
        if (velo_send(1, node_id, 2, 0, &v, 4)) {
            ok = 0;
            break;
        }
    }
    usleep(200000);
    unsigned full = 0;
    for (unsigned i = 0; i < RING_SLOTS; i++) {
        full += *(volatile uint64_t *)(b.ring + 128 * i + 120) != 0; /* DMA */
    }
    EXPECT(full == RING_SLOTS,
           "ring full (%u slots) while 90 messages are pending\n", full);
    EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) <
               EXTOLL_VELO_TX_CREDITS,
           "sender credits consumed under back-pressure\n");
    for (unsigned i = 0; i < 90 && ok; i++) {
        uint32_t v = ~0u;
        s = velo_recv(&b, &v, 5);
        if (!s || v != i) {
            printf("  msg %u got %u st 0x%llx\n", i, v, (unsigned long long)s);
            ok = 0;
        }
    }
    EXPECT(ok, "all 90 messages delivered in order after back-pressure\n");
    EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 0,
           "no VELO drops\n");
    /* bad header: len 121 dropped and counted */
    W64(bar2 + EXTOLL_VELO_PAGE(1), 0,
        EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 121));
    EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 1,
           "oversize message dropped\n");

    window_test(&b);

    /* RMA put 10000 bytes a(VPID1) -> b(VPID2), unaligned */
    size_t L = 10000;
    uint8_t *src = locked(16384), *dst = locked(16384);
    uint64_t nsrc = reg(src, 16384, 16, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
    uint64_t ndst = reg(dst, 16384, 32, 2, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
    for (size_t i = 0; i < 16384; i++) {
        src[i] = i * 13 + 1;
    }
    unsigned F = EXTOLL_RMA_FRAG_SIZE, lo = (L - 1) / F * F;
    uint64_t nc1 = R64(bar4 + EXTOLL_RMA_PAGE(1, 0), EXTOLL_RMA_NOTI_COUNT);
    uint64_t nc2 = R64(bar4 + EXTOLL_RMA_PAGE(2, 5), EXTOLL_RMA_NOTI_COUNT);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nsrc + 3, ndst + 5);
    expect_noti(&b, "put completer", 4, 2, 0, ndst + 5 + lo, L - lo, NULL);
    EXPECT(!memcmp(src + 3, dst + 5, L) && dst[4] == 0 && dst[5 + L] == 0,
           "put data\n");
    expect_noti(&a, "put requester", 1, 2, 0, nsrc + 3 + lo, L - lo, NULL);
    EXPECT(
        R64(bar4 + EXTOLL_RMA_PAGE(1, 0), EXTOLL_RMA_NOTI_COUNT) == nc1 + 1 &&
            R64(bar4 + EXTOLL_RMA_PAGE(1, 7), EXTOLL_RMA_NOTI_COUNT) ==
                nc1 + 1 &&
            R64(bar4 + EXTOLL_RMA_PAGE(2, 0), EXTOLL_RMA_NOTI_COUNT) == nc2 + 1,
        "NOTI_COUNT: one more per VPID (requester, completer), in every page "
        "of it\n");

    /* RMA get back: a gets 5000 bytes from b into src+100 */
    memset(src, 0, 16384);
    L = 5000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_GET, node_id, 2, 7, 0, L - 1),
             ndst + 8, nsrc + 96);
    expect_noti(&a, "get requester", 1, 1, 0, nsrc + 96 + lo, L - lo, NULL);
    expect_noti(&b, "get responder", 2, 1, 0, ndst + 8 + lo, L - lo, NULL);
    expect_noti(&a, "get completer", 4, 11, 0, nsrc + 96 + lo, L - lo, NULL);
    EXPECT(!memcmp(src + 96, dst + 8, L) && src[95] == 0 && src[96 + L] == 0,
           "get data\n");

    /* immediate put of 5 bytes, notification put */
    memset(dst, 0, 64);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 2,
                             EXTOLL_NOTI_COMPLETER | EXTOLL_NOTI_REQUESTER, 0,
                             4),
             ndst + 16, 0x1122334455667788ull);
    expect_noti(&b, "imm put completer", 4, 6, 0, ndst + 16, 5, NULL);
    EXPECT(!memcmp(dst + 16, "\x88\x77\x66\x55\x44\0\0", 7),
           "immediate put data\n");
    expect_noti(&a, "imm put requester", 1, 6, 0, 0x1122334455667788ull, 5,
                NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE | EXTOLL_RMA_OPT_IRQ,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 2,
                             EXTOLL_NOTI_COMPLETER, 0, 0xab),
             0xfeedfacecafebeefull, 0);
    {
        uint64_t w0, w1;
        int ok2 = noti_get(&b, &w0, &w1, 5);
        if (ok2) {
            dump("notiput completer", w0, w1);
        }
        EXPECT(ok2 && w0 == 0xfeedfacecafebeefull && (w1 & 0xff) == 0xab &&
                   EXTOLL_NOTI_W1_CMD(w1) == 5 &&
                   EXTOLL_NOTI_W1_RVPID(w1) == 1 &&
                   EXTOLL_NOTI_W1_RNODE(w1) == node_id &&
                   EXTOLL_NOTI_W1_TYPE(w1) == 4,
               "notification put: payload, class, remote\n");
    }

    /* errors: target NLA owned by VPID 1 but command to VPID 2 */
    memset(src, 0x5a, 4096);
    memset(src, 0x11, 100);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2, 0, 0, 99), nsrc,
             nsrc + 200);
    expect_noti(&a, "foreign VPID put error", 1, 2, EXTOLL_NOTI_ERR_CMPL, ~0ull,
                0, NULL);
    EXPECT(src[200] == 0x5a, "victim memory unchanged\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2, 0, 0, 99), 0x1ff000,
             ndst);
    expect_noti(&a, "unregistered source error", 1, 2, EXTOLL_NOTI_ERR_REQ,
                ~0ull, 0, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(4, node_id, 2, 0, 0, 7),
             nsrc, ndst);
    expect_noti(&a, "illegal command 4", 1, 4, EXTOLL_NOTI_ERR_REQ, ~0ull, 0,
                NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_PUT, node_id, 2, 0, 0, 11), nsrc,
             ndst);
    expect_noti(&a, "qw put size 12", 1, 3, EXTOLL_NOTI_ERR_REQ, ~0ull, 0,
                NULL);
    rma_post(2, 0, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1, 0, 0, 7),
             phys_of(dst), phys_of(src));
    expect_noti(&b, "physical page without RMA_PHYS", 1, 2, EXTOLL_NOTI_ERR_REQ,
                ~0ull, 0, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 2, 0, 0, 99), nsrc,
             nsrc); /* remote read of an NLA VPID 2 does not own */
    expect_noti(&a, "get of foreign NLA", 1, 0, EXTOLL_NOTI_ERR_RESP, ~0ull, 0,
                NULL);
    /* physical put by VPID 1 (RMA_PHYS) to itself */
    memset(dst + 8192, 0, 64);
    rma_post(1, 0,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1,
                             EXTOLL_NOTI_COMPLETER, 0, 31),
             phys_of(src), phys_of(src + 4096));
    expect_noti(&a, "physical put completer", 4, 2, 0, phys_of(src + 4096), 32,
                NULL);
    EXPECT(!memcmp(src, src + 4096, 32), "physical put data\n");

    /* notification queue full: 300 notification puts into 256 entries */
    for (unsigned i = 0; i < 300; i++) {
        rma_post(1, EXTOLL_RMA_OPT_TE,
                 EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 2,
                                 EXTOLL_NOTI_COMPLETER, 0, 1),
                 i, 0);
    }
    usleep(300000);
    ok = 1;
    for (unsigned i = 0; i < 300 && ok; i++) {
        uint64_t w0, w1;
        if (!noti_get(&b, &w0, &w1, 5) || w0 != i) {
            printf("  noti %u: w0 %llu\n", i, (unsigned long long)w0);
            ok = 0;
        }
    }
    EXPECT(ok, "300 notification puts through a 256-entry queue, none lost, in "
               "order\n");
    usleep(100000);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "no pending commands\n");
    {
        uint64_t w0, w1;
        EXPECT(!noti_get(&a, &w0, &w1, 0.2),
               "no stray notifications at the origin\n");
    }
    for (unsigned i = 0; i < EXTOLL_NUM_COUNTERS; i++) {
        printf("# counter %u = %llu\n", i,
               (unsigned long long)R64(bar0, EXTOLL_REG_COUNTER(i)));
    }
}

/* ---------------------------------------------------------------- protection IDs */

static uint64_t cnt(unsigned i)
{
    return R64(bar0, EXTOLL_REG_COUNTER(i));
}

static void set_prot(int vpid, unsigned velo, unsigned rma)
{
    vreg32(vpid, EXTOLL_VPID_VELO_PROT, velo);
    vreg32(vpid, EXTOLL_VPID_RMA_PROT, rma);
}

/* nothing in e's notification queue for a while */
static void expect_no_noti(struct ep *e, const char *what)
{
    uint64_t w0, w1;
    int got = noti_get(e, &w0, &w1, 0.3);

    if (got) {
        dump("unexpected", w0, w1);
    }
    EXPECT(!got, "%s\n", what);
}

static int all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != v) {
            return 0;
        }
    }
    return 1;
}

#define PA 0x0a0a
#define PB 0xb00b

/*
 * VPID 1 (a): VELO PA, RMA PA.  VPID 2 (b): VELO PA, RMA PB (the two parts
 * have independent IDs).  VPID 3 (c): VELO PB, RMA PA.
 */
static void prot_test(void)
{
    struct ep a, b, c;
    uint64_t r0, f0, d0;
    double t0;
    unsigned F = EXTOLL_RMA_FRAG_SIZE;
    int ok;

    node_id = R32(bar0, EXTOLL_REG_NODE_ID);
    EXPECT(R32(bar0, EXTOLL_REG_VERSION) == EXTOLL_HW_VERSION &&
               EXTOLL_HW_VERSION >= 2 &&
               sysfs_hex(dev, "revision") == EXTOLL_HW_VERSION,
           "hardware version and PCI revision %u\n", EXTOLL_HW_VERSION);
    set_prot(7, 0x1234, 0x5678);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) == 0x1234 &&
               R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0x5678,
           "PROT registers read back\n");
    set_prot(7, 0xfffff0f0, 0xabcd0f0f);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) == 0xf0f0 &&
               R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0x0f0f,
           "PROT registers keep bits 0-15\n");
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_VELO_PROT) == 0 &&
               R32(bar0, EXTOLL_REG_VPID(7) + EXTOLL_VPID_RMA_PROT) == 0,
           "PROT registers 0 after CTRL_RESET\n");

    atu_init();
    ep_init(&a, 1, 0);
    ep_init(&b, 2, 0);
    ep_init(&c, 3, 0);
    set_prot(1, PA, PA);
    set_prot(2, PA, PB);
    set_prot(3, PB, PA);
    uint8_t *srcA = locked(8192), *dstB = locked(8192), *dstC = locked(8192);
    uint8_t *badC = locked(4096), *badA = locked(4096);
    uint64_t nA =
        reg_prot(srcA, 8192, 16, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PA);
    uint64_t nB =
        reg_prot(dstB, 8192, 32, 2, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    uint64_t nC =
        reg_prot(dstC, 8192, 48, 3, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PA);
    /* owner VPID right, protection ID not the owner's */
    uint64_t nbadC =
        reg_prot(badC, 4096, 64, 3, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    uint64_t nbadA =
        reg_prot(badA, 4096, 80, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PB);
    for (size_t i = 0; i < 8192; i++) {
        srcA[i] = i * 29 + 7;
    }
    memset(dstB, 0x5a, 8192);
    memset(badC, 0x5a, 4096);
    memset(badA, 0x11, 4096);

    /* (a) RMA_PROT PA -> PB: every command refused, the target untouched */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    size_t L = 3000;
    unsigned lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nA, nB);
    expect_noti(&a, "refused put: requester error 4", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_CMPL, nA + lo, L - lo, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             7),
             nB + 8, 0x0102030405060708ull);
    expect_noti(&a, "refused immediate put: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_CMPL,
                0x0102030405060708ull, 8, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 2,
                             EXTOLL_NOTI_COMPLETER, 0, 0x42),
             0xdeadbeef, 0);
    expect_noti(&a, "refused notification put: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT,
                EXTOLL_NOTI_ERR_CMPL, 0xdeadbeef, 0x43, NULL);
    memset(srcA + 4096, 0x33, 4096);
    L = 2000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_RESPONDER |
                                 EXTOLL_NOTI_COMPLETER,
                             0, L - 1),
             nB, nA + 4096);
    expect_noti(&a, "refused get: requester (sent)", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_GET, 0, nA + 4096 + lo, L - lo, NULL);
    expect_noti(&a, "refused get: requester error 2", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_RESP, nA + 4096 + lo, L - lo,
                NULL);
    EXPECT(all_bytes(srcA + 4096, 4096, 0x33),
           "refused get: local destination unchanged\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_RESPONDER |
                                 EXTOLL_NOTI_COMPLETER,
                             0, 0),
             (100ull << 32) | 9, 5ull << 32);
    expect_noti(&a, "refused lock: requester (sent)", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_LOCK_REQ, 0, EXTOLL_LOCK_W0(9, 0, 100), 0, NULL);
    expect_noti(&a, "refused lock: requester error 2", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_LOCK_REQ, EXTOLL_NOTI_ERR_RESP,
                EXTOLL_LOCK_W0(9, 0, 0), 0, NULL);
    EXPECT(all_bytes(dstB, 8192, 0x5a),
           "refused puts: target memory unchanged\n");
    expect_no_noti(&b, "refused commands: no notification at the target");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 5,
           "prot_refused counted 5 refused commands (%llu)\n",
           (unsigned long long)(cnt(EXTOLL_CNT_PROT_REFUSED) - r0));
    EXPECT(cnt(EXTOLL_CNT_ATU_FAULTS) == f0,
           "refused at the VPID: no ATU fault\n");
    /* the lock of VPID 2 was not touched: its owner (same ID) sees 0 */
    rma_post(2, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 2,
                             EXTOLL_NOTI_COMPLETER, 0, 0),
             (100ull << 32) | 9, 0);
    expect_noti(&b, "own lock with the same ID: value still 0",
                EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_LOCK_RSP, 0,
                EXTOLL_LOCK_W0(9, 1, 0), 0, NULL);
    expect_no_noti(&b, "nothing else at VPID 2");

    /* (b) RMA_PROT PA -> PA (VPID 3), ATU entries PA: everything works */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    L = 3000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nA + 1, nC + 2);
    expect_noti(&c, "same ID put: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_BT_PUT, 0, nC + 2 + lo, L - lo, NULL);
    expect_noti(&a, "same ID put: requester", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, 0, nA + 1 + lo, L - lo, NULL);
    EXPECT(!memcmp(srcA + 1, dstC + 2, L), "same ID put data\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             3),
             nC + 4096, 0xa1b2c3d4);
    expect_noti(&c, "same ID immediate put: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_IMM_PUT, 0, nC + 4096, 4, NULL);
    expect_noti(&a, "same ID immediate put: requester", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_IMM_PUT, 0, 0xa1b2c3d4, 4, NULL);
    EXPECT(*(uint32_t *)(dstC + 4096) == 0xa1b2c3d4,
           "same ID immediate put data\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             0x42),
             0xfeed, 0);
    expect_noti(&c, "same ID notification put: completer",
                EXTOLL_NOTI_COMPLETER, EXTOLL_CMD_NOTI_PUT, 0, 0xfeed, 0x43,
                NULL);
    expect_noti(&a, "same ID notification put: requester",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT, 0, 0xfeed, 0x43,
                NULL);
    memset(srcA + 4096, 0, 4096);
    L = 2000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nC + 2, nA + 4096);
    expect_noti(&c, "same ID get: responder", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_BT_GET, 0, nC + 2 + lo, L - lo, NULL);
    expect_noti(&a, "same ID get: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_GET_BT_RSP, 0, nA + 4096 + lo, L - lo, NULL);
    EXPECT(!memcmp(srcA + 4096, dstC + 2, L), "same ID get data\n");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             1),
             (100ull << 32) | 9, 5ull << 32);
    expect_noti(&c, "same ID lock: responder", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_LOCK_REQ, 0, EXTOLL_LOCK_W0(9, 1, 5), 0, NULL);
    expect_noti(&a, "same ID lock: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_LOCK_RSP, 0, EXTOLL_LOCK_W0(9, 1, 5), 0, NULL);
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) == r0, "same IDs: nothing refused\n");

    /* (c) ATU entries whose ID differs from the VPID's */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nA, nbadC + 16);
    expect_noti(&a, "put to an entry of another ID: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_CMPL,
                nA, 100, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 3, 0, 0, 7), nbadC,
             0x77);
    expect_noti(&a,
                "immediate put to an entry of another ID: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_CMPL,
                0x77, 8, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER, 0, 99),
             nbadC, nA + 4096);
    expect_noti(&a, "get from an entry of another ID: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_RESP,
                nA + 4096, 100, NULL);
    EXPECT(all_bytes(badC, 4096, 0x5a),
           "entry of another ID: target memory unchanged\n");
    expect_no_noti(&c, "entry of another ID: no notification at the target");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 3 &&
               cnt(EXTOLL_CNT_ATU_FAULTS) - f0 == 3,
           "remote entries of another ID: 3 ATU faults, 3 prot_refused\n");
    /* local addresses: the posting VPID's RMA_PROT must match too */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    f0 = cnt(EXTOLL_CNT_ATU_FAULTS);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nbadA, nC);
    expect_noti(&a, "put from a local entry of another ID: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                nbadA, 0, NULL);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nC, nbadA);
    expect_noti(&a, "get into a local entry of another ID: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_REQ,
                nbadA, 0, NULL);
    EXPECT(all_bytes(badA, 4096, 0x11),
           "local entry of another ID unchanged\n");
    expect_no_noti(&c, "local entries of another ID: nothing sent");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 2 &&
               cnt(EXTOLL_CNT_ATU_FAULTS) - f0 == 2,
           "local entries of another ID: 2 ATU faults, 2 prot_refused\n");

    /*
     * Answers whose ID is no longer the origin's RMA_PROT are dropped: the
     * notification queue of VPID 3 is made full, so the put's last
     * fragment and the get and lock requests behind it are pushed back
     * while VPID 1 changes its RMA_PROT; then the queue drains.
     */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    for (unsigned i = 0; i < NOTIQ_ENT; i++) {
        c.notiq[2 * i + 1] = 1;
    }
    memset(srcA + 4096, 0x44, 4096);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             99),
             nA, nC);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nC, nA + 4096);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node_id, 3,
                             EXTOLL_NOTI_RESPONDER | EXTOLL_NOTI_COMPLETER, 0,
                             1),
             (100ull << 32) | 9, 1ull << 32);
    usleep(50000);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 3,
           "3 commands pending behind a full notification queue\n");
    vreg32(1, EXTOLL_VPID_RMA_PROT, PA ^ 1);
    for (unsigned i = 1; i <= NOTIQ_ENT; i++) { /* the write index last */
        c.notiq[2 * ((c.nrd + i) % NOTIQ_ENT) + 1] = 0;
    }
    expect_noti(&c, "put executed at the target", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_BT_PUT, 0, nC, 100, NULL);
    expect_noti(&c, "get executed at the target", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_BT_GET, 0, nC + lo, L - lo, NULL);
    expect_noti(&c, "lock executed at the target", EXTOLL_NOTI_RESPONDER,
                EXTOLL_CMD_LOCK_REQ, 0, EXTOLL_LOCK_W0(9, 1, 6), 0, NULL);
    t0 = now();
    while (R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) &&
           now() - t0 < 5) {
        usleep(1000);
    }
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "answers with the old ID finish the commands\n");
    expect_no_noti(&a,
                   "answers with the old ID: no notification at the origin");
    EXPECT(all_bytes(srcA + 4096, 4096, 0x44),
           "get answer with the old ID not written\n");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == 3,
           "prot_refused counts the 3 answers (%llu)\n",
           (unsigned long long)(cnt(EXTOLL_CNT_PROT_REFUSED) - r0));
    vreg32(1, EXTOLL_VPID_RMA_PROT, PA);

    /* (d) VELO PA -> VPID 3 (VELO PB): dropped, counted, credit back */
    r0 = cnt(EXTOLL_CNT_PROT_REFUSED);
    d0 = cnt(EXTOLL_CNT_VELO_RX_DROPPED);
    ok = 1;
    unsigned n = 3 * EXTOLL_VELO_TX_CREDITS;
    for (unsigned i = 0; i < n && ok; i++) {
        uint64_t q = i;
        ok = velo_send(1, node_id, 3, 1, &q, 8) == 0;
    }
    EXPECT(
        ok,
        "%u messages to a VPID of another VELO ID sent (credits come back)\n",
        n);
    t0 = now();
    while (R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) !=
               EXTOLL_VELO_TX_CREDITS &&
           now() - t0 < 5) {
        usleep(1000);
    }
    EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) ==
               EXTOLL_VELO_TX_CREDITS,
           "all sender credits back\n");
    ok = 1;
    for (unsigned i = 0; i < RING_SLOTS; i++) {
        ok &= *(volatile uint64_t *)(c.ring + 128 * i + 120) == 0; /* DMA */
    }
    EXPECT(ok && R32(bar0, EXTOLL_REG_VPID(3) + EXTOLL_VPID_VELO_RX_COUNT) == 0,
           "ring of VPID 3 untouched\n");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) - r0 == n &&
               cnt(EXTOLL_CNT_VELO_RX_DROPPED) - d0 == n,
           "velo_rx_dropped and prot_refused count %u refused messages\n", n);
    EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 0,
           "the sender's drop count stays 0\n");
    /* same VELO ID: VPID 2 (VELO PA, RMA PB) receives */
    {
        uint64_t q = 0x1122, got = 0, st;
        velo_send(1, node_id, 2, 9, &q, 8);
        st = velo_recv(&b, &got, 5);
        EXPECT(st && got == q && EXTOLL_VELO_ST_VPID(st) == 1,
               "VELO with the same ID delivered\n");
        /* the register is live: VPID 3 takes PA from now on */
        vreg32(3, EXTOLL_VPID_VELO_PROT, PA);
        q = 0x3344;
        velo_send(1, node_id, 3, 9, &q, 8);
        st = velo_recv(&c, &got, 5);
        EXPECT(st && got == q,
               "VELO delivered after VELO_PROT changed to the sender's ID\n");
    }
    usleep(100000);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "no pending commands at VPID 1\n");
    expect_no_noti(&a, "no stray notifications at VPID 1");
    for (unsigned i = 0; i < EXTOLL_NUM_COUNTERS; i++) {
        printf("# counter %u = %llu\n", i, (unsigned long long)cnt(i));
    }
}

/* ---------------------------------------------------------------- 2 nodes */

#define SRV_VPID 3
#define PP 0x7e57 /* VELO and RMA protection ID of the server and of VPID 5 */
static void serve(int secs)
{
    struct ep e;
    uint8_t buf[128];
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&e, SRV_VPID, 0);
    set_prot(SRV_VPID, PP, PP);
    void *region = locked(64 * 1024);
    reg_prot(region, 64 * 1024, 64, SRV_VPID,
             EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PP);
    printf("serving\n");
    fflush(stdout);
    double t0 = now();
    while (now() - t0 < secs) {
        uint64_t s = velo_recv(&e, buf, 0.5), w0, w1;
        if (s) {
            velo_send(SRV_VPID, EXTOLL_VELO_ST_NODE(s), EXTOLL_VELO_ST_VPID(s),
                      EXTOLL_VELO_ST_TAG(s), buf, EXTOLL_VELO_ST_LEN(s));
        }
        while (noti_get(&e, &w0, &w1, 0)) {
            /* drain */
        }
    }
}

static void ping(unsigned node, int n)
{
    struct ep e;
    uint8_t buf[128], got[128];
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&e, 5, 0);
    set_prot(5, PP, PP);
    int ok = 1;
    double t0 = now();
    for (int i = 0; i < n && ok; i++) {
        unsigned len = 1 + i % 120;
        for (unsigned k = 0; k < len; k++) {
            buf[k] = i + k;
        }
        velo_send(5, node, SRV_VPID, i & 0xff, buf, len);
        uint64_t s = velo_recv(&e, got, 10);
        if (!s || EXTOLL_VELO_ST_LEN(s) != len || memcmp(buf, got, len) ||
            EXTOLL_VELO_ST_TAG(s) != (unsigned)(i & 0xff) ||
            EXTOLL_VELO_ST_VPID(s) != SRV_VPID ||
            EXTOLL_VELO_ST_NODE(s) != node) {
            printf("  round %d status 0x%llx\n", i, (unsigned long long)s);
            ok = 0;
        }
    }
    double dt = now() - t0;
    EXPECT(ok, "%d VELO round trips (%.1f us each)\n", n, dt / n * 1e6);

    /* RMA put 40000 bytes to the server region, then get it back */
    size_t L = 40000;
    uint8_t *src = locked(65536), *back = locked(65536);
    uint64_t nsrc = reg_prot(src, 65536, 16, 5, EXTOLL_ATU_READ, PP);
    uint64_t nback = reg_prot(back, 65536, 32, 5, EXTOLL_ATU_WRITE, PP);
    uint64_t nrem = 64ull << 12;
    for (size_t i = 0; i < L; i++) {
        src[i] = i * 7 + 3;
    }
    t0 = now();
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nsrc, nrem + 1);
    unsigned F = EXTOLL_RMA_FRAG_SIZE, lo = (L - 1) / F * F;
    expect_noti(&e, "remote put requester", 1, 2, 0, nsrc + lo, L - lo, NULL);
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, L - 1),
             nrem + 1, nback);
    expect_noti(&e, "remote get completer", 4, 10, 0, nback + lo, L - lo, NULL);
    dt = now() - t0;
    EXPECT(!memcmp(src, back, L), "remote put + get data (%.1f MB/s)\n",
           2 * L / dt / 1e6);
    /* error from the remote side: NLA outside the server's region */
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID, 0, 0, 9), nsrc,
             0x100000);
    expect_noti(&e, "remote put to unregistered NLA", 1, 2,
                EXTOLL_NOTI_ERR_CMPL, ~0ull, 0, NULL);

    /* VPID 6 has other protection IDs than the server: refused there */
    struct ep x;
    uint64_t r0 = cnt(EXTOLL_CNT_PROT_REFUSED), st;
    ep_init(&x, 6, 0);
    set_prot(6, PP ^ 0x100, PP ^ 0x100);
    uint8_t *src6 = locked(4096);
    uint64_t nsrc6 = reg_prot(src6, 4096, 96, 6,
                              EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PP ^ 0x100);
    rma_post(6, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nsrc6, nrem + 1);
    expect_noti(&x, "remote put with another RMA ID: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_CMPL,
                nsrc6, 100, NULL);
    rma_post(6, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, 1),
             0x99, 0);
    expect_noti(
        &x, "remote notification put with another RMA ID: requester error 4",
        EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT, EXTOLL_NOTI_ERR_CMPL, 0x99,
        0, NULL);
    rma_post(6, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_RESPONDER, 0, 99),
             nrem + 1, nsrc6);
    expect_noti(&x, "remote get with another RMA ID: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_RESP,
                nsrc6, 100, NULL);
    rma_post(6, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, 0),
             (1ull << 32) | 3, 1ull << 32);
    expect_noti(&x, "remote lock with another RMA ID: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_LOCK_REQ,
                EXTOLL_NOTI_ERR_RESP, EXTOLL_LOCK_W0(3, 0, 0), 0, NULL);
    velo_send(6, node, SRV_VPID, 1, "x", 1);
    st = velo_recv(&x, buf, 1);
    EXPECT(!st, "VELO with another VELO ID not echoed\n");
    EXPECT(cnt(EXTOLL_CNT_PROT_REFUSED) == r0,
           "refused at the server, not here\n");
    vreg32(6, EXTOLL_VPID_VELO_PROT, PP);
    velo_send(6, node, SRV_VPID, 2, "y", 1);
    st = velo_recv(&x, buf, 10);
    EXPECT(st && EXTOLL_VELO_ST_TAG(st) == 2 && buf[0] == 'y',
           "VELO echoed once the ID matches\n");
    /* the server region was not changed by the refused put */
    memset(back, 0, 4096);
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nrem + 1, nback);
    expect_noti(&e, "remote get with the server's ID", 4, 10, 0, nback, 100,
                NULL);
    EXPECT(!memcmp(src, back, 100),
           "server region unchanged by the refused put\n");
    printf("# retransmits %llu\n",
           (unsigned long long)R64(bar0,
                                   EXTOLL_REG_COUNTER(EXTOLL_CNT_RETRANSMITS)));
}

/* ---------------------------------------------- retransmission budget */

/*
 * Seconds of silence after which a stream with budget n fails (5 ms doubling
 * to 100 ms).
 */
static double budget_s(unsigned n)
{
    double t = 0;

    for (unsigned r = 0; r <= n; r++) {
        t += (r < 5 ? 5u << r : 100u) / 1000.0;
    }
    return t;
}

/* Until the VELO credits of VPID v are all back and it has no RMA command pending. */
static void settle(int v, double tmo)
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

/*
 * Node 'dead' is in range but not running: nothing answers.  A put (requester +
 * completer notifications asked for), an immediate put (none asked for), a qw get
 * (completer only), a lock (none) and two VELO messages to it fail together when
 * the request stream has been silent for the budget: one requester notification
 * with error 1 (REQ) each, in order, with the words a success would have had;
 * the VELO credits come back and the messages count in VELO_DROPS; counters.
 * The stream starts afresh: the next command fails the same way.
 */
static void dead_test(unsigned dead, unsigned want_max)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(1); /* MMIO */
    unsigned F = EXTOLL_RMA_FRAG_SIZE, max;
    struct ep e;
    double t0, dt;

    node_id = R32(bar0, EXTOLL_REG_NODE_ID);
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&e, 1, 0);
    max = R32(bar0, EXTOLL_REG_RETX_MAX);
    EXPECT(max == want_max, "RETX_MAX reads %u (retx-max)\n", max);
    W32(bar0, EXTOLL_REG_RETX_MAX, 99);
    EXPECT(R32(bar0, EXTOLL_REG_RETX_MAX) == max, "RETX_MAX is read-only\n");

    uint8_t *src = locked(8192), *dst = locked(8192);
    uint64_t nsrc = reg(src, 8192, 16, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
    uint64_t ndst = reg(dst, 8192, 32, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
    uint64_t credits = R32(bar0, EXTOLL_REG_VELO_CREDITS), nrem = 0x40000;
    uint64_t f0 = cnt(EXTOLL_CNT_TX_FAILED),
             d0 = cnt(EXTOLL_CNT_VELO_TX_DROPPED);
    uint64_t e0 = cnt(EXTOLL_CNT_RMA_ERRORS), r0 = cnt(EXTOLL_CNT_RETRANSMITS);
    size_t L = 3000;
    unsigned lo = (L - 1) / F * F;

    memset(dst, 0x5a, 8192);
    t0 = now();
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, dead, 3,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nsrc, nrem);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, dead, 3, 0, 0, 4), nrem,
             0x1122334455ull);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_GET, dead, 3, EXTOLL_NOTI_COMPLETER,
                             0, 63),
             nrem, ndst);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, dead, 3, 0, 0, 0),
             (7ull << 32) | 5, 1ull << 32);
    velo_send(1, dead, 3, 0xee, "lost-1", 6);
    velo_send(1, dead, 3, 0xee, "lost-2", 6);
    EXPECT(R64(pg, EXTOLL_VELO_CREDITS) == credits - 2,
           "2 VELO credits in flight\n");
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 4,
           "4 commands pending\n");
    expect_noti(&e, "put to a silent node: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                nsrc + lo, L - lo, NULL);
    dt = now() - t0;
    EXPECT(dt > 0.8 * budget_s(max) && dt < budget_s(max) + 3,
           "failure reported after %.2f s (budget: %.2f s of silence)\n", dt,
           budget_s(max));
    expect_noti(&e, "immediate put without notifications: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_IMM_PUT, EXTOLL_NOTI_ERR_REQ,
                0x1122334455ull, 5, NULL);
    expect_noti(&e,
                "get: requester error 1 instead of its completer notification",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_QW_GET, EXTOLL_NOTI_ERR_REQ,
                ndst, 64, NULL);
    expect_noti(&e, "lock without notifications: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_LOCK_REQ, EXTOLL_NOTI_ERR_REQ,
                EXTOLL_LOCK_W0(5, 0, 7), 0, NULL);
    settle(1, 2);
    EXPECT(R64(pg, EXTOLL_VELO_CREDITS) == credits,
           "VELO credits back (%llu)\n",
           (unsigned long long)R64(pg, EXTOLL_VELO_CREDITS));
    EXPECT(R64(pg, EXTOLL_VELO_DROPS) == 2,
           "the 2 VELO messages count in VELO_DROPS\n");
    EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "RMA_PENDING back to 0\n");
    EXPECT(cnt(EXTOLL_CNT_TX_FAILED) - f0 == 6,
           "tx_failed counts 6 packets (4 requests, 2 VELO): %llu\n",
           (unsigned long long)(cnt(EXTOLL_CNT_TX_FAILED) - f0));
    EXPECT(cnt(EXTOLL_CNT_VELO_TX_DROPPED) - d0 == 2, "velo_tx_dropped +2\n");
    EXPECT(cnt(EXTOLL_CNT_RMA_ERRORS) - e0 == 4, "rma_errors +4\n");
    EXPECT(cnt(EXTOLL_CNT_RETRANSMITS) - r0 >= max,
           "retransmitted %llu times first\n",
           (unsigned long long)(cnt(EXTOLL_CNT_RETRANSMITS) - r0));
    EXPECT(all_bytes(dst, 8192, 0x5a), "nothing written for the failed get\n");
    expect_no_noti(
        &e, "no other notification (no completer notification for the get)");

    /* the stream starts afresh (new epoch): the next command fails the same way */
    t0 = now();
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, dead, 3, 0, 0, 0x42), 0xabcd,
             0);
    expect_noti(&e, "notification put on the new stream: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT, EXTOLL_NOTI_ERR_REQ,
                0xabcd, 0x43, NULL);
    dt = now() - t0;
    EXPECT(dt > 0.8 * budget_s(max) && dt < budget_s(max) + 3,
           "again after %.2f s\n", dt);
    settle(1, 2);
    EXPECT(cnt(EXTOLL_CNT_TX_FAILED) - f0 == 7 &&
               R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0,
           "tx_failed +1, nothing pending\n");
    /* the own node is not affected */
    memset(src, 0x33, 100);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1,
                             EXTOLL_NOTI_REQUESTER, 0, 99),
             nsrc, ndst);
    expect_noti(&e, "loopback put meanwhile", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, 0, nsrc, 100, NULL);
    EXPECT(all_bytes(dst, 100, 0x33), "loopback put data\n");
    EXPECT(cnt(EXTOLL_CNT_RMA_LATE_ANSWERS) == 0 &&
               cnt(EXTOLL_CNT_RMA_NO_ANSWER) == 0,
           "no late or lost answers\n");
    for (unsigned i = 0; i < EXTOLL_NUM_COUNTERS; i++) {
        printf("# counter %u = %llu\n", i, (unsigned long long)cnt(i));
    }
}

/*
 * Against node 'node' before it runs: a put and a VELO message fail; then
 * (run-extoll-vm-tests.sh starts node with "serve" when it sees "REVIVE:")
 * VELO pings until the echo server answers, and the pair works as before:
 * round trips, a put and a get.  The failed message is never echoed, and no
 * answer to the failed put arrives (the records of the failed stream are
 * gone with its bulk ring).
 */
static void revive(unsigned node)
{
    volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(5); /* MMIO */
    uint8_t buf[128], *src = locked(65536), *back = locked(65536);
    unsigned F = EXTOLL_RMA_FRAG_SIZE, stale = 0, pings = 0;
    struct ep e;
    uint64_t st;
    double t0;
    int ok, up = 0;

    node_id = R32(bar0, EXTOLL_REG_NODE_ID);
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&e, 5, 0);
    set_prot(5, PP, PP);
    uint64_t nsrc = reg_prot(src, 65536, 16, 5, EXTOLL_ATU_READ, PP);
    uint64_t nback = reg_prot(back, 65536, 32, 5, EXTOLL_ATU_WRITE, PP);
    uint64_t nrem = 64ull << 12;

    for (size_t i = 0; i < 65536; i++) {
        src[i] = i * 5 + 1;
    }
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER, 0, 99),
             nsrc, nrem + 1);
    velo_send(5, node, SRV_VPID, 0xee, "stale", 5);
    expect_noti(&e, "put to a node that does not run yet: requester error 1",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_REQ,
                nsrc, 100, NULL);
    settle(5, 2);
    EXPECT(R64(pg, EXTOLL_VELO_DROPS) == 1 &&
               R64(pg, EXTOLL_VELO_CREDITS) ==
                   R32(bar0, EXTOLL_REG_VELO_CREDITS),
           "VELO message failed: credit back, VELO_DROPS 1\n");
    printf("REVIVE: peer failed, start it\n");

    /* until it answers: each ping fails (not running) or is dropped (booting) */
    t0 = now();
    while (!up && now() - t0 < 300) {
        if (velo_send(5, node, SRV_VPID, 0x10 + pings++ % 0x80, "ping", 4)) {
            break;
        }
        st = velo_recv(&e, buf, 3);
        if (st) {
            stale += EXTOLL_VELO_ST_TAG(st) == 0xee;
            up = 1;
        }
    }
    EXPECT(up, "node %u answers once it runs (after %.0f s, %u pings)\n", node,
           now() - t0, pings);
    /* late echoes of earlier pings */
    while ((st = velo_recv(&e, buf, 1))) {
        stale += EXTOLL_VELO_ST_TAG(st) == 0xee;
    }
    EXPECT(!stale, "the VELO message reported failed never arrived\n");

    ok = up;
    for (int i = 0; i < 50 && ok; i++) {
        unsigned len = 1 + i * 7 % 120;
        uint8_t got[128];

        for (unsigned k = 0; k < len; k++) {
            buf[k] = i * 3 + k;
        }
        velo_send(5, node, SRV_VPID, i, buf, len);
        st = velo_recv(&e, got, 10);
        if (!st || EXTOLL_VELO_ST_LEN(st) != len ||
            EXTOLL_VELO_ST_TAG(st) != (unsigned)i || memcmp(buf, got, len)) {
            printf("  round %d status 0x%llx\n", i, (unsigned long long)st);
            ok = 0;
        }
    }
    EXPECT(ok, "50 VELO round trips after the restart, in order, intact\n");

    size_t L = 40000;
    unsigned lo = (L - 1) / F * F;

    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER, 0, L - 1),
             nsrc, nrem + 1);
    expect_noti(&e, "put after the restart: requester", EXTOLL_NOTI_REQUESTER,
                EXTOLL_CMD_BT_PUT, 0, nsrc + lo, L - lo, NULL);
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, L - 1),
             nrem + 1, nback);
    expect_noti(&e, "get after the restart: completer", EXTOLL_NOTI_COMPLETER,
                EXTOLL_CMD_GET_BT_RSP, 0, nback + lo, L - lo, NULL);
    EXPECT(!memcmp(src, back, L), "put + get data after the restart\n");
    settle(5, 2);
    EXPECT(R32(bar0, EXTOLL_REG_VPID(5) + EXTOLL_VPID_RMA_PENDING) == 0,
           "nothing pending\n");
    EXPECT(cnt(EXTOLL_CNT_TX_FAILED) >= 2, "tx_failed %llu\n",
           (unsigned long long)cnt(EXTOLL_CNT_TX_FAILED));
    EXPECT(cnt(EXTOLL_CNT_RMA_LATE_ANSWERS) == 0,
           "no answer to the failed put arrived (rma_late_answers 0)\n");
    expect_no_noti(&e, "no stray notifications");
    for (unsigned i = 0; i < EXTOLL_NUM_COUNTERS; i++) {
        printf("# counter %u = %llu\n", i, (unsigned long long)cnt(i));
    }
}

static void fuzz(long n)
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
    printf("device alive after %ld accesses: id 0x%x\n", n,
           R32(bar0, EXTOLL_REG_ID));
}

int main(int argc, char **argv)
{
    pci_open_dev(EXTOLL_PCI_VENDOR_ID, EXTOLL_PCI_DEVICE_ID, dev, sizeof dev);
    bar0 = map_res(dev, 0, EXTOLL_BAR_CTRL_SIZE);
    bar2 = map_res(dev, 2, EXTOLL_BAR_VELO_SIZE);
    bar4 = map_res(dev, 4, EXTOLL_BAR_RMA_SIZE);
    bar3 = map_res(dev, EXTOLL_BAR_VELO_WIN, EXTOLL_BAR_VELO_WIN_SIZE);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *m = argc > 1 ? argv[1] : "self";
    if (!strcmp(m, "self")) {
        self_test();
    } else if (!strcmp(m, "prot")) {
        prot_test();
    } else if (!strcmp(m, "serve")) {
        serve(argc > 2 ? atoi(argv[2]) : 60);
        return 0;
    } else if (!strcmp(m, "ping")) {
        ping(atoi(argv[2]), atoi(argv[3]));
    } else if (!strcmp(m, "fuzz")) {
        fuzz(atol(argv[2]));
        self_test();
    } else if (!strcmp(m, "dead")) {
        dead_test(atoi(argv[2]), atoi(argv[3]));
    } else if (!strcmp(m, "revive")) {
        revive(atoi(argv[2]));
    }
    printf("RESULT: %s (%d failures)\n", fails ? "FAIL" : "PASS", fails);
    return fails != 0;
}
