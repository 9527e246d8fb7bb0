// SPDX-License-Identifier: MIT
/*
 * exanetctl links: the torus link ports of each device (state, peer, rate,
 * latency, injected faults, counters) and its received packets by hops, as
 * a table or as JSON.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "exanetctl.h"
#include "tool_json.h"

static const char *const port_names[EXA_NUM_PORTS] = {
	EXA_PORT_NAMES_INIT
};

static const char *const port_counter_names[EXA_NUM_PORT_COUNTERS] = {
	EXA_PORT_COUNTER_NAMES_INIT
};

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

int cmd_links(int argc, char **argv)
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
