/* The portal's core, between its modules: the queue runner, destroys on
 * nodes, and reconciliation with what nodes report (pt_reconcile.c).  The
 * entry points the API calls are in pt_portal.h. */
#ifndef CLOCHE_PT_CORE_H
#define CLOCHE_PT_CORE_H
#include "portal/pt_portal.h"

/* One call to a node, run as a job of p->jobs (pt_job_start); its answer
 * comes back on the loop thread, where pt_core's job_done hands the
 * checkpoint kinds to pt_hib_job_done().  A job that ends once the portal
 * stops is dropped: the next start reconciles what the call did. */
enum pt_job_kind {
	PT_JOB_CLAIM,       /* POST /v1/sandboxes/{sid}/claim */
	PT_JOB_CREATE,      /* POST /v1/sandboxes */
	PT_JOB_DESTROY,     /* DELETE /v1/sandboxes/{sid} */
	PT_JOB_HIBERNATE,   /* POST /v1/sandboxes/{sid}/hibernate */
	PT_JOB_WAKE,        /* POST /v1/sandboxes/{sid}/wake */
	PT_JOB_RESTORE,     /* POST /v1/sandboxes/{sid}/restore (an offloaded one) */
	PT_JOB_OFFLOAD,     /* POST /v1/sandboxes/{sid}/offload */
	PT_JOB_FORK,        /* POST /v1/sandboxes/{sid}/fork */
	PT_JOB_CKPT_DELETE, /* DELETE /v1/checkpoints/{sid}?prefix=... */
	PT_JOB_THUMBNAIL,   /* GET /v1/sandboxes/{sid}/thumbnail?width=<prefix> */
};

struct pt_job {
	struct pt_portal *p;
	enum pt_job_kind kind;
	char node[64];
	char url[320];  /* the node's base URL */
	char id[32];    /* the portal's row ("" for an orphan's destroy) */
	char sid[32];   /* the node's sandbox */
	char prefix[256]; /* PT_JOB_CKPT_DELETE: the checkpoint's S3 prefix */
	json_t *body;
	long status;    /* HTTP status, or -1 when no answer came */
	json_t *out;
	struct err e;
	char msg[256];  /* the node's error message, or why no answer came */
};
/* Starts j (filled by the caller, body owned by j) on a thread: 0, or -1
 * with e (j is still the caller's then). */
int pt_job_start(struct pt_portal *p, struct pt_job *j, struct err *e);
void pt_job_free(struct pt_job *j);

/* Loads row id and moves it from `from` to `to` (ready sets ready_at and a
 * fresh lease); logs instead of failing loudly.  With out, the row as moved
 * is handed over on success (pt_sb_clear it).  0 or -1. */
int pt_core_move_id(struct pt_portal *p, const char *id, enum pt_state from, enum pt_state to,
		    const char *reason, struct pt_sb *out);
/* A new sandbox id, "sb-" and 16 hex digits. */
void pt_core_new_id(char *out, size_t len);
/* Asks any up node to delete the S3 objects of an offloaded sandbox (once;
 * retried with backoff); row id becomes released then. */
void pt_core_forget_checkpoint(struct pt_portal *p, const char *sid, const char *prefix,
			       const char *id);

/* Places what the queue holds and the nodes can take now. */
void pt_core_dispatch(struct pt_portal *p);
/* Asks node to destroy its sandbox sid (once; retried with backoff until
 * it is gone).  id is the portal's row, which becomes released then, or
 * NULL/"" for a sandbox no row owns. */
void pt_core_destroy(struct pt_portal *p, const char *node, const char *sid, const char *id);
struct pt_destroy *pt_core_destroy_find(struct pt_portal *p, const char *node, const char *sid);
/* Moves a ready or hibernated row to releasing and destroys it on its node,
 * or an offloaded one and deletes its checkpoint; *rc 0 or -1. */
void pt_core_release_row(struct pt_portal *p, struct pt_sb *sb, const char *reason,
			 struct err *e, int *rc);
/* True while a node call for row id runs (an acquire's, or a checkpoint
 * operation's: hibernate, wake, offload, fork, including fork children). */
bool pt_core_busy(struct pt_portal *p, const char *id);
int pt_core_queue_len(const struct pt_portal *p);

/* The API view of sandbox id as its owner sees it (a new reference), or
 * NULL when there is no such row. */
json_t *pt_core_view(struct pt_portal *p, const char *id);
void pt_core_free(struct pt_portal *p);

/* pt_reconcile.c */
/* Loads the nodes the store knows (down until they heartbeat). */
int pt_reconcile_load(struct pt_portal *p, struct err *e);
/* Marks nodes that stopped heartbeating down and their sandboxes lost. */
void pt_reconcile_liveness(struct pt_portal *p);

#endif
