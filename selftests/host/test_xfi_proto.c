// SPDX-License-Identifier: GPL-2.0
/*
 * Wire format of the libfabric provider (lib/fi-providers/xfi_proto.c)
 * against good and hostile packets: round trips of SHORT, START (eager and
 * rendezvous), CONT and FIN; every truncation, bad type, mailbox, flag,
 * length and payload size refused; random packets never crash the parser
 * and whatever it accepts is self-consistent.
 */
#include <stdlib.h>
#include <string.h>

#include "../lib/kselftest_exa.h"
#include "../../lib/fi-providers/xfi_proto.h"

#define MAX_LEN (64u << 20)

static const struct xfi_hdr hdr0 = { .src_mbox = 17, .epoch = 0xbeef, .seq = 123456 };

TEST(start_round_trip_every_first_packet_size)
{
	uint8_t src[64], pkt[XFI_PKT_MAX];
	uint32_t len, flags;

	for (len = 0; len < 64; len++)
		src[len] = (uint8_t)(len * 7 + 1);
	for (flags = 0; flags <= (XFI_START_TAGGED | XFI_START_DATA); flags++) {
		for (len = 0; len <= 200; len++) {
			struct xfi_start_info si;
			struct xfi_hdr h;
			size_t n, plen = xfi_build_start(pkt, &hdr0, 0x1122, len, flags, 0x77, src, &n);

			ASSERT_EQ(XFI_PKT_START, xfi_parse_hdr(pkt, plen, &h));
			EXPECT_EQ(hdr0.seq, h.seq);
			EXPECT_EQ(hdr0.src_mbox, h.src_mbox);
			ASSERT_EQ(0, xfi_parse_start(pkt, plen, MAX_LEN, &si));
			EXPECT_EQ(len, si.len);
			EXPECT_EQ(0x1122u, si.tag);
			EXPECT_EQ(flags, si.flags);
			EXPECT_EQ((flags & XFI_START_DATA) ? 0x77u : 0u, si.data);
			ASSERT_EQ(n, si.payload_len);
			ASSERT_EQ(0, memcmp(si.payload, src, n));
			/* one byte short or long: refused */
			EXPECT_EQ(-1, xfi_parse_start(pkt, plen - 1, MAX_LEN, &si));
			if (plen < XFI_PKT_MAX)
				EXPECT_EQ(-1, xfi_parse_start(pkt, plen + 1, MAX_LEN, &si));
			/* longer than the receiver accepts */
			if (len)
				EXPECT_EQ(-1, xfi_parse_start(pkt, plen, len - 1, &si));
		}
	}
}

TEST(short_round_trip_every_size_and_flag)
{
	uint8_t src[64], pkt[XFI_PKT_MAX];
	uint32_t len, flags;

	for (len = 0; len < 64; len++)
		src[len] = (uint8_t)(len * 5 + 3);
	for (flags = 0; flags <= (XFI_START_TAGGED | XFI_START_DATA); flags++) {
		for (len = 0; len <= xfi_short_capacity(flags); len++) {
			struct xfi_start_info si;
			struct xfi_hdr h;
			size_t plen = xfi_build_short(pkt, &hdr0, 0x3344, len, flags, 0x99, src);

			ASSERT_EQ(XFI_SHORT_SIZE + ((flags & XFI_START_DATA) ? 8 : 0) + len, plen);
			ASSERT_EQ(XFI_PKT_SHORT, xfi_parse_hdr(pkt, plen, &h));
			EXPECT_EQ(hdr0.seq, h.seq);
			EXPECT_EQ(hdr0.epoch, h.epoch);
			EXPECT_EQ(hdr0.src_mbox, h.src_mbox);
			ASSERT_EQ(0, xfi_parse_short(pkt, plen, MAX_LEN, &si));
			EXPECT_EQ(len, si.len);
			EXPECT_EQ(0x3344u, si.tag);
			EXPECT_EQ(flags, si.flags);
			EXPECT_EQ((flags & XFI_START_DATA) ? 0x99u : 0u, si.data);
			ASSERT_EQ(len, si.payload_len);
			ASSERT_EQ(0, memcmp(si.payload, src, len));
			/* longer than the receiver accepts */
			if (len)
				EXPECT_EQ(-1, xfi_parse_short(pkt, plen, len - 1, &si));
		}
		/* the header, or the CQ data, cut short */
		xfi_build_short(pkt, &hdr0, 1, 0, flags, 2, src);
		EXPECT_EQ(-1, xfi_parse_short(pkt, XFI_SHORT_SIZE - 1, MAX_LEN, &(struct xfi_start_info){ 0 }));
		if (flags & XFI_START_DATA)
			EXPECT_EQ(-1, xfi_parse_short(pkt, XFI_SHORT_SIZE + 7, MAX_LEN,
						      &(struct xfi_start_info){ 0 }));
	}
	/* an 8-byte MPI message with its CQ data: 32 bytes, four 8-byte stores */
	EXPECT_EQ(32u, xfi_build_short(pkt, &hdr0, 1, 8, XFI_START_TAGGED | XFI_START_DATA, 2, src));
}

TEST(short_flag_bits_only_on_short_packets)
{
	uint8_t pkt[XFI_PKT_MAX] = { 0 };
	struct xfi_hdr h;
	size_t n, plen;

	plen = xfi_build_short(pkt, &hdr0, 1, 4, XFI_START_TAGGED, 0, (const uint8_t *)"abcd");
	pkt[0] |= XFI_START_RNDV << XFI_SHORT_FLAG_SHIFT;	/* no rendezvous in a SHORT */
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, plen, &h));
	EXPECT_EQ(-1, xfi_parse_short(pkt, plen, MAX_LEN, &(struct xfi_start_info){ 0 }));
	pkt[0] = XFI_PKT_SHORT | XFI_START_RNDV << XFI_SHORT_FLAG_SHIFT | 0x80;
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, plen, &h));
	plen = xfi_build_start(pkt, &hdr0, 1, 10, 0, 0, (const uint8_t *)"0123456789", &n);
	pkt[0] |= XFI_START_TAGGED << XFI_SHORT_FLAG_SHIFT;	/* flag bits on a START */
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, plen, &h));
	pkt[0] = XFI_PKT_TYPE_END;
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, plen, &h));
}

/* FI_DELIVERY_COMPLETE rides as a flag on SHORT and START packets; a
 * rendezvous has its own FIN, so a START never carries both. */
TEST(delivery_complete_flag_round_trips)
{
	uint8_t pkt[XFI_PKT_MAX] = { 0 };
	struct xfi_start_info si = { 0 };
	uint8_t src100[100];
	struct xfi_hdr h;
	size_t n, plen;

	memset(src100, 0x5a, sizeof(src100));
	plen = xfi_build_short(pkt, &hdr0, 7, 8, XFI_START_TAGGED | XFI_START_DC, 0,
			       (const uint8_t *)"abcdefgh");
	EXPECT_EQ(XFI_SHORT_SIZE + 8, plen);
	ASSERT_EQ(XFI_PKT_SHORT, xfi_parse_hdr(pkt, plen, &h));
	ASSERT_EQ(0, xfi_parse_short(pkt, plen, MAX_LEN, &si));
	EXPECT_EQ((uint32_t)(XFI_START_TAGGED | XFI_START_DC), si.flags);
	EXPECT_EQ(8u, si.len);
	EXPECT_EQ(0, memcmp(si.payload, "abcdefgh", 8));
	plen = xfi_build_start(pkt, &hdr0, 7, 100, XFI_START_DC, 0, src100, &n);
	ASSERT_EQ(0, xfi_parse_start(pkt, plen, MAX_LEN, &si));
	EXPECT_EQ((uint32_t)XFI_START_DC, si.flags);
	pkt[20] |= XFI_START_RNDV;
	EXPECT_EQ(-1, xfi_parse_start(pkt, plen, MAX_LEN, &si));
	EXPECT_NE(XFI_DC_COOKIE(5), XFI_DC_COOKIE(6));
	EXPECT_TRUE(XFI_DC_COOKIE(0) >> 63);
}

TEST(message_is_start_plus_conts_that_add_up)
{
	uint64_t len;

	for (len = 0; len < 5000; len += 7) {
		uint64_t pkts = xfi_msg_packets(len, 0), covered = xfi_start_capacity(0);

		if (pkts == 1) {	/* a SHORT */
			ASSERT_LE(len, xfi_short_capacity(0));
			continue;
		}
		ASSERT_GT(len, xfi_short_capacity(0));
		covered += (pkts - 1) * XFI_CONT_PAYLOAD;
		ASSERT_LE(len, covered);
		ASSERT_GT(len, covered - XFI_CONT_PAYLOAD);
	}
	EXPECT_EQ(1, xfi_msg_packets(48, 0));
	EXPECT_EQ(2, xfi_msg_packets(49, 0));
	EXPECT_EQ(1, xfi_msg_packets(40, XFI_START_DATA));
	EXPECT_EQ(2, xfi_msg_packets(41, XFI_START_DATA));
	/* START + CONTs: 40 bytes in the START, 56 per CONT */
	EXPECT_EQ(2, xfi_msg_packets(96, 0));
	EXPECT_EQ(3, xfi_msg_packets(97, 0));
}

TEST(cont_payload_must_match_what_is_left)
{
	uint8_t src[64] = { 1, 2, 3 }, pkt[XFI_PKT_MAX];
	size_t n, plen;

	plen = xfi_build_cont(pkt, &hdr0, src, 1000, &n);
	EXPECT_EQ(XFI_CONT_PAYLOAD, n);
	EXPECT_EQ(XFI_PKT_MAX, plen);
	EXPECT_EQ((int)XFI_CONT_PAYLOAD, xfi_parse_cont(plen, 1000));
	plen = xfi_build_cont(pkt, &hdr0, src, 3, &n);
	EXPECT_EQ(3, n);
	EXPECT_EQ(3, xfi_parse_cont(plen, 3));
	EXPECT_EQ(-1, xfi_parse_cont(plen, 4));		/* short */
	EXPECT_EQ(-1, xfi_parse_cont(plen, 2));		/* long */
	EXPECT_EQ(-1, xfi_parse_cont(plen, 0));		/* nothing expected */
	EXPECT_EQ(-1, xfi_parse_cont(XFI_HDR_SIZE - 1, 1));
	EXPECT_EQ(-1, xfi_parse_cont(XFI_PKT_MAX + 1, 1000));
}

TEST(rendezvous_rts_and_fin)
{
	struct xfi_rndv rd = { .node = 3, .rank = 5, .va = 0x7f0012345678ull, .cookie = 99 };
	uint8_t pkt[XFI_PKT_MAX];
	struct xfi_start_info si;
	uint64_t cookie;
	int32_t status;
	size_t n, plen;

	plen = xfi_build_start(pkt, &hdr0, 7, 1u << 20, XFI_START_RNDV | XFI_START_DATA, 5,
			       (const uint8_t *)&rd, &n);
	EXPECT_EQ(1u << 20, n);		/* the RTS accounts for the whole message */
	ASSERT_EQ(0, xfi_parse_start(pkt, plen, MAX_LEN, &si));
	EXPECT_EQ(rd.va, si.rndv.va);
	EXPECT_EQ(rd.rank, si.rndv.rank);
	EXPECT_EQ(rd.cookie, si.rndv.cookie);
	EXPECT_EQ(5u, si.data);
	EXPECT_EQ(-1, xfi_parse_start(pkt, plen - 1, MAX_LEN, &si));
	/* a rendezvous of nothing is malformed */
	plen = xfi_build_start(pkt, &hdr0, 7, 0, XFI_START_RNDV, 0, (const uint8_t *)&rd, &n);
	EXPECT_EQ(-1, xfi_parse_start(pkt, plen, MAX_LEN, &si));

	plen = xfi_build_fin(pkt, &hdr0, 99, 0);
	ASSERT_EQ(XFI_PKT_FIN, xfi_parse_hdr(pkt, plen, &(struct xfi_hdr){ 0 }));
	ASSERT_EQ(0, xfi_parse_fin(pkt, plen, &cookie, &status));
	EXPECT_EQ(99u, cookie);
	EXPECT_EQ(0, status);
	EXPECT_EQ(-1, xfi_parse_fin(pkt, plen - 1, &cookie, &status));
	plen = xfi_build_fin(pkt, &hdr0, 99, -5);
	EXPECT_EQ(-1, xfi_parse_fin(pkt, plen, &cookie, &status));
}

/* fi_writedata's notification: the CQ data and nothing else. */
TEST(rma_data_notification_is_data_only)
{
	static const uint32_t bad[] = {
		XFI_START_RMA_DATA,				/* no data */
		XFI_START_RMA_DATA | XFI_START_DATA | XFI_START_TAGGED,
		XFI_START_RMA_DATA | XFI_START_DATA | XFI_START_DC,
	};
	uint8_t pkt[XFI_PKT_MAX];
	struct xfi_start_info si;
	size_t n, plen;

	plen = xfi_build_start(pkt, &hdr0, 0, 0, XFI_START_RMA_DATA | XFI_START_DATA,
			       0xfeedull, NULL, &n);
	ASSERT_EQ(0, xfi_parse_start(pkt, plen, MAX_LEN, &si));
	EXPECT_EQ(0xfeedull, si.data);
	EXPECT_EQ(0u, si.len);
	EXPECT_EQ(XFI_START_RMA_DATA | XFI_START_DATA, si.flags);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		plen = xfi_build_start(pkt, &hdr0, 0, 0, bad[i], 1, NULL, &n);
		EXPECT_EQ(-1, xfi_parse_start(pkt, plen, MAX_LEN, &si)) TH_LOG("flags %#x", bad[i]);
	}
	/* with a payload */
	plen = xfi_build_start(pkt, &hdr0, 0, 4, XFI_START_RMA_DATA | XFI_START_DATA, 1,
			       (const uint8_t *)"abcd", &n);
	EXPECT_EQ(-1, xfi_parse_start(pkt, plen, MAX_LEN, &si));
}

TEST(bad_headers_refused)
{
	uint8_t pkt[XFI_PKT_MAX];
	struct xfi_start_info si;
	struct xfi_hdr h = hdr0;
	size_t n, plen;

	plen = xfi_build_start(pkt, &hdr0, 1, 10, 0, 0, (const uint8_t *)"0123456789", &n);
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, XFI_HDR_SIZE - 1, &h));
	EXPECT_EQ(-1, xfi_parse_hdr(NULL, plen, &h));
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, XFI_PKT_MAX + 1, &h));
	pkt[0] = 0;
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, plen, &h));
	pkt[0] = XFI_PKT_TYPE_END;
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, plen, &h));
	pkt[0] = XFI_PKT_START;
	pkt[1] = XFI_MBOX_LIMIT;	/* mailbox ids are 6 bits */
	EXPECT_EQ(-1, xfi_parse_hdr(pkt, plen, &h));
	pkt[1] = 5;
	EXPECT_EQ(XFI_PKT_START, xfi_parse_hdr(pkt, plen, &h));
	pkt[20] |= 0x80;		/* unknown flag bit */
	EXPECT_EQ(-1, xfi_parse_start(pkt, plen, MAX_LEN, &si));
}

TEST(ping_and_reset)
{
	uint8_t pkt[XFI_PKT_MAX];
	struct xfi_hdr h;
	uint16_t e = 0;
	size_t plen;

	plen = xfi_build_ping(pkt, &hdr0);
	EXPECT_EQ(XFI_HDR_SIZE, plen);
	EXPECT_EQ(XFI_PKT_PING, xfi_parse_hdr(pkt, plen, &h));
	EXPECT_EQ(hdr0.epoch, h.epoch);
	EXPECT_EQ(0, xfi_parse_ping(plen));
	EXPECT_EQ(-1, xfi_parse_ping(plen + 1));
	plen = xfi_build_reset(pkt, &hdr0, 0xbeef);
	EXPECT_EQ(sizeof(struct xfi_reset), plen);
	EXPECT_EQ(XFI_PKT_RESET, xfi_parse_hdr(pkt, plen, &h));
	EXPECT_EQ(0, xfi_parse_reset(pkt, plen, &e));
	EXPECT_EQ(0xbeef, e);
	EXPECT_EQ(-1, xfi_parse_reset(pkt, plen - 1, &e));
	pkt[plen - 1] = 1;		/* reserved bits */
	EXPECT_EQ(-1, xfi_parse_reset(pkt, plen, &e));
}

TEST(address_check)
{
	struct xfi_addr a = xfi_addr_make(5, 63), b;

	EXPECT_EQ(0, xfi_addr_check(&a, 0));
	a.mbox = 64;
	EXPECT_EQ(-1, xfi_addr_check(&a, 0));
	EXPECT_EQ(-1, xfi_addr_check(&a, 1));
	/* "any mailbox" only where the caller takes it (fi_getinfo's src_addr) */
	a.mbox = XFI_MBOX_ANY;
	EXPECT_EQ(-1, xfi_addr_check(&a, 0));
	EXPECT_EQ(0, xfi_addr_check(&a, 1));
	a.mbox = 1;
	a.node = XFI_NODE_LIMIT;
	EXPECT_EQ(-1, xfi_addr_check(&a, 1));
	a.node = 1;
	a.magic = 0;
	EXPECT_EQ(-1, xfi_addr_check(&a, 1));
	a.magic = XFI_ADDR_MAGIC;
	a.version = 1;		/* before SHORT packets */
	EXPECT_EQ(-1, xfi_addr_check(&a, 1));
	a.version = XFI_ADDR_VERSION + 1;
	EXPECT_EQ(-1, xfi_addr_check(&a, 1));
	/* a caller's buffer: its length must be an address's */
	a = xfi_addr_make(7, XFI_MBOX_ANY);
	EXPECT_EQ(0, xfi_addr_from(&a, sizeof(a), 1, &b));
	EXPECT_EQ(7u, b.node);
	EXPECT_EQ(XFI_MBOX_ANY, b.mbox);
	EXPECT_EQ(-1, xfi_addr_from(&a, sizeof(a), 0, &b));
	EXPECT_EQ(-1, xfi_addr_from(&a, sizeof(a) - 1, 1, &b));
	EXPECT_EQ(-1, xfi_addr_from(NULL, sizeof(a), 1, &b));
	EXPECT_EQ(5u << 6 | 9, xfi_key(5, 9));
	EXPECT_EQ(5u, xfi_key_node(xfi_key(5, 9)));
	EXPECT_EQ(9u, xfi_key_mbox(xfi_key(5, 9)));
}

/* 200000 random packets (half of them START-like, a quarter SHORT-like): no crash, and anything
 * accepted stays inside the packet and the length limit. */
TEST(random_packets_never_accepted_inconsistently)
{
	uint8_t pkt[XFI_PKT_MAX];
	unsigned long i, accepted = 0, accepted_short = 0;

	srandom(12345);		/* reproducible */
	for (i = 0; i < 200000; i++) {
		size_t len = (size_t)random() % (XFI_PKT_MAX + 1), k;
		struct xfi_start_info si;
		struct xfi_hdr h;
		uint64_t cookie;
		int32_t status;
		int t;

		for (k = 0; k < sizeof(pkt); k++)
			pkt[k] = (uint8_t)random();
		if (i & 1) {
			pkt[0] = XFI_PKT_START;
			pkt[1] &= 63;
			pkt[20] &= XFI_START_FLAGS;
			pkt[21] = pkt[22] = pkt[23] = 0;
			pkt[18] = pkt[19] = 0;	/* len < 64 KiB */
		} else if (i % 4 == 2) {
			pkt[0] = (uint8_t)(XFI_PKT_SHORT | (pkt[0] & 0x30));
			pkt[1] &= 63;
		}
		t = xfi_parse_hdr(pkt, len, &h);
		if (t < 0)
			continue;
		ASSERT_LT(h.src_mbox, XFI_MBOX_LIMIT);
		if (t == XFI_PKT_SHORT && xfi_parse_short(pkt, len, 4096, &si) == 0) {
			accepted_short++;
			ASSERT_TRUE(si.payload >= pkt && si.payload + si.payload_len <= pkt + len);
			ASSERT_EQ(si.len, si.payload_len);
			ASSERT_EQ(0u, si.flags & ~(uint32_t)XFI_SHORT_FLAGS);
		}
		if (t == XFI_PKT_START && xfi_parse_start(pkt, len, 4096, &si) == 0) {
			accepted++;
			ASSERT_LE(si.len, 4096u);
			ASSERT_TRUE(si.payload >= pkt && si.payload + si.payload_len <= pkt + len);
			if (!(si.flags & XFI_START_RNDV))
				ASSERT_LE(si.payload_len, si.len);
		}
		if (t == XFI_PKT_FIN && xfi_parse_fin(pkt, len, &cookie, &status) == 0)
			ASSERT_LE(0, status);
	}
	TH_LOG("%lu random START and %lu SHORT packets accepted", accepted, accepted_short);
	ASSERT_LT(0, accepted_short);
}

TEST_HARNESS_MAIN
