// SPDX-License-Identifier: GPL-2.0
/*
 * Bad input to the driver (tests.list: nodes = 1): every ioctl, mmap and
 * netlink request with wrong arguments gets a clear error, and the kernel
 * log shows no Oops/BUG/WARNING afterwards (checked in the teardown).
 */
#include <linux/netlink.h>

#include "exa_test.h"
#include <exa_domain.h>

FIXTURE(raw) {
	int fd;
	int kmsg_bad;
};

FIXTURE_SETUP(raw)
{
	self->fd = open(EXANET_DEFAULT_DEVICE, O_RDWR);
	if (self->fd < 0 && errno == ENOENT)
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
	ASSERT_LE(0, self->fd);
	self->kmsg_bad = exa_kmsg_bad_lines();
}

FIXTURE_TEARDOWN(raw)
{
	int now;

	close(self->fd);
	now = exa_kmsg_bad_lines();
	if (self->kmsg_bad >= 0 && now != self->kmsg_bad)
		TH_LOG("kernel log grew Oops/BUG/WARNING lines: %d -> %d", self->kmsg_bad, now);
	EXPECT_EQ(self->kmsg_bad, now);
}

TEST_F(raw, unknown_ioctl_enotty)
{
	int arg = 0;

	ASSERT_ERRNO(ENOTTY, ioctl(self->fd, _IO(EXANET_IOC_MAGIC, 0x55)));
	ASSERT_ERRNO(ENOTTY, ioctl(self->fd, _IOWR(EXANET_IOC_MAGIC, 0x05, int), &arg));
	ASSERT_ERRNO(ENOTTY, ioctl(self->fd, _IOR('T', 0x01, int), &arg));
	/* right number, wrong size/direction encoding */
	ASSERT_ERRNO(ENOTTY, ioctl(self->fd, _IOR(EXANET_IOC_MAGIC, 0x00, int), &arg));
	ASSERT_ERRNO(ENOTTY, ioctl(self->fd, 0, &arg));
}

TEST_F(raw, bad_user_pointers_efault)
{
	ASSERT_ERRNO(EFAULT, ioctl(self->fd, EXANET_IOC_GET_INFO, NULL));
	ASSERT_ERRNO(EFAULT, ioctl(self->fd, EXANET_IOC_GET_INFO, (void *)1));
	ASSERT_ERRNO(EFAULT, ioctl(self->fd, EXANET_IOC_PKT_ALLOC, NULL));
	ASSERT_ERRNO(EFAULT, ioctl(self->fd, EXANET_IOC_MBOX_ALLOC, (void *)16));
	ASSERT_ERRNO(EFAULT, ioctl(self->fd, EXANET_IOC_PKT_FREE, NULL));
	ASSERT_ERRNO(EFAULT, ioctl(self->fd, EXANET_IOC_MBOX_FREE, (void *)-4096L));
	/* kernel address */
	ASSERT_ERRNO(EFAULT, ioctl(self->fd, EXANET_IOC_GET_INFO, (void *)0xffffffff81000000UL));
	ASSERT_EQ(0, exa_sysfs_long("pkt_in_use") < 0);
}

TEST_F(raw, bad_nslots_and_flags_einval)
{
	static const uint32_t bad[] = { 0, 1, 2, 3, 5, 6, 12, 100, EXANET_MBOX_MAX_SLOTS + 1,
					EXANET_MBOX_MAX_SLOTS * 2, 0x80000000u, 0xffffffffu };
	struct exanet_pkt_alloc pa = { .flags = 1 };
	long mbox0 = exa_sysfs_long("mbox_in_use"), pkt0 = exa_sysfs_long("pkt_in_use");
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct exanet_mbox_alloc ma = { .nslots = bad[i] };

		ASSERT_ERRNO(EINVAL, ioctl(self->fd, EXANET_IOC_MBOX_ALLOC, &ma));
	}
	ASSERT_ERRNO(EINVAL, ioctl(self->fd, EXANET_IOC_PKT_ALLOC, &pa));
	pa.flags = 0x80000000u;
	ASSERT_ERRNO(EINVAL, ioctl(self->fd, EXANET_IOC_PKT_ALLOC, &pa));
	ASSERT_EQ(mbox0, exa_sysfs_long("mbox_in_use"));
	ASSERT_EQ(pkt0, exa_sysfs_long("pkt_in_use"));
}

TEST_F(raw, free_bad_or_foreign_index_einval)
{
	uint32_t idx;
	struct exanet_pkt_alloc pa = { 0 };
	struct exanet_mbox_alloc ma = { .nslots = 8 };
	int other;

	idx = EXANET_NUM_PKT_IFACES;
	ASSERT_ERRNO(EINVAL, ioctl(self->fd, EXANET_IOC_PKT_FREE, &idx));
	idx = 0xffffffffu;
	ASSERT_ERRNO(EINVAL, ioctl(self->fd, EXANET_IOC_PKT_FREE, &idx));
	ASSERT_ERRNO(EINVAL, ioctl(self->fd, EXANET_IOC_MBOX_FREE, &idx));
	/* allocated by another open file: not ours to free */
	other = open(EXANET_DEFAULT_DEVICE, O_RDWR);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ioctl(other, EXANET_IOC_PKT_ALLOC, &pa));
	ASSERT_EQ(0, ioctl(other, EXANET_IOC_MBOX_ALLOC, &ma));
	errno = 0;
	ASSERT_EQ(-1, ioctl(self->fd, EXANET_IOC_PKT_FREE, &pa.iface));
	ASSERT_TRUE(errno == EINVAL || errno == EACCES);
	errno = 0;
	ASSERT_EQ(-1, ioctl(self->fd, EXANET_IOC_MBOX_FREE, &ma.mbox));
	ASSERT_TRUE(errno == EINVAL || errno == EACCES);
	/* free twice */
	ASSERT_EQ(0, ioctl(other, EXANET_IOC_PKT_FREE, &pa.iface));
	ASSERT_ERRNO(EINVAL, ioctl(other, EXANET_IOC_PKT_FREE, &pa.iface));
	ASSERT_EQ(0, ioctl(other, EXANET_IOC_MBOX_FREE, &ma.mbox));
	ASSERT_ERRNO(EINVAL, ioctl(other, EXANET_IOC_MBOX_FREE, &ma.mbox));
	close(other);
}

TEST_F(raw, mmap_wrong_length_or_private_einval)
{
	struct exanet_pkt_alloc pa = { 0 };
	struct exanet_mbox_alloc ma = { .nslots = 64 };	/* 8 KiB queue */

	ASSERT_EQ(0, ioctl(self->fd, EXANET_IOC_PKT_ALLOC, &pa));
	ASSERT_EQ(0, ioctl(self->fd, EXANET_IOC_MBOX_ALLOC, &ma));
	ASSERT_EQ(64 * EXANET_MBOX_SLOT_SIZE, ma.queue_size);
	ASSERT_ERRNO(EINVAL, (long)mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
					(off_t)pa.mmap_offset));
	ASSERT_ERRNO(EINVAL, (long)mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
					(off_t)ma.regs_offset));
	ASSERT_ERRNO(EINVAL, (long)mmap(NULL, ma.queue_size + 4096, PROT_READ, MAP_SHARED,
					self->fd, (off_t)ma.queue_offset));
	ASSERT_ERRNO(EINVAL, (long)mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
					(off_t)ma.queue_offset));
	ASSERT_ERRNO(EINVAL, (long)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd,
					(off_t)pa.mmap_offset));
	/* the right length works */
	{
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
			       (off_t)pa.mmap_offset);

		ASSERT_NE(MAP_FAILED, p);
		munmap(p, 4096);
	}
}

TEST_F(raw, writable_queue_mapping_refused)
{
	struct exanet_mbox_alloc ma = { .nslots = 16 };
	void *p;

	ASSERT_EQ(0, ioctl(self->fd, EXANET_IOC_MBOX_ALLOC, &ma));
	errno = 0;
	p = mmap(NULL, ma.queue_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 (off_t)ma.queue_offset);
	ASSERT_TRUE(p == MAP_FAILED);
	ASSERT_TRUE(errno == EPERM || errno == EACCES);
	p = mmap(NULL, ma.queue_size, PROT_WRITE, MAP_SHARED, self->fd, (off_t)ma.queue_offset);
	ASSERT_TRUE(p == MAP_FAILED);
}

TEST_F(raw, netlink_bad_attributes)
{
	uint16_t t[2] = { EXANET_ATTR_PID, EXANET_ATTR_PDID };
	uint32_t v[2];
	uint16_t ti = EXANET_ATTR_DEV_INDEX;
	uint32_t vi;
	int err;

	/* missing PDID */
	v[0] = (uint32_t)getpid();
	err = exa_genl_request(EXANET_CMD_PDID_BIND, NLM_F_ACK, t, v, 1);
	ASSERT_EQ(-EINVAL, err);
	/* PDID 0 and out of range */
	v[1] = 0;
	ASSERT_NE(0, exa_genl_request(EXANET_CMD_PDID_BIND, NLM_F_ACK, t, v, 2));
	v[1] = EXANET_PDID_MAX + 1;
	ASSERT_NE(0, exa_genl_request(EXANET_CMD_PDID_BIND, NLM_F_ACK, t, v, 2));
	/* user domains (0x8000 + uid, 0xffff) are never assigned: jobs only */
	for (int i = 0; i < 3; i++) {
		static const uint32_t user_dom[3] = { EXA_DOMAIN_USER_BASE, 0x83e8,
						      EXA_DOMAIN_OVERFLOW_USER };

		v[1] = user_dom[i];
		err = exa_genl_request(EXANET_CMD_PDID_BIND, NLM_F_ACK, t, v, 2);
		if (err != -ERANGE && err != -EINVAL)
			TH_LOG("binding to user domain %#x: %d", v[1], err);
		ASSERT_TRUE(err == -ERANGE || err == -EINVAL);
	}
	/* the last job domain is fine */
	v[1] = EXA_DOMAIN_JOB_MAX;
	ASSERT_EQ(0, exa_genl_request(EXANET_CMD_PDID_BIND, NLM_F_ACK, t, v, 2));
	ASSERT_EQ(0, exa_genl_pdid_unbind(getpid()));
	/* no such process */
	v[0] = 0x3ffffff0u;
	v[1] = 5;
	err = exa_genl_request(EXANET_CMD_PDID_BIND, NLM_F_ACK, t, v, 2);
	ASSERT_TRUE(err == -ESRCH || err == -EINVAL || err == -ERANGE);
	/* unbind something never bound */
	ASSERT_EQ(-ENOENT, exa_genl_pdid_unbind(getpid()));
	/* DEV_GET without index, unknown device */
	ASSERT_EQ(-EINVAL, exa_genl_request(EXANET_CMD_DEV_GET, NLM_F_ACK, NULL, NULL, 0));
	vi = 31;
	ASSERT_EQ(-ENODEV, exa_genl_request(EXANET_CMD_DEV_GET, NLM_F_ACK, &ti, &vi, 1));
	vi = 1000;
	ASSERT_NE(0, exa_genl_request(EXANET_CMD_DEV_GET, NLM_F_ACK, &ti, &vi, 1));
	/* unknown command */
	ASSERT_NE(0, exa_genl_request(EXANET_CMD_MAX + 1, NLM_F_ACK, NULL, NULL, 0));
}

TEST_F(raw, garbage_doorbells_do_not_hurt)
{
	struct exanet_pkt_alloc pa = { 0 };
	volatile uint64_t *page;
	unsigned int c;
	int i;

	ASSERT_EQ(0, ioctl(self->fd, EXANET_IOC_PKT_ALLOC, &pa));
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, (off_t)pa.mmap_offset);
	ASSERT_NE(MAP_FAILED, (void *)page);
	/* size 0, size > 64, reserved bits set, unknown node */
	{
		const uint64_t db[] = {
			EXANET_DOORBELL(0, 0, 0),
			EXANET_DOORBELL(0, 0, 65),
			EXANET_DOORBELL(0, 0, 127),
			EXANET_DOORBELL(0, 0, 8) | (1ull << 7),
			EXANET_DOORBELL(0, 0, 8) | (1ull << 63),
			EXANET_DOORBELL(EXANET_DB_NODE_MASK, 63, 8),
		};

		for (i = 0; i < (int)(sizeof(db) / sizeof(db[0])); i++) {
			volatile uint64_t *ch = page + (i % EXANET_PKT_CHANNELS) * EXANET_PKT_CHAN_STRIDE / 8;
			int64_t end = exa_now_ms() + 20000;

			while (EXANET_ST_STATE(ch[EXANET_PKT_STATUS / 8]) == EXANET_CHAN_ONGOING &&
			       exa_now_ms() < end)
				;
			ch[EXANET_PKT_DOORBELL / 8] = db[i];
		}
	}
	for (c = 0; c < EXANET_PKT_CHANNELS; c++) {
		volatile uint64_t *ch = page + c * EXANET_PKT_CHAN_STRIDE / 8;
		int64_t end = exa_now_ms() + 30000;
		uint64_t st;

		while (EXANET_ST_STATE(st = ch[EXANET_PKT_STATUS / 8]) == EXANET_CHAN_ONGOING &&
		       exa_now_ms() < end)
			usleep(1000);
		TH_LOG("channel %u: %s/%s", c, exanet_chan_state_str(EXANET_ST_STATE(st)),
		       exanet_nack_reason_str(EXANET_ST_REASON(st)));
		ASSERT_NE(EXANET_CHAN_ACK, EXANET_ST_STATE(st));
	}
	munmap((void *)page, 4096);
}

TEST_HARNESS_MAIN
