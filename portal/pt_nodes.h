/* The node registry (what each node's last heartbeat said) and placement:
 * best-of-K over the nodes that can take a sandbox.  Loop thread only. */
#ifndef CLOCHE_PT_NODES_H
#define CLOCHE_PT_NODES_H
#include "portal/pt_portal.h"

#include <stdbool.h>
#include <stddef.h>

/* The node called name, or NULL. */
struct pt_node *pt_nodes_find(struct pt_portal *p, const char *name);
/* The node called name, made (down, never heard) when missing; NULL when
 * out of memory or when the registry is full. */
struct pt_node *pt_nodes_get(struct pt_portal *p, const char *name);
void pt_nodes_free(struct pt_portal *p);

/* True when want ("desktop" or "desktop@digest") names resolved
 * ("desktop@digest"). */
bool pt_tmpl_match(const char *want, const char *resolved);
/* True when n is up and has a template that want names. */
bool pt_node_has_template(const struct pt_node *n, const char *want);

/* Records a heartbeat body (validated here: 400 when malformed).  *out is
 * the node; *rebooted tells whether its boot id changed (the agent
 * restarted) since the portal last heard from it. */
int pt_nodes_record(struct pt_portal *p, json_t *hb, struct pt_node **out, bool *rebooted,
		    struct err *e);

/* A callback that says whether a pool member is spoken for already. */
typedef bool (*pt_taken_fn)(struct pt_portal *p, const struct pt_node *n, const char *sid);
/* Best-of-K among up nodes with a ready, unclaimed pool member of want
 * that taken() does not exclude: the node with the most such members of
 * K sampled.  Copies the member's id to sid.  NULL when none. */
struct pt_node *pt_nodes_pick_warm(struct pt_portal *p, const char *want, pt_taken_fn taken,
				   char *sid, size_t len);
/* Best-of-K among up nodes that have want, a free slot and memory for
 * memory_mb: the lowest load score (running sandboxes per CPU plus the
 * share of memory in use, counting creates in flight).  NULL when none. */
struct pt_node *pt_nodes_pick_new(struct pt_portal *p, const char *want, long long memory_mb);
/* Drops sid from n's member list (the node said it was not claimable). */
void pt_node_forget(struct pt_node *n, const char *sid);
/* Whether n's last heartbeat lists sid; *pooled and *state (may be NULL)
 * get its fields. */
bool pt_node_lists(const struct pt_node *n, const char *sid, bool *pooled, const char **state);

#endif
