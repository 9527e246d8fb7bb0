// SPDX-License-Identifier: MIT
/* Size lists of the tools' --sizes: see tool_sizes.h. */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "tool_parse.h"
#include "tool_sizes.h"

/* One number of an item: s[0..len) within [min, max]. */
static int parse_size(const char *s, size_t len, unsigned int min, unsigned int max,
		      unsigned int *out)
{
	char num[32];

	if (len == 0 || len >= sizeof(num) || !isdigit((unsigned char)s[0]))
		return -EINVAL;	/* no sign, no blank */
	memcpy(num, s, len);
	num[len] = '\0';
	return tool_parse_uint(num, min, max, out);
}

int tool_parse_sizes(const char *s, unsigned int min, unsigned int max, unsigned int *sizes,
		     unsigned int cap)
{
	unsigned int n = 0;

	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		size_t len = strcspn(s, ",");
		const char *dash = memchr(s, '-', len);
		unsigned int lo, hi;
		unsigned long v;

		if (!dash) {
			if (parse_size(s, len, min, max, &lo))
				return -EINVAL;
			if (n == cap)
				return -E2BIG;
			sizes[n++] = lo;
		} else {
			if (parse_size(s, (size_t)(dash - s), min > 1 ? min : 1, max, &lo) ||
			    parse_size(dash + 1, len - (size_t)(dash + 1 - s), min, max, &hi) ||
			    lo > hi)
				return -EINVAL;
			for (v = lo; v <= hi; v *= 2) {
				if (n == cap)
					return -E2BIG;
				sizes[n++] = (unsigned int)v;
			}
		}
		if (!s[len])
			return (int)n;
		s += len + 1;
	}
}
