/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's kselftest harness (kselftest_harness.h of linux-source-6.1,
 * extracted by the build: scripts/linux-source.mk) and the little that our
 * tests need beyond it.  Every C test includes this header instead of the
 * harness itself.
 *
 *   TEST_TIMEOUT_DEFAULT  60 s instead of the harness's 30: cases talk
 *                         between emulated nodes.  A file whose plain TEST()s
 *                         need longer redefines it after this include;
 *                         TEST_F_TIMEOUT() sets one case's own.
 *   SKIP_TEST(fmt, ...)   end the running case as skipped from anywhere in
 *                         its process: FIXTURE_SETUP (where 6.1's SKIP()
 *                         would still run the case's body) and helpers
 *                         (where SKIP(return, ...) only leaves the helper).
 *                         FIXTURE_TEARDOWN runs when setup had completed.
 *   ksft_case_index(_metadata)
 *                         the case's position in the program (0, 1, ...),
 *                         the same on every node of a multi-node program:
 *                         per-case ports, keys and sessions.
 *   ASSERT_ERRNO(err, call), EXPECT_ERRNO(err, call)
 *                         call returns -1 (or MAP_FAILED) with errno err.
 */
#ifndef KSELFTEST_EXA_H
#define KSELFTEST_EXA_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kselftest_harness.h>

#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 60

/* The same unwinding as a failed ASSERT, without marking a failure. */
#define SKIP_TEST(fmt, ...) \
	SKIP(longjmp(_metadata->env, 1), fmt, ##__VA_ARGS__)

static inline int ksft_case_index(const struct __test_metadata *md)
{
	const struct __fixture_metadata *f;
	const struct __test_metadata *t;
	int i = 0;

	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next, i++)
			if (t == md)
				return i;
	return -1;
}

#define __EXA_ERRNO(err, err_name, call, CHECK) do { \
	long __exa_rc; \
	int __exa_errno; \
	errno = 0; \
	__exa_rc = (long)(call); \
	__exa_errno = errno; \
	if (__exa_rc != -1 || __exa_errno != (err)) \
		TH_LOG("%s: rc %ld errno %d (%s), expected -1 %s", #call, \
		       __exa_rc, __exa_errno, strerror(__exa_errno), err_name); \
	CHECK##_EQ(-1, __exa_rc); \
	CHECK##_EQ(err, __exa_errno); \
} while (0)

#define ASSERT_ERRNO(err, call) __EXA_ERRNO(err, #err, call, ASSERT)
#define EXPECT_ERRNO(err, call) __EXA_ERRNO(err, #err, call, EXPECT)

#endif /* KSELFTEST_EXA_H */
