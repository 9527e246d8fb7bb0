/* SPDX-License-Identifier: MIT */
/*
 * exanetctl: what its source files share.  exanetctl.c: the command line
 * and the netlink connection; ctl_devices.c: the devices as udev and
 * netlink describe them; one file a subcommand: ctl_show.c (list, show),
 * ctl_links.c, ctl_pdid.c, ctl_run.c.
 */
#ifndef EXANETCTL_H
#define EXANETCTL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <exa_torus.h>
#include <exanet.h>

#include "exa_genl.h"
#include "tool_parse.h"

#define TOOL "exanetctl"
#define EXIT_USAGE TOOL_EXIT_USAGE
#define MAX_DEVICES 16

/* ------------------------------------------------ exanetctl.c */

extern int json_output;		/* -j, --json: machine-readable output */
int strip_json(int argc, char **argv);

/* ctl_nl_open() already explained the problem on stderr */
#define NL_OPEN_FAILED (-EPROTONOSUPPORT)

int ctl_nl_open(struct exa_genl *g);
/* What a negative errno from the kernel means here ("" if nothing to add). */
const char *genl_err_hint(int err);

/* ------------------------------------------------ ctl_devices.c */

struct portinfo {
	uint32_t state;			/* EXA_PORT_* bits */
	uint32_t peer, mbps, ns, drop_ppm, corrupt_ppm;
	uint64_t counters[EXA_NUM_PORT_COUNTERS];
};

/* The reply to EXANET_CMD_LINKS_GET. */
struct linkinfo {
	int have_block;			/* 0: the device has no torus link block */
	uint32_t shape, coord;		/* EXA_TORUS_SHAPE, EXA_TORUS_COORD */
	uint64_t no_route;
	uint64_t rx_hops[EXA_TORUS_MAX_HOPS];
	struct portinfo ports[EXA_NUM_PORTS];
};

struct devinfo {
	char name[64];
	char devnode[128];
	int index;
	struct exa_genl_dev dev;	/* from sysfs, then the DEV_GET reply */
	struct linkinfo links;
};

extern const char *const counter_names[EXANET_NUM_COUNTERS];

int parse_dev_arg(int argc, char **argv, char *name, size_t len, const char **only);
int find_devices(struct devinfo *devs, const char *only, int with_counters);
/* Fills di->links from LINKS_GET (have_block 0 without the block): 0 or -errno. */
int links_request(struct exa_genl *ctx, struct devinfo *di);
const char *fmt_dims(char *buf, size_t len, uint32_t v, char sep);

/* ------------------------------------------------ ctl_pdid.c */

/* Bind pid to protection domain pdid, remove its binding: 0 or -errno. */
int pdid_bind(uint32_t pid, uint32_t pdid);
int pdid_unbind(uint32_t pid);

/* ------------------------------------------------ the subcommands */

/*
 * Each returns the exit status.  argv[0] is the first word after the
 * subcommand's name (pdid: bind, unbind or list), but for run its name.
 */
int cmd_list(int argc, char **argv, int with_counters);	/* ctl_show.c: list, show */
int cmd_links(int argc, char **argv);				/* ctl_links.c */
int cmd_pdid(int argc, char **argv);				/* ctl_pdid.c */
int cmd_run(int argc, char **argv);				/* ctl_run.c */

#endif
