// SPDX-License-Identifier: GPL-2.0
/*
 * Debian's Open MPI over the libfabric provider "extoll" (tests.list: 2
 * nodes with the EXTOLL NIC), unmodified: rank 0 runs mpirun with
 * --mca mtl_ofi_provider_include extoll (the node image's default is
 * exanet), 1 and 2 ranks per node, of the check program of exanet_mpi
 * (selftests/exanet/mpi/exanet_mpi_check.c) with its MPI cases: point to
 * point of every size, wildcards, Probe/Mprobe, non-blocking calls,
 * collectives, one-sided communication (osc pt2pt: fence, PSCW, lock
 * epochs, accumulate, atomics).  Its ni_counters_moved case counts ExaNet
 * packets and is left out; instead the EXTOLL NIC's velo_tx and rma_cmds
 * counters of node 0 must have moved, and every rank's MTL must be ofi with
 * the extoll provider.  Fixture and mpirun: selftests/exanet/mpi_test.h.
 */

#define CHECK_PROG "/usr/lib/exanet/selftests/exanet/mpi/exanet_mpi_check"
#define MPIRUN_TMO 400		/* seconds, one mpirun (TCG nodes are slow) */
#define EXTOLL_COUNTERS "/sys/class/extoll/extoll0-velo2/counters"

#include "../exanet/mpi_test.h"

static void run_over_extoll(struct __test_metadata *_metadata, FIXTURE_DATA(mpi) *self,
			    int per_node)
{
	long long velo = exa_file_field(EXTOLL_COUNTERS, "velo_tx");
	long long rma = exa_file_field(EXTOLL_COUNTERS, "rma_cmds");

	ASSERT_LE(0, velo);
	ASSERT_LE(0, rma);
	mpi_run_checks(_metadata, self, per_node, "--mca mtl_ofi_provider_include extoll",
		       "extoll", "p2p_sizes any_source_any_tag probe_mprobe nonblocking_waitall "
		       "collectives onesided_put_get onesided_pscw onesided_lock_epochs "
		       "onesided_accumulate onesided_atomics", "checks: 10 passed, 0 failed");
	/* eager messages went as VELO messages, rendezvous as RMA gets */
	TH_LOG("node 0: velo_tx +%lld, rma_cmds +%lld",
	       exa_file_field(EXTOLL_COUNTERS, "velo_tx") - velo,
	       exa_file_field(EXTOLL_COUNTERS, "rma_cmds") - rma);
	EXPECT_LT(velo, exa_file_field(EXTOLL_COUNTERS, "velo_tx"));
	EXPECT_LT(rma, exa_file_field(EXTOLL_COUNTERS, "rma_cmds"));
}

FIXTURE_VARIANT_ADD(mpi, one_rank_per_node) {
	.per_node = 1,
};

FIXTURE_VARIANT_ADD(mpi, two_ranks_per_node) {
	.per_node = 2,
};

TEST_F_TIMEOUT(mpi, checks_over_extoll, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_over_extoll(_metadata, self, self->per_node);
	OOB_SYNC(&self->oob);
}

TEST_HARNESS_MAIN
