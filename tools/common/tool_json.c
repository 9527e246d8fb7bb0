// SPDX-License-Identifier: MIT
/* The tools' JSON writer; see tool_json.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "tool_json.h"

void tj_str(json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, v ? json_object_new_string(v) : NULL);
}

void tj_int(json_object *o, const char *key, long long v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

void tj_uint(json_object *o, const char *key, unsigned long long v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

void tj_bool(json_object *o, const char *key, int v)
{
	json_object_object_add(o, key, json_object_new_boolean(!!v));
}

void tj_num(json_object *o, const char *key, const char *fmt, double v)
{
	char text[64];

	snprintf(text, sizeof(text), fmt, v);
	/* json-c writes the text given here instead of its own %.17g */
	json_object_object_add(o, key, json_object_new_double_s(v, text));
}

/* An integer as JSON writes it: digits, no leading zero (hex "0001" is text). */
static int is_integer(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s || (s[0] == '0' && s[1]))
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

void tj_text(json_object *o, const char *key, const char *s)
{
	if (!is_integer(s))
		tj_str(o, key, s);
	else if (*s == '-')
		tj_int(o, key, strtoll(s, NULL, 10));
	else
		tj_uint(o, key, strtoull(s, NULL, 10));
}

json_object *tj_object(json_object *o, const char *key)
{
	json_object *v = json_object_new_object();

	json_object_object_add(o, key, v);
	return v;
}

json_object *tj_array(json_object *o, const char *key)
{
	json_object *v = json_object_new_array();

	json_object_object_add(o, key, v);
	return v;
}

json_object *tj_append(json_object *array)
{
	json_object *v = json_object_new_object();

	json_object_array_add(array, v);
	return v;
}

json_object *tj_bench(const char *tool)
{
	json_object *o = json_object_new_object();

	tj_str(o, "tool", tool);
	return o;
}

json_object *tj_results(json_object *bench)
{
	return tj_array(bench, "results");
}

json_object *tj_result(json_object *results, unsigned int size, unsigned long iters)
{
	json_object *r = tj_append(results);

	tj_uint(r, "size", size);
	tj_uint(r, "iters", iters);
	return r;
}

void tj_print(json_object *o, int spaced)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
		    (spaced ? JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);

	puts(json_object_to_json_string_ext(o, flags));
	fflush(stdout);
	json_object_put(o);
}
