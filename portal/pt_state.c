/* The portal's state machine: names and the table of allowed changes. */
#include "portal/pt_state.h"

#include <string.h>

static const char *const names[PT_NSTATES] = {
	[PT_QUEUED] = "queued",     [PT_PLACING] = "placing",   [PT_STARTING] = "starting",
	[PT_READY] = "ready",       [PT_RELEASING] = "releasing", [PT_RELEASED] = "released",
	[PT_FAILED] = "failed",     [PT_LOST] = "lost",
};

#define B(s) (1u << (s))
/* allowed[from] is the set of states `from` may change to. */
static const unsigned allowed[PT_NSTATES] = {
	[PT_QUEUED] = B(PT_PLACING) | B(PT_FAILED),
	[PT_PLACING] = B(PT_QUEUED) | B(PT_STARTING) | B(PT_READY) | B(PT_FAILED) | B(PT_LOST),
	[PT_STARTING] = B(PT_QUEUED) | B(PT_READY) | B(PT_FAILED) | B(PT_LOST),
	[PT_READY] = B(PT_RELEASING) | B(PT_FAILED) | B(PT_LOST),
	[PT_RELEASING] = B(PT_RELEASED) | B(PT_FAILED) | B(PT_LOST),
};

const char *pt_state_name(enum pt_state s)
{
	return (unsigned)s < PT_NSTATES ? names[s] : "unknown";
}

int pt_state_parse(const char *name)
{
	for (int i = 0; i < PT_NSTATES; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

bool pt_state_allowed(enum pt_state from, enum pt_state to)
{
	return (unsigned)from < PT_NSTATES && (unsigned)to < PT_NSTATES &&
	       (allowed[from] & B(to)) != 0;
}

bool pt_state_final(enum pt_state s)
{
	return s == PT_RELEASED || s == PT_FAILED || s == PT_LOST;
}

bool pt_state_on_node(enum pt_state s)
{
	return s == PT_PLACING || s == PT_STARTING || s == PT_READY || s == PT_RELEASING;
}
