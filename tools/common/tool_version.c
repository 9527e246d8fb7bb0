// SPDX-License-Identifier: MIT
/* The tools' --version: see tool_version.h. */
#include <stdio.h>
#include <string.h>

#include "tool_version.h"

#ifndef EXA_VERSION
#error "EXA_VERSION: the build passes the project's version (debian/changelog)"
#endif

const char tool_version_string[] = EXA_VERSION;

void tool_version(const char *tool)
{
	printf("%s %s\n", tool, tool_version_string);
}

bool tool_version_asked(const char *tool, int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[1], "--version"))
		return false;
	tool_version(tool);
	return true;
}
