// SPDX-License-Identifier: MIT
/* Sample suite driven by test_harness: each case exercises one harness
 * behaviour.  Not meant to pass. */
#define HARNESS_DEFAULT_TIMEOUT 2
#include <stdio.h>

#include "../lib/harness.h"

TEST(passes)
{
	ASSERT_EQ(1, 1);
	EXPECT_NE(1, 2);
}

TEST(assert_fails)
{
	ASSERT_EQ(1, 2);
	printf("# NOT REACHED\n");
}

TEST(expect_fails_but_continues)
{
	EXPECT_EQ(1, 2);
	printf("# reached after EXPECT\n");
}

TEST(skips)
{
	SKIP("no hardware %d", 42);
	ASSERT_EQ(0, 1);
}

TEST_TIMEOUT(hangs, 1)
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
	printf("# teardown saw %d\n", self->value);
}

TEST_F(fx, fixture_assert_runs_teardown)
{
	self->value++;
	ASSERT_STREQ("a", "b");
}

TEST_F(fx, fixture_passes)
{
	ASSERT_EQ(41, self->value);
}

TEST_HARNESS_MAIN
