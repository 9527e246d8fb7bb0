/*
 * extoll_compat: a client written against the original EXTOLL API the way
 * the spec's section 5 clients use it (pscom4extoll eager ring, pscom4velo
 * VELO small messages + RMA get rendezvous, extoll_pp_velo), built only
 * with `#include <rma2.h>` / `<velo2.h>` / `<velo2_mod.h>` and
 * `pkg-config --cflags --libs rma2 velo2`, under pscom's warning flags.
 *
 * Runs as two processes: on two nodes (EXA_RANK/EXA_NNODES=2/EXA_PEERS, as
 * the cluster runner starts it) or, with one node, as a forked pair using
 * loopback.  Bootstrap (node id, VPIDs, NLAs) goes over a TCP socket, as
 * pscom does.  Prints TAP; "1..0 # SKIP" without an EXTOLL device.
 *
 * SPDX-License-Identifier: MIT
 */
#include <rma2.h>
#include <velo2.h>
#include <velo2_mod.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#define PORT_BASE 47290
#define EAGER_SLOTS 16
#define EAGER_SLOT_SIZE 4096
#define EAGER_PAYLOAD (EAGER_SLOT_SIZE - 8)
#define TAIL_MAGIC 0x5aU
#define VELO_MTU 120
#define RNDV_SIZE (3u * 1024u * 1024u + 777u)
#define RNDV_CHUNK (1024u * 1024u)
#define PP_ITERS 200

struct peer_info {		/* exchanged over TCP, like pscom's con info */
	RMA2_Nodeid node;
	RMA2_VPID vpid;
	uint32_t velo_node;
	uint32_t velo_vpid;
	uint64_t ring_nla;	/* NLA of the receive ring */
};

static int g_test;
static int g_fail;

static void tap(int ok, const char *name)
{
	g_test++;
	if (!ok)
		g_fail++;
	printf("%sok %d %s\n", ok ? "" : "not ", g_test, name);
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int full_io(int fd, void *buf, size_t len, int wr)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int tcp_pair(int rank, const char *peer_ip, unsigned int port)
{
	struct sockaddr_in sa;
	int fd, one = 1;
	double end = now_s() + 60.0;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (rank == 0) {
		int lfd = socket(AF_INET, SOCK_STREAM, 0);

		if (lfd < 0)
			return -1;
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
			close(lfd);
			return -1;
		}
		fd = accept(lfd, NULL, NULL);
		close(lfd);
	} else {
		if (inet_pton(AF_INET, peer_ip, &sa.sin_addr) != 1)
			return -1;
		for (;;) {
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (fd < 0)
				return -1;
			if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
				break;
			close(fd);
			if (now_s() > end)
				return -1;
			usleep(50000);
		}
	}
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void sync_tcp(int fd)
{
	char c = 'S';

	if (full_io(fd, &c, 1, 1) || full_io(fd, &c, 1, 0)) {
		printf("Bail out! bootstrap connection lost\n");
		exit(1);
	}
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

/* ------------------------------------------------------------ eager ring */
/* pscom4extoll: 16 registered 4 KiB slots; a message is one put of a
 * 64-byte-rounded block whose last 8 bytes are the tail (token, len, magic);
 * the receiver polls the tail in its own memory without calling librma2. */

struct tail {
	uint16_t token;
	uint16_t len;
	uint8_t pad[3];
	uint8_t magic;
};

static volatile struct tail *tail_of(uint8_t *slot)
{
	return (volatile struct tail *)(slot + EAGER_SLOT_SIZE - 8);
}

static int eager_send(RMA2_Port port, RMA2_Handle h, RMA2_Region *sreg, uint8_t *sbuf,
		      uint64_t peer_ring, unsigned int slot, const void *msg, uint16_t len,
		      uint16_t token)
{
	uint8_t *s = sbuf + (size_t)slot * EAGER_SLOT_SIZE;
	uint32_t block = ((uint32_t)len + 8u + 63u) & ~63u;
	uint32_t off = EAGER_SLOT_SIZE - block;
	volatile struct tail *t = tail_of(s);
	RMA2_ERROR rc;

	memcpy(s + EAGER_SLOT_SIZE - 8 - len, msg, len);	/* payload ends at the tail */
	t->token = token;
	t->len = len;
	t->magic = TAIL_MAGIC;
	rc = rma2_post_put_bt(port, h, sreg, (uint32_t)((size_t)slot * EAGER_SLOT_SIZE + off), block,
			      peer_ring + (uint64_t)slot * EAGER_SLOT_SIZE + off, 0, 0);
	rma2_replay_buffer_drain(port);	/* pscom's progress call */
	return rc == RMA2_SUCCESS ? 0 : -1;
}

static int eager_recv(uint8_t *ring, unsigned int slot, void *msg, uint16_t *len, double tmo)
{
	uint8_t *s = ring + (size_t)slot * EAGER_SLOT_SIZE;
	volatile struct tail *t = tail_of(s);
	double end = now_s() + tmo;
	unsigned long spins = 0;

	while (t->magic != TAIL_MAGIC) {
		if (++spins % 4096 == 0) {
			if (now_s() > end)
				return -1;
			sched_yield();
		}
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*len = t->len;
	memcpy(msg, s + EAGER_SLOT_SIZE - 8 - *len, *len);
	t->magic = 0;
	return 0;
}

/* ------------------------------------------------------------ VELO */

static velo2_ret_t velo_recv_tmo(velo2_port_t *vp, void *buf, uint32_t *len, uint32_t *src,
				 double tmo)
{
	double end = now_s() + tmo;
	uint8_t tag;
	uint8_t mtt;
	velo2_ret_t r;
	unsigned long spins = 0;

	while ((r = velo2_probe_recv(vp, buf, VELO_MTU, len, src, &tag, &mtt)) == VELO2_RET_NO_MSG) {
		if (++spins % 4096 == 0) {
			if (now_s() > end)
				return VELO2_RET_NO_MSG;
			sched_yield();
		}
	}
	return r;
}

/* ------------------------------------------------------------ one rank */

static int run_rank(int rank, const char *peer_ip, unsigned int port)
{
	RMA2_Port rport = NULL;
	RMA2_Handle h = NULL;
	RMA2_Region *ring_reg = NULL, *send_reg = NULL;
	RMA2_Region rbuf_reg;		/* by value, as pscom4velo */
	RMA2_ERROR rc;
	velo2_port_t vport;
	velo2_connection_t vcon;
	struct peer_info me, peer;
	uint8_t *ring, *sbuf, *big;
	char errbuf[100];
	int fd, i, ok;
	uint32_t expect_src;

	memset(&vport, 0, sizeof(vport));
	memset(&vcon, 0, sizeof(vcon));
	memset(&rbuf_reg, 0, sizeof(rbuf_reg));
	rc = rma2_open(&rport);
	if (rc != RMA2_SUCCESS) {
		rma2_serror(rc, errbuf, (int)sizeof(errbuf));
		printf("1..0 # SKIP rma2_open: %s\n", errbuf);
		return rc == RMA2_ERR_NO_DEVICE || rc == RMA2_ERR_FD ? 4 : 1;
	}
	if (velo2_open(&vport) != VELO2_RET_SUCCESS || vport.map == NULL) {
		printf("1..0 # SKIP velo2_open failed\n");
		rma2_close(rport);
		return 4;
	}
	printf("TAP version 13\n1..10\n");

	if (posix_memalign((void **)&ring, 4096, EAGER_SLOTS * EAGER_SLOT_SIZE))
		ring = NULL;
	sbuf = malloc(EAGER_SLOTS * EAGER_SLOT_SIZE + 100);	/* arbitrary alignment */
	big = malloc(RNDV_SIZE + 13);
	if (!ring || !sbuf || !big)
		return 1;
	memset(ring, 0, EAGER_SLOTS * EAGER_SLOT_SIZE);
	rc = rma2_register(rport, ring, EAGER_SLOTS * EAGER_SLOT_SIZE, &ring_reg);
	if (rc == RMA2_SUCCESS)
		rc = rma2_register(rport, sbuf + 3, EAGER_SLOTS * EAGER_SLOT_SIZE, &send_reg);
	tap(rc == RMA2_SUCCESS && ring_reg != NULL && send_reg != NULL, "register_rings");
	if (rc != RMA2_SUCCESS || !ring_reg || !send_reg)
		return 1;
	sbuf += 3;

	me.node = rma2_get_nodeid(rport);
	me.vpid = rma2_get_vpid(rport);
	me.velo_node = velo2_get_nodeid(&vport);
	me.velo_vpid = velo2_get_vpid(&vport);
	rma2_get_nla(ring_reg, 0, &me.ring_nla);

	fd = tcp_pair(rank, peer_ip, port);
	if (fd < 0 || full_io(fd, &me, sizeof(me), 1) || full_io(fd, &peer, sizeof(peer), 0)) {
		printf("Bail out! bootstrap failed\n");
		return 1;
	}
	rc = rma2_connect(rport, peer.node, peer.vpid, RMA2_CONN_DEFAULT, &h);
	ok = rc == RMA2_SUCCESS && h != NULL &&
	     velo2_connect(&vport, &vcon, peer.velo_node, peer.velo_vpid) == VELO2_RET_SUCCESS &&
	     vcon.state_map != NULL;
	tap(ok, "connect");
	if (!ok)
		return 1;
	expect_src = (uint32_t)VELO2_ADDR_PACK(peer.velo_node, peer.velo_vpid);
	sync_tcp(fd);

	/* 1. eager ring ping-pong, sizes 1 .. 4088, 16 slots round robin */
	{
		uint8_t msg[EAGER_PAYLOAD], got[EAGER_PAYLOAD];
		unsigned int slot = 0;
		int bad = 0;
		uint16_t len, sizes[] = { 1, 7, 8, 56, 63, 64, 100, 1000, 4000, EAGER_PAYLOAD };

		for (i = 0; i < PP_ITERS && !bad; i++) {
			uint16_t sz = sizes[i % 10];

			fill(msg, sz, (uint32_t)i);
			if (rank == 0) {
				if (eager_send(rport, h, send_reg, sbuf, peer.ring_nla, slot, msg, sz,
					       (uint16_t)i) ||
				    eager_recv(ring, slot, got, &len, 20.0) || len != sz ||
				    memcmp(got, msg, sz))
					bad = 1;
			} else {
				if (eager_recv(ring, slot, got, &len, 20.0) || len != sz ||
				    memcmp(got, msg, sz) ||
				    eager_send(rport, h, send_reg, sbuf, peer.ring_nla, slot, got, len,
					       (uint16_t)i))
					bad = 1;
			}
			slot = (slot + 1) % EAGER_SLOTS;
		}
		tap(!bad, "eager_ring_pingpong_tail_flag");
		sync_tcp(fd);
	}

	/* 2. eager streaming: 16 slots filled back to back, tails in order */
	{
		uint8_t msg[512], got[512];
		uint16_t len;
		int bad = 0;

		if (rank == 1) {
			for (i = 0; i < EAGER_SLOTS; i++) {
				fill(msg, 512, 1000u + (uint32_t)i);
				if (eager_send(rport, h, send_reg, sbuf, peer.ring_nla, (unsigned int)i,
					       msg, 512, (uint16_t)i))
					bad = 1;
			}
			tap(!bad, "eager_stream_16_slots");
		} else {
			for (i = 0; i < EAGER_SLOTS; i++) {
				fill(msg, 512, 1000u + (uint32_t)i);
				if (eager_recv(ring, (unsigned int)i, got, &len, 20.0) || len != 512 ||
				    memcmp(got, msg, 512))
					bad = 1;
			}
			tap(!bad, "eager_stream_16_slots");
		}
		sync_tcp(fd);
	}

	/* 3. VELO ping-pong (extoll_pp_velo / pscom4velo): <= 120-byte chunks */
	{
		uint8_t msg[VELO_MTU], got[VELO_MTU];
		uint32_t len = 0, src = 0;
		int bad = 0;

		for (i = 0; i < PP_ITERS && !bad; i++) {
			uint32_t sz = (uint32_t)(i % VELO_MTU) + 1;

			fill(msg, sz, 7000u + (uint32_t)i);
			if (rank == 0) {
				if (velo2_send(&vcon, msg, sz, 0x00, 0) != VELO2_RET_SUCCESS ||
				    velo_recv_tmo(&vport, got, &len, &src, 20.0) != VELO2_RET_SUCCESS ||
				    len != sz || src != expect_src || memcmp(got, msg, sz))
					bad = 1;
			} else {
				if (velo2_recv(&vport, got, VELO_MTU, &len, &src, NULL, 0) !=
					    VELO2_RET_SUCCESS ||
				    len != sz || src != expect_src || memcmp(got, msg, sz) ||
				    velo2_send(&vcon, got, len, 0x00, 0) != VELO2_RET_SUCCESS)
					bad = 1;
			}
		}
		tap(!bad, "velo_pingpong_srcid_exact_length");
		sync_tcp(fd);
	}

	/* 4. VELO byte stream: 64 KiB in <= 120-byte messages, in order */
	{
		uint8_t *stream = malloc(65536), *rx = malloc(65536);
		uint32_t off = 0, len, src;
		int bad = 0;

		fill(stream, 65536, 4242);
		if (rank == 1) {
			while (off < 65536) {
				uint32_t n = 65536 - off < VELO_MTU ? 65536 - off : VELO_MTU;

				if (velo2_send(&vcon, stream + off, n, 0, 0) != VELO2_RET_SUCCESS) {
					bad = 1;
					break;
				}
				off += n;
			}
			tap(!bad, "velo_byte_stream_64k");
		} else {
			while (off < 65536) {
				if (velo_recv_tmo(&vport, rx + off, &len, &src, 20.0) != VELO2_RET_SUCCESS ||
				    src != expect_src) {
					bad = 1;
					break;
				}
				off += len;
			}
			tap(!bad && off == 65536 && !memcmp(rx, stream, 65536), "velo_byte_stream_64k");
		}
		free(stream);
		free(rx);
		sync_tcp(fd);
	}

	/* 5. rendezvous (pscom4velo): rank 0 owns the data and only tells the
	 * NLA over VELO; rank 1 registers its buffer by value and pulls it
	 * with rma2_post_get_bt_direct in chunks, completer notifications only,
	 * recognising completion by word0 + (word1 & 0x7fffff) + 1 == end. */
	{
		uint8_t *data = big + 13;	/* unaligned buffer */
		uint64_t info[2];
		uint32_t len, src;
		int bad = 0;

		if (rank == 0)
			fill(data, RNDV_SIZE, 99);
		else
			memset(data, 0, RNDV_SIZE);
		rc = rma2_register_nomalloc(rport, data, RNDV_SIZE, &rbuf_reg);
		if (rc != RMA2_SUCCESS || rbuf_reg.nla == 0 ||
		    (uint8_t *)rbuf_reg.start > data ||
		    (uint8_t *)rbuf_reg.start + rbuf_reg.size < data + RNDV_SIZE)
			bad = 1;
		if (rank == 0) {
			info[0] = rbuf_reg.nla + (uint64_t)(data - (uint8_t *)rbuf_reg.start);
			info[1] = RNDV_SIZE;
			if (velo2_send(&vcon, info, sizeof(info), 0, 0) != VELO2_RET_SUCCESS ||
			    velo_recv_tmo(&vport, info, &len, &src, 60.0) != VELO2_RET_SUCCESS ||
			    len != 8 || info[0] != 0xD0DEULL)
				bad = 1;
			tap(!bad, "rendezvous_get_target_passive");
		} else {
			uint64_t local = rbuf_reg.nla + (uint64_t)(data - (uint8_t *)rbuf_reg.start);
			uint64_t remote, posted = 0, end;
			double tmo = now_s() + 120.0;

			if (velo_recv_tmo(&vport, info, &len, &src, 60.0) != VELO2_RET_SUCCESS ||
			    len != 16)
				bad = 1;
			remote = info[0];
			end = local + RNDV_SIZE;
			while (!bad && posted < RNDV_SIZE) {
				uint32_t chunk = RNDV_SIZE - posted < RNDV_CHUNK ?
						 (uint32_t)(RNDV_SIZE - posted) : RNDV_CHUNK;
				RMA2_Notification *n;

				if (rma2_post_get_bt_direct(rport, h, local + posted, chunk,
							    remote + posted,
							    RMA2_COMPLETER_NOTIFICATION,
							    RMA2_CMD_DEFAULT) != RMA2_SUCCESS) {
					bad = 1;
					break;
				}
				posted += chunk;
				for (;;) {
					rc = rma2_noti_probe(rport, &n);
					if (rc == RMA2_SUCCESS) {
						uint64_t nla = n->word0.value;
						uint64_t sz = (n->word1.value & 0x7fffff) + 1;
						int done = nla + sz == local + posted;

						rma2_noti_free(rport, n);
						if (done)
							break;
						continue;	/* unmatched: logged and freed */
					}
					if (now_s() > tmo) {
						bad = 1;
						break;
					}
					sched_yield();
				}
			}
			(void)end;
			{
				uint8_t *want = malloc(RNDV_SIZE);

				fill(want, RNDV_SIZE, 99);
				if (memcmp(want, data, RNDV_SIZE))
					bad = 1;
				free(want);
			}
			info[0] = 0xD0DEULL;
			if (velo2_send(&vcon, info, 8, 0, 0) != VELO2_RET_SUCCESS)
				bad = 1;
			if (bad)
				fprintf(stderr, "rank 1: rendezvous get failed\n");
			tap(!bad, "rendezvous_get_target_passive");
		}
		if (rma2_unregister_nofree(rport, &rbuf_reg) != RMA2_SUCCESS)
			bad = 1;
		sync_tcp(fd);
	}

	/* 6. notification put with class + payload (rma2test bootstrap) */
	{
		RMA2_Notification *n = NULL;
		int bad = 0;

		if (rank == 1) {
			if (rma2_post_notification(rport, h, 0xAB, 0x1122334455667788ULL,
						   RMA2_COMPLETER_NOTIFICATION, RMA2_CMD_DEFAULT))
				bad = 1;
			tap(!bad, "notification_put_class_payload_origin");
		} else {
			if (rma2_noti_get_block(rport, &n) != RMA2_SUCCESS ||
			    rma2_noti_get_cmd(n) != RMA2_NOTIFICATION_PUT ||
			    rma2_noti_get_notification_type(n) != RMA2_COMPLETER_NOTIFICATION ||
			    rma2_noti_get_notiput_class(n) != 0xAB ||
			    rma2_noti_get_notiput_payload(n) != 0x1122334455667788ULL ||
			    rma2_noti_get_remote_nodeid(n) != peer.node ||
			    rma2_noti_get_remote_vpid(n) != peer.vpid)
				bad = 1;
			if (n)
				rma2_noti_free(rport, n);
			tap(!bad, "notification_put_class_payload_origin");
		}
		sync_tcp(fd);
	}

	/* 7. immediate put (rma2_pong style: poll target memory, no notification) */
	{
		int bad = 0;
		volatile uint64_t *target = (volatile uint64_t *)(ring + 64);

		*target = 0;
		sync_tcp(fd);
		if (rank == 1) {
			if (rma2_post_immediate_put(rport, h, 8, 0xDEADBEEFCAFEF00DULL,
						    peer.ring_nla + 64, RMA2_NO_NOTIFICATION,
						    RMA2_CMD_DEFAULT))
				bad = 1;
			tap(!bad, "immediate_put_polled");
		} else {
			double end = now_s() + 20.0;

			while (*target == 0 && now_s() < end)
				sched_yield();
			bad = *target != 0xDEADBEEFCAFEF00DULL;
			tap(!bad, "immediate_put_polled");
		}
		sync_tcp(fd);
	}

	/* 8. cleanup (pscom: disconnect, unregister, close) */
	ok = velo2_disconnect(&vport, &vcon) == VELO2_RET_SUCCESS &&
	     rma2_disconnect(rport, h) == RMA2_SUCCESS &&
	     rma2_unregister(rport, ring_reg) == RMA2_SUCCESS &&
	     rma2_unregister(rport, send_reg) == RMA2_SUCCESS &&
	     velo2_close(&vport) == VELO2_RET_SUCCESS && rma2_close(rport) == RMA2_SUCCESS;
	sync_tcp(fd);
	tap(ok, "cleanup");
	close(fd);
	return g_fail ? 1 : 0;
}

int main(void)
{
	const char *r = getenv("EXA_RANK"), *nn = getenv("EXA_NNODES"), *peers = getenv("EXA_PEERS");
	int rank = r ? atoi(r) : 0, nnodes = nn ? atoi(nn) : 1;
	unsigned int port = PORT_BASE;
	char ip[64] = "127.0.0.1";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nnodes >= 2) {
		if (rank > 1) {
			printf("1..0 # SKIP only ranks 0 and 1 take part\n");
			return 0;
		}
		if (peers) {	/* rank 1 connects to rank 0's address */
			const char *comma = strchr(peers, ',');
			size_t l = comma ? (size_t)(comma - peers) : strlen(peers);

			if (l < sizeof(ip)) {
				memcpy(ip, peers, l);
				ip[l] = 0;
			}
		}
		return run_rank(rank, ip, port);
	} else {
		/* one node: a forked pair over loopback */
		pid_t pid;
		int st = 0, rc;

		port += (unsigned int)(getpid() % 200);
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			alarm(300);
			fclose(stdout);	/* rank 1 prints nothing */
			_exit(run_rank(1, ip, port));
		}
		alarm(300);
		rc = run_rank(0, ip, port);
		if (rc == 4) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return 0;
		}
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			printf("# rank 1 exited with status 0x%x\n", st);
			return 1;
		}
		return rc;
	}
}
