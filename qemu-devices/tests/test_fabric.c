// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host unit tests of the fabric transport (qemu-devices/common/fabric.c).
 * Several endpoints live in this one process, in a temporary directory.
 * Output is TAP.
 */
#include "fabric.h"
#include "fabric-torus.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int test_no;
static int failures;
static char topdir[64];
static char tmpdir[96];	/* per test case, so a failed case cannot leak into the next */

static void tap(bool ok, const char *name)
{
	printf("%sok %d %s\n", ok ? "" : "not ", ++test_no, name);
	if (!ok)
		failures++;
	fflush(stdout);
}

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		diag("%s:%d: check failed: %s", __FILE__, __LINE__, #cond); \
		return false;						\
	}								\
} while (0)

/* ------------------------------------------------------------------ */

struct watch_log {
	int on, off;
	int fds[8];
	int nfds;
};

static void watch_cb(void *opaque, int fd, bool want)
{
	struct watch_log *w = opaque;

	if (want) {
		w->on++;
		if (w->nfds < 8)
			w->fds[w->nfds++] = fd;
	} else {
		w->off++;
		for (int i = 0; i < w->nfds; i++)
			if (w->fds[i] == fd)
				w->fds[i] = w->fds[--w->nfds];
	}
}

static struct fabric *open_cfg(const struct fabric_config *cfg)
{
	struct fabric *f = NULL;
	char err[256];
	int r = fabric_open(&f, cfg, err, sizeof(err));

	if (r < 0)
		diag("fabric_open(node %u%s): %d %s", cfg->node_id,
		     cfg->pkt_ring ? ", pkt_ring" : "", r, err);
	return f;
}

static struct fabric *open_node(uint32_t node, uint32_t nodes,
				uint32_t drop, uint32_t corrupt, uint64_t seed,
				uint32_t max_queue, struct watch_log *w)
{
	struct fabric_config cfg = {
		.dir = tmpdir, .node_id = node, .num_nodes = nodes,
		.drop_ppm = drop, .corrupt_ppm = corrupt, .seed = seed,
		.max_queue = max_queue,
		.watch = w ? watch_cb : NULL, .watch_opaque = w,
	};

	return open_cfg(&cfg);
}

struct rx_log {
	uint32_t count;
	uint32_t next_seq;	/* expected sequence (order check) */
	uint32_t bad;		/* content or order errors */
	uint32_t src;
	uint8_t type;
};

/* Payload: u32 sequence, then bytes derived from it. */
static size_t make_payload(uint8_t *buf, uint32_t seq, size_t len)
{
	memcpy(buf, &seq, 4);
	for (size_t i = 4; i < len; i++)
		buf[i] = (uint8_t)(seq * 31 + i);
	return len;
}

static void rx_cb(void *opaque, uint32_t src, uint8_t type,
		  const void *payload, size_t len)
{
	struct rx_log *l = opaque;
	const uint8_t *p = payload;
	uint32_t seq;

	l->count++;
	l->src = src;
	l->type = type;
	if (len < 4) {
		l->bad++;
		return;
	}
	memcpy(&seq, p, 4);
	if (seq != l->next_seq)
		l->bad++;
	l->next_seq = seq + 1;
	for (size_t i = 4; i < len; i++)
		if (p[i] != (uint8_t)(seq * 31 + i)) {
			l->bad++;
			break;
		}
}

static int drain(struct fabric *f, struct rx_log *l)
{
	int total = 0, n;

	while ((n = fabric_poll_rx(f, 64, rx_cb, l)) > 0)
		total += n;
	return total;
}

/* Wait (bounded) until the rx socket has data. */
static void wait_rx(struct fabric *f, int ms)
{
	struct pollfd p = { .fd = fabric_rx_fd(f), .events = POLLIN };

	poll(&p, 1, ms);
}

/* ------------------------------------------------------------------ */

static bool t_crc32(void)
{
	CHECK(fabric_crc32(0, "123456789", 9) == 0xcbf43926u);
	/* chaining */
	CHECK(fabric_crc32(fabric_crc32(0, "1234", 4), "56789", 5) == 0xcbf43926u);
	return true;
}

static bool t_open_args(void)
{
	struct fabric *a, *dup = NULL;
	struct fabric_config cfg = { .dir = tmpdir, .node_id = 3, .num_nodes = 3 };
	char err[256];

	CHECK(fabric_open(&dup, &cfg, err, sizeof(err)) == -EINVAL);
	cfg.node_id = 0;
	cfg.num_nodes = 0;
	CHECK(fabric_open(&dup, &cfg, err, sizeof(err)) == -EINVAL);
	cfg.num_nodes = 2;
	cfg.drop_ppm = FABRIC_PPM + 1;
	CHECK(fabric_open(&dup, &cfg, err, sizeof(err)) == -EINVAL);
	cfg.drop_ppm = 0;
	cfg.dir = NULL;
	CHECK(fabric_open(&dup, &cfg, err, sizeof(err)) == -EINVAL);

	a = open_node(0, 2, 0, 0, 0, 0, NULL);
	CHECK(a);
	/* A second live node with the same id is refused. */
	cfg.dir = tmpdir;
	CHECK(fabric_open(&dup, &cfg, err, sizeof(err)) == -EADDRINUSE);
	CHECK(dup == NULL);
	CHECK(fabric_send(a, 2, 1, "x", 1) == -EINVAL);
	CHECK(fabric_send(a, 1, 1, NULL, 5) == -EINVAL);
	{
		static uint8_t big[FABRIC_MAX_PAYLOAD + 1];

		CHECK(fabric_send(a, 1, 1, big, sizeof(big)) == -EINVAL);
	}
	fabric_close(a);
	/* After close the node can be opened again. */
	a = open_node(0, 2, 0, 0, 0, 0, NULL);
	CHECK(a);
	fabric_close(a);
	return true;
}

static bool t_delivery(void)
{
	struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct rx_log l = { 0 };
	struct fabric_stats sa, sb;
	uint8_t buf[FABRIC_MAX_PAYLOAD];
	const uint32_t n = 200;

	CHECK(a && b);
	for (uint32_t i = 0; i < n; i++) {
		size_t len = make_payload(buf, i, 4 + (i * 37) % (FABRIC_MAX_PAYLOAD - 4));

		CHECK(fabric_send(a, 1, 7, buf, len) >= 0);
		if (i % 8 == 7) {	/* keep the receive queue short */
			wait_rx(b, 100);
			drain(b, &l);
			fabric_flush(a);
		}
	}
	for (int k = 0; k < 100 && l.count < n; k++) {
		fabric_flush(a);
		wait_rx(b, 10);
		drain(b, &l);
	}
	fabric_get_stats(a, &sa);
	fabric_get_stats(b, &sb);
	diag("delivered %u/%u, bad %u, queued %llu", l.count, n, l.bad,
	     (unsigned long long)sa.tx_queued);
	CHECK(l.count == n);
	CHECK(l.bad == 0);
	CHECK(l.src == 0 && l.type == 7);
	CHECK(sa.tx_packets == n);
	CHECK(sb.rx_packets == n);
	CHECK(sb.rx_bad_crc == 0 && sb.rx_bad_length == 0);
	/* Zero-length packets are legal. */
	CHECK(fabric_send(b, 0, 9, NULL, 0) == FABRIC_SENT);
	wait_rx(a, 100);
	{
		struct rx_log z = { 0 };

		CHECK(fabric_poll_rx(a, 8, rx_cb, &z) == 1);
		CHECK(z.count == 1 && z.src == 1 && z.type == 9);
	}
	fabric_close(a);
	fabric_close(b);
	return true;
}

/* Raw datagrams with broken headers are dropped and counted. */
static bool t_crc_detection(void)
{
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fabric_hdr h;
	struct fabric_stats st;
	struct rx_log l = { 0 };
	uint8_t pkt[FABRIC_HDR_SIZE + 16];
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	CHECK(b && fd >= 0);
	fabric_sock_path(sa.sun_path, sizeof(sa.sun_path), tmpdir, 1);

#define SEND_RAW(len) \
	CHECK(sendto(fd, pkt, (len), 0, (struct sockaddr *)&sa, sizeof(sa)) == (ssize_t)(len))

	/* build a valid packet */
	h = (struct fabric_hdr){ .magic = FABRIC_MAGIC, .version = FABRIC_VERSION,
				 .type = 1, .length = 16, .src = 0, .dst = 1 };
	make_payload(pkt + FABRIC_HDR_SIZE, 0, 16);
#define SEAL() do { h.crc = 0; fabric_hdr_encode(pkt, &h); \
		h.crc = fabric_crc32(0, pkt, sizeof(pkt)); fabric_hdr_encode(pkt, &h); } while (0)

	SEAL();
	pkt[FABRIC_HDR_SIZE + 5] ^= 0x10;	/* payload bit flip */
	SEND_RAW(sizeof(pkt));
	pkt[FABRIC_HDR_SIZE + 5] ^= 0x10;
	SEAL();
	pkt[16] ^= 1;				/* crc field itself */
	SEND_RAW(sizeof(pkt));
	h.magic = 0xdeadbeef; SEAL(); SEND_RAW(sizeof(pkt));
	h.magic = FABRIC_MAGIC;
	h.version = 9; SEAL(); SEND_RAW(sizeof(pkt));
	h.version = FABRIC_VERSION;
	h.length = 15; SEAL(); SEND_RAW(sizeof(pkt));	/* length mismatch */
	h.length = 16;
	SEND_RAW(7);					/* runt */
	h.dst = 0; SEAL(); SEND_RAW(sizeof(pkt));	/* not for us */
	h.dst = 1;
	h.src = 5; SEAL(); SEND_RAW(sizeof(pkt));	/* no such source */
	h.src = 0;
	SEAL(); SEND_RAW(sizeof(pkt));			/* finally a good one */

	wait_rx(b, 100);
	CHECK(drain(b, &l) == 9);
	fabric_get_stats(b, &st);
	CHECK(st.rx_bad_crc == 2);
	CHECK(st.rx_bad_magic == 1);
	CHECK(st.rx_bad_version == 1);
	CHECK(st.rx_bad_length == 2);
	CHECK(st.rx_bad_addr == 2);
	CHECK(st.rx_packets == 1);
	CHECK(l.count == 1 && l.bad == 0);
	close(fd);
	fabric_close(b);
	return true;
}

struct fi_result {
	uint64_t drops, corrupts, delivered, detected;
};

static bool run_faults(uint64_t seed, struct fi_result *res)
{
	struct fabric *a = open_node(0, 2, 100000, 50000, seed, 0, NULL);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct fabric_stats sa, sb;
	uint8_t buf[64];
	const uint32_t n = 4000;
	struct rx_log l = { 0 };

	CHECK(a && b);
	for (uint32_t i = 0; i < n; i++) {
		CHECK(fabric_send(a, 1, 1, buf, make_payload(buf, i, sizeof(buf))) >= 0);
		if (i % 8 == 7) {
			drain(b, &l);
			fabric_flush(a);
		}
	}
	for (int k = 0; k < 100 && fabric_queued(a); k++) {
		fabric_flush(a);
		wait_rx(b, 10);
		drain(b, &l);
	}
	wait_rx(b, 10);
	drain(b, &l);
	fabric_get_stats(a, &sa);
	fabric_get_stats(b, &sb);
	res->drops = sa.tx_inject_drop;
	res->corrupts = sa.tx_inject_corrupt;
	res->delivered = sb.rx_packets;
	res->detected = sb.rx_bad_crc + sb.rx_bad_magic + sb.rx_bad_version +
			sb.rx_bad_length + sb.rx_bad_addr;
	diag("seed %llu: %llu dropped, %llu corrupted, %llu detected, %llu delivered",
	     (unsigned long long)seed, (unsigned long long)res->drops,
	     (unsigned long long)res->corrupts, (unsigned long long)res->detected,
	     (unsigned long long)res->delivered);
	fabric_close(a);
	fabric_close(b);
	/* roughly 10% dropped, 5% of the rest corrupted */
	CHECK(res->drops > n / 20 && res->drops < n / 5);
	CHECK(res->corrupts > n / 50 && res->corrupts < n / 10);
	/* every corruption is caught, everything else arrives */
	CHECK(res->detected == res->corrupts);
	CHECK(res->delivered == n - res->drops - res->corrupts);
	return true;
}

static bool t_fault_injection(void)
{
	struct fi_result r1, r2, r3;

	CHECK(run_faults(42, &r1));
	CHECK(run_faults(42, &r2));
	CHECK(run_faults(7, &r3));
	/* same seed, same faults */
	CHECK(r1.drops == r2.drops && r1.corrupts == r2.corrupts);
	CHECK(r1.drops != r3.drops || r1.corrupts != r3.corrupts);
	return true;
}

/* Fill the receiver without draining: the sender queues, nothing is lost. */
static bool t_backpressure(void)
{
	struct watch_log w = { 0 };
	struct fabric *a = open_node(0, 2, 0, 0, 0, 0, &w);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct rx_log l = { 0 };
	struct fabric_stats sa;
	uint8_t buf[256];
	const uint32_t n = 3000;
	uint32_t queued_ret = 0;

	CHECK(a && b);
	for (uint32_t i = 0; i < n; i++) {
		int r = fabric_send(a, 1, 2, buf, make_payload(buf, i, sizeof(buf)));

		CHECK(r == FABRIC_SENT || r == FABRIC_QUEUED);
		queued_ret += r == FABRIC_QUEUED;
	}
	diag("%u of %u sends queued, %zu still queued", queued_ret, n, fabric_queued(a));
	CHECK(queued_ret > 0);
	CHECK(fabric_queued(a) > 0);
	CHECK(w.on >= 1 && w.nfds == 1);
	{
		/* The watched socket must not be writable while b is full. */
		struct pollfd p = { .fd = w.fds[0], .events = POLLOUT };

		CHECK(poll(&p, 1, 0) == 0);
	}
	/* Now drain, flushing when the watched socket says so. */
	for (int k = 0; k < 100000 && l.count < n; k++) {
		drain(b, &l);
		if (w.nfds) {
			struct pollfd p = { .fd = w.fds[0], .events = POLLOUT };

			if (poll(&p, 1, 10) > 0)
				fabric_flush(a);
		}
	}
	fabric_get_stats(a, &sa);
	diag("received %u, bad/out of order %u", l.count, l.bad);
	CHECK(l.count == n);
	CHECK(l.bad == 0);
	CHECK(fabric_queued(a) == 0);
	CHECK(w.nfds == 0 && w.off == w.on);
	CHECK(sa.tx_packets == n);
	CHECK(sa.tx_queue_full == 0);
	fabric_close(a);
	fabric_close(b);
	return true;
}

/* A bounded queue: past max_queue the packet is reported lost. */
static bool t_queue_limit(void)
{
	struct fabric *a = open_node(0, 2, 0, 0, 0, 16, NULL);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct fabric_stats sa;
	uint8_t buf[64] = { 0 };
	int r = 0, enobufs = 0;

	CHECK(a && b);
	for (int i = 0; i < 2000 && enobufs < 5; i++) {
		r = fabric_send(a, 1, 2, buf, sizeof(buf));
		if (r == -ENOBUFS)
			enobufs++;
		else
			CHECK(r >= 0);
	}
	fabric_get_stats(a, &sa);
	CHECK(enobufs == 5);
	CHECK(fabric_queued(a) == 16);
	CHECK(sa.tx_queue_full == 5);
	/* Closing with a full queue must not leak or crash (valgrind-clean). */
	fabric_close(a);
	fabric_close(b);
	return true;
}

/* Missing peer = packet lost; a peer that comes (back) is reached. */
static bool t_missing_peer(void)
{
	struct fabric *a = open_node(0, 3, 0, 0, 0, 0, NULL);
	struct fabric *c;
	struct fabric_stats sa;
	struct rx_log l = { 0 };
	uint8_t buf[32];

	CHECK(a);
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)) == -EHOSTUNREACH);
	c = open_node(2, 3, 0, 0, 0, 0, NULL);
	CHECK(c);
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
	wait_rx(c, 100);
	CHECK(drain(c, &l) == 1 && l.bad == 0);
	/* node goes down after we connected to it */
	fabric_close(c);
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 1, 32)) == -EHOSTUNREACH);
	/* and comes back: we reconnect to the new socket */
	c = open_node(2, 3, 0, 0, 0, 0, NULL);
	CHECK(c);
	l = (struct rx_log){ .next_seq = 2 };
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 2, 32)) == FABRIC_SENT);
	wait_rx(c, 100);
	CHECK(drain(c, &l) == 1 && l.bad == 0);
	fabric_get_stats(a, &sa);
	CHECK(sa.tx_no_peer == 2);
	CHECK(sa.tx_packets == 2);
	fabric_close(c);
	fabric_close(a);
	return true;
}

/* Three nodes, everybody to everybody (including to itself). */
static void rx_multi(void *opaque, uint32_t src, uint8_t type,
		     const void *payload, size_t len)
{
	struct rx_log *per_src = opaque;

	if (src > 2 || type != src) {
		per_src[0].bad++;
		return;
	}
	rx_cb(&per_src[src], src, type, payload, len);
}

static bool t_three_nodes(void)
{
	struct fabric *f[3];
	struct rx_log l[3][3];
	uint8_t buf[64];
	const uint32_t n = 50;

	memset(l, 0, sizeof(l));
	for (int i = 0; i < 3; i++) {
		f[i] = open_node(i, 3, 0, 0, 0, 0, NULL);
		CHECK(f[i]);
	}
	for (uint32_t k = 0; k < n; k++) {
		for (int s = 0; s < 3; s++)
			for (int d = 0; d < 3; d++)
				CHECK(fabric_send(f[s], d, s, buf,
					make_payload(buf, k, 8 + k % 50)) >= 0);
		for (int d = 0; d < 3; d++)
			fabric_poll_rx(f[d], 64, rx_multi, l[d]);
	}
	for (int round = 0; round < 200; round++) {
		bool done = true;

		for (int d = 0; d < 3; d++) {
			for (int s = 0; s < 3; s++)
				fabric_flush(f[s]);
			wait_rx(f[d], 1);
			fabric_poll_rx(f[d], 64, rx_multi, l[d]);
		}
		for (int d = 0; d < 3; d++)
			for (int s = 0; s < 3; s++)
				if (l[d][s].count < n)
					done = false;
		if (done)
			break;
	}
	for (int d = 0; d < 3; d++)
		for (int s = 0; s < 3; s++) {
			CHECK(l[d][s].count == n);
			CHECK(l[d][s].bad == 0);
		}
	for (int i = 0; i < 3; i++)
		fabric_close(f[i]);
	return true;
}


/* ------------------------------------------------------------------ */
/* Bulk path */

struct bulk_log {
	uint32_t count, bad, corrupt, next_seq, src;
	uint64_t bytes;
	uint8_t type;
	bool check_order;
};

/* hdr = u32 seq; data bytes derived from seq */
static void bulk_cb(void *opaque, uint32_t src, uint8_t type, const void *hdr,
		    size_t hlen, const void *data, size_t dlen, bool ok)
{
	struct bulk_log *l = opaque;
	const uint8_t *d = data;
	uint32_t seq;

	l->count++;
	l->src = src;
	l->type = type;
	l->bytes += dlen;
	if (!ok) {
		l->corrupt++;
		return;
	}
	if (hlen != 4) {
		l->bad++;
		return;
	}
	memcpy(&seq, hdr, 4);
	if (l->check_order && seq != l->next_seq)
		l->bad++;
	l->next_seq = seq + 1;
	for (size_t i = 0; i < dlen; i += 61)
		if (d[i] != (uint8_t)(seq * 7 + i)) {
			l->bad++;
			break;
		}
}

static int bulk_put(struct fabric *f, uint32_t dst, uint32_t seq, size_t dlen)
{
	int err;
	uint8_t *p = fabric_bulk_reserve(f, dst, 4, dlen, &err);

	if (!p)
		return err;
	memcpy(p, &seq, 4);
	for (size_t i = 0; i < dlen; i++)
		p[4 + i] = (uint8_t)(seq * 7 + i);
	return fabric_bulk_commit(f, 9);
}

/* Take doorbells, then records, until nothing moves. */
static void bulk_drain_all(struct fabric *f, struct bulk_log *l)
{
	for (int idle = 0; idle < 3;) {
		int n;

		wait_rx(f, idle ? 5 : 0);
		n = fabric_poll_rx(f, 64, NULL, NULL);
		n += fabric_poll_bulk(f, 64, bulk_cb, l);
		idle = n ? 0 : idle + 1;
	}
}

/* ------------------------------------------------------------------ */
/* Packet rings (cfg.pkt_ring) */

static struct fabric *open_ring_node(uint32_t node, uint32_t nodes,
				     uint32_t drop, uint32_t corrupt, uint64_t seed)
{
	struct fabric_config cfg = {
		.dir = tmpdir, .node_id = node, .num_nodes = nodes,
		.drop_ppm = drop, .corrupt_ppm = corrupt, .seed = seed,
		.pkt_ring = true,
	};

	return open_cfg(&cfg);
}

/* Datagrams (doorbells) and ring records until nothing moves. */
static void ring_drain_all(struct fabric *f, struct rx_log *l)
{
	for (int idle = 0; idle < 3;) {
		wait_rx(f, idle ? 5 : 0);
		idle = fabric_poll_rx(f, 64, rx_cb, l) ? 0 : idle + 1;
	}
}

/*
 * The first packet rings the doorbell that maps the ring; while the
 * receiver polls (disarmed) packets need no datagram; once it arms the
 * ring (about to sleep) the next packet rings again.
 */
static bool t_pkt_ring(void)
{
	struct fabric *a = open_ring_node(0, 2, 0, 0, 0);
	struct fabric *b = open_ring_node(1, 2, 0, 0, 0);
	struct fabric_stats sa, sb;
	struct rx_log l = { 0 };
	uint8_t buf[FABRIC_MAX_PAYLOAD];
	const uint32_t n = 3000;
	struct timespec t0, t1;
	uint64_t db, ms;

	CHECK(a && b);
	CHECK(fabric_send(a, 1, 7, buf, make_payload(buf, 0, 16)) == FABRIC_SENT);
	ring_drain_all(b, &l);
	CHECK(l.count == 1 && l.bad == 0 && l.src == 0 && l.type == 7);
	fabric_get_stats(a, &sa);
	CHECK(sa.tx_ring_doorbells == 1);
	db = sa.tx_ring_doorbells;

	/* the receiver polls: no doorbells, no system call on either side */
	CHECK(!fabric_pkt_pending(b, false));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t i = 1; i <= n; i++) {
		size_t len = make_payload(buf, i, 4 + (i * 37) % (FABRIC_MAX_PAYLOAD - 4));

		CHECK(fabric_send(a, 1, 7, buf, len) == FABRIC_SENT);
		if (i % 16 == 0)
			fabric_poll_pkts(b, 64, rx_cb, &l);
	}
	while (fabric_poll_pkts(b, 64, rx_cb, &l) > 0)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	fabric_get_stats(a, &sa);
	diag("%u packets in %llu ms, doorbells while polling: %llu", l.count,
	     (unsigned long long)ms, (unsigned long long)(sa.tx_ring_doorbells - db));
	CHECK(l.count == n + 1 && l.bad == 0);
	/* only the periodic ones (every FABRIC_PKT_DB_NS) */
	CHECK(sa.tx_ring_doorbells - db <= 1 + ms * 1000000 / FABRIC_PKT_DB_NS);
	db = sa.tx_ring_doorbells;

	/* it arms before sleeping: the next packet rings */
	CHECK(!fabric_pkt_pending(b, true));
	CHECK(fabric_send(a, 1, 7, buf, make_payload(buf, n + 1, 64)) == FABRIC_SENT);
	fabric_get_stats(a, &sa);
	CHECK(sa.tx_ring_doorbells == db + 1);
	CHECK(fabric_pkt_pending(b, true));
	wait_rx(b, 100);
	ring_drain_all(b, &l);
	CHECK(l.count == n + 2 && l.bad == 0);

	fabric_get_stats(a, &sa);
	fabric_get_stats(b, &sb);
	/* tx_packets counts the doorbell datagrams too */
	CHECK(sa.tx_ring_packets == n + 2);
	CHECK(sa.tx_packets == n + 2 + sa.tx_ring_doorbells);
	CHECK(sb.rx_packets == n + 2 && sb.rx_ring_packets == n + 2);
	CHECK(sb.rx_ring_maps == 1 && sb.rx_bad_crc == 0);
	/* zero-length packets are legal */
	CHECK(fabric_send(b, 0, 9, NULL, 0) == FABRIC_SENT);
	{
		struct rx_log z = { 0 };

		wait_rx(a, 100);
		CHECK(fabric_poll_rx(a, 8, rx_cb, &z) == 2);	/* doorbell + packet */
		CHECK(z.count == 1 && z.src == 1 && z.type == 9);
	}
	fabric_close(a);
	fabric_close(b);
	return true;
}

/* Drop and corruption per packet as on datagrams: every fault is counted. */
static bool t_pkt_ring_faults(void)
{
	struct fabric *a = open_ring_node(0, 2, 50000, 50000, 11);
	struct fabric *b = open_ring_node(1, 2, 0, 0, 0);
	struct fabric_stats sa, sb;
	struct rx_log l = { 0 };
	uint8_t buf[256];
	const uint32_t n = 4000;

	CHECK(a && b);
	for (uint32_t i = 0; i < n; i++) {
		CHECK(fabric_send(a, 1, 3, buf, make_payload(buf, i, 8 + i % 200)) ==
		      FABRIC_SENT);
		if (i % 64 == 63)
			ring_drain_all(b, &l);
	}
	ring_drain_all(b, &l);
	fabric_get_stats(a, &sa);
	fabric_get_stats(b, &sb);
	diag("dropped %llu corrupted %llu; delivered %u, bad crc %llu",
	     (unsigned long long)sa.tx_inject_drop,
	     (unsigned long long)sa.tx_inject_corrupt, l.count,
	     (unsigned long long)sb.rx_bad_crc);
	CHECK(sa.tx_inject_drop > 0 && sa.tx_inject_corrupt > 0);
	CHECK(sb.rx_bad_crc == sa.tx_inject_corrupt);
	CHECK(l.count == n - sa.tx_inject_drop - sa.tx_inject_corrupt);
	CHECK(sb.rx_packets == l.count);
	fabric_close(a);
	fabric_close(b);
	return true;
}

/*
 * A node that is down loses the packet (-EHOSTUNREACH); a full ring (the
 * receiver does not drain) loses it too (-ENOBUFS); a receiver that
 * restarts while the ring is disarmed maps it at the periodic doorbell.
 */
static bool t_pkt_ring_peers(void)
{
	struct fabric *a = open_ring_node(0, 3, 0, 0, 0);
	struct fabric *c;
	struct fabric_stats sa;
	struct rx_log l = { 0 };
	uint8_t buf[64];
	uint32_t sent = 0;
	int r;

	CHECK(a);
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)) == -EHOSTUNREACH);
	c = open_ring_node(2, 3, 0, 0, 0);
	CHECK(c);
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
	ring_drain_all(c, &l);
	CHECK(l.count == 1 && l.bad == 0);
	CHECK(!fabric_pkt_pending(c, false));	/* polling: no doorbells */

	/* restart: the new receiver has not mapped the ring */
	fabric_close(c);
	c = open_ring_node(2, 3, 0, 0, 0);
	CHECK(c);
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 1, 32)) == FABRIC_SENT);
	usleep(FABRIC_PKT_DB_NS / 1000 + 2000);
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 2, 32)) == FABRIC_SENT);
	l = (struct rx_log){ .next_seq = 1 };
	ring_drain_all(c, &l);
	CHECK(l.count == 2 && l.bad == 0);

	/* nobody drains: the ring fills, then packets are lost */
	do {
		r = fabric_send(a, 2, 1, buf, make_payload(buf, 3 + sent, 64));
		sent += r == FABRIC_SENT;
	} while (r == FABRIC_SENT && sent < 1000000);
	fabric_get_stats(a, &sa);
	diag("ring full after %u packets", sent);
	CHECK(r == -ENOBUFS && sa.tx_queue_full == 1);
	CHECK(sent >= FABRIC_PKT_RING_SIZE / 256);
	l = (struct rx_log){ .next_seq = 3 };
	ring_drain_all(c, &l);
	CHECK(l.count == sent && l.bad == 0);
	CHECK(fabric_send(a, 2, 1, buf, make_payload(buf, 3 + sent, 64)) == FABRIC_SENT);
	fabric_get_stats(a, &sa);
	CHECK(sa.tx_no_peer == 1);
	fabric_close(c);
	fabric_close(a);
	return true;
}

static bool t_bulk_csum(void)
{
	uint8_t buf[1000];
	uint64_t c;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13);
	c = fabric_csum(buf, sizeof(buf));
	for (size_t bit = 0; bit < sizeof(buf) * 8; bit += 7) {
		buf[bit / 8] ^= 1u << (bit % 8);
		CHECK(fabric_csum(buf, sizeof(buf)) != c);
		buf[bit / 8] ^= 1u << (bit % 8);
	}
	CHECK(fabric_csum(buf, sizeof(buf)) == c);
	CHECK(fabric_csum(buf, 999) != c);
	return true;
}

static bool t_bulk_delivery(void)
{
	struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct bulk_log l = { .check_order = true };
	struct fabric_stats st;
	int err;
	bool ok = false;

	if (!a || !b)
		goto out;
	/* argument checks */
	if (fabric_bulk_reserve(a, 2, 4, 4, &err) || err != -EINVAL)
		goto out;
	if (fabric_bulk_reserve(a, 1, 4, FABRIC_BULK_MAX_DATA + 1, &err) || err != -EINVAL)
		goto out;
	if (fabric_bulk_send(a, 1, 0, "x", 1, NULL, 0) != -EINVAL ||
	    fabric_send(a, 1, FABRIC_TYPE_BULK, "x", 1) != -EINVAL)
		goto out;
	/* 200 records of assorted sizes, interleaved sends and drains */
	for (uint32_t i = 0; i < 200; i++) {
		if (bulk_put(a, 1, i, (i * 977) % 20000) != FABRIC_SENT)
			goto out;
		if (i % 50 == 49)
			bulk_drain_all(b, &l);
	}
	bulk_drain_all(b, &l);
	fabric_get_stats(a, &st);
	diag("bulk: %u records, %u bad, doorbells %llu", l.count, l.bad,
	     (unsigned long long)st.tx_bulk_doorbells);
	ok = l.count == 200 && l.bad == 0 && l.corrupt == 0 && l.src == 0 &&
	     l.type == 9 && st.tx_bulk_doorbells >= 1 && st.tx_bulk_doorbells < 50;
out:
	fabric_close(a);
	fabric_close(b);
	return ok;
}

static bool t_bulk_full(void)
{
	struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct bulk_log l = { .check_order = true };
	uint32_t sent = 0;
	int r, err;
	bool ok = false;

	if (!a || !b)
		goto out;
	/* Fill the ring without draining: -EAGAIN, nothing lost. */
	while ((r = bulk_put(a, 1, sent, 16384)) == FABRIC_SENT)
		sent++;
	if (r != -EAGAIN || sent < FABRIC_BULK_RING_SIZE / 16500 ||
	    sent > FABRIC_BULK_RING_SIZE / 16384)
		goto out;
	bulk_drain_all(b, &l);
	if (l.count != sent || l.bad)
		goto out;
	/* Room again; a second reservation while one is open is refused. */
	if (!fabric_bulk_reserve(a, 1, 4, 100, &err))
		goto out;
	if (fabric_bulk_reserve(a, 1, 4, 100, &err) || err != -EINVAL)
		goto out;
	fabric_bulk_cancel(a);
	for (uint32_t i = 0; i < 3 * sent; i++) {	/* wraps several times */
		if (bulk_put(a, 1, sent + i, 12345) != FABRIC_SENT)
			bulk_drain_all(b, &l), i--;
	}
	bulk_drain_all(b, &l);
	diag("ring holds %u x 16 KiB records; total %u received", sent, l.count);
	ok = l.count == 4 * sent && l.bad == 0;
out:
	fabric_close(a);
	fabric_close(b);
	return ok;
}

static bool t_bulk_faults(void)
{
	struct fabric *a = open_node(0, 2, 100000, 100000, 3, 0, NULL);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct bulk_log l = { 0 };
	struct fabric_stats sa, sb;
	bool ok = false;

	if (!a || !b)
		goto out;
	for (uint32_t i = 0; i < 2000; i++) {
		if (bulk_put(a, 1, i, 4000) != FABRIC_SENT)
			bulk_drain_all(b, &l), i--;
	}
	bulk_drain_all(b, &l);
	fabric_get_stats(a, &sa);
	fabric_get_stats(b, &sb);
	diag("dropped %llu corrupted %llu; rx ok %u bad-data %llu bad-hdr %llu",
	     (unsigned long long)sa.tx_bulk_inject_drop,
	     (unsigned long long)sa.tx_bulk_inject_corrupt,
	     l.count - l.corrupt, (unsigned long long)sb.rx_bulk_bad_data,
	     (unsigned long long)sb.rx_bulk_bad_hdr);
	/* Every corrupted record is caught: in the header or in the data. */
	ok = sa.tx_bulk_inject_drop > 100 && sa.tx_bulk_inject_drop < 300 &&
	     sa.tx_bulk_inject_corrupt > 100 &&
	     sb.rx_bulk_bad_data + sb.rx_bulk_bad_hdr == sa.tx_bulk_inject_corrupt &&
	     l.count - l.corrupt == 2000 - sa.tx_bulk_inject_drop -
				    sa.tx_bulk_inject_corrupt && l.bad == 0 &&
	     sb.rx_bulk_bad_data > 0;
out:
	fabric_close(a);
	fabric_close(b);
	return ok;
}

static bool t_bulk_restart(void)
{
	struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	struct bulk_log l = { 0 };
	struct fabric_stats st;
	bool ok = false;

	if (!a || !b)
		goto out;
	for (uint32_t i = 0; i < 10; i++)
		bulk_put(a, 1, i, 1000);
	bulk_drain_all(b, &l);
	/* producer restarts: new ring file, consumer remaps */
	fabric_close(a);
	a = open_node(0, 2, 0, 0, 0, 0, NULL);
	for (uint32_t i = 0; i < 10; i++)
		bulk_put(a, 1, i, 1000);
	bulk_drain_all(b, &l);
	/* consumer restarts while records wait: it maps the ring again */
	fabric_close(b);
	b = open_node(1, 2, 0, 0, 0, 0, NULL);
	usleep(FABRIC_BULK_DB_NS / 1000 + 1000);
	bulk_put(a, 1, 0, 1000);	/* rings again after 10 ms */
	bulk_drain_all(b, &l);
	fabric_get_stats(b, &st);
	diag("received %u, maps %llu", l.count, (unsigned long long)st.rx_bulk_maps);
	ok = l.count == 21 && l.bad == 0 && st.rx_bulk_maps == 1;
out:
	fabric_close(a);
	fabric_close(b);
	return ok;
}

/*
 * A renewed ring starts empty: records written before fabric_bulk_renew()
 * never arrive, neither at a consumer that starts later nor at one that
 * has the old ring mapped.
 */
static bool t_bulk_renew(void)
{
	struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
	struct fabric *b = NULL;
	struct bulk_log l = { .check_order = true, .next_seq = 100 };
	struct fabric_stats st;
	bool ok = false;

	if (!a)
		goto out;
	/* node 1 is not running: records 0..9 wait, then are abandoned */
	for (uint32_t i = 0; i < 10; i++)
		if (bulk_put(a, 1, i, 1000) != FABRIC_SENT)
			goto out;
	fabric_bulk_renew(a, 1);
	fabric_bulk_renew(a, 1);	/* no ring: nothing to do */
	fabric_bulk_renew(a, 7);	/* no such node */
	b = open_node(1, 2, 0, 0, 0, 0, NULL);
	if (!b)
		goto out;
	bulk_put(a, 1, 100, 1000);	/* a fresh ring rings at once */
	bulk_put(a, 1, 101, 1000);
	bulk_drain_all(b, &l);
	if (l.count != 2 || l.bad)
		goto out;
	/* a consumer with the old ring mapped takes the new one instead */
	for (uint32_t i = 0; i < 5; i++)
		bulk_put(a, 1, 200 + i, 1000);
	fabric_bulk_renew(a, 1);
	bulk_put(a, 1, 102, 1000);
	bulk_put(a, 1, 103, 1000);
	bulk_drain_all(b, &l);
	fabric_get_stats(b, &st);
	diag("renewed: received %u (bad %u), maps %llu", l.count, l.bad,
	     (unsigned long long)st.rx_bulk_maps);
	ok = l.count == 4 && l.bad == 0 && st.rx_bulk_maps == 2;
out:
	fabric_close(a);
	fabric_close(b);
	return ok;
}

static void bulk_null_cb(void *opaque, uint32_t src, uint8_t type, const void *hdr,
			 size_t hlen, const void *data, size_t dlen, bool ok)
{
	uint64_t *sum = opaque;

	(void)src; (void)type; (void)hdr; (void)hlen;
	if (ok && dlen)
		*sum += ((const uint8_t *)data)[dlen - 1];
}

/* Same-thread throughput of 16 KiB records (copy in + checksum + copy out). */
static bool t_bulk_throughput(void)
{
	struct fabric *a = open_node(0, 2, 0, 0, 0, 0, NULL);
	struct fabric *b = open_node(1, 2, 0, 0, 0, 0, NULL);
	static uint8_t src[16384], dst[16384];
	uint64_t sum = 0, bytes = 0;
	struct timespec t0, t1;
	double s;
	bool ok = false;

	if (!a || !b)
		goto out;
	memset(src, 0x5a, sizeof(src));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (bytes < (512u << 20)) {
		int err;
		uint8_t *p = fabric_bulk_reserve(a, 1, 64, sizeof(src), &err);

		if (!p) {
			fabric_poll_rx(b, 64, NULL, NULL);
			fabric_poll_bulk(b, 256, bulk_null_cb, &sum);
			continue;
		}
		memcpy(p + 64, src, sizeof(src));
		fabric_bulk_commit(a, 9);
		bytes += sizeof(src);
	}
	bulk_drain_all(b, &(struct bulk_log){ 0 });
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
	memcpy(dst, src, sizeof(dst));
	diag("bulk path, one thread: %.0f MB/s (16 KiB records)", bytes / s / 1e6);
	ok = sum > 0;
out:
	fabric_close(a);
	fabric_close(b);
	return ok;
}

/* ------------------------------------------------------------------ */
/* The torus (fabric-torus.h) */

static bool t_torus_shapes(void)
{
	uint32_t d[3];
	char err[160];
	static const struct { uint32_t n, x, y, z; } want[] = {
		{ 1, 1, 1, 1 }, { 2, 2, 1, 1 }, { 4, 2, 2, 1 }, { 6, 3, 2, 1 },
		{ 8, 2, 2, 2 }, { 12, 3, 2, 2 }, { 27, 3, 3, 3 }, { 7, 7, 1, 1 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		fabric_torus_default_shape(want[i].n, d);
		CHECK(d[0] == want[i].x && d[1] == want[i].y && d[2] == want[i].z);
	}
	CHECK(fabric_torus_parse("2x2x2", 8, d, err, sizeof(err)) == 0);
	CHECK(d[0] == 2 && d[1] == 2 && d[2] == 2);
	CHECK(fabric_torus_parse("4x1x2", 8, d, err, sizeof(err)) == 0);
	CHECK(fabric_torus_parse("3x3x3", 8, d, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "27 nodes"));
	CHECK(fabric_torus_parse("2x2", 4, d, err, sizeof(err)) == -EINVAL);
	CHECK(fabric_torus_parse("0x8x1", 8, d, err, sizeof(err)) == -EINVAL);
	CHECK(fabric_torus_parse("2x2x2x", 8, d, err, sizeof(err)) == -EINVAL);
	CHECK(fabric_torus_parse("-2x-2x2", 8, d, err, sizeof(err)) == -EINVAL);
	CHECK(fabric_torus_parse("256x1x1", 256, d, err, sizeof(err)) == -EINVAL);
	CHECK(fabric_port_parse("x+") == EXA_PORT_XP && fabric_port_parse("z-") == EXA_PORT_ZM);
	CHECK(fabric_port_parse("w+") == -1 && fabric_port_parse("x") == -1);
	return true;
}

static struct fabric *open_torus_node(uint32_t node, uint32_t nodes,
				      uint32_t x, uint32_t y, uint32_t z,
				      uint32_t mbps, uint32_t ns)
{
	struct fabric_config cfg = {
		.dir = tmpdir, .node_id = node, .num_nodes = nodes,
		.pkt_ring = true, .dims = { x, y, z },
		.link_mbps = mbps, .link_ns = ns,
	};

	return open_cfg(&cfg);
}

static unsigned route_hops(struct fabric *f, uint32_t dst, bool *detour,
			   enum fabric_route_fate *fate)
{
	struct fabric_route_result r;

	fabric_torus_route(fabric_torus(f), dst, 64, &r);
	*detour = r.detour;
	*fate = r.fate;
	return r.hops;
}

/* Dimension-order hops on 2x2x2 and 3x3x3, detours, no route, a dead node. */
static bool t_torus_routes(void)
{
	struct fabric *f[27] = { 0 };
	struct fabric_port_info pi;
	enum fabric_route_fate fate;
	bool det;

	for (uint32_t i = 0; i < 8; i++)
		CHECK((f[i] = open_torus_node(i, 8, 2, 2, 2, 0, 0)));
	/* node 0 (0,0,0): 1 -> 1 hop, 3 (1,1,0) -> 2, 7 (1,1,1) -> 3 */
	for (uint32_t a = 0; a < 8; a++)
		for (uint32_t b = 0; b < 8; b++) {
			unsigned want = __builtin_popcount(a ^ b);

			CHECK(fabric_torus_distance(fabric_torus(f[a]), a, b) == want);
			if (a != b)
				CHECK(route_hops(f[a], b, &det, &fate) == want &&
				      !det && fate == FABRIC_ROUTE_OK);
		}
	/* size 2: x+ and x- of node 0 both lead to node 1, over two cables */
	CHECK(fabric_torus_neighbour(fabric_torus(f[0]), 0, EXA_PORT_XP) == 1);
	CHECK(fabric_torus_neighbour(fabric_torus(f[0]), 0, EXA_PORT_XM) == 1);
	/* x+ down: the x- cable; both down: around through y (3 hops) */
	CHECK(fabric_torus_set_port(fabric_torus(f[0]), EXA_PORT_XP, false, 0, 0, 0, 0) == 0);
	CHECK(route_hops(f[0], 1, &det, &fate) == 1 && det && fate == FABRIC_ROUTE_OK);
	/* the far end's view: node 1's x- is the same cable, down too */
	fabric_torus_port_info(fabric_torus(f[1]), EXA_PORT_XM, &pi);
	CHECK((pi.state & EXA_PORT_USED) && (pi.state & EXA_PORT_ADMIN_UP) &&
	      !(pi.state & EXA_PORT_UP) && pi.peer == 0);
	CHECK(fabric_torus_set_port(fabric_torus(f[1]), EXA_PORT_XP, false, 0, 0, 0, 0) == 0);
	CHECK(route_hops(f[0], 1, &det, &fate) == 3 && det);
	fabric_torus_port_info(fabric_torus(f[0]), EXA_PORT_XP, &pi);
	CHECK(pi.counters[EXA_PORT_CNT_DETOURED] >= 2 &&
	      pi.counters[EXA_PORT_CNT_DOWN_EVENTS] == 1);
	/* node 1 cut off: every path gone */
	for (unsigned p = EXA_PORT_YP; p < EXA_NUM_PORTS; p++)
		CHECK(fabric_torus_set_port(fabric_torus(f[1]), p, false, 0, 0, 0, 0) == 0);
	CHECK(route_hops(f[0], 1, &det, &fate) == 0 && fate == FABRIC_ROUTE_NONE);
	/* a sent packet then fails at once and counts */
	{
		uint8_t buf[8] = { 0 };
		struct fabric_stats st;

		CHECK(fabric_send(f[0], 1, 1, buf, sizeof(buf)) == -EHOSTUNREACH);
		fabric_get_stats(f[0], &st);
		CHECK(st.tx_no_route == 1);
	}
	for (unsigned p = 0; p < EXA_NUM_PORTS; p++) {
		CHECK(fabric_torus_set_port(fabric_torus(f[0]), p, true, 0, 0, 0, 0) == 0);
		CHECK(fabric_torus_set_port(fabric_torus(f[1]), p, true, 0, 0, 0, 0) == 0);
	}
	CHECK(route_hops(f[0], 1, &det, &fate) == 1 && !det);
	/* a node that stops takes its cables down: 0 -> 3 avoids node 1 */
	fabric_close(f[1]);
	f[1] = NULL;
	CHECK(route_hops(f[0], 3, &det, &fate) == 2 && det && fate == FABRIC_ROUTE_OK);
	for (uint32_t i = 0; i < 8; i++)
		fabric_close(f[i]);

	/* 3x3x3: the longest dimension-order route is 3 hops; x then y then z */
	for (uint32_t i = 0; i < 27; i++)
		CHECK((f[i] = open_torus_node(i, 27, 3, 3, 3, 0, 0)));
	CHECK(route_hops(f[0], 26, &det, &fate) == 3);
	CHECK(route_hops(f[13], 0, &det, &fate) == 3);
	CHECK(route_hops(f[0], 2, &det, &fate) == 1);	/* x- wraps around */
	{
		struct fabric_port_info xm;

		fabric_torus_port_info(fabric_torus(f[0]), EXA_PORT_XM, &xm);
		/* 0 -> 2 and 0 -> 26 (2,2,2): x the short way is x- */
		CHECK(xm.peer == 2 && xm.counters[EXA_PORT_CNT_PACKETS] == 2);
	}
	for (uint32_t i = 0; i < 27; i++)
		fabric_close(f[i]);
	return true;
}

/* A cable's drop and corruption, and its rate and latency on delivery. */
static bool t_torus_link_model(void)
{
	struct fabric *a = open_torus_node(0, 2, 2, 1, 1, 0, 0);
	struct fabric *b = open_torus_node(1, 2, 2, 1, 1, 0, 0);
	struct fabric_port_info pi;
	struct fabric_route_result r1, r2;
	struct fabric_stats sb;
	struct rx_log l = { 0 };
	uint8_t buf[1000];
	struct timespec ts;
	uint64_t t0;

	CHECK(a && b);
	CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 0,
				    1000000, 0) == 0);
	CHECK(fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
	fabric_torus_port_info(fabric_torus(a), EXA_PORT_XP, &pi);
	CHECK(pi.counters[EXA_PORT_CNT_DROPS] == 1 && pi.counters[EXA_PORT_CNT_RETRANS] == 1);
	CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 0, 0,
				    1000000) == 0);
	CHECK(fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
	ring_drain_all(b, &l);
	fabric_get_stats(b, &sb);
	CHECK(l.count == 0 && sb.rx_bad_crc == 1);
	CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 0, 0, 0) == 0);
	CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0, 0, 1, 1000001) == -EINVAL);
	CHECK(fabric_torus_set_port(fabric_torus(a), 6, true, 0, 0, 0, 0) == -EINVAL);

	/* 8 Mb/s = one byte per us: 1000 bytes take 1 ms each, back to back */
	CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 8, 0, 0, 0) == 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000000000ull + ts.tv_nsec;
	fabric_torus_route(fabric_torus(a), 1, 1000, &r1);
	fabric_torus_route(fabric_torus(a), 1, 1000, &r2);
	CHECK(r1.due_ns >= t0 + 1000000 && r2.due_ns >= r1.due_ns + 1000000);
	CHECK(r2.due_ns < t0 + 2500000);
	CHECK(fabric_torus_booked(fabric_torus(a), 1, 500000));
	CHECK(!fabric_torus_booked(fabric_torus(a), 1, 10000000));
	fabric_torus_port_info(fabric_torus(a), EXA_PORT_XP, &pi);
	CHECK(pi.counters[EXA_PORT_CNT_BUSY_NS] == 2000000);

	/* 20 ms of latency: the record waits on the ring until it is due */
	CHECK(fabric_torus_set_port(fabric_torus(a), EXA_PORT_XP, true, 0,
				    20000000, 0, 0) == 0);
	l = (struct rx_log){ 0 };
	CHECK(fabric_send(a, 1, 1, buf, make_payload(buf, 0, 32)) == FABRIC_SENT);
	wait_rx(b, 5);
	fabric_poll_rx(b, 16, rx_cb, &l);
	CHECK(l.count == 0);
	CHECK(!fabric_pkt_pending(b, false) && fabric_next_due(b) > 0);
	usleep(25000);
	CHECK(fabric_poll_pkts(b, 16, rx_cb, &l) == 1 && l.count == 1 && !l.bad);
	CHECK(fabric_rx_hops(b) == 1);
	fabric_get_stats(b, &sb);
	CHECK(sb.rx_hops[1] == 1);
	fabric_close(a);
	fabric_close(b);
	return true;
}

int main(void)
{
	struct {
		const char *name;
		bool (*fn)(void);
	} tests[] = {
		{ "crc32_known_vector", t_crc32 },
		{ "open_and_argument_validation", t_open_args },
		{ "delivery_and_integrity", t_delivery },
		{ "bad_crc_magic_version_length_addr_dropped", t_crc_detection },
		{ "fault_injection_counts_and_seed", t_fault_injection },
		{ "backpressure_queue_keeps_order", t_backpressure },
		{ "bounded_queue_reports_loss", t_queue_limit },
		{ "missing_peer_and_reconnect", t_missing_peer },
		{ "three_nodes_all_to_all", t_three_nodes },
		{ "bulk_checksum_detects_bit_flips", t_bulk_csum },
		{ "bulk_delivery_order_and_doorbells", t_bulk_delivery },
		{ "bulk_ring_full_and_wrap", t_bulk_full },
		{ "bulk_fault_injection", t_bulk_faults },
		{ "bulk_producer_and_consumer_restart", t_bulk_restart },
		{ "bulk_renew_abandons_unconsumed_records", t_bulk_renew },
		{ "bulk_throughput", t_bulk_throughput },
		{ "pkt_ring_delivery_and_doorbells", t_pkt_ring },
		{ "pkt_ring_fault_injection", t_pkt_ring_faults },
		{ "pkt_ring_missing_full_and_restart", t_pkt_ring_peers },
		{ "torus_shapes_and_ports", t_torus_shapes },
		{ "torus_routes_detours_dead_nodes", t_torus_routes },
		{ "torus_link_faults_rate_latency", t_torus_link_model },
	};
	int n = sizeof(tests) / sizeof(tests[0]);

	snprintf(topdir, sizeof(topdir), "/tmp/test_fabric.XXXXXX");
	if (!mkdtemp(topdir)) {
		perror("mkdtemp");
		return 1;
	}
	printf("1..%d\n", n);
	for (int i = 0; i < n; i++) {
		snprintf(tmpdir, sizeof(tmpdir), "%s/t%d", topdir, i + 1);
		tap(tests[i].fn(), tests[i].name);
		/* sockets are unlinked by fabric_close(): the dir must be empty */
		if (!failures && rmdir(tmpdir) < 0 && errno != ENOENT)
			diag("leftover files in %s", tmpdir);
	}
	if (!failures)
		rmdir(topdir);
	else
		diag("sockets of failed cases left in %s", topdir);
	return failures ? 1 : 0;
}
