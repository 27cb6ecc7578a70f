/* The commands that hand out a way into a sandbox: vnc (the noVNC URL)
 * and mcp-config (the block an MCP client takes).  Both read the sandbox
 * (cli_sandbox_get) and print what its token opens; a sandbox without a
 * token (released, hibernated) is a conflict, exit code 5.  Handlers as
 * in cli_sandbox.h. */
#ifndef CLOCHE_CLI_ACCESS_H
#define CLOCHE_CLI_ACCESS_H
#include "cli/cli_args.h"
#include "cli/cli_http.h"

/* vnc ID: the noVNC URL with the sandbox token, on a line of its own. */
int cli_access_vnc(struct cli_ctx *c, struct cli_args *a, const char *cmd);
/* mcp-config ID: the mcpServers block (cli_mcp_config) as JSON. */
int cli_access_mcp_config(struct cli_ctx *c, struct cli_args *a, const char *cmd);

#endif
