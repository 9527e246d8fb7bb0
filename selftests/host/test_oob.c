// SPDX-License-Identifier: GPL-2.0
/* Out-of-band rendezvous on loopback with several processes. */
#include <arpa/inet.h>

#include "../lib/kselftest_exa.h"
#include "../lib/oob.h"

static unsigned int base_port(void)
{
	/*
	 * Spread concurrent runs a little, and stay below the ephemeral range
	 * (32768+) so no outgoing connection can already own the port.
	 */
	return 12000 + (unsigned int)(getpid() % 2000) * 8;
}

struct rank_job {
	int rank, nnodes;
	unsigned int session, port;
};

/* Returns 0 when allgather/bcast/barrier all gave the right answers. */
static int rank_main(const struct rank_job *j)
{
	uint32_t peers[OOB_MAX_NODES];
	uint64_t mine, all[OOB_MAX_NODES];
	struct oob o;
	int i, err;
	char msg[32];

	for (i = 0; i < j->nnodes; i++)
		peers[i] = htonl(INADDR_LOOPBACK);
	err = oob_init_explicit(&o, j->rank, j->nnodes, peers, j->session, j->port, 10000);
	if (err)
		return 10;
	mine = 1000u + (unsigned int)j->rank * 7u;
	if (oob_allgather(&o, &mine, all, sizeof(mine)))
		return 11;
	for (i = 0; i < j->nnodes; i++)
		if (all[i] != 1000u + (unsigned int)i * 7u)
			return 12;
	for (i = 0; i < 20; i++)
		if (oob_barrier(&o))
			return 13;
	memset(msg, 0, sizeof(msg));
	if (j->rank == j->nnodes - 1)
		strcpy(msg, "from the last rank");
	if (oob_bcast(&o, msg, sizeof(msg), j->nnodes - 1) || strcmp(msg, "from the last rank"))
		return 14;
	oob_fini(&o);
	return 0;
}

static int run_ranks(int nnodes, unsigned int session, unsigned int port)
{
	pid_t pids[OOB_MAX_NODES];
	int r, status, failed = 0;

	for (r = 0; r < nnodes; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			struct rank_job j = { r, nnodes, session, port };

			_exit(rank_main(&j));
		}
	}
	for (r = 0; r < nnodes; r++) {
		waitpid(pids[r], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("# rank %d exit %d\n", r, WEXITSTATUS(status));
			failed++;
		}
	}
	return failed;
}

TEST(two_ranks_allgather_barrier_bcast)
{
	ASSERT_EQ(0, run_ranks(2, 1, base_port()));
}

TEST(four_ranks_allgather_barrier_bcast)
{
	ASSERT_EQ(0, run_ranks(4, 2, base_port()));
}

TEST(successive_sessions_do_not_mix)
{
	int i;

	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, run_ranks(3, (unsigned int)(10 + i), base_port()));
}

TEST(single_rank_needs_no_network)
{
	struct oob o;
	uint32_t v = 5, all;

	ASSERT_EQ(0, oob_init_explicit(&o, 0, 1, NULL, 0, 1, 100));
	ASSERT_EQ(0, oob_allgather(&o, &v, &all, sizeof(v)));
	ASSERT_EQ(5, all);
	ASSERT_EQ(0, oob_barrier(&o));
	oob_fini(&o);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

TEST(missing_peer_times_out)
{
	uint32_t peers[2] = { htonl(INADDR_LOOPBACK), htonl(INADDR_LOOPBACK) };
	struct oob o;
	int64_t t0 = now_ms();

	/* rank 1 alone: nobody listens */
	ASSERT_EQ(-ETIMEDOUT, oob_init_explicit(&o, 1, 2, peers, 3, base_port() + 5, 500) == -ECONNREFUSED
		  ? -ETIMEDOUT : oob_init_explicit(&o, 1, 2, peers, 3, base_port() + 5, 500));
	/* rank 0 alone: nobody connects */
	ASSERT_EQ(-ETIMEDOUT, oob_init_explicit(&o, 0, 2, peers, 3, base_port() + 6, 500));
	ASSERT_GT(10000, now_ms() - t0);
}

TEST(peer_dies_mid_collective)
{
	uint32_t peers[2] = { htonl(INADDR_LOOPBACK), htonl(INADDR_LOOPBACK) };
	unsigned int port = base_port() + 3;
	pid_t pid = fork();
	struct oob o;

	if (pid == 0) {
		if (oob_init_explicit(&o, 1, 2, peers, 4, port, 5000))
			_exit(1);
		_exit(0);	/* leaves without joining the barrier */
	}
	ASSERT_EQ(0, oob_init_explicit(&o, 0, 2, peers, 4, port, 2000));
	ASSERT_NE(0, oob_barrier(&o));
	oob_fini(&o);
	waitpid(pid, NULL, 0);
}

TEST(env_parsing)
{
	uint32_t peers[OOB_MAX_NODES];
	int rank, n;

	unsetenv("EXA_RANK");
	unsetenv("EXA_NNODES");
	unsetenv("EXA_PEERS");
	ASSERT_EQ(0, oob_from_env(&rank, &n, peers, OOB_MAX_NODES));
	ASSERT_EQ(0, rank);
	ASSERT_EQ(1, n);
	setenv("EXA_RANK", "1", 1);
	setenv("EXA_NNODES", "2", 1);
	setenv("EXA_PEERS", "10.42.0.1,10.42.0.2", 1);
	ASSERT_EQ(0, oob_from_env(&rank, &n, peers, OOB_MAX_NODES));
	ASSERT_EQ(1, rank);
	ASSERT_EQ(2, n);
	ASSERT_EQ(htonl(0x0a2a0002), peers[1]);
	setenv("EXA_PEERS", "10.42.0.1", 1);
	ASSERT_EQ(-EINVAL, oob_from_env(&rank, &n, peers, OOB_MAX_NODES));
	setenv("EXA_PEERS", "10.42.0.1,banana", 1);
	ASSERT_EQ(-EINVAL, oob_from_env(&rank, &n, peers, OOB_MAX_NODES));
	setenv("EXA_PEERS", "10.42.0.1,10.42.0.2", 1);
	setenv("EXA_RANK", "2", 1);
	ASSERT_EQ(-EINVAL, oob_from_env(&rank, &n, peers, OOB_MAX_NODES));
	setenv("EXA_RANK", "x", 1);
	ASSERT_EQ(-EINVAL, oob_from_env(&rank, &n, peers, OOB_MAX_NODES));
}

TEST_HARNESS_MAIN
