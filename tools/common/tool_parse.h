/* SPDX-License-Identifier: MIT */
/*
 * Option values shared by the tools' parsers: numbers, and the one-line
 * messages for a bad value ("TOOL: --OPT: 'VALUE' is not FORM") and for an
 * unknown option or a missing value ("...; try 'TOOL --help'"), after which
 * the tools exit 2 without their usage text.
 */
#ifndef TOOL_PARSE_H
#define TOOL_PARSE_H

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exit status of a usage error (bad option, bad value). */
#define TOOL_EXIT_USAGE 2

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

/* A whole finite number within [min, max] (strtod).  0 or -EINVAL. */
static inline int tool_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= min && v <= max))
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * "TOOL: OPT: 'VALUE' is not FORM..." on stderr, FORM a printf format
 * (e.g. "a number in 1..32").  Returns -EINVAL for the caller to return.
 */
static inline int __attribute__((format(printf, 4, 5)))
tool_bad_value(const char *tool, const char *opt, const char *value, const char *form, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: '%s' is not ", tool, opt, value ? value : "");
	va_start(ap, form);
	vfprintf(stderr, form, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

/* Option opt's value s within [min, max], or -EINVAL after the message. */
static inline int tool_opt_ulong(const char *tool, const char *opt, const char *s,
				 unsigned long min, unsigned long max, unsigned long *out)
{
	if (!tool_parse_ulong(s, min, max, out))
		return 0;
	return tool_bad_value(tool, opt, s, "a number in %lu..%lu", min, max);
}

static inline int tool_opt_uint(const char *tool, const char *opt, const char *s,
				unsigned int min, unsigned int max, unsigned int *out)
{
	if (!tool_parse_uint(s, min, max, out))
		return 0;
	return tool_bad_value(tool, opt, s, "a number in %u..%u", min, max);
}

/* A number of seconds (fractions allowed) within [min, max]. */
static inline int tool_opt_seconds(const char *tool, const char *opt, const char *s,
				   double min, double max, double *out)
{
	if (!tool_parse_double(s, min, max, out))
		return 0;
	return tool_bad_value(tool, opt, s, "a number of seconds in %g..%g", min, max);
}

/*
 * s is one of choices (NULL-terminated): its index, or -EINVAL after
 * "... is not one of A, B, C".
 */
static inline int tool_opt_choice(const char *tool, const char *opt, const char *s,
				  const char *const *choices)
{
	int i;

	for (i = 0; choices[i]; i++)
		if (s && !strcmp(s, choices[i]))
			return i;
	fprintf(stderr, "%s: %s: '%s' is not one of ", tool, opt, s ? s : "");
	for (i = 0; choices[i]; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", choices[i]);
	fputc('\n', stderr);
	return -EINVAL;
}

/* "TOOL: unknown option 'OPT'; try 'TOOL --help'"; -EINVAL. */
static inline int tool_unknown_opt(const char *tool, const char *opt)
{
	fprintf(stderr, "%s: unknown option '%s'; try '%s --help'\n", tool, opt, tool);
	return -EINVAL;
}

/* "TOOL: option 'OPT' needs a value; try 'TOOL --help'"; -EINVAL. */
static inline int tool_missing_value(const char *tool, const char *opt)
{
	fprintf(stderr, "%s: option '%s' needs a value; try '%s --help'\n", tool, opt, tool);
	return -EINVAL;
}

/* For the tools that read their words themselves: -h or --help among them. */
static inline int tool_help_asked(int argc, char *const argv[])
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

#define TOOL_HELP_SHOWN (-1)

/*
 * For "TOOL WORD [--opt value]..." command lines: WORD (what: its name) is
 * one of choices.  Returns its index; TOOL_HELP_SHOWN after usage(stdout)
 * for -h or --help; -EINVAL after one line when WORD is missing or not one
 * of them.
 */
static inline int tool_first_word(const char *tool, int argc, char *const argv[],
				  const char *what, const char *const *choices,
				  void (*usage)(FILE *))
{
	if (tool_help_asked(argc, argv)) {
		usage(stdout);
		return TOOL_HELP_SHOWN;
	}
	if (argc < 2) {
		fprintf(stderr, "%s: missing %s (", tool, what);
		for (int i = 0; choices[i]; i++)
			fprintf(stderr, "%s%s", !i ? "" : choices[i + 1] ? ", " : " or ",
				choices[i]);
		fprintf(stderr, "); try '%s --help'\n", tool);
		return -EINVAL;
	}
	return tool_opt_choice(tool, what, argv[1], choices);
}

/*
 * After getopt_long() returned '?' or ':' (its own messages off: opterr = 0,
 * or an optstring that starts with ':'): one line naming the unknown
 * option or the option without its value, and the hint to --help.
 */
static inline void tool_opt_error(const char *tool, char *const argv[], int c)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	char shortopt[3] = { '-', (char)optopt, 0 };

	/* a short option: its letter (argv[optind - 1] may be a group "-xv") */
	if (optopt > 0 && optopt < 128 && strncmp(arg, "--", 2))
		arg = shortopt;
	if (c == ':')
		tool_missing_value(tool, arg);
	else if (!strncmp(arg, "--", 2) && strchr(arg, '=') && optopt)
		fprintf(stderr, "%s: option '%s' takes no value; try '%s --help'\n", tool, arg, tool);
	else
		tool_unknown_opt(tool, arg);
}

/* An argument where none (or no more) is expected. */
static inline int tool_extra_arg(const char *tool, const char *arg)
{
	fprintf(stderr, "%s: unexpected argument '%s'; try '%s --help'\n", tool, arg, tool);
	return -EINVAL;
}

#endif
