/* The sharing commands: share (a link to a sandbox's desktop for someone
 * without a key), shares (its links) and unshare (revoke one).  Handlers
 * as in cli_sandbox.h. */
#ifndef CLOCHE_CLI_SHARE_H
#define CLOCHE_CLI_SHARE_H
#include "cli/cli_args.h"
#include "cli/cli_http.h"

/* share ID [--mode view|control] [--ttl S] [--label L]: prints the link
 * (its id, mode, expiry and how to revoke it on stderr). */
int cli_share_create(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* shares ID: id, mode, state, expiry and label of each link. */
int cli_share_list(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* unshare ID SHARE: revokes the link; prints its id and new state. */
int cli_share_revoke(struct cli_ctx *c, struct cli_args *a, const char *cmd);

#endif
