/* XTEST pointer and keyboard injection; see input.h.
 *
 * Only the first two columns of the core keymap (group 1, plain and
 * shifted) are used to find a keysym.  Anything reachable only through
 * AltGr or a second group is bound to a spare keycode instead: that works
 * the same on every layout and never depends on which modifiers the
 * viewer happens to hold. */
#include "input.h"

#include "common/log.h"
#include "common/util.h"

#include <X11/XKBlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <X11/keysym.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PRESSED 64
#define MAX_SPARE 128
#define QUEUE_MAX 512
/* How long events wait after a keycode is (re)bound.  Clients refresh their
 * keymap asynchronously: Chromium, pressed on a keycode bound a moment
 * earlier, typed nothing or the keycode's previous character about one
 * time in five with no pause here; 20 ms was already clean on the host.
 * Under gVisor everything is slower, hence the margin. */
#define BIND_SETTLE_MS 60

struct spare {
	KeyCode kc;
	KeySym ks;      /* what we bound it to; NoSymbol when unbound */
	uint64_t stamp; /* last use, for least-recently-used rebinding */
};

struct pressed {
	KeySym ks;
	KeyCode kc;
};

/* An input event waiting for the keymap to settle. */
struct queued {
	bool is_key;
	bool down;
	KeySym ks;
	int mask, x, y;
};

struct vnc_input {
	struct vnc_display *d;
	int min_kc, max_kc, per; /* keycode range, keysyms per keycode */
	KeySym *map;             /* (max_kc - min_kc + 1) * per */
	XModifierKeymap *modmap;
	bool down[256];          /* keycodes we hold pressed */
	struct pressed pressed[MAX_PRESSED];
	int npressed;
	struct spare spare[MAX_SPARE];
	int nspare;
	uint64_t clock; /* use counter for the spare LRU */
	int buttons;    /* last RFB button mask */
	int x, y;
	struct queued queue[QUEUE_MAX]; /* ring buffer, in arrival order */
	int qhead, qlen;
	uint64_t gate;        /* queued events wait until this time */
	bool release_pending; /* release everything once the queue is empty */
};

/* The keysym at column col of kc, with Xlib's rule that a missing shifted
 * column of a letter means its upper case. */
static KeySym sym_at(const struct vnc_input *in, int kc, int col)
{
	const KeySym *row = in->map + (size_t)(kc - in->min_kc) * (size_t)in->per;
	KeySym lower, upper;

	if (col >= in->per)
		return NoSymbol;
	if (col == 1 && (in->per < 2 || row[1] == NoSymbol)) {
		XConvertCase(row[0], &lower, &upper);
		return upper != lower ? upper : row[0];
	}
	return row[col];
}

static bool kc_unbound(const struct vnc_input *in, int kc)
{
	const KeySym *row = in->map + (size_t)(kc - in->min_kc) * (size_t)in->per;

	for (int i = 0; i < in->per; i++)
		if (row[i] != NoSymbol)
			return false;
	return true;
}

static int load_map(struct vnc_input *in)
{
	int count = in->max_kc - in->min_kc + 1;

	if (in->map)
		XFree(in->map);
	if (in->modmap)
		XFreeModifiermap(in->modmap);
	in->map = XGetKeyboardMapping(in->d->dpy, (KeyCode)in->min_kc, count, &in->per);
	in->modmap = XGetModifierMapping(in->d->dpy);
	if (!in->map || !in->modmap || in->per < 1)
		return -1;
	return 0;
}

/* Whether any keycode we hold is in modifier row `index` (ShiftMapIndex...). */
static bool mod_held(const struct vnc_input *in, int index)
{
	const KeyCode *row = in->modmap->modifiermap + index * in->modmap->max_keypermod;

	for (int i = 0; i < in->modmap->max_keypermod; i++)
		if (row[i] && in->down[row[i]])
			return true;
	return false;
}

/* Finds ks in the plain column (preferred) or the shifted column.  Returns
 * the keycode and sets *level, or 0. */
static KeyCode find_keycode(const struct vnc_input *in, KeySym ks, int *level)
{
	KeyCode shifted = 0;

	for (int kc = in->min_kc; kc <= in->max_kc; kc++) {
		if (sym_at(in, kc, 0) == ks) {
			*level = 0;
			return (KeyCode)kc;
		}
		if (!shifted && sym_at(in, kc, 1) == ks)
			shifted = (KeyCode)kc;
	}
	*level = 1;
	return shifted;
}

/* Binds ks to a spare keycode (reusing an existing binding of ks, else an
 * unbound spare, else the least recently used one not held down).
 * Returns the keycode or 0 when none is available. */
static KeyCode bind_spare(struct vnc_input *in, KeySym ks)
{
	struct spare *pick = NULL;
	KeySym syms[2] = {ks, ks};

	for (int i = 0; i < in->nspare; i++) {
		struct spare *s = &in->spare[i];

		if (s->ks == ks && sym_at(in, s->kc, 0) == ks) {
			s->stamp = ++in->clock;
			return s->kc;
		}
	}
	for (int i = 0; i < in->nspare; i++) {
		struct spare *s = &in->spare[i];

		if (in->down[s->kc])
			continue;
		/* Someone else (xdotool does this) may have bound it meanwhile. */
		if (s->ks == NoSymbol && !kc_unbound(in, s->kc))
			continue;
		if (s->ks != NoSymbol && sym_at(in, s->kc, 0) != s->ks)
			continue;
		if (!pick || s->stamp < pick->stamp)
			pick = s;
	}
	if (!pick)
		return 0;
	/* The same keysym in both columns: Shift cannot change what it types. */
	vnc_display_clear_error();
	XChangeKeyboardMapping(in->d->dpy, pick->kc, 2, syms, 1);
	if (vnc_display_sync_failed(in->d)) {
		log_warn("cannot bind a spare keycode", "{s:i, s:I}", "keycode", (int)pick->kc,
			 "keysym", (json_int_t)ks);
		return 0;
	}
	log_debug("bound keysym to spare keycode", "{s:I, s:i}", "keysym", (json_int_t)ks,
		  "keycode", (int)pick->kc);
	pick->ks = ks;
	pick->stamp = ++in->clock;
	/* Our own MappingNotify will reload the map too; do it now so the next
	 * lookup in this same burst of events sees the binding. */
	load_map(in);
	return pick->kc;
}

static void fake_key(struct vnc_input *in, KeyCode kc, bool down)
{
	XTestFakeKeyEvent(in->d->dpy, kc, down ? True : False, CurrentTime);
	in->down[kc] = down;
}

/* The keycode of the first modifier key in row index, for faking Shift. */
static KeyCode modifier_keycode(const struct vnc_input *in, int index)
{
	const KeyCode *row = in->modmap->modifiermap + index * in->modmap->max_keypermod;

	for (int i = 0; i < in->modmap->max_keypermod; i++)
		if (row[i])
			return row[i];
	return 0;
}

/* A keysym that stands for a character, whose shift level matters. */
static bool is_character(KeySym ks)
{
	return (ks >= 0x20 && ks < 0xfe00) || (ks >= 0x01000000 && ks <= 0x0110ffff);
}

static bool caps_locked(struct vnc_input *in)
{
	XkbStateRec st;

	if (XkbGetState(in->d->dpy, XkbUseCoreKbd, &st) != Success)
		return false;
	return (st.locked_mods & LockMask) != 0;
}

static void remember_press(struct vnc_input *in, KeySym ks, KeyCode kc)
{
	for (int i = 0; i < in->npressed; i++) {
		if (in->pressed[i].ks == ks) {
			in->pressed[i].kc = kc;
			return;
		}
	}
	if (in->npressed < MAX_PRESSED)
		in->pressed[in->npressed++] = (struct pressed){ks, kc};
}

/* Returns the keycode ks was pressed on and forgets it, or 0. */
static KeyCode forget_press(struct vnc_input *in, KeySym ks)
{
	for (int i = 0; i < in->npressed; i++) {
		if (in->pressed[i].ks == ks) {
			KeyCode kc = in->pressed[i].kc;

			in->pressed[i] = in->pressed[--in->npressed];
			return kc;
		}
	}
	return 0;
}

/* Presses the keycode for ks.  ks is bound already when it needed a spare
 * keycode (drain() does that and lets the keymap settle first). */
static void key_down(struct vnc_input *in, KeySym ks)
{
	int level = 0;
	KeyCode kc = find_keycode(in, ks, &level);
	bool shift_held, need_shift, shortcut;
	KeyCode held_shift[8];
	int nheld = 0;

	if (!kc) {
		log_warn("no keycode for keysym", "{s:I}", "keysym", (json_int_t)ks);
		return;
	}
	if (IsModifierKey(ks) || !is_character(ks) || sym_at(in, kc, 0) == sym_at(in, kc, 1)) {
		/* Modifiers, function keys and keys whose shift level does not
		 * change the result go through with whatever the viewer holds:
		 * Shift+Tab and Shift+Left must stay shifted. */
		fake_key(in, kc, true);
		remember_press(in, ks, kc);
		return;
	}
	need_shift = level == 1;
	if (caps_locked(in)) {
		KeySym lower, upper;

		XConvertCase(ks, &lower, &upper);
		if (lower != upper)
			need_shift = !need_shift;
	}
	shift_held = mod_held(in, ShiftMapIndex);
	shortcut = mod_held(in, ControlMapIndex) || mod_held(in, Mod1MapIndex) ||
		   mod_held(in, Mod4MapIndex);
	if (need_shift && !shift_held) {
		KeyCode shift = modifier_keycode(in, ShiftMapIndex);

		if (shift) {
			fake_key(in, shift, true);
			fake_key(in, kc, true);
			fake_key(in, shift, false);
			remember_press(in, ks, kc);
			return;
		}
	} else if (!need_shift && shift_held && !shortcut) {
		/* The viewer holds Shift but sent the unshifted keysym (e.g. Caps
		 * Lock on its side): lift Shift around this one press. */
		const KeyCode *row =
			in->modmap->modifiermap + ShiftMapIndex * in->modmap->max_keypermod;

		for (int i = 0; i < in->modmap->max_keypermod && nheld < 8; i++) {
			if (row[i] && in->down[row[i]]) {
				held_shift[nheld++] = row[i];
				fake_key(in, row[i], false);
			}
		}
	}
	fake_key(in, kc, true);
	remember_press(in, ks, kc);
	for (int i = 0; i < nheld; i++)
		fake_key(in, held_shift[i], true);
}

static void key_up(struct vnc_input *in, KeySym ks)
{
	KeyCode kc = forget_press(in, ks);
	int level;

	if (!kc) {
		kc = find_keycode(in, ks, &level);
		if (!kc || !in->down[kc])
			return;
	}
	fake_key(in, kc, false);
}

static void apply_pointer(struct vnc_input *in, int mask, int x, int y)
{
	if (x < 0)
		x = 0;
	if (y < 0)
		y = 0;
	if (x >= in->d->width)
		x = in->d->width - 1;
	if (y >= in->d->height)
		y = in->d->height - 1;
	if (x != in->x || y != in->y) {
		XTestFakeMotionEvent(in->d->dpy, in->d->screen, x, y, CurrentTime);
		in->x = x;
		in->y = y;
	}
	for (int bit = 0; bit < 8; bit++) {
		int m = 1 << bit;

		if ((mask & m) != (in->buttons & m))
			XTestFakeButtonEvent(in->d->dpy, (unsigned)bit + 1, (mask & m) ? True : False,
					     CurrentTime);
	}
	in->buttons = mask;
}

static void release_now(struct vnc_input *in)
{
	for (int kc = 0; kc < 256; kc++)
		if (in->down[kc])
			fake_key(in, (KeyCode)kc, false);
	in->npressed = 0;
	for (int bit = 0; bit < 8; bit++)
		if (in->buttons & (1 << bit))
			XTestFakeButtonEvent(in->d->dpy, (unsigned)bit + 1, False, CurrentTime);
	in->buttons = 0;
	in->release_pending = false;
}

/* Applies queued events in order until one needs a fresh keycode binding:
 * that one binds it and waits, with everything behind it, for the gate. */
static void drain(struct vnc_input *in, uint64_t now)
{
	while (in->qlen > 0 && now >= in->gate) {
		struct queued *q = &in->queue[in->qhead];
		int level;

		if (q->is_key && q->down && !find_keycode(in, q->ks, &level) &&
		    bind_spare(in, q->ks)) {
			in->gate = now + BIND_SETTLE_MS;
			return;
		}
		if (!q->is_key)
			apply_pointer(in, q->mask, q->x, q->y);
		else if (q->down)
			key_down(in, q->ks);
		else
			key_up(in, q->ks);
		in->qhead = (in->qhead + 1) % QUEUE_MAX;
		in->qlen--;
	}
	if (in->qlen == 0 && in->release_pending)
		release_now(in);
}

static void enqueue(struct vnc_input *in, const struct queued *q)
{
	if (in->qlen > 0 && !q->is_key) {
		/* Motion while waiting: fold into a queued motion with the same
		 * buttons rather than grow the queue. */
		struct queued *last = &in->queue[(in->qhead + in->qlen - 1) % QUEUE_MAX];

		if (!last->is_key && last->mask == q->mask) {
			last->x = q->x;
			last->y = q->y;
			return;
		}
	}
	if (in->qlen == QUEUE_MAX) {
		log_warn("input queue full; dropping an event", NULL);
		return;
	}
	in->queue[(in->qhead + in->qlen) % QUEUE_MAX] = *q;
	in->qlen++;
}

void vnc_input_key(struct vnc_input *in, bool down, uint32_t ks)
{
	struct queued q = {.is_key = true, .down = down, .ks = (KeySym)ks};

	enqueue(in, &q);
	drain(in, util_now_ms());
}

void vnc_input_pointer(struct vnc_input *in, int mask, int x, int y)
{
	struct queued q = {.is_key = false, .mask = mask, .x = x, .y = y};

	enqueue(in, &q);
	drain(in, util_now_ms());
}

void vnc_input_release_all(struct vnc_input *in)
{
	in->release_pending = true;
	drain(in, util_now_ms());
}

int vnc_input_timeout_ms(const struct vnc_input *in, uint64_t now_ms)
{
	if (in->qlen == 0)
		return -1;
	return in->gate <= now_ms ? 0 : (int)(in->gate - now_ms);
}

void vnc_input_run(struct vnc_input *in, uint64_t now_ms)
{
	if (in->qlen > 0)
		drain(in, now_ms);
}

bool vnc_input_handle_event(struct vnc_input *in, XEvent *ev)
{
	if (ev->type != MappingNotify)
		return false;
	XRefreshKeyboardMapping(&ev->xmapping);
	if (ev->xmapping.request == MappingKeyboard || ev->xmapping.request == MappingModifier) {
		if (load_map(in) == -1)
			log_warn("cannot reload the keyboard mapping", NULL);
	}
	return true;
}

struct vnc_input *vnc_input_new(struct vnc_display *d, struct err *e)
{
	struct vnc_input *in = calloc(1, sizeof(*in));

	if (!in) {
		err_set(e, ENOMEM, "input");
		return NULL;
	}
	in->d = d;
	in->x = in->y = -1;
	XDisplayKeycodes(d->dpy, &in->min_kc, &in->max_kc);
	if (in->min_kc < 8)
		in->min_kc = 8;
	if (in->max_kc > 255)
		in->max_kc = 255;
	if (load_map(in) == -1) {
		err_set(e, 0, "cannot read the keyboard mapping");
		vnc_input_free(in);
		return NULL;
	}
	/* Spares from the top: low keycodes are where real keys live. */
	for (int kc = in->max_kc; kc >= in->min_kc && in->nspare < MAX_SPARE; kc--)
		if (kc_unbound(in, kc))
			in->spare[in->nspare++] = (struct spare){(KeyCode)kc, NoSymbol, 0};
	log_info("keyboard ready", "{s:i, s:i, s:i, s:i}", "min_keycode", in->min_kc,
		 "max_keycode", in->max_kc, "keysyms_per_keycode", in->per, "spare_keycodes",
		 in->nspare);
	return in;
}

void vnc_input_free(struct vnc_input *in)
{
	if (!in)
		return;
	if (in->map && in->d->dpy) {
		KeySym none[2] = {NoSymbol, NoSymbol};

		release_now(in);
		for (int i = 0; i < in->nspare; i++)
			if (in->spare[i].ks != NoSymbol)
				XChangeKeyboardMapping(in->d->dpy, in->spare[i].kc, 2, none, 1);
		XSync(in->d->dpy, False);
	}
	if (in->map)
		XFree(in->map);
	if (in->modmap)
		XFreeModifiermap(in->modmap);
	free(in);
}
