/* Desktop size changes with RandR; see resize.h.
 *
 * Setting a size: the X screen is resized first (a mode of that size made
 * for the output if there is none, the CRTC switched off when it would not
 * fit, RRSetScreenSize, then the CRTC set to the new mode, one XSync to
 * learn the verdict), and then followed like any other new root size.
 * Following: the capture makes a new framebuffer filled from the screen
 * before libvncserver is told (rfbNewFramebuffer), so the first frame a
 * viewer gets at the new size is already the real screen.  Top-level
 * windows that covered the whole old screen (Chromium, maximized without
 * a window manager) are made to cover the new one: nobody else would. */
#include "resize.h"

#include "size.h"

#include "appliance/x11/x11_randr.h"

#include "common/log.h"
#include "common/util.h"

#include <X11/extensions/Xrandr.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vnc_resize {
	struct vnc_resize_opts o;
	rfbScreenInfoPtr screen;
	struct vnc_size_limits lim;
	bool have_randr;
	bool revert;         /* the viewer whose size is in force left */
	int revert_w, revert_h; /* ... and the size to go back to */
	bool fatal;          /* a new size could not be followed */
	unsigned long made;  /* the RandR mode we added last (x11_randr) */
	struct asker {
		rfbClientPtr cl;
		int w, h;
	} *askers;           /* viewers connected that set a size, oldest first */
	size_t nask, cap_ask;
};

/* Resizes the X screen to w x h.  Returns 0, or -1 with e set. */
static int set_x_size(struct vnc_resize *r, int w, int h, struct err *e)
{
	if (!r->have_randr)
		return err_set(e, 0, "the display has no RandR 1.2");
	return x11_randr_set_size(r->o.d->dpy, r->o.d->root, w, h, &r->made, e);
}

/* Tells libvncserver about the new framebuffer.  rfbNewFramebuffer resets
 * the pixel format to its own default for 8-bit samples, so ours (Xvfb's
 * layout, see server.c) is put back and every viewer's translation made
 * again. */
static void new_framebuffer(struct vnc_resize *r, int w, int h, bool generic)
{
	rfbScreenInfoPtr sc = r->screen;
	rfbPixelFormat fmt = sc->serverFormat;
	int depth = sc->depth, bpp = sc->bitsPerPixel;
	rfbClientIteratorPtr it;
	rfbClientPtr cl;

	if (generic) {
		/* not a viewer's request: nobody's "resize failed" either */
		it = rfbGetClientIterator(sc);
		while ((cl = rfbClientIteratorNext(it))) {
			cl->requestedDesktopSizeChange = rfbExtDesktopSize_GenericChange;
			cl->lastDesktopSizeChangeError = rfbExtDesktopSize_Success;
		}
		rfbReleaseClientIterator(it);
	}
	rfbNewFramebuffer(sc, vnc_capture_framebuffer(r->o.cap), w, h, 8, 3, 4);
	sc->serverFormat = fmt;
	sc->depth = depth;
	sc->bitsPerPixel = bpp;
	it = rfbGetClientIterator(sc);
	while ((cl = rfbClientIteratorNext(it))) {
		sc->setTranslateFunction(cl);
		if (!cl->useNewFBSize) {
			/* it would read frames of the wrong size */
			log_info("closing a viewer that cannot follow a new desktop size", "{s:s}",
				 "addr", cl->host ? cl->host : "unknown");
			rfbCloseClient(cl);
		}
	}
	rfbReleaseClientIterator(it);
}

/* How far a window may fall short of the screen and still count as
 * filling it: Chromium's --window-size=1280,800 makes a 1279x799 window. */
#define FILL_SLACK 8

/* Windows that filled the old screen fill the new one, short by as much
 * as they were. */
static void fit_windows(struct vnc_resize *r, int ow, int oh, int w, int h)
{
	Display *dpy = r->o.d->dpy;
	Window root, parent, *kids = NULL;
	unsigned n = 0;

	if (!XQueryTree(dpy, r->o.d->root, &root, &parent, &kids, &n))
		return;
	for (unsigned i = 0; i < n; i++) {
		XWindowAttributes wa;
		int nw, nh;

		if (!XGetWindowAttributes(dpy, kids[i], &wa) || wa.override_redirect ||
		    wa.map_state != IsViewable || wa.x != 0 || wa.y != 0 || wa.width > ow ||
		    wa.height > oh || wa.width < ow - FILL_SLACK || wa.height < oh - FILL_SLACK)
			continue;
		nw = w - (ow - wa.width);
		nh = h - (oh - wa.height);
		if (nw > 0 && nh > 0)
			XMoveResizeWindow(dpy, kids[i], 0, 0, (unsigned)nw, (unsigned)nh);
	}
	if (kids)
		XFree(kids);
	vnc_display_sync_failed(r->o.d); /* a window gone meanwhile is fine */
}

/* Follows a root window of w x h.  Returns 0, or -1 with e set. */
static int follow(struct vnc_resize *r, int w, int h, bool generic, struct err *e)
{
	struct vnc_display *d = r->o.d;
	int ow = d->width, oh = d->height;
	char *old = NULL;

	if (vnc_capture_resize(r->o.cap, w, h, &old, e) == -1)
		return -1;
	d->width = w;
	d->height = h;
	new_framebuffer(r, w, h, generic);
	free(old);
	if (r->o.in)
		vnc_input_set_size(r->o.in, w, h);
	fit_windows(r, ow, oh, w, h);
	return 0;
}

/* Sets the X screen to w x h and follows it. */
static int resize_to(struct vnc_resize *r, int w, int h, bool generic, struct err *e)
{
	if (set_x_size(r, w, h, e) == -1)
		return -1;
	if (follow(r, w, h, generic, e) == -1) {
		r->fatal = true;
		return -1;
	}
	return 0;
}

static void drop_asker(struct vnc_resize *r, size_t i)
{
	memmove(&r->askers[i], &r->askers[i + 1], (r->nask - i - 1) * sizeof(r->askers[0]));
	r->nask--;
}

/* Records cl's size as the latest request. */
static void add_asker(struct vnc_resize *r, rfbClientPtr cl, int w, int h)
{
	for (size_t i = 0; i < r->nask; i++)
		if (r->askers[i].cl == cl) {
			drop_asker(r, i);
			break;
		}
	if (r->nask == r->cap_ask) {
		size_t cap = r->cap_ask ? r->cap_ask * 2 : 8;
		struct asker *more = realloc(r->askers, cap * sizeof(*more));

		if (!more)
			return; /* only the way back for this viewer is lost */
		r->askers = more;
		r->cap_ask = cap;
	}
	r->askers[r->nask++] = (struct asker){cl, w, h};
}

static int on_request(void *ctx, rfbClientPtr cl, int w, int h, int nscreens)
{
	struct vnc_resize *r = ctx;
	struct vnc_display *d = r->o.d;
	enum vnc_size_status st =
		vnc_size_verdict(r->o.enabled, cl->viewOnly, nscreens, w, h, &r->lim);
	uint64_t t0 = util_now_ms();
	struct err e = ERR_INIT;
	int ow = d->width, oh = d->height;

	if (st == VNC_SIZE_OK && (w != d->width || h != d->height) &&
	    resize_to(r, w, h, false, &e) == -1) {
		log_warn("desktop resize failed", "{s:i, s:i, s:s}", "width", w, "height", h,
			 "error", e.msg);
		st = VNC_SIZE_NO_RESOURCES;
	}
	log_info("desktop size requested", "{s:s, s:i, s:i, s:i, s:i, s:s, s:b, s:I}", "addr",
		 cl->host ? cl->host : "unknown", "width", w, "height", h, "from_width", ow,
		 "from_height", oh, "status", vnc_size_status_name(st), "view_only",
		 (int)cl->viewOnly, "ms", (json_int_t)(util_now_ms() - t0));
	if (st != VNC_SIZE_OK)
		return (int)st;
	add_asker(r, cl, w, h);
	r->revert = false;
	/* Unchanged: rfbNewFramebuffer did not run, so the answer must be
	 * asked for here (libvncserver only sends it on failure itself). */
	if (w == ow && h == oh)
		cl->newFBSizePending = TRUE;
	return VNC_SIZE_OK;
}

/* The viewer whose size is in force leaving hands the desktop to the
 * latest request of those still connected, or back to the default. */
static void on_gone(void *ctx, rfbClientPtr cl)
{
	struct vnc_resize *r = ctx;

	for (size_t i = 0; i < r->nask; i++) {
		if (r->askers[i].cl != cl)
			continue;
		drop_asker(r, i);
		if (i < r->nask)
			return; /* a later request is in force */
		r->revert_w = r->nask ? r->askers[r->nask - 1].w : r->o.def_w;
		r->revert_h = r->nask ? r->askers[r->nask - 1].h : r->o.def_h;
		/* Done from the loop, not inside libvncserver's client teardown. */
		r->revert = r->revert_w != r->o.d->width || r->revert_h != r->o.d->height;
		return;
	}
}

struct vnc_resize *vnc_resize_new(const struct vnc_resize_opts *o, struct err *e)
{
	struct vnc_resize *r = calloc(1, sizeof(*r));
	int max_w, max_h;

	if (!r) {
		err_set(e, ENOMEM, "resize");
		return NULL;
	}
	r->o = *o;
	r->screen = vnc_server_screen(o->srv);
	if (r->o.def_w <= 0 || r->o.def_h <= 0) {
		r->o.def_w = o->d->width;
		r->o.def_h = o->d->height;
	}
	max_w = o->d->width;
	max_h = o->d->height;
	if (x11_randr_max(o->d->dpy, o->d->root, &max_w, &max_h) == 0)
		r->have_randr = true;
	else
		log_warn("no RandR 1.2 on the display: its size cannot be changed", NULL);
	r->lim = vnc_size_limits_for(max_w, max_h);
	vnc_server_on_resize(o->srv, &(struct vnc_server_resize){on_request, on_gone, r});
	if (r->o.def_w != o->d->width || r->o.def_h != o->d->height) {
		struct err se = ERR_INIT;

		if (resize_to(r, r->o.def_w, r->o.def_h, true, &se) == -1) {
			if (r->fatal) {
				err_set(e, se.code, "%s", se.msg);
				vnc_resize_free(r);
				return NULL;
			}
			log_warn("cannot set the default desktop size; keeping the screen's",
				 "{s:i, s:i, s:s}", "width", r->o.def_w, "height", r->o.def_h,
				 "error", se.msg);
			r->o.def_w = o->d->width;
			r->o.def_h = o->d->height;
		}
	}
	log_info("desktop size", "{s:i, s:i, s:b, s:i, s:i, s:i, s:i}", "width", r->o.def_w,
		 "height", r->o.def_h, "viewers_may_resize", r->o.enabled, "min_width",
		 r->lim.min_w, "min_height", r->lim.min_h, "max_width", r->lim.max_w,
		 "max_height", r->lim.max_h);
	return r;
}

bool vnc_resize_handle_event(struct vnc_resize *r, XEvent *ev)
{
	struct err e = ERR_INIT;
	int w, h;

	if (ev->type != ConfigureNotify || ev->xconfigure.window != r->o.d->root)
		return false;
	if (r->have_randr)
		XRRUpdateConfiguration(ev); /* Xlib's idea of the screen size */
	/* Events queued during our own change carry sizes passed through on
	 * the way (CRTC off, then the screen): the root's size now is what
	 * counts. */
	{
		Window root;
		int x, y;
		unsigned uw, uh, bw, depth;

		if (!XGetGeometry(r->o.d->dpy, r->o.d->root, &root, &x, &y, &uw, &uh, &bw, &depth))
			return true;
		w = (int)uw;
		h = (int)uh;
	}
	if (w == r->o.d->width && h == r->o.d->height)
		return true; /* ours, already followed */
	log_info("the X screen changed size", "{s:i, s:i, s:i, s:i}", "width", w, "height", h,
		 "from_width", r->o.d->width, "from_height", r->o.d->height);
	if (follow(r, w, h, true, &e) == -1) {
		log_error("cannot follow the new screen size", "{s:s}", "error", e.msg);
		r->fatal = true;
	}
	return true;
}

int vnc_resize_timeout_ms(const struct vnc_resize *r)
{
	return r->revert || r->fatal ? 0 : -1;
}

int vnc_resize_run(struct vnc_resize *r, struct err *e)
{
	int w = r->revert_w, h = r->revert_h;

	if (r->fatal)
		return err_set(e, 0, "a new screen size could not be followed");
	if (!r->revert)
		return 0;
	r->revert = false;
	if (r->o.d->width == w && r->o.d->height == h)
		return 0;
	log_info("the viewer whose desktop size was in force left", "{s:i, s:i, s:b}", "width", w,
		 "height", h, "default", r->nask == 0);
	if (resize_to(r, w, h, true, e) == -1) {
		if (r->fatal)
			return -1;
		log_warn("cannot change the desktop size back", "{s:s}", "error", e->msg);
	}
	return 0;
}

void vnc_resize_free(struct vnc_resize *r)
{
	if (!r)
		return;
	free(r->askers);
	free(r);
}
