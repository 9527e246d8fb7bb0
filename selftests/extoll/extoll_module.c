// SPDX-License-Identifier: GPL-2.0
/*
 * Device removal and module unload with users (tests.list: 1 node, run
 * last: it unbinds and reloads extoll.ko).  An endpoint that outlives its
 * device (PCI unbind) gets ENODEV from ioctl and mmap and SIGBUS on its
 * mapped pages, and its close frees everything without an oops; rebinding
 * brings the device back.  rmmod is refused while an endpoint is open;
 * after rmmod + modprobe the device works again.
 */
#include <libgen.h>
#include <sys/syscall.h>

#include "extoll_raw.h"

#define TMO_S 30
#define MODNAME "extoll"
#define DRIVER_DIR "/sys/bus/pci/drivers/" MODNAME

static int wait_for_path(const char *path, int present, double tmo)
{
	double end = xt_now_s() + tmo;

	while ((access(path, F_OK) == 0) != present) {
		if (xt_now_s() > end)
			return -1;
		usleep(20000);
	}
	return 0;
}

/* Device nodes are back and udev has applied their mode. */
static int wait_for_device(double tmo)
{
	double end = xt_now_s() + tmo;

	while (access(EXTOLL_DEV_RMA2, R_OK | W_OK) || access(EXTOLL_DEV_VELO2, R_OK | W_OK)) {
		if (xt_now_s() > end)
			return -1;
		usleep(20000);
	}
	return 0;
}

static int write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "we");
	int rc;

	if (!f)
		return -errno;
	rc = fputs(s, f) < 0 ? -EIO : 0;
	if (fclose(f))
		rc = -errno;
	return rc;
}

/* PCI address of extoll0, e.g. 0000:00:0b.0. */
static int pci_address(char *buf, size_t len)
{
	char link[512];
	ssize_t n = readlink("/sys/class/extoll/extoll0-rma2/device", link, sizeof(link) - 1);

	if (n <= 0)
		return -1;
	link[n] = '\0';
	snprintf(buf, len, "%s", basename(link));
	return 0;
}

static int module_loaded(void)
{
	return access("/sys/module/" MODNAME, F_OK) == 0;
}

FIXTURE(mod) {
	int kmsg0;
	char pci[64];
};

FIXTURE_SETUP(mod)
{
	if (access(EXTOLL_DEV_RMA2, F_OK))
		SKIP_TEST("no " EXTOLL_DEV_RMA2);
	ASSERT_EQ(0, pci_address(self->pci, sizeof(self->pci)));
	self->kmsg0 = exa_kmsg_bad_lines();
}

FIXTURE_TEARDOWN(mod)
{
	/* leave the node with a working device whatever happened */
	if (!module_loaded())
		exa_system("modprobe " MODNAME " >/dev/null 2>&1");
	if (access(EXTOLL_DEV_RMA2, F_OK))
		write_str(DRIVER_DIR "/bind", self->pci);
	EXPECT_EQ(0, wait_for_device(TMO_S));
	XT_KMSG_CHECK(self->kmsg0);
}

/* ------------------------------------------------ unbind with a live endpoint */

struct hold_box {
	volatile int stage;		/* 1 holding, 2 device gone (go on) */
	volatile int step;		/* last check passed */
	volatile long pin_kb_held;	/* VmPin with the registration */
	volatile long pin_kb_gone;	/* VmPin once the device is gone */
};

enum { H_SETUP = 10, H_IOCTL, H_UNREG, H_MMAP, H_VELO, H_NO_SIGBUS };

static struct hold_box *hold_box;

static void on_sigbus(int sig)
{
	(void)sig;
	_exit(0);	/* the expected end */
}

/* Endpoint + registration + mappings + a put in flight, then the device goes. */
static int holder(struct hold_box *hb)
{
	struct raw_ep e;
	struct rma2_ioc_region r;
	uint8_t *buf = aligned_alloc(4096, MiB);
	int vfd = open(EXTOLL_DEV_VELO2, O_RDWR | O_CLOEXEC);
	volatile uint64_t *ring;
	uint64_t v;

	if (!buf || vfd < 0 || raw_open(&e) || raw_reg(e.fd, buf, MiB, 0, &r))
		return H_SETUP;
	memset(buf, 1, MiB);
	ring = mmap(NULL, 4096 + VELO2_MBOX_DEFAULT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, vfd,
		    VELO2_MMAP_MBOX_OFFSET);
	if (ring == MAP_FAILED)
		return H_SETUP;
	(void)ring[0];
	raw_post(&e, EXTOLL_RMA_OPT_TE,
		 EXTOLL_RMA_MKW0(EXTOLL_CMD_BT_PUT, e.info.nodeid, e.info.vpid, 1, 0, MiB - 1),
		 r.nla, r.nla);
	hb->pin_kb_held = xt_vmpin_kb(getpid());
	hb->stage = 1;
	while (hb->stage < 2)
		usleep(2000);
	/* the removal gave the pages back, not the close still to come */
	hb->pin_kb_gone = xt_vmpin_kb(getpid());
	if (ioctl(e.fd, RMA2_IOCTL_GET_VPID, &v) != -1 || errno != ENODEV)
		return H_IOCTL;
	hb->step = H_IOCTL;
	if (ioctl(e.fd, RMA2_IOCTL_UNREGISTER_REGION, &r) != -1 || errno != ENODEV)
		return H_UNREG;
	hb->step = H_UNREG;
	if (mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, e.fd, 0) != MAP_FAILED ||
	    errno != ENODEV)
		return H_MMAP;
	hb->step = H_MMAP;
	if (ioctl(vfd, VELO2_IOCG_GET_VPID, &v) != -1 || errno != ENODEV)
		return H_VELO;
	hb->step = H_VELO;
	signal(SIGBUS, on_sigbus);
	e.req[0] = 1;		/* the pages are gone: SIGBUS */
	return H_NO_SIGBUS;
}

TEST_F_TIMEOUT(mod, unbind_with_live_endpoint_enodev_sigbus_rebind, 180)
{
	struct xt_usage after;
	pid_t pid;
	int st;

	hold_box = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(hold_box != MAP_FAILED);
	memset(hold_box, 0, sizeof(*hold_box));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(holder(hold_box));
	while (hold_box->stage < 1) {
		ASSERT_EQ(-ETIMEDOUT, exa_poll_child(pid, 10));
	}
	ASSERT_EQ(0, write_str(DRIVER_DIR "/unbind", self->pci));
	ASSERT_EQ(0, wait_for_path(EXTOLL_DEV_RMA2, 0, TMO_S));
	hold_box->stage = 2;
	st = exa_wait_child(pid, TMO_S * 1000);
	if (st)
		TH_LOG("holder: status %d after step %d", st, hold_box->step);
	EXPECT_EQ(0, st);
	/* Every DMA mapping of a live endpoint goes at removal (DMA-API
	 * debugging reported the registration and queues left behind). */
	TH_LOG("holder VmPin: %ld kB registered, %ld kB after the unbind",
	       hold_box->pin_kb_held, hold_box->pin_kb_gone);
	EXPECT_LE(1024, hold_box->pin_kb_held);
	EXPECT_EQ(0, hold_box->pin_kb_gone);
	/* the dead endpoint's close ran against the removed device: no oops */
	ASSERT_EQ(0, write_str(DRIVER_DIR "/bind", self->pci));
	ASSERT_EQ(0, wait_for_device(TMO_S));
	xt_usage_read(&after);
	EXPECT_EQ(0, after.rma_vpids);
	EXPECT_EQ(0, after.velo_vpids);
	EXPECT_EQ(0, after.registered_pages);
	EXPECT_EQ(0, after.pinned_pages);
	EXPECT_EQ(0, after.queue_bytes);
	xt_expect_device_works(_metadata);
}

/* ------------------------------------------------ module unload */

TEST_F_TIMEOUT(mod, rmmod_refused_while_open_then_reload, 180)
{
	int fd, rc, err;

	if (!module_loaded())
		SKIP_TEST(MODNAME " is not a loadable module here");
	fd = open(EXTOLL_DEV_VELO2, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	errno = 0;
	rc = (int)syscall(SYS_delete_module, MODNAME, O_NONBLOCK);
	err = errno;
	EXPECT_EQ(-1, rc);
	EXPECT_TRUE(err == EBUSY || err == EWOULDBLOCK);
	ASSERT_TRUE(module_loaded());
	close(fd);
	ASSERT_EQ(0, exa_system("rmmod " MODNAME));
	ASSERT_FALSE(module_loaded());
	ASSERT_EQ(0, wait_for_path(EXTOLL_DEV_RMA2, 0, TMO_S));
	ASSERT_EQ(0, exa_system("modprobe " MODNAME));
	ASSERT_EQ(0, wait_for_device(TMO_S));
	xt_expect_device_works(_metadata);
}

TEST_HARNESS_MAIN
