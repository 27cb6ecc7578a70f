/* The shared X connection; see screen.h.
 *
 * Grabs use MIT-SHM with one segment the size of the screen (made again
 * if the screen is resized), and plain XGetImage when the server has no
 * MIT-SHM.  Xlib's error handler is process-wide; it only counts errors,
 * and a grab checks the count around its own requests under the mutex. */
#include "screen.h"

#include "appliance/x11/x11_input.h"

#include "common/log.h"

#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xfixes.h>
#include <X11/extensions/XTest.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

/* Wait after binding spare keycodes.  Chromium recompiles its keymap on
 * every change; on a busy machine 60 ms (cloche-vnc's value, where a person
 * types) occasionally lost a character.  An agent's `type` binds a whole
 * burst at once, so the longer wait is paid once per burst. */
#define BIND_SETTLE_MS 150

struct desk_screen {
	pthread_mutex_t mu;
	Display *dpy;
	int screen;
	Window root;
	Visual *visual;
	_Atomic int width, height;
	bool have_shm;
	bool have_fixes; /* XFixes: the pointer's picture */
	XShmSegmentInfo shm;
	XImage *shm_img; /* full screen, NULL until the first grab */
	struct x11_input *in;
};

static atomic_uint g_x_errors;

static int on_x_error(Display *dpy, XErrorEvent *ev)
{
	char text[128];

	XGetErrorText(dpy, ev->error_code, text, sizeof(text));
	atomic_fetch_add(&g_x_errors, 1);
	log_debug("X protocol error", "{s:s, s:i, s:i}", "error", text, "request",
		  (int)ev->request_code, "minor", (int)ev->minor_code);
	return 0;
}

static int on_x_io_error(Display *dpy)
{
	(void)dpy;
	log_error("X connection lost; exiting so the supervisor restarts us", NULL);
	_exit(1);
}

static void shm_release(struct desk_screen *s)
{
	if (!s->shm_img)
		return;
	XShmDetach(s->dpy, &s->shm);
	XSync(s->dpy, False);
	XDestroyImage(s->shm_img);
	shmdt(s->shm.shmaddr);
	s->shm_img = NULL;
}

static int shm_ensure(struct desk_screen *s, struct err *e)
{
	int w = s->width, h = s->height;
	unsigned before;

	if (s->shm_img && s->shm_img->width == w && s->shm_img->height == h)
		return 0;
	shm_release(s);
	s->shm_img = XShmCreateImage(s->dpy, s->visual, 24, ZPixmap, NULL, &s->shm,
				     (unsigned)w, (unsigned)h);
	if (!s->shm_img)
		return err_set(e, 0, "XShmCreateImage %dx%d failed", w, h);
	s->shm.shmid = shmget(IPC_PRIVATE, (size_t)s->shm_img->bytes_per_line * (size_t)h,
			      IPC_CREAT | 0600);
	if (s->shm.shmid == -1) {
		XDestroyImage(s->shm_img);
		s->shm_img = NULL;
		return err_set(e, errno, "shmget");
	}
	s->shm.shmaddr = s->shm_img->data = shmat(s->shm.shmid, NULL, 0);
	/* Marked for removal now: it goes away with us even if we crash. */
	shmctl(s->shm.shmid, IPC_RMID, NULL);
	if (s->shm.shmaddr == (void *)-1) {
		s->shm_img->data = NULL;
		XDestroyImage(s->shm_img);
		s->shm_img = NULL;
		return err_set(e, errno, "shmat");
	}
	s->shm.readOnly = False;
	before = atomic_load(&g_x_errors);
	XShmAttach(s->dpy, &s->shm);
	XSync(s->dpy, False);
	if (atomic_load(&g_x_errors) != before) {
		shmdt(s->shm.shmaddr);
		s->shm_img->data = NULL;
		XDestroyImage(s->shm_img);
		s->shm_img = NULL;
		return err_set(e, 0, "the X server cannot attach our shared memory");
	}
	return 0;
}

/* Copies a 32-bit BGRX (red mask 0xff0000) rectangle into RGB. */
static void to_rgb(const XImage *xi, int x, int y, int w, int h, struct desk_image *img)
{
	for (int row = 0; row < h; row++) {
		const uint32_t *src =
			(const uint32_t *)(xi->data + (size_t)(y + row) * (size_t)xi->bytes_per_line) +
			x;
		unsigned char *dst = img->px + (size_t)row * (size_t)w * 3;

		for (int col = 0; col < w; col++) {
			uint32_t p = src[col];

			dst[0] = (unsigned char)(p >> 16);
			dst[1] = (unsigned char)(p >> 8);
			dst[2] = (unsigned char)p;
			dst += 3;
		}
	}
}

int desk_screen_grab(struct desk_screen *s, int x, int y, int w, int h, struct desk_image *img,
		     struct err *e)
{
	XImage *xi;
	unsigned before = atomic_load(&g_x_errors);

	if (x < 0 || y < 0 || w <= 0 || h <= 0 || x + w > s->width || y + h > s->height)
		return err_set(e, 0, "region %d,%d %dx%d is outside the screen %dx%d", x, y, w,
			       h, (int)s->width, (int)s->height);
	if (desk_image_alloc(img, w, h, e) == -1)
		return -1;
	if (s->have_shm) {
		if (shm_ensure(s, e) == -1) {
			log_warn("MIT-SHM unusable; grabbing with XGetImage", "{s:s}", "error", e->msg);
			s->have_shm = false;
		} else if (XShmGetImage(s->dpy, s->root, s->shm_img, 0, 0, AllPlanes) &&
			   atomic_load(&g_x_errors) == before && s->shm_img->bits_per_pixel == 32) {
			to_rgb(s->shm_img, x, y, w, h, img);
			return 0;
		} else {
			desk_image_free(img);
			return err_set(e, 0, "XShmGetImage failed");
		}
	}
	xi = XGetImage(s->dpy, s->root, x, y, (unsigned)w, (unsigned)h, AllPlanes, ZPixmap);
	if (!xi) {
		desk_image_free(img);
		return err_set(e, 0, "XGetImage failed");
	}
	if (xi->bits_per_pixel != 32) {
		XDestroyImage(xi);
		desk_image_free(img);
		return err_set(e, 0, "XGetImage gave %d bits per pixel; need 32", xi->bits_per_pixel);
	}
	to_rgb(xi, 0, 0, w, h, img);
	XDestroyImage(xi);
	return 0;
}

int desk_screen_cursor(struct desk_screen *s, struct desk_cursor *c, struct err *e)
{
	XFixesCursorImage *xc;
	size_t n;

	c->argb = NULL;
	c->w = c->h = 0;
	if (!s->have_fixes)
		return err_set(e, 0, "the display lacks XFixes");
	xc = XFixesGetCursorImage(s->dpy);
	if (!xc)
		return err_set(e, 0, "XFixesGetCursorImage failed");
	n = (size_t)xc->width * xc->height;
	if (n == 0 || xc->width > 256 || xc->height > 256) {
		XFree(xc);
		return err_set(e, 0, "cursor of %ux%u", (unsigned)xc->width, (unsigned)xc->height);
	}
	c->argb = malloc(n * sizeof(*c->argb));
	if (!c->argb) {
		XFree(xc);
		return err_set(e, ENOMEM, "cursor");
	}
	/* Xlib hands 32-bit pixels in longs. */
	for (size_t i = 0; i < n; i++)
		c->argb[i] = (uint32_t)xc->pixels[i];
	c->x = xc->x - xc->xhot;
	c->y = xc->y - xc->yhot;
	c->w = xc->width;
	c->h = xc->height;
	XFree(xc);
	return 0;
}

int desk_screen_pointer(struct desk_screen *s, int *x, int *y, struct err *e)
{
	Window root, child;
	int wx, wy;
	unsigned mask;

	if (!XQueryPointer(s->dpy, s->root, &root, &child, x, y, &wx, &wy, &mask))
		return err_set(e, 0, "the pointer is on another screen");
	return 0;
}

void desk_screen_size(struct desk_screen *s, int *w, int *h)
{
	*w = s->width;
	*h = s->height;
}

static void read_events(struct desk_screen *s)
{
	while (XPending(s->dpy)) {
		XEvent ev;

		XNextEvent(s->dpy, &ev);
		if (x11_input_handle_event(s->in, &ev))
			continue;
		if (ev.type == ConfigureNotify && ev.xconfigure.window == s->root) {
			s->width = ev.xconfigure.width;
			s->height = ev.xconfigure.height;
			x11_input_set_size(s->in, s->width, s->height);
			log_info("screen resized", "{s:i, s:i}", "width", s->width, "height",
				 s->height);
		}
	}
}

void desk_screen_current_size(struct desk_screen *s, int *w, int *h)
{
	pthread_mutex_lock(&s->mu);
	read_events(s);
	pthread_mutex_unlock(&s->mu);
	desk_screen_size(s, w, h);
}

struct x11_input *desk_screen_begin(struct desk_screen *s)
{
	pthread_mutex_lock(&s->mu);
	read_events(s);
	return s->in;
}

void desk_screen_flush(struct desk_screen *s)
{
	x11_input_settle(s->in);
}

void desk_screen_end(struct desk_screen *s)
{
	x11_input_settle(s->in);
	pthread_mutex_unlock(&s->mu);
}

struct desk_screen *desk_screen_open(const char *name, struct err *e)
{
	struct desk_screen *s = calloc(1, sizeof(*s));
	XWindowAttributes wa;
	int ev, er, major, minor;
	Bool pixmaps;

	if (!s) {
		err_set(e, ENOMEM, "screen");
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	XSetErrorHandler(on_x_error);
	XSetIOErrorHandler(on_x_io_error);
	s->dpy = XOpenDisplay(name);
	if (!s->dpy) {
		err_set(e, 0, "cannot open X display `%s`", name ? name : getenv("DISPLAY"));
		goto fail;
	}
	s->screen = DefaultScreen(s->dpy);
	s->root = RootWindow(s->dpy, s->screen);
	if (!XGetWindowAttributes(s->dpy, s->root, &wa)) {
		err_set(e, 0, "cannot read the root window");
		goto fail;
	}
	s->visual = wa.visual;
	s->width = wa.width;
	s->height = wa.height;
	if (wa.depth != 24 || s->visual->class != TrueColor || s->visual->red_mask != 0xff0000 ||
	    s->visual->green_mask != 0xff00 || s->visual->blue_mask != 0xff) {
		err_set(e, 0, "the display is depth %d with red mask %#lx; need 24-bit TrueColor "
			      "with red mask 0xff0000 (Xvfb -screen 0 WxHx24)",
			wa.depth, s->visual->red_mask);
		goto fail;
	}
	if (!XTestQueryExtension(s->dpy, &ev, &er, &major, &minor)) {
		err_set(e, 0, "the display lacks the XTEST extension");
		goto fail;
	}
	s->have_shm = XShmQueryVersion(s->dpy, &major, &minor, &pixmaps);
	s->have_fixes = XFixesQueryExtension(s->dpy, &ev, &er);
	if (s->have_fixes) {
		major = 4;
		minor = 0;
		XFixesQueryVersion(s->dpy, &major, &minor);
	} else {
		log_warn("the display lacks XFixes: screenshots cannot show the pointer", NULL);
	}
	/* Resizes (RandR) arrive as ConfigureNotify on the root. */
	XSelectInput(s->dpy, s->root, StructureNotifyMask);
	s->in = x11_input_new(s->dpy, s->screen, X11_SPARE_LOW, e);
	if (!s->in)
		goto fail;
	x11_input_set_settle_ms(s->in, BIND_SETTLE_MS);
	XSync(s->dpy, False);
	return s;
fail:
	desk_screen_close(s);
	return NULL;
}

void desk_screen_close(struct desk_screen *s)
{
	if (!s)
		return;
	if (s->dpy) {
		x11_input_free(s->in);
		shm_release(s);
		XCloseDisplay(s->dpy);
	}
	pthread_mutex_destroy(&s->mu);
	free(s);
}
