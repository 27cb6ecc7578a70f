/* The browser_* tools (playwright-mcp's names and arguments), registered
 * with an MCP server and carried out on the visible Chromium. */
#ifndef CLOCHE_MCP_BROWSER_TOOLS_H
#define CLOCHE_MCP_BROWSER_TOOLS_H

#include "common/err.h"
#include "mcp/browser/browser.h"
#include "mcp/lib/mcp.h"

#include <stdbool.h>
#include <stddef.h>

struct tools;

struct tools_opts {
	size_t max_snapshot;       /* characters of one snapshot outline */
	bool snapshot_after_action; /* actions answer with the new page state */
	size_t max_result;         /* characters of a browser_evaluate answer */
};

/* Registers every tool with s; they act on b (not owned).  Returns the
 * handle that must outlive the server (tools_free() after it), or NULL
 * with e set. */
struct tools *tools_register(struct mcp_server *s, struct browser *b, const struct tools_opts *o,
			     struct err *e);

void tools_free(struct tools *t);

/* Reads a tool's element argument, which playwright-mcp renamed in 2026
 * (`ref` -> `target`, `startRef` -> `startTarget`, `endRef` -> `endTarget`):
 * name is the current key, alias the older one, and either is accepted.
 * *ref points into args, NULL when neither is given (and !required).
 * Returns 0, or -1 with e set as a bad request (http_status 400, so the
 * client gets JSON-RPC -32602) for a non-string, for both keys given with
 * different values, or for neither given when required (the message then
 * names `name`). */
int tools_element_arg(const json_t *args, const char *name, const char *alias, bool required,
		      const char **ref, struct err *e);

/* The input schema text of tool name, or NULL when there is none (for
 * tests). */
const char *tools_schema(const char *name);

/* Decodes Chromium's standard base64 (padded or not, no whitespace) into
 * out, which must hold len * 3 / 4 bytes; returns the decoded length or -1
 * for bad input (common/b64.h's strict rules). */
long tools_base64_decode(const char *in, size_t len, unsigned char *out);

#endif
