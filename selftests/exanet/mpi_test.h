/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the in-VM tests that run mpirun on rank 0 share (exanet_mpi,
 * exanet_coll_mpi, extoll_mpi): the fixture (oob, sshd of every node
 * listening, skip without Open MPI or the check program), the --host list
 * and mpirun of a check program over a libfabric provider.  The
 * includer defines CHECK_PROG (the MPI program) and MPIRUN_TMO (seconds of
 * one mpirun) first.
 *
 * A program that runs its checks with 1 and with 2 ranks per node adds
 * the variants one_rank_per_node and two_ranks_per_node (FIXTURE_VARIANT_ADD
 * with .per_node 1 and 2): every case runs in each; one that adds none
 * (exanet_evb) runs its cases once, with one rank per node.
 */
#ifndef SELFTEST_MPI_TEST_H
#define SELFTEST_MPI_TEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "exa_test.h"

FIXTURE(mpi) {
	struct oob oob;
	int rank, nnodes;
	int per_node;			/* ranks per node of the case's mpirun */
};

FIXTURE_VARIANT(mpi) {
	int per_node;
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
	self->per_node = variant ? variant->per_node : 1;
	if (access("/usr/bin/mpirun", X_OK) || access(CHECK_PROG, X_OK))
		SKIP_TEST("no Open MPI in the node image");
	if (self->nnodes < 2)
		SKIP_TEST("needs 2 or more nodes");
	/*
	 * Two ranks per node run on 2 nodes only: 8 ranks on 4 nodes under
	 * TCG over 2 host cores took 124 s of `make check`
	 * (Documentation/testing.md, "Time budget") and take no path that 4
	 * ranks on 2 nodes (two per NI) and 4 ranks on 4 nodes (more peers,
	 * more hops) do not.  Every rank skips.
	 */
	if (self->per_node > 1 && self->nnodes > 2)
		SKIP_TEST("2 ranks per node run on 2 nodes only (mpi_test.h)");
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

/* "ip:per_node,..." of every node of the test, for mpirun --host. */
static inline void mpi_hosts(FIXTURE_DATA(mpi) *self, int per_node, char *hosts,
			     size_t size)
{
	size_t len = 0;
	int i;

	hosts[0] = '\0';
	for (i = 0; i < self->nnodes && len < size; i++) {
		struct in_addr a = { .s_addr = self->oob.peers[i] };

		len += (size_t)snprintf(hosts + len, size - len, "%s%s:%d", i ? "," : "",
					inet_ntoa(a), per_node);
	}
}

/* Rank 0: mpirun (extra options mca) with per_node ranks on each node of
 * the test running CHECK_PROG with args (its cases; "" for all); checks its
 * status, the program's summary line and that every rank's MTL was ofi
 * with the libfabric provider prov. */
static inline void mpi_run_checks(struct __test_metadata *_metadata, FIXTURE_DATA(mpi) *self,
				  int per_node, const char *mca, const char *prov,
				  const char *args, const char *summary)
{
	char hosts[1024], out[64];
	int status, nranks = self->nnodes * per_node;

	mpi_hosts(self, per_node, hosts, sizeof(hosts));
	snprintf(out, sizeof(out), "/tmp/%s_mpi_%d.txt", prov, per_node);
	status = exa_system("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
			    "timeout %d mpirun --host %s -np %d --mca mtl_base_verbose 10 %s "
			    "%s %s > %s 2>&1", MPIRUN_TMO, hosts, nranks, mca, CHECK_PROG, args,
			    out);
	if (status) {
		TH_LOG("mpirun (%d ranks on %s) exited %d:", nranks, hosts, status);
		exa_system("grep -v 'mca: base\\|mca:base' %s | sed 's/^/#   /' | tail -60", out);
	}
	EXPECT_EQ(0, status);
	exa_system("grep -E '^(ok|not ok|checks:|#)' %s | sed 's/^/# /'", out);
	EXPECT_EQ(0, exa_system("grep -qx '%s' %s", summary, out));
	/* every rank selected the ofi MTL on the provider */
	EXPECT_EQ(nranks, exa_system("exit $(grep -c 'mtl:ofi:provider: %s' %s)", prov, out));
	EXPECT_EQ(nranks, exa_system("exit $(grep -c 'select: component ofi selected' %s)", out));
}

#endif /* SELFTEST_MPI_TEST_H */
