// SPDX-License-Identifier: GPL-2.0
/*
 * FI_ATOMIC of the libfabric provider on the host: the request and answer
 * packets (lib/fi-providers/xfi_proto.c) round trip for every op, datatype
 * and count, and every malformed one is refused (hostile input, random
 * packets never accepted inconsistent); the arithmetic
 * (lib/fi-providers/xfi_atomic_ops.c) against hand-computed values, the
 * op/datatype table, and 4 threads x 100000 fetch-adds losing nothing.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/kselftest_exa.h"
#include "../../lib/fi-providers/xfi_atomic_ops.h"

static const struct xfi_hdr hdr0 = { .src_mbox = 9, .epoch = 0x1234, .seq = 77 };

TEST(request_round_trip_every_op_datatype_count)
{
	uint8_t opnd[XFI_ATOMIC_DATA_MAX], cmp[XFI_ATOMIC_DATA_MAX], pkt[XFI_PKT_MAX];
	unsigned int op, dt, count, i, n = 0;

	for (i = 0; i < sizeof(opnd); i++) {
		opnd[i] = (uint8_t)(i + 1);
		cmp[i] = (uint8_t)(0x80 + i);
	}
	for (op = 0; op < XFI_AOP_LIMIT; op++) {
		for (dt = 0; dt < XFI_ADT_LIMIT; dt++) {
			size_t max = xfi_atomic_max_count(op, dt), size = xfi_atomic_dt_size(dt);

			ASSERT_EQ(XFI_ATOMIC_DATA_MAX / (op >= XFI_AOP_CSWAP ? 2 : 1) / size, max);
			for (count = 1; count <= max; count++) {
				struct xfi_atomic_info a = {
					.addr = 0x7f0012345678ull, .key = 0xabcdef01ull << 8 | 3,
					.cookie = 0xc0c0 + count, .op = op, .datatype = dt,
					.count = count, .size = size,
					.flags = XFI_ATOMIC_FETCH,
					.operand = op == XFI_AOP_ATOMIC_READ ? NULL : opnd,
					.compare = op >= XFI_AOP_CSWAP ? cmp : NULL,
				}, b;
				struct xfi_hdr h;
				size_t plen = xfi_build_atomic_req(pkt, &hdr0, &a);

				ASSERT_LE(plen, (size_t)XFI_PKT_MAX);
				ASSERT_EQ(XFI_PKT_ATOMIC, xfi_parse_hdr(pkt, plen, &h));
				ASSERT_EQ(0, xfi_parse_atomic_req(pkt, plen, &b));
				EXPECT_EQ(a.addr, b.addr);
				EXPECT_EQ(a.key, b.key);
				EXPECT_EQ(a.cookie, b.cookie);
				EXPECT_EQ(op, b.op);
				EXPECT_EQ(dt, b.datatype);
				EXPECT_EQ(count, b.count);
				EXPECT_EQ(size, b.size);
				if (op != XFI_AOP_ATOMIC_READ) {
					ASSERT_EQ(0, memcmp(b.operand, opnd, count * size));
				} else {
					EXPECT_EQ(NULL, b.operand);
				}
				if (op >= XFI_AOP_CSWAP) {
					ASSERT_EQ(0, memcmp(b.compare, cmp, count * size));
				} else {
					EXPECT_EQ(NULL, b.compare);
				}
				/* a byte short or long */
				EXPECT_EQ(-1, xfi_parse_atomic_req(pkt, plen - 1, &b));
				if (plen < XFI_PKT_MAX)
					EXPECT_EQ(-1, xfi_parse_atomic_req(pkt, plen + 1, &b));
				n++;
			}
		}
	}
	TH_LOG("%u requests round-tripped", n);
}

/* Field offsets of struct xfi_atomic_req: op 28, datatype 29, count 30, flags 31. */
TEST(request_fields_out_of_range_refused)
{
	uint8_t opnd[8] = { 1 }, pkt[XFI_PKT_MAX], bad[XFI_PKT_MAX];
	struct xfi_atomic_info a = {
		.addr = 64, .key = 5, .cookie = 1, .op = 2 /* FI_SUM */, .datatype = 7 /* UINT64 */,
		.count = 1, .size = 8, .operand = opnd,
	}, b;
	size_t plen = xfi_build_atomic_req(pkt, &hdr0, &a);

	ASSERT_EQ(0, xfi_parse_atomic_req(pkt, plen, &b));
	memcpy(bad, pkt, plen);
	bad[28] = XFI_AOP_LIMIT;
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, plen, &b));
	memcpy(bad, pkt, plen);
	bad[29] = XFI_ADT_LIMIT;
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, plen, &b));
	memcpy(bad, pkt, plen);
	bad[30] = 0;
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, plen, &b));
	bad[30] = 5;		/* 5 x 8 bytes do not fit */
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, plen, &b));
	memcpy(bad, pkt, plen);
	bad[31] = 0x2;		/* unknown flag */
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, plen, &b));
	memcpy(bad, pkt, plen);
	bad[28] = XFI_AOP_CSWAP;	/* compare op: twice the data, and fetch */
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, plen, &b));
	memcpy(bad, pkt, plen);
	bad[28] = XFI_AOP_ATOMIC_READ;	/* no operands, and fetch */
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, XFI_ATOMIC_REQ_SIZE, &b));
	bad[31] = XFI_ATOMIC_FETCH;
	EXPECT_EQ(0, xfi_parse_atomic_req(bad, XFI_ATOMIC_REQ_SIZE, &b));
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, XFI_ATOMIC_REQ_SIZE - 1, &b));
	EXPECT_EQ(-1, xfi_parse_atomic_req(bad, XFI_PKT_MAX + 1, &b));
}

TEST(answer_round_trip_and_refusals)
{
	uint8_t data[XFI_ATOMIC_DATA_MAX + 8], pkt[XFI_PKT_MAX];
	const uint8_t *d;
	uint32_t cookie;
	int32_t status;
	size_t len, plen, dlen;

	for (len = 0; len < sizeof(data); len++)
		data[len] = (uint8_t)(len * 3);
	for (len = 0; len <= XFI_ATOMIC_DATA_MAX; len++) {
		struct xfi_hdr h;

		plen = xfi_build_atomic_resp(pkt, &hdr0, 0xdead0000 + (uint32_t)len, 0, data, len);
		ASSERT_EQ(XFI_PKT_ATOMIC_RESP, xfi_parse_hdr(pkt, plen, &h));
		ASSERT_EQ(0, xfi_parse_atomic_resp(pkt, plen, &cookie, &status, &d, &dlen));
		EXPECT_EQ(0xdead0000 + (uint32_t)len, cookie);
		EXPECT_EQ(0, status);
		ASSERT_EQ(len, dlen);
		ASSERT_EQ(0, memcmp(d, data, len));
	}
	plen = xfi_build_atomic_resp(pkt, &hdr0, 1, 13 /* FI_EACCES */, NULL, 0);
	ASSERT_EQ(0, xfi_parse_atomic_resp(pkt, plen, &cookie, &status, &d, &dlen));
	EXPECT_EQ(13, status);
	EXPECT_EQ(0u, dlen);
	/* data with an error, a negative status, too much data, too short */
	EXPECT_EQ(-1, xfi_parse_atomic_resp(pkt, plen + 8, &cookie, &status, &d, &dlen));
	plen = xfi_build_atomic_resp(pkt, &hdr0, 1, -5, NULL, 0);
	EXPECT_EQ(-1, xfi_parse_atomic_resp(pkt, plen, &cookie, &status, &d, &dlen));
	plen = xfi_build_atomic_resp(pkt, &hdr0, 1, 0, data, XFI_ATOMIC_DATA_MAX);
	EXPECT_EQ(-1, xfi_parse_atomic_resp(pkt, plen + 1, &cookie, &status, &d, &dlen));
	EXPECT_EQ(-1, xfi_parse_atomic_resp(pkt, XFI_ATOMIC_RESP_SIZE - 1, &cookie, &status, &d,
					    &dlen));
}

TEST(random_packets_never_accepted_inconsistent)
{
	uint8_t pkt[XFI_PKT_MAX];
	unsigned long accepted = 0, i;

	srandom(7);
	for (i = 0; i < 2000000; i++) {
		struct xfi_atomic_info b;
		size_t len = (size_t)random() % (XFI_PKT_MAX + 1), k;

		for (k = 0; k < sizeof(pkt); k++)
			pkt[k] = (uint8_t)random();
		pkt[28] %= XFI_AOP_LIMIT + 1;
		pkt[29] %= XFI_ADT_LIMIT + 1;
		pkt[30] %= 40;
		pkt[31] &= 3;
		if (xfi_parse_atomic_req(pkt, len, &b))
			continue;
		accepted++;
		ASSERT_LT(b.op, (unsigned int)XFI_AOP_LIMIT);
		ASSERT_LT(b.datatype, (unsigned int)XFI_ADT_LIMIT);
		ASSERT_LE((size_t)b.count, xfi_atomic_max_count(b.op, b.datatype));
		ASSERT_LE(1u, b.count);
		if (b.operand)
			ASSERT_TRUE(b.operand + b.count * b.size <= pkt + len);
		if (b.compare)
			ASSERT_TRUE(b.compare + b.count * b.size <= pkt + len);
	}
	TH_LOG("%lu random requests accepted", accepted);
	ASSERT_LT(0, accepted);
}

TEST(op_datatype_table)
{
	/* write form */
	EXPECT_TRUE(xfi_atomic_valid(XFI_KIND_WRITE, FI_SUM, FI_DOUBLE));
	EXPECT_TRUE(xfi_atomic_valid(XFI_KIND_WRITE, FI_BXOR, FI_INT8));
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_WRITE, FI_BXOR, FI_FLOAT));
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_WRITE, FI_LOR, FI_DOUBLE));
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_WRITE, FI_ATOMIC_READ, FI_INT32));
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_WRITE, FI_CSWAP, FI_INT32));
	/* fetch form */
	EXPECT_TRUE(xfi_atomic_valid(XFI_KIND_FETCH, FI_ATOMIC_READ, FI_FLOAT));
	EXPECT_TRUE(xfi_atomic_valid(XFI_KIND_FETCH, FI_ATOMIC_WRITE, FI_UINT16));
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_FETCH, FI_MSWAP, FI_UINT16));
	/* compare form */
	EXPECT_TRUE(xfi_atomic_valid(XFI_KIND_COMPARE, FI_CSWAP_GT, FI_DOUBLE));
	EXPECT_TRUE(xfi_atomic_valid(XFI_KIND_COMPARE, FI_MSWAP, FI_UINT64));
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_COMPARE, FI_MSWAP, FI_DOUBLE));
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_COMPARE, FI_SUM, FI_INT32));
	/* outside the range */
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_WRITE, FI_SUM, FI_LONG_DOUBLE));
	EXPECT_FALSE(xfi_atomic_valid(XFI_KIND_WRITE, FI_ATOMIC_OP_LAST, FI_INT32));
}

TEST(arithmetic_against_hand_computed_values)
{
	int32_t i32[4] = { 5, -3, 7, INT32_MAX }, a32[4] = { 2, -10, 7, 1 }, f32[4];
	uint8_t u8[3] = { 0xf0, 0x0f, 0x00 }, m8[3] = { 0xff, 0xff, 0x0f }, c8[3] = { 0x3c, 0, 0xff };
	double d[2] = { 1.5, -2.0 }, ad[2] = { 2.0, 4.0 }, cd[2] = { 1.5, 1.0 }, fd[2];
	uint64_t u64 = 10, one = 1, f64;

	xfi_atomic_apply(FI_SUM, FI_INT32, 4, i32, a32, NULL, f32);
	EXPECT_EQ(7, i32[0]);
	EXPECT_EQ(-13, i32[1]);
	EXPECT_EQ(14, i32[2]);
	EXPECT_EQ(INT32_MIN, i32[3]);	/* wraps */
	EXPECT_EQ(5, f32[0]);
	EXPECT_EQ(INT32_MAX, f32[3]);
	xfi_atomic_apply(FI_MIN, FI_INT32, 4, i32, a32, NULL, NULL);
	EXPECT_EQ(2, i32[0]);
	EXPECT_EQ(-13, i32[1]);
	xfi_atomic_apply(FI_LXOR, FI_INT32, 2, i32, (int32_t[]){ 0, 3 }, NULL, NULL);
	EXPECT_EQ(1, i32[0]);
	EXPECT_EQ(0, i32[1]);
	/* MSWAP: (a & c) | (old & ~c) */
	xfi_atomic_apply(FI_MSWAP, FI_UINT8, 3, u8, m8, c8, NULL);
	EXPECT_EQ(0xfc, u8[0]);
	EXPECT_EQ(0x0f, u8[1]);
	EXPECT_EQ(0x0f, u8[2]);
	/* CSWAP_LE: swaps where compare <= old */
	xfi_atomic_apply(FI_CSWAP_LE, FI_DOUBLE, 2, d, ad, cd, fd);
	EXPECT_EQ(2.0, d[0]);	/* 1.5 <= 1.5 */
	EXPECT_EQ(-2.0, d[1]);	/* 1.0 > -2.0: left */
	EXPECT_EQ(1.5, fd[0]);
	EXPECT_EQ(-2.0, fd[1]);
	xfi_atomic_apply(FI_PROD, FI_DOUBLE, 2, d, ad, NULL, NULL);
	EXPECT_EQ(4.0, d[0]);
	EXPECT_EQ(-8.0, d[1]);
	xfi_atomic_apply(FI_ATOMIC_READ, FI_UINT64, 1, &u64, NULL, NULL, &f64);
	EXPECT_EQ(10u, u64);
	EXPECT_EQ(10u, f64);
	xfi_atomic_apply(FI_CSWAP, FI_UINT64, 1, &u64, &one, &f64, &f64);
	EXPECT_EQ(1u, u64);
	EXPECT_EQ(10u, f64);
}

#define THREADS 4
#define ADDS 100000
static uint64_t shared_counter;

static void *adder(void *arg)
{
	uint64_t one = 1, old, prev = 0;
	int i, *bad = arg;

	for (i = 0; i < ADDS; i++) {
		xfi_atomic_apply(FI_SUM, FI_UINT64, 1, &shared_counter, &one, NULL, &old);
		if (i && old <= prev)
			*bad = 1;
		prev = old;
	}
	return NULL;
}

TEST(threads_fetch_add_lose_nothing)
{
	pthread_t t[THREADS];
	int bad[THREADS] = { 0 }, i;

	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, adder, &bad[i]));
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, bad[i]);
	}
	EXPECT_EQ((uint64_t)THREADS * ADDS, shared_counter);
}

TEST_HARNESS_MAIN
