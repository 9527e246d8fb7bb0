/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_msg_remote: kernel bypass: a ping-pong between two children in
 * seccomp strict mode (no system call on the data path).
 *
 * Cases of the translation unit of exanet_msg_remote.c: include it only there.
 */
#ifndef EXANET_MSG_REMOTE_C
#error "exanet_msg_remote-bypass.h holds cases of exanet_msg_remote.c: include it only there"
#endif

/*
 * After setup, a child enters seccomp strict mode (only read, write, exit,
 * sigreturn allowed; anything else kills it) and runs a ping-pong with the
 * peer through libexanet.  Surviving proves the data path makes no system
 * call (waits without timeout read no clock).
 */

struct bypass_arg {
	int initiator;
	int to_parent, from_parent;
	volatile uint32_t *progress;	/* shared page: iterations done */
};

/* Runs in a forked child: own device, own interfaces (mappings are not
 * inherited), then strict mode and 500 round trips.  Never returns. */
static int bypass_child(void *arg)
{
	struct bypass_arg *ba = arg;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
	struct endpoint_addr me, peer;
	uint8_t buf[EXANET_MAX_PAYLOAD];
	const volatile struct exanet_mbox_slot *q2;
	uint32_t i, ok = 0;
	char r = '?';

	if (exanet_open(NULL, &dev) || exanet_pkt_alloc(dev, &pkt) ||
	    exanet_mbox_alloc(dev, 64, &mb))
		return 50;
	me.node = exanet_node_id(dev);
	me.mbox = exanet_mbox_id(mb);
	if (write(ba->to_parent, &me, sizeof(me)) != sizeof(me) ||
	    read(ba->from_parent, &peer, sizeof(peer)) != sizeof(peer))
		return 51;
	/* touch the pages now (the first access faults them in) without
	 * consuming anything: the peer's first ping may already be here */
	(void)exanet_mbox_pending(mb);
	(void)exanet_mbox_rx_count(mb);
	(void)exanet_chan_status(pkt, 0);

	/* diagnostics: a second view of our queue, to tell a missing DMA
	 * from a stale mapping if the test ever stalls */
	q2 = mmap(NULL, 64 * EXANET_MBOX_SLOT_SIZE, PROT_READ, MAP_SHARED, exanet_dev_fd(dev),
		  (off_t)EXANET_MMAP_OFFSET(EXANET_MMAP_MBOX_QUEUE, me.mbox));
	if (q2 == MAP_FAILED)
		return 55;
	ba->progress[4] = q2[0].flags;
	ba->progress[1] = 1;	/* stage: set up */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0)
		return 52;
	ba->progress[1] = 2;	/* stage: strict mode */
	/*
	 * No clock here (on a node whose clocksource has no vDSO a clock read
	 * is a system call): waits are bounded by the peer's outcome and by
	 * the parent's timeout instead.
	 */
	for (i = 0; i < 500; i++) {
		int chan = -1;
		ssize_t n = 0;

		if (ba->initiator) {
			exa_fill(buf, 32, 1, i);
			while ((chan = exanet_send(pkt, peer.node, peer.mbox, buf, 32)) == -EAGAIN)
				;
			if (chan < 0) {
				r = 's';
				break;
			}
			ba->progress[1] = 3;	/* stage: ping sent */
			/* wait for the echo; give up if our ping failed */
			while ((n = exanet_recv(mb, buf, sizeof(buf), NULL)) == 0) {
				int st = exanet_chan_state(pkt, (unsigned int)chan);

				ba->progress[2] = (uint32_t)exanet_chan_status(pkt, (unsigned int)chan);
				ba->progress[3] = exanet_mbox_hw_tail(mb);

				if (st == EXANET_CHAN_NACK || st == EXANET_CHAN_TIMEOUT)
					break;
			}
		} else {
			ba->progress[1] = 4;	/* stage: waiting for ping */
			while ((n = exanet_recv(mb, buf, sizeof(buf), NULL)) == 0) {
				ba->progress[3] = exanet_mbox_hw_tail(mb);
				ba->progress[4] = q2[0].flags;
				ba->progress[5] = q2[0].len;
			}
			if (n == 32) {
				while ((chan = exanet_send(pkt, peer.node, peer.mbox, buf, 32)) == -EAGAIN)
					;
			}
		}
		if (n != 32) {
			r = n < 0 ? 'r' : 'p';	/* receive error / ping failed */
			break;
		}
		if (chan < 0 || exanet_wait(pkt, (unsigned int)chan, EXANET_WAIT_FOREVER, NULL)) {
			r = 'a';		/* send not ACKed */
			break;
		}
		if (exa_check(buf, 32, 1, i) == 0)
			ok++;
		ba->progress[0] = i + 1;
	}
	if (i == 500)
		r = ok == 500 ? 'y' : 'c';
	if (write(ba->to_parent, &r, 1) != 1 || write(ba->to_parent, &i, sizeof(i)) != sizeof(i))
		syscall(SYS_exit, 53);
	syscall(SYS_exit, 0);	/* exit_group is not allowed in strict mode */
	return 54;
}

TEST_F_TIMEOUT(pair, data_path_makes_no_syscalls_seccomp_strict, 120)
{
	struct bypass_arg ba = { .initiator = self->rank == 0 };
	struct endpoint_addr all[2], mine;
	int up[2], down[2], rc;
	pid_t pid;
	char r = 0;

	ba.progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, (void *)ba.progress);
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	ba.to_parent = up[1];
	ba.from_parent = down[0];
	pid = exa_spawn_in_pdid(0, bypass_child, &ba);
	ASSERT_LT(0, pid);
	ASSERT_EQ(sizeof(mine), read(up[0], &mine, sizeof(mine)));
	ASSERT_EQ(0, oob_allgather(&self->oob, &mine, all, sizeof(mine)));
	ASSERT_EQ(sizeof(all[0]), write(down[1], &all[1 - self->rank], sizeof(all[0])));
	close(up[1]);
	/* wait while the child makes progress; give up after 20 s without */
	{
		uint32_t last = 0;
		int64_t last_change = exa_now_ms();

		for (;;) {
			rc = exa_poll_child(pid, 200);
			if (rc != -ETIMEDOUT)
				break;
			if (ba.progress[0] != last) {
				last = ba.progress[0];
				last_change = exa_now_ms();
			} else if (exa_now_ms() - last_change > 20000) {
				TH_LOG("rank %d: no progress after %u round trips; stage %u status %#x "
				       "hw tail %u; slot 0 via 2nd mapping: flags %u len %u; my mbox %u, "
				       "peer node %u mbox %u", self->rank, last,
				       ba.progress[1], ba.progress[2], ba.progress[3], ba.progress[4],
				       ba.progress[5], mine.mbox,
				       all[1 - self->rank].node, all[1 - self->rank].mbox);
				rc = exa_wait_child(pid, 0);
				break;
			}
		}
	}
	if (rc == 128 + SIGKILL)
		TH_LOG("the data path made a system call (killed by seccomp strict mode)");
	ASSERT_EQ(0, rc);
	ASSERT_EQ(1, read(up[0], &r, 1));
	{
		uint32_t iter = 0;

		ASSERT_EQ(sizeof(iter), read(up[0], &iter, sizeof(iter)));
		if (r != 'y')
			TH_LOG("rank %d: ping-pong failed at iteration %u: %c", self->rank, iter, r);
	}
	ASSERT_EQ('y', r);
}
