// SPDX-License-Identifier: GPL-2.0
/*
 * libexanet against a fake kernel: open/ioctl/mmap/munmap/close are wrapped
 * (ld --wrap) so paths under /fake/ behave like an ExaNet device whose
 * "hardware" pages are ordinary memory this test inspects and fills.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libexanet.h>

#include "../lib/kselftest_exa.h"

/* ------------------------------------------------------------ fake kernel */

int __real_open(const char *path, int flags, ...);
int __real_ioctl(int fd, unsigned long req, ...);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
int __real_close(int fd);

static struct {
	int fd;			/* real fd of /dev/null standing in for the device */
	uint32_t abi;
	uint32_t node_id, num_nodes, pdid;
	int ioctl_calls;
	int pkt_used[EXANET_NUM_PKT_IFACES];
	int mbox_used[EXANET_NUM_MBOX_IFACES];
	uint32_t mbox_nslots[EXANET_NUM_MBOX_IFACES];
	uint8_t *pkt_page[EXANET_NUM_PKT_IFACES];
	uint8_t *mbox_regs[EXANET_NUM_MBOX_IFACES];
	uint8_t *mbox_queue[EXANET_NUM_MBOX_IFACES];
	int maps;
	int irq;		/* the fake NI has interrupts */
	uint32_t arm_flags, arm_calls, arm_events;
} fk = { .fd = -1 };

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	va_start(ap, flags);
	if (flags & O_CREAT)
		mode = va_arg(ap, mode_t);
	va_end(ap);
	if (strncmp(path, "/fake/", 6))
		return __real_open(path, flags, mode);
	if (strcmp(path, "/fake/exanet0")) {
		errno = ENOENT;
		return -1;
	}
	fk.fd = __real_open("/dev/null", O_RDWR);
	return fk.fd;
}

int __wrap_close(int fd)
{
	if (fd == fk.fd)
		fk.fd = -1;
	return __real_close(fd);
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd != fk.fd || fd < 0)
		return __real_ioctl(fd, req, arg);
	fk.ioctl_calls++;
	switch (req) {
	case EXANET_IOC_GET_INFO: {
		struct exanet_info *i = arg;

		memset(i, 0, sizeof(*i));
		i->abi_version = fk.abi;
		i->node_id = fk.node_id;
		i->num_nodes = fk.num_nodes;
		i->pdid = fk.pdid;
		i->num_pkt_ifaces = EXANET_NUM_PKT_IFACES;
		i->num_mbox_ifaces = EXANET_NUM_MBOX_IFACES;
		i->pkt_channels = EXANET_PKT_CHANNELS;
		i->max_payload = EXANET_MAX_PAYLOAD;
		return 0;
	}
	case EXANET_IOC_PKT_ALLOC: {
		struct exanet_pkt_alloc *a = arg;
		uint32_t k;

		for (k = 0; k < EXANET_NUM_PKT_IFACES && fk.pkt_used[k]; k++)
			;
		if (k == EXANET_NUM_PKT_IFACES) {
			errno = ENOSPC;
			return -1;
		}
		fk.pkt_used[k] = 1;
		a->iface = k;
		a->mmap_offset = EXANET_MMAP_OFFSET(EXANET_MMAP_PKT, k);
		return 0;
	}
	case EXANET_IOC_MBOX_ALLOC: {
		struct exanet_mbox_alloc *a = arg;
		uint32_t k;

		for (k = 0; k < EXANET_NUM_MBOX_IFACES && fk.mbox_used[k]; k++)
			;
		fk.mbox_used[k] = 1;
		fk.mbox_nslots[k] = a->nslots;
		a->mbox = k;
		a->regs_offset = EXANET_MMAP_OFFSET(EXANET_MMAP_MBOX_REGS, k);
		a->queue_offset = EXANET_MMAP_OFFSET(EXANET_MMAP_MBOX_QUEUE, k);
		a->queue_size = (uint64_t)a->nslots * EXANET_MBOX_SLOT_SIZE;
		return 0;
	}
	case EXANET_IOC_PKT_FREE:
	case EXANET_IOC_MBOX_FREE: {
		uint32_t k = *(uint32_t *)arg;
		int *used = req == EXANET_IOC_PKT_FREE ? fk.pkt_used : fk.mbox_used;

		if (k >= 64 || !used[k]) {
			errno = EINVAL;
			return -1;
		}
		used[k] = 0;
		return 0;
	}
	case EXANET_IOC_EVENT_ARM: {
		struct exanet_event_arm *a = arg;

		if (!fk.irq) {
			errno = EOPNOTSUPP;
			return -1;
		}
		fk.arm_calls++;
		fk.arm_flags = a->flags;
		a->mbox_mask = 1;
		a->rank = EXANET_RDMA_NO_RANK;
		a->events = fk.arm_events;
		return 0;
	}
	}
	errno = ENOTTY;
	return -1;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	uint64_t o = (uint64_t)off;
	unsigned int kind = (unsigned int)(o >> EXANET_MMAP_KIND_SHIFT);
	unsigned int idx = (unsigned int)((o >> EXANET_MMAP_INDEX_SHIFT) & 0xff);
	void *p;

	if (fd != fk.fd || fd < 0)
		return __real_mmap(addr, len, prot, flags, fd, off);
	if (!(flags & MAP_SHARED) || idx >= 64) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	if (kind == EXANET_MMAP_MBOX_QUEUE && (prot & PROT_WRITE)) {
		errno = EPERM;
		return MAP_FAILED;
	}
	p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!p)
		return MAP_FAILED;
	memset(p, 0, len);
	switch (kind) {
	case EXANET_MMAP_PKT: fk.pkt_page[idx] = p; break;
	case EXANET_MMAP_MBOX_REGS: fk.mbox_regs[idx] = p; break;
	case EXANET_MMAP_MBOX_QUEUE: fk.mbox_queue[idx] = p; break;
	default:
		free(p);
		errno = EINVAL;
		return MAP_FAILED;
	}
	fk.maps++;
	return p;
}

int __wrap_munmap(void *addr, size_t len)
{
	int k;

	for (k = 0; k < 64; k++) {
		if (addr == fk.pkt_page[k] || addr == fk.mbox_regs[k] || addr == fk.mbox_queue[k]) {
			if (addr == fk.pkt_page[k])
				fk.pkt_page[k] = NULL;
			if (addr == fk.mbox_regs[k])
				fk.mbox_regs[k] = NULL;
			if (addr == fk.mbox_queue[k])
				fk.mbox_queue[k] = NULL;
			free(addr);
			fk.maps--;
			return 0;
		}
	}
	return __real_munmap(addr, len);
}

static void fake_reset(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.fd = -1;
	fk.abi = EXANET_ABI_VERSION;
	fk.node_id = 3;
	fk.num_nodes = 4;
	fk.pdid = 1;
}

static uint64_t *chan_reg(uint32_t iface, unsigned int chan, unsigned int off)
{
	return (uint64_t *)(fk.pkt_page[iface] + chan * EXANET_PKT_CHAN_STRIDE + off);
}

static void set_status(uint32_t iface, unsigned int chan, uint64_t st)
{
	*chan_reg(iface, chan, EXANET_PKT_STATUS) = st;
}

static uint32_t *mbox_reg(uint32_t m, unsigned int off)
{
	return (uint32_t *)(fk.mbox_regs[m] + off);
}

/* The fake NI delivers into slot idx with the given phase. */
static void ni_deliver(uint32_t m, uint32_t idx, uint32_t phase, const void *data, uint32_t len,
		       uint32_t src)
{
	struct exanet_mbox_slot *s = (struct exanet_mbox_slot *)fk.mbox_queue[m] + idx;

	memcpy(s->payload, data, len < 64 ? len : 64);
	s->len = len;
	s->src_node = src;
	s->src_iface = 5;
	s->src_chan = 2;
	s->seq = 77;
	__atomic_store_n(&s->flags, phase, __ATOMIC_RELEASE);
}

FIXTURE(fake) {
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
};

FIXTURE_SETUP(fake)
{
	fake_reset();
	ASSERT_EQ(0, exanet_open("/fake/exanet0", &self->dev));
	ASSERT_EQ(0, exanet_pkt_alloc(self->dev, &self->pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 8, &self->mb));
}

FIXTURE_TEARDOWN(fake)
{
	exanet_close(self->dev);
	ASSERT_EQ(0, fk.maps);
}

/* ------------------------------------------------------------ tests */

TEST(open_nonexistent_enoent)
{
	struct exanet_dev *dev = (void *)1;

	ASSERT_EQ(-ENOENT, exanet_open("/nonexistent/exanet0", &dev));
	ASSERT_EQ(NULL, dev);
	ASSERT_EQ(-ENOENT, exanet_open_index(250, &dev));
}

TEST(open_argument_validation)
{
	struct exanet_dev *dev;

	ASSERT_EQ(-EINVAL, exanet_open(NULL, NULL));
	ASSERT_EQ(-EINVAL, exanet_open("", &dev));
	/* not an ExaNet device: ENOTTY from the ioctl */
	ASSERT_EQ(-ENODEV, exanet_open("/dev/null", &dev));
	ASSERT_EQ(-ENODEV, exanet_open("/proc/self/status", &dev));
	fake_reset();
	fk.abi = EXANET_ABI_VERSION + 1;
	ASSERT_EQ(-ENODEV, exanet_open("/fake/exanet0", &dev));
	ASSERT_EQ(-1, fk.fd);	/* closed again */
}

TEST(null_objects_are_rejected)
{
	uint8_t b[8] = { 0 };
	struct exanet_info info;

	ASSERT_EQ(-EINVAL, exanet_query(NULL, &info));
	ASSERT_EQ(-EINVAL, exanet_pkt_alloc(NULL, NULL));
	ASSERT_EQ(-EINVAL, exanet_mbox_alloc(NULL, 8, NULL));
	ASSERT_EQ(-EINVAL, exanet_send(NULL, 0, 0, b, 8));
	ASSERT_EQ(-EINVAL, exanet_send_wait(NULL, 0, 0, b, 8, 0, NULL));
	ASSERT_EQ(-EINVAL, exanet_wait(NULL, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, exanet_recv(NULL, b, 8, NULL));
	ASSERT_EQ(-EINVAL, exanet_recv_wait(NULL, b, 8, NULL, 0));
	ASSERT_EQ(-EINVAL, exanet_pkt_free(NULL));
	ASSERT_EQ(-EINVAL, exanet_mbox_free(NULL));
	ASSERT_EQ(-EINVAL, exanet_read_counters(NULL, NULL, 0));
	exanet_close(NULL);	/* no crash */
	exanet_mbox_flush(NULL);
	ASSERT_EQ(0, exanet_chan_status(NULL, 0));
}

TEST_F(fake, info_getters)
{
	struct exanet_info info;

	ASSERT_EQ(0, exanet_query(self->dev, &info));
	ASSERT_EQ(3, info.node_id);
	ASSERT_EQ(3, exanet_node_id(self->dev));
	ASSERT_EQ(4, exanet_num_nodes(self->dev));
	ASSERT_EQ(1, exanet_pdid(self->dev));
	ASSERT_EQ(0, exanet_pkt_iface(self->pkt));
	ASSERT_EQ(0, exanet_mbox_id(self->mb));
	ASSERT_EQ(8, exanet_mbox_nslots(self->mb));
	ASSERT_EQ(-ENODEV, exanet_dev_index(self->dev));	/* /dev/null is not exanetN */
}

TEST_F(fake, send_writes_payload_words_then_doorbell)
{
	uint8_t msg[64];
	uint64_t *payload;
	int i, chan;

	for (i = 0; i < 64; i++)
		msg[i] = (uint8_t)(i + 1);
	chan = exanet_send(self->pkt, 2, 17, msg, 13);
	ASSERT_EQ(0, chan);
	payload = chan_reg(0, 0, EXANET_PKT_PAYLOAD);
	ASSERT_EQ(0, memcmp(payload, msg, 13));
	/* last partial word zero-padded, nothing beyond it written */
	ASSERT_EQ(0, ((uint8_t *)payload)[13]);
	ASSERT_EQ(0, ((uint8_t *)payload)[15]);
	ASSERT_EQ(0, payload[2]);
	ASSERT_EQ(EXANET_DOORBELL(2, 17, 13), *chan_reg(0, 0, EXANET_PKT_DOORBELL));
	/* full 64 bytes */
	chan = exanet_send(self->pkt, 1, 63, msg, 64);
	ASSERT_EQ(1, chan);
	ASSERT_EQ(0, memcmp(chan_reg(0, 1, EXANET_PKT_PAYLOAD), msg, 64));
	ASSERT_EQ(EXANET_DOORBELL(1, 63, 64), *chan_reg(0, 1, EXANET_PKT_DOORBELL));
}

TEST_F(fake, send_bad_arguments_touch_nothing)
{
	uint8_t msg[65] = { 1 };
	uint8_t zero[4096] = { 0 };

	ASSERT_EQ(-EINVAL, exanet_send(self->pkt, 0, 0, msg, 0));
	ASSERT_EQ(-EINVAL, exanet_send(self->pkt, 0, 0, msg, 65));
	ASSERT_EQ(-EINVAL, exanet_send(self->pkt, 0, 0, NULL, 1));
	ASSERT_EQ(-EINVAL, exanet_send(self->pkt, EXANET_DB_NODE_MASK + 1, 0, msg, 1));
	ASSERT_EQ(-EINVAL, exanet_send(self->pkt, 0, 64, msg, 1));
	ASSERT_EQ(-EINVAL, exanet_send_on(self->pkt, 4, 0, 0, msg, 1));
	ASSERT_EQ(-EINVAL, exanet_send_wait(self->pkt, 0, 0, msg, 65, 0, NULL));
	ASSERT_EQ(0, memcmp(fk.pkt_page[0], zero, 4096));
}

TEST_F(fake, channels_round_robin_eagain_when_all_ongoing)
{
	uint8_t m[8] = { 0 };
	unsigned int c;

	for (c = 0; c < 4; c++)
		set_status(0, c, EXANET_CHAN_ACK);
	ASSERT_EQ(0, exanet_send(self->pkt, 0, 0, m, 8));
	ASSERT_EQ(1, exanet_send(self->pkt, 0, 0, m, 8));
	set_status(0, 2, EXANET_CHAN_ONGOING);
	ASSERT_EQ(3, exanet_send(self->pkt, 0, 0, m, 8));	/* skips the busy one */
	ASSERT_EQ(0, exanet_send(self->pkt, 0, 0, m, 8));
	for (c = 0; c < 4; c++)
		set_status(0, c, EXANET_CHAN_ONGOING);
	*chan_reg(0, 1, EXANET_PKT_DOORBELL) = 0;
	ASSERT_EQ(-EAGAIN, exanet_send(self->pkt, 0, 0, m, 8));
	ASSERT_EQ(-EBUSY, exanet_send_on(self->pkt, 1, 0, 0, m, 8));
	ASSERT_EQ(0, *chan_reg(0, 1, EXANET_PKT_DOORBELL));	/* no doorbell on a busy channel */
	ASSERT_EQ(-EAGAIN, exanet_send_wait(self->pkt, 0, 0, m, 8, 1000000, NULL));
	set_status(0, 2, (uint64_t)EXANET_CHAN_NACK | (EXANET_NACK_FULL << 8));
	ASSERT_EQ(2, exanet_send(self->pkt, 0, 0, m, 8));
}

TEST(status_to_errno_mapping)
{
#define NACK(r) ((uint64_t)EXANET_CHAN_NACK | ((uint64_t)(r) << 8))
	ASSERT_EQ(0, exanet_status_errno(EXANET_CHAN_ACK));
	ASSERT_EQ(0, exanet_status_errno(EXANET_CHAN_ACK | (3u << 16)));	/* retries */
	ASSERT_EQ(-EINPROGRESS, exanet_status_errno(EXANET_CHAN_ONGOING));
	ASSERT_EQ(-ENOMSG, exanet_status_errno(EXANET_CHAN_IDLE));
	ASSERT_EQ(-ETIMEDOUT, exanet_status_errno(EXANET_CHAN_TIMEOUT));
	ASSERT_EQ(-EACCES, exanet_status_errno(NACK(EXANET_NACK_PDID)));
	ASSERT_EQ(-ENOBUFS, exanet_status_errno(NACK(EXANET_NACK_FULL)));
	ASSERT_EQ(-EPROTO, exanet_status_errno(NACK(EXANET_NACK_BAD_PACKET)));
	ASSERT_EQ(-ECONNREFUSED, exanet_status_errno(NACK(EXANET_NACK_DISABLED)));
	ASSERT_EQ(-EHOSTUNREACH, exanet_status_errno(NACK(EXANET_NACK_NO_ROUTE)));
	ASSERT_EQ(-ECONNREFUSED, exanet_status_errno(NACK(200)));
	ASSERT_EQ(-EIO, exanet_status_errno(9));
	ASSERT_STREQ("PDID", exanet_nack_reason_str(EXANET_NACK_PDID));
	ASSERT_STREQ("TIMEOUT", exanet_chan_state_str(EXANET_CHAN_TIMEOUT));
	ASSERT_STREQ("UNKNOWN", exanet_chan_state_str(77));
#undef NACK
}

TEST(doorbell_and_status_encoding)
{
	uint64_t db = EXANET_DOORBELL(0x3fffff, 63, 64);

	ASSERT_EQ(64, db & EXANET_DB_SIZE_MASK);
	ASSERT_EQ(63, (db >> EXANET_DB_MBOX_SHIFT) & EXANET_DB_MBOX_MASK);
	ASSERT_EQ(0x3fffff, (db >> EXANET_DB_NODE_SHIFT) & EXANET_DB_NODE_MASK);
	ASSERT_EQ(0, db >> 38);			/* nothing above the node field */
	ASSERT_EQ(0, db & 0x80);		/* bit 7 reserved */
	ASSERT_EQ(0x10208ull, EXANET_DOORBELL(1, 2, 8));
	ASSERT_EQ(3, EXANET_ST_STATE(0x050203));
	ASSERT_EQ(2, EXANET_ST_REASON(0x050203));
	ASSERT_EQ(5, EXANET_ST_RETRIES(0x050203));
	ASSERT_EQ(128, sizeof(struct exanet_mbox_slot));
	ASSERT_EQ(124, __builtin_offsetof(struct exanet_mbox_slot, flags));
	ASSERT_EQ(0x300000000ull | (5ull << 24), EXANET_MMAP_OFFSET(EXANET_MMAP_MBOX_QUEUE, 5));
}

TEST_F(fake, wait_reports_outcome_or_einprogress)
{
	uint8_t m[8] = { 0 };
	uint64_t st = 0;

	set_status(0, 0, EXANET_CHAN_ONGOING);
	ASSERT_EQ(-EINPROGRESS, exanet_wait(self->pkt, 0, 0, &st));
	ASSERT_EQ(EXANET_CHAN_ONGOING, EXANET_ST_STATE(st));
	ASSERT_EQ(-EINPROGRESS, exanet_wait(self->pkt, 0, 2000000, &st));	/* 2 ms */
	set_status(0, 0, (uint64_t)EXANET_CHAN_NACK | (EXANET_NACK_PDID << 8));
	ASSERT_EQ(-EACCES, exanet_wait(self->pkt, 0, EXANET_WAIT_FOREVER, &st));
	ASSERT_EQ(EXANET_NACK_PDID, EXANET_ST_REASON(st));
	/* send_wait: the fake never completes the channel -> software timeout */
	set_status(0, 1, EXANET_CHAN_IDLE);
	set_status(0, 2, EXANET_CHAN_ONGOING);
	set_status(0, 3, EXANET_CHAN_ONGOING);
	set_status(0, 0, EXANET_CHAN_ONGOING);
	/* channel 1 is free, but "becomes" ONGOING only if hardware says so:
	 * here it stays IDLE, which send_wait reports as -ENOMSG */
	ASSERT_EQ(-ENOMSG, exanet_send_wait(self->pkt, 0, 0, m, 8, 1000000, NULL));
}

TEST_F(fake, recv_empty_returns_zero)
{
	uint8_t b[64];

	ASSERT_EQ(0, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(0, exanet_mbox_pending(self->mb));
	ASSERT_EQ(-ETIMEDOUT, exanet_recv_wait(self->mb, b, sizeof(b), NULL, 0));
	ASSERT_EQ(-ETIMEDOUT, exanet_recv_wait(self->mb, b, sizeof(b), NULL, 2000000));
	ASSERT_EQ(0, *mbox_reg(0, EXANET_MBOX_HEAD));
}

TEST_F(fake, recv_copies_payload_and_source)
{
	struct exanet_msg_info info;
	uint8_t b[64], data[64];
	int i;

	for (i = 0; i < 64; i++)
		data[i] = (uint8_t)(0xa0 ^ i);
	ni_deliver(0, 0, 1, data, 37, 2);
	ASSERT_EQ(1, exanet_mbox_pending(self->mb));
	ASSERT_EQ(37, exanet_recv(self->mb, b, sizeof(b), &info));
	ASSERT_EQ(0, memcmp(b, data, 37));
	ASSERT_EQ(2, info.src_node);
	ASSERT_EQ(5, info.src_iface);
	ASSERT_EQ(2, info.src_chan);
	ASSERT_EQ(77, info.seq);
	ASSERT_EQ(0, info.slot);
	/* drained: the next (empty) poll publishes HEAD = 1 */
	ASSERT_EQ(0, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(1, *mbox_reg(0, EXANET_MBOX_HEAD));
}

TEST_F(fake, phase_bit_flips_on_wrap)
{
	uint8_t b[64], d[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint32_t i;

	for (i = 0; i < 8; i++)
		ni_deliver(0, i, 1, d, 8, 0);
	ASSERT_EQ(8, exanet_mbox_pending(self->mb));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(8, exanet_recv(self->mb, b, sizeof(b), NULL));
	/* old phase-1 slot at index 0 is stale now: not consumed again */
	ASSERT_EQ(0, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(0, *mbox_reg(0, EXANET_MBOX_HEAD));	/* wrapped to 0 */
	ni_deliver(0, 0, 0, d, 3, 0);
	ASSERT_EQ(3, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(0, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(1, *mbox_reg(0, EXANET_MBOX_HEAD));
}

TEST_F(fake, head_published_in_batches_and_when_drained)
{
	uint8_t b[64], d[4] = { 9 };
	uint32_t i;

	for (i = 0; i < 8; i++)
		ni_deliver(0, i, 1, d, 4, 0);
	/* batch = nslots / 4 = 2 */
	ASSERT_EQ(4, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(0, *mbox_reg(0, EXANET_MBOX_HEAD));
	ASSERT_EQ(4, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(2, *mbox_reg(0, EXANET_MBOX_HEAD));
	ASSERT_EQ(4, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(2, *mbox_reg(0, EXANET_MBOX_HEAD));
	exanet_mbox_flush(self->mb);
	ASSERT_EQ(3, *mbox_reg(0, EXANET_MBOX_HEAD));
}

TEST_F(fake, recv_emsgsize_and_corrupt_length)
{
	uint8_t b[64], d[64] = { 0 };

	ni_deliver(0, 0, 1, d, 64, 0);
	ASSERT_EQ(-EMSGSIZE, exanet_recv(self->mb, b, 63, NULL));
	ASSERT_EQ(1, exanet_mbox_pending(self->mb));	/* left in place */
	ASSERT_EQ(64, exanet_recv(self->mb, b, 64, NULL));
	ni_deliver(0, 1, 1, d, 0, 0);
	ni_deliver(0, 2, 1, d, 200, 0);
	ni_deliver(0, 3, 1, d, 5, 0);
	ASSERT_EQ(-EIO, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(-EIO, exanet_recv(self->mb, b, sizeof(b), NULL));
	ASSERT_EQ(5, exanet_recv(self->mb, b, sizeof(b), NULL));	/* not wedged */
}

TEST_F(fake, mbox_alloc_validates_before_the_kernel)
{
	static const unsigned int bad[] = { 0, 1, 2, 3, 6, 100, 16384, 0x80000000u };
	struct exanet_mbox *mb;
	int calls = fk.ioctl_calls;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_EQ(-EINVAL, exanet_mbox_alloc(self->dev, bad[i], &mb));
	ASSERT_EQ(calls, fk.ioctl_calls);
	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 4, &mb));
	ASSERT_EQ(0, exanet_mbox_alloc(self->dev, 8192, &mb));
}

TEST_F(fake, free_returns_interfaces_and_unmaps)
{
	struct exanet_pkt *p2;

	ASSERT_EQ(0, exanet_pkt_alloc(self->dev, &p2));
	ASSERT_EQ(1, exanet_pkt_iface(p2));
	ASSERT_EQ(1, fk.pkt_used[1]);
	ASSERT_EQ(0, exanet_pkt_free(p2));
	ASSERT_EQ(0, fk.pkt_used[1]);
	ASSERT_EQ(NULL, fk.pkt_page[1]);
	ASSERT_EQ(0, exanet_mbox_free(self->mb));
	ASSERT_EQ(0, fk.mbox_used[0]);
	self->mb = NULL;
}

TEST(close_frees_everything)
{
	struct exanet_dev *dev;
	struct exanet_pkt *p;
	struct exanet_mbox *m;
	int i;

	fake_reset();
	ASSERT_EQ(0, exanet_open("/fake/exanet0", &dev));
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, exanet_pkt_alloc(dev, &p));
		ASSERT_EQ(0, exanet_mbox_alloc(dev, 16, &m));
	}
	ASSERT_EQ(15, fk.maps);
	exanet_close(dev);
	ASSERT_EQ(0, fk.maps);
	for (i = 0; i < 64; i++) {
		ASSERT_EQ(0, fk.pkt_used[i]);
		ASSERT_EQ(0, fk.mbox_used[i]);
	}
	ASSERT_EQ(-1, fk.fd);
}

/* The event calls: one arm ioctl for every mailbox and the rank, errors
 * mapped; the wait reports an event the arm announced without sleeping
 * (the fake device is /dev/null, always readable, so poll says 1 too). */
TEST_F(fake, event_arm_and_wait)
{
	int calls;

	ASSERT_EQ(-EINVAL, exanet_event_arm(NULL));
	ASSERT_EQ(-EINVAL, exanet_event_wait(NULL, 0));
	fk.irq = 0;
	calls = fk.ioctl_calls;
	ASSERT_EQ(-EOPNOTSUPP, exanet_event_arm(self->dev));
	ASSERT_EQ(-EOPNOTSUPP, exanet_event_wait(self->dev, 10));
	ASSERT_EQ(calls + 2, fk.ioctl_calls);
	fk.irq = 1;
	ASSERT_EQ(0, exanet_event_arm(self->dev));
	ASSERT_EQ(EXANET_EVENT_ALL_MBOX | EXANET_EVENT_RDMA, fk.arm_flags);
	ASSERT_EQ(1, fk.arm_calls);
	fk.arm_events = 2;
	ASSERT_EQ(1, exanet_event_wait(self->dev, -1));
	ASSERT_EQ(2, fk.arm_calls);
	fk.arm_events = 0;
	ASSERT_EQ(1, exanet_event_wait(self->dev, 0));
	ASSERT_EQ(3, fk.arm_calls);
}

TEST(counter_names)
{
	ASSERT_STREQ("tx_packets", exanet_counter_name(EXANET_CNT_TX_PACKETS));
	ASSERT_STREQ("dma_errors", exanet_counter_name(EXANET_CNT_DMA_ERRORS));
	ASSERT_EQ(NULL, exanet_counter_name(EXANET_NUM_COUNTERS));
}

TEST_HARNESS_MAIN
