/* Damage-driven screen capture; see capture.h.
 *
 * One grab cycle: take the accumulated damage from the server (which also
 * resets it, so anything drawn afterwards raises a new DamageNotify), turn
 * its rectangles into a bitmap of hinted 32x32 tiles, fetch the pixels of
 * the hinted area with as few XShmGetImage round trips as is sensible,
 * compare each hinted tile with the framebuffer, copy the ones that differ
 * and mark them, merged into horizontal runs, as modified. */
#include "capture.h"

#include "common/log.h"
#include "common/util.h"

#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <time.h>

#define TILE 32
/* More separate grabs than this and one bounding-box grab is cheaper. */
#define MAX_SPANS 16

struct vnc_capture {
	struct vnc_display *d;
	rfbScreenInfoPtr screen;
	char *fb;
	int width, height, stride;
	int tiles_x, tiles_y;
	uint8_t *hint;    /* tiles the damage touched, one byte a tile */
	uint8_t *changed; /* tiles whose pixels differed in this cycle */
	Damage damage;
	XserverRegion scratch; /* receives the damage on each subtract */
	XShmSegmentInfo shm;
	bool shm_attached;
	bool active;    /* a viewer is connected */
	bool damaged;   /* a DamageNotify arrived and was not read yet */
	bool scheduled; /* a grab is due at `due` */
	int frame_ms;
	uint64_t due, last_grab;
	struct {
		uint64_t cycles, grabs, grab_pixels, grab_ns, cmp_ns;
		uint64_t tiles_cmp, tiles_changed;
	} st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sets up a SysV segment the size of the screen and attaches it on both
 * sides.  Failure is not an error: the capture falls back to XGetImage
 * (e.g. an X server that cannot map our segment). */
static void shm_setup(struct vnc_capture *c)
{
	size_t size = (size_t)c->stride * (size_t)c->height;

	if (!c->d->have_shm)
		return;
	c->shm.shmid = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
	if (c->shm.shmid == -1) {
		log_warn("MIT-SHM unavailable, using XGetImage", "{s:s, s:s}", "step", "shmget",
			 "error", strerror(errno));
		return;
	}
	c->shm.shmaddr = shmat(c->shm.shmid, NULL, 0);
	if (c->shm.shmaddr == (char *)-1) {
		log_warn("MIT-SHM unavailable, using XGetImage", "{s:s, s:s}", "step", "shmat",
			 "error", strerror(errno));
		shmctl(c->shm.shmid, IPC_RMID, NULL);
		c->shm.shmaddr = NULL;
		return;
	}
	c->shm.readOnly = False;
	vnc_display_clear_error();
	XShmAttach(c->d->dpy, &c->shm);
	/* Once both sides are attached the id can go: the segment then lives
	 * exactly as long as the attachments, even if we crash. */
	if (vnc_display_sync_failed(c->d)) {
		log_warn("MIT-SHM unavailable, using XGetImage", "{s:s}", "step", "XShmAttach");
		shmdt(c->shm.shmaddr);
		shmctl(c->shm.shmid, IPC_RMID, NULL);
		c->shm.shmaddr = NULL;
		return;
	}
	shmctl(c->shm.shmid, IPC_RMID, NULL);
	c->shm_attached = true;
}

static void shm_teardown(struct vnc_capture *c)
{
	if (c->shm_attached) {
		XShmDetach(c->d->dpy, &c->shm);
		XSync(c->d->dpy, False);
		c->shm_attached = false;
	}
	if (c->shm.shmaddr) {
		shmdt(c->shm.shmaddr);
		c->shm.shmaddr = NULL;
	}
}

/* Fetches the rectangle into an image the caller releases with
 * release_image(); the pixels are at img->data with img->bytes_per_line.
 * Returns NULL when the server refused (the area is then skipped; damage
 * will bring it back if it matters). */
static XImage *grab(struct vnc_capture *c, int x, int y, int w, int h)
{
	XImage *img;
	uint64_t t0 = now_ns();

	if (c->shm_attached) {
		img = XShmCreateImage(c->d->dpy, c->d->visual, (unsigned)c->d->depth, ZPixmap,
				      c->shm.shmaddr, &c->shm, (unsigned)w, (unsigned)h);
		if (!img)
			return NULL;
		vnc_display_clear_error();
		if (!XShmGetImage(c->d->dpy, c->d->root, img, x, y, AllPlanes) ||
		    vnc_display_had_error()) {
			img->data = NULL;
			XDestroyImage(img);
			return NULL;
		}
	} else {
		img = XGetImage(c->d->dpy, c->d->root, x, y, (unsigned)w, (unsigned)h, AllPlanes,
				ZPixmap);
		if (!img)
			return NULL;
	}
	if (img->bits_per_pixel != 32 || img->byte_order != LSBFirst) {
		log_error("unexpected X image layout", "{s:i, s:i}", "bits_per_pixel",
			  img->bits_per_pixel, "byte_order", img->byte_order);
		if (c->shm_attached)
			img->data = NULL;
		XDestroyImage(img);
		return NULL;
	}
	c->st.grabs++;
	c->st.grab_pixels += (uint64_t)w * (uint64_t)h;
	c->st.grab_ns += now_ns() - t0;
	return img;
}

static void release_image(struct vnc_capture *c, XImage *img)
{
	if (c->shm_attached)
		img->data = NULL; /* the segment is ours, not Xlib's to free */
	XDestroyImage(img);
}

/* Compares every hinted tile inside the grabbed rectangle (x0,y0 w x h,
 * tile-aligned except at the screen's right and bottom edges) with the
 * framebuffer; copies and flags the tiles that differ. */
static void compare_rect(struct vnc_capture *c, const XImage *img, int x0, int y0, int w, int h)
{
	int tx0 = x0 / TILE, tx1 = (x0 + w + TILE - 1) / TILE;
	int ty0 = y0 / TILE, ty1 = (y0 + h + TILE - 1) / TILE;
	uint64_t t0 = now_ns();

	for (int ty = ty0; ty < ty1; ty++) {
		int py = ty * TILE, ph = py + TILE > c->height ? c->height - py : TILE;

		for (int tx = tx0; tx < tx1; tx++) {
			int idx = ty * c->tiles_x + tx;
			int px = tx * TILE, pw = px + TILE > c->width ? c->width - px : TILE;
			size_t row_bytes = (size_t)pw * 4;
			int row;

			if (!c->hint[idx])
				continue;
			c->st.tiles_cmp++;
			for (row = 0; row < ph; row++) {
				const char *src = img->data +
						  (size_t)(py - y0 + row) * (size_t)img->bytes_per_line +
						  (size_t)(px - x0) * 4;
				char *dst = c->fb + (size_t)(py + row) * (size_t)c->stride +
					    (size_t)px * 4;

				if (memcmp(dst, src, row_bytes) != 0)
					break;
			}
			if (row == ph)
				continue;
			/* Rows above `row` are equal already. */
			for (; row < ph; row++)
				memcpy(c->fb + (size_t)(py + row) * (size_t)c->stride + (size_t)px * 4,
				       img->data + (size_t)(py - y0 + row) * (size_t)img->bytes_per_line +
					       (size_t)(px - x0) * 4,
				       row_bytes);
			c->changed[idx] = 1;
			c->st.tiles_changed++;
		}
	}
	c->st.cmp_ns += now_ns() - t0;
}

/* Grabs and compares the tile rectangle [tx0,tx1) x [ty0,ty1). */
static void process_tiles(struct vnc_capture *c, int tx0, int ty0, int tx1, int ty1)
{
	int x = tx0 * TILE, y = ty0 * TILE;
	int x2 = tx1 * TILE > c->width ? c->width : tx1 * TILE;
	int y2 = ty1 * TILE > c->height ? c->height : ty1 * TILE;
	XImage *img = grab(c, x, y, x2 - x, y2 - y);

	if (!img)
		return;
	compare_rect(c, img, x, y, x2 - x, y2 - y);
	release_image(c, img);
}

/* Chooses the grabs for the hinted tiles: one bounding box when the hints
 * fill at least half of it (or are too scattered to grab one by one),
 * otherwise one grab per horizontal run of hinted tiles. */
static void process_hints(struct vnc_capture *c)
{
	int bx0 = c->tiles_x, by0 = c->tiles_y, bx1 = -1, by1 = -1;
	long count = 0, spans = 0;

	for (int ty = 0; ty < c->tiles_y; ty++) {
		for (int tx = 0; tx < c->tiles_x; tx++) {
			if (!c->hint[ty * c->tiles_x + tx])
				continue;
			count++;
			if (tx == 0 || !c->hint[ty * c->tiles_x + tx - 1])
				spans++;
			if (tx < bx0)
				bx0 = tx;
			if (tx > bx1)
				bx1 = tx;
			if (ty < by0)
				by0 = ty;
			if (ty > by1)
				by1 = ty;
		}
	}
	if (count == 0)
		return;
	if (count * 2 >= (long)(bx1 - bx0 + 1) * (by1 - by0 + 1) || spans > MAX_SPANS) {
		process_tiles(c, bx0, by0, bx1 + 1, by1 + 1);
		return;
	}
	for (int ty = by0; ty <= by1; ty++) {
		int tx = bx0;

		while (tx <= bx1) {
			int start;

			if (!c->hint[ty * c->tiles_x + tx]) {
				tx++;
				continue;
			}
			start = tx;
			while (tx <= bx1 && c->hint[ty * c->tiles_x + tx])
				tx++;
			process_tiles(c, start, ty, tx, ty + 1);
		}
	}
}

/* Marks the changed tiles on the screen, one rectangle per horizontal run. */
static void mark_changed(struct vnc_capture *c)
{
	for (int ty = 0; ty < c->tiles_y; ty++) {
		int tx = 0;

		while (tx < c->tiles_x) {
			int start;

			if (!c->changed[ty * c->tiles_x + tx]) {
				tx++;
				continue;
			}
			start = tx;
			while (tx < c->tiles_x && c->changed[ty * c->tiles_x + tx])
				tx++;
			if (c->screen) {
				int x2 = tx * TILE > c->width ? c->width : tx * TILE;
				int y2 = (ty + 1) * TILE > c->height ? c->height : (ty + 1) * TILE;

				rfbMarkRectAsModified(c->screen, start * TILE, ty * TILE, x2, y2);
			}
		}
	}
}

static void hint_rect(struct vnc_capture *c, int x, int y, int w, int h)
{
	int x2 = x + w, y2 = y + h;

	if (x < 0)
		x = 0;
	if (y < 0)
		y = 0;
	if (x2 > c->width)
		x2 = c->width;
	if (y2 > c->height)
		y2 = c->height;
	if (x >= x2 || y >= y2)
		return;
	for (int ty = y / TILE; ty <= (y2 - 1) / TILE; ty++)
		memset(c->hint + ty * c->tiles_x + x / TILE, 1, (size_t)((x2 - 1) / TILE - x / TILE + 1));
}

/* Moves the server's accumulated damage into the hint bitmap and clears it
 * there; any later drawing raises a fresh DamageNotify. */
static int take_damage(struct vnc_capture *c)
{
	XRectangle *rects;
	int n = 0;

	XDamageSubtract(c->d->dpy, c->damage, None, c->scratch);
	rects = XFixesFetchRegion(c->d->dpy, c->scratch, &n);
	for (int i = 0; i < n; i++)
		hint_rect(c, rects[i].x, rects[i].y, rects[i].width, rects[i].height);
	if (rects)
		XFree(rects);
	return n;
}

/* Sizes the capture for w x h: a zeroed framebuffer and tile maps.  The
 * old buffers stay where they are on failure.  Returns 0 or -1 with e set. */
static int size_buffers(struct vnc_capture *c, int w, int h, struct err *e)
{
	int tx = (w + TILE - 1) / TILE, ty = (h + TILE - 1) / TILE;
	size_t tiles = (size_t)tx * (size_t)ty;
	char *fb = calloc((size_t)w * 4, (size_t)h);
	uint8_t *hint = calloc(tiles, 1), *changed = calloc(tiles, 1);

	if (!fb || !hint || !changed) {
		free(fb);
		free(hint);
		free(changed);
		return err_set(e, ENOMEM, "framebuffer of %dx%d", w, h);
	}
	free(c->fb);
	free(c->hint);
	free(c->changed);
	c->fb = fb;
	c->hint = hint;
	c->changed = changed;
	c->width = w;
	c->height = h;
	c->stride = w * 4;
	c->tiles_x = tx;
	c->tiles_y = ty;
	return 0;
}

/* Fills the framebuffer from the whole screen, dropping the damage so far
 * (it is all covered).  Returns the number of tiles compared. */
static uint64_t grab_all(struct vnc_capture *c)
{
	size_t tiles = (size_t)c->tiles_x * (size_t)c->tiles_y;
	uint64_t cmp0 = c->st.tiles_cmp;

	take_damage(c);
	memset(c->hint, 1, tiles);
	process_hints(c);
	memset(c->hint, 0, tiles);
	memset(c->changed, 0, tiles);
	return c->st.tiles_cmp - cmp0;
}

struct vnc_capture *vnc_capture_new(struct vnc_display *d, int frame_ms, struct err *e)
{
	struct vnc_capture *c = calloc(1, sizeof(*c));

	if (!c) {
		err_set(e, ENOMEM, "capture");
		return NULL;
	}
	c->d = d;
	c->frame_ms = frame_ms;
	if (size_buffers(c, d->width, d->height, e) == -1) {
		vnc_capture_free(c);
		return NULL;
	}
	shm_setup(c);
	/* Damage first, grab second: nothing drawn in between can be missed. */
	c->damage = XDamageCreate(d->dpy, d->root, XDamageReportNonEmpty);
	c->scratch = XFixesCreateRegion(d->dpy, NULL, 0);
	XSelectInput(d->dpy, d->root, StructureNotifyMask);
	if (grab_all(c) == 0) {
		err_set(e, 0, "cannot read the screen of the X display");
		vnc_capture_free(c);
		return NULL;
	}
	log_info("capture ready", "{s:i, s:i, s:s, s:i}", "width", c->width, "height", c->height,
		 "method", c->shm_attached ? "XShmGetImage" : "XGetImage", "frame_ms", frame_ms);
	return c;
}

char *vnc_capture_framebuffer(struct vnc_capture *c)
{
	return c->fb;
}

int vnc_capture_resize(struct vnc_capture *c, int width, int height, char **old_fb,
		       struct err *e)
{
	char *prev = c->fb;

	/* size_buffers frees the old framebuffer: keep it for the caller,
	 * whose screen still points at it */
	c->fb = NULL;
	if (size_buffers(c, width, height, e) == -1) {
		c->fb = prev;
		return -1;
	}
	*old_fb = prev;
	shm_teardown(c);
	shm_setup(c);
	c->scheduled = false;
	c->damaged = false;
	grab_all(c);
	log_info("capture resized", "{s:i, s:i, s:s}", "width", width, "height", height, "method",
		 c->shm_attached ? "XShmGetImage" : "XGetImage");
	return 0;
}

void vnc_capture_attach(struct vnc_capture *c, rfbScreenInfoPtr screen)
{
	c->screen = screen;
}

static void schedule(struct vnc_capture *c, uint64_t now_ms)
{
	if (c->scheduled)
		return;
	c->scheduled = true;
	c->due = c->last_grab + (uint64_t)c->frame_ms;
	if (c->due < now_ms)
		c->due = now_ms;
}

bool vnc_capture_handle_event(struct vnc_capture *c, const XEvent *ev, uint64_t now_ms)
{
	if (ev->type == c->d->damage_event + XDamageNotify) {
		c->damaged = true;
		if (c->active)
			schedule(c, now_ms);
		return true;
	}
	return false;
}

void vnc_capture_set_active(struct vnc_capture *c, bool active, uint64_t now_ms)
{
	c->active = active;
	if (active && c->damaged)
		schedule(c, now_ms);
}

int vnc_capture_timeout_ms(const struct vnc_capture *c, uint64_t now_ms)
{
	if (!c->scheduled)
		return -1;
	if (c->due <= now_ms)
		return 0;
	return (int)(c->due - now_ms);
}

void vnc_capture_run(struct vnc_capture *c, uint64_t now_ms)
{
	size_t tiles = (size_t)c->tiles_x * (size_t)c->tiles_y;

	if (!c->scheduled || now_ms < c->due)
		return;
	c->scheduled = false;
	c->damaged = false;
	c->last_grab = now_ms;
	c->st.cycles++;
	{
		uint64_t changed0 = c->st.tiles_changed, cmp0 = c->st.tiles_cmp;
		uint64_t t0 = now_ns();
		int rects = take_damage(c);

		process_hints(c);
		mark_changed(c);
		log_debug("grab", "{s:i, s:I, s:I, s:f}", "damage_rects", rects, "tiles_compared",
			  (json_int_t)(c->st.tiles_cmp - cmp0), "tiles_changed",
			  (json_int_t)(c->st.tiles_changed - changed0), "ms",
			  (double)(now_ns() - t0) / 1e6);
	}
	memset(c->hint, 0, tiles);
	memset(c->changed, 0, tiles);
}

void vnc_capture_log_stats(const struct vnc_capture *c)
{
	double grabs = c->st.grabs ? (double)c->st.grabs : 1.0;
	double mpix = (double)c->st.grab_pixels / 1e6;

	log_info("capture stats", "{s:I, s:I, s:f, s:f, s:f, s:f, s:I, s:I}", "cycles",
		 (json_int_t)c->st.cycles, "grabs", (json_int_t)c->st.grabs, "grab_mpixels", mpix,
		 "grab_us_mean", (double)c->st.grab_ns / grabs / 1e3, "grab_ms_per_mpixel",
		 mpix > 0 ? (double)c->st.grab_ns / 1e6 / mpix : 0.0, "compare_ms_per_mpixel",
		 mpix > 0 ? (double)c->st.cmp_ns / 1e6 / mpix : 0.0, "tiles_compared",
		 (json_int_t)c->st.tiles_cmp, "tiles_changed", (json_int_t)c->st.tiles_changed);
}

void vnc_capture_free(struct vnc_capture *c)
{
	if (!c)
		return;
	if (c->d && c->d->dpy) {
		if (c->damage)
			XDamageDestroy(c->d->dpy, c->damage);
		if (c->scratch)
			XFixesDestroyRegion(c->d->dpy, c->scratch);
		shm_teardown(c);
	}
	free(c->fb);
	free(c->hint);
	free(c->changed);
	free(c);
}
