// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Driverless register-level test of the extoll QEMU model, run as root in a
 * guest without IOMMU (qemu-devices/tests/run-extoll-vm-tests.sh boots it).
 * BARs are mapped through /sys/bus/pci/devices/<bdf>/resource<n>; rings,
 * queues, the ATU table and buffers are locked pages whose physical
 * addresses come from /proc/self/pagemap (buffers need not be physically
 * contiguous: the ATU maps them page by page).
 *
 *   extoll-regtest self           loopback checks (VELO, flow control, RMA, ATU errors)
 *   extoll-regtest serve SECS     node 1: VELO echo server on VPID 3, RMA target region
 *   extoll-regtest ping NODE N    N VELO round trips + RMA put/get against NODE
 *   extoll-regtest fuzz N         N random MMIO accesses, then "self"
 */
#define _GNU_SOURCE
#include "devtest.h"
#include "extoll_hw.h"

static volatile uint8_t *bar0, *bar2, *bar4;

/* ---------------------------------------------------------------- setup */

#define RING_SLOTS 32		/* one page */
#define NOTIQ_ENT 256		/* one page */

static volatile uint64_t *atu;	/* 512 entries */
struct ep {
	int vpid;
	volatile uint8_t *ring;
	volatile uint64_t *notiq;
	unsigned rd, nrd;
};

static void vreg64(int v, int r, uint64_t val) { W64(bar0, EXTOLL_REG_VPID(v) + r, val); }
static void vreg32(int v, int r, uint32_t val) { W32(bar0, EXTOLL_REG_VPID(v) + r, val); }

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
	vreg32(vpid, EXTOLL_VPID_CTRL, EXTOLL_VPID_VELO_RX | EXTOLL_VPID_VELO_TX |
	       EXTOLL_VPID_RMA | (phys ? EXTOLL_VPID_RMA_PHYS : 0));
}

/* register len bytes at va as NLA pages starting at index first, protection ID prot */
static uint64_t reg_prot(void *va, size_t len, unsigned first, int vpid, uint64_t perm,
			 unsigned prot)
{
	for (size_t o = 0; o < len; o += 4096)
		atu[first + o / 4096] = EXTOLL_ATU_ENTRY(phys_of((char *)va + o), vpid, perm, prot);
	(void)R32(bar0, EXTOLL_REG_ID);
	return (uint64_t)first << 12;
}

/* the same with protection ID 0 (the reset value of the VPID registers) */
static uint64_t reg(void *va, size_t len, unsigned first, int vpid, uint64_t perm)
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
	volatile uint8_t *pg = bar2 + EXTOLL_VELO_PAGE(vpid);
	uint64_t q[15] = {0};
	double t0 = now();

	while (R64(pg, EXTOLL_VELO_CREDITS) == 0)
		if (now() - t0 > 10) return -1;
	memcpy(q, buf, len);
	W64(pg, EXTOLL_VELO_HDR, EXTOLL_VELO_MKHDR(node, dv, 1, tag, len));
	for (unsigned k = 0; k < (len + 7) / 8; k++)
		W64(pg, EXTOLL_VELO_DATA(k), q[k]);
	return 0;
}

/* returns status word or 0 on timeout */
static uint64_t velo_recv(struct ep *e, void *buf, double tmo)
{
	volatile uint8_t *slot = e->ring + EXTOLL_VELO_SLOT_SIZE * e->rd;
	volatile uint64_t *st = (volatile uint64_t *)(slot + EXTOLL_VELO_STATUS_OFF);
	double t0 = now();
	uint64_t s;

	unsigned spin = 0;
	/* check the clock rarely: without a vDSO clocksource it is a syscall + MMIO */
	while (!(s = *st))
		if (!(++spin & 0xffff) && now() - t0 > tmo) return 0;
	__sync_synchronize();
	memcpy(buf, (void *)slot, EXTOLL_VELO_ST_LEN(s));
	*st = 0;
	e->rd = (e->rd + 1) % RING_SLOTS;
	return s;
}

/* ---------------------------------------------------------------- RMA */

static void rma_post(int vpid, unsigned opts, uint64_t w0, uint64_t w1, uint64_t w2)
{
	volatile uint8_t *pg = bar4 + EXTOLL_RMA_PAGE(vpid, opts);
	double t0 = now();

	while (R64(pg, EXTOLL_RMA_CMD_FREE) == 0)
		if (now() - t0 > 10) { printf("FAIL: CMD_FREE stuck\n"); fails++; return; }
	W64(pg, 0, w0);
	W64(pg, 8, w1);
	W64(pg, 16, w2);
}

static int noti_get(struct ep *e, uint64_t *w0, uint64_t *w1, double tmo)
{
	volatile uint64_t *n = e->notiq + 2 * e->nrd;
	double t0 = now();

	unsigned spin = 0;
	while (!n[1])
		if (tmo == 0 || (!(++spin & 0xffff) && now() - t0 > tmo)) return 0;
	__sync_synchronize();
	*w0 = n[0];
	*w1 = n[1];
	n[1] = 0;
	e->nrd = (e->nrd + 1) % NOTIQ_ENT;
	return 1;
}

#define N_SIZE(w) ((unsigned)((w) & 0x7fffff) + 1)
#define N_VPID(w) ((unsigned)(((w) >> 23) & 0xff))
#define N_NODE(w) ((unsigned)(((w) >> 32) & 0xffff))
#define N_TYPE(w) ((unsigned)(((w) >> 48) & 7))
#define N_CMD(w) ((unsigned)(((w) >> 51) & 0xf))
#define N_ERR(w) ((unsigned)(((w) >> 61) & 7))

static void dump(const char *what, uint64_t w0, uint64_t w1)
{
	printf("  %s: w0=%#llx size=%u vpid=%u node=%u type=%u cmd=%u err=%u\n", what,
	       (unsigned long long)w0, N_SIZE(w1), N_VPID(w1), N_NODE(w1), N_TYPE(w1),
	       N_CMD(w1), N_ERR(w1));
}

static uint32_t node_id;

static int expect_noti(struct ep *e, const char *what, unsigned type, unsigned cmd,
		       unsigned err, uint64_t w0x, unsigned size, uint64_t *w0o)
{
	uint64_t w0 = 0, w1 = 0;
	int ok = noti_get(e, &w0, &w1, 5);

	if (ok) dump(what, w0, w1);
	ok = ok && N_TYPE(w1) == type && N_CMD(w1) == cmd && N_ERR(w1) == err &&
	     (w0x == ~0ull || w0 == w0x) && (!size || N_SIZE(w1) == size);
	EXPECT(ok, "%s notification\n", what);
	if (w0o) *w0o = w0;
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
		for (unsigned i = 0; i < len; i++) buf[i] = len + i * 7;
		velo_send(1, node_id, 2, len & 0xff, buf, len);
		s = velo_recv(&b, got, 5);
		if (!s || EXTOLL_VELO_ST_LEN(s) != len || EXTOLL_VELO_ST_NODE(s) != node_id ||
		    EXTOLL_VELO_ST_VPID(s) != 1 || EXTOLL_VELO_ST_TAG(s) != (len & 0xff) ||
		    EXTOLL_VELO_ST_MTT(s) != 1 || !(s & EXTOLL_VELO_ST_EOM) || memcmp(buf, got, len)) {
			printf("  len %u status %#llx\n", len, (unsigned long long)s);
			ok = 0;
		}
	}
	EXPECT(ok, "VELO loopback messages: payload, source, tag, length, MTT\n");

	/* flow control: 90 messages into a 32-slot ring, consumer late */
	ok = 1;
	for (unsigned i = 0; i < 90; i++) {
		uint32_t v = i;
		if (velo_send(1, node_id, 2, 0, &v, 4)) { ok = 0; break; }
	}
	usleep(200000);
	unsigned full = 0;
	for (unsigned i = 0; i < RING_SLOTS; i++)
		full += *(volatile uint64_t *)(b.ring + 128 * i + 120) != 0;
	EXPECT(full == RING_SLOTS, "ring full (%u slots) while 90 messages are pending\n", full);
	EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_CREDITS) < EXTOLL_VELO_TX_CREDITS,
	       "sender credits consumed under back-pressure\n");
	for (unsigned i = 0; i < 90 && ok; i++) {
		uint32_t v = ~0u;
		s = velo_recv(&b, &v, 5);
		if (!s || v != i) { printf("  msg %u got %u st %#llx\n", i, v, (unsigned long long)s); ok = 0; }
	}
	EXPECT(ok, "all 90 messages delivered in order after back-pressure\n");
	EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 0, "no VELO drops\n");
	/* bad header: len 121 dropped and counted */
	W64(bar2 + EXTOLL_VELO_PAGE(1), 0, EXTOLL_VELO_MKHDR(node_id, 2, 0, 0, 121));
	EXPECT(R64(bar2 + EXTOLL_VELO_PAGE(1), EXTOLL_VELO_DROPS) == 1, "oversize message dropped\n");

	/* RMA put 10000 bytes a(VPID1) -> b(VPID2), unaligned */
	size_t L = 10000;
	uint8_t *src = locked(16384), *dst = locked(16384);
	uint64_t nsrc = reg(src, 16384, 16, 1, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
	uint64_t ndst = reg(dst, 16384, 32, 2, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
	for (size_t i = 0; i < 16384; i++) src[i] = i * 13 + 1;
	unsigned F = EXTOLL_RMA_FRAG_SIZE, lo = (L - 1) / F * F;
	rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2,
		 EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0, L - 1), nsrc + 3, ndst + 5);
	expect_noti(&b, "put completer", 4, 2, 0, ndst + 5 + lo, L - lo, NULL);
	EXPECT(!memcmp(src + 3, dst + 5, L) && dst[4] == 0 && dst[5 + L] == 0, "put data\n");
	expect_noti(&a, "put requester", 1, 2, 0, nsrc + 3 + lo, L - lo, NULL);

	/* RMA get back: a gets 5000 bytes from b into src+100 */
	memset(src, 0, 16384);
	L = 5000;
	lo = (L - 1) / F * F;
	rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_GET, node_id, 2,
		 7, 0, L - 1), ndst + 8, nsrc + 96);
	expect_noti(&a, "get requester", 1, 1, 0, nsrc + 96 + lo, L - lo, NULL);
	expect_noti(&b, "get responder", 2, 1, 0, ndst + 8 + lo, L - lo, NULL);
	expect_noti(&a, "get completer", 4, 11, 0, nsrc + 96 + lo, L - lo, NULL);
	EXPECT(!memcmp(src + 96, dst + 8, L) && src[95] == 0 && src[96 + L] == 0, "get data\n");

	/* immediate put of 5 bytes, notification put */
	memset(dst, 0, 64);
	rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_IMM_PUT, node_id, 2,
		 EXTOLL_NOTI_COMPLETER | EXTOLL_NOTI_REQUESTER, 0, 4), ndst + 16, 0x1122334455667788ull);
	expect_noti(&b, "imm put completer", 4, 6, 0, ndst + 16, 5, NULL);
	EXPECT(!memcmp(dst + 16, "\x88\x77\x66\x55\x44\0\0", 7), "immediate put data\n");
	expect_noti(&a, "imm put requester", 1, 6, 0, 0x1122334455667788ull, 5, NULL);
	rma_post(1, EXTOLL_RMA_OPT_TE | EXTOLL_RMA_OPT_IRQ, EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT,
		 node_id, 2, EXTOLL_NOTI_COMPLETER, 0, 0xab), 0xfeedfacecafebeefull, 0);
	{
		uint64_t w0, w1;
		int ok2 = noti_get(&b, &w0, &w1, 5);
		if (ok2) dump("notiput completer", w0, w1);
		EXPECT(ok2 && w0 == 0xfeedfacecafebeefull && (w1 & 0xff) == 0xab && N_CMD(w1) == 5 &&
		       N_VPID(w1) == 1 && N_NODE(w1) == node_id && N_TYPE(w1) == 4,
		       "notification put: payload, class, remote\n");
	}

	/* errors: target NLA owned by VPID 1 but command to VPID 2 */
	memset(src, 0x5a, 4096);
	memset(src, 0x11, 100);
	rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2, 0, 0, 99),
		 nsrc, nsrc + 200);
	expect_noti(&a, "foreign VPID put error", 1, 2, EXTOLL_NOTI_ERR_CMPL, ~0ull, 0, NULL);
	EXPECT(src[200] == 0x5a, "victim memory unchanged\n");
	rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 2, 0, 0, 99),
		 0x1ff000, ndst);
	expect_noti(&a, "unregistered source error", 1, 2, EXTOLL_NOTI_ERR_REQ, ~0ull, 0, NULL);
	rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(4, node_id, 2, 0, 0, 7), nsrc, ndst);
	expect_noti(&a, "illegal command 4", 1, 4, EXTOLL_NOTI_ERR_REQ, ~0ull, 0, NULL);
	rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_QW_PUT, node_id, 2, 0, 0, 11),
		 nsrc, ndst);
	expect_noti(&a, "qw put size 12", 1, 3, EXTOLL_NOTI_ERR_REQ, ~0ull, 0, NULL);
	rma_post(2, 0, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1, 0, 0, 7), phys_of(dst),
		 phys_of(src));
	expect_noti(&b, "physical page without RMA_PHYS", 1, 2, EXTOLL_NOTI_ERR_REQ, ~0ull, 0, NULL);
	rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node_id, 2, 0, 0, 99),
		 nsrc, nsrc);	/* remote read of an NLA VPID 2 does not own */
	expect_noti(&a, "get of foreign NLA", 1, 0, EXTOLL_NOTI_ERR_RESP, ~0ull, 0, NULL);
	/* physical put by VPID 1 (RMA_PHYS) to itself */
	memset(dst + 8192, 0, 64);
	rma_post(1, 0, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node_id, 1, EXTOLL_NOTI_COMPLETER, 0, 31),
		 phys_of(src), phys_of(src + 4096));
	expect_noti(&a, "physical put completer", 4, 2, 0, phys_of(src + 4096), 32, NULL);
	EXPECT(!memcmp(src, src + 4096, 32), "physical put data\n");

	/* notification queue full: 300 notification puts into 256 entries */
	for (unsigned i = 0; i < 300; i++)
		rma_post(1, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_NOTI_PUT, node_id, 2,
			 EXTOLL_NOTI_COMPLETER, 0, 1), i, 0);
	usleep(300000);
	ok = 1;
	for (unsigned i = 0; i < 300 && ok; i++) {
		uint64_t w0, w1;
		if (!noti_get(&b, &w0, &w1, 5) || w0 != i) {
			printf("  noti %u: w0 %llu\n", i, (unsigned long long)w0);
			ok = 0;
		}
	}
	EXPECT(ok, "300 notification puts through a 256-entry queue, none lost, in order\n");
	usleep(100000);
	EXPECT(R32(bar0, EXTOLL_REG_VPID(1) + EXTOLL_VPID_RMA_PENDING) == 0, "no pending commands\n");
	{
		uint64_t w0, w1;
		EXPECT(!noti_get(&a, &w0, &w1, 0.2), "no stray notifications at the origin\n");
	}
	for (unsigned i = 0; i < EXTOLL_NUM_COUNTERS; i++)
		printf("# counter %u = %llu\n", i, (unsigned long long)R64(bar0, EXTOLL_REG_COUNTER(i)));
}

/* ---------------------------------------------------------------- 2 nodes */

#define SRV_VPID 3
static void serve(int secs)
{
	struct ep e;
	uint8_t buf[128];
	W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
	atu_init();
	ep_init(&e, SRV_VPID, 0);
	void *region = locked(64 * 1024);
	reg(region, 64 * 1024, 64, SRV_VPID, EXTOLL_ATU_READ | EXTOLL_ATU_WRITE);
	printf("serving\n");
	fflush(stdout);
	double t0 = now();
	while (now() - t0 < secs) {
		uint64_t s = velo_recv(&e, buf, 0.5), w0, w1;
		if (s)
			velo_send(SRV_VPID, EXTOLL_VELO_ST_NODE(s), EXTOLL_VELO_ST_VPID(s),
				  EXTOLL_VELO_ST_TAG(s), buf, EXTOLL_VELO_ST_LEN(s));
		while (noti_get(&e, &w0, &w1, 0))
			;
	}
}

static void ping(unsigned node, int n)
{
	struct ep e;
	uint8_t buf[128], got[128];
	W32(bar0, EXTOLL_REG_CTRL, EXTOLL_CTRL_RESET);
	atu_init();
	ep_init(&e, 5, 0);
	int ok = 1;
	double t0 = now();
	for (int i = 0; i < n && ok; i++) {
		unsigned len = 1 + i % 120;
		for (unsigned k = 0; k < len; k++) buf[k] = i + k;
		velo_send(5, node, SRV_VPID, i & 0xff, buf, len);
		uint64_t s = velo_recv(&e, got, 10);
		if (!s || EXTOLL_VELO_ST_LEN(s) != len || memcmp(buf, got, len) ||
		    EXTOLL_VELO_ST_TAG(s) != (unsigned)(i & 0xff) || EXTOLL_VELO_ST_VPID(s) != SRV_VPID ||
		    EXTOLL_VELO_ST_NODE(s) != node) {
			printf("  round %d status %#llx\n", i, (unsigned long long)s);
			ok = 0;
		}
	}
	double dt = now() - t0;
	EXPECT(ok, "%d VELO round trips (%.1f us each)\n", n, dt / n * 1e6);

	/* RMA put 40000 bytes to the server region, then get it back */
	size_t L = 40000;
	uint8_t *src = locked(65536), *back = locked(65536);
	uint64_t nsrc = reg(src, 65536, 16, 5, EXTOLL_ATU_READ);
	uint64_t nback = reg(back, 65536, 32, 5, EXTOLL_ATU_WRITE);
	uint64_t nrem = 64ull << 12;
	for (size_t i = 0; i < L; i++) src[i] = i * 7 + 3;
	t0 = now();
	rma_post(5, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID,
		 EXTOLL_NOTI_REQUESTER | EXTOLL_NOTI_COMPLETER, 0, L - 1), nsrc, nrem + 1);
	unsigned F = EXTOLL_RMA_FRAG_SIZE, lo = (L - 1) / F * F;
	expect_noti(&e, "remote put requester", 1, 2, 0, nsrc + lo, L - lo, NULL);
	rma_post(5, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_GET, node, SRV_VPID,
		 EXTOLL_NOTI_COMPLETER, 0, L - 1), nrem + 1, nback);
	expect_noti(&e, "remote get completer", 4, 10, 0, nback + lo, L - lo, NULL);
	dt = now() - t0;
	EXPECT(!memcmp(src, back, L), "remote put + get data (%.1f MB/s)\n", 2 * L / dt / 1e6);
	/* error from the remote side: NLA outside the server's region */
	rma_post(5, EXTOLL_RMA_OPT_TE, EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, node, SRV_VPID, 0, 0, 9),
		 nsrc, 0x100000);
	expect_noti(&e, "remote put to unregistered NLA", 1, 2, EXTOLL_NOTI_ERR_CMPL, ~0ull, 0, NULL);
	printf("# retransmits %llu\n", (unsigned long long)R64(bar0, EXTOLL_REG_COUNTER(EXTOLL_CNT_RETRANSMITS)));
}

static void fuzz(long n)
{
	srandom(42);
	for (long i = 0; i < n; i++) {
		int which = random() % 3;
		uint64_t val = ((uint64_t)random() << 33) ^ random();
		if (random() % 4 == 0) val &= 0xffff;
		switch (which) {
		case 0: {
			uint32_t off = (random() % (EXTOLL_BAR_CTRL_SIZE / 4)) * 4;
			if (off == EXTOLL_REG_CTRL) break;
			if (random() & 1) W32(bar0, off, val); else (void)R32(bar0, off);
			break;
		}
		case 1: {
			uint32_t off = (random() % (EXTOLL_BAR_VELO_SIZE / 8)) * 8;
			if (random() & 1) W64(bar2, off & ~0x7f8ul, val); else (void)R64(bar2, off);
			break;
		}
		default: {
			uint32_t off = (random() % (EXTOLL_BAR_RMA_SIZE / 8)) * 8;
			if (random() & 1) W64(bar4, off & ~0xfe0ul, val); else (void)R64(bar4, off);
			break;
		}
		}
	}
	printf("device alive after %ld accesses: id %#x\n", n, R32(bar0, EXTOLL_REG_ID));
}

int main(int argc, char **argv)
{
	char dev[300];
	pci_open_dev(EXTOLL_PCI_VENDOR_ID, EXTOLL_PCI_DEVICE_ID, dev, sizeof dev);
	bar0 = map_res(dev, 0, EXTOLL_BAR_CTRL_SIZE);
	bar2 = map_res(dev, 2, EXTOLL_BAR_VELO_SIZE);
	bar4 = map_res(dev, 4, EXTOLL_BAR_RMA_SIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *m = argc > 1 ? argv[1] : "self";
	if (!strcmp(m, "self")) self_test();
	else if (!strcmp(m, "serve")) { serve(argc > 2 ? atoi(argv[2]) : 60); return 0; }
	else if (!strcmp(m, "ping")) ping(atoi(argv[2]), atoi(argv[3]));
	else if (!strcmp(m, "fuzz")) { fuzz(atol(argv[2])); self_test(); }
	printf("RESULT: %s (%d failures)\n", fails ? "FAIL" : "PASS", fails);
	return fails != 0;
}
