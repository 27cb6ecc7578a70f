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

/* Decodes standard base64 (no whitespace) into out, which must hold
 * len * 3 / 4 bytes; returns the decoded length or -1 for bad input. */
long tools_base64_decode(const char *in, size_t len, unsigned char *out);

#endif
