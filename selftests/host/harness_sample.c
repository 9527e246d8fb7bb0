// SPDX-License-Identifier: GPL-2.0
/*
 * Sample suite driven by test_harness: each case exercises one behaviour of
 * the kernel's kselftest harness as our tests use it, through
 * selftests/lib/kselftest_exa.h.  Not meant to pass.
 */
#include "../lib/kselftest_exa.h"

/* Every case of this program ends within 2 s or times out. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 2

static void skip_from_helper(struct __test_metadata *_metadata)
{
	SKIP_TEST("helper found no hardware %d", 7);
}

TEST(passes)
{
	ASSERT_EQ(1, 1);
	EXPECT_NE(1, 2);
	ASSERT_ERRNO(EBADF, close(-1));
	TH_LOG("case index %d", ksft_case_index(_metadata));
}

TEST(assert_fails)
{
	ASSERT_EQ(1, 2);
	TH_LOG("NOT REACHED");
}

TEST(expect_fails_but_continues)
{
	EXPECT_EQ(1, 2);
	TH_LOG("reached after EXPECT");
}

TEST(errno_assert_fails)
{
	ASSERT_ERRNO(ENOENT, close(-1));
	TH_LOG("NOT REACHED");
}

TEST(skips)
{
	SKIP(return, "no hardware %d", 42);
	ASSERT_EQ(0, 1);
}

TEST(skips_from_a_helper)
{
	skip_from_helper(_metadata);
	ASSERT_EQ(0, 1);
}

TEST(hangs)
{
	for (;;)
		pause();
}

TEST(crashes)
{
	raise(SIGSEGV);
}

FIXTURE(fx) {
	int value;
};

FIXTURE_SETUP(fx)
{
	self->value = 41;
}

FIXTURE_TEARDOWN(fx)
{
	TH_LOG("teardown saw %d", self->value);
}

TEST_F(fx, fixture_assert_runs_teardown)
{
	self->value++;
	ASSERT_STREQ("a", "b");
}

TEST_F(fx, fixture_passes)
{
	ASSERT_EQ(41, self->value);
	TH_LOG("case index %d", ksft_case_index(_metadata));
}

FIXTURE(skipfx) {
	int value;
};

FIXTURE_SETUP(skipfx)
{
	SKIP_TEST("setup found no hardware");
}

FIXTURE_TEARDOWN(skipfx)
{
	TH_LOG("skipfx teardown ran");
}

TEST_F(skipfx, body_not_run_after_setup_skip)
{
	TH_LOG("skipfx body ran");
}

TEST_HARNESS_MAIN
