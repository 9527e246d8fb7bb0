// SPDX-License-Identifier: GPL-2.0
/*
 * The second file of test_split_harness (test_split_harness.c): its cases
 * run after the first file's of the same fixture, and a fixture of its own
 * after those of the first file.
 */
#include "test_split_harness.h"

FIXTURE(later) {
	int unused;
};

FIXTURE_SETUP(later)
{
}

FIXTURE_TEARDOWN(later)
{
}

TEST(b_second)
{
	ASSERT_EQ(1, ksft_case_index(_metadata));
}

TEST_F(split, b_one)
{
	ASSERT_EQ(42, self->v);	/* the first file's setup */
	ASSERT_EQ(4, ksft_case_index(_metadata));
}

/* The whole program as this file sees the harness's lists. */
TEST_F(split, b_order)
{
	const struct __fixture_metadata *f;
	const struct __test_metadata *t;
	char seen[256] = "";

	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s%s.%s",
				 seen[0] ? " " : "", f->name, t->name);
	ASSERT_STREQ(SPLIT_ORDER, seen);
	ASSERT_EQ(5, ksft_case_index(_metadata));
}

TEST_F(later, b_last)
{
	ASSERT_EQ(6, ksft_case_index(_metadata));
}
