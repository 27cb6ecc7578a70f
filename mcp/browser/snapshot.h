/* The accessibility snapshot: Chromium's full AX tree of the current tab,
 * rendered as the YAML-like outline playwright-mcp users know
 *
 *	- heading "Sign in" [level=1] [ref=e3]
 *	- textbox "Email" [ref=e4]: ada@example.com
 *	- button "Next" [ref=e5]
 *
 * with a ref on every element line.  Nodes that carry no meaning of their
 * own (ignored nodes, unnamed generic containers, inline text boxes) are
 * left out and their children lifted up, and the text is bounded: past
 * max_chars the outline stops with a note saying how much was left out. */
#ifndef CLOCHE_MCP_BROWSER_SNAPSHOT_H
#define CLOCHE_MCP_BROWSER_SNAPSHOT_H

#include "common/buf.h"
#include "common/err.h"
#include "mcp/browser/browser.h"

#include <stddef.h>

/* Appends the current tab's URL, title and outline to out.  Refs are
 * registered with b as they are written.  0 or -1 with e set. */
int snapshot_take(struct browser *b, const struct br_cx *cx, size_t max_chars, struct buf *out,
		  struct err *e);

/* The rendering alone, for tests: nodes is the "nodes" array of an
 * Accessibility.getFullAXTree answer; ref_for (may be NULL) numbers a
 * backend node id.  Returns the number of nodes left out for the bound. */
size_t snapshot_render(const json_t *nodes, size_t max_chars,
		       unsigned (*ref_for)(void *ud, int backend_id), void *ud, struct buf *out);

#endif
