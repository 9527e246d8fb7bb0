/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fixture of the API audit tests (test_xfi_api.c, test_xfi_xfer.c):
 * the provider's engine over the loopback NIC (xfi_nic_loop.c), reached
 * through Debian's libfabric from build/host-tests/xfiloop, once as
 * "loopack" (a send's outcome at the next poll, as ExaNet) and once as
 * "loopnow" (at once, as EXTOLL).  Each case gets a fabric, a domain and
 * an enabled endpoint that sends to itself (self->e), and the provider's
 * log: stderr goes to a file, and refused() checks that a refusal wrote
 * exactly one line at FI_LOG_LEVEL=warn saying what (the harness's own
 * messages go to the real stderr: TH_LOG_STREAM).
 */
#ifndef XFI_LOOP_TEST_H
#define XFI_LOOP_TEST_H

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

static FILE *loop_th_stream;
#define TH_LOG_STREAM (loop_th_stream ? loop_th_stream : stderr)

#include "../lib/kselftest_exa.h"

/* An endpoint with its own AV and CQ, its own address in the AV (self). */
struct loop_ep {
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t self;
};

/* How loop_ep_open() opens one (zero: an FI_AV_TABLE, an FI_CQ_FORMAT_TAGGED
 * CQ bound for both directions, no op_flags). */
struct loop_opts {
	enum fi_av_type av_type;
	enum fi_cq_format format;
	uint64_t bind_flags;		/* added to FI_TRANSMIT | FI_RECV */
	uint64_t tx_op_flags, rx_op_flags;
};

FIXTURE(loop) {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct loop_ep e;
	int log_fd;
	off_t log_seen;
};

FIXTURE_VARIANT(loop) {
	const char *prov;
};

FIXTURE_VARIANT_ADD(loop, loopack) {
	.prov = "loopack",
};

FIXTURE_VARIANT_ADD(loop, loopnow) {
	.prov = "loopnow",
};

#define LOOP_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_MULTI_RECV | FI_DIRECTED_RECV)

/* Point libfabric at build/host-tests/xfiloop (this program is in build/host-tests). */
static void loop_env(struct __test_metadata *_metadata, const char *prov)
{
	char exe[PATH_MAX], dir[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	ASSERT_LT(0, n);
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/xfiloop", dirname(exe));
	if (access(dir, F_OK))
		SKIP_TEST("no xfiloop directory next to the test");
	setenv("FI_PROVIDER_PATH", dir, 1);
	setenv("FI_PROVIDER", prov, 1);
	setenv("FI_LOG_LEVEL", "warn", 1);
	unsetenv("FI_PROVIDER_PATH_EXCLUDE");
}

/* stderr (where libfabric logs) into a file; the harness keeps the real one. */
static void loop_log_capture(struct __test_metadata *_metadata, FIXTURE_DATA(loop) *self)
{
	char path[] = "/tmp/xfi_loop_log.XXXXXX";
	int keep = dup(2);

	ASSERT_LE(0, keep);
	loop_th_stream = fdopen(keep, "w");
	ASSERT_NE(NULL, loop_th_stream);
	setvbuf(loop_th_stream, NULL, _IONBF, 0);
	self->log_fd = mkstemp(path);
	ASSERT_LE(0, self->log_fd);
	unlink(path);
	ASSERT_EQ(2, dup2(self->log_fd, 2));
	self->log_seen = 0;
}

/*
 * Warn lines of the provider logged since the last call; the last of them
 * (without its prefix) into last.  Lines of other providers are not counted.
 */
static int loop_warns(FIXTURE_DATA(loop) *self, const char *prov, char *last, size_t len)
{
	char buf[65536], tag[32], *line, *next;
	off_t end = lseek(self->log_fd, 0, SEEK_END);
	ssize_t n;
	int count = 0;

	if (last && len)
		*last = 0;
	if (end <= self->log_seen)
		return 0;
	n = pread(self->log_fd, buf, sizeof(buf) - 1 < (size_t)(end - self->log_seen) ?
		  sizeof(buf) - 1 : (size_t)(end - self->log_seen), self->log_seen);
	self->log_seen = end;
	if (n <= 0)
		return 0;
	buf[n] = 0;
	snprintf(tag, sizeof(tag), ":%s:", prov);
	for (line = buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!strstr(line, tag) || !strstr(line, "<warn>"))
			continue;
		count++;
		if (last && len)
			snprintf(last, len, "%s", strstr(line, "<warn>") + 6);
	}
	return count;
}

/* Forget what was logged so far (before a call whose log is checked). */
#define LOG_MARK() loop_warns(self, variant->prov, NULL, 0)

/* The call returns code and logs exactly one warn line that contains what. */
#define REFUSED(code, call, what)							\
	do {										\
		char _last[512];							\
		int _lines;								\
											\
		LOG_MARK();								\
		EXPECT_EQ((long)(code), (long)(call));					\
		_lines = loop_warns(self, variant->prov, _last, sizeof(_last));	\
		EXPECT_EQ(1, _lines) TH_LOG("%s: %d warn lines, last: %s", #call,	\
					    _lines, _last);				\
		EXPECT_NE(NULL, strstr(_last, what)) TH_LOG("%s logged: %s", #call,	\
							    _last);			\
	} while (0)

/* The call returns 0 (or code) and logs nothing at warn. */
#define QUIET(code, call)								\
	do {										\
		char _last[512];							\
											\
		LOG_MARK();								\
		EXPECT_EQ((long)(code), (long)(call));					\
		EXPECT_EQ(0, loop_warns(self, variant->prov, _last, sizeof(_last)))	\
			TH_LOG("%s logged: %s", #call, _last);				\
	} while (0)

static struct fi_info *loop_getinfo(const char *prov)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	if (!hints)
		return NULL;
	hints->caps = LOOP_CAPS;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
	hints->fabric_attr->prov_name = strdup(prov);
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info))
		info = NULL;
	fi_freeinfo(hints);
	return info;
}

static int loop_ep_open(FIXTURE_DATA(loop) *self, const struct loop_opts *o, struct loop_ep *le)
{
	struct fi_av_attr av_attr = { .type = o->av_type ? o->av_type : FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = o->format ? o->format : FI_CQ_FORMAT_TAGGED };
	uint64_t tx = self->info->tx_attr->op_flags, rx = self->info->rx_attr->op_flags;
	char addr[64];
	size_t len = sizeof(addr);
	int ret;

	memset(le, 0, sizeof(*le));
	self->info->tx_attr->op_flags = o->tx_op_flags;
	self->info->rx_attr->op_flags = o->rx_op_flags;
	ret = fi_endpoint(self->domain, self->info, &le->ep, NULL);
	self->info->tx_attr->op_flags = tx;
	self->info->rx_attr->op_flags = rx;
	if (ret)
		return ret;
	ret = fi_av_open(self->domain, &av_attr, &le->av, NULL);
	if (!ret)
		ret = fi_cq_open(self->domain, &cq_attr, &le->cq, NULL);
	if (!ret)
		ret = fi_ep_bind(le->ep, &le->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(le->ep, &le->cq->fid, FI_TRANSMIT | FI_RECV | o->bind_flags);
	if (!ret)
		ret = fi_enable(le->ep);
	if (!ret)
		ret = fi_getname(&le->ep->fid, addr, &len);
	if (!ret)
		ret = fi_av_insert(le->av, addr, 1, &le->self, 0, NULL) == 1 ? 0 : -FI_EINVAL;
	return ret;
}

static void loop_ep_close(struct loop_ep *le)
{
	if (le->ep)
		fi_close(&le->ep->fid);
	if (le->cq)
		fi_close(&le->cq->fid);
	if (le->av)
		fi_close(&le->av->fid);
	memset(le, 0, sizeof(*le));
}

FIXTURE_SETUP(loop)
{
	static const struct loop_opts plain;

	loop_env(_metadata, variant->prov);
	loop_log_capture(_metadata, self);
	self->info = loop_getinfo(variant->prov);
	ASSERT_NE(NULL, self->info) TH_LOG("provider %s: no fi_info", variant->prov);
	ASSERT_EQ(0, fi_fabric(self->info->fabric_attr, &self->fabric, NULL));
	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &self->domain, NULL));
	ASSERT_EQ(0, loop_ep_open(self, &plain, &self->e));
}

FIXTURE_TEARDOWN(loop)
{
	loop_ep_close(&self->e);
	if (self->domain)
		fi_close(&self->domain->fid);
	if (self->fabric)
		fi_close(&self->fabric->fid);
	fi_freeinfo(self->info);
}

/*
 * Up to max entries of cq into e (tagged format), until want are there or
 * an error entry waits: how many, or -FI_EAVAIL.  Progress is manual: each
 * read is a progress call.
 */
static int loop_reap(struct fid_cq *cq, struct fi_cq_tagged_entry *e, int want, int max)
{
	int got = 0;

	for (int polls = 0; polls < 100000 && got < want; polls++) {
		ssize_t n = fi_cq_read(cq, e + got, (size_t)(max - got));

		if (n == -FI_EAVAIL)
			return -FI_EAVAIL;
		if (n > 0)
			got += (int)n;
	}
	return got;
}

/* Progress for a while and return how many entries turned up (none expected). */
static int loop_settle(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e[8];
	int got = 0;

	for (int polls = 0; polls < 200; polls++) {
		ssize_t n = fi_cq_read(cq, e, 8);

		if (n == -FI_EAVAIL)
			return -FI_EAVAIL;
		if (n > 0)
			got += (int)n;
	}
	return got;
}

static inline const struct fi_cq_tagged_entry *loop_find(const struct fi_cq_tagged_entry *e, int n,
						  const void *ctx)
{
	for (int i = 0; i < n; i++)
		if (e[i].op_context == ctx)
			return &e[i];
	return NULL;
}

#endif
