/* The tree's version; see version.h.  CLOCHE_VERSION comes from the file
 * VERSION through common/module.mk, on this object's command line only. */
#include "common/version.h"

#include <stdio.h>

#ifndef CLOCHE_VERSION
#error "CLOCHE_VERSION is not defined: build with make (common/module.mk passes it from VERSION)"
#endif

const char *version_string(void)
{
	return CLOCHE_VERSION;
}

void version_print(const char *prog)
{
	printf("%s %s\n", prog, CLOCHE_VERSION);
	fflush(stdout);
}
