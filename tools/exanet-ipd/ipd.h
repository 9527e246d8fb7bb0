/* SPDX-License-Identifier: MIT */
/* exanet-ipd: daemon state shared by its source files. */
#ifndef IPD_H
#define IPD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>

#include <libexanet.h>

#include "exa_clock.h"	/* exa_clock_ns(): CLOCK_MONOTONIC in ns */

#include "ipd_proto.h"

/* NI interrupts (exanet_event_arm(), exanet_dev_fd() readable on an event)
 * arrived in libexanet 1.1; a library may also announce them itself. */
#if !defined(EXANET_HAVE_EVENTS) && \
	(LIBEXANET_VERSION_MAJOR > 1 || (LIBEXANET_VERSION_MAJOR == 1 && LIBEXANET_VERSION_MINOR >= 1))
#define EXANET_HAVE_EVENTS 1
#endif

#define TOOL "exanet-ipd"

#define IPD_EXIT_OK	0
#define IPD_EXIT_ERR	1
#define IPD_EXIT_USAGE	2
#define IPD_EXIT_NODAEMON 3

#define IPD_MAX_NODES	4096
#define IPD_WCHANS	EXANET_RDMA_WCHANS
#define IPD_MBOX_SLOTS	256
#define IPD_DEFAULT_PDID 18768		/* 0x4950, "IP" */
/*
 * irq mode: how long the daemon keeps polling after its last packet before
 * it arms the interrupt and sleeps (Documentation/exanet/ipd.md, "Modes").
 */
#define IPD_IRQ_SPIN_US 1000
/* ... after a burst of packets of at most this many bytes on average */
#define IPD_IRQ_SPIN_MAX_AVG 4096
/*
 * A peer that is connecting (a fresh receive region offered, its ring asked
 * for) for longer than this is declared down and its regions are released
 * (Documentation/exanet/ipd.md, "Peer down").  The same bound as a PROBE
 * without an answer.
 */
#define IPD_HANDSHAKE_TIMEOUT_MS 10000

enum ipd_mode { MODE_BUSY, MODE_SLEEP, MODE_IRQ };

/* --sched: how the daemon shares its CPU with the applications it serves */
enum ipd_sched { IPD_SCHED_DEFAULT, IPD_SCHED_KEEP, IPD_SCHED_NORMAL, IPD_SCHED_BATCH };

enum peer_state { PEER_UNKNOWN, PEER_DOWN, PEER_CONNECTING, PEER_UP };

struct ipd_opts {
	const char *ifname;
	uint32_t addr, prefix;		/* network order address; prefix length */
	int addr_set;
	unsigned int mtu;
	enum ipd_mode mode;
	int mode_set;			/* --mode given: no fallback */
	const char *device;
	unsigned int pdid;		/* 0: keep what the process has */
	const char *hb_iface;
	unsigned int hb_port;
	unsigned int hb_interval_ms;
	unsigned int hb_miss;
	unsigned int ring_order;
	unsigned int batch_kib;
	unsigned int max_inflight;
	unsigned int spin_us, max_sleep_us;
	unsigned int irq_spin_us;	/* irq mode: polling after the last packet */
	int daemon;
	const char *log_file;
	const char *run_dir;
	int verbose;
	unsigned int txqlen;
	int offload;			/* TUN checksum offload */
	unsigned int kpath_len;		/* kernel path: largest packet, 0 = off */
	enum ipd_sched sched;
	int nice;
};

struct ipd_counters {
	uint64_t tun_rx_packets, tun_rx_bytes, tun_tx_packets, tun_tx_bytes;
	uint64_t tun_read_errors, tun_write_errors;
	uint64_t drop_no_peer, drop_peer_down, drop_not_ipv4, drop_too_big, drop_bad_ip;
	uint64_t icmp_unreach_sent, csum_offloaded;
	uint64_t hb_tx, hb_rx, hb_bad, hb_bad_incarnation, hb_self_conflict, hb_foreign;
	uint64_t msg_rx, msg_bad, msg_stale, msg_tx, msg_tx_errors, msg_tx_busy;
	uint64_t msg_peer_down;		/* OFFER / NEED_RING from a peer that is down */
	uint64_t hb_held_off;		/* heartbeats of a peer just declared down */
	uint64_t handshake_timeouts;	/* connecting for IPD_HANDSHAKE_TIMEOUT_MS */
	uint64_t peer_up_events, peer_down_events, peer_restarts, conn_resets;
	uint64_t probes, probes_alive;
	uint64_t rdma_errors, notif_bad, rx_bad_batches, credit_bad;
	uint64_t held_packets;
	uint64_t loops, idle_sleeps, wakeups;
	uint64_t irq_spins;		/* irq mode: idle polls before sleeping */
};

struct peer {
	uint32_t node;
	enum peer_state state;
	uint64_t inc;			/* its incarnation */
	bool inc_auth;			/* learned from a fabric message (not only a heartbeat) */
	uint32_t mbox;
	uint32_t kmbox;			/* its kernel path mailbox, IPD_NO_KMBOX */
	uint32_t ip;			/* network order, 0 = unknown */
	uint32_t mtu;
	uint64_t last_seen;		/* tick of the last sign of life */
	uint64_t down_tick;		/* when it was declared down */
	uint64_t connect_tick;		/* when its handshake began (CONNECTING) */
	uint64_t up_since_tick;
	int64_t rtt_ns;			/* last handshake */
	uint32_t last_tx_cookie;	/* the peer's ring we last wrote into */
	int probe_chan;			/* packetizer channel of a PROBE in flight, -1 */
	uint64_t probe_tick;		/* when the heartbeats stopped: first probe */
	bool suspect;			/* heartbeats missed, asking the fabric */
	uint64_t dead_inc[4];		/* its past incarnations, never accepted again */
	unsigned int dead_idx;

	struct {			/* our receive ring for this peer */
		uint8_t *mem;		/* notif area + ring */
		size_t memlen;
		struct exanet_mr *mr;
		struct exanet_rdma_notif *notif;
		uint8_t *ring;
		uint32_t cookie;
		bool accepted;		/* the peer ACCEPTed this ring */
		uint64_t cons;		/* bytes consumed (monotonic, with skips) */
		uint32_t wseq;		/* next batch expected */
		uint32_t rseq;		/* next record expected */
		uint64_t credit_pos;	/* last credit sent (or in flight) */
		uint32_t credit_wseq;
		bool credit_due;
		int credit_chan;	/* packetizer channel carrying it, -1 */
		struct exanet_raddr raddr;
	} rx;

	struct {			/* the peer's ring, written by us */
		bool ready;
		uint32_t cookie;
		struct exanet_raddr ring;	/* region base (notif area) */
		uint64_t size;			/* ring bytes */
		uint8_t *stage;			/* registered copy of what we send */
		size_t stagelen;
		struct exanet_mr *mr;
		uint64_t tail, bstart;		/* next record, start of the open batch */
		uint64_t credit_pos;
		uint32_t credit_wseq;
		uint32_t wseq, rseq;
		unsigned int inflight;
		bool stalled;			/* waiting for credit */
	} tx;

	struct {
		uint64_t tx_packets, tx_bytes, tx_batches, tx_drops, credit_stalls;
		uint64_t rx_packets, rx_bytes, rx_batches, rx_bad;
		uint64_t handshakes;
	} c;
};

struct inflight {
	struct peer *p;			/* NULL: free */
	uint32_t cookie;
	uint32_t wseq;
	uint64_t tick;
};

struct ipd {
	int reniced;			/* setup_sched() set o.nice (not 0) */
	struct ipd_opts o;
	struct exanet_dev *dev;
	struct exanet_pkt *pkt;
	struct exanet_mbox *mbox;
	struct exanet_rdma *rdma;
	uint8_t *ctrl;			/* registered: local completion records */
	struct exanet_mr *ctrl_mr;
	struct exanet_rdma_notif *lcomp;
	struct inflight chan[IPD_WCHANS];
	uint32_t chan_busy;		/* bitmask */
	struct {
		struct peer *p;		/* credit or probe tracked on this channel */
		int busy;
	} ctl[EXANET_PKT_CHANNELS];
	unsigned int ctl_busy;

	uint32_t node, num_nodes, pdid, rank;
	uint32_t kmbox;			/* our kernel path mailbox, IPD_NO_KMBOX */
	uint32_t kpath_len;		/* its largest packet, 0: no kernel path */
	struct exanet_ip_peer *kpeers;	/* the list the driver has */
	unsigned int nkpeers;
	uint64_t inc;
	uint32_t ip, netmask;
	int tunfd, hbfd, epfd;
	uint32_t hb_bcast;		/* network order */
	uint32_t hb_seq;

	struct peer **peers;		/* by node */
	struct peer **active;		/* peers ever heard of */
	unsigned int nactive;

	uint8_t *buf;			/* TUN read buffer: record header + packet */
	struct peer *held;		/* packet in buf waiting for room */
	struct ipd_rec_hdr held_hdr;
	struct peer *tx_guess;		/* where the last packet went */

	uint64_t ticks;
	uint64_t start_ns;
	int icmp_budget;
	struct ipd_counters c;
	unsigned int status_seq;
	int stopped;
	int tun_quiet;			/* ppoll just said the TUN fd is empty */
};

const char *ipd_mode_name(enum ipd_mode m);

/* ipd_opts.c: the command line; -1 after a message on a bad one */
void ipd_usage(FILE *f);
int ipd_parse_args(int argc, char **argv, struct ipd_opts *o, int *status, int *json);

/* signals */
extern volatile sig_atomic_t ipd_tick_pending, ipd_stop, ipd_status_req;

/* logging */
void ipd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define LOG_E 3
#define LOG_W 4
#define LOG_I 6
#define LOG_D 7

/* status: written by the daemon, read by --status */
int ipd_status_write(struct ipd *d);
int ipd_status_show(const struct ipd_opts *o, int json);

/* PDID self-binding over generic netlink */
int ipd_pdid_bind_self(uint32_t pdid);

#endif
