/* SPDX-License-Identifier: MIT */
/*
 * Shared by the ping-pong and bandwidth tools (exanet-pingpong,
 * udp-pingpong, exanet-rdma-bw/-lat, rma2-pingpong, rma2-bw,
 * velo2-pingpong): their parameters (pp_params.h), out-of-band TCP
 * exchange, latency timer, statistics, output.
 */
#ifndef PP_COMMON_H
#define PP_COMMON_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "exa_clock.h"	/* exa_clock_ns(): CLOCK_MONOTONIC in ns */
#include "pp_params.h"	/* struct pp_opts, struct pp_tool, pp_parse_args() */
#include "tool_json.h"	/* the JSON output (json-c) */
#include "tool_parse.h"	/* tool_parse_ulong() */
#include "tool_sizes.h"	/* tool_parse_sizes(): --sizes */

struct pp_result {
	unsigned int size;
	unsigned long iters;
	double median_us, avg_us, min_us, p99_us, max_us;	/* one-way = RTT/2 */
	unsigned long errors;
};

/* Fills r from rtt_ns[0..n) (sorted in place). */
void pp_stats(uint64_t *rtt_ns, unsigned long n, struct pp_result *r);
/*
 * --samples: appends "size rtt_ns" lines for rtt_ns[0..n) in measurement
 * order (call before pp_stats(), which sorts).  Returns 0 or -errno.
 */
int pp_save_samples(const struct pp_opts *o, unsigned int size, const uint64_t *rtt_ns,
		    unsigned long n);
/* Total-time only (no per-iteration clocks): avg only, other fields = avg. */
void pp_stats_total(uint64_t total_ns, unsigned long n, struct pp_result *r);
/*
 * The client's figures of one size (o->iters timed round trips): with
 * --no-timing from the time since t_start, else from rtt_ns after
 * --samples saved them.  0, or the --samples error (reported on stderr).
 */
int pp_size_result(const struct pp_opts *o, const char *tool, unsigned int size,
		   uint64_t *rtt_ns, int64_t t_start, struct pp_result *r);

void pp_print_table(const char *tool, const char *transport, const char *path_desc,
		    const struct pp_opts *o, const struct pp_result *res, unsigned int n);
/* A latency result at the end of results: size, iters and the *_us figures. */
json_object *pp_json_result(json_object *results, const struct pp_result *r);
void pp_print_json(const char *tool, const char *transport, long local_node, long peer_node,
		   const struct pp_opts *o, const struct pp_result *res, unsigned int n);

/* One size of a streaming run (velo2-pingpong/exanet-pingpong --bw, rma2-bw). */
struct pp_bw_result {
	unsigned int size;
	unsigned long iters;
	double seconds, mb_s, msg_s;
	unsigned long send_retries;	/* sends refused (flow control, NACK FULL), then retried */
	unsigned long errors;		/* data errors seen by either side, failed sends */
};

/* size bytes x iters messages in ns: the rates (0 for no time). */
void pp_bw_set(struct pp_bw_result *r, unsigned int size, unsigned long iters, int64_t ns);
/* A streaming run's JSON: the common header (MB/s, nodes, iters, warmup);
 * the tool adds its own fields, then pp_bw_json_rows() and tj_print(). */
json_object *pp_bw_json(const char *tool, const char *transport, const struct pp_opts *o,
			uint32_t node, uint32_t peer_node);
void pp_bw_json_rows(json_object *j, const struct pp_bw_result *res, unsigned int n);
/* The table's column heads and rows (size MB/s msgs/s retries errors). */
void pp_bw_table(const struct pp_bw_result *res, unsigned int n);

/*
 * The run parameters in the out-of-band handshakes: the client sends its
 * own, the server adopts them (pp_run_adopt()).  flags: the tool's own
 * options that the server follows.
 */
struct pp_run {
	uint32_t nsizes;
	uint32_t flags;
	uint32_t sizes[PP_MAX_SIZES];
	uint64_t iters;
	uint64_t warmup;
};

void pp_run_offer(struct pp_run *r, const unsigned int *sizes, unsigned int nsizes,
		  unsigned long iters, unsigned long warmup, uint32_t flags);
/*
 * Server: takes the client's sizes, iterations and warm-up after checking
 * 1..PP_MAX_SIZES sizes, each within 1..max_size (the client is not
 * trusted).  0, or -EPROTO (reported on stderr).
 */
int pp_run_adopt(const char *tool, const struct pp_run *r, unsigned int max_size,
		 unsigned int *sizes, unsigned int *nsizes, unsigned long *iters,
		 unsigned long *warmup);

/* TCP helpers for the out-of-band handshake (deadline in seconds). */
int pp_tcp_listen(const char *host, unsigned int port);
int pp_tcp_accept(int lfd, double timeout_s);
int pp_tcp_connect(const char *host, unsigned int port, double timeout_s);
int pp_write_full(int fd, const void *buf, size_t len, double timeout_s);
int pp_read_full(int fd, void *buf, size_t len, double timeout_s);
int pp_resolve(const char *host, unsigned int port, int socktype, void *sa, unsigned int *salen);

/*
 * Latency timer.  "monotonic" is clock_gettime(CLOCK_MONOTONIC), a vDSO
 * call on clocksources that support it (tsc, kvm-clock).  Where the kernel
 * fell back to a clocksource without vDSO support (acpi_pm, hpet: every
 * read is a system call), "auto" uses the TSC calibrated against
 * CLOCK_MONOTONIC at start-up instead (lib/common/exa_clock.h), so the
 * timed loop stays free of system calls.  mode: "auto", "monotonic" or
 * "tsc".
 */
int pp_timer_init(const char *mode);
int64_t pp_timer_ns(void);
const char *pp_timer_desc(void);
/* Largest of sizes[0..n), at least 1. */
unsigned int pp_max_size(const unsigned int *sizes, unsigned int n);
void pp_fill_pattern(uint8_t *buf, unsigned int len, uint32_t seed);

#endif
