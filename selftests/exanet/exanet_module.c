// SPDX-License-Identifier: GPL-2.0
/*
 * Module unload/reload with the cluster up (tests.list: nodes = 2, run
 * last).  Rank 1 unloads and reloads exanet.ko; rank 0 keeps the fabric
 * busy and checks that messaging works again afterwards.
 */
#include "exa_test.h"

#define MODNAME "exanet"

static int delete_module(const char *name)
{
	return (int)syscall(SYS_delete_module, name, O_NONBLOCK);
}

static int wait_for_path(const char *path, int present, int timeout_ms)
{
	int64_t end = exa_now_ms() + timeout_ms;

	while ((access(path, F_OK) == 0) != present) {
		if (exa_now_ms() >= end)
			return -ETIMEDOUT;
		usleep(20000);
	}
	return 0;
}

static int module_loaded(void)
{
	return access("/sys/module/" MODNAME, F_OK) == 0;
}

FIXTURE(mod) {
	struct oob oob;
	int rank;
};

FIXTURE_SETUP(mod)
{
	OOB_UP(&self->oob);
	self->rank = self->oob.rank;
	if (self->oob.nnodes != 2)
		SKIP_TEST("needs exactly 2 ranks");
	if (access(EXANET_DEFAULT_DEVICE, F_OK))
		SKIP_TEST("no " EXANET_DEFAULT_DEVICE);
}

FIXTURE_TEARDOWN(mod)
{
	/* leave the node with the module loaded whatever happened */
	if (!module_loaded())
		exa_system("modprobe " MODNAME " >/dev/null 2>&1");
	wait_for_path(EXANET_DEFAULT_DEVICE, 1, 10000);
	oob_barrier(&self->oob);
	oob_fini(&self->oob);
}

/* rmmod while a process holds the device open fails with EBUSY (the
 * syscall says EWOULDBLOCK with O_NONBLOCK) and nothing breaks. */
TEST_F(mod, rmmod_with_open_device_fails_and_nothing_breaks)
{
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
	uint8_t buf[32];
	int rc, err;

	if (!module_loaded())
		SKIP_TEST(MODNAME " is not a loadable module here");
	ASSERT_EQ(0, exanet_open(NULL, &dev));
	ASSERT_EQ(0, exanet_pkt_alloc(dev, &pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(dev, 16, &mb));
	errno = 0;
	rc = delete_module(MODNAME);
	err = errno;
	if (rc == 0)
		TH_LOG("rmmod succeeded while the device was open!");
	ASSERT_EQ(-1, rc);
	ASSERT_TRUE(err == EBUSY || err == EWOULDBLOCK);
	/* rmmod(8) says the same */
	ASSERT_NE(0, exa_system("rmmod " MODNAME " >/dev/null 2>&1"));
	ASSERT_TRUE(module_loaded());
	/* still fully working */
	exa_fill(buf, 32, 9, 9);
	ASSERT_EQ(0, exanet_send_wait(pkt, exanet_node_id(dev), exanet_mbox_id(mb), buf, 32,
				      10 * SEC, NULL));
	ASSERT_EQ(32, exanet_recv_wait(mb, buf, sizeof(buf), NULL, 10 * SEC));
	ASSERT_EQ(0, exa_check(buf, 32, 9, 9));
	exanet_close(dev);
}

TEST_F_TIMEOUT(mod, unload_reload_then_messaging_works, 180)
{
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mb;
	struct endpoint_addr me, all[2];
	uint8_t buf[EXANET_MAX_PAYLOAD];
	int32_t skip = 0, i;

	if (self->rank == 1) {
		int rc, kmsg0 = exa_kmsg_bad_lines();

		if (!module_loaded()) {
			skip = 1;
		} else {
			errno = 0;
			rc = delete_module(MODNAME);
			if (rc && (errno == EBUSY || errno == EWOULDBLOCK)) {
				TH_LOG("another process on this node holds " MODNAME);
				skip = 2;
			} else {
				ASSERT_EQ(0, rc);
				ASSERT_FALSE(module_loaded());
				ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 0, 5000));
				rc = exa_system("modprobe " MODNAME);
				if (rc)
					TH_LOG("modprobe " MODNAME ": status %d", rc);
				ASSERT_EQ(0, rc);
				ASSERT_EQ(0, wait_for_path(EXANET_DEFAULT_DEVICE, 1, 15000));
				/* udev may still be applying the mode */
				usleep(200000);
			}
		}
		ASSERT_EQ(kmsg0, exa_kmsg_bad_lines());
	}
	ASSERT_EQ(0, oob_bcast(&self->oob, &skip, sizeof(skip), 1));
	if (skip)
		SKIP_TEST(skip == 1 ? MODNAME " is built in" : "module busy on rank 1");

	/* messaging both ways on fresh interfaces */
	ASSERT_EQ(0, exanet_open(NULL, &dev));
	ASSERT_EQ(0, exanet_pkt_alloc(dev, &pkt));
	ASSERT_EQ(0, exanet_mbox_alloc(dev, 256, &mb));
	me.node = exanet_node_id(dev);
	me.mbox = exanet_mbox_id(mb);
	ASSERT_EQ(0, oob_allgather(&self->oob, &me, all, sizeof(me)));
	for (i = 0; i < 100; i++) {
		exa_make_msg(buf, 48, me.node, (uint32_t)i);
		ASSERT_EQ(0, exanet_send_wait(pkt, all[1 - self->rank].node, all[1 - self->rank].mbox,
					      buf, 48, 10 * SEC, NULL));
	}
	for (i = 0; i < 100; i++) {
		uint32_t src, seq;

		ASSERT_EQ(48, exanet_recv_wait(mb, buf, sizeof(buf), NULL, 20 * SEC));
		ASSERT_EQ(0, exa_parse_msg(buf, 48, &src, &seq));
		ASSERT_EQ(all[1 - self->rank].node, src);
		ASSERT_EQ((uint32_t)i, seq);
	}
	OOB_SYNC(&self->oob);
	exanet_close(dev);
}

TEST_HARNESS_MAIN
