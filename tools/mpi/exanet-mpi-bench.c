// SPDX-License-Identifier: MIT
/*
 * exanet-mpi-bench: small MPI benchmark for make bench-mpi (Debian has no
 * OSU micro-benchmarks package).  Any MPI; run under mpirun.
 *
 *   exanet-mpi-bench latency  [--sizes 0,8,1024,65536] [--iters N] [--warmup W]
 *   exanet-mpi-bench bw       [--sizes 4194304] [--iters N] [--window K]
 *   exanet-mpi-bench allreduce [--sizes 8] [--iters N] [--warmup W]
 *   exanet-mpi-bench barrier  [--iters N] [--warmup W]
 *   exanet-mpi-bench put      [--sizes 8] [--iters N] [--warmup W]
 *   exanet-mpi-bench --version
 *
 * latency: ranks 0 and 1 ping-pong; every round trip is timed on rank 0,
 *   one-way = round trip / 2.  bw: rank 0 sends a window of K messages
 *   (MPI_Isend), rank 1 receives them (MPI_Irecv) and answers with a 4 B
 *   message; MB/s (10^6 B/s) per window.  allreduce: MPI_Allreduce of
 *   MPI_BYTE-sized chunks (MPI_INT64_T elements, sum) on every rank, each
 *   call timed on rank 0 after a barrier-free warm-up.  barrier: MPI_Barrier,
 *   each call timed on rank 0 (one result, size 0).  put: rank 0 holds a
 *   passive-target lock on rank 1's window and times each MPI_Put +
 *   MPI_Win_flush (the put is complete at the target), as OSU's
 *   osu_put_latency -s flush does; rank 1 waits in MPI_Barrier (so osc
 *   components that need the target's progress get it) and checks the
 *   last put's bytes.  Whichever osc component mpirun selects (--mca osc).
 * Rank 0 prints one JSON object (the tools' benchmark schema, tool_json.h):
 * {"tool": "exanet-mpi-bench", "mode":..., "ranks":..., "iters":..., "window":...,
 * "results": [{"size":, "iters":, "median_us"|"median_mb_s":, "p99_us"|"p01_mb_s":,
 * "min_us"|"max_mb_s":}], "errors":}.
 * Every received message is checked (first and last byte) in latency/bw.
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

#define MAX_SIZES 64
#define MAX_SIZE (1u << 30)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* q in [0, 1] of n sorted values (nearest rank). */
static double quantile(const double *v, int n, double q)
{
	int i = (int)(q * (n - 1) + 0.5);

	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

#define TOOL "exanet-mpi-bench"

static void usage(FILE *f)
{
	fprintf(f, "usage: exanet-mpi-bench latency|bw|allreduce|barrier|put [--sizes LIST] "
		"[--iters N] [--warmup W] [--window K] [--help]\n"
		"       exanet-mpi-bench --version\n"
		"  sizes 0..%u B: 0,8,1024, or 8-1024 = 8,16,..,1024\n", MAX_SIZE);
}

static int errors;

static void check(const uint8_t *b, size_t n, uint8_t v)
{
	if (n && (b[0] != v || b[n - 1] != v))
		errors++;
}

static void latency(int rank, size_t size, int iters, int warmup, double *t)
{
	uint8_t *buf = malloc(size ? size : 1);
	int peer = !rank;

	for (int i = -warmup; i < iters; i++) {
		uint8_t v = (uint8_t)i;
		double t0 = MPI_Wtime();

		if (rank == 0) {
			memset(buf, v, size);
			MPI_Send(buf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check(buf, size, (uint8_t)(v + 1));
			if (i >= 0)
				t[i] = (MPI_Wtime() - t0) / 2 * 1e6;
		} else if (rank == 1) {
			MPI_Recv(buf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check(buf, size, v);
			if (size) {
				buf[0] = (uint8_t)(v + 1);
				buf[size - 1] = (uint8_t)(v + 1);
			}
			MPI_Send(buf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		}
	}
	free(buf);
}

static void bandwidth(int rank, size_t size, int iters, int warmup, int window, double *t)
{
	uint8_t *buf = malloc(size * (size_t)window + 1);
	MPI_Request *rq = malloc(sizeof(*rq) * (size_t)window);
	int ack = 0;

	for (int i = -warmup; i < iters; i++) {
		double t0 = MPI_Wtime();

		if (rank == 0) {
			for (int w = 0; w < window; w++) {
				memset(buf + (size_t)w * size, (uint8_t)(i + w), size ? 1 : 0);
				if (size)
					buf[(size_t)w * size + size - 1] = (uint8_t)(i + w);
				MPI_Isend(buf + (size_t)w * size, (int)size, MPI_BYTE, 1, 3,
					  MPI_COMM_WORLD, &rq[w]);
			}
			MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
			MPI_Recv(&ack, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (i >= 0)
				t[i] = (double)size * window / (MPI_Wtime() - t0) / 1e6;
		} else if (rank == 1) {
			for (int w = 0; w < window; w++)
				MPI_Irecv(buf + (size_t)w * size, (int)size, MPI_BYTE, 0, 3,
					  MPI_COMM_WORLD, &rq[w]);
			MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
			for (int w = 0; w < window; w++)
				check(buf + (size_t)w * size, size, (uint8_t)(i + w));
			MPI_Send(&ack, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
		}
	}
	free(rq);
	free(buf);
}

static void allreduce(int rank, int nranks, size_t size, int iters, int warmup, double *t)
{
	size_t n = size / 8 ? size / 8 : 1;
	int64_t *in = malloc(n * 8), *out = malloc(n * 8);

	for (int i = -warmup; i < iters; i++) {
		double t0;

		for (size_t k = 0; k < n; k++)
			in[k] = rank + i;
		t0 = MPI_Wtime();
		MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		if (i >= 0)
			t[i] = (MPI_Wtime() - t0) * 1e6;
		if (out[0] != (int64_t)nranks * (nranks - 1) / 2 + (int64_t)nranks * i)
			errors++;
	}
	free(in);
	free(out);
}

static void put(int rank, size_t size, int iters, int warmup, double *t)
{
	uint8_t *src = malloc(size ? size : 1), *win_mem = calloc(1, size ? size : 1);
	MPI_Win win;

	MPI_Win_create(win_mem, (MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	if (rank == 0) {
		MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
		for (int i = -warmup; i < iters; i++) {
			double t0;

			memset(src, (uint8_t)i, size);
			t0 = MPI_Wtime();
			MPI_Put(src, (int)size, MPI_BYTE, 1, 0, (int)size, MPI_BYTE, win);
			MPI_Win_flush(1, win);
			if (i >= 0)
				t[i] = (MPI_Wtime() - t0) * 1e6;
		}
		MPI_Win_unlock(1, win);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
		check(win_mem, size, (uint8_t)(iters - 1));
		MPI_Win_unlock(1, win);
	}
	MPI_Win_free(&win);
	free(src);
	free(win_mem);
}

static void barrier(int iters, int warmup, double *t)
{
	for (int i = -warmup; i < iters; i++) {
		double t0 = MPI_Wtime();

		MPI_Barrier(MPI_COMM_WORLD);
		if (i >= 0)
			t[i] = (MPI_Wtime() - t0) * 1e6;
	}
}

struct bench_opts {
	const char *mode, *sizes;
	unsigned int iters, warmup, window;
	unsigned int size_list[MAX_SIZES];
	int nsizes;
};

/* Options (before MPI_Init: the same on every rank, with or without
 * mpirun): 0, 1 after --help, or 2 after a one-line message. */
static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
	static const char *const modes[] = { "latency", "bw", "allreduce", "barrier", "put", NULL };
	int mode;

	*o = (struct bench_opts){ .iters = 1000, .warmup = 100, .window = 16 };
	if (tool_version_asked(TOOL, argc, argv))
		return 1;
	mode = tool_first_word(TOOL, argc, argv, "mode", modes, usage);
	if (mode < 0)
		return mode == TOOL_HELP_SHOWN ? 1 : 2;
	o->mode = argv[1];
	for (int a = 2; a < argc; a += 2) {
		const char *opt = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;
		int known = !strcmp(opt, "--sizes") || !strcmp(opt, "--iters") ||
			    !strcmp(opt, "--warmup") || !strcmp(opt, "--window");
		int err;

		if (!known ? tool_unknown_opt(TOOL, opt) : !val ? tool_missing_value(TOOL, opt) : 0)
			return 2;
		if (!strcmp(opt, "--sizes")) {
			o->sizes = val;
			continue;
		}
		err = !strcmp(opt, "--iters") ? tool_opt_uint(TOOL, opt, val, 1, 100000000, &o->iters) :
		      !strcmp(opt, "--warmup") ? tool_opt_uint(TOOL, opt, val, 0, 100000000, &o->warmup) :
		      tool_opt_uint(TOOL, opt, val, 1, 1024, &o->window);
		if (err)
			return 2;
	}
	if (!o->sizes)
		o->sizes = !strcmp(o->mode, "latency") ? "0,8,1024,65536" :
			   !strcmp(o->mode, "bw") ? "4194304" :
			   !strcmp(o->mode, "barrier") ? "0" : "8";
	o->nsizes = tool_parse_sizes(o->sizes, 0, MAX_SIZE, o->size_list, MAX_SIZES);
	if (o->nsizes < 0) {
		tool_bad_value(TOOL, "--sizes", o->sizes,
			       "a list of at most %u sizes in 0..%u (0,8,1024 or 8-1024)",
			       MAX_SIZES, MAX_SIZE);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	const char *mode;
	int iters, warmup, window, rank, nranks, all_errors = 0, nsizes, rc;
	unsigned int *size_list = o.size_list;
	double *t;
	json_object *out = NULL, *results = NULL;	/* rank 0's output */

	/* --version and --help run alone, outside mpirun: before MPI_Init */
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	mode = o.mode;
	iters = (int)o.iters;
	warmup = (int)o.warmup;
	window = (int)o.window;
	nsizes = o.nsizes;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (strcmp(mode, "allreduce") && strcmp(mode, "barrier") && nranks < 2) {
		if (rank == 0)
			fprintf(stderr, TOOL ": %s needs 2 or more ranks, not %d\n", mode, nranks);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	t = calloc((size_t)iters, sizeof(*t));
	if (rank == 0) {
		out = tj_bench("exanet-mpi-bench");
		tj_str(out, "mode", mode);
		tj_int(out, "ranks", nranks);
		tj_int(out, "iters", iters);
		tj_int(out, "window", window);
		results = tj_results(out);
	}
	for (int si = 0; si < nsizes; si++) {
		size_t size = size_list[si];
		int bw = !strcmp(mode, "bw");

		MPI_Barrier(MPI_COMM_WORLD);
		if (!strcmp(mode, "latency"))
			latency(rank, size, iters, warmup, t);
		else if (bw)
			bandwidth(rank, size, iters, warmup > 2 ? 2 : warmup, window, t);
		else if (!strcmp(mode, "barrier"))
			barrier(iters, warmup, t);
		else if (!strcmp(mode, "put"))
			put(rank, size, iters, warmup, t);
		else
			allreduce(rank, nranks, size, iters, warmup, t);
		if (rank == 0) {
			json_object *r = tj_result(results, (unsigned int)size, (unsigned long)iters);

			qsort(t, (size_t)iters, sizeof(*t), cmp_double);
			if (bw) {
				tj_num(r, "median_mb_s", "%.3f", quantile(t, iters, 0.5));
				tj_num(r, "p01_mb_s", "%.3f", quantile(t, iters, 0.01));
				tj_num(r, "max_mb_s", "%.1f", t[iters - 1]);
			} else {
				tj_num(r, "median_us", "%.2f", quantile(t, iters, 0.5));
				tj_num(r, "p99_us", "%.2f", quantile(t, iters, 0.99));
				tj_num(r, "min_us", "%.2f", t[0]);
			}
		}
	}
	MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		tj_int(out, "errors", all_errors);
		tj_print(out, 1);
	}
	free(t);
	MPI_Finalize();
	return all_errors ? 1 : 0;
}
