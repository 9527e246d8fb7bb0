/* SPDX-License-Identifier: MIT */
/* Number parsing shared by the tools' option parsers. */
#ifndef TOOL_PARSE_H
#define TOOL_PARSE_H

#include <errno.h>
#include <stdlib.h>

/*
 * A whole unsigned number within [min, max]: decimal, 0x hexadecimal or
 * 0 octal (strtoul base 0), no sign, nothing after it.  0 or -EINVAL.
 */
static inline int tool_parse_ulong(const char *s, unsigned long min, unsigned long max,
				   unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The same into an unsigned int (max <= UINT_MAX). */
static inline int tool_parse_uint(const char *s, unsigned int min, unsigned int max,
				  unsigned int *out)
{
	unsigned long v;

	if (tool_parse_ulong(s, min, max, &v))
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

#endif
