/* The X CLIPBOARD selection of mcp-desktop's display, as text: reading it
 * from whoever owns it, and owning it with a text of ours.
 *
 * X has no clipboard store: the owner of a selection serves every paste
 * itself.  So the module has its own X connection and a thread that
 * answers SelectionRequest events (TARGETS, UTF8_STRING, TEXT, STRING,
 * TIMESTAMP) for as long as our text is the clipboard's, i.e. until
 * another client copies something or we exit.  get and set are passed to
 * that thread, which does all the X work on its connection, so Xlib is
 * never used by two threads at once.  Texts are limited to `max` bytes
 * both ways; INCR transfers (what owners use for very large texts) are not
 * read. */
#ifndef CLOCHE_DESK_CLIP_H
#define CLOCHE_DESK_CLIP_H

#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>

#define DESK_CLIP_MAX (1u << 20)  /* default limit: 1 MiB */
#define DESK_CLIP_TIMEOUT_MS 2000 /* how long an owner may take to answer */

struct desk_clip;

/* Opens a connection to display name (NULL: $DISPLAY) and starts the
 * thread.  max: the text limit in bytes (0 means DESK_CLIP_MAX).  Returns
 * the handle or NULL with e set. */
struct desk_clip *desk_clip_open(const char *name, size_t max, struct err *e);

/* Stops the thread and closes (the clipboard then loses our text, as with
 * any X program that exits).  NULL is fine. */
void desk_clip_close(struct desk_clip *c);

/* The text limit in bytes. */
size_t desk_clip_max(const struct desk_clip *c);

/* Makes text (len bytes of UTF-8) the clipboard's content.  0, or -1 with e
 * set (too long, or the server did not give us the selection). */
int desk_clip_set(struct desk_clip *c, const char *text, size_t len, struct err *e);

/* Reads the clipboard's text into *out (malloc'ed, NUL-terminated, valid
 * UTF-8: invalid bytes become U+FFFD; the caller frees it) of *len bytes.
 * Returns 0, 1 when nobody owns the clipboard (*out is then ""), or -1 with
 * e set: the owner did not answer in time, offers no text, or the text is
 * over the limit. */
int desk_clip_get(struct desk_clip *c, char **out, size_t *len, struct err *e);

/* Text helpers, exported for the unit tests. */

/* n bytes of UTF-8 (invalid bytes become U+FFFD) or of Latin-1 as valid
 * UTF-8 into *out (malloc'ed, NUL-terminated) of *len bytes.  0, or -1
 * when out of memory. */
int desk_clip_utf8(const char *s, size_t n, bool latin1, char **out, size_t *len);

/* n bytes of UTF-8 as Latin-1 (the STRING target): characters above U+00FF
 * and invalid bytes become `?`.  0, or -1 when out of memory. */
int desk_clip_latin1(const char *s, size_t n, char **out, size_t *len);

#endif
