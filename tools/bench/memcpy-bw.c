// SPDX-License-Identifier: MIT
/*
 * memcpy-bw: single-thread memcpy bandwidth of a 256 MiB buffer on the
 * host (the reference for make bench-rdma).  Prints one JSON object
 * (tools/common/tool_json.h): {"tool", "bytes", "repetitions", "memcpy_mb_s"}.
 * usage: memcpy-bw [MiB] [repetitions]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool_json.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	int reps = argc > 2 ? atoi(argv[2]) : 5, i;
	size_t len = mib << 20;
	double best = 0;
	uint8_t *a, *b;
	json_object *out;

	if (!mib || reps < 1) {
		fprintf(stderr, "usage: memcpy-bw [MiB] [repetitions]\n");
		return 2;
	}
	a = malloc(len);
	b = malloc(len);
	if (!a || !b)
		return 1;
	memset(a, 1, len);
	memset(b, 2, len);	/* fault everything in before timing */
	for (i = 0; i < reps; i++) {
		double t0 = now(), t;

		memcpy(b, a, len);
		t = now() - t0;
		__asm__ volatile("" : : "r"(b) : "memory");
		if (len / t / 1e6 > best)
			best = len / t / 1e6;
		a[i] ^= b[len - 1 - i];
	}
	out = tj_bench("memcpy-bw");
	tj_uint(out, "bytes", len);
	tj_int(out, "repetitions", reps);
	tj_num(out, "memcpy_mb_s", "%.1f", best);
	tj_print(out, 0);
	return 0;
}
