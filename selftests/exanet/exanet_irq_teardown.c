// SPDX-License-Identifier: GPL-2.0
/*
 * Interrupts and teardown (tests.list: nodes = 1, before exanet_module):
 * PCI unbind of the NI while a process sleeps in poll() on an armed file
 * (the sleeper wakes with POLLERR | POLLHUP, calls fail with ENODEV, the
 * vectors leave /proc/interrupts, rebinding gives a working device), and
 * rmmod with an armed sleeper (refused; after the close the module unloads
 * cleanly and comes back), both also with on-demand (unpinned) RDMA
 * registrations live and a transfer faulting its pages in.  No kernel
 * warning may appear (also checked by the runner).
 */
#include <poll.h>
#include <pthread.h>
#include <libgen.h>

#include "odp_test.h"

#define MODNAME "exanet"
#define DRVDIR "/sys/bus/pci/drivers/" MODNAME

static int64_t now_ms(void)
{
	return exa_now_ms();
}

static int wait_for_path(const char *path, int present, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;

	while ((access(path, F_OK) == 0) != present) {
		if (now_ms() >= end)
			return -ETIMEDOUT;
		usleep(20000);
	}
	return 0;
}

static int module_loaded(void)
{
	return access("/sys/module/" MODNAME, F_OK) == 0;
}

/* exanet0 vectors in /proc/interrupts */
static int proc_interrupt_lines(void)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen("/proc/interrupts", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "exanet0-ev") != NULL;
	fclose(f);
	return n;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

/* PCI address of exanet0's function. */
static int exanet0_bdf(char *out, size_t len)
{
	char link[512];
	ssize_t n = readlink("/sys/class/exanet/exanet0/device", link, sizeof(link) - 1);

	if (n < 0)
		return -errno;
	link[n] = 0;
	snprintf(out, len, "%s", basename(link));
	return 0;
}

struct sleeper {
	int fd;
	int rv;
	int64_t ms;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	int64_t t0 = now_ms();
	int n = poll(&p, 1, 30000);

	s->ms = now_ms() - t0;
	s->rv = n < 0 ? -errno : n ? p.revents : 0;
	return NULL;
}

FIXTURE(td) {
	int kmsg0;
	char bdf[64];
};

FIXTURE_SETUP(td)
{
	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	if (exa_sysfs_long("irq_vectors") <= 0)
		SKIP_TEST("NI without interrupts");
	ASSERT_EQ(0, exanet0_bdf(self->bdf, sizeof(self->bdf)));
	self->kmsg0 = exa_kmsg_bad_lines();
}

FIXTURE_TEARDOWN(td)
{
	/* leave the node with the driver bound, whatever happened */
	if (!module_loaded())
		exa_system("modprobe " MODNAME " >/dev/null 2>&1");
	if (access(EXANET_DEFAULT_DEVICE, F_OK) && self->bdf[0])
		write_str(DRVDIR "/bind", self->bdf);
	wait_for_path(EXANET_DEFAULT_DEVICE, 1, 10000);
	usleep(200000);		/* udev may still be applying the mode */
}

static void loopback_wakes(struct __test_metadata *_metadata)
{
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
	struct pollfd p;
	uint8_t b[8] = { 1 };

	ASSERT_EQ(0, exanet_open(NULL, &dev));
	ASSERT_EQ(0, exanet_pkt_alloc(dev, &pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(dev, 16, &mb));
	ASSERT_EQ(0, exanet_event_arm(dev));
	ASSERT_EQ(0, exanet_send_wait(pkt, exanet_node_id(dev), exanet_mbox_id(mb), b, 8,
				      10 * SEC, NULL));
	p.fd = exanet_dev_fd(dev);
	p.events = POLLIN;
	ASSERT_EQ(1, poll(&p, 1, 5000));
	ASSERT_EQ(POLLIN, p.revents);
	ASSERT_EQ(8, exanet_recv(mb, b, sizeof(b), NULL));
	exanet_close(dev);
}

TEST_F_TIMEOUT(td, unbind_wakes_armed_sleeper_with_pollhup, 120)
{
	struct exanet_dev *dev;
	struct exanet_mbox *mb;
	struct exanet_pkt *pkt;
	struct sleeper s = { .rv = -1 };
	pthread_t t;
	int fd;

	ASSERT_EQ(0, exanet_open(NULL, &dev));
	ASSERT_EQ(0, exanet_pkt_alloc(dev, &pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(dev, 16, &mb));
	ASSERT_EQ(0, exanet_event_arm(dev));
	ASSERT_LE(1, exa_sysfs_long("irq_armed"));
	fd = exanet_dev_fd(dev);
	s.fd = fd;
	ASSERT_EQ(0, pthread_create(&t, NULL, sleeper_main, &s));
	usleep(300000);

	ASSERT_EQ(0, write_str(DRVDIR "/unbind", self->bdf));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(POLLERR | POLLHUP, s.rv);
	ASSERT_GT(10000, s.ms);
	TH_LOG("sleeper woke %lld ms after it started (unbind 300 ms after)", (long long)s.ms);
	/* the file outlives the device: every call says ENODEV */
	ASSERT_EQ(-ENODEV, exanet_event_arm(dev));
	ASSERT_EQ(-ENODEV, exanet_event_wait(dev, 1000));
	ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 0, 5000));
	ASSERT_EQ(0, proc_interrupt_lines());
	exanet_close(dev);

	ASSERT_EQ(0, write_str(DRVDIR "/bind", self->bdf));
	ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 1, 10000));
	usleep(200000);
	ASSERT_LE(1, exa_sysfs_long("irq_vectors"));
	ASSERT_EQ(exa_sysfs_long("irq_vectors"), proc_interrupt_lines());
	ASSERT_EQ(0, exa_sysfs_long("mbox_in_use"));
	ASSERT_EQ(0, exa_sysfs_long("irq_armed"));
	loopback_wakes(_metadata);
	ASSERT_EQ(self->kmsg0, exa_kmsg_bad_lines());
}

TEST_F_TIMEOUT(td, rmmod_refused_with_armed_sleeper_then_clean_unload, 180)
{
	struct exanet_dev *dev;
	struct exanet_mbox *mb;
	struct exanet_pkt *pkt;
	struct sleeper s = { .rv = -1 };
	uint8_t b[8] = { 2 };
	pthread_t t;
	int rc, err;

	if (!module_loaded())
		SKIP_TEST(MODNAME " is not a loadable module here");
	ASSERT_EQ(0, exanet_open(NULL, &dev));
	ASSERT_EQ(0, exanet_pkt_alloc(dev, &pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(dev, 16, &mb));
	ASSERT_EQ(0, exanet_event_arm(dev));
	s.fd = exanet_dev_fd(dev);
	ASSERT_EQ(0, pthread_create(&t, NULL, sleeper_main, &s));
	usleep(300000);
	errno = 0;
	rc = (int)syscall(SYS_delete_module, MODNAME, O_NONBLOCK);
	err = errno;
	ASSERT_EQ(-1, rc);
	ASSERT_TRUE(err == EBUSY || err == EWOULDBLOCK);
	/* the sleeper still sleeps and the device still works: wake it */
	ASSERT_EQ(-1, __atomic_load_n(&s.rv, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, exanet_send_wait(pkt, exanet_node_id(dev), exanet_mbox_id(mb), b, 8,
				      10 * SEC, NULL));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(POLLIN, s.rv);
	ASSERT_EQ(8, exanet_recv(mb, b, sizeof(b), NULL));
	/* armed again, then closed: unload must be clean */
	ASSERT_EQ(0, exanet_event_arm(dev));
	exanet_close(dev);
	ASSERT_EQ(0, exa_sysfs_long("irq_armed"));
	ASSERT_EQ(0, exa_sysfs_long("mbox_in_use"));

	rc = (int)syscall(SYS_delete_module, MODNAME, O_NONBLOCK);
	if (rc)
		TH_LOG("delete_module: %s", strerror(errno));
	ASSERT_EQ(0, rc);
	ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 0, 5000));
	ASSERT_EQ(0, proc_interrupt_lines());
	ASSERT_EQ(0, exa_system("modprobe " MODNAME));
	ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 1, 15000));
	usleep(200000);
	ASSERT_LE(1, exa_sysfs_long("irq_vectors"));
	loopback_wakes(_metadata);
	ASSERT_EQ(self->kmsg0, exa_kmsg_bad_lines());
}

/*
 * One on-demand loopback write of len fresh bytes between two ranks of
 * this process; a and b stay up (the caller tears them down).  -ENODEV:
 * no RDMA / no on-demand paging here.
 */
static int odp_loopback_up(struct rnode *a, struct rnode *b, size_t len)
{
	int err = onode_up(a, len, 1, 1);

	if (!err)
		err = onode_up(b, len, 0, 1);
	return err;
}

static void odp_loopback_checked(struct __test_metadata *_metadata, size_t len)
{
	struct exanet_raddr dst;
	struct rnode a, b;

	ASSERT_EQ(0, odp_loopback_up(&a, &b, len));
	opat_fill(a.buf, len, 3);
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	ASSERT_EQ(0, post_and_wait(&a, 0, 0, a.buf, &dst, len, 0, 1, 60 * SEC, NULL));
	EXPECT_EQ(-1, opat_check(b.buf, len, 3));
	rnode_down(&b);
	rnode_down(&a);
}

/*
 * PCI unbind while an on-demand transfer faults its pages in: the fault
 * worker, the notifiers and the fault queue go away cleanly, the files
 * say ENODEV, and after rebinding on-demand RDMA works again.
 */
TEST_F_TIMEOUT(td, unbind_with_on_demand_transfer_faulting, 180)
{
	const size_t len = 32u << 20;
	struct exanet_raddr dst;
	struct exanet_mr *mr;
	struct rnode a, b;
	int err;

	err = odp_loopback_up(&a, &b, len);
	if (err == -ENODEV)
		SKIP_TEST("no RDMA contexts / no on-demand paging");
	ASSERT_EQ(0, err);
	opat_fill(a.buf, len, 9);
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	ASSERT_EQ(0, opost(&a, 0, 0, a.buf, &dst, len, 0));
	usleep(50000);
	ASSERT_EQ(0, write_str(DRVDIR "/unbind", self->bdf));
	ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 0, 5000));
	EXPECT_EQ(-ENODEV, exanet_reg_mr(a.dev, a.buf, 4096, EXANET_MR_ON_DEMAND, &mr));
	rnode_down(&b);
	rnode_down(&a);
	ASSERT_EQ(0, proc_interrupt_lines());

	ASSERT_EQ(0, write_str(DRVDIR "/bind", self->bdf));
	ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 1, 10000));
	usleep(200000);
	EXPECT_EQ(0, exa_sysfs_long("rdma_ranks_in_use"));
	odp_loopback_checked(_metadata, 4u << 20);
	ASSERT_EQ(self->kmsg0, exa_kmsg_bad_lines());
}

/*
 * rmmod while a process holds on-demand registrations with pages mapped:
 * refused; after the close the module unloads cleanly and on-demand RDMA
 * works after it comes back.
 */
TEST_F_TIMEOUT(td, rmmod_with_on_demand_registrations_live, 180)
{
	const size_t len = 4u << 20;
	struct exanet_raddr dst;
	struct rnode a, b;
	int rc, err;

	if (!module_loaded())
		SKIP_TEST(MODNAME " is not a loadable module here");
	err = odp_loopback_up(&a, &b, len);
	if (err == -ENODEV)
		SKIP_TEST("no RDMA contexts / no on-demand paging");
	ASSERT_EQ(0, err);
	opat_fill(a.buf, len, 4);
	ASSERT_EQ(0, exanet_mr_raddr(b.mr, b.buf, &dst));
	ASSERT_EQ(0, post_and_wait(&a, 0, 0, a.buf, &dst, len, 0, 1, 60 * SEC, NULL));
	errno = 0;
	rc = (int)syscall(SYS_delete_module, MODNAME, O_NONBLOCK);
	err = errno;
	ASSERT_EQ(-1, rc);
	ASSERT_TRUE(err == EBUSY || err == EWOULDBLOCK);
	/* still working */
	opat_fill(a.buf, len, 5);
	ASSERT_EQ(0, post_and_wait(&a, 0, 1, a.buf, &dst, len, 0, 2, 60 * SEC, NULL));
	EXPECT_EQ(-1, opat_check(b.buf, len, 5));
	rnode_down(&b);
	rnode_down(&a);

	rc = (int)syscall(SYS_delete_module, MODNAME, O_NONBLOCK);
	if (rc)
		TH_LOG("delete_module: %s", strerror(errno));
	ASSERT_EQ(0, rc);
	ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 0, 5000));
	ASSERT_EQ(0, exa_system("modprobe " MODNAME));
	ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 1, 15000));
	usleep(200000);
	odp_loopback_checked(_metadata, len);
	ASSERT_EQ(self->kmsg0, exa_kmsg_bad_lines());
}

TEST_HARNESS_MAIN
