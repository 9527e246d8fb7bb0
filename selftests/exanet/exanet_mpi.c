// SPDX-License-Identifier: GPL-2.0
/*
 * Debian's Open MPI over the libfabric provider "exanet" (tests.list: 2 and
 * 4 nodes).  Rank 0 runs mpirun, which starts the ranks on every node of
 * the test through ssh over the management network; the MPI program
 * (selftests/exanet/mpi/exanet_mpi_check.c) checks point-to-point of every
 * size, wildcards, Probe/Mprobe, non-blocking calls, collectives and
 * one-sided communication (fence, PSCW and lock epochs, accumulate,
 * atomics), and that the node's NI counters moved.  This program checks
 * mpirun's outcome and, from Open MPI's verbose output, that every rank's
 * MTL was ofi with the exanet provider (no TCP: the node image's
 * openmpi-mca-params.conf allows no BTL but self).  The osc_rdma cases run
 * the one-sided checks again over osc rdma on btl ofi (RDMA and FI_ATOMIC
 * of the exanet provider) instead of the image's osc pt2pt.
 *
 * Every case with 1 and with 2 ranks per node (the fixture's variants;
 * 2 per node on 2 nodes only, mpi_test.h).  The other ranks keep their
 * nodes in the test until rank 0 is done.
 */

#define CHECK_PROG "/usr/lib/exanet/selftests/exanet/mpi/exanet_mpi_check"
#define MPIRUN_TMO 400		/* seconds, one mpirun (TCG nodes are slow) */

#include "mpi_test.h"

/* The check program's cases: all of them, and the one-sided ones (with
 * ni_counters_moved: the traffic went through the NI). */
#define ALL_SUMMARY "checks: 11 passed, 0 failed"
#define ONESIDED_CASES "onesided_put_get onesided_pscw onesided_lock_epochs " \
	"onesided_accumulate onesided_atomics ni_counters_moved"
#define ONESIDED_SUMMARY "checks: 6 passed, 0 failed"
#define OSC_RDMA "--mca osc rdma --mca btl self,ofi --mca btl_ofi_provider_include exanet " \
	"--mca osc_base_verbose 100"

/* Rank 0: the one-sided checks over osc rdma; every rank's windows were
 * osc rdma's (its verbose line when a window goes; mpi_run_checks() keeps
 * mpirun's output in /tmp/exanet_mpi_<per_node>.txt). */
static void run_osc_rdma(struct __test_metadata *_metadata, FIXTURE_DATA(mpi) *self,
			 int per_node)
{
	int nranks = self->nnodes * per_node, windows;

	mpi_run_checks(_metadata, self, per_node, OSC_RDMA, "exanet", ONESIDED_CASES,
		       ONESIDED_SUMMARY);
	windows = exa_system("exit $(grep -c 'rdma component destroying window' /tmp/exanet_mpi_%d.txt)",
			     per_node);
	if (windows < 6 * nranks)
		TH_LOG("%d osc rdma windows destroyed, want %d (6 per rank)", windows, 6 * nranks);
	EXPECT_LE(6 * nranks, windows);
}

FIXTURE_VARIANT_ADD(mpi, one_rank_per_node) {
	.per_node = 1,
};

FIXTURE_VARIANT_ADD(mpi, two_ranks_per_node) {
	.per_node = 2,
};

/* Every check, one-sided ones over the image's osc pt2pt. */
TEST_F_TIMEOUT(mpi, all_checks, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		mpi_run_checks(_metadata, self, self->per_node, "", "exanet", "", ALL_SUMMARY);
	OOB_SYNC(&self->oob);
}

TEST_F_TIMEOUT(mpi, osc_rdma, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_osc_rdma(_metadata, self, self->per_node);
	OOB_SYNC(&self->oob);
}

TEST_HARNESS_MAIN
