// SPDX-License-Identifier: GPL-2.0
/*
 * exanet-ipd, IP over the fabric (Documentation/exanet/ipd.md), on 2 or 4
 * nodes: every rank runs the daemon in the IP service's PDID and the cases
 * send real traffic over exa0 between all ranks.  Cases build on each other
 * (the daemons started by the first one serve the next ones); the last one
 * stops them and checks that nothing leaked.
 *
 * One translation unit: this file has the fixture "ipd", the first case
 * (starts the daemons) and main; the other cases are in the headers it
 * includes below, one concern each, in run order:
 *
 *   exanet_ipd-traffic.h   ping, TCP, UDP, kernel bypass, counters
 *   exanet_ipd-hostile.h   hostile input: other PDIDs, forged heartbeats,
 *                          malformed batches
 *   exanet_ipd-peers.h     a stalled, a killed and a silent peer
 *   exanet_ipd-modes.h     sleep, irq and default mode; the stop
 *   exanet_ipd-poweroff.h  a node powered off (fixture "poweroff", last)
 */
#define EXANET_IPD_C

#include <endian.h>
#include <exanet_ip.h>

#include "ipd_test.h"
#include "../../tools/exanet-ipd/ipd_proto.h"

/* The longest plain TEST() of this program may take 400 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 400

/*
 * TCP bytes every rank sends around the ring: 128 MiB across the cluster
 * (64 MiB per rank on 2 nodes, 32 MiB on 4): the same work for the two
 * host cores that carry every node, whatever the node count.
 */
#define TCP_CLUSTER_BYTES (128ull << 20)
#define TCP_BYTES (TCP_CLUSTER_BYTES / (uint64_t)nranks())

/* Pages one peer connection holds: receive region (notification page +
 * ring) and the staging copy of the peer's ring (default 2 MiB rings). */
#define CONN_PAGES (1 + 2 * (2u << 20) / 4096)

/* The driver's resources in use without a daemon (before the first case). */
struct before {
	long reg_pages, rdma_pages, ranks, pkts, mboxes;
};

static struct before *saved(void)
{
	static struct before b;
	FILE *f = fopen("/tmp/ipd-test.before", "r");

	memset(&b, 0xff, sizeof(b));
	if (f) {
		if (fscanf(f, "%ld %ld %ld %ld %ld", &b.reg_pages, &b.rdma_pages, &b.ranks,
			   &b.pkts, &b.mboxes) != 5)
			b.reg_pages = -1;
		fclose(f);
	}
	return &b;
}

static void record_before(void)
{
	FILE *f = fopen("/tmp/ipd-test.before", "w");

	if (f) {
		fprintf(f, "%ld %ld %ld %ld %ld\n", exa_sysfs_long("rdma_registered_pages"),
			exa_sysfs_long("rdma_pages_in_use"), exa_sysfs_long("rdma_ranks_in_use"),
			exa_sysfs_long("pkt_in_use"), exa_sysfs_long("mbox_in_use"));
		fclose(f);
	}
}

static int have_rdma(void)
{
	return exa_sysfs_long("rdma_registered_pages") >= 0 &&
	       access("/sys/bus/pci/drivers/exanet-ctx", F_OK) == 0 &&
	       exa_system("dmesg | grep -q 'exanet-ctx.*no IOMMU domain'") != 0;
}

/* Start this node's daemon in the given mode and wait for all peers. */
static void start_all(struct __test_metadata *_metadata, struct oob *o, const char *mode)
{
	int err;

	ASSERT_EQ(0, ipd_stop());
	OOB_SYNC(o);
	ASSERT_EQ(0, ipd_start(mode, NULL));
	ASSERT_NE(0, ipd_pid());
	err = ipd_wait_peers(30000, "up");
	if (err)
		exa_system("exanet-ipd --status; tail -n 20 " IPD_LOG);
	ASSERT_EQ(0, err);
	OOB_SYNC(o);
}

/*
 * Every case but the first (which starts the daemons) and the last (which
 * powers a node off) runs on the fixture: the daemons up in busy mode on
 * every rank, peers up, whatever the case before did (stopped, killed,
 * restarted in another mode) or however it ended.  Every rank takes the
 * same decision (all of them restart when one is not ready).
 */
FIXTURE(ipd) {
	struct oob o;
};

static void ensure_busy_and_up(struct __test_metadata *_metadata, struct oob *o)
{
	char mode[32];
	int ready, all[OOB_MAX_NODES], r;

	ready = ipd_pid() && ipd_status_file_get("mode", mode, sizeof(mode)) &&
		!strcmp(mode, "busy") && ipd_wait_peers(1000, "up") == 0;
	ASSERT_GE(OOB_MAX_NODES, nranks());
	ASSERT_EQ(0, oob_allgather(o, &ready, all, sizeof(ready)));
	for (r = 0; r < nranks() && all[r]; r++)
		;
	if (r == nranks())
		return;
	ASSERT_EQ(0, ipd_stop());
	/* the resources in use without a daemon, if the first case did not
	 * record them (stop_releases_everything compares against them) */
	if (access("/tmp/ipd-test.before", F_OK))
		record_before();
	start_all(_metadata, o, "busy");
}

FIXTURE_SETUP(ipd)
{
	if (access("/dev/exanet0", F_OK))
		SKIP_TEST("no /dev/exanet0");
	if (!have_rdma())
		SKIP_TEST("no RDMA contexts (IOMMU) on this node");
	OOB_UP(&self->o);
	ensure_busy_and_up(_metadata, &self->o);
}

FIXTURE_TEARDOWN(ipd)
{
	oob_fini(&self->o);
}

TEST(daemons_start_and_peers_up)
{
	struct oob o;
	char buf[64];

	if (access("/dev/exanet0", F_OK))
		SKIP_TEST("no /dev/exanet0");
	if (!have_rdma())
		SKIP_TEST("no RDMA contexts (IOMMU) on this node");
	OOB_UP(&o);
	ipd_stop();
	record_before();
	start_all(_metadata, &o, "busy");
	/* the interface as documented */
	ASSERT_EQ(65520, exa_read_long("/sys/class/net/exa0/mtu"));
	ASSERT_EQ(0, exa_system("ip addr show exa0 | grep -q 'inet 10.43.0.%d/16'", my_rank() + 1));
	/* the daemon runs in the IP service's PDID, so do its rings */
	ASSERT_EQ(IPD_PDID, ipd_status_num("pdid"));
	for (int r = 0; r < nranks(); r++) {
		if (r == my_rank())
			continue;
		ASSERT_STREQ(exa_ip_str(r, buf + 32), ipd_peer_str(r, "ip", buf, 32));
		ASSERT_LT(0, ipd_peer_num(r, "rtt_us"));
	}
	oob_fini(&o);
}

#include "exanet_ipd-traffic.h"
#include "exanet_ipd-hostile.h"
#include "exanet_ipd-peers.h"
#include "exanet_ipd-modes.h"
#include "exanet_ipd-poweroff.h"

/* Whatever happened above, leave no daemon behind for the next program
 * (exanet_module unloads the driver).  The cases run in children that end
 * with _exit(); this runs when the harness itself exits. */
static void __attribute__((destructor)) stop_leftover_daemon(void)
{
	if (ipd_pid())
		ipd_stop();
}

TEST_HARNESS_MAIN
