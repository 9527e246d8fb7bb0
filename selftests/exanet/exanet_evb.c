// SPDX-License-Identifier: GPL-2.0
/*
 * Event building over Debian's Open MPI on the provider "exanet"
 * (tests.list: 4 nodes; Documentation/evb.md).  Rank 0 runs mpirun of
 * exanet-evb (tools/mpi/exanet-evb.c) with one rank per node: both
 * patterns, three fragment sizes, every byte of every fragment checked at
 * its builder unit.  From the program's JSON: no fragment lost, duplicated
 * or damaged, every event complete (fragments = events x RUs per event),
 * traffic in every size; from Open MPI's verbose output: every rank's MTL
 * was ofi on exanet.  Bad options end with exit status 2 and a message,
 * with and without mpirun.
 *
 * The other ranks keep their nodes in the test until rank 0 is done.
 */

#define CHECK_PROG "/usr/bin/exanet-evb"
#define MPIRUN_TMO 240		/* seconds, one mpirun */

#include <json.h>

#include "mpi_test.h"

#define EVB_SIZES "1024,8192,65536"
#define EVB_NSIZES 3
#define EVB_RUN "--sizes " EVB_SIZES " --seconds 1.5 --interval 0.25 --warmup 0.5 --check full"

/* Rank 0: mpirun of exanet-evb with args on nranks ranks (one per node of
 * the test, or nranks when fewer); its exit status, output in out. */
static int evb_mpirun(FIXTURE_DATA(mpi) *self, int nranks, const char *args, const char *out)
{
	char hosts[1024];

	mpi_hosts(self, 1, hosts, sizeof(hosts));
	return exa_system("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
			  "timeout %d mpirun --host %s -np %d --mca mtl_base_verbose 10 %s %s "
			  "> %s 2>&1", MPIRUN_TMO, hosts, nranks, CHECK_PROG, args, out);
}

/* The program's JSON line from out, or NULL. */
static json_object *evb_result(const char *out)
{
	char line[16384];
	json_object *o = NULL;
	FILE *f = fopen(out, "r");

	if (!f)
		return NULL;
	while (!o && fgets(line, sizeof(line), f))
		if (line[0] == '{')
			o = json_tokener_parse(line);
	fclose(f);
	return o;
}

static long long jint(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

static double jnum(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : -1;
}

/* Rank 0: one pattern on every node; per_event: fragments one event is
 * made of (RUs, or RUs other than the BU's own node in nxn). */
static void run_pattern(struct __test_metadata *_metadata, FIXTURE_DATA(mpi) *self,
			const char *pattern, int per_event)
{
	char out[64];
	json_object *o, *results;
	int status, n;

	snprintf(out, sizeof(out), "/tmp/evb_%s.txt", pattern);
	status = evb_mpirun(self, self->nnodes, pattern[1] == 't' ? "nton " EVB_RUN : "nxn " EVB_RUN,
			    out);
	if (status) {
		TH_LOG("mpirun exanet-evb %s on %d nodes exited %d:", pattern, self->nnodes, status);
		exa_system("grep -v 'mca: base\\|mca:base' %s | sed 's/^/#   /' | tail -40", out);
	}
	ASSERT_EQ(0, status);
	/* every rank selected the ofi MTL on exanet */
	EXPECT_EQ(self->nnodes, exa_system("exit $(grep -c 'mtl:ofi:provider: exanet' %s)", out));
	o = evb_result(out);
	ASSERT_NE(NULL, o);
	ASSERT_TRUE(json_object_object_get_ex(o, "results", &results));
	n = (int)json_object_array_length(results);
	EXPECT_EQ(EVB_NSIZES, n);
	EXPECT_EQ(0, jint(o, "errors"));
	for (int i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(results, i);
		long long frags = jint(r, "fragments"), events = jint(r, "events");

		TH_LOG("%s %lld B: %lld events, %lld fragments, %.2f MB/s per node", pattern,
		       jint(r, "size"), events, frags, jnum(r, "bw_mb_s_per_node"));
		EXPECT_EQ(0, jint(r, "errors"));
		EXPECT_EQ(0, jint(r, "lost"));
		EXPECT_EQ(0, jint(r, "duplicated"));
		EXPECT_LT(0, events);
		/* every event complete at its BU: nothing missing at the end */
		EXPECT_EQ(events * per_event, frags);
		EXPECT_LT(0, jnum(r, "bw_mb_s_per_node"));
	}
	json_object_put(o);
}

TEST_F_TIMEOUT(mpi, nton_every_fragment_checked, MPIRUN_TMO + 120)
{
	if (self->nnodes % 2)
		SKIP(return, "nton needs an even number of nodes");
	if (self->rank == 0)
		run_pattern(_metadata, self, "nton", self->nnodes / 2);
	OOB_SYNC(&self->oob);
}

TEST_F_TIMEOUT(mpi, nxn_every_fragment_checked, MPIRUN_TMO + 120)
{
	if (self->rank == 0)
		run_pattern(_metadata, self, "nxn", self->nnodes - 1);
	OOB_SYNC(&self->oob);
}

TEST_F_TIMEOUT(mpi, bad_options_exit_2, MPIRUN_TMO + 120)
{
	static const char *const bad[] = {
		"nton --sizes 0", "nton --sizes 16777217", "nton --sizes 1024,x",
		"nton --depth 0", "nxn --seconds 0", "nxn --seconds 1 --interval 0.5",
		"nton --check some", "ntox", "", "nton --depth",
	};

	if (self->rank == 0) {
		for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			int st = exa_system("%s %s > /tmp/evb_bad.txt 2>&1", CHECK_PROG, bad[i]);

			if (st != 2)
				TH_LOG("exanet-evb %s: exit %d, want 2", bad[i], st);
			EXPECT_EQ(2, st);
			EXPECT_EQ(0, exa_system("grep -q '^exanet-evb: ' /tmp/evb_bad.txt"));
		}
		/* an odd rank count for nton, found once MPI runs */
		if (self->nnodes >= 3) {
			EXPECT_EQ(2, evb_mpirun(self, 3, "nton --seconds 1", "/tmp/evb_odd.txt"));
			EXPECT_EQ(0, exa_system("grep -q 'nton needs an even number of ranks' "
						"/tmp/evb_odd.txt"));
		}
		/* buffers beyond the limit */
		EXPECT_EQ(2, evb_mpirun(self, 2, "nxn --sizes 16777216 --depth 64",
					"/tmp/evb_big.txt"));
		EXPECT_EQ(0, exa_system("grep -q 'MiB of buffers per rank' /tmp/evb_big.txt"));
	}
	OOB_SYNC(&self->oob);
}

TEST_HARNESS_MAIN
