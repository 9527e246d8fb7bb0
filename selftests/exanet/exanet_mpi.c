// SPDX-License-Identifier: GPL-2.0
/*
 * Debian's Open MPI over the libfabric provider "exanet" (tests.list: 2 and
 * 4 nodes).  Rank 0 runs mpirun, which starts the ranks on every node of
 * the test through ssh over the management network; the MPI program
 * (selftests/exanet/mpi/exanet_mpi_check.c) checks point-to-point of every
 * size, wildcards, Probe/Mprobe, non-blocking calls, collectives and
 * one-sided Put/Get, and that the node's NI counters moved.  This program
 * checks mpirun's outcome and, from Open MPI's verbose output, that every
 * rank's MTL was ofi with the exanet provider (no TCP: the node image's
 * openmpi-mca-params.conf allows no BTL but self).
 *
 * The other ranks keep their nodes in the test until rank 0 is done.
 */

#define CHECK_PROG "/usr/lib/exanet/selftests/exanet/mpi/exanet_mpi_check"
#define MPIRUN_TMO 400		/* seconds, one mpirun (TCG nodes are slow) */

#include "mpi_test.h"

/* every case of the check program, ni_counters_moved included */
#define CHECK_SUMMARY "checks: 7 passed, 0 failed"

TEST_F_TIMEOUT(mpi, one_rank_per_node, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		mpi_run_checks(_metadata, self, 1, "", "exanet", "", CHECK_SUMMARY);
	OOB_SYNC(&self->oob);
}

TEST_F_TIMEOUT(mpi, two_ranks_per_node, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		mpi_run_checks(_metadata, self, 2, "", "exanet", "", CHECK_SUMMARY);
	OOB_SYNC(&self->oob);
}

TEST_HARNESS_MAIN
