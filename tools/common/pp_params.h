/* SPDX-License-Identifier: MIT */
/*
 * The parameters of the ping-pong and bandwidth tools (exanet-pingpong,
 * udp-pingpong, exanet-rdma-bw/-lat, rma2-pingpong, rma2-bw,
 * velo2-pingpong): one struct, one parser (pp_params.c), the help lines the
 * tools print alike.  A tool describes itself in a struct pp_tool: its
 * limits and defaults, the option groups it takes beyond the common ones,
 * and its own options.
 */
#ifndef PP_PARAMS_H
#define PP_PARAMS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tool_parse.h"

#define PP_MAX_SIZES 64
#define PP_DEFAULT_PORT 18515
#define PP_EXIT_USAGE TOOL_EXIT_USAGE

struct pp_opts {
	int server, client, json, no_timing, verbose;
	int yield;			/* wait with the library's waits (spin, then yield) */
	int sleep;			/* receive: sleep until the NI's interrupt */
	char oob_host[256];		/* client: server host; server: bind host or "" */
	unsigned int oob_port;
	long peer_node;			/* -1: learn from the handshake */
	unsigned int sizes[PP_MAX_SIZES];
	unsigned int nsizes;
	unsigned long iters, warmup;
	int iters_given;		/* --iters on the command line */
	double timeout_s;		/* per message / connection setup */
	const char *device;
	const char *clock;		/* pp_timer_init() mode */
	unsigned int slots;
	const char *samples;		/* --samples FILE: every round trip, in order */
	uint32_t flags;			/* the tool's own options; a client offers them */
	/*
	 * Set by the parser from struct pp_tool; a tool option may change
	 * them (velo2-pingpong --frag takes larger sizes), --sizes is read
	 * after all options.
	 */
	unsigned int max_size;		/* largest --sizes value */
	const char *default_sizes;	/* without --sizes */
	int no_peer;			/* a tool option runs alone: no --server/--client */
};

/* Option groups a tool takes beyond the common ones (struct pp_tool.opts). */
#define PP_OPT_DEVICE	1u	/* -d, --device */
#define PP_OPT_MBOX	2u	/* --slots, --yield, --sleep */
#define PP_OPT_PEER	4u	/* -n, --peer-node */
#define PP_OPT_TIMING	8u	/* --no-timing (--count-only), --clock, --samples */

/* The values of a tool's own long options without a short letter start here. */
#define PP_TOOL_OPT_BASE 256
/*
 * A tool option that only sets bit n of o->flags: its getopt_long value,
 * and the struct pp_tool.tool_opt of a tool whose options are all such.
 */
#define PP_FLAG_OPT(n) (PP_TOOL_OPT_BASE + (n))
int pp_flag_opt(struct pp_opts *o, int c, const char *arg);

struct pp_tool {
	const char *name;
	unsigned int max_size;		/* largest --sizes value */
	double default_timeout_s;
	unsigned int opts;		/* PP_OPT_* */
	void (*usage)(FILE *f);
	const char *default_sizes;	/* tool_sizes.h list; NULL: PP_DEFAULT_SIZES */
	unsigned int default_port;	/* 0: PP_DEFAULT_PORT */
	unsigned long default_iters;	/* 0: 1000 */
	unsigned long default_warmup;	/* 0: 100 */
	unsigned long max_iters;	/* 0: 100000000 */
	/*
	 * The tool's own options: getopt_long entries ending with a zero one,
	 * their short letters ("W:rb"), and the function that takes one (0,
	 * or -EINVAL after a message on stderr).
	 */
	const struct option *tool_lopts;
	const char *tool_shortopts;
	int (*tool_opt)(struct pp_opts *o, int c, const char *arg);
	/* After the common checks: 0, or -EINVAL after a message. */
	int (*check)(struct pp_opts *o);
};

#define PP_DEFAULT_SIZES "1,2,4,8,16,32,48,56,64"

/*
 * Parses the options into *o (defaults first).  --help prints t->usage and
 * exits 0, --version prints "<t->name> <version>" and exits 0; anything
 * invalid is reported in one line on stderr (a bad value: the option, the
 * value and what it takes, tool_parse.h; an unknown option: with a hint to
 * --help), and returns -EINVAL (exit with PP_EXIT_USAGE).
 */
int pp_parse_args(int argc, char **argv, const struct pp_tool *t, struct pp_opts *o);

/*
 * main() of a tool with one server and one client side: pp_parse_args()
 * (usage errors: PP_EXIT_USAGE), pp_timer_init() with --clock
 * (unavailable: 1), then server() or client(), whose result it returns.
 */
int pp_main(int argc, char **argv, const struct pp_tool *t,
	    int (*server)(const struct pp_opts *), int (*client)(const struct pp_opts *));

/* "HOST:PORT", ":PORT", "PORT" or "HOST". */
int pp_parse_hostport(const char *s, char *host, size_t hostlen, unsigned int *port);

/*
 * Help lines that the tools print alike (string literals, concatenated into
 * each tool's usage text).
 */
#define PP_HELP_USAGE(tool) \
	"usage: " tool " --server [--oob [HOST:]PORT] [options]\n"
#define PP_HELP_USAGE_CLIENT(tool) \
	"       " tool " --client --oob HOST:PORT [options]\n"
#define PP_HELP_OOB_LISTEN \
	"  -o, --oob HOST:PORT    server: [HOST:]PORT to listen on; client: server address\n"
#define PP_HELP_ROUND_TRIPS \
	"  -i, --iters N          timed round trips per size (default 1000)\n" \
	"  -w, --warmup N         untimed round trips per size first (default 100)\n"
#define PP_HELP_SAMPLES \
	"      --samples FILE     append every timed round trip (\"SIZE NS\" lines, in order)\n"
#define PP_HELP_CLOCK \
	"      --clock MODE       latency timer: auto (default), monotonic, tsc; auto uses\n" \
	"                         clock_gettime(CLOCK_MONOTONIC) when the clocksource has\n" \
	"                         vDSO support, else the TSC calibrated against it\n"
#define PP_HELP_NO_TIMING \
	"      --no-timing        only the total time per size (avg only)\n"
#define PP_HELP_JSON "  -j, --json             machine-readable output on stdout\n"
#define PP_HELP_TAIL \
	"  -v, --verbose          progress on stderr\n" \
	"  -h, --help             this help\n" \
	"      --version          print the version and exit\n" \
	"\n"

#endif
