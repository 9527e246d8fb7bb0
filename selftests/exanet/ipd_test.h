/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the exanet-ipd selftests (exanet_ipd.c and the exanet_ipd-*.h
 * it includes): start/stop the daemon of this node, read its status file,
 * wait for peers, TCP/UDP transfers over exa0 between ranks.
 */
#ifndef IPD_TEST_H
#define IPD_TEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include "exa_test.h"

#define IPD_PDID 18768
#define IPD_RUN "/run/exanet-ipd"
#define IPD_LOG "/tmp/ipd-test.log"
#define IPD_PORT_BASE 47300

static inline int my_rank(void)
{
	const char *r = getenv("EXA_RANK");

	return r ? atoi(r) : 0;
}

static inline int nranks(void)
{
	const char *n = getenv("EXA_NNODES");

	return n ? atoi(n) : 1;
}

static inline uint32_t exa_ip(int rank)	/* network order: 10.43.0.<rank+1> */
{
	return htonl((10u << 24) | (43u << 16) | (uint32_t)(rank + 1));
}

static inline const char *exa_ip_str(int rank, char *buf)
{
	sprintf(buf, "10.43.0.%d", rank + 1);
	return buf;
}

static inline int ipd_pid(void)
{
	FILE *f = fopen(IPD_RUN "/exa0.pid", "r");
	int pid = 0;

	if (f) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	if (pid > 0 && kill(pid, 0) == 0)
		return pid;
	return 0;
}

/* Value of key in the status file, or NULL; buf holds it. */
static inline const char *ipd_status_file_get(const char *key, char *buf, size_t len)
{
	FILE *f = fopen(IPD_RUN "/exa0.status", "r");
	char line[512];
	size_t kl = strlen(key);
	const char *ret = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && line[kl] == ' ') {
			char *nl = strchr(line, '\n');

			size_t vl;

			if (nl)
				*nl = 0;
			vl = strlen(line + kl + 1);
			if (vl >= len)
				vl = len - 1;
			memcpy(buf, line + kl + 1, vl);
			buf[vl] = 0;
			ret = buf;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Ask the daemon for a fresh status file (SIGUSR1) and wait for it. */
static inline int ipd_status_refresh(void)
{
	char b0[32], b1[32];
	const char *s0;
	int pid = ipd_pid();

	if (!pid)
		return -ESRCH;
	s0 = ipd_status_file_get("seq", b0, sizeof(b0));
	kill(pid, SIGUSR1);
	for (int i = 0; i < 200; i++) {
		const char *s1;

		usleep(10000);
		s1 = ipd_status_file_get("seq", b1, sizeof(b1));
		if (s1 && (!s0 || strcmp(s0, s1)))
			return 0;
	}
	return -ETIMEDOUT;
}

static inline long long ipd_status_num(const char *key)
{
	char buf[64];

	if (!ipd_status_file_get(key, buf, sizeof(buf)))
		return -1;
	return strtoll(buf, NULL, 0);
}

static inline long long ipd_counter(const char *name)
{
	char key[96];

	snprintf(key, sizeof(key), "counter.%s", name);
	return ipd_status_num(key);
}

static inline long long ipd_peer_num(int node, const char *field)
{
	char key[96];

	snprintf(key, sizeof(key), "peer.%d.%s", node, field);
	return ipd_status_num(key);
}

static inline const char *ipd_peer_str(int node, const char *field, char *buf, size_t len)
{
	char key[96];

	snprintf(key, sizeof(key), "peer.%d.%s", node, field);
	if (!ipd_status_file_get(key, buf, len))
		snprintf(buf, len, "(none)");
	return buf;
}

/* Stop the daemon of this node (SIGTERM, then SIGKILL after 10 s). */
static inline int ipd_stop(void)
{
	int pid = ipd_pid();

	if (!pid)
		return 0;
	kill(pid, SIGTERM);
	for (int i = 0; i < 1000 && kill(pid, 0) == 0; i++)
		usleep(10000);
	if (kill(pid, 0) == 0) {
		kill(pid, SIGKILL);
		usleep(200000);
		return -ETIMEDOUT;
	}
	return 0;
}

/* Start the daemon as the node image does: in the IP service's PDID. */
static inline int ipd_start(const char *mode, const char *extra)
{
	const char *dbg = getenv("EXA_IPD_ARGS");	/* e.g. -v when debugging */

	/* mode NULL: the daemon's default */
	return exa_system("exanetctl run --pdid %d -- exanet-ipd --daemon --pdid %d %s%s "
			  "--log-file " IPD_LOG " %s %s", IPD_PDID, IPD_PDID,
			  mode ? "--mode " : "", mode ? mode : "",
			  extra ? extra : "", dbg ? dbg : "");
}

/* Wait until every other rank's peer entry is 'up' (0) or timeout. */
static inline int ipd_wait_peers(int timeout_ms, const char *state)
{
	int64_t end = exa_now_ms() + timeout_ms;
	char buf[32];

	while (exa_now_ms() < end) {
		int ok = 1;

		if (ipd_status_refresh() == 0) {
			for (int r = 0; r < nranks(); r++)
				if (r != my_rank() &&
				    strcmp(ipd_peer_str(r, "state", buf, sizeof(buf)), state))
					ok = 0;
			if (ok)
				return 0;
		}
		usleep(100000);
	}
	return -ETIMEDOUT;
}

/* Wait until peer node's state is state. */
static inline int ipd_wait_peer(int node, const char *state, int timeout_ms)
{
	int64_t end = exa_now_ms() + timeout_ms;
	char buf[32];

	while (exa_now_ms() < end) {
		if (ipd_status_refresh() == 0 &&
		    !strcmp(ipd_peer_str(node, "state", buf, sizeof(buf)), state))
			return 0;
		usleep(50000);
	}
	return -ETIMEDOUT;
}

static inline long net_stat(const char *ifname, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", ifname, name);
	return exa_read_long(path);
}

/* utime + stime of a process, in clock ticks (-1 on error). */
static inline long proc_cpu_ticks(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (long)(ut + st);
}

/* CPU use of the daemon over ms milliseconds, in percent of one core. */
static inline double ipd_cpu_pct(int ms)
{
	int pid = ipd_pid();
	long t0, t1, hz = sysconf(_SC_CLK_TCK);
	int64_t w0, w1;

	if (!pid)
		return -1;
	t0 = proc_cpu_ticks(pid);
	w0 = exa_now_ms();
	usleep((useconds_t)ms * 1000);
	t1 = proc_cpu_ticks(pid);
	w1 = exa_now_ms();
	if (t0 < 0 || t1 < 0 || w1 <= w0)
		return -1;
	return 100.0 * (double)(t1 - t0) / (double)hz * 1000.0 / (double)(w1 - w0);
}

/* "name value" line of a sysfs file of exanet0 (counters, rdma_counters). */
static inline long long sysfs_named(const char *file, const char *name)
{
	char path[128], key[64];
	unsigned long long v;
	long long ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/exanet/exanet0/%s", file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %llu", key, &v) == 2)
		if (!strcmp(key, name))
			ret = (long long)v;
	fclose(f);
	return ret;
}

/* The kernel path's counters of this node, on one line of the log. */
static inline void ipd_log_ip_stats(const char *why)
{
	exa_system("echo \"# %s; ip_stats: $(tr '\\n' ' ' "
		   "</sys/class/exanet/exanet0/ip_stats)\"", why);
}

/*
 * ping over exa0 (opts: ping's count and deadline); when it fails, the
 * kernel path's counters go to the log, so a lost small packet can be
 * told from a late or held one.
 */
static inline int ipd_ping(const char *opts, const char *ip)
{
	int rc = exa_system("ping %s -q %s", opts, ip);

	if (rc)
		ipd_log_ip_stats("ping failed");
	return rc;
}

/* ---- data ---- */

static inline uint64_t xs64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static inline void fill_random(uint8_t *buf, size_t len, uint64_t *state)
{
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = xs64(state);

		memcpy(buf + i, &v, 8);
	}
	for (; i < len; i++)
		buf[i] = (uint8_t)xs64(state);
}

/* sha256sum of what is written to the returned stream, into out. */
static inline FILE *sha_open(const char *outfile)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "sha256sum > %s", outfile);
	return popen(cmd, "w");
}

static inline int sha_close(FILE *f, const char *outfile, char digest[65])
{
	FILE *r;
	int ok;

	if (pclose(f) != 0)
		return -EIO;
	r = fopen(outfile, "r");
	if (!r)
		return -errno;
	ok = fscanf(r, "%64s", digest) == 1;
	fclose(r);
	return ok ? 0 : -EIO;
}

static inline int tcp_listen_on(uint32_t ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = ip };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static inline int tcp_connect_to(uint32_t ip, int port, int timeout_ms)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = ip };
	int64_t end = exa_now_ms() + timeout_ms;
	int err = -ETIMEDOUT;

	while (exa_now_ms() < end) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		err = -errno;
		close(fd);
		usleep(100000);
	}
	return err;
}

static inline int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms);
}

#endif
