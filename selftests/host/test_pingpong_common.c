// SPDX-License-Identifier: GPL-2.0
/* Host tests of the ping-pong tools' option parsing and statistics. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pp_common.h"
#include "../lib/kselftest_exa.h"

static void no_usage(FILE *f)
{
	(void)f;
}

static const struct pp_tool dev_tool = {
	.name = "dev-tool", .max_size = 64, .default_timeout_s = 10,
	.opts = PP_OPT_DEVICE | PP_OPT_MBOX | PP_OPT_PEER | PP_OPT_TIMING, .usage = no_usage,
};
static const struct pp_tool net_tool = {
	.name = "net-tool", .max_size = 32, .default_timeout_s = 1,
	.opts = PP_OPT_PEER | PP_OPT_TIMING, .usage = no_usage,
};

/*
 * A tool with options of its own (as exanet-rdma-bw, velo2-pingpong):
 * --big (bit 0) takes sizes up to 4096 with other defaults, -W N a value,
 * --alone runs without a peer; its check refuses --big with --iters 7.
 */
static unsigned int own_window;

static int own_opt(struct pp_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'W':
		return tool_parse_uint(arg, 1, 32, &own_window);
	case PP_TOOL_OPT_BASE + 8:
		o->no_peer = 1;
		return 0;
	}
	if (pp_flag_opt(o, c, arg))
		return -EINVAL;
	o->max_size = 4096;
	o->default_sizes = "1024-4096";
	return 0;
}

static int own_check(struct pp_opts *o)
{
	return (o->flags & 1) && o->iters == 7 ? -EINVAL : 0;
}

static const struct option own_lopts[] = {
	{ "big", no_argument, NULL, PP_FLAG_OPT(0) },
	{ "window", required_argument, NULL, 'W' },
	{ "alone", no_argument, NULL, PP_TOOL_OPT_BASE + 8 },
	{ NULL, 0, NULL, 0 }
};

static const struct pp_tool own_tool = {
	.name = "own-tool", .max_size = 64, .default_timeout_s = 30, .opts = PP_OPT_DEVICE,
	.usage = no_usage, .default_sizes = "8,64", .default_port = 18530,
	.default_iters = 50, .default_warmup = 4, .max_iters = 1000,
	.tool_lopts = own_lopts, .tool_shortopts = "W:", .tool_opt = own_opt, .check = own_check,
};

/*
 * argv for getopt_long, which permutes it: rebuilt for every call (the
 * options' strings point into it until the next call)
 */
static int parse(const struct pp_tool *t, struct pp_opts *o, const char *args)
{
	static char buf[256];
	char *argv[16], *tok, *save = NULL;
	int argc = 0;

	snprintf(buf, sizeof(buf), "prog %s", args);
	for (tok = strtok_r(buf, " ", &save); tok && argc < 15; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	optind = 0;
	opterr = 0;
	return pp_parse_args(argc, argv, t, o);
}

TEST(parse_args_per_tool_defaults_and_limits)
{
	struct pp_opts o;

	ASSERT_EQ(0, parse(&dev_tool, &o, "--client --oob 10.42.0.2:5000 --sizes 1-64 --slots 256"));
	ASSERT_EQ(1, o.client);
	ASSERT_EQ(5000, o.oob_port);
	ASSERT_EQ(7, o.nsizes);		/* 1, 2, 4, .. 64 */
	ASSERT_EQ(256, o.slots);
	ASSERT_EQ(10, (int)o.timeout_s);
	ASSERT_EQ(0, parse(&net_tool, &o, "--server"));
	ASSERT_EQ(1, (int)o.timeout_s);
	ASSERT_EQ(9, o.nsizes);		/* the default size set */
	/* sizes are bounded per tool, device options exist only where a device does */
	ASSERT_EQ(-EINVAL, parse(&net_tool, &o, "--server --sizes 64"));
	ASSERT_EQ(-EINVAL, parse(&net_tool, &o, "--server --device /dev/exanet0"));
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server --slots 100"));
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server --client"));
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--client"));		/* no --oob */
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server extra"));
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server --clock sundial"));
}

/* --sizes: the one list syntax (test_tool_sizes), within the tool's sizes */
TEST(parse_args_sizes_lists_and_ranges)
{
	char args[512] = "--server --sizes 1";
	struct pp_opts o;

	ASSERT_EQ(0, parse(&dev_tool, &o, "--server --sizes 8,16,64"));
	ASSERT_EQ(3, o.nsizes);
	ASSERT_EQ(8, o.sizes[0]);
	ASSERT_EQ(64, o.sizes[2]);
	ASSERT_EQ(0, parse(&dev_tool, &o, "--server --sizes 1-3,60"));
	ASSERT_EQ(3, o.nsizes);		/* 1, 2 and 60 */
	ASSERT_EQ(60, o.sizes[2]);
	ASSERT_EQ(0, parse(&net_tool, &o, "--server -S 4-32"));
	ASSERT_EQ(4, o.nsizes);
	ASSERT_EQ(32, o.sizes[3]);
	ASSERT_EQ(-EINVAL, parse(&net_tool, &o, "--server --sizes 1-64"));	/* 64 > 32 */
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server --sizes 0"));
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server --sizes 8,x"));
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server --sizes 10-2"));
	for (int i = 1; i <= PP_MAX_SIZES; i++)
		strcat(args, ",1");
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, args));	/* 65 sizes */
}

/* A tool's own options, limits, defaults and checks; the groups it lacks. */
TEST(parse_args_tool_options_and_checks)
{
	struct pp_opts o;

	ASSERT_EQ(0, parse(&own_tool, &o, "--server"));
	ASSERT_EQ(18530, o.oob_port);
	ASSERT_EQ(50, o.iters);
	ASSERT_EQ(4, o.warmup);
	ASSERT_EQ(0, o.iters_given);
	ASSERT_EQ(30, (int)o.timeout_s);
	ASSERT_EQ(2, o.nsizes);
	ASSERT_EQ(0u, o.flags);
	ASSERT_EQ(0, parse(&own_tool, &o, "--client -o h:9 -W 16 -i 1000 -d /dev/x"));
	ASSERT_EQ(16u, own_window);
	ASSERT_EQ(1, o.iters_given);
	ASSERT_STREQ("/dev/x", o.device);
	/* --big: larger sizes and its own defaults, before or after --sizes */
	ASSERT_EQ(0, parse(&own_tool, &o, "--server --big"));
	ASSERT_EQ(1u, o.flags);
	ASSERT_EQ(3, o.nsizes);		/* 1024, 2048, 4096 */
	ASSERT_EQ(0, parse(&own_tool, &o, "--server --sizes 4096 --big"));
	ASSERT_EQ(4096, o.sizes[0]);
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--server --sizes 4096"));
	/* no peer: neither side may be given */
	ASSERT_EQ(0, parse(&own_tool, &o, "--alone"));
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--alone --server"));
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--client"));	/* no --oob */
	/* the tool's check, its values, its limits */
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--server --big --iters 7"));
	ASSERT_EQ(0, parse(&own_tool, &o, "--server --iters 7"));
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--server -W 33"));
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--server --iters 1001"));
	/* the groups it does not take */
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--server --slots 64"));
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--server --no-timing"));
	ASSERT_EQ(-EINVAL, parse(&own_tool, &o, "--server --peer-node 1"));
	/* the common tools do not take its options */
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server --big"));
	ASSERT_EQ(-EINVAL, parse(&dev_tool, &o, "--server -W 4"));
}

TEST(parse_hostport)
{
	char host[64];
	unsigned int port = 1;

	ASSERT_EQ(0, pp_parse_hostport("10.42.0.1:5000", host, sizeof(host), &port));
	ASSERT_STREQ("10.42.0.1", host);
	ASSERT_EQ(5000, port);
	ASSERT_EQ(0, pp_parse_hostport("6000", host, sizeof(host), &port));
	ASSERT_STREQ("", host);
	ASSERT_EQ(6000, port);
	ASSERT_EQ(0, pp_parse_hostport(":7000", host, sizeof(host), &port));
	ASSERT_EQ(7000, port);
	ASSERT_EQ(0, pp_parse_hostport("node1", host, sizeof(host), &port));
	ASSERT_STREQ("node1", host);
	ASSERT_EQ(-EINVAL, pp_parse_hostport("h:0", host, sizeof(host), &port));
	ASSERT_EQ(-EINVAL, pp_parse_hostport("h:70000", host, sizeof(host), &port));
	ASSERT_EQ(-EINVAL, pp_parse_hostport("h:", host, sizeof(host), &port));
	ASSERT_EQ(-EINVAL, pp_parse_hostport("", host, sizeof(host), &port));
}

TEST(stats_median_p99_one_way)
{
	uint64_t rtt[100];
	struct pp_result r;
	int i;

	for (i = 0; i < 100; i++)
		rtt[i] = (uint64_t)(100 - i) * 1000;	/* 1..100 us RTT, reversed */
	pp_stats(rtt, 100, &r);
	ASSERT_EQ(100, r.iters);
	ASSERT_TRUE(r.min_us > 0.49 && r.min_us < 0.51);	/* 1 us RTT -> 0.5 one-way */
	ASSERT_TRUE(r.max_us > 49.9 && r.max_us < 50.1);
	ASSERT_TRUE(r.median_us > 25.2 && r.median_us < 25.3);	/* (50+51)/2/2 */
	ASSERT_TRUE(r.avg_us > 25.2 && r.avg_us < 25.3);
	ASSERT_TRUE(r.p99_us > 49.4 && r.p99_us < 49.6);	/* 99th of 100 = 99 us RTT */
	pp_stats(rtt, 1, &r);
	ASSERT_EQ(r.min_us, r.p99_us);
	pp_stats_total(2000000, 1000, &r);
	ASSERT_TRUE(r.avg_us > 0.99 && r.avg_us < 1.01);
}

TEST(samples_file_keeps_measurement_order)
{
	char path[] = "/tmp/pp-samples-XXXXXX";
	uint64_t rtt[3] = { 3000, 1000, 2000 };
	unsigned int size;
	unsigned long long ns[6];
	struct pp_opts o;
	FILE *f;
	int fd, i;

	fd = mkstemp(path);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	ASSERT_EQ(0, parse(&dev_tool, &o, "--client --oob h:1"));
	ASSERT_EQ(NULL, o.samples);
	ASSERT_EQ(0, pp_save_samples(&o, 8, rtt, 3));	/* no --samples: nothing */
	o.samples = path;
	ASSERT_EQ(0, pp_save_samples(&o, 8, rtt, 3));
	ASSERT_EQ(0, pp_save_samples(&o, 16, rtt, 3));	/* appended */
	f = fopen(path, "r");
	ASSERT_TRUE(f != NULL);
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(2, fscanf(f, "%u %llu", &size, &ns[i]));
		ASSERT_EQ(i < 3 ? 8u : 16u, size);
		ASSERT_EQ(rtt[i % 3], ns[i]);
	}
	ASSERT_EQ(EOF, fscanf(f, "%u", &size));
	fclose(f);
	unlink(path);
	o.samples = "/nonexistent-dir/x";
	ASSERT_EQ(-ENOENT, pp_save_samples(&o, 8, rtt, 3));
	ASSERT_EQ(0, parse(&dev_tool, &o, "--client --oob h:1 --samples /tmp/s"));
	ASSERT_TRUE(o.samples != NULL);	/* points into parse()'s argv copy */
}

TEST(parse_ulong_bounds)
{
	unsigned long v;

	ASSERT_EQ(0, tool_parse_ulong("42", 1, 100, &v));
	ASSERT_EQ(42, v);
	ASSERT_EQ(-EINVAL, tool_parse_ulong("0", 1, 100, &v));
	ASSERT_EQ(-EINVAL, tool_parse_ulong("-1", 0, 100, &v));
	ASSERT_EQ(-EINVAL, tool_parse_ulong("12abc", 0, 100, &v));
	ASSERT_EQ(-EINVAL, tool_parse_ulong("99999999999999999999999", 0, ~0UL, &v));
}

/* The server takes the client's run, within its limits. */
TEST(run_parameters_offer_and_adopt)
{
	static const unsigned int sizes[] = { 8, 64 };
	unsigned int got[PP_MAX_SIZES], n = 0;
	unsigned long iters = 0, warmup = 0;
	struct pp_run r;

	pp_run_offer(&r, sizes, 2, 500, 50, 6);
	ASSERT_EQ(6u, r.flags);
	ASSERT_EQ(0, pp_run_adopt("t", &r, 64, got, &n, &iters, &warmup));
	ASSERT_EQ(2u, n);
	ASSERT_EQ(64u, got[1]);
	ASSERT_EQ(500ul, iters);
	ASSERT_EQ(50ul, warmup);
	ASSERT_EQ(-EPROTO, pp_run_adopt("t", &r, 32, got, &n, &iters, &warmup));	/* 64 > 32 */
	r.nsizes = 0;
	ASSERT_EQ(-EPROTO, pp_run_adopt("t", &r, 64, got, &n, &iters, &warmup));
	r.nsizes = PP_MAX_SIZES + 1;
	ASSERT_EQ(-EPROTO, pp_run_adopt("t", &r, 64, got, &n, &iters, &warmup));
}

/* --json: the keys and number formats the benchmark scripts and tests read. */
TEST(json_output_as_promised)
{
	struct pp_result res = { .size = 8, .iters = 10, .median_us = 1.5, .avg_us = 2.25,
				 .min_us = 1, .p99_us = 3.125, .max_us = 4, .errors = 0 };
	struct pp_opts o;
	char path[] = "/tmp/pp-json-XXXXXX", line[1024];
	int fd = mkstemp(path), saved = dup(1);
	FILE *f;

	ASSERT_TRUE(fd >= 0 && saved >= 0);
	ASSERT_EQ(0, parse(&dev_tool, &o, "--client --oob h:1 --iters 10 --warmup 2"));
	ASSERT_EQ(0, pp_timer_init("monotonic"));
	fflush(stdout);
	dup2(fd, 1);
	pp_print_json("dev-tool", "exanet", 3, 4, &o, &res, 1);
	dup2(saved, 1);
	close(saved);
	close(fd);
	f = fopen(path, "r");
	ASSERT_TRUE(f != NULL);
	ASSERT_TRUE(fgets(line, sizeof(line), f) != NULL);
	fclose(f);
	unlink(path);
	ASSERT_STREQ("{\"tool\":\"dev-tool\",\"transport\":\"exanet\",\"unit\":\"us\","
		     "\"latency\":\"one-way (rtt/2)\",\"local_node\":3,\"peer_node\":4,"
		     "\"iters\":10,\"warmup\":2,\"per_iteration_timing\":true,"
		     "\"timer\":\"clock_gettime(CLOCK_MONOTONIC)\",\"results\":[{\"size\":8,"
		     "\"iters\":10,\"median_us\":1.500,\"avg_us\":2.250,\"min_us\":1.000,"
		     "\"p99_us\":3.125,\"max_us\":4.000,\"errors\":0}]}\n", line);
}

TEST_HARNESS_MAIN
