/* Sandbox ids: the one rule, apart from na_sandbox.c so that the node
 * API's unit tests link the real check instead of a copy.  Declared in
 * na_sandbox.h. */
#include "node-agent/na_sandbox.h"

#include <string.h>

bool na_valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > 31 || id[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
	}
	return true;
}
