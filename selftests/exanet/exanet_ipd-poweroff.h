/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_ipd: a node powered off in the middle of transfers (4 nodes; the
 * last case of the program: its fixture registers after "ipd").
 *
 * Cases of the translation unit of exanet_ipd.c: include it only there.
 */
#ifndef EXANET_IPD_C
#error "exanet_ipd-poweroff.h holds cases of exanet_ipd.c: include it only there"
#endif

/*
 * A whole node powered off (its QEMU process ends) while rank 0 streams to
 * it and rank 1 streams to rank 2: the others declare it down, release its
 * rings, keep working with each other (the 1 -> 2 transfer completes with
 * the right sha256, pings between them answer), and after their daemons
 * stop, their driver counters are back to the values before the first case.
 * Needs 4 nodes; the last rank powers off, so this case is last.
 */
/* @pid exists and is not a zombie. */
static int proc_running(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int run = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		p = strrchr(buf, ')');
		run = p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	}
	fclose(f);
	return run;
}

/*
 * Last, since it powers a node off: a fixture of its own registers after
 * ipd's cases (the harness runs cases grouped by fixture, in the order the
 * fixtures first appear; the global ones first).
 */
/* created by the runner once it has this node's output (run-tests) */
#define POWEROFF_GO "/run/exa-runner-has-output"

FIXTURE(poweroff) {
	int unused;
};

FIXTURE_SETUP(poweroff)
{
}

FIXTURE_TEARDOWN(poweroff)
{
}

TEST_F(poweroff, node_poweroff_midstream_others_keep_working)
{
	struct before *b = saved();
	int me = my_rank(), k = nranks(), v = k - 1, rfd = -1, rank, nn;
	uint32_t peers[OOB_MAX_NODES];
	long long pages_up;
	struct xfer x, all[OOB_MAX_NODES];
	struct oob o, o2;
	pid_t xp = 0;
	char ip[20];

	if (k < 4)
		SKIP_TEST("needs 4 nodes (one powers off, the others keep working with each other)");
	if (access("/dev/exanet0", F_OK) || !have_rdma())
		SKIP_TEST("no RDMA on this node");
	OOB_UP(&o);
	start_all(_metadata, &o, "busy");
	if (me == v)
		xp = xfer_start(0, 0, 48ull << 20, IPD_PORT_BASE + 6, &rfd);
	if (me == 2)
		xp = xfer_start(0, 1, 32ull << 20, IPD_PORT_BASE + 7, &rfd);
	OOB_SYNC(&o);
	if (me == 0)
		xp = xfer_start(1, v, 48ull << 20, IPD_PORT_BASE + 6, &rfd);
	if (me == 1)
		xp = xfer_start(1, 2, 32ull << 20, IPD_PORT_BASE + 7, &rfd);
	pages_up = exa_sysfs_long("rdma_registered_pages");
	OOB_SYNC(&o);
	oob_fini(&o);
	usleep(1500000);	/* mid-transfer */
	if (me == v) {
		/* The runner waits for the node to go down instead of calling
		 * it dead (tools/cluster/run-tests, POWEROFF_MARK). */
		pid_t harness = getppid();	/* prints the results at its exit */
		int go[2];
		pid_t pid;
		char c;

		printf("# exa-runner: this node powers off\n");
		fflush(stdout);
		/* a process outside the test's process group (which the
		 * harness kills when the case returns) pulls the plug */
		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			int fd;

			if (setsid() < 0)
				_exit(1);
			/* Not the program's output: the agent reports the
			 * program ended only once every writer of it closed. */
			fd = open("/dev/null", O_RDWR);
			if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 ||
			    dup2(fd, 2) < 0)
				_exit(1);
			if (write(go[1], "s", 1) != 1)
				_exit(1);
			/* Not before the runner has the node's output: it
			 * creates POWEROFF_GO once it does (tools/cluster/
			 * run-tests); any other caller: at most 10 s after the
			 * program's end. */
			for (int t = 0; t < 450 && proc_running(harness); t++)
				usleep(100000);
			for (int t = 0; t < 100 && access(POWEROFF_GO, F_OK); t++)
				usleep(100000);
			unlink(POWEROFF_GO);
			sync();
			fd = open("/proc/sysrq-trigger", O_WRONLY);
			if (fd >= 0 && write(fd, "o", 1) != 1)
				_exit(1);
			_exit(0);
		}
		ASSERT_EQ(1, read(go[0], &c, 1));
		return;
	}
	/* the survivors among themselves */
	ASSERT_EQ(0, oob_from_env(&rank, &nn, peers, OOB_MAX_NODES));
	ASSERT_EQ(0, oob_init_explicit(&o2, me, k - 1, peers, 100 + (unsigned int)ksft_case_index(_metadata),
				       OOB_DEFAULT_PORT, 60000));
	{
		int64_t t0 = exa_now_ms();
		int err = ipd_wait_peer(v, "down", 20000);

		TH_LOG("node %d down after %lld ms", v, (long long)(exa_now_ms() - t0));
		ASSERT_EQ(0, err);
	}
	/*
	 * The connection's rings are released with the "down".  A message
	 * the node sent just before it went (an OFFER, a NEED_RING) and read
	 * after it is dropped (late_handshake_from_down_peer_...), and any
	 * handshake's regions are released within IPD_HANDSHAKE_TIMEOUT_MS
	 * (10 s, ipd.md "Peer down"): wait that long at most, not 30 s.
	 */
	for (int t = 0; t < 110 &&
	     exa_sysfs_long("rdma_registered_pages") != pages_up - CONN_PAGES; t++)
		usleep(100000);
	EXPECT_EQ(pages_up - CONN_PAGES, exa_sysfs_long("rdma_registered_pages"));
	if (me == 0) {		/* its transfer cannot finish: end it */
		kill(xp, SIGKILL);
		exa_wait_child(xp, 5000);
		close(rfd);
	}
	for (int r = 0; r < k - 1; r++)
		if (r != me)
			EXPECT_EQ(0, ipd_ping("-c 2 -w 20", exa_ip_str(r, ip)));
	memset(&x, 0, sizeof(x));
	if (me == 1 || me == 2) {
		EXPECT_EQ(0, xfer_wait(xp, rfd, &x, 240000));
		EXPECT_EQ(0, x.err);
		EXPECT_EQ(32ll << 20, x.bytes);
	}
	ASSERT_EQ(0, oob_allgather(&o2, &x, all, sizeof(x)));
	TH_LOG("1 -> 2 sent %s, received %s", all[1].sha, all[2].sha);
	EXPECT_EQ(64u, strlen(all[1].sha));
	EXPECT_STREQ(all[1].sha, all[2].sha);
	ASSERT_EQ(0, oob_barrier(&o2));
	ASSERT_EQ(0, ipd_stop());
	usleep(200000);
	EXPECT_EQ(b->reg_pages, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(b->rdma_pages, exa_sysfs_long("rdma_pages_in_use"));
	EXPECT_EQ(b->ranks, exa_sysfs_long("rdma_ranks_in_use"));
	oob_fini(&o2);
}
