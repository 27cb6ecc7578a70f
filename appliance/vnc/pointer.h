/* Where the X pointer is, whoever moved it: mcp-desktop and xdotool move it
 * with XTest, other viewers through us, programs with XWarpPointer.  The
 * position goes to libvncserver (screen->cursorX/Y), which paints the
 * cursor there in the frames it sends, and button presses are reported so
 * that a click marker can be shown.
 *
 * XInput 2 raw motion and raw button events on the root window say that
 * something moved or clicked; they carry no screen position, so one
 * XQueryPointer follows (at most one per interval for motion, at once for
 * a press).  XWarpPointer raises no such event, so the position is also
 * polled: every interval for a second after a warp, twice a second
 * otherwise.  All of this only while a viewer is connected: an
 * unwatched desktop costs no wake-up at all. */
#ifndef CLOCHE_VNC_POINTER_H
#define CLOCHE_VNC_POINTER_H

#include "display.h"

#include "common/err.h"

#include <X11/Xlib.h>
#include <rfb/rfb.h>
#include <stdbool.h>
#include <stdint.h>

struct vnc_pointer;

/* Called for a press of button 1, 2 or 3 with the pointer's position. */
typedef void (*vnc_pointer_click_fn)(void *ctx, int x, int y, int button, uint64_t now_ms);

/* Prepares tracking on d's root for screen.  interval_ms is the least time
 * between two position queries while the pointer keeps moving.  Without
 * XInput 2 on the display the handle still works and tracks nothing (a
 * warning says so).  Returns the handle or NULL (out of memory) with e set;
 * d and screen must outlive it. */
struct vnc_pointer *vnc_pointer_new(struct vnc_display *d, rfbScreenInfoPtr screen,
				    int interval_ms, vnc_pointer_click_fn on_click, void *ctx,
				    struct err *e);

/* Starts (a viewer is connected) or stops following the pointer.
 * Starting also queries the position once. */
void vnc_pointer_set_active(struct vnc_pointer *p, bool active, uint64_t now_ms);

/* Consumes ev if it is one of the XInput 2 raw events selected here and
 * returns true; false for anything else. */
bool vnc_pointer_handle_event(struct vnc_pointer *p, XEvent *ev);

/* Milliseconds until vnc_pointer_run() has work, 0 if now, -1 if none. */
int vnc_pointer_timeout_ms(const struct vnc_pointer *p, uint64_t now_ms);

/* Queries the position if it is due, moves the screen's cursor there and
 * reports pending presses. */
void vnc_pointer_run(struct vnc_pointer *p, uint64_t now_ms);

/* Stops the event selection and frees the handle. */
void vnc_pointer_free(struct vnc_pointer *p);

#endif
