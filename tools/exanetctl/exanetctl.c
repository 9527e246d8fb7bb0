// SPDX-License-Identifier: MIT
/*
 * exanetctl: ExaNet management tool.
 *
 * Devices are discovered with libudev (subsystem "exanet"); state and
 * protection-domain bindings go through the "exanet" generic netlink family
 * (libnl-genl-3).  Privilege is enforced by the kernel (CAP_NET_ADMIN on
 * the admin commands); this tool only reports what the kernel says.
 *
 * This file: the command line (usage, the options before the subcommand,
 * which subcommand runs) and what the subcommands share (--json, the
 * netlink connection).  The subcommands: ctl_show.c (list, show),
 * ctl_links.c, ctl_pdid.c, ctl_run.c; the devices: ctl_devices.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <netlink/errno.h>

#include <exa_domain.h>

#include "exanetctl.h"
#include "tool_version.h"

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
