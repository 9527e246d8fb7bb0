/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exanet_ipd: hostile input to the daemons (an RDMA write and a message
 * from another PDID, forged heartbeats and garbage, malformed batches from
 * inside the IP PDID): refused or dropped, counted, and the link works.
 *
 * Cases of the translation unit of exanet_ipd.c: include it only there.
 */
#ifndef EXANET_IPD_C
#error "exanet_ipd-hostile.h holds cases of exanet_ipd.c: include it only there"
#endif

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
		EXPECT_EQ(0, ipd_ping("-c 2 -w 20", "10.43.0.2"));
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
		EXPECT_EQ(0, ipd_ping("-c 2 -w 20", "10.43.0.2"));
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
			EXPECT_EQ(0, ipd_ping("-c 2 -w 20", "10.43.0.2"));
		}
		OOB_SYNC(&self->o);
	}
}

/*
 * Messages into the kernel path's mailbox from a separate process: 20
 * random ones, a fragment that names no IPv4 packet, the first half of a
 * packet followed by another packet's first half, and a fragment whose
 * length disagrees with its packet.  With @expect_refused (another PDID)
 * the first one must come back refused and nothing more is tried.
 */
struct kmsg_job {
	uint32_t node, mbox;
	int expect_refused;
};

static int kmsg_send(struct exanet_pkt *pkt, const struct kmsg_job *j, const void *m,
		     size_t len)
{
	return exanet_send_wait(pkt, j->node, j->mbox, m, len, 10 * SEC, NULL);
}

static void kfrag(uint8_t *m, uint8_t index, uint8_t nfrags, uint32_t seq, uint16_t len)
{
	struct exanet_ip_frag f = { .magic = EXANET_IP_MAGIC, .index = index,
				    .nfrags = nfrags, .seq = htole32(seq) };
	struct exanet_ip_first first = { .len = htole16(len), .epoch = htole32(0x5eed) };

	memset(m, 0, EXANET_MAX_PAYLOAD);
	memcpy(m, &f, sizeof(f));
	if (!index)
		memcpy(m + sizeof(f), &first, sizeof(first));
}

static int kmsg_child(void *arg)
{
	const struct kmsg_job *j = arg;
	uint8_t m[EXANET_MAX_PAYLOAD];
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	uint64_t st = 7;

	if (exanet_open(NULL, &dev) || exanet_pkt_alloc(dev, &pkt))
		return 100;
	if (j->expect_refused) {
		kfrag(m, 0, 1, 1, 40);
		return kmsg_send(pkt, j, m, EXANET_IP_FIRST_HDR_LEN + 40) == -EACCES ? 0 : 101;
	}
	for (int i = 0; i < 20; i++) {
		size_t len = 1 + (size_t)(xs64(&st) % EXANET_MAX_PAYLOAD);

		fill_random(m, len, &st);
		m[0] = (uint8_t)(EXANET_IP_MAGIC ^ (1 + i));	/* never the magic */
		if (kmsg_send(pkt, j, m, len))
			return 102;
	}
	/* one fragment, 40 bytes of "IPv6" */
	kfrag(m, 0, 1, 1000, 40);
	m[EXANET_IP_FIRST_HDR_LEN] = 0x60;
	if (kmsg_send(pkt, j, m, EXANET_IP_FIRST_HDR_LEN + 40))
		return 103;
	/* half a 90-byte packet (two fragments), then another one's first half */
	kfrag(m, 0, 2, 1001, 90);
	if (kmsg_send(pkt, j, m, EXANET_MAX_PAYLOAD))
		return 104;
	kfrag(m, 0, 2, 1002, 90);
	if (kmsg_send(pkt, j, m, EXANET_MAX_PAYLOAD))
		return 105;
	/* its second fragment, one byte short */
	kfrag(m, 1, 2, 1002, 0);
	if (kmsg_send(pkt, j, m, EXANET_IP_HDR_LEN + 90 - EXANET_IP_FIRST_DATA - 1))
		return 106;
	exanet_close(dev);
	return 0;
}

/*
 * The kernel path's mailbox under attack: a process of another PDID is
 * refused by the NI; one inside the IP PDID gets its malformed messages
 * counted (rx_bad, rx_incomplete) and nothing delivered; small packets
 * still go through it afterwards.
 */
TEST_F(ipd, hostile_kernel_path_mailbox)
{
	int me = my_rank();
	struct kmsg_job j = { 0 };
	long long bad0 = 0, inc0 = 0, rx0 = 0, nack0 = 0;

	if (me == 0) {
		ASSERT_EQ(0, ipd_status_refresh());
		j.node = 0;
		j.mbox = (uint32_t)ipd_status_num("kernel_path_mbox");
		ASSERT_GT(64u, j.mbox);
		bad0 = sysfs_named("ip_stats", "rx_bad");
		inc0 = sysfs_named("ip_stats", "rx_incomplete");
		rx0 = sysfs_named("ip_stats", "rx_packets");
		nack0 = sysfs_named("counters", "rx_nack_pdid");
	}
	ASSERT_EQ(0, oob_bcast(&self->o, &j, sizeof(j), 0));
	if (me == 1) {
		pid_t pid;

		/* unbound root: the per-user domain, not the IP service's */
		j.expect_refused = 1;
		pid = exa_spawn_in_pdid(0, kmsg_child, &j);
		ASSERT_LT(0, pid);
		EXPECT_EQ(0, exa_wait_child(pid, 60000));
		j.expect_refused = 0;
		pid = exa_spawn_in_pdid(IPD_PDID, kmsg_child, &j);
		ASSERT_LT(0, pid);
		EXPECT_EQ(0, exa_wait_child(pid, 60000));
	}
	OOB_SYNC(&self->o);
	if (me == 0) {
		EXPECT_LT(nack0, sysfs_named("counters", "rx_nack_pdid"));
		/* 20 random, the IPv6 one and the short fragment; the half
		 * packet and the one the short fragment ended */
		EXPECT_EQ(bad0 + 22, sysfs_named("ip_stats", "rx_bad"));
		EXPECT_EQ(inc0 + 2, sysfs_named("ip_stats", "rx_incomplete"));
		EXPECT_EQ(rx0, sysfs_named("ip_stats", "rx_packets"));
		EXPECT_EQ(0, ipd_ping("-c 2 -w 20", "10.43.0.2"));
		EXPECT_LE(rx0 + 2, sysfs_named("ip_stats", "rx_packets"));
	}
	OOB_SYNC(&self->o);
}
