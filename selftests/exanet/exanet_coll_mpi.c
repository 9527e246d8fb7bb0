// SPDX-License-Identifier: GPL-2.0
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
 * 2 ranks per node (2 nodes only, mpi_test.h): every check (local sets,
 * leaders); 1 rank per node: a subset on 2 nodes, every check on more.
 * The other ranks keep their nodes in the test until rank 0 is done.
 */

#define CHECK_PROG "/usr/lib/exanet/selftests/exanet/mpi/exanet_coll_check"
#define MPIRUN_TMO 500		/* seconds, one mpirun (TCG nodes are slow) */

#include "mpi_test.h"

/* Rank 0: mpirun with 'per_node' ranks on each node of the test, the
 * check program's cases 'cases' (empty: all); checks its status, the
 * summary and the statistics lines. */
static void run_checks(struct __test_metadata *_metadata, FIXTURE_DATA(mpi) *self,
		       int per_node, const char *cases)
{
	char hosts[1024], out[64];
	int status, nranks = self->nnodes * per_node, present;

	mpi_hosts(self, per_node, hosts, sizeof(hosts));
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

FIXTURE_VARIANT_ADD(mpi, one_rank_per_node) {
	.per_node = 1,
};

FIXTURE_VARIANT_ADD(mpi, two_ranks_per_node) {
	.per_node = 2,
};

/* Every check; with one rank per node on 2 nodes a subset (two ranks per
 * node run every check there). */
TEST_F_TIMEOUT(mpi, coll_checks, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_checks(_metadata, self, self->per_node,
			   self->per_node > 1 || self->nnodes > 2 ? "" :
			   "'allreduce MPI_INT ' 'allreduce MPI_DOUBLE' in_place split_halves barrier");
	OOB_SYNC(&self->oob);
}

TEST_HARNESS_MAIN
