// SPDX-License-Identifier: MIT
/* What exanet-rdma-bw and exanet-rdma-lat share: see rdma_tool.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rdma_tool.h"

int rt_setup(struct rt_ctx *c, const char *device, size_t buflen, int odp, int thp)
{
	int pop = odp || thp ? 0 : MAP_POPULATE;
	int err;

	memset(c, 0, sizeof(*c));
	c->buflen = buflen;
	c->odp = odp;
	err = exanet_open(device, &c->dev);
	if (err) {
		fprintf(stderr, "open %s: %s\n", device ? device : EXANET_DEFAULT_DEVICE,
			strerror(-err));
		return err;
	}
	c->buf = mmap(NULL, 2 * buflen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | pop, -1, 0);
	c->notif = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | pop, -1, 0);
	if (c->buf == MAP_FAILED || c->notif == MAP_FAILED) {
		fprintf(stderr, "mmap: %s\n", strerror(errno));
		return -ENOMEM;
	}
	if (thp && madvise(c->buf, 2 * buflen, MADV_HUGEPAGE)) {
		err = -errno;
		fprintf(stderr, "madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
		return err;
	}
	if (odp) {
		err = exanet_reg_mr_implicit(c->dev, 0, &c->mr_buf);
		c->mr_notif = c->mr_buf;
	} else {
		memset(c->buf, 0x5a, 2 * buflen);
		err = exanet_reg_mr(c->dev, c->buf, 2 * buflen, 0, &c->mr_buf);
		if (!err)
			err = exanet_reg_mr(c->dev, c->notif, 4096, 0, &c->mr_notif);
	}
	if (err) {
		size_t total = ((2 * buflen + 4095) & ~(size_t)4095) + 4096;
		struct rlimit rl;

		fprintf(stderr, "register memory: %s\n", strerror(-err));
		if (err == -ENOMEM && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
		    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < total)
			fprintf(stderr, "the run registers %zu KiB but RLIMIT_MEMLOCK is %llu KiB: "
				"use smaller --sizes or raise it (ulimit -l)\n", total >> 10,
				(unsigned long long)rl.rlim_cur >> 10);
		return err;
	}
	err = exanet_rdma_alloc(c->dev, &c->rdma);
	if (err) {
		fprintf(stderr, "RDMA page: %s\n", strerror(-err));
		return err;
	}
	return 0;
}

void rt_teardown(struct rt_ctx *c)
{
	if (c->dev)
		exanet_close(c->dev);	/* frees page and registrations */
	if (c->buf && c->buf != MAP_FAILED)
		munmap(c->buf, 2 * c->buflen);
	if (c->notif && c->notif != MAP_FAILED)
		munmap(c->notif, 4096);
}

/* Fill our part of the hello: receive half of buf, notification page. */
static void rt_hello_fill(struct rt_ctx *c, struct rt_hello *h)
{
	struct exanet_raddr ra;

	h->magic = RT_MAGIC;
	h->node = c->mr_buf->node;
	h->rank = c->mr_buf->rank;
	exanet_mr_raddr(c->mr_buf, c->buf + c->buflen, &ra);
	exanet_raddr_encode(&ra, h->buf);
	exanet_mr_raddr(c->mr_notif, c->notif, &ra);
	exanet_raddr_encode(&ra, h->notif);
}

static int rt_hello_take(struct rt_ctx *c, const struct rt_hello *h)
{
	if (h->magic != RT_MAGIC)
		return -EPROTO;
	if (h->status)
		return h->status;
	if (exanet_raddr_decode(h->buf, &c->peer_buf) ||
	    exanet_raddr_decode(h->notif, &c->peer_notif))
		return -EPROTO;
	c->peer_node = h->node;
	return 0;
}

int rt_rendezvous(const char *tool, struct pp_opts *o, struct rt_hello *peer)
{
	int fd, lfd;

	if (o->client) {
		fd = pp_tcp_connect(o->oob_host, o->oob_port, o->timeout_s);
		if (fd < 0) {
			fprintf(stderr, "%s: connect %s:%u: %s\n", tool, o->oob_host, o->oob_port,
				strerror(-fd));
			return -1;
		}
		return fd;
	}
	lfd = pp_tcp_listen(o->oob_host[0] ? o->oob_host : NULL, o->oob_port);
	if (lfd < 0) {
		fprintf(stderr, "%s: listen on port %u: %s\n", tool, o->oob_port, strerror(-lfd));
		return -1;
	}
	fd = pp_tcp_accept(lfd, 600);
	close(lfd);
	if (fd < 0) {
		fprintf(stderr, "%s: accept: %s\n", tool, strerror(-fd));
		return -1;
	}
	if (pp_read_full(fd, peer, sizeof(*peer), o->timeout_s) || peer->magic != RT_MAGIC) {
		fprintf(stderr, "%s: bad handshake\n", tool);
		close(fd);
		return -1;
	}
	if (pp_run_adopt(tool, &peer->run, RT_MAX_SIZE, o->sizes, &o->nsizes, &o->iters,
			 &o->warmup)) {
		close(fd);
		return -1;
	}
	return fd;
}

unsigned int rt_max_size(const struct pp_opts *o)
{
	for (unsigned int i = 0; i < o->nsizes; i++)
		if (!o->sizes[i] || o->sizes[i] > RT_MAX_SIZE)
			return 0;
	return pp_max_size(o->sizes, o->nsizes);
}

int rt_hello_exchange(const char *tool, struct rt_ctx *c, const struct pp_opts *o, int err,
		      uint32_t mode, int fd, struct rt_hello *peer)
{
	struct rt_hello mine;

	memset(&mine, 0, sizeof(mine));
	if (!err)
		rt_hello_fill(c, &mine);
	mine.magic = RT_MAGIC;
	mine.status = err;
	pp_run_offer(&mine.run, o->sizes, o->nsizes, o->iters, o->warmup, mode);
	if (pp_write_full(fd, &mine, sizeof(mine), o->timeout_s)) {
		fprintf(stderr, "%s: handshake send failed\n", tool);
		return -1;
	}
	if (o->client && pp_read_full(fd, peer, sizeof(*peer), o->timeout_s)) {
		fprintf(stderr, "%s: handshake receive failed\n", tool);
		return -1;
	}
	if (err)
		return -1;
	err = rt_hello_take(c, peer);
	if (err) {
		fprintf(stderr, "%s: peer: %s\n", tool, strerror(-err));
		return -1;
	}
	return 0;
}

long long rt_odp_faults(const struct rt_ctx *c)
{
	char line[256];
	unsigned int r;
	long long f, v = -1;
	FILE *fp = fopen("/sys/class/exanet/exanet0/rdma_odp", "re");

	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "rank %u faults %lld", &r, &f) == 2 && r == c->mr_buf->rank)
			v = f;
	fclose(fp);
	return v;
}

unsigned long rt_iters_for(unsigned int size, unsigned long max)
{
	unsigned long n = (32ul << 20) / size;

	if (n < 8)
		n = 8;
	return n < max ? n : max;
}
