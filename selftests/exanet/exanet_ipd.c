// SPDX-License-Identifier: MIT
/*
 * exanet-ipd, IP over the fabric (Documentation/exanet/ipd.md), on 2 or 4
 * nodes: every rank runs the daemon in the IP service's PDID and the cases
 * send real traffic over exa0 between all ranks.  Cases build on each other
 * (the daemons started by the first one serve the next ones); the last one
 * stops them and checks that nothing leaked.
 */
#include "ipd_test.h"

#define TCP_BYTES (64ull << 20)

struct before {
	long reg_pages, rdma_pages, ranks;
};

static struct before *saved(void)
{
	static struct before b;
	FILE *f = fopen("/tmp/ipd-test.before", "r");

	memset(&b, 0xff, sizeof(b));
	if (f) {
		if (fscanf(f, "%ld %ld %ld", &b.reg_pages, &b.rdma_pages, &b.ranks) != 3)
			b.reg_pages = -1;
		fclose(f);
	}
	return &b;
}

static void record_before(void)
{
	FILE *f = fopen("/tmp/ipd-test.before", "w");

	if (f) {
		fprintf(f, "%ld %ld %ld\n", exa_sysfs_long("rdma_registered_pages"),
			exa_sysfs_long("rdma_pages_in_use"), exa_sysfs_long("rdma_ranks_in_use"));
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

TEST_TIMEOUT(daemons_start_and_peers_up, 120)
{
	struct oob o;
	char buf[64];

	if (access("/dev/exanet0", F_OK))
		SKIP("no /dev/exanet0");
	if (!have_rdma())
		SKIP("no RDMA contexts (IOMMU) on this node");
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

TEST_TIMEOUT(ping_all_pairs, 120)
{
	struct oob o;
	char ip[20];

	if (!ipd_pid())
		SKIP("no daemon (first case skipped or failed)");
	OOB_UP(&o);
	for (int r = 0; r < nranks(); r++) {
		if (r == my_rank())
			continue;
		EXPECT_EQ(0, exa_system("ping -c 3 -w 20 -q %s", exa_ip_str(r, ip)));
	}
	OOB_SYNC(&o);
	oob_fini(&o);
}

struct tcp_result {
	char tx_sha[72];	/* what this rank sent to rank + 1 */
	char rx_sha[72];	/* what it received from rank - 1 */
	long long rx_bytes;
	int tx_err, rx_err;
};

static int tcp_receive(int lfd, uint64_t expect, char *sha, long long *got)
{
	uint8_t *buf = malloc(1 << 16);
	FILE *s = sha_open("/tmp/ipd-rx.sha");
	int fd, err = 0;

	*got = 0;
	if (!buf || !s)
		return -ENOMEM;
	if (wait_readable(lfd, 60000) <= 0)
		return -ETIMEDOUT;
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (wait_readable(fd, 60000) <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		n = read(fd, buf, 1 << 16);
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		fwrite(buf, 1, (size_t)n, s);
		*got += n;
	}
	close(fd);
	if (sha_close(s, "/tmp/ipd-rx.sha", sha))
		err = err ? err : -EIO;
	if (!err && (uint64_t)*got != expect)
		err = -EPROTO;
	free(buf);
	return err;
}

static int tcp_send(uint32_t ip, int port, uint64_t total, uint64_t seed, char *sha)
{
	uint8_t *buf = malloc(1 << 16);
	FILE *s = sha_open("/tmp/ipd-tx.sha");
	uint64_t sent = 0;
	int fd, err = 0;

	if (!buf || !s)
		return -ENOMEM;
	fd = tcp_connect_to(ip, port, 30000);
	if (fd < 0)
		return fd;
	while (sent < total) {
		size_t len = total - sent < (1 << 16) ? (size_t)(total - sent) : (1 << 16);
		size_t off = 0;

		fill_random(buf, len, &seed);
		fwrite(buf, 1, len, s);
		while (off < len) {
			ssize_t n = write(fd, buf + off, len - off);

			if (n < 0) {
				err = -errno;
				goto out;
			}
			off += (size_t)n;
		}
		sent += len;
	}
out:
	close(fd);
	if (sha_close(s, "/tmp/ipd-tx.sha", sha))
		err = err ? err : -EIO;
	free(buf);
	return err;
}

/* Every rank sends `bytes` to the next one and receives from the previous
 * one at the same time; the sha256 at both ends must match. */
static void tcp_ring(struct __test_metadata *_metadata, struct oob *o, uint64_t bytes, int port)
{
	int me = my_rank(), k = nranks();
	struct tcp_result mine, all[OOB_MAX_NODES];
	int lfd, pfd[2];
	pid_t child;

	memset(&mine, 0, sizeof(mine));
	lfd = tcp_listen_on(exa_ip(me), port);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, pipe(pfd));
	OOB_SYNC(o);
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		mine.rx_err = tcp_receive(lfd, bytes, mine.rx_sha, &mine.rx_bytes);
		if (write(pfd[1], &mine, sizeof(mine)) != sizeof(mine))
			_exit(1);
		_exit(0);
	}
	mine.tx_err = tcp_send(exa_ip((me + 1) % k), port, bytes, 0x9e3779b97f4a7c15ull * (me + 1),
			       mine.tx_sha);
	{
		struct tcp_result rx;

		ASSERT_EQ((ssize_t)sizeof(rx), read(pfd[0], &rx, sizeof(rx)));
		memcpy(mine.rx_sha, rx.rx_sha, sizeof(rx.rx_sha));
		mine.rx_bytes = rx.rx_bytes;
		mine.rx_err = rx.rx_err;
	}
	ASSERT_EQ(0, exa_wait_child(child, 10000));
	close(lfd);
	EXPECT_EQ(0, mine.tx_err);
	EXPECT_EQ(0, mine.rx_err);
	EXPECT_EQ((long long)bytes, mine.rx_bytes);
	ASSERT_EQ(0, oob_allgather(o, &mine, all, sizeof(mine)));
	for (int r = 0; r < k; r++) {
		TH_LOG("rank %d -> %d: sent %s, received %s", r, (r + 1) % k, all[r].tx_sha,
		       all[(r + 1) % k].rx_sha);
		EXPECT_EQ(64u, strlen(all[r].tx_sha));
		EXPECT_STREQ(all[r].tx_sha, all[(r + 1) % k].rx_sha);
	}
}

TEST_TIMEOUT(tcp_64MiB_each_way_sha256_matches, 300)
{
	struct oob o;

	if (!ipd_pid())
		SKIP("no daemon (first case skipped or failed)");
	OOB_UP(&o);
	tcp_ring(_metadata, &o, TCP_BYTES, IPD_PORT_BASE + 1);
	/* nothing was dropped or malformed on the way */
	ASSERT_EQ(0, ipd_status_refresh());
	EXPECT_EQ(0, ipd_counter("rx_bad_batches"));
	EXPECT_EQ(0, ipd_counter("conn_resets"));
	EXPECT_EQ(0, ipd_counter("rdma_errors"));
	EXPECT_EQ(0, ipd_counter("tun_write_errors"));
	OOB_SYNC(&o);
	oob_fini(&o);
}

/* What the kernel counted on exa0 is what the daemon read and wrote. */
TEST_TIMEOUT(interface_counters_match_daemon, 60)
{
	struct oob o;

	if (!ipd_pid())
		SKIP("no daemon (first case skipped or failed)");
	OOB_UP(&o);
	OOB_SYNC(&o);		/* quiet link */
	usleep(300000);
	ASSERT_EQ(0, ipd_status_refresh());
	EXPECT_EQ(net_stat("exa0", "tx_packets"), ipd_counter("tun_rx_packets"));
	EXPECT_EQ(net_stat("exa0", "tx_bytes"), ipd_counter("tun_rx_bytes"));
	EXPECT_EQ(net_stat("exa0", "rx_packets"),
		  ipd_counter("tun_tx_packets") + ipd_counter("icmp_unreach_sent"));
	EXPECT_LT((long)TCP_BYTES, net_stat("exa0", "rx_bytes"));
	OOB_SYNC(&o);
	oob_fini(&o);
}

/* Pages one peer connection holds: receive region (notification page +
 * ring) and the staging copy of the peer's ring (default 2 MiB rings). */
#define CONN_PAGES (1 + 2 * (2u << 20) / 4096)

struct xfer {
	char sha[72];
	long long bytes;
	int err;
};

/* Background TCP transfer to/from rank peer: a child that reports its
 * result through a pipe. */
static pid_t xfer_start(int send, int peer, uint64_t bytes, int port, int *rfd)
{
	int pfd[2], lfd = -1;
	pid_t pid;

	if (pipe(pfd))
		return -errno;
	if (!send) {
		lfd = tcp_listen_on(exa_ip(my_rank()), port);
		if (lfd < 0)
			return lfd;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct xfer x;

		memset(&x, 0, sizeof(x));
		if (send) {
			x.err = tcp_send(exa_ip(peer), port, bytes, 0x1234567ull + (uint64_t)peer, x.sha);
			x.bytes = (long long)bytes;
		} else {
			x.err = tcp_receive(lfd, bytes, x.sha, &x.bytes);
		}
		_exit(write(pfd[1], &x, sizeof(x)) == sizeof(x) ? 0 : 1);
	}
	if (lfd >= 0)
		close(lfd);
	close(pfd[1]);
	*rfd = pfd[0];
	return pid;
}

static int xfer_wait(pid_t pid, int rfd, struct xfer *x, int timeout_ms)
{
	memset(x, 0, sizeof(*x));
	x->err = -ETIMEDOUT;
	if (wait_readable(rfd, timeout_ms) <= 0 || read(rfd, x, sizeof(*x)) != sizeof(*x)) {
		kill(pid, SIGKILL);
		exa_wait_child(pid, 5000);
		return -ETIMEDOUT;
	}
	close(rfd);
	return exa_wait_child(pid, 10000);
}

/*
 * kill -9 of the last rank's daemon while rank 0 streams to it over TCP:
 * the peers declare it down within the heartbeat timeout, its driver
 * resources come back, the restarted daemon (a new incarnation) is
 * handshaken within seconds, and the TCP connection, which survived in
 * both kernels, finishes with the right sha256: nothing of the old
 * incarnation was delivered, nothing was lost.
 */
TEST_TIMEOUT(kill9_midstream_restart_new_incarnation, 400)
{
	struct before *b = saved();
	int me = my_rank(), k = nranks(), v = k - 1, rfd = -1;
	long long pages_up = 0;
	char old_inc[32] = "";
	struct xfer x, all[OOB_MAX_NODES];
	struct oob o;
	pid_t xp = 0;
	char buf[64];

	if (!ipd_pid())
		SKIP("no daemon (first case skipped or failed)");
	OOB_UP(&o);
	if (me == v)
		xp = xfer_start(0, 0, 48ull << 20, IPD_PORT_BASE + 2, &rfd);
	OOB_SYNC(&o);
	if (me == 0)
		xp = xfer_start(1, v, 48ull << 20, IPD_PORT_BASE + 2, &rfd);
	ASSERT_LT(0, xp);
	if (me != v) {
		ASSERT_EQ(0, ipd_status_refresh());
		ipd_peer_str(v, "incarnation", old_inc, sizeof(old_inc));
		ASSERT_EQ(16u, strlen(old_inc));
		pages_up = exa_sysfs_long("rdma_registered_pages");
	}
	usleep(1500000);	/* mid-transfer */
	if (me == v) {
		int pid = ipd_pid();

		ASSERT_LT(0, pid);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		for (int i = 0; i < 500 && kill(pid, 0) == 0; i++)
			usleep(10000);
		ASSERT_NE(0, kill(pid, 0));
	}
	OOB_SYNC(&o);		/* B: killed */
	if (me != v) {
		int64_t t0 = exa_now_ms();
		int err = ipd_wait_peer(v, "down", 5000);

		TH_LOG("peer %d declared down %lld ms after the kill was announced", v,
		       (long long)(exa_now_ms() - t0));
		ASSERT_EQ(0, err);
		EXPECT_GE(2000, exa_now_ms() - t0);
		/* its connection's pages are released here */
		EXPECT_EQ(pages_up - CONN_PAGES, exa_sysfs_long("rdma_registered_pages"));
	} else {
		/* the driver took back everything the killed daemon held */
		usleep(200000);
		EXPECT_EQ(b->reg_pages, exa_sysfs_long("rdma_registered_pages"));
		EXPECT_EQ(b->rdma_pages, exa_sysfs_long("rdma_pages_in_use"));
		EXPECT_EQ(b->ranks, exa_sysfs_long("rdma_ranks_in_use"));
		EXPECT_NE(0, access("/sys/class/net/exa0", F_OK));
	}
	OOB_SYNC(&o);		/* C: everybody saw it down */
	if (me == v) {
		ASSERT_EQ(0, ipd_start("busy", NULL));
		ASSERT_EQ(0, ipd_wait_peers(15000, "up"));
	} else {
		int64_t t0 = exa_now_ms();

		ASSERT_EQ(0, ipd_wait_peer(v, "up", 15000));
		TH_LOG("peer %d up again %lld ms after the restart began", v,
		       (long long)(exa_now_ms() - t0));
		EXPECT_NE(0, strcmp(old_inc, ipd_peer_str(v, "incarnation", buf, sizeof(buf))));
		EXPECT_LE(1, ipd_counter("peer_down_events"));
		EXPECT_EQ(0, ipd_counter("rx_bad_batches"));
		EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q %s", exa_ip_str(v, buf)));
		EXPECT_EQ(pages_up, exa_sysfs_long("rdma_registered_pages"));
	}
	OOB_SYNC(&o);
	if (me == 0 || me == v) {
		EXPECT_EQ(0, xfer_wait(xp, rfd, &x, 240000));
		EXPECT_EQ(0, x.err);
		EXPECT_EQ(48ll << 20, x.bytes);
	} else {
		memset(&x, 0, sizeof(x));
	}
	ASSERT_EQ(0, oob_allgather(&o, &x, all, sizeof(x)));
	TH_LOG("sent %s, received %s", all[0].sha, all[v].sha);
	EXPECT_EQ(64u, strlen(all[0].sha));
	EXPECT_STREQ(all[0].sha, all[v].sha);
	oob_fini(&o);
}

/* Stop every rank's daemon and start it again in another mode. */
static void restart_all(struct __test_metadata *_metadata, struct oob *o, const char *mode)
{
	OOB_SYNC(o);
	start_all(_metadata, o, mode);
	ASSERT_EQ(0, exa_system("exanet-ipd --status | grep -q 'mode %s'", mode));
}

/* Ping every other rank, move 16 MiB around the ring of ranks with
 * matching sha256, then let the link idle and measure the daemon's CPU. */
static double mode_check(struct __test_metadata *_metadata, struct oob *o, int port)
{
	char ip[20];
	double cpu;

	for (int r = 0; r < nranks(); r++)
		if (r != my_rank())
			EXPECT_EQ(0, exa_system("ping -c 3 -w 20 -q %s", exa_ip_str(r, ip)));
	OOB_SYNC(o);
	tcp_ring(_metadata, o, 16ull << 20, port);
	OOB_SYNC(o);
	usleep(500000);
	cpu = ipd_cpu_pct(3000);
	TH_LOG("daemon CPU over 3 s idle: %.1f%% of a core", cpu);
	OOB_SYNC(o);
	/* still answers after idling */
	for (int r = 0; r < nranks(); r++)
		if (r != my_rank())
			EXPECT_EQ(0, exa_system("ping -c 1 -w 10 -q %s", exa_ip_str(r, ip)));
	ASSERT_EQ(0, ipd_status_refresh());
	EXPECT_EQ(0, ipd_counter("rx_bad_batches"));
	EXPECT_EQ(0, ipd_counter("rdma_errors"));
	return cpu;
}

/* sleep mode: spins briefly, then sleeps (growing to 1 ms) in ppoll on the
 * TUN device: same traffic, a fraction of a core when idle. */
TEST_TIMEOUT(sleep_mode_traffic_and_idle_cpu, 300)
{
	struct oob o;
	double cpu;

	if (!ipd_pid())
		SKIP("no daemon (first case skipped or failed)");
	OOB_UP(&o);
	restart_all(_metadata, &o, "sleep");
	cpu = mode_check(_metadata, &o, IPD_PORT_BASE + 3);
	EXPECT_LE(0, cpu);
	EXPECT_GE(50.0, cpu);
	EXPECT_LT(0, ipd_counter("idle_sleeps"));
	OOB_SYNC(&o);
	oob_fini(&o);
}

/* irq mode: sleeps in epoll on the TUN fd and the device fd, woken by the
 * NI's interrupt; idle CPU under 5% of a core. */
TEST_TIMEOUT(irq_mode_traffic_and_idle_cpu, 300)
{
	struct oob o;
	double cpu;

	if (!ipd_pid())
		SKIP("no daemon (first case skipped or failed)");
	if (exa_system("exanet-ipd --mode irq --version >/dev/null 2>&1") == 2)
		SKIP("this exanet-ipd was built without NI interrupts (EXANET_HAVE_EVENTS)");
	OOB_UP(&o);
	restart_all(_metadata, &o, "irq");
	cpu = mode_check(_metadata, &o, IPD_PORT_BASE + 4);
	EXPECT_LE(0, cpu);
	EXPECT_GE(5.0, cpu);
	OOB_SYNC(&o);
	oob_fini(&o);
}

/* Stopping the daemons gives back every registered page, RDMA page and
 * rank, and removes the interface. */
TEST_TIMEOUT(stop_releases_everything, 60)
{
	struct before *b = saved();
	struct oob o;

	if (!ipd_pid())
		SKIP("no daemon (first case skipped or failed)");
	OOB_UP(&o);
	OOB_SYNC(&o);
	ASSERT_EQ(0, ipd_stop());
	usleep(200000);
	EXPECT_NE(0, access("/sys/class/net/exa0", F_OK));
	EXPECT_EQ(b->reg_pages, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(b->rdma_pages, exa_sysfs_long("rdma_pages_in_use"));
	EXPECT_EQ(b->ranks, exa_sysfs_long("rdma_ranks_in_use"));
	EXPECT_EQ(0, exa_system("grep -q stopping " IPD_LOG));
	OOB_SYNC(&o);
	oob_fini(&o);
}

TEST_HARNESS_MAIN
