// SPDX-License-Identifier: GPL-2.0
/*
 * Fault-injection pass (tests.list: nodes = 1; part of `make check-debug`,
 * Documentation/debug-kernel.md).  Needs a kernel with CONFIG_FAIL_FUNCTION,
 * CONFIG_FAILSLAB and CONFIG_FAIL_PAGE_ALLOC (the debug kernel); skips on
 * the stock kernel.
 *
 * For every function our modules mark with ALLOW_ERROR_INJECTION, fail_function
 * (debugfs) is armed to return -ENOMEM, restricted to one child process
 * (task-filter + /proc/self/make-it-fail), while the child runs the user
 * paths that reach the function: open, packet/mailbox allocation and mmap,
 * RDMA registration, generic netlink PDID binding on /dev/exanet0; open,
 * queue mmap and region registration on /dev/extoll/rma2.  Each must come
 * back as ENOMEM, the driver counters in sysfs must be back at their starting
 * values once the child is gone, the path must work again right after, and
 * the kernel log must show no splat.  failslab and fail_page_alloc then fail
 * one allocation of the child at a series of points along every path:
 * success or a clean error code, nothing left behind.  kmemleak is scanned
 * by the runner after the run (run-tests --kmemleak).
 *
 * Each test prints "# injected_failures N" (the failures the kernel actually
 * injected, from the fault attributes' "times" countdown).
 *
 * fail_function injects from a kprobe.  On a kernel with KPROBES_ON_FTRACE
 * (the debug kernel: FUNCTION_TRACER + DYNAMIC_FTRACE) the kprobe sits on
 * the function's ftrace call and its handler runs in the calling task, so
 * the task filter works.  Without it the kprobe is an int3 whose handler
 * runs in NMI context, where the task filter never matches: there the test
 * injects unfiltered for the duration of the child's run (nothing else on
 * the node uses our devices meanwhile).  /sys/kernel/debug/kprobes/list
 * says which ("[FTRACE]"); every fail_function test prints its mode
 * ("# fail_function mode: ...").
 */
#include <ctype.h>
#include <stdbool.h>
#include <sys/mount.h>

#include "exa_test.h"
#include <exa_domain.h>
#include <exanet.h>
#include <extoll.h>

#define DBGFS		"/sys/kernel/debug"
#define FAIL_FUNCTION	DBGFS "/fail_function"
#define FAILSLAB	DBGFS "/failslab"
#define FAIL_PAGE	DBGFS "/fail_page_alloc"
#define TIMES		1000
#define REG_BYTES	(64 * 1024)

enum path {
	P_EX_OPEN,	/* open /dev/exanet0, GET_INFO */
	P_EX_PKT,	/* + PKT_ALLOC, mmap the packet page */
	P_EX_MBOX,	/* + MBOX_ALLOC, mmap registers and queue */
	P_EX_RDMA,	/* + REG_MR of 64 KiB (pinned): rank, pin, IOMMU map */
	P_EX_BIND,	/* generic netlink PDID_BIND of the child, then unbind */
	P_XT_RMA2,	/* open /dev/extoll/rma2, mmap the queue, REGISTER_REGION */
	P_NR
};

static const char *const path_name[P_NR] = {
	"exanet open", "exanet packet interface", "exanet mailbox", "exanet RDMA registration",
	"exanet netlink bind", "extoll rma2 open/mmap/register",
};

static const char *const counter_files[] = {
	"/sys/class/exanet/exanet0/pkt_in_use",
	"/sys/class/exanet/exanet0/mbox_in_use",
	"/sys/class/exanet/exanet0/rdma_ranks_in_use",
	"/sys/class/exanet/exanet0/rdma_pages_in_use",
	"/sys/class/exanet/exanet0/rdma_registered_pages",
	"/sys/class/exanet/exanet0/rdma_registrations",
	"/sys/class/exanet/exanet0/user_usage",
	"/sys/class/extoll/extoll0-rma2/vpids_in_use",
	"/sys/class/extoll/extoll0-rma2/registered_pages",
	"/sys/class/extoll/extoll0-rma2/pinned_pages",
	"/sys/class/extoll/extoll0-rma2/atu_entries",
	"/sys/class/extoll/extoll0-rma2/queue_bytes",
	"/sys/class/extoll/extoll0-rma2/user_usage",
};

/* ------------------------------------------------------------ the paths */

static int err(void)
{
	return errno ? errno : EIO;
}

static int path_exanet(enum path p)
{
	struct exanet_info info;
	int fd, ret = 0;

	fd = open("/dev/exanet0", O_RDWR);
	if (fd < 0)
		return err();
	if (ioctl(fd, EXANET_IOC_GET_INFO, &info)) {
		ret = err();
		goto out;
	}
	if (p == P_EX_PKT) {
		struct exanet_pkt_alloc pa = { 0 };
		void *m;

		if (ioctl(fd, EXANET_IOC_PKT_ALLOC, &pa)) {
			ret = err();
			goto out;
		}
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)pa.mmap_offset);
		if (m == MAP_FAILED) {
			ret = err();
			goto out;
		}
		munmap(m, 4096);
		if (ioctl(fd, EXANET_IOC_PKT_FREE, &pa.iface))
			ret = err();
	} else if (p == P_EX_MBOX) {
		struct exanet_mbox_alloc ma = { .nslots = EXANET_MBOX_MIN_SLOTS };
		void *r, *q;

		if (ioctl(fd, EXANET_IOC_MBOX_ALLOC, &ma)) {
			ret = err();
			goto out;
		}
		r = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)ma.regs_offset);
		if (r == MAP_FAILED) {
			ret = err();
			goto out;
		}
		q = mmap(NULL, ma.queue_size, PROT_READ, MAP_SHARED, fd, (off_t)ma.queue_offset);
		if (q == MAP_FAILED)
			ret = err();
		else
			munmap(q, ma.queue_size);
		munmap(r, 4096);
	} else if (p == P_EX_RDMA) {
		struct exanet_reg_mr mr = { .len = REG_BYTES };
		void *buf = mmap(NULL, REG_BYTES, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (buf == MAP_FAILED) {
			ret = err();
			goto out;
		}
		memset(buf, 1, REG_BYTES);
		mr.addr = (uintptr_t)buf;
		if (ioctl(fd, EXANET_IOC_REG_MR, &mr))
			ret = err();
		else if (ioctl(fd, EXANET_IOC_DEREG_MR, &mr.handle))
			ret = err();
		munmap(buf, REG_BYTES);
	}
out:
	close(fd);
	return ret;
}

static int path_rma2(void)
{
	struct rma2_ioc_info info;
	struct rma2_ioc_region r = { .len = REG_BYTES };
	void *q, *buf;
	int fd, ret = 0;

	fd = open(EXTOLL_DEV_RMA2, O_RDWR);
	if (fd < 0)
		return err();
	if (ioctl(fd, RMA2_IOCTL_GET_INFO, &info)) {
		ret = err();
		goto out;
	}
	q = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)info.notiq_offset);
	if (q == MAP_FAILED) {
		ret = err();
		goto out;
	}
	munmap(q, 4096);
	buf = mmap(NULL, REG_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		ret = err();
		goto out;
	}
	memset(buf, 1, REG_BYTES);
	r.addr = (uintptr_t)buf;
	if (ioctl(fd, RMA2_IOCTL_REGISTER_REGION, &r))
		ret = err();
	else if (ioctl(fd, RMA2_IOCTL_UNREGISTER_REGION, &r))
		ret = err();
	munmap(buf, REG_BYTES);
out:
	close(fd);
	return ret;
}

static int run_path(enum path p)
{
	int ret;

	switch (p) {
	case P_EX_BIND:
		ret = exa_genl_pdid_bind(getpid(), EXA_DOMAIN_JOB_MIN + 4242);
		if (ret)
			return -ret;
		/* the binding ends with the process anyway */
		exa_genl_pdid_unbind(getpid());
		return 0;
	case P_XT_RMA2:
		return path_rma2();
	default:
		return path_exanet(p);
	}
}

static bool path_present(enum path p)
{
	if (p == P_XT_RMA2)
		return access(EXTOLL_DEV_RMA2, F_OK) == 0;
	return access("/dev/exanet0", F_OK) == 0;
}

/* --------------------------------------------------------------- debugfs */

static int put(const char *dir, const char *file, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static long get(const char *dir, const char *file)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return exa_read_long(path);
}

/* Arm a fault attribute for tasks with make-it-fail set only. */
static int arm(const char *dir, int times, long space)
{
	char v[32];
	int ret;

	ret = put(dir, "task-filter", "Y");
	ret = ret ?: put(dir, "verbose", "0");
	ret = ret ?: put(dir, "interval", "1");
	snprintf(v, sizeof(v), "%ld", space);
	ret = ret ?: put(dir, "space", v);
	snprintf(v, sizeof(v), "%d", times);
	ret = ret ?: put(dir, "times", v);
	ret = ret ?: put(dir, "probability", "100");
	return ret;
}

static void disarm(const char *dir)
{
	put(dir, "probability", "0");
	put(dir, "times", "0");
	put(dir, "space", "0");
}

/*
 * Is the kprobe fail_function placed on fn (armed: "inject" written) a
 * kprobe on ftrace?  1 yes, 0 no (int3), -1 not found in the list.
 */
static int kprobe_on_ftrace(const char *fn)
{
	char line[512], want[128];
	int ret = -1;
	FILE *f = fopen(DBGFS "/kprobes/list", "r");

	if (!f)
		return -1;
	/* "<addr>  k  <fn>+0x0  [module] [FTRACE]" */
	snprintf(want, sizeof(want), " %s+0x", fn);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want)) {
			ret = strstr(line, "[FTRACE]") != NULL;
			break;
		}
	fclose(f);
	return ret;
}

static bool injectable(const char *fn)
{
	char line[256];
	size_t n = strlen(fn);
	bool found = false;
	FILE *f = fopen(FAIL_FUNCTION "/injectable", "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, fn, n) && isspace((unsigned char)line[n]);
	fclose(f);
	return found;
}

/* ------------------------------------------------------- checks around */

/* Driver counters of both devices, as one string. */
static void counters(char *out, size_t size)
{
	size_t used = 0;
	unsigned int i;

	out[0] = '\0';
	for (i = 0; i < sizeof(counter_files) / sizeof(counter_files[0]); i++) {
		char buf[1024];
		ssize_t n = 0;
		int fd = open(counter_files[i], O_RDONLY);

		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
		}
		buf[n > 0 ? n : 0] = '\0';
		used += snprintf(out + used, used < size ? size - used : 0, "%s=%s;",
				 strrchr(counter_files[i], '/') + 1, buf);
	}
}

/* Kernel log lines of a splat (not "Call Trace": failed allocations log
 * their stack on purpose). */
static int kmsg_splats(void)
{
	static const char *const bad[] = { "BUG:", "WARNING:", "Oops", "general protection",
					   "UBSAN", "KASAN", "KFENCE", "DMA-API", "Kernel panic" };
	char rec[8192];
	int fd, n = 0;
	ssize_t len;
	unsigned int i;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	while ((len = read(fd, rec, sizeof(rec) - 1)) > 0 || (len < 0 && errno == EPIPE)) {
		if (len <= 0)
			continue;
		rec[len] = '\0';
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (strstr(rec, bad[i])) {
				n++;
				break;
			}
	}
	close(fd);
	return n;
}

/* Run path p in a child; make_it_fail: the child is subject to the armed
 * fault attributes.  Returns the child's errno (0 = path worked), or 128+sig. */
static int child_path(enum path p, bool make_it_fail)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (make_it_fail) {
			int fd = open("/proc/self/make-it-fail", O_WRONLY);

			if (fd < 0 || write(fd, "1", 1) != 1)
				_exit(126);
			close(fd);
		}
		_exit(run_path(p));
	}
	return exa_wait_child(pid, 120000);
}

/* The errors an allocation failure may legitimately turn into. */
static bool clean_error(int e)
{
	return e == 0 || e == ENOMEM || e == EAGAIN || e == ENOBUFS || e == ENOSPC ||
	       e == ENFILE || e == EMFILE;
}

/* ------------------------------------------------------------- the tests */

struct target {
	const char *fn;
	unsigned int paths;	/* 1 << enum path */
};

static const struct target targets[] = {
	{ "exa_quota_user_get", 1 << P_EX_OPEN | 1 << P_XT_RMA2 },
	{ "exa_quota_charge", 1 << P_EX_PKT | 1 << P_XT_RMA2 },
	{ "exa_cg_charge", 1 << P_EX_OPEN | 1 << P_XT_RMA2 },
	{ "exa_dma_buf_alloc", 1 << P_EX_MBOX | 1 << P_XT_RMA2 },
	{ "exa_umem_get", 1 << P_EX_RDMA | 1 << P_XT_RMA2 },
	{ "exa_iospace_map", 1 << P_EX_RDMA },
	{ "exa_domain_bind", 1 << P_EX_BIND },
	{ "exanet_rank_get", 1 << P_EX_RDMA },
	{ "extoll_ep_alloc_queue", 1 << P_XT_RMA2 },
};

static int need_debugfs(const char *dir)
{
	if (access(DBGFS, F_OK))
		mount("debugfs", DBGFS, "debugfs", 0, NULL);
	return access(dir, F_OK) ? -ENOENT : 0;
}

/*
 * fail_function for target t on every path reaching it that this node has
 * (a path that does not work without injection, e.g. RDMA on a node without
 * DMA contexts, is left out).  Returns the failures injected; 0 = none ran.
 */
static int inject_function(struct __test_metadata *_metadata, const struct target *t)
{
	char before[4096], after[4096], v[64];
	int injected = 0, splats, ftrace;
	bool mode_printed = false;
	unsigned int p;

	if (need_debugfs(FAIL_FUNCTION))
		SKIP_TEST("no %s (kernel without CONFIG_FAIL_FUNCTION)", FAIL_FUNCTION);
	for (p = 0; p < P_NR; p++)
		if (t->paths & 1u << p && path_present(p))
			break;
	if (p == P_NR)
		SKIP_TEST("no device with a path to %s on this node", t->fn);
	/* the device is there, so its module is loaded: the mark must be too */
	if (!injectable(t->fn))
		TH_LOG("%s is not in %s/injectable", t->fn, FAIL_FUNCTION);
	ASSERT_TRUE(injectable(t->fn));
	splats = kmsg_splats();
	for (p = 0; p < P_NR; p++) {
		int st, n;

		if (!(t->paths & 1u << p) || !path_present(p))
			continue;
		if (child_path(p, false) != 0) {
			TH_LOG("%s: %s does not work without injection here: left out",
			       t->fn, path_name[p]);
			continue;
		}
		counters(before, sizeof(before));
		put(FAIL_FUNCTION, "inject", "\n");	/* clears */
		ASSERT_EQ(0, put(FAIL_FUNCTION, "inject", t->fn));
		snprintf(v, sizeof(v), "%s/%s", FAIL_FUNCTION, t->fn);
		/* -ENOMEM; the file takes an unsigned 64-bit number */
		ASSERT_EQ(0, put(v, "retval", "0xfffffffffffffff4"));
		ASSERT_EQ(0, arm(FAIL_FUNCTION, TIMES, 0));
		ftrace = kprobe_on_ftrace(t->fn);
		if (!mode_printed) {
			printf("# fail_function mode: %s\n",
			       ftrace > 0 ? "kprobe on ftrace, task filter" :
			       ftrace == 0 ? "int3 kprobe (NMI context), unfiltered during the child's run" :
			       "kprobe not in kprobes/list, unfiltered during the child's run");
			mode_printed = true;
		}
		/*
		 * An int3 kprobe's handler runs in NMI context, where the task
		 * filter never matches: restrict by time instead.
		 */
		if (ftrace <= 0)
			ASSERT_EQ(0, put(FAIL_FUNCTION, "task-filter", "N"));
		st = child_path(p, true);
		n = TIMES - (int)get(FAIL_FUNCTION, "times");
		disarm(FAIL_FUNCTION);
		put(FAIL_FUNCTION, "inject", "\n");
		TH_LOG("%s on %s: child got %s, %d failure(s) injected", t->fn, path_name[p],
		       st > 0 && st < 128 ? strerror(st) : "no error", n);
		EXPECT_EQ(ENOMEM, st);
		EXPECT_LE(1, n);
		injected += n > 0 ? n : 0;
		counters(after, sizeof(after));
		if (strcmp(before, after))
			TH_LOG("counters before: %s\n# counters after:  %s", before, after);
		EXPECT_EQ(0, strcmp(before, after));
		/* and the path works again */
		EXPECT_EQ(0, child_path(p, false));
	}
	EXPECT_EQ(splats, kmsg_splats());
	printf("# injected_failures %d\n", injected);
	return injected;
}

#define FUNCTION_TEST(i, name)							\
	TEST(fail_function_##name)								\
	{									\
		if (!inject_function(_metadata, &targets[i]))			\
			SKIP_TEST("no path to %s on this node", targets[i].fn);	\
	}

FUNCTION_TEST(0, exa_quota_user_get)
FUNCTION_TEST(1, exa_quota_charge)
FUNCTION_TEST(2, exa_cg_charge)
FUNCTION_TEST(3, exa_dma_buf_alloc)
FUNCTION_TEST(4, exa_umem_get)
FUNCTION_TEST(5, exa_iospace_map)
FUNCTION_TEST(6, exa_domain_bind)
FUNCTION_TEST(7, exanet_rank_get)
FUNCTION_TEST(8, extoll_ep_alloc_queue)

/*
 * One allocation failure of the child (failslab or fail_page_alloc), after
 * 'space' bytes of allocations went through, on every path: the path
 * succeeds or fails cleanly, counters are back, the path works again.
 */
static void inject_allocations(struct __test_metadata *_metadata, const char *dir)
{
	static const long spaces[] = { 0, 64, 256, 1024, 4096, 16384, 65536, 262144 };
	char before[4096], after[4096];
	int injected = 0, splats, ran = 0;
	unsigned int p, s;

	if (need_debugfs(dir))
		SKIP_TEST("no %s (kernel without fault injection)", dir);
	put(dir, "ignore-gfp-wait", "N");
	put(dir, "ignore-gfp-highmem", "N");
	put(dir, "min-order", "0");
	splats = kmsg_splats();
	for (p = 0; p < P_NR; p++) {
		if (!path_present(p) || child_path(p, false) != 0)
			continue;
		ran++;
		for (s = 0; s < sizeof(spaces) / sizeof(spaces[0]); s++) {
			int st, n;

			counters(before, sizeof(before));
			ASSERT_EQ(0, arm(dir, 1, spaces[s]));
			st = child_path(p, true);
			n = 1 - (int)get(dir, "times");
			disarm(dir);
			if (!clean_error(st))
				TH_LOG("%s, space %ld: child ended with %d (%s)", path_name[p],
				       spaces[s], st, st > 0 && st < 128 ? strerror(st) : "signal");
			EXPECT_TRUE(clean_error(st));
			injected += n > 0 ? n : 0;
			counters(after, sizeof(after));
			if (strcmp(before, after))
				TH_LOG("%s, space %ld: counters before: %s\n# after: %s",
				       path_name[p], spaces[s], before, after);
			EXPECT_EQ(0, strcmp(before, after));
			EXPECT_EQ(0, child_path(p, false));
		}
	}
	if (!ran)
		SKIP_TEST("no device path works on this node");
	TH_LOG("%s: %d path(s), %d failure(s) injected", dir, ran, injected);
	EXPECT_LE(1, injected);
	EXPECT_EQ(splats, kmsg_splats());
	printf("# injected_failures %d\n", injected);
}

/* The longest plain TEST() of this file may take 1800 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 1800

TEST(failslab_paths)
{
	inject_allocations(_metadata, FAILSLAB);
}

TEST(fail_page_alloc_paths)
{
	inject_allocations(_metadata, FAIL_PAGE);
}

TEST_HARNESS_MAIN
