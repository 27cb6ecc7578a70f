/* The portal's state machine: names and the table of allowed changes
 * (docs/portal.md has the diagram). */
#include "portal/pt_state.h"

#include <string.h>

static const char *const names[PT_NSTATES] = {
	[PT_QUEUED] = "queued",		  [PT_PLACING] = "placing",
	[PT_STARTING] = "starting",	  [PT_READY] = "ready",
	[PT_RELEASING] = "releasing",	  [PT_RELEASED] = "released",
	[PT_FAILED] = "failed",		  [PT_LOST] = "lost",
	[PT_HIBERNATING] = "hibernating", [PT_HIBERNATED] = "hibernated",
	[PT_OFFLOADING] = "offloading",	  [PT_OFFLOADED] = "offloaded",
	[PT_WAKING] = "waking",
};

#define B(s) (1u << (s))
/* allowed[from] is the set of states `from` may change to. */
static const unsigned allowed[PT_NSTATES] = {
	[PT_QUEUED] = B(PT_PLACING) | B(PT_FAILED),
	[PT_PLACING] = B(PT_QUEUED) | B(PT_STARTING) | B(PT_READY) | B(PT_FAILED) | B(PT_LOST),
	[PT_STARTING] = B(PT_QUEUED) | B(PT_READY) | B(PT_FAILED) | B(PT_LOST),
	[PT_READY] = B(PT_RELEASING) | B(PT_FAILED) | B(PT_LOST) | B(PT_HIBERNATING),
	[PT_RELEASING] = B(PT_RELEASED) | B(PT_FAILED) | B(PT_LOST),
	/* ready again: the node refused (connections open) or rebooted it
	 * from its rootfs snapshot after a failed checkpoint */
	[PT_HIBERNATING] = B(PT_HIBERNATED) | B(PT_READY) | B(PT_FAILED) | B(PT_LOST),
	/* ready: its node lists it running again (a wake whose answer was lost).
	 * Never lost with a silent node: the checkpoint is on the node's disk,
	 * and the node re-adopts it when it comes back. */
	[PT_HIBERNATED] = B(PT_WAKING) | B(PT_OFFLOADING) | B(PT_RELEASING) | B(PT_READY) |
			  B(PT_FAILED),
	/* hibernated: S3 refused, the local copy is kept */
	[PT_OFFLOADING] = B(PT_OFFLOADED) | B(PT_HIBERNATED) | B(PT_FAILED),
	/* on no node: nothing but a wake (restore) or a release */
	[PT_OFFLOADED] = B(PT_WAKING) | B(PT_RELEASING),
	/* hibernated / offloaded: the restore failed and can be tried again */
	[PT_WAKING] = B(PT_READY) | B(PT_HIBERNATED) | B(PT_OFFLOADED) | B(PT_FAILED) | B(PT_LOST),
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
	return s == PT_PLACING || s == PT_STARTING || s == PT_READY || s == PT_RELEASING ||
	       s == PT_HIBERNATING || s == PT_HIBERNATED || s == PT_OFFLOADING || s == PT_WAKING;
}

bool pt_state_asleep(enum pt_state s)
{
	return s == PT_HIBERNATING || s == PT_HIBERNATED || s == PT_OFFLOADING ||
	       s == PT_OFFLOADED || s == PT_WAKING;
}
