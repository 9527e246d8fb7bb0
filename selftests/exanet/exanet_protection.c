// SPDX-License-Identifier: GPL-2.0
/*
 * Protection tests (tests.list: nodes = 1): who may bind PDIDs, who may map
 * which page, what a forked child inherits.  Runs as root; unprivileged
 * cases drop to uid/gid 65534 in a forked child.
 */
#include "exa_test.h"
#include <exa_domain.h>
#include <extoll.h>

#define NOBODY 65534

static int drop_privileges(void)
{
	if (setgroups(0, NULL) && errno != EPERM)
		return -errno;
	if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
		return -errno;
	return 0;
}

/* Run fn in a forked unprivileged child; returns its exit status. */
static int run_unprivileged(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (drop_privileges())
			_exit(100);
		_exit(fn(arg) & 0xff);
	}
	return exa_wait_child(pid, 30000);
}

static int try_bind_as_nobody(void *arg)
{
	int err;

	(void)arg;
	err = exa_genl_pdid_bind(getpid(), 9);
	if (err != -EPERM) {
		printf("# unprivileged PDID_BIND: %d (expected -EPERM)\n", err);
		return 1;
	}
	err = exa_genl_pdid_bind(getppid(), 9);
	if (err != -EPERM)
		return 2;
	err = exa_genl_pdid_unbind(getpid());
	if (err != -EPERM) {
		printf("# unprivileged PDID_UNBIND: %d (expected -EPERM)\n", err);
		return 3;
	}
	return 0;
}

TEST(unprivileged_cannot_bind_or_unbind_pdid)
{
	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	ASSERT_EQ(0, run_unprivileged(try_bind_as_nobody, NULL));
}

struct victim {
	uint64_t pkt_off, regs_off, queue_off, queue_size;
};

static int try_map_victim(void *arg)
{
	struct victim *v = arg;
	void *p;
	int fd = open(EXANET_DEFAULT_DEVICE, O_RDWR);

	if (fd < 0)
		return 10;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)v->pkt_off);
	if (p != MAP_FAILED || errno != EACCES) {
		printf("# mapping another file's packetizer page: %s\n",
		       p == MAP_FAILED ? strerror(errno) : "succeeded");
		return 11;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)v->regs_off);
	if (p != MAP_FAILED || errno != EACCES)
		return 12;
	p = mmap(NULL, v->queue_size, PROT_READ, MAP_SHARED, fd, (off_t)v->queue_off);
	if (p != MAP_FAILED || errno != EACCES)
		return 13;
	close(fd);
	return 0;
}

TEST(cannot_map_interfaces_of_another_file)
{
	struct exanet_pkt_alloc pa = { 0 };
	struct exanet_mbox_alloc ma = { .nslots = 16 };
	struct victim v;
	int fd;

	fd = open(EXANET_DEFAULT_DEVICE, O_RDWR);
	if (fd < 0 && errno == ENOENT)
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, EXANET_IOC_PKT_ALLOC, &pa));
	ASSERT_EQ(0, ioctl(fd, EXANET_IOC_MBOX_ALLOC, &ma));
	v = (struct victim){ pa.mmap_offset, ma.regs_offset, ma.queue_offset, ma.queue_size };
	/* unprivileged process */
	ASSERT_EQ(0, run_unprivileged(try_map_victim, &v));
	/* root, other open file in the same process: still not yours */
	ASSERT_EQ(0, try_map_victim(&v));
	close(fd);
}

TEST(cannot_map_bar0_or_invalid_kinds)
{
	static const uint64_t offsets[] = {
		0,						/* kind 0: would be BAR0 */
		EXANET_MMAP_OFFSET(0, 1),
		EXANET_MMAP_OFFSET(0x40, 0),			/* kinds nobody defines */
		EXANET_MMAP_OFFSET(0x7f, 0),
		EXANET_MMAP_OFFSET(0xff, 0),
		EXANET_MMAP_OFFSET(EXANET_MMAP_PKT, EXANET_NUM_PKT_IFACES),
		EXANET_MMAP_OFFSET(EXANET_MMAP_MBOX_REGS, EXANET_NUM_MBOX_IFACES),
		EXANET_MMAP_OFFSET(EXANET_MMAP_PKT, 0) + 4096,	/* not an object start */
	};
	struct exanet_pkt_alloc pa = { 0 };
	unsigned int i;
	int fd, kmsg0;

	fd = open(EXANET_DEFAULT_DEVICE, O_RDWR);
	if (fd < 0 && errno == ENOENT)
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	ASSERT_LE(0, fd);
	kmsg0 = exa_kmsg_bad_lines();
	ASSERT_EQ(0, ioctl(fd, EXANET_IOC_PKT_ALLOC, &pa));
	for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offsets[i]);

		if (p != MAP_FAILED)
			TH_LOG("offset %#llx mapped!", (unsigned long long)offsets[i]);
		ASSERT_TRUE(p == MAP_FAILED);
		ASSERT_TRUE(errno == EINVAL || errno == EACCES);
	}
	/* an unprivileged process gets the same answer */
	close(fd);
	ASSERT_EQ(kmsg0, exa_kmsg_bad_lines());
}

static int ioctl_on_inherited_fd(void *arg)
{
	struct exanet_info info;
	int fd = *(int *)arg;

	if (ioctl(fd, EXANET_IOC_GET_INFO, &info) == 0 || errno != EACCES) {
		printf("# ioctl on an inherited fd: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

TEST(forked_child_cannot_use_parents_file_or_mappings)
{
	struct exanet_pkt_alloc pa = { 0 };
	volatile uint64_t *page;
	int fd, status;
	pid_t pid;

	fd = open(EXANET_DEFAULT_DEVICE, O_RDWR);
	if (fd < 0 && errno == ENOENT)
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, EXANET_IOC_PKT_ALLOC, &pa));
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)pa.mmap_offset);
	ASSERT_NE(MAP_FAILED, (void *)page);
	(void)page[EXANET_PKT_STATUS / 8];	/* mapped and usable here */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* the mapping is not inherited: touching it must fault */
		signal(SIGSEGV, SIG_DFL);
		if (ioctl_on_inherited_fd(&fd))
			_exit(1);
		(void)page[EXANET_PKT_STATUS / 8];
		_exit(2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_TRUE(WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS);
	munmap((void *)page, 4096);
	close(fd);
}

static int report_pdid(void *arg)
{
	struct exanet_dev *dev;
	uint32_t want = *(uint32_t *)arg;
	pid_t grandchild;
	int status;

	if (exanet_open(NULL, &dev) || exanet_pdid(dev) != want)
		return 1;
	exanet_close(dev);
	/* descendants created after the binding inherit it */
	grandchild = fork();
	if (grandchild == 0) {
		if (exanet_open(NULL, &dev) || exanet_pdid(dev) != want)
			_exit(1);
		_exit(0);
	}
	if (waitpid(grandchild, &status, 0) != grandchild || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 2;
	return 0;
}

TEST(bound_process_and_descendants_get_the_pdid)
{
	struct exanet_dev *dev;
	uint32_t pdid = 9;
	pid_t pid;

	OPEN_DEV_OR_SKIP(&dev);
	ASSERT_NE(pdid, exanet_pdid(dev));
	pid = exa_spawn_in_pdid(pdid, report_pdid, &pdid);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, exa_wait_child(pid, 20000));
	/* our own file keeps its PDID */
	ASSERT_EQ(0, exanet_query_fresh(dev, NULL));
	ASSERT_NE(pdid, exanet_pdid(dev));
	exanet_close(dev);
}

static int unpriv_open_and_loopback(void *arg)
{
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
	uint8_t buf[32] = { 7 };

	(void)arg;
	if (exanet_open(NULL, &dev))
		return 1;
	if (exanet_pkt_alloc(dev, &pkt) || exanet_mbox_alloc(dev, 8, &mb))
		return 2;
	if (exanet_send_wait(pkt, exanet_node_id(dev), exanet_mbox_id(mb), buf, 32, 10 * SEC, NULL))
		return 3;
	if (exanet_recv_wait(mb, buf, sizeof(buf), NULL, 10 * SEC) != 32)
		return 4;
	exanet_close(dev);
	return 0;
}

TEST(unprivileged_user_can_use_own_interfaces)
{
	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	ASSERT_EQ(0, run_unprivileged(unpriv_open_and_loopback, NULL));
}

TEST(queue_mapping_cannot_become_writable)
{
	struct exanet_dev *dev;
	struct exanet_mbox_alloc ma = { .nslots = 32 };
	void *q;
	int fd;

	OPEN_DEV_OR_SKIP(&dev);
	exanet_close(dev);
	fd = open(EXANET_DEFAULT_DEVICE, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, EXANET_IOC_MBOX_ALLOC, &ma));
	q = mmap(NULL, ma.queue_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)ma.queue_offset);
	ASSERT_TRUE(q == MAP_FAILED);
	ASSERT_TRUE(errno == EPERM || errno == EACCES);
	q = mmap(NULL, ma.queue_size, PROT_READ, MAP_SHARED, fd, (off_t)ma.queue_offset);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_NE(0, mprotect(q, ma.queue_size, PROT_READ | PROT_WRITE));
	ASSERT_TRUE(errno == EACCES || errno == EPERM);
	munmap(q, ma.queue_size);
	close(fd);
}

/*
 * The domain model (uapi/exa_domain.h): an unbound process gets the domain
 * of its user, 0x8000 + uid (0xffff for nobody); a uid without one cannot
 * open the device (EACCES) unless an administrator binds it to a job.  The
 * EXTOLL NIC (when present) reports the same value as protection ID.
 */
struct dom_case {
	uid_t uid;
	uint32_t bind;		/* job domain, 0 = unbound */
	int want;		/* domain, or -errno of the open */
};

static int domain_of_uid(void *arg)
{
	const struct dom_case *c = arg;
	struct exanet_dev *dev;
	int err;

	if (setgroups(0, NULL) || setresgid(c->uid, c->uid, c->uid) ||
	    setresuid(c->uid, c->uid, c->uid))
		return 100;
	err = exanet_open(NULL, &dev);
	if (err) {
		if (err != c->want) {
			printf("# uid %u (bound to %u): open: %s, expected domain %#x\n",
			       (unsigned int)c->uid, c->bind, strerror(-err), (unsigned int)c->want);
			return 1;
		}
	} else {
		uint32_t pdid = exanet_pdid(dev);

		exanet_close(dev);
		if (c->want < 0 || pdid != (uint32_t)c->want) {
			printf("# uid %u (bound to %u): PDID %#x, expected %d\n",
			       (unsigned int)c->uid, c->bind, pdid, c->want);
			return 2;
		}
	}
	if (!access(EXTOLL_DEV_RMA2, F_OK)) {
		uint64_t prot = 0;
		int fd = open(EXTOLL_DEV_RMA2, O_RDWR | O_CLOEXEC);

		if (c->want < 0) {
			if (fd >= 0 || errno != -c->want) {
				printf("# uid %u: EXTOLL open: %s\n", (unsigned int)c->uid,
				       fd >= 0 ? "succeeded" : strerror(errno));
				return 3;
			}
		} else if (fd < 0 || ioctl(fd, RMA2_IOCTL_GET_PROTDESC, &prot) ||
			   prot != (uint64_t)c->want) {
			printf("# uid %u: EXTOLL protection ID %#llx (%s), expected %#x\n",
			       (unsigned int)c->uid, (unsigned long long)prot,
			       fd < 0 ? strerror(errno) : "open", (unsigned int)c->want);
			return 4;
		}
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

TEST(unbound_process_gets_its_users_domain)
{
	static const struct dom_case cases[] = {
		{ 0, 0, EXA_DOMAIN_USER_BASE },
		{ 1000, 0, EXA_DOMAIN_USER_BASE + 1000 },
		{ EXA_DOMAIN_USER_UID_MAX, 0, EXA_DOMAIN_USER_BASE + EXA_DOMAIN_USER_UID_MAX },
		{ NOBODY, 0, EXA_DOMAIN_OVERFLOW_USER },
		{ EXA_DOMAIN_USER_UID_MAX + 1, 0, -EACCES },	/* no user domain */
		{ 70000, 0, -EACCES },
		{ 70000, 21, 21 },				/* a job domain instead */
		{ 1000, EXA_DOMAIN_JOB_MAX, EXA_DOMAIN_JOB_MAX },
	};
	struct exanet_dev *dev;
	unsigned int i;

	OPEN_DEV_OR_SKIP(&dev);
	EXPECT_EQ(EXA_DOMAIN_USER_BASE, exanet_pdid(dev));	/* the test runs as root */
	exanet_close(dev);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid = exa_spawn_in_pdid(cases[i].bind, domain_of_uid, (void *)&cases[i]);

		ASSERT_LT(0, pid);
		EXPECT_EQ(0, exa_wait_child(pid, 20000));
	}
}

/* The tool path: exanetctl run binds the child before it execs. */
TEST(exanetctl_run_binds_and_unprivileged_bind_is_eperm)
{
	char self_exe[512], cmd[1200];
	ssize_t n;

	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	if (exa_system("command -v exanetctl >/dev/null 2>&1"))
		SKIP_TEST("exanetctl not installed");
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	ASSERT_LT(0, n);
	self_exe[n] = '\0';
	/* --print-pdid: exit status = PDID of a freshly opened device */
	snprintf(cmd, sizeof(cmd), "exanetctl run --pdid 11 -- %s --print-pdid", self_exe);
	ASSERT_EQ(11, exa_system("%s", cmd));
	snprintf(cmd, sizeof(cmd), "exanetctl run --pdid 12 --user nobody -- %s --print-pdid",
		 self_exe);
	ASSERT_EQ(12, exa_system("%s", cmd));
	/* unprivileged: the kernel refuses, the tool says so and exits 1 */
	ASSERT_EQ(1, exa_system("exanetctl run --pdid 13 --user nobody -- "
				"exanetctl pdid bind --pid 1 --pdid 3 2>/tmp/exanetctl.err"));
	ASSERT_EQ(0, exa_system("grep -q 'Operation not permitted' /tmp/exanetctl.err"));
	/* usage errors exit 2; user domains (0x8000..0xffff) are not job domains */
	ASSERT_EQ(2, exa_system("exanetctl pdid bind --pid 1 --pdid 0 2>/dev/null"));
	ASSERT_EQ(2, exa_system("exanetctl pdid bind --pid 1 --pdid 32768 2>/dev/null"));
	ASSERT_EQ(2, exa_system("exanetctl run --pdid 65535 -- true 2>/dev/null"));
	ASSERT_EQ(2, exa_system("exanetctl run -- true 2>/dev/null"));
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--print-pdid")) {
		struct exanet_dev *dev;
		int pdid;

		if (exanet_open(NULL, &dev))
			return 255;
		pdid = (int)exanet_pdid(dev);
		exanet_close(dev);
		return pdid & 0xff;
	}
	return test_harness_run(argc, argv);
}
