// SPDX-License-Identifier: MIT
/* Tests of selftests/lib/harness.h: runs harness_sample and checks its TAP. */
#include <limits.h>

#include "../lib/harness.h"

static char sample[PATH_MAX + 32];

static int run_sample(const char *args, char *out, size_t outlen)
{
	char cmd[PATH_MAX + 128];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", sample, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < outlen && !feof(p)) {
		size_t r = fread(out + n, 1, outlen - 1 - n, p);

		if (!r)
			break;
		n += r;
	}
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void find_sample(void)
{
	char self_path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	char *slash;

	if (n < 0)
		n = 0;
	self_path[n] = '\0';
	slash = strrchr(self_path, '/');
	if (slash)
		*slash = '\0';
	snprintf(sample, sizeof(sample), "%s/harness_sample", self_path);
}

#define OUT_SIZE 16384

TEST(tap_plan_results_and_exit_status)
{
	static char out[OUT_SIZE];

	find_sample();
	ASSERT_EQ(1, run_sample("", out, sizeof(out)));
	ASSERT_TRUE(strstr(out, "TAP version 13\n1..8\n") != NULL);
	ASSERT_TRUE(strstr(out, "ok 1 passes\n") != NULL);
	ASSERT_TRUE(strstr(out, "not ok 2 assert_fails\n") != NULL);
	ASSERT_TRUE(strstr(out, "not ok 3 expect_fails_but_continues\n") != NULL);
	ASSERT_TRUE(strstr(out, "ok 4 skips # SKIP no hardware 42\n") != NULL);
	ASSERT_TRUE(strstr(out, "not ok 5 hangs\n") != NULL);
	ASSERT_TRUE(strstr(out, "not ok 6 crashes\n") != NULL);
	ASSERT_TRUE(strstr(out, "not ok 7 fx.fixture_assert_runs_teardown\n") != NULL);
	ASSERT_TRUE(strstr(out, "ok 8 fx.fixture_passes\n") != NULL);
	ASSERT_TRUE(strstr(out, "# Totals: pass:2 fail:5 xfail:0 xpass:0 skip:1 error:0") != NULL);
}

TEST(assert_stops_expect_continues)
{
	static char out[OUT_SIZE];

	find_sample();
	run_sample("", out, sizeof(out));
	ASSERT_TRUE(strstr(out, "NOT REACHED") == NULL);
	ASSERT_TRUE(strstr(out, "reached after EXPECT") != NULL);
	ASSERT_TRUE(strstr(out, "Expected 1 (1) == 2 (2)") != NULL);
}

TEST(timeout_and_signal_reported)
{
	static char out[OUT_SIZE];

	find_sample();
	run_sample("-t hangs -t crashes", out, sizeof(out));
	ASSERT_TRUE(strstr(out, "1..2\n") != NULL);
	ASSERT_TRUE(strstr(out, "hangs: test timed out after 1 s") != NULL);
	ASSERT_TRUE(strstr(out, "crashes: test terminated by signal 11") != NULL);
}

TEST(fixture_teardown_runs_after_failed_assert)
{
	static char out[OUT_SIZE];

	find_sample();
	ASSERT_EQ(1, run_sample("-t fx.fixture_assert_runs_teardown", out, sizeof(out)));
	ASSERT_TRUE(strstr(out, "# teardown saw 42") != NULL);
	ASSERT_EQ(0, run_sample("-t fx.fixture_passes -t passes -t skips", out, sizeof(out)));
	ASSERT_TRUE(strstr(out, "1..3\n") != NULL);
}

TEST(list_option)
{
	static char out[OUT_SIZE];

	find_sample();
	ASSERT_EQ(0, run_sample("-l", out, sizeof(out)));
	ASSERT_TRUE(strstr(out, "passes\nassert_fails\n") != NULL);
	ASSERT_TRUE(strstr(out, "TAP") == NULL);
}

TEST_HARNESS_MAIN
