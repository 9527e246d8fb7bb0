/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the limit tests of both NICs: the per-user caps a device
 * shows in sysfs "user_usage", and cgroup v2 (rdma and memory
 * controllers) at /sys/fs/cgroup.
 */
#ifndef EXA_LIMITS_H
#define EXA_LIMITS_H

#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "exa_kid.h"

#define CG_ROOT "/sys/fs/cgroup"

/* Private anonymous memory, NULL on failure. */
static inline void *anon_pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Whole file into buf (NUL-terminated); bytes read or -errno. */
static inline long file_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return (long)got;
}

/* One write(2) of the formatted string: 0 or -errno (as the kernel said). */
static inline int file_write(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline int file_write(const char *path, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	ssize_t n;
	int fd, len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, buf, (size_t)len);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	return n == len ? 0 : -EIO;
}

/* ------------------------------------------------------------ user_usage */

#define USAGE_MAX_RES	8
#define USAGE_MAX_USERS	16

/*
 * "cap name=cap/total ...", then "uid U name=used ..." per user holding
 * anything (drivers/common/exa_quota.c).
 */
struct usage {
	int nres, nusers;
	char name[USAGE_MAX_RES][24];
	long long cap[USAGE_MAX_RES], total[USAGE_MAX_RES];
	long uid[USAGE_MAX_USERS];
	long long used[USAGE_MAX_USERS][USAGE_MAX_RES];
};

static inline int usage_read(const char *path, struct usage *u)
{
	char buf[4096], *line, *save = NULL;
	long n = file_read(path, buf, sizeof(buf));

	memset(u, 0, sizeof(*u));
	if (n < 0)
		return (int)n;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tok, *s2 = NULL;
		int user = !strncmp(line, "uid ", 4), r = 0;

		if (!user && strncmp(line, "cap ", 4))
			return -EPROTO;
		if (user && u->nusers >= USAGE_MAX_USERS)
			return -E2BIG;
		tok = strtok_r(line + 4, " ", &s2);
		if (user) {
			u->uid[u->nusers] = strtol(tok, NULL, 10);
			tok = strtok_r(NULL, " ", &s2);
		}
		for (; tok && r < USAGE_MAX_RES; tok = strtok_r(NULL, " ", &s2), r++) {
			char *eq = strchr(tok, '=');

			if (!eq)
				return -EPROTO;
			*eq = '\0';
			if (user) {
				u->used[u->nusers][r] = strtoll(eq + 1, NULL, 10);
			} else {
				snprintf(u->name[r], sizeof(u->name[r]), "%s", tok);
				if (sscanf(eq + 1, "%lld/%lld", &u->cap[r], &u->total[r]) != 2)
					return -EPROTO;
			}
		}
		if (user)
			u->nusers++;
		else
			u->nres = r;
	}
	return u->nres ? 0 : -EPROTO;
}

/* Index of resource name, -1 if absent. */
static inline int usage_res(const struct usage *u, const char *name)
{
	for (int r = 0; r < u->nres; r++)
		if (!strcmp(u->name[r], name))
			return r;
	return -1;
}

/* What uid holds of resource r (0 without a line). */
static inline long long usage_of(const struct usage *u, long uid, int r)
{
	for (int i = 0; i < u->nusers; i++)
		if (u->uid[i] == uid)
			return r >= 0 ? u->used[i][r] : 0;
	return 0;
}

/* A module parameter as a number, -errno if unreadable. */
static inline long module_param_long(const char *module, const char *param)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", module, param);
	return exa_read_long(path);
}

/* ------------------------------------------------------------- cgroups */

/*
 * A child cgroup CG_ROOT/<name> with the given controllers ("rdma memory")
 * enabled for it.  0, -ENOENT if cgroup2 or a controller is not there,
 * else -errno.
 */
static inline int cg_create(char *path, size_t len, const char *name, const char *controllers)
{
	char have[512], want[128], *c, *save = NULL;
	int err;

	if (file_read(CG_ROOT "/cgroup.controllers", have, sizeof(have)) < 0)
		return -ENOENT;
	snprintf(want, sizeof(want), "%s", controllers);
	for (c = strtok_r(want, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
		char *hit = strstr(have, c);
		size_t l = strlen(c);

		if (!hit || (hit[l] && hit[l] != ' ' && hit[l] != '\n'))
			return -ENOENT;
		err = file_write(CG_ROOT "/cgroup.subtree_control", "+%s", c);
		if (err)
			return err;
	}
	snprintf(path, len, CG_ROOT "/%s", name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static inline int cg_write(const char *cg, const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return file_write(path, "%s", val);
}

static inline long cg_read(const char *cg, const char *file, char *buf, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return file_read(path, buf, len);
}

static inline long long cg_read_ll(const char *cg, const char *file)
{
	char buf[64];
	long n = cg_read(cg, file, buf, sizeof(buf));

	return n < 0 ? n : strtoll(buf, NULL, 10);
}

static inline int cg_move(const char *cg, pid_t pid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	return file_write(path, "%d", (int)pid);
}

/*
 * "dev hca_handle=H hca_object=O" of rdma.current / rdma.max; "max" is
 * -1.  0, or -ENOENT without a line for dev.
 */
static inline int cg_rdma(const char *cg, const char *file, const char *dev, long long *handles,
			  long long *objects)
{
	char buf[1024], *line, *save = NULL;

	if (cg_read(cg, file, buf, sizeof(buf)) < 0)
		return -EIO;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64], h[32], o[32];

		if (sscanf(line, "%63s hca_handle=%31s hca_object=%31s", name, h, o) != 3 ||
		    strcmp(name, dev))
			continue;
		*handles = strcmp(h, "max") ? strtoll(h, NULL, 10) : -1;
		*objects = strcmp(o, "max") ? strtoll(o, NULL, 10) : -1;
		return 0;
	}
	return -ENOENT;
}

/*
 * rmdir, retried while the last process is still leaving (EBUSY).
 *
 * rdma_dev (or NULL): the limits set for that device in rdma.max are
 * reset to "max" first.  On Linux 6.1 an rdma cgroup removed while a
 * device's resource pool in it is idle but limited keeps that pool on the
 * device's list after the cgroup is freed (rdmacg_css_offline only resets
 * the limits); unregistering the device later (rmmod, unbind) then does
 * list_del() through freed memory: "list_del corruption", kernel BUG.
 * Writing "max" while the pool is idle frees it.
 */
static inline int cg_remove(const char *cg, const char *rdma_dev)
{
	if (rdma_dev) {
		char val[96];

		snprintf(val, sizeof(val), "%s hca_handle=max hca_object=max", rdma_dev);
		cg_write(cg, "rdma.max", val);
	}
	for (int i = 0; i < 100; i++) {
		if (!rmdir(cg) || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(50000);
	}
	return -EBUSY;
}

#endif
