/* The sandbox lifecycle commands: acquire, list (ls), get, events, and
 * the actions on one lease (release, keepalive, hibernate, wake, fork).
 * Each handler takes the run's context, the arguments after the command
 * name and that name, and returns the process exit code (cli_http.h),
 * having printed the result or the error. */
#ifndef CLOCHE_CLI_SANDBOX_H
#define CLOCHE_CLI_SANDBOX_H
#include "cli/cli_args.h"
#include "cli/cli_http.h"

/* acquire [--template T] [--ttl S] [--wait S] ...: POST /sbv1/acquire,
 * waiting for the sandbox; 6 when the wait ran out (it is leased all the
 * same, and shown). */
int cli_sandbox_acquire(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* list [--state S] [--label K=V] [--template T] [--history] [--all]: the
 * sandboxes as a table, ended ones only when asked for. */
int cli_sandbox_list(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* get ID: one sandbox, its URLs when it has a token. */
int cli_sandbox_show(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* events ID: its state changes. */
int cli_sandbox_events(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* release ID... | keepalive ID [--ttl S] | hibernate ID | wake ID |
 * fork ID [--count N]: POST /sbv1/sandboxes/ID/<cmd>.  release goes on
 * through its ids after a failure and returns the first failure's code. */
int cli_sandbox_action(struct cli_ctx *c, struct cli_args *a, const char *cmd);

/* GET /sbv1/sandboxes/ID into *out (a new reference, the caller's in every
 * case).  Returns the exit code, the error printed. */
int cli_sandbox_get(const struct cli_ctx *c, const char *id, json_t **out);

#endif
