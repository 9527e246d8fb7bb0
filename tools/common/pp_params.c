// SPDX-License-Identifier: MIT
/* The ping-pong and bandwidth tools' parameters: see pp_params.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exanet.h"
#include "pp_common.h"
#include "tool_version.h"

/* Values of the options without a short letter (below: the tools' own). */
enum { OPT_SLOTS = 0x1000, OPT_NO_TIMING, OPT_CLOCK, OPT_YIELD, OPT_SLEEP, OPT_SAMPLES,
       OPT_VERSION };

static const struct option common_lopts[] = {
	{ "server", no_argument, NULL, 's' },
	{ "client", no_argument, NULL, 'c' },
	{ "oob", required_argument, NULL, 'o' },
	{ "sizes", required_argument, NULL, 'S' },
	{ "iters", required_argument, NULL, 'i' },
	{ "warmup", required_argument, NULL, 'w' },
	{ "timeout", required_argument, NULL, 't' },
	{ "json", no_argument, NULL, 'j' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 }
};
static const struct option device_lopts[] = {
	{ "device", required_argument, NULL, 'd' },
	{ NULL, 0, NULL, 0 }
};
static const struct option mbox_lopts[] = {
	{ "slots", required_argument, NULL, OPT_SLOTS },
	{ "yield", no_argument, NULL, OPT_YIELD },
	{ "sleep", no_argument, NULL, OPT_SLEEP },
	{ NULL, 0, NULL, 0 }
};
static const struct option peer_lopts[] = {
	{ "peer-node", required_argument, NULL, 'n' },
	{ NULL, 0, NULL, 0 }
};
static const struct option timing_lopts[] = {
	{ "no-timing", no_argument, NULL, OPT_NO_TIMING },
	{ "count-only", no_argument, NULL, OPT_NO_TIMING },
	{ "clock", required_argument, NULL, OPT_CLOCK },
	{ "samples", required_argument, NULL, OPT_SAMPLES },
	{ NULL, 0, NULL, 0 }
};

#define MAX_LOPTS 48

/* Appends the entries of add (zero-terminated) to lopts[*n]. */
static void add_lopts(struct option *lopts, unsigned int *n, const struct option *add)
{
	for (; add && add->name; add++)
		if (*n < MAX_LOPTS - 1)
			lopts[(*n)++] = *add;
	lopts[*n] = (struct option){ 0 };
}

int pp_parse_hostport(const char *s, char *host, size_t hostlen, unsigned int *port)
{
	const char *colon;
	unsigned long p;
	size_t hl;

	if (!s || !*s)
		return -EINVAL;
	colon = strrchr(s, ':');
	if (!colon) {
		/* all digits: a port; otherwise a host */
		if (strspn(s, "0123456789") == strlen(s)) {
			if (tool_parse_ulong(s, 1, 65535, &p))
				return -EINVAL;
			host[0] = '\0';
			*port = (unsigned int)p;
			return 0;
		}
		if (strlen(s) >= hostlen)
			return -EINVAL;
		strcpy(host, s);
		return 0;
	}
	if (tool_parse_ulong(colon + 1, 1, 65535, &p))
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= hostlen)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	*port = (unsigned int)p;
	return 0;
}

static void set_defaults(const struct pp_tool *t, struct pp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->oob_port = t->default_port ? t->default_port : PP_DEFAULT_PORT;
	o->peer_node = -1;
	o->iters = t->default_iters ? t->default_iters : 1000;
	o->warmup = t->default_warmup ? t->default_warmup : 100;
	o->timeout_s = t->default_timeout_s;
	o->slots = 64;
	o->max_size = t->max_size;
	o->default_sizes = t->default_sizes ? t->default_sizes : PP_DEFAULT_SIZES;
}

/* The longest --timeout: a day. */
#define PP_MAX_TIMEOUT_S 86400

/* One option of the common ones and the groups: 0, or -EINVAL (said). */
static int take_opt(const struct pp_tool *t, struct pp_opts *o, int c, const char *arg)
{
	static const char *const clocks[] = { "auto", "monotonic", "tsc", NULL };
	unsigned long v = 0;

	switch (c) {
	case 's': o->server = 1; return 0;
	case 'c': o->client = 1; return 0;
	case 'j': o->json = 1; return 0;
	case 'v': o->verbose = 1; return 0;
	case 'd': o->device = arg; return 0;
	case OPT_NO_TIMING: o->no_timing = 1; return 0;
	case OPT_SAMPLES: o->samples = arg; return 0;
	case 'o':
		if (!pp_parse_hostport(arg, o->oob_host, sizeof(o->oob_host), &o->oob_port))
			return 0;
		return tool_bad_value(t->name, "--oob", arg, "HOST:PORT, HOST or PORT (PORT 1..65535)");
	case 'n':
		if (tool_opt_ulong(t->name, "--peer-node", arg, 0, EXANET_DB_NODE_MASK, &v))
			return -EINVAL;
		o->peer_node = (long)v;
		return 0;
	case 'i':
		if (tool_opt_ulong(t->name, "--iters", arg, 1, t->max_iters ? t->max_iters : 100000000,
				   &o->iters))
			return -EINVAL;
		o->iters_given = 1;
		return 0;
	case 'w':
		return tool_opt_ulong(t->name, "--warmup", arg, 0, 100000000, &o->warmup);
	case 't':
		return tool_opt_seconds(t->name, "--timeout", arg, 0.001, PP_MAX_TIMEOUT_S,
					&o->timeout_s);
	case OPT_SLOTS:
		if (tool_parse_ulong(arg, EXANET_MBOX_MIN_SLOTS, EXANET_MBOX_MAX_SLOTS, &v) ||
		    (v & (v - 1)))
			return tool_bad_value(t->name, "--slots", arg, "a power of two in %d..%d",
					      EXANET_MBOX_MIN_SLOTS, EXANET_MBOX_MAX_SLOTS);
		o->slots = (unsigned int)v;
		return 0;
	case OPT_YIELD:
	case OPT_SLEEP:
		*(c == OPT_YIELD ? &o->yield : &o->sleep) = 1;
		if (o->yield && o->sleep) {
			fprintf(stderr, "%s: --yield and --sleep exclude each other\n", t->name);
			return -EINVAL;
		}
		return 0;
	case OPT_CLOCK:
		if (tool_opt_choice(t->name, "--clock", arg, clocks) < 0)
			return -EINVAL;
		o->clock = arg;
		return 0;
	case 'h':
		t->usage(stdout);
		exit(0);
	case OPT_VERSION:
		tool_version(t->name);
		exit(0);
	}
	return -EINVAL;
}

int pp_flag_opt(struct pp_opts *o, int c, const char *arg)
{
	(void)arg;
	if (c < PP_FLAG_OPT(0) || c >= PP_FLAG_OPT(32))
		return -EINVAL;
	o->flags |= 1u << (c - PP_FLAG_OPT(0));
	return 0;
}

/* c is one of the tool's own options. */
static int is_tool_opt(const struct pp_tool *t, int c)
{
	const struct option *l;

	if (!t->tool_opt)
		return 0;
	for (l = t->tool_lopts; l && l->name; l++)
		if (l->val == c)
			return 1;
	return c > 0 && c < 128 && c != ':' && t->tool_shortopts &&
	       strchr(t->tool_shortopts, c);
}

/*
 * After the options: --sizes (within the tool's sizes; its defaults are its
 * own), one side, a client knows its server.
 */
static int check_opts(const struct pp_tool *t, struct pp_opts *o, const char *sizes)
{
	const char *list = sizes ? sizes : o->default_sizes;
	int n = tool_parse_sizes(list, 1, sizes ? o->max_size : UINT_MAX, o->sizes, PP_MAX_SIZES);

	if (n < 0)
		return tool_bad_value(t->name, "--sizes", list,
				      "a list of at most %u sizes in 1..%u (e.g. 1,8 or 1-%u)",
				      PP_MAX_SIZES, o->max_size, o->max_size);
	o->nsizes = (unsigned int)n;
	if (o->no_peer) {
		if (o->server || o->client) {
			fprintf(stderr, "%s: no --server or --client in this mode\n", t->name);
			return -EINVAL;
		}
	} else if (o->server == o->client) {
		fprintf(stderr, "%s: exactly one of --server or --client is required\n", t->name);
		return -EINVAL;
	} else if (o->client && !o->oob_host[0]) {
		fprintf(stderr, "%s: --client needs --oob HOST:PORT\n", t->name);
		return -EINVAL;
	}
	return t->check ? t->check(o) : 0;
}

int pp_parse_args(int argc, char **argv, const struct pp_tool *t, struct pp_opts *o)
{
	struct option lopts[MAX_LOPTS];
	/* ':' first: a missing value is ':', reported by tool_opt_error() */
	char shortopts[64] = ":sco:S:i:w:t:jvh";
	const char *sizes = NULL;
	unsigned int nl = 0;
	int c;

	set_defaults(t, o);
	add_lopts(lopts, &nl, common_lopts);
	if (t->opts & PP_OPT_DEVICE) {
		add_lopts(lopts, &nl, device_lopts);
		strcat(shortopts, "d:");
	}
	if (t->opts & PP_OPT_MBOX)
		add_lopts(lopts, &nl, mbox_lopts);
	if (t->opts & PP_OPT_PEER) {
		add_lopts(lopts, &nl, peer_lopts);
		strcat(shortopts, "n:");
	}
	if (t->opts & PP_OPT_TIMING)
		add_lopts(lopts, &nl, timing_lopts);
	add_lopts(lopts, &nl, t->tool_lopts);
	if (t->tool_shortopts)
		strncat(shortopts, t->tool_shortopts, sizeof(shortopts) - strlen(shortopts) - 1);

	while ((c = getopt_long(argc, argv, shortopts, lopts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			tool_opt_error(t->name, argv, c);
			return -EINVAL;
		}
		if (c == 'S') {
			sizes = optarg;
			continue;
		}
		/* a bad value: the one line the option's parser printed */
		if (is_tool_opt(t, c) ? t->tool_opt(o, c, optarg) : take_opt(t, o, c, optarg))
			return -EINVAL;
	}
	if (optind < argc)
		return tool_extra_arg(t->name, argv[optind]);
	return check_opts(t, o, sizes);
}

int pp_main(int argc, char **argv, const struct pp_tool *t,
	    int (*server)(const struct pp_opts *), int (*client)(const struct pp_opts *))
{
	struct pp_opts o;

	if (pp_parse_args(argc, argv, t, &o))
		return PP_EXIT_USAGE;
	if (pp_timer_init(o.clock)) {
		fprintf(stderr, "%s: clock '%s' is not available here\n", t->name, o.clock);
		return 1;
	}
	return o.server ? server(&o) : client(&o);
}
