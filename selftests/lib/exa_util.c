// SPDX-License-Identifier: MIT
/* Helpers shared by the ExaNet in-VM selftests; see exa_util.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <exanet.h>

#include "exa_genl.h"
#include "exa_util.h"

int64_t exa_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ genl */

/* One request on a connection of its own (tools/common/exa_genl.c). */
static int genl_do(uint8_t cmd, int flags, const uint16_t *types, const uint32_t *vals,
		   int n, exa_genl_reply_fn reply, void *arg)
{
	struct exa_genl g;
	int err = exa_genl_open(&g);

	if (err)
		return err;
	err = exa_genl_call(&g, cmd, flags, types, vals, n, reply, arg);
	exa_genl_close(&g);
	return err;
}

int exa_genl_family_id(void)
{
	struct exa_genl g;
	int err = exa_genl_open(&g), fam;

	if (err)
		return err;
	fam = g.family;
	exa_genl_close(&g);
	return fam;
}

static void count_pid_reply(struct nlattr **tb, void *arg)
{
	if (tb[EXANET_ATTR_PID])
		(*(int *)arg)++;
}

int exa_genl_count_bindings(void)
{
	int n = 0, err = genl_do(EXANET_CMD_PDID_GET, NLM_F_DUMP, NULL, NULL, 0, count_pid_reply,
				 &n);

	return err ? err : n;
}

int exa_genl_request(uint8_t cmd, int flags, const uint16_t *types, const uint32_t *vals, int n)
{
	return genl_do(cmd, flags, types, vals, n, NULL, NULL);
}

int exa_genl_pdid_bind(pid_t pid, uint32_t pdid)
{
	uint16_t t[2] = { EXANET_ATTR_PID, EXANET_ATTR_PDID };
	uint32_t v[2] = { (uint32_t)pid, pdid };

	return genl_do(EXANET_CMD_PDID_BIND, NLM_F_ACK, t, v, 2, NULL, NULL);
}

int exa_genl_pdid_unbind(pid_t pid)
{
	uint16_t t = EXANET_ATTR_PID;
	uint32_t v = (uint32_t)pid;

	return genl_do(EXANET_CMD_PDID_UNBIND, NLM_F_ACK, &t, &v, 1, NULL, NULL);
}

static void devget_reply(struct nlattr **tb, void *arg)
{
	exa_genl_dev_reply(tb, arg);
}

int exa_genl_dev_get(uint32_t index, long *node_id, long *pkt_in_use, long *mbox_in_use)
{
	struct exa_genl_dev d = { .node_id = -1, .pkt_in_use = -1, .mbox_in_use = -1 };
	uint16_t t = EXANET_ATTR_DEV_INDEX;
	int err = genl_do(EXANET_CMD_DEV_GET, NLM_F_ACK, &t, &index, 1, devget_reply, &d);

	if (node_id)
		*node_id = d.node_id;
	if (pkt_in_use)
		*pkt_in_use = d.pkt_in_use;
	if (mbox_in_use)
		*mbox_in_use = d.mbox_in_use;
	return err;
}

/* ------------------------------------------------------------ sysfs, kmsg */

long exa_read_long(const char *path)
{
	long v;
	FILE *f;
	int n;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%li", &v);
	fclose(f);
	return n == 1 ? v : -EINVAL;
}

long exa_sysfs_long(const char *attr)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/exanet/exanet0/%s", attr);
	return exa_read_long(path);
}

long long exa_file_field(const char *path, const char *field)
{
	char line[256], name[64];
	long long v;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63[^: \t]%*[: \t]%lld", name, &v) == 2 && !strcmp(name, field)) {
			fclose(f);
			return v;
		}
	fclose(f);
	return -1;
}

int exa_kmsg_bad_lines(void)
{
	static const char *const bad[] = { "Oops", "BUG:", "WARNING:", "general protection",
					   "Call Trace", "UBSAN", "KASAN" };
	char rec[8192];
	int fd, count = 0;
	size_t i;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);

		if (n < 0) {
			if (errno == EPIPE)	/* overwritten records: keep going */
				continue;
			break;			/* EAGAIN: end of log */
		}
		rec[n] = '\0';
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (strstr(rec, bad[i])) {
				count++;
				break;
			}
		}
	}
	close(fd);
	return count;
}

/* ------------------------------------------------------------ payloads */

uint32_t exa_crc32(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = 0xffffffffu;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc ^= p[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

uint32_t exa_mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

void exa_fill(uint8_t *buf, size_t len, uint32_t stream, uint32_t index)
{
	uint32_t x = exa_mix32(stream * 0x9e3779b9u ^ exa_mix32(index + 1));
	size_t i;

	for (i = 0; i < len; i++) {
		x = exa_mix32(x + (uint32_t)i);
		buf[i] = (uint8_t)x;
	}
}

int exa_check(const uint8_t *buf, size_t len, uint32_t stream, uint32_t index)
{
	uint8_t ref[256];

	if (len > sizeof(ref))
		return -EINVAL;
	exa_fill(ref, len, stream, index);
	return memcmp(ref, buf, len) ? -EBADMSG : 0;
}

void exa_make_msg(uint8_t *buf, size_t len, uint32_t src, uint32_t seq)
{
	uint32_t crc;

	memcpy(buf, &seq, 4);
	memcpy(buf + 4, &src, 4);
	memset(buf + 8, 0, 4);
	if (len > 12)
		exa_fill(buf + 12, len - 12, src, seq);
	crc = exa_crc32(buf, len);
	memcpy(buf + 8, &crc, 4);
}

int exa_parse_msg(const uint8_t *buf, size_t len, uint32_t *src, uint32_t *seq)
{
	uint8_t tmp[64];
	uint32_t crc;

	if (len < 12 || len > sizeof(tmp))
		return -EBADMSG;
	memcpy(tmp, buf, len);
	memcpy(&crc, tmp + 8, 4);
	memset(tmp + 8, 0, 4);
	if (exa_crc32(tmp, len) != crc)
		return -EBADMSG;
	memcpy(seq, buf, 4);
	memcpy(src, buf + 4, 4);
	if (len > 12 && exa_check(buf + 12, len - 12, *src, *seq))
		return -EBADMSG;
	return 0;
}

/* ------------------------------------------------------------ processes */

pid_t exa_spawn_in_pdid(uint32_t pdid, int (*fn)(void *), void *arg)
{
	int go[2];
	pid_t pid;
	char c = 0;
	int err;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(go[0]);
		close(go[1]);
		return err;
	}
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1 || c != 'g')
			_exit(126);
		close(go[0]);
		_exit(fn(arg) & 0xff);
	}
	close(go[0]);
	err = pdid ? exa_genl_pdid_bind(pid, pdid) : 0;
	if (err) {
		close(go[1]);
		waitpid(pid, NULL, 0);
		return err;
	}
	c = 'g';
	if (write(go[1], &c, 1) != 1) {
		err = -errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		return err;
	}
	close(go[1]);
	return pid;
}

static int wait_child(pid_t pid, int timeout_ms, int kill_on_timeout)
{
	int64_t end = exa_now_ms() + timeout_ms;
	int status;

	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0)
			return -errno;
		if (exa_now_ms() >= end) {
			if (!kill_on_timeout)
				return -ETIMEDOUT;
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -ETIMEDOUT;
		}
		usleep(2000);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int exa_wait_child(pid_t pid, int timeout_ms)
{
	return wait_child(pid, timeout_ms, 1);
}

int exa_poll_child(pid_t pid, int timeout_ms)
{
	return wait_child(pid, timeout_ms, 0);
}

int exa_system(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	rc = system(cmd);
	if (rc < 0)
		return -errno;
	if (WIFEXITED(rc))
		return WEXITSTATUS(rc);
	return 128 + WTERMSIG(rc);
}
