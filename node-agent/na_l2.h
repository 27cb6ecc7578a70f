/* L2: hibernated sandboxes offloaded to S3 and restored on any node
 * (docs/hibernation.md).  Objects under the node's S3 prefix P:
 *
 *   P templates/<name@digest>/stream.zst      full `btrfs send` of a template
 *   P templates/<name@digest>/manifest.json   its size, sha256 and UUID
 *   P sandboxes/<id>/<gen>/state/<file>.zst   runsc's image, file by file
 *   P sandboxes/<id>/<gen>/rootfs.send.zst    `btrfs send -p <template>`
 *   P sandboxes/<id>/<gen>/manifest.json      written last: sizes, sha256s,
 *                                              template and its UUID, limits
 *
 * A generation without its manifest is not whole and is never used; every
 * object is checked against the manifest's sha256 before it is used. */
#ifndef NA_L2_H
#define NA_L2_H

#include "common/err.h"

#include <jansson.h>

struct na_node;

/* Marks a hibernated sandbox "offloading" (409 otherwise; 503 when this
 * node has no S3). */
int na_node_offload_begin(struct na_node *n, const char *id, struct err *e);

/* Uploads the sandbox's generation (and its template, when S3 lacks it),
 * then removes the sandbox from this node.  {"id", "l2": {"prefix",
 * "generation", "bytes", "state_bytes", "rootfs_bytes", "upload_ms"}}, or
 * NULL with e (503 when S3 failed: the local copy is kept, hibernated). */
json_t *na_node_offload_run(struct na_node *n, const char *id, struct err *e);

/* Reserves id for a restore from S3 (409 when the node has it, 503 when
 * full or without S3).  body: {"l2": {"prefix", "generation"}, "memory_mb"?,
 * "cpus"?, "pids"?, "egress"?}, checked here. */
int na_node_restore_begin(struct na_node *n, const char *id, const json_t *body,
			  struct err *e);

/* Drops the reservation of _begin when no worker could be started. */
void na_node_restore_cancel(struct na_node *n, const char *id);

/* Downloads, checks and restores: the view (ready), or NULL with e (404
 * missing objects, 502 a corrupt one, ...) and nothing of it left here. */
json_t *na_node_restore_run(struct na_node *n, const char *id, const json_t *body,
			    struct err *e);

/* Deletes the objects under prefix (which must belong to sandbox id).
 * Returns how many, or -1. */
long long na_node_l2_delete(struct na_node *n, const char *id, const char *prefix,
			    struct err *e);

#endif
