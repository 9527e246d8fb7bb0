/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bodies of the cases of fi_cases.h that move messages: tagged sizes above
 * 1 MiB, an inject flood beyond the NIC's credits, Debian's fi_pingpong.
 */
#ifndef FI_CASES_XFER_H
#define FI_CASES_XFER_H

#ifndef FI_CASES_H
#error "fi_cases.h includes fi_cases-xfer.h"
#endif

/*
 * Message k of the inject flood: its length, and how it is sent (an
 * fi_tsend with context k + 1 every fifth, fi_tinjectdata with k as CQ
 * data every third of the others, else fi_tinject); all on one tag, so
 * receives match in sending order.
 */
#define INJ_FLOOD_N	3000
#define INJ_FLOOD_TAG	0x7000ull
#define INJ_FLOOD_SLOT	64
static inline int inj_flood_is_send(uint32_t k)
{
	return k % 5 == 4;
}

static inline size_t inj_flood_len(uint32_t k)
{
	return k % 33;	/* 0 .. 32 bytes: every inject size */
}

static inline int inj_flood_has_data(uint32_t k)
{
	return !inj_flood_is_send(k) && k % 3 == 1;
}

/* Receives for messages from .. to - 1, each in its slot of rbuf, context k + 1. */
static inline int inj_flood_post(FIXTURE_DATA(fi) *self, uint32_t from, uint32_t to)
{
	for (uint32_t k = from; k < to; k++) {
		ssize_t ret = fi_trecv(self->ep, self->rbuf + (size_t)k * INJ_FLOOD_SLOT,
				       INJ_FLOOD_SLOT, NULL, self->peer, INJ_FLOOD_TAG, 0,
				       (void *)(uintptr_t)(k + 1));

		if (ret)
			return (int)ret;
	}
	return 0;
}

/* Completion e is the k-th, with message k's bytes and CQ data; 0 or -1. */
static inline int inj_flood_check(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
				  const struct fi_cq_tagged_entry *e, uint32_t k)
{
	size_t len = inj_flood_len(k);
	const uint8_t *b = self->rbuf + (size_t)k * INJ_FLOOD_SLOT;

	if ((uintptr_t)e->op_context != k + 1 || e->len != len ||
	    exa_check(b, len, k, 0) ||
	    !!(e->flags & FI_REMOTE_CQ_DATA) != inj_flood_has_data(k) ||
	    (inj_flood_has_data(k) && e->data != k)) {
		TH_LOG("completion %u: receive %zu, %zu bytes (want %zu), data %s %" PRIu64,
		       k, (size_t)(uintptr_t)e->op_context - 1, (size_t)e->len, len,
		       (e->flags & FI_REMOTE_CQ_DATA) ? "yes" : "no", (uint64_t)e->data);
		return -1;
	}
	return 0;
}

/* Send completion e: a send's, the first for it; 0 or -1. */
static inline int inj_flood_send_done(struct __test_metadata *_metadata, uint8_t *seen,
				      const struct fi_cq_tagged_entry *e)
{
	uintptr_t k = (uintptr_t)e->op_context - 1;

	if (k >= INJ_FLOOD_N || !inj_flood_is_send((uint32_t)k) || seen[k] ||
	    !(e->flags & FI_SEND)) {
		TH_LOG("send completion with context %p, flags %#" PRIx64 ": %s", e->op_context,
		       (uint64_t)e->flags, k < INJ_FLOOD_N && seen[k] ? "twice" : "no such send");
		return -1;
	}
	seen[k] = 1;
	return 0;
}

/*
 * More injects than the NIC takes before the receiver reads (EXTOLL: 768
 * VELO messages; the rest wait in the provider), some of them behind a
 * plain send: each arrives once, in order, with its bytes and CQ data.
 * The first 1000 find their receive posted; the others arrive while the
 * receiver progresses without receives and wait as unexpected messages.
 */
static inline void fi_test_inject_flood(struct __test_metadata *_metadata,
					FIXTURE_DATA(fi) *self)
{
	struct fi_cq_tagged_entry e;
	uint32_t k, sends = 0, done = 0;
	int64_t end;

	static uint8_t seen[INJ_FLOOD_N];

	fi_open_all(_metadata, self, FI_AV_TABLE);
	ASSERT_LE((size_t)INJ_FLOOD_N * INJ_FLOOD_SLOT, (size_t)MAX_SIZE);
	memset(seen, 0, sizeof(seen));
	if (self->rank == 1)
		ASSERT_EQ(0, inj_flood_post(self, 0, 1000));
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		for (k = 0; k < INJ_FLOOD_N; k++) {
			uint8_t *b = self->sbuf + (size_t)k * INJ_FLOOD_SLOT;
			size_t len = inj_flood_len(k);
			ssize_t ret;

			end = exa_clock_ns() + FI_TMO;
			exa_fill(b, len, k, 0);
			do {
				if (inj_flood_is_send(k))
					ret = fi_tsend(self->ep, b, len, NULL, self->peer,
						       INJ_FLOOD_TAG, (void *)(uintptr_t)(k + 1));
				else if (inj_flood_has_data(k))
					ret = fi_tinjectdata(self->ep, b, len, k, self->peer,
							     INJ_FLOOD_TAG);
				else
					ret = fi_tinject(self->ep, b, len, self->peer,
							 INJ_FLOOD_TAG);
				while (fi_cq_read(self->cq, &e, 1) == 1) {
					ASSERT_EQ(0, inj_flood_send_done(_metadata, seen, &e));
					done++;
				}
			} while (ret == -FI_EAGAIN && exa_clock_ns() < end);
			ASSERT_EQ(0, ret);
			if (inj_flood_is_send(k))
				sends++;	/* its buffer stays until it completes */
			else
				memset(b, 0xee, len);	/* an inject's is ours again */
		}
		while (done < sends) {
			ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
			ASSERT_EQ(0, inj_flood_send_done(_metadata, seen, &e));
			done++;
		}
		/* every send completed once, and nothing else completed */
		EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
		return;		/* the teardown's barrier waits for the receiver */
	}
	usleep(1000000);	/* the NIC fills up, the rest waits at the sender */
	for (k = 0; k < 1000; k++) {		/* into the posted receives */
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(0, inj_flood_check(_metadata, self, &e, k));
	}
	/* progress for 0.5 s without receives: what comes now waits unexpected */
	for (end = exa_clock_ns() + SEC / 2; exa_clock_ns() < end;)
		ASSERT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
	ASSERT_EQ(0, inj_flood_post(self, 1000, INJ_FLOOD_N));
	for (k = 1000; k < INJ_FLOOD_N; k++) {
		ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
		ASSERT_EQ(0, inj_flood_check(_metadata, self, &e, k));
	}
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
}

/* Debian's fi_pingpong between the two nodes (over the management network
 * for its own setup), msg and tagged, eager and rendezvous sizes. */
static inline void fi_test_pingpong(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self)
{
	static const char *const runs[] = {
		"-S 64 -I 100 -c -m msg", "-S 4096 -I 50 -c -m tagged", "-S 65536 -I 10 -c",
	};
	char cmd[512];
	unsigned int r;

	if (access("/usr/bin/fi_pingpong", X_OK))
		SKIP_TEST("no fi_pingpong in the image");
	for (r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		unsigned int port = 47800 + r;
		struct in_addr srv = { .s_addr = self->oob.peers[0] };
		int status;

		ASSERT_EQ(0, oob_barrier(&self->oob));
		if (self->rank == 0) {
			/* the server in the background; the client starts once
			 * its out-of-band port listens */
			snprintf(cmd, sizeof(cmd),
				 "rm -f /tmp/fipp_%u.rc; (timeout 120 fi_pingpong -p %s -e rdm -B %u "
				 "%s > /tmp/fipp_%u.txt 2>&1; echo $? > /tmp/fipp_%u.rc) "
				 ">/dev/null 2>&1 &", r, FI_TEST_PROV, port, runs[r], r, r);
			ASSERT_EQ(0, exa_system("%s", cmd));
			EXPECT_EQ(0, exa_system("i=0; until cat /proc/net/tcp /proc/net/tcp6 | "
						"grep -q ':%04X [0:]*:0000 0A'; do i=$((i+1)); "
						"[ $i -gt 600 ] && exit 1; sleep 0.05; done", port));
			ASSERT_EQ(0, oob_barrier(&self->oob));
			snprintf(cmd, sizeof(cmd),
				 "i=0; until [ -s /tmp/fipp_%u.rc ]; do i=$((i+1)); "
				 "[ $i -gt 2600 ] && exit 124; sleep 0.05; done; exit $(cat /tmp/fipp_%u.rc)",
				 r, r);
		} else {
			ASSERT_EQ(0, oob_barrier(&self->oob));
			snprintf(cmd, sizeof(cmd),
				 "timeout 120 fi_pingpong -p %s -e rdm -P %u %s %s "
				 "> /tmp/fipp_%u.txt 2>&1", FI_TEST_PROV, port, runs[r], inet_ntoa(srv), r);
		}
		status = exa_system("%s", cmd);
		if (status) {
			TH_LOG("'%s' exited %d:", cmd, status);
			exa_system("sed 's/^/#   /' /tmp/fipp_%u.txt", r);
		}
		EXPECT_EQ(0, status);
		if (self->rank == 1) {
			EXPECT_EQ(0, exa_system("grep -q 'usec/xfer' /tmp/fipp_%u.txt", r));
			exa_system("sed 's/^/# /' /tmp/fipp_%u.txt", r);
		}
	}
}

/* Above 1 MiB up to 16 MiB (rendezvous, several RDMA blocks and pages,
 * odd lengths), both ways, every byte checked, nothing written past the
 * announced length.  A few sizes only: TCG moves a few hundred MB/s. */
static inline void fi_test_tagged_big(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self)
{
	static const size_t sizes[] = { (1u << 20) + 1, (3u << 20) + 4097, 8u << 20,
					 (16u << 20) - 3, 16u << 20 };
	const size_t cap = 16u << 20;
	struct fi_cq_tagged_entry e;
	uint8_t *buf = malloc(cap + 64);
	unsigned int k;
	int sender;

	ASSERT_NE(NULL, buf);
	fi_open_all(_metadata, self, FI_AV_TABLE);
	for (sender = 0; sender < 2; sender++) {
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t len = sizes[k];
			uint64_t tag = 0x16000 + k * 2 + (uint64_t)sender;

			if (self->rank == sender) {
				fill(buf, len, tag);
				ASSERT_EQ(0, fi_tsend(self->ep, buf, len, NULL, self->peer, tag, buf));
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
				EXPECT_EQ(buf, e.op_context);
				EXPECT_EQ(FI_SEND | FI_TAGGED, e.flags & (FI_SEND | FI_TAGGED));
			} else {
				memset(buf, 0xee, cap + 64);
				ASSERT_EQ(0, fi_trecv(self->ep, buf, cap, NULL, FI_ADDR_UNSPEC, tag, 0,
						      buf));
				ASSERT_EQ(0, wait_comp(self->cq, &e, NULL));
				EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags & (FI_RECV | FI_TAGGED));
				EXPECT_EQ(tag, e.tag);
				ASSERT_EQ(len, e.len);
				ASSERT_EQ(0, check_any(buf, len, tag));
				if (len < cap)
					ASSERT_EQ(0xee, buf[len]);
				ASSERT_EQ(0xee, buf[cap]);
			}
		}
	}
	free(buf);
}

#endif
