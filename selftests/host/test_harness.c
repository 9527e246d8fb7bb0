// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's kselftest harness as our tests use it (selftests/lib/
 * kselftest_exa.h): runs harness_sample and checks its TAP, its log and its
 * exit status.  The harness itself is linux-source-6.1's, so this checks
 * what we build on it (SKIP_TEST, ksft_case_index, ASSERT_ERRNO, our
 * default timeout) and that the behaviours our suites rely on hold.
 */
#include <limits.h>

#include "../lib/kselftest_exa.h"

#define OUT_SIZE 16384

static int run_sample(char *out, size_t outlen)
{
	char self_path[PATH_MAX], cmd[PATH_MAX + 64];
	ssize_t len = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	size_t n = 0;
	char *slash;
	FILE *p;
	int st;

	self_path[len < 0 ? 0 : len] = '\0';
	slash = strrchr(self_path, '/');
	if (slash)
		*slash = '\0';
	snprintf(cmd, sizeof(cmd), "%s/harness_sample 2>&1", self_path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < outlen) {
		size_t r = fread(out + n, 1, outlen - 1 - n, p);

		if (!r)
			break;
		n += r;
	}
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char out[OUT_SIZE];
static int sample_rc = -2;

#define HAS(s) (strstr(out, (s)) != NULL)

FIXTURE(sample) {
	int unused;
};

FIXTURE_SETUP(sample)
{
	if (sample_rc == -2)
		sample_rc = run_sample(out, sizeof(out));
	ASSERT_NE(-1, sample_rc);
}

FIXTURE_TEARDOWN(sample)
{
}

TEST_F(sample, tap_plan_results_and_exit_status)
{
	ASSERT_EQ(1, sample_rc);
	ASSERT_TRUE(HAS("TAP version 13\n1..11\n"));
	ASSERT_TRUE(HAS("ok 1 global.passes\n"));
	ASSERT_TRUE(HAS("not ok 2 global.assert_fails\n"));
	ASSERT_TRUE(HAS("not ok 3 global.expect_fails_but_continues\n"));
	ASSERT_TRUE(HAS("not ok 4 global.errno_assert_fails\n"));
	ASSERT_TRUE(HAS("ok 5 # SKIP no hardware 42\n"));
	ASSERT_TRUE(HAS("ok 6 # SKIP helper found no hardware 7\n"));
	ASSERT_TRUE(HAS("not ok 7 global.hangs\n"));
	ASSERT_TRUE(HAS("not ok 8 global.crashes\n"));
	ASSERT_TRUE(HAS("not ok 9 fx.fixture_assert_runs_teardown\n"));
	ASSERT_TRUE(HAS("ok 10 fx.fixture_passes\n"));
	ASSERT_TRUE(HAS("ok 11 # SKIP setup found no hardware\n"));
	ASSERT_TRUE(HAS("# Totals: pass:2 fail:6 xfail:0 xpass:0 skip:3 error:0"));
}

TEST_F(sample, assert_stops_expect_continues)
{
	ASSERT_FALSE(HAS("NOT REACHED"));
	ASSERT_TRUE(HAS("reached after EXPECT"));
	ASSERT_TRUE(HAS("Expected 1 (1) == 2 (2)"));
	/* ASSERT_ERRNO names the call and both errnos */
	ASSERT_TRUE(HAS("close(-1): rc -1 errno 9 (Bad file descriptor), expected -1 ENOENT"));
}

TEST_F(sample, timeout_and_signal_reported)
{
	/* our default timeout, redefined by the file, applies */
	ASSERT_TRUE(HAS("# hangs: Test terminated by timeout"));
	ASSERT_TRUE(HAS("# crashes: Test terminated unexpectedly by signal 11"));
}

TEST_F(sample, teardown_after_failed_assert_not_after_setup_skip)
{
	ASSERT_TRUE(HAS("fixture_assert_runs_teardown:teardown saw 42"));
	ASSERT_FALSE(HAS("skipfx body ran"));
	ASSERT_FALSE(HAS("skipfx teardown ran"));
}

TEST_F(sample, case_index_counts_cases_in_run_order)
{
	ASSERT_TRUE(HAS(":passes:case index 0\n"));
	ASSERT_TRUE(HAS(":fixture_passes:case index 9\n"));
}

TEST_HARNESS_MAIN
