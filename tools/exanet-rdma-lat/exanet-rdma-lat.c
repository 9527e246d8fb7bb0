// SPDX-License-Identifier: MIT
/*
 * exanet-rdma-lat: RDMA latency between two nodes (osu_latency style).
 * Write mode (default): ping-pong of RDMA writes, each carrying a
 * notification to the peer; the peer waits for the notification (all data
 * landed) and answers the same way.  One-way latency = RTT / 2.
 * Read mode: the client times RDMA reads of the server's buffer (full
 * round trip, reported as is).  No system calls in the timed loop.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma_tool.h"

#define TOOL "exanet-rdma-lat"
#define NOTIF_IN 64		/* incoming notification record index */
#define LCOMP 0			/* local completion record index */
#define MODE_READ 1		/* --read (the hello's mode) */

static void usage(FILE *f)
{
	fprintf(f,
PP_HELP_USAGE(TOOL)
PP_HELP_USAGE_CLIENT(TOOL)
"\n"
"RDMA latency between two nodes.  Write (default): ping-pong of RDMA writes\n"
"with a notification at the target, one-way = RTT/2.  --read: round trip of\n"
"an RDMA read of the server's memory.  TCP rendezvous port default %u.\n"
"\n"
"  -s, --server           passive side\n"
"  -c, --client           active side (prints the results)\n"
"  -o, --oob HOST:PORT    TCP rendezvous (client: server address)\n"
"  -S, --sizes LIST       sizes 1..4194304 bytes: 8,4096, or 1-4194304 =\n"
"                         1,2,4,..,4194304 (default 1-2097152)\n"
"  -i, --iters N          timed iterations per size (default 1000, fewer above 64 KiB)\n"
"  -w, --warmup N         untimed iterations per size (default 20)\n"
"  -r, --read             RDMA read latency\n"
"  -d, --device PATH      ExaNet device (default " EXANET_DEFAULT_DEVICE ")\n"
"  -t, --timeout SEC      per operation / rendezvous timeout (default 30)\n"
"  -j, --json             one JSON object on stdout\n"
PP_HELP_TAIL
"Exit status: 0 success, 1 transfer or setup error, 2 usage error.\n",
		RT_DEFAULT_PORT + 1);
}

/* --read, the option of this tool only (o->flags) */
static int lat_opt(struct pp_opts *o, int c, const char *arg)
{
	(void)c;
	(void)arg;
	o->flags = MODE_READ;
	return 0;
}

static const struct option tool_lopts[] = {
	{ "read", no_argument, NULL, 'r' },
	{ NULL, 0, NULL, 0 }
};

static const struct pp_tool tool = {
	RT_PP_TOOL(TOOL, RT_DEFAULT_PORT + 1),
	.usage = usage,
	.default_iters = 1000,
	.default_warmup = 20,
	.max_iters = 10000000,
	.tool_lopts = tool_lopts,
	.tool_shortopts = "r",
	.tool_opt = lat_opt,
};

/* One RDMA write of size bytes to the peer, notifying it; wait local DONE. */
static int ping(struct rt_ctx *rt, unsigned int size, uint64_t tag)
{
	struct exanet_rdma_opts op = { 0 };
	struct exanet_raddr nva = rt->peer_notif;
	int slot;

	exanet_raddr_add(&nva, NOTIF_IN * sizeof(struct exanet_rdma_notif));
	op.notify_va = nva.va;
	op.tag = tag;
	do {
		slot = exanet_rdma_post_write_on(rt->rdma, EXANET_RDMA_WCHAN(0), rt->buf,
						 &rt->peer_buf, size, &op);
	} while (slot == -EBUSY);
	if (slot < 0)
		return slot;
	return 0;
}

static int wait_notif(struct rt_ctx *rt, int64_t tmo)
{
	struct exanet_rdma_notif rec;
	int ret = exanet_rdma_notif_wait(&rt->notif[NOTIF_IN], &rec, tmo);

	if (ret < 0)
		return ret;
	return rec.error ? exanet_rdma_error_errno(rec.error) : 0;
}

static int read_once(struct rt_ctx *rt, unsigned int size, int64_t tmo)
{
	struct exanet_rdma_opts op = { 0 };
	struct exanet_rdma_notif rec;
	int slot, ret;

	op.lcomp = &rt->notif[LCOMP];
	do {
		slot = exanet_rdma_post_read_on(rt->rdma, EXANET_RDMA_RCHAN(0),
						rt->buf + rt->buflen, &rt->peer_buf, size, &op);
	} while (slot == -EBUSY);
	if (slot < 0)
		return slot;
	ret = exanet_rdma_notif_wait(&rt->notif[LCOMP], &rec, tmo);
	if (ret < 0)
		return ret;
	return rec.error ? exanet_rdma_error_errno(rec.error) : 0;
}

int main(int argc, char **argv)
{
	struct pp_opts o;
	struct rt_ctx rt;
	struct rt_hello peer;
	struct pp_result res[PP_MAX_SIZES];
	uint64_t *rtt;
	int64_t tmo;
	int fd, err = 0, rd;
	unsigned int maxsize, i, nres = 0;
	unsigned long maxiters;

	if (pp_parse_args(argc, argv, &tool, &o))
		return PP_EXIT_USAGE;
	tmo = (int64_t)(o.timeout_s * 1e9);
	pp_timer_init("auto");

	fd = rt_rendezvous(TOOL, &o, &peer);
	if (fd < 0)
		return 1;
	if (o.server)
		o.flags = peer.run.flags ? MODE_READ : 0;
	rd = o.flags == MODE_READ;
	maxsize = rt_max_size(&o);
	if (!maxsize)
		return 1;
	maxiters = o.iters;
	rtt = calloc(maxiters ? maxiters : 1, sizeof(*rtt));
	if (!rtt)
		return 1;

	err = rt_setup(&rt, o.device, maxsize, 0, 0);
	if (rt_hello_exchange(TOOL, &rt, &o, err, o.flags, fd, &peer))
		return 1;

	for (i = 0; i < o.nsizes && !err; i++) {
		unsigned int size = o.sizes[i];
		unsigned long n = size > 65536 ? rt_iters_for(size, o.iters) / 4 + 4 : o.iters;
		unsigned long k;
		uint32_t sync = RT_MAGIC;

		if (n > o.iters)
			n = o.iters;
		/* clear the record before the peer may write it (it pings after the sync) */
		exanet_rdma_notif_reset(&rt.notif[NOTIF_IN]);
		if (pp_write_full(fd, &sync, 4, o.timeout_s) || pp_read_full(fd, &sync, 4, o.timeout_s)) {
			err = -EPIPE;
			break;
		}
		for (k = 0; k < o.warmup + n && !err; k++) {
			int64_t t0 = pp_timer_ns();

			if (rd) {
				if (o.client)
					err = read_once(&rt, size, tmo);
			} else if (o.client) {
				err = ping(&rt, size, k);
				if (!err)
					err = wait_notif(&rt, tmo);
			} else {
				err = wait_notif(&rt, tmo);
				if (!err)
					err = ping(&rt, size, k);
			}
			if (k >= o.warmup)
				rtt[k - o.warmup] = (uint64_t)(pp_timer_ns() - t0);
		}
		/* end of size: both sides agree before the next one */
		if (pp_write_full(fd, &err, sizeof(err), o.timeout_s * 4) ||
		    pp_read_full(fd, &sync, 4, o.timeout_s * 4)) {
			err = err ? err : -EPIPE;
			break;
		}
		if (err)
			break;
		/*
		 * pp_stats() reports half of each time (a ping-pong's round
		 * trip -> one-way): right for the write ping-pong; a read's
		 * round trip is reported whole.  (Until 2026-11-27 the write
		 * times were halved here as well: every figure was half.)
		 */
		if (rd)
			for (k = 0; k < n; k++)
				rtt[k] *= 2;
		pp_stats(rtt, n, &res[nres]);
		res[nres].size = size;
		nres++;
		if (o.verbose)
			fprintf(stderr, TOOL ": %u bytes: %.2f us\n", size, res[nres - 1].median_us);
	}
	/* the per-size reply carried the peer's err in its first 4 bytes */
	if (o.client) {
		const char *op = rd ? "read" : "write";

		if (o.json) {
			json_object *j = tj_bench(TOOL), *results;

			tj_str(j, "op", op);
			tj_str(j, "metric", rd ? "round_trip" : "one_way");
			tj_uint(j, "local_node", rt.mr_buf->node);
			tj_uint(j, "peer_node", rt.peer_node);
			tj_str(j, "clock", pp_timer_desc());
			results = tj_results(j);
			for (i = 0; i < nres; i++)
				pp_json_result(results, &res[i]);
			tj_str(j, "status", err ? strerror(-err) : "ok");
			tj_print(j, 0);
		} else {
			printf("# " TOOL ": RDMA %s %s latency, node %u <-> node %u\n", op,
			       rd ? "round-trip" : "one-way", rt.mr_buf->node, rt.peer_node);
			printf("# %10s %10s %10s %10s %10s\n", "size", "median_us", "avg_us",
			       "min_us", "p99_us");
			for (i = 0; i < nres; i++)
				printf("  %10u %10.2f %10.2f %10.2f %10.2f\n", res[i].size,
				       res[i].median_us, res[i].avg_us, res[i].min_us, res[i].p99_us);
		}
	}
	if (err)
		fprintf(stderr, TOOL ": %s\n", strerror(-err));
	rt_teardown(&rt);
	free(rtt);
	close(fd);
	return err ? 1 : 0;
}
