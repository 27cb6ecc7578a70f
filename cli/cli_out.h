/* What the CLI prints: tables that fit a terminal, relative times, the
 * MCP client configuration block.  Pure functions over JSON, unit-tested. */
#ifndef CLI_OUT_H
#define CLI_OUT_H
#include "common/buf.h"

#include <jansson.h>

/* "in 9m", "3h ago", "now": the RFC 3339 time iso relative to now_ms
 * (epoch ms); "-" for NULL or unparsable. */
void cli_reltime(const char *iso, long long now_ms, char *out, size_t len);
/* Renders rows (an array of arrays of strings) under the header names as
 * left-aligned columns separated by two spaces. */
int cli_table(struct buf *b, const char *const *header, size_t ncol, json_t *rows);
/* The block an MCP client (Claude Desktop, Cursor, the inspector) takes for
 * the sandbox's three servers: {"mcpServers": {"cloche-shell": {"type":
 * "http", "url", "headers": {"Authorization": "Bearer <token>"}}, ...}}.
 * New reference, or NULL when the sandbox has no URLs or token. */
json_t *cli_mcp_config(const json_t *sandbox);
/* The process exit code for an HTTP status (see cli/main.c). */
int cli_exit_code(long status);

#endif
