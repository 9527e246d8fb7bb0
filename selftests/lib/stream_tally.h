/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the stream helpers of direct_test.py's node restart share
 * (selftests/extoll/extoll_put_stream.c, selftests/exanet/exanet_rdma_stream.c):
 * running until SIGTERM, their arguments, and the tally they print as
 * "ok N refused N lost N" every 200 ms and at the end.
 */
#ifndef STREAM_TALLY_H
#define STREAM_TALLY_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define STREAM_REPORT_S 0.2

static volatile sig_atomic_t stream_stop;

static void stream_on_term(int sig)
{
	(void)sig;
	stream_stop = 1;
}

/* SIGTERM and SIGINT end the stream (stream_stop) */
static inline void stream_catch_term(void)
{
	struct sigaction sa = { .sa_handler = stream_on_term };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static inline double stream_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* a whole number, decimal or 0x...: 0, else -1 */
static inline int stream_parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

/* Transfers that completed, that the NI ended with an error, and lost */
struct stream_tally {
	unsigned long long ok, refused, lost;
	double next_report;
};

static inline void stream_tally_print(const struct stream_tally *t)
{
	printf("ok %llu refused %llu lost %llu\n", t->ok, t->refused, t->lost);
	fflush(stdout);
}

/* count one transfer; the tally every STREAM_REPORT_S */
static inline void stream_tally_count(struct stream_tally *t, int lost, int refused)
{
	if (lost)
		t->lost++;
	else if (refused)
		t->refused++;
	else
		t->ok++;
	if (stream_now_s() >= t->next_report) {
		stream_tally_print(t);
		t->next_report = stream_now_s() + STREAM_REPORT_S;
	}
}

#endif
