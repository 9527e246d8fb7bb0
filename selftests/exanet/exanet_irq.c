// SPDX-License-Identifier: GPL-2.0
/*
 * Interrupts (tests.list: nodes = 2): a process sleeping in poll() / epoll
 * on /dev/exanet0 wakes when a message lands in its armed mailbox (sent by
 * the other node or by another process of its own node) or when an RDMA
 * notification / completion for its rank is written; timeouts, the race
 * rule (an event before the arm is not reported), one-shot arming, a
 * process cannot arm another file's interfaces, close() wakes a sleeper,
 * the counters in sysfs and /proc/interrupts, and the wake-up latency
 * (TAP comment).  Everything skips on an NI without interrupts, except
 * no_interrupts_* which runs only there (-global exanet.msix=off).
 */
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <time.h>

#include "exa_rdma.h"

#define RECV_TMO (10 * SEC)

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static long irq_vectors(void)
{
	return exa_sysfs_long("irq_vectors");
}

/* Lines of /proc/interrupts naming a vector of exanet0. */
static int proc_interrupt_lines(long *total)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen("/proc/interrupts", "re");

	*total = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		long v;

		if (!strstr(line, "exanet0-ev"))
			continue;
		n++;
		strtol(p, &end, 10);		/* "NN:" */
		p = end + 1;
		for (;;) {			/* one count per CPU */
			v = strtol(p, &end, 10);
			if (end == p)
				break;
			*total += v;
			p = end;
		}
	}
	fclose(f);
	return n;
}

/* Raw arm: 0 or -errno; fills *out. */
static int arm_raw(int fd, uint32_t flags, uint64_t mask, struct exanet_event_arm *out)
{
	struct exanet_event_arm a = { .flags = flags, .mbox_mask = mask };

	if (ioctl(fd, EXANET_IOC_EVENT_ARM, &a) < 0)
		return -errno;
	if (out)
		*out = a;
	return 0;
}

/* poll() on fd: the revents, 0 on timeout, -errno; *ms = time slept. */
static int poll_fd(int fd, int timeout_ms, int64_t *ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int64_t t0 = now_ns();
	int n = poll(&p, 1, timeout_ms);

	if (ms)
		*ms = (now_ns() - t0) / MS;
	if (n < 0)
		return -errno;
	return n ? p.revents : 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* ------------------------------------------------------------ fixture */

FIXTURE(irq) {
	struct oob oob;
	int rank, peer_rank;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
	struct endpoint_addr me, peer;
};

FIXTURE_SETUP(irq)
{
	struct endpoint_addr all[2];
	int have[2], mine;

	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs 2 ranks");
	self->peer_rank = 1 - self->rank;
	OPEN_DEV_OR_SKIP(&self->dev);
	mine = irq_vectors() > 0;
	ASSERT_EQ(0, oob_allgather(&self->oob, &mine, have, sizeof(mine)));
	ASSERT_EQ(0, exanet_pkt_alloc(self->dev, &self->pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 64, &self->mb));
	self->me.node = exanet_node_id(self->dev);
	self->me.mbox = exanet_mbox_id(self->mb);
	ASSERT_EQ(0, oob_allgather(&self->oob, &self->me, all, sizeof(self->me)));
	self->peer = all[self->peer_rank];
	if (!have[0] || !have[1]) {
		if (strstr(_metadata->name, "no_interrupts"))
			return;
		SKIP_TEST("NI without interrupts (irq_vectors 0)");
	}
	if (strstr(_metadata->name, "no_interrupts"))
		SKIP_TEST("the NI has interrupts (boot with -global exanet.msix=off)");
}

FIXTURE_TEARDOWN(irq)
{
	oob_barrier(&self->oob);
	if (self->dev)
		exanet_close(self->dev);
	oob_fini(&self->oob);
}

static void send_to(struct __test_metadata *_metadata, struct exanet_pkt *pkt,
		    const struct endpoint_addr *to, uint32_t seq)
{
	uint8_t buf[48];

	exa_make_msg(buf, sizeof(buf), 0, seq);
	ASSERT_EQ(0, exanet_send_wait(pkt, to->node, to->mbox, buf, sizeof(buf), 10 * SEC, NULL));
}

static void recv_seq(struct __test_metadata *_metadata, struct exanet_mbox *mb, uint32_t seq)
{
	uint8_t buf[EXANET_MAX_PAYLOAD];
	uint32_t src, s;

	ASSERT_EQ(48, exanet_recv_wait(mb, buf, sizeof(buf), NULL, RECV_TMO));
	ASSERT_EQ(0, exa_parse_msg(buf, 48, &src, &s));
	ASSERT_EQ(seq, s);
}

TEST_F(irq, vectors_in_sysfs_and_proc_interrupts)
{
	long total0, total1, count0;
	int lines;

	ASSERT_LE(1, irq_vectors());
	ASSERT_GE(EXANET_NUM_IRQ_VECTORS, irq_vectors());
	lines = proc_interrupt_lines(&total0);
	ASSERT_EQ(irq_vectors(), lines);
	ASSERT_LE(0, exa_sysfs_long("irq_count"));
	ASSERT_LE(0, exa_sysfs_long("irq_raised"));
	ASSERT_EQ(0, exa_sysfs_long("irq_armed"));
	count0 = exa_sysfs_long("irq_count");
	/* one interrupt through a loopback message into the armed mailbox */
	ASSERT_EQ(0, exanet_event_arm(self->dev));
	ASSERT_EQ(1, exa_sysfs_long("irq_armed"));
	send_to(_metadata, self->pkt, &self->me, 1);
	ASSERT_EQ(POLLIN, poll_fd(exanet_dev_fd(self->dev), 5000, NULL));
	recv_seq(_metadata, self->mb, 1);
	ASSERT_EQ(0, exa_sysfs_long("irq_armed"));
	ASSERT_LT(count0, exa_sysfs_long("irq_count"));
	ASSERT_EQ(lines, proc_interrupt_lines(&total1));
	ASSERT_LT(total0, total1);
	TH_LOG("%d vectors, /proc/interrupts total %ld -> %ld", lines, total0, total1);
}

/*
 * Each rank in turn sleeps (rank 0 in poll(), rank 1 in epoll_wait()) on
 * its armed mailbox; the other sends 200 ms later.
 */
TEST_F(irq, remote_message_wakes_poll_and_epoll)
{
	int fd = exanet_dev_fd(self->dev), turn;

	for (turn = 0; turn < 2; turn++) {
		if (self->rank == turn) {
			int64_t t0, ms;
			int rv;

			ASSERT_EQ(0, exanet_event_arm(self->dev));
			ASSERT_EQ(0, exanet_mbox_pending(self->mb));
			ASSERT_EQ(0, poll_fd(fd, 0, NULL));	/* nothing yet */
			OOB_SYNC(&self->oob);
			t0 = now_ns();
			if (turn == 0) {
				rv = poll_fd(fd, 20000, NULL);
				ASSERT_EQ(POLLIN, rv);
			} else {
				struct epoll_event ev = { .events = EPOLLIN }, out;
				int ep = epoll_create1(EPOLL_CLOEXEC);

				ASSERT_LE(0, ep);
				ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
				ASSERT_EQ(1, epoll_wait(ep, &out, 1, 20000));
				ASSERT_EQ(EPOLLIN, out.events);
				close(ep);
			}
			ms = (now_ns() - t0) / MS;
			/* woken by the message (the clocks of two nodes cannot
			 * be compared: the queue was empty before, not now) */
			ASSERT_EQ(1, exanet_mbox_pending(self->mb));
			recv_seq(_metadata, self->mb, 100 + turn);
			/* level: readable until the next arm, which clears it */
			ASSERT_EQ(POLLIN, poll_fd(fd, 0, NULL));
			ASSERT_EQ(0, exanet_event_arm(self->dev));
			ASSERT_EQ(0, poll_fd(fd, 0, NULL));
			TH_LOG("rank %d woke after %lld ms", self->rank, (long long)ms);
		} else {
			OOB_SYNC(&self->oob);
			usleep(200000);
			send_to(_metadata, self->pkt, &self->peer, 100 + turn);
		}
		OOB_SYNC(&self->oob);
	}
}

/*
 * Another process of the same node sends 200 ms later; the parent sleeps
 * from before the send (CLOCK_MONOTONIC stamp in the message) until after.
 */
TEST_F(irq, local_message_from_other_process_wakes_poll)
{
	struct endpoint_addr to = self->me;
	int64_t t0, t1, stamp;
	pid_t pid;

	ASSERT_EQ(0, exanet_event_arm(self->dev));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct exanet_dev *d;
		struct exanet_pkt *p;

		if (exanet_open(NULL, &d) || exanet_pkt_alloc(d, &p))
			_exit(2);
		usleep(200000);
		stamp = now_ns();
		_exit(exanet_send_wait(p, to.node, to.mbox, &stamp, sizeof(stamp),
				       10 * SEC, NULL) ? 3 : 0);
	}
	t0 = now_ns();
	ASSERT_EQ(0, exanet_mbox_pending(self->mb));
	ASSERT_EQ(POLLIN, poll_fd(exanet_dev_fd(self->dev), 20000, NULL));
	t1 = now_ns();
	ASSERT_EQ((ssize_t)sizeof(stamp), exanet_recv(self->mb, &stamp, sizeof(stamp), NULL));
	ASSERT_LT(t0, stamp);
	ASSERT_LT(stamp, t1);
	ASSERT_EQ(0, exa_wait_child(pid, 20000));
}

TEST_F(irq, timeout_returns_zero_without_event)
{
	int64_t t0 = now_ns(), ms;

	ASSERT_EQ(0, exanet_event_wait(self->dev, 300));
	ms = (now_ns() - t0) / MS;
	ASSERT_LE(290, ms);
	ASSERT_GT(5000, ms);
	ASSERT_EQ(0, poll_fd(exanet_dev_fd(self->dev), 0, NULL));
	ASSERT_EQ(0, exanet_mbox_pending(self->mb));
	/* -1 is "no timeout" for poll, 0 polls once */
	ASSERT_EQ(0, exanet_event_wait(self->dev, 0));
}

/*
 * The race rule: a message that landed before the arm wakes nobody, but
 * the queue has it; after an arm, the next message wakes.
 */
TEST_F(irq, event_before_arm_not_reported_queue_has_it)
{
	int fd = exanet_dev_fd(self->dev);
	struct exanet_event_arm a;
	int64_t ms;

	send_to(_metadata, self->pkt, &self->me, 1);
	ASSERT_EQ(0, exanet_event_wait(self->dev, 300));	/* not reported */
	ASSERT_EQ(1, exanet_mbox_pending(self->mb));		/* but there */
	recv_seq(_metadata, self->mb, 1);
	/* armed now (by that wait): the next message is an event */
	send_to(_metadata, self->pkt, &self->me, 2);
	ASSERT_EQ(POLLIN, poll_fd(fd, 5000, &ms));
	/* the next arm tells that one source fired since the previous arm,
	 * and exanet_event_wait() reports such an event without sleeping */
	ASSERT_EQ(0, arm_raw(fd, EXANET_EVENT_ALL_MBOX, 0, &a));
	ASSERT_EQ(1, a.events);
	ASSERT_EQ(1ull << self->me.mbox, a.mbox_mask);
	ASSERT_EQ(EXANET_RDMA_NO_RANK, a.rank);
	send_to(_metadata, self->pkt, &self->me, 3);
	ASSERT_EQ(1, exanet_event_wait(self->dev, 0));
	recv_seq(_metadata, self->mb, 2);
	recv_seq(_metadata, self->mb, 3);
}

/* One arm, three messages: one interrupt; two armed mailboxes: two. */
TEST_F(irq, one_shot_per_armed_source)
{
	int fd = exanet_dev_fd(self->dev);
	struct exanet_mbox *mb2;
	struct endpoint_addr to2;
	struct exanet_event_arm a;
	long raised0, wake0;
	int i;

	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 16, &mb2));
	to2.node = self->me.node;
	to2.mbox = exanet_mbox_id(mb2);
	raised0 = exa_sysfs_long("irq_raised");
	wake0 = exa_sysfs_long("irq_wakeups");
	/* an explicit mask arms exactly those mailboxes */
	ASSERT_EQ(0, arm_raw(fd, 0, 1ull << self->me.mbox, &a));
	ASSERT_EQ(1ull << self->me.mbox, a.mbox_mask);
	ASSERT_EQ(1, exa_sysfs_long("irq_armed"));
	ASSERT_EQ(0, arm_raw(fd, EXANET_EVENT_ALL_MBOX, 0, &a));
	ASSERT_EQ((1ull << self->me.mbox) | (1ull << to2.mbox), a.mbox_mask);
	for (i = 0; i < 3; i++)
		send_to(_metadata, self->pkt, &self->me, 10 + i);
	ASSERT_EQ(POLLIN, poll_fd(fd, 5000, NULL));
	ASSERT_EQ(raised0 + 1, exa_sysfs_long("irq_raised"));
	send_to(_metadata, self->pkt, &to2, 20);
	ASSERT_EQ(raised0 + 2, exa_sysfs_long("irq_raised"));
	send_to(_metadata, self->pkt, &to2, 21);
	ASSERT_EQ(raised0 + 2, exa_sysfs_long("irq_raised"));
	/* both interrupts reach the handler (asynchronously) */
	for (i = 0; i < 100 && exa_sysfs_long("irq_wakeups") < wake0 + 2; i++)
		usleep(10000);
	ASSERT_EQ(wake0 + 2, exa_sysfs_long("irq_wakeups"));
	ASSERT_EQ(0, arm_raw(fd, EXANET_EVENT_ALL_MBOX, 0, &a));
	ASSERT_EQ(2, a.events);
	for (i = 0; i < 3; i++)
		recv_seq(_metadata, self->mb, 10 + i);
	recv_seq(_metadata, mb2, 20);
	recv_seq(_metadata, mb2, 21);
	ASSERT_EQ(0, exanet_mbox_free(mb2));
	/* the freed mailbox is no longer armed: one source left */
	ASSERT_EQ(1, exa_sysfs_long("irq_armed"));
}

/* Every malformed or foreign request is refused, nothing is armed. */
TEST_F(irq, bad_arm_requests_and_foreign_interfaces_refused)
{
	int fd = exanet_dev_fd(self->dev), fd2, fd3;
	struct exanet_mbox_alloc ma = { .nslots = 16 };
	struct exanet_event_arm a;
	pid_t pid;
	int st;

	/* a second file of the same process, with its own mailbox */
	fd2 = open(EXANET_DEFAULT_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, ioctl(fd2, EXANET_IOC_MBOX_ALLOC, &ma));
	ASSERT_EQ(-EACCES, arm_raw(fd, 0, 1ull << ma.mbox, NULL));
	ASSERT_EQ(-EACCES, arm_raw(fd, 0, (1ull << ma.mbox) | (1ull << self->me.mbox), NULL));
	/* not allocated: mailbox 63 (we hold at most a few) */
	ASSERT_EQ(-EINVAL, arm_raw(fd, 0, 1ull << 63, NULL));
	ASSERT_EQ(-EINVAL, arm_raw(fd, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, arm_raw(fd, 0x4, 0, NULL));
	ASSERT_EQ(-EINVAL, arm_raw(fd, EXANET_EVENT_ALL_MBOX | 0x80000000u, 0, NULL));
	ASSERT_EQ(-EINVAL, arm_raw(fd, EXANET_EVENT_ALL_MBOX, 1ull << self->me.mbox, NULL));
	memset(&a, 0, sizeof(a));
	a.flags = EXANET_EVENT_ALL_MBOX;
	a.reserved = 1;
	ASSERT_EQ(-1, ioctl(fd, EXANET_IOC_EVENT_ARM, &a));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-1, ioctl(fd, EXANET_IOC_EVENT_ARM, NULL));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(0, exa_sysfs_long("irq_armed"));
	/* a file with nothing to arm */
	fd3 = open(EXANET_DEFAULT_DEVICE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd3);
	ASSERT_EQ(-ENOENT, arm_raw(fd3, EXANET_EVENT_ALL_MBOX | EXANET_EVENT_RDMA, 0, NULL));
	close(fd3);
	/* a child using the inherited descriptor: refused, poll says POLLERR */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(arm_raw(fd, EXANET_EVENT_ALL_MBOX, 0, NULL) == -EACCES &&
		      poll_fd(fd, 0, NULL) == POLLERR ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* armed on our own mailbox only: a message into the other file's
	 * mailbox does not wake us, one into ours does */
	ASSERT_EQ(0, exanet_event_arm(self->dev));
	{
		struct endpoint_addr other = { self->me.node, ma.mbox };

		send_to(_metadata, self->pkt, &other, 5);
	}
	ASSERT_EQ(0, poll_fd(fd, 300, NULL));
	send_to(_metadata, self->pkt, &self->me, 6);
	ASSERT_EQ(POLLIN, poll_fd(fd, 5000, NULL));
	recv_seq(_metadata, self->mb, 6);
	close(fd2);
}

struct sleeper {
	int fd;
	int rv;
	int64_t ms;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	s->rv = poll_fd(s->fd, 20000, &s->ms);
	return NULL;
}

/*
 * close() by another thread while one sleeps in poll(): the sleeper wakes,
 * everything the file held is given back, nothing is logged.
 */
TEST_F(irq, close_wakes_thread_sleeping_in_poll)
{
	struct sleeper s = { .fd = exanet_dev_fd(self->dev), .rv = -1 };
	long mbox0 = exa_sysfs_long("mbox_in_use") - 1;
	long pkt0 = exa_sysfs_long("pkt_in_use") - 1;
	int kmsg0 = exa_kmsg_bad_lines();
	pthread_t t;
	int i;

	ASSERT_EQ(0, exanet_event_arm(self->dev));
	ASSERT_EQ(1, exa_sysfs_long("irq_armed"));
	ASSERT_EQ(0, pthread_create(&t, NULL, sleeper_main, &s));
	usleep(300000);
	exanet_close(self->dev);
	self->dev = NULL;
	ASSERT_EQ(0, pthread_join(t, NULL));
	/* woken by the close; poll looks the descriptor up again: gone */
	ASSERT_EQ(POLLNVAL, s.rv);
	ASSERT_GT(5000, s.ms);
	/* the last reference went with the poll: all given back */
	for (i = 0; i < 100 && exa_sysfs_long("mbox_in_use") != mbox0; i++)
		usleep(10000);
	ASSERT_EQ(mbox0, exa_sysfs_long("mbox_in_use"));
	ASSERT_EQ(pkt0, exa_sysfs_long("pkt_in_use"));
	ASSERT_EQ(0, exa_sysfs_long("irq_armed"));
	ASSERT_EQ(kmsg0, exa_kmsg_bad_lines());
	TH_LOG("sleeper woke %lld ms after it started, 300 ms after close", (long long)s.ms);
}

/*
 * An RDMA write with a notification wakes the target sleeping on its rank;
 * its local completion wakes the origin; a read's notification and
 * completion wake the reader.
 */
TEST_F_TIMEOUT(irq, rdma_notification_and_completion_wake, 120)
{
	struct rnode n;
	struct rpub me, all[2], *peer;
	struct exanet_rdma_notif rec;
	struct exanet_rdma_opts op = { 0 };
	struct exanet_raddr dst;
	int err, errs[2], fd, slot;
	int64_t ms;

	err = rnode_up(&n, 1 << 20, 1);
	ASSERT_EQ(0, oob_allgather(&self->oob, &err, errs, sizeof(err)));
	if (errs[0] == -ENODEV || errs[1] == -ENODEV) {
		rnode_down(&n);
		SKIP_TEST("no RDMA contexts");
	}
	ASSERT_EQ(0, errs[0]);
	ASSERT_EQ(0, errs[1]);
	rnode_pub(&n, &me);
	ASSERT_EQ(0, oob_allgather(&self->oob, &me, all, sizeof(me)));
	peer = &all[self->peer_rank];
	fd = exanet_dev_fd(n.dev);
	exanet_rdma_notif_reset(&n.rec[REC_IN]);
	exanet_rdma_notif_reset(&n.rec[0]);

	/* rank-only file (no mailbox): arming arms the rank */
	{
		struct exanet_event_arm a;

		ASSERT_EQ(0, arm_raw(fd, EXANET_EVENT_ALL_MBOX | EXANET_EVENT_RDMA, 0, &a));
		ASSERT_EQ(0, a.mbox_mask);
		ASSERT_EQ(me.rank, a.rank);
	}
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		/* target: sleeps until the notification is written */
		ASSERT_EQ(0, exanet_rdma_notif_poll(&n.rec[REC_IN], &rec));
		ASSERT_EQ(POLLIN, poll_fd(fd, 20000, &ms));
		ASSERT_EQ(1, exanet_rdma_notif_poll(&n.rec[REC_IN], &rec));
		ASSERT_EQ(0x77, rec.tag);
		ASSERT_EQ(4096, rec.length);
		ASSERT_EQ(EXANET_RDMA_OP_WRITE, rec.op);
		ASSERT_EQ(-1, rpat_check(n.buf, 4096, 5));
		TH_LOG("target woke by the notification after %lld ms", (long long)ms);
	} else {
		/* origin: armed before posting, sleeps until its completion */
		usleep(200000);
		rpat_fill(n.buf, 4096, 5);
		dst = raddr_at(peer->buf, 0);
		op.notify_va = raddr_at(peer->rec, REC_IN * sizeof(struct exanet_rdma_notif)).va;
		op.tag = 0x77;
		op.lcomp = &n.rec[0];
		slot = exanet_rdma_post_write(n.rdma, n.buf, &dst, 4096, &op);
		ASSERT_LE(0, slot);
		ASSERT_EQ(POLLIN, poll_fd(fd, 20000, &ms));
		ASSERT_EQ(1, exanet_rdma_notif_poll(&n.rec[0], &rec));
		ASSERT_EQ(0, rec.error);
		ASSERT_EQ(0, exanet_rdma_wait(n.rdma, slot, 5 * SEC, NULL));
		TH_LOG("origin woke by its completion after %lld ms", (long long)ms);
	}
	OOB_SYNC(&self->oob);

	/* rank 0 reads back from rank 1 and sleeps until it has the data */
	if (self->rank == 0) {
		struct exanet_raddr src = raddr_at(peer->buf, 0);

		exanet_rdma_notif_reset(&n.rec[1]);
		exanet_rdma_notif_reset(&n.rec[2]);
		memset(n.buf + 8192, 0, 4096);
		ASSERT_EQ(0, exanet_event_arm(n.dev));
		op.notify_va = (uint64_t)(uintptr_t)&n.rec[1];
		op.tag = 0x78;
		op.lcomp = &n.rec[2];
		slot = exanet_rdma_post_read(n.rdma, n.buf + 8192, &src, 4096, &op);
		ASSERT_LE(0, slot);
		ASSERT_EQ(POLLIN, poll_fd(fd, 20000, &ms));
		/* the wake-up came after the data and the notification */
		ASSERT_EQ(1, exanet_rdma_notif_poll(&n.rec[1], &rec));
		ASSERT_EQ(-1, rpat_check(n.buf + 8192, 4096, 5));
		ASSERT_EQ(0, exanet_rdma_wait(n.rdma, slot, 5 * SEC, NULL));
	}
	OOB_SYNC(&self->oob);
	rnode_down(&n);
}

/*
 * Wake-up latency (not an assertion): message sent -> poll() returns.
 *  - local: another process of the node stamps CLOCK_MONOTONIC into each
 *    message, 3 ms after the sleeper answered the previous one (so it is
 *    asleep); the sleeper computes arrival - stamp.
 *  - remote: ping-pong where both sides sleep between messages,
 *    one-way = RTT / 2.
 */
#define LAT_N 200

TEST_F_TIMEOUT(irq, wakeup_latency, 300)
{
	int64_t lat[LAT_N];
	uint8_t buf[EXANET_MAX_PAYLOAD];
	int i, n, r;

	/* local, on every rank */
	{
		struct endpoint_addr to = self->me;
		struct exanet_mbox *back;
		struct endpoint_addr backaddr;
		pid_t pid;

		ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 16, &back));
		backaddr.node = self->me.node;
		backaddr.mbox = exanet_mbox_id(back);
		/* the child sends to our first mailbox, we answer into its own */
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			struct exanet_dev *d;
			struct exanet_pkt *p;
			struct exanet_mbox *m;
			struct endpoint_addr mine;

			if (exanet_open(NULL, &d) || exanet_pkt_alloc(d, &p) ||
			    exanet_mbox_alloc(d, 16, &m))
				_exit(2);
			mine.node = exanet_node_id(d);
			mine.mbox = exanet_mbox_id(m);
			/* tell the parent where to answer */
			if (exanet_send_wait(p, backaddr.node, backaddr.mbox, &mine,
					     sizeof(mine), 10 * SEC, NULL))
				_exit(3);
			for (i = 0; i < LAT_N; i++) {
				int64_t stamp;

				usleep(3000);
				stamp = now_ns();
				if (exanet_send_wait(p, to.node, to.mbox, &stamp, sizeof(stamp),
						     10 * SEC, NULL))
					_exit(4);
				if (exanet_recv_wait(m, buf, sizeof(buf), NULL, 10 * SEC) <= 0)
					_exit(5);
			}
			_exit(0);
		}
		{
			struct endpoint_addr child;

			ASSERT_EQ((ssize_t)sizeof(child),
				  exanet_recv_wait(back, &child, sizeof(child), NULL, 10 * SEC));
			ASSERT_EQ(0, exanet_event_arm(self->dev));
			for (i = 0; i < LAT_N; i++) {
				int64_t stamp;

				while ((n = (int)exanet_recv(self->mb, &stamp, sizeof(stamp), NULL)) == 0) {
					r = exanet_event_wait(self->dev, 10000);
					ASSERT_LE(1, r);
				}
				ASSERT_EQ((int)sizeof(stamp), n);
				lat[i] = now_ns() - stamp;
				ASSERT_EQ(0, exanet_send_wait(self->pkt, child.node, child.mbox, "k", 1,
							      10 * SEC, NULL));
			}
		}
		ASSERT_EQ(0, exa_wait_child(pid, 30000));
		qsort(lat, LAT_N, sizeof(lat[0]), cmp_i64);
		printf("# wake-up latency, local (send -> poll returns, rank %d): median %.1f us, "
		       "min %.1f, p90 %.1f, max %.1f (%d messages)\n", self->rank,
		       lat[LAT_N / 2] / 1e3, lat[0] / 1e3, lat[LAT_N * 9 / 10] / 1e3,
		       lat[LAT_N - 1] / 1e3, LAT_N);
		fflush(stdout);
		ASSERT_EQ(0, exanet_mbox_free(back));
	}
	OOB_SYNC(&self->oob);

	/*
	 * Remote ping-pong, both sides sleeping: rank 0 waits 1 ms before each
	 * ping so that rank 1 is asleep; rank 1 answers at once, and rank 0 is
	 * asleep by then (two arm ioctls after its ping's ACK, against a
	 * wake-up at rank 1).  One-way = RTT / 2, both with a wake-up.
	 */
	ASSERT_EQ(0, exanet_event_arm(self->dev));
	OOB_SYNC(&self->oob);
	for (i = 0; i < LAT_N; i++) {
		int64_t msg = i, t0 = 0;

		if (self->rank == 0) {
			usleep(1000);
			t0 = now_ns();
			ASSERT_EQ(0, exanet_send_wait(self->pkt, self->peer.node, self->peer.mbox,
						      &msg, sizeof(msg), 10 * SEC, NULL));
		}
		while ((n = (int)exanet_recv(self->mb, &msg, sizeof(msg), NULL)) == 0) {
			r = exanet_event_wait(self->dev, 10000);
			ASSERT_LE(1, r);
		}
		ASSERT_EQ((int)sizeof(msg), n);
		ASSERT_EQ(i, msg);
		if (self->rank == 0)
			lat[i] = (now_ns() - t0) / 2;
		else
			ASSERT_EQ(0, exanet_send_wait(self->pkt, self->peer.node, self->peer.mbox,
						      &msg, sizeof(msg), 10 * SEC, NULL));
	}
	if (self->rank == 0) {
		qsort(lat, LAT_N, sizeof(lat[0]), cmp_i64);
		printf("# wake-up latency, remote ping-pong with both sides sleeping "
		       "(one-way = RTT / 2): median %.1f us, "
		       "min %.1f, p90 %.1f (%d round trips)\n",
		       lat[LAT_N / 2] / 1e3, lat[0] / 1e3, lat[LAT_N * 9 / 10] / 1e3, LAT_N);
		fflush(stdout);
	}
}

/* Only on an NI without interrupts (-global exanet.msix=off). */
TEST_F(irq, no_interrupts_arm_eopnotsupp_poll_pollerr)
{
	ASSERT_EQ(0, irq_vectors());
	ASSERT_EQ(-EOPNOTSUPP, exanet_event_arm(self->dev));
	ASSERT_EQ(-EOPNOTSUPP, exanet_event_wait(self->dev, 100));
	ASSERT_EQ(POLLERR, poll_fd(exanet_dev_fd(self->dev), 1000, NULL));
	/* messaging is unaffected */
	send_to(_metadata, self->pkt, &self->me, 1);
	recv_seq(_metadata, self->mb, 1);
}

TEST_HARNESS_MAIN
