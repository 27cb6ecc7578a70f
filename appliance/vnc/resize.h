/* The desktop's size: viewers' SetDesktopSize requests (noVNC's remote
 * resize) carried out with RandR on the X screen, and any new root window
 * size, whoever made it (a viewer, `xrandr` inside the sandbox), followed
 * without a restart: a new framebuffer, capture and MIT-SHM made again,
 * damage reset, pointer clamped, every viewer told the new size.
 *
 * Who may resize: only with the operator's switch on (--resize,
 * CLOCHE_VNC_RESIZE), and only viewers with control (not those logged in
 * with the view secret).  Two viewers asking for different sizes: the
 * last request wins.  When the last viewer whose request is in force
 * leaves, the desktop goes back to its default size, so agents find the
 * size they started with.
 *
 * Xvfb's RandR can shrink its screen and grow it back, but never past the
 * size Xvfb was started with: a sandbox that allows resizing starts Xvfb
 * at the largest size to allow and gives cloche-vnc the default (--size),
 * which it sets at start. */
#ifndef CLOCHE_VNC_RESIZE_H
#define CLOCHE_VNC_RESIZE_H

#include "capture.h"
#include "display.h"
#include "input.h"
#include "server.h"

#include "common/err.h"

#include <X11/Xlib.h>
#include <stdbool.h>

struct vnc_resize;

struct vnc_resize_opts {
	struct vnc_display *d;
	struct vnc_capture *cap;
	struct vnc_server *srv;
	struct vnc_input *in; /* NULL without input */
	bool enabled;         /* viewers may ask for a size */
	int def_w, def_h;     /* the default size; 0 = the screen's now */
};

/* Reads the X server's RandR range, installs the size hooks on the
 * server, and sets the screen to the default size if it differs.
 * Returns the handle or NULL with e set; everything in o must outlive it. */
struct vnc_resize *vnc_resize_new(const struct vnc_resize_opts *o, struct err *e);

/* Consumes ev if it is the root window's ConfigureNotify, following a new
 * size, and returns true; false for anything else. */
bool vnc_resize_handle_event(struct vnc_resize *r, XEvent *ev);

/* 0 when vnc_resize_run() has work now (going back to the default size),
 * -1 when it has none. */
int vnc_resize_timeout_ms(const struct vnc_resize *r);

/* Goes back to the default size once the last viewer that set one left.
 * Returns 0, or -1 with e set when the screen cannot be served any more
 * (out of memory for a new framebuffer). */
int vnc_resize_run(struct vnc_resize *r, struct err *e);

/* Frees the handle (the screen keeps its size). */
void vnc_resize_free(struct vnc_resize *r);

#endif
