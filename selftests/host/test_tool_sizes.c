// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the tools' one size-list parser (tools/common/tool_sizes.c):
 * "a,b,c" exactly those, "A-B" A, 2A, 4A, ... up to B.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tool_sizes.h"
#include "../lib/kselftest_exa.h"

#define CAP 64

TEST(list_is_exactly_those_in_order)
{
	unsigned int s[CAP];

	ASSERT_EQ(3, tool_parse_sizes("64,8,16", 1, 64, s, CAP));
	ASSERT_EQ(64u, s[0]);
	ASSERT_EQ(8u, s[1]);
	ASSERT_EQ(16u, s[2]);
	ASSERT_EQ(1, tool_parse_sizes("4096", 1, 8192, s, CAP));
	ASSERT_EQ(4096u, s[0]);
	ASSERT_EQ(2, tool_parse_sizes("8,8", 1, 64, s, CAP));	/* repeats kept */
	ASSERT_EQ(2, tool_parse_sizes("0x10,010", 1, 64, s, CAP));	/* hex, octal */
	ASSERT_EQ(16u, s[0]);
	ASSERT_EQ(8u, s[1]);
}

TEST(range_doubles_from_its_start)
{
	unsigned int s[CAP];

	ASSERT_EQ(7, tool_parse_sizes("1-64", 1, 64, s, CAP));
	for (int i = 0; i < 7; i++)
		ASSERT_EQ(1u << i, s[i]);
	ASSERT_EQ(3, tool_parse_sizes("3-20", 1, 64, s, CAP));	/* 3, 6, 12: not 20 */
	ASSERT_EQ(12u, s[2]);
	ASSERT_EQ(7, tool_parse_sizes("1-100", 1, 128, s, CAP));	/* ends at 64 */
	ASSERT_EQ(64u, s[6]);
	ASSERT_EQ(1, tool_parse_sizes("8-8", 1, 64, s, CAP));
	ASSERT_EQ(8u, s[0]);
	ASSERT_EQ(23, tool_parse_sizes("1-4194304", 1, 4u << 20, s, CAP));
	ASSERT_EQ(4u << 20, s[22]);
	/* the largest range of unsigned sizes does not overflow */
	ASSERT_EQ(32, tool_parse_sizes("1-4294967295", 1, 4294967295u, s, CAP));
	ASSERT_EQ(1u << 31, s[31]);
}

TEST(lists_of_ranges_and_sizes)
{
	unsigned int s[CAP];

	ASSERT_EQ(4, tool_parse_sizes("1-4,60", 1, 64, s, CAP));
	ASSERT_EQ(4u, s[2]);
	ASSERT_EQ(60u, s[3]);
	ASSERT_EQ(5, tool_parse_sizes("100,8-32,2", 1, 128, s, CAP));
	ASSERT_EQ(100u, s[0]);
	ASSERT_EQ(8u, s[1]);
	ASSERT_EQ(32u, s[3]);
	ASSERT_EQ(2u, s[4]);
}

TEST(bounds_of_the_tool)
{
	unsigned int s[CAP];

	ASSERT_EQ(-EINVAL, tool_parse_sizes("65", 1, 64, s, CAP));
	ASSERT_EQ(-EINVAL, tool_parse_sizes("0", 1, 64, s, CAP));
	ASSERT_EQ(-EINVAL, tool_parse_sizes("1-128", 1, 64, s, CAP));	/* B above max */
	ASSERT_EQ(-EINVAL, tool_parse_sizes("16-4096", 32, 4096, s, CAP));	/* A below min */
	ASSERT_EQ(-EINVAL, tool_parse_sizes("4294967296", 1, 4294967295u, s, CAP));
	/* a tool that takes 0 takes it alone, a range starts at 1 at least */
	ASSERT_EQ(2, tool_parse_sizes("0,8", 0, 64, s, CAP));
	ASSERT_EQ(0u, s[0]);
	ASSERT_EQ(-EINVAL, tool_parse_sizes("0-8", 0, 64, s, CAP));
}

TEST(bad_syntax_refused)
{
	static const char *const bad[] = {
		"", ",", "8,", ",8", "8,,16", "-5", "5-", "1-2-3", "x", "8,x", "10-2", "8 ,16",
		"1--4", "0x", "+8",
	};
	unsigned int s[CAP];

	ASSERT_EQ(-EINVAL, tool_parse_sizes(NULL, 1, 64, s, CAP));
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *list = bad[i];

		EXPECT_EQ(-EINVAL, tool_parse_sizes(list, 1, 64, s, CAP)) {
			TH_LOG("accepted '%s'", list);
		}
	}
}

TEST(more_sizes_than_room)
{
	char list[4 * (CAP + 1)] = "";
	unsigned int s[CAP + 1];

	for (int i = 0; i < CAP; i++)
		strcat(list, i ? ",8" : "8");
	ASSERT_EQ(CAP, tool_parse_sizes(list, 1, 64, s, CAP));
	strcat(list, ",8");
	ASSERT_EQ(-E2BIG, tool_parse_sizes(list, 1, 64, s, CAP));
	ASSERT_EQ(-E2BIG, tool_parse_sizes("1-64", 1, 64, s, 6));	/* 7 sizes */
	ASSERT_EQ(6, tool_parse_sizes("1-32", 1, 64, s, 6));
}

TEST_HARNESS_MAIN
