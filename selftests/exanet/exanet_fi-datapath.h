/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_fi: the data path under load: no system call on the eager path
 * (seccomp strict), hundreds of eager and rendezvous operations outstanding.
 *
 * Cases of the translation unit of exanet_fi.c: include it only there.
 */
#ifndef EXANET_FI_C
#error "exanet_fi-datapath.h holds cases of exanet_fi.c: include it only there"
#endif

/* The eager data path (fi_tsend, fi_trecv, fi_cq_read) makes no system
 * call: a thread in seccomp strict mode (only read, write, exit and
 * sigreturn; anything else kills the process) exchanges 2000 tagged
 * messages.  The thread warms its malloc arena first and leaves with a raw
 * exit (pthread_exit would make other calls). */
struct strict_arg {
	FIXTURE_DATA(fi) *self;
	volatile int result;	/* 0 ok, 1 entered strict mode, < 0 error */
	volatile unsigned int done;
};

static void *strict_thread(void *p)
{
	struct strict_arg *a = p;
	FIXTURE_DATA(fi) *self = a->self;
	struct fi_cq_tagged_entry e;
	void *warm[256];
	unsigned int i, posted = 0, sent = 0, completed = 0, n = 2000;
	int err = 0;

	/* memory the provider's malloc calls can take without brk/mmap */
	warm[0] = malloc(8u << 20);
	for (i = 1; i < 256; i++)
		warm[i] = malloc(64 + (i % 8) * 32);
	for (i = 0; i < 256; i++)
		free(warm[i]);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) {
		a->result = -1;
		return NULL;
	}
	a->result = 1;
	while (completed < n && !err) {
		ssize_t r;

		if (self->rank == 0 && sent < n) {
			r = fi_tsend(self->ep, self->sbuf + (sent % 64) * 32, 1 + sent % 32, NULL,
				     self->peer, 0x9000 + sent, NULL);
			if (r == 0)
				sent++;
			else if (r != -FI_EAGAIN)
				err = -2;
		}
		if (self->rank == 1 && posted < n && posted < completed + 64) {
			r = fi_trecv(self->ep, self->rbuf + (posted % 64) * 32, 32, NULL,
				     FI_ADDR_UNSPEC, 0x9000 + posted, 0, NULL);
			if (r == 0)
				posted++;
			else if (r != -FI_EAGAIN)
				err = -3;
		}
		r = fi_cq_read(self->cq, &e, 1);
		if (r == 1)
			completed++;
		else if (r != -FI_EAGAIN)
			err = -4;
		a->done = completed;
	}
	a->result = err ? err : 0;
	syscall(SYS_exit, 0);
	return NULL;
}

TEST_F_TIMEOUT(fi, eager_data_path_makes_no_syscalls_seccomp_strict, 300)
{
	struct strict_arg a = { .self = self, .result = 1 };
	pthread_t t;

	/* one heap (the main one) that keeps what is freed and grows in
	 * large steps: the warm-up above covers the whole exchange */
	ASSERT_EQ(1, mallopt(M_ARENA_MAX, 1));
	ASSERT_EQ(1, mallopt(M_MMAP_THRESHOLD, 64 << 20));
	ASSERT_EQ(1, mallopt(M_TRIM_THRESHOLD, 256 << 20));
	fi_open_all(_metadata, self, FI_AV_TABLE);
	memset(self->sbuf, 0x33, 64 * 32);
	OOB_SYNC(&self->oob);
	ASSERT_EQ(0, pthread_create(&t, NULL, strict_thread, &a));
	ASSERT_EQ(0, pthread_join(t, NULL));	/* a system call there kills us all */
	if (a.result)
		TH_LOG("strict thread: result %d after %u completions", a.result, a.done);
	ASSERT_EQ(0, a.result);
	ASSERT_EQ(2000, a.done);
	OOB_SYNC(&self->oob);
}
/*
 * Hundreds of operations outstanding at once, eager and rendezvous mixed:
 * first with every receive posted before the sends, then with every send
 * posted before any receive (all unexpected; the rendezvous ones wait at
 * the sender) and the receives posted in a shuffled order.  Every
 * operation completes exactly once, with its own context, tag, length and
 * bytes.
 */
#define MANY 320

static size_t many_len(unsigned int i)
{
	static const size_t lens[] = { 0, 8, 40, 100, 1000, 1024, 1025, 4096, 20000, 65539, 300000 };

	return lens[(i * 7) % (sizeof(lens) / sizeof(lens[0]))];
}

static void many_round(struct __test_metadata *_metadata, FIXTURE_DATA(fi) *self,
		       uint8_t *sb, uint8_t *rb, size_t *off, int pre_post, uint64_t base)
{
	unsigned int order[MANY], i, done = 0;
	unsigned char seen[MANY] = { 0 };
	struct fi_cq_tagged_entry e;
	int64_t end;

	for (i = 0; i < MANY; i++)
		order[i] = i;
	if (!pre_post) {	/* shuffled receive order */
		uint32_t x = 12345;

		for (i = MANY - 1; i > 0; i--) {
			unsigned int j, t;

			x = x * 1103515245u + 12345u;
			j = (x >> 8) % (i + 1);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
	}
	if (self->rank == 1 && pre_post) {
		for (i = 0; i < MANY; i++) {
			memset(rb + off[i], 0xee, many_len(i) + 1);
			ASSERT_EQ(0, fi_trecv(self->ep, rb + off[i], many_len(i), NULL, self->peer,
					      base + i, 0, (void *)(uintptr_t)(i + 1)));
		}
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 0) {
		for (i = 0; i < MANY; i++) {
			fill(sb + off[i], many_len(i), base + i);
			ASSERT_EQ(0, fi_tsend(self->ep, sb + off[i], many_len(i), NULL, self->peer,
					      base + i, (void *)(uintptr_t)(i + 1)));
		}
	}
	if (!pre_post) {
		/* every send is posted (eager ones delivered or on their way)
		 * before the first receive */
		OOB_SYNC(&self->oob);
		if (self->rank == 1) {
			for (i = 0; i < MANY; i++) {
				unsigned int k = order[i];

				memset(rb + off[k], 0xee, many_len(k) + 1);
				ASSERT_EQ(0, fi_trecv(self->ep, rb + off[k], many_len(k), NULL,
						      self->peer, base + k, 0,
						      (void *)(uintptr_t)(k + 1)));
			}
		}
	}
	end = exanet_now_ns() + 10 * FI_TMO;
	while (done < MANY) {
		unsigned int k;
		int ret = wait_comp(self->cq, &e, NULL);

		if (ret)
			TH_LOG("after %u completions: %d (%s)", done, ret, fi_strerror(-ret));
		ASSERT_EQ(0, ret);
		k = (unsigned int)(uintptr_t)e.op_context - 1;
		ASSERT_GT(MANY, k);
		ASSERT_EQ(0, seen[k]);
		seen[k] = 1;
		done++;
		if (self->rank == 1) {
			EXPECT_EQ(FI_RECV | FI_TAGGED, e.flags & (FI_RECV | FI_TAGGED));
			ASSERT_EQ(base + k, e.tag);
			ASSERT_EQ(many_len(k), e.len);
			ASSERT_EQ(0, check(rb + off[k], many_len(k), base + k));
			ASSERT_EQ(0xee, rb[off[k] + many_len(k)]);
		} else {
			EXPECT_EQ(FI_SEND | FI_TAGGED, e.flags & (FI_SEND | FI_TAGGED));
		}
		ASSERT_GT(end, exanet_now_ns());
	}
	sends_done(_metadata, self, base + MANY);
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq, &e, 1));
}

TEST_F_TIMEOUT(fi, hundreds_outstanding_eager_and_rendezvous_mixed, 900)
{
	size_t off[MANY], total = 0;
	uint8_t *sb, *rb;
	unsigned int i, rndv = 0;

	for (i = 0; i < MANY; i++) {
		off[i] = total;
		total += many_len(i) + 64;
		rndv += many_len(i) > EAGER_MAX;
	}
	ASSERT_LT(MANY / 4, rndv);		/* both kinds, many of each */
	ASSERT_LT(MANY / 4, MANY - rndv);
	sb = malloc(total);
	rb = malloc(total);
	ASSERT_NE(NULL, sb);
	ASSERT_NE(NULL, rb);
	fi_open_all(_metadata, self, FI_AV_TABLE);
	many_round(_metadata, self, sb, rb, off, 1, 0x40000);
	OOB_SYNC(&self->oob);
	many_round(_metadata, self, sb, rb, off, 0, 0x50000);
	free(sb);
	free(rb);
}
