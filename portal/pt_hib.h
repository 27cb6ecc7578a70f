/* Hibernation, wake, offload to S3 and fork: the checkpoint operations
 * the portal drives on nodes, the requests that wait for them, and the
 * policy that hibernates idle sandboxes and offloads long-hibernated ones.
 *
 * Every operation is one node call on a thread (pt_job) for one row, with
 * the row moved first (ready -> hibernating, hibernated -> waking, ...), so
 * a restart of the portal finds it in a state pt_reconcile.c settles from
 * the node's heartbeats.  At most one operation runs per row; a second
 * request joins it (hibernate while hibernating), waits for it (wake while
 * hibernating or offloading: the wake follows), or gets 409.  Loop thread
 * only. */
#ifndef CLOCHE_PT_HIB_H
#define CLOCHE_PT_HIB_H
#include "portal/pt_core.h"

struct pt_hib;

/* Sets up the operation table, and sends again the checkpoint deletes of
 * offloaded rows a previous run was releasing.  0, or -1 with e. */
int pt_hib_start(struct pt_portal *p, struct err *e);
/* SIGTERM: answers every waiting request with 503. */
void pt_hib_stop(struct pt_portal *p);
void pt_hib_free(struct pt_portal *p);
/* Each tick: waits that ran out answer 202; once a second the policy
 * (idle -> hibernate, hibernated -> offload, retention, leases of
 * hibernated rows). */
void pt_hib_tick(struct pt_portal *p, uint64_t now);
/* True while an operation runs for row id (or id is a child of a fork in
 * flight). */
bool pt_hib_busy(struct pt_portal *p, const char *id);
/* A node's answer to a checkpoint job (hibernate, wake, restore, offload,
 * fork); j stays the caller's. */
void pt_hib_job_done(struct pt_portal *p, struct pt_job *j);
/* The lease of a ready persist row ran out: hibernate it (released after a
 * few refusals).  0 when something was started, -1 when not (yet). */
int pt_hib_expired(struct pt_portal *p, struct pt_sb *sb);
/* Notes the CPU figures (cpu_ms) of node n's last heartbeat, for the idle
 * policy. */
void pt_hib_heartbeat(struct pt_portal *p, const struct pt_node *n);

/* POST /sbv1/sandboxes/{id}/hibernate of row sb: answers (resp) or defers
 * until the node is done or wait_s ran out (then 202). */
void pt_hib_hibernate(struct pt_portal *p, struct pt_sb *sb, long long wait_s,
		      const struct hsrv_req *req, struct hsrv_resp *resp);
/* POST /sbv1/sandboxes/{id}/wake, the same way; the lease is renewed.  With
 * req NULL (a proxy's wake, /sbv1/routes/{id}/wake) it answers at once: 200
 * ready, 202 waking (or to wake once a hibernate or offload ends), 409 not
 * asleep, 503 no node can take it now. */
void pt_hib_wake(struct pt_portal *p, struct pt_sb *sb, long long wait_s,
		 const struct hsrv_req *req, struct hsrv_resp *resp);
/* POST /sbv1/sandboxes/{id}/fork {count}: rows for the children first
 * (owner `who`), then the node's fork; answers {parent, children}. */
void pt_hib_fork(struct pt_portal *p, const struct pt_caller *who, struct pt_sb *sb, int count,
		 long long wait_s, const struct hsrv_req *req, struct hsrv_resp *resp);

#endif
