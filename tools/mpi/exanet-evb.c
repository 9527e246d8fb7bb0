// SPDX-License-Identifier: MIT
/*
 * exanet-evb: event building over MPI, the throughput benchmark of a
 * particle-physics DAQ (Documentation/evb.md).  Any MPI; run under mpirun.
 *
 *   exanet-evb nton|nxn [--sizes 1024,65536] [--depth 8] [--seconds 3]
 *                       [--interval 0.25] [--warmup 1] [--check full|header]
 *                       [--timeout 120]
 *
 * Readout units (RUs) hold one fragment of every event; the builder unit
 * (BU) of event e, e % (number of BUs), gathers its fragment from every RU.
 * nton: ranks 0..N/2-1 are RUs, N/2..N-1 BUs (N even).  nxn: every rank is
 * both; a node's own fragment does not cross the network and is not sent.
 * As the CMS MPI transport study ran it: point-to-point only, synchronous
 * non-blocking sends (MPI_Issend: a send completes when the BU has taken
 * it, which is the back-pressure), one queue of --depth fragments per peer
 * on both sides (the RU sends events in order and waits when the queue of
 * the event's BU is full; the BU keeps --depth receives posted per RU),
 * progress by MPI_Testsome, one fragment size per run.
 *
 * Each size starts with an unmeasured pass that uses every slot of every
 * queue twice (events 0 .. 2 x depth x BUs - 1: the first touch of fresh
 * buffers costs page faults of on-demand paging, which the study's pinned
 * buffers did not), then --warmup seconds unmeasured and --seconds
 * measured of a new run from event 0; the BUs count the bytes they receive in
 * --interval steps from a common start, the first and the last step are
 * dropped and the rest averaged: the bandwidth per node (MB/s, 10^6 B/s,
 * fragment bytes), averaged over the BUs (nton) or all nodes (nxn).  Then
 * the RUs agree on the last event (the highest any RU reached), finish it,
 * and tell every BU; every BU waits for every fragment of every event up
 * to it.  Every fragment carries its event, RU and size in a header; with
 * --check full (the default) every byte after it is a pattern of (event,
 * RU, offset) that the BU checks.  A fragment that is not the one expected
 * next from its RU counts as lost (later event) or duplicated (earlier),
 * a wrong byte or header as an error; fragments still missing after
 * --timeout seconds count as lost.
 *
 * Rank 0 prints one JSON object (tool_json.h): {"tool": "exanet-evb",
 * "pattern", "ranks", "rus", "bus", "depth", "seconds", "interval", "warmup",
 * "check",
 * "results": [{"size", "iters" (fragments received), "bw_mb_s_per_node",
 * "bw_min_mb_s", "bw_max_mb_s" (over receivers), "sample_median_mb_s",
 * "sample_p01_mb_s" (over every receiver's kept samples), "samples",
 * "series_mb_s" (every step, averaged over the receivers),
 * "events", "fragments", "errors", "lost", "duplicated"}], "errors"}.
 * Exit status: 0, 1 when a fragment was lost, duplicated or damaged, 2 for
 * bad options (checked before MPI starts, so also without mpirun).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"
#include "tool_parse.h"
#include "tool_sizes.h"
#include "tool_version.h"

#define TOOL "exanet-evb"
#define EVB_MAGIC 0x45564246524147ull	/* "EVBFRAG" */
#define EVB_MIN_FRAG 32u		/* the header */
#define EVB_MAX_FRAG (16u << 20)
#define EVB_MAX_SIZES 32
#define EVB_MAX_DEPTH 64u
/* fragment buffers of one rank, both roles: beyond this the run is refused */
#define EVB_MAX_BUFFERS (192ull << 20)
#define EVB_DEFAULT_SIZES "1024,4096,16384,65536,262144"
#define TAG_FRAG 1
#define TAG_END 2

struct evb_hdr {
	uint64_t magic;
	uint64_t event;
	uint32_t ru;
	uint32_t size;
	uint64_t sum;		/* of the fields above */
};

struct evb_opts {
	int nxn;
	unsigned int sizes[EVB_MAX_SIZES], nsizes, depth;
	double seconds, interval, timeout, warmup;
	int full_check;
};

/* What every rank reports for one size (gathered on rank 0). */
enum { R_IS_BU, R_BW, R_FRAGS, R_EVENTS, R_ERRORS, R_LOST, R_DUPS, R_NUM };

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t hdr_sum(const struct evb_hdr *h)
{
	return mix64(h->magic ^ mix64(h->event ^ ((uint64_t)h->ru << 32 | h->size)));
}

/* Word i of the body of (event, ru): the pattern the BU checks. */
static uint64_t body_word(uint64_t event, uint32_t ru, size_t i)
{
	return mix64(event * 0x100000001b3ull ^ (uint64_t)ru << 48 ^ i);
}

static void fill_body(uint8_t *body, size_t len, uint64_t event, uint32_t ru)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = body_word(event, ru, i / 8);

		memcpy(body + i, &w, 8);
	}
	if (i < len) {
		uint64_t w = body_word(event, ru, i / 8);

		memcpy(body + i, &w, len - i);
	}
}

/* 0 when body is the pattern of (event, ru). */
static int check_body(const uint8_t *body, size_t len, uint64_t event, uint32_t ru)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w = body_word(event, ru, i / 8);

		if (memcmp(body + i, &w, 8))
			return -1;
	}
	if (i < len) {
		uint64_t w = body_word(event, ru, i / 8);

		if (memcmp(body + i, &w, len - i))
			return -1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: exanet-evb nton|nxn [--sizes LIST] [--depth N] [--seconds S] "
		"[--interval S] [--warmup S] [--check full|header] [--timeout S] [--help]\n"
		"       exanet-evb --version\n"
		"  fragment sizes %u..%u B: 1024,65536, or 1024-131072 = 1024,2048,..,131072\n"
		"  (default %s), depth 1..%u (default 8)\n",
		EVB_MIN_FRAG, EVB_MAX_FRAG, EVB_DEFAULT_SIZES, EVB_MAX_DEPTH);
}

static int parse_sizes(const char *s, struct evb_opts *o)
{
	int n = tool_parse_sizes(s, EVB_MIN_FRAG, EVB_MAX_FRAG, o->sizes, EVB_MAX_SIZES);

	if (n < 0)
		return -1;
	o->nsizes = (unsigned int)n;
	return 0;
}

/* One option and its value: 0, or -EINVAL after the one-line message. */
static int take_opt(struct evb_opts *o, const char *opt, const char *val)
{
	static const char *const checks[] = { "full", "header", NULL };
	int i;

	if (!strcmp(opt, "--sizes")) {
		if (parse_sizes(val, o))
			return tool_bad_value(TOOL, opt, val,
					      "a list of at most %u sizes in %u..%u (1024,65536 or 1024-131072)",
					      EVB_MAX_SIZES, EVB_MIN_FRAG, EVB_MAX_FRAG);
		return 0;
	}
	if (!strcmp(opt, "--depth"))
		return tool_opt_uint(TOOL, opt, val, 1, EVB_MAX_DEPTH, &o->depth);
	if (!strcmp(opt, "--seconds"))
		return tool_opt_seconds(TOOL, opt, val, 0.1, 3600, &o->seconds);
	if (!strcmp(opt, "--interval"))
		return tool_opt_seconds(TOOL, opt, val, 0.01, 60, &o->interval);
	if (!strcmp(opt, "--warmup"))
		return tool_opt_seconds(TOOL, opt, val, 0, 3600, &o->warmup);
	if (!strcmp(opt, "--timeout"))
		return tool_opt_seconds(TOOL, opt, val, 1, 86400, &o->timeout);
	if (!strcmp(opt, "--check")) {
		i = tool_opt_choice(TOOL, opt, val, checks);
		if (i < 0)
			return -EINVAL;
		o->full_check = i == 0;
		return 0;
	}
	return tool_unknown_opt(TOOL, opt);
}

/* Options (before MPI_Init, so that bad ones fail the same with or without
 * mpirun): 0, 1 after --help, or 2 after a one-line message. */
static int parse_opts(int argc, char **argv, struct evb_opts *o)
{
	static const char *const patterns[] = { "nton", "nxn", NULL };
	int pattern;

	*o = (struct evb_opts){ .depth = 8, .seconds = 3, .interval = 0.25, .timeout = 120,
				.warmup = 1, .full_check = 1 };
	parse_sizes(EVB_DEFAULT_SIZES, o);
	if (tool_version_asked(TOOL, argc, argv))
		return 1;
	pattern = tool_first_word(TOOL, argc, argv, "pattern", patterns, usage);
	if (pattern < 0)
		return pattern == TOOL_HELP_SHOWN ? 1 : 2;
	o->nxn = pattern == 1;
	for (int a = 2; a < argc; a += 2) {
		const char *opt = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;

		if (!val ? tool_missing_value(TOOL, opt) : take_opt(o, opt, val))
			return 2;
	}
	if (o->seconds / o->interval < 3) {
		fprintf(stderr, "exanet-evb: --seconds %g holds fewer than 3 intervals of %g s "
			"(the first and the last are dropped)\n", o->seconds, o->interval);
		return 2;
	}
	return 0;
}

/* One side's fragment slots: depth per peer, a request each. */
struct slots {
	int npeers, depth;
	size_t size;
	uint8_t *buf;
	MPI_Request *req;
	uint64_t *seq;		/* BU: per slot, its place in its RU's stream */
	uint64_t *posted;	/* BU: per peer, receives posted so far */
	uint64_t *got;		/* BU: per peer, fragments received */
	int *done_idx;
};

static int slots_init(struct slots *s, int npeers, int depth, size_t size)
{
	size_t n = (size_t)npeers * depth;

	*s = (struct slots){ .npeers = npeers, .depth = depth, .size = size };
	s->buf = malloc(n * size + 1);
	s->req = malloc((n + 1) * sizeof(*s->req));
	s->seq = calloc(n + 1, sizeof(*s->seq));
	s->posted = calloc(npeers + 1, sizeof(*s->posted));
	s->got = calloc(npeers + 1, sizeof(*s->got));
	s->done_idx = malloc((n + 1) * sizeof(int));
	if (!s->buf || !s->req || !s->seq || !s->posted || !s->got || !s->done_idx)
		return -1;
	for (size_t i = 0; i < n; i++)
		s->req[i] = MPI_REQUEST_NULL;
	return 0;
}

static void slots_free(struct slots *s)
{
	free(s->buf);
	free(s->req);
	free(s->seq);
	free(s->posted);
	free(s->got);
	free(s->done_idx);
}

static uint8_t *slot_buf(struct slots *s, int i)
{
	return s->buf + (size_t)i * s->size;
}

struct evb_run {
	const struct evb_opts *o;
	int rank, nranks, nru, nbu, ru_idx, bu_idx;	/* idx -1: not that role */
	MPI_Comm ru_comm;
	size_t size;
	/* RU */
	struct slots out;
	uint64_t next_event, stop_event;
	int stopping, agreed, ends_sent;
	MPI_Request agree_req, end_req[1024];
	uint64_t agree_in, agree_out;
	/* BU */
	struct slots in;
	uint64_t end_val[1024], bytes, nsamples, lost, dups, errors;
	MPI_Request end_rreq[1024];
	double *samples;
};

/* RUs are ranks 0..nru-1 in both patterns. */
static int ru_rank(int i)
{
	return i;
}

static int bu_rank(const struct evb_run *r, int i)
{
	return r->o->nxn ? i : r->nru + i;
}

/* Which of RU and BU this rank is, and its index among them (-1: not). */
static void roles(struct evb_run *r)
{
	if (r->o->nxn) {
		r->nru = r->nbu = r->nranks;
		r->ru_idx = r->bu_idx = r->rank;
	} else {
		r->nru = r->nbu = r->nranks / 2;
		r->ru_idx = r->rank < r->nru ? r->rank : -1;
		r->bu_idx = r->rank >= r->nru ? r->rank - r->nru : -1;
	}
}

/* RU: post what the queues take, in event order; then reap. */
static void ru_step(struct evb_run *r, double now, double t_end)
{
	struct slots *s = &r->out;
	int outcount = 0;

	if (s->npeers == 0)
		return;
	if (!r->stopping && now >= t_end) {
		r->stopping = 1;
		r->agree_in = r->next_event;
		MPI_Iallreduce(&r->agree_in, &r->agree_out, 1, MPI_UINT64_T, MPI_MAX, r->ru_comm,
			       &r->agree_req);
	}
	if (r->stopping && !r->agreed) {
		int flag = 0;

		MPI_Test(&r->agree_req, &flag, MPI_STATUS_IGNORE);
		if (flag) {
			r->agreed = 1;
			r->stop_event = r->agree_out;
		}
	}
	for (;;) {
		uint64_t e = r->next_event;
		int bu = (int)(e % r->nbu), slot = -1;
		struct evb_hdr h;

		if (r->stopping && (!r->agreed || e >= r->stop_event))
			break;
		if (r->o->nxn && bu == r->ru_idx) {	/* our own fragment stays here */
			r->next_event++;
			continue;
		}
		for (int k = 0; k < s->depth; k++) {
			if (s->req[bu * s->depth + k] == MPI_REQUEST_NULL) {
				slot = bu * s->depth + k;
				break;
			}
		}
		if (slot < 0)
			break;		/* the queue of this event's BU is full: wait */
		h = (struct evb_hdr){ .magic = EVB_MAGIC, .event = e, .ru = (uint32_t)r->ru_idx,
				      .size = (uint32_t)r->size };
		h.sum = hdr_sum(&h);
		memcpy(slot_buf(s, slot), &h, sizeof(h));
		if (r->o->full_check)
			fill_body(slot_buf(s, slot) + sizeof(h), r->size - sizeof(h), e,
				  (uint32_t)r->ru_idx);
		MPI_Issend(slot_buf(s, slot), (int)r->size, MPI_BYTE, bu_rank(r, bu), TAG_FRAG,
			   MPI_COMM_WORLD, &s->req[slot]);
		r->next_event++;
	}
	MPI_Testsome(s->npeers * s->depth, s->req, &outcount, s->done_idx, MPI_STATUSES_IGNORE);
	if (r->agreed && !r->ends_sent && r->next_event >= r->stop_event) {
		for (int b = 0; b < r->nbu; b++) {
			if (r->o->nxn && b == r->ru_idx) {
				r->end_req[b] = MPI_REQUEST_NULL;
				continue;
			}
			MPI_Isend(&r->stop_event, 1, MPI_UINT64_T, bu_rank(r, b), TAG_END,
				  MPI_COMM_WORLD, &r->end_req[b]);
		}
		r->ends_sent = 1;
	}
}

static int ru_done(struct evb_run *r)
{
	int flag = 0;

	if (r->out.npeers == 0)
		return 1;
	/* ends_sent implies agreed (the warm-up starts agreed) */
	if (!r->ends_sent || r->next_event < r->stop_event)
		return 0;
	MPI_Testall(r->out.npeers * r->out.depth, r->out.req, &flag, MPI_STATUSES_IGNORE);
	if (!flag)
		return 0;
	MPI_Testall(r->nbu, r->end_req, &flag, MPI_STATUSES_IGNORE);
	return flag;
}

static void bu_post(struct evb_run *r, int slot)
{
	struct slots *s = &r->in;
	int peer = slot / s->depth;

	s->seq[slot] = s->posted[peer]++;
	MPI_Irecv(slot_buf(s, slot), (int)r->size, MPI_BYTE, ru_rank(peer), TAG_FRAG,
		  MPI_COMM_WORLD, &s->req[slot]);
}

/* Fragments expected from one RU when the last event is stop. */
static uint64_t bu_expected(const struct evb_run *r, uint64_t stop)
{
	return stop > (uint64_t)r->bu_idx ? (stop - r->bu_idx + r->nbu - 1) / r->nbu : 0;
}

static void bu_check(struct evb_run *r, int slot)
{
	struct slots *s = &r->in;
	int peer = slot / s->depth;
	const uint8_t *b = slot_buf(s, slot);
	uint64_t want = (uint64_t)r->bu_idx + s->seq[slot] * r->nbu;
	struct evb_hdr h;

	memcpy(&h, b, sizeof(h));
	s->got[peer]++;
	r->bytes += r->size;
	if (h.magic != EVB_MAGIC || h.sum != hdr_sum(&h) || h.ru != (uint32_t)peer ||
	    h.size != r->size || h.event % r->nbu != (uint64_t)r->bu_idx) {
		r->errors++;
		return;
	}
	if (h.event > want)
		r->lost += (h.event - want) / r->nbu;
	else if (h.event < want)
		r->dups++;
	else if (r->o->full_check && check_body(b + sizeof(h), r->size - sizeof(h), h.event, h.ru))
		r->errors++;
}

/* BU: check what arrived and post the receive again; 1 when every
 * fragment up to the agreed last event is in. */
static int bu_step(struct evb_run *r)
{
	struct slots *s = &r->in;
	int outcount = 0, all = 1;

	if (s->npeers == 0)
		return 1;
	MPI_Testsome(s->npeers * s->depth, s->req, &outcount, s->done_idx, MPI_STATUSES_IGNORE);
	for (int i = 0; i < outcount; i++) {
		bu_check(r, s->done_idx[i]);
		bu_post(r, s->done_idx[i]);
	}
	for (int p = 0; p < s->npeers; p++) {
		int flag = 0;

		if (r->o->nxn && p == r->bu_idx)
			continue;
		if (r->end_rreq[p] != MPI_REQUEST_NULL) {
			MPI_Test(&r->end_rreq[p], &flag, MPI_STATUS_IGNORE);
			if (!flag) {
				all = 0;
				continue;
			}
		}
		if (s->got[p] < bu_expected(r, r->end_val[p]))
			all = 0;
	}
	return all;
}

/* After the run: the receives posted beyond the last event go. */
static void bu_finish(struct evb_run *r, int timed_out)
{
	struct slots *s = &r->in;

	for (int i = 0; i < s->npeers * s->depth; i++) {
		if (s->req[i] != MPI_REQUEST_NULL) {
			MPI_Cancel(&s->req[i]);
			MPI_Wait(&s->req[i], MPI_STATUS_IGNORE);
		}
	}
	if (!timed_out)
		return;
	for (int p = 0; p < s->npeers; p++) {
		uint64_t want;

		if (r->o->nxn && p == r->bu_idx)
			continue;
		if (r->end_rreq[p] != MPI_REQUEST_NULL) {
			r->errors++;	/* never told where the run ended */
			MPI_Cancel(&r->end_rreq[p]);
			MPI_Wait(&r->end_rreq[p], MPI_STATUS_IGNORE);
			continue;
		}
		want = bu_expected(r, r->end_val[p]);
		if (s->got[p] < want)
			r->lost += want - s->got[p];
	}
}

/* Complete events at this BU: every RU's fragment of them is in. */
static uint64_t bu_events(const struct evb_run *r)
{
	uint64_t min = UINT64_MAX;

	for (int p = 0; p < r->in.npeers; p++)
		if (!(r->o->nxn && p == r->bu_idx) && r->in.got[p] < min)
			min = r->in.got[p];
	return r->in.npeers && min != UINT64_MAX ? min : 0;
}

/* Rank 0: fragments lost, duplicated or damaged over every size. */
static unsigned long long bad_total;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(const double *v, int n, double q)
{
	int i = (int)(q * (n - 1) + 0.5);

	return n ? v[i < 0 ? 0 : i >= n ? n - 1 : i] : 0;
}

/*
 * One phase on every rank with the slots in place: warm > 0, the events
 * 0..warm-1 unmeasured (every slot used, so that the first touch of each
 * buffer is paid here); 0, --warmup seconds, then nsamp samples into
 * r->samples, then the agreed end.  1 when it did not end in --timeout.
 */
static int run_phase(struct evb_run *r, uint64_t warm, int nsamp)
{
	const struct evb_opts *o = r->o;
	int is_ru = r->ru_idx >= 0, is_bu = r->bu_idx >= 0, timed_out = 0;
	double t0, t_end, next_sample;
	uint64_t last_bytes = 0;

	r->next_event = 0;
	r->stopping = r->agreed = !!warm;
	r->stop_event = warm;
	r->bytes = 0;
	for (int p = 0; p < r->in.npeers; p++) {
		r->in.posted[p] = r->in.got[p] = 0;
		r->end_rreq[p] = MPI_REQUEST_NULL;
		if (r->o->nxn && p == r->bu_idx)
			continue;
		for (int k = 0; k < r->in.depth; k++)
			bu_post(r, p * r->in.depth + k);
		if (!warm)
			MPI_Irecv(&r->end_val[p], 1, MPI_UINT64_T, ru_rank(p), TAG_END,
				  MPI_COMM_WORLD, &r->end_rreq[p]);
		else
			r->end_val[p] = warm;
	}
	/* the warm-up's end is known to all: no END messages */
	r->ends_sent = !!warm;
	for (int b = 0; b < r->nbu; b++)
		r->end_req[b] = MPI_REQUEST_NULL;
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime() + (warm ? 0 : o->warmup);	/* sampling starts here */
	t_end = t0 + nsamp * o->interval;
	next_sample = t0 + o->interval;
	for (int s = warm ? nsamp : 0;;) {
		double now = MPI_Wtime();
		int bu_all;

		if (s == 0 && now < t0)
			last_bytes = r->bytes;
		else if (s < nsamp && now >= next_sample) {
			r->samples[s++] = (double)(r->bytes - last_bytes) / o->interval / 1e6;
			last_bytes = r->bytes;
			next_sample += o->interval;
		}
		if (is_ru)
			ru_step(r, now, t_end);
		bu_all = is_bu ? bu_step(r) : 1;
		if (bu_all && (!is_ru || ru_done(r)) && s >= nsamp)
			break;
		if (now > t_end + o->timeout) {
			timed_out = 1;
			fprintf(stderr, "exanet-evb: rank %d: %zu B%s: not done %.0f s after the end "
				"(%s)\n", r->rank, r->size, warm ? " (warm-up)" : "", o->timeout,
				bu_all ? "fragments not taken by the BUs" : "fragments missing");
			break;
		}
	}
	if (is_bu)
		bu_finish(r, timed_out);
	MPI_Allreduce(MPI_IN_PLACE, &timed_out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	return timed_out;
}

/* One fragment size on every rank; rank 0 adds its result to results. */
static int run_size(struct evb_run *r, json_object *results)
{
	const struct evb_opts *o = r->o;
	int nsamp = (int)(o->seconds / o->interval), timed_out = 0, fail = 0, kept = nsamp - 2;
	double report[R_NUM], *all = NULL, *samp_all = NULL;
	int is_ru = r->ru_idx >= 0, is_bu = r->bu_idx >= 0, ok;

	r->lost = r->dups = r->errors = 0;
	r->samples = calloc((size_t)nsamp, sizeof(double));
	ok = r->samples &&
	     !slots_init(&r->out, is_ru ? r->nbu : 0, (int)o->depth, r->size) &&
	     !slots_init(&r->in, is_bu ? r->nru : 0, (int)o->depth, r->size);
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (!ok) {
		if (r->rank == 0)
			fprintf(stderr, "exanet-evb: no memory for %zu B fragments\n", r->size);
		return -1;
	}
	/* twice every slot of every queue, then the measured run */
	timed_out = run_phase(r, 2ull * o->depth * r->nbu, nsamp);
	if (!timed_out)
		timed_out = run_phase(r, 0, nsamp);

	report[R_IS_BU] = is_bu;
	report[R_FRAGS] = (double)r->bytes / r->size;
	report[R_EVENTS] = (double)bu_events(r);
	report[R_ERRORS] = (double)r->errors;
	report[R_LOST] = (double)r->lost;
	report[R_DUPS] = (double)r->dups;
	report[R_BW] = 0;
	for (int i = 1; i < nsamp - 1; i++)
		report[R_BW] += r->samples[i] / kept;
	if (r->rank == 0) {
		all = malloc(sizeof(double) * R_NUM * r->nranks);
		samp_all = malloc(sizeof(double) * nsamp * r->nranks);
	}
	MPI_Gather(report, R_NUM, MPI_DOUBLE, all, R_NUM, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	MPI_Gather(r->samples, nsamp, MPI_DOUBLE, samp_all, nsamp, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (r->rank == 0) {
		double bw = 0, bmin = 1e300, bmax = 0, tot[R_NUM] = { 0 }, *kept_v;
		int nbu = 0, nk = 0;
		json_object *res, *series;

		kept_v = malloc(sizeof(double) * nsamp * r->nranks);
		for (int i = 0; i < r->nranks; i++) {
			const double *v = all + i * R_NUM;

			if (!v[R_IS_BU])
				continue;
			nbu++;
			bw += v[R_BW];
			bmin = v[R_BW] < bmin ? v[R_BW] : bmin;
			bmax = v[R_BW] > bmax ? v[R_BW] : bmax;
			for (int k = R_FRAGS; k < R_NUM; k++)
				tot[k] += v[k];
			for (int s = 1; s < nsamp - 1; s++)
				kept_v[nk++] = samp_all[i * nsamp + s];
		}
		qsort(kept_v, nk, sizeof(double), cmp_double);
		res = tj_result(results, (unsigned int)r->size, (unsigned long)tot[R_FRAGS]);
		tj_num(res, "bw_mb_s_per_node", "%.2f", nbu ? bw / nbu : 0);
		tj_num(res, "bw_min_mb_s", "%.2f", nbu ? bmin : 0);
		tj_num(res, "bw_max_mb_s", "%.2f", bmax);
		tj_num(res, "sample_median_mb_s", "%.2f", quantile(kept_v, nk, 0.5));
		tj_num(res, "sample_p01_mb_s", "%.2f", quantile(kept_v, nk, 0.01));
		tj_int(res, "samples", kept);
		series = tj_array(res, "series_mb_s");
		for (int k = 0; k < nsamp; k++) {
			double sum = 0;
			char text[32];

			for (int i = 0; i < r->nranks; i++)
				sum += all[i * R_NUM + R_IS_BU] ? samp_all[i * nsamp + k] : 0;
			snprintf(text, sizeof(text), "%.2f", nbu ? sum / nbu : 0);
			json_object_array_add(series, json_object_new_double_s(nbu ? sum / nbu : 0,
									      text));
		}
		tj_uint(res, "events", (unsigned long long)tot[R_EVENTS]);
		tj_uint(res, "fragments", (unsigned long long)tot[R_FRAGS]);
		tj_uint(res, "errors", (unsigned long long)tot[R_ERRORS]);
		tj_uint(res, "lost", (unsigned long long)tot[R_LOST]);
		tj_uint(res, "duplicated", (unsigned long long)tot[R_DUPS]);
		bad_total += (unsigned long long)(tot[R_ERRORS] + tot[R_LOST] + tot[R_DUPS]);
		fail = tot[R_ERRORS] || tot[R_LOST] || tot[R_DUPS];
		free(kept_v);
	}
	MPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(all);
	free(samp_all);
	free(r->samples);
	slots_free(&r->out);
	slots_free(&r->in);
	if (timed_out)
		return -2;	/* sends may still hang on a peer: do not go on */
	return fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct evb_opts o;
	struct evb_run r = { .o = &o };
	json_object *out = NULL, *results = NULL;
	unsigned long long need;
	int rc, status = 0;

	/* --version and --help run alone, outside mpirun: before MPI_Init */
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &r.nranks);
	roles(&r);
	if (r.nranks < 2 || (!o.nxn && r.nranks % 2) || r.nranks > 1024) {
		if (r.rank == 0)
			fprintf(stderr, "exanet-evb: %s needs %s ranks (2..1024), not %d\n",
				argv[1], o.nxn ? "2 or more" : "an even number of", r.nranks);
		MPI_Finalize();
		return 2;
	}
	for (unsigned int i = 0; i < o.nsizes; i++) {
		/* the slots of both roles, one queue per peer */
		unsigned long long queues = o.nxn ? 2ull * r.nranks : (unsigned long long)r.nru;

		need = (unsigned long long)o.sizes[i] * o.depth * queues;
		if (need > EVB_MAX_BUFFERS) {
			if (r.rank == 0)
				fprintf(stderr, "exanet-evb: %u B fragments x depth %u x %d queues "
					"need %llu MiB of buffers per rank, more than %llu MiB\n",
					o.sizes[i], o.depth, (int)queues,
					need >> 20, EVB_MAX_BUFFERS >> 20);
			MPI_Finalize();
			return 2;
		}
	}
	MPI_Comm_split(MPI_COMM_WORLD, r.ru_idx >= 0 ? 0 : MPI_UNDEFINED, r.rank, &r.ru_comm);
	if (r.rank == 0) {
		out = tj_bench("exanet-evb");
		tj_str(out, "pattern", o.nxn ? "nxn" : "nton");
		tj_int(out, "ranks", r.nranks);
		tj_int(out, "rus", r.nru);
		tj_int(out, "bus", r.nbu);
		tj_int(out, "depth", o.depth);
		tj_num(out, "seconds", "%.2f", o.seconds);
		tj_num(out, "interval", "%.3f", o.interval);
		tj_num(out, "warmup", "%.2f", o.warmup);
		tj_str(out, "check", o.full_check ? "full" : "header");
		results = tj_results(out);
	}
	for (unsigned int i = 0; i < o.nsizes && status >= 0; i++) {
		r.size = o.sizes[i];
		rc = run_size(&r, results);
		status = rc < 0 ? rc : status | rc;
	}
	if (r.rank == 0) {
		tj_uint(out, "errors", bad_total + (status < 0));
		tj_print(out, 1);
		fflush(stdout);
	}
	if (status == -2)
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (r.ru_comm != MPI_COMM_NULL)
		MPI_Comm_free(&r.ru_comm);
	MPI_Finalize();
	return status ? 1 : 0;
}
