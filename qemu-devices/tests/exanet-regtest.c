// SPDX-License-Identifier: GPL-2.0
/*
 * Driverless register-level test of the exanet QEMU model, run as root in
 * a guest (qemu-devices/tests/run-vm-tests.sh boots it).  It maps the BARs
 * through /sys/bus/pci/devices/<bdf>/resource<n>, enables bus mastering by
 * hand and uses locked pages whose physical address it reads from
 * /proc/self/pagemap, so it must run WITHOUT an IOMMU.  TAP from the
 * kernel's kselftest harness, one mode per run (devtest_main.h):
 *
 *   exanet-regtest self            local checks (NACK reasons, DMA, phase,
 *                                  FULL, interrupts, re-entrancy)
 *   exanet-regtest serve SECS      echo server on mailbox 0 (PDID 5), no TAP
 *   exanet-regtest ping NODE N     remote NACK checks, N round trips to NODE
 *   exanet-regtest timeout NODE    TIMEOUT towards a node that does not answer
 *   exanet-regtest fuzz N          N random MMIO accesses, then "self"
 *   exanet-regtest mmio            cost of MMIO accesses
 */
#define _GNU_SOURCE
#include <errno.h>
#include "devtest_main.h"
#include "exanet.h"
#include "exanet_rdma.h"

static uint32_t me;                          /* NODE_ID */
static volatile uint8_t *bar0, *bar1, *bar2; /* MMIO */
static int tailpoll;
static char devpath[300];

/* one locked page with known physical address */
static void *dma_page(uint64_t *phys, size_t len)
{
    void *m = locked(len);
    *phys = phys_of(m);
    return m;
}

static uint64_t status(int i, int c)
{
    return R64(bar1, i * 4096 + c * 0x100 + EXANET_PKT_STATUS);
}

static uint64_t wait_done(int i, int c, double tmo)
{
    double t0 = now();
    uint64_t s;
    while (EXANET_ST_STATE(s = status(i, c)) == EXANET_CHAN_ONGOING &&
           now() - t0 < tmo)
        ;
    return s;
}

/* Payload stores and the doorbell, without waiting for the outcome. */
static void start_send(int i, int c, uint32_t node, int mbox, const void *data,
                       int len)
{
    uint64_t tmp[8] = {0};
    memcpy(tmp, data, len > 64 ? 64 : len);
    for (int k = 0; k < 8; k++) {
        W64(bar1, i * 4096 + c * 0x100 + 8 * k, tmp[k]);
    }
    W64(bar1, i * 4096 + c * 0x100 + EXANET_PKT_DOORBELL,
        EXANET_DOORBELL(node, mbox, len));
}

static uint64_t send(int i, int c, uint32_t node, int mbox, const void *data,
                     int len)
{
    start_send(i, c, node, mbox, data, len);
    return wait_done(i, c, 5.0);
}

static void pkt_setup(int i, uint32_t pdid)
{
    W32(bar0, EXANET_REG_PKT_BASE(i) + EXANET_PKT_PDID, pdid);
    W32(bar0, EXANET_REG_PKT_BASE(i) + EXANET_PKT_ENABLE, 1);
}

static int mbox_setup(int m, uint32_t pdid, uint64_t phys, uint32_t n)
{
    W32(bar0, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_ENABLE, 0);
    W32(bar0, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_PDID, pdid);
    W64(bar0, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_QBASE_LO, phys);
    W32(bar0, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_NSLOTS, n);
    W32(bar0, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_ENABLE, 1);
    return R32(bar0, EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_ENABLE);
}

static uint64_t cnt(int n)
{
    return R64(bar0, EXANET_REG_COUNTER(n));
}

/* state, NACK reason and retries of a channel status word */
static const char *st_str(uint64_t s)
{
    static char buf[64];

    snprintf(buf, sizeof(buf), "st %u r %u retries %u", EXANET_ST_STATE(s),
             EXANET_ST_REASON(s), EXANET_ST_RETRIES(s));
    return buf;
}

static void print_counters(void)
{
    char line[EXANET_NUM_COUNTERS * 21 + 16];
    int n = snprintf(line, sizeof(line), "counters:");

    for (int k = 0; k < EXANET_NUM_COUNTERS; k++) {
        n += snprintf(line + n, sizeof(line) - n, " %llu",
                      (unsigned long long)cnt(k));
    }
    ksft_print_msg("%s\n", line);
}

#define MBOX_IRQ(m) (EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_IRQ)

/*
 * Local checks, each from a reset device with one locked page (q at phys)
 * for a mailbox queue; the device is reset again before the page goes.
 */
FIXTURE(local)
{
    uint64_t phys;
    struct exanet_mbox_slot *q;
};

FIXTURE_SETUP(local)
{
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    self->q = dma_page(&self->phys, 4096);
}

FIXTURE_TEARDOWN(local)
{
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
}

TEST_F(local, id_registers)
{
    ksft_print_msg("ID %08x VER %u NODE %u NUM %u CAPS %08x\n", R32(bar0, 0),
                   R32(bar0, 4), R32(bar0, 8), R32(bar0, 12), R32(bar0, 16));
    EXPECT_EQ(EXANET_ID_MAGIC, R32(bar0, EXANET_REG_ID));
    EXPECT_EQ(me, R32(bar0, EXANET_REG_NODE_ID));
    EXPECT_EQ(EXANET_ID_MAGIC | (uint64_t)EXANET_HW_VERSION << 32,
              R64(bar0, EXANET_REG_ID))
    TH_LOG("64-bit read");
}

TEST_F(local, disabled_interface_ignores_doorbell)
{
    W64(bar1, EXANET_PKT_DOORBELL, EXANET_DOORBELL(me, 0, 8));
    EXPECT_EQ(0, status(0, 0));
    EXPECT_EQ(0, cnt(EXANET_CNT_TX_PACKETS));
}

TEST_F(local, disabled_mailbox_and_pdid_0_nacked)
{
    uint64_t s;

    pkt_setup(0, 5);
    s = send(0, 0, me, 0, "hello", 5);
    EXPECT_TRUE(EXANET_ST_STATE(s) == EXANET_CHAN_NACK &&
                EXANET_ST_REASON(s) == EXANET_NACK_DISABLED)
    TH_LOG("disabled mbox -> NACK DISABLED (%s)", st_str(s));
    pkt_setup(1, 0);
    s = send(1, 0, me, 0, "x", 1);
    EXPECT_EQ(EXANET_NACK_PDID, EXANET_ST_REASON(s))
    TH_LOG("iface PDID 0 -> NACK PDID");
}

/*
 * Doorbells packetizer 0 (PDID 5) refuses at once, each from a reset
 * device: the NACK reason (and state where marked) of the channel.
 */
FIXTURE(bad_doorbell)
{
    int unused;
};

FIXTURE_VARIANT(bad_doorbell)
{
    uint32_t node; /* ~0: the own node */
    uint32_t len;
    uint64_t bits; /* ORed into the doorbell */
    unsigned reason;
    bool nack_state;
};

FIXTURE_VARIANT_ADD(bad_doorbell, size_0) {
    .node = ~0u,
    .len = 0,
    .reason = EXANET_NACK_BAD_PACKET,
    .nack_state = true,
};

FIXTURE_VARIANT_ADD(bad_doorbell, size_65) {
    .node = ~0u,
    .len = 65,
    .reason = EXANET_NACK_BAD_PACKET,
};

FIXTURE_VARIANT_ADD(bad_doorbell, reserved_bit) {
    .node = ~0u,
    .len = 8,
    .bits = 1ull << 60,
    .reason = EXANET_NACK_BAD_PACKET,
};

FIXTURE_VARIANT_ADD(bad_doorbell, node_999) {
    .node = 999,
    .len = 8,
    .reason = EXANET_NACK_NO_ROUTE,
    .nack_state = true,
};

FIXTURE_SETUP(bad_doorbell)
{
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    pkt_setup(0, 5);
}

FIXTURE_TEARDOWN(bad_doorbell)
{
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
}

TEST_F(bad_doorbell, nacked_at_once)
{
    uint32_t node = variant->node == ~0u ? me : variant->node;
    uint64_t s;

    W64(bar1, EXANET_PKT_DOORBELL,
        EXANET_DOORBELL(node, 0, variant->len) | variant->bits);
    s = status(0, 0);
    if (variant->nack_state) {
        EXPECT_EQ(EXANET_CHAN_NACK, EXANET_ST_STATE(s)) TH_LOG("%s", st_str(s));
    }
    EXPECT_EQ(variant->reason, EXANET_ST_REASON(s)) TH_LOG("%s", st_str(s));
}

/*
 * Invalid configurations stay disabled; a 4-slot mailbox takes 4 messages
 * (slot contents, source), NACKs the 5th FULL, wraps with phase 0 after
 * HEAD moves; the checks depend on each other's queue state.
 */
TEST_F(local, mailbox_config_delivery_full_and_wrap)
{
    struct exanet_mbox_slot *q = self->q;
    uint64_t phys = self->phys, s;
    char msg[64];

    pkt_setup(0, 5);
    EXPECT_EQ(0, mbox_setup(0, 5, phys, 3)) TH_LOG("nslots 3 refused");
    EXPECT_EQ(0, mbox_setup(0, 5, phys + 8, 4)) TH_LOG("unaligned qbase");
    EXPECT_EQ(0, mbox_setup(0, 5, phys, 16384)) TH_LOG("nslots 16384");
    EXPECT_EQ(1, mbox_setup(0, 5, phys, 4)) TH_LOG("valid mbox enabled");

    pkt_setup(2, 6);
    s = send(2, 0, me, 0, "x", 1);
    EXPECT_EQ(EXANET_NACK_PDID, EXANET_ST_REASON(s))
    TH_LOG("PDID mismatch -> NACK PDID");

    for (int k = 0; k < 4; k++) {
        snprintf(
            msg, sizeof msg,
            "message number %d, 64 bytes max.................................",
            k);
        s = send(0, k % 4, me, 0, msg, k == 3 ? 64 : 20 + k);
        EXPECT_EQ(EXANET_CHAN_ACK, EXANET_ST_STATE(s))
        TH_LOG("send %d ACK (%s)", k, st_str(s));
    }
    for (int k = 0; k < 4; k++) {
        EXPECT_TRUE(q[k].flags == 1 && q[k].len == (k == 3 ? 64u : 20u + k) &&
                    q[k].src_node == me && q[k].src_iface == 0 &&
                    q[k].src_chan == (unsigned)k &&
                    !memcmp(q[k].payload, "message number", 14))
        TH_LOG("slot %d: flags %u len %u src %u/%u/%u seq %u '%.20s'", k,
               q[k].flags, q[k].len, q[k].src_node, q[k].src_iface,
               q[k].src_chan, q[k].seq, q[k].payload);
    }
    s = send(0, 0, me, 0, "full", 4);
    EXPECT_EQ(EXANET_NACK_FULL, EXANET_ST_REASON(s))
    TH_LOG("5th into 4-slot mbox -> FULL");
    EXPECT_EQ(1, R32(bar2, EXANET_MBOX_FULL_COUNT));
    EXPECT_EQ(4, R32(bar2, EXANET_MBOX_RX_COUNT));
    EXPECT_EQ(4, R32(bar2, EXANET_MBOX_SIZE));
    W32(bar2, EXANET_MBOX_HEAD, 7); /* invalid, ignored */
    s = send(0, 0, me, 0, "full", 4);
    EXPECT_EQ(EXANET_NACK_FULL, EXANET_ST_REASON(s))
    TH_LOG("invalid HEAD ignored");
    W32(bar2, EXANET_MBOX_HEAD, 2); /* consumed 2 */
    s = send(0, 0, me, 0, "wrap0", 5);
    EXPECT_TRUE(EXANET_ST_STATE(s) == EXANET_CHAN_ACK && q[0].flags == 0 &&
                !memcmp(q[0].payload, "wrap0", 5))
    TH_LOG("wrap: slot 0 with phase 0 (%s)", st_str(s));
    s = send(0, 0, me, 0, "wrap1", 5);
    s = send(0, 0, me, 0, "wrap2", 5);
    EXPECT_EQ(EXANET_NACK_FULL, EXANET_ST_REASON(s))
    TH_LOG("full again after 2 more");
    EXPECT_EQ(2, R32(bar2, EXANET_MBOX_TAIL));
    EXPECT_EQ(2, R32(bar2, EXANET_MBOX_HEAD));
}

TEST_F(local, disabled_mailbox_gets_no_dma)
{
    uint64_t s;

    pkt_setup(0, 5);
    ASSERT_EQ(1, mbox_setup(0, 5, self->phys, 4));
    W32(bar0, EXANET_REG_MBOX_BASE(0) + EXANET_MBOX_ENABLE, 0);
    memset(self->q, 0xaa, 4096);
    s = send(0, 0, me, 0, "nope", 4);
    EXPECT_EQ(EXANET_NACK_DISABLED, EXANET_ST_REASON(s));
    EXPECT_EQ(0xaa, self->q[0].payload[0]);
}

TEST_F(local, bad_dma_address_disables_mailbox)
{
    uint64_t s;

    pkt_setup(0, 5);
    /* DMA failure: queue outside guest RAM */
    EXPECT_EQ(1, mbox_setup(1, 5, 0xfffff0000000ull, 4))
    TH_LOG("mbox at bogus address");
    s = send(0, 0, me, 1, "dma", 3);
    EXPECT_TRUE(EXANET_ST_REASON(s) == EXANET_NACK_DISABLED &&
                cnt(EXANET_CNT_DMA_ERRORS) >= 1)
    TH_LOG("bad DMA -> NACK DISABLED (%s), DMA_ERRORS %llu", st_str(s),
           (unsigned long long)cnt(EXANET_CNT_DMA_ERRORS));
}

TEST_F(local, doorbell_and_payload_32bit_stores)
{
    uint64_t s;

    pkt_setup(0, 5);
    mbox_setup(0, 5, self->phys, 8);
    W32(bar1, 0, 0x64636261);
    W32(bar1, 4, 0x68676665);
    W32(bar1, EXANET_PKT_DOORBELL, (uint32_t)EXANET_DOORBELL(me, 0, 8));
    s = wait_done(0, 0, 2);
    EXPECT_TRUE(EXANET_ST_STATE(s) == EXANET_CHAN_ACK &&
                !memcmp(self->q[0].payload, "abcdefgh", 8))
    TH_LOG("32-bit stores (%s)", st_str(s));
}

/*
 * Interrupt registers (mailbox 0 enabled with 8 empty slots, PDID 5,
 * packetizer 0 in PDID 5).  MSI-X is not enabled by anybody here, so the
 * vectors only go pending in the PBA; the registers tell what fired.  The
 * checks follow one mailbox through arming, firing and resets.
 */
TEST_F(local, interrupt_registers)
{
    struct exanet_mbox_slot *q = self->q;
    uint32_t caps = R32(bar0, EXANET_REG_IRQ_CAPS), n0;
    uint64_t s;

    ksft_print_msg("IRQ_CAPS %08x\n", caps);
    pkt_setup(0, 5);
    mbox_setup(0, 5, phys_of(q), 8);
    if (!EXANET_IRQ_CAPS_VECTORS(caps)) {
        /* msix=off: an older NI, nothing can be armed */
        W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(0));
        EXPECT_EQ(0, R32(bar0, MBOX_IRQ(0))) TH_LOG("no vectors: arm refused");
        s = send(0, 0, me, 0, "noirq", 5);
        EXPECT_TRUE(EXANET_ST_STATE(s) == EXANET_CHAN_ACK &&
                    R32(bar0, EXANET_REG_IRQ_COUNT) == 0 &&
                    R64(bar0, EXANET_REG_IRQ_MBOX_PENDING) == 0)
        TH_LOG("no vectors: nothing fires (%s)", st_str(s));
        return;
    }
    EXPECT_EQ(EXANET_NUM_IRQ_VECTORS, EXANET_IRQ_CAPS_VECTORS(caps))
    TH_LOG("IRQ_CAPS vectors");
    EXPECT_TRUE(R32(bar0, EXANET_REG_IRQ_COUNT) == 0 &&
                R64(bar0, EXANET_REG_IRQ_MBOX_PENDING) == 0 &&
                R32(bar0, EXANET_REG_IRQ_RANK_PENDING) == 0)
    TH_LOG("IRQ state clear after reset");

    /* refused arm values stay disarmed */
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(EXANET_NUM_IRQ_VECTORS));
    EXPECT_EQ(0, R32(bar0, MBOX_IRQ(0))) TH_LOG("vector out of range refused");
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(0) | 0x2);
    EXPECT_EQ(0, R32(bar0, MBOX_IRQ(0))) TH_LOG("reserved bit refused");
    W32(bar0, MBOX_IRQ(3), EXANET_IRQ_ARM(0));
    EXPECT_EQ(0, R32(bar0, MBOX_IRQ(3)))
    TH_LOG("disabled mailbox cannot be armed");
    W32(bar0, EXANET_REG_CTX_BASE(0) + EXANET_CTX_IRQ, EXANET_IRQ_ARM(9));
    EXPECT_EQ(0, R32(bar0, EXANET_REG_CTX_BASE(0) + EXANET_CTX_IRQ))
    TH_LOG("rank: vector out of range refused");

    /* armed mailbox: one message fires once, disarms, marks pending */
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(2));
    EXPECT_EQ(EXANET_IRQ_ARM(2), R32(bar0, MBOX_IRQ(0)))
    TH_LOG("armed with vector 2");
    s = send(0, 0, me, 0, "irq1", 4);
    EXPECT_TRUE(EXANET_ST_STATE(s) == EXANET_CHAN_ACK && q[0].flags == 1)
    TH_LOG("message delivered (%s)", st_str(s));
    EXPECT_EQ(0, R32(bar0, MBOX_IRQ(0))) TH_LOG("fired: disarmed (one-shot)");
    EXPECT_TRUE(R64(bar0, EXANET_REG_IRQ_MBOX_PENDING) == 1 &&
                R32(bar0, EXANET_REG_IRQ_COUNT) == 1)
    TH_LOG("pending bit 0, count 1 (pending %llx count %u)",
           (unsigned long long)R64(bar0, EXANET_REG_IRQ_MBOX_PENDING),
           R32(bar0, EXANET_REG_IRQ_COUNT));
    s = send(0, 0, me, 0, "irq2", 4);
    EXPECT_TRUE(EXANET_ST_STATE(s) == EXANET_CHAN_ACK &&
                R32(bar0, EXANET_REG_IRQ_COUNT) == 1)
    TH_LOG("second message: no second interrupt");
    W32(bar0, EXANET_REG_IRQ_MBOX_PENDING + 4, 1); /* other half: no effect */
    EXPECT_EQ(1, R64(bar0, EXANET_REG_IRQ_MBOX_PENDING))
    TH_LOG("W1C of the high half leaves bit 0");
    W64(bar0, EXANET_REG_IRQ_MBOX_PENDING, 1);
    EXPECT_EQ(0, R64(bar0, EXANET_REG_IRQ_MBOX_PENDING)) TH_LOG("W1C clears");

    /* a message before arming is not reported later */
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(1));
    EXPECT_EQ(EXANET_IRQ_ARM(1), R32(bar0, MBOX_IRQ(0)))
    TH_LOG("re-armed, queue not empty: no interrupt");
    EXPECT_EQ(1, R32(bar0, EXANET_REG_IRQ_COUNT))
    TH_LOG("arming does not fire");
    /* refused packets (FULL, PDID) do not fire */
    pkt_setup(4, 6);
    s = send(4, 0, me, 0, "pdid", 4);
    EXPECT_TRUE(EXANET_ST_REASON(s) == EXANET_NACK_PDID &&
                R32(bar0, MBOX_IRQ(0)) == EXANET_IRQ_ARM(1))
    TH_LOG("NACKed packet leaves the mailbox armed (%s)", st_str(s));
    /* disable disarms; enable starts disarmed */
    W32(bar0, EXANET_REG_MBOX_BASE(0) + EXANET_MBOX_ENABLE, 0);
    EXPECT_EQ(0, R32(bar0, MBOX_IRQ(0))) TH_LOG("disable disarms");
    mbox_setup(0, 5, phys_of(q), 8);
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(3));
    n0 = R32(bar0, EXANET_REG_IRQ_COUNT);
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    EXPECT_TRUE(R32(bar0, MBOX_IRQ(0)) == 0 &&
                R32(bar0, EXANET_REG_IRQ_COUNT) == 0 && n0 == 1)
    TH_LOG("reset disarms and clears the count");
}

/*
 * Hostile: a mailbox queue on our own packetizer page (DMA re-entrancy)
 * must not hurt the device; then disabling the packetizer aborts its
 * channel (IDLE).
 */
TEST_F(local, dma_into_own_bar_then_disable_idles)
{
    char p[400];
    unsigned long long st, en, fl;
    uint64_t evil[8], s;
    FILE *f;

    pkt_setup(0, 5);
    snprintf(p, sizeof p, "%s/resource", devpath);
    f = fopen(p, "r");
    ASSERT_NE(NULL, f) TH_LOG("%s: %s", p, strerror(errno));
    ASSERT_EQ(3, fscanf(f, "%llx %llx %llx", &st, &en, &fl));
    ASSERT_EQ(3, fscanf(f, "%llx %llx %llx", &st, &en, &fl));
    fclose(f);
    ksft_print_msg("BAR1 at 0x%llx\n", st);
    EXPECT_EQ(1, mbox_setup(2, 5, st + 4096 * 3, 4))
    TH_LOG("mbox 2 on BAR1 page 3");
    pkt_setup(3, 5);
    for (int k = 0; k < 8; k++) {
        evil[k] = EXANET_DOORBELL(me, 2, 64);
    }
    s = send(0, 0, me, 2, evil, 64);
    ksft_print_msg("re-entrancy: %s, chan status of page 3: %llx\n", st_str(s),
                   (unsigned long long)status(3, 0));
    EXPECT_TRUE(EXANET_ST_STATE(s) == EXANET_CHAN_ACK ||
                EXANET_ST_STATE(s) == EXANET_CHAN_NACK)
    TH_LOG("DMA into own BAR survived");
    W32(bar0, EXANET_REG_MBOX_BASE(2) + EXANET_MBOX_ENABLE, 0);

    /* disabling the packetizer aborts, BUSY register */
    W32(bar0, EXANET_REG_PKT_BASE(0) + EXANET_PKT_ENABLE, 0);
    EXPECT_EQ(0, status(0, 0)) TH_LOG("disable -> IDLE");
    print_counters();
}

/* Random MMIO first (fuzz mode), then the local checks on a reset device. */
FIXTURE(fuzz)
{
    uint64_t phys; /* of the one page mailboxes may point at */
};

FIXTURE_SETUP(fuzz)
{
    dma_page(&self->phys, 4096);
}

FIXTURE_TEARDOWN(fuzz)
{
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
}

TEST_F(fuzz, random_mmio_then_device_alive)
{
    int iters = devtest_arg(0, 100000);
    uint64_t phys = self->phys;
    uint64_t x = 88172645463325252ull;

    for (int k = 0; k < iters; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int bar = x % 3, sz = (x >> 2) & 1 ? 8 : 4;
        uint32_t off;
        switch (bar) {
        case 0:
            off = (x >> 8) % EXANET_BAR_CTRL_SIZE & ~(sz - 1);
            if (off >= 0x2000 && off < 0x3000 &&
                ((off & 0x3f) == 8 || (off & 0x3f) == 0xc || sz == 8)) {
                continue; /* keep DMA inside our page: set below */
            }
            if ((x >> 40) % 4 == 0 && off >= 0x2000 && off < 0x3000) {
                /* valid-ish mailbox */
                int m = (off - 0x2000) / 0x40;
                mbox_setup(m, v & 3, phys, 4 << (v % 3));
                continue;
            }
            if (sz == 8) {
                W64(bar0, off, v);
            } else {
                W32(bar0, off, v);
            }
            break;
        case 1:
            off = (x >> 8) % EXANET_BAR_PKT_SIZE & ~(sz - 1);
            if ((x >> 40) % 3 == 0) {
                off = (off & ~0xffu) | 0x40;
                v = (x >> 50) % 4
                        ? EXANET_DOORBELL((v >> 20) % 3 ? me : (v >> 24) % 4,
                                          v >> 8, v % 70)
                        : v;
                sz = 8;
            }
            if (sz == 8) {
                W64(bar1, off, v);
            } else {
                W32(bar1, off, v);
            }
            if ((x >> 45) % 2) {
                (void)R64(bar1, (off & ~0xffu) | 0x48);
            }
            break;
        case 2:
            off = (x >> 8) % EXANET_BAR_MBOX_SIZE & ~(sz - 1);
            if (sz == 8) {
                W64(bar2, off, v);
            } else {
                W32(bar2, off, v);
            }
            (void)R32(bar2, (off & ~0xfffu) | 8);
            break;
        }
    }
    ksft_print_msg("fuzzed %d accesses; ID now %08x\n", iters, R32(bar0, 0));
    EXPECT_EQ(EXANET_ID_MAGIC, R32(bar0, 0));
    if (R32(bar0, 0) == EXANET_ID_MAGIC) {
        ksft_print_msg("device alive after fuzzing\n");
    }
    print_counters();
}

/* The client of "serve" on node NODE (ping mode). */
FIXTURE(remote)
{
    struct exanet_mbox_slot *q;
};

FIXTURE_SETUP(remote)
{
    uint64_t phys;

    self->q = dma_page(&phys, 4096 * 8);
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    pkt_setup(0, 5);
    pkt_setup(1, 9);
    mbox_setup(0, 5, phys, 32);
}

FIXTURE_TEARDOWN(remote)
{
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
}

TEST_F(remote, nack_disabled_and_pdid)
{
    uint32_t peer = devtest_arg(0, 1);
    uint64_t s;

    s = send(0, 1, peer, 7, "x", 1);
    EXPECT_EQ(EXANET_NACK_DISABLED, EXANET_ST_REASON(s))
    TH_LOG("remote disabled mbox -> NACK DISABLED (%s)", st_str(s));
    s = send(1, 1, peer, 0, "x", 1);
    EXPECT_EQ(EXANET_NACK_PDID, EXANET_ST_REASON(s))
    TH_LOG("remote PDID mismatch -> NACK PDID (%s)", st_str(s));
}

TEST_F(remote, round_trips)
{
    uint32_t peer = devtest_arg(0, 1);
    int count = devtest_arg(1, 100);
    uint32_t head = 0, phase = 1;
    double t0 = now(), best = 1e9;
    int ok = 0;
    uint64_t s;

    for (int k = 0; k < count; k++) {
        char msg[32];
        double t1 = now();
        snprintf(msg, sizeof msg, "ping %d", k);
        s = send(0, 0, peer, 0, msg, 32);
        if (EXANET_ST_STATE(s) != EXANET_CHAN_ACK) {
            ksft_print_msg("ping %d: %s\n", k, st_str(s));
            continue;
        }
        volatile struct exanet_mbox_slot *sl = &self->q[head]; /* DMA */
        while ((sl->flags & 1) != phase && now() - t1 < 5) {
            if (tailpoll) {
                (void)R32(bar2, EXANET_MBOX_TAIL);
            }
        }
        if ((sl->flags & 1) == phase &&
            !strcmp((const char *)sl->payload, msg)) {
            ok++;
        }
        head = (head + 1) % 32;
        if (!head) {
            phase ^= 1;
        }
        W32(bar2, EXANET_MBOX_HEAD, head);
        if (now() - t1 < best) {
            best = now() - t1;
        }
    }
    double t = now() - t0;
    ksft_print_msg(
        "ping-pong %d/%d ok, avg RTT %.1f us, best %.1f us, retransmits %llu\n",
        ok, count, t / count * 1e6, best * 1e6,
        (unsigned long long)cnt(EXANET_CNT_TX_RETRANSMITS));
    EXPECT_EQ(count, ok);
    print_counters();
}

/* Towards a node that does not answer (timeout mode). */
FIXTURE(silent_peer)
{
    int unused;
};

FIXTURE_SETUP(silent_peer)
{
}

FIXTURE_TEARDOWN(silent_peer)
{
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
}

TEST_F(silent_peer, ongoing_doorbell_ignored_then_timeout)
{
    uint32_t dead = devtest_arg(0, 2);

    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    W32(bar0, EXANET_REG_RETX_TIMEOUT_US, 1000);
    W32(bar0, EXANET_REG_RETX_MAX, 3);
    pkt_setup(0, 5);
    double t0 = now();
    uint64_t busy0 = cnt(EXANET_CNT_DOORBELL_BUSY),
             tx0 = cnt(EXANET_CNT_TX_PACKETS);
    start_send(0, 0, dead, 0, "x", 1);
    uint64_t s = status(0, 0);
    /* a doorbell on the ONGOING channel is ignored: counted, nothing
     * sent, the first packet's retries go on */
    start_send(0, 0, dead, 1, "y", 1);
    ksft_print_msg("doorbell on an ONGOING channel ignored (doorbell_busy "
                   "%llu -> %llu, tx_packets %llu -> %llu)\n",
                   (unsigned long long)busy0,
                   (unsigned long long)cnt(EXANET_CNT_DOORBELL_BUSY),
                   (unsigned long long)tx0,
                   (unsigned long long)cnt(EXANET_CNT_TX_PACKETS));
    EXPECT_TRUE(EXANET_ST_STATE(s) == EXANET_CHAN_ONGOING &&
                EXANET_ST_STATE(status(0, 0)) == EXANET_CHAN_ONGOING &&
                cnt(EXANET_CNT_DOORBELL_BUSY) == busy0 + 1 &&
                cnt(EXANET_CNT_TX_PACKETS) == tx0 + 1);
    s = wait_done(0, 0, 5.0);
    ksft_print_msg("dead node -> TIMEOUT after 3 retries in %.1f ms (%s)\n",
                   (now() - t0) * 1e3, st_str(s));
    EXPECT_EQ(EXANET_CHAN_TIMEOUT, EXANET_ST_STATE(s));
    EXPECT_EQ(3, EXANET_ST_RETRIES(s));
}

/* The cost of MMIO accesses (mmio mode): figures, no checks. */
FIXTURE(mmio)
{
    int unused;
};

FIXTURE_SETUP(mmio)
{
}

FIXTURE_TEARDOWN(mmio)
{
}

TEST_F(mmio, access_cost)
{
    pkt_setup(0, 5);
    double t0 = now();
    for (int k = 0; k < 100000; k++) {
        (void)R64(bar1, EXANET_PKT_STATUS);
    }
    double t1 = now();
    for (int k = 0; k < 100000; k++) {
        W64(bar1, 8 * (k & 7), k);
    }
    double t2 = now();
    for (int k = 0; k < 100000; k++) {
        (void)R32(bar0, 0);
    }
    double t3 = now();
    ksft_print_msg(
        "MMIO: status read %.2f us, payload write %.2f us, bar0 read %.2f us\n",
        (t1 - t0) * 10, (t2 - t1) * 10, (t3 - t2) * 10);
}

/* The peer of the remote cases, not a test: echoes what mailbox 0 gets. */
static void serve(double secs)
{
    uint64_t phys;
    struct exanet_mbox_slot *q = dma_page(&phys, 4096 * 8);
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    pkt_setup(0, 5);
    mbox_setup(0, 5, phys, 32);
    printf("serving\n");
    fflush(stdout);
    uint32_t head = 0, phase = 1, n = 0;
    double t0 = now();
    while (now() - t0 < secs) {
        volatile struct exanet_mbox_slot *sl = &q[head]; /* DMA */
        if ((sl->flags & 1) != phase) {
            if (tailpoll) {
                (void)R32(bar2, EXANET_MBOX_TAIL);
            }
            continue;
        }
        uint64_t s =
            send(0, 0, sl->src_node, 0, (const void *)sl->payload, sl->len);
        if (EXANET_ST_STATE(s) != EXANET_CHAN_ACK) {
            printf("echo failed %s\n", st_str(s));
        }
        head = (head + 1) % 32;
        if (!head) {
            phase ^= 1;
        }
        W32(bar2, EXANET_MBOX_HEAD, head);
        n++;
    }
    printf("served %u\n", n);
    print_counters();
}

static const struct devtest_mode modes[] = {
    {"self", "local bad_doorbell", 0, ""},
    {"serve", NULL, 0, "[SECS]"},
    {"ping", "remote", 1, "NODE [N]"},
    {"timeout", "silent_peer", 1, "NODE"},
    {"fuzz", "fuzz local bad_doorbell", 0, "[N]"},
    {"mmio", "mmio", 0, ""},
    {NULL},
};

int main(int argc, char **argv)
{
    const struct devtest_mode *m = devtest_mode(argc, argv, modes, "self");

    devtest_find(EXANET_PCI_VENDOR_ID, EXANET_PCI_DEVICE_ID, devpath,
                 sizeof devpath, "the exanet model (run-vm-tests.sh)");
    bar0 = devtest_bar(devpath, 0, EXANET_BAR_CTRL_SIZE);
    bar1 = devtest_bar(devpath, 1, EXANET_BAR_PKT_SIZE);
    bar2 = devtest_bar(devpath, 2, EXANET_BAR_MBOX_SIZE);
    me = R32(bar0, EXANET_REG_NODE_ID);
    tailpoll = getenv("TAILPOLL") != NULL;
    if (!m->fixtures) {
        serve(devtest_arg(0, 10));
        return 0;
    }
    return devtest_run(m, argc, argv);
}
