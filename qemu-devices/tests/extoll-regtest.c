// SPDX-License-Identifier: GPL-2.0
/*
 * Driverless register-level test of the extoll QEMU model, run as root in a
 * guest without IOMMU (qemu-devices/tests/run-extoll-vm-tests.sh boots it).
 * BARs are mapped through /sys/bus/pci/devices/<bdf>/resource<n>; rings,
 * queues, the ATU table and buffers are locked pages whose physical
 * addresses come from /proc/self/pagemap (buffers need not be physically
 * contiguous: the ATU maps them page by page).  TAP from the kernel's
 * kselftest harness, one mode per run (devtest_main.h); the device is
 * driven by extoll-dev.c.
 *
 *   extoll-regtest self           loopback checks (VELO, send window, flow
 *                                 control, RMA, ATU errors)
 *   extoll-regtest prot           loopback checks of the protection IDs
 *                                 (extoll-regtest-prot.h)
 *   extoll-regtest serve SECS     node 1: VELO echo server on VPID 3, RMA
 *                                 target region (no TAP: the peer of ping
 *                                 and revive)
 *   extoll-regtest ping NODE N    N VELO round trips + RMA put/get against NODE
 *   extoll-regtest fuzz N         N random MMIO accesses, then "self"
 *   extoll-regtest dead NODE MAX  commands and VELO to NODE, which is not running:
 *                                 they fail after the retransmission budget
 *                                 (RETX_MAX must read MAX; extoll-regtest-dead.h)
 *   extoll-regtest revive NODE    the same to NODE before it starts, then (once
 *                                 NODE runs "serve") the pair works
 */
#define _GNU_SOURCE
#include "extoll-dev.h"
#include "devtest_main.h"

/* The next notification of e is the one described (noti_is()). */
#define EXPECT_NOTI(e, what, type, cmd, err, w0x, size)      \
    EXPECT_TRUE(noti_is(e, what, type, cmd, err, w0x, size)) \
    TH_LOG("%s notification", what)

/* No notification arrives at e for a while. */
#define EXPECT_NO_NOTI(e, what) EXPECT_TRUE(no_noti(e, what)) TH_LOG("%s", what)

/* Every command could be posted; the device reset (no DMA after the case). */
static void end_case(struct __test_metadata *_metadata)
{
    EXPECT_EQ(0, rma_stuck) TH_LOG("commands not posted: CMD_FREE stuck");
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
}

/*
 * Loopback checks (self mode) from a reset device: VPID 1 (a, physical
 * RMA allowed) and VPID 2 (b), src registered for VPID 1 from NLA page 16,
 * dst for VPID 2 from page 32.  A case leaves nothing unread behind.
 */
FIXTURE(loopback)
{
    struct ep a, b;
    uint8_t *src, *dst;
    uint64_t nsrc, ndst;
};

FIXTURE_SETUP(loopback)
{
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&self->a, 1, 1);
    ep_init(&self->b, 2, 0);
    self->src = locked(16384);
    self->dst = locked(16384);
    self->nsrc =
        reg(self->src, 16384, 16, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
    self->ndst =
        reg(self->dst, 16384, 32, 2, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
}

FIXTURE_TEARDOWN(loopback)
{
    uint8_t got[128];

    EXPECT_NO_NOTI(&self->a, "no stray notification at VPID 1");
    EXPECT_NO_NOTI(&self->b, "no stray notification at VPID 2");
    EXPECT_EQ(0, velo_recv(&self->b, got, 0.3))
    TH_LOG("no stray VELO message at VPID 2");
    end_case(_metadata);
}

TEST_F(loopback, id_registers)
{
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_ID) == EXTOLL_ID_MAGIC)
    TH_LOG("ID");
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_NUM_VPIDS) == EXTOLL_NUM_VPIDS)
    TH_LOG("NUM_VPIDS");
}

TEST_F(loopback, velo_messages)
{
    uint8_t buf[128], got[128];
    uint64_t s;

    /* VELO loopback, 1..120 bytes */
    int ok = 1;
    for (unsigned len = 0; len <= 120; len += 17) {
        for (unsigned i = 0; i < len; i++) {
            buf[i] = len + i * 7;
        }
        velo_send(1, node_id, 2, len & 0xff, buf, len);
        s = velo_recv(&self->b, got, 5);
        if (!s || EXTOLL_VELO_ST_LEN(s) != len ||
            EXTOLL_VELO_ST_NODE(s) != node_id || EXTOLL_VELO_ST_VPID(s) != 1 ||
            EXTOLL_VELO_ST_TAG(s) != (len & 0xff) ||
            EXTOLL_VELO_ST_MTT(s) != 1 || !(s & EXTOLL_VELO_ST_EOM) ||
            memcmp(buf, got, len)) {
            ksft_print_msg("  len %u status 0x%llx\n", len,
                           (unsigned long long)s);
            ok = 0;
        }
    }
    EXPECT_TRUE(ok)
    TH_LOG("VELO loopback messages: payload, source, tag, length, MTT");
}

TEST_F(loopback, ring_back_pressure)
{
    uint64_t s;
    int ok;

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
        full +=
            *(volatile uint64_t *)(self->b.ring + 128 * i + 120) != 0; /* DMA */
    }
    EXPECT_TRUE(full == RING_SLOTS)
    TH_LOG("ring full (%u slots) while 90 messages are pending", full);
    EXPECT_TRUE(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) <
                EXTOLL_VELO_TX_CREDITS)
    TH_LOG("sender credits consumed under back-pressure");
    for (unsigned i = 0; i < 90 && ok; i++) {
        uint32_t v = ~0u;
        s = velo_recv(&self->b, &v, 5);
        if (!s || v != i) {
            ksft_print_msg("  msg %u got %u st 0x%llx\n", i, v,
                           (unsigned long long)s);
            ok = 0;
        }
    }
    EXPECT_TRUE(ok)
    TH_LOG("all 90 messages delivered in order after back-pressure");
    EXPECT_TRUE(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 0)
    TH_LOG("no VELO drops");
    /* bad header: len 121 dropped and counted */
    W64(bar2 + EXTOLL_VELO_PAGE(1), 0,
        EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 121));
    EXPECT_TRUE(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 1)
    TH_LOG("oversize message dropped");
}

TEST_F(loopback, send_window)
{
    struct ep *b = &self->b;
    volatile uint8_t *pg1 = bar2 + EXTOLL_VELO_PAGE(1);      /* MMIO */
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
            ksft_print_msg("  window len %u status 0x%llx\n", len,
                           (unsigned long long)s);
            ok = 0;
            break;
        }
    }
    EXPECT_TRUE(ok)
    TH_LOG("send window: every length 0..120 intact (payload, source, tag, "
           "MTT, length)");

    /* the doorbell takes the window as it is then: later stores do not count */
    for (unsigned i = 0; i < 64; i++) {
        buf[i] = (uint8_t)(0xa0 + i);
    }
    velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 1, 64), buf, 64, 0);
    for (unsigned i = 0; i < 64; i++) {
        win1[i] = 0x55;
    }
    s = velo_recv(b, got, 5);
    EXPECT_TRUE(s && EXTOLL_VELO_ST_LEN(s) == 64 && !memcmp(got, buf, 64))
    TH_LOG("send window: stores after the doorbell do not change the message");

    /* garbage doorbells: len 121, multicast bits, node out of range; a 32-bit store */
    velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 121), buf, 0, 0);
    velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 8) | (1ull << 31), buf,
                  8, 0);
    velo_win_send(1, EXTOLL_VELO_MKHDR(0xfff0, 2, 0, 0, 8), buf, 8, 0);
    W32(pg1, EXTOLL_VELO_WIN_SEND,
        (uint32_t)EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 0));
    EXPECT_TRUE(R64(pg1, EXTOLL_VELO_DROPS) - drops0 == 3)
    TH_LOG("send window: 3 bad doorbells dropped and counted (%llu), 32-bit "
           "store ignored",
           (unsigned long long)(R64(pg1, EXTOLL_VELO_DROPS) - drops0));
    EXPECT_TRUE(velo_recv(b, got, 0.3) == 0)
    TH_LOG("send window: nothing delivered for them");

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
    EXPECT_TRUE(sent >= RING_SLOTS && sent < n &&
                R64(pg1, EXTOLL_VELO_CREDITS) == 0)
    TH_LOG("send window: credits run out with a full ring (%u messages "
           "accepted)",
           sent);
    /* a doorbell without credit is dropped and counted, never delivered */
    drops0 = R64(pg1, EXTOLL_VELO_DROPS);
    {
        uint32_t v = 0xdead;

        velo_win_send(1, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 4), &v, 4, 1);
    }
    EXPECT_TRUE(R64(pg1, EXTOLL_VELO_DROPS) - drops0 == 1)
    TH_LOG("send window: doorbell without credit dropped");
    ok = 1;
    for (unsigned i = 0; i < sent && ok; i++) {
        uint32_t v = ~0u;

        s = velo_recv(b, &v, 5);
        if (!s || v != i) {
            ksft_print_msg("  msg %u got 0x%x st 0x%llx\n", i, v,
                           (unsigned long long)s);
            ok = 0;
        }
    }
    EXPECT_TRUE(ok && velo_recv(b, got, 0.3) == 0)
    TH_LOG("send window: all %u accepted messages delivered once, in order, "
           "after back-pressure",
           sent);
    t0 = now();
    while (R64(pg1, EXTOLL_VELO_CREDITS) !=
               R32(bar0, EXTOLL_REG_VELO_CREDITS) &&
           now() - t0 < 5) {
        usleep(1000);
    }
    EXPECT_TRUE(R64(pg1, EXTOLL_VELO_CREDITS) ==
                R32(bar0, EXTOLL_REG_VELO_CREDITS))
    TH_LOG("send window: all credits back (%llu)",
           (unsigned long long)R64(pg1, EXTOLL_VELO_CREDITS));
    EXPECT_TRUE(R64(bar0, EXTOLL_REG_COUNTER(0)) - tx0 == 121 + 1 + sent)
    TH_LOG("velo_tx counts the window messages");

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
    EXPECT_TRUE(ok)
    TH_LOG("send window zeroed when VELO_TX is switched off");
    /* a disabled sender: doorbell dropped */
    vreg32(3, EXTOLL_VPID_CTRL, 0);
    drops0 = R64(bar2 + EXTOLL_VELO_PAGE(3), EXTOLL_VELO_DROPS);
    velo_win_send(3, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 8), buf, 8, 1);
    EXPECT_TRUE(R64(bar2 + EXTOLL_VELO_PAGE(3), EXTOLL_VELO_DROPS) - drops0 ==
                    1 &&
                velo_recv(b, got, 0.3) == 0)
    TH_LOG("send window of a VPID without VELO_TX: dropped");
}

TEST_F(loopback, rma_put_get_immediate_and_notification_put)
{
    size_t L = 10000;

    for (size_t i = 0; i < 16384; i++) {
        self->src[i] = i * 13 + 1;
    }
    unsigned F = EXTOLL_RMA_FRAG_SIZE, lo = (L - 1) / F * F;
    uint64_t nc1 = R64(bar4 + EXTOLL_RMA_PAGE(1, 0), EXTOLL_RMA_NOTI_COUNT);
    uint64_t nc2 = R64(bar4 + EXTOLL_RMA_PAGE(2, 5), EXTOLL_RMA_NOTI_COUNT);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             self->nsrc + 3, self->ndst + 5);
    EXPECT_NOTI(&self->b, "put completer", 4, 2, 0, self->ndst + 5 + lo,
                L - lo);
    EXPECT_TRUE(!memcmp(self->src + 3, self->dst + 5, L) && self->dst[4] == 0 &&
                self->dst[5 + L] == 0)
    TH_LOG("put data");
    EXPECT_NOTI(&self->a, "put requester", 1, 2, 0, self->nsrc + 3 + lo,
                L - lo);
    EXPECT_TRUE(
        R64(bar4 + EXTOLL_RMA_PAGE(1, 0), EXTOLL_RMA_NOTI_COUNT) == nc1 + 1 &&
        R64(bar4 + EXTOLL_RMA_PAGE(1, 7), EXTOLL_RMA_NOTI_COUNT) == nc1 + 1 &&
        R64(bar4 + EXTOLL_RMA_PAGE(2, 0), EXTOLL_RMA_NOTI_COUNT) == nc2 + 1)
    TH_LOG(
        "NOTI_COUNT: one more per VPID (requester, completer), in every page "
        "of it");

    /* RMA get back: a gets 5000 bytes from b into src+100 */
    memset(self->src, 0, 16384);
    L = 5000;
    lo = (L - 1) / F * F;
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_GET, node_id, 2, 7, 0, L - 1),
             self->ndst + 8, self->nsrc + 96);
    EXPECT_NOTI(&self->a, "get requester", 1, 1, 0, self->nsrc + 96 + lo,
                L - lo);
    EXPECT_NOTI(&self->b, "get responder", 2, 1, 0, self->ndst + 8 + lo,
                L - lo);
    EXPECT_NOTI(&self->a, "get completer", 4, 11, 0, self->nsrc + 96 + lo,
                L - lo);
    EXPECT_TRUE(!memcmp(self->src + 96, self->dst + 8, L) &&
                self->src[95] == 0 && self->src[96 + L] == 0)
    TH_LOG("get data");

    /* immediate put of 5 bytes, notification put */
    memset(self->dst, 0, 64);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 2,
                             EXTOLL_NOTI_COMPLETER | EXTOLL_NOTI_REQUESTER, 0,
                             4),
             self->ndst + 16, 0x1122334455667788ull);
    EXPECT_NOTI(&self->b, "imm put completer", 4, 6, 0, self->ndst + 16, 5);
    EXPECT_TRUE(!memcmp(self->dst + 16, "\x88\x77\x66\x55\x44\0\0", 7))
    TH_LOG("immediate put data");
    EXPECT_NOTI(&self->a, "imm put requester", 1, 6, 0, 0x1122334455667788ull,
                5);
    rma_post(1, EXTOLL_RMA_OPT_TE | EXTOLL_RMA_OPT_IRQ,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 2,
                             EXTOLL_NOTI_COMPLETER, 0, 0xab),
             0xfeedfacecafebeefull, 0);
    {
        uint64_t w0, w1;
        int ok2 = noti_get(&self->b, &w0, &w1, 5);
        if (ok2) {
            dump("notiput completer", w0, w1);
        }
        EXPECT_TRUE(
            ok2 && w0 == 0xfeedfacecafebeefull && (w1 & 0xff) == 0xab &&
            EXTOLL_NOTI_W1_CMD(w1) == 5 && EXTOLL_NOTI_W1_RVPID(w1) == 1 &&
            EXTOLL_NOTI_W1_RNODE(w1) == node_id && EXTOLL_NOTI_W1_TYPE(w1) == 4)
        TH_LOG("notification put: payload, class, remote");
    }
}

TEST_F(loopback, rma_errors)
{

    /* errors: target NLA owned by VPID 1 but command to VPID 2 */
    memset(self->src, 0x5a, 4096);
    memset(self->src, 0x11, 100);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2, 0, 0, 99),
             self->nsrc, self->nsrc + 200);
    EXPECT_NOTI(&self->a, "foreign VPID put error", 1, 2, EXTOLL_NOTI_ERR_CMPL,
                ~0ull, 0);
    EXPECT_TRUE(self->src[200] == 0x5a)
    TH_LOG("victim memory unchanged");
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2, 0, 0, 99), 0x1ff000,
             self->ndst);
    EXPECT_NOTI(&self->a, "unregistered source error", 1, 2,
                EXTOLL_NOTI_ERR_REQ, ~0ull, 0);
    rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(4, node_id, 2, 0, 0, 7),
             self->nsrc, self->ndst);
    EXPECT_NOTI(&self->a, "illegal command 4", 1, 4, EXTOLL_NOTI_ERR_REQ, ~0ull,
                0);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_PUT, node_id, 2, 0, 0, 11),
             self->nsrc, self->ndst);
    EXPECT_NOTI(&self->a, "qw put size 12", 1, 3, EXTOLL_NOTI_ERR_REQ, ~0ull,
                0);
    rma_post(2, 0, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1, 0, 0, 7),
             phys_of(self->dst), phys_of(self->src));
    EXPECT_NOTI(&self->b, "physical page without RMA_PHYS", 1, 2,
                EXTOLL_NOTI_ERR_REQ, ~0ull, 0);
    rma_post(1, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 2, 0, 0, 99),
             self->nsrc,
             self->nsrc); /* remote read of an NLA VPID 2 does not own */
    EXPECT_NOTI(&self->a, "get of foreign NLA", 1, 0, EXTOLL_NOTI_ERR_RESP,
                ~0ull, 0);
}

TEST_F(loopback, rma_physical_put)
{
    /* physical put by VPID 1 (RMA_PHYS) to itself */
    memset(self->dst + 8192, 0, 64);
    rma_post(1, 0,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1,
                             EXTOLL_NOTI_COMPLETER, 0, 31),
             phys_of(self->src), phys_of(self->src + 4096));
    EXPECT_NOTI(&self->a, "physical put completer", 4, 2, 0,
                phys_of(self->src + 4096), 32);
    EXPECT_TRUE(!memcmp(self->src, self->src + 4096, 32))
    TH_LOG("physical put data");
}

TEST_F(loopback, notification_queue_overflow)
{
    int ok;

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
        if (!noti_get(&self->b, &w0, &w1, 5) || w0 != i) {
            ksft_print_msg("  noti %u: w0 %llu\n", i, (unsigned long long)w0);
            ok = 0;
        }
    }
    EXPECT_TRUE(ok)
    TH_LOG("300 notification puts through a 256-entry queue, none lost, in "
           "order");
    usleep(100000);
    EXPECT_TRUE(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0)
    TH_LOG("no pending commands");
    {
        uint64_t w0, w1;
        EXPECT_TRUE(!noti_get(&self->a, &w0, &w1, 0.2))
        TH_LOG("no stray notifications at the origin");
    }
}

/* Random MMIO (fuzz mode), then the loopback checks. */
FIXTURE(fuzz)
{
    int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F(fuzz, random_mmio)
{
    fuzz_mmio(devtest_arg(0, 100000));
}

/*
 * A client of "serve": VPID 5 (e) with the server's protection IDs, src (a
 * pattern) registered from NLA page 16 for reading, back from page 32 for
 * writing; the server's region is its NLA page 64.  From a reset device.
 */
struct client {
    struct ep e;
    uint8_t *src, *back;
    uint64_t nsrc, nback;
};

static void client_init(struct client *cl)
{
    W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
    atu_init();
    ep_init(&cl->e, 5, 0);
    set_prot(5, PP, PP);
    cl->src = locked(65536);
    cl->back = locked(65536);
    cl->nsrc = reg_prot(cl->src, 65536, 16, 5, EXTOLL_ATU_READ, PP);
    cl->nback = reg_prot(cl->back, 65536, 32, 5, EXTOLL_ATU_WRITE, PP);
}

/* The client against NODE (ping mode); x: VPID 6, other IDs. */
FIXTURE(remote)
{
    struct client cl;
    struct ep x;
};

FIXTURE_SETUP(remote)
{
    client_init(&self->cl);
    for (size_t i = 0; i < 40000; i++) {
        self->cl.src[i] = i * 7 + 3;
    }
}

FIXTURE_TEARDOWN(remote)
{
    ksft_print_msg("retransmits %llu\n",
                   (unsigned long long)R64(
                       bar0, EXTOLL_REG_COUNTER(EXTOLL_CNT_RETRANSMITS)));
    end_case(_metadata);
}

TEST_F(remote, velo_round_trips)
{
    unsigned node = devtest_arg(0, 1);
    int n = devtest_arg(1, 100);
    uint8_t buf[128], got[128];

    int ok = 1;
    double t0 = now();
    for (int i = 0; i < n && ok; i++) {
        unsigned len = 1 + i % 120;
        for (unsigned k = 0; k < len; k++) {
            buf[k] = i + k;
        }
        velo_send(5, node, SRV_VPID, i & 0xff, buf, len);
        uint64_t s = velo_recv(&self->cl.e, got, 10);
        if (!s || EXTOLL_VELO_ST_LEN(s) != len || memcmp(buf, got, len) ||
            EXTOLL_VELO_ST_TAG(s) != (unsigned)(i & 0xff) ||
            EXTOLL_VELO_ST_VPID(s) != SRV_VPID ||
            EXTOLL_VELO_ST_NODE(s) != node) {
            ksft_print_msg("  round %d status 0x%llx\n", i,
                           (unsigned long long)s);
            ok = 0;
        }
    }
    double dt = now() - t0;
    ksft_print_msg("%d VELO round trips (%.1f us each)\n", n, dt / n * 1e6);
    EXPECT_TRUE(ok);
}

TEST_F(remote, rma_put_get_and_remote_error)
{
    unsigned node = devtest_arg(0, 1);
    double t0, dt;

    /* RMA put 40000 bytes to the server region, then get it back */
    size_t L = 40000;
    uint8_t *src = self->cl.src, *back = self->cl.back;
    uint64_t nsrc = self->cl.nsrc, nback = self->cl.nback, nrem = 64ull << 12;

    t0 = now();
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0,
                             L - 1),
             nsrc, nrem + 1);
    unsigned F = EXTOLL_RMA_FRAG_SIZE, lo = (L - 1) / F * F;
    EXPECT_NOTI(&self->cl.e, "remote put requester", 1, 2, 0, nsrc + lo,
                L - lo);
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, L - 1),
             nrem + 1, nback);
    EXPECT_NOTI(&self->cl.e, "remote get completer", 4, 10, 0, nback + lo,
                L - lo);
    dt = now() - t0;
    ksft_print_msg("remote put + get data (%.1f MB/s)\n", 2 * L / dt / 1e6);
    EXPECT_TRUE(!memcmp(src, back, L));
    /* error from the remote side: NLA outside the server's region */
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID, 0, 0, 9), nsrc,
             0x100000);
    EXPECT_NOTI(&self->cl.e, "remote put to unregistered NLA", 1, 2,
                EXTOLL_NOTI_ERR_CMPL, ~0ull, 0);
}

TEST_F(remote, protection_ids_refused_at_server)
{
    unsigned node = devtest_arg(0, 1);
    uint8_t buf[128], *src = self->cl.src, *back = self->cl.back;
    uint64_t nsrc = self->cl.nsrc, nback = self->cl.nback, nrem = 64ull << 12;

    /* what the server region holds: the first 100 bytes of src */
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_REQUESTER, 0, 99),
             nsrc, nrem + 1);
    ASSERT_TRUE(noti_is(&self->cl.e, "remote put of 100 bytes: requester",
                        EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, 0, nsrc,
                        100));

    /* VPID 6 has other protection IDs than the server: refused there */
    uint64_t r0 = cnt(EXTOLL_CNT_PROT_REFUSED), st;
    ep_init(&self->x, 6, 0);
    set_prot(6, PP ^ 0x100, PP ^ 0x100);
    uint8_t *src6 = locked(4096);
    uint64_t nsrc6 = reg_prot(src6, 4096, 96, 6,
                              EXTOLL_ATU_READ | EXTOLL_ATU_WRITE, PP ^ 0x100);
    rma_post(6, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nsrc6, nrem + 1);
    EXPECT_NOTI(&self->x, "remote put with another RMA ID: requester error 4",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_PUT, EXTOLL_NOTI_ERR_CMPL,
                nsrc6, 100);
    rma_post(6, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, 1),
             0x99, 0);
    EXPECT_NOTI(
        &self->x,
        "remote notification put with another RMA ID: requester error 4",
        EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_NOTI_PUT, EXTOLL_NOTI_ERR_CMPL, 0x99,
        0);
    rma_post(6, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_RESPONDER, 0, 99),
             nrem + 1, nsrc6);
    EXPECT_NOTI(&self->x, "remote get with another RMA ID: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_BT_GET, EXTOLL_NOTI_ERR_RESP,
                nsrc6, 100);
    rma_post(6, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_LOCK_REQ, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, 0),
             (1ull << 32) | 3, 1ull << 32);
    EXPECT_NOTI(&self->x, "remote lock with another RMA ID: requester error 2",
                EXTOLL_NOTI_REQUESTER, EXTOLL_CMD_LOCK_REQ,
                EXTOLL_NOTI_ERR_RESP, EXTOLL_LOCK_W0(3, 0, 0), 0);
    velo_send(6, node, SRV_VPID, 1, "x", 1);
    st = velo_recv(&self->x, buf, 1);
    EXPECT_TRUE(!st)
    TH_LOG("VELO with another VELO ID not echoed");
    EXPECT_TRUE(cnt(EXTOLL_CNT_PROT_REFUSED) == r0)
    TH_LOG("refused at the server, not here");
    vreg32(6, EXTOLL_VPID_VELO_PROT, PP);
    velo_send(6, node, SRV_VPID, 2, "y", 1);
    st = velo_recv(&self->x, buf, 10);
    EXPECT_TRUE(st && EXTOLL_VELO_ST_TAG(st) == 2 && buf[0] == 'y')
    TH_LOG("VELO echoed once the ID matches");
    /* the server region was not changed by the refused put */
    memset(back, 0, 4096);
    rma_post(5, EXTOLL_RMA_OPT_TE,
             EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
                             EXTOLL_NOTI_COMPLETER, 0, 99),
             nrem + 1, nback);
    EXPECT_NOTI(&self->cl.e, "remote get with the server's ID", 4, 10, 0, nback,
                100);
    EXPECT_TRUE(!memcmp(src, back, 100))
    TH_LOG("server region unchanged by the refused put");
}

#include "extoll-regtest-prot.h"
#include "extoll-regtest-dead.h"

/* The peer of the remote and revive cases, not a test. */
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

static const struct devtest_mode modes[] = {
    {"self", "loopback", 0, ""},       {"prot", "prot", 0, ""},
    {"serve", NULL, 0, "[SECS]"},      {"ping", "remote", 2, "NODE N"},
    {"fuzz", "fuzz loopback", 1, "N"}, {"dead", "silent_node", 2, "NODE MAX"},
    {"revive", "revive", 1, "NODE"},   {NULL},
};

int main(int argc, char **argv)
{
    const struct devtest_mode *m = devtest_mode(argc, argv, modes, "self");

    devtest_find(EXTOLL_PCI_VENDOR_ID, EXTOLL_PCI_DEVICE_ID, dev, sizeof dev,
                 "the extoll model (run-extoll-vm-tests.sh)");
    bar0 = devtest_bar(dev, 0, EXTOLL_BAR_CTRL_SIZE);
    bar2 = devtest_bar(dev, 2, EXTOLL_BAR_VELO_SIZE);
    bar4 = devtest_bar(dev, 4, EXTOLL_BAR_RMA_SIZE);
    bar3 = devtest_bar(dev, EXTOLL_BAR_VELO_WIN, EXTOLL_BAR_VELO_WIN_SIZE);
    node_id = R32(bar0, EXTOLL_REG_NODE_ID);
    if (!m->fixtures) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        serve(devtest_arg(0, 60));
        return 0;
    }
    return devtest_run(m, argc, argv);
}
