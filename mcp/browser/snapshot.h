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

/* Appends the current tab's URL, title and outline to out: of the whole
 * page, or with ref (NULL: none) of that element and what is inside it.
 * Refs are registered with b as they are written.  0 or -1 with e set
 * (ref unknown, stale, or not in the accessibility tree). */
int snapshot_take(struct browser *b, const struct br_cx *cx, const char *ref, size_t max_chars,
		  struct buf *out, struct err *e);

/* The node of nodes (the "nodes" array of an Accessibility.getFullAXTree
 * answer) for DOM node backend_id, borrowed; NULL when it has none. */
const json_t *snapshot_find(const json_t *nodes, int backend_id);

/* The rendering alone, for tests: the outline of root, one of nodes (NULL:
 * the document); ref_for (may be NULL) numbers a backend node id.  Returns
 * the number of nodes left out for the bound. */
size_t snapshot_render(const json_t *nodes, const json_t *root, size_t max_chars,
		       unsigned (*ref_for)(void *ud, int backend_id), void *ud, struct buf *out);

#endif
