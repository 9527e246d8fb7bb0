/* SPDX-License-Identifier: MIT */
/*
 * Helper processes of the isolation and limit tests: a forked child,
 * optionally bound to a job domain (netlink, before it runs) and running
 * as another user, that talks to the test over two pipes.
 */
#ifndef EXA_KID_H
#define EXA_KID_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exa_domain.h>

#include "exa_util.h"

#define UID_NOBODY	65534
#define UID_USER	1000	/* an ordinary user; needs no passwd entry */

/* The test's side of a helper. */
struct kid {
	pid_t pid;
	int rd, wr;
};

/* The helper's side. */
struct kid_io {
	int rd, wr;
	uid_t uid;		/* 0: stays root */
	void *arg;
	int (*fn)(struct kid_io *io);
};

/* Become uid (gid = uid, no supplementary groups); root stays root. */
static inline int kid_become(uid_t uid)
{
	if (!uid)
		return 0;
	if (setgroups(0, NULL) ||
	    setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) ||
	    setresuid(uid, uid, uid))
		return -errno;
	return 0;
}

/* Write or read exactly len bytes; 0 or -errno (-EPIPE: the other side is gone). */
static inline int kid_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static inline int kid_read_tmo(int fd, void *buf, size_t len, int timeout_ms)
{
	int64_t end = exa_now_ms() + timeout_ms;
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = end - exa_now_ms();
		ssize_t n;

		if (timeout_ms >= 0 && left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, timeout_ms < 0 ? -1 : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			continue;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static inline int kid_read(int fd, void *buf, size_t len)
{
	return kid_read_tmo(fd, buf, len, -1);
}

static int kid_trampoline(void *p)
{
	struct kid_io *io = p;
	int fd, err;

	/* no copy of another helper's pipe may keep it alive */
	for (fd = 3; fd < 1024; fd++)
		if (fd != io->rd && fd != io->wr)
			close(fd);
	err = kid_become(io->uid);

	if (err) {
		printf("# helper: cannot become uid %u: %s\n", (unsigned int)io->uid,
		       strerror(-err));
		return 100;
	}
	return io->fn(io);
}

/*
 * Fork a helper bound to job domain pdid (0: unbound) that becomes uid and
 * runs fn(io).  0 or -errno.
 */
static inline int kid_spawn(struct kid *k, uint32_t pdid, uid_t uid,
			    int (*fn)(struct kid_io *), void *arg)
{
	int down[2], up[2];
	struct kid_io io;
	pid_t pid;

	if (pipe2(down, O_CLOEXEC))
		return -errno;
	if (pipe2(up, O_CLOEXEC)) {
		close(down[0]);
		close(down[1]);
		return -errno;
	}
	io = (struct kid_io){ .rd = down[0], .wr = up[1], .uid = uid, .arg = arg, .fn = fn };
	fflush(stdout);
	pid = exa_spawn_in_pdid(pdid, kid_trampoline, &io);
	close(down[0]);
	close(up[1]);
	if (pid < 0) {
		close(down[1]);
		close(up[0]);
		return (int)pid;
	}
	k->pid = pid;
	k->rd = up[0];
	k->wr = down[1];
	return 0;
}

/* Close the helper's pipes (it sees EOF and ends) and reap it. */
static inline int kid_finish(struct kid *k, int timeout_ms)
{
	int st;

	if (k->pid <= 0)
		return 0;
	close(k->wr);
	st = exa_wait_child(k->pid, timeout_ms);
	close(k->rd);
	k->pid = 0;
	return st;
}

/* The domain a process of uid bound to pdid (0: unbound) must get. */
static inline uint32_t kid_domain(uid_t uid, uint32_t pdid)
{
	return pdid ? pdid : EXA_DOMAIN_OF_UID(uid);
}

/* Value of "name <value>" in a sysfs file of counters; -1 if absent. */
static inline long long counter_in(const char *path, const char *name)
{
	return exa_file_field(path, name);
}

#define EXANET_SYSFS "/sys/class/exanet/exanet0/"

/* Helper processes of one user holding resources, released together. */
#define KID_CROWD_MAX	32
struct crowd {
	struct kid kid[KID_CROWD_MAX];
	int n;
};

#ifdef EXPECT_EQ
static inline void crowd_release(struct __test_metadata *_metadata, struct crowd *cr,
				 int timeout_ms)
{
	while (cr->n > 0)
		EXPECT_EQ(0, kid_finish(&cr->kid[--cr->n], timeout_ms));
}
#endif

#endif
