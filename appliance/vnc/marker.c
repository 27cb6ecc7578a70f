/* Click rings painted around updates; see marker.h.
 *
 * Who clicked is not in the X event: mcp-desktop, xdotool and cloche-vnc
 * all press buttons through the same XTest device.  So a viewer's press is
 * announced here before it reaches X, and the X press it causes (the next
 * one of that button) is matched with it.  A press nobody announced is
 * someone else's and shows to every viewer.  A few rings and announcements
 * at most are kept; older ones give way. */
#include "marker.h"

#include <errno.h>
#include <rfb/rfbregion.h>
#include <stdlib.h>
#include <string.h>

#define RADIUS 16
#define WIDTH 4
#define BOX (2 * RADIUS + 3) /* the ring and its outline, centred */
#define MAX_RINGS 4
#define MAX_EXPECT 8

/* 4 px of bright yellow between two 1 px dark lines: visible on any
 * background, and nothing like the pointer it surrounds. */
#define FILL 0xffd000u
#define LINE 0x202020u

struct ring {
	bool on;
	int x, y;          /* centre */
	rfbClientPtr owner; /* the viewer that clicked, or NULL */
	uint64_t until;
	bool painted;      /* inside a paint/unpaint pair */
	int bx, by, bw, bh; /* the box saved in under, clipped to the screen */
	uint32_t under[BOX * BOX];
};

struct expect {
	rfbClientPtr cl;
	int button;
	uint64_t at;
};

struct vnc_marker {
	rfbScreenInfoPtr screen;
	struct ring rings[MAX_RINGS];
	struct expect expect[MAX_EXPECT];
	int nexpect;
	uint32_t shape[BOX * BOX]; /* pixel to paint, 0 for none */
};

static void make_shape(uint32_t *shape)
{
	int in = (RADIUS - WIDTH) * (RADIUS - WIDTH), out = RADIUS * RADIUS;
	int edge_in = (RADIUS - WIDTH - 1) * (RADIUS - WIDTH - 1);
	int edge_out = (RADIUS + 1) * (RADIUS + 1);

	for (int y = 0; y < BOX; y++) {
		for (int x = 0; x < BOX; x++) {
			int dx = x - BOX / 2, dy = y - BOX / 2, d2 = dx * dx + dy * dy;
			uint32_t *px = &shape[y * BOX + x];

			if (d2 >= in && d2 <= out)
				*px = FILL;
			else if (d2 >= edge_in && d2 <= edge_out)
				*px = LINE;
			else
				*px = 0;
		}
	}
}

struct vnc_marker *vnc_marker_new(rfbScreenInfoPtr screen, struct err *e)
{
	struct vnc_marker *m = calloc(1, sizeof(*m));

	if (!m) {
		err_set(e, ENOMEM, "click markers");
		return NULL;
	}
	m->screen = screen;
	make_shape(m->shape);
	return m;
}

/* Adds the ring's box to the pending update of every viewer that sees it,
 * so that it is sent with the ring (or, once off, without). */
static void mark_ring(struct vnc_marker *m, const struct ring *r)
{
	rfbClientIteratorPtr it = rfbGetClientIterator(m->screen);
	sraRegionPtr box = sraRgnCreateRect(r->x - BOX / 2, r->y - BOX / 2, r->x + BOX / 2 + 1,
					    r->y + BOX / 2 + 1);
	sraRegionPtr screen = sraRgnCreateRect(0, 0, m->screen->width, m->screen->height);
	rfbClientPtr cl;

	sraRgnAnd(box, screen);
	while ((cl = rfbClientIteratorNext(it)))
		if (cl != r->owner)
			sraRgnOr(cl->modifiedRegion, box);
	rfbReleaseClientIterator(it);
	sraRgnDestroy(screen);
	sraRgnDestroy(box);
}

static void drop_expect(struct vnc_marker *m, int i)
{
	memmove(&m->expect[i], &m->expect[i + 1],
		(size_t)(m->nexpect - i - 1) * sizeof(m->expect[0]));
	m->nexpect--;
}

static void drop_stale(struct vnc_marker *m, uint64_t now_ms)
{
	while (m->nexpect > 0 && m->expect[0].at + VNC_MARKER_EXPECT_MS < now_ms)
		drop_expect(m, 0);
}

void vnc_marker_expect(struct vnc_marker *m, rfbClientPtr cl, int button, uint64_t now_ms)
{
	drop_stale(m, now_ms);
	if (m->nexpect == MAX_EXPECT)
		drop_expect(m, 0);
	m->expect[m->nexpect++] = (struct expect){cl, button, now_ms};
}

/* The viewer that announced this press, or NULL if none did. */
static rfbClientPtr claim(struct vnc_marker *m, int button, uint64_t now_ms)
{
	drop_stale(m, now_ms);
	for (int i = 0; i < m->nexpect; i++) {
		if (m->expect[i].button == button) {
			rfbClientPtr cl = m->expect[i].cl;

			drop_expect(m, i);
			return cl;
		}
	}
	return NULL;
}

/* A free slot, or the ring closest to expiring (taken off first). */
static struct ring *free_ring(struct vnc_marker *m)
{
	struct ring *soonest = &m->rings[0];

	for (int i = 0; i < MAX_RINGS; i++) {
		if (!m->rings[i].on)
			return &m->rings[i];
		if (m->rings[i].until < soonest->until)
			soonest = &m->rings[i];
	}
	soonest->on = false;
	mark_ring(m, soonest);
	return soonest;
}

void vnc_marker_click(struct vnc_marker *m, int x, int y, int button, uint64_t now_ms)
{
	rfbClientPtr owner = claim(m, button, now_ms);
	struct ring *r = free_ring(m);

	*r = (struct ring){.on = true, .x = x, .y = y, .owner = owner,
			   .until = now_ms + VNC_MARKER_MS};
	mark_ring(m, r);
}

int vnc_marker_timeout_ms(const struct vnc_marker *m, uint64_t now_ms)
{
	int best = -1;

	for (int i = 0; i < MAX_RINGS; i++) {
		const struct ring *r = &m->rings[i];
		int left;

		if (!r->on)
			continue;
		left = r->until <= now_ms ? 0 : (int)(r->until - now_ms);
		if (best < 0 || left < best)
			best = left;
	}
	return best;
}

void vnc_marker_run(struct vnc_marker *m, uint64_t now_ms)
{
	for (int i = 0; i < MAX_RINGS; i++) {
		struct ring *r = &m->rings[i];

		if (r->on && r->until <= now_ms) {
			r->on = false;
			mark_ring(m, r);
		}
	}
}

static uint32_t *fb_row(const struct vnc_marker *m, int y)
{
	return (uint32_t *)(void *)(m->screen->frameBuffer +
				    (size_t)y * (size_t)m->screen->paddedWidthInBytes);
}

/* Saves the pixels under r's box, then paints the ring over them. */
static void paint_ring(struct vnc_marker *m, struct ring *r)
{
	int x0 = r->x - BOX / 2, y0 = r->y - BOX / 2;

	r->bx = x0 < 0 ? 0 : x0;
	r->by = y0 < 0 ? 0 : y0;
	r->bw = (x0 + BOX > m->screen->width ? m->screen->width : x0 + BOX) - r->bx;
	r->bh = (y0 + BOX > m->screen->height ? m->screen->height : y0 + BOX) - r->by;
	if (r->bw <= 0 || r->bh <= 0)
		return;
	for (int j = 0; j < r->bh; j++) {
		uint32_t *row = fb_row(m, r->by + j) + r->bx;
		const uint32_t *shape = &m->shape[(r->by + j - y0) * BOX + (r->bx - x0)];

		memcpy(&r->under[j * BOX], row, (size_t)r->bw * 4);
		for (int i = 0; i < r->bw; i++)
			if (shape[i])
				row[i] = shape[i];
	}
	r->painted = true;
}

void vnc_marker_paint(struct vnc_marker *m, rfbClientPtr cl)
{
	for (int i = 0; i < MAX_RINGS; i++) {
		struct ring *r = &m->rings[i];

		if (r->on && r->owner != cl)
			paint_ring(m, r);
	}
}

void vnc_marker_unpaint(struct vnc_marker *m)
{
	/* Backwards: where rings overlap, the first one saved the real pixels. */
	for (int i = MAX_RINGS - 1; i >= 0; i--) {
		struct ring *r = &m->rings[i];

		if (!r->painted)
			continue;
		for (int j = 0; j < r->bh; j++)
			memcpy(fb_row(m, r->by + j) + r->bx, &r->under[j * BOX], (size_t)r->bw * 4);
		r->painted = false;
	}
}

void vnc_marker_client_gone(struct vnc_marker *m, rfbClientPtr cl)
{
	for (int i = m->nexpect - 1; i >= 0; i--)
		if (m->expect[i].cl == cl)
			drop_expect(m, i);
	for (int i = 0; i < MAX_RINGS; i++)
		if (m->rings[i].owner == cl)
			m->rings[i].owner = NULL;
}

void vnc_marker_free(struct vnc_marker *m)
{
	free(m);
}
