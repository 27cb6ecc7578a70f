/* Hibernation on one node: the gate that keeps runsc from refusing a
 * checkpoint, checkpoint generations on the local disk (L1), wake, fork, and
 * what a restart finds of them (docs/hibernation.md).
 *
 * Layout under the pool:
 *   checkpoints/<id>/<gen>.part/   being made; never used, removed at start
 *   checkpoints/<id>/<gen>/        complete: state/ (runsc's image), rootfs
 *                                  (read-only snapshot), manifest.json
 * A generation is renamed into place only when everything in it is
 * written, and meta.json names it only after that. */
#ifndef NA_CKPT_H
#define NA_CKPT_H

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct na_node;

#define NA_FORK_MAX 8

/* Moves id from one of the states in `from` ("a|b") to `to` when it is
 * not busy (and, to "hibernating", not an unclaimed pool member).  0, or
 * -1 with 404 or 409. */
int na_node_move(struct na_node *n, const char *id, const char *from, const char *to,
		 struct err *e);

/* Quick halves (loop thread): check the state and mark the sandbox
 * (hibernating, waking, forking) so nothing else starts on it.  -1 with
 * 404 or 409.  _cancel undoes the mark when no worker could be started. */
int na_node_hibernate_begin(struct na_node *n, const char *id, struct err *e);
int na_node_wake_begin(struct na_node *n, const char *id, struct err *e);
void na_node_ckpt_cancel(struct na_node *n, const char *id);

/* Checkpoints a ready sandbox to a new generation and stops it: drain the
 * proxy, cut egress, wait out a TIME_WAIT the sandbox's own server caused,
 * check that no connection through its interface is open, snapshot the
 * rootfs, checkpoint.  The view (state "hibernated", "checkpoint"
 * figures), or NULL with e: 409 when connections stay open or 503 when the
 * sandbox does not answer (it keeps running, untouched); 500 when runsc
 * failed, after the sandbox was booted again from its rootfs snapshot (files
 * kept, processes restarted; "last_error" says so) or marked failed.
 * Worker thread, after _begin. */
json_t *na_node_hibernate_run(struct na_node *n, const char *id, struct err *e);

/* Restores a hibernated sandbox from its generation into a fresh netns pair
 * and a fresh snapshot of the generation's rootfs.  The view (ready,
 * "wake_ms"), or NULL with 500: the sandbox stays hibernated and can be
 * woken again.  Worker thread, after _begin. */
json_t *na_node_wake_run(struct na_node *n, const char *id, struct err *e);

/* Fork: body {"ids": ["sb-...", ...]} (1..NA_FORK_MAX new ids).  _begin
 * checks the parent (ready) and reserves the children's ids; _run
 * checkpoints the parent and restores it and every child from that one
 * checkpoint at once.  {"parent": view, "children": [views]}; children
 * that could not be made are removed and named in "failed".  Errors as for
 * hibernate; the parent always ends ready (or hibernated, if it alone could
 * not be restored, from where a wake brings it back). */
int na_node_fork_begin(struct na_node *n, const char *id, const json_t *body, struct err *e);
json_t *na_node_fork_run(struct na_node *n, const char *id, struct err *e);

/* pool/checkpoints/<id>/<gen><suffix>. */
void na_ckpt_gen_dir(const struct na_node *n, const char *id, int gen, const char *suffix,
		     char *out, size_t len);

/* True when generation gen of id is complete (manifest, read-only rootfs). */
bool na_ckpt_gen_complete(struct na_node *n, const char *id, int gen);

/* Removes every generation of id (subvolumes first, then the files). */
int na_ckpt_remove_all(struct na_node *n, const char *id, struct err *e);

/* At start, for a sandbox whose container is not running: meta says
 * hibernated and its generation is complete -> registered hibernated
 * (leftovers of a wake removed); meta says a checkpoint was under way ->
 * booted again from its rootfs (processes restarted) and registered ready
 * with last_error.  false: not ours to keep (the caller tears it down). */
bool na_ckpt_adopt(struct na_node *n, const char *id, const json_t *meta);

/* At start: unfinished generations (*.part) and checkpoints of sandboxes
 * this node no longer has are removed. */
void na_ckpt_sweep(struct na_node *n);

#endif
