/* SPDX-License-Identifier: MIT */
/*
 * The tools' JSON output, on json-c: one object per run, printed as one
 * line on stdout.
 *
 * Every benchmark (the ping-pong and bandwidth tools, exanet-mpi-bench,
 * memcpy-bw) writes one schema: "tool" first, then what was measured and
 * how (transport or op, nodes, run parameters), then "results", one object
 * per message size with "size" and "iters" first and the figures after
 * them; tools that can stop part-way end with "status".
 */
#ifndef TOOL_JSON_H
#define TOOL_JSON_H

#include <json.h>

/* Members added to o, in the order of the calls. */
void tj_str(json_object *o, const char *key, const char *v);	/* v NULL: null */
void tj_int(json_object *o, const char *key, long long v);
void tj_uint(json_object *o, const char *key, unsigned long long v);
void tj_bool(json_object *o, const char *key, int v);
/* A number written with a printf format: "%.3f" keeps three decimals. */
void tj_num(json_object *o, const char *key, const char *fmt, double v);
/*
 * A number as it is written in s (digits, a leading '-', no leading zero),
 * else the string s.
 */
void tj_text(json_object *o, const char *key, const char *s);
json_object *tj_object(json_object *o, const char *key);
json_object *tj_array(json_object *o, const char *key);
/* A new object at the end of array. */
json_object *tj_append(json_object *array);

/* A benchmark's output: {"tool": tool}. */
json_object *tj_bench(const char *tool);
/* Its "results" array (added where the call stands in the order). */
json_object *tj_results(json_object *bench);
/* One size's result at the end of results: {"size": size, "iters": iters}. */
json_object *tj_result(json_object *results, unsigned int size, unsigned long iters);

/* Prints o on one line (spaced: "key": value, ...) and frees it. */
void tj_print(json_object *o, int spaced);

#endif
