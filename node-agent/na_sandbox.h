/* Sandbox lifecycle on one node: the registry of sandboxes, create (snapshot
 * -> netns -> bundle -> runsc run -> health 200), idempotent destroy,
 * re-adoption after a restart, and the JSON views the API serves.
 *
 * The registry is guarded by one mutex; the slow work (create, destroy)
 * runs on the caller's thread without holding it, so the HTTP loop calls the
 * quick functions itself and hands the slow ones to worker threads. */
#ifndef NA_SANDBOX_H
#define NA_SANDBOX_H

#include "node-agent/na_spec.h"

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>

struct na_node;

struct na_node_opts {
	const char *pool;          /* btrfs pool root, e.g. /var/lib/cloche */
	const char *runsc_root;    /* runsc --root */
	const char *template_name; /* default template */
};

/* Creates the node (copies opts) and makes pool/sandboxes and the runsc
 * root.  NULL with e set. */
struct na_node *na_node_new(const struct na_node_opts *o, struct err *e);

/* Frees the registry; running sandboxes are left running.  NULL is fine. */
void na_node_free(struct na_node *n);

/* Scans pool/sandboxes: directories with meta.json whose container is running
 * are adopted as ready; everything else there is torn down.  Logs each
 * decision.  Blocking; call before serving. */
void na_node_adopt(struct na_node *n);

/* First, quick half of create: validates the request (id?, template?,
 * memory_mb?, cpus?, pids? of req), resolves the template and reserves the
 * id in state "starting".  On success writes the id into id_out (>= 32
 * bytes).  -1 with e (and its http_status: 400, 404 unknown template, 409 id
 * taken) otherwise. */
int na_node_create_begin(struct na_node *n, const json_t *req, char *id_out, struct err *e);

/* Slow half: builds and boots the reserved sandbox and waits until its health
 * answers 200.  On failure everything made is removed and so is the
 * registry entry.  0 or -1 with e set.  Worker thread. */
int na_node_create_run(struct na_node *n, const char *id, struct err *e);

/* Destroys sandbox id: TERM, wait, delete, netns, subvolume, directory.
 * Idempotent: a sandbox only partly present is cleaned up.  Fails with 404
 * when the id is neither registered nor on disk, 409 while it is starting.
 * 0 or -1.  Worker thread. */
int na_node_destroy(struct na_node *n, const char *id, struct err *e);

/* JSON views (new references, NULL when absent). */
json_t *na_node_get_json(struct na_node *n, const char *id);
json_t *na_node_list_json(struct na_node *n);
json_t *na_node_capacity_json(struct na_node *n);

/* True when id is a well-formed sandbox id: 1-31 of a-z, 0-9, '-', not
 * starting with '-'. */
bool na_valid_id(const char *id);

#endif
