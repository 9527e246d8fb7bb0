/* SPDX-License-Identifier: GPL-2.0 */
/*
 * test_split_harness: one harness program in two files
 * (selftests/lib/kselftest_split.h), test_split_harness.c first on the
 * link line, then test_split_harness_b.c.
 */
#ifndef TEST_SPLIT_HARNESS_H
#define TEST_SPLIT_HARNESS_H

#include "../lib/kselftest_split.h"

FIXTURE(split) {
	int v;
};

FIXTURE_SETUP(split);
FIXTURE_TEARDOWN(split);

/* The program's cases in the order they must run. */
#define SPLIT_ORDER "global.a_first global.b_second split.a_one split.a_two " \
	"split.b_one split.b_order later.b_last"

#endif /* TEST_SPLIT_HARNESS_H */
