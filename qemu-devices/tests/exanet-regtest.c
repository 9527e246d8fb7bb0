// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Driverless register-level test of the exanet QEMU model, run as root in
 * a guest (qemu-devices/tests/run-vm-tests.sh boots it).  It maps the BARs
 * through /sys/bus/pci/devices/<bdf>/resource<n>, enables bus mastering by
 * hand and uses locked pages whose physical address it reads from
 * /proc/self/pagemap, so it must run WITHOUT an IOMMU.
 *
 *   exanet-regtest self            local checks (NACK reasons, DMA, phase, FULL...)
 *   exanet-regtest serve SECS      echo server on mailbox 0 (PDID 5)
 *   exanet-regtest ping NODE N     N round trips to NODE, remote NACK checks
 *   exanet-regtest timeout NODE    TIMEOUT towards a node that does not answer
 *   exanet-regtest fuzz N          N random MMIO accesses, then "self"
 *   exanet-regtest mmio            cost of MMIO accesses
 */
#define _GNU_SOURCE
#include <errno.h>
#include "devtest.h"
#include "exanet.h"
#include "exanet_rdma.h"

int fails;

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

#define MBOX_IRQ(m) (EXANET_REG_MBOX_BASE(m) + EXANET_MBOX_IRQ)

/*
 * Interrupt registers (mailbox 0 enabled with 8 empty slots, PDID 5,
 * packetizer 0 in PDID 5).  MSI-X is not enabled by anybody here, so the
 * vectors only go pending in the PBA; the registers tell what fired.
 */
static void irqtest(uint32_t me, struct exanet_mbox_slot *q)
{
    uint32_t caps = R32(bar0, EXANET_REG_IRQ_CAPS), n0;
    uint64_t s;

    printf("IRQ_CAPS %08x\n", caps);
    mbox_setup(0, 5, phys_of(q), 8);
    if (!EXANET_IRQ_CAPS_VECTORS(caps)) {
        /* msix=off: an older NI, nothing can be armed */
        W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(0));
        EXPECT(R32(bar0, MBOX_IRQ(0)) == 0, "no vectors: arm refused\n");
        s = send(0, 0, me, 0, "noirq", 5);
        EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_ACK &&
                   R32(bar0, EXANET_REG_IRQ_COUNT) == 0 &&
                   R64(bar0, EXANET_REG_IRQ_MBOX_PENDING) == 0,
               "no vectors: nothing fires\n");
        return;
    }
    EXPECT(EXANET_IRQ_CAPS_VECTORS(caps) == EXANET_NUM_IRQ_VECTORS,
           "IRQ_CAPS vectors\n");
    EXPECT(R32(bar0, EXANET_REG_IRQ_COUNT) == 0 &&
               R64(bar0, EXANET_REG_IRQ_MBOX_PENDING) == 0 &&
               R32(bar0, EXANET_REG_IRQ_RANK_PENDING) == 0,
           "IRQ state clear after reset\n");

    /* refused arm values stay disarmed */
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(EXANET_NUM_IRQ_VECTORS));
    EXPECT(R32(bar0, MBOX_IRQ(0)) == 0, "vector out of range refused\n");
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(0) | 0x2);
    EXPECT(R32(bar0, MBOX_IRQ(0)) == 0, "reserved bit refused\n");
    W32(bar0, MBOX_IRQ(3), EXANET_IRQ_ARM(0));
    EXPECT(R32(bar0, MBOX_IRQ(3)) == 0, "disabled mailbox cannot be armed\n");
    W32(bar0, EXANET_REG_CTX_BASE(0) + EXANET_CTX_IRQ, EXANET_IRQ_ARM(9));
    EXPECT(R32(bar0, EXANET_REG_CTX_BASE(0) + EXANET_CTX_IRQ) == 0,
           "rank: vector out of range refused\n");

    /* armed mailbox: one message fires once, disarms, marks pending */
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(2));
    EXPECT(R32(bar0, MBOX_IRQ(0)) == EXANET_IRQ_ARM(2),
           "armed with vector 2\n");
    s = send(0, 0, me, 0, "irq1", 4);
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_ACK && q[0].flags == 1,
           "message delivered\n");
    EXPECT(R32(bar0, MBOX_IRQ(0)) == 0, "fired: disarmed (one-shot)\n");
    EXPECT(R64(bar0, EXANET_REG_IRQ_MBOX_PENDING) == 1 &&
               R32(bar0, EXANET_REG_IRQ_COUNT) == 1,
           "pending bit 0, count 1 (pending %llx count %u)\n",
           (unsigned long long)R64(bar0, EXANET_REG_IRQ_MBOX_PENDING),
           R32(bar0, EXANET_REG_IRQ_COUNT));
    s = send(0, 0, me, 0, "irq2", 4);
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_ACK &&
               R32(bar0, EXANET_REG_IRQ_COUNT) == 1,
           "second message: no second interrupt\n");
    W32(bar0, EXANET_REG_IRQ_MBOX_PENDING + 4, 1); /* other half: no effect */
    EXPECT(R64(bar0, EXANET_REG_IRQ_MBOX_PENDING) == 1,
           "W1C of the high half leaves bit 0\n");
    W64(bar0, EXANET_REG_IRQ_MBOX_PENDING, 1);
    EXPECT(R64(bar0, EXANET_REG_IRQ_MBOX_PENDING) == 0, "W1C clears\n");

    /* a message before arming is not reported later */
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(1));
    EXPECT(R32(bar0, MBOX_IRQ(0)) == EXANET_IRQ_ARM(1),
           "re-armed, queue not empty: no interrupt\n");
    EXPECT(R32(bar0, EXANET_REG_IRQ_COUNT) == 1, "arming does not fire\n");
    /* refused packets (FULL, PDID) do not fire */
    pkt_setup(4, 6);
    s = send(4, 0, me, 0, "pdid", 4);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_PDID &&
               R32(bar0, MBOX_IRQ(0)) == EXANET_IRQ_ARM(1),
           "NACKed packet leaves the mailbox armed\n");
    /* disable disarms; enable starts disarmed */
    W32(bar0, EXANET_REG_MBOX_BASE(0) + EXANET_MBOX_ENABLE, 0);
    EXPECT(R32(bar0, MBOX_IRQ(0)) == 0, "disable disarms\n");
    mbox_setup(0, 5, phys_of(q), 8);
    W32(bar0, MBOX_IRQ(0), EXANET_IRQ_ARM(3));
    n0 = R32(bar0, EXANET_REG_IRQ_COUNT);
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    EXPECT(R32(bar0, MBOX_IRQ(0)) == 0 &&
               R32(bar0, EXANET_REG_IRQ_COUNT) == 0 && n0 == 1,
           "reset disarms and clears the count\n");
    /* back to the state the caller expects */
    pkt_setup(0, 5);
    memset(q, 0, 4096);
    mbox_setup(0, 5, phys_of(q), 8);
}

static void selftest(uint32_t me)
{
    uint64_t phys, s;
    struct exanet_mbox_slot *q = dma_page(&phys, 4096);
    char msg[64];

    printf("ID %08x VER %u NODE %u NUM %u CAPS %08x\n", R32(bar0, 0),
           R32(bar0, 4), R32(bar0, 8), R32(bar0, 12), R32(bar0, 16));
    EXPECT(R32(bar0, EXANET_REG_ID) == EXANET_ID_MAGIC, "ID\n");
    EXPECT(R32(bar0, EXANET_REG_NODE_ID) == me, "NODE_ID\n");
    EXPECT(R64(bar0, EXANET_REG_ID) ==
               (EXANET_ID_MAGIC | (uint64_t)EXANET_HW_VERSION << 32),
           "64-bit read\n");
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);

    /* disabled interface: doorbell ignored */
    W64(bar1, EXANET_PKT_DOORBELL, EXANET_DOORBELL(me, 0, 8));
    EXPECT(status(0, 0) == 0 && cnt(EXANET_CNT_TX_PACKETS) == 0,
           "disabled iface ignores doorbell\n");

    pkt_setup(0, 5);
    s = send(0, 0, me, 0, "hello", 5);
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_NACK &&
               EXANET_ST_REASON(s) == EXANET_NACK_DISABLED,
           "disabled mbox -> NACK DISABLED (%s)\n", st_str(s));
    W64(bar1, EXANET_PKT_DOORBELL, EXANET_DOORBELL(me, 0, 0));
    s = status(0, 0);
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_NACK &&
               EXANET_ST_REASON(s) == EXANET_NACK_BAD_PACKET,
           "size 0 -> BAD_PACKET\n");
    W64(bar1, EXANET_PKT_DOORBELL, EXANET_DOORBELL(me, 0, 65));
    s = status(0, 0);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_BAD_PACKET,
           "size 65 -> BAD_PACKET\n");
    W64(bar1, EXANET_PKT_DOORBELL, EXANET_DOORBELL(me, 0, 8) | (1ull << 60));
    s = status(0, 0);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_BAD_PACKET,
           "reserved bit -> BAD_PACKET\n");
    W64(bar1, EXANET_PKT_DOORBELL, EXANET_DOORBELL(999, 0, 8));
    s = status(0, 0);
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_NACK &&
               EXANET_ST_REASON(s) == EXANET_NACK_NO_ROUTE,
           "node 999 -> NO_ROUTE\n");
    pkt_setup(1, 0);
    s = send(1, 0, me, 0, "x", 1);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_PDID,
           "iface PDID 0 -> NACK PDID\n");

    /* invalid mailbox config stays disabled */
    EXPECT(mbox_setup(0, 5, phys, 3) == 0, "nslots 3 refused\n");
    EXPECT(mbox_setup(0, 5, phys + 8, 4) == 0, "unaligned qbase refused\n");
    EXPECT(mbox_setup(0, 5, phys, 16384) == 0, "nslots 16384 refused\n");
    EXPECT(mbox_setup(0, 5, phys, 4) == 1, "valid mbox enabled\n");

    pkt_setup(2, 6);
    s = send(2, 0, me, 0, "x", 1);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_PDID,
           "PDID mismatch -> NACK PDID\n");

    for (int k = 0; k < 4; k++) {
        snprintf(
            msg, sizeof msg,
            "message number %d, 64 bytes max.................................",
            k);
        s = send(0, k % 4, me, 0, msg, k == 3 ? 64 : 20 + k);
        EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_ACK,
               "send %d ACK (%s)\n", k, st_str(s));
    }
    for (int k = 0; k < 4; k++) {
        EXPECT(q[k].flags == 1 && q[k].len == (k == 3 ? 64u : 20u + k) &&
                   q[k].src_node == me && q[k].src_iface == 0 &&
                   q[k].src_chan == (unsigned)k &&
                   !memcmp(q[k].payload, "message number", 14),
               "slot %d: flags %u len %u src %u/%u/%u seq %u '%.20s'\n", k,
               q[k].flags, q[k].len, q[k].src_node, q[k].src_iface,
               q[k].src_chan, q[k].seq, q[k].payload);
    }
    s = send(0, 0, me, 0, "full", 4);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_FULL,
           "5th into 4-slot mbox -> FULL\n");
    EXPECT(R32(bar2, EXANET_MBOX_FULL_COUNT) == 1 &&
               R32(bar2, EXANET_MBOX_RX_COUNT) == 4 &&
               R32(bar2, EXANET_MBOX_SIZE) == 4,
           "mbox counters\n");
    W32(bar2, EXANET_MBOX_HEAD, 7); /* invalid, ignored */
    s = send(0, 0, me, 0, "full", 4);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_FULL, "invalid HEAD ignored\n");
    W32(bar2, EXANET_MBOX_HEAD, 2); /* consumed 2 */
    s = send(0, 0, me, 0, "wrap0", 5);
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_ACK && q[0].flags == 0 &&
               !memcmp(q[0].payload, "wrap0", 5),
           "wrap: slot 0 with phase 0\n");
    s = send(0, 0, me, 0, "wrap1", 5);
    s = send(0, 0, me, 0, "wrap2", 5);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_FULL,
           "full again after 2 more\n");
    EXPECT(R32(bar2, EXANET_MBOX_TAIL) == 2 && R32(bar2, EXANET_MBOX_HEAD) == 2,
           "HEAD/TAIL regs\n");

    /* disable mailbox: DISABLED, no DMA */
    W32(bar0, EXANET_REG_MBOX_BASE(0) + EXANET_MBOX_ENABLE, 0);
    memset(q, 0xaa, 4096);
    s = send(0, 0, me, 0, "nope", 4);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_DISABLED &&
               q[0].payload[0] == 0xaa,
           "disabled mailbox: no DMA\n");

    /* DMA failure: queue outside guest RAM */
    EXPECT(mbox_setup(1, 5, 0xfffff0000000ull, 4) == 1,
           "mbox at bogus address\n");
    s = send(0, 0, me, 1, "dma", 3);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_DISABLED &&
               cnt(EXANET_CNT_DMA_ERRORS) >= 1,
           "bad DMA -> NACK DISABLED, DMA_ERRORS %llu\n",
           (unsigned long long)cnt(EXANET_CNT_DMA_ERRORS));

    /* 32-bit doorbell and payload stores */
    memset(q, 0, 4096);
    mbox_setup(0, 5, phys, 8);
    W32(bar1, 0, 0x64636261);
    W32(bar1, 4, 0x68676665);
    W32(bar1, EXANET_PKT_DOORBELL, (uint32_t)EXANET_DOORBELL(me, 0, 8));
    s = wait_done(0, 0, 2);
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_ACK &&
               !memcmp(q[0].payload, "abcdefgh", 8),
           "32-bit stores\n");

    irqtest(me, q);

    /* hostile: mailbox queue on our own packetizer page (DMA re-entrancy) */
    {
        char p[400];
        unsigned long long st, en, fl;
        snprintf(p, sizeof p, "%s/resource", devpath);
        FILE *f = fopen(p, "r");
        fscanf(f, "%llx %llx %llx", &st, &en, &fl);
        fscanf(f, "%llx %llx %llx", &st, &en, &fl);
        fclose(f);
        printf("BAR1 at 0x%llx\n", st);
        EXPECT(mbox_setup(2, 5, st + 4096 * 3, 4) == 1,
               "mbox 2 on BAR1 page 3\n");
        pkt_setup(3, 5);
        uint64_t evil[8];
        for (int k = 0; k < 8; k++) {
            evil[k] = EXANET_DOORBELL(me, 2, 64);
        }
        s = send(0, 0, me, 2, evil, 64);
        printf(
            "re-entrancy: %s, chan status of page 3: %llx\n",
            st_str(s), (unsigned long long)status(3, 0));
        EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_ACK ||
                   EXANET_ST_STATE(s) == EXANET_CHAN_NACK,
               "DMA into own BAR survived\n");
        W32(bar0, EXANET_REG_MBOX_BASE(2) + EXANET_MBOX_ENABLE, 0);
    }

    /* disabling the packetizer aborts, BUSY register */
    W32(bar0, EXANET_REG_PKT_BASE(0) + EXANET_PKT_ENABLE, 0);
    EXPECT(status(0, 0) == 0, "disable -> IDLE\n");

    printf("counters:");
    for (int n = 0; n < EXANET_NUM_COUNTERS; n++) {
        printf(" %llu", (unsigned long long)cnt(n));
    }
    printf("\n");
}

/* remote: timeout to a node that does not answer; echo server / ping client */
static void serve(uint32_t me, double secs)
{
    uint64_t phys;
    struct exanet_mbox_slot *q = dma_page(&phys, 4096 * 8);
    (void)me;
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
    printf("counters:");
    for (int k = 0; k < EXANET_NUM_COUNTERS; k++) {
        printf(" %llu", (unsigned long long)cnt(k));
    }
    printf("\n");
}

static void ping(uint32_t me, uint32_t peer, int count)
{
    uint64_t phys, s;
    struct exanet_mbox_slot *q = dma_page(&phys, 4096 * 8);
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    pkt_setup(0, 5);
    pkt_setup(1, 9);
    mbox_setup(0, 5, phys, 32);
    (void)me;
    s = send(0, 1, peer, 7, "x", 1);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_DISABLED,
           "remote disabled mbox -> NACK DISABLED (%s)\n",
           st_str(s));
    s = send(1, 1, peer, 0, "x", 1);
    EXPECT(EXANET_ST_REASON(s) == EXANET_NACK_PDID,
           "remote PDID mismatch -> NACK PDID (%s)\n",
           st_str(s));
    uint32_t head = 0, phase = 1;
    double t0 = now(), best = 1e9;
    int ok = 0;
    for (int k = 0; k < count; k++) {
        char msg[32];
        double t1 = now();
        snprintf(msg, sizeof msg, "ping %d", k);
        s = send(0, 0, peer, 0, msg, 32);
        if (EXANET_ST_STATE(s) != EXANET_CHAN_ACK) {
            printf("ping %d: %s\n", k, st_str(s));
            continue;
        }
        volatile struct exanet_mbox_slot *sl = &q[head]; /* DMA */
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
    EXPECT(
        ok == count,
        "ping-pong %d/%d ok, avg RTT %.1f us, best %.1f us, retransmits %llu\n",
        ok, count, t / count * 1e6, best * 1e6,
        (unsigned long long)cnt(EXANET_CNT_TX_RETRANSMITS));
    printf("counters:");
    for (int n = 0; n < EXANET_NUM_COUNTERS; n++) {
        printf(" %llu", (unsigned long long)cnt(n));
    }
    printf("\n");
}

static void timeout_test(uint32_t dead)
{
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
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_ONGOING &&
               EXANET_ST_STATE(status(0, 0)) == EXANET_CHAN_ONGOING &&
               cnt(EXANET_CNT_DOORBELL_BUSY) == busy0 + 1 &&
               cnt(EXANET_CNT_TX_PACKETS) == tx0 + 1,
           "doorbell on an ONGOING channel ignored (doorbell_busy %llu -> "
           "%llu, tx_packets %llu -> %llu)\n",
           (unsigned long long)busy0,
           (unsigned long long)cnt(EXANET_CNT_DOORBELL_BUSY),
           (unsigned long long)tx0,
           (unsigned long long)cnt(EXANET_CNT_TX_PACKETS));
    s = wait_done(0, 0, 5.0);
    EXPECT(EXANET_ST_STATE(s) == EXANET_CHAN_TIMEOUT &&
               EXANET_ST_RETRIES(s) == 3,
           "dead node -> TIMEOUT after 3 retries in %.1f ms (%s)\n",
           (now() - t0) * 1e3, st_str(s));
}

static void fuzz(uint32_t me, int iters)
{
    uint64_t phys;
    void *page = dma_page(&phys, 4096);
    uint64_t x = 88172645463325252ull;
    (void)page;
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
    printf("fuzzed %d accesses; ID now %08x\n", iters, R32(bar0, 0));
    EXPECT(R32(bar0, 0) == EXANET_ID_MAGIC, "device alive after fuzzing\n");
    printf("counters:");
    for (int n = 0; n < EXANET_NUM_COUNTERS; n++) {
        printf(" %llu", (unsigned long long)cnt(n));
    }
    printf("\n");
    W32(bar0, EXANET_REG_CTRL, EXANET_CTRL_RESET);
    selftest(me);
}

static void mmiocost(void)
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
    printf(
        "MMIO: status read %.2f us, payload write %.2f us, bar0 read %.2f us\n",
        (t1 - t0) * 10, (t2 - t1) * 10, (t3 - t2) * 10);
}

int main(int argc, char **argv)
{
    char dev[300];
    pci_open_dev(EXANET_PCI_VENDOR_ID, EXANET_PCI_DEVICE_ID, dev, sizeof dev);
    strcpy(devpath, dev);
    bar0 = map_res(dev, 0, EXANET_BAR_CTRL_SIZE);
    bar1 = map_res(dev, 1, EXANET_BAR_PKT_SIZE);
    bar2 = map_res(dev, 2, EXANET_BAR_MBOX_SIZE);
    uint32_t me = R32(bar0, EXANET_REG_NODE_ID);
    tailpoll = getenv("TAILPOLL") != NULL;
    if (argc < 2 || !strcmp(argv[1], "self")) {
        selftest(me);
    } else if (!strcmp(argv[1], "serve")) {
        serve(me, argc > 2 ? atof(argv[2]) : 10);
    } else if (!strcmp(argv[1], "ping")) {
        ping(me, atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 100);
    } else if (!strcmp(argv[1], "mmio")) {
        mmiocost();
    } else if (!strcmp(argv[1], "fuzz")) {
        fuzz(me, argc > 2 ? atoi(argv[2]) : 100000);
    } else if (!strcmp(argv[1], "timeout")) {
        timeout_test(atoi(argv[2]));
    }
    printf("RESULT: %s (%d failures)\n", fails ? "FAIL" : "PASS", fails);
    return fails != 0;
}
