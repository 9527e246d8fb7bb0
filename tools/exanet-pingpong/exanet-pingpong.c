// SPDX-License-Identifier: MIT
/*
 * exanet-pingpong: user-level (kernel-bypass) ping-pong latency between two
 * nodes over the ExaNet packetizer -> mailbox path.
 *
 * Setup: the server listens on a TCP port of the management network; the
 * client connects, both exchange node id + mailbox id and the run
 * parameters, then the timed loop runs purely through libexanet: no system
 * calls per iteration (clock_gettime is the vDSO; --no-timing removes even
 * that).  A final TCP exchange reports the server's error count.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libexanet.h>

#include "pp_common.h"

#define TOOL "exanet-pingpong"
#define HS_MAGIC 0x45505050u	/* "EPPP" */
#define HS_VERSION 2	/* 2: the run parameters as struct pp_run */

/* Handshake, both directions (the server's run parameters are zero). */
struct handshake {
	uint32_t magic;
	uint32_t version;
	uint32_t node_id;
	uint32_t mbox;
	struct pp_run run;
	int32_t status;		/* server reply: 0 or negative errno */
	uint32_t pad;
};

struct final_report {
	uint32_t magic;
	uint32_t pad;
	uint64_t errors;
	uint64_t echoed;
};

static void usage(FILE *f)
{
	fprintf(f,
PP_HELP_USAGE(TOOL)
"       " TOOL " --client --oob HOST:PORT [--peer-node N] [options]\n"
"\n"
"One-way latency (RTT/2) of ExaNet packetizer->mailbox messages between two\n"
"nodes.  Mailbox ids are exchanged over a TCP connection on the management\n"
"network (default port %u).\n"
"\n"
"  -s, --server           wait for a client and echo its messages\n"
"  -c, --client           drive the measurement\n"
"  -o, --oob HOST:PORT    server: [HOST:]PORT to listen on; client: server address\n"
"  -n, --peer-node N      expected fabric node id of the server (checked)\n"
"  -S, --sizes LIST       message sizes 1..64, e.g. 8,16,64 or 1-64 (default 1,2,4,8,16,32,48,56,64)\n"
PP_HELP_ROUND_TRIPS
"  -d, --device PATH      ExaNet device (default " EXANET_DEFAULT_DEVICE ")\n"
"      --slots N          mailbox slots, power of two (default 64)\n"
"  -t, --timeout SEC      per-message and connection timeout (default 10)\n"
"      --yield            wait with the library's waits (spin ~20 us, then yield the\n"
"                         CPU): for a server and client on one CPU; default: busy-poll\n"
"      --sleep            receive by sleeping until the NI's interrupt (exanet_event_wait,\n"
"                         no spinning): the one-way figure is then a wake-up's latency\n"
PP_HELP_SAMPLES
"      --no-timing        no clock read per iteration: only the total time per size\n"
"                         is measured (avg only); for syscall counting\n"
PP_HELP_CLOCK
PP_HELP_JSON
PP_HELP_TAIL
"System calls: the steady-state loop makes none (with --yield, a wait longer than\n"
"~20 us yields; with --sleep, every receive arms and polls): stores/loads to the mapped\n"
"pages, and the latency timer is clock_gettime(CLOCK_MONOTONIC) through the\n"
"vDSO, or the calibrated TSC where the clocksource has no vDSO (see --clock).\n"
"To verify, run both sides under 'strace -f -c' with two --iters values N1, N2\n"
"and compute (calls(N2) - calls(N1)) / (N2 - N1), which should be 0.\n"
"\n"
"Exit status: 0 success, 1 runtime error, 2 usage error.\n", PP_DEFAULT_PORT);
}

static const struct pp_tool exanet_pp_tool = {
	.name = TOOL,
	.max_size = EXANET_MAX_PAYLOAD,
	.default_timeout_s = 10,
	.has_device = 1,
	.usage = usage,
};

struct endpoint {
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mbox;
};

static int endpoint_open(const struct pp_opts *o, struct endpoint *ep)
{
	int err;

	memset(ep, 0, sizeof(*ep));
	err = exanet_open(o->device, &ep->dev);
	if (err) {
		fprintf(stderr, TOOL ": open %s: %s\n",
			o->device ? o->device : EXANET_DEFAULT_DEVICE, strerror(-err));
		return err;
	}
	err = exanet_pkt_alloc(ep->dev, &ep->pkt);
	if (err) {
		fprintf(stderr, TOOL ": packetizer interface: %s\n", strerror(-err));
		return err;
	}
	err = exanet_mbox_alloc(ep->dev, o->slots, &ep->mbox);
	if (err) {
		fprintf(stderr, TOOL ": mailbox (%u slots): %s\n", o->slots, strerror(-err));
		return err;
	}
	return 0;
}

static void endpoint_close(struct endpoint *ep)
{
	exanet_close(ep->dev);	/* frees interfaces too */
}

/* Our side of the handshake: where our mailbox is. */
static void handshake_init(struct handshake *h, const struct endpoint *ep)
{
	memset(h, 0, sizeof(*h));
	h->magic = HS_MAGIC;
	h->version = HS_VERSION;
	h->node_id = exanet_node_id(ep->dev);
	h->mbox = exanet_mbox_id(ep->mbox);
}

/*
 * Deadline of a busy-poll loop: the clock is read only every 4096 polls (no
 * system call in steady state), so the timeout starts after the first ones.
 */
struct poll_deadline {
	int64_t end;
	unsigned long spins;
};

static int poll_expired(struct poll_deadline *d, int64_t timeout_ns)
{
	if (++d->spins % 4096)
		return 0;
	if (!d->end) {
		d->end = pp_timer_ns() + timeout_ns;
		return 0;
	}
	return pp_timer_ns() > d->end;
}

static int send_one(struct endpoint *ep, uint32_t node, uint32_t mbox, const void *buf,
		    unsigned int len, int64_t timeout_ns, int *chan)
{
	struct poll_deadline dl = { 0, 0 };
	int c;

	/* All four channels ONGOING only if ACKs are slow: keep trying. */
	while ((c = exanet_send(ep->pkt, node, mbox, buf, len)) == -EAGAIN)
		if (poll_expired(&dl, timeout_ns))
			return -ETIMEDOUT;
	if (c < 0)
		return c;
	*chan = c;
	return 0;
}

/*
 * Waits.  By default the tool busy-polls (no system call, whatever the
 * wait: it measures the NI, not the scheduler); --yield uses the library's
 * waits, which spin for about 20 us and then yield the CPU, for a server
 * and client sharing one CPU; --sleep receives by sleeping on the NI's
 * interrupt (the send channel's wait is then --yield's).
 */
enum pp_wait { WAIT_BUSY, WAIT_YIELD, WAIT_SLEEP };

static enum pp_wait wait_mode(const struct pp_opts *o)
{
	return o->sleep ? WAIT_SLEEP : o->yield ? WAIT_YIELD : WAIT_BUSY;
}

/* Armed before the queue is checked, so a message that arrives between the
 * check and the sleep ends the sleep (exanet_event_wait()). */
static ssize_t recv_sleeping(struct endpoint *ep, void *buf, size_t len, int64_t timeout_ns)
{
	int64_t end = pp_timer_ns() + timeout_ns;
	ssize_t n;
	int r = exanet_event_arm(ep->dev);

	if (r < 0)
		return r;
	while ((n = exanet_recv(ep->mbox, buf, len, NULL)) == 0) {
		int64_t left_ms = (end - pp_timer_ns()) / 1000000;

		if (left_ms <= 0)
			return -ETIMEDOUT;
		r = exanet_event_wait(ep->dev, left_ms > 60000 ? 60000 : (int)left_ms);
		if (r < 0)
			return r;
	}
	return n;
}

static ssize_t recv_one(struct endpoint *ep, void *buf, size_t len, int64_t timeout_ns,
			enum pp_wait wait)
{
	struct poll_deadline dl = { 0, 0 };
	ssize_t n;

	if (wait == WAIT_SLEEP)
		return recv_sleeping(ep, buf, len, timeout_ns);
	if (wait == WAIT_YIELD)
		return exanet_recv_wait(ep->mbox, buf, len, NULL, timeout_ns);
	while ((n = exanet_recv(ep->mbox, buf, len, NULL)) == 0)
		if (poll_expired(&dl, timeout_ns))
			return -ETIMEDOUT;
	return n;
}

static int wait_chan(struct endpoint *ep, unsigned int chan, int64_t timeout_ns, uint64_t *st,
		     enum pp_wait wait)
{
	struct poll_deadline dl = { 0, 0 };

	if (wait != WAIT_BUSY)
		return exanet_wait(ep->pkt, chan, timeout_ns, st);
	for (;;) {
		*st = exanet_chan_status(ep->pkt, chan);
		if (EXANET_ST_STATE(*st) != EXANET_CHAN_ONGOING)
			return exanet_status_errno(*st);
		if (poll_expired(&dl, timeout_ns))
			return -EINPROGRESS;
	}
}

static int check_chan(struct endpoint *ep, int chan, int64_t timeout_ns, enum pp_wait wait)
{
	uint64_t st;
	int err;

	if (chan < 0)
		return 0;
	err = wait_chan(ep, (unsigned int)chan, timeout_ns, &st, wait);
	if (err)
		fprintf(stderr, TOOL ": send on channel %d: %s (state %s, reason %s)\n", chan,
			strerror(-err), exanet_chan_state_str(EXANET_ST_STATE(st)),
			exanet_nack_reason_str(EXANET_ST_REASON(st)));
	return err;
}

static int run_server(const struct pp_opts *o)
{
	struct endpoint ep;
	struct handshake hs, reply;
	struct final_report fin = { .magic = HS_MAGIC };
	int64_t tmo = (int64_t)(o->timeout_s * 1e9);
	uint8_t buf[EXANET_MAX_PAYLOAD];
	uint64_t total, k;
	int lfd = -1, fd = -1, err, prev_chan = -1;

	err = endpoint_open(o, &ep);
	if (err)
		goto out;
	lfd = pp_tcp_listen(o->oob_host, o->oob_port);
	if (lfd < 0) {
		err = lfd;
		fprintf(stderr, TOOL ": listen on %s:%u: %s\n", o->oob_host[0] ? o->oob_host : "*",
			o->oob_port, strerror(-err));
		goto out;
	}
	if (o->verbose)
		fprintf(stderr, TOOL ": node %u mailbox %u, waiting on port %u\n",
			exanet_node_id(ep.dev), exanet_mbox_id(ep.mbox), o->oob_port);
	/* the client may take a while to start: wait long for it */
	fd = pp_tcp_accept(lfd, o->timeout_s * 30);
	if (fd < 0) {
		err = fd;
		fprintf(stderr, TOOL ": waiting for a client: %s\n", strerror(-err));
		goto out;
	}
	err = pp_read_full(fd, &hs, sizeof(hs), o->timeout_s);
	if (err || hs.magic != HS_MAGIC || hs.version != HS_VERSION ||
	    hs.run.nsizes == 0 || hs.run.nsizes > PP_MAX_SIZES || hs.mbox > EXANET_DB_MBOX_MASK ||
	    hs.node_id > EXANET_DB_NODE_MASK) {
		fprintf(stderr, TOOL ": bad handshake from client%s%s\n", err ? ": " : "",
			err ? strerror(-err) : "");
		err = err ? err : -EPROTO;
		goto out;
	}
	handshake_init(&reply, &ep);
	err = pp_write_full(fd, &reply, sizeof(reply), o->timeout_s);
	if (err)
		goto out;

	total = (hs.run.iters + hs.run.warmup) * hs.run.nsizes;
	/* steady state: echo every message back, no system calls */
	for (k = 0; k < total; k++) {
		ssize_t n = recv_one(&ep, buf, sizeof(buf), tmo, wait_mode(o));

		if (n < 0) {
			fprintf(stderr, TOOL ": receive %lu/%lu: %s\n", (unsigned long)k,
				(unsigned long)total, strerror((int)-n));
			err = (int)n;
			break;
		}
		if (check_chan(&ep, prev_chan, tmo, wait_mode(o)))
			fin.errors++;
		err = send_one(&ep, hs.node_id, hs.mbox, buf, (unsigned int)n, tmo, &prev_chan);
		if (err) {
			fprintf(stderr, TOOL ": echo: %s\n", strerror(-err));
			break;
		}
	}
	if (!err && check_chan(&ep, prev_chan, tmo, wait_mode(o)))
		fin.errors++;
	fin.echoed = k;
	pp_write_full(fd, &fin, sizeof(fin), o->timeout_s);
	if (!o->json && !err)
		printf("# " TOOL " server: echoed %lu messages, %lu send errors\n",
		       (unsigned long)k, (unsigned long)fin.errors);
	if (!err && fin.errors)
		err = -EIO;
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	endpoint_close(&ep);
	return err ? 1 : 0;
}

static int run_client(const struct pp_opts *o)
{
	struct endpoint ep;
	struct handshake hs, reply;
	struct final_report fin;
	struct pp_result res[PP_MAX_SIZES];
	int64_t tmo = (int64_t)(o->timeout_s * 1e9);
	uint8_t out[EXANET_MAX_PAYLOAD], in[EXANET_MAX_PAYLOAD];
	uint64_t *rtt = NULL;
	unsigned int s;
	char desc[128];
	int fd = -1, err, chan = -1;

	err = endpoint_open(o, &ep);
	if (err)
		goto out;
	rtt = calloc(o->iters, sizeof(*rtt));
	if (!rtt) {
		err = -ENOMEM;
		goto out;
	}
	fd = pp_tcp_connect(o->oob_host, o->oob_port, o->timeout_s * 3);
	if (fd < 0) {
		err = fd;
		fprintf(stderr, TOOL ": connect to %s:%u: %s\n", o->oob_host, o->oob_port,
			strerror(-err));
		goto out;
	}
	handshake_init(&hs, &ep);
	pp_run_offer(&hs.run, o->sizes, o->nsizes, o->iters, o->warmup, 0);
	err = pp_write_full(fd, &hs, sizeof(hs), o->timeout_s);
	if (!err)
		err = pp_read_full(fd, &reply, sizeof(reply), o->timeout_s);
	if (err || reply.magic != HS_MAGIC || reply.status) {
		fprintf(stderr, TOOL ": handshake with server failed: %s\n",
			strerror(err ? -err : (reply.status ? -reply.status : EPROTO)));
		err = err ? err : -EPROTO;
		goto out;
	}
	if (o->peer_node >= 0 && reply.node_id != (uint32_t)o->peer_node) {
		fprintf(stderr, TOOL ": server is fabric node %u, --peer-node says %ld\n",
			reply.node_id, o->peer_node);
		err = -EINVAL;
		goto out;
	}
	if (o->verbose)
		fprintf(stderr, TOOL ": node %u mbox %u -> node %u mbox %u\n", hs.node_id,
			hs.mbox, reply.node_id, reply.mbox);

	for (s = 0; s < o->nsizes && !err; s++) {
		unsigned int len = o->sizes[s];
		unsigned long it, total = o->warmup + o->iters;
		int64_t t_start = 0, t0;

		memset(&res[s], 0, sizeof(res[s]));
		res[s].size = len;
		for (it = 0; it < total; it++) {
			ssize_t n;

			pp_fill_pattern(out, len, (uint32_t)(it * 131 + len));
			if (it == o->warmup)
				t_start = pp_timer_ns();
			t0 = o->no_timing ? 0 : pp_timer_ns();
			err = send_one(&ep, reply.node_id, reply.mbox, out, len, tmo, &chan);
			if (err) {
				fprintf(stderr, TOOL ": send: %s\n", strerror(-err));
				break;
			}
			n = recv_one(&ep, in, sizeof(in), tmo, wait_mode(o));
			if (!o->no_timing && it >= o->warmup)
				rtt[it - o->warmup] = (uint64_t)(pp_timer_ns() - t0);
			if (n < 0) {
				err = (int)n;
				fprintf(stderr, TOOL ": size %u iteration %lu: no reply: %s\n", len,
					it, strerror((int)-n));
				break;
			}
			if ((unsigned int)n != len || memcmp(in, out, len))
				res[s].errors++;
			if (check_chan(&ep, chan, tmo, wait_mode(o)))
				res[s].errors++;
		}
		if (err || (err = pp_size_result(o, TOOL, len, rtt, t_start, &res[s])))
			break;
		if (o->verbose)
			fprintf(stderr, TOOL ": size %u done (%.3f us)\n", len, res[s].median_us);
	}
	if (err)
		goto out;
	if (pp_read_full(fd, &fin, sizeof(fin), o->timeout_s) == 0 && fin.errors)
		fprintf(stderr, TOOL ": server reported %lu send errors\n",
			(unsigned long)fin.errors);

	snprintf(desc, sizeof(desc), "node %u -> node %u", hs.node_id, reply.node_id);
	if (o->json)
		pp_print_json(TOOL, "exanet", hs.node_id, reply.node_id, o, res, o->nsizes);
	else
		pp_print_table(TOOL, "exanet", desc, o, res, o->nsizes);
	for (s = 0; s < o->nsizes; s++)
		if (res[s].errors)
			err = -EIO;
out:
	if (fd >= 0)
		close(fd);
	free(rtt);
	endpoint_close(&ep);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	return pp_main(argc, argv, &exanet_pp_tool, run_server, run_client);
}
