// SPDX-License-Identifier: MIT
/*
 * exanet-ipd: the command line (--help text and option parsing).
 * Reference: Documentation/exanet/ipd.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <exanet_ip.h>

#include "ipd.h"
#include "tool_parse.h"
#include "tool_version.h"

/* ------------------------------------------------------------ usage */

void ipd_usage(FILE *f)
{
	fprintf(f,
"Usage: " TOOL " [OPTIONS]            run the daemon (root)\n"
"       " TOOL " --status [--json] [--ifname NAME] [--run-dir DIR]\n"
"\n"
"IP over the ExaNet fabric: creates the TUN interface NAME (default exa0),\n"
"addresses it, and carries its packets to the daemons of the other nodes\n"
"in RDMA-written receive rings.  Peers are found by heartbeats on the\n"
"management network and handshaken over the fabric.\n"
"\n"
"Interface:\n"
"  -i, --ifname NAME       interface name (default exa0)\n"
"  -a, --addr A.B.C.D/P    its address (default 10.43.0.0/16 + node + 1)\n"
"  -m, --mtu N             MTU, %u..%u (default 65520)\n"
"      --txqueuelen N      interface queue length (default 1000)\n"
"      --no-offload        no checksum offload: the kernel checksums every\n"
"                          packet it hands to the daemon\n"
"Fabric:\n"
"  -d, --device PATH       ExaNet device (default /dev/exanet0)\n"
"      --pdid N            run in protection domain N: if the process is not\n"
"                          already bound to it (exanetctl run --pdid N), bind\n"
"                          itself (needs CAP_NET_ADMIN).  Every node's daemon\n"
"                          must use the same PDID.\n"
"      --mode MODE         busy | sleep | irq (default irq, sleep if the NI\n"
"                          has no interrupts):\n"
"                          busy: spin on TUN and notifications (one core;\n"
"                          lowest latency through the daemon, small packets\n"
"                          over the kernel path are faster in irq mode);\n"
"                          sleep: spin briefly, then sleeps growing\n"
"                          to --max-sleep-us; irq: sleep in epoll until the NI\n"
"                          interrupts or the TUN device has a packet\n"
"      --spin N            sleep mode: idle polls before the first sleep (200)\n"
"      --max-sleep-us N    sleep mode: longest sleep (default 1000)\n"
"      --irq-spin-us N     irq mode: after a burst of small packets, keep\n"
"                          polling for N us (yielding the CPU between polls)\n"
"                          before sleeping, so a reply is caught without an\n"
"                          interrupt (default %u; 0: sleep at once)\n"
"      --ring-kib N        receive ring per peer, power of two, 512..262144\n"
"                          (default 2048)\n"
"      --batch-kib N       post a batch when it reaches N KiB (default 256;\n"
"                          0: one packet per RDMA write, no batching)\n"
"      --max-inflight N    RDMA writes in flight per peer, 1..16 (default 4)\n"
"      --sched POLICY      batch | normal | keep (default batch in sleep and\n"
"                          irq mode, keep in busy mode): batch runs the daemon\n"
"                          SCHED_BATCH at --nice, so neither it nor the\n"
"                          programs it wakes preempt each other per packet;\n"
"                          normal: SCHED_OTHER at --nice (wakes at once on a\n"
"                          busy CPU); keep: as started\n"
"      --nice N            nice value with batch or normal, -20..19\n"
"                          (default -10)\n"
"      --kernel-path-len N IPv4 packets up to N bytes to peers with a kernel\n"
"                          path go through the driver, not the daemon\n"
"                          (20..880, default 256; 0: every packet through the\n"
"                          daemon)\n"
"Discovery:\n"
"      --hb-iface IF       management interface for heartbeats (default eth0)\n"
"      --hb-port PORT      UDP port (default 18650)\n"
"      --hb-interval MS    heartbeat interval (default 100)\n"
"      --hb-miss K         heartbeats missed before a peer is down (default 3)\n"
"Process:\n"
"      --daemon            detach once the interface is up (logs to syslog or\n"
"                          --log-file)\n"
"      --log-file FILE     append logs to FILE\n"
"      --run-dir DIR       pid and status files (default /run/exanet-ipd)\n"
"  -v, --verbose           debug logs\n"
"      --status            print the running daemon's peers and counters\n"
"      --json              with --status: JSON\n"
"  -h, --help              this help\n"
"      --version           print the version and exit\n"
"\n"
"Exit status: 0 stopped by SIGTERM/SIGINT (or --status printed), 1 error,\n"
"2 usage (also --mode irq without NI interrupts), 3 --status: no daemon.\n"
"Reference: Documentation/exanet/ipd.md\n", IPD_MTU_MIN, 65520, IPD_IRQ_SPIN_US);
}

static int parse_addr(const char *s, uint32_t *addr, uint32_t *prefix)
{
	char buf[64], *slash;
	struct in_addr a;
	unsigned int p = 16;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash) {
		*slash = 0;
		if (tool_parse_uint(slash + 1, 1, 30, &p))
			return -1;
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -1;
	*addr = a.s_addr;
	*prefix = p;
	return 0;
}

enum {
	O_TXQ = 256, O_PDID, O_MODE, O_SPIN, O_MAXSLEEP, O_IRQSPIN, O_RING, O_BATCH, O_INFLIGHT,
	O_HBIF, O_HBPORT, O_HBINT, O_HBMISS, O_DAEMON, O_LOG, O_RUNDIR, O_STATUS, O_JSON,
	O_VERSION, O_NOOFFLOAD, O_SCHED, O_NICE, O_KPATH,
};

int ipd_parse_args(int argc, char **argv, struct ipd_opts *o, int *status, int *json)
{
	static const struct option lopts[] = {
		{ "ifname", required_argument, NULL, 'i' },
		{ "addr", required_argument, NULL, 'a' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "txqueuelen", required_argument, NULL, O_TXQ },
		{ "device", required_argument, NULL, 'd' },
		{ "pdid", required_argument, NULL, O_PDID },
		{ "mode", required_argument, NULL, O_MODE },
		{ "spin", required_argument, NULL, O_SPIN },
		{ "irq-spin-us", required_argument, NULL, O_IRQSPIN },
		{ "max-sleep-us", required_argument, NULL, O_MAXSLEEP },
		{ "ring-kib", required_argument, NULL, O_RING },
		{ "batch-kib", required_argument, NULL, O_BATCH },
		{ "max-inflight", required_argument, NULL, O_INFLIGHT },
		{ "hb-iface", required_argument, NULL, O_HBIF },
		{ "hb-port", required_argument, NULL, O_HBPORT },
		{ "hb-interval", required_argument, NULL, O_HBINT },
		{ "hb-miss", required_argument, NULL, O_HBMISS },
		{ "daemon", no_argument, NULL, O_DAEMON },
		{ "log-file", required_argument, NULL, O_LOG },
		{ "run-dir", required_argument, NULL, O_RUNDIR },
		{ "verbose", no_argument, NULL, 'v' },
		{ "status", no_argument, NULL, O_STATUS },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ "no-offload", no_argument, NULL, O_NOOFFLOAD },
		{ "sched", required_argument, NULL, O_SCHED },
		{ "nice", required_argument, NULL, O_NICE },
		{ "kernel-path-len", required_argument, NULL, O_KPATH },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int v;
	int c;

	memset(o, 0, sizeof(*o));
	o->ifname = "exa0";
	o->mtu = 65520;
	o->txqlen = 1000;
#ifdef EXANET_HAVE_EVENTS
	o->mode = MODE_IRQ;
#else
	o->mode = MODE_SLEEP;
#endif
	o->hb_iface = "eth0";
	o->hb_port = 18650;
	o->hb_interval_ms = 100;
	o->hb_miss = 3;
	o->ring_order = 21;
	o->batch_kib = 256;
	o->max_inflight = 4;
	o->spin_us = 200;
	o->max_sleep_us = 1000;
	o->irq_spin_us = IPD_IRQ_SPIN_US;
	o->run_dir = "/run/exanet-ipd";
	o->offload = 1;
	o->nice = -10;
	o->kpath_len = EXANET_IP_DEFAULT_LEN;
	*status = *json = 0;
	/* ':' first: a missing value is ':' (tool_opt_error() says it) */
	while ((c = getopt_long(argc, argv, ":i:a:m:d:vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (!*optarg || strlen(optarg) >= IFNAMSIZ || strchr(optarg, '/')) {
				tool_bad_value(TOOL, "--ifname", optarg,
					       "an interface name of 1..%d characters without '/'",
					       IFNAMSIZ - 1);
				return -1;
			}
			o->ifname = optarg;
			break;
		case 'a':
			if (parse_addr(optarg, &o->addr, &o->prefix)) {
				tool_bad_value(TOOL, "--addr", optarg, "A.B.C.D or A.B.C.D/P (P 1..30)");
				return -1;
			}
			o->addr_set = 1;
			break;
		case 'm':
			if (tool_opt_uint(TOOL, "--mtu", optarg, IPD_MTU_MIN, 65520, &o->mtu))
				return -1;
			break;
		case O_TXQ:
			if (tool_opt_uint(TOOL, "--txqueuelen", optarg, 1, 100000, &o->txqlen))
				return -1;
			break;
		case 'd':
			o->device = optarg;
			break;
		case O_PDID:
			if (tool_opt_uint(TOOL, "--pdid", optarg, 1, 0x7fff, &o->pdid))
				return -1;
			break;
		case O_MODE:
			o->mode_set = 1;
			if (!strcmp(optarg, "busy")) {
				o->mode = MODE_BUSY;
			} else if (!strcmp(optarg, "sleep")) {
				o->mode = MODE_SLEEP;
			} else if (!strcmp(optarg, "irq")) {
#ifdef EXANET_HAVE_EVENTS
				o->mode = MODE_IRQ;
#else
				fprintf(stderr, TOOL ": --mode irq: this libexanet has no NI interrupts\n");
				return -2;
#endif
			} else {
				tool_bad_value(TOOL, "--mode", optarg, "one of busy, sleep, irq");
				return -1;
			}
			break;
		case O_SPIN:
			if (tool_opt_uint(TOOL, "--spin", optarg, 0, 100000000, &o->spin_us))
				return -1;
			break;
		case O_KPATH:
			if (tool_parse_uint(optarg, 0, EXANET_IP_MAX_LEN, &o->kpath_len) ||
			    (o->kpath_len && o->kpath_len < 20)) {
				tool_bad_value(TOOL, "--kernel-path-len", optarg,
					       "0 (off) or a number in 20..%u", EXANET_IP_MAX_LEN);
				return -1;
			}
			break;
		case O_IRQSPIN:
			if (tool_opt_uint(TOOL, "--irq-spin-us", optarg, 0, 1000000, &o->irq_spin_us))
				return -1;
			break;
		case O_MAXSLEEP:
			if (tool_opt_uint(TOOL, "--max-sleep-us", optarg, 1, 1000000, &o->max_sleep_us))
				return -1;
			break;
		case O_RING:
			if (tool_parse_uint(optarg, 1u << (IPD_RING_ORDER_MIN - 10),
					    1u << (IPD_RING_ORDER_MAX - 10), &v) || (v & (v - 1))) {
				tool_bad_value(TOOL, "--ring-kib", optarg, "a power of two in %u..%u",
					       1u << (IPD_RING_ORDER_MIN - 10),
					       1u << (IPD_RING_ORDER_MAX - 10));
				return -1;
			}
			o->ring_order = (unsigned int)__builtin_ctz(v) + 10;
			break;
		case O_BATCH:
			if (tool_opt_uint(TOOL, "--batch-kib", optarg, 0, 1 << 20, &o->batch_kib))
				return -1;
			break;
		case O_INFLIGHT:
			if (tool_opt_uint(TOOL, "--max-inflight", optarg, 1, 16, &o->max_inflight))
				return -1;
			break;
		case O_HBIF:
			o->hb_iface = optarg;
			break;
		case O_HBPORT:
			if (tool_opt_uint(TOOL, "--hb-port", optarg, 1, 65535, &o->hb_port))
				return -1;
			break;
		case O_HBINT:
			if (tool_opt_uint(TOOL, "--hb-interval", optarg, 10, 60000, &o->hb_interval_ms))
				return -1;
			break;
		case O_HBMISS:
			if (tool_opt_uint(TOOL, "--hb-miss", optarg, 1, 1000, &o->hb_miss))
				return -1;
			break;
		case O_DAEMON:
			o->daemon = 1;
			break;
		case O_NOOFFLOAD:
			o->offload = 0;
			break;
		case O_SCHED:
			if (!strcmp(optarg, "batch")) {
				o->sched = IPD_SCHED_BATCH;
			} else if (!strcmp(optarg, "normal")) {
				o->sched = IPD_SCHED_NORMAL;
			} else if (!strcmp(optarg, "keep")) {
				o->sched = IPD_SCHED_KEEP;
			} else {
				tool_bad_value(TOOL, "--sched", optarg, "one of batch, normal, keep");
				return -1;
			}
			break;
		case O_NICE: {
			char *end;
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < -20 || n > 19) {
				tool_bad_value(TOOL, "--nice", optarg, "a number in -20..19");
				return -1;
			}
			o->nice = (int)n;
			break;
		}
		case O_LOG:
			o->log_file = optarg;
			break;
		case O_RUNDIR:
			o->run_dir = optarg;
			break;
		case 'v':
			o->verbose++;
			break;
		case O_STATUS:
			*status = 1;
			break;
		case O_JSON:
			*json = 1;
			break;
		case 'h':
			ipd_usage(stdout);
			exit(0);
		case O_VERSION:
			tool_version(TOOL);
			exit(0);
		default:
			tool_opt_error(TOOL, argv, c);
			return -1;
		}
	}
	if (optind != argc) {
		tool_extra_arg(TOOL, argv[optind]);
		return -1;
	}
	if (*json && !*status) {
		fprintf(stderr, TOOL ": --json goes with --status\n");
		return -1;
	}
	if ((1ull << o->ring_order) < 4ull * ((uint64_t)o->mtu + IPD_REC_HDR * 2)) {
		fprintf(stderr, TOOL ": --ring-kib too small for the MTU\n");
		return -1;
	}
	return 0;
}
