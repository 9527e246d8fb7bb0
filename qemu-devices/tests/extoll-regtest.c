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
#include "extoll-regtest.h"

int fails;
volatile uint8_t *bar0, *bar2, *bar3, *bar4; /* MMIO */
uint32_t node_id;
char dev[300]; /* sysfs directory of the device */

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
uint64_t reg_prot(void *va, size_t len, unsigned first, int vpid,
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
uint64_t reg(void *va, size_t len, unsigned first, int vpid,
             uint64_t perm)
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

void rma_post(int vpid, unsigned opts, uint64_t w0, uint64_t w1,
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
    printf("  %s: w0=0x%llx size=%u vpid=%u node=%u type=%u cmd=%u err=%u\n",
           what, (unsigned long long)w0, N_SIZE(w1), EXTOLL_NOTI_W1_RVPID(w1),
           EXTOLL_NOTI_W1_RNODE(w1), EXTOLL_NOTI_W1_TYPE(w1),
           EXTOLL_NOTI_W1_CMD(w1), EXTOLL_NOTI_W1_ERR(w1));
}

int expect_noti(struct ep *e, const char *what, unsigned type,
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

/* ---------------------------------------------------------------- 2 nodes */

void serve(int secs)
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

void ping(unsigned node, int n)
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
