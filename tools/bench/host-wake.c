// SPDX-License-Identifier: MIT
/*
 * host-wake: what waking a sleeping thread costs on this host, the
 * reference for a message to a sleeping receiver (make bench-msg,
 * exanet-pingpong --sleep).  Two threads ping-pong through eventfds, each
 * asleep in read() while the other runs; a pause before every round trip
 * lets the other CPU go idle, as a waiting node's host CPU does.  The
 * wake-up is half the round trip.  Pinned to two CPUs ("cross": the other
 * CPU must be woken up, e.g. by an IPI) or both to CPU 0 ("same": a task
 * switch only).  Prints one JSON object (tools/common/tool_json.h).
 * usage: host-wake [round trips] [pause us]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "tool_json.h"

struct pair {
	int ping, pong;		/* eventfds */
	int peer_cpu;
	long iters;
	int unpinned;		/* the peer could not run on peer_cpu */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int pass(int from, int to)
{
	uint64_t v;

	if (read(from, &v, sizeof(v)) != sizeof(v))
		return -1;
	v = 1;
	return write(to, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

static void *peer(void *arg)
{
	struct pair *p = arg;

	if (pin(p->peer_cpu)) {
		uint64_t v = 1;

		__atomic_store_n(&p->unpinned, 1, __ATOMIC_RELEASE);
		if (write(p->pong, &v, sizeof(v)) != sizeof(v))
			perror("host-wake: eventfd");
		return NULL;
	}
	for (long i = 0; i < p->iters; i++)
		if (pass(p->ping, p->pong))
			break;
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median and p99 of the wake-up (half round trip) in us; 0 or -errno. */
static int measure(int peer_cpu, long iters, long pause_us, double *med, double *p99)
{
	struct pair p = { .peer_cpu = peer_cpu, .iters = iters };
	int64_t *rt = calloc(iters, sizeof(*rt));
	pthread_t t;
	uint64_t one = 1;
	int err = 0;

	p.ping = eventfd(0, EFD_CLOEXEC);
	p.pong = eventfd(0, EFD_CLOEXEC);
	if (!rt || p.ping < 0 || p.pong < 0 || pthread_create(&t, NULL, peer, &p)) {
		err = -ENOMEM;
		goto out;
	}
	for (long i = 0; i < iters; i++) {
		int64_t t0;

		usleep(pause_us);
		t0 = now_ns();
		if (write(p.ping, &one, sizeof(one)) != sizeof(one) ||
		    read(p.pong, &one, sizeof(one)) != sizeof(one)) {
			err = -EIO;
			break;
		}
		if (__atomic_load_n(&p.unpinned, __ATOMIC_ACQUIRE)) {
			err = -EINVAL;	/* no such CPU for the peer */
			break;
		}
		rt[i] = now_ns() - t0;
	}
	pthread_join(t, NULL);
	if (!err) {
		qsort(rt, iters, sizeof(*rt), cmp_i64);
		*med = rt[iters / 2] / 2e3;
		*p99 = rt[iters * 99 / 100] / 2e3;
	}
out:
	if (p.ping >= 0)
		close(p.ping);
	if (p.pong >= 0)
		close(p.pong);
	free(rt);
	return err;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
	long pause_us = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
	double cross_med, cross_p99, same_med, same_p99;
	json_object *out;
	int err;

	if (iters < 100 || pause_us < 0 || pause_us > 1000000) {
		fprintf(stderr, "usage: host-wake [round trips >= 100] [pause us 0..1000000]\n");
		return 2;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "host-wake: needs two CPUs\n");
		return 1;
	}
	if (pin(0)) {
		fprintf(stderr, "host-wake: cannot run on CPU 0\n");
		return 1;
	}
	err = measure(1, iters, pause_us, &cross_med, &cross_p99);
	if (!err)
		err = measure(0, iters, pause_us, &same_med, &same_p99);
	if (err) {
		fprintf(stderr, "host-wake: %s\n", strerror(-err));
		return 1;
	}
	out = tj_bench("host-wake");
	tj_int(out, "round_trips", iters);
	tj_int(out, "pause_us", pause_us);
	tj_num(out, "cross_cpu_wake_us", "%.2f", cross_med);
	tj_num(out, "cross_cpu_wake_p99_us", "%.2f", cross_p99);
	tj_num(out, "same_cpu_wake_us", "%.2f", same_med);
	tj_num(out, "same_cpu_wake_p99_us", "%.2f", same_p99);
	tj_print(out, 0);
	return 0;
}
