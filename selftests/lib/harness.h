/* SPDX-License-Identifier: MIT */
/*
 * Minimal kselftest-harness-style test framework (header only).
 *
 *   TEST(name) { ... }                       a test case
 *   TEST_TIMEOUT(name, seconds) { ... }      same, with its own timeout
 *   FIXTURE(f) { fields };                   per-test state ('self')
 *   FIXTURE_SETUP(f) { ... }                 runs before each TEST_F(f, ...)
 *   FIXTURE_TEARDOWN(f) { ... }              runs after it, even on ASSERT failure
 *   TEST_F(f, name) { ... self->field ... }
 *   TEST_F_TIMEOUT(f, name, seconds)
 *   ASSERT_EQ/NE/LT/LE/GT/GE(expected, seen), ASSERT_TRUE/FALSE(x),
 *   ASSERT_STREQ(a, b): stop the test on failure; EXPECT_*: record and go on
 *   SKIP(fmt, ...): end the test as skipped
 *   TH_LOG(fmt, ...): diagnostic line ("# ...")
 *   TEST_HARNESS_MAIN: defines main()
 *
 * Every test runs in its own forked child in its own process group; the
 * parent kills the group when the test ends or its timeout expires, so a
 * hung test cannot hang the run.  Output is TAP 13.  Exit status: 0 when
 * every test passed or was skipped, 1 otherwise.  Options: -l (list),
 * -t NAME (run only NAME; repeatable).
 */
#ifndef SELFTEST_HARNESS_H
#define SELFTEST_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HARNESS_DEFAULT_TIMEOUT
#define HARNESS_DEFAULT_TIMEOUT 60
#endif
#define HARNESS_MAX_TESTS 256
#define HARNESS_EXIT_PASS 0
#define HARNESS_EXIT_FAIL 1
#define HARNESS_EXIT_SKIP 4	/* KSFT_SKIP */

struct __test_metadata;
typedef void (*__test_fn)(struct __test_metadata *);

struct __test_metadata {
	const char *name;
	__test_fn fn;
	int timeout;
	/* child side */
	int failed;
	int skipped;
	sigjmp_buf env;
};

/* Shared with the parent through an anonymous shared page. */
struct __test_result {
	char skip_reason[512];
};

static struct __test_metadata __tests[HARNESS_MAX_TESTS];
static int __test_count;
static struct __test_result *__harness_result;

/* Visible to helpers (e.g. the out-of-band library) while a test runs. */
static int harness_test_index __attribute__((unused)) = -1;
static const char *harness_test_name __attribute__((unused));

static inline void __register_test(const char *name, __test_fn fn, int timeout)
{
	if (__test_count >= HARNESS_MAX_TESTS) {
		fprintf(stderr, "harness: too many tests\n");
		abort();
	}
	__tests[__test_count].name = name;
	__tests[__test_count].fn = fn;
	__tests[__test_count].timeout = timeout;
	__test_count++;
}

#define TH_LOG(fmt, ...)						\
	do {								\
		fprintf(stdout, "# %s:%d:%s: " fmt "\n", __FILE__, __LINE__,\
			__func__, ##__VA_ARGS__);			\
		fflush(stdout);						\
	} while (0)

#define __TEST_IMPL(test_name, tmo)					\
	static void test_##test_name(struct __test_metadata *_metadata);\
	static void __attribute__((constructor)) __reg_##test_name(void)\
	{								\
		__register_test(#test_name, test_##test_name, tmo);	\
	}								\
	static void test_##test_name(struct __test_metadata *_metadata __attribute__((unused)))

#define TEST(test_name) __TEST_IMPL(test_name, HARNESS_DEFAULT_TIMEOUT)
#define TEST_TIMEOUT(test_name, seconds) __TEST_IMPL(test_name, seconds)

#define FIXTURE_DATA(fixture_name) struct __fixture_##fixture_name
#define FIXTURE(fixture_name) FIXTURE_DATA(fixture_name)
#define FIXTURE_SETUP(fixture_name)					\
	static void __setup_##fixture_name(struct __test_metadata *_metadata __attribute__((unused)), \
		FIXTURE_DATA(fixture_name) *self __attribute__((unused)))
#define FIXTURE_TEARDOWN(fixture_name)					\
	static void __teardown_##fixture_name(struct __test_metadata *_metadata __attribute__((unused)), \
		FIXTURE_DATA(fixture_name) *self __attribute__((unused)))

#define __TEST_F_IMPL(fixture_name, test_name, tmo)			\
	static void __body_##fixture_name##_##test_name(		\
		struct __test_metadata *_metadata,			\
		FIXTURE_DATA(fixture_name) *self);			\
	static void test_##fixture_name##_##test_name(struct __test_metadata *_metadata) \
	{								\
		FIXTURE_DATA(fixture_name) self;			\
		volatile int __setup_done = 0;				\
		memset(&self, 0, sizeof(self));				\
		if (sigsetjmp(_metadata->env, 0) == 0) {		\
			__setup_##fixture_name(_metadata, &self);	\
			__setup_done = 1;				\
			__body_##fixture_name##_##test_name(_metadata, &self); \
		}							\
		if (__setup_done) {					\
			/* an ASSERT in teardown must not loop back here */ \
			if (sigsetjmp(_metadata->env, 0) == 0)		\
				__teardown_##fixture_name(_metadata, &self); \
		}							\
	}								\
	static void __attribute__((constructor)) __reg_##fixture_name##_##test_name(void) \
	{								\
		__register_test(#fixture_name "." #test_name,		\
				test_##fixture_name##_##test_name, tmo);\
	}								\
	static void __body_##fixture_name##_##test_name(		\
		struct __test_metadata *_metadata __attribute__((unused)), \
		FIXTURE_DATA(fixture_name) *self __attribute__((unused)))

#define TEST_F(fixture_name, test_name)					\
	__TEST_F_IMPL(fixture_name, test_name, HARNESS_DEFAULT_TIMEOUT)
#define TEST_F_TIMEOUT(fixture_name, test_name, seconds)		\
	__TEST_F_IMPL(fixture_name, test_name, seconds)

/* Leave the test body (teardown still runs for fixtures). */
#define __harness_abort_test() siglongjmp(_metadata->env, 1)

#define SKIP(fmt, ...)							\
	do {								\
		snprintf(__harness_result->skip_reason,			\
			 sizeof(__harness_result->skip_reason), fmt, ##__VA_ARGS__); \
		_metadata->skipped = 1;					\
		__harness_abort_test();					\
	} while (0)

#define __CMP(expected, seen, op, is_assert)				\
	do {								\
		intmax_t __e = (intmax_t)(expected);			\
		intmax_t __s = (intmax_t)(seen);			\
		if (!(__e op __s)) {					\
			fprintf(stdout, "# %s:%d:%s: Expected %s (%jd) %s %s (%jd)\n", \
				__FILE__, __LINE__, __func__, #expected, __e, #op, #seen, __s); \
			fflush(stdout);					\
			_metadata->failed = 1;				\
			if (is_assert)					\
				__harness_abort_test();			\
		}							\
	} while (0)

#define ASSERT_EQ(expected, seen) __CMP(expected, seen, ==, 1)
#define ASSERT_NE(expected, seen) __CMP(expected, seen, !=, 1)
#define ASSERT_LT(expected, seen) __CMP(expected, seen, <, 1)
#define ASSERT_LE(expected, seen) __CMP(expected, seen, <=, 1)
#define ASSERT_GT(expected, seen) __CMP(expected, seen, >, 1)
#define ASSERT_GE(expected, seen) __CMP(expected, seen, >=, 1)
#define ASSERT_TRUE(x) __CMP(0, !!(x), !=, 1)
#define ASSERT_FALSE(x) __CMP(0, !!(x), ==, 1)
#define EXPECT_EQ(expected, seen) __CMP(expected, seen, ==, 0)
#define EXPECT_NE(expected, seen) __CMP(expected, seen, !=, 0)
#define EXPECT_LT(expected, seen) __CMP(expected, seen, <, 0)
#define EXPECT_LE(expected, seen) __CMP(expected, seen, <=, 0)
#define EXPECT_GT(expected, seen) __CMP(expected, seen, >, 0)
#define EXPECT_GE(expected, seen) __CMP(expected, seen, >=, 0)
#define EXPECT_TRUE(x) __CMP(0, !!(x), !=, 0)
#define EXPECT_FALSE(x) __CMP(0, !!(x), ==, 0)

#define __STRCMP(a, b, is_assert)					\
	do {								\
		const char *__a = (a), *__b = (b);			\
		if (!__a || !__b || strcmp(__a, __b)) {			\
			fprintf(stdout, "# %s:%d:%s: Expected \"%s\" == \"%s\"\n", \
				__FILE__, __LINE__, __func__,		\
				__a ? __a : "(null)", __b ? __b : "(null)"); \
			fflush(stdout);					\
			_metadata->failed = 1;				\
			if (is_assert)					\
				__harness_abort_test();			\
		}							\
	} while (0)
#define ASSERT_STREQ(a, b) __STRCMP(a, b, 1)
#define EXPECT_STREQ(a, b) __STRCMP(a, b, 0)

/* A system call that must fail with exactly 'err': returns -1, errno set. */
#define __ERRNO(err, call, is_assert)					\
	do {								\
		errno = 0;						\
		long __rc = (long)(call);				\
		int __errno = errno;					\
		if (__rc != -1 || __errno != (err)) {			\
			fprintf(stdout, "# %s:%d:%s: %s: rc %ld errno %d (%s), expected -1 %s\n", \
				__FILE__, __LINE__, __func__, #call, __rc, \
				__errno, strerror(__errno), #err);	\
			fflush(stdout);					\
			_metadata->failed = 1;				\
			if (is_assert)					\
				__harness_abort_test();			\
		}							\
	} while (0)
#define ASSERT_ERRNO(err, call) __ERRNO(err, call, 1)
#define EXPECT_ERRNO(err, call) __ERRNO(err, call, 0)

static inline void __harness_child(struct __test_metadata *t)
{
	setpgid(0, 0);
	signal(SIGALRM, SIG_DFL);
	t->failed = 0;
	t->skipped = 0;
	/* plain TEST()s jump back here on ASSERT failure */
	if (sigsetjmp(t->env, 0) == 0)
		t->fn(t);
	fflush(stdout);
	fflush(stderr);
	if (t->failed)
		_exit(HARNESS_EXIT_FAIL);
	_exit(t->skipped ? HARNESS_EXIT_SKIP : HARNESS_EXIT_PASS);
}

static inline int64_t __harness_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Returns HARNESS_EXIT_*; prints the TAP line. */
static inline int __harness_run_one(struct __test_metadata *t, int number)
{
	int status = 0, rc, timed_out = 0;
	int64_t deadline;
	pid_t pid, w;

	memset(__harness_result, 0, sizeof(*__harness_result));
	printf("#  RUN           %s ...\n", t->name);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		printf("# fork: %s\n", strerror(errno));
		printf("not ok %d %s\n", number, t->name);
		return HARNESS_EXIT_FAIL;
	}
	if (pid == 0)
		__harness_child(t);
	setpgid(pid, pid);	/* also done in the child; whichever runs first */

	deadline = __harness_now_ms() + (int64_t)t->timeout * 1000;
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			status = W_EXITCODE(HARNESS_EXIT_FAIL, 0);
			break;
		}
		if (__harness_now_ms() >= deadline) {
			timed_out = 1;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(5000);
	}
	/* reap whatever the test left behind in its process group */
	kill(-pid, SIGKILL);

	if (timed_out) {
		printf("# %s: test timed out after %d s\n", t->name, t->timeout);
		rc = HARNESS_EXIT_FAIL;
	} else if (WIFSIGNALED(status)) {
		printf("# %s: test terminated by signal %d\n", t->name, WTERMSIG(status));
		rc = HARNESS_EXIT_FAIL;
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == HARNESS_EXIT_SKIP) {
		rc = HARNESS_EXIT_SKIP;
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		rc = HARNESS_EXIT_PASS;
	} else {
		rc = HARNESS_EXIT_FAIL;
	}

	if (rc == HARNESS_EXIT_SKIP) {
		printf("#      SKIP      %s\n", t->name);
		printf("ok %d %s # SKIP %s\n", number, t->name,
		       __harness_result->skip_reason[0] ? __harness_result->skip_reason : "");
	} else if (rc == HARNESS_EXIT_PASS) {
		printf("#            OK  %s\n", t->name);
		printf("ok %d %s\n", number, t->name);
	} else {
		printf("#          FAIL  %s\n", t->name);
		printf("not ok %d %s\n", number, t->name);
	}
	fflush(stdout);
	return rc;
}

static inline int __harness_selected(const char *name, int argc, char **argv)
{
	int i, any = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc) {
			any = 1;
			if (!strcmp(argv[i + 1], name))
				return 1;
			i++;
		}
	}
	return !any;
}

static inline int test_harness_run(int argc, char **argv)
{
	int i, n = 0, number = 0, pass = 0, fail = 0, skip = 0, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-l")) {
			for (n = 0; n < __test_count; n++)
				printf("%s\n", __tests[n].name);
			return 0;
		}
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s [-l] [-t TEST]...\n", argv[0]);
			return 0;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	__harness_result = mmap(NULL, sizeof(*__harness_result), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (__harness_result == MAP_FAILED) {
		perror("harness: mmap");
		return 1;
	}
	for (i = 0; i < __test_count; i++)
		n += __harness_selected(__tests[i].name, argc, argv);
	printf("TAP version 13\n1..%d\n", n);
	for (i = 0; i < __test_count; i++) {
		if (!__harness_selected(__tests[i].name, argc, argv))
			continue;
		harness_test_index = i;
		harness_test_name = __tests[i].name;
		rc = __harness_run_one(&__tests[i], ++number);
		if (rc == HARNESS_EXIT_PASS)
			pass++;
		else if (rc == HARNESS_EXIT_SKIP)
			skip++;
		else
			fail++;
	}
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0\n", pass, fail, skip);
	return fail ? 1 : 0;
}

#define TEST_HARNESS_MAIN						\
	int main(int argc, char **argv)					\
	{								\
		return test_harness_run(argc, argv);			\
	}

#endif /* SELFTEST_HARNESS_H */
