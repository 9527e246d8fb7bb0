/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_msg_remote: the tools between the two nodes: exanet-pingpong,
 * its system calls under strace, the tools as an ordinary user.
 *
 * Cases of the translation unit of exanet_msg_remote.c: include it only there.
 */
#ifndef EXANET_MSG_REMOTE_C
#error "exanet_msg_remote-tools.h holds cases of exanet_msg_remote.c: include it only there"
#endif

/* ---- the benchmark tool between the two nodes ---- */

TEST_F_TIMEOUT(pair, exanet_pingpong_tool_runs_between_nodes, 180)
{
	char peer_ip[32], cmd[512];
	uint32_t peers[OOB_MAX_NODES];
	int rank, nnodes, rc;
	unsigned int port = 18700 + (unsigned int)ksft_case_index(_metadata);

	if (exa_system("command -v exanet-pingpong >/dev/null 2>&1"))
		SKIP_TEST("exanet-pingpong not installed");
	ASSERT_EQ(0, oob_from_env(&rank, &nnodes, peers, OOB_MAX_NODES));
	snprintf(peer_ip, sizeof(peer_ip), "%u.%u.%u.%u", ((uint8_t *)&peers[1])[0],
		 ((uint8_t *)&peers[1])[1], ((uint8_t *)&peers[1])[2], ((uint8_t *)&peers[1])[3]);
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		snprintf(cmd, sizeof(cmd), "exanet-pingpong --server --oob %u --timeout 20 "
			 ">/tmp/pp-server.out 2>&1", port);
		rc = exa_system("%s", cmd);
		if (rc)
			exa_system("cat /tmp/pp-server.out");
		ASSERT_EQ(0, rc);
	} else {
		snprintf(cmd, sizeof(cmd), "exanet-pingpong --client --oob %s:%u --peer-node %u "
			 "--sizes 1,8,64 --iters 200 --warmup 20 --json >/tmp/pp-client.json",
			 peer_ip, port, self->peer.node);
		rc = exa_system("%s", cmd);
		ASSERT_EQ(0, rc);
		ASSERT_EQ(0, exa_system("grep -q '\"transport\":\"exanet\"' /tmp/pp-client.json"));
		ASSERT_EQ(0, exa_system("grep -q '\"size\":64' /tmp/pp-client.json"));
		ASSERT_EQ(0, exa_system("grep -q '\"errors\":0}]' /tmp/pp-client.json"));
		exa_system("cat /tmp/pp-client.json | sed 's/^/# /'");
	}
	/* wrong peer node is refused with a usage-level error */
	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		snprintf(cmd, sizeof(cmd), "exanet-pingpong --server --oob %u --timeout 5 "
			 ">/dev/null 2>&1", port + 50);
		exa_system("%s", cmd);	/* the client gives up after the handshake */
	} else {
		snprintf(cmd, sizeof(cmd), "exanet-pingpong --client --oob %s:%u --peer-node 77 "
			 "--iters 10 >/dev/null 2>&1", peer_ip, port + 50);
		ASSERT_EQ(1, exa_system("%s", cmd));
	}
}

/*
 * The benchmark's own method: both sides under strace -f -c at two
 * iteration counts; the number of system calls must not grow with the
 * iterations.
 */
static long strace_total_calls(const char *file)
{
	char cmd[256];
	long calls = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "awk '$NF == \"total\" { print $4 }' %s", file);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fscanf(p, "%ld", &calls) != 1)
		calls = -1;
	pclose(p);
	return calls;
}

TEST_F_TIMEOUT(pair, exanet_pingpong_steady_state_no_syscalls_strace, 300)
{
	static const unsigned int iters[2] = { 100, 1100 };
	char peer_ip[32], file[64];
	uint32_t peers[OOB_MAX_NODES];
	long calls[2];
	int rank, nnodes, k;

	if (exa_system("command -v exanet-pingpong >/dev/null 2>&1 && "
		       "command -v strace >/dev/null 2>&1"))
		SKIP_TEST("exanet-pingpong or strace not installed");
	ASSERT_EQ(0, oob_from_env(&rank, &nnodes, peers, OOB_MAX_NODES));
	snprintf(peer_ip, sizeof(peer_ip), "%u.%u.%u.%u", ((uint8_t *)&peers[1])[0],
		 ((uint8_t *)&peers[1])[1], ((uint8_t *)&peers[1])[2], ((uint8_t *)&peers[1])[3]);
	for (k = 0; k < 2; k++) {
		unsigned int port = 18800 + (unsigned int)ksft_case_index(_metadata) * 4 + (unsigned int)k;

		snprintf(file, sizeof(file), "/tmp/pp-strace.%d", k);
		OOB_SYNC(&self->oob);
		/*
		 * The client starts only once the server listens: a client that
		 * has to retry its connect makes extra calls that have nothing
		 * to do with the steady state (seen on a slow, lossy cluster).
		 */
		if (self->rank == 1) {
			ASSERT_EQ(0, exa_system("rm -f %s.rc; (strace -f -c -o %s exanet-pingpong "
						"--server --oob %u --timeout 30 >/dev/null 2>&1; "
						"echo $? > %s.rc) >/dev/null 2>&1 &",
						file, file, port, file));
			ASSERT_EQ(0, exa_system("i=0; until grep -q ':%04X 00000000:0000 0A' "
						"/proc/net/tcp; do i=$((i+1)); [ $i -gt 600 ] "
						"&& exit 1; sleep 0.05; done", port));
			OOB_SYNC(&self->oob);
			ASSERT_EQ(0, exa_system("i=0; until [ -s %s.rc ]; do i=$((i+1)); "
						"[ $i -gt 1200 ] && exit 1; sleep 0.05; done; "
						"exit $(cat %s.rc)", file, file));
		} else {
			OOB_SYNC(&self->oob);
			ASSERT_EQ(0, exa_system("strace -f -c -o %s exanet-pingpong --client "
						"--oob %s:%u --sizes 32 --iters %u --warmup 10 "
						">/dev/null 2>&1", file, peer_ip, port, iters[k]));
		}
		calls[k] = strace_total_calls(file);
		ASSERT_LT(0, calls[k]);
	}
	TH_LOG("rank %d (%s): %ld system calls at %u iterations, %ld at %u", self->rank,
	       self->rank ? "server" : "client", calls[0], iters[0], calls[1], iters[1]);
	/* per iteration: (calls[1] - calls[0]) / 1000 must be ~0; allow a
	 * handful of calls of noise (e.g. a page fault retry path) */
	ASSERT_GE(10, calls[1] - calls[0]);
}

/* ---- the tools as an ordinary user ---- */

/* sh -c CMD as uid/gid 65534 (no passwd entry or su needed); exit status. */
static int nobody_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int nobody_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return exa_wait_child(pid, 240000);
}

/*
 * TOOL --server on rank 1 and TOOL --client on rank 0, both as nobody.
 * Returns the client's exit status on rank 0, the server's on rank 1;
 * outputs in /tmp/nb-<tag>.{cli,err,srv}.
 */
static int nobody_tool_pair(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
			    const char *tool, const char *tag, unsigned int port,
			    const char *peer_ip, const char *srv_args, const char *cli_args)
{
	int rc;

	OOB_SYNC(&self->oob);
	if (self->rank == 1) {
		exa_system("rm -f /tmp/nb-%s.*", tag);
		ASSERT_EQ(0, nobody_sh("(%s --server --oob %u %s > /tmp/nb-%s.srv 2>&1; "
				       "echo $? > /tmp/nb-%s.rc) >/dev/null 2>&1 &",
				       tool, port, srv_args, tag, tag));
		ASSERT_EQ(0, exa_system("i=0; until grep -q ':%04X 00000000:0000 0A' "
					"/proc/net/tcp; do i=$((i+1)); [ $i -gt 600 ] "
					"&& exit 1; sleep 0.05; done", port));
		OOB_SYNC(&self->oob);
		rc = exa_system("i=0; until [ -s /tmp/nb-%s.rc ]; do i=$((i+1)); "
				"[ $i -gt 3000 ] && exit 99; sleep 0.05; done; "
				"exit $(cat /tmp/nb-%s.rc)", tag, tag);
		if (rc)
			exa_system("sed 's/^/# %s server: /' /tmp/nb-%s.srv", tool, tag);
	} else {
		OOB_SYNC(&self->oob);
		rc = nobody_sh("%s --client --oob %s:%u %s > /tmp/nb-%s.cli 2> /tmp/nb-%s.err",
			       tool, peer_ip, port, cli_args, tag, tag);
		if (rc)
			exa_system("sed 's/^/# %s client: /' /tmp/nb-%s.cli /tmp/nb-%s.err",
				   tool, tag, tag);
	}
	return rc;
}

/*
 * An ordinary user (uid 65534 on both nodes, unbound: the same user domain
 * on both) runs the tools with the node's default RLIMIT_MEMLOCK:
 * exanet-pingpong, exanet-rdma-lat (write and read) and exanet-rdma-bw with
 * small sizes work.  exanet-rdma-lat with its default sizes (up to 2 MiB:
 * two 2 MiB halves and a notification page registered) works under the
 * default 8 MiB limit, else both sides exit 1 naming RLIMIT_MEMLOCK.
 */
TEST_F_TIMEOUT(pair, tools_run_as_unprivileged_user_default_memlock, 300)
{
	/* default sizes (RT_DEFAULT_SIZES): two 2 MiB halves + a notification page */
	const unsigned long long need = (4ull << 20) + 4096;
	unsigned int port = 18900 + (unsigned int)ksft_case_index(_metadata) * 8;
	uint32_t peers[OOB_MAX_NODES];
	struct exanet_rdma_info ri;
	char peer_ip[32], args[256];
	int rank, nnodes, rc, rdma;
	struct rlimit rl;

	if (exa_system("{ command -v exanet-pingpong && command -v exanet-rdma-lat && "
		       "command -v exanet-rdma-bw; } >/dev/null 2>&1"))
		SKIP_TEST("tools not installed");
	ASSERT_EQ(0, oob_from_env(&rank, &nnodes, peers, OOB_MAX_NODES));
	snprintf(peer_ip, sizeof(peer_ip), "%u.%u.%u.%u", ((uint8_t *)&peers[1])[0],
		 ((uint8_t *)&peers[1])[1], ((uint8_t *)&peers[1])[2], ((uint8_t *)&peers[1])[3]);
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	rdma = !exanet_rdma_query(self->dev, &ri) && ri.num_ranks && ri.num_pages;
	TH_LOG("rank %d: RLIMIT_MEMLOCK %llu KiB, RDMA %s", self->rank,
	       rl.rlim_cur == RLIM_INFINITY ? ~0ull : (unsigned long long)rl.rlim_cur >> 10,
	       rdma ? "yes" : "no");

	snprintf(args, sizeof(args), "--peer-node %u --sizes 1,8,64 --iters 200 --warmup 20 --json",
		 self->peer.node);
	rc = nobody_tool_pair(_metadata, self, "exanet-pingpong", "pp", port, peer_ip,
			      "--timeout 20", args);
	ASSERT_EQ(0, rc);
	if (self->rank == 0)
		ASSERT_EQ(0, exa_system("grep -q '\"errors\":0}]' /tmp/nb-pp.cli"));
	if (!rdma)
		SKIP_TEST("exanet-pingpong passed; no RDMA on this node for the RDMA tools");

	rc = nobody_tool_pair(_metadata, self, "exanet-rdma-lat", "lat", port + 1, peer_ip,
			      "-t 30", "-S 8,4096,65536 -i 50 -w 5 -j");
	ASSERT_EQ(0, rc);
	if (self->rank == 0)
		ASSERT_EQ(0, exa_system("grep -q '\"size\":65536.*\"status\":\"ok\"' /tmp/nb-lat.cli"));
	rc = nobody_tool_pair(_metadata, self, "exanet-rdma-lat", "latr", port + 2, peer_ip,
			      "-t 30", "-r -S 8,65536 -i 50 -w 5 -j");
	ASSERT_EQ(0, rc);
	if (self->rank == 0)
		ASSERT_EQ(0, exa_system("grep -q '\"size\":65536.*\"status\":\"ok\"' /tmp/nb-latr.cli"));
	rc = nobody_tool_pair(_metadata, self, "exanet-rdma-bw", "bw", port + 3, peer_ip,
			      "-t 30", "-S 4096,65536 -i 16 -w 2 -j");
	ASSERT_EQ(0, rc);
	if (self->rank == 0)
		ASSERT_EQ(0, exa_system("grep -q '\"size\":65536.*\"status\":\"ok\"' /tmp/nb-bw.cli"));

	/* default sizes */
	rc = nobody_tool_pair(_metadata, self, "exanet-rdma-lat", "latd", port + 4, peer_ip,
			      "-t 30", "-i 4 -w 1 -j");
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) {
		ASSERT_EQ(0, rc);
	} else {
		TH_LOG("default sizes need %llu KiB > RLIMIT_MEMLOCK: refused with a clear message",
		       need >> 10);
		ASSERT_EQ(1, rc);
		ASSERT_EQ(0, exa_system("grep -q 'RLIMIT_MEMLOCK is %llu KiB' /tmp/nb-latd.%s",
					(unsigned long long)rl.rlim_cur >> 10,
					self->rank ? "srv" : "err"));
	}
}
