/* The X CLIPBOARD selection as text, shared by mcp-desktop (clipboard_get,
 * clipboard_set) and cloche-vnc (the viewers' cut text): reading it from
 * whoever owns it, owning it with a text of ours, and optionally watching
 * for other programs' copies.
 *
 * X has no clipboard store: the owner of a selection serves every paste
 * itself.  So the module has its own X connection and a thread that
 * answers SelectionRequest events (TARGETS, UTF8_STRING, TEXT, STRING,
 * TIMESTAMP) for as long as our text is the selection's, i.e. until
 * another client copies something or we exit.  Every call is passed to
 * that thread, which does all the X work on its connection, so Xlib is
 * never used by two threads at once and the caller's own X connection is
 * never involved.  Texts are limited to `max` bytes both ways; INCR
 * transfers (what owners use for very large texts) are not read. */
#ifndef CLOCHE_X11_CLIP_H
#define CLOCHE_X11_CLIP_H

#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>

#define X11_CLIP_MAX (1u << 20)  /* default limit: 1 MiB */
#define X11_CLIP_TIMEOUT_MS 2000 /* how long an owner may take to answer */

/* The operator's switch, read by every program that uses the module. */
#define X11_CLIP_ENV "CLOCHE_CLIPBOARD"

enum {
	/* Watch CLIPBOARD (XFixes): when another client takes it, read its
	 * text and make it available through x11_clip_fd() / x11_clip_take(). */
	X11_CLIP_WATCH = 1 << 0,
	/* x11_clip_set() and x11_clip_offer() also own PRIMARY (what a middle
	 * click pastes). */
	X11_CLIP_PRIMARY = 1 << 1,
};

struct x11_clip;

/* Whether the environment allows clipboard exchange: CLOCHE_CLIPBOARD
 * unset, empty, on, true, yes or 1.  off, false, no or 0 turn it off; any
 * other value also turns it off, with a warning in the log. */
bool x11_clip_env_enabled(void);

/* Opens a connection to display name (NULL: $DISPLAY) and starts the
 * thread.  max: the text limit in bytes (0 means X11_CLIP_MAX); flags:
 * X11_CLIP_*.  Returns the handle or NULL with e set. */
struct x11_clip *x11_clip_open(const char *name, size_t max, unsigned flags, struct err *e);

/* Stops the thread and closes (the selection then loses our text, as with
 * any X program that exits).  NULL is fine. */
void x11_clip_close(struct x11_clip *c);

/* The text limit in bytes. */
size_t x11_clip_max(const struct x11_clip *c);

/* Makes text (len bytes of UTF-8) the clipboard's content and waits until
 * it is.  0, or -1 with e set (too long, or the server did not give us the
 * selection). */
int x11_clip_set(struct x11_clip *c, const char *text, size_t len, struct err *e);

/* The same without waiting, for an event loop that must not stall: the
 * text (copied) is set by the thread soon after; a failure is logged.  A
 * newer offer replaces one not yet applied.  0, or -1 with e set (too long
 * or out of memory). */
int x11_clip_offer(struct x11_clip *c, const char *text, size_t len, struct err *e);

/* Reads the clipboard's text into *out (malloc'ed, NUL-terminated, valid
 * UTF-8: invalid bytes become U+FFFD; the caller frees it) of *len bytes.
 * Returns 0, 1 when nobody owns the clipboard (*out is then ""), or -1 with
 * e set: the owner did not answer in time, offers no text, or the text is
 * over the limit. */
int x11_clip_get(struct x11_clip *c, char **out, size_t *len, struct err *e);

/* X11_CLIP_WATCH: a descriptor that turns readable when another client's
 * new clipboard text has been read (-1 without the flag). */
int x11_clip_fd(const struct x11_clip *c);

/* X11_CLIP_WATCH: the latest text another client copied, if one came since
 * the last call: 1 with *out (malloc'ed UTF-8, NUL-terminated, the caller
 * frees it) of *len bytes, else 0.  Our own texts never come back here,
 * and texts over the limit are dropped with a log line.  Never blocks. */
int x11_clip_take(struct x11_clip *c, char **out, size_t *len);

#endif
