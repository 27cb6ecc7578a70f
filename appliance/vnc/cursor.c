/* XFixes cursor tracking; see cursor.h.
 *
 * XFixes gives ARGB with premultiplied alpha.  libvncserver wants the
 * colour in the server's pixel format plus, separately, an alpha channel
 * (used when it paints the cursor into the frame itself) and a 1-bit mask
 * (sent to viewers with the RichCursor pseudo-encoding).  The colours are
 * un-premultiplied so that a viewer which only has the mask does not show
 * darkened edges. */
#include "cursor.h"

#include "common/log.h"

#include <X11/extensions/Xfixes.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* libvncserver sends a cursor shape in one update buffer of UPDATE_BUF_SIZE
 * bytes; a larger shape makes the send fail.  Keep a margin for headers. */
#define CURSOR_MAX_BYTES (UPDATE_BUF_SIZE - 512)

struct vnc_cursor {
	struct vnc_display *d;
	rfbScreenInfoPtr screen;
	unsigned long serial;
	bool have_serial;
};

static size_t shape_bytes(int w, int h)
{
	return (size_t)w * (size_t)h * 4 + (size_t)((w + 7) / 8) * (size_t)h;
}

/* Builds an rfbCursor from an XFixes image, shrinking it by whole factors
 * if it is too big to send.  Returns NULL when out of memory. */
static rfbCursorPtr make_cursor(const XFixesCursorImage *xc)
{
	int step = 1, w, h, row_bytes;
	rfbCursorPtr c;

	while (shape_bytes((xc->width + step - 1) / step, (xc->height + step - 1) / step) >
	       CURSOR_MAX_BYTES)
		step *= 2;
	w = (xc->width + step - 1) / step;
	h = (xc->height + step - 1) / step;
	row_bytes = (w + 7) / 8;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->width = (unsigned short)w;
	c->height = (unsigned short)h;
	c->xhot = (unsigned short)(xc->xhot / step);
	c->yhot = (unsigned short)(xc->yhot / step);
	c->richSource = calloc((size_t)w * (size_t)h, 4);
	c->alphaSource = calloc((size_t)w * (size_t)h, 1);
	c->mask = calloc((size_t)row_bytes * (size_t)h, 1);
	/* Freed by libvncserver when the cursor is replaced or at cleanup. */
	c->cleanup = TRUE;
	c->cleanupRichSource = TRUE;
	c->cleanupMask = TRUE;
	c->cleanupSource = TRUE;
	if (!c->richSource || !c->alphaSource || !c->mask) {
		rfbFreeCursor(c);
		return NULL;
	}
	/* For viewers limited to two-colour cursors: white on black. */
	c->foreRed = c->foreGreen = c->foreBlue = 0xffff;
	c->backRed = c->backGreen = c->backBlue = 0;
	c->alphaPreMultiplied = FALSE;
	for (int y = 0; y < h; y++) {
		for (int x = 0; x < w; x++) {
			unsigned long p = xc->pixels[(size_t)(y * step) * xc->width +
						     (size_t)(x * step)];
			uint32_t a = (uint32_t)(p >> 24) & 0xff;
			uint32_t r = (uint32_t)(p >> 16) & 0xff;
			uint32_t g = (uint32_t)(p >> 8) & 0xff;
			uint32_t b = (uint32_t)p & 0xff;
			uint32_t px;

			if (a != 0 && a != 255) {
				r = r * 255 / a > 255 ? 255 : r * 255 / a;
				g = g * 255 / a > 255 ? 255 : g * 255 / a;
				b = b * 255 / a > 255 ? 255 : b * 255 / a;
			}
			px = r << 16 | g << 8 | b;
			memcpy(c->richSource + ((size_t)y * w + x) * 4, &px, 4);
			c->alphaSource[(size_t)y * w + x] = (unsigned char)a;
			if (a >= 128)
				c->mask[(size_t)y * row_bytes + x / 8] |= (unsigned char)(0x80 >> (x % 8));
		}
	}
	return c;
}

/* Reads the current cursor and installs it unless it is the one already
 * shown. */
static void update(struct vnc_cursor *cur)
{
	XFixesCursorImage *xc = XFixesGetCursorImage(cur->d->dpy);
	rfbCursorPtr c;

	if (!xc) {
		log_warn("cannot read the X cursor image", NULL);
		return;
	}
	if (cur->have_serial && xc->cursor_serial == cur->serial) {
		XFree(xc);
		return;
	}
	if (xc->width == 0 || xc->height == 0) {
		XFree(xc);
		return;
	}
	c = make_cursor(xc);
	if (!c) {
		log_warn("out of memory for the cursor shape", NULL);
		XFree(xc);
		return;
	}
	cur->serial = xc->cursor_serial;
	cur->have_serial = true;
	log_debug("cursor changed", "{s:i, s:i, s:i, s:i, s:s}", "width", xc->width, "height",
		  xc->height, "xhot", xc->xhot, "yhot", xc->yhot, "name",
		  xc->name ? xc->name : "");
	XFree(xc);
	rfbSetCursor(cur->screen, c);
}

struct vnc_cursor *vnc_cursor_new(struct vnc_display *d, rfbScreenInfoPtr screen, struct err *e)
{
	struct vnc_cursor *cur = calloc(1, sizeof(*cur));

	if (!cur) {
		err_set(e, ENOMEM, "cursor");
		return NULL;
	}
	cur->d = d;
	cur->screen = screen;
	XFixesSelectCursorInput(d->dpy, d->root, XFixesDisplayCursorNotifyMask);
	update(cur);
	return cur;
}

bool vnc_cursor_handle_event(struct vnc_cursor *cur, const XEvent *ev)
{
	if (ev->type != cur->d->fixes_event + XFixesCursorNotify)
		return false;
	update(cur);
	return true;
}

void vnc_cursor_free(struct vnc_cursor *cur)
{
	free(cur);
}
