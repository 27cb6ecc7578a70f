/* Recordings of a sandbox's screen and its action trace, node side
 * (docs/recording.md).  Start and stop go to the sandbox's cloche-rec over
 * its netns, with the sandbox's recorder secret; listing and downloads read
 * the files cloche-rec and the MCP servers wrote, from the host side of the
 * sandbox's rootfs, never following a link the guest may have planted. */
#ifndef CLOCHE_NA_REC_H
#define CLOCHE_NA_REC_H

#include "node-agent/na_node.h"

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>

/* POST /start: a new recording of sandbox id.  Its record, or NULL with e
 * set (404 no sandbox, 409 not running or one is already recording). */
json_t *na_node_rec_start(struct na_node *n, const char *id, struct err *e);

/* POST /stop of recording rec (NULL: whichever runs) with reason.  The
 * finished record, or NULL with e set (404 when it is not running). */
json_t *na_node_rec_stop(struct na_node *n, const char *id, const char *rec, const char *reason,
			 struct err *e);

/* Stops whatever records in a running sandbox before a checkpoint, so the
 * MP4 is whole in the rootfs the checkpoint keeps.  Never fails: a
 * sandbox without a recorder (older template) is fine. */
void na_node_rec_stop_quiet(struct na_node *n, const char *id, const char *reason);

/* {"recordings": [record...]} of sandbox id, oldest first. */
json_t *na_node_rec_list(struct na_node *n, const char *id, struct err *e);

/* Reads a recording's MP4 (rec) or, with rec NULL, the action trace (older
 * generation first) into a malloc'd buffer of at most max bytes.  0, or -1
 * with e set (404, 413, 409 while that recording is still being written). */
int na_node_rec_read(struct na_node *n, const char *id, const char *rec, size_t max, char **out,
		     size_t *len, struct err *e);

#endif
