/* SPDX-License-Identifier: MIT */
/*
 * --version of every tool: "<tool> <version>" on stdout, the project's
 * version (the top entry of debian/changelog, which the build passes to
 * tool_version.c alone as EXA_VERSION: a new version recompiles one file).
 */
#ifndef TOOL_VERSION_H
#define TOOL_VERSION_H

/* The project's version, e.g. "0.2.0". */
extern const char tool_version_string[];

/* Prints "<tool> <version>\n" on stdout. */
void tool_version(const char *tool);

#endif
