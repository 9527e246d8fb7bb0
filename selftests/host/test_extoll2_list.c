// SPDX-License-Identifier: GPL-2.0
/*
 * The extoll2_list object pools exported by librma2 (extoll2_list.h),
 * called through the shared library: construction rules, get/put/free
 * count, growth, alignment and zeroing of handed-out elements,
 * destruction, and hostile arguments (NULL, never constructed, sizes whose
 * products overflow) answered with -1 / NULL instead of a crash.
 */
#include <extoll2_list.h>
#include <stdint.h>

#include "../lib/kselftest_exa.h"

struct elem {
	extoll_list_head_t link;
	uint64_t payload[5];
};

TEST(construct_rejects_bad_arguments)
{
	extoll2_list_t l;

	EXPECT_EQ(-1, extoll2_construct_list(NULL, sizeof(struct elem), 16, 4, 4));
	/* an element must hold the list head */
	EXPECT_EQ(-1, extoll2_construct_list(&l, sizeof(extoll_list_head_t) - 1, 16, 4, 4));
	EXPECT_EQ(-1, extoll2_construct_list(&l, sizeof(struct elem), 16, 4, 0));	/* no growth */
	EXPECT_EQ(-1, extoll2_construct_list(&l, sizeof(struct elem), 24, 4, 4));	/* not 2^n */
	EXPECT_EQ(-1, extoll2_construct_list(&l, SIZE_MAX - 3, 16, 4, 4));	/* rounding wraps */
	/* elements * size does not fit in memory (or wraps size_t) */
	EXPECT_EQ(-1, extoll2_construct_list(&l, SIZE_MAX / 2 + 1, 16, 4, 4));
	EXPECT_EQ(-1, extoll2_construct_list(&l, (size_t)1 << 40, 16, 1u << 30, 4));
	EXPECT_EQ(-1, extoll2_construct_list(&l, 16, (size_t)1 << 63, 2, 4));
	/* a failed construction leaves a list that refuses everything */
	EXPECT_TRUE(extoll2_list_get(&l) == NULL);
	EXPECT_EQ(-1, extoll2_list_put(&l, &l));
	extoll2_destruct_list(&l);
}

TEST(get_put_count_and_growth)
{
	extoll2_list_t l;
	struct elem *e[40];

	ASSERT_EQ(0, extoll2_construct_list(&l, sizeof(struct elem), 64, 8, 16));
	EXPECT_EQ(8, extoll2_list_free_count(&l));
	for (int i = 0; i < 40; i++) {
		e[i] = extoll2_list_get(&l);
		ASSERT_TRUE(e[i] != NULL);
		EXPECT_EQ(0, (uintptr_t)e[i] & 63);		/* aligned */
		for (int k = 0; k < 5; k++)
			EXPECT_TRUE(e[i]->payload[k] == 0);	/* zeroed */
		memset(e[i]->payload, 0xab, sizeof(e[i]->payload));
		for (int j = 0; j < i; j++)
			ASSERT_TRUE(e[j] != e[i]);		/* distinct */
	}
	/* 8 initial + 16 + 16: empty again */
	EXPECT_EQ(0, extoll2_list_free_count(&l));
	for (int i = 0; i < 40; i++)
		EXPECT_EQ(0, extoll2_list_put(&l, e[i]));
	EXPECT_EQ(40, extoll2_list_free_count(&l));
	/* reused, and zeroed again */
	e[0] = extoll2_list_get(&l);
	ASSERT_TRUE(e[0] != NULL);
	for (int k = 0; k < 5; k++)
		EXPECT_TRUE(e[0]->payload[k] == 0);
	EXPECT_EQ(39, extoll2_list_free_count(&l));
	extoll2_destruct_list(&l);
	EXPECT_EQ(0, extoll2_list_free_count(&l));
	extoll2_destruct_list(&l);	/* twice is harmless */
}

TEST(lazy_pool_and_small_alignment)
{
	extoll2_list_t l;
	void *a, *b;

	/* no initial elements, alignment below a pointer's is raised */
	ASSERT_EQ(0, extoll2_construct_list(&l, sizeof(extoll_list_head_t), 1, 0, 1));
	EXPECT_EQ(0, extoll2_list_free_count(&l));
	a = extoll2_list_get(&l);
	b = extoll2_list_get(&l);
	ASSERT_TRUE(a && b && a != b);
	EXPECT_EQ(0, (uintptr_t)a % sizeof(void *));
	EXPECT_EQ(0, extoll2_list_free_count(&l));
	EXPECT_EQ(0, extoll2_list_put(&l, a));
	EXPECT_EQ(0, extoll2_list_put(&l, b));
	EXPECT_EQ(2, extoll2_list_free_count(&l));
	extoll2_destruct_list(&l);
}

TEST(null_and_unconstructed_lists)
{
	extoll2_list_t l;
	int x;

	EXPECT_TRUE(extoll2_list_get(NULL) == NULL);
	EXPECT_EQ(-1, extoll2_list_put(NULL, &x));
	EXPECT_EQ(0, extoll2_list_free_count(NULL));
	extoll2_destruct_list(NULL);
	memset(&l, 0, sizeof(l));	/* zeroed, never constructed */
	EXPECT_TRUE(extoll2_list_get(&l) == NULL);
	EXPECT_EQ(-1, extoll2_list_put(&l, &x));
	extoll2_destruct_list(&l);
	ASSERT_EQ(0, extoll2_construct_list(&l, sizeof(struct elem), 16, 1, 1));
	EXPECT_EQ(-1, extoll2_list_put(&l, NULL));
	EXPECT_EQ(1, extoll2_list_free_count(&l));
	extoll2_destruct_list(&l);
}

TEST_HARNESS_MAIN
