/* X pointer tracking with XInput 2 raw events and a slow poll; see
 * pointer.h.
 *
 * Raw events are the only pointer events the root window gets whatever
 * window is under the pointer and whoever grabbed it; ordinary motion goes
 * to Chromium's window.  They are selected for the master devices, so one
 * XTest motion is one event (not one from the XTest device and one from
 * the core pointer).  XWarpPointer (xdotool mousemove, some programs)
 * raises no raw event at all, hence the poll. */
#include "pointer.h"

#include "common/log.h"

#include <X11/extensions/XInput2.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Presses remembered between two runs; more in one burst are dropped. */
#define MAX_PRESSES 8
/* Poll period, and how long after a warp the pointer is polled at the
 * fast rate instead (a warp rarely comes alone).  XTest motion needs no
 * fast poll: its raw events keep coming. */
#define SLOW_POLL_MS 500
#define FAST_FOR_MS 1000

struct vnc_pointer {
	struct vnc_display *d;
	rfbScreenInfoPtr screen;
	int interval_ms;
	vnc_pointer_click_fn on_click;
	void *ctx;
	bool active;
	bool moved;     /* raw motion seen since the last query */
	uint64_t last_query;
	uint64_t last_warp; /* when a poll found the pointer moved without a raw event */
	int presses[MAX_PRESSES];
	int npresses;
};

/* Selects (or, with on false, clears) raw motion and presses on the root. */
static void select_raw(struct vnc_pointer *p, bool on)
{
	unsigned char bits[XIMaskLen(XI_LASTEVENT)] = {0};
	XIEventMask mask = {.deviceid = XIAllMasterDevices, .mask_len = sizeof(bits), .mask = bits};

	if (!p->d->xi_opcode)
		return;
	if (on) {
		XISetMask(bits, XI_RawMotion);
		XISetMask(bits, XI_RawButtonPress);
	}
	XISelectEvents(p->d->dpy, p->d->root, &mask, 1);
}

struct vnc_pointer *vnc_pointer_new(struct vnc_display *d, rfbScreenInfoPtr screen,
				    int interval_ms, vnc_pointer_click_fn on_click, void *ctx,
				    struct err *e)
{
	struct vnc_pointer *p = calloc(1, sizeof(*p));

	if (!p) {
		err_set(e, ENOMEM, "pointer");
		return NULL;
	}
	p->d = d;
	p->screen = screen;
	p->interval_ms = interval_ms;
	p->on_click = on_click;
	p->ctx = ctx;
	if (!d->xi_opcode)
		log_warn("no XInput 2.2 on the display: the pointer is only polled, and clicks "
			 "get no marker", NULL);
	return p;
}

void vnc_pointer_set_active(struct vnc_pointer *p, bool active, uint64_t now_ms)
{
	if (active == p->active)
		return;
	p->active = active;
	select_raw(p, active);
	p->npresses = 0;
	/* A new viewer must see the pointer where it is, moved or not. */
	p->moved = active;
	p->last_query = now_ms - (uint64_t)p->interval_ms;
	p->last_warp = 0;
}

static void note_press(struct vnc_pointer *p, int button)
{
	if (button < 1 || button > 3 || p->npresses == MAX_PRESSES)
		return;
	p->presses[p->npresses++] = button;
}

bool vnc_pointer_handle_event(struct vnc_pointer *p, XEvent *ev)
{
	XGenericEventCookie *ck = &ev->xcookie;

	if (!p->d->xi_opcode || ev->type != GenericEvent || ck->extension != p->d->xi_opcode)
		return false;
	if (ck->evtype != XI_RawMotion && ck->evtype != XI_RawButtonPress)
		return false;
	if (!p->active)
		return true; /* queued before the selection was cleared */
	p->moved = true;
	if (ck->evtype == XI_RawButtonPress && XGetEventData(p->d->dpy, ck)) {
		note_press(p, ((const XIRawEvent *)ck->data)->detail);
		XFreeEventData(p->d->dpy, ck);
	}
	return true;
}

int vnc_pointer_timeout_ms(const struct vnc_pointer *p, uint64_t now_ms)
{
	bool fast = p->moved || now_ms < p->last_warp + FAST_FOR_MS;
	uint64_t due = p->last_query + (uint64_t)(fast ? p->interval_ms : SLOW_POLL_MS);

	if (!p->active)
		return -1;
	if (p->npresses > 0 || due <= now_ms)
		return 0;
	return (int)(due - now_ms);
}

/* Moves libvncserver's cursor; it then repaints the old and new places for
 * every viewer that has the cursor painted into its frames.  Returns
 * whether the pointer had moved. */
static bool move_cursor(struct vnc_pointer *p, int x, int y)
{
	if (x == p->screen->cursorX && y == p->screen->cursorY)
		return false;
	p->screen->cursorX = x;
	p->screen->cursorY = y;
	return true;
}

void vnc_pointer_run(struct vnc_pointer *p, uint64_t now_ms)
{
	Window root, child;
	int x, y, wx, wy;
	unsigned int mask;
	bool raw = p->moved;

	if (vnc_pointer_timeout_ms(p, now_ms) != 0)
		return;
	p->moved = false;
	p->last_query = now_ms;
	if (!XQueryPointer(p->d->dpy, p->d->root, &root, &child, &x, &y, &wx, &wy, &mask)) {
		p->npresses = 0; /* on another screen: nothing of ours to show */
		return;
	}
	if (move_cursor(p, x, y) && !raw)
		p->last_warp = now_ms;
	for (int i = 0; i < p->npresses; i++)
		p->on_click(p->ctx, x, y, p->presses[i], now_ms);
	p->npresses = 0;
}

void vnc_pointer_free(struct vnc_pointer *p)
{
	if (!p)
		return;
	if (p->active && p->d->dpy)
		select_raw(p, false);
	free(p);
}
