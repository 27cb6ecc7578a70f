/* Sandbox lifecycle on one node: the registry of sandboxes, create (snapshot
 * -> netns -> bundle -> runsc run -> health 200), idempotent destroy,
 * re-adoption after a restart, and the JSON views the API serves.
 *
 * The registry is guarded by one mutex; the slow work (create, destroy)
 * runs on the caller's thread without holding it, so the HTTP loop calls the
 * quick functions itself and hands the slow ones to worker threads. */
#ifndef NA_SANDBOX_H
#define NA_SANDBOX_H

#include "node-agent/na_egress.h"
#include "node-agent/na_spec.h"

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>

struct na_node;
struct na_egress;

struct na_seal;

struct na_node_opts {
	const char *pool;          /* btrfs pool root, e.g. /var/lib/cloche */
	const char *runsc_root;    /* runsc --root */
	const char *template_name; /* default template */
	const char *warm;          /* warm pool targets "name=N[,name=N...]"; NULL or "" none */
	struct na_egress *egress;  /* the egress proxy engine (not owned) */
	int max_sandboxes;         /* most sandboxes held at once (warm members too); 0: no limit */
	const char *proxy_domain;  /* the proxy's domain: its names are the sandbox's own */
	const char *proxy_admin;   /* this node's cloche-proxy admin URL (drains); NULL: none */
	const char *credential;    /* the node credential, for the proxy's admin API */
	struct na_s3 *s3;          /* L2 (not owned); NULL: no offloads on this node */
	const struct na_seal *seal; /* seals the manifests in S3 (copied); needed with s3 */
	const char *s3_prefix;     /* the prefix of every key this node writes */
};

/* Creates the node (copies opts) and makes pool/sandboxes and the runsc
 * root.  The pool must already be usable (na_btrfs_pool_ensure).  NULL with
 * e set, e.g. for a malformed warm pool setting. */
struct na_node *na_node_new(const struct na_node_opts *o, struct err *e);

/* Starts the keeper thread.  Once a second it marks ready sandboxes whose
 * sandbox process died as "failed" with a reason (host task limit, host
 * OOM, exit), removes dead warm members, and keeps each warm pool at its
 * target: it creates members one at a time (they count once ready), retries
 * failed creates with a growing delay, and destroys idle members of a
 * template that has a newer version.  0 or -1. */
int na_node_keeper_start(struct na_node *n, struct err *e);

/* Stops the keeper thread.  Waits up to 5 s for a create it is running;
 * returns false when it is still running then (the caller must not free n;
 * the next start adopts or cleans up that sandbox). */
bool na_node_keeper_stop(struct na_node *n);

/* Frees the registry; running sandboxes are left running.  NULL is fine. */
void na_node_free(struct na_node *n);

/* Scans pool/sandboxes: directories with meta.json whose container is running
 * are adopted as ready (warm pool members stay members, egress listeners are
 * opened again); everything else there is torn down.  Then containers
 * under the runsc root that have no sandbox directory are removed.  Logs
 * each decision.  Blocking; call before serving. */
void na_node_adopt(struct na_node *n);

/* First, quick half of create: validates the request (id?, template?,
 * memory_mb?, cpus?, pids?, egress? of req) and resolves the template.  When
 * the request names no id and asks for the default limits, a ready member of
 * that template's warm pool is claimed: it gets the request's egress policy
 * and *claimed is set; the sandbox is ready and nothing more is to do.
 * Otherwise the id is reserved in state "starting" for na_node_create_run.
 * On success writes the id into id_out (>= 32 bytes).  -1 with e (and its
 * http_status: 400, 404 unknown template, 409 id taken) otherwise. */
int na_node_create_begin(struct na_node *n, const json_t *req, char *id_out, bool *claimed,
			 struct err *e);

/* Claims warm pool member id exactly (the portal picks members by id):
 * body {"egress"?: policy}.  0 when it is now the caller's (ready, with
 * the policy applied and recorded); -1 with 404 (unknown), 409 (not a
 * ready, unclaimed member: claimed, starting, failed, being changed) or
 * 400 (bad policy).  Of two claims of one member exactly one succeeds. */
int na_node_claim(struct na_node *n, const char *id, const json_t *body, struct err *e);
/* Registers fn(ud) to run when the sandbox list changes (see na_node.h). */
void na_node_on_change(struct na_node *n, void (*fn)(void *ud), void *ud);
/* Drops the reservation of create_begin when the slow half will not run
 * (no worker could be started): the id is free again.  Nothing was made on
 * disk yet.  Only an entry still "starting" is dropped. */
void na_node_create_cancel(struct na_node *n, const char *id);

/* Slow half: builds and boots the reserved sandbox and waits until its health
 * answers 200.  On failure everything made is removed and so is the
 * registry entry.  0 or -1 with e set.  Worker thread. */
int na_node_create_run(struct na_node *n, const char *id, struct err *e);

/* Destroys sandbox id: TERM, wait, delete, netns, subvolume, directory.
 * Idempotent: a sandbox only partly present is cleaned up.  Fails with 404
 * when the id is neither registered nor on disk, 409 while it is starting.
 * 0 or -1.  Worker thread. */
int na_node_destroy(struct na_node *n, const char *id, struct err *e);

/* Replaces the egress policy of a ready sandbox (body as in create's
 * `egress`), in two steps so the slow part runs off the loop thread (closing
 * a proxy waits for its connection threads, one of which may sit in name
 * resolution).  _begin parses the policy into *pol and marks the sandbox
 * busy for the whole change: a DELETE or another change meanwhile gets 409.
 * -1 with 400, 404 or 409 (not ready, or busy).  Loop thread. */
int na_node_egress_begin(struct na_node *n, const char *id, const json_t *policy,
			 struct na_egress_policy *pol, struct err *e);

/* Opens, changes or closes the proxy listener and records the policy in
 * meta.json (the old one comes back when that fails); always ends the busy
 * mark of _begin.  0 or -1.  Worker thread. */
int na_node_egress_run(struct na_node *n, const char *id, const struct na_egress_policy *pol,
		       struct err *e);

/* Ends the busy mark of _begin without a change (the worker could not be
 * started). */
void na_node_egress_cancel(struct na_node *n, const char *id);

/* Imports a template from a `btrfs send` stream in file (an absolute path
 * on this node) into templates/.  The stream's subvolume name is read
 * first: it must be name@digest and not there yet.  It is received in
 * place and used by creates only once read-only (complete); a failed
 * receive is deleted, and an unfinished one found at start too.  Writes the
 * template's name.  -1 with 400 (not a file, not a stream, not a
 * template), 409 (exists) or other errors.  Worker thread. */
int na_node_import_template(struct na_node *n, const char *file, char *name_out, size_t len,
			    struct err *e);

/* The state of sandbox id ("ready", ...) into out; false when unknown. */
bool na_node_state(struct na_node *n, const char *id, char *out, size_t len);
/* Copies the VNC secret of sandbox id ("" for one without) into out.
 * False when there is no such sandbox. */
bool na_node_secret(struct na_node *n, const char *id, char *out, size_t len);

/* JSON views (new references, NULL when absent). */
json_t *na_node_get_json(struct na_node *n, const char *id);
json_t *na_node_list_json(struct na_node *n);
json_t *na_node_capacity_json(struct na_node *n);
/* {"templates": [{template, name, digest, created_at, sandboxes}]} */
json_t *na_node_templates_json(struct na_node *n);

/* True when id is a well-formed sandbox id: 1-31 of a-z, 0-9, '-', not
 * starting with '-'. */
bool na_valid_id(const char *id);

#endif
