// SPDX-License-Identifier: GPL-2.0
/*
 * exanet-ipd wire formats (tools/exanet-ipd/ipd_proto.c) against good and
 * hostile input: heartbeats, fabric messages, ring batches, ICMP errors.
 * Nothing malformed may be accepted, nothing may crash, and no record that
 * is not a well-formed IP packet may be delivered.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/kselftest_exa.h"
#include "../../tools/exanet-ipd/ipd_proto.h"

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static const struct ipd_hb hb0 = {
	.node = 3, .mbox = 5, .incarnation = 0x1122334455667788ull, .ipv4 = 0x0400002b,
	.mtu = 65520, .seq = 77, .num_nodes = 4,
};

/* zlib's CRC-32 gives the values of the bitwise one the heartbeats carried
 * before (peers of another build agree): the check value, every length. */
TEST(crc32_same_values_as_the_bitwise_one)
{
	uint8_t buf[1500];
	uint32_t x = 777;

	ASSERT_EQ(0xcbf43926u, ipd_crc32("123456789", 9));
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t len = 0; len <= sizeof(buf); len++) {
		uint32_t crc = 0xffffffffu;

		for (size_t i = 0; i < len; i++) {
			crc ^= buf[i];
			for (int k = 0; k < 8; k++)
				crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
		}
		ASSERT_EQ(~crc, ipd_crc32(buf, len));
	}
}

/* Values the bitwise ipd_crc32 gave before it called zlib (recorded from
 * 56eabc8^): a daemon of an older build must accept our heartbeats. */
TEST(crc32_values_of_the_bitwise_one)
{
	static const struct {
		size_t start, len;
		uint32_t crc;
	} vec[] = {
		{0, 0, 0x00000000u}, {0, 1, 0xa505df1bu}, {0, 40, 0xd364f64au},
		{0, 96, 0x5940dfaau}, {0, 4096, 0xc0b7860cu},
		{1, 1, 0x35bac28au}, {1, 40, 0x5272b6ebu}, {1, 96, 0x1fc262f2u},
		{1, 4096, 0xfc2f53f6u},
		{5, 1, 0x4ad0cf31u}, {5, 40, 0xa5b49947u}, {5, 96, 0x65e58e9du},
		{5, 4096, 0x91ad2c16u},
	};
	static uint8_t buf[4096 + 8];
	uint8_t w[IPD_HB_WIRE_SIZE];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13 + (i >> 8) + 1);
	for (size_t i = 0; i < ARRAY_SIZE(vec); i++) {
		EXPECT_EQ(vec[i].crc, ipd_crc32(buf + vec[i].start, vec[i].len)) {
			TH_LOG("start %zu length %zu", vec[i].start, vec[i].len);
		}
	}
	/* the heartbeat of hb0 as the bitwise build put it on the wire */
	ipd_hb_encode(&hb0, w);
	ASSERT_EQ(0xa6, w[40]);
	ASSERT_EQ(0x68, w[41]);
	ASSERT_EQ(0xdb, w[42]);
	ASSERT_EQ(0x42, w[43]);
}

TEST(heartbeat_round_trip)
{
	uint8_t w[IPD_HB_WIRE_SIZE];
	struct ipd_hb h;

	ipd_hb_encode(&hb0, w);
	ASSERT_EQ(0, ipd_hb_decode(w, sizeof(w), &h));
	EXPECT_EQ(hb0.node, h.node);
	EXPECT_EQ(hb0.mbox, h.mbox);
	EXPECT_EQ(hb0.incarnation, h.incarnation);
	EXPECT_EQ(hb0.ipv4, h.ipv4);
	EXPECT_EQ(hb0.mtu, h.mtu);
	EXPECT_EQ(hb0.seq, h.seq);
	EXPECT_EQ(hb0.num_nodes, h.num_nodes);
	EXPECT_EQ(0, h.flags);
}

/* Every single-bit flip, every truncation and extension is refused. */
TEST(heartbeat_corruption_refused)
{
	uint8_t w[IPD_HB_WIRE_SIZE], c[IPD_HB_WIRE_SIZE + 8];
	struct ipd_hb h, z = hb0;

	ipd_hb_encode(&hb0, w);
	for (unsigned int bit = 0; bit < 8 * IPD_HB_WIRE_SIZE; bit++) {
		memcpy(c, w, sizeof(w));
		c[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		EXPECT_EQ(-EBADMSG, ipd_hb_decode(c, sizeof(w), &h));
	}
	for (size_t len = 0; len < sizeof(c); len++) {
		memset(c, 0, sizeof(c));
		memcpy(c, w, len < sizeof(w) ? len : sizeof(w));
		if (len != sizeof(w))
			EXPECT_EQ(-EBADMSG, ipd_hb_decode(c, len, &h));
	}
	EXPECT_EQ(-EBADMSG, ipd_hb_decode(NULL, sizeof(w), &h));
	z.incarnation = 0;		/* a valid CRC does not make it valid */
	ipd_hb_encode(&z, w);
	EXPECT_EQ(-EBADMSG, ipd_hb_decode(w, sizeof(w), &h));
	z = hb0;
	z.mbox = 64;
	ipd_hb_encode(&z, w);
	EXPECT_EQ(-EBADMSG, ipd_hb_decode(w, sizeof(w), &h));
	z = hb0;
	z.mtu = 100;
	ipd_hb_encode(&z, w);
	EXPECT_EQ(-EBADMSG, ipd_hb_decode(w, sizeof(w), &h));
}

TEST(heartbeat_garbage_never_accepted)
{
	uint8_t g[IPD_HB_WIRE_SIZE];
	struct ipd_hb h;
	int accepted = 0;

	for (int i = 0; i < 200000; i++) {
		for (size_t k = 0; k < sizeof(g); k++)
			g[k] = (uint8_t)rnd();
		accepted += ipd_hb_decode(g, sizeof(g), &h) == 0;
	}
	EXPECT_EQ(0, accepted);
}

static struct ipd_msg offer(void)
{
	struct ipd_msg m = { .type = IPD_MSG_OFFER, .ring_order = 21, .src_mbox = 2 };

	m.src_cookie = 0xabcdef01;
	m.dst_cookie = 0;
	m.src_incarnation = 0x1111;
	m.dst_incarnation = 0x2222;
	for (int i = 0; i < 16; i++)
		m.u.offer.ring[i] = (uint8_t)i;
	m.u.offer.ipv4 = 0x0200002b;
	m.u.offer.mtu = 65520;
	m.u.offer.t_ns = 123456789;
	m.u.offer.kmbox = 5;
	return m;
}

TEST(messages_round_trip_every_type)
{
	uint8_t w[IPD_MSG_MAX_SIZE];
	struct ipd_msg m = offer(), r;
	size_t len;

	len = ipd_msg_encode(&m, w);
	ASSERT_EQ(64u, len);
	ASSERT_EQ(0, ipd_msg_decode(w, len, &r));
	EXPECT_EQ(IPD_MSG_OFFER, r.type);
	EXPECT_EQ(21, r.ring_order);
	EXPECT_EQ(2, r.src_mbox);
	EXPECT_EQ(m.src_cookie, r.src_cookie);
	EXPECT_EQ(m.src_incarnation, r.src_incarnation);
	EXPECT_EQ(m.dst_incarnation, r.dst_incarnation);
	EXPECT_EQ(0, memcmp(m.u.offer.ring, r.u.offer.ring, 16));
	EXPECT_EQ(m.u.offer.ipv4, r.u.offer.ipv4);
	EXPECT_EQ(m.u.offer.mtu, r.u.offer.mtu);
	EXPECT_EQ(m.u.offer.t_ns, r.u.offer.t_ns);
	EXPECT_EQ(5u, r.u.offer.kmbox);
	/* an OFFER of a daemon without the kernel path: none */
	ASSERT_EQ(0, ipd_msg_decode(w, 60, &r));
	EXPECT_EQ(IPD_NO_KMBOX, r.u.offer.kmbox);
	/* no kernel path mailbox beyond the NI's 64 */
	m.u.offer.kmbox = 64;
	len = ipd_msg_encode(&m, w);
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(w, len, &r));
	m.u.offer.kmbox = IPD_NO_KMBOX;
	len = ipd_msg_encode(&m, w);
	ASSERT_EQ(0, ipd_msg_decode(w, len, &r));
	EXPECT_EQ(IPD_NO_KMBOX, r.u.offer.kmbox);

	memset(&m, 0, sizeof(m));
	m.type = IPD_MSG_CREDIT;
	m.src_cookie = 7;
	m.dst_cookie = 9;
	m.src_incarnation = 1;
	m.dst_incarnation = 2;
	m.u.credit.cons_pos = 0x123456789aull;
	m.u.credit.cons_wseq = 4000000000u;
	len = ipd_msg_encode(&m, w);
	ASSERT_EQ(0, ipd_msg_decode(w, len, &r));
	EXPECT_EQ(m.u.credit.cons_pos, r.u.credit.cons_pos);
	EXPECT_EQ(m.u.credit.cons_wseq, r.u.credit.cons_wseq);

	m.type = IPD_MSG_ACCEPT;
	m.u.accept.t_ns = 42;
	len = ipd_msg_encode(&m, w);
	ASSERT_EQ(0, ipd_msg_decode(w, len, &r));
	EXPECT_EQ(42u, r.u.accept.t_ns);

	for (int t = IPD_MSG_BYE; t <= IPD_MSG_NEED_RING; t++) {
		m.type = (uint8_t)t;
		len = ipd_msg_encode(&m, w);
		ASSERT_EQ(28u, len);
		ASSERT_EQ(0, ipd_msg_decode(w, len, &r));
		EXPECT_EQ(t, r.type);
	}
}

TEST(messages_malformed_refused)
{
	uint8_t w[IPD_MSG_MAX_SIZE], c[IPD_MSG_MAX_SIZE];
	struct ipd_msg m = offer(), r;
	size_t len = ipd_msg_encode(&m, w);

	/* wrong lengths (60: an OFFER without the kernel path's mailbox) */
	for (size_t l = 0; l <= IPD_MSG_MAX_SIZE; l++)
		if (l != len && l != 60)
			EXPECT_EQ(-EBADMSG, ipd_msg_decode(w, l, &r));
	/* type, version, mailbox, ring order, MTU, cookies, incarnations */
	memcpy(c, w, len); c[0] = 0;   EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	memcpy(c, w, len); c[0] = 99;  EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	memcpy(c, w, len); c[1] = 2;   EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	memcpy(c, w, len); c[3] = 64;  EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	memcpy(c, w, len); c[2] = 18;  EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	memcpy(c, w, len); c[2] = 29;  EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	m = offer(); m.u.offer.mtu = 100; len = ipd_msg_encode(&m, c);
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	m = offer(); m.src_cookie = 0; len = ipd_msg_encode(&m, c);
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	m = offer(); m.src_incarnation = 0; len = ipd_msg_encode(&m, c);
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	m = offer(); m.dst_incarnation = 0; len = ipd_msg_encode(&m, c);
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	/* ACCEPT without the ring it accepts, CREDIT without its ring */
	memset(&m, 0, sizeof(m));
	m.src_incarnation = m.dst_incarnation = 5;
	m.type = IPD_MSG_ACCEPT;
	len = ipd_msg_encode(&m, c);
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	m.type = IPD_MSG_CREDIT;
	len = ipd_msg_encode(&m, c);
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	/* a ring order on something that is not an OFFER */
	m.type = IPD_MSG_BYE;
	len = ipd_msg_encode(&m, c);
	c[2] = 21;
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(c, len, &r));
	EXPECT_EQ(-EBADMSG, ipd_msg_decode(NULL, 28, &r));
}

TEST(messages_garbage_fuzz)
{
	uint8_t g[IPD_MSG_MAX_SIZE];
	struct ipd_msg r;

	for (int i = 0; i < 300000; i++) {
		size_t len = (size_t)(rnd() % (IPD_MSG_MAX_SIZE + 1));

		for (size_t k = 0; k < sizeof(g); k++)
			g[k] = (uint8_t)rnd();
		if (i & 1)		/* plausible headers too */
			g[0] = (uint8_t)(1 + rnd() % 5), g[1] = 1, g[3] &= 63;
		if (ipd_msg_decode(g, len, &r) == 0) {
			/* whatever passes is internally consistent */
			EXPECT_TRUE(r.type >= IPD_MSG_OFFER && r.type <= IPD_MSG_LAST);
			EXPECT_TRUE(r.src_incarnation && r.dst_incarnation);
			EXPECT_LT(r.src_mbox, 64);
			if (r.type == IPD_MSG_OFFER) {
				EXPECT_TRUE(r.ring_order >= IPD_RING_ORDER_MIN &&
					    r.ring_order <= IPD_RING_ORDER_MAX);
				EXPECT_TRUE(r.u.offer.mtu >= IPD_MTU_MIN);
				EXPECT_TRUE(r.u.offer.kmbox < 64 ||
					    r.u.offer.kmbox == IPD_NO_KMBOX);
			}
		}
	}
}

/* An IPv4 packet of len bytes (len >= 20). */
static void ip4(uint8_t *p, size_t len, uint8_t fill)
{
	memset(p, fill, len);
	p[0] = 0x45;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[6] = p[7] = 0;
	p[9] = 17;
}

struct sink {
	unsigned int n;
	size_t bytes;
	int bad;
};

static void sink_deliver(void *arg, const struct ipd_rec_hdr *h, const uint8_t *pkt)
{
	struct sink *s = arg;

	s->n++;
	s->bytes += h->len;
	if (ipd_ip_check(pkt, h->len) || ipd_rec_check(h, ipd_rec_size(h->len), 65535))
		s->bad++;
}

/* A batch of records of the given sizes, starting at sequence seq. */
static size_t mkbatch(uint8_t *b, const uint32_t *sizes, int n, uint32_t seq)
{
	size_t off = 0;

	for (int i = 0; i < n; i++) {
		ipd_rec_put(b + off, sizes[i], seq + (uint32_t)i);
		ip4(b + off + IPD_REC_HDR, sizes[i], (uint8_t)i);
		off += ipd_rec_size(sizes[i]);
	}
	return off;
}

TEST(batch_parse_good)
{
	static uint8_t b[1 << 18];
	const uint32_t sizes[] = { 20, 21, 84, 1500, 65520, 33, 64 };
	struct sink s = { 0 };
	uint32_t seq = 1000;
	size_t len = mkbatch(b, sizes, 7, 1000);

	ASSERT_EQ(0u, len % IPD_REC_ALIGN);
	ASSERT_EQ(7, ipd_batch_parse(b, len, 65520, &seq, sink_deliver, &s));
	EXPECT_EQ(1007u, seq);
	EXPECT_EQ(7u, s.n);
	EXPECT_EQ(20u + 21 + 84 + 1500 + 65520 + 33 + 64, s.bytes);
	EXPECT_EQ(0, s.bad);
}

TEST(batch_parse_malformed_records_stop_delivery)
{
	static uint8_t b[1 << 17];
	const uint32_t sizes[] = { 100, 200, 300 };
	struct ipd_rec_hdr h;
	uint32_t seq;
	struct sink s;
	size_t len = mkbatch(b, sizes, 3, 0), second = ipd_rec_size(100);

#define PARSE_BAD(mtu) do { seq = 0; memset(&s, 0, sizeof(s)); \
		EXPECT_EQ(-EBADMSG, ipd_batch_parse(b, len, mtu, &seq, sink_deliver, &s)); \
		EXPECT_EQ(1u, s.n); EXPECT_EQ(0, s.bad); \
		len = mkbatch(b, sizes, 3, 0); } while (0)
	/* each defect in the second record: the first is delivered, nothing after */
	memcpy(&h, b + second, sizeof(h)); h.len = 100000; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);	/* beyond the batch */
	memcpy(&h, b + second, sizeof(h)); h.len = 0; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);
	PARSE_BAD(150);		/* above the MTU */
	memcpy(&h, b + second, sizeof(h)); h.type = 1; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);
	memcpy(&h, b + second, sizeof(h)); h.flags = 1; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);
	/* checksum offload fields: only with the flag, inside the packet */
	memcpy(&h, b + second, sizeof(h)); h.csum_start = 20; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);
	memcpy(&h, b + second, sizeof(h)); h.flags = IPD_REC_F_CSUM; h.csum_start = 10;
	h.csum_offset = 6; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);	/* inside the IP header */
	memcpy(&h, b + second, sizeof(h)); h.flags = IPD_REC_F_CSUM; h.csum_start = 190;
	h.csum_offset = 16; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);	/* beyond the packet */
	memcpy(&h, b + second, sizeof(h)); h.flags = 4; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);
	memcpy(&h, b + second, sizeof(h)); h.seq = 7; memcpy(b + second, &h, sizeof(h));
	PARSE_BAD(65520);	/* reordered / replayed */
	b[second + IPD_REC_HDR + 3] ^= 1;			/* IPv4 total length */
	PARSE_BAD(65520);
	b[second + IPD_REC_HDR] = 0x65;				/* IP version 6 */
	PARSE_BAD(65520);
	b[second + IPD_REC_HDR] = 0x44;				/* IHL 4 */
	PARSE_BAD(65520);
	/* the batch ends in the middle of a record */
	seq = 0;
	memset(&s, 0, sizeof(s));
	EXPECT_EQ(-EBADMSG, ipd_batch_parse(b, len - 16, 65520, &seq, sink_deliver, &s));
	EXPECT_EQ(2u, s.n);
	seq = 0;
	EXPECT_EQ(-EBADMSG, ipd_batch_parse(b, len - 8, 65520, &seq, sink_deliver, &s));
}

TEST(batch_parse_checksum_offload_records)
{
	static uint8_t b[4096];
	struct ipd_rec_hdr h = { .len = 1000, .flags = IPD_REC_F_CSUM, .seq = 5,
				 .csum_start = 20, .csum_offset = 16 };	/* TCP */
	struct sink s = { 0 };
	uint32_t seq = 5;

	ipd_rec_put_hdr(b, &h);
	ip4(b + IPD_REC_HDR, 1000, 1);
	h.seq = 6;
	h.csum_start = 20;
	h.csum_offset = 6;					/* UDP */
	h.len = 998;		/* ends exactly at the checksum field + 2 = 28 .. ok */
	ipd_rec_put_hdr(b + ipd_rec_size(1000), &h);
	ip4(b + ipd_rec_size(1000) + IPD_REC_HDR, 998, 2);
	ASSERT_EQ(2, ipd_batch_parse(b, ipd_rec_size(1000) + ipd_rec_size(998), 65520, &seq,
				     sink_deliver, &s));
	EXPECT_EQ(0, s.bad);
	EXPECT_EQ(7u, seq);
}

TEST(batch_parse_fuzz_never_delivers_garbage)
{
	static uint8_t b[8192];
	struct sink s = { 0 };

	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)(rnd() % sizeof(b)) & ~(size_t)15;
		uint32_t seq = (uint32_t)(rnd() % 3);

		for (size_t k = 0; k < len; k++)
			b[k] = (uint8_t)rnd();
		if (i & 1) {	/* a plausible first header */
			uint32_t l = (uint32_t)(20 + rnd() % 200);

			ipd_rec_put(b, l, seq);
			if (i & 2)
				ip4(b + IPD_REC_HDR, l, 0);
		}
		ipd_batch_parse(b, len, 65520, &seq, sink_deliver, &s);
	}
	EXPECT_EQ(0, s.bad);
	EXPECT_LT(0u, s.n);	/* the plausible ones did get through */
}

TEST(batch_skip_at_ring_end)
{
	const uint64_t R = 1 << 20;

	EXPECT_EQ(0, ipd_batch_skip(0, 4096, R));
	EXPECT_EQ(0, ipd_batch_skip(R - 4096, 4096, R));		/* ends exactly at the end */
	EXPECT_EQ(4096, ipd_batch_skip(R - 4096, 4112, R));	/* does not fit: starts at 0 */
	EXPECT_EQ(0, ipd_batch_skip(5 * R, R, R));
	EXPECT_EQ(16, ipd_batch_skip(3 * R - 16, 32, R));
	EXPECT_EQ(-1, ipd_batch_skip(0, 0, R));
	EXPECT_EQ(-1, ipd_batch_skip(0, 17, R));
	EXPECT_EQ(-1, ipd_batch_skip(0, R + 16, R));
	EXPECT_EQ(-1, ipd_batch_skip(8, 16, R));
}

TEST(ip_check)
{
	uint8_t p[100];

	ip4(p, 100, 0);
	EXPECT_EQ(0, ipd_ip_check(p, 100));
	EXPECT_EQ(-EBADMSG, ipd_ip_check(p, 99));
	EXPECT_EQ(-EBADMSG, ipd_ip_check(p, 19));
	memset(p, 0, sizeof(p));
	p[0] = 0x60;
	p[5] = 60;
	EXPECT_EQ(0, ipd_ip_check(p, 100));
	EXPECT_EQ(-EBADMSG, ipd_ip_check(p, 101));
	p[0] = 0x00;
	EXPECT_EQ(-EBADMSG, ipd_ip_check(p, 100));
}

TEST(icmp_unreachable)
{
	uint8_t orig[200], out[600];
	size_t n;
	uint32_t from = 0x0100002b;	/* 43.0.0.1 as bytes 0x2b,0,0,1 in memory order */

	ip4(orig, sizeof(orig), 0);
	orig[9] = 6;				/* TCP */
	memcpy(orig + 12, "\x0a\x2b\x00\x01", 4);
	memcpy(orig + 16, "\x0a\x2b\x00\x09", 4);
	n = ipd_icmp_unreach(out, sizeof(out), from, orig, sizeof(orig), 1);
	ASSERT_EQ(20u + 8 + 28, n);
	EXPECT_EQ(0, ipd_ip_check(out, n));
	EXPECT_EQ(0, ipd_csum(out, 20));		/* header checksum verifies */
	EXPECT_EQ(0, ipd_csum(out + 20, n - 20));	/* ICMP checksum verifies */
	EXPECT_EQ(3, out[20]);
	EXPECT_EQ(1, out[21]);
	EXPECT_EQ(0, memcmp(out + 16, orig + 12, 4));	/* back to the sender */
	EXPECT_EQ(0, memcmp(out + 28, orig, 28));	/* quotes header + 8 bytes */
	/* never about an ICMP error, a later fragment, a broadcast source */
	orig[9] = 1;
	orig[20] = 3;
	EXPECT_EQ(0u, ipd_icmp_unreach(out, sizeof(out), from, orig, sizeof(orig), 1));
	orig[20] = 8;				/* echo request: answered */
	EXPECT_LT(0u, ipd_icmp_unreach(out, sizeof(out), from, orig, sizeof(orig), 1));
	orig[7] = 1;				/* fragment offset 8 */
	EXPECT_EQ(0u, ipd_icmp_unreach(out, sizeof(out), from, orig, sizeof(orig), 1));
	orig[7] = 0;
	memcpy(orig + 12, "\xff\xff\xff\xff", 4);
	EXPECT_EQ(0u, ipd_icmp_unreach(out, sizeof(out), from, orig, sizeof(orig), 1));
	memcpy(orig + 12, "\xe0\x00\x00\x01", 4);
	EXPECT_EQ(0u, ipd_icmp_unreach(out, sizeof(out), from, orig, sizeof(orig), 1));
	EXPECT_EQ(0u, ipd_icmp_unreach(out, 100, from, orig, sizeof(orig), 1));
}

TEST_HARNESS_MAIN
