// SPDX-License-Identifier: MIT
/*
 * exanetctl: ExaNet management tool.
 *
 * Devices are discovered with libudev (subsystem "exanet"); state and
 * protection-domain bindings go through the "exanet" generic netlink family
 * (libnl-genl-3).  Privilege is enforced by the kernel (CAP_NET_ADMIN on
 * the admin commands); this tool only reports what the kernel says.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libudev.h>
#include <netlink/errno.h>

#include <exa_domain.h>
#include <exa_torus.h>
#include <exanet.h>

#include "exa_genl.h"
#include "tool_json.h"
#include "tool_parse.h"
#include "tool_version.h"

#include "exanetctl.h"

static const char *const counter_names[EXANET_NUM_COUNTERS] = {
	EXANET_COUNTER_NAMES_INIT
};

static const char *const port_names[EXA_NUM_PORTS] = {
	EXA_PORT_NAMES_INIT
};

static const char *const port_counter_names[EXA_NUM_PORT_COUNTERS] = {
	EXA_PORT_COUNTER_NAMES_INIT
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: " TOOL " [--json] list\n"
"       " TOOL " [--json] show [DEV]\n"
"       " TOOL " [--json] links [DEV]\n"
"       " TOOL " pdid bind --pid PID --pdid N\n"
"       " TOOL " pdid unbind --pid PID\n"
"       " TOOL " [--json] pdid list\n"
"       " TOOL " run --pdid N [--user USER|UID] -- CMD [ARGS...]\n"
"\n"
"  list            ExaNet devices (udev subsystem \"exanet\"): node id, nodes,\n"
"                  packetizer and mailbox interfaces in use\n"
"  show [DEV]      device details, torus shape and coordinates, hardware\n"
"                  counters (DEV: exanet0, 0 or /dev/exanet0; default all)\n"
"  links [DEV]     the torus link ports: state, peer, rate, latency, injected\n"
"                  faults and counters, and the received packets by hops\n"
"  pdid bind       put process PID (and its future children) in the job's\n"
"                  protection domain N (1..%u) on both NICs (ExaNet PDID,\n"
"                  EXTOLL protection ID); needs CAP_NET_ADMIN.  Unbound\n"
"                  processes get the domain of their user\n"
"  pdid unbind     remove the binding of PID; needs CAP_NET_ADMIN\n"
"  pdid list       current bindings\n"
"  run             start CMD bound to PDID N, optionally as USER (the child\n"
"                  waits until the binding is in place, then drops privileges\n"
"                  and execs); exits with CMD's status\n"
"\n"
"  -j, --json      machine-readable output (list, show, links, pdid list)\n"
"  -h, --help      this help\n"
"      --version   print the version and exit\n"
"\n"
"Exit status: 0 success, 1 error (e.g. EPERM from the kernel, DEV not found\n"
"or without torus links), 2 usage error;\n"
"run: CMD's exit status (128+N if killed by signal N, 127 if it could not start).\n",
		EXA_DOMAIN_JOB_MAX);
}

int json_output;

/* ------------------------------------------------------------ netlink */

const char *genl_err_hint(int err)
{
	switch (err) {
	case -EPERM:
	case -EACCES:
		return " (administrator privilege, CAP_NET_ADMIN, is required)";
	case -ENOENT:
		return " (the process has no binding)";
	case -ESRCH:
		return " (no such process)";
	case -ENOSPC:
		return " (binding table full)";
	case -EOPNOTSUPP:
		return " (the exanet module predates this command)";
	default:
		return "";
	}
}

/* exa_genl_open(), explaining on stderr why the family cannot be reached. */
int ctl_nl_open(struct exa_genl *g)
{
	int err = exa_genl_open(g);

	if (err == -ENOTCONN) {
		fprintf(stderr, TOOL ": generic netlink: %s\n", nl_geterror(g->nl_error));
		return NL_OPEN_FAILED;
	}
	if (err == -ENOENT) {
		fprintf(stderr, TOOL ": generic netlink family \"%s\" not found "
			"(is the exanet module loaded?)\n", EXANET_GENL_NAME);
		return NL_OPEN_FAILED;
	}
	return err;
}

/* ------------------------------------------------------------ devices */

static long sysattr_long(struct udev_device *d, const char *attr)
{
	const char *v = udev_device_get_sysattr_value(d, attr);

	return v ? strtol(v, NULL, 0) : -1;
}

static void sysfs_counters(struct udev_device *d, struct devinfo *di)
{
	const char *v = udev_device_get_sysattr_value(d, "counters");
	char name[64];
	unsigned long long val;
	unsigned int pos = 0, i;
	const char *line;

	if (!v)
		return;
	for (line = v; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (sscanf(line, " %63[a-z_0-9]%*[:= \t]%llu", name, &val) == 2) {
			for (i = 0; i < EXANET_NUM_COUNTERS; i++)
				if (!strcmp(name, counter_names[i]))
					di->dev.counters[i] = val;
			di->dev.have_counters = 1;
		} else if (sscanf(line, " %llu", &val) == 1 && pos < EXANET_NUM_COUNTERS) {
			di->dev.counters[pos++] = val;
			di->dev.have_counters = 1;
		}
	}
}

/* A nest whose attribute i+1 is the u64 vals[i] (counters, hop counts). */
static void get_u64_array(struct nlattr *nest, uint64_t *vals, int n)
{
	struct nlattr *a;
	int rem;

	nla_for_each_nested(a, nest, rem) {
		int i = nla_type(a) - 1;

		if (i >= 0 && i < n && nla_len(a) >= 8)
			vals[i] = nla_get_u64(a);
	}
}

static uint32_t get_u32_or0(struct nlattr *a)
{
	return a && nla_len(a) >= 4 ? nla_get_u32(a) : 0;
}

static int reply_is_for(struct nlattr **tb, const struct devinfo *di)
{
	return !tb[EXANET_ATTR_DEV_INDEX] ||
	       (int)nla_get_u32(tb[EXANET_ATTR_DEV_INDEX]) == di->index;
}

static void dev_get_handler(struct nlattr **tb, void *arg)
{
	struct devinfo *di = arg;

	if (reply_is_for(tb, di))
		exa_genl_dev_reply(tb, &di->dev);
}

static void get_port(struct nlattr *nest, struct portinfo *pi)
{
	struct nlattr *tb[EXANET_ATTR_MAX + 1];

	if (nla_parse_nested(tb, EXANET_ATTR_MAX, nest, NULL) < 0)
		return;
	pi->state = get_u32_or0(tb[EXANET_ATTR_PORT_STATE]);
	pi->peer = get_u32_or0(tb[EXANET_ATTR_PORT_PEER]);
	pi->mbps = get_u32_or0(tb[EXANET_ATTR_PORT_MBPS]);
	pi->ns = get_u32_or0(tb[EXANET_ATTR_PORT_NS]);
	pi->drop_ppm = get_u32_or0(tb[EXANET_ATTR_PORT_DROP_PPM]);
	pi->corrupt_ppm = get_u32_or0(tb[EXANET_ATTR_PORT_CORRUPT_PPM]);
	if (tb[EXANET_ATTR_PORT_COUNTERS])
		get_u64_array(tb[EXANET_ATTR_PORT_COUNTERS], pi->counters,
			      EXA_NUM_PORT_COUNTERS);
}

static void links_get_handler(struct nlattr **tb, void *arg)
{
	struct devinfo *di = arg;
	struct linkinfo *li = &di->links;
	struct nlattr *a;
	int rem;

	/* no TORUS_SHAPE: a device model without the link block */
	if (!reply_is_for(tb, di) || !tb[EXANET_ATTR_TORUS_SHAPE])
		return;
	li->have_block = 1;
	li->shape = get_u32_or0(tb[EXANET_ATTR_TORUS_SHAPE]);
	li->coord = get_u32_or0(tb[EXANET_ATTR_TORUS_COORD]);
	if (tb[EXANET_ATTR_NO_ROUTE] && nla_len(tb[EXANET_ATTR_NO_ROUTE]) >= 8)
		li->no_route = nla_get_u64(tb[EXANET_ATTR_NO_ROUTE]);
	if (tb[EXANET_ATTR_RX_HOPS])
		get_u64_array(tb[EXANET_ATTR_RX_HOPS], li->rx_hops, EXA_TORUS_MAX_HOPS);
	if (tb[EXANET_ATTR_PORTS]) {
		nla_for_each_nested(a, tb[EXANET_ATTR_PORTS], rem) {
			int p = nla_type(a) - 1;

			if (p >= 0 && p < EXA_NUM_PORTS)
				get_port(a, &li->ports[p]);
		}
	}
}

static int links_request(struct exa_genl *ctx, struct devinfo *di)
{
	uint16_t type = EXANET_ATTR_DEV_INDEX;
	uint32_t idx = (uint32_t)di->index;

	memset(&di->links, 0, sizeof(di->links));
	if (di->index < 0)
		return -ENODEV;
	return exa_genl_call(ctx, EXANET_CMD_LINKS_GET, 0, &type, &idx, 1, links_get_handler,
			     di);
}

/* "XxYxZ" (sep 'x') or "x,y,z" (sep ',') from a SHAPE or COORD register. */
static const char *fmt_dims(char *buf, size_t len, uint32_t v, char sep)
{
	snprintf(buf, len, "%u%c%u%c%u", EXA_TORUS_DIM(v, 0), sep, EXA_TORUS_DIM(v, 1), sep,
		 EXA_TORUS_DIM(v, 2));
	return buf;
}

/* Fills devs from udev (+ netlink for counters when available). */
static int collect_devices(struct devinfo *devs, int max, const char *only, int want_counters)
{
	struct udev *udev = udev_new();
	struct udev_enumerate *en;
	struct udev_list_entry *e;
	struct exa_genl ctx;
	int n = 0, have_nl = 0, i;

	if (!udev) {
		fprintf(stderr, TOOL ": libudev: cannot initialise\n");
		return -ENOMEM;
	}
	en = udev_enumerate_new(udev);
	udev_enumerate_add_match_subsystem(en, "exanet");
	udev_enumerate_scan_devices(en);
	udev_list_entry_foreach(e, udev_enumerate_get_list_entry(en)) {
		struct udev_device *d = udev_device_new_from_syspath(udev, udev_list_entry_get_name(e));
		const char *sysname, *node;
		struct devinfo *di;

		if (!d)
			continue;
		sysname = udev_device_get_sysname(d);
		if (only && strcmp(only, sysname)) {
			udev_device_unref(d);
			continue;
		}
		if (n >= max) {
			udev_device_unref(d);
			break;
		}
		di = &devs[n++];
		memset(di, 0, sizeof(*di));
		snprintf(di->name, sizeof(di->name), "%s", sysname);
		node = udev_device_get_devnode(d);
		snprintf(di->devnode, sizeof(di->devnode), "%s", node ? node : "");
		if (sscanf(sysname, "exanet%d", &di->index) != 1)
			di->index = -1;
		di->dev.node_id = sysattr_long(d, "node_id");
		di->dev.num_nodes = sysattr_long(d, "num_nodes");
		di->dev.pkt_in_use = sysattr_long(d, "pkt_in_use");
		di->dev.mbox_in_use = sysattr_long(d, "mbox_in_use");
		if (want_counters)
			sysfs_counters(d, di);
		udev_device_unref(d);
	}
	udev_enumerate_unref(en);
	udev_unref(udev);

	if (want_counters && n > 0) {
		/* counters from netlink are authoritative; sysfs is the fallback */
		have_nl = ctl_nl_open(&ctx) == 0;
		for (i = 0; have_nl && i < n; i++) {
			uint16_t type = EXANET_ATTR_DEV_INDEX;
			uint32_t idx = (uint32_t)devs[i].index;

			if (devs[i].index >= 0)
				exa_genl_call(&ctx, EXANET_CMD_DEV_GET, 0, &type, &idx, 1,
					      dev_get_handler, &devs[i]);
			/* torus shape and coordinates, if the device has links */
			links_request(&ctx, &devs[i]);
		}
		if (have_nl)
			exa_genl_close(&ctx);
	}
	return n;
}

static void print_devices(struct devinfo *devs, int n, int with_counters)
{
	char shape[16], coord[16];
	int i, c;

	if (json_output) {
		json_object *j = json_object_new_object(), *list = tj_array(j, "devices");

		for (i = 0; i < n; i++) {
			json_object *d = tj_append(list);

			tj_str(d, "name", devs[i].name);
			tj_str(d, "devnode", devs[i].devnode);
			tj_int(d, "index", devs[i].index);
			tj_int(d, "node_id", devs[i].dev.node_id);
			tj_int(d, "num_nodes", devs[i].dev.num_nodes);
			tj_int(d, "pkt_in_use", devs[i].dev.pkt_in_use);
			tj_int(d, "mbox_in_use", devs[i].dev.mbox_in_use);
			if (!with_counters)
				continue;
			/* null without the torus link block */
			tj_str(d, "torus", devs[i].links.have_block ?
			       fmt_dims(shape, sizeof(shape), devs[i].links.shape, 'x') : NULL);
			tj_str(d, "coords", devs[i].links.have_block ?
			       fmt_dims(coord, sizeof(coord), devs[i].links.coord, ',') : NULL);
			if (devs[i].dev.have_counters) {
				json_object *cj = tj_object(d, "counters");

				for (c = 0; c < EXANET_NUM_COUNTERS; c++)
					tj_uint(cj, counter_names[c], devs[i].dev.counters[c]);
			} else {
				tj_str(d, "counters", NULL);
			}
		}
		tj_print(j, 0);
		return;
	}
	if (!with_counters) {
		printf("%-10s %-14s %8s %9s %10s %11s\n", "DEVICE", "NODE", "NODE_ID", "NUM_NODES",
		       "PKT_IN_USE", "MBOX_IN_USE");
		for (i = 0; i < n; i++)
			printf("%-10s %-14s %8ld %9ld %10ld %11ld\n", devs[i].name, devs[i].devnode,
			       devs[i].dev.node_id, devs[i].dev.num_nodes, devs[i].dev.pkt_in_use,
			       devs[i].dev.mbox_in_use);
		return;
	}
	for (i = 0; i < n; i++) {
		printf("%s (%s)\n", devs[i].name, devs[i].devnode);
		printf("  node_id      %ld\n  num_nodes    %ld\n  pkt_in_use   %ld / %d\n"
		       "  mbox_in_use  %ld / %d\n", devs[i].dev.node_id, devs[i].dev.num_nodes,
		       devs[i].dev.pkt_in_use, EXANET_NUM_PKT_IFACES, devs[i].dev.mbox_in_use,
		       EXANET_NUM_MBOX_IFACES);
		if (devs[i].links.have_block)
			printf("  torus        %s\n  coords       %s\n",
			       fmt_dims(shape, sizeof(shape), devs[i].links.shape, 'x'),
			       fmt_dims(coord, sizeof(coord), devs[i].links.coord, ','));
		if (!devs[i].dev.have_counters) {
			printf("  counters     unavailable\n");
			continue;
		}
		printf("  counters:\n");
		for (c = 0; c < EXANET_NUM_COUNTERS; c++)
			printf("    %-18s %" PRIu64 "\n", counter_names[c], devs[i].dev.counters[c]);
	}
}

/* Accept -j/--json anywhere after the subcommand too; returns new argc. */
int strip_json(int argc, char **argv)
{
	int i, j = 0;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			json_output = 1;
		else
			argv[j++] = argv[i];
	}
	return j;
}

/*
 * The optional DEV argument (after --json is stripped): *only is NULL for
 * all devices, else name.  Returns 0 or EXIT_USAGE.
 */
static int parse_dev_arg(int argc, char **argv, char *name, size_t len, const char **only)
{
	const char *a, *base;
	unsigned int idx;

	*only = NULL;
	if (argc > 1) {
		fprintf(stderr, TOOL ": too many arguments\n");
		return EXIT_USAGE;
	}
	if (argc == 0)
		return 0;
	a = argv[0];
	base = strrchr(a, '/');
	base = base ? base + 1 : a;
	if (sscanf(base, "exanet%u", &idx) != 1 && sscanf(base, "%u", &idx) != 1) {
		fprintf(stderr, TOOL ": '%s' is not an ExaNet device name\n", a);
		return EXIT_USAGE;
	}
	snprintf(name, len, "exanet%u", idx);
	*only = name;
	return 0;
}

/* Devices for list/show/links; returns their number, or -1 (exit 1). */
static int find_devices(struct devinfo *devs, const char *only, int with_counters)
{
	int n = collect_devices(devs, MAX_DEVICES, only, with_counters);

	if (n < 0)
		return -1;
	if (n == 0) {
		if (only) {
			fprintf(stderr, TOOL ": device %s not found\n", only);
			return -1;
		}
		if (!json_output)
			fprintf(stderr, TOOL ": no ExaNet device found\n");
	}
	return n;
}

static int cmd_list(int argc, char **argv, int with_counters)
{
	struct devinfo devs[MAX_DEVICES];
	char name[64];
	const char *only;
	int n;

	argc = strip_json(argc, argv);
	if (parse_dev_arg(argc, argv, name, sizeof(name), &only))
		return EXIT_USAGE;
	n = find_devices(devs, only, with_counters);
	if (n < 0)
		return 1;
	print_devices(devs, n, with_counters);
	return 0;
}

/* ------------------------------------------------------------ links */

/* sysfs words: up, down, unused; for a down cable the text table says why. */
static const char *port_state(uint32_t state, int why)
{
	if (!(state & EXA_PORT_USED))
		return "unused";
	if (state & EXA_PORT_UP)
		return "up";
	if (!why)
		return "down";
	if (!(state & EXA_PORT_ADMIN_UP))
		return "down:admin";
	if (!(state & EXA_PORT_PEER_ALIVE))
		return "down:peer";
	return "down:far-end";		/* the neighbour's end is set down */
}

static void print_links_json(const struct devinfo *devs, int n)
{
	json_object *j = json_object_new_object(), *list = tj_array(j, "devices");
	char shape[16], coord[16];
	int i, p, c, h;

	for (i = 0; i < n; i++) {
		const struct linkinfo *li = &devs[i].links;
		json_object *d = tj_append(list), *hops, *ports;

		tj_str(d, "name", devs[i].name);
		tj_str(d, "devnode", devs[i].devnode);
		tj_int(d, "index", devs[i].index);
		if (!li->have_block) {
			tj_str(d, "torus", NULL);
			continue;
		}
		tj_str(d, "torus", fmt_dims(shape, sizeof(shape), li->shape, 'x'));
		tj_str(d, "coords", fmt_dims(coord, sizeof(coord), li->coord, ','));
		tj_uint(d, "no_route", li->no_route);
		hops = tj_array(d, "rx_hops");
		for (h = 0; h < EXA_TORUS_MAX_HOPS; h++)
			json_object_array_add(hops, json_object_new_uint64(li->rx_hops[h]));
		ports = tj_array(d, "ports");
		for (p = 0; p < EXA_NUM_PORTS; p++) {
			const struct portinfo *pi = &li->ports[p];
			json_object *pj = tj_append(ports), *cj;

			tj_str(pj, "port", port_names[p]);
			tj_str(pj, "state", port_state(pi->state, 0));
			tj_str(pj, "admin", pi->state & EXA_PORT_ADMIN_UP ? "up" : "down");
			tj_uint(pj, "peer", pi->peer);
			tj_int(pj, "peer_alive", !!(pi->state & EXA_PORT_PEER_ALIVE));
			tj_uint(pj, "mbps", pi->mbps);
			tj_uint(pj, "ns", pi->ns);
			tj_uint(pj, "drop_ppm", pi->drop_ppm);
			tj_uint(pj, "corrupt_ppm", pi->corrupt_ppm);
			cj = tj_object(pj, "counters");
			for (c = 0; c < EXA_NUM_PORT_COUNTERS; c++)
				tj_uint(cj, port_counter_names[c], pi->counters[c]);
		}
	}
	tj_print(j, 0);
}

/* Numeric columns of the links table: these values, then the counters. */
static const char *const link_value_cols[] = { "PEER", "MBPS", "NS", "DROP_PPM", "CORRUPT_PPM" };
#define LINK_VALUE_COLS ((int)(sizeof(link_value_cols) / sizeof(link_value_cols[0])))
#define LINK_COLS (LINK_VALUE_COLS + EXA_NUM_PORT_COUNTERS)

static uint64_t link_col_value(const struct portinfo *pi, int col)
{
	const uint32_t values[LINK_VALUE_COLS] = {
		pi->peer, pi->mbps, pi->ns, pi->drop_ppm, pi->corrupt_ppm
	};

	return col < LINK_VALUE_COLS ? values[col] : pi->counters[col - LINK_VALUE_COLS];
}

/* Header: the column name, the counters' in upper case like the others. */
static void link_col_header(int col, char *buf, size_t len)
{
	size_t i;

	if (col < LINK_VALUE_COLS) {
		snprintf(buf, len, "%s", link_value_cols[col]);
		return;
	}
	snprintf(buf, len, "%s", port_counter_names[col - LINK_VALUE_COLS]);
	for (i = 0; buf[i]; i++)
		buf[i] = (char)toupper((unsigned char)buf[i]);
}

static void print_links_text(const struct devinfo *devs, int n)
{
	char shape[16], coord[16], head[32], num[24];
	int width[LINK_COLS];
	int i, p, c, h, first = 1;

	for (i = 0; i < n; i++) {
		const struct linkinfo *li = &devs[i].links;

		if (!li->have_block)
			continue;	/* said on stderr */
		printf("%s%s: torus %s, coords %s, no_route %" PRIu64 "\n", first ? "" : "\n",
		       devs[i].name, fmt_dims(shape, sizeof(shape), li->shape, 'x'),
		       fmt_dims(coord, sizeof(coord), li->coord, ','), li->no_route);
		first = 0;
		printf("rx_hops (0..%d+):", EXA_TORUS_MAX_HOPS - 1);
		for (h = 0; h < EXA_TORUS_MAX_HOPS; h++)
			printf(" %" PRIu64, li->rx_hops[h]);
		printf("\n%-4s %-12s", "PORT", "STATE");
		for (c = 0; c < LINK_COLS; c++) {
			link_col_header(c, head, sizeof(head));
			width[c] = (int)strlen(head);
			for (p = 0; p < EXA_NUM_PORTS; p++) {
				int w = snprintf(num, sizeof(num), "%" PRIu64,
						 link_col_value(&li->ports[p], c));

				if (w > width[c])
					width[c] = w;
			}
			printf(" %*s", width[c], head);
		}
		printf("\n");
		for (p = 0; p < EXA_NUM_PORTS; p++) {
			printf("%-4s %-12s", port_names[p], port_state(li->ports[p].state, 1));
			for (c = 0; c < LINK_COLS; c++)
				printf(" %*" PRIu64, width[c], link_col_value(&li->ports[p], c));
			printf("\n");
		}
	}
}

static int cmd_links(int argc, char **argv)
{
	struct devinfo devs[MAX_DEVICES];
	struct exa_genl ctx;
	char name[64];
	const char *only;
	int n, i, err, rc = 0;

	argc = strip_json(argc, argv);
	if (parse_dev_arg(argc, argv, name, sizeof(name), &only))
		return EXIT_USAGE;
	n = find_devices(devs, only, 0);
	if (n < 0)
		return 1;
	if (n > 0 && ctl_nl_open(&ctx))
		return 1;
	for (i = 0; i < n; i++) {
		err = links_request(&ctx, &devs[i]);
		if (err) {
			fprintf(stderr, TOOL ": links %s: %s%s\n", devs[i].name, strerror(-err),
				genl_err_hint(err));
			exa_genl_close(&ctx);
			return 1;
		}
	}
	if (n > 0)
		exa_genl_close(&ctx);
	if (json_output)
		print_links_json(devs, n);
	else
		print_links_text(devs, n);
	for (i = 0; i < n; i++) {
		if (devs[i].links.have_block)
			continue;
		fprintf(stderr, TOOL ": %s has no torus links (a device model without the link block)\n",
			devs[i].name);
		if (only)
			rc = 1;
	}
	return rc;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	const char *cmd;
	int c;

	while ((c = getopt_long(argc, argv, "+:jh", lopts, NULL)) != -1) {
		switch (c) {
		case 'j': json_output = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': tool_version(TOOL); return 0;
		default: tool_opt_error(TOOL, argv, c); return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	argc -= optind + 1;
	argv += optind + 1;
	/* subcommands parse their own options: argv[0] is the subcommand */
	if (!strcmp(cmd, "list"))
		return cmd_list(argc, argv, 0);
	if (!strcmp(cmd, "show"))
		return cmd_list(argc, argv, 1);
	if (!strcmp(cmd, "links"))
		return cmd_links(argc, argv);
	if (!strcmp(cmd, "pdid"))
		return cmd_pdid(argc, argv);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc + 1, argv - 1);
	if (!strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, TOOL ": unknown command '%s'; try '" TOOL " --help'\n", cmd);
	return EXIT_USAGE;
}
