/* XFixes cursor tracking; see cursor.h.
 *
 * XFixes gives ARGB with premultiplied alpha.  libvncserver wants the
 * colour in the server's pixel format plus, separately, an alpha channel
 * (what it blends with when it paints the cursor into a frame) and a 1-bit
 * mask.  The colours are un-premultiplied because libvncserver multiplies
 * by the alpha itself. */
#include "cursor.h"

#include "common/log.h"

#include <X11/extensions/Xfixes.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct vnc_cursor {
	struct vnc_display *d;
	rfbScreenInfoPtr screen;
	unsigned long serial;
	bool have_serial;
};

/* Builds an rfbCursor from an XFixes image.  Returns NULL when out of
 * memory. */
static rfbCursorPtr make_cursor(const XFixesCursorImage *xc)
{
	int w = xc->width, h = xc->height, row_bytes = (w + 7) / 8;
	rfbCursorPtr c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->width = (unsigned short)w;
	c->height = (unsigned short)h;
	c->xhot = (unsigned short)xc->xhot;
	c->yhot = (unsigned short)xc->yhot;
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
			unsigned long p = xc->pixels[(size_t)y * w + (size_t)x];
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
