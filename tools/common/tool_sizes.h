/* SPDX-License-Identifier: MIT */
/*
 * The size lists of the tools' --sizes options, one meaning for all:
 * comma-separated items, in the order given; an item is a size N, or a
 * range A-B that stands for A, 2A, 4A, ... up to B (doubling; B itself
 * only when the doubling reaches it): "8,64" is 8 and 64, "1-64" is 1, 2,
 * 4, 8, 16, 32, 64, "1-64,100" the same and 100.  Numbers as
 * tool_parse_ulong() reads them.
 */
#ifndef TOOL_SIZES_H
#define TOOL_SIZES_H

/*
 * Parses s into sizes[0..cap), each within [min, max] (a range's A at
 * least 1).  Returns how many (at least 1), -EINVAL for a bad list or a size
 * out of range, -E2BIG for more than cap sizes.
 */
int tool_parse_sizes(const char *s, unsigned int min, unsigned int max, unsigned int *sizes,
		     unsigned int cap);

#endif
