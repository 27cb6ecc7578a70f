/* Recording ids; see recid.h. */
#include "recid.h"

#include <string.h>

bool recid_valid(const char *id, size_t n)
{
	if (n <= 4 || n > 44 || strncmp(id, "rec-", 4) != 0)
		return false;
	for (size_t i = 4; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') ||
		      id[i] == '-'))
			return false;
	return true;
}
