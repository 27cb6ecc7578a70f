/* The portal's internals, shared by its modules (not a public interface).
 *
 * Threads: everything here belongs to the loop thread (common/http_server)
 * except pt_job, which runs one call to a node on a thread of its own and
 * hands the answer back with hsrv_post().  So the queue, the node registry
 * and every state change are single-threaded: no locks, and one place
 * (pt_core_move) that changes a sandbox's state. */
#ifndef CLOCHE_PT_PORTAL_H
#define CLOCHE_PT_PORTAL_H
#include "common/err.h"
#include "common/http_server.h"
#include "common/job.h"
#include "portal/pt_auth.h"
#include "portal/pt_metrics.h"
#include "portal/pt_policy.h"
#include "portal/pt_state.h"
#include "portal/pt_store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct pt_cfg {
	long long ttl_default_s, ttl_max_s;
	long long wait_default_s, wait_max_s;
	int queue_max;
	int best_k;
	long long node_timeout_ms;
	long long heartbeat_ms;       /* what nodes are told to use */
	long long mem_default_mb, cpus_default, pids_default; /* = the node's defaults */
	long long mem_max_mb, cpus_max, pids_max;
	char proxy_url[256];          /* "http://{port}-{id}.cloche.localhost" */
	char default_template[64];
	unsigned char token_key[128];
	size_t token_key_len;
	char node_cred[256];
	size_t node_cred_len;
	struct pt_policy policy;       /* idle timeout and offload delay defaults */
	long long offload_retention_s; /* offloaded longer: deleted and released; 0 = never */
	long long idle_cpu_pct;        /* below this share of one CPU a sandbox is idle */
};

/* A node as its last heartbeat described it. */
struct pt_node {
	struct pt_node *next;
	char name[64];
	char url[256];
	char boot_id[64];
	bool up;               /* heard within the node timeout (or not judged yet) */
	bool heard;            /* a heartbeat arrived since the portal started */
	long long last_seen;   /* wall ms of the last heartbeat, or of the portal's start */
	long long stored_at;   /* when last_seen was last written to the store */
	json_t *capacity;      /* as the node sent them */
	json_t *templates;
	json_t *sandboxes;
	int inflight;          /* creates the portal sent and that have not answered */
	bool full;             /* it answered 503 full: no new creates until it heartbeats */
	long long inflight_mb;
	char proxy[128];       /* its proxy's address, as the proxy last reported it */
};

struct pt_waiter;
struct pt_job;

/* An acquire between its request and the sandbox being ready. */
struct pt_acq {
	struct pt_acq *next, *prev; /* the FIFO queue, while queued */
	bool in_queue;
	char id[32];
	char owner[32];
	char template[128];
	bool default_res;
	long long memory_mb, cpus, pids;
	char *egress;          /* JSON text */
	bool clipboard, resize, record; /* the desktop switches (docs/recording.md) */
	enum pt_state state;   /* as stored */
	bool job;              /* a node call for it runs */
	uint64_t t0;           /* monotonic ms when it arrived */
	uint64_t queued_at;    /* monotonic ms when it entered the queue (0: never) */
	bool wait_observed;    /* its queue wait went into the histogram */
	struct pt_waiter *waiters;
	struct pt_acq *all_next; /* every pending acquire */
};

/* A destroy on a node that the portal has asked for and not seen done. */
struct pt_destroy {
	struct pt_destroy *next;
	char node[64];         /* "" for the checkpoint of an offloaded sandbox (any node) */
	char prefix[256];      /* its S3 prefix then */
	char sid[32];
	char id[32];           /* the portal's row, "" for an orphan */
	bool running;
	uint64_t next_try;     /* monotonic ms */
	int tries;
};

struct mcp_server;
struct pt_thumb;

struct pt_portal {
	struct pt_cfg cfg;
	struct pt_store *st;
	struct hsrv *srv;
	struct hsrv_timer *tick;
	struct hsrv_timer *stop_timer; /* ends the loop shortly after SIGTERM */
	struct pt_node *nodes;
	struct pt_acq *queue_head, *queue_tail;
	int queue_len;
	struct pt_acq *pending;   /* every pt_acq, queued or not */
	struct pt_destroy *destroys;
	struct pt_metrics metrics;
	struct pt_hib *hib;       /* checkpoint operations and the idle policy (pt_hib.c) */
	struct mcp_server *mcp;   /* /mcp: sandboxes as MCP tools (pt_mcp.c) */
	struct pt_thumb *thumbs;  /* dashboard thumbnails (pt_thumb.c) */
	char *mcp_hosts;          /* its allowed Host/Origin names */
	long long stop_deadline;  /* SIGTERM: the loop ends by then */
	bool stopping;            /* SIGTERM came; loop thread only */
	struct job_set *jobs;     /* node calls in flight (threads) and their answers */
	long long started_at;
};

/* --- pt_core.c: acquire, placement, queue, leases, release, reconcile --- */

/* Sets up the timers; call once the loop exists.  Marks rows that the last
 * run left queued as failed (their clients are gone). */
int pt_core_start(struct pt_portal *p, struct err *e);
/* SIGTERM: answers every waiting acquire with 503 and stops timers. */
void pt_core_stop(struct pt_portal *p);
/* The one place that changes a row's state: checks the state machine,
 * stores the change with its event (compare and set on the old state) and
 * logs it.  sb is updated in memory too.  -1 with e (409 illegal or lost race). */
int pt_core_move(struct pt_portal *p, struct pt_sb *sb, enum pt_state to, const char *reason,
		 struct err *e);

struct pt_acquire_req {
	char template[128];
	long long ttl_s, wait_s;
	bool persist;
	long long memory_mb, cpus, pids;
	bool default_res;
	char *egress;   /* JSON text; owned by the caller */
	bool clipboard, resize, record; /* `desktop`: on, off, off by default */
	char *labels;
	char *metadata;
	char idem_key[136];
	long long idle_timeout_s, offload_after_s; /* 0 = never */
};
/* An acquire from the HTTP handler: answers now (resp) or later (defer). */
void pt_core_acquire(struct pt_portal *p, const struct pt_caller *who,
		     const struct pt_acquire_req *r, const struct hsrv_req *req,
		     struct hsrv_resp *resp);
/* Release / keepalive of a row the caller may touch: fills resp. */
void pt_core_release(struct pt_portal *p, struct pt_sb *sb, struct hsrv_resp *resp);
void pt_core_keepalive(struct pt_portal *p, struct pt_sb *sb, long long ttl_s,
		       struct hsrv_resp *resp);
/* A node's heartbeat (already authenticated): registry, reconcile, queue. */
int pt_core_heartbeat(struct pt_portal *p, json_t *body, struct err *e);
/* A template name or name@digest that some up node has. */
bool pt_core_template_known(struct pt_portal *p, const char *template);

/* --- pt_view.c: JSON of rows for the API --- */
json_t *pt_view_sb(const struct pt_portal *p, const struct pt_sb *sb, bool with_token);
json_t *pt_view_node(const struct pt_node *n);
/* A share as the API shows it: with its link (and the token in it) while
 * it is active. */
json_t *pt_view_share(const struct pt_portal *p, const struct pt_share *sh, long long now);
/* The shares of a sandbox, /sbv1/sandboxes/{id}/shares[/{share}] (pt_api.c). */
json_t *pt_view_templates(const struct pt_portal *p);
/* An error answer: e's status (500 when it has none) with its code in the
 * shared table (common/http_status.h); a 503 says when to try again. */
void pt_resp_err(struct hsrv_resp *resp, const struct err *e);

#endif
