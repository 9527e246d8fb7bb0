// SPDX-License-Identifier: MIT
/*
 * exanet-rdma-bw: RDMA write / read bandwidth between two nodes (OSU
 * osu_bw / osu_bibw style).  Remote addresses are exchanged over TCP on the
 * management network; the timed loop only stores descriptors and polls
 * completion records in memory: no system calls.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdma_tool.h"

#define TOOL "exanet-rdma-bw"
#define MODE_READ 1
#define MODE_BIDIR 2
#define MODE_ITERS_EXACT 4	/* --iters given: exactly that many per size */
#define MODE_ODP 8		/* on-demand (implicit) registrations on both sides */
#define MODE_FRESH 16		/* with MODE_ODP: every transfer on memory never used */
#define MODE_THP 32		/* buffers in transparent huge pages */
#define MAX_WINDOW 32
#define FRESH_MAX_BYTES (1ul << 30)	/* per half of the buffer */

struct result {
	unsigned int size;
	unsigned long iters;
	double seconds, mbps, peer_mbps;
	unsigned long errors;
	double faults;			/* on-demand faults, both sides */
};

/* Exchanged after each size. */
struct rt_report {
	double mbps;
	double faults;
};

static void usage(FILE *f)
{
	fprintf(f,
PP_HELP_USAGE(TOOL)
PP_HELP_USAGE_CLIENT(TOOL)
"\n"
"RDMA bandwidth between two nodes: the client writes (or reads) windows of\n"
"back-to-back transfers into (from) the server's registered buffer; with\n"
"--bidir both sides do so at once and the sum is reported.  Addresses are\n"
"exchanged over TCP (default port %u); the client chooses the parameters.\n"
"\n"
"  -s, --server           passive side\n"
"  -c, --client           active side (prints the results)\n"
"  -o, --oob HOST:PORT    TCP rendezvous (client: server address)\n"
"  -S, --sizes LIST       transfer sizes 1..4194304 bytes: 1,4096, or 1-4194304 =\n"
"                         1,2,4,..,4194304 (default 1-2097152)\n"
"  -i, --iters N          transfers per size (default: ~32 MiB per size, >= 8)\n"
"  -w, --warmup N         untimed transfers per size (default 4)\n"
"  -W, --window N         transfers in flight, 1..%d (default 8)\n"
"  -r, --read             RDMA read instead of write\n"
"  -b, --bidir            both directions at once (osu_bibw)\n"
"  -O, --odp              register on demand (implicit registration, nothing\n"
"                         pinned); the warm-up transfers fault the buffers in\n"
"  -F, --fresh            with --odp: every transfer uses memory the NI never\n"
"                         touched (first-touch cost; needs --iters, uses\n"
"                         (iters + warmup) x size bytes per side)\n"
"  -H, --thp              buffers in transparent huge pages (madvise\n"
"                         MADV_HUGEPAGE, both sides; with --reg-time too)\n"
"  -R, --reg-time BYTES   no peer: time the registration of BYTES, pinned and\n"
"                         on demand, and the CPU's first write of BYTES of\n"
"                         fresh memory (first-touch baseline), and exit\n"
"  -d, --device PATH      ExaNet device (default " EXANET_DEFAULT_DEVICE ")\n"
"  -t, --timeout SEC      per transfer / rendezvous timeout (default 30)\n"
"  -j, --json             one JSON object on stdout\n"
PP_HELP_TAIL
"Exit status: 0 success, 1 transfer or setup error, 2 usage error.\n",
		RT_DEFAULT_PORT, MAX_WINDOW);
}

/* The options of this tool only: o->flags (MODE_*), and these two. */
static unsigned int window = 8;		/* --window: transfers in flight */
static unsigned long reg_bytes;		/* --reg-time: registration cost only */

static int bw_opt(struct pp_opts *o, int c, const char *arg)
{
	unsigned long v = 0;

	switch (c) {
	case 'W':
		if (tool_opt_ulong(TOOL, "--window", arg, 1, MAX_WINDOW, &v))
			return -EINVAL;
		window = (unsigned int)v;
		return 0;
	case 'r': o->flags |= MODE_READ; return 0;
	case 'b': o->flags |= MODE_BIDIR; return 0;
	case 'O': o->flags |= MODE_ODP; return 0;
	case 'F': o->flags |= MODE_FRESH; return 0;
	case 'H': o->flags |= MODE_THP; return 0;
	case 'R':
		if (tool_opt_ulong(TOOL, "--reg-time", arg, 4096, 1ul << 34, &reg_bytes))
			return -EINVAL;
		o->no_peer = 1;
		return 0;
	}
	return -EINVAL;
}

static int bw_check(struct pp_opts *o)
{
	if (o->iters_given)
		o->flags |= MODE_ITERS_EXACT;
	if (reg_bytes)
		return 0;
	if ((o->flags & MODE_FRESH) &&
	    (!(o->flags & MODE_ODP) || (o->client && !(o->flags & MODE_ITERS_EXACT)))) {
		fprintf(stderr, TOOL ": --fresh needs --odp, and on the client --iters\n");
		return -EINVAL;
	}
	return 0;
}

static const struct option tool_lopts[] = {
	{ "window", required_argument, NULL, 'W' },
	{ "read", no_argument, NULL, 'r' },
	{ "bidir", no_argument, NULL, 'b' },
	{ "odp", no_argument, NULL, 'O' },
	{ "fresh", no_argument, NULL, 'F' },
	{ "thp", no_argument, NULL, 'H' },
	{ "reg-time", required_argument, NULL, 'R' },
	{ NULL, 0, NULL, 0 }
};

static const struct pp_tool tool = {
	RT_PP_TOOL(TOOL, RT_DEFAULT_PORT),
	.usage = usage,
	.default_iters = 100000,
	.default_warmup = 4,
	.tool_lopts = tool_lopts,
	.tool_shortopts = "W:rbOFHR:",
	.tool_opt = bw_opt,
	.check = bw_check,
};

/* Fresh anonymous memory for --reg-time, in huge pages with --thp. */
static void *fresh_map(unsigned long bytes, int thp)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, TOOL ": mmap %lu bytes: %s\n", bytes, strerror(errno));
		return NULL;
	}
	if (thp && madvise(p, bytes, MADV_HUGEPAGE)) {
		fprintf(stderr, TOOL ": madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
		munmap(p, bytes);
		return NULL;
	}
	return p;
}

/*
 * --reg-time: microseconds to register (and, for pinned memory, fault in
 * and pin) bytes of fresh anonymous memory, pinned then on demand.
 */
static double reg_us(struct exanet_dev *dev, unsigned long bytes, uint32_t access, int thp)
{
	struct exanet_mr *mr;
	int64_t t0, t1;
	void *p = fresh_map(bytes, thp);
	int err;

	if (!p)
		return -1;
	t0 = exanet_now_ns();
	err = exanet_reg_mr(dev, p, bytes, access, &mr);
	t1 = exanet_now_ns();
	if (!err)
		exanet_dereg_mr(mr);
	munmap(p, bytes);
	if (err) {
		fprintf(stderr, TOOL ": register %lu bytes (access %#x): %s\n", bytes, access,
			strerror(-err));
		return -1;
	}
	return (t1 - t0) / 1e3;
}

/*
 * --reg-time: microseconds for the CPU to write bytes of fresh anonymous
 * memory (page faults, zeroing, the write): what first touch costs without
 * the NI, the baseline of on-demand first-touch transfers.
 */
static double touch_us(unsigned long bytes, int thp)
{
	int64_t t0, t1;
	void *p = fresh_map(bytes, thp);

	if (!p)
		return -1;
	t0 = exanet_now_ns();
	memset(p, 0x5a, bytes);
	t1 = exanet_now_ns();
	munmap(p, bytes);
	return (t1 - t0) / 1e3;
}

static int reg_time(const struct pp_opts *o)
{
	struct exanet_dev *dev;
	double pinned, odp, touch;
	int err = exanet_open(o->device, &dev);

	if (err) {
		fprintf(stderr, TOOL ": open: %s\n", strerror(-err));
		return 1;
	}
	pinned = reg_us(dev, reg_bytes, 0, !!(o->flags & MODE_THP));
	odp = reg_us(dev, reg_bytes, EXANET_MR_ON_DEMAND, !!(o->flags & MODE_THP));
	exanet_close(dev);
	touch = touch_us(reg_bytes, !!(o->flags & MODE_THP));
	if (pinned < 0 || odp < 0 || touch <= 0)
		return 1;
	if (o->json) {
		json_object *j = tj_bench(TOOL);

		tj_uint(j, "reg_bytes", reg_bytes);
		tj_num(j, "reg_us_pinned", "%.1f", pinned);
		tj_num(j, "reg_us_odp", "%.1f", odp);
		tj_num(j, "cpu_first_touch_mb_s", "%.1f", reg_bytes / touch);
		tj_bool(j, "thp", o->flags & MODE_THP);
		tj_print(j, 0);
	} else
		printf("register %lu bytes: pinned %.1f us, on demand %.1f us; "
		       "the CPU writes them fresh at %.1f MB/s\n", reg_bytes, pinned, odp,
		       reg_bytes / touch);
	return 0;
}

/*
 * n transfers of size bytes, window in flight, completion records in
 * memory (rt->notif[slot]).  Returns errors (transfers that failed).
 */
static long run_transfers(struct rt_ctx *rt, const struct pp_opts *o, unsigned int size,
			  unsigned long n, int64_t timeout_ns, int *first_err,
			  unsigned long *seq)
{
	unsigned long nslots = (o->flags & MODE_FRESH) ? rt->buflen / size : 1;
	int rd = o->flags & MODE_READ;
	unsigned int base = rd ? EXANET_RDMA_RCHAN(0) : EXANET_RDMA_WCHAN(0);
	unsigned long posted = 0, done = 0;
	unsigned int inflight = 0, head = 0;
	long errors = 0;
	struct exanet_rdma_opts op = { 0 };

	while (done < n) {
		while (posted < n && inflight < window) {
			unsigned int k = (head + inflight) % window;
			unsigned int slot = base + k;
			/* fresh: transfer i uses slot i of each half, never reused */
			size_t off = (size_t)((*seq)++ % nslots) * size;
			struct exanet_raddr peer = rt->peer_buf;
			int ret;

			exanet_raddr_add(&peer, off);
			op.lcomp = &rt->notif[slot];
			op.tag = posted;
			do {
				if (rd)
					ret = exanet_rdma_post_read_on(rt->rdma, slot,
								      rt->buf + rt->buflen + off,
								      &peer, size, &op);
				else
					ret = exanet_rdma_post_write_on(rt->rdma, slot,
								       rt->buf + off, &peer,
								       size, &op);
			} while (ret == -EBUSY);
			if (ret < 0) {
				if (!*first_err)
					*first_err = ret;
				return -1;
			}
			posted++;
			inflight++;
		}
		{
			struct exanet_rdma_notif rec;
			int ret = exanet_rdma_notif_wait(&rt->notif[base + head], &rec, timeout_ns);

			if (ret < 0) {
				if (!*first_err)
					*first_err = ret;
				return -1;
			}
			if (rec.error) {
				errors++;
				if (!*first_err)
					*first_err = exanet_rdma_error_errno(rec.error);
			}
			head = (head + 1) % window;
			inflight--;
			done++;
		}
	}
	return errors;
}

static int barrier(int fd, double t)
{
	uint32_t x = RT_MAGIC, y = 0;

	if (pp_write_full(fd, &x, sizeof(x), t) || pp_read_full(fd, &y, sizeof(y), t))
		return -EPIPE;
	return y == RT_MAGIC ? 0 : -EPROTO;
}

int main(int argc, char **argv)
{
	struct pp_opts o;
	struct rt_ctx rt;
	struct rt_hello peer;
	struct result res[PP_MAX_SIZES];
	int64_t timeout_ns;
	int fd, err = 0, first_err = 0;
	unsigned int maxsize, i;
	int active;

	if (pp_parse_args(argc, argv, &tool, &o))
		return PP_EXIT_USAGE;
	if (reg_bytes)
		return reg_time(&o);
	timeout_ns = (int64_t)(o.timeout_s * 1e9);

	fd = rt_rendezvous(TOOL, &o, &peer);
	if (fd < 0)
		return 1;
	if (o.server) {
		o.flags = peer.run.flags & 0xffff;
		window = peer.run.flags >> 16;
		if (!window || window > MAX_WINDOW)
			window = 8;
	}
	maxsize = rt_max_size(&o);
	if (!maxsize) {
		fprintf(stderr, TOOL ": bad size\n");
		return 1;
	}

	if (o.flags & MODE_FRESH) {
		/* one slot per transfer, both halves (o.sizes: one size) */
		unsigned long bytes = (unsigned long)maxsize * (o.iters + o.warmup);

		if (o.nsizes != 1 || bytes > FRESH_MAX_BYTES) {
			fprintf(stderr, TOOL ": --fresh: one size, (iters + warmup) x size <= %lu\n",
				FRESH_MAX_BYTES);
			return 1;
		}
		err = rt_setup(&rt, o.device, bytes, 1, !!(o.flags & MODE_THP));
	} else {
		err = rt_setup(&rt, o.device, maxsize, !!(o.flags & MODE_ODP),
			       !!(o.flags & MODE_THP));
	}
	if (rt_hello_exchange(TOOL, &rt, &o, err, o.flags | (window << 16), fd, &peer))
		return 1;

	active = o.client || (o.flags & MODE_BIDIR);
	for (i = 0; i < o.nsizes; i++) {
		unsigned int size = o.sizes[i];
		unsigned long n = (o.flags & MODE_ITERS_EXACT) ? o.iters :
				  rt_iters_for(size, o.iters);
		int64_t t0, t1;
		long e = 0;
		unsigned long seq = 0;
		long long f0, f1;
		struct rt_report my = { 0 }, pr = { 0 };
		double my_mbps = 0, peer_mbps = 0;

		if (barrier(fd, o.timeout_s)) {
			fprintf(stderr, TOOL ": peer went away\n");
			return 1;
		}
		t0 = t1 = 0;
		if (active) {
			if ((o.flags & MODE_FRESH) && !(o.flags & MODE_READ))
				/* written by the CPU, never seen by the NI */
				memset(rt.buf, 0x5a, rt.buflen);
			if (o.warmup)
				e = run_transfers(&rt, &o, size, o.warmup, timeout_ns, &first_err,
						  &seq);
		}
		/* faults of the timed part only, on both sides */
		if (barrier(fd, o.timeout_s * 20)) {
			fprintf(stderr, TOOL ": peer went away\n");
			return 1;
		}
		f0 = rt_odp_faults(&rt);
		if (active) {
			t0 = exanet_now_ns();
			if (e >= 0)
				e += run_transfers(&rt, &o, size, n, timeout_ns, &first_err, &seq);
			t1 = exanet_now_ns();
			if (e >= 0 && t1 > t0)
				my_mbps = (double)size * n / ((double)(t1 - t0) / 1e9) / 1e6;
		}
		/* exchange results (the passive side's faults come with them) */
		if (barrier(fd, o.timeout_s * 20)) {
			fprintf(stderr, TOOL ": peer went away\n");
			return 1;
		}
		f1 = rt_odp_faults(&rt);
		my.mbps = my_mbps;
		my.faults = f0 >= 0 && f1 >= f0 ? (double)(f1 - f0) : 0;
		if (pp_write_full(fd, &my, sizeof(my), o.timeout_s * 20) ||
		    pp_read_full(fd, &pr, sizeof(pr), o.timeout_s * 20)) {
			fprintf(stderr, TOOL ": peer went away\n");
			return 1;
		}
		peer_mbps = pr.mbps;
		res[i].faults = my.faults + pr.faults;
		res[i].size = size;
		res[i].iters = n;
		res[i].seconds = (t1 - t0) / 1e9;
		res[i].mbps = my_mbps;
		res[i].peer_mbps = peer_mbps;
		res[i].errors = e < 0 ? n : (unsigned long)e;
		if (e < 0) {
			fprintf(stderr, TOOL ": size %u: %s\n", size, strerror(-first_err));
			break;
		}
		if (o.verbose)
			fprintf(stderr, TOOL ": %u bytes x %lu: %.1f MB/s\n", size, n,
				my_mbps + ((o.flags & MODE_BIDIR) ? peer_mbps : 0));
	}
	{
		unsigned int nres = i;
		const char *op = (o.flags & MODE_READ) ? "read" : "write";
		int bidir = !!(o.flags & MODE_BIDIR);

		if (o.client && o.json) {
			json_object *j = tj_bench(TOOL), *results;

			tj_str(j, "op", op);
			tj_bool(j, "bidir", bidir);
			tj_uint(j, "window", window);
			tj_bool(j, "odp", o.flags & MODE_ODP);
			tj_bool(j, "fresh", o.flags & MODE_FRESH);
			tj_bool(j, "thp", o.flags & MODE_THP);
			tj_uint(j, "local_node", rt.mr_buf->node);
			tj_uint(j, "peer_node", rt.peer_node);
			results = tj_results(j);
			for (i = 0; i < nres; i++) {
				json_object *r = tj_result(results, res[i].size, res[i].iters);

				tj_num(r, "seconds", "%.6f", res[i].seconds);
				tj_num(r, "mb_s", "%.2f",
				       res[i].mbps + (bidir ? res[i].peer_mbps : 0));
				tj_uint(r, "errors", res[i].errors);
				tj_num(r, "faults", "%.0f", res[i].faults);
				tj_num(r, "faults_per_s", "%.1f",
				       res[i].seconds > 0 ? res[i].faults / res[i].seconds : 0);
			}
			tj_str(j, "status", first_err ? strerror(-first_err) : "ok");
			tj_print(j, 0);
		} else if (o.client) {
			printf("# " TOOL ": RDMA %s%s, node %u -> node %u, window %u\n", op,
			       bidir ? " (bidirectional, sum)" : "", rt.mr_buf->node, rt.peer_node,
			       window);
			printf("# %10s %10s %14s %8s\n", "size", "iters", "MB/s", "errors");
			for (i = 0; i < nres; i++)
				printf("  %10u %10lu %14.2f %8lu\n", res[i].size, res[i].iters,
				       res[i].mbps + (bidir ? res[i].peer_mbps : 0), res[i].errors);
		}
	}
	rt_teardown(&rt);
	close(fd);
	return first_err ? 1 : 0;
}
