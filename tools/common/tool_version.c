// SPDX-License-Identifier: MIT
/* The tools' --version: see tool_version.h. */
#include <stdio.h>

#include "tool_version.h"

#ifndef EXA_VERSION
#error "EXA_VERSION: the build passes the project's version (debian/changelog)"
#endif

const char tool_version_string[] = EXA_VERSION;

void tool_version(const char *tool)
{
	printf("%s %s\n", tool, tool_version_string);
}
