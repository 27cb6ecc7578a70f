/* The sandbox state machine of the portal, in one place.
 *
 *   queued -> placing -> starting -> ready -> releasing -> released
 *   placing -> ready             (a warm pool member was claimed)
 *   placing/starting -> queued   (the chosen node said no before making
 *                                 anything: full, or the member was gone)
 *   any live state -> failed     (with a reason)
 *   placing/starting/ready/releasing -> lost   (the node stopped heartbeating)
 *
 * failed, lost and released are final.  Hibernation (hibernating,
 * hibernated, waking) joins with the checkpoint issue.  Every change of a
 * row's state goes through pt_state_allowed(); the store refuses a change
 * whose starting state is not the row's current one (compare and set), so
 * two changes that race cannot both happen. */
#ifndef CLOCHE_PT_STATE_H
#define CLOCHE_PT_STATE_H
#include <stdbool.h>

enum pt_state {
	PT_QUEUED,
	PT_PLACING,
	PT_STARTING,
	PT_READY,
	PT_RELEASING,
	PT_RELEASED,
	PT_FAILED,
	PT_LOST,
	PT_HIBERNATING,
	PT_HIBERNATED,
	PT_OFFLOADING,
	PT_OFFLOADED,
	PT_WAKING,
	PT_NSTATES
};

/* The state's name as stored and shown ("queued", ...). */
const char *pt_state_name(enum pt_state s);
/* Parses a name; returns -1 for an unknown one. */
int pt_state_parse(const char *name);
/* True when a row may go from `from` to `to`. */
bool pt_state_allowed(enum pt_state from, enum pt_state to);
/* True for released, failed and lost: nothing changes any more. */
bool pt_state_final(enum pt_state s);
/* True for states in which the sandbox may exist on a node and belongs to
 * its row: placing, starting, ready, releasing, and the checkpoint states
 * in which its node holds it (hibernating, hibernated, offloading, waking).
 * An offloaded sandbox is on no node: its checkpoint is in S3. */
bool pt_state_on_node(enum pt_state s);
/* The SQL list of pt_state_on_node() states, for IN (...) clauses. */
#define PT_ON_NODE_SQL                                                                      \
	"('placing','starting','ready','releasing','hibernating','hibernated','offloading',"  \
	"'waking')"
/* True for the states a wake brings back to ready: hibernating (once it is
 * done), hibernated, offloading (once it is done), offloaded, waking. */
bool pt_state_asleep(enum pt_state s);

#endif
