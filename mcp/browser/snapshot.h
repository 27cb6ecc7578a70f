/* The page snapshot: the current tab's elements as the page walker reads
 * them (walk.js; Chromium's accessibility tree has the same shape and the
 * unit tests use it), rendered as a compact form of the YAML-like outline
 * playwright-mcp users know
 *
 *	- heading "Sign in" [level=1] [ref=e3]
 *	- paragraph: Use your account.
 *	- textbox "Email" [ref=e4]: ada@example.com
 *	- link "Help" [url=help.html#login] [ref=e5]
 *
 * Compact: nodes that carry nothing of their own (ignored nodes, unnamed
 * generic containers, inline text boxes, list markers) are left out with
 * their children lifted; text folds into its element; a link's address is
 * written relative to the page; and refs go only where an agent can act or
 * needs to point (controls, links, headings, landmarks, tables, anything
 * focusable, and anything whose inside a depth limit hid).
 *
 * Nothing is lost silently: the outline is numbered in lines, a bounded
 * answer says which lines it shows and how to go on (an offset, one part
 * by its ref and a depth, or browser_find), and the same page gives the
 * same lines and refs each time. */
#ifndef CLOCHE_MCP_BROWSER_SNAPSHOT_H
#define CLOCHE_MCP_BROWSER_SNAPSHOT_H

#include "common/buf.h"
#include "common/err.h"
#include "mcp/browser/browser.h"

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

/* What part of the outline to write, and how. */
struct snap_opts {
	const json_t *root;   /* a node of the tree, NULL: the document */
	size_t max_chars;     /* the bound of what is written */
	int depth;            /* levels shown below the root (1: its children), 0: all */
	size_t offset;        /* lines of the outline skipped before writing */
	const char *page_url; /* links are written relative to it; NULL: as they are */
	unsigned (*ref_for)(void *ud, int backend_id); /* numbers a node; may be NULL */
	void *ud;
};

/* What was written of the outline. */
struct snap_stats {
	size_t lines; /* lines in the whole outline (of root) */
	size_t shown; /* lines written, from line offset on */
};

/* Appends the outline to out (the rendering alone, also for tests):
 * nodes is the walker's "nodes" array, or the same of an
 * Accessibility.getFullAXTree answer. */
void snapshot_render(const json_t *nodes, const struct snap_opts *o, struct buf *out,
		     struct snap_stats *st);

/* What browser_find looks for: text (case-insensitive) or re. */
struct snap_query {
	const char *text;
	const regex_t *re;
	size_t limit; /* matches written at most */
};

/* Appends one line per element whose text matches q: the element that
 * holds it (with a ref when it has a DOM node) and the text around the
 * match.  Returns the number of matches (also those past the limit). */
size_t snapshot_search(const json_t *nodes, const struct snap_query *q, const char *page_url,
		       unsigned (*ref_for)(void *ud, int backend_id), void *ud, struct buf *out);

/* Appends url as seen from page (NULL: as it is): without the page's
 * origin, without its directory, down to "#fragment" on the page itself. */
void snapshot_rel_url(const char *page, const char *url, struct buf *out);

/* The node of nodes for DOM node backend_id, borrowed; NULL when none. */
const json_t *snapshot_find(const json_t *nodes, int backend_id);

/* Appends the current tab's URL, title and outline to out: of the whole
 * page, or with ref (NULL: none) of that element and what is inside it,
 * depth and offset as in snap_opts.  max_nodes (0: none) stops the page's
 * walk after that many nodes, and the answer then says the page goes on.
 * Refs are registered with b as they are written.  0 or -1 with e set
 * (ref unknown, stale, or not in the outline; an offset past the end). */
int snapshot_take(struct browser *b, const struct br_cx *cx, const char *ref, int depth,
		  size_t offset, size_t max_chars, size_t max_nodes, struct buf *out, struct err *e);

/* browser_find on the current tab: appends the page's URL, the matches of
 * q and what to do next.  0 or -1 with e set. */
int snapshot_search_take(struct browser *b, const struct br_cx *cx, const struct snap_query *q,
			 struct buf *out, struct err *e);

#endif
