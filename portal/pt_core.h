/* The portal's core, between its modules: the queue runner, destroys on
 * nodes, and reconciliation with what nodes report (pt_reconcile.c).  The
 * entry points the API calls are in pt_portal.h. */
#ifndef CLOCHE_PT_CORE_H
#define CLOCHE_PT_CORE_H
#include "portal/pt_portal.h"

/* Places what the queue holds and the nodes can take now. */
void pt_core_dispatch(struct pt_portal *p);
/* Asks node to destroy its sandbox sid (once; retried with backoff until
 * it is gone).  id is the portal's row, which becomes released then, or
 * NULL/"" for a sandbox no row owns. */
void pt_core_destroy(struct pt_portal *p, const char *node, const char *sid, const char *id);
struct pt_destroy *pt_core_destroy_find(struct pt_portal *p, const char *node, const char *sid);
/* Moves a ready row to releasing and destroys it on its node; *rc 0 or -1. */
void pt_core_release_row(struct pt_portal *p, struct pt_sb *sb, const char *reason,
			 struct err *e, int *rc);
/* True while a node call for the pending acquire id runs. */
bool pt_core_busy(struct pt_portal *p, const char *id);
int pt_core_queue_len(const struct pt_portal *p);
void pt_core_free(struct pt_portal *p);

/* pt_reconcile.c */
/* Loads the nodes the store knows (down until they heartbeat). */
int pt_reconcile_load(struct pt_portal *p, struct err *e);
/* Marks nodes that stopped heartbeating down and their sandboxes lost. */
void pt_reconcile_liveness(struct pt_portal *p);

#endif
