/* Cursor shape: follows the X cursor with XFixes and hands every new shape
 * to libvncserver, which paints it into the frames it sends at the
 * pointer's position (pointer.c says where; server.c why no viewer gets
 * the shape to draw itself).  The X framebuffer never contains the
 * cursor. */
#ifndef CLOCHE_VNC_CURSOR_H
#define CLOCHE_VNC_CURSOR_H

#include "display.h"

#include <X11/Xlib.h>
#include <rfb/rfb.h>
#include <stdbool.h>

struct vnc_cursor;

/* Subscribes to cursor changes on d's root and sets the current shape on
 * screen.  Returns the handle or NULL (out of memory) with e set.  d and
 * screen must outlive it. */
struct vnc_cursor *vnc_cursor_new(struct vnc_display *d, rfbScreenInfoPtr screen,
				  struct err *e);

/* Consumes ev if it is an XFixes cursor notification (updating the shape)
 * and returns true; false for anything else. */
bool vnc_cursor_handle_event(struct vnc_cursor *cur, const XEvent *ev);

/* Frees the handle.  The last shape stays owned by the screen, which frees
 * it in rfbScreenCleanup(). */
void vnc_cursor_free(struct vnc_cursor *cur);

#endif
