/* SPDX-License-Identifier: MIT */
/*
 * --version of every tool: "<tool> <version>" on stdout, the project's
 * version (the top entry of debian/changelog, which the build passes to
 * tool_version.c alone as EXA_VERSION: a new version recompiles one file).
 */
#ifndef TOOL_VERSION_H
#define TOOL_VERSION_H

#include <stdbool.h>

/* The project's version, e.g. "0.2.0". */
extern const char tool_version_string[];

/* Prints "<tool> <version>\n" on stdout. */
void tool_version(const char *tool);

/*
 * For tools whose only other argument parsing comes later (e.g. after
 * MPI_Init): true after printing the version when the one argument is
 * --version.
 */
bool tool_version_asked(const char *tool, int argc, char **argv);

#endif
