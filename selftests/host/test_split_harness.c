// SPDX-License-Identifier: GPL-2.0
/*
 * kselftest_split.h: a harness program in two translation units links, runs
 * every case once, in the order of the files on the link line (within a
 * file in definition order, fixtures in the order they first register),
 * with one fixture setup and teardown, and ksft_case_index() counts over
 * the whole program in both files.  The cases of the second file:
 * test_split_harness_b.c.
 */
#include "test_split_harness.h"

FIXTURE_SETUP(split)
{
	self->v = 42;
}

FIXTURE_TEARDOWN(split)
{
	EXPECT_EQ(42, self->v);
}

TEST(a_first)
{
	ASSERT_EQ(0, ksft_case_index(_metadata));
}

TEST_F(split, a_one)
{
	ASSERT_EQ(42, self->v);
	ASSERT_EQ(2, ksft_case_index(_metadata));
}

TEST_F(split, a_two)
{
	ASSERT_EQ(3, ksft_case_index(_metadata));
}

TEST_HARNESS_MAIN
