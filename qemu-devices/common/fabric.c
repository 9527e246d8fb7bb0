/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host-side fabric transport, see fabric.h for the design.
 */
#include "fabric.h"
#include "fabric-torus.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/un.h>
#include <unistd.h>

struct fabric_qpkt {
	struct fabric_qpkt *next;
	size_t len;
	uint8_t data[];
};

/* Shared control block at the start of a bulk ring file. */
#define BULK_MAGIC	0x474e495242584558ull	/* "EXBRING" */
#define BULK_CTL_SIZE	4096
#define BULK_REC_HDR	48
#define BULK_ALIGN	64
#define BULK_TYPE_PAD	0
#define BULK_TYPE_PKT	1	/* packet ring record; rsv0 = packet type */
#define DB_KIND_PKT	1	/* doorbell payload byte 8: a packet ring */

struct bulk_ctl {
	uint64_t magic;
	uint64_t session;
	uint32_t size;		/* ring bytes, power of two */
	uint32_t src, dst;
	uint8_t pad0[BULK_ALIGN - 28];
	uint64_t tail;		/* producer, free running */
	uint8_t pad1[BULK_ALIGN - 8];
	uint64_t head;		/* consumer, free running */
	uint8_t pad2[BULK_ALIGN - 8];
	uint32_t armed;		/* consumer idle: wants a doorbell */
};

struct bulk_map {
	struct bulk_ctl *ctl;
	uint8_t *ring;
	size_t maplen;
	uint64_t session;
	uint32_t size;
	uint32_t node;		/* peer */
	bool pkt;		/* a packet ring (else bulk) */
	uint64_t last_db_ns;	/* producer: last doorbell */
	uint64_t last_due_ns;	/* producer: due time of the last record */
	struct bulk_map *next_in;	/* consumer list */
};

struct fabric_peer {
	uint32_t node;
	struct bulk_map *bout;	/* our ring towards this peer */
	struct bulk_map *pout;	/* our packet ring towards this peer */
	int fd;			/* connected to node<N>.sock, -1 if not */
	bool watched;
	uint32_t qlen;
	struct fabric_qpkt *qhead, *qtail;
	struct fabric_peer *next_alloc;
};

struct fabric {
	struct fabric_config cfg;
	char *dir;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	ino_t ino;
	dev_t devno;
	int rxfd;
	struct fabric_peer **peers;	/* indexed by node, lazily allocated */
	struct fabric_peer *alloc_list;
	size_t total_queued;
	uint64_t rng;
	struct fabric_stats st;
	struct bulk_map **bin;		/* inbound rings by source, lazily */
	struct bulk_map *bin_list;
	struct bulk_map **pin;		/* inbound packet rings by source */
	struct bulk_map *pin_list;
	struct bulk_map *rsv_map;	/* open reservation */
	uint64_t rsv_off;		/* ring offset of the reserved record */
	uint32_t rsv_hlen, rsv_dlen, rsv_pad;
	struct fabric_torus *torus;
	unsigned rx_hops;		/* of the record being delivered */
	uint64_t next_due;		/* earliest record waiting for its links */
	uint8_t rxbuf[FABRIC_HDR_SIZE + FABRIC_MAX_PAYLOAD + 1];
};

/* ------------------------------------------------------------------ */

static uint32_t crc_table[256];
static bool crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
	crc_ready = true;
}

/* Standard CRC-32 (IEEE 802.3); chainable: pass the previous result. */
uint32_t fabric_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static uint16_t get_le16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Layout: magic 0, version 4, type 5, length 6, src 8, dst 12, crc 16 */
void fabric_hdr_encode(uint8_t *w, const struct fabric_hdr *h)
{
	put_le32(w + 0, h->magic);
	w[4] = h->version;
	w[5] = h->type;
	put_le16(w + 6, h->length);
	put_le32(w + 8, h->src);
	put_le32(w + 12, h->dst);
	put_le32(w + 16, h->crc);
}

void fabric_hdr_decode(struct fabric_hdr *h, const uint8_t *w)
{
	h->magic = get_le32(w + 0);
	h->version = w[4];
	h->type = w[5];
	h->length = get_le16(w + 6);
	h->src = get_le32(w + 8);
	h->dst = get_le32(w + 12);
	h->crc = get_le32(w + 16);
}

int fabric_sock_path(char *buf, size_t len, const char *dir, uint32_t node)
{
	int n = snprintf(buf, len, "%s/node%u.sock", dir, node);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* xorshift64*, seeded through splitmix64 */
uint64_t fabric_rng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint64_t fabric_rng_seed(uint64_t seed, uint32_t node, uint64_t stream)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull * (node + 1) + stream;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 0x1234567887654321ull;
}

bool fabric_rng_hit(uint64_t *state, uint32_t ppm)
{
	if (!ppm)
		return false;
	if (ppm >= FABRIC_PPM)
		return true;
	return (fabric_rng_next(state) >> 11) % FABRIC_PPM < ppm;
}

static uint64_t rng_next(struct fabric *f)
{
	return fabric_rng_next(&f->rng);
}

static void rng_seed(struct fabric *f, uint64_t seed)
{
	f->rng = fabric_rng_seed(seed, f->cfg.node_id, 0);
}

static bool rng_hit(struct fabric *f, uint32_t ppm)
{
	return fabric_rng_hit(&f->rng, ppm);
}

/* ------------------------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *fmt, const char *a, int e)
{
	if (err && errlen) {
		snprintf(err, errlen, fmt, a);
		if (e) {
			size_t l = strlen(err);

			snprintf(err + l, errlen - l, ": %s", strerror(e));
		}
	}
}

static int make_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

static int fill_addr(struct sockaddr_un *sa, const char *dir, uint32_t node)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	return fabric_sock_path(sa->sun_path, sizeof(sa->sun_path), dir, node);
}

int fabric_open(struct fabric **out, const struct fabric_config *cfg,
		char *err, size_t errlen)
{
	struct fabric *f;
	struct sockaddr_un sa;
	struct stat stb;
	int fd, r, one_mb = 1 << 20;

	*out = NULL;
	if (!cfg || !cfg->dir || !cfg->dir[0]) {
		set_err(err, errlen, "fabric directory not set%s", "", 0);
		return -EINVAL;
	}
	if (cfg->num_nodes == 0 || cfg->num_nodes > FABRIC_MAX_NODES ||
	    cfg->node_id >= cfg->num_nodes) {
		set_err(err, errlen, "bad node id / node count%s", "", 0);
		return -EINVAL;
	}
	if (cfg->drop_ppm > FABRIC_PPM || cfg->corrupt_ppm > FABRIC_PPM) {
		set_err(err, errlen, "fault injection ppm above 1000000%s", "", 0);
		return -EINVAL;
	}
	if (fill_addr(&sa, cfg->dir, cfg->node_id) < 0) {
		set_err(err, errlen, "socket path too long in %s", cfg->dir, 0);
		return -ENAMETOOLONG;
	}
	if ((cfg->dims[0] || cfg->dims[1] || cfg->dims[2]) &&
	    (uint64_t)cfg->dims[0] * cfg->dims[1] * cfg->dims[2] != cfg->num_nodes) {
		if (err && errlen)
			snprintf(err, errlen, "torus %ux%ux%u does not have %u nodes",
				 cfg->dims[0], cfg->dims[1], cfg->dims[2],
				 cfg->num_nodes);
		return -EINVAL;
	}

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->cfg = *cfg;
	if (!f->cfg.max_queue)
		f->cfg.max_queue = FABRIC_DEFAULT_QUEUE;
	f->rxfd = -1;
	f->dir = strdup(cfg->dir);
	f->peers = calloc(cfg->num_nodes, sizeof(*f->peers));
	f->bin = calloc(cfg->num_nodes, sizeof(*f->bin));
	f->pin = calloc(cfg->num_nodes, sizeof(*f->pin));
	if (!f->dir || !f->peers || !f->bin || !f->pin) {
		r = -ENOMEM;
		goto fail;
	}
	if (!cfg->dims[0] && !cfg->dims[1] && !cfg->dims[2])
		fabric_torus_default_shape(cfg->num_nodes, f->cfg.dims);
	f->cfg.dir = f->dir;
	memcpy(f->path, sa.sun_path, sizeof(f->path));
	rng_seed(f, cfg->seed);

	if (mkdir(cfg->dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		set_err(err, errlen, "cannot create fabric directory %s", cfg->dir, errno);
		goto fail;
	}

	fd = make_socket();
	if (fd < 0) {
		r = fd;
		set_err(err, errlen, "socket%s", "", -fd);
		goto fail;
	}
	/* Refuse to steal the address of a live node with the same id. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		r = -EADDRINUSE;
		set_err(err, errlen, "%s is in use by a running node", f->path, 0);
		goto fail;
	}
	close(fd);

	fd = make_socket();
	if (fd < 0) {
		r = fd;
		goto fail;
	}
	f->rxfd = fd;
	unlink(f->path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		set_err(err, errlen, "bind %s", f->path, errno);
		goto fail;
	}
	if (stat(f->path, &stb) == 0) {
		f->ino = stb.st_ino;
		f->devno = stb.st_dev;
	}
	/* Best effort: room for bursts (root may exceed rmem_max). */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &one_mb, sizeof(one_mb)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &one_mb, sizeof(one_mb));
	r = fabric_torus_open(&f->torus, cfg->dir, cfg->node_id, f->cfg.dims,
			      cfg->link_mbps, cfg->link_ns, cfg->seed, err, errlen);
	if (r < 0)
		goto fail;
	*out = f;
	return 0;

fail:
	if (f->rxfd >= 0) {
		close(f->rxfd);
		unlink(f->path);
	}
	free(f->pin);
	free(f->bin);
	free(f->peers);
	free(f->dir);
	free(f);
	return r;
}

static void peer_unwatch(struct fabric *f, struct fabric_peer *p)
{
	if (p->watched) {
		p->watched = false;
		if (f->cfg.watch)
			f->cfg.watch(f->cfg.watch_opaque, p->fd, false);
	}
}

static void peer_watch(struct fabric *f, struct fabric_peer *p)
{
	if (!p->watched && p->fd >= 0) {
		p->watched = true;
		if (f->cfg.watch)
			f->cfg.watch(f->cfg.watch_opaque, p->fd, true);
	}
}

static void peer_disconnect(struct fabric *f, struct fabric_peer *p)
{
	if (p->fd >= 0) {
		peer_unwatch(f, p);
		close(p->fd);
		p->fd = -1;
	}
}

/* Drop every queued packet of a peer, counting them as lost. */
static void peer_purge(struct fabric *f, struct fabric_peer *p, uint64_t *counter)
{
	while (p->qhead) {
		struct fabric_qpkt *q = p->qhead;

		p->qhead = q->next;
		free(q);
		(*counter)++;
	}
	p->qtail = NULL;
	f->total_queued -= p->qlen;
	p->qlen = 0;
}

static void bulk_unmap(struct bulk_map *m)
{
	if (m) {
		munmap(m->ctl, m->maplen);
		free(m);
	}
}

static int bulk_path(char *buf, size_t len, const char *dir, uint32_t src,
		     uint32_t dst, bool pkt)
{
	int n = snprintf(buf, len, "%s/%s-%u-%u", dir, pkt ? "pkt" : "bulk",
			 src, dst);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Unmap one of our rings; remove its file if it is still ours. */
static void bulk_release(struct fabric *f, struct bulk_map *m)
{
	char path[4096];

	if (!m)
		return;
	if (!bulk_path(path, sizeof(path), f->dir, f->cfg.node_id, m->node,
		       m->pkt)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct bulk_ctl c;

		if (fd >= 0) {
			if (pread(fd, &c, sizeof(c), 0) == sizeof(c) &&
			    c.session == m->session)
				unlink(path);
			close(fd);
		}
	}
	bulk_unmap(m);
}

void fabric_close(struct fabric *f)
{
	struct stat stb;

	if (!f)
		return;
	while (f->alloc_list) {
		struct fabric_peer *p = f->alloc_list;
		uint64_t dummy = 0;

		f->alloc_list = p->next_alloc;
		peer_purge(f, p, &dummy);
		peer_disconnect(f, p);
		bulk_release(f, p->bout);
		bulk_release(f, p->pout);
		free(p);
	}
	while (f->bin_list) {
		struct bulk_map *m = f->bin_list;

		f->bin_list = m->next_in;
		bulk_unmap(m);
	}
	while (f->pin_list) {
		struct bulk_map *m = f->pin_list;

		f->pin_list = m->next_in;
		bulk_unmap(m);
	}
	free(f->bin);
	free(f->pin);
	fabric_torus_close(f->torus);
	if (f->rxfd >= 0) {
		close(f->rxfd);
		/* Only remove the socket file if it is still ours. */
		if (stat(f->path, &stb) == 0 && stb.st_ino == f->ino &&
		    stb.st_dev == f->devno)
			unlink(f->path);
	}
	free(f->peers);
	free(f->dir);
	free(f);
}

int fabric_rx_fd(const struct fabric *f)
{
	return f->rxfd;
}

static struct fabric_peer *get_peer(struct fabric *f, uint32_t node)
{
	struct fabric_peer *p = f->peers[node];

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->node = node;
	p->fd = -1;
	p->next_alloc = f->alloc_list;
	f->alloc_list = p;
	f->peers[node] = p;
	return p;
}

static int peer_connect(struct fabric *f, struct fabric_peer *p)
{
	struct sockaddr_un sa;
	int fd, sndbuf = 1 << 20;

	if (fill_addr(&sa, f->dir, p->node) < 0)
		return -ENAMETOOLONG;
	fd = make_socket();
	if (fd < 0)
		return fd;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	p->fd = fd;
	return 0;
}

static bool peer_gone_errno(int e)
{
	return e == ECONNREFUSED || e == ENOTCONN || e == EPIPE ||
	       e == ECONNRESET || e == ENOENT || e == EDESTADDRREQ;
}

/*
 * One send attempt (with one reconnect if the peer socket was replaced).
 * Returns 0 sent, -EAGAIN no room, -EHOSTUNREACH peer down, other -errno.
 */
static int peer_xmit(struct fabric *f, struct fabric_peer *p,
		     const uint8_t *buf, size_t len)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		ssize_t n;
		int r;

		if (p->fd < 0) {
			r = peer_connect(f, p);
			if (r < 0)
				return peer_gone_errno(-r) ? -EHOSTUNREACH : r;
		}
		n = send(p->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n >= 0) {
			f->st.tx_packets++;
			f->st.tx_bytes += len;
			return 0;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
			return -EAGAIN;
		if (errno == EINTR) {
			attempt--;
			continue;
		}
		if (!peer_gone_errno(errno))
			return -errno;
		/* The receiver closed or was restarted: reconnect once. */
		peer_disconnect(f, p);
	}
	return -EHOSTUNREACH;
}

static int peer_enqueue(struct fabric *f, struct fabric_peer *p,
			const uint8_t *buf, size_t len)
{
	struct fabric_qpkt *q;

	if (p->qlen >= f->cfg.max_queue) {
		f->st.tx_queue_full++;
		return -ENOBUFS;
	}
	q = malloc(sizeof(*q) + len);
	if (!q) {
		f->st.tx_errors++;
		return -ENOMEM;
	}
	q->next = NULL;
	q->len = len;
	memcpy(q->data, buf, len);
	if (p->qtail)
		p->qtail->next = q;
	else
		p->qhead = q;
	p->qtail = q;
	p->qlen++;
	f->total_queued++;
	f->st.tx_queued++;
	peer_watch(f, p);
	return FABRIC_QUEUED;
}

static int pkt_send(struct fabric *f, struct fabric_peer *p, uint8_t type,
		    const void *payload, size_t len);

/*
 * Take the packet or record of bytes over the torus to dst (fabric-torus.h)
 * and account for its fate.  Returns 0 (res, if given, has the hop count and
 * due time), 1 (delivered with a bit flipped on a cable), -ENOLINK (dropped
 * by a cable: counts as sent) or -EHOSTUNREACH (every path cut).
 */
static int route(struct fabric *f, uint32_t dst, size_t bytes,
		 struct fabric_route_result *res)
{
	struct fabric_route_result own;

	if (!res)
		res = &own;
	fabric_torus_route(f->torus, dst, bytes, res);
	if (res->detour)
		f->st.tx_detours++;
	switch (res->fate) {
	case FABRIC_ROUTE_NONE:
		f->st.tx_no_route++;
		return -EHOSTUNREACH;
	case FABRIC_ROUTE_DROPPED:
		f->st.tx_link_drop++;
		return -ENOLINK;
	case FABRIC_ROUTE_CORRUPT:
		f->st.tx_link_corrupt++;
		return 1;
	default:
		return 0;
	}
}

int fabric_send(struct fabric *f, uint32_t dst, uint8_t type,
		const void *payload, size_t len)
{
	uint8_t buf[FABRIC_HDR_SIZE + FABRIC_MAX_PAYLOAD];
	struct fabric_hdr h;
	struct fabric_peer *p;
	size_t n = FABRIC_HDR_SIZE + len;
	uint32_t crc;
	int r;

	if (!f || dst >= f->cfg.num_nodes || len > FABRIC_MAX_PAYLOAD ||
	    (len && !payload) || type == FABRIC_TYPE_BULK)
		return -EINVAL;
	if (f->cfg.pkt_ring) {
		p = get_peer(f, dst);
		if (!p) {
			f->st.tx_errors++;
			return -ENOMEM;
		}
		return pkt_send(f, p, type, payload, len);
	}

	h.magic = FABRIC_MAGIC;
	h.version = FABRIC_VERSION;
	h.type = type;
	h.length = len;
	h.src = f->cfg.node_id;
	h.dst = dst;
	h.crc = 0;
	fabric_hdr_encode(buf, &h);
	if (len)
		memcpy(buf + FABRIC_HDR_SIZE, payload, len);
	crc = fabric_crc32(0, buf, n);
	put_le32(buf + 16, crc);

	r = route(f, dst, n, NULL);
	if (r < 0)
		return r == -ENOLINK ? FABRIC_SENT : r;
	if (rng_hit(f, f->cfg.drop_ppm)) {
		f->st.tx_inject_drop++;
		return FABRIC_SENT;
	}
	if (r == 1 || rng_hit(f, f->cfg.corrupt_ppm)) {
		uint64_t bit = rng_next(f) % (n * 8);

		buf[bit / 8] ^= 1u << (bit % 8);
		f->st.tx_inject_corrupt++;
	}

	p = get_peer(f, dst);
	if (!p) {
		f->st.tx_errors++;
		return -ENOMEM;
	}
	/* Keep per-destination order: behind a queue, wait in the queue. */
	if (p->qhead) {
		fabric_flush(f);
		if (p->qhead)
			return peer_enqueue(f, p, buf, n);
	}
	r = peer_xmit(f, p, buf, n);
	if (r == 0)
		return FABRIC_SENT;
	if (r == -EAGAIN)
		return peer_enqueue(f, p, buf, n);
	if (r == -EHOSTUNREACH)
		f->st.tx_no_peer++;
	else
		f->st.tx_errors++;
	return r;
}

static void peer_flush(struct fabric *f, struct fabric_peer *p)
{
	while (p->qhead) {
		struct fabric_qpkt *q = p->qhead;
		int r = peer_xmit(f, p, q->data, q->len);

		if (r == -EAGAIN)
			break;
		if (r == -EHOSTUNREACH) {
			/* Node went down: everything queued for it is lost. */
			peer_purge(f, p, &f->st.tx_no_peer);
			break;
		}
		if (r < 0)
			f->st.tx_errors++;
		p->qhead = q->next;
		if (!p->qhead)
			p->qtail = NULL;
		p->qlen--;
		f->total_queued--;
		free(q);
	}
	if (!p->qhead)
		peer_unwatch(f, p);
	else
		peer_watch(f, p);
}

size_t fabric_flush(struct fabric *f)
{
	if (!f->total_queued)
		return 0;
	for (struct fabric_peer *p = f->alloc_list; p; p = p->next_alloc)
		if (p->qhead)
			peer_flush(f, p);
	return f->total_queued;
}

size_t fabric_queued(const struct fabric *f)
{
	return f->total_queued;
}

static void bulk_doorbell(struct fabric *f, uint32_t src, const uint8_t *p,
			  size_t len);

int fabric_poll_rx(struct fabric *f, int budget, fabric_rx_fn fn, void *opaque)
{
	int count = 0;

	while (count < budget) {
		struct fabric_hdr h;
		ssize_t n;
		uint32_t crc;

		n = recv(f->rxfd, f->rxbuf, sizeof(f->rxbuf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;		/* EAGAIN or error: nothing more now */
		}
		count++;
		if ((size_t)n < FABRIC_HDR_SIZE || (size_t)n > sizeof(f->rxbuf) - 1) {
			f->st.rx_bad_length++;
			continue;
		}
		fabric_hdr_decode(&h, f->rxbuf);
		if (h.magic != FABRIC_MAGIC) {
			f->st.rx_bad_magic++;
			continue;
		}
		if (h.version != FABRIC_VERSION) {
			f->st.rx_bad_version++;
			continue;
		}
		if ((size_t)h.length != (size_t)n - FABRIC_HDR_SIZE) {
			f->st.rx_bad_length++;
			continue;
		}
		put_le32(f->rxbuf + 16, 0);
		crc = fabric_crc32(0, f->rxbuf, n);
		if (crc != h.crc) {
			f->st.rx_bad_crc++;
			continue;
		}
		if (h.dst != f->cfg.node_id || h.src >= f->cfg.num_nodes) {
			f->st.rx_bad_addr++;
			continue;
		}
		if (h.type == FABRIC_TYPE_BULK) {
			bulk_doorbell(f, h.src, f->rxbuf + FABRIC_HDR_SIZE, h.length);
			continue;
		}
		f->st.rx_packets++;
		f->st.rx_bytes += n;
		if (fn)
			fn(opaque, h.src, h.type, f->rxbuf + FABRIC_HDR_SIZE, h.length);
	}
	if (count < budget && f->pin_list)
		count += fabric_poll_pkts(f, budget - count, fn, opaque);
	return count;
}

void fabric_get_stats(const struct fabric *f, struct fabric_stats *st)
{
	*st = f->st;
}

uint64_t fabric_ring_doorbells(const struct fabric *f)
{
	return f->st.tx_ring_doorbells;
}

void fabric_set_faults(struct fabric *f, uint32_t drop_ppm,
		       uint32_t corrupt_ppm, uint64_t seed)
{
	f->cfg.drop_ppm = drop_ppm > FABRIC_PPM ? FABRIC_PPM : drop_ppm;
	f->cfg.corrupt_ppm = corrupt_ppm > FABRIC_PPM ? FABRIC_PPM : corrupt_ppm;
	f->cfg.seed = seed;
	rng_seed(f, seed);
}

/* ------------------------------------------------------------------ */
/* Bulk path: shared-memory rings, see fabric.h */

#define ld_acq64(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define st_rel64(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)

uint64_t fabric_csum(const void *buf, size_t len)
{
	/*
	 * Low half: XOR of all 64-bit words folded to 32 bits, so any single
	 * flipped bit flips exactly one result bit.  High half: running sum of
	 * running sums (position sensitive: catches reordered words).
	 */
	const uint8_t *p = buf;
	uint64_t x0 = 0, x1 = 0, a = 0x9e3779b97f4a7c15ull, b = len, w;
	size_t n = len;

	while (n >= 16) {
		uint64_t w0, w1;

		memcpy(&w0, p, 8);
		memcpy(&w1, p + 8, 8);
		x0 ^= w0;
		x1 ^= w1;
		a += w0;
		b += a;
		a += w1;
		b += a;
		p += 16;
		n -= 16;
	}
	if (n) {
		uint8_t t[16] = { 0 };

		memcpy(t, p, n);
		memcpy(&w, t, 8);
		x0 ^= w;
		a += w;
		b += a;
		memcpy(&w, t + 8, 8);
		x1 ^= w;
		a += w;
		b += a;
	}
	x0 ^= x1;
	b = (b ^ a) * 0xff51afd7ed558ccdull;
	b ^= b >> 33;
	return (uint32_t)(x0 ^ (x0 >> 32)) | (b & 0xffffffff00000000ull);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Record header, little endian host layout (both ends are the same host). */
struct bulk_rec {
	uint32_t size;		/* whole record, multiple of BULK_ALIGN */
	uint8_t type;		/* BULK_TYPE_PAD or the user's type */
	uint8_t rsv0;
	uint16_t hlen;
	uint32_t dlen;
	uint32_t src;
	uint32_t dst;
	uint32_t hcsum;		/* over this header (hcsum = 0) + user header */
	uint32_t dcsum_lo;	/* fabric_csum() of the data */
	uint32_t dcsum_hi;
	uint64_t due_ns;	/* CLOCK_MONOTONIC: deliverable from (links) */
	uint8_t hops;		/* over the torus */
	uint8_t rsv1[7];
};
_Static_assert(sizeof(struct bulk_rec) == BULK_REC_HDR, "record header size");
#define BULK_SIDEBAND_OFF	offsetof(struct bulk_rec, due_ns)
#define BULK_SIDEBAND		16
/* A due time further ahead than this is not believed (hostile producer). */
#define BULK_DUE_MAX_NS		1000000000ull
/*
 * In dlen: the data carries no checksum.  Shared memory between two
 * processes of one host does not flip bits, so the producer checksums the
 * data only while corruption injection is on (what a link's CRC engine
 * would do in hardware at no cost); the header CRC is always there.
 */
#define BULK_DLEN_NO_CSUM	0x80000000u

static struct bulk_map *bulk_map_fd(int fd, size_t maplen)
{
	struct bulk_map *m = calloc(1, sizeof(*m));
	void *p;

	if (!m)
		return NULL;
	p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		free(m);
		return NULL;
	}
	m->ctl = p;
	m->ring = (uint8_t *)p + BULK_CTL_SIZE;
	m->maplen = maplen;
	return m;
}

/*
 * Create our (packet or bulk) ring towards dst (a fresh file: a restarted
 * consumer remaps).
 */
static int bulk_create(struct fabric *f, struct fabric_peer *p, bool pkt)
{
	char path[4096], tmp[4200];
	uint32_t size = pkt ? FABRIC_PKT_RING_SIZE : FABRIC_BULK_RING_SIZE;
	size_t maplen = BULK_CTL_SIZE + size;
	struct bulk_map *m;
	int fd, r;

	r = bulk_path(path, sizeof(path), f->dir, f->cfg.node_id, p->node, pkt);
	if (r < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	unlink(tmp);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, maplen) < 0) {
		r = -errno;
		goto fail;
	}
	m = bulk_map_fd(fd, maplen);
	if (!m) {
		r = -ENOMEM;
		goto fail;
	}
	m->size = size;
	m->node = p->node;
	m->pkt = pkt;
	do {
		m->session = rng_next(f) ^ now_ns() ^ ((uint64_t)getpid() << 32);
	} while (!m->session);
	m->ctl->size = m->size;
	m->ctl->src = f->cfg.node_id;
	m->ctl->dst = p->node;
	m->ctl->session = m->session;
	m->ctl->head = 0;
	m->ctl->tail = 0;
	m->ctl->armed = 1;	/* nobody mapped it yet: ring the first time */
	__atomic_store_n(&m->ctl->magic, BULK_MAGIC, __ATOMIC_RELEASE);
	if (rename(tmp, path) < 0) {
		r = -errno;
		bulk_unmap(m);
		goto fail;
	}
	close(fd);
	if (pkt)
		p->pout = m;
	else
		p->bout = m;
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return r;
}

/*
 * The doorbell datagram: the ring's session (8 bytes), for a packet ring
 * followed by DB_KIND_PKT.  Returns 0 or the send error.
 */
static int bulk_ring(struct fabric *f, struct fabric_peer *p, struct bulk_map *m)
{
	uint8_t buf[FABRIC_HDR_SIZE + 9];
	size_t len = m->pkt ? 9 : 8;
	struct fabric_hdr h = {
		.magic = FABRIC_MAGIC, .version = FABRIC_VERSION,
		.type = FABRIC_TYPE_BULK, .length = len,
		.src = f->cfg.node_id, .dst = p->node, .crc = 0,
	};
	int r;

	fabric_hdr_encode(buf, &h);
	memcpy(buf + FABRIC_HDR_SIZE, &m->session, 8);
	buf[FABRIC_HDR_SIZE + 8] = DB_KIND_PKT;
	put_le32(buf + 16, fabric_crc32(0, buf, FABRIC_HDR_SIZE + len));
	m->last_db_ns = now_ns();
	if (m->pkt)
		f->st.tx_ring_doorbells++;
	else
		f->st.tx_bulk_doorbells++;
	/* Doorbells are not subject to fault injection; queued like packets. */
	if (p->qhead) {
		fabric_flush(f);
		if (p->qhead)
			return peer_enqueue(f, p, buf, FABRIC_HDR_SIZE + len) < 0 ?
			       -ENOBUFS : 0;
	}
	r = peer_xmit(f, p, buf, FABRIC_HDR_SIZE + len);
	if (r == -EAGAIN)
		return peer_enqueue(f, p, buf, FABRIC_HDR_SIZE + len) < 0 ?
		       -ENOBUFS : 0;
	return r;
}

/*
 * Room for a record of hlen + dlen bytes on m: its ring offset and the
 * padding to skip before it.  Returns 0 or -EAGAIN (ring full).
 */
static int bulk_room(struct bulk_map *m, size_t hlen, size_t dlen,
		     uint64_t *off, uint32_t *pad)
{
	uint64_t need, head, tail, o;

	need = (BULK_REC_HDR + hlen + dlen + BULK_ALIGN - 1) & ~(uint64_t)(BULK_ALIGN - 1);
	tail = m->ctl->tail;
	head = ld_acq64(&m->ctl->head);
	o = tail & (m->size - 1);
	*pad = o + need > m->size ? m->size - o : 0;
	if (tail - head > m->size || need + *pad > m->size - (tail - head))
		return -EAGAIN;
	*off = *pad ? 0 : o;
	return 0;
}

/*
 * Publish the record written at off (type, sub: the packet type of a
 * packet record) behind pad bytes of padding, and ring the doorbell if the
 * consumer asked for one.  Fault injection (corruption) happens here; drop
 * is the caller's (it does not publish).
 */
static void bulk_publish(struct fabric *f, struct fabric_peer *p,
			 struct bulk_map *m, uint64_t off, uint32_t pad,
			 uint8_t type, uint8_t sub, size_t hlen, size_t dlen,
			 const struct fabric_route_result *res, bool flip)
{
	uint8_t *r = m->ring + off;
	size_t total = BULK_REC_HDR + hlen + dlen;
	uint64_t tail, need, dcsum;
	struct bulk_rec rec;

	need = (total + BULK_ALIGN - 1) & ~(uint64_t)(BULK_ALIGN - 1);
	memset(&rec, 0, sizeof(rec));
	rec.size = need;
	rec.type = type;
	rec.rsv0 = sub;
	rec.hlen = hlen;
	rec.dlen = dlen;
	rec.src = f->cfg.node_id;
	rec.dst = m->node;
	rec.hops = res->hops > 255 ? 255 : res->hops;
	/* Records of a ring leave in order: never due before the one ahead. */
	rec.due_ns = res->due_ns > m->last_due_ns ? res->due_ns : m->last_due_ns;
	m->last_due_ns = rec.due_ns;
	if (f->cfg.corrupt_ppm || flip) {
		dcsum = fabric_csum(r + BULK_REC_HDR + rec.hlen, dlen);
		rec.dcsum_lo = (uint32_t)dcsum;
		rec.dcsum_hi = dcsum >> 32;
	} else {
		rec.dlen |= BULK_DLEN_NO_CSUM;
	}
	memcpy(r, &rec, sizeof(rec));
	rec.hcsum = fabric_crc32(0, r, BULK_REC_HDR);
	rec.hcsum = fabric_crc32(rec.hcsum, r + BULK_REC_HDR, rec.hlen);
	memcpy(r + offsetof(struct bulk_rec, hcsum), &rec.hcsum, 4);
	if (flip || rng_hit(f, f->cfg.corrupt_ppm)) {
		/*
		 * Any bit except the framing: the size word and the type
		 * byte (a record turned into padding would vanish uncounted),
		 * and the torus side band (due time, hops), which is the
		 * emulation's, not the wire's.
		 */
		uint64_t bit = 40 + rng_next(f) % ((total - 5 - BULK_SIDEBAND) * 8);

		if (bit >= BULK_SIDEBAND_OFF * 8)
			bit += BULK_SIDEBAND * 8;

		r[bit / 8] ^= 1u << (bit % 8);
		if (m->pkt)
			f->st.tx_inject_corrupt++;
		else
			f->st.tx_bulk_inject_corrupt++;
	}

	tail = m->ctl->tail;
	if (pad) {
		struct bulk_rec padrec;

		memset(&padrec, 0, sizeof(padrec));
		padrec.size = pad;
		padrec.type = BULK_TYPE_PAD;
		memcpy(m->ring + (tail & (m->size - 1)), &padrec, sizeof(padrec));
		tail += pad;
	}
	st_rel64(&m->ctl->tail, tail + need);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if ((__atomic_load_n(&m->ctl->armed, __ATOMIC_RELAXED) &&
	     __atomic_exchange_n(&m->ctl->armed, 0, __ATOMIC_SEQ_CST)) ||
	    now_ns() - m->last_db_ns > (m->pkt ? FABRIC_PKT_DB_NS : FABRIC_BULK_DB_NS))
		bulk_ring(f, p, m);
}

/* One packet as a record of our packet ring towards p. */
static int pkt_send(struct fabric *f, struct fabric_peer *p, uint8_t type,
		    const void *payload, size_t len)
{
	struct fabric_route_result res;
	uint64_t off;
	uint32_t pad;
	int r;

	/* A node that is down has no socket: lost, as a datagram would be. */
	if (p->fd < 0) {
		r = peer_connect(f, p);
		if (r < 0) {
			if (peer_gone_errno(-r)) {
				f->st.tx_no_peer++;
				return -EHOSTUNREACH;
			}
			f->st.tx_errors++;
			return r;
		}
	}
	if (!p->pout) {
		r = bulk_create(f, p, true);
		if (r < 0) {
			f->st.tx_errors++;
			return r;
		}
	}
	if (rng_hit(f, f->cfg.drop_ppm)) {
		f->st.tx_inject_drop++;
		return FABRIC_SENT;
	}
	if (bulk_room(p->pout, 0, len, &off, &pad) < 0) {
		f->st.tx_queue_full++;
		/* A consumer that never mapped the ring must learn of it. */
		if (now_ns() - p->pout->last_db_ns > FABRIC_PKT_DB_NS)
			bulk_ring(f, p, p->pout);
		return -ENOBUFS;
	}
	r = route(f, p->node, FABRIC_HDR_SIZE + len, &res);
	if (r < 0)
		return r == -ENOLINK ? FABRIC_SENT : r;
	if (len)
		memcpy(p->pout->ring + off + BULK_REC_HDR, payload, len);
	bulk_publish(f, p, p->pout, off, pad, BULK_TYPE_PKT, type, 0, len,
		     &res, r == 1);
	f->st.tx_packets++;
	f->st.tx_bytes += FABRIC_HDR_SIZE + len;
	f->st.tx_ring_packets++;
	return FABRIC_SENT;
}

void *fabric_bulk_reserve(struct fabric *f, uint32_t dst, size_t hlen,
			  size_t dlen, int *err)
{
	struct fabric_peer *p;
	struct bulk_map *m;
	uint64_t off;
	uint32_t pad;
	int r;

	if (!f || dst >= f->cfg.num_nodes || hlen > FABRIC_BULK_MAX_HDR ||
	    dlen > FABRIC_BULK_MAX_DATA || f->rsv_map) {
		*err = -EINVAL;
		return NULL;
	}
	p = get_peer(f, dst);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	if (!p->bout) {
		r = bulk_create(f, p, false);
		if (r < 0) {
			f->st.tx_errors++;
			*err = r;
			return NULL;
		}
	}
	m = p->bout;
	if (fabric_torus_booked(f->torus, dst, FABRIC_LINK_HORIZON_NS)) {
		f->st.tx_link_busy++;
		*err = -EAGAIN;
		return NULL;
	}
	if (bulk_room(m, hlen, dlen, &off, &pad) < 0) {
		f->st.tx_bulk_full++;
		/* Make sure a consumer that never mapped the ring learns of it. */
		if (now_ns() - m->last_db_ns > FABRIC_BULK_DB_NS)
			bulk_ring(f, p, m);
		*err = -EAGAIN;
		return NULL;
	}
	f->rsv_map = m;
	f->rsv_off = off;
	f->rsv_pad = pad;
	f->rsv_hlen = hlen;
	f->rsv_dlen = dlen;
	*err = 0;
	return m->ring + f->rsv_off + BULK_REC_HDR;
}

void fabric_bulk_cancel(struct fabric *f)
{
	f->rsv_map = NULL;
}

int fabric_bulk_commit(struct fabric *f, uint8_t type)
{
	struct bulk_map *m = f->rsv_map;
	struct fabric_route_result res;
	int r;

	if (!m)
		return -EINVAL;
	f->rsv_map = NULL;
	if (type == BULK_TYPE_PAD || type == FABRIC_TYPE_BULK)
		return -EINVAL;
	if (rng_hit(f, f->cfg.drop_ppm)) {
		f->st.tx_bulk_inject_drop++;
		return FABRIC_SENT;
	}
	r = route(f, m->node, BULK_REC_HDR + f->rsv_hlen + f->rsv_dlen, &res);
	if (r < 0) {
		if (r == -ENOLINK)
			f->st.tx_bulk_inject_drop++;
		return r == -ENOLINK ? FABRIC_SENT : r;
	}
	f->st.tx_bulk_records++;
	f->st.tx_bulk_bytes += BULK_REC_HDR + f->rsv_hlen + f->rsv_dlen;
	bulk_publish(f, f->peers[m->node], m, f->rsv_off, f->rsv_pad, type, 0,
		     f->rsv_hlen, f->rsv_dlen, &res, r == 1);
	return FABRIC_SENT;
}

int fabric_bulk_send(struct fabric *f, uint32_t dst, uint8_t type,
		     const void *hdr, size_t hlen, const void *data, size_t dlen)
{
	int err;
	uint8_t *p = fabric_bulk_reserve(f, dst, hlen, dlen, &err);

	if (!p)
		return err;
	if (hlen)
		memcpy(p, hdr, hlen);
	if (dlen)
		memcpy(p + hlen, data, dlen);
	return fabric_bulk_commit(f, type);
}

/* Doorbell from src: (re)map its (packet) ring when the session is new. */
static void bulk_doorbell(struct fabric *f, uint32_t src, const uint8_t *pl,
			  size_t len)
{
	bool pkt = len == 9 && pl[8] == DB_KIND_PKT;
	struct bulk_map **slot = pkt ? &f->pin[src] : &f->bin[src];
	struct bulk_map **list = pkt ? &f->pin_list : &f->bin_list;
	struct bulk_map *m = *slot, **pp;
	char path[4096];
	struct bulk_ctl c;
	struct stat stb;
	uint64_t session;
	int fd;

	if ((len != 8 && !pkt) || src == f->cfg.node_id) {
		f->st.rx_bad_length++;
		return;
	}
	memcpy(&session, pl, 8);
	if (m && m->session == session)
		return;
	if (bulk_path(path, sizeof(path), f->dir, src, f->cfg.node_id, pkt) < 0)
		return;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &stb) < 0 || pread(fd, &c, sizeof(c), 0) != sizeof(c) ||
	    c.magic != BULK_MAGIC || c.size < 4096 || c.size > (64u << 20) ||
	    (c.size & (c.size - 1)) || c.src != src || c.dst != f->cfg.node_id ||
	    (uint64_t)stb.st_size < BULK_CTL_SIZE + (uint64_t)c.size) {
		f->st.rx_bulk_bad_hdr++;
		close(fd);
		return;
	}
	if (m) {
		for (pp = list; *pp; pp = &(*pp)->next_in) {
			if (*pp == m) {
				*pp = m->next_in;
				break;
			}
		}
		bulk_unmap(m);
		*slot = NULL;
	}
	m = bulk_map_fd(fd, BULK_CTL_SIZE + c.size);
	close(fd);
	if (!m)
		return;
	m->size = c.size;
	m->session = c.session;
	m->node = src;
	m->pkt = pkt;
	m->next_in = *list;
	*list = m;
	*slot = m;
	if (pkt)
		f->st.rx_ring_maps++;
	else
		f->st.rx_bulk_maps++;
}

/*
 * The ring looks empty: ask the producer for a doorbell (armed = 1), then
 * look again (Dekker: the producer publishes tail, then reads armed).
 * Returns true if it is still empty, i.e. it is safe to sleep.
 */
static bool bulk_arm(struct bulk_map *m)
{
	__atomic_store_n(&m->ctl->armed, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return ld_acq64(&m->ctl->tail) == m->ctl->head;
}

/* Where the records of a ring go. */
struct bulk_sink {
	fabric_bulk_fn bulk;	/* bulk records */
	fabric_rx_fn pkt;	/* packet records */
	void *opaque;
};

/* A packet record: bad ones count and drop like datagrams with a bad CRC. */
static void pkt_deliver(struct fabric *f, struct bulk_map *m,
			const struct bulk_rec *rec, const uint8_t *data,
			bool ok, const struct bulk_sink *sink)
{
	if (!ok || rec->hlen || rec->dlen > FABRIC_MAX_PAYLOAD ||
	    rec->type != BULK_TYPE_PKT || rec->rsv0 == FABRIC_TYPE_BULK) {
		f->st.rx_bad_crc++;
		return;
	}
	f->st.rx_packets++;
	f->st.rx_bytes += FABRIC_HDR_SIZE + rec->dlen;
	f->st.rx_ring_packets++;
	f->st.rx_hops[rec->hops < 15 ? rec->hops : 15]++;
	if (sink->pkt)
		sink->pkt(sink->opaque, m->node, rec->rsv0, data, rec->dlen);
}

/*
 * Consume records of one ring; returns the number consumed.  Rings are
 * armed only by fabric_pkt_pending() / fabric_bulk_pending() (the
 * consumer may be a poller that wants no doorbells).
 */
static int bulk_drain(struct fabric *f, struct bulk_map *m, int budget,
		      const struct bulk_sink *sink)
{
	struct bulk_ctl *c = m->ctl;
	uint64_t head = c->head, tail, now = 0;
	int n = 0;

	while (n < budget) {
		struct bulk_rec rec;
		uint8_t *r;
		uint64_t off;
		uint32_t hcsum, dlen;

		tail = ld_acq64(&c->tail);
		if (head == tail)
			break;
		off = head & (m->size - 1);
		r = m->ring + off;
		memcpy(&rec, r, sizeof(rec));
		if (tail - head > m->size || rec.size < BULK_REC_HDR ||
		    (rec.size & (BULK_ALIGN - 1)) || rec.size > m->size - off ||
		    rec.size > tail - head) {
			/* Broken framing: skip everything published so far. */
			if (m->pkt)
				f->st.rx_bad_crc++;
			else
				f->st.rx_bulk_bad_hdr++;
			head = tail;
			st_rel64(&c->head, head);
			continue;
		}
		if (rec.type == BULK_TYPE_PAD) {
			head += rec.size;
			st_rel64(&c->head, head);
			continue;
		}
		/* Still on its way over the links: it and those behind it wait. */
		if (rec.due_ns > now) {
			now = now_ns();
			if (rec.due_ns > now && rec.due_ns - now < BULK_DUE_MAX_NS) {
				if (!f->next_due || rec.due_ns < f->next_due)
					f->next_due = rec.due_ns;
				break;
			}
		}
		n++;
		f->rx_hops = rec.hops;
		hcsum = rec.hcsum;
		rec.hcsum = 0;
		dlen = rec.dlen & ~BULK_DLEN_NO_CSUM;
		if (rec.hlen > FABRIC_BULK_MAX_HDR || dlen > FABRIC_BULK_MAX_DATA ||
		    BULK_REC_HDR + (uint64_t)rec.hlen + dlen > rec.size ||
		    rec.src != m->node || rec.dst != f->cfg.node_id ||
		    fabric_crc32(fabric_crc32(0, &rec, sizeof(rec)),
				 r + BULK_REC_HDR, rec.hlen) != hcsum) {
			if (m->pkt)
				f->st.rx_bad_crc++;
			else
				f->st.rx_bulk_bad_hdr++;
		} else {
			bool ok = true;

			if (!(rec.dlen & BULK_DLEN_NO_CSUM)) {
				uint64_t d = fabric_csum(r + BULK_REC_HDR + rec.hlen, dlen);
				ok = (uint32_t)d == rec.dcsum_lo &&
				     (uint32_t)(d >> 32) == rec.dcsum_hi;
			}
			rec.dlen = dlen;

			if (m->pkt) {
				pkt_deliver(f, m, &rec, r + BULK_REC_HDR, ok, sink);
			} else {
				if (!ok)
					f->st.rx_bulk_bad_data++;
				f->st.rx_bulk_records++;
				f->st.rx_bulk_bytes += BULK_REC_HDR + rec.hlen + rec.dlen;
				f->st.rx_hops[rec.hops < 15 ? rec.hops : 15]++;
				if (sink->bulk)
					sink->bulk(sink->opaque, m->node, rec.type,
						   r + BULK_REC_HDR, rec.hlen,
						   r + BULK_REC_HDR + rec.hlen,
						   rec.dlen, ok);
			}
		}
		head += rec.size;
		st_rel64(&c->head, head);
	}
	return n;
}

int fabric_poll_pkts(struct fabric *f, int budget, fabric_rx_fn fn, void *opaque)
{
	struct bulk_sink sink = { .pkt = fn, .opaque = opaque };
	int n = 0;

	for (struct bulk_map *m = f->pin_list; m && n < budget; m = m->next_in)
		n += bulk_drain(f, m, budget - n, &sink);
	return n;
}

/*
 * The record at the head of a non-empty ring may be delivered now; if it
 * waits for its links, note when it may (f->next_due).
 */
static bool head_due(struct fabric *f, struct bulk_map *m, uint64_t *now)
{
	uint64_t head = m->ctl->head;
	struct bulk_rec rec;

	memcpy(&rec, m->ring + (head & (m->size - 1)), sizeof(rec));
	if (rec.type == BULK_TYPE_PAD || rec.due_ns <= *now)
		return true;
	*now = now_ns();
	if (rec.due_ns <= *now || rec.due_ns - *now >= BULK_DUE_MAX_NS)
		return true;
	if (!f->next_due || rec.due_ns < f->next_due)
		f->next_due = rec.due_ns;
	return false;
}

/*
 * Records that may be delivered wait on a ring of the list; arm or disarm
 * the empty ones.  A ring whose head waits for its links is left armed or
 * not as asked: the caller looks again at fabric_next_due().
 */
static bool rings_pending(struct fabric *f, struct bulk_map *list, bool arm)
{
	bool pending = false;
	uint64_t now = 0;

	for (struct bulk_map *m = list; m; m = m->next_in) {
		if (arm) {
			if (!bulk_arm(m) && head_due(f, m, &now))
				pending = true;
			continue;
		}
		if (__atomic_load_n(&m->ctl->armed, __ATOMIC_RELAXED))
			__atomic_store_n(&m->ctl->armed, 0, __ATOMIC_RELAXED);
		if (ld_acq64(&m->ctl->tail) != m->ctl->head && head_due(f, m, &now))
			pending = true;
	}
	return pending;
}

bool fabric_pkt_pending(struct fabric *f, bool arm)
{
	f->next_due = 0;
	return rings_pending(f, f->pin_list, arm);
}

int fabric_poll_bulk(struct fabric *f, int budget, fabric_bulk_fn fn, void *opaque)
{
	struct bulk_sink sink = { .bulk = fn, .opaque = opaque };
	int n = 0;

	for (struct bulk_map *m = f->bin_list; m && n < budget; m = m->next_in)
		n += bulk_drain(f, m, budget - n, &sink);
	return n;
}

bool fabric_bulk_pending(struct fabric *f, bool arm)
{
	return rings_pending(f, f->bin_list, arm);
}

uint64_t fabric_next_due(const struct fabric *f)
{
	return f->next_due;
}

struct fabric_torus *fabric_torus(struct fabric *f)
{
	return f->torus;
}

unsigned fabric_rx_hops(const struct fabric *f)
{
	return f->rx_hops;
}

bool fabric_bulk_active(const struct fabric *f)
{
	return f->bin_list != NULL;
}
