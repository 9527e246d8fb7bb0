/* SPDX-License-Identifier: MIT */
/*
 * Environment knobs of the user-space libraries (private: not installed),
 * read once per port: numbers as strtoul() takes them, switches that only
 * "0" turns off.
 */
#ifndef EXA_ENV_H
#define EXA_ENV_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* $name as a number, or dflt when unset or empty. */
static inline uint32_t exa_env_u32(const char *name, uint32_t dflt)
{
	const char *e = getenv(name);

	return e && *e ? (uint32_t)strtoul(e, NULL, 0) : dflt;
}

/* $name is set to something other than "" and "0". */
static inline bool exa_env_on(const char *name)
{
	const char *e = getenv(name);

	return e && *e && strcmp(e, "0");
}

/* $name is "0": a default-on behaviour switched off (comparisons). */
static inline bool exa_env_off(const char *name)
{
	const char *e = getenv(name);

	return e && !strcmp(e, "0");
}

#endif /* EXA_ENV_H */
