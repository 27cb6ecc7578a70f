/* RandR screen sizes; see x11_randr.h.
 *
 * The steps: find the output whose CRTC is in use (Xvfb has one, `screen`),
 * find or make a mode of the new size for it, switch the CRTC off when its
 * mode would not fit the new screen, RRSetScreenSize, then put the CRTC on
 * the new mode, and sync once to learn the verdict. */
#include "x11_randr.h"

#include <X11/extensions/Xrandr.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static Display *g_watch; /* the connection whose errors count */
static int g_errors;

static int count_error(Display *dpy, XErrorEvent *ev)
{
	(void)ev;
	if (dpy == g_watch)
		g_errors++;
	return 0;
}

int x11_randr_max(Display *dpy, Window root, int *max_w, int *max_h)
{
	int ev, er, major = 1, minor = 2, min_w, min_h;

	if (!XRRQueryExtension(dpy, &ev, &er) || !XRRQueryVersion(dpy, &major, &minor) ||
	    (major == 1 && minor < 2) ||
	    !XRRGetScreenSizeRange(dpy, root, &min_w, &min_h, max_w, max_h))
		return -1;
	return 0;
}

/* The output to drive: the first whose CRTC is in use, else the first
 * that has a CRTC at all. */
static int pick_output(Display *dpy, XRRScreenResources *res, RROutput *out, RRCrtc *crtc)
{
	*out = None;
	*crtc = None;
	for (int i = 0; i < res->noutput; i++) {
		XRROutputInfo *oi = XRRGetOutputInfo(dpy, res, res->outputs[i]);
		bool in_use;

		if (!oi)
			continue;
		in_use = oi->crtc != None;
		if (in_use || (*out == None && oi->ncrtc > 0)) {
			*out = res->outputs[i];
			*crtc = in_use ? oi->crtc : oi->crtcs[0];
		}
		XRRFreeOutputInfo(oi);
		if (in_use)
			break;
	}
	return *out == None ? -1 : 0;
}

/* A mode of exactly w x h that out may use: one it has, or one made and
 * added here (*added set). */
static RRMode mode_for(Display *dpy, Window root, XRRScreenResources *res, RROutput out, int w,
		       int h, bool *added)
{
	XRROutputInfo *oi = XRRGetOutputInfo(dpy, res, out);
	XRRModeInfo mi = {0};
	char name[32];
	RRMode m = None;

	*added = false;
	for (int i = 0; oi && i < oi->nmode && m == None; i++)
		for (int j = 0; j < res->nmode; j++)
			if (res->modes[j].id == oi->modes[i] && (int)res->modes[j].width == w &&
			    (int)res->modes[j].height == h) {
				m = res->modes[j].id;
				break;
			}
	if (oi)
		XRRFreeOutputInfo(oi);
	if (m != None)
		return m;
	snprintf(name, sizeof(name), "%dx%d", w, h);
	mi.width = (unsigned)w;
	mi.height = (unsigned)h;
	mi.name = name;
	mi.nameLength = (unsigned)strlen(name);
	m = XRRCreateMode(dpy, root, &mi);
	if (m == None)
		return None;
	XRRAddOutputMode(dpy, out, m);
	*added = true;
	return m;
}

static int mm_of(int px)
{
	return (int)((double)px * 25.4 / 96.0 + 0.5);
}

int x11_randr_set_size(Display *dpy, Window root, int w, int h, unsigned long *made,
		       struct err *e)
{
	int (*old)(Display *, XErrorEvent *);
	XRRScreenResources *res;
	XRRCrtcInfo *ci;
	RROutput out;
	RRCrtc crtc;
	RRMode mode = None;
	bool added = false;
	int rc = 0;

	XSync(dpy, False); /* errors of earlier requests are not ours */
	old = XSetErrorHandler(count_error);
	g_watch = dpy;
	g_errors = 0;
	res = XRRGetScreenResourcesCurrent(dpy, root);
	if (!res) {
		rc = err_set(e, 0, "RandR screen resources unreadable");
		goto out;
	}
	if (pick_output(dpy, res, &out, &crtc) == -1) {
		rc = err_set(e, 0, "RandR shows no output with a CRTC");
		goto out;
	}
	mode = mode_for(dpy, root, res, out, w, h, &added);
	if (mode == None) {
		rc = err_set(e, 0, "RandR refused a %dx%d mode", w, h);
		goto out;
	}
	ci = XRRGetCrtcInfo(dpy, res, crtc);
	/* the server refuses a screen smaller than a CRTC showing on it */
	if (ci && ci->mode != None && (ci->x + (int)ci->width > w || ci->y + (int)ci->height > h))
		XRRSetCrtcConfig(dpy, res, crtc, CurrentTime, 0, 0, None, RR_Rotate_0, NULL, 0);
	if (ci)
		XRRFreeCrtcInfo(ci);
	XRRSetScreenSize(dpy, root, w, h, mm_of(w), mm_of(h));
	XRRSetCrtcConfig(dpy, res, crtc, CurrentTime, 0, 0, mode, RR_Rotate_0, &out, 1);
	XSync(dpy, False);
	if (g_errors) {
		rc = err_set(e, 0, "the X server refused a screen of %dx%d", w, h);
		if (added) { /* not left behind */
			XRRDeleteOutputMode(dpy, out, mode);
			XRRDestroyMode(dpy, mode);
		}
		goto out;
	}
	if (*made != None && *made != mode) {
		XRRDeleteOutputMode(dpy, out, *made);
		XRRDestroyMode(dpy, *made);
		XSync(dpy, False);
		*made = None;
	}
	if (added)
		*made = mode;
out:
	if (res)
		XRRFreeScreenResources(res);
	XSync(dpy, False);
	g_watch = NULL;
	XSetErrorHandler(old);
	return rc;
}
