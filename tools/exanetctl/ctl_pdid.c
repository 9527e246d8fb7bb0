// SPDX-License-Identifier: MIT
/*
 * exanetctl pdid: bind a process to a protection domain, remove its
 * binding, list the bindings (the kernel's PDID_BIND, PDID_UNBIND and
 * PDID_GET commands).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <exa_domain.h>

#include "exanetctl.h"
#include "tool_json.h"

int pdid_bind(uint32_t pid, uint32_t pdid)
{
	uint16_t types[2] = { EXANET_ATTR_PID, EXANET_ATTR_PDID };
	uint32_t vals[2] = { pid, pdid };
	struct exa_genl ctx;
	int err;

	err = ctl_nl_open(&ctx);
	if (err)
		return err;
	err = exa_genl_call(&ctx, EXANET_CMD_PDID_BIND, 0, types, vals, 2, NULL, NULL);
	exa_genl_close(&ctx);
	return err;
}

int pdid_unbind(uint32_t pid)
{
	uint16_t type = EXANET_ATTR_PID;
	struct exa_genl ctx;
	int err;

	err = ctl_nl_open(&ctx);
	if (err)
		return err;
	err = exa_genl_call(&ctx, EXANET_CMD_PDID_UNBIND, 0, &type, &pid, 1, NULL, NULL);
	exa_genl_close(&ctx);
	return err;
}

/* pdid list: a table row, or with --json an entry of bindings. */
static void pdid_list_handler(struct nlattr **tb, void *arg)
{
	json_object *bindings = arg;
	long pid = tb[EXANET_ATTR_PID] ? (long)nla_get_u32(tb[EXANET_ATTR_PID]) : -1;
	long pdid = tb[EXANET_ATTR_PDID] ? (long)nla_get_u32(tb[EXANET_ATTR_PDID]) : -1;

	if (bindings) {
		json_object *b = tj_append(bindings);

		tj_int(b, "pid", pid);
		tj_int(b, "pdid", pdid);
	} else {
		printf("%-10ld %ld\n", pid, pdid);
	}
}

static int pdid_args(int argc, char **argv, uint32_t *pid, uint32_t *pdid, int need_pdid)
{
	static const struct option lopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "pdid", required_argument, NULL, 'd' },
		{ 0 }
	};
	int c, have_pid = 0, have_pdid = 0;

	optind = 0;
	while ((c = getopt_long(argc, argv, ":p:d:", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (tool_opt_uint(TOOL, "--pid", optarg, 1, 0x7fffffff, pid))
				return -EINVAL;
			have_pid = 1;
			break;
		case 'd':
			if (tool_opt_uint(TOOL, "--pdid", optarg, EXA_DOMAIN_JOB_MIN,
					  EXA_DOMAIN_JOB_MAX, pdid))
				return -EINVAL;
			have_pdid = 1;
			break;
		default:
			tool_opt_error(TOOL, argv, c);
			return -EINVAL;
		}
	}
	if (optind < argc || !have_pid || (need_pdid && !have_pdid) || (!need_pdid && have_pdid)) {
		fprintf(stderr, TOOL ": pdid %s needs --pid PID%s\n", argv[0],
			need_pdid ? " --pdid N" : "");
		return -EINVAL;
	}
	return 0;
}

int cmd_pdid(int argc, char **argv)
{
	uint32_t pid = 0, pdid = 0;
	int err;

	if (argc < 1) {
		fprintf(stderr, TOOL ": pdid needs a subcommand (bind, unbind, list)\n");
		return EXIT_USAGE;
	}
	if (!strcmp(argv[0], "bind")) {
		if (pdid_args(argc, argv, &pid, &pdid, 1))
			return EXIT_USAGE;
		err = pdid_bind(pid, pdid);
		if (err) {
			if (err != NL_OPEN_FAILED)
				fprintf(stderr, TOOL ": pdid bind pid %u pdid %u: %s%s\n", pid, pdid,
					strerror(-err), err == -ESRCH ? "" : genl_err_hint(err));
			return 1;
		}
		return 0;
	}
	if (!strcmp(argv[0], "unbind")) {
		if (pdid_args(argc, argv, &pid, &pdid, 0))
			return EXIT_USAGE;
		err = pdid_unbind(pid);
		if (err) {
			if (err != NL_OPEN_FAILED)
				fprintf(stderr, TOOL ": pdid unbind pid %u: %s%s\n", pid,
					strerror(-err), err == -ESRCH ? "" : genl_err_hint(err));
			return 1;
		}
		return 0;
	}
	if (!strcmp(argv[0], "list")) {
		json_object *j = NULL, *bindings = NULL;
		struct exa_genl ctx;

		argc = strip_json(argc, argv);
		if (argc > 1) {
			fprintf(stderr, TOOL ": pdid list takes no arguments\n");
			return EXIT_USAGE;
		}
		if (ctl_nl_open(&ctx))
			return 1;
		if (json_output) {
			j = json_object_new_object();
			bindings = tj_array(j, "bindings");
		} else {
			printf("%-10s %s\n", "PID", "PDID");
		}
		err = exa_genl_call(&ctx, EXANET_CMD_PDID_GET, NLM_F_DUMP, NULL, NULL, 0,
				    pdid_list_handler, bindings);
		exa_genl_close(&ctx);
		if (json_output)
			tj_print(j, 0);
		if (err) {
			fprintf(stderr, TOOL ": pdid list: %s%s\n", strerror(-err), genl_err_hint(err));
			return 1;
		}
		return 0;
	}
	fprintf(stderr, TOOL ": unknown pdid subcommand '%s'\n", argv[0]);
	return EXIT_USAGE;
}
