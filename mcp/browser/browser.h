/* The state mcp-browser keeps about the one visible Chromium: its tabs (page
 * targets, each with a flattened DevTools session attached on first use),
 * which tab the tools act on, the element refs handed out by the last
 * snapshots, navigation progress and console messages.
 *
 * DevTools events update this state on the CDP reader thread; tool handlers
 * read it and send commands from their worker threads.  Refs ("e12") map to
 * DOM backend node ids and belong to one document of one tab: a navigation
 * or a tab switch starts a new epoch, and every ref from an earlier epoch is
 * then reported as stale.  Ref numbers only grow, so an old ref can never
 * silently name a different element of the new page. */
#ifndef CLOCHE_MCP_BROWSER_BROWSER_H
#define CLOCHE_MCP_BROWSER_BROWSER_H

#include "common/buf.h"
#include "common/err.h"
#include "mcp/browser/cdp.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct browser;

/* How a waiting call learns it was cancelled (NULL fn: never). */
struct br_cx {
	cdp_cancel_fn cancel;
	void *ud;
};

struct browser_opts {
	unsigned cdp_timeout_ms; /* one DevTools command */
	unsigned nav_timeout_ms; /* a navigation to its load event */
	const char *start_url;   /* what browser_close leaves open */
};

/* A browser without a connection yet; NULL when out of memory. */
struct browser *browser_new(const struct browser_opts *o);

/* The event callback to give cdp_new(), with the browser as its ud. */
void browser_on_event(void *ud, const char *session, const char *method, json_t *params);

/* Uses c (not owned) from now on: waits until DevTools answers and a page
 * target exists (bounded by timeout_ms), then attaches to it.  0 or -1. */
int browser_start(struct browser *b, struct cdp *c, unsigned timeout_ms, struct err *e);

/* True once Chromium's DevTools connection ended. */
bool browser_closed(struct browser *b);

void browser_free(struct browser *b);

/* Serializes tool calls: the visible browser has one mouse and one focus.
 * Waits (cancellably, bounded) for the lock; 0 or -1 with e set. */
int br_lock(struct browser *b, const struct br_cx *cx, struct err *e);
void br_unlock(struct browser *b);

/* Sends a command to the browser (page false) or to the current tab's
 * session (page true, attaching first when needed).  As cdp_call(). */
json_t *br_cdp(struct browser *b, const struct br_cx *cx, bool page, const char *method,
	       json_t *params, struct err *e);

/* Same, with a timeout of its own. */
json_t *br_cdp_t(struct browser *b, const struct br_cx *cx, bool page, const char *method,
		 json_t *params, unsigned timeout_ms, struct err *e);

/* The current tab's target id (copied into out, 64 bytes).  0 or -1. */
int br_target(struct browser *b, char out[64], struct err *e);

/* Current tab's URL and title from the last target info (into bounded
 * buffers; either may be NULL). */
void br_page_info(struct browser *b, char *url, size_t url_len, char *title, size_t title_len);

/* True when a JavaScript dialog (alert, confirm, prompt, beforeunload) is
 * open in the current tab; its type and message are copied out.  While one
 * is open the page runs no script, so most commands would only time out. */
bool br_dialog(struct browser *b, char *type, size_t type_len, char *msg, size_t msg_len);

/* --- navigation ---------------------------------------------------------- */

/* A token taken before an action that may navigate. */
uint64_t br_load_mark(struct browser *b);

/* Waits until the current tab finished a load that started after mark
 * (up to timeout_ms; 0 means the navigation timeout).  With only_if_started,
 * returns 0 at once when no navigation began after mark within a short
 * grace period (for clicks and key presses that may or may not navigate).
 * Returns 1 when the page is usable but still loading: its document was
 * parsed two seconds ago and images, frames or scripts are still coming. */
int br_wait_load(struct browser *b, const struct br_cx *cx, uint64_t mark, unsigned timeout_ms,
		 bool only_if_started, struct err *e);

/* Sleeps ms (cancellably): 0, or -1 when cancelled. */
int br_sleep(const struct br_cx *cx, unsigned ms, struct err *e);

/* --- refs ------------------------------------------------------------------ */

/* Starts a snapshot: when the tab or its document changed since the refs
 * were handed out, they all become stale. */
void br_refs_begin(struct browser *b);

/* An element as the walker numbers it: its number in its frame's world
 * (BR_KEY_ID bits), the frame's number above them. */
#define BR_KEY_FRAME_SHIFT 24
#define BR_KEY_ID ((1 << BR_KEY_FRAME_SHIFT) - 1)

/* The ref number for an element key in the current epoch (the same
 * element keeps its number across snapshots of one document).  0 when
 * the table is full. */
unsigned br_ref_for(struct browser *b, int key);

/* The number of a frame of the current tab (by its DevTools frame id)
 * for keys: the same while the epoch lasts; -1 when too many. */
int br_frame_number(struct browser *b, const char *frame_id);

/* The page walker (walk.js), in mcp-browser's isolated world of frame
 * number frame (0: the page), installed there when missing: evaluates
 * "walker.<call>" and answers Runtime.evaluate's result (by value or as a
 * handle), or NULL with e set (an exception included).  The session the
 * frame is reached through is copied into session ("": the tab's). */
json_t *br_walker(struct browser *b, const struct br_cx *cx, int frame, const char *call,
		  bool by_value, char session[64], struct err *e);

/* The walker's source (generated from walk.js). */
extern const char br_walk_js[];

/* The DOM node (DOM.describeNode's "node", a new reference, into *node)
 * of the element the walker numbers key, and the session of its frame
 * (copied into session).  0, 1 when the element is gone from the page,
 * or -1 with e set. */
int br_key_node(struct browser *b, const struct br_cx *cx, int key, char session[64], json_t **node,
		struct err *e);

/* A live element a ref names. */
struct br_el {
	char obj[128];	  /* its JavaScript handle, in the page's world of its frame */
	char session[64]; /* the DevTools session of its frame: "" the tab's */
	int backend;	  /* its DOM node id, in that session */
	int key;	  /* the walker's key */
};

/* Resolves "e12" to the live element.  Errors name the ref and say what
 * to do: unknown, stale (the page changed), or gone from the page. */
int br_ref_resolve(struct browser *b, const struct br_cx *cx, const char *ref, struct br_el *el,
		   struct err *e);

/* A DevTools command to session ("" or NULL: the current tab's), as
 * br_cdp(). */
json_t *br_cdp_s(struct browser *b, const struct br_cx *cx, const char *session, const char *method,
		 json_t *params, struct err *e);

/* Where the frame of session (a frame in a process of its own; "": the
 * tab's) starts in the tab's viewport, its owner scrolled into view: what
 * to add to a point inside it.  0 or -1. */
int br_frame_offset(struct browser *b, const struct br_cx *cx, const char *session, double *x,
		    double *y, struct err *e);

/* --- console and tabs -------------------------------------------------------- */

/* Appends the current tab's console messages, oldest first. */
int br_console(struct browser *b, struct buf *out, struct err *e);

/* Appends the current tab's network requests since its document was
 * loaded: "- [GET] url => [200] (Document)", oldest first. */
int br_network(struct browser *b, struct buf *out, struct err *e);

/* The input element of the file chooser the page opened last (intercepted:
 * no dialog shows), taken; 0 when none is open.  *multiple: it takes more
 * than one file. */
int br_file_chooser(struct browser *b, bool *multiple);

/* Appends one line per tab: "- 0: (current) [title](url)". */
int br_tabs_list(struct browser *b, struct buf *out, struct err *e);

/* Opens a tab on url (NULL: about:blank) and makes it current. */
int br_tab_new(struct browser *b, const struct br_cx *cx, const char *url, struct err *e);

/* Makes tab index current and brings it to the front. */
int br_tab_select(struct browser *b, const struct br_cx *cx, long long index, struct err *e);

/* Closes tab index (-1: the current one).  The last tab is replaced by a
 * fresh one first, so the browser window never goes away. */
int br_tab_close(struct browser *b, const struct br_cx *cx, long long index, struct err *e);

/* Closes every tab, leaving one on the start page. */
int br_reset(struct browser *b, const struct br_cx *cx, struct err *e);

#endif
