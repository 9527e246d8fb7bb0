// SPDX-License-Identifier: MIT
/*
 * exanetctl list and show: the devices, and with show the torus shape and
 * coordinates and the hardware counters, as a table or as JSON.
 */
#include <inttypes.h>
#include <stdio.h>

#include "exanetctl.h"
#include "tool_json.h"

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

int cmd_list(int argc, char **argv, int with_counters)
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
