// SPDX-License-Identifier: MIT
/*
 * exanet-ipd status: the daemon writes <run-dir>/<ifname>.status (one
 * "key value" per line, replaced atomically) every second and on SIGUSR1;
 * `exanet-ipd --status [--json]` asks for a fresh one and prints it as a
 * table or JSON.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipd.h"
#include "ipd_fabric.h"
#include "tool_json.h"

#define CNT(x) { #x, offsetof(struct ipd_counters, x) }
static const struct { const char *name; size_t off; } counters[] = {
	CNT(tun_rx_packets), CNT(tun_rx_bytes), CNT(tun_tx_packets), CNT(tun_tx_bytes),
	CNT(tun_read_errors), CNT(tun_write_errors),
	CNT(drop_no_peer), CNT(drop_peer_down), CNT(drop_not_ipv4), CNT(drop_too_big),
	CNT(drop_bad_ip), CNT(icmp_unreach_sent), CNT(csum_offloaded),
	CNT(hb_tx), CNT(hb_rx), CNT(hb_bad), CNT(hb_bad_incarnation), CNT(hb_self_conflict),
	CNT(hb_foreign),
	CNT(msg_rx), CNT(msg_bad), CNT(msg_stale), CNT(msg_tx), CNT(msg_tx_errors),
	CNT(msg_tx_busy), CNT(msg_peer_down), CNT(hb_held_off), CNT(handshake_timeouts),
	CNT(peer_up_events), CNT(peer_down_events), CNT(peer_restarts), CNT(conn_resets),
	CNT(probes), CNT(probes_alive),
	CNT(rdma_errors), CNT(notif_bad), CNT(rx_bad_batches), CNT(credit_bad),
	CNT(held_packets), CNT(loops), CNT(idle_sleeps), CNT(wakeups), CNT(irq_spins),
};

static void path_of(const struct ipd_opts *o, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.%s", o->run_dir, o->ifname, ext);
}

int ipd_status_write(struct ipd *d)
{
	char path[512], tmp[520], ip[INET_ADDRSTRLEN];
	FILE *f;

	path_of(&d->o, "status", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	inet_ntop(AF_INET, &d->ip, ip, sizeof(ip));
	fprintf(f, "version 1\nseq %u\nrunning %d\npid %d\nifname %s\naddress %s/%u\nmtu %u\n"
		"node %u\nnum_nodes %u\npdid %u\nrank %u\nmbox %u\nmode %s\n"
		"kernel_path_mbox %d\nkernel_path_len %u\nincarnation %016llx\nring_kib %u\nuptime_ms %lld\n"
		"ticks %llu\n",
		++d->status_seq, !d->stopped, (int)getpid(), d->o.ifname, ip, d->o.prefix, d->o.mtu,
		d->node, d->num_nodes, d->pdid, d->rank, exanet_mbox_id(d->mbox),
		ipd_mode_name(d->o.mode),
		d->kmbox == IPD_NO_KMBOX ? -1 : (int)d->kmbox, d->kpath_len,
		(unsigned long long)d->inc,
		1u << (d->o.ring_order - 10), (long long)((exa_clock_ns() - d->start_ns) / 1000000),
		(unsigned long long)d->ticks);
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		fprintf(f, "counter.%s %llu\n", counters[i].name,
			(unsigned long long)*(const uint64_t *)((const char *)&d->c + counters[i].off));
	for (unsigned int i = 0; i < d->nactive; i++) {
		const struct peer *p = d->active[i];
		char pip[INET_ADDRSTRLEN] = "-";

		if (p->ip)
			inet_ntop(AF_INET, &p->ip, pip, sizeof(pip));
#define P(fmt, key, val) fprintf(f, "peer.%u." key " " fmt "\n", p->node, val)
		P("%s", "state", ipd_state_name(p->state));
		P("%s", "ip", pip);
		P("%016llx", "incarnation", (unsigned long long)p->inc);
		P("%u", "mbox", p->mbox);
		P("%d", "kernel_path_mbox", p->kmbox == IPD_NO_KMBOX ? -1 : (int)p->kmbox);
		P("%lld", "rtt_us", (long long)(p->rtt_ns / 1000));
		P("%llu", "tx_packets", (unsigned long long)p->c.tx_packets);
		P("%llu", "tx_bytes", (unsigned long long)p->c.tx_bytes);
		P("%llu", "tx_batches", (unsigned long long)p->c.tx_batches);
		P("%llu", "tx_drops", (unsigned long long)p->c.tx_drops);
		P("%llu", "credit_stalls", (unsigned long long)p->c.credit_stalls);
		P("%llu", "rx_packets", (unsigned long long)p->c.rx_packets);
		P("%llu", "rx_bytes", (unsigned long long)p->c.rx_bytes);
		P("%llu", "rx_batches", (unsigned long long)p->c.rx_batches);
		P("%llu", "rx_bad", (unsigned long long)p->c.rx_bad);
		P("%llu", "handshakes", (unsigned long long)p->c.handshakes);
		P("%u", "tx_inflight", p->tx.inflight);
		if (p->rx.mem) {
			/* our receive ring for this peer (for diagnostics and the
			 * protection tests) */
			P("%u", "ring_node", p->rx.raddr.node);
			P("%u", "ring_rank", p->rx.raddr.rank);
			P("%#llx", "ring_va", (unsigned long long)p->rx.raddr.va);
			P("%zu", "ring_bytes", p->rx.memlen);
			P("%llu", "rx_consumed", (unsigned long long)p->rx.cons);
			P("%u", "rx_wseq", p->rx.wseq);
			P("%u", "rx_cookie", p->rx.cookie);
		}
#undef P
	}
	if (fclose(f))
		return -errno;
	return rename(tmp, path) ? -errno : 0;
}

/* ---------------------------------------------------------- reader */

struct kv {
	char *key, *val;
};

static int load(const char *path, struct kv **out, unsigned int *n)
{
	FILE *f = fopen(path, "r");
	char line[512];
	unsigned int cap = 0;

	*out = NULL;
	*n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' '), *nl = strchr(line, '\n');

		if (!sp)
			continue;
		if (nl)
			*nl = 0;
		*sp = 0;
		if (*n == cap) {
			struct kv *nk = realloc(*out, (cap = cap ? 2 * cap : 64) * sizeof(**out));

			if (!nk)
				break;
			*out = nk;
		}
		(*out)[*n].key = strdup(line);
		(*out)[(*n)++].val = strdup(sp + 1);
	}
	fclose(f);
	return 0;
}

static const char *get(struct kv *kv, unsigned int n, const char *key)
{
	for (unsigned int i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key))
			return kv[i].val;
	return NULL;
}

/*
 * {"key": value, ..., "counters": {...}, "peers": [{"node": N, ...}]}: the
 * status file's keys without a dot, its counter.* keys, and its peer.N.*
 * keys per peer; numbers stay numbers.
 */
static void print_json(struct kv *kv, unsigned int n)
{
	unsigned int nodes[IPD_MAX_NODES], nn = 0;
	json_object *j = json_object_new_object(), *counters, *peers;

	for (unsigned int i = 0; i < n; i++)
		if (!strchr(kv[i].key, '.'))
			tj_text(j, kv[i].key, kv[i].val);
	counters = tj_object(j, "counters");
	for (unsigned int i = 0; i < n; i++)
		if (!strncmp(kv[i].key, "counter.", 8))
			tj_text(counters, kv[i].key + 8, kv[i].val);
	peers = tj_array(j, "peers");
	for (unsigned int i = 0; i < n; i++) {
		unsigned int node;
		int seen = 0;

		if (sscanf(kv[i].key, "peer.%u.", &node) != 1)
			continue;
		for (unsigned int k = 0; k < nn; k++)
			seen |= nodes[k] == node;
		if (!seen && nn < IPD_MAX_NODES)
			nodes[nn++] = node;
	}
	for (unsigned int k = 0; k < nn; k++) {
		json_object *peer = tj_append(peers);
		char pre[32];
		size_t pl = (size_t)snprintf(pre, sizeof(pre), "peer.%u.", nodes[k]);

		tj_uint(peer, "node", nodes[k]);
		for (unsigned int i = 0; i < n; i++)
			if (!strncmp(kv[i].key, pre, pl))
				tj_text(peer, kv[i].key + pl, kv[i].val);
	}
	tj_print(j, 1);
}

static const char *pv(struct kv *kv, unsigned int n, unsigned int node, const char *f)
{
	char key[64];
	const char *v;

	snprintf(key, sizeof(key), "peer.%u.%s", node, f);
	v = get(kv, n, key);
	return v ? v : "-";
}

static void print_table(struct kv *kv, unsigned int n)
{
	const char *running = get(kv, n, "running");

#define G(k) (get(kv, n, k) ? get(kv, n, k) : "?")
	printf("%s: %s mtu %s, node %s of %s, PDID %s, mode %s, pid %s%s\n", G("ifname"),
	       G("address"), G("mtu"), G("node"), G("num_nodes"), G("pdid"), G("mode"),
	       G("pid"), running && !strcmp(running, "0") ? " (stopped)" : "");
	printf("incarnation %s, up %s ms, receive ring %s KiB per peer\n\n", G("incarnation"),
	       G("uptime_ms"), G("ring_kib"));
#undef G
	printf("%5s %-10s %-15s %-16s %7s %9s %12s %8s %6s %6s %9s %12s %8s %6s\n", "node",
	       "state", "address", "incarnation", "rtt_us", "tx_pkts", "tx_bytes", "batches",
	       "drops", "stalls", "rx_pkts", "rx_bytes", "batches", "bad");
	for (unsigned int i = 0; i < n; i++) {
		unsigned int node;
		char rest[64];

		if (sscanf(kv[i].key, "peer.%u.%63s", &node, rest) != 2 || strcmp(rest, "state"))
			continue;
		printf("%5u %-10s %-15s %-16s %7s %9s %12s %8s %6s %6s %9s %12s %8s %6s\n", node,
		       kv[i].val, pv(kv, n, node, "ip"), pv(kv, n, node, "incarnation"),
		       pv(kv, n, node, "rtt_us"), pv(kv, n, node, "tx_packets"),
		       pv(kv, n, node, "tx_bytes"), pv(kv, n, node, "tx_batches"),
		       pv(kv, n, node, "tx_drops"), pv(kv, n, node, "credit_stalls"),
		       pv(kv, n, node, "rx_packets"), pv(kv, n, node, "rx_bytes"),
		       pv(kv, n, node, "rx_batches"), pv(kv, n, node, "rx_bad"));
	}
	printf("\ncounters (non-zero):\n");
	for (unsigned int i = 0; i < n; i++)
		if (!strncmp(kv[i].key, "counter.", 8) && strcmp(kv[i].val, "0"))
			printf("  %-22s %s\n", kv[i].key + 8, kv[i].val);
}

int ipd_status_show(const struct ipd_opts *o, int json)
{
	char path[512];
	struct kv *kv;
	unsigned int n;
	const char *seq0 = NULL;
	char *seq_before = NULL;
	FILE *f;
	int pid = 0;

	path_of(o, "pid", path, sizeof(path));
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	path_of(o, "status", path, sizeof(path));
	if (pid <= 0 || kill(pid, 0) < 0) {
		fprintf(stderr, TOOL ": no daemon running for %s (%s/%s.pid)\n", o->ifname,
			o->run_dir, o->ifname);
		return IPD_EXIT_NODAEMON;
	}
	/* ask for a fresh status and wait (up to 1 s) for it */
	if (!load(path, &kv, &n) && (seq0 = get(kv, n, "seq")))
		seq_before = strdup(seq0);
	kill(pid, SIGUSR1);
	for (int i = 0; i < 100; i++) {
		const char *s;

		usleep(10000);
		if (load(path, &kv, &n))
			continue;
		s = get(kv, n, "seq");
		if (s && (!seq_before || strcmp(s, seq_before)))
			break;
	}
	if (load(path, &kv, &n) || !n) {
		fprintf(stderr, TOOL ": cannot read %s\n", path);
		return IPD_EXIT_ERR;
	}
	if (json)
		print_json(kv, n);
	else
		print_table(kv, n);
	return IPD_EXIT_OK;
}
