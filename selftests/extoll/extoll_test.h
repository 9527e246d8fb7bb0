/* SPDX-License-Identifier: GPL-2.0 */
/* Common includes and helpers of the EXTOLL in-VM selftests. */
#ifndef EXTOLL_TEST_H
#define EXTOLL_TEST_H

#include <rma2.h>
#include <velo2.h>
#include <velo2_mod.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include <extoll_hw.h>

#include "../lib/kselftest_exa.h"
#include "../lib/oob.h"
#include "../lib/exa_util.h"

#define MiB (1024u * 1024u)

/* VmPin of a process in kB (pages the drivers pinned for it), or -1. */
static inline long xt_vmpin_kb(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return (long)exa_file_field(path, "VmPin");
}

static inline double xt_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Deterministic pseudo-random bytes for (seed). */
static inline void xt_fill(uint8_t *b, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 7;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

/* Wait up to tmo seconds for the next notification, copy it out, free it. */
static inline int xt_next_noti(RMA2_Port p, RMA2_Notification *out, double tmo)
{
	RMA2_Notification *n;
	double end = xt_now_s() + tmo;

	while (rma2_noti_probe(p, &n) != RMA2_SUCCESS) {
		if (xt_now_s() > end)
			return -1;
		sched_yield();
	}
	rma2_noti_dup(n, out);
	return rma2_noti_free(p, n) == RMA2_SUCCESS ? 0 : -1;
}

/*
 * What one notification must say, field by field (spec 4.1, the table of
 * Documentation/extoll/hardware.md).  Transfers larger than a wire
 * fragment (EXTOLL_RMA_FRAG_SIZE) are described by their last fragment.
 */
struct xt_noti {
	unsigned int type;		/* RMA2_{REQUESTER,RESPONDER,COMPLETER}_NOTIFICATION */
	unsigned int cmd;		/* RMA2_Command */
	unsigned int err;		/* RMA2_ERROR_* bits */
	unsigned int node, vpid;	/* the peer */
	unsigned int mode;		/* RMA2_NOTI_* bits */
	uint64_t word0;			/* local address, immediate value or payload */
	uint32_t size;			/* bytes of the last fragment / count; 0: class below */
	unsigned int cls;		/* notification put class */
};

static inline uint32_t xt_last_frag_off(uint32_t len)
{
	return len ? (len - 1) / EXTOLL_RMA_FRAG_SIZE * EXTOLL_RMA_FRAG_SIZE : 0;
}

/* A put/get notification about len bytes at local address 'start'. */
static inline struct xt_noti xt_noti_xfer(unsigned int type, unsigned int cmd, unsigned int node,
					  unsigned int vpid, uint64_t start, uint32_t len)
{
	struct xt_noti w = { type, cmd, 0, node, vpid, RMA2_NOTI_TE,
			     start + xt_last_frag_off(len), len - xt_last_frag_off(len), 0 };

	return w;
}

/* 0 if n says what w describes, else the first differing field in why. */
static inline int xt_noti_differs(RMA2_Notification *n, const struct xt_noti *w, char *why,
				  size_t len)
{
	char dump[256] = "";
	const char *f = NULL;

	if (rma2_noti_get_notification_type(n) != w->type)
		f = "type";
	else if (rma2_noti_get_cmd(n) != w->cmd)
		f = "command";
	else if (rma2_noti_get_error(n) != w->err)
		f = "error";
	else if (rma2_noti_get_remote_nodeid(n) != w->node)
		f = "remote node";
	else if (rma2_noti_get_remote_vpid(n) != w->vpid)
		f = "remote VPID";
	else if (rma2_noti_get_mode(n) != w->mode)
		f = "mode";
	else if (n->word0.value != w->word0)
		f = "word0 (address/value/payload)";
	else if (w->size && rma2_noti_get_size(n) != w->size)
		f = "size";
	else if (!w->size && rma2_noti_get_notiput_class(n) != w->cls)
		f = "class";
	if (!f)
		return 0;
	rma2_noti_sdump(n, dump, sizeof(dump));
	snprintf(why, len, "%s differs (want word0 %#llx size %u): %s", f,
		 (unsigned long long)w->word0, w->size, dump);
	return 1;
}

/*
 * The next k notifications on p, in any order, are exactly want[0..k-1]
 * (matched by type).  Returns the number of mismatches, -1 on timeout.
 */
static inline int xt_expect_notis(struct __test_metadata *_metadata, RMA2_Port p,
				  const struct xt_noti *want, int k, double tmo, const char *what)
{
	unsigned int seen = 0;
	int bad = 0;

	for (int i = 0; i < k; i++) {
		RMA2_Notification n;
		char why[400];
		int j;

		if (xt_next_noti(p, &n, tmo)) {
			TH_LOG("%s: notification %d of %d missing", what, i + 1, k);
			EXPECT_TRUE(0);
			return -1;
		}
		for (j = 0; j < k; j++)
			if (!(seen & (1u << j)) && rma2_noti_get_notification_type(&n) == want[j].type)
				break;
		if (j == k) {
			rma2_noti_sdump(&n, why, sizeof(why));
			TH_LOG("%s: unexpected %s", what, why);
			bad++;
			continue;
		}
		seen |= 1u << j;
		if (xt_noti_differs(&n, &want[j], why, sizeof(why))) {
			TH_LOG("%s: %s", what, why);
			bad++;
		}
	}
	EXPECT_EQ(0, bad);
	return bad;
}

/* Probing VELO receive with a timeout (VELO2_RET_NO_MSG when it expires). */
static inline velo2_ret_t xt_velo_recv_tmo(velo2_port_t *p, void *buf, uint32_t buflen,
					   uint32_t *len, uint32_t *src, uint8_t *tag,
					   uint8_t *mtt, double tmo)
{
	double end = xt_now_s() + tmo;
	velo2_ret_t r;

	while ((r = velo2_probe_recv(p, buf, buflen, len, src, tag, mtt)) == VELO2_RET_NO_MSG) {
		if (xt_now_s() > end)
			return r;
		sched_yield();
	}
	return r;
}

#define XT_RMA2_OPEN_OR_SKIP(pp)						\
	do {									\
		RMA2_ERROR __rc = rma2_open(pp);				\
		if (__rc == RMA2_ERR_NO_DEVICE || __rc == RMA2_ERR_FD)		\
			SKIP_TEST("no EXTOLL device (%d)", __rc);		\
		ASSERT_EQ(RMA2_SUCCESS, __rc);					\
	} while (0)

#define XT_VELO2_OPEN_OR_SKIP(p)						\
	do {									\
		velo2_ret_t __r = velo2_open(p);				\
		if (__r == VELO2_RET_ERR_FDOPEN)				\
			SKIP_TEST("no EXTOLL VELO device");			\
		ASSERT_EQ(VELO2_RET_SUCCESS, __r);				\
	} while (0)

/*
 * Send messages *sent .. count-1 (len bytes, the sequence number in the
 * first word) on c while draining rx: the sender is told to try again when
 * the ring is full, and every message still arrives once and in order
 * (*recvd .. count-1) within tmo seconds.
 */
static inline void xt_velo_send_and_drain(struct __test_metadata *_metadata,
					  velo2_connection_t *c, velo2_port_t *rx,
					  uint32_t *sent, uint32_t *recvd, uint32_t count,
					  uint32_t len, double tmo)
{
	double end = xt_now_s() + tmo;
	uint32_t m[4] = { 0 }, rlen, src;
	uint8_t tag, mtt;

	while (*recvd < count) {
		velo2_ret_t r;

		ASSERT_GT(end, xt_now_s());
		if (*sent < count) {
			m[0] = *sent;
			r = velo2_send(c, m, len, 0, 0);
			if (r == VELO2_RET_SUCCESS)
				(*sent)++;
			else
				ASSERT_EQ(VELO2_RET_TRY_AGAIN, r);
		}
		r = velo2_probe_recv(rx, m, sizeof(m), &rlen, &src, &tag, &mtt);
		if (r == VELO2_RET_NO_MSG) {
			sched_yield();
			continue;
		}
		ASSERT_EQ(VELO2_RET_SUCCESS, r);
		ASSERT_EQ(*recvd, m[0]);
		(*recvd)++;
	}
}

/*
 * Runs child(stage) in a forked process that enters SECCOMP_MODE_STRICT
 * after its set-up (stages: 1 set up, 2 strict, 3 data error, 4 done; see
 * the children): the data path must finish without a forbidden system call.
 */
static inline void xt_expect_no_syscalls(struct __test_metadata *_metadata,
					 void (*child)(volatile int *stage))
{
	volatile int *stage = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				   -1, 0);
	pid_t pid;
	int st;

	ASSERT_TRUE(stage != MAP_FAILED);
	*stage = 0;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0)
		child(stage);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	TH_LOG("child stage %d, status 0x%x", *stage, st);
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	EXPECT_EQ(4, *stage);
	munmap((void *)stage, 4096);
}

/* /sys/class/extoll/extoll0-<unit>/<attr> ("rma2" or "velo2"); -errno on error. */
static inline long xt_sysfs(const char *unit, const char *attr)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/extoll/extoll0-%s/%s", unit, attr);
	return exa_read_long(path);
}

/* What the driver holds for all endpoints of the device (sysfs). */
struct xt_usage {
	long rma_vpids, velo_vpids;	/* vpids_in_use */
	long registered_pages;		/* ATU entries */
	long pinned_pages;		/* pinned user pages */
	long queue_bytes;		/* notification queues + VELO rings */
};

static inline void xt_usage_read(struct xt_usage *u)
{
	u->rma_vpids = xt_sysfs("rma2", "vpids_in_use");
	u->velo_vpids = xt_sysfs("velo2", "vpids_in_use");
	u->registered_pages = xt_sysfs("rma2", "registered_pages");
	u->pinned_pages = xt_sysfs("rma2", "pinned_pages");
	u->queue_bytes = xt_sysfs("rma2", "queue_bytes");
}

static inline int xt_usage_equal(const struct xt_usage *a, const struct xt_usage *b)
{
	return a->rma_vpids == b->rma_vpids && a->velo_vpids == b->velo_vpids &&
	       a->registered_pages == b->registered_pages &&
	       a->pinned_pages == b->pinned_pages && a->queue_bytes == b->queue_bytes;
}

static inline void xt_usage_str(const struct xt_usage *u, char *buf, size_t len)
{
	snprintf(buf, len,
		 "rma vpids %ld, velo vpids %ld, ATU pages %ld, pinned pages %ld, queue bytes %ld",
		 u->rma_vpids, u->velo_vpids, u->registered_pages, u->pinned_pages,
		 u->queue_bytes);
}

/*
 * Wait until the usage equals *want (release after a process death runs
 * when its last file reference goes); the last reading goes to *seen.
 * Returns the seconds it took, or -1 on timeout.
 */
static inline double xt_usage_wait(const struct xt_usage *want, double tmo,
				   struct xt_usage *seen)
{
	double t0 = xt_now_s();

	for (;;) {
		xt_usage_read(seen);
		if (xt_usage_equal(want, seen))
			return xt_now_s() - t0;
		if (xt_now_s() - t0 > tmo)
			return -1;
		usleep(20000);
	}
}

/* Loopback put of 1 MiB + one VELO message: the device still works. */
static inline void xt_expect_device_works(struct __test_metadata *_metadata)
{
	RMA2_Port p;
	RMA2_Handle h;
	RMA2_Region *r;
	RMA2_Notification n;
	RMA2_NLA s, d;
	velo2_port_t vp;
	velo2_connection_t vc;
	uint32_t len, src;
	uint8_t tag, mtt, msg[64];
	uint8_t *buf = aligned_alloc(4096, 2 * MiB);

	ASSERT_TRUE(buf != NULL);
	ASSERT_EQ(RMA2_SUCCESS, rma2_open(&p));
	ASSERT_EQ(RMA2_SUCCESS, rma2_connect(p, rma2_get_nodeid(p), rma2_get_vpid(p),
					     RMA2_CONN_DEFAULT, &h));
	ASSERT_EQ(RMA2_SUCCESS, rma2_register(p, buf, 2 * MiB, &r));
	xt_fill(buf, MiB, 31);
	memset(buf + MiB, 0, MiB);
	rma2_get_nla(r, 0, &s);
	rma2_get_nla(r, MiB, &d);
	ASSERT_EQ(RMA2_SUCCESS, rma2_post_put_bt_direct(p, h, s, MiB, d,
							RMA2_COMPLETER_NOTIFICATION, 0));
	ASSERT_EQ(0, xt_next_noti(p, &n, 60));
	EXPECT_EQ(0, rma2_noti_get_error(&n));
	EXPECT_EQ(0, memcmp(buf, buf + MiB, MiB));
	EXPECT_EQ(RMA2_SUCCESS, rma2_unregister(p, r));
	EXPECT_EQ(RMA2_SUCCESS, rma2_close(p));
	free(buf);

	memset(&vp, 0, sizeof(vp));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_open(&vp));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_connect(&vp, &vc, velo2_get_nodeid(&vp),
						   velo2_get_vpid(&vp)));
	ASSERT_EQ(VELO2_RET_SUCCESS, velo2_send(&vc, "alive", 5, 1, 0));
	ASSERT_EQ(VELO2_RET_SUCCESS, xt_velo_recv_tmo(&vp, msg, sizeof(msg), &len, &src, &tag,
						      &mtt, 60));
	EXPECT_EQ(5, len);
	EXPECT_EQ(0, memcmp(msg, "alive", 5));
	EXPECT_EQ(VELO2_RET_SUCCESS, velo2_close(&vp));
}

/* Lines in the kernel log with Oops/BUG/WARNING/general protection/... */
#define XT_KMSG_CHECK(before)							\
	do {									\
		int __now = exa_kmsg_bad_lines();				\
		if (__now != (before))						\
			TH_LOG("kernel log grew Oops/BUG/WARNING lines: %d -> %d", \
			       (before), __now);				\
		EXPECT_EQ((before), __now);					\
	} while (0)

/* Connect the ranks for the current test (session = test index). */
#define XT_OOB_UP(o)								\
	ASSERT_EQ(0, oob_init((o), (unsigned int)ksft_case_index(_metadata), 120000))

#endif
