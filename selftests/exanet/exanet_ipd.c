// SPDX-License-Identifier: GPL-2.0
/*
 * exanet-ipd, IP over the fabric (Documentation/exanet/ipd.md), on 2 or 4
 * nodes: every rank runs the daemon in the IP service's PDID and the cases
 * send real traffic over exa0 between all ranks.  Cases build on each other
 * (the daemons started by the first one serve the next ones); the last one
 * stops them and checks that nothing leaked.
 */
#include "ipd_test.h"
#include "../../tools/exanet-ipd/ipd_proto.h"

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

/* The longest plain TEST() of this file may take 400 s. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 400

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

TEST_F(ipd, ping_all_pairs)
{
	char ip[20];

	for (int r = 0; r < nranks(); r++) {
		if (r == my_rank())
			continue;
		EXPECT_EQ(0, exa_system("ping -c 3 -w 20 -q %s", exa_ip_str(r, ip)));
	}
	OOB_SYNC(&self->o);
}

/*
 * Ping payloads at the edges: 0 .. MTU - 28 travel as one packet each way,
 * above it the kernel fragments (two packets).  Each rank in turn pings
 * the next one, so the daemon's per-peer packet counter tells exactly how
 * many packets the request took.
 */
TEST_F(ipd, ping_sizes_edges_and_fragmentation)
{
	static const int sizes[] = { 0, 1, 7, 8, 9, 56, 100, 1472, 1473, 4096, 9000, 16384,
				     32768, 65464, 65491, 65492, 65493, 65500, 65507 };
	int me = my_rank(), k = nranks(), next = (me + 1) % k;
	char ip[20];

	for (int turn = 0; turn < k; turn++) {
		if (turn == me) {
			for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
				long long tx0, tx1, rx0, rx1;
				int frags = sizes[i] + 28 > 65520 ? 2 : 1;

				ASSERT_EQ(0, ipd_status_refresh());
				tx0 = ipd_peer_num(next, "tx_packets");
				rx0 = ipd_peer_num(next, "rx_packets");
				EXPECT_EQ(0, exa_system("ping -c 1 -W 10 -q -s %d %s >/dev/null",
							sizes[i], exa_ip_str(next, ip)));
				ASSERT_EQ(0, ipd_status_refresh());
				tx1 = ipd_peer_num(next, "tx_packets");
				rx1 = ipd_peer_num(next, "rx_packets");
				if (tx1 - tx0 != frags || rx1 - rx0 != frags)
					TH_LOG("ping -s %d: %lld packets out, %lld back, expected %d",
					       sizes[i], tx1 - tx0, rx1 - rx0, frags);
				EXPECT_EQ(frags, tx1 - tx0);
				EXPECT_EQ(frags, rx1 - rx0);
			}
		}
		OOB_SYNC(&self->o);
	}
	ASSERT_EQ(0, ipd_status_refresh());
	EXPECT_EQ(0, ipd_counter("drop_too_big"));
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

TEST_F(ipd, tcp_64MiB_each_way_sha256_matches)
{

	tcp_ring(_metadata, &self->o, TCP_BYTES, IPD_PORT_BASE + 1);
	/* nothing was dropped or malformed on the way */
	ASSERT_EQ(0, ipd_status_refresh());
	EXPECT_EQ(0, ipd_counter("rx_bad_batches"));
	EXPECT_EQ(0, ipd_counter("tun_write_errors"));
	/* no peer was lost under load (a late heartbeat is checked over the
	 * fabric first), so no ring was replaced and no write failed */
	EXPECT_EQ(0, ipd_counter("peer_down_events"));
	EXPECT_EQ(0, ipd_counter("conn_resets"));
	EXPECT_EQ(0, ipd_counter("rdma_errors"));
	/* the kernels left the TCP checksums to the "hardware" */
	EXPECT_LT(1000, ipd_counter("csum_offloaded"));
	OOB_SYNC(&self->o);
}

#define UDP_MAGIC 0x55445031u
#define UDP_PER_FLOW 800
static const int udp_sizes[] = { 64, 1400, 9000, 32000, 65492, 65507, 200, 48000 };

struct udp_hdr {
	uint32_t magic, src, seq, len;
};

static void udp_fill(uint8_t *b, uint32_t src, uint32_t seq, uint32_t len)
{
	struct udp_hdr h = { UDP_MAGIC, src, seq, len };
	uint64_t st = ((uint64_t)src << 32 | seq) * 0x9e3779b97f4a7c15ull | 1;

	memcpy(b, &h, sizeof(h));
	fill_random(b + sizeof(h), len - sizeof(h), &st);
}

struct udp_result {
	uint32_t got[OOB_MAX_NODES];	/* per source */
	uint32_t disorder, corrupt, bad_src;
};

static void udp_receive(int fd, int k, struct udp_result *r)
{
	uint8_t *buf = malloc(65536), *ref = malloc(65536);
	int64_t last[OOB_MAX_NODES];

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < k; i++)
		last[i] = -1;
	for (;;) {
		struct udp_hdr h;
		ssize_t n;

		if (wait_readable(fd, 3000) <= 0)
			break;		/* 3 s of silence: the senders are done */
		n = recv(fd, buf, 65536, 0);
		if (n < (ssize_t)sizeof(h))
			continue;
		memcpy(&h, buf, sizeof(h));
		if (h.magic == UDP_MAGIC + 1)
			continue;	/* a "done" marker */
		if (h.magic != UDP_MAGIC || h.src >= (uint32_t)k || h.len != (uint32_t)n) {
			r->corrupt++;
			continue;
		}
		udp_fill(ref, h.src, h.seq, h.len);
		if (memcmp(buf, ref, (size_t)n)) {
			r->corrupt++;
			continue;
		}
		if ((int64_t)h.seq <= last[h.src])
			r->disorder++;
		last[h.src] = h.seq;
		r->got[h.src]++;
	}
	free(buf);
	free(ref);
}

/*
 * UDP at the highest rate the senders manage, every rank to every other
 * (one flow per pair, datagrams from 64 B to 65507 B, the largest ones
 * fragmented): whatever arrives is intact and in order per flow.  Losses
 * are allowed (socket buffers, queues) and reported.
 */
TEST_F(ipd, udp_max_rate_intact_in_order_per_flow)
{
	int me = my_rank(), k = nranks(), fd, rfd, sz = 8 << 20;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(IPD_PORT_BASE + 5) };
	struct udp_result mine, all[OOB_MAX_NODES];
	uint8_t *buf;
	pid_t child;
	int pfd[2];

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, fd);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	a.sin_addr.s_addr = exa_ip(me);
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&a, sizeof(a)));
	ASSERT_EQ(0, pipe(pfd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		udp_receive(fd, k, &mine);
		_exit(write(pfd[1], &mine, sizeof(mine)) == sizeof(mine) ? 0 : 1);
	}
	OOB_SYNC(&self->o);
	buf = malloc(65536);
	ASSERT_NE(NULL, buf);
	for (uint32_t seq = 0; seq < UDP_PER_FLOW; seq++) {
		for (int r = 0; r < k; r++) {
			uint32_t len = (uint32_t)udp_sizes[(seq + (uint32_t)r) % 8];

			if (r == me)
				continue;
			udp_fill(buf, (uint32_t)me, seq, len);
			a.sin_addr.s_addr = exa_ip(r);
			sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a));
		}
	}
	free(buf);
	ASSERT_EQ((ssize_t)sizeof(mine), read(pfd[0], &mine, sizeof(mine)));
	ASSERT_EQ(0, exa_wait_child(child, 10000));
	close(fd);
	(void)rfd;
	ASSERT_EQ(0, oob_allgather(&self->o, &mine, all, sizeof(mine)));
	for (int r = 0; r < k; r++) {
		for (int s2 = 0; s2 < k; s2++) {
			if (s2 == r)
				continue;
			TH_LOG("flow %d -> %d: %u of %u received", s2, r, all[r].got[s2],
			       UDP_PER_FLOW);
			EXPECT_LT(0u, all[r].got[s2]);
		}
		EXPECT_EQ(0u, all[r].corrupt);
		EXPECT_EQ(0u, all[r].disorder);
	}
	ASSERT_EQ(0, ipd_status_refresh());
	EXPECT_EQ(0, ipd_counter("rx_bad_batches"));
	OOB_SYNC(&self->o);
}

/*
 * Kernel bypass: while TCP traffic flows, the daemon's only system calls
 * are its TUN reads and writes, its way of waiting, and the once-per-tick
 * housekeeping (heartbeat socket, status file, timer signal).  Posting RDMA
 * writes, polling notifications and completions, and mailbox messages are
 * loads and stores: no ioctl, no mmap, no munmap on the data path.
 */
TEST_F(ipd, data_path_no_ioctl_or_mmap_under_traffic)
{
	static const char *const allowed[] = {
		"read", "write", "writev", "sched_yield", "ppoll", "epoll_wait", "epoll_pwait",
		"rt_sigreturn", "sendto", "recvfrom", "openat", "close", "rename", "fstat",
		"newfstatat", "lseek", "getpid", "clock_gettime", "kill", "brk", NULL,
	};
	char line[256];
	FILE *f;
	int pid, straced, reads = 0;

	pid = ipd_pid();
	ASSERT_LT(0, pid);
	straced = exa_system("(strace -c -f -p %d -o /tmp/ipd-strace.txt & echo $! > "
			     "/tmp/ipd-strace.pid; wait) >/dev/null 2>&1 &", pid);
	ASSERT_EQ(0, straced);
	usleep(1000000);	/* attached */
	OOB_SYNC(&self->o);
	tcp_ring(_metadata, &self->o, 8ull << 20, IPD_PORT_BASE + 8);
	OOB_SYNC(&self->o);
	ASSERT_EQ(0, exa_system("kill -INT $(cat /tmp/ipd-strace.pid); sleep 1"));
	f = fopen("/tmp/ipd-strace.txt", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		long calls;
		int ok = 0;

		/* % time  seconds  usecs/call  calls  [errors]  syscall */
		if (sscanf(line, "%*f %*f %*d %ld %*d %63s", &calls, name) != 2 &&
		    sscanf(line, "%*f %*f %*d %ld %63s", &calls, name) != 2)
			continue;
		if (!strcmp(name, "total"))
			continue;
		for (int i = 0; allowed[i]; i++)
			ok |= !strcmp(name, allowed[i]);
		if (!strcmp(name, "read") || !strcmp(name, "writev"))
			reads += (int)calls;
		if (!ok)
			TH_LOG("unexpected system call on the data path: %s (%ld)", name, calls);
		EXPECT_TRUE(ok);
	}
	fclose(f);
	EXPECT_LT(100, reads);		/* the trace did see the traffic */
	OOB_SYNC(&self->o);
}

/* What the kernel counted on exa0 is what the daemon read and wrote. */
TEST_F(ipd, interface_counters_match_daemon)
{

	OOB_SYNC(&self->o);		/* quiet link */
	usleep(300000);
	ASSERT_EQ(0, ipd_status_refresh());
	EXPECT_EQ(net_stat("exa0", "tx_packets"), ipd_counter("tun_rx_packets"));
	EXPECT_EQ(net_stat("exa0", "tx_bytes"), ipd_counter("tun_rx_bytes"));
	EXPECT_EQ(net_stat("exa0", "rx_packets"),
		  ipd_counter("tun_tx_packets") + ipd_counter("icmp_unreach_sent"));
	EXPECT_LT((long)TCP_BYTES, net_stat("exa0", "rx_bytes"));
	OOB_SYNC(&self->o);
}

/* ---- hostile input ---- */

/* What rank 0 tells the attacker on rank 1 about its ring for node 1. */
struct ring_info {
	uint32_t node, rank, mbox, pid;
	uint64_t va, cons, ring_bytes;
	uint32_t wseq, cookie;
};

static void ring_info_get(struct __test_metadata *_metadata, int peer, struct ring_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ASSERT_EQ(0, ipd_status_refresh());
	ri->node = (uint32_t)ipd_peer_num(peer, "ring_node");
	ri->rank = (uint32_t)ipd_peer_num(peer, "ring_rank");
	ri->va = (uint64_t)ipd_peer_num(peer, "ring_va");
	ri->cons = (uint64_t)ipd_peer_num(peer, "rx_consumed");
	ri->wseq = (uint32_t)ipd_peer_num(peer, "rx_wseq");
	ri->cookie = (uint32_t)ipd_peer_num(peer, "rx_cookie");
	ri->ring_bytes = (uint64_t)ipd_peer_num(peer, "ring_bytes") - IPD_NOTIF_AREA;
	ri->mbox = (uint32_t)ipd_status_num("mbox");
	ri->pid = (uint32_t)ipd_pid();
	ASSERT_NE(0u, ri->va);
}

/* CRC of the first len bytes of the daemon's memory at va. */
static uint32_t daemon_mem_crc(int pid, uint64_t va, size_t len)
{
	char path[64];
	uint8_t *b = malloc(len);
	uint32_t crc = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY);
	if (fd >= 0 && b && pread(fd, b, len, (off_t)va) == (ssize_t)len)
		crc = exa_crc32(b, len);
	if (fd >= 0)
		close(fd);
	free(b);
	return crc;
}

/* An RDMA write from a separate process (its PDID decided by how it was
 * spawned): data at ra, optional notification with tag. */
struct put_job {
	uint32_t node, rank;
	uint64_t va, notify_va, tag;
	size_t len;
	uint8_t fill;
	const uint8_t *data;	/* or NULL: fill */
	uint32_t mbox;		/* also send a message to this mailbox, unless ~0 */
};

static int put_child(void *arg)
{
	struct put_job *j = arg;
	struct exanet_rdma_opts op = { 0 };
	struct exanet_raddr ra;
	struct exanet_dev *dev;
	struct exanet_rdma *r;
	struct exanet_mr *mr;
	size_t buflen = (j->len + 4095) & ~(size_t)4095;
	uint8_t *buf;
	int slot, err;

	if (exanet_open(NULL, &dev))
		return 100;
	buf = aligned_alloc(4096, buflen);
	if (!buf)
		return 101;
	if (j->data)
		memcpy(buf, j->data, j->len);
	else
		memset(buf, j->fill, j->len);
	if (exanet_reg_mr(dev, buf, buflen, 0, &mr) || exanet_rdma_alloc(dev, &r))
		return 102;
	if (exanet_raddr_make(j->node, j->rank, j->va, &ra))
		return 103;
	op.notify_va = j->notify_va;
	op.tag = j->tag;
	slot = exanet_rdma_post_write(r, buf, &ra, j->len, &op);
	if (slot < 0)
		return 104;
	err = exanet_rdma_wait(r, (unsigned int)slot, 20 * SEC, NULL);
	if (j->mbox != ~0u) {
		struct exanet_pkt *pkt;
		int e2;

		if (exanet_pkt_alloc(dev, &pkt))
			return 105;
		e2 = exanet_send_wait(pkt, j->node, j->mbox, "forged", 6, 10 * SEC, NULL);
		if (e2 != -EACCES)
			return 106;
	}
	exanet_close(dev);
	return -err & 0xff;
}

static int put_as(uint32_t pdid, struct put_job *j)
{
	pid_t pid = exa_spawn_in_pdid(pdid, put_child, j);

	if (pid < 0)
		return 120;
	return exa_wait_child(pid, 60000);
}

/* Messages into a daemon's mailbox from a separate process: 20 garbage
 * messages, then an OFFER for another incarnation of the daemon. */
struct msg_job {
	uint32_t node, mbox;
};

static int msg_child(void *arg)
{
	struct msg_job *j = arg;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct ipd_msg m = { .type = IPD_MSG_OFFER, .ring_order = 21 };
	uint8_t buf[IPD_MSG_MAX_SIZE];
	uint64_t st = 99;
	size_t len;

	if (exanet_open(NULL, &dev) || exanet_pkt_alloc(dev, &pkt))
		return 100;
	for (int i = 0; i < 20; i++) {
		len = 1 + (size_t)(xs64(&st) % 64);
		fill_random(buf, len, &st);
		buf[1] = (uint8_t)(i & 1);	/* never a valid version */
		if (exanet_send_wait(pkt, j->node, j->mbox, buf, len, 10 * SEC, NULL))
			return 101;
	}
	m.src_cookie = 1;
	m.src_incarnation = 0x1234;
	m.dst_incarnation = 0x5678;		/* not the daemon's */
	m.u.offer.mtu = 65520;
	len = ipd_msg_encode(&m, buf);
	if (exanet_send_wait(pkt, j->node, j->mbox, buf, len, 10 * SEC, NULL))
		return 102;
	exanet_close(dev);
	return 0;
}

/*
 * A process of another PDID (root's own user domain) aims an RDMA write
 * with a notification at the daemon's receive ring and a message at its
 * mailbox: both are refused by the NI (PDID), the ring's memory is
 * unchanged and the daemon saw nothing.
 */
TEST_F(ipd, hostile_other_pdid_write_to_ring_refused)
{
	int me = my_rank();
	struct ring_info ri;
	uint32_t crc0 = 0;
	long long nack0 = 0, mnack0 = 0, notif0 = 0, msgbad0 = 0;

	if (me == 0) {
		ring_info_get(_metadata, 1, &ri);
		crc0 = daemon_mem_crc((int)ri.pid, ri.va, IPD_NOTIF_AREA + 65536);
		ASSERT_NE(0u, crc0);
		nack0 = sysfs_named("rdma_counters", "rx_nack_pdid");
		mnack0 = sysfs_named("counters", "rx_nack_pdid");
		notif0 = ipd_counter("notif_bad");
		msgbad0 = ipd_counter("msg_bad");
	}
	ASSERT_EQ(0, oob_bcast(&self->o, &ri, sizeof(ri), 0));
	if (me == 1) {
		struct put_job j = { .node = ri.node, .rank = ri.rank, .va = ri.va + IPD_NOTIF_AREA,
				     .notify_va = ri.va, .tag = 0, .len = 65536, .fill = 0xee,
				     .mbox = ri.mbox };

		/* unbound root: the per-user domain, not the IP service's */
		EXPECT_EQ(EACCES, put_as(0, &j));
	}
	OOB_SYNC(&self->o);
	if (me == 0) {
		ASSERT_EQ(0, ipd_status_refresh());
		EXPECT_EQ(crc0, daemon_mem_crc((int)ri.pid, ri.va, IPD_NOTIF_AREA + 65536));
		EXPECT_LT(nack0, sysfs_named("rdma_counters", "rx_nack_pdid"));
		EXPECT_LT(mnack0, sysfs_named("counters", "rx_nack_pdid"));
		EXPECT_EQ(notif0, ipd_counter("notif_bad"));
		/* the forged 6-byte message would be counted as bad; msg_rx
		 * is no witness: peers' credits and probes arrive meanwhile */
		EXPECT_EQ(msgbad0, ipd_counter("msg_bad"));
		EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q 10.43.0.2"));
	}
	OOB_SYNC(&self->o);
}

/* Paced: the management hub of 3+ node clusters drops bursts. */
static void send_hb(int fd, const struct sockaddr_in *to, const struct ipd_hb *hb)
{
	uint8_t w[IPD_HB_WIRE_SIZE];

	ipd_hb_encode(hb, w);
	sendto(fd, w, sizeof(w), 0, (const struct sockaddr *)to, sizeof(*to));
	usleep(5000);
}

/*
 * Forged heartbeats (another incarnation of a live peer, with and without
 * the leaving flag; the victim's own node; another fabric; the real
 * incarnation with the leaving flag) and garbage on the heartbeat port:
 * counted, and the peer stays up with its incarnation.
 */
TEST_F(ipd, hostile_forged_heartbeats_and_garbage)
{
	int me = my_rank();
	long long bad0 = 0, inc0 = 0, self0 = 0, foreign0 = 0, hs0 = 0;
	char real_inc[32] = "", buf[32];

	if (me == 0) {
		ASSERT_EQ(0, ipd_status_refresh());
		bad0 = ipd_counter("hb_bad");
		inc0 = ipd_counter("hb_bad_incarnation");
		self0 = ipd_counter("hb_self_conflict");
		foreign0 = ipd_counter("hb_foreign");
		hs0 = ipd_peer_num(1, "handshakes");
		ipd_peer_str(1, "incarnation", real_inc, sizeof(real_inc));
	}
	ASSERT_EQ(0, oob_bcast(&self->o, real_inc, sizeof(real_inc), 0));
	if (me == 1) {
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(18650) };
		struct ipd_hb hb = { .node = 1, .mbox = 0, .ipv4 = exa_ip(1), .mtu = 65520,
				     .num_nodes = (uint32_t)exa_sysfs_long("num_nodes") };
		uint8_t g[300];
		uint64_t st = 12345;
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		ASSERT_LE(0, fd);
		to.sin_addr.s_addr = htonl(0x0a2a0001);		/* node0 on eth0 */
		for (int i = 0; i < 100; i++) {
			size_t len = (size_t)(xs64(&st) % sizeof(g));

			fill_random(g, len, &st);
			sendto(fd, g, len, 0, (struct sockaddr *)&to, sizeof(to));
			usleep(5000);
		}
		for (int i = 0; i < 20; i++) {
			hb.incarnation = xs64(&st) | 1;			/* wrong incarnation */
			hb.flags = i & 1 ? IPD_HB_F_LEAVING : 0;
			send_hb(fd, &to, &hb);
		}
		hb.incarnation = strtoull(real_inc, NULL, 16);		/* real one, "leaving" */
		hb.flags = IPD_HB_F_LEAVING;
		for (int i = 0; i < 5; i++)
			send_hb(fd, &to, &hb);
		hb.flags = 0;
		hb.node = 0;						/* the victim itself */
		hb.incarnation = xs64(&st) | 1;
		for (int i = 0; i < 5; i++)
			send_hb(fd, &to, &hb);
		hb.node = 1;
		hb.num_nodes = 1000;					/* another fabric */
		for (int i = 0; i < 5; i++)
			send_hb(fd, &to, &hb);
		close(fd);
	}
	OOB_SYNC(&self->o);
	if (me == 0) {
		usleep(500000);		/* a few ticks: the daemon reads heartbeats per tick */
		ASSERT_EQ(0, ipd_status_refresh());
		EXPECT_LE(bad0 + 100, ipd_counter("hb_bad"));
		EXPECT_LE(inc0 + 20, ipd_counter("hb_bad_incarnation"));
		EXPECT_LE(self0 + 5, ipd_counter("hb_self_conflict"));
		EXPECT_LE(foreign0 + 5, ipd_counter("hb_foreign"));
		EXPECT_STREQ("up", ipd_peer_str(1, "state", buf, sizeof(buf)));
		EXPECT_STREQ(real_inc, ipd_peer_str(1, "incarnation", buf, sizeof(buf)));
		EXPECT_EQ(hs0, ipd_peer_num(1, "handshakes"));
		EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q 10.43.0.2"));
	}
	OOB_SYNC(&self->o);
}

/*
 * A process inside the IP service's PDID (it passes the NI's check) sends
 * garbage and stale handshake messages to the daemon's mailbox (counted,
 * nothing changes), then writes malformed batches into the daemon's ring
 * with the right notification tags: a notification with a wrong tag, a
 * record longer than its batch, a batch of impossible length.  Each is
 * dropped and counted, nothing reaches the kernel, the daemon replaces the
 * ring and keeps serving.
 */
TEST_F(ipd, hostile_insider_malformed_batches_counted)
{
	int me = my_rank();
	long long nb0 = 0, bad0 = 0, tun0 = 0;
	struct ring_info ri;

	/* malformed and stale handshake messages: counted, nothing else */
	if (me == 0) {
		ASSERT_EQ(0, ipd_status_refresh());
		nb0 = ipd_counter("msg_bad");
		bad0 = ipd_counter("msg_stale");
		ring_info_get(_metadata, 1, &ri);
	}
	ASSERT_EQ(0, oob_bcast(&self->o, &ri, sizeof(ri), 0));
	if (me == 1) {
		struct msg_job j = { .node = ri.node, .mbox = ri.mbox };
		pid_t pid = exa_spawn_in_pdid(IPD_PDID, msg_child, &j);

		ASSERT_LT(0, pid);
		EXPECT_EQ(0, exa_wait_child(pid, 60000));
	}
	OOB_SYNC(&self->o);
	if (me == 0) {
		char buf[32];

		ASSERT_EQ(0, ipd_status_refresh());
		EXPECT_LE(nb0 + 20, ipd_counter("msg_bad"));
		EXPECT_LE(bad0 + 1, ipd_counter("msg_stale"));
		EXPECT_STREQ("up", ipd_peer_str(1, "state", buf, sizeof(buf)));
		EXPECT_EQ((long long)ri.cookie, ipd_peer_num(1, "rx_cookie"));
	}
	OOB_SYNC(&self->o);
	for (int round = 0; round < 3; round++) {
		if (me == 0) {
			ASSERT_EQ(0, ipd_wait_peer(1, "up", 10000));
			ring_info_get(_metadata, 1, &ri);
			nb0 = ipd_counter("notif_bad");
			bad0 = ipd_counter("rx_bad_batches");
			tun0 = ipd_counter("tun_tx_packets");
		}
		ASSERT_EQ(0, oob_bcast(&self->o, &ri, sizeof(ri), 0));
		if (me == 1) {
			uint8_t batch[64];
			uint64_t off = ri.cons % ri.ring_bytes;
			struct put_job j = { .node = ri.node, .rank = ri.rank,
					     .va = ri.va + IPD_NOTIF_AREA + off,
					     .notify_va = ri.va + (ri.wseq % IPD_NSLOTS) *
							  sizeof(struct exanet_rdma_notif),
					     .len = sizeof(batch), .data = batch, .mbox = ~0u };

			memset(batch, 0, sizeof(batch));
			if (round == 0) {
				/* well-formed record, but the tag of another connection */
				uint8_t pkt[20] = { 0x45, 0, 0, 20 };

				ipd_rec_put(batch, 20, 0);
				memcpy(batch + IPD_REC_HDR, pkt, 20);
				j.len = 48;
				j.tag = ipd_tag(ri.cookie ^ 0x5a5a5a5a, ri.wseq);
			} else if (round == 1) {
				/* record longer than the batch */
				ipd_rec_put(batch, 1000, 0);
				j.tag = ipd_tag(ri.cookie, ri.wseq);
			} else {
				/* a batch length that is not a multiple of 16 */
				j.len = 17;
				j.tag = ipd_tag(ri.cookie, ri.wseq);
			}
			EXPECT_EQ(0, put_as(IPD_PDID, &j));
		}
		OOB_SYNC(&self->o);
		if (me == 0) {
			usleep(200000);
			ASSERT_EQ(0, ipd_status_refresh());
			if (round == 0) {
				EXPECT_EQ(nb0 + 1, ipd_counter("notif_bad"));
				EXPECT_EQ(bad0, ipd_counter("rx_bad_batches"));
			} else {
				EXPECT_EQ(bad0 + 1, ipd_counter("rx_bad_batches"));
			}
			EXPECT_EQ(tun0, ipd_counter("tun_tx_packets"));
			/* a new ring after a bad batch, and the peer is back */
			ASSERT_EQ(0, ipd_wait_peer(1, "up", 10000));
			if (round > 0)
				EXPECT_NE((long long)ri.cookie, ipd_peer_num(1, "rx_cookie"));
			EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q 10.43.0.2"));
		}
		OOB_SYNC(&self->o);
	}
}

/*
 * A daemon that stalls (SIGSTOP for 1.5 s: no heartbeats, no polling) is
 * not a dead one: after K missed heartbeats the others ask over the fabric,
 * its NI answers for the mailbox it still owns, and it stays up with the
 * same rings (no handshake, no reset); traffic resumes when it continues.
 */
TEST_F(ipd, stalled_daemon_stays_up_probe_answers)
{
	int me = my_rank(), k = nranks(), v = k - 1;
	long long hs0 = 0, alive0 = 0, down0 = 0;
	char buf[32];

	if (me != v) {
		ASSERT_EQ(0, ipd_status_refresh());
		hs0 = ipd_peer_num(v, "handshakes");
		alive0 = ipd_counter("probes_alive");
		down0 = ipd_counter("peer_down_events");
	}
	OOB_SYNC(&self->o);
	if (me == v) {
		int pid = ipd_pid();

		ASSERT_EQ(0, kill(pid, SIGSTOP));
		usleep(1500000);
		ASSERT_EQ(0, kill(pid, SIGCONT));
	}
	OOB_SYNC(&self->o);
	if (me != v) {
		usleep(300000);
		ASSERT_EQ(0, ipd_status_refresh());
		EXPECT_LT(alive0, ipd_counter("probes_alive"));
		EXPECT_EQ(down0, ipd_counter("peer_down_events"));
		EXPECT_EQ(hs0, ipd_peer_num(v, "handshakes"));
		EXPECT_STREQ("up", ipd_peer_str(v, "state", buf, sizeof(buf)));
		EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q %s", exa_ip_str(v, buf)));
	}
	OOB_SYNC(&self->o);
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
TEST_F(ipd, kill9_midstream_restart_new_incarnation)
{
	struct before *b = saved();
	int me = my_rank(), k = nranks(), v = k - 1, rfd = -1;
	long long pages_up = 0, bad0 = 0;
	char old_inc[32] = "";
	struct xfer x, all[OOB_MAX_NODES];
	pid_t xp = 0;
	char buf[64];

	if (me == v)
		xp = xfer_start(0, 0, 48ull << 20, IPD_PORT_BASE + 2, &rfd);
	OOB_SYNC(&self->o);
	if (me == 0)
		xp = xfer_start(1, v, 48ull << 20, IPD_PORT_BASE + 2, &rfd);
	if (me == 0 || me == v)
		ASSERT_LT(0, xp);
	if (me != v) {
		ASSERT_EQ(0, ipd_status_refresh());
		ipd_peer_str(v, "incarnation", old_inc, sizeof(old_inc));
		bad0 = ipd_counter("rx_bad_batches");
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
	OOB_SYNC(&self->o);		/* B: killed */
	if (me != v) {
		int64_t t0 = exa_now_ms();
		int err = ipd_wait_peer(v, "down", 5000);

		TH_LOG("peer %d declared down %lld ms after the kill was announced", v,
		       (long long)(exa_now_ms() - t0));
		ASSERT_EQ(0, err);
		EXPECT_GE(2000, exa_now_ms() - t0);
		/* its connection's pages are released here */
		EXPECT_EQ(pages_up - CONN_PAGES, exa_sysfs_long("rdma_registered_pages"));
		/* the kernel learns at once that the host is gone (ICMP host
		 * unreachable from the daemon), instead of timing out */
		{
			struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9),
						 .sin_addr.s_addr = exa_ip(v) };
			long long un0 = ipd_counter("icmp_unreach_sent");
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			int64_t t1 = exa_now_ms();
			int rc = connect(fd, (struct sockaddr *)&a, sizeof(a)), e = errno;

			close(fd);
			EXPECT_EQ(-1, rc);
			EXPECT_EQ(EHOSTUNREACH, e);
			EXPECT_GE(3000, exa_now_ms() - t1);
			ASSERT_EQ(0, ipd_status_refresh());
			EXPECT_LT(un0, ipd_counter("icmp_unreach_sent"));
		}
	} else {
		/* the driver took back everything the killed daemon held */
		usleep(200000);
		EXPECT_EQ(b->reg_pages, exa_sysfs_long("rdma_registered_pages"));
		EXPECT_EQ(b->rdma_pages, exa_sysfs_long("rdma_pages_in_use"));
		EXPECT_EQ(b->ranks, exa_sysfs_long("rdma_ranks_in_use"));
		EXPECT_NE(0, access("/sys/class/net/exa0", F_OK));
	}
	OOB_SYNC(&self->o);		/* C: everybody saw it down */
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
		EXPECT_EQ(bad0, ipd_counter("rx_bad_batches"));
		EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q %s", exa_ip_str(v, buf)));
		EXPECT_EQ(pages_up, exa_sysfs_long("rdma_registered_pages"));
	}
	OOB_SYNC(&self->o);
	if (me == 0 || me == v) {
		EXPECT_EQ(0, xfer_wait(xp, rfd, &x, 240000));
		EXPECT_EQ(0, x.err);
		EXPECT_EQ(48ll << 20, x.bytes);
	} else {
		memset(&x, 0, sizeof(x));
	}
	ASSERT_EQ(0, oob_allgather(&self->o, &x, all, sizeof(x)));
	TH_LOG("sent %s, received %s", all[0].sha, all[v].sha);
	EXPECT_EQ(64u, strlen(all[0].sha));
	EXPECT_STREQ(all[0].sha, all[v].sha);
}

/*
 * A handshake message from a peer that is already down: the last rank's
 * daemon is stopped (SIGSTOP, so it sends no heartbeat but keeps its
 * incarnation and mailbox), and a process of the IP PDID on its node sends
 * every other daemon, in the stopped daemon's name, a BYE (they declare it
 * down and release its connection) followed by the OFFER and the NEED_RING
 * that a dying daemon may have sent just before its end, which reach the
 * peers after the "down".  They are dropped and counted (msg_peer_down): the
 * peer stays down, no region is registered for it, no handshake starts.
 * When the daemon continues, its heartbeats return with the same
 * incarnation, a new handshake brings it up again and its rings are back.
 */
struct ipd_ident {
	uint32_t node, mbox;
	uint64_t inc;
};

struct late_job {
	struct ipd_ident me, to[OOB_MAX_NODES];
	int n;
};

static int late_send(struct exanet_pkt *pkt, const struct ipd_ident *from,
		     const struct ipd_ident *to, struct ipd_msg *m)
{
	uint8_t buf[IPD_MSG_MAX_SIZE];
	size_t len;

	m->src_mbox = (uint8_t)from->mbox;
	m->src_incarnation = from->inc;
	m->dst_incarnation = to->inc;
	len = ipd_msg_encode(m, buf);
	return exanet_send_wait(pkt, to->node, to->mbox, buf, len, 10 * SEC, NULL);
}

static int late_child(void *arg)
{
	struct late_job *j = arg;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_raddr ra;

	if (exanet_open(NULL, &dev) || exanet_pkt_alloc(dev, &pkt))
		return 100;
	if (exanet_raddr_make(j->me.node, 0, 1ull << 30, &ra))
		return 101;
	for (int i = 0; i < j->n; i++) {
		struct ipd_msg bye = { .type = IPD_MSG_BYE, .src_cookie = 1 };
		struct ipd_msg offer = { .type = IPD_MSG_OFFER, .ring_order = 21,
					 .src_cookie = 0x0ffe0000u + (uint32_t)i };
		struct ipd_msg need = { .type = IPD_MSG_NEED_RING, .src_cookie = 1 };

		exanet_raddr_encode(&ra, offer.u.offer.ring);
		offer.u.offer.ipv4 = exa_ip((int)j->me.node);
		offer.u.offer.mtu = 65520;
		if (late_send(pkt, &j->me, &j->to[i], &bye))
			return 102;
		if (late_send(pkt, &j->me, &j->to[i], &offer))
			return 103;
		if (late_send(pkt, &j->me, &j->to[i], &need))
			return 104;
	}
	exanet_close(dev);
	return 0;
}

TEST_F(ipd, late_handshake_from_down_peer_dropped_until_heartbeat_returns)
{
	int me = my_rank(), k = nranks(), v = k - 1, pid = 0;
	long long pages_up = 0, late0 = 0, down0 = 0, hs0 = 0;
	struct ipd_ident id, all[OOB_MAX_NODES];
	char inc[32] = "", buf[64];

	ASSERT_EQ(0, ipd_status_refresh());
	ASSERT_NE(NULL, ipd_status_file_get("incarnation", inc, sizeof(inc)));
	id.node = (uint32_t)ipd_status_num("node");
	id.mbox = (uint32_t)ipd_status_num("mbox");
	id.inc = strtoull(inc, NULL, 16);
	ASSERT_EQ(0, oob_allgather(&self->o, &id, all, sizeof(id)));
	if (me != v) {
		ipd_peer_str(v, "incarnation", inc, sizeof(inc));
		ASSERT_EQ(all[v].inc, strtoull(inc, NULL, 16));
		pages_up = exa_sysfs_long("rdma_registered_pages");
		late0 = ipd_counter("msg_peer_down");
		down0 = ipd_counter("peer_down_events");
		hs0 = ipd_peer_num(v, "handshakes");
	}
	OOB_SYNC(&self->o);
	if (me == v) {
		struct late_job j = { .me = all[v], .n = 0 };
		pid_t cp;

		for (int r = 0; r < k; r++)
			if (r != v)
				j.to[j.n++] = all[r];
		pid = ipd_pid();
		ASSERT_LT(0, pid);
		ASSERT_EQ(0, kill(pid, SIGSTOP));
		cp = exa_spawn_in_pdid(IPD_PDID, late_child, &j);
		ASSERT_LT(0, cp);
		EXPECT_EQ(0, exa_wait_child(cp, 60000));
	}
	OOB_SYNC(&self->o);	/* the messages are in the mailboxes */
	if (me != v) {
		/* the refresh follows a pass over the mailbox */
		ASSERT_EQ(0, ipd_status_refresh());
		EXPECT_STREQ("down", ipd_peer_str(v, "state", buf, sizeof(buf)));
		EXPECT_EQ(down0 + 1, ipd_counter("peer_down_events"));
		EXPECT_EQ(hs0, ipd_peer_num(v, "handshakes"));
		EXPECT_EQ(pages_up - CONN_PAGES, exa_sysfs_long("rdma_registered_pages"));
		/* (-1: a daemon without the counter, which fails here too) */
		EXPECT_LE(0, late0);
		EXPECT_EQ(late0 + 2, ipd_counter("msg_peer_down"));
		/* and nothing starts later while it stays silent */
		usleep(1000000);
		ASSERT_EQ(0, ipd_status_refresh());
		EXPECT_STREQ("down", ipd_peer_str(v, "state", buf, sizeof(buf)));
		EXPECT_EQ(hs0, ipd_peer_num(v, "handshakes"));
		EXPECT_EQ(pages_up - CONN_PAGES, exa_sysfs_long("rdma_registered_pages"));
	}
	OOB_SYNC(&self->o);
	if (me == v) {
		ASSERT_EQ(0, kill(pid, SIGCONT));
		ASSERT_EQ(0, ipd_wait_peers(15000, "up"));
	} else {
		int64_t t0 = exa_now_ms();

		/* its heartbeats are back: the same daemon, a new handshake */
		ASSERT_EQ(0, ipd_wait_peer(v, "up", 15000));
		TH_LOG("peer %d up again %lld ms after it continued", v,
		       (long long)(exa_now_ms() - t0));
		ipd_peer_str(v, "incarnation", inc, sizeof(inc));
		EXPECT_EQ(all[v].inc, strtoull(inc, NULL, 16));
		EXPECT_LT(hs0, ipd_peer_num(v, "handshakes"));
		EXPECT_EQ(down0 + 1, ipd_counter("peer_down_events"));
		EXPECT_EQ(pages_up, exa_sysfs_long("rdma_registered_pages"));
		EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q %s", exa_ip_str(v, buf)));
	}
	OOB_SYNC(&self->o);
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
	cpu = ipd_cpu_pct(5000);	/* the window: 5 s idle */
	TH_LOG("daemon CPU over 5 s idle: %.1f%% of a core", cpu);
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
TEST_F(ipd, sleep_mode_traffic_and_idle_cpu)
{
	double cpu;

	restart_all(_metadata, &self->o, "sleep");
	cpu = mode_check(_metadata, &self->o, IPD_PORT_BASE + 3);
	EXPECT_LE(0, cpu);
	EXPECT_GE(50.0, cpu);
	EXPECT_LT(0, ipd_counter("idle_sleeps"));
	OOB_SYNC(&self->o);
}

/* irq mode: sleeps in epoll on the TUN fd and the device fd, woken by the
 * NI's interrupt; idle CPU under 5% of a core. */
TEST_F(ipd, irq_mode_traffic_and_idle_cpu)
{
	double cpu;

	if (exa_system("exanet-ipd --mode irq --version >/dev/null 2>&1") == 2)
		SKIP_TEST("this exanet-ipd was built without NI interrupts (libexanet < 1.1)");
	{
		/* an NI without interrupts (msix=off): the daemon refuses to
		 * start (exit 2) on every node; then back to busy and skip */
		int rc, all[OOB_MAX_NODES], none = 0;

		ASSERT_EQ(0, ipd_stop());
		OOB_SYNC(&self->o);
		rc = ipd_start("irq", NULL);
		ASSERT_EQ(0, oob_allgather(&self->o, &rc, all, sizeof(rc)));
		for (int r = 0; r < nranks(); r++)
			none |= all[r] == 2;
		if (none) {
			start_all(_metadata, &self->o, "busy");
			SKIP_TEST("the NI has no interrupts: exanet-ipd --mode irq exits 2");
		}
		ASSERT_EQ(0, rc);
		ASSERT_EQ(0, ipd_wait_peers(30000, "up"));
		OOB_SYNC(&self->o);
	}
	cpu = mode_check(_metadata, &self->o, IPD_PORT_BASE + 4);
	EXPECT_LE(0, cpu);
	EXPECT_GE(5.0, cpu);
	/* it polled after its packets (--irq-spin-us, default 1000) and slept */
	EXPECT_LT(0, ipd_counter("irq_spins"));
	EXPECT_LT(0, ipd_counter("idle_sleeps"));
	OOB_SYNC(&self->o);
	/* --irq-spin-us 0: straight to sleep after every packet */
	ASSERT_EQ(0, ipd_stop());
	OOB_SYNC(&self->o);
	ASSERT_EQ(0, ipd_start("irq", "--irq-spin-us 0"));
	ASSERT_EQ(0, ipd_wait_peers(30000, "up"));
	OOB_SYNC(&self->o);
	for (int r = 0; r < nranks(); r++) {
		char ip[20];

		if (r != my_rank())
			EXPECT_EQ(0, exa_system("ping -c 5 -i 0.2 -w 20 -q %s", exa_ip_str(r, ip)));
	}
	OOB_SYNC(&self->o);
	ASSERT_EQ(0, ipd_status_refresh());
	EXPECT_EQ(0, ipd_counter("irq_spins"));
	EXPECT_LT(0, ipd_counter("wakeups"));
	OOB_SYNC(&self->o);
}

/* Without --mode the daemon waits for the NI interrupt when the NI has
 * one (irq measured best, Documentation/exanet/ipd.md) and falls back to
 * sleep mode when it has none; either way the link works.  Without --sched
 * it runs SCHED_BATCH at nice -10 in both. */
TEST_F(ipd, default_mode_irq_or_sleep_without_interrupts)
{
	const char *expect = exa_sysfs_long("irq_vectors") > 0 ? "irq" : "sleep";
	char ip[20];

	ASSERT_EQ(0, ipd_stop());
	OOB_SYNC(&self->o);
	ASSERT_EQ(0, ipd_start(NULL, NULL));
	ASSERT_EQ(0, ipd_wait_peers(30000, "up"));
	EXPECT_EQ(0, exa_system("exanet-ipd --status | grep -q 'mode %s,'", expect));
	/* and shares the CPU as SCHED_BATCH (policy 3) at nice -10 (--sched) */
	EXPECT_EQ(0, exa_system("set -- $(cat /proc/%d/stat); [ \"${19}\" = -10 ] && [ \"${41}\" = 3 ]",
				ipd_pid()));
	OOB_SYNC(&self->o);
	for (int r = 0; r < nranks(); r++)
		if (r != my_rank())
			EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q %s", exa_ip_str(r, ip)));
	OOB_SYNC(&self->o);
}

/* Stopping the daemons gives back every registered page, RDMA page and
 * rank, and removes the interface. */
TEST_F(ipd, stop_releases_everything)
{
	struct before *b = saved();

	OOB_SYNC(&self->o);
	ASSERT_EQ(0, ipd_stop());
	usleep(200000);
	EXPECT_NE(0, access("/sys/class/net/exa0", F_OK));
	EXPECT_EQ(b->reg_pages, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(b->rdma_pages, exa_sysfs_long("rdma_pages_in_use"));
	EXPECT_EQ(b->ranks, exa_sysfs_long("rdma_ranks_in_use"));
	EXPECT_EQ(0, exa_system("grep -q stopping " IPD_LOG));
	OOB_SYNC(&self->o);
}

/*
 * A whole node powered off (its QEMU process ends) while rank 0 streams to
 * it and rank 1 streams to rank 2: the others declare it down, release its
 * rings, keep working with each other (the 1 -> 2 transfer completes with
 * the right sha256, pings between them answer), and after their daemons
 * stop, their driver counters are back to the values before the first case.
 * Needs 4 nodes; the last rank powers off, so this case is last.
 */
/* @pid exists and is not a zombie. */
static int proc_running(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int run = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		p = strrchr(buf, ')');
		run = p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	}
	fclose(f);
	return run;
}

/*
 * Last, since it powers a node off: a fixture of its own registers after
 * ipd's cases (the harness runs cases grouped by fixture, in the order the
 * fixtures first appear; the global ones first).
 */
FIXTURE(poweroff) {
	int unused;
};

FIXTURE_SETUP(poweroff)
{
}

FIXTURE_TEARDOWN(poweroff)
{
}

TEST_F(poweroff, node_poweroff_midstream_others_keep_working)
{
	struct before *b = saved();
	int me = my_rank(), k = nranks(), v = k - 1, rfd = -1, rank, nn;
	uint32_t peers[OOB_MAX_NODES];
	long long pages_up;
	struct xfer x, all[OOB_MAX_NODES];
	struct oob o, o2;
	pid_t xp = 0;
	char ip[20];

	if (k < 4)
		SKIP_TEST("needs 4 nodes (one powers off, the others keep working with each other)");
	if (access("/dev/exanet0", F_OK) || !have_rdma())
		SKIP_TEST("no RDMA on this node");
	OOB_UP(&o);
	start_all(_metadata, &o, "busy");
	if (me == v)
		xp = xfer_start(0, 0, 48ull << 20, IPD_PORT_BASE + 6, &rfd);
	if (me == 2)
		xp = xfer_start(0, 1, 32ull << 20, IPD_PORT_BASE + 7, &rfd);
	OOB_SYNC(&o);
	if (me == 0)
		xp = xfer_start(1, v, 48ull << 20, IPD_PORT_BASE + 6, &rfd);
	if (me == 1)
		xp = xfer_start(1, 2, 32ull << 20, IPD_PORT_BASE + 7, &rfd);
	pages_up = exa_sysfs_long("rdma_registered_pages");
	OOB_SYNC(&o);
	oob_fini(&o);
	usleep(1500000);	/* mid-transfer */
	if (me == v) {
		/* The runner waits for the node to go down instead of calling
		 * it dead (tools/cluster/run-tests, POWEROFF_MARK). */
		pid_t harness = getppid();	/* prints the results at its exit */
		int go[2];
		pid_t pid;
		char c;

		printf("# exa-runner: this node powers off\n");
		fflush(stdout);
		/* a process outside the test's process group (which the
		 * harness kills when the case returns) pulls the plug */
		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			int fd;

			if (setsid() < 0)
				_exit(1);
			if (write(go[1], "s", 1) != 1)
				_exit(1);
			/* Not before the test program's output has left: wait
			 * for it to exit (on the debug kernel that took longer
			 * than the 2 s this used to sleep, and the runner got
			 * nothing from the node), then give the agent 2 s. */
			for (int t = 0; t < 450 && proc_running(harness); t++)
				usleep(100000);
			sleep(2);
			sync();
			fd = open("/proc/sysrq-trigger", O_WRONLY);
			if (fd >= 0 && write(fd, "o", 1) != 1)
				_exit(1);
			_exit(0);
		}
		ASSERT_EQ(1, read(go[0], &c, 1));
		return;
	}
	/* the survivors among themselves */
	ASSERT_EQ(0, oob_from_env(&rank, &nn, peers, OOB_MAX_NODES));
	ASSERT_EQ(0, oob_init_explicit(&o2, me, k - 1, peers, 100 + (unsigned int)ksft_case_index(_metadata),
				       OOB_DEFAULT_PORT, 60000));
	{
		int64_t t0 = exa_now_ms();
		int err = ipd_wait_peer(v, "down", 20000);

		TH_LOG("node %d down after %lld ms", v, (long long)(exa_now_ms() - t0));
		ASSERT_EQ(0, err);
	}
	/*
	 * The connection's rings are released with the "down".  A message
	 * the node sent just before it went (an OFFER, a NEED_RING) and read
	 * after it is dropped (late_handshake_from_down_peer_...), and any
	 * handshake's regions are released within IPD_HANDSHAKE_TIMEOUT_MS
	 * (10 s, ipd.md "Peer down"): wait that long at most, not 30 s.
	 */
	for (int t = 0; t < 110 &&
	     exa_sysfs_long("rdma_registered_pages") != pages_up - CONN_PAGES; t++)
		usleep(100000);
	EXPECT_EQ(pages_up - CONN_PAGES, exa_sysfs_long("rdma_registered_pages"));
	if (me == 0) {		/* its transfer cannot finish: end it */
		kill(xp, SIGKILL);
		exa_wait_child(xp, 5000);
		close(rfd);
	}
	for (int r = 0; r < k - 1; r++)
		if (r != me)
			EXPECT_EQ(0, exa_system("ping -c 2 -w 20 -q %s", exa_ip_str(r, ip)));
	memset(&x, 0, sizeof(x));
	if (me == 1 || me == 2) {
		EXPECT_EQ(0, xfer_wait(xp, rfd, &x, 240000));
		EXPECT_EQ(0, x.err);
		EXPECT_EQ(32ll << 20, x.bytes);
	}
	ASSERT_EQ(0, oob_allgather(&o2, &x, all, sizeof(x)));
	TH_LOG("1 -> 2 sent %s, received %s", all[1].sha, all[2].sha);
	EXPECT_EQ(64u, strlen(all[1].sha));
	EXPECT_STREQ(all[1].sha, all[2].sha);
	ASSERT_EQ(0, oob_barrier(&o2));
	ASSERT_EQ(0, ipd_stop());
	usleep(200000);
	EXPECT_EQ(b->reg_pages, exa_sysfs_long("rdma_registered_pages"));
	EXPECT_EQ(b->rdma_pages, exa_sysfs_long("rdma_pages_in_use"));
	EXPECT_EQ(b->ranks, exa_sysfs_long("rdma_ranks_in_use"));
	oob_fini(&o2);
}

/* Whatever happened above, leave no daemon behind for the next program
 * (exanet_module unloads the driver).  The cases run in children that end
 * with _exit(); this runs when the harness itself exits. */
static void __attribute__((destructor)) stop_leftover_daemon(void)
{
	if (ipd_pid())
		ipd_stop();
}

TEST_HARNESS_MAIN
