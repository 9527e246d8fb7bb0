// SPDX-License-Identifier: MIT
/*
 * exanetctl: the devices of list, show and links as udev (sysfs) and the
 * exanet generic netlink family (DEV_GET, LINKS_GET) describe them, and
 * the DEV argument that names one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libudev.h>

#include "exanetctl.h"

const char *const counter_names[EXANET_NUM_COUNTERS] = {
	EXANET_COUNTER_NAMES_INIT
};

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

int links_request(struct exa_genl *ctx, struct devinfo *di)
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
const char *fmt_dims(char *buf, size_t len, uint32_t v, char sep)
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

/*
 * The optional DEV argument (after --json is stripped): *only is NULL for
 * all devices, else name.  Returns 0 or EXIT_USAGE.
 */
int parse_dev_arg(int argc, char **argv, char *name, size_t len, const char **only)
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
int find_devices(struct devinfo *devs, const char *only, int with_counters)
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
