// SPDX-License-Identifier: MIT
/*
 * libexanet: see include/libexanet.h for the contract.
 *
 * Memory model notes:
 *  - The packetizer page is device MMIO.  Payload and doorbell are written
 *    with volatile stores; a store fence sits between the payload and the
 *    doorbell so the doorbell can never overtake the payload even if the
 *    kernel mapped the page write-combining.
 *  - The mailbox queue is ordinary memory the NI writes with DMA, 'flags'
 *    last.  We read flags with an acquire load and only then the rest of
 *    the slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "libexanet.h"
#include "libexanet-int.h"
#include "exa_clock.h"

EXPORT int64_t exanet_now_ns(void)
{
	return exa_clock_ns();
}

/* ------------------------------------------------------------ device */

static int dev_index_from_fd(int fd)
{
	struct stat st;
	char path[128], link[PATH_MAX];
	ssize_t n;
	const char *base;
	unsigned int idx;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -ENODEV;
	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u",
		 major(st.st_rdev), minor(st.st_rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return -errno;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (sscanf(base, "exanet%u", &idx) != 1)
		return -ENODEV;
	return (int)idx;
}

EXPORT int exanet_open(const char *path, struct exanet_dev **devp)
{
	struct exanet_dev *dev;
	int fd, err;

	if (!devp)
		return -EINVAL;
	*devp = NULL;
	if (!path)
		path = EXANET_DEFAULT_DEVICE;
	if (!*path)
		return -EINVAL;
	/*
	 * The waits read the TSC where clock_gettime() may be a system call
	 * (a clocksource without vDSO, e.g. acpi_pm, which emulated x86 nodes
	 * fall back to): calibrated once, here, where system calls are fine.
	 */
	exa_wait_clock_setup();

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;

	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		close(fd);
		return -ENOMEM;
	}
	dev->fd = fd;
	if (ioctl(fd, EXANET_IOC_GET_INFO, &dev->info) < 0) {
		/* ENOTTY/EINVAL: some other character device */
		err = (errno == ENOTTY || errno == EINVAL) ? -ENODEV : -errno;
		goto fail;
	}
	if (dev->info.abi_version != EXANET_ABI_VERSION) {
		err = -ENODEV;
		goto fail;
	}
	dev->index = dev_index_from_fd(fd);
	if (dev->index < 0)
		dev->index = -1;
	*devp = dev;
	return 0;
fail:
	close(fd);
	free(dev);
	return err;
}

EXPORT int exanet_open_index(unsigned int index, struct exanet_dev **devp)
{
	char path[64];

	snprintf(path, sizeof(path), EXANET_DEV_PATH_FMT, index);
	return exanet_open(path, devp);
}

EXPORT void exanet_close(struct exanet_dev *dev)
{
	if (!dev)
		return;
	while (dev->pkts)
		exanet_pkt_free(dev->pkts);
	while (dev->mboxes)
		exanet_mbox_free(dev->mboxes);
	while (dev->rdmas)
		exanet_rdma_free(dev->rdmas);
	while (dev->mrs)
		exanet_dereg_mr(dev->mrs);
	close(dev->fd);
	free(dev);
}

EXPORT int exanet_dev_fd(const struct exanet_dev *dev)
{
	return dev ? dev->fd : -EINVAL;
}

EXPORT int exanet_dev_index(const struct exanet_dev *dev)
{
	if (!dev)
		return -EINVAL;
	return dev->index >= 0 ? dev->index : -ENODEV;
}

EXPORT int exanet_query(const struct exanet_dev *dev, struct exanet_info *info)
{
	if (!dev || !info)
		return -EINVAL;
	*info = dev->info;
	return 0;
}

EXPORT int exanet_query_fresh(struct exanet_dev *dev, struct exanet_info *info)
{
	if (!dev)
		return -EINVAL;
	if (ioctl(dev->fd, EXANET_IOC_GET_INFO, &dev->info) < 0)
		return -errno;
	if (info)
		*info = dev->info;
	return 0;
}

EXPORT uint32_t exanet_node_id(const struct exanet_dev *dev)
{
	return dev ? dev->info.node_id : 0;
}

EXPORT uint32_t exanet_num_nodes(const struct exanet_dev *dev)
{
	return dev ? dev->info.num_nodes : 0;
}

EXPORT uint32_t exanet_pdid(const struct exanet_dev *dev)
{
	return dev ? dev->info.pdid : EXANET_PDID_NONE;
}

static const char *const counter_names[EXANET_NUM_COUNTERS] = {
	EXANET_COUNTER_NAMES_INIT
};

EXPORT const char *exanet_counter_name(unsigned int counter)
{
	return counter < EXANET_NUM_COUNTERS ? counter_names[counter] : NULL;
}

/*
 * The sysfs 'counters' file is accepted in two shapes: "name value" (or
 * "name: value") lines, matched by name, or bare values in enum order.
 */
EXPORT int exanet_read_counters(const struct exanet_dev *dev, uint64_t *values,
				unsigned int n)
{
	char path[128], line[256], name[64];
	unsigned int filled = 0, positional = 0, i;
	unsigned long long v;
	FILE *f;

	if (!dev || (!values && n))
		return -EINVAL;
	if (dev->index < 0)
		return -ENODEV;
	if (n > EXANET_NUM_COUNTERS)
		n = EXANET_NUM_COUNTERS;
	snprintf(path, sizeof(path), "/sys/class/exanet/exanet%d/counters", dev->index);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	for (i = 0; i < n; i++)
		values[i] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %63[a-z_0-9]%*[:= \t]%llu", name, &v) == 2) {
			for (i = 0; i < n; i++) {
				if (!strcmp(name, counter_names[i])) {
					values[i] = v;
					filled++;
					break;
				}
			}
		} else if (sscanf(line, " %llu", &v) == 1) {
			if (positional < n) {
				values[positional++] = v;
				filled++;
			}
		}
	}
	fclose(f);
	return (int)(filled > n ? n : filled);
}

/* ------------------------------------------------------------ events */

/* EXANET_IOC_EVENT_ARM for every mailbox and the rank; *events = sources
 * that fired between the previous arm and this one. */
static int event_arm(struct exanet_dev *dev, uint32_t *events)
{
	struct exanet_event_arm req = {
		.flags = EXANET_EVENT_ALL_MBOX | EXANET_EVENT_RDMA,
	};

	if (!dev)
		return -EINVAL;
	if (ioctl(dev->fd, EXANET_IOC_EVENT_ARM, &req) < 0)
		return -errno;
	if (events)
		*events = req.events;
	return 0;
}

EXPORT int exanet_event_arm(struct exanet_dev *dev)
{
	return event_arm(dev, NULL);
}

EXPORT int exanet_event_wait(struct exanet_dev *dev, int timeout_ms)
{
	struct pollfd pfd;
	uint32_t events = 0;
	int err, n;

	err = event_arm(dev, &events);
	if (err)
		return err;
	/*
	 * Something fired since the previous arm (e.g. between the caller's
	 * arm, its check of the queues and this call): report it now instead
	 * of sleeping on an event that already happened.
	 */
	if (events)
		return 1;
	pfd.fd = dev->fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	n = poll(&pfd, 1, timeout_ms < 0 ? -1 : timeout_ms);
	if (n < 0)
		return -errno;		/* -EINTR: a signal; arm and wait again */
	if (n == 0)
		return 0;
	if (pfd.revents & POLLNVAL)
		return -EBADF;
	if (pfd.revents & POLLIN)
		return 1;
	/* POLLERR | POLLHUP: the device was removed (POLLERR alone: no
	 * interrupts, or a descriptor inherited from another process). */
	return (pfd.revents & POLLHUP) ? -ENODEV : -EIO;
}

/* ------------------------------------------------------------ strings */

EXPORT const char *exanet_chan_state_str(unsigned int state)
{
	static const char *const names[] = {
		[EXANET_CHAN_IDLE] = "IDLE", [EXANET_CHAN_ONGOING] = "ONGOING",
		[EXANET_CHAN_ACK] = "ACK", [EXANET_CHAN_NACK] = "NACK",
		[EXANET_CHAN_TIMEOUT] = "TIMEOUT",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "UNKNOWN";
}

EXPORT const char *exanet_nack_reason_str(unsigned int reason)
{
	static const char *const names[] = {
		[EXANET_NACK_NONE] = "NONE", [EXANET_NACK_PDID] = "PDID",
		[EXANET_NACK_FULL] = "FULL", [EXANET_NACK_BAD_PACKET] = "BAD_PACKET",
		[EXANET_NACK_DISABLED] = "DISABLED", [EXANET_NACK_NO_ROUTE] = "NO_ROUTE",
	};

	return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : "UNKNOWN";
}
