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
 * The other ranks keep their nodes in the test until rank 0 is done.
 */

#define CHECK_PROG "/usr/lib/exanet/selftests/exanet/mpi/exanet_mpi_check"
#define MPIRUN_TMO 400		/* seconds, one mpirun (TCG nodes are slow) */

#include "mpi_test.h"

/* The one-sided cases of the check program, and its last case. */
#define ONESIDED_CASES "onesided_put_get onesided_pscw onesided_lock_epochs " \
	"onesided_accumulate onesided_atomics ni_counters_moved"
#define ALL_CASES 11
#define OSC_RDMA "--mca osc rdma --mca btl self,ofi --mca btl_ofi_provider_include exanet " \
	"--mca osc_base_verbose 100"

/* Rank 0: mpirun with 'per_node' ranks on each node of the test, the
 * options 'mca' and the check program's cases 'cases' ("": all, 'ncases'
 * of them); checks its status, the MPI program's summary and the
 * MTL/provider lines. */
static void run_checks(struct __test_metadata *_metadata, FIXTURE_DATA(mpi) *self,
		       int per_node, const char *mca, const char *cases, int ncases)
{
	char hosts[1024], out[64];
	int status, nranks = self->nnodes * per_node;

	mpi_hosts(self, per_node, hosts, sizeof(hosts));
	snprintf(out, sizeof(out), "/tmp/exanet_mpi_%d.txt", per_node);
	status = exa_system("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
			    "timeout %d mpirun --host %s -np %d --mca mtl_base_verbose 10 %s "
			    "%s %s > %s 2>&1", MPIRUN_TMO, hosts, nranks, mca, CHECK_PROG, cases,
			    out);
	if (status) {
		TH_LOG("mpirun (%d ranks on %s) exited %d:", nranks, hosts, status);
		exa_system("grep -v 'mca: base\\|mca:base' %s | sed 's/^/#   /' | tail -60", out);
	}
	EXPECT_EQ(0, status);
	exa_system("grep -E '^(ok|not ok|checks:|#)' %s | sed 's/^/# /'", out);
	EXPECT_EQ(0, exa_system("grep -qx 'checks: %d passed, 0 failed' %s", ncases, out));
	/* every rank selected the ofi MTL on the exanet provider */
	EXPECT_EQ(nranks, exa_system("exit $(grep -c 'mtl:ofi:provider: exanet' %s)", out));
	EXPECT_EQ(nranks, exa_system("exit $(grep -c 'select: component ofi selected' %s)", out));
}

/* Rank 0: the one-sided checks over osc rdma; every rank's windows were
 * osc rdma's (its verbose line when a window goes). */
static void run_osc_rdma(struct __test_metadata *_metadata, FIXTURE_DATA(mpi) *self,
			 int per_node)
{
	int nranks = self->nnodes * per_node, windows;

	run_checks(_metadata, self, per_node, OSC_RDMA, ONESIDED_CASES, 6);
	windows = exa_system("exit $(grep -c 'rdma component destroying window' /tmp/exanet_mpi_%d.txt)",
			     per_node);
	if (windows < 6 * nranks)
		TH_LOG("%d osc rdma windows destroyed, want %d (6 per rank)", windows, 6 * nranks);
	EXPECT_LE(6 * nranks, windows);
}

TEST_F_TIMEOUT(mpi, one_rank_per_node, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_checks(_metadata, self, 1, "", "", ALL_CASES);
	OOB_SYNC(&self->oob);
}

TEST_F_TIMEOUT(mpi, two_ranks_per_node, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_checks(_metadata, self, 2, "", "", ALL_CASES);
	OOB_SYNC(&self->oob);
}

TEST_F_TIMEOUT(mpi, osc_rdma_one_rank_per_node, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_osc_rdma(_metadata, self, 1);
	OOB_SYNC(&self->oob);
}

TEST_F_TIMEOUT(mpi, osc_rdma_two_ranks_per_node, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_osc_rdma(_metadata, self, 2);
	OOB_SYNC(&self->oob);
}

TEST_HARNESS_MAIN
