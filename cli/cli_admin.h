/* The commands about the installation rather than one sandbox: nodes,
 * templates and API keys (keys create|list|revoke).  Listing nodes and
 * keys and making or revoking keys need an admin key (403, exit code 4,
 * otherwise).  Handlers as in cli_sandbox.h. */
#ifndef CLOCHE_CLI_ADMIN_H
#define CLOCHE_CLI_ADMIN_H
#include "cli/cli_args.h"
#include "cli/cli_http.h"

/* nodes: each node's state, sandboxes against its limit, free memory,
 * CPUs, warm pools and last heartbeat.  Takes no arguments. */
int cli_admin_nodes(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* templates: each template's ready warm sandboxes, versions and nodes.
 * Takes no arguments. */
int cli_admin_templates(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* keys create NAME [--role user|admin] | keys list | keys revoke ID.
 * create prints the new key on stdout, once, and says so on stderr. */
int cli_admin_keys(struct cli_ctx *c, struct cli_args *a, const char *cmd);

#endif
