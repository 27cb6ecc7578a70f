/* X connection set-up and X error policy; see display.h.
 *
 * Xlib reports protocol errors through one process-wide handler, so the
 * "did that request fail" flag is necessarily global.  Losing the
 * connection is fatal by design: the init restarts cloche-vnc, which is
 * simpler and more reliable than reconnecting with every resource rebuilt. */
#include "display.h"

#include "common/log.h"

#include <X11/extensions/XInput2.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/XTest.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool g_x_error;
static Display *g_dpy; /* the main connection, whose errors g_x_error records */

static int on_x_error(Display *dpy, XErrorEvent *ev)
{
	char text[128];

	XGetErrorText(dpy, ev->error_code, text, sizeof(text));
	/* The handler is the process's: the clipboard's connection, on its
	 * own thread, must not flag errors the capture would take as its own. */
	if (dpy == g_dpy)
		g_x_error = true;
	log_debug("X protocol error", "{s:s, s:i, s:i, s:i}", "error", text, "request",
		  (int)ev->request_code, "minor", (int)ev->minor_code, "serial",
		  (int)ev->serial);
	return 0;
}

static int on_x_io_error(Display *dpy)
{
	(void)dpy;
	log_error("X connection lost; exiting so the supervisor restarts us", NULL);
	/* Xlib's state is unusable here and it would exit() anyway; _exit
	 * avoids running atexit handlers against a dead connection. */
	_exit(1);
}

void vnc_display_clear_error(void)
{
	g_x_error = false;
}

bool vnc_display_had_error(void)
{
	return g_x_error;
}

bool vnc_display_sync_failed(struct vnc_display *d)
{
	bool failed;

	XSync(d->dpy, False);
	failed = g_x_error;
	g_x_error = false;
	return failed;
}

int vnc_display_open(struct vnc_display *d, const char *name, struct err *e)
{
	int major, minor, ev, er;
	XWindowAttributes wa;
	Bool pixmaps;

	memset(d, 0, sizeof(*d));
	XSetErrorHandler(on_x_error);
	XSetIOErrorHandler(on_x_io_error);
	d->dpy = XOpenDisplay(name);
	if (!d->dpy)
		return err_set(e, 0, "cannot open X display `%s`", name);
	g_dpy = d->dpy;
	d->screen = DefaultScreen(d->dpy);
	d->root = RootWindow(d->dpy, d->screen);
	if (!XGetWindowAttributes(d->dpy, d->root, &wa))
		return err_set(e, 0, "cannot read the root window of `%s`", name);
	d->visual = wa.visual;
	d->depth = wa.depth;
	d->width = wa.width;
	d->height = wa.height;
	if (wa.depth != 24 || d->visual->class != TrueColor || d->visual->red_mask != 0xff0000 ||
	    d->visual->green_mask != 0x00ff00 || d->visual->blue_mask != 0x0000ff)
		return err_set(e, 0,
			       "display `%s` is depth %d with red mask %#lx; need 24-bit "
			       "TrueColor with red mask 0xff0000 (Xvfb -screen 0 WxHx24)",
			       name, wa.depth, d->visual->red_mask);
	if (!XDamageQueryExtension(d->dpy, &d->damage_event, &d->damage_error))
		return err_set(e, 0, "display `%s` lacks the DAMAGE extension", name);
	if (!XFixesQueryExtension(d->dpy, &d->fixes_event, &d->fixes_error))
		return err_set(e, 0, "display `%s` lacks the XFIXES extension", name);
	if (!XTestQueryExtension(d->dpy, &ev, &er, &major, &minor))
		return err_set(e, 0, "display `%s` lacks the XTEST extension", name);
	/* Both must be negotiated before their requests may be used. */
	major = 1, minor = 1;
	XDamageQueryVersion(d->dpy, &major, &minor);
	major = 4, minor = 0;
	XFixesQueryVersion(d->dpy, &major, &minor);
	if (major < 2)
		return err_set(e, 0, "display `%s` has XFIXES %d; need 2 or later", name, major);
	d->have_shm = XShmQueryVersion(d->dpy, &major, &minor, &pixmaps);
	/* Optional: without it the pointer is only known from viewers. */
	major = 2, minor = 2;
	if (!XQueryExtension(d->dpy, "XInputExtension", &d->xi_opcode, &ev, &er) ||
	    XIQueryVersion(d->dpy, &major, &minor) != Success || major < 2 ||
	    (major == 2 && minor < 2))
		d->xi_opcode = 0;
	return 0;
}

void vnc_display_close(struct vnc_display *d)
{
	if (d->dpy) {
		XCloseDisplay(d->dpy);
		d->dpy = NULL;
	}
}
