// SPDX-License-Identifier: MIT
/*
 * The Open MPI component coll/exanet (lib/coll-exanet,
 * Documentation/exanet/coll-exanet.md) on the emulated cluster (tests.list:
 * 2 and 4 nodes).  Rank 0 runs mpirun (through ssh, as exanet_mpi does) of
 * selftests/exanet/mpi/exanet_coll_check with the component's statistics
 * on: every check must pass, and when the NI has a collective unit every
 * rank must report "coll_exanet: N offloaded ops" with N > 0 (the node
 * image carries the component in Open MPI's component directory, a plain
 * mpirun picks it up).  Without a collective unit (the component declines)
 * the checks still have to pass through Open MPI's own components.
 *
 * 2 ranks per node: every check (local sets, leaders); 1 rank per node:
 * a subset.  The other ranks keep their nodes in the test until rank 0 is
 * done.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "exa_test.h"

#define CHECK_PROG "/usr/lib/exanet/selftests/exanet/mpi/exanet_coll_check"
#define MPIRUN_TMO 500		/* seconds, one mpirun (TCG nodes are slow) */

FIXTURE(mpi) {
	struct oob oob;
	int rank, nnodes;
};

/* sshd (respawned by init) needs a few seconds of CPU after boot before
 * it listens: 0 once a connection to port 22 of addr succeeds. */
static int wait_sshd(uint32_t addr, int timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(22) };
	int64_t end = exanet_now_ns() + timeout_s * SEC;

	sa.sin_addr.s_addr = addr;
	do {
		int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

		if (fd < 0)
			return -errno;
		ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok)
			return 0;
		usleep(100000);
	} while (exanet_now_ns() < end);
	return -ETIMEDOUT;
}

FIXTURE_SETUP(mpi)
{
	int err;

	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	self->nnodes = self->oob.nnodes;
	if (access("/usr/bin/mpirun", X_OK) || access(CHECK_PROG, X_OK))
		SKIP("no Open MPI in the node image");
	if (self->nnodes < 2)
		SKIP("needs 2 or more nodes");
	/* the others wait (long) for rank 0's mpirun */
	self->oob.timeout_ms = (MPIRUN_TMO + 60) * 1000;
	/* mpirun on rank 0 starts only when every node's sshd listens (it
	 * once found node 2's refusing connections right after boot) */
	err = wait_sshd(self->oob.peers[self->rank], 60);
	if (err)
		TH_LOG("sshd of this node does not accept connections: %s", strerror(-err));
	ASSERT_EQ(0, err);
	OOB_SYNC(&self->oob);
}

FIXTURE_TEARDOWN(mpi)
{
	oob_fini(&self->oob);
}

/* Rank 0: mpirun with 'per_node' ranks on each node of the test, the
 * check program's cases 'cases' (empty: all); checks its status, the
 * summary and the statistics lines. */
static void run_checks(struct __test_metadata *_metadata, FIXTURE_DATA(mpi) *self,
		       int per_node, const char *cases)
{
	char hosts[1024] = "", out[64];
	size_t len = 0;
	int i, status, nranks = self->nnodes * per_node, present;

	for (i = 0; i < self->nnodes; i++) {
		struct in_addr a = { .s_addr = self->oob.peers[i] };

		len += (size_t)snprintf(hosts + len, sizeof(hosts) - len, "%s%s:%d", i ? "," : "",
					inet_ntoa(a), per_node);
	}
	snprintf(out, sizeof(out), "/tmp/exanet_coll_mpi_%d.txt", per_node);
	status = exa_system("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
			    "timeout %d mpirun --host %s -np %d --mca coll_exanet_stats 1 "
			    "%s %s > %s 2>&1", MPIRUN_TMO, hosts, nranks, CHECK_PROG, cases, out);
	if (status) {
		TH_LOG("mpirun (%d ranks on %s) exited %d:", nranks, hosts, status);
		exa_system("grep -v '^ok ' %s | sed 's/^/#   /' | tail -60", out);
	}
	EXPECT_EQ(0, status);
	exa_system("grep -E '^(not ok|checks:|#)|coll_exanet' %s | sed 's/^/# /'", out);
	EXPECT_EQ(0, exa_system("grep -q '^checks: [0-9]* passed, 0 failed$' %s", out));
	/* one statistics line per rank */
	EXPECT_EQ(nranks, exa_system("exit $(grep -c 'coll_exanet: [0-9]* offloaded ops' %s)", out));
	present = exa_system("exit $(grep -c 'coll_exanet: .*NI present' %s)", out);
	if (present == 0) {
		TH_LOG("the NI has no collective unit here: checked the fallback only");
		return;
	}
	EXPECT_EQ(nranks, present);
	/* every rank went the exanet way */
	EXPECT_EQ(0, exa_system("grep -q 'coll_exanet: 0 offloaded ops' %s", out) == 0);
	EXPECT_EQ(nranks, exa_system("exit $(grep -c ' 0 communicators fell back' %s)", out));
}

TEST_F_TIMEOUT(mpi, one_rank_per_node, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_checks(_metadata, self, 1,
			   "'allreduce MPI_INT ' 'allreduce MPI_DOUBLE' in_place split_halves barrier");
	OOB_SYNC(&self->oob);
}

TEST_F_TIMEOUT(mpi, two_ranks_per_node, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_checks(_metadata, self, 2, "");
	OOB_SYNC(&self->oob);
}

TEST_HARNESS_MAIN
