/* The X screen's size through RandR 1.2, for cloche-vnc (a viewer's
 * SetDesktopSize) and cloche-xprobe (the default size at boot).
 *
 * Xvfb's RandR shrinks its screen and grows it back, but never past the
 * size Xvfb was started with (measured with Xvfb 21.1: RRSetScreenSize
 * beyond it is BadValue), and refuses a screen smaller than the CRTC
 * showing on it; a mode of the new size has to be made for its output.
 * This module does those steps in the order the server accepts. */
#ifndef CLOCHE_X11_RANDR_H
#define CLOCHE_X11_RANDR_H

#include "common/err.h"

#include <X11/Xlib.h>

/* Whether the display has RandR 1.2 or later; if so, the largest screen it
 * allows in *max_w, *max_h.  Returns 0, or -1 (no RandR 1.2). */
int x11_randr_max(Display *dpy, Window root, int *max_w, int *max_h);

/* Resizes the screen of root to w x h (96 dpi for its millimetres) and
 * shows a w x h mode on its output, made and added if there is none.
 * *made is the mode this process added last (None at first): it is
 * deleted once another takes its place, so modes do not pile up.  X errors
 * are caught here (a temporary handler for this connection) and
 * everything is synced.  Returns 0, or -1 with e set. */
int x11_randr_set_size(Display *dpy, Window root, int w, int h, unsigned long *made,
		       struct err *e);

#endif
