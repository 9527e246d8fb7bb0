// SPDX-License-Identifier: MIT
/* Shared ping-pong helpers; see pp_common.h. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pp_common.h"

static uint64_t timer_mult_q32;		/* ns per TSC tick << 32, 0: monotonic */
static char timer_desc[256] = "clock_gettime(CLOCK_MONOTONIC)";

static int clocksource_has_vdso(char *name, size_t len)
{
	static const char *const vdso[] = { "tsc", "kvm-clock", "hyperv_clocksource_tsc_page",
					    "arch_sys_counter" };
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	size_t i;

	snprintf(name, len, "unknown");
	if (!f)
		return 1;	/* cannot tell: trust the vDSO */
	if (!fgets(name, (int)len, f))
		snprintf(name, len, "unknown");
	fclose(f);
	name[strcspn(name, "\n")] = '\0';
	for (i = 0; i < sizeof(vdso) / sizeof(vdso[0]); i++)
		if (!strcmp(name, vdso[i]))
			return 1;
	return 0;
}

int pp_timer_init(const char *mode)
{
	char cs[64];
	int use_tsc;

	if (!mode || !strcmp(mode, "auto"))
		use_tsc = !clocksource_has_vdso(cs, sizeof(cs));
	else if (!strcmp(mode, "monotonic"))
		use_tsc = 0;
	else if (!strcmp(mode, "tsc"))
		use_tsc = 1;
	else
		return -EINVAL;
	timer_mult_q32 = 0;
	snprintf(timer_desc, sizeof(timer_desc), "clock_gettime(CLOCK_MONOTONIC)");
	if (!use_tsc)
		return 0;
#if defined(EXA_HAVE_TSC)
	{
		double ghz = 0;

		timer_mult_q32 = exa_tsc_calibrate(20000000, &ghz);	/* 20 ms */
		if (!timer_mult_q32)
			return -EIO;
		snprintf(timer_desc, sizeof(timer_desc),
			 "tsc calibrated against CLOCK_MONOTONIC (%.3f GHz)%s%s%s", ghz,
			 mode && !strcmp(mode, "tsc") ? "" : "; clocksource ",
			 mode && !strcmp(mode, "tsc") ? "" : cs,
			 mode && !strcmp(mode, "tsc") ? "" : " has no vDSO");
		return 0;
	}
#else
	return -EOPNOTSUPP;
#endif
}

int64_t pp_timer_ns(void)
{
#if defined(EXA_HAVE_TSC)
	if (timer_mult_q32)
		return exa_tsc_ns(timer_mult_q32);
#endif
	return exa_clock_ns();
}

const char *pp_timer_desc(void)
{
	return timer_desc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void pp_stats(uint64_t *rtt_ns, unsigned long n, struct pp_result *r)
{
	double sum = 0;
	unsigned long i, p99;

	r->iters = n;
	if (n == 0) {
		r->median_us = r->avg_us = r->min_us = r->p99_us = r->max_us = 0;
		return;
	}
	qsort(rtt_ns, n, sizeof(*rtt_ns), cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)rtt_ns[i];
	/* one-way latency is half the round trip; ns -> us is /1000 */
	r->avg_us = sum / n / 2000.0;
	r->min_us = rtt_ns[0] / 2000.0;
	r->max_us = rtt_ns[n - 1] / 2000.0;
	r->median_us = (n % 2 ? rtt_ns[n / 2] : (rtt_ns[n / 2 - 1] + rtt_ns[n / 2]) / 2) / 2000.0;
	/* nearest-rank percentile: ceil(0.99 n) - 1 */
	p99 = (n * 99 + 99) / 100 - 1;
	r->p99_us = rtt_ns[p99] / 2000.0;
}

int pp_save_samples(const struct pp_opts *o, unsigned int size, const uint64_t *rtt_ns,
		    unsigned long n)
{
	unsigned long i;
	FILE *f;
	int err = 0;

	if (!o->samples)
		return 0;
	f = fopen(o->samples, "a");
	if (!f)
		return -errno;
	for (i = 0; i < n; i++)
		fprintf(f, "%u %llu\n", size, (unsigned long long)rtt_ns[i]);
	if (ferror(f))
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

void pp_stats_total(uint64_t total_ns, unsigned long n, struct pp_result *r)
{
	r->iters = n;
	r->avg_us = n ? (double)total_ns / n / 2000.0 : 0;
	r->median_us = r->min_us = r->p99_us = r->max_us = r->avg_us;
}

int pp_size_result(const struct pp_opts *o, const char *tool, unsigned int size,
		   uint64_t *rtt_ns, int64_t t_start, struct pp_result *r)
{
	int err;

	if (o->no_timing) {
		pp_stats_total((uint64_t)(pp_timer_ns() - t_start), o->iters, r);
		return 0;
	}
	err = pp_save_samples(o, size, rtt_ns, o->iters);
	if (err) {
		fprintf(stderr, "%s: --samples %s: %s\n", tool, o->samples, strerror(-err));
		return err;
	}
	pp_stats(rtt_ns, o->iters, r);
	return 0;
}

void pp_print_table(const char *tool, const char *transport, const char *path_desc,
		    const struct pp_opts *o, const struct pp_result *res, unsigned int n)
{
	unsigned int i;

	printf("# %s (%s): %s, iters %lu, warmup %lu%s\n", tool, transport, path_desc,
	       o->iters, o->warmup, o->no_timing ? ", no per-iteration timing (avg only)" : "");
	printf("# one-way latency = RTT/2, microseconds; timer: %s\n", pp_timer_desc());
	printf("%6s %12s %12s %12s %12s %12s %8s\n", "size", "median_us", "avg_us", "min_us",
	       "p99_us", "max_us", "errors");
	for (i = 0; i < n; i++)
		printf("%6u %12.3f %12.3f %12.3f %12.3f %12.3f %8lu\n", res[i].size,
		       res[i].median_us, res[i].avg_us, res[i].min_us, res[i].p99_us,
		       res[i].max_us, res[i].errors);
	fflush(stdout);
}

json_object *pp_json_result(json_object *results, const struct pp_result *r)
{
	json_object *j = tj_result(results, r->size, r->iters);

	tj_num(j, "median_us", "%.3f", r->median_us);
	tj_num(j, "avg_us", "%.3f", r->avg_us);
	tj_num(j, "min_us", "%.3f", r->min_us);
	tj_num(j, "p99_us", "%.3f", r->p99_us);
	tj_num(j, "max_us", "%.3f", r->max_us);
	return j;
}

void pp_print_json(const char *tool, const char *transport, long local_node, long peer_node,
		   const struct pp_opts *o, const struct pp_result *res, unsigned int n)
{
	json_object *j = tj_bench(tool), *results;
	unsigned int i;

	tj_str(j, "transport", transport);
	tj_str(j, "unit", "us");
	tj_str(j, "latency", "one-way (rtt/2)");
	tj_int(j, "local_node", local_node);
	tj_int(j, "peer_node", peer_node);
	tj_uint(j, "iters", o->iters);
	tj_uint(j, "warmup", o->warmup);
	tj_bool(j, "per_iteration_timing", !o->no_timing);
	tj_str(j, "timer", pp_timer_desc());
	results = tj_results(j);
	for (i = 0; i < n; i++)
		tj_uint(pp_json_result(results, &res[i]), "errors", res[i].errors);
	tj_print(j, 0);
}

void pp_run_offer(struct pp_run *r, const unsigned int *sizes, unsigned int nsizes,
		  unsigned long iters, unsigned long warmup, uint32_t flags)
{
	unsigned int i;

	r->nsizes = nsizes;
	r->flags = flags;
	for (i = 0; i < PP_MAX_SIZES; i++)
		r->sizes[i] = i < nsizes ? sizes[i] : 0;
	r->iters = iters;
	r->warmup = warmup;
}

int pp_run_adopt(const char *tool, const struct pp_run *r, unsigned int max_size,
		 unsigned int *sizes, unsigned int *nsizes, unsigned long *iters,
		 unsigned long *warmup)
{
	unsigned int i;

	if (r->nsizes > PP_MAX_SIZES || r->nsizes == 0) {
		fprintf(stderr, "%s: client sent %u sizes\n", tool, r->nsizes);
		return -EPROTO;
	}
	for (i = 0; i < r->nsizes; i++)
		if (r->sizes[i] == 0 || r->sizes[i] > max_size) {
			fprintf(stderr, "%s: client sent size %u (1..%u)\n", tool, r->sizes[i],
				max_size);
			return -EPROTO;
		}
	for (i = 0; i < r->nsizes; i++)
		sizes[i] = r->sizes[i];
	*nsizes = r->nsizes;
	*iters = (unsigned long)r->iters;
	*warmup = (unsigned long)r->warmup;
	return 0;
}

int pp_resolve(const char *host, unsigned int port, int socktype, void *sa, unsigned int *salen)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = socktype,
				  .ai_flags = host && *host ? 0 : AI_PASSIVE };
	struct addrinfo *ai;
	char ports[16];
	int rc;

	snprintf(ports, sizeof(ports), "%u", port);
	rc = getaddrinfo(host && *host ? host : NULL, ports, &hints, &ai);
	if (rc)
		return -EHOSTUNREACH;
	memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	*salen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

int pp_tcp_listen(const char *host, unsigned int port)
{
	struct sockaddr_storage ss;
	unsigned int sl;
	int fd, one = 1, err;

	err = pp_resolve(host, port, SOCK_STREAM, &ss, &sl);
	if (err)
		return err;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 4) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int wait_fd(int fd, short events, double timeout_s)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int rc;

	do {
		rc = poll(&pfd, 1, timeout_s < 0 ? -1 : (int)(timeout_s * 1000));
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	return rc == 0 ? -ETIMEDOUT : 0;
}

int pp_tcp_accept(int lfd, double timeout_s)
{
	int fd, err, one = 1;

	err = wait_fd(lfd, POLLIN, timeout_s);
	if (err)
		return err;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int pp_tcp_connect(const char *host, unsigned int port, double timeout_s)
{
	struct sockaddr_storage ss;
	unsigned int sl;
	int64_t end = exa_clock_ns() + (int64_t)(timeout_s * 1e9);
	int fd, err, one = 1;

	err = pp_resolve(host, port, SOCK_STREAM, &ss, &sl);
	if (err)
		return err;
	/* the server may start a moment after us: retry until the deadline */
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&ss, sl) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		err = -errno;
		close(fd);
		if (exa_clock_ns() >= end)
			return err;
		usleep(100000);
	}
}

/* All of len bytes out (send) or in (recv), each wait at most timeout_s. */
static int xfer_full(int fd, char *p, size_t len, double timeout_s, int out)
{
	while (len) {
		ssize_t n;
		int err = wait_fd(fd, out ? POLLOUT : POLLIN, timeout_s);

		if (err)
			return err;
		n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n == 0 && !out)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pp_write_full(int fd, const void *buf, size_t len, double timeout_s)
{
	return xfer_full(fd, (char *)buf, len, timeout_s, 1);
}

int pp_read_full(int fd, void *buf, size_t len, double timeout_s)
{
	return xfer_full(fd, buf, len, timeout_s, 0);
}

unsigned int pp_max_size(const unsigned int *sizes, unsigned int n)
{
	unsigned int i, max = 1;

	for (i = 0; i < n; i++)
		if (sizes[i] > max)
			max = sizes[i];
	return max;
}

void pp_fill_pattern(uint8_t *buf, unsigned int len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 0x9e3779b9u;
	unsigned int i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

void pp_bw_set(struct pp_bw_result *r, unsigned int size, unsigned long iters, int64_t ns)
{
	r->size = size;
	r->iters = iters;
	r->seconds = (double)ns * 1e-9;
	r->mb_s = r->seconds > 0 ? (double)size * (double)iters / r->seconds / 1e6 : 0;
	r->msg_s = r->seconds > 0 ? (double)iters / r->seconds : 0;
}

json_object *pp_bw_json(const char *tool, const char *transport, const struct pp_opts *o,
			uint32_t node, uint32_t peer_node)
{
	json_object *j = tj_bench(tool);

	tj_str(j, "transport", transport);
	tj_str(j, "unit", "MB/s");
	tj_uint(j, "local_node", node);
	tj_uint(j, "peer_node", peer_node);
	tj_uint(j, "iters", o->iters);
	tj_uint(j, "warmup", o->warmup);
	return j;
}

void pp_bw_json_rows(json_object *j, const struct pp_bw_result *res, unsigned int n)
{
	json_object *results = tj_results(j);
	unsigned int i;

	for (i = 0; i < n; i++) {
		json_object *r = tj_result(results, res[i].size, res[i].iters);

		tj_num(r, "seconds", "%.6f", res[i].seconds);
		tj_num(r, "mb_s", "%.2f", res[i].mb_s);
		tj_num(r, "msg_s", "%.1f", res[i].msg_s);
		tj_uint(r, "send_retries", res[i].send_retries);
		tj_uint(r, "errors", res[i].errors);
	}
}

void pp_bw_table(const struct pp_bw_result *res, unsigned int n)
{
	unsigned int i;

	printf("%10s %12s %14s %12s %8s\n", "size", "MB/s", "msgs/s", "retries", "errors");
	for (i = 0; i < n; i++)
		printf("%10u %12.2f %14.1f %12lu %8lu\n", res[i].size, res[i].mb_s, res[i].msg_s,
		       res[i].send_retries, res[i].errors);
}
