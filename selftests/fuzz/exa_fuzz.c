// SPDX-License-Identifier: GPL-2.0
/*
 * exa_fuzz: structured fuzzer of the ExaNet and EXTOLL drivers and device
 * models (selftests/fuzz/fuzz.h, Documentation/fuzzing.md).
 *
 *   exa_fuzz [--seconds N] [--seed N] [--procs N] [--threads N]
 *            [--iterations N] [--kill-ms N] [-t CASE]... [-l]
 *
 * or the environment: EXA_FUZZ_SECONDS (default 30), EXA_FUZZ_SEED
 * (default: random), EXA_FUZZ_PROCS (4), EXA_FUZZ_THREADS (3),
 * EXA_FUZZ_ITERATIONS (per thread, default unlimited), EXA_FUZZ_KILL
 * (mean ms between SIGKILLs of a worker, 0 = none; default 1500).  The
 * first line is always "# seed N"; "# fuzz_iterations N" follows the run.
 * TAP through the selftest harness; cases:
 *
 *   baseline          devices present, resource counters recorded
 *   run               the workers (root, nobody, uid 1000) fuzz for N
 *                     seconds; none crashes or hangs, every ioctl, netlink
 *                     command and device was reached
 *   resources_back    driver counters (interfaces, mailboxes, RDMA pages,
 *                     ranks, registrations, VPIDs, ATU and pinned pages,
 *                     queue memory, per-user usage, PDID bindings, armed
 *                     interrupts) back to the baseline
 *   exanet_still_works  loopback message and RDMA write on the NI
 *   fabric_still_works  50 messages from every node to the next one
 *   extoll_still_works  loopback RMA put and VELO message
 *   kernel_log_clean  no Oops/BUG/WARNING since the baseline
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exa_domain.h>
#include <extoll.h>
#include <libexanet.h>

#include "../extoll/extoll_test.h"
#include "../lib/exa_kid.h"
#include "fuzz.h"

struct fuzz_shared *fz;

/* What the drivers hold, read from sysfs and netlink. */
struct fz_usage {
	long v[16];
	char xa_user[512], xt_user[512];
};

static const char *const usage_names[] = {
	"exanet pkt_in_use", "exanet mbox_in_use", "exanet rdma_pages_in_use",
	"exanet rdma_ranks_in_use", "exanet rdma_registered_pages", "exanet rdma_registrations",
	"exanet irq_armed", "extoll rma2 vpids_in_use", "extoll velo2 vpids_in_use",
	"extoll registered_pages", "extoll pinned_pages", "extoll queue_bytes",
	"pdid bindings",
};
#define NUSAGE ((int)(sizeof(usage_names) / sizeof(usage_names[0])))

static struct {
	struct fz_usage usage;
	int kmsg_bad;
} *base;

static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
}

static void usage_read(struct fz_usage *u)
{
	static const char *const xa[] = {
		"pkt_in_use", "mbox_in_use", "rdma_pages_in_use", "rdma_ranks_in_use",
		"rdma_registered_pages", "rdma_registrations", "irq_armed",
	};
	unsigned int i;

	memset(u, 0, sizeof(*u));
	for (i = 0; i < 7; i++)
		u->v[i] = exa_sysfs_long(xa[i]);
	if (fz->have[FD_RMA2]) {
		u->v[7] = xt_sysfs("rma2", "vpids_in_use");
		u->v[8] = xt_sysfs("velo2", "vpids_in_use");
		u->v[9] = xt_sysfs("rma2", "registered_pages");
		u->v[10] = xt_sysfs("rma2", "pinned_pages");
		u->v[11] = xt_sysfs("rma2", "queue_bytes");
		read_text("/sys/class/extoll/extoll0-rma2/user_usage", u->xt_user,
			  sizeof(u->xt_user));
	}
	u->v[12] = exa_genl_count_bindings();
	read_text("/sys/class/exanet/exanet0/user_usage", u->xa_user, sizeof(u->xa_user));
}

static int usage_equal(const struct fz_usage *a, const struct fz_usage *b)
{
	return !memcmp(a->v, b->v, sizeof(a->v)) && !strcmp(a->xa_user, b->xa_user) &&
	       !strcmp(a->xt_user, b->xt_user);
}

/* Device counters that show the fuzzer's stores reached the models. */
static const struct {
	const char *what, *path, *name;
	int dev;
} reach[] = {
	{ "exanet packets started", "/sys/class/exanet/exanet0/counters", "tx_packets", FD_EXANET },
	{ "exanet packets refused as malformed", "/sys/class/exanet/exanet0/counters",
	  "rx_nack_bad", FD_EXANET },
	{ "exanet RDMA writes", "/sys/class/exanet/exanet0/rdma_counters", "tx_writes", FD_EXANET },
	{ "exanet RDMA reads", "/sys/class/exanet/exanet0/rdma_counters", "tx_reads", FD_EXANET },
	{ "exanet RDMA errors", "/sys/class/exanet/exanet0/rdma_counters", "tx_errors", FD_EXANET },
	{ "EXTOLL VELO messages", "/sys/class/extoll/extoll0-rma2/counters", "velo_tx", FD_RMA2 },
	{ "EXTOLL VELO dropped", "/sys/class/extoll/extoll0-rma2/counters", "velo_tx_dropped",
	  FD_RMA2 },
	{ "EXTOLL RMA commands", "/sys/class/extoll/extoll0-rma2/counters", "rma_cmds", FD_RMA2 },
	{ "EXTOLL RMA errors", "/sys/class/extoll/extoll0-rma2/counters", "rma_errors", FD_RMA2 },
	{ "EXTOLL ATU faults", "/sys/class/extoll/extoll0-rma2/counters", "atu_faults", FD_RMA2 },
};
#define NREACH ((int)(sizeof(reach) / sizeof(reach[0])))

static void reach_read(long long *v)
{
	for (int i = 0; i < NREACH; i++)
		v[i] = fz->have[reach[i].dev] ? counter_in(reach[i].path, reach[i].name) : -1;
}

/* ------------------------------------------------------------ workers */

struct fz_thread {
	struct fz_proc *p;
	struct frng r;
	int64_t end_ms;
};

static void *thread_main(void *arg)
{
	struct fz_thread *t = arg;
	uint64_t n = 0;

	while (!atomic_load(&fz->stop) && exa_now_ms() < t->end_ms &&
	       (!fz->max_iterations || n < fz->max_iterations)) {
		fuzz_one(t->p, &t->r);
		n++;
	}
	return NULL;
}

static const uid_t worker_uids[] = { 0, EXA_DOMAIN_OVERFLOW_UID, 0, 1000 };

static void worker_main(int widx, uint32_t gen, int64_t end_ms)
{
	static struct fz_proc proc;
	struct fz_thread th[16];
	pthread_t tid[16];
	uint64_t wseed = fuzz_mix(fuzz_mix(fz->seed, (uint64_t)widx + 1), gen);
	int i, n = fz->nthreads < 16 ? fz->nthreads : 16;

	signal(SIGPIPE, SIG_IGN);
	if (kid_become(worker_uids[widx % 4])) {
		fprintf(stderr, "# worker %d: cannot become uid %u\n", widx,
			worker_uids[widx % 4]);
		_exit(2);
	}
	fuzz_install_fault_handler();
	fuzz_proc_init(&proc, widx);
	for (i = 0; i < n; i++) {
		th[i].p = &proc;
		th[i].r.s = fuzz_mix(wseed, (uint64_t)i + 1);
		th[i].end_ms = end_ms;
		if (i && pthread_create(&tid[i], NULL, thread_main, &th[i])) {
			n = i;
			break;
		}
	}
	thread_main(&th[0]);
	for (i = 1; i < n; i++)
		pthread_join(tid[i], NULL);
	_exit(0);
}

static pid_t spawn_worker(int widx, uint32_t gen, int64_t end_ms)
{
	pid_t pid = fork();

	if (pid == 0)
		worker_main(widx, gen, end_ms);
	if (pid > 0) {
		fz->worker[widx].pid = pid;
		fz->worker[widx].gen = gen;
		fz->worker[widx].uid = worker_uids[widx % 4];
	}
	return pid;
}

/* Kernel stacks of a hung worker, for the report. */
static void dump_stacks(pid_t pid)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd),
		 "for t in /proc/%d/task/*; do echo \"# task $t: $(cat $t/wchan)\"; "
		 "sed 's/^/#   /' $t/stack; done 2>/dev/null", pid);
	if (system(cmd) < 0)
		perror("system");
}

/* ------------------------------------------------------------ cases */

/* The plain TEST()s of this file may take 300 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300

TEST(baseline)
{
	struct stat st;

	ASSERT_EQ(0, stat("/dev/exanet0", &st));
	TH_LOG("EXTOLL NIC: %s", fz->have[FD_RMA2] ? "present" : "absent (ExaNet only)");
	usage_read(&base->usage);
	base->kmsg_bad = exa_kmsg_bad_lines();
	for (int i = 0; i < NUSAGE; i++)
		TH_LOG("baseline %s = %ld", usage_names[i], base->usage.v[i]);
	ASSERT_LE(0, base->usage.v[0]);
	ASSERT_LE(0, base->kmsg_bad);
}

/* A campaign lasts EXA_FUZZ_SECONDS: the runner's timeout bounds it. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT (7 * 24 * 3600)
TEST(run)
{
	int64_t t0 = exa_now_ms(), end = t0 + (int64_t)fz->seconds * 1000;
	struct frng sr = { fuzz_mix(fz->seed, 0x5eed) };
	int64_t next_kill = t0 + 200 + (int64_t)frng_below(&sr, (uint64_t)fz->kill_ms * 2 + 1);
	long long before[NREACH], after[NREACH];
	int i, failures = 0, status;
	pid_t pid;

	reach_read(before);
	for (i = 0; i < fz->nprocs; i++)
		ASSERT_LT(0, spawn_worker(i, 0, end));
	while (exa_now_ms() < end) {
		usleep(20000);
		/* SIGKILL a random worker now and then, respawn it */
		if (fz->kill_ms && exa_now_ms() >= next_kill) {
			i = (int)frng_below(&sr, (uint64_t)fz->nprocs);
			if (fz->worker[i].pid > 0 && !kill(fz->worker[i].pid, SIGKILL))
				atomic_fetch_add(&fz->kills, 1);
			next_kill = exa_now_ms() + 50 +
				    (int64_t)frng_below(&sr, (uint64_t)fz->kill_ms * 2 + 1);
		}
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			for (i = 0; i < fz->nprocs; i++)
				if (fz->worker[i].pid == pid)
					break;
			if (i == fz->nprocs)
				continue;
			if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) &&
			    !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
				failures++;
				TH_LOG("worker %d (uid %u, generation %u) died: %s %d; last: %s", i,
				       fz->worker[i].uid, fz->worker[i].gen,
				       WIFSIGNALED(status) ? "signal" : "exit status",
				       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
				       fz->worker[i].last);
			}
			fz->worker[i].pid = 0;
			if (exa_now_ms() < end && spawn_worker(i, fz->worker[i].gen + 1, end) > 0)
				atomic_fetch_add(&fz->respawns, 1);
		}
	}
	atomic_store(&fz->stop, 1);
	/* every worker must come back from the kernel within 60 s */
	for (i = 0; i < fz->nprocs; i++) {
		if (fz->worker[i].pid <= 0)
			continue;
		status = exa_poll_child(fz->worker[i].pid, 60000);
		if (status == -ETIMEDOUT) {
			failures++;
			TH_LOG("worker %d (pid %d) still running 60 s after the end; last: %s", i,
			       fz->worker[i].pid, fz->worker[i].last);
			dump_stacks(fz->worker[i].pid);
			kill(fz->worker[i].pid, SIGKILL);
			exa_wait_child(fz->worker[i].pid, 60000);
		} else if (status != 0 && status != 128 + SIGKILL) {
			failures++;
			TH_LOG("worker %d ended with status %d; last: %s", i, status,
			       fz->worker[i].last);
		}
		fz->worker[i].pid = 0;
	}
	TH_LOG("%llu iterations in %.1f s, %llu worker kills, %llu forks, %llu MMIO stores "
	       "(%llu faults on revoked mappings)",
	       (unsigned long long)fz->iterations, (exa_now_ms() - t0) / 1000.0,
	       (unsigned long long)fz->kills, (unsigned long long)fz->forks,
	       (unsigned long long)fz->mmio_stores, (unsigned long long)fz->mmio_faults);
	for (i = 0; i < OP_NUM; i++)
		TH_LOG("op %-8s %8llu calls, %8llu succeeded", fuzz_op_name(i),
		       (unsigned long long)fz->ops[i], (unsigned long long)fz->ops_ok[i]);
	reach_read(after);
	for (i = 0; i < NREACH; i++)
		if (before[i] >= 0)
			TH_LOG("%s: +%lld", reach[i].what, after[i] - before[i]);
	EXPECT_EQ(0, failures);
	EXPECT_EQ(0, (int)fz->child_failures);
	ASSERT_LT(0ull, (unsigned long long)fz->iterations);
	/* coverage: with the default duration every surface is reached */
	if (fz->seconds >= 20 && !fz->max_iterations) {
		for (i = 0; i < fuzz_ioctl_count(); i++) {
			if (!fz->have[fuzz_ioctl_dev(i)])
				continue;
			if (!fz->ioctl_calls[i])
				TH_LOG("ioctl %s never called", fuzz_ioctl_name(i));
			EXPECT_LT(0ull, (unsigned long long)fz->ioctl_calls[i]);
		}
		for (i = 0; i < FUZZ_NL_CMDS; i++)
			EXPECT_LT(0ull, (unsigned long long)fz->nl_sent[i]);
		for (i = 0; i < FD_NUM; i++)
			if (fz->have[i])
				EXPECT_EQ(1, fz->opened[i]);
		EXPECT_LT(0ull, (unsigned long long)fz->ops_ok[OP_MMAP]);
		EXPECT_LT(0ull, (unsigned long long)fz->mmio_stores);
		/* the stores reached the engines: packets, RDMA, VELO and RMA */
		for (i = 0; i < NREACH; i++)
			if (before[i] >= 0 && (i == 0 || i == 2 || i == 5 || i == 7))
				EXPECT_LT(before[i], after[i]);
	}
}

#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300
TEST(resources_back)
{
	struct fz_usage now;
	int64_t end = exa_now_ms() + 30000;
	int i;

	for (;;) {
		usage_read(&now);
		if (usage_equal(&now, &base->usage) || exa_now_ms() > end)
			break;
		usleep(100000);
	}
	for (i = 0; i < NUSAGE; i++) {
		if (now.v[i] != base->usage.v[i])
			TH_LOG("%s: %ld before, %ld after", usage_names[i], base->usage.v[i],
			       now.v[i]);
		EXPECT_EQ(base->usage.v[i], now.v[i]);
	}
	if (strcmp(now.xa_user, base->usage.xa_user))
		TH_LOG("exanet user_usage before:\n%s\nafter:\n%s", base->usage.xa_user,
		       now.xa_user);
	EXPECT_STREQ(base->usage.xa_user, now.xa_user);
	if (strcmp(now.xt_user, base->usage.xt_user))
		TH_LOG("extoll user_usage before:\n%s\nafter:\n%s", base->usage.xt_user,
		       now.xt_user);
	EXPECT_STREQ(base->usage.xt_user, now.xt_user);
}

TEST(exanet_still_works)
{
	struct exanet_dev *dev;
	struct exanet_mbox *mb;
	struct exanet_pkt *pkt;
	struct exanet_msg_info mi;
	struct exanet_rdma_info ri;
	char msg[64];
	ssize_t n;

	ASSERT_EQ(0, exanet_open(NULL, &dev));
	ASSERT_EQ(0, exanet_mbox_alloc(dev, 16, &mb));
	ASSERT_EQ(0, exanet_pkt_alloc(dev, &pkt));
	for (int k = 0; k < 20; k++) {
		snprintf(msg, sizeof(msg), "alive %d after fuzzing", k);
		ASSERT_EQ(0, exanet_send_wait(pkt, exanet_node_id(dev), exanet_mbox_id(mb), msg,
					      strlen(msg), 10 * 1000000000ll, NULL));
		n = exanet_recv_wait(mb, msg + 32, 32, &mi, 10 * 1000000000ll);
		ASSERT_EQ((ssize_t)strlen(msg), n);
		ASSERT_EQ(0, memcmp(msg, msg + 32, (size_t)n));
		EXPECT_EQ(exanet_node_id(dev), mi.src_node);
	}
	exanet_close(dev);

	/* RDMA: a 256 KiB loopback write lands intact */
	ASSERT_EQ(0, exanet_open(NULL, &dev));
	if (!exanet_rdma_query(dev, &ri) && ri.num_ranks && ri.num_pages) {
		size_t len = 256 * 1024;
		uint8_t *buf = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct exanet_rdma_notif *rec = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
						     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct exanet_mr *mr, *mrr;
		struct exanet_rdma *rd;
		struct exanet_raddr ra;
		struct exanet_rdma_opts o = { 0 };
		int slot;

		ASSERT_NE(MAP_FAILED, buf);
		ASSERT_NE(MAP_FAILED, (void *)rec);
		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)(k * 7 + 3);
		memset(buf + len, 0, len);
		ASSERT_EQ(0, exanet_reg_mr(dev, buf, 2 * len, 0, &mr));
		ASSERT_EQ(0, exanet_reg_mr(dev, rec, 4096, 0, &mrr));
		ASSERT_EQ(0, exanet_rdma_alloc(dev, &rd));
		ASSERT_EQ(0, exanet_mr_raddr(mr, buf + len, &ra));
		o.lcomp = rec;
		slot = exanet_rdma_post_write(rd, buf, &ra, len, &o);
		ASSERT_LE(0, slot);
		ASSERT_EQ(0, exanet_rdma_wait(rd, (unsigned int)slot, 30 * 1000000000ll, NULL));
		EXPECT_EQ(0, memcmp(buf, buf + len, len));
	} else {
		TH_LOG("no RDMA contexts on this node: messaging checked only");
	}
	exanet_close(dev);
}

/* Both nodes fuzzed at once; now messages cross the fabric both ways. */
TEST(fabric_still_works)
{
	struct { uint32_t node, mbox; } me, all[64];
	const char *nn = getenv("EXA_NNODES");
	int rank, n = nn ? atoi(nn) : 1, to, from;
	struct exanet_dev *dev;
	struct exanet_mbox *mb;
	struct exanet_pkt *pkt;
	struct exanet_msg_info mi;
	char msg[64], got[64];
	struct oob o;
	ssize_t len;

	if (n < 2 || n > 64)
		SKIP_TEST("one node: nothing crosses the fabric");
	ASSERT_EQ(0, oob_init(&o, (unsigned int)ksft_case_index(_metadata), 180000));
	rank = o.rank;
	to = (rank + 1) % n;
	from = (rank + n - 1) % n;
	ASSERT_EQ(0, exanet_open(NULL, &dev));
	ASSERT_EQ(0, exanet_mbox_alloc(dev, 64, &mb));
	ASSERT_EQ(0, exanet_pkt_alloc(dev, &pkt));
	me.node = exanet_node_id(dev);
	me.mbox = exanet_mbox_id(mb);
	ASSERT_EQ(0, oob_allgather(&o, &me, all, sizeof(me)));
	for (int k = 0; k < 50; k++) {
		snprintf(msg, sizeof(msg), "rank %d message %d", rank, k);
		ASSERT_EQ(0, exanet_send_wait(pkt, all[to].node, all[to].mbox, msg, strlen(msg),
					      30 * 1000000000ll, NULL));
	}
	for (int k = 0; k < 50; k++) {
		snprintf(msg, sizeof(msg), "rank %d message %d", from, k);
		len = exanet_recv_wait(mb, got, sizeof(got), &mi, 30 * 1000000000ll);
		ASSERT_EQ((ssize_t)strlen(msg), len);
		ASSERT_EQ(0, memcmp(msg, got, (size_t)len));
		EXPECT_EQ(all[from].node, mi.src_node);
	}
	EXPECT_EQ(0, oob_barrier(&o));
	exanet_close(dev);
	oob_fini(&o);
}

TEST(extoll_still_works)
{
	if (!fz->have[FD_RMA2])
		SKIP_TEST("no EXTOLL NIC on this node");
	xt_expect_device_works(_metadata);
}

TEST(kernel_log_clean)
{
	int now = exa_kmsg_bad_lines();

	if (now != base->kmsg_bad)
		TH_LOG("kernel log grew Oops/BUG/WARNING lines: %d -> %d (seed %llu)",
		       base->kmsg_bad, now, (unsigned long long)fz->seed);
	EXPECT_EQ(base->kmsg_bad, now);
}

/* ------------------------------------------------------------ main */

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "procs", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 'T' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "kill-ms", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	char *hargv[64];
	int hargc = 1, c, rc;
	uint64_t seed;

	fz = mmap(NULL, sizeof(*fz), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	base = mmap(NULL, sizeof(*base), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	if (fz == MAP_FAILED || base == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)exa_now_ms() ^ ((uint64_t)getpid() << 32);
	seed &= 0xffffffffffffull;	/* short enough to type */
	fz->seed = env_u64("EXA_FUZZ_SEED", seed);
	fz->seconds = env_u64("EXA_FUZZ_SECONDS", 30);
	fz->nprocs = (int)env_u64("EXA_FUZZ_PROCS", 4);
	fz->nthreads = (int)env_u64("EXA_FUZZ_THREADS", 3);
	fz->max_iterations = env_u64("EXA_FUZZ_ITERATIONS", 0);
	fz->kill_ms = (int)env_u64("EXA_FUZZ_KILL", 1500);
	hargv[0] = argv[0];
	while ((c = getopt_long(argc, argv, "lt:h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			fz->seconds = strtoull(optarg, NULL, 0);
			break;
		case 'S':
			fz->seed = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			fz->nprocs = atoi(optarg);
			break;
		case 'T':
			fz->nthreads = atoi(optarg);
			break;
		case 'i':
			fz->max_iterations = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			fz->kill_ms = atoi(optarg);
			break;
		case 'l':
		case 'h':
			hargv[hargc++] = c == 'l' ? "-l" : "-h";
			break;
		case 't':
			if (hargc < 62) {
				hargv[hargc++] = "-t";
				hargv[hargc++] = optarg;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [--seconds N] [--seed N] [--procs N] "
				"[--threads N] [--iterations N] [--kill-ms N] [-t CASE]... [-l]\n",
				argv[0]);
			return 2;
		}
	}
	hargv[hargc] = NULL;
	if (fz->nprocs < 1)
		fz->nprocs = 1;
	if (fz->nprocs > FUZZ_MAX_WORKERS)
		fz->nprocs = FUZZ_MAX_WORKERS;
	if (fz->nthreads < 1)
		fz->nthreads = 1;
	if (fz->kill_ms < 0)
		fz->kill_ms = 0;
	{
		const char *e = getenv("EXA_NNODES");
		struct exanet_dev *dev;

		fz->nnodes = e ? (uint32_t)atoi(e) : 1;
		if (!exanet_open(NULL, &dev)) {
			fz->node_id = exanet_node_id(dev);
			fz->nnodes = exanet_num_nodes(dev);
			exanet_close(dev);
		}
	}
	fz->have[FD_EXANET] = access("/dev/exanet0", F_OK) == 0;
	fz->have[FD_RMA2] = access(EXTOLL_DEV_RMA2, F_OK) == 0;
	fz->have[FD_VELO2] = access(EXTOLL_DEV_VELO2, F_OK) == 0;
	printf("# seed %llu\n", (unsigned long long)fz->seed);
	printf("# exa_fuzz: %llu s, %d processes x %d threads, kill every ~%d ms, "
	       "iterations per thread %s; replay: EXA_FUZZ_SEED=%llu\n",
	       (unsigned long long)fz->seconds, fz->nprocs, fz->nthreads, fz->kill_ms,
	       fz->max_iterations ? "bounded" : "unbounded", (unsigned long long)fz->seed);
	fflush(stdout);
	rc = test_harness_run(hargc, hargv);
	if (hargc == 1 || strcmp(hargv[1], "-l")) {
		printf("# fuzz_iterations %llu\n", (unsigned long long)fz->iterations);
		printf("# fuzz_seconds %llu\n", (unsigned long long)fz->seconds);
		if (rc)
			printf("# exa_fuzz failed: replay with EXA_FUZZ_SEED=%llu\n",
			       (unsigned long long)fz->seed);
	}
	return rc;
}
