// SPDX-License-Identifier: MIT
/* Out-of-band TCP rendezvous for multi-node tests; see oob.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "oob.h"

#define OOB_MAGIC 0x0e7a0b0bu
#define OOB_MAX_MSG (1u << 20)

struct oob_hdr {
	uint32_t magic;
	uint32_t session;
	uint32_t rank;
	uint32_t len;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining(int64_t deadline)
{
	int64_t r = deadline - now_ms();

	return r > 0 ? (int)r : 0;
}

int oob_from_env(int *rank, int *nnodes, uint32_t *peers, int max_peers)
{
	const char *r = getenv("EXA_RANK"), *n = getenv("EXA_NNODES");
	const char *p = getenv("EXA_PEERS");
	char *end, *copy, *tok, *save = NULL;
	long lr = 0, ln = 1;
	int count = 0;

	if (r) {
		lr = strtol(r, &end, 10);
		if (*r == '\0' || *end)
			return -EINVAL;
	}
	if (n) {
		ln = strtol(n, &end, 10);
		if (*n == '\0' || *end)
			return -EINVAL;
	}
	if (ln < 1 || ln > OOB_MAX_NODES || ln > max_peers || lr < 0 || lr >= ln)
		return -EINVAL;
	*rank = (int)lr;
	*nnodes = (int)ln;
	if (!p || !*p) {
		if (ln > 1)
			return -EINVAL;
		peers[0] = htonl(INADDR_LOOPBACK);
		return 0;
	}
	copy = strdup(p);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct in_addr a;

		if (count >= max_peers || inet_pton(AF_INET, tok, &a) != 1) {
			free(copy);
			return -EINVAL;
		}
		peers[count++] = a.s_addr;
	}
	free(copy);
	return count >= ln ? 0 : -EINVAL;
}

static int write_full(int fd, const void *buf, size_t len, int64_t deadline)
{
	const char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;
		int pr = poll(&pfd, 1, remaining(deadline));

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -errno;
		if (pr == 0)
			return -ETIMEDOUT;
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t len, int64_t deadline)
{
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int pr = poll(&pfd, 1, remaining(deadline));

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -errno;
		if (pr == 0)
			return -ETIMEDOUT;
		n = recv(fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_msg(struct oob *o, int fd, const void *buf, size_t len, int64_t deadline)
{
	struct oob_hdr h = { OOB_MAGIC, o->session, (uint32_t)o->rank, (uint32_t)len };
	int err = write_full(fd, &h, sizeof(h), deadline);

	if (!err && len)
		err = write_full(fd, buf, len, deadline);
	return err;
}

/* Receives exactly 'len' bytes of payload; anything else is -EPROTO. */
static int recv_msg(struct oob *o, int fd, void *buf, size_t len, int64_t deadline,
		    uint32_t *from)
{
	struct oob_hdr h;
	int err = read_full(fd, &h, sizeof(h), deadline);

	if (err)
		return err;
	if (h.magic != OOB_MAGIC || h.session != o->session || h.len != len)
		return -EPROTO;
	if (from)
		*from = h.rank;
	return len ? read_full(fd, buf, len, deadline) : 0;
}

static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int root_accept_all(struct oob *o, unsigned int port, int64_t deadline)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int lfd, one = 1, connected = 0, err = 0;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* A previous run may still hold the port for a moment. */
	while (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EADDRINUSE || remaining(deadline) == 0) {
			err = -errno;
			goto out;
		}
		usleep(100000);
	}
	if (listen(lfd, OOB_MAX_NODES) < 0) {
		err = -errno;
		goto out;
	}
	while (connected < o->nnodes - 1) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		struct oob_hdr h, ack;
		int pr, fd;

		pr = poll(&pfd, 1, remaining(deadline));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			err = pr == 0 ? -ETIMEDOUT : -errno;
			goto out;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		tune(fd);
		/* a stale or foreign client must not stall us for long */
		if (read_full(fd, &h, sizeof(h), now_ms() + 2000) ||
		    h.magic != OOB_MAGIC || h.session != o->session ||
		    h.rank == 0 || (int)h.rank >= o->nnodes || o->fds[h.rank] >= 0) {
			close(fd);
			continue;
		}
		ack = (struct oob_hdr){ OOB_MAGIC, o->session, 0, 0 };
		if (write_full(fd, &ack, sizeof(ack), deadline)) {
			close(fd);
			continue;
		}
		o->fds[h.rank] = fd;
		connected++;
	}
out:
	close(lfd);
	return err;
}

static int client_connect(struct oob *o, unsigned int port, int64_t deadline)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = o->peers[0] };
	int err = -ETIMEDOUT;

	while (remaining(deadline) > 0) {
		struct oob_hdr h = { OOB_MAGIC, o->session, (uint32_t)o->rank, 0 }, ack;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			tune(fd);
			err = write_full(fd, &h, sizeof(h), deadline);
			if (!err) {
				int64_t ack_deadline = now_ms() + 3000;

				err = read_full(fd, &ack, sizeof(ack),
						ack_deadline < deadline ? ack_deadline : deadline);
			}
			/*
			 * On loopback, a connect to a port nobody listens on yet can
			 * pick that very port as its source and connect to itself
			 * (TCP simultaneous open); our own header then echoes back.
			 * The root answers with rank 0, which we never send.
			 */
			if (!err && ack.magic == OOB_MAGIC && ack.session == o->session &&
			    ack.rank == 0) {
				o->fds[0] = fd;
				return 0;
			}
		} else {
			err = -errno;
		}
		close(fd);
		usleep(50000);
	}
	return err == 0 ? -ETIMEDOUT : err;
}

int oob_init_explicit(struct oob *o, int rank, int nnodes, const uint32_t *peers,
		      unsigned int session, unsigned int base_port, int timeout_ms)
{
	int64_t deadline;
	unsigned int port;
	int i, err;

	if (!o || nnodes < 1 || nnodes > OOB_MAX_NODES || rank < 0 || rank >= nnodes ||
	    (nnodes > 1 && !peers) || base_port == 0 || base_port > 65535)
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	o->rank = rank;
	o->nnodes = nnodes;
	o->session = session;
	o->timeout_ms = timeout_ms > 0 ? timeout_ms : OOB_DEFAULT_TIMEOUT_MS;
	for (i = 0; i < OOB_MAX_NODES; i++)
		o->fds[i] = -1;
	for (i = 0; i < nnodes && peers; i++)
		o->peers[i] = peers[i];
	if (nnodes == 1)
		return 0;
	port = base_port + session % 1000;
	if (port > 65535)
		return -EINVAL;
	deadline = now_ms() + o->timeout_ms;
	err = rank == 0 ? root_accept_all(o, port, deadline) : client_connect(o, port, deadline);
	if (err)
		oob_fini(o);
	return err;
}

int oob_init(struct oob *o, unsigned int session, int timeout_ms)
{
	uint32_t peers[OOB_MAX_NODES];
	const char *p = getenv("EXA_OOB_PORT");
	unsigned int port = OOB_DEFAULT_PORT;
	int rank, nnodes, err;

	err = oob_from_env(&rank, &nnodes, peers, OOB_MAX_NODES);
	if (err)
		return err;
	if (p && *p)
		port = (unsigned int)strtoul(p, NULL, 10);
	return oob_init_explicit(o, rank, nnodes, peers, session, port, timeout_ms);
}

int oob_allgather(struct oob *o, const void *mine, void *all, size_t len)
{
	int64_t deadline;
	char *out = all;
	int r, err;

	if (!o || (!all && len) || len > OOB_MAX_MSG / OOB_MAX_NODES)
		return -EINVAL;
	if (len && mine != out + (size_t)o->rank * len)
		memmove(out + (size_t)o->rank * len, mine, len);
	if (o->nnodes == 1)
		return 0;
	deadline = now_ms() + o->timeout_ms;
	if (o->rank != 0) {
		err = send_msg(o, o->fds[0], out + (size_t)o->rank * len, len, deadline);
		if (!err)
			err = recv_msg(o, o->fds[0], out, len * (size_t)o->nnodes, deadline, NULL);
		return err;
	}
	for (r = 1; r < o->nnodes; r++) {
		uint32_t from;

		err = recv_msg(o, o->fds[r], out + (size_t)r * len, len, deadline, &from);
		if (err)
			return err;
		if ((int)from != r)
			return -EPROTO;
	}
	for (r = 1; r < o->nnodes; r++) {
		err = send_msg(o, o->fds[r], out, len * (size_t)o->nnodes, deadline);
		if (err)
			return err;
	}
	return 0;
}

int oob_barrier(struct oob *o)
{
	return oob_allgather(o, NULL, NULL, 0);
}

int oob_bcast(struct oob *o, void *buf, size_t len, int root)
{
	char *all;
	int err;

	if (!o || (!buf && len) || root < 0 || root >= o->nnodes)
		return -EINVAL;
	all = calloc((size_t)o->nnodes, len ? len : 1);
	if (!all)
		return -ENOMEM;
	err = oob_allgather(o, buf, all, len);
	if (!err)
		memcpy(buf, all + (size_t)root * len, len);
	free(all);
	return err;
}

void oob_fini(struct oob *o)
{
	int i;

	if (!o)
		return;
	for (i = 0; i < OOB_MAX_NODES; i++) {
		if (o->fds[i] >= 0)
			close(o->fds[i]);
		o->fds[i] = -1;
	}
}
