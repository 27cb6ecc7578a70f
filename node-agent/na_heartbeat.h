/* The heartbeat to the portal: every interval (and at once when the
 * sandbox list changes) the node posts its capacity, templates and
 * sandboxes to {portal}/sbv1/nodes/heartbeat with its credential. */
#ifndef NA_HEARTBEAT_H
#define NA_HEARTBEAT_H
#include "common/err.h"

struct na_node;
struct na_heartbeat;

struct na_heartbeat_opts {
	const char *portal;     /* base URL of the portal */
	const char *name;       /* this node's name there */
	const char *url;        /* this node's API as the portal should call it */
	const char *credential; /* bearer token (copied) */
	long interval_ms;       /* until the portal says otherwise */
};

/* Starts the thread (copies o) and hooks it to the node's change
 * notifications.  NULL with e set. */
struct na_heartbeat *na_heartbeat_start(struct na_node *n, const struct na_heartbeat_opts *o,
					struct err *e);
/* Stops and joins the thread (a heartbeat in flight ends within its 2 s
 * timeout) and frees hb.  NULL is fine. */
void na_heartbeat_stop(struct na_heartbeat *hb);

#endif
