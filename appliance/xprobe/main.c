/* cloche-xprobe: exits 0 when the X display shows a mapped top-level window
 * whose WM_CLASS matches, at least the given size, and (with --min-colours)
 * with that many distinct colours in it.  cloche-init uses it as Chromium's
 * readiness probe: a window that is mapped but not yet painted is one flat
 * colour, and a desktop is not ready until a person would see the browser.
 * Without a window manager top-level windows are the root window's children.
 *
 * With --set-size WxH it is instead Xvfb's readiness probe: it waits for the
 * display to accept connections, gives its screen the sandbox's default size
 * (Xvfb starts at the largest size a viewer may ask for, the only way RandR
 * can grow it later), and exits 0, so that nothing started after Xvfb sees
 * another size. */
#include "appliance/x11/x11_randr.h"
#include "common/version.h"

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int quiet_errors(Display *d, XErrorEvent *ev)
{
	(void)d;
	(void)ev; /* windows vanish while we look at them: not an error here */
	return 0;
}

/* Distinct colours in the window, counted on a sample of its pixels with 4
 * bits per channel so that anti-aliasing noise does not count. */
static int colours(Display *d, const XWindowAttributes *a)
{
	static unsigned char seen[4096];
	/* Read from the root window, clipped to the screen: reading a window
	 * that reaches off screen is an X error. */
	int x0 = a->x < 0 ? 0 : a->x, y0 = a->y < 0 ? 0 : a->y;
	int width = a->x + a->width > DisplayWidth(d, 0) ? DisplayWidth(d, 0) - x0 : a->x + a->width - x0;
	int height = a->y + a->height > DisplayHeight(d, 0) ? DisplayHeight(d, 0) - y0 : a->y + a->height - y0;
	XImage *img;
	int n = 0;

	if (width <= 0 || height <= 0)
		return 0;
	img = XGetImage(d, DefaultRootWindow(d), x0, y0, (unsigned)width, (unsigned)height, AllPlanes, ZPixmap);
	if (!img)
		return 0;
	memset(seen, 0, sizeof(seen));
	for (int y = 0; y < height; y += 3)
		for (int x = (y / 3) % 5; x < width; x += 5) {
			unsigned long p = XGetPixel(img, x, y);
			unsigned k = (unsigned)(((p >> 20) & 0xf) << 8 | ((p >> 12) & 0xf) << 4 | ((p >> 4) & 0xf));
			if (!seen[k]) {
				seen[k] = 1;
				n++;
			}
		}
	XDestroyImage(img);
	return n;
}

static int min_colours;

static int matches(Display *d, Window w, const char *cls, int min_w, int min_h, int verbose)
{
	XWindowAttributes a;
	XClassHint hint = {NULL, NULL};
	int ok = 0;

	if (!XGetWindowAttributes(d, w, &a) || a.map_state != IsViewable)
		return 0;
	if (XGetClassHint(d, w, &hint)) {
		ok = (!cls || (hint.res_class && strcasecmp(hint.res_class, cls) == 0) ||
		      (hint.res_name && strcasecmp(hint.res_name, cls) == 0)) &&
		     a.width >= min_w && a.height >= min_h;
		if (ok && min_colours > 0)
			ok = colours(d, &a) >= min_colours;
		if (verbose)
			printf("{\"window\":%lu,\"class\":\"%s\",\"name\":\"%s\",\"x\":%d,\"y\":%d,"
			       "\"width\":%d,\"height\":%d}\n",
			       (unsigned long)w, hint.res_class ? hint.res_class : "",
			       hint.res_name ? hint.res_name : "", a.x, a.y, a.width, a.height);
		XFree(hint.res_name);
		XFree(hint.res_class);
	}
	return ok;
}

/* Waits up to wait_ms for the display, then sets its size to spec (WxH).
 * 0 once the display is up (a size it cannot take is reported, not fatal:
 * the desktop then keeps Xvfb's own), 1 if it never came up, 2 for a bad
 * spec. */
static int set_size(const char *display, const char *spec, int wait_ms)
{
	struct timespec pause = {0, 20 * 1000000};
	unsigned long made = None;
	struct err e = ERR_INIT;
	int w, h, max_w, max_h;
	char tail;
	Display *d;

	if (sscanf(spec, "%dx%d%c", &w, &h, &tail) != 2 || w < 1 || h < 1) {
		fprintf(stderr, "cloche-xprobe: --set-size `%s` is not WxH\n", spec);
		return 2;
	}
	for (int waited = 0; !(d = XOpenDisplay(display)); waited += 20) {
		if (waited >= wait_ms) {
			fprintf(stderr, "cloche-xprobe: cannot open display `%s`\n",
				display ? display : "$DISPLAY");
			return 1;
		}
		nanosleep(&pause, NULL);
	}
	if (DisplayWidth(d, 0) == w && DisplayHeight(d, 0) == h) {
		XCloseDisplay(d);
		return 0;
	}
	if (x11_randr_max(d, DefaultRootWindow(d), &max_w, &max_h) == -1)
		fprintf(stderr, "cloche-xprobe: no RandR 1.2: the screen stays %dx%d\n",
			DisplayWidth(d, 0), DisplayHeight(d, 0));
	else if (x11_randr_set_size(d, DefaultRootWindow(d), w, h, &made, &e) == -1)
		fprintf(stderr, "cloche-xprobe: %s (largest %dx%d): the screen stays %dx%d\n", e.msg,
			max_w, max_h, DisplayWidth(d, 0), DisplayHeight(d, 0));
	XCloseDisplay(d);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"display", required_argument, NULL, 'd'}, {"class", required_argument, NULL, 'c'},
		{"min-width", required_argument, NULL, 'w'}, {"min-height", required_argument, NULL, 'h'},
		{"min-colours", required_argument, NULL, 'n'}, {"list", no_argument, NULL, 'l'}, {"help", no_argument, NULL, 'H'},
		{"set-size", required_argument, NULL, 's'}, {"wait-ms", required_argument, NULL, 'W'},
		{"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0},
	};
	const char *display = NULL, *cls = NULL, *size = NULL;
	int min_w = 1, min_h = 1, list = 0, c, found = 0, wait_ms = 4000;
	Window root, parent, *kids = NULL;
	unsigned n = 0;
	Display *d;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': display = optarg; break;
		case 'c': cls = optarg; break;
		case 'w': min_w = atoi(optarg); break;
		case 'h': min_h = atoi(optarg); break;
		case 'n': min_colours = atoi(optarg); break;
		case 'l': list = 1; break;
		case 's': size = optarg; break;
		case 'W': wait_ms = atoi(optarg); break;
		case 'H':
			printf("usage: cloche-xprobe [--display :0] [--class NAME] [--min-width N] "
			       "[--min-height N] [--min-colours N] [--list]\n"
			       "       cloche-xprobe [--display :0] --set-size WxH [--wait-ms MS]\n"
			       "       cloche-xprobe --version\n"
			       "Exit 0 when a matching window is mapped (and painted with at least N colours);\n"
			       "or, with --set-size, once the display is up (waiting up to MS ms, default\n"
			       "4000) and its screen was given that size (RandR).\n");
			return 0;
		case 'V':
			version_print("cloche-xprobe");
			return 0;
		default: return 2;
		}
	}
	if (size)
		return set_size(display, size, wait_ms);
	d = XOpenDisplay(display);
	if (!d) {
		fprintf(stderr, "cloche-xprobe: cannot open display `%s`\n", display ? display : "$DISPLAY");
		return 1;
	}
	XSetErrorHandler(quiet_errors);
	if (XQueryTree(d, DefaultRootWindow(d), &root, &parent, &kids, &n)) {
		for (unsigned i = 0; i < n; i++)
			found |= matches(d, kids[i], cls, min_w, min_h, list);
		XFree(kids);
	}
	XCloseDisplay(d);
	return found ? 0 : 1;
}
