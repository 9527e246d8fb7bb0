/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One test program in several translation units (one concern per file, the
 * way the kernel splits a driver into objects): every file of the program
 * includes this header instead of kselftest_exa.h, before any FIXTURE();
 * exactly one of them ends with TEST_HARNESS_MAIN.
 *
 * The 6.1 harness is written for one file: its test and fixture lists are
 * static, and it defines _fixture_global, __active_test, __run_test() and
 * __wait_for_test() (and a fixture's setup and teardown) with external
 * linkage.  Here those definitions are weak, so the program keeps one of
 * each and every file registers into the same lists: the cases of a
 * fixture run in the order of the files on the link line (their
 * constructors run in that order, .init_array), within a file in
 * definition order; fixtures in the order in which they are first
 * registered, "global" (the plain TEST()s) first.  Hence:
 *
 *   FIXTURE(name)         may appear in every file (in a header they
 *                         share); the first file on the link line that has
 *                         it registers the fixture, once.
 *   FIXTURE_SETUP(name)   and FIXTURE_TEARDOWN(name): define them once, or
 *                         in a header every file includes (one copy is
 *                         kept); declare them with a trailing ';' where a
 *                         file has TEST_F()s without the definition.
 *   ksft_case_index()     counts over the whole program in every file.
 *
 * The harness detects the constructors' direction per file and relies on
 * it running forward (.init_array, GNU ld and glibc): test_split_harness
 * (selftests/host/) checks the order and the case indices.
 */
#ifndef KSELFTEST_SPLIT_H
#define KSELFTEST_SPLIT_H

#include "kselftest_exa.h"

#pragma weak _fixture_global
#pragma weak __active_test
#pragma weak __run_test
#pragma weak __wait_for_test

#define __KSFT_SPLIT_PRAGMA(x) _Pragma(#x)
#define __KSFT_SPLIT_WEAK(sym) __KSFT_SPLIT_PRAGMA(weak sym)

/* One fixture object for the program, registered by the first file. */
#undef FIXTURE
#define FIXTURE(fixture_name) \
	FIXTURE_VARIANT(fixture_name); \
	__KSFT_SPLIT_WEAK(_##fixture_name##_fixture_object) \
	struct __fixture_metadata _##fixture_name##_fixture_object = \
		{ .name = #fixture_name, }; \
	static void __attribute__((constructor)) \
	_register_##fixture_name##_data(void) \
	{ \
		if (!_##fixture_name##_fixture_object.prev) \
			__register_fixture(&_##fixture_name##_fixture_object); \
	} \
	FIXTURE_DATA(fixture_name)

/* A fixture's setup and teardown: weak, one copy is kept. */
#define __KSFT_SPLIT_FIXTURE_FN(fixture_name, fn) \
	__attribute__((weak)) void fixture_name##_##fn( \
		struct __test_metadata __attribute__((unused)) *_metadata, \
		FIXTURE_DATA(fixture_name) __attribute__((unused)) *self, \
		const FIXTURE_VARIANT(fixture_name) \
			__attribute__((unused)) *variant)

#undef FIXTURE_SETUP
#define FIXTURE_SETUP(fixture_name) __KSFT_SPLIT_FIXTURE_FN(fixture_name, setup)
#undef FIXTURE_TEARDOWN
#define FIXTURE_TEARDOWN(fixture_name) __KSFT_SPLIT_FIXTURE_FN(fixture_name, teardown)

#endif /* KSELFTEST_SPLIT_H */
