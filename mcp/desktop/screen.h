/* mcp-desktop's one X connection: opening it, serialising every use of it,
 * grabbing the screen and reading the pointer.
 *
 * Tool handlers run on worker threads.  They share this one connection
 * (rather than one connection per call) because input state must outlive
 * a call: left_mouse_down and left_mouse_up come in separate calls, spare
 * keycodes stay bound between calls, and opening a connection costs round
 * trips that are slow under gVisor.  A mutex serialises every X request:
 * a handler brackets its X work with desk_screen_begin() and
 * desk_screen_end(), and never sleeps for long in between (waits and
 * settle delays happen outside). */
#ifndef CLOCHE_DESK_SCREEN_H
#define CLOCHE_DESK_SCREEN_H

#include "image.h"

#include "common/err.h"

struct desk_screen;
struct x11_input;

/* Opens display name (NULL: $DISPLAY), checks XTEST and the pixel format,
 * and installs Xlib error handlers (a lost connection logs and exits 1 so
 * the supervisor restarts us).  Returns the handle or NULL with e set. */
struct desk_screen *desk_screen_open(const char *name, struct err *e);

/* Releases held input, unbinds spare keycodes and closes.  NULL is fine. */
void desk_screen_close(struct desk_screen *s);

/* Locks the connection, reads pending X events (keymap and screen size
 * changes) and returns the input handle to queue events on. */
struct x11_input *desk_screen_begin(struct desk_screen *s);

/* Sends queued input (sleeping through keymap waits), syncs, unlocks. */
void desk_screen_end(struct desk_screen *s);

/* Sends queued input now and syncs, staying locked (between events that
 * need time between them, e.g. the steps of a drag). */
void desk_screen_flush(struct desk_screen *s);

/* The screen size in pixels (locked or not), as of the last events read. */
void desk_screen_size(struct desk_screen *s, int *w, int *h);

/* Reads pending X events (a new screen size, after a viewer's resize or
 * xrandr) without a round trip, then the size as desk_screen_size().
 * Not between begin and end (it takes the lock). */
void desk_screen_current_size(struct desk_screen *s, int *w, int *h);

/* Grabs the rectangle (x, y, w, h) of the screen into img (allocated
 * here; free with desk_image_free).  Between begin and end.  0 or -1
 * with e set. */
int desk_screen_grab(struct desk_screen *s, int x, int y, int w, int h, struct desk_image *img,
		     struct err *e);

/* The pointer's current picture and place (XFixes), allocated into c.
 * Between begin and end.  0, or -1 with e set (no XFixes, or no cursor). */
int desk_screen_cursor(struct desk_screen *s, struct desk_cursor *c, struct err *e);

/* The pointer position.  Between begin and end.  0 or -1 with e set. */
int desk_screen_pointer(struct desk_screen *s, int *x, int *y, struct err *e);

#endif
