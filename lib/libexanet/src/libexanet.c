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

struct exanet_pkt {
	struct exanet_dev *dev;
	struct exanet_pkt *next;
	uint32_t iface;
	unsigned int next_chan;		/* round-robin cursor */
	volatile uint8_t *page;
};

struct exanet_mbox {
	struct exanet_dev *dev;
	struct exanet_mbox *next;
	uint32_t id;
	uint32_t nslots;
	uint32_t head;			/* next slot to consume */
	uint32_t phase;			/* expected phase bit of the slot at head */
	uint32_t unpublished;		/* slots consumed since the last HEAD store */
	uint32_t publish_batch;		/* publish HEAD after this many */
	volatile uint8_t *regs;
	const volatile struct exanet_mbox_slot *queue;
	size_t queue_size;
};

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
static int64_t deadline_left(const struct deadline *d)
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

/* ------------------------------------------------------------ packetizer */

EXPORT int exanet_pkt_alloc(struct exanet_dev *dev, struct exanet_pkt **pktp)
{
	struct exanet_pkt_alloc req = { 0 };
	struct exanet_pkt *pkt;
	void *page;
	int err;

	if (!dev || !pktp)
		return -EINVAL;
	*pktp = NULL;
	pkt = calloc(1, sizeof(*pkt));
	if (!pkt)
		return -ENOMEM;
	if (ioctl(dev->fd, EXANET_IOC_PKT_ALLOC, &req) < 0) {
		err = -errno;
		free(pkt);
		return err;
	}
	page = mmap(NULL, EXANET_IFACE_PAGE_SIZE, PROT_READ | PROT_WRITE,
		    MAP_SHARED, dev->fd, (off_t)req.mmap_offset);
	if (page == MAP_FAILED) {
		err = -errno;
		ioctl(dev->fd, EXANET_IOC_PKT_FREE, &req.iface);
		free(pkt);
		return err;
	}
	pkt->dev = dev;
	pkt->iface = req.iface;
	pkt->page = page;
	pkt->next = dev->pkts;
	dev->pkts = pkt;
	*pktp = pkt;
	return 0;
}

EXPORT int exanet_pkt_free(struct exanet_pkt *pkt)
{
	struct exanet_pkt **pp;
	struct exanet_dev *dev;
	int err = 0;

	if (!pkt)
		return -EINVAL;
	dev = pkt->dev;
	for (pp = &dev->pkts; *pp && *pp != pkt; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = pkt->next;
	munmap((void *)pkt->page, EXANET_IFACE_PAGE_SIZE);
	if (ioctl(dev->fd, EXANET_IOC_PKT_FREE, &pkt->iface) < 0)
		err = -errno;
	free(pkt);
	return err;
}

EXPORT uint32_t exanet_pkt_iface(const struct exanet_pkt *pkt)
{
	return pkt ? pkt->iface : UINT32_MAX;
}

static inline volatile uint8_t *chan_base(const struct exanet_pkt *pkt, unsigned int chan)
{
	return pkt->page + (size_t)chan * EXANET_PKT_CHAN_STRIDE;
}

static int send_args_ok(const struct exanet_pkt *pkt, uint32_t node, uint32_t mbox,
			const void *buf, size_t len)
{
	if (!pkt || !buf || len < 1 || len > EXANET_MAX_PAYLOAD)
		return 0;
	if (node > EXANET_DB_NODE_MASK || mbox > EXANET_DB_MBOX_MASK)
		return 0;
	return 1;
}

/* Payload as 8-byte stores; the last partial word is zero-padded, which
 * stays inside the 64-byte payload window. */
static inline void write_packet(volatile uint8_t *ch, uint32_t node, uint32_t mbox,
				const void *buf, size_t len)
{
	const uint8_t *src = buf;
	size_t off;

	for (off = 0; off + 8 <= len; off += 8) {
		uint64_t w;

		memcpy(&w, src + off, 8);
		mmio_write64(ch, EXANET_PKT_PAYLOAD + off, w);
	}
	if (off < len) {
		uint64_t w = 0;

		memcpy(&w, src + off, len - off);
		mmio_write64(ch, EXANET_PKT_PAYLOAD + off, w);
	}
	store_fence();
	mmio_write64(ch, EXANET_PKT_DOORBELL, EXANET_DOORBELL(node, mbox, len));
}

EXPORT int exanet_send_on(struct exanet_pkt *pkt, unsigned int chan, uint32_t node,
			  uint32_t mbox, const void *buf, size_t len)
{
	volatile uint8_t *ch;

	if (!send_args_ok(pkt, node, mbox, buf, len) || chan >= EXANET_PKT_CHANNELS)
		return -EINVAL;
	ch = chan_base(pkt, chan);
	if (EXANET_ST_STATE(mmio_read64(ch, EXANET_PKT_STATUS)) == EXANET_CHAN_ONGOING)
		return -EBUSY;
	write_packet(ch, node, mbox, buf, len);
	return (int)chan;
}

EXPORT int exanet_send(struct exanet_pkt *pkt, uint32_t node, uint32_t mbox,
		       const void *buf, size_t len)
{
	unsigned int i, chan;

	if (!send_args_ok(pkt, node, mbox, buf, len))
		return -EINVAL;
	for (i = 0; i < EXANET_PKT_CHANNELS; i++) {
		volatile uint8_t *ch;

		chan = (pkt->next_chan + i) % EXANET_PKT_CHANNELS;
		ch = chan_base(pkt, chan);
		if (EXANET_ST_STATE(mmio_read64(ch, EXANET_PKT_STATUS)) == EXANET_CHAN_ONGOING)
			continue;
		write_packet(ch, node, mbox, buf, len);
		pkt->next_chan = (chan + 1) % EXANET_PKT_CHANNELS;
		return (int)chan;
	}
	return -EAGAIN;
}

EXPORT uint64_t exanet_chan_status(const struct exanet_pkt *pkt, unsigned int chan)
{
	if (!pkt || chan >= EXANET_PKT_CHANNELS)
		return 0;
	return mmio_read64(chan_base(pkt, chan), EXANET_PKT_STATUS);
}

EXPORT int exanet_chan_state(const struct exanet_pkt *pkt, unsigned int chan)
{
	if (!pkt || chan >= EXANET_PKT_CHANNELS)
		return -EINVAL;
	return (int)EXANET_ST_STATE(exanet_chan_status(pkt, chan));
}

EXPORT int exanet_status_errno(uint64_t status)
{
	switch (EXANET_ST_STATE(status)) {
	case EXANET_CHAN_ACK:
		return 0;
	case EXANET_CHAN_ONGOING:
		return -EINPROGRESS;
	case EXANET_CHAN_IDLE:
		return -ENOMSG;
	case EXANET_CHAN_TIMEOUT:
		return -ETIMEDOUT;
	case EXANET_CHAN_NACK:
		switch (EXANET_ST_REASON(status)) {
		case EXANET_NACK_PDID:
			return -EACCES;
		case EXANET_NACK_FULL:
			return -ENOBUFS;
		case EXANET_NACK_BAD_PACKET:
			return -EPROTO;
		case EXANET_NACK_NO_ROUTE:
			return -EHOSTUNREACH;
		case EXANET_NACK_DISABLED:
		default:
			return -ECONNREFUSED;
		}
	default:
		return -EIO;
	}
}

EXPORT int exanet_wait(struct exanet_pkt *pkt, unsigned int chan, int64_t timeout_ns,
		       uint64_t *statusp)
{
	struct deadline dl;
	volatile uint8_t *ch;
	uint64_t st;

	if (!pkt || chan >= EXANET_PKT_CHANNELS)
		return -EINVAL;
	ch = chan_base(pkt, chan);
	exa_deadline_init(&dl, timeout_ns);
	for (;;) {
		st = mmio_read64(ch, EXANET_PKT_STATUS);
		if (EXANET_ST_STATE(st) != EXANET_CHAN_ONGOING) {
			exa_deadline_done(&dl);
			break;
		}
		if (exa_deadline_poll(&dl))
			break;
	}
	if (statusp)
		*statusp = st;
	return exanet_status_errno(st);
}

EXPORT int exanet_send_wait(struct exanet_pkt *pkt, uint32_t node, uint32_t mbox,
			    const void *buf, size_t len, int64_t timeout_ns,
			    uint64_t *statusp)
{
	struct deadline dl;
	int chan;

	if (!send_args_ok(pkt, node, mbox, buf, len))
		return -EINVAL;
	exa_deadline_init(&dl, timeout_ns);
	for (;;) {
		chan = exanet_send(pkt, node, mbox, buf, len);
		if (chan != -EAGAIN) {
			exa_deadline_done(&dl);
			break;
		}
		if (exa_deadline_poll(&dl))
			return -EAGAIN;
	}
	if (chan < 0)
		return chan;
	return exanet_wait(pkt, (unsigned int)chan, deadline_left(&dl), statusp);
}

/* ------------------------------------------------------------ mailbox */

static int is_pow2_in_range(unsigned int n)
{
	return n >= EXANET_MBOX_MIN_SLOTS && n <= EXANET_MBOX_MAX_SLOTS && !(n & (n - 1));
}

EXPORT int exanet_mbox_alloc(struct exanet_dev *dev, unsigned int nslots,
			     struct exanet_mbox **mboxp)
{
	struct exanet_mbox_alloc req = { 0 };
	struct exanet_mbox *mb;
	void *regs, *queue;
	int err;

	if (!dev || !mboxp)
		return -EINVAL;
	*mboxp = NULL;
	if (!is_pow2_in_range(nslots))
		return -EINVAL;
	mb = calloc(1, sizeof(*mb));
	if (!mb)
		return -ENOMEM;
	req.nslots = nslots;
	if (ioctl(dev->fd, EXANET_IOC_MBOX_ALLOC, &req) < 0) {
		err = -errno;
		free(mb);
		return err;
	}
	if (req.queue_size < (uint64_t)nslots * EXANET_MBOX_SLOT_SIZE) {
		err = -EPROTO;
		goto fail_free;
	}
	regs = mmap(NULL, EXANET_IFACE_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		    dev->fd, (off_t)req.regs_offset);
	if (regs == MAP_FAILED) {
		err = -errno;
		goto fail_free;
	}
	queue = mmap(NULL, req.queue_size, PROT_READ, MAP_SHARED, dev->fd,
		     (off_t)req.queue_offset);
	if (queue == MAP_FAILED) {
		err = -errno;
		munmap(regs, EXANET_IFACE_PAGE_SIZE);
		goto fail_free;
	}
	mb->dev = dev;
	mb->id = req.mbox;
	mb->nslots = nslots;
	mb->head = 0;
	mb->phase = EXANET_SLOT_PHASE;
	mb->publish_batch = nslots / 4 ? nslots / 4 : 1;
	mb->regs = regs;
	mb->queue = queue;
	mb->queue_size = req.queue_size;
	mb->next = dev->mboxes;
	dev->mboxes = mb;
	*mboxp = mb;
	return 0;

fail_free:
	ioctl(dev->fd, EXANET_IOC_MBOX_FREE, &req.mbox);
	free(mb);
	return err;
}

EXPORT int exanet_mbox_free(struct exanet_mbox *mb)
{
	struct exanet_mbox **pp;
	struct exanet_dev *dev;
	int err = 0;

	if (!mb)
		return -EINVAL;
	dev = mb->dev;
	for (pp = &dev->mboxes; *pp && *pp != mb; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = mb->next;
	munmap((void *)mb->queue, mb->queue_size);
	munmap((void *)mb->regs, EXANET_IFACE_PAGE_SIZE);
	if (ioctl(dev->fd, EXANET_IOC_MBOX_FREE, &mb->id) < 0)
		err = -errno;
	free(mb);
	return err;
}

EXPORT uint32_t exanet_mbox_id(const struct exanet_mbox *mb)
{
	return mb ? mb->id : UINT32_MAX;
}

EXPORT unsigned int exanet_mbox_nslots(const struct exanet_mbox *mb)
{
	return mb ? mb->nslots : 0;
}

static inline int slot_ready(const struct exanet_mbox *mb, uint32_t idx, uint32_t phase)
{
	uint32_t flags = __atomic_load_n(&mb->queue[idx].flags, __ATOMIC_ACQUIRE);

	return (flags & EXANET_SLOT_PHASE) == phase;
}

EXPORT void exanet_mbox_flush(struct exanet_mbox *mb)
{
	if (!mb || !mb->unpublished)
		return;
	/* Our reads of the consumed slots must complete before the NI may
	 * overwrite them. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	mmio_write32(mb->regs, EXANET_MBOX_HEAD, mb->head);
	mb->unpublished = 0;
}

EXPORT ssize_t exanet_recv(struct exanet_mbox *mb, void *buf, size_t buflen,
			   struct exanet_msg_info *info)
{
	const volatile struct exanet_mbox_slot *slot;
	uint32_t len;

	if (!mb || (!buf && buflen))
		return -EINVAL;
	if (!slot_ready(mb, mb->head, mb->phase)) {
		/* Publishing before reporting empty guarantees a drained queue
		 * never NACKs FULL because of a HEAD we kept to ourselves. */
		exanet_mbox_flush(mb);
		/* Reading TAIL is the poll the NI answers by delivering what
		 * waits for this node before it replies (the emulated NI does
		 * it in the polling CPU); then look once more. */
		(void)mmio_read32(mb->regs, EXANET_MBOX_TAIL);
		if (!slot_ready(mb, mb->head, mb->phase))
			return 0;
	}
	slot = &mb->queue[mb->head];
	len = slot->len;
	if (len >= 1 && len <= EXANET_MAX_PAYLOAD) {
		if (!buf || buflen < len)
			return -EMSGSIZE;
		memcpy(buf, (const void *)slot->payload, len);
	}
	if (info) {
		info->src_node = slot->src_node;
		info->src_iface = slot->src_iface;
		info->src_chan = slot->src_chan;
		info->seq = slot->seq;
		info->slot = mb->head;
	}
	if (++mb->head == mb->nslots) {
		mb->head = 0;
		mb->phase ^= EXANET_SLOT_PHASE;
	}
	if (++mb->unpublished >= mb->publish_batch)
		exanet_mbox_flush(mb);
	if (len < 1 || len > EXANET_MAX_PAYLOAD)
		return -EIO;
	return (ssize_t)len;
}

EXPORT ssize_t exanet_recv_wait(struct exanet_mbox *mb, void *buf, size_t buflen,
				struct exanet_msg_info *info, int64_t timeout_ns)
{
	struct deadline dl;
	ssize_t n;

	if (!mb || (!buf && buflen))
		return -EINVAL;
	exa_deadline_init(&dl, timeout_ns);
	for (;;) {
		n = exanet_recv(mb, buf, buflen, info);
		if (n != 0) {
			exa_deadline_done(&dl);
			return n;
		}
		if (exa_deadline_poll(&dl))
			return -ETIMEDOUT;
	}
}

EXPORT unsigned int exanet_mbox_pending(const struct exanet_mbox *mb)
{
	uint32_t idx, phase, n = 0;

	if (!mb)
		return 0;
	idx = mb->head;
	phase = mb->phase;
	while (n < mb->nslots && slot_ready(mb, idx, phase)) {
		n++;
		if (++idx == mb->nslots) {
			idx = 0;
			phase ^= EXANET_SLOT_PHASE;
		}
	}
	return n;
}

EXPORT uint32_t exanet_mbox_rx_count(const struct exanet_mbox *mb)
{
	return mb ? mmio_read32(mb->regs, EXANET_MBOX_RX_COUNT) : 0;
}

EXPORT uint32_t exanet_mbox_full_count(const struct exanet_mbox *mb)
{
	return mb ? mmio_read32(mb->regs, EXANET_MBOX_FULL_COUNT) : 0;
}

EXPORT uint32_t exanet_mbox_hw_tail(const struct exanet_mbox *mb)
{
	return mb ? mmio_read32(mb->regs, EXANET_MBOX_TAIL) : 0;
}

EXPORT uint32_t exanet_mbox_hw_head(const struct exanet_mbox *mb)
{
	return mb ? mmio_read32(mb->regs, EXANET_MBOX_HEAD) : 0;
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

/* ------------------------------------------------------------------ RDMA */


#define RDMA_VA_LIMIT (1ull << EXANET_RDMA_VA_BITS)

EXPORT int exanet_raddr_make(uint32_t node, uint32_t rank, uint64_t va,
			     struct exanet_raddr *out)
{
	if (!out || node > EXANET_RDMA_REMOTE_NODE_MASK ||
	    rank > EXANET_RDMA_REMOTE_RANK_MASK || va >= RDMA_VA_LIMIT)
		return -EINVAL;
	out->node = node;
	out->rank = rank;
	out->va = va;
	return 0;
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

EXPORT int exanet_raddr_encode(const struct exanet_raddr *ra,
			       uint8_t out[EXANET_RADDR_WIRE_SIZE])
{
	struct exanet_raddr chk;

	if (!ra || !out || exanet_raddr_make(ra->node, ra->rank, ra->va, &chk))
		return -EINVAL;
	put_le64(out, EXANET_RDMA_REMOTE(ra->node, ra->rank));
	put_le64(out + 8, ra->va);
	return 0;
}

EXPORT int exanet_raddr_decode(const uint8_t in[EXANET_RADDR_WIRE_SIZE],
			       struct exanet_raddr *out)
{
	uint64_t remote, va;

	if (!in || !out)
		return -EINVAL;
	remote = get_le64(in);
	va = get_le64(in + 8);
	if (remote & ~(EXANET_RDMA_REMOTE_NODE_MASK |
		       (EXANET_RDMA_REMOTE_RANK_MASK << EXANET_RDMA_REMOTE_RANK_SHIFT)))
		return -EINVAL;
	return exanet_raddr_make(EXANET_RDMA_REMOTE_NODE(remote),
				 EXANET_RDMA_REMOTE_RANK(remote), va, out);
}

EXPORT int exanet_raddr_add(struct exanet_raddr *ra, uint64_t off)
{
	if (!ra || off >= RDMA_VA_LIMIT || ra->va + off >= RDMA_VA_LIMIT)
		return -EINVAL;
	ra->va += off;
	return 0;
}

EXPORT int exanet_mr_raddr(const struct exanet_mr *mr, const void *ptr,
			   struct exanet_raddr *out)
{
	uintptr_t p = (uintptr_t)ptr, a;

	if (!mr || !out)
		return -EINVAL;
	a = (uintptr_t)mr->addr;
	if (p < a || p - a >= mr->len)
		return -EINVAL;
	return exanet_raddr_make(mr->node, mr->rank, (uint64_t)p, out);
}

EXPORT int exanet_rdma_query(struct exanet_dev *dev, struct exanet_rdma_info *info)
{
	if (!dev || !info)
		return -EINVAL;
	if (ioctl(dev->fd, EXANET_IOC_RDMA_INFO, info) < 0)
		return -errno;
	return 0;
}

EXPORT int exanet_reg_mr(struct exanet_dev *dev, void *addr, size_t len,
			 uint32_t access, struct exanet_mr **mrp)
{
	struct exanet_reg_mr req = { 0 };
	struct exanet_mr *mr;
	int err;

	if (!dev || !mrp)
		return -EINVAL;
	*mrp = NULL;
	if (access & ~(uint32_t)EXANET_MR_FLAGS_MASK)
		return -EINVAL;
	/* addr NULL and len 0 on demand: the implicit registration */
	if ((!addr || !len) &&
	    (addr || len || !(access & EXANET_MR_ON_DEMAND)))
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	req.addr = (uintptr_t)addr;
	req.len = len;
	req.access = access;
	if (ioctl(dev->fd, EXANET_IOC_REG_MR, &req) < 0) {
		err = -errno;
		free(mr);
		return err;
	}
	mr->addr = addr;
	/* implicit: every address below 2^47 (x86-64 user space) */
	mr->len = len ? len : (size_t)1 << 47;
	mr->handle = req.handle;
	mr->node = req.node_id;
	mr->rank = req.rank;
	mr->access = access & EXANET_MR_ACCESS_MASK ? access :
		     access | EXANET_MR_ACCESS_MASK;
	mr->dev = dev;
	mr->next = dev->mrs;
	dev->mrs = mr;
	*mrp = mr;
	return 0;
}

EXPORT int exanet_reg_mr_implicit(struct exanet_dev *dev, uint32_t access,
				  struct exanet_mr **mrp)
{
	return exanet_reg_mr(dev, NULL, 0, access | EXANET_MR_ON_DEMAND, mrp);
}

EXPORT int exanet_dereg_mr(struct exanet_mr *mr)
{
	struct exanet_mr **pp;
	int err = 0;

	if (!mr || !mr->dev)
		return -EINVAL;
	for (pp = &mr->dev->mrs; *pp && *pp != mr; pp = &(*pp)->next)
		;
	if (!*pp)
		return -EINVAL;
	*pp = mr->next;
	if (ioctl(mr->dev->fd, EXANET_IOC_DEREG_MR, &mr->handle) < 0)
		err = -errno;
	free(mr);
	return err;
}

/*
 * Notification waits read memory, which the NI does not see: between two
 * looks at the record they read EXANET_RDMA_S_NOTIFS of one of the
 * process's RDMA pages, so that the NI takes in pending traffic at once
 * (an emulated NI otherwise waits for its fabric thread to wake up, tens of
 * microseconds) and knows the process waits.  Any open page will do (the
 * newest is at hand); closing it waits for polls in progress (the lock prefers writers,
 * and an uncontended read lock makes no system call).
 */
static pthread_rwlock_t notif_poller_lock;
static pthread_once_t notif_poller_once = PTHREAD_ONCE_INIT;
static struct exanet_rdma *notif_pollers;	/* newest first */

static void notif_poller_init(void)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&notif_poller_lock, &a);
	pthread_rwlockattr_destroy(&a);
}

static void notif_poller_add(struct exanet_rdma *r)
{
	pthread_once(&notif_poller_once, notif_poller_init);
	pthread_rwlock_wrlock(&notif_poller_lock);
	r->pnext = notif_pollers;
	notif_pollers = r;
	pthread_rwlock_unlock(&notif_poller_lock);
}

static void notif_poller_remove(struct exanet_rdma *r)
{
	struct exanet_rdma **pp;

	pthread_once(&notif_poller_once, notif_poller_init);
	pthread_rwlock_wrlock(&notif_poller_lock);
	for (pp = &notif_pollers; *pp && *pp != r; pp = &(*pp)->pnext)
		;
	if (*pp)
		*pp = r->pnext;
	pthread_rwlock_unlock(&notif_poller_lock);
}

/* Read NOTIFS of an open RDMA page (the newest), if the process has one. */
static void notif_poll_ni(void)
{
	pthread_once(&notif_poller_once, notif_poller_init);
	if (pthread_rwlock_rdlock(&notif_poller_lock))
		return;
	if (notif_pollers)
		(void)mmio_read64(notif_pollers->regs, EXANET_RDMA_S_NOTIFS);
	pthread_rwlock_unlock(&notif_poller_lock);
}

EXPORT int exanet_rdma_alloc(struct exanet_dev *dev, struct exanet_rdma **rdmap)
{
	struct exanet_rdma_alloc req = { 0 };
	struct exanet_rdma *r;
	void *page;
	int err;

	if (!dev || !rdmap)
		return -EINVAL;
	*rdmap = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (ioctl(dev->fd, EXANET_IOC_RDMA_ALLOC, &req) < 0) {
		err = -errno;
		free(r);
		return err;
	}
	page = mmap(NULL, req.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    dev->fd, (off_t)req.mmap_offset);
	if (page == MAP_FAILED) {
		err = -errno;
		ioctl(dev->fd, EXANET_IOC_RDMA_FREE, &req.page);
		free(r);
		return err;
	}
	r->dev = dev;
	r->page = req.page;
	r->rank = req.rank;
	r->node = req.node_id;
	r->regs = page;
	r->next = dev->rdmas;
	dev->rdmas = r;
	notif_poller_add(r);
	*rdmap = r;
	return 0;
}

EXPORT int exanet_rdma_free(struct exanet_rdma *r)
{
	struct exanet_rdma **pp;
	int err = 0;

	if (!r || !r->dev)
		return -EINVAL;
	for (pp = &r->dev->rdmas; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (!*pp)
		return -EINVAL;
	*pp = r->next;
	notif_poller_remove(r);
	if (r->coll)
		exanet_coll_close(r->coll);
	munmap((void *)r->regs, EXANET_RDMA_PAGE_SIZE);
	if (ioctl(r->dev->fd, EXANET_IOC_RDMA_FREE, &r->page) < 0)
		err = -errno;
	free(r);
	return err;
}

EXPORT uint32_t exanet_rdma_page(const struct exanet_rdma *r)
{
	return r ? r->page : 0;
}

EXPORT uint32_t exanet_rdma_rank(const struct exanet_rdma *r)
{
	return r ? r->rank : EXANET_RDMA_NO_RANK;
}

EXPORT uint32_t exanet_rdma_node(const struct exanet_rdma *r)
{
	return r ? r->node : 0;
}

static inline volatile uint8_t *rdma_slot(const struct exanet_rdma *r, unsigned int slot)
{
	return r->regs + (size_t)slot * EXANET_RDMA_CHAN_STRIDE;
}

EXPORT uint64_t exanet_rdma_status(const struct exanet_rdma *r, unsigned int slot)
{
	if (!r || slot >= EXANET_RDMA_CHANS)
		return 0;
	return mmio_read64(rdma_slot(r, slot), EXANET_RDMA_S_STATUS);
}

EXPORT uint64_t exanet_rdma_done_bytes(const struct exanet_rdma *r, unsigned int slot)
{
	if (!r || slot >= EXANET_RDMA_CHANS)
		return 0;
	return mmio_read64(rdma_slot(r, slot), EXANET_RDMA_S_DONE_BYTES);
}

EXPORT int exanet_rdma_error_errno(unsigned int error)
{
	switch (error) {
	case EXANET_RDMA_E_NONE:	return 0;
	case EXANET_RDMA_E_BAD_DESC:	return -EINVAL;
	case EXANET_RDMA_E_NO_ROUTE:	return -EHOSTUNREACH;
	case EXANET_RDMA_E_PDID:	return -EACCES;
	case EXANET_RDMA_E_REMOTE_CTX:	return -ECONNREFUSED;
	case EXANET_RDMA_E_REMOTE_DMA:	return -EREMOTEIO;
	case EXANET_RDMA_E_LOCAL_DMA:	return -EFAULT;
	case EXANET_RDMA_E_TIMEOUT:	return -ETIMEDOUT;
	case EXANET_RDMA_E_NOTIFY_DMA:	return -EBADMSG;
	case EXANET_RDMA_E_ABORTED:	return -ECANCELED;
	case EXANET_RDMA_E_REMOTE_FAULT: return -ENXIO;
	case EXANET_RDMA_E_LOCAL_FAULT:	return -EPERM;
	default:			return -EIO;
	}
}

EXPORT const char *exanet_rdma_error_str(unsigned int error)
{
	static const char *const names[] = {
		"none", "bad descriptor", "no route", "PDID mismatch",
		"remote context absent/disabled", "remote DMA fault",
		"local DMA fault", "timeout", "notification DMA fault", "aborted",
		"remote on-demand fault refused", "local on-demand fault refused",
	};

	return error < sizeof(names) / sizeof(names[0]) ? names[error] : "unknown";
}

EXPORT int exanet_rdma_status_errno(uint64_t status)
{
	switch (EXANET_RDMA_ST_STATE(status)) {
	case EXANET_RDMA_DONE:
		return 0;
	case EXANET_RDMA_ONGOING:
		return -EINPROGRESS;
	case EXANET_RDMA_IDLE:
		return -ENOMSG;
	case EXANET_RDMA_ERROR: {
		int e = exanet_rdma_error_errno(EXANET_RDMA_ST_ERROR(status));

		return e ? e : -EIO;
	}
	default:
		return -EIO;
	}
}

static int rdma_args_ok(const struct exanet_rdma *r, const void *local,
			const struct exanet_raddr *ra, size_t len,
			const struct exanet_rdma_opts *o)
{
	uint64_t l = (uintptr_t)local;

	if (!r || !local || !ra || !len || len > EXANET_RDMA_MAX_LEN)
		return 0;
	if (l >= RDMA_VA_LIMIT || l + len > RDMA_VA_LIMIT)
		return 0;
	if (ra->node > EXANET_RDMA_REMOTE_NODE_MASK || ra->rank > EXANET_RDMA_REMOTE_RANK_MASK ||
	    ra->va >= RDMA_VA_LIMIT || ra->va + len > RDMA_VA_LIMIT)
		return 0;
	if (o && ((o->notify_va & 7) || ((uintptr_t)o->lcomp & 7)))
		return 0;
	return 1;
}

/* Stage the descriptor and trigger: 8 stores, fence before the trigger. */
static void rdma_write_desc(struct exanet_rdma *r, unsigned int slot, uint64_t local,
			    const struct exanet_raddr *ra, size_t len,
			    const struct exanet_rdma_opts *o)
{
	volatile uint8_t *s = rdma_slot(r, slot);

	if (o && o->lcomp)
		__atomic_store_n(&o->lcomp->flags, 0, __ATOMIC_RELAXED);
	mmio_write64(s, EXANET_RDMA_D_LOCAL_VA, local);
	mmio_write64(s, EXANET_RDMA_D_REMOTE_VA, ra->va);
	mmio_write64(s, EXANET_RDMA_D_REMOTE, EXANET_RDMA_REMOTE(ra->node, ra->rank));
	mmio_write64(s, EXANET_RDMA_D_LENGTH, len);
	mmio_write64(s, EXANET_RDMA_D_NOTIFY_VA, o ? o->notify_va : 0);
	mmio_write64(s, EXANET_RDMA_D_TAG, o ? o->tag : 0);
	mmio_write64(s, EXANET_RDMA_D_LCOMP_VA, o ? (uintptr_t)o->lcomp : 0);
	store_fence();
	mmio_write64(s, EXANET_RDMA_D_CTRL, 0);
}

/* Claim a free channel among n (bit set in *mask) starting near *cursor. */
static int rdma_claim(uint32_t *mask, uint32_t *cursor, unsigned int n)
{
	uint32_t start = __atomic_load_n(cursor, __ATOMIC_RELAXED);

	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = (start + k) % n;
		uint32_t bit = 1u << i;

		if (__atomic_load_n(mask, __ATOMIC_RELAXED) & bit)
			continue;
		if (!(__atomic_fetch_or(mask, bit, __ATOMIC_ACQUIRE) & bit)) {
			__atomic_store_n(cursor, (i + 1) % n, __ATOMIC_RELAXED);
			return (int)i;
		}
	}
	return -EAGAIN;
}

static void rdma_unclaim(struct exanet_rdma *r, unsigned int slot)
{
	if (slot < EXANET_RDMA_WCHANS)
		__atomic_fetch_and(&r->wclaim, ~(1u << slot), __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&r->rclaim, ~(1u << (slot - EXANET_RDMA_WCHANS)),
				   __ATOMIC_RELEASE);
}

static int rdma_post_on(struct exanet_rdma *r, unsigned int slot, uint64_t local,
			const struct exanet_raddr *ra, size_t len,
			const struct exanet_rdma_opts *o)
{
	uint64_t st = mmio_read64(rdma_slot(r, slot), EXANET_RDMA_S_STATUS);

	if (EXANET_RDMA_ST_STATE(st) == EXANET_RDMA_ONGOING)
		return -EBUSY;
	rdma_write_desc(r, slot, local, ra, len, o);
	return (int)slot;
}

EXPORT int exanet_rdma_post_write_on(struct exanet_rdma *r, unsigned int slot,
				     const void *src, const struct exanet_raddr *dst,
				     size_t len, const struct exanet_rdma_opts *opts)
{
	if (!rdma_args_ok(r, src, dst, len, opts) || slot >= EXANET_RDMA_WCHANS)
		return -EINVAL;
	return rdma_post_on(r, slot, (uintptr_t)src, dst, len, opts);
}

EXPORT int exanet_rdma_post_read_on(struct exanet_rdma *r, unsigned int slot,
				    void *dst, const struct exanet_raddr *src,
				    size_t len, const struct exanet_rdma_opts *opts)
{
	if (!rdma_args_ok(r, dst, src, len, opts) || slot < EXANET_RDMA_WCHANS ||
	    slot >= EXANET_RDMA_CHANS)
		return -EINVAL;
	return rdma_post_on(r, slot, (uintptr_t)dst, src, len, opts);
}

EXPORT int exanet_rdma_post_write(struct exanet_rdma *r, const void *src,
				  const struct exanet_raddr *dst, size_t len,
				  const struct exanet_rdma_opts *opts)
{
	int i, ret;

	if (!rdma_args_ok(r, src, dst, len, opts))
		return -EINVAL;
	i = rdma_claim(&r->wclaim, &r->wcursor, EXANET_RDMA_WCHANS);
	if (i < 0)
		return i;
	ret = rdma_post_on(r, EXANET_RDMA_WCHAN(i), (uintptr_t)src, dst, len, opts);
	if (ret < 0)
		rdma_unclaim(r, EXANET_RDMA_WCHAN(i));
	return ret;
}

EXPORT int exanet_rdma_post_read(struct exanet_rdma *r, void *dst,
				 const struct exanet_raddr *src, size_t len,
				 const struct exanet_rdma_opts *opts)
{
	int i, ret;

	if (!rdma_args_ok(r, dst, src, len, opts))
		return -EINVAL;
	i = rdma_claim(&r->rclaim, &r->rcursor, EXANET_RDMA_RCHANS);
	if (i < 0)
		return i;
	ret = rdma_post_on(r, EXANET_RDMA_RCHAN(i), (uintptr_t)dst, src, len, opts);
	if (ret < 0)
		rdma_unclaim(r, EXANET_RDMA_RCHAN(i));
	return ret;
}

EXPORT int exanet_rdma_poll(struct exanet_rdma *r, unsigned int slot, uint64_t *statusp)
{
	uint64_t st;
	int ret;

	if (!r || slot >= EXANET_RDMA_CHANS)
		return -EINVAL;
	st = mmio_read64(rdma_slot(r, slot), EXANET_RDMA_S_STATUS);
	if (statusp)
		*statusp = st;
	ret = exanet_rdma_status_errno(st);
	if (ret != -EINPROGRESS) {
		/* The NI wrote the data before it reported the state. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		rdma_unclaim(r, slot);
	}
	return ret;
}

EXPORT int exanet_rdma_wait(struct exanet_rdma *r, unsigned int slot,
			    int64_t timeout_ns, uint64_t *statusp)
{
	struct deadline d;
	int ret;

	exa_deadline_init(&d, timeout_ns);
	for (;;) {
		ret = exanet_rdma_poll(r, slot, statusp);
		if (ret != -EINPROGRESS) {
			exa_deadline_done(&d);
			return ret;
		}
		if (exa_deadline_poll(&d))
			return ret;
	}
}

EXPORT int exanet_rdma_notif_poll(struct exanet_rdma_notif *n, struct exanet_rdma_notif *out)
{
	uint32_t f;

	if (!n)
		return -EINVAL;
	f = __atomic_load_n((volatile uint32_t *)&n->flags, __ATOMIC_ACQUIRE);
	if (!(f & EXANET_RDMA_N_VALID))
		return 0;
	if (out) {
		memcpy(out, (const void *)n, sizeof(*out));
		out->flags = f;
	}
	__atomic_store_n((volatile uint32_t *)&n->flags, 0, __ATOMIC_RELEASE);
	return 1;
}

EXPORT int exanet_rdma_notif_wait(struct exanet_rdma_notif *n, struct exanet_rdma_notif *out,
				  int64_t timeout_ns)
{
	struct deadline d;
	int ret;

	if (!n)
		return -EINVAL;
	exa_deadline_init(&d, timeout_ns);
	ret = exanet_rdma_notif_poll(n, out);
	while (!ret) {
		notif_poll_ni();
		ret = exanet_rdma_notif_poll(n, out);
		if (!ret && exa_deadline_poll(&d))
			return -ETIMEDOUT;
	}
	exa_deadline_done(&d);
	return ret;
}

EXPORT void exanet_rdma_notif_reset(struct exanet_rdma_notif *n)
{
	if (n)
		__atomic_store_n((volatile uint32_t *)&n->flags, 0, __ATOMIC_RELEASE);
}
