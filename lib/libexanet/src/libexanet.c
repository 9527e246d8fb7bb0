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
#include "exa_cpu.h"

EXPORT int64_t exanet_now_ns(void)
{
	return exa_clock_ns();
}

/*
 * Clock for timeouts.  clock_gettime() is a system call when the kernel's
 * clocksource has no vDSO support (e.g. acpi_pm, which emulated x86 nodes
 * fall back to when the TSC is declared unstable).  On x86 the deadline
 * clock is therefore the TSC, calibrated once against CLOCK_MONOTONIC at
 * the first exanet_open() (setup time, where system calls are fine).
 * Timeouts only need to be roughly right.
 */
static uint64_t ns_per_tsc_q32;		/* ns per tick << 32; 0: use clock_gettime */
static int tsc_state;			/* 0 untried, 1 calibrating/done */

#if defined(EXA_HAVE_TSC)
static void calibrate_tsc(void)
{
	uint64_t mult;

	if (__atomic_exchange_n(&tsc_state, 1, __ATOMIC_ACQ_REL))
		return;
	mult = exa_tsc_calibrate(2000000, NULL);	/* 2 ms */
	if (mult)
		__atomic_store_n(&ns_per_tsc_q32, mult, __ATOMIC_RELEASE);
}

static int64_t deadline_clock_ns(void)
{
	uint64_t mult = __atomic_load_n(&ns_per_tsc_q32, __ATOMIC_ACQUIRE);

	if (!mult)
		return exa_clock_ns();
	return exa_tsc_ns(mult);
}
#else
static void calibrate_tsc(void)
{
	tsc_state = 1;
}

static int64_t deadline_clock_ns(void)
{
	return exa_clock_ns();
}
#endif

/*
 * Busy-wait deadline.  The clock is read lazily and only every CLOCK_EVERY
 * polls, so a wait that succeeds quickly reads no clock at all.  The price:
 * a timeout starts counting after the first CLOCK_EVERY polls
 * (microseconds).
 *
 * A wait with a timeout spins for EXA_SPIN_NS, then yields the CPU between
 * polls: the peer process it waits for may need this very CPU (two
 * processes of a one-CPU node), and spinning on only delays it.  A wait
 * without timeout (EXANET_WAIT_FOREVER) never enters the kernel, for
 * callers that must not (seccomp strict mode); it spins.
 */
#define CLOCK_EVERY EXA_SPIN_CHECK
/*
 * A sched_yield() that took this long ran another task: the CPU is shared,
 * and the next waits of this thread yield after their first unsuccessful
 * poll, until SHARED_DECAY waits succeed without yielding.
 */
#define YIELD_RAN_OTHER_NS	5000
#define SHARED_DECAY		64

static __thread unsigned int cpu_shared;	/* > 0: yield early */


void exa_deadline_init(struct deadline *d, int64_t timeout_ns)
{
	d->timeout = timeout_ns;
	d->end = 0;
	d->spin_end = 0;
	d->spins = 0;
	d->yielding = 0;
}

/* After an unsuccessful poll: 1 if the time is up, else relax or yield. */
int exa_deadline_poll(struct deadline *d)
{
	int64_t now;

	if (d->timeout < 0) {
		cpu_relax();
		return 0;
	}
	if (d->timeout == 0)
		return 1;
	if (d->yielding) {
		int64_t before = deadline_clock_ns();

		sched_yield();
		now = deadline_clock_ns();
		if (now - before >= YIELD_RAN_OTHER_NS)
			cpu_shared = SHARED_DECAY;
		return now >= d->end;
	}
	cpu_relax();
	if (++d->spins % CLOCK_EVERY && !cpu_shared)
		return 0;
	now = deadline_clock_ns();
	if (!d->end) {
		d->end = now + d->timeout;
		d->spin_end = now + (cpu_shared ? 0 : EXA_SPIN_NS);
	}
	if (now >= d->spin_end)
		d->yielding = 1;
	return now >= d->end;
}

/* The wait succeeded: one spinning success more towards "not shared". */
void exa_deadline_done(const struct deadline *d)
{
	if (!d->yielding && cpu_shared)
		cpu_shared--;
}

/* Time left, for chaining two waits under one deadline. */
int64_t deadline_left(const struct deadline *d)
{
	int64_t left;

	if (d->timeout < 0 || !d->end)
		return d->timeout;
	left = d->end - deadline_clock_ns();
	return left > 0 ? left : 0;
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
	if (!__atomic_load_n(&tsc_state, __ATOMIC_ACQUIRE))
		calibrate_tsc();

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
