// SPDX-License-Identifier: GPL-2.0
/*
 * Driverless test of the exanet RDMA engine (QEMU model), run as root in a
 * guest WITHOUT an IOMMU: DMA contexts then use guest-physical addresses,
 * taken from /proc/self/pagemap of locked 2 MiB huge pages.
 * (qemu-devices/tests/run-rdma-vm-tests.sh boots it.)  TAP from the
 * kernel's kselftest harness, one mode per run (devtest_main.h):
 *
 *   exanet-rdmatest self              local engine checks (loopback node)
 *   exanet-rdmatest serve SECS        target: rank 0 PDID 5, rank 1 PDID 6
 *                                     (no TAP: the peer of "remote")
 *   exanet-rdmatest remote NODE ITER RPA NPA
 *                                     writes/reads to NODE, bandwidth; RPA
 *                                     and NPA as "serve" printed them
 */
#define _GNU_SOURCE
#include <errno.h>
#include "devtest_main.h"
#include "exanet.h"
#include "exanet_rdma.h"

static volatile uint8_t *bar0, *bar3; /* MMIO */
static uint32_t my_node;
static int sleepy = 1; /* poll completions with usleep (frees the host core) */

#define HP (2u << 20)
#define NHP 24

static char nidev[300];
static int nctx;

/* Huge pages with their physical addresses. */
static uint8_t *hp_va;
static uint64_t hp_pa[NHP];

static bool hp_setup(void)
{
    FILE *f = fopen("/proc/sys/vm/nr_hugepages", "w");
    if (f) {
        fprintf(f, "%d\n", NHP + 4);
        fclose(f);
    }
    hp_va = mmap(NULL, (size_t)NHP * HP, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE |
                     MAP_LOCKED,
                 -1, 0);
    if (hp_va == MAP_FAILED) {
        ksft_print_msg("%d huge pages: %s\n", NHP, strerror(errno));
        return false;
    }
    memset(hp_va, 0, (size_t)NHP * HP);
    for (int i = 0; i < NHP; i++) {
        hp_pa[i] = phys_of(hp_va + (size_t)i * HP);
    }
    return true;
}

/* A physically contiguous region of n huge pages: index of the first VA page
 * for each, via a sorted run.  Returns the physical base, fills va[]. */
static uint64_t contig(int n, uint8_t **va, int skip)
{
    for (int i = 0; i < NHP; i++) {
        int ok = 1;
        for (int k = 1; k < n && ok; k++) {
            int found = 0;
            for (int j = 0; j < NHP; j++) {
                if (hp_pa[j] == hp_pa[i] + (uint64_t)k * HP) {
                    found = 1;
                    break;
                }
            }
            ok = found;
        }
        if (ok && skip-- == 0) {
            for (int k = 0; k < n; k++) {
                for (int j = 0; j < NHP; j++) {
                    if (hp_pa[j] == hp_pa[i] + (uint64_t)k * HP) {
                        va[k] = hp_va + (size_t)j * HP;
                    }
                }
            }
            return hp_pa[i];
        }
    }
    return 0;
}

/* CPU access to a physically contiguous region: */
struct region {
    uint64_t pa;
    uint8_t *va[8];
    int n;
};
static uint8_t *rva(struct region *r, uint64_t off)
{
    return r->va[off / HP] + off % HP;
}
static void rfill(struct region *r, uint64_t off, uint64_t len, uint32_t seed)
{
    for (uint64_t i = 0; i < len; i += 8) {
        uint64_t v = (off + i) * 0x9e3779b97f4a7c15ull ^ seed;
        memcpy(rva(r, off + i), &v, 8);
    }
}
static long rcheck(struct region *r, uint64_t off, uint64_t len, uint32_t seed,
                   uint64_t soff)
{
    for (uint64_t i = 0; i < len; i += 8) {
        uint64_t v = (soff + i) * 0x9e3779b97f4a7c15ull ^ seed, w;
        memcpy(&w, rva(r, off + i), 8);
        if (v != w) {
            return (long)i;
        }
    }
    return -1;
}

static void ctx_setup(int rank, uint32_t pdid, int en)
{
    W32(bar0, EXANET_REG_CTX_BASE(rank) + EXANET_CTX_PDID, pdid);
    W32(bar0, EXANET_REG_CTX_BASE(rank) + EXANET_CTX_ENABLE, en);
}

static void page_setup(int p, uint32_t pdid, int rank)
{
    W32(bar0, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_PDID, pdid);
    W32(bar0, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_RANK, rank);
    W32(bar0, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_ENABLE, 1);
}

static uint64_t cnt(int n)
{
    return R64(bar0, EXANET_REG_RDMA_COUNTER(n));
}

#define CH(p, c) ((p) * EXANET_RDMA_PAGE_SIZE + (c) * EXANET_RDMA_CHAN_STRIDE)

static void post(int p, int c, uint64_t lva, uint32_t node, int rank,
                 uint64_t rva_, uint64_t len, uint64_t nva, uint64_t tag,
                 uint64_t cva, uint64_t ctrl)
{
    W64(bar3, CH(p, c) + EXANET_RDMA_D_LOCAL_VA, lva);
    W64(bar3, CH(p, c) + EXANET_RDMA_D_REMOTE_VA, rva_);
    W64(bar3, CH(p, c) + EXANET_RDMA_D_REMOTE, EXANET_RDMA_REMOTE(node, rank));
    W64(bar3, CH(p, c) + EXANET_RDMA_D_LENGTH, len);
    W64(bar3, CH(p, c) + EXANET_RDMA_D_NOTIFY_VA, nva);
    W64(bar3, CH(p, c) + EXANET_RDMA_D_TAG, tag);
    W64(bar3, CH(p, c) + EXANET_RDMA_D_LCOMP_VA, cva);
    W64(bar3, CH(p, c) + EXANET_RDMA_D_CTRL, ctrl);
}

static uint64_t st(int p, int c)
{
    return R64(bar3, CH(p, c) + EXANET_RDMA_S_STATUS);
}

/* Wait for the channel, polling MMIO sparsely (MMIO takes the BQL). */
static uint64_t wait_chan(int p, int c, double tmo)
{
    double t0 = now();
    uint64_t s;
    while (EXANET_RDMA_ST_STATE(s = st(p, c)) == EXANET_RDMA_ONGOING &&
           now() - t0 < tmo) {
        usleep(50);
    }
    return s;
}

/* Wait for a completion/notification record in memory. */
static int wait_rec(volatile struct exanet_rdma_notif *n, double tmo) /* DMA */
{
    double t0 = now();
    while (!(n->flags & EXANET_RDMA_N_VALID)) {
        if (now() - t0 > tmo) {
            return 0;
        }
        if (sleepy) {
            usleep(20);
        } else {
            __asm__ volatile("pause");
        }
    }
    return 1;
}

/* Layout of a node's region (two contiguous huge pages = 4 MiB):
 *  data: 4 MiB at pa; notification area: another huge page. */
static struct region R, N; /* R: 4 MiB data, N: misc page */

static bool regions(void)
{
    if (!hp_setup()) {
        return false;
    }
    R.pa = contig(2, R.va, 0);
    R.n = 2;
    if (!R.pa) {
        ksft_print_msg("no 4 MiB contiguous huge page pair\n");
        return false;
    }
    for (int i = 0; i < NHP; i++) {
        if (hp_va + (size_t)i * HP != R.va[0] &&
            hp_va + (size_t)i * HP != R.va[1]) {
            N.va[0] = hp_va + (size_t)i * HP;
            N.pa = hp_pa[i];
            N.n = 1;
            break;
        }
    }
    ksft_print_msg("region pa 0x%llx, misc pa 0x%llx\n",
                   (unsigned long long)R.pa, (unsigned long long)N.pa);
    return true;
}

#define NOTIF_OFF 0
#define LCOMP_OFF 4096
#define SRC2_OFF 8192 /* small sources in N */

/* Every page disabled: its channels abort, nothing more lands in memory. */
static void pages_off(void)
{
    for (int p = 0; p < EXANET_RDMA_PAGES; p++) {
        W32(bar0, EXANET_REG_RPAGE_BASE(p) + EXANET_RPAGE_ENABLE, 0);
    }
}

/*
 * Local checks (self mode) on the own node: rank 0 in PDID 5 behind page 0,
 * rank 1 in PDID 6 behind page 1; regions R (4 MiB) and N (notifications)
 * in huge pages of the case.
 */
FIXTURE(local)
{
    volatile struct exanet_rdma_notif *nt; /* DMA */
    volatile struct exanet_rdma_notif *lc; /* DMA */
};

/* The regions, rank 0 (PDID 5) behind page 0, rank 1 (PDID 6) behind 1. */
static void regions_and_ranks(struct __test_metadata *_metadata)
{
    ASSERT_TRUE(regions());
    ctx_setup(0, 5, 1);
    ctx_setup(1, 6, 1);
    page_setup(0, 5, 0);
    page_setup(1, 6, 1);
}

FIXTURE_SETUP(local)
{
    regions_and_ranks(_metadata);
    self->nt = (void *)rva(&N, NOTIF_OFF);
    self->lc = (void *)rva(&N, LCOMP_OFF);
}

FIXTURE_TEARDOWN(local)
{
    pages_off();
}

TEST_F(local, caps_and_context_functions)
{
    uint32_t caps = R32(bar0, EXANET_REG_RDMA_CAPS);

    EXPECT_EQ(8, nctx) TH_LOG("8 context functions (%d)", nctx);
    EXPECT_TRUE(EXANET_RDMA_CAPS_PAGES(caps) == 16 &&
                EXANET_RDMA_CAPS_WCHANS(caps) == 32 &&
                EXANET_RDMA_CAPS_RCHANS(caps) == 32 &&
                EXANET_RDMA_CAPS_RANKS(caps) == 8)
    TH_LOG("caps 0x%x", caps);
    EXPECT_EQ(3, R32(bar0, EXANET_REG_CTX_BASE(0) + EXANET_CTX_STATUS) & 3)
    TH_LOG("ctx 0 present + bus master");
}

TEST_F(local, disabled_page_ignores_descriptor)
{
    post(2, 0, R.pa, my_node, 0, R.pa, 64, 0, 0, 0, 0);
    EXPECT_EQ(0, st(2, 0));
}

/* 1 MiB + 100 within the region: src [0,1M+100) -> dst [2M, ...) */
TEST_F(local, loopback_write_data_notification_completion)
{
    volatile struct exanet_rdma_notif *nt = self->nt, *lc = self->lc; /* DMA */
    uint64_t len = (1u << 20) + 100, s;

    rfill(&R, 0, 2u << 20, 11);
    memset(rva(&R, 2u << 20), 0, 2u << 20);
    memset((void *)nt, 0, 64);
    memset((void *)lc, 0, 64);
    uint64_t nf0 = R64(bar3, CH(0, 0) + EXANET_RDMA_S_NOTIFS);
    uint64_t nf1 = R64(bar3, CH(1, 5) + EXANET_RDMA_S_NOTIFS);
    post(0, 3, R.pa, my_node, 0, R.pa + (2u << 20), len, N.pa + NOTIF_OFF,
         0xabcdef, N.pa + LCOMP_OFF, 0);
    s = wait_chan(0, 3, 10);
    EXPECT_TRUE(EXANET_RDMA_ST_STATE(s) == EXANET_RDMA_DONE &&
                EXANET_RDMA_ST_SEQ(s) == 1)
    TH_LOG("loopback write 1 MiB + 100 DONE (status 0x%llx)",
           (unsigned long long)s);
    EXPECT_GT(0, rcheck(&R, 2u << 20, len & ~7ull, 11, 0))
    TH_LOG("data correct");
    EXPECT_EQ(0, *(uint8_t *)rva(&R, (2u << 20) + len))
    TH_LOG("nothing written past the end");
    EXPECT_TRUE(wait_rec(nt, 1) && nt->tag == 0xabcdef && nt->length == len &&
                nt->node == my_node && nt->op == EXANET_RDMA_OP_WRITE &&
                nt->error == 0 && nt->page == 0 && nt->chan == 3)
    TH_LOG("notification (tag %llx len %llu)", (unsigned long long)nt->tag,
           (unsigned long long)nt->length);
    EXPECT_TRUE(wait_rec(lc, 1) && (lc->flags & EXANET_RDMA_N_COMPLETION) &&
                lc->error == 0 && lc->length == len)
    TH_LOG("local completion record");
    EXPECT_EQ(len, R64(bar3, CH(0, 3) + EXANET_RDMA_S_DONE_BYTES))
    TH_LOG("DONE_BYTES");
    EXPECT_TRUE(R64(bar3, CH(0, 0) + EXANET_RDMA_S_NOTIFS) == nf0 + 2 &&
                R64(bar3, CH(0, 63) + EXANET_RDMA_S_NOTIFS) == nf0 + 2 &&
                R64(bar3, CH(1, 5) + EXANET_RDMA_S_NOTIFS) == nf1)
    TH_LOG("NOTIFS: +2 on rank 0's page in every slot (notification, "
           "completion record), rank 1's page unchanged (%llu -> %llu)",
           (unsigned long long)nf0,
           (unsigned long long)R64(bar3, CH(0, 0) + EXANET_RDMA_S_NOTIFS));
}

/* page 1 (PDID 6, rank 1) writes into rank 0 (PDID 5) */
TEST_F(local, pdid_mismatch_victim_unchanged)
{
    volatile struct exanet_rdma_notif *nt = self->nt; /* DMA */
    uint64_t s;

    memset(rva(&R, 2u << 20), 0x77, 4096);
    memset((void *)nt, 0, 64);
    uint64_t pd0 = cnt(EXANET_RCNT_RX_NACK_PDID);
    post(1, 0, R.pa, my_node, 0, R.pa + (2u << 20), 4096, N.pa + NOTIF_OFF, 1,
         0, 0);
    s = wait_chan(1, 0, 10);
    EXPECT_TRUE(EXANET_RDMA_ST_STATE(s) == EXANET_RDMA_ERROR &&
                EXANET_RDMA_ST_ERROR(s) == EXANET_RDMA_E_PDID)
    TH_LOG("PDID mismatch -> ERROR PDID (0x%llx)", (unsigned long long)s);
    EXPECT_TRUE(*(uint8_t *)rva(&R, 2u << 20) == 0x77 &&
                *(uint8_t *)rva(&R, (2u << 20) + 4095) == 0x77 &&
                nt->flags == 0 && cnt(EXANET_RCNT_RX_NACK_PDID) == pd0 + 1)
    TH_LOG("victim memory unchanged, no notification");
}

TEST_F(local, disabled_target_context_remote_ctx)
{
    uint64_t s;

    post(0, 1, R.pa, my_node, 2, R.pa + (2u << 20), 4096, 0, 0, 0, 0);
    s = wait_chan(0, 1, 10);
    EXPECT_EQ(EXANET_RDMA_E_REMOTE_CTX, EXANET_RDMA_ST_ERROR(s));
}

/* source and destination outside RAM; DMA into our own BAR3 */
TEST_F(local, dma_faults_and_own_bar)
{
    uint64_t s;

    post(0, 4, 0xfff00000000ull, my_node, 0, R.pa, 40000, 0, 0, 0, 0);
    s = wait_chan(0, 4, 10);
    EXPECT_EQ(EXANET_RDMA_E_LOCAL_DMA, EXANET_RDMA_ST_ERROR(s))
    TH_LOG("source DMA fault -> LOCAL_DMA (0x%llx)", (unsigned long long)s);
    post(0, 5, R.pa, my_node, 0, 0xfff00000000ull, 40000, 0, 0, 0, 0);
    s = wait_chan(0, 5, 10);
    EXPECT_EQ(EXANET_RDMA_E_REMOTE_DMA, EXANET_RDMA_ST_ERROR(s))
    TH_LOG("destination DMA fault -> REMOTE_DMA (0x%llx)",
           (unsigned long long)s);
    /* DMA into our own BAR3 is refused, no recursion */
    {
        char p[400];
        snprintf(p, sizeof p, "%s/resource", nidev);
        FILE *f = fopen(p, "r");
        unsigned long long b[4][3] = { { 0 } };
        for (int i = 0; f && i < 4; i++) {
            if (fscanf(f, "%llx %llx %llx", &b[i][0], &b[i][1], &b[i][2]) !=
                3) {
                break;
            }
        }
        if (f) {
            fclose(f);
        }
        post(0, 6, R.pa, my_node, 0, b[3][0], 4096, 0, 0, 0, 0);
        s = wait_chan(0, 6, 10);
        EXPECT_NE(EXANET_RDMA_ONGOING, EXANET_RDMA_ST_STATE(s))
        TH_LOG("DMA aimed at BAR3: completes (0x%llx), device alive",
               (unsigned long long)s);
    }
}

/* 64 KiB from [0,64K) into [3M, ...) with notification; another PDID */
TEST_F(local, loopback_read)
{
    volatile struct exanet_rdma_notif *nt = self->nt, *lc = self->lc; /* DMA */
    uint64_t s;

    rfill(&R, 0, 2u << 20, 11);
    memset(rva(&R, 3u << 20), 0, 1u << 16);
    memset((void *)nt, 0, 64);
    memset((void *)lc, 0, 64);
    post(0, EXANET_RDMA_RCHAN(0), R.pa + (3u << 20), my_node, 0, R.pa, 65536,
         N.pa + NOTIF_OFF, 42, N.pa + LCOMP_OFF, 0);
    s = wait_chan(0, EXANET_RDMA_RCHAN(0), 10);
    EXPECT_EQ(EXANET_RDMA_DONE, EXANET_RDMA_ST_STATE(s))
    TH_LOG("loopback read DONE (0x%llx)", (unsigned long long)s);
    EXPECT_GT(0, rcheck(&R, 3u << 20, 65536, 11, 0)) TH_LOG("read data");
    EXPECT_TRUE(wait_rec(nt, 1) && nt->tag == 42 &&
                nt->op == EXANET_RDMA_OP_READ && nt->length == 65536)
    TH_LOG("read notification");
    /* read from a rank of another PDID */
    post(0, EXANET_RDMA_RCHAN(1), R.pa + (3u << 20), my_node, 1, R.pa, 4096, 0,
         0, 0, 0);
    s = wait_chan(0, EXANET_RDMA_RCHAN(1), 10);
    EXPECT_EQ(EXANET_RDMA_E_PDID, EXANET_RDMA_ST_ERROR(s))
    TH_LOG("read from another PDID -> ERROR PDID (0x%llx)",
           (unsigned long long)s);
}

/* a second trigger while ONGOING is ignored */
TEST_F(local, trigger_while_busy_ignored)
{
    uint64_t s;

    post(0, 7, R.pa, my_node, 0, R.pa + (2u << 20), 2u << 20, 0, 0, 0, 0);
    uint64_t b0 = cnt(EXANET_RCNT_DESC_BUSY);
    W64(bar3, CH(0, 7) + EXANET_RDMA_D_CTRL, 0);
    s = wait_chan(0, 7, 10);
    EXPECT_TRUE(
        EXANET_RDMA_ST_STATE(s) == EXANET_RDMA_DONE &&
        (cnt(EXANET_RCNT_DESC_BUSY) == b0 + 1 || EXANET_RDMA_ST_SEQ(s) == 2))
    TH_LOG("trigger while ONGOING ignored (0x%llx)", (unsigned long long)s);
}

TEST_F(local, page_disable_aborts_channels)
{
    post(0, 8, R.pa, my_node, 0, R.pa + (2u << 20), 2u << 20, 0, 0, 0, 0);
    W32(bar0, EXANET_REG_RPAGE_BASE(0) + EXANET_RPAGE_ENABLE, 0);
    EXPECT_EQ(0, R32(bar0, EXANET_REG_RPAGE_BASE(0) + EXANET_RPAGE_BUSY));
}

/* fuzz the RDMA BAR and registers: the device must survive */
TEST_F(local, fuzz_then_device_alive)
{
    uint64_t s;

    srand(1);
    for (int i = 0; i < 20000; i++) {
        uint32_t off = (rand() % (EXANET_BAR_RDMA_SIZE / 8)) * 8;
        if (rand() & 1) {
            W64(bar3, off, ((uint64_t)rand() << 32) | rand());
        } else {
            (void)R64(bar3, off);
        }
        if (i % 4 == 0) { /* privileged RDMA registers too */
            uint32_t r0 = 0x3000 + (rand() % 0x400) * 4;
            if (rand() & 1) {
                W32(bar0, r0, rand() % 4 ? rand() % 3 : rand());
            } else {
                (void)R32(bar0, r0);
            }
        }
    }
    usleep(300000);
    W32(bar0, EXANET_REG_RDMA_WINDOW, EXANET_RDMA_DEFAULT_WINDOW);
    W32(bar0, EXANET_REG_RDMA_RETX_US, EXANET_RDMA_DEFAULT_RETX_US);
    pages_off();
    ctx_setup(0, 5, 1);
    page_setup(0, 5, 0);
    post(0, 9, R.pa, my_node, 0, R.pa + (2u << 20), 8192, 0, 0, 0, 0);
    s = wait_chan(0, 9, 10);
    EXPECT_EQ(EXANET_RDMA_DONE, EXANET_RDMA_ST_STATE(s))
    TH_LOG("after fuzzing: device alive (0x%llx)", (unsigned long long)s);
    ksft_print_msg(
        "counters: writes %llu reads %llu done %llu errors %llu blocks %llu "
        "retx %llu dup %llu notif %llu\n",
        (unsigned long long)cnt(EXANET_RCNT_TX_WRITES),
        (unsigned long long)cnt(EXANET_RCNT_TX_READS),
        (unsigned long long)cnt(EXANET_RCNT_TX_DONE),
        (unsigned long long)cnt(EXANET_RCNT_TX_ERRORS),
        (unsigned long long)cnt(EXANET_RCNT_TX_BLOCKS),
        (unsigned long long)cnt(EXANET_RCNT_TX_RETRANSMITS),
        (unsigned long long)cnt(EXANET_RCNT_RX_DUPLICATES),
        (unsigned long long)cnt(EXANET_RCNT_NOTIFICATIONS));
}

/* Descriptors refused when posted (channel 2 of page 0), one per case. */
FIXTURE(bad_descriptor)
{
    int unused;
};

FIXTURE_VARIANT(bad_descriptor)
{
    uint64_t local_va; /* 0: the region R */
    bool far_node;     /* node 4000000 instead of the own */
    uint64_t len;
    uint64_t notify_off; /* 0: none, else N.pa + notify_off */
    uint64_t ctrl;
    unsigned error;
};

FIXTURE_VARIANT_ADD(bad_descriptor, length_0) {
    .error = EXANET_RDMA_E_BAD_DESC,
};

FIXTURE_VARIANT_ADD(bad_descriptor, ctrl_flags) {
    .len = 64,
    .ctrl = 1,
    .error = EXANET_RDMA_E_BAD_DESC,
};

FIXTURE_VARIANT_ADD(bad_descriptor, unaligned_notify) {
    .len = 64,
    .notify_off = 3,
    .error = EXANET_RDMA_E_BAD_DESC,
};

FIXTURE_VARIANT_ADD(bad_descriptor, va_plus_len_beyond_2_48) {
    .local_va = (1ull << 48) - 8,
    .len = 64,
    .error = EXANET_RDMA_E_BAD_DESC,
};

FIXTURE_VARIANT_ADD(bad_descriptor, node_out_of_range) {
    .far_node = true,
    .len = 64,
    .error = EXANET_RDMA_E_NO_ROUTE,
};

FIXTURE_SETUP(bad_descriptor)
{
    regions_and_ranks(_metadata);
}

FIXTURE_TEARDOWN(bad_descriptor)
{
    pages_off();
}

TEST_F(bad_descriptor, refused)
{
    post(0, 2, variant->local_va ? variant->local_va : R.pa,
         variant->far_node ? 4000000 : my_node, 0, R.pa, variant->len,
         variant->notify_off ? N.pa + variant->notify_off : 0, 0, 0,
         variant->ctrl);
    EXPECT_EQ(variant->error, EXANET_RDMA_ST_ERROR(st(0, 2)));
}

/*
 * The initiator against "serve" on NODE (remote mode): rank 0 in PDID 5
 * behind page 0, page 1 in PDID 6; the target's region at RPA, its
 * notification page at NPA.
 */
FIXTURE(remote)
{
    uint32_t node;
    int iters;
    uint64_t rpa, npa;
    volatile struct exanet_rdma_notif *lc; /* DMA */
};

FIXTURE_SETUP(remote)
{
    self->node = devtest_arg(0, 1);
    self->iters = devtest_arg(1, 20);
    self->rpa = devtest_arg(2, 0);
    self->npa = devtest_arg(3, 0);
    ASSERT_TRUE(regions());
    self->lc = (void *)rva(&N, LCOMP_OFF);
    ctx_setup(0, 5, 1);
    page_setup(0, 5, 0);
    page_setup(1, 6, 0);
}

FIXTURE_TEARDOWN(remote)
{
    pages_off();
}

/* correctness first: 4 MiB write, then read it back into R */
TEST_F(remote, write_and_read_back_4mib)
{
    volatile struct exanet_rdma_notif *lc = self->lc; /* DMA */
    uint64_t s, len = 4u << 20, rpa = self->rpa;
    uint32_t node = self->node;

    rfill(&R, 0, len, 7);
    post(0, 0, R.pa, node, 0, rpa, len, self->npa + NOTIF_OFF, 77, 0, 0);
    s = wait_chan(0, 0, 30);
    EXPECT_EQ(EXANET_RDMA_DONE, EXANET_RDMA_ST_STATE(s))
    TH_LOG("remote 4 MiB write DONE (0x%llx)", (unsigned long long)s);
    memset(rva(&R, 0), 0, 2u << 20);
    memset(rva(&R, 2u << 20), 0, 2u << 20);
    memset((void *)lc, 0, 64);
    post(0, EXANET_RDMA_RCHAN(0), R.pa, node, 0, rpa, len, N.pa + NOTIF_OFF, 78,
         N.pa + LCOMP_OFF, 0);
    s = wait_chan(0, EXANET_RDMA_RCHAN(0), 30);
    EXPECT_EQ(EXANET_RDMA_DONE, EXANET_RDMA_ST_STATE(s))
    TH_LOG("remote 4 MiB read DONE (0x%llx)", (unsigned long long)s);
    long bad = rcheck(&R, 0, len, 7, 0);
    EXPECT_GT(0, bad) TH_LOG("write + read back: first bad byte %ld", bad);
    EXPECT_TRUE(wait_rec(lc, 1) && lc->error == 0 && lc->length == len &&
                lc->node == node)
    TH_LOG("read completion record");
}

/* page 1 (PDID 6) -> rank 0 (PDID 5) at the target; a rank without context */
TEST_F(remote, pdid_and_context_errors)
{
    uint64_t s, rpa = self->rpa;
    uint32_t node = self->node;

    post(1, 0, R.pa, node, 0, rpa, 65536, 0, 0, 0, 0);
    s = wait_chan(1, 0, 30);
    EXPECT_EQ(EXANET_RDMA_E_PDID, EXANET_RDMA_ST_ERROR(s))
    TH_LOG("remote PDID mismatch -> ERROR PDID (0x%llx)",
           (unsigned long long)s);
    post(1, EXANET_RDMA_RCHAN(0), R.pa, node, 0, rpa, 65536, 0, 0, 0, 0);
    s = wait_chan(1, EXANET_RDMA_RCHAN(0), 30);
    EXPECT_EQ(EXANET_RDMA_E_PDID, EXANET_RDMA_ST_ERROR(s))
    TH_LOG("remote read PDID mismatch -> ERROR PDID");
    post(0, 1, R.pa, node, 3, rpa, 65536, 0, 0, 0, 0);
    s = wait_chan(0, 1, 30);
    EXPECT_EQ(EXANET_RDMA_E_REMOTE_CTX, EXANET_RDMA_ST_ERROR(s))
    TH_LOG("remote rank without context -> REMOTE_CTX");
}

/* 4 MiB writes, completion polled in memory; reads; pipelined writes */
TEST_F_TIMEOUT(remote, bandwidth, 540)
{
    volatile struct exanet_rdma_notif *lc = self->lc; /* DMA */
    uint64_t len = 4u << 20, rpa = self->rpa, npa = self->npa;
    uint32_t node = self->node;
    int iters = self->iters;

    rfill(&R, 0, len, 7);
    double best = 0, sum = 0, times[64] = {0};
    uint64_t r0 = cnt(EXANET_RCNT_TX_RETRANSMITS);
    for (int i = 0; i < iters; i++) {
        memset((void *)lc, 0, 64);
        double t0 = now();
        post(0, 2, R.pa, node, 0, rpa, len, npa + NOTIF_OFF, i,
             N.pa + LCOMP_OFF, 0);
        if (!wait_rec(lc, 30) || lc->error) {
            EXPECT_TRUE(0)
            TH_LOG("bw iteration %d failed (err %u)", i, lc->error);
            break;
        }
        double dt = now() - t0;
        if (i < 64) {
            times[i] = dt;
        }
        sum += dt;
        if (len / dt > best) {
            best = len / dt;
        }
    }
    {
        int m = iters < 64 ? iters : 64;
        char ms[64 * 12] = "";
        int o = 0;
        for (int i = 0; i < m; i++) {
            for (int j = i + 1; j < m; j++) {
                if (times[j] < times[i]) {
                    double t = times[i];
                    times[i] = times[j];
                    times[j] = t;
                }
            }
        }
        for (int i = 0; i < m; i++) {
            o += snprintf(ms + o, sizeof(ms) - o, " %.2f", times[i] * 1e3);
        }
        ksft_print_msg("BW: 4 MiB RDMA write median %.1f MB/s (ms:%s)\n",
                       m ? len / times[m / 2] / 1e6 : 0, ms);
    }
    ksft_print_msg("BW: 4 MiB RDMA write (%s poll): avg %.1f MB/s, best %.1f "
                   "MB/s over %d iterations (retransmits %llu)\n",
                   sleepy ? "sleep" : "spin", iters * len / sum / 1e6,
                   best / 1e6, iters,
                   (unsigned long long)(cnt(EXANET_RCNT_TX_RETRANSMITS) - r0));
    sum = 0;
    for (int i = 0; i < iters; i++) {
        memset((void *)lc, 0, 64);
        double t0 = now();
        post(0, EXANET_RDMA_RCHAN(1), R.pa, node, 0, rpa, len, 0, i,
             N.pa + LCOMP_OFF, 0);
        if (!wait_rec(lc, 30) || lc->error) {
            EXPECT_TRUE(0) TH_LOG("read bw iteration %d failed", i);
            break;
        }
        sum += now() - t0;
    }
    ksft_print_msg("BW: 4 MiB RDMA read: avg %.1f MB/s\n",
                   iters * len / sum / 1e6);
    if (sleepy) {
        sleepy = 0;
        sum = 0;
        for (int i = 0; i < iters; i++) {
            memset((void *)lc, 0, 64);
            double t0 = now();
            post(0, 2, R.pa, node, 0, rpa, len, npa + NOTIF_OFF, i,
                 N.pa + LCOMP_OFF, 0);
            if (!wait_rec(lc, 30) || lc->error) {
                EXPECT_TRUE(0) TH_LOG("spin bw iteration %d failed", i);
                break;
            }
            sum += now() - t0;
        }
        ksft_print_msg("BW: 4 MiB RDMA write (spin poll): avg %.1f MB/s\n",
                       iters * len / sum / 1e6);
    }
    /* pipelined: up to 8 writes of 4 MiB in flight on 8 channels */
    {
        int q = 8, total = iters * 4, posted = 0, done = 0;
        volatile struct exanet_rdma_notif *lcs = lc; /* DMA */
        int busy[8] = {0};
        sleepy = 1;
        double t0 = now();
        while (done < total) {
            for (int k = 0; k < q; k++) {
                if (busy[k] && (lcs[k * 2].flags & EXANET_RDMA_N_VALID)) {
                    if (lcs[k * 2].error) {
                        EXPECT_TRUE(0)
                        TH_LOG("pipelined write failed (%u)", lcs[k * 2].error);
                        total = 0;
                    }
                    busy[k] = 0;
                    done++;
                }
                if (!busy[k] && posted < total) {
                    memset((void *)&lcs[k * 2], 0, 64);
                    post(0, 8 + k, R.pa, node, 0, rpa, len, 0, posted,
                         N.pa + LCOMP_OFF + 64 * k, 0);
                    busy[k] = 1;
                    posted++;
                }
            }
            if (now() - t0 > 120) {
                EXPECT_TRUE(0) TH_LOG("pipelined writes stuck");
                break;
            }
            usleep(20);
        }
        double dt = now() - t0;
        ksft_print_msg("BW: 4 MiB RDMA write, %d in flight: %.1f MB/s (%d x 4 "
                       "MiB in %.3f s)\n",
                       q, done * (double)len / dt / 1e6, done, dt);
    }
    ksft_print_msg("counters: blocks %llu retx %llu nack-retry %llu timeouts "
                   "%llu ring-full %llu\n",
                   (unsigned long long)cnt(EXANET_RCNT_TX_BLOCKS),
                   (unsigned long long)cnt(EXANET_RCNT_TX_RETRANSMITS),
                   (unsigned long long)cnt(EXANET_RCNT_TX_NACK_RETRY),
                   (unsigned long long)cnt(EXANET_RCNT_TX_TIMEOUTS),
                   (unsigned long long)cnt(EXANET_RCNT_RING_FULL));
}

/*
 * The peer of the remote cases, not a test: rank 0 PDID 5 (region R), rank
 * 1 PDID 6; prints the physical addresses the initiator is given.
 */
static void serve(int secs)
{
    if (!regions()) {
        ksft_exit_fail_msg("no huge page regions\n");
    }
    ctx_setup(0, 5, 1);
    ctx_setup(1, 6, 1);
    page_setup(0, 5, 0);
    rfill(&R, 0, 4u << 20, 99); /* source for remote reads */
    printf("serving R=0x%llx N=0x%llx\n", (unsigned long long)R.pa,
           (unsigned long long)N.pa);
    fflush(stdout);
    sleep(secs);
}

static const struct devtest_mode modes[] = {
    {"self", "local bad_descriptor", 0, ""},
    {"serve", NULL, 1, "SECS"},
    {"remote", "remote", 4, "NODE ITER RPA NPA"},
    {NULL},
};

int main(int argc, char **argv)
{
    const struct devtest_mode *m = devtest_mode(argc, argv, modes, NULL);
    char p[300];

    devtest_find(EXANET_PCI_VENDOR_ID, EXANET_PCI_DEVICE_ID, nidev,
                 sizeof nidev, "the exanet model (run-rdma-vm-tests.sh)");
    while (pci_find(EXANET_PCI_VENDOR_ID, EXANET_CTX_PCI_DEVICE_ID, nctx, p,
                    sizeof p)) {
        if (!enable_busmaster(p)) {
            ksft_exit_fail_msg("%s: cannot enable bus mastering\n", p);
        }
        nctx++;
    }
    bar0 = devtest_bar(nidev, 0, EXANET_BAR_CTRL_SIZE);
    bar3 = devtest_bar(nidev, 3, EXANET_BAR_RDMA_SIZE);
    my_node = R32(bar0, EXANET_REG_NODE_ID);
    if (!m->fixtures) {
        serve(devtest_arg(0, 60));
        printf("served\n");
        return 0;
    }
    return devtest_run(m, argc, argv);
}
