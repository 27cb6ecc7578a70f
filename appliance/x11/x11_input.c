/* XTEST pointer and keyboard injection; see x11_input.h.
 *
 * Only the first two columns of the core keymap (group 1, plain and
 * shifted) are used to find a keysym.  Anything reachable only through
 * AltGr or a second group is bound to a spare keycode instead: that works
 * the same on every layout and never depends on which modifiers the
 * caller happens to hold. */
#include "x11_input.h"

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
#include <time.h>

#define MAX_PRESSED 64
#define MAX_SPARE 128
#define QUEUE_MAX 4096
/* How long events wait after a keycode is (re)bound.  Clients refresh their
 * keymap asynchronously: Chromium, pressed on a keycode bound a moment
 * earlier, typed nothing or the keycode's previous character about one
 * time in five with no pause here; 20 ms was already clean on the host.
 * Under gVisor everything is slower, hence the margin.  The same wait
 * applies before a spare is rebound after its last press, so a key still
 * in flight is not read with its new meaning. */
#define BIND_SETTLE_MS 60
/* Queued events looked at for keysyms to bind in one batch. */
#define LOOKAHEAD 128

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

struct x11_input {
	Display *dpy;
	int screen;
	int width, height;
	int min_kc, max_kc, per; /* keycode range, keysyms per keycode */
	KeySym *map;             /* (max_kc - min_kc + 1) * per */
	XModifierKeymap *modmap;
	bool down[256];          /* keycodes we hold pressed */
	uint64_t used_ms[256];   /* when each keycode was last pressed or released */
	struct pressed pressed[MAX_PRESSED];
	int npressed;
	struct spare spare[MAX_SPARE];
	int nspare;
	uint64_t clock; /* use counter for the spare LRU */
	int buttons;    /* last button mask sent */
	int x, y;
	struct queued queue[QUEUE_MAX]; /* ring buffer, in arrival order */
	int qhead, qlen;
	uint64_t gate;        /* queued events wait until this time */
	int settle_ms;        /* wait after (re)binding keycodes */
	unsigned long dropped; /* key presses that found no keycode */
	bool release_pending; /* release everything once the queue is empty */
};

/* The keysym at column col of kc, with Xlib's rule that a missing shifted
 * column of a letter means its upper case. */
static KeySym sym_at(const struct x11_input *in, int kc, int col)
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

static bool kc_unbound(const struct x11_input *in, int kc)
{
	const KeySym *row = in->map + (size_t)(kc - in->min_kc) * (size_t)in->per;

	for (int i = 0; i < in->per; i++)
		if (row[i] != NoSymbol)
			return false;
	return true;
}

/* A keysym that stands for a character, whose shift level matters. */
static bool is_character(KeySym ks)
{
	return (ks >= 0x20 && ks < 0xfe00) || (ks >= 0x01000000 && ks <= 0x0110ffff);
}

/* Whether kc looks bound the way this module binds spares: one character
 * keysym in every column.  No key of a real layout does that (letters
 * differ in case, BackSpace and the like are not characters). */
static bool looks_like_spare(const struct x11_input *in, int kc)
{
	const KeySym *row = in->map + (size_t)(kc - in->min_kc) * (size_t)in->per;

	/* Both core columns are set by a binding; `space NoSymbol space`
	 * (the space bar) is not one. */
	if (in->per < 2 || !is_character(row[0]) || row[1] != row[0])
		return false;
	for (int i = 2; i < in->per; i++)
		if (row[i] != row[0] && row[i] != NoSymbol)
			return false;
	return true;
}

static int load_map(struct x11_input *in)
{
	int count = in->max_kc - in->min_kc + 1;

	if (in->map)
		XFree(in->map);
	if (in->modmap)
		XFreeModifiermap(in->modmap);
	in->map = XGetKeyboardMapping(in->dpy, (KeyCode)in->min_kc, count, &in->per);
	in->modmap = XGetModifierMapping(in->dpy);
	if (!in->map || !in->modmap || in->per < 1)
		return -1;
	return 0;
}

/* Whether any keycode we hold is in modifier row `index` (ShiftMapIndex...). */
static bool mod_held(const struct x11_input *in, int index)
{
	const KeyCode *row = in->modmap->modifiermap + index * in->modmap->max_keypermod;

	for (int i = 0; i < in->modmap->max_keypermod; i++)
		if (row[i] && in->down[row[i]])
			return true;
	return false;
}

/* Finds ks in the plain column (preferred) or the shifted column.  Returns
 * the keycode and sets *level, or 0. */
static KeyCode find_keycode(const struct x11_input *in, KeySym ks, int *level)
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

enum bind_result { BIND_NONE, BIND_DONE, BIND_WAIT };

/* Whether spare s is unbound or bound by us (not another process's). */
static bool kc_is_ours_or_free(const struct x11_input *in, const struct spare *s)
{
	return s->ks != NoSymbol || kc_unbound(in, s->kc);
}

static bool in_set(const KeySym *set, int n, KeySym ks)
{
	for (int i = 0; i < n; i++)
		if (set[i] == ks)
			return true;
	return false;
}

/* Picks a spare for a new binding: an unbound one first, else the least
 * recently used of ours that is not held down, not bound to a keysym in
 * keep (wanted by queued events) and not taken in this batch; with
 * foreign, one another process bound when nothing else is left (taking
 * it over beats dropping the key: the other process notices and binds
 * again).  NULL when none is left. */
static struct spare *pick_spare(struct x11_input *in, const KeySym *keep, int nkeep,
				const bool *taken, bool foreign)
{
	struct spare *pick = NULL;

	for (int i = 0; i < in->nspare; i++) {
		struct spare *s = &in->spare[i];

		if (taken[i] || in->down[s->kc])
			continue;
		if (s->ks == NoSymbol && !kc_unbound(in, s->kc)) {
			/* Bound by another process: only as the last resort. */
			if (foreign && !pick)
				pick = s;
			continue;
		}
		if (s->ks != NoSymbol && sym_at(in, s->kc, 0) != s->ks) {
			s->ks = NoSymbol; /* taken over by another process */
			if (!kc_unbound(in, s->kc))
				continue;
		}
		if (s->ks != NoSymbol && in_set(keep, nkeep, s->ks))
			continue;
		if (!pick || !kc_is_ours_or_free(in, pick) ||
		    (pick->ks != NoSymbol && s->ks == NoSymbol) ||
		    ((pick->ks == NoSymbol) == (s->ks == NoSymbol) && s->stamp < pick->stamp))
			pick = s;
	}
	return pick;
}

/* Binds the keysym of the queue's head, and with it those of the key
 * presses queued behind it that have no keycode either, so that a burst
 * of typing waits for the keymap once rather than once per character.
 * Each binding has the keysym in both columns (Shift cannot change what
 * it types).  BIND_WAIT with *ready_ms set when the head's spare was
 * pressed too recently to be rebound yet. */
static enum bind_result bind_batch(struct x11_input *in, uint64_t now, uint64_t *ready_ms)
{
	KeySym keep[LOOKAHEAD], want[LOOKAHEAD];
	struct spare *picks[LOOKAHEAD];
	bool taken[MAX_SPARE] = {false};
	int nkeep = 0, nwant = 0, nbound = 0, level;
	bool head_ok = false;

	/* Another process (the other cloche program, xdotool) may have bound
	 * spares since our last MappingNotify: look at the current map. */
	if (load_map(in) == -1)
		return BIND_NONE;
	for (int i = 0; i < in->qlen && i < LOOKAHEAD; i++) {
		const struct queued *q = &in->queue[(in->qhead + i) % QUEUE_MAX];

		if (!q->is_key || !q->down || in_set(keep, nkeep, q->ks))
			continue;
		keep[nkeep++] = q->ks;
		if (!find_keycode(in, q->ks, &level))
			want[nwant++] = q->ks;
	}
	for (int i = 0; i < nwant; i++) {
		struct spare *s = pick_spare(in, keep, nkeep, taken, false);

		/* Every spare holds a keysym wanted further on (the head goes
		 * first, its successors are bound again when their turn comes),
		 * or another process holds them all. */
		if (!s && i == 0)
			s = pick_spare(in, NULL, 0, taken, false);
		if (!s && i == 0)
			s = pick_spare(in, NULL, 0, taken, true);
		if (!s)
			break;
		if (s->ks != NoSymbol && now < in->used_ms[s->kc] + (uint64_t)in->settle_ms) {
			if (i == 0) {
				*ready_ms = in->used_ms[s->kc] + (uint64_t)in->settle_ms;
				return BIND_WAIT;
			}
			break; /* the rest waits for the next batch */
		}
		taken[s - in->spare] = true;
		picks[nbound++] = s;
		XChangeKeyboardMapping(in->dpy, s->kc, 2, (KeySym[2]){want[i], want[i]}, 1);
	}
	if (nbound == 0)
		return BIND_NONE;
	/* Our own MappingNotify will reload the map too; do it now so the next
	 * lookups see the bindings, and so a refused change shows. */
	if (load_map(in) == -1)
		return BIND_NONE;
	for (int i = 0; i < nbound; i++) {
		struct spare *s = picks[i];

		if (sym_at(in, s->kc, 0) != want[i]) {
			log_warn("cannot bind a spare keycode", "{s:i, s:I}", "keycode", (int)s->kc,
				 "keysym", (json_int_t)want[i]);
			s->ks = NoSymbol;
			continue;
		}
		s->ks = want[i];
		s->stamp = ++in->clock;
		head_ok |= i == 0;
	}
	log_debug("bound keysyms to spare keycodes", "{s:i}", "count", nbound);
	return head_ok ? BIND_DONE : BIND_NONE;
}

static void fake_key(struct x11_input *in, KeyCode kc, bool down)
{
	XTestFakeKeyEvent(in->dpy, kc, down ? True : False, CurrentTime);
	in->down[kc] = down;
	in->used_ms[kc] = util_now_ms();
}

/* Marks the spare bound to kc (if any) as just used. */
static void touch_spare(struct x11_input *in, KeyCode kc)
{
	for (int i = 0; i < in->nspare; i++)
		if (in->spare[i].kc == kc && in->spare[i].ks != NoSymbol)
			in->spare[i].stamp = ++in->clock;
}

/* The keycode of the first modifier key in row index, for faking Shift. */
static KeyCode modifier_keycode(const struct x11_input *in, int index)
{
	const KeyCode *row = in->modmap->modifiermap + index * in->modmap->max_keypermod;

	for (int i = 0; i < in->modmap->max_keypermod; i++)
		if (row[i])
			return row[i];
	return 0;
}

static bool caps_locked(struct x11_input *in)
{
	XkbStateRec st;

	if (XkbGetState(in->dpy, XkbUseCoreKbd, &st) != Success)
		return false;
	return (st.locked_mods & LockMask) != 0;
}

static void remember_press(struct x11_input *in, KeySym ks, KeyCode kc)
{
	touch_spare(in, kc);
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
static KeyCode forget_press(struct x11_input *in, KeySym ks)
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
static void key_down(struct x11_input *in, KeySym ks)
{
	int level = 0;
	KeyCode kc = find_keycode(in, ks, &level);
	bool shift_held, need_shift, shortcut;
	KeyCode held_shift[8];
	int nheld = 0;

	if (!kc) {
		log_warn("no keycode for keysym", "{s:I}", "keysym", (json_int_t)ks);
		in->dropped++;
		return;
	}
	if (IsModifierKey(ks) || !is_character(ks) || sym_at(in, kc, 0) == sym_at(in, kc, 1)) {
		/* Modifiers, function keys and keys whose shift level does not
		 * change the result go through with whatever the caller holds:
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
		/* Shift is held but the unshifted keysym was asked for (e.g. Caps
		 * Lock on a viewer's side): lift Shift around this one press. */
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

static void key_up(struct x11_input *in, KeySym ks)
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

static void apply_pointer(struct x11_input *in, int mask, int x, int y)
{
	if (x < 0)
		x = 0;
	if (y < 0)
		y = 0;
	if (x >= in->width)
		x = in->width - 1;
	if (y >= in->height)
		y = in->height - 1;
	if (x != in->x || y != in->y) {
		XTestFakeMotionEvent(in->dpy, in->screen, x, y, CurrentTime);
		in->x = x;
		in->y = y;
	}
	for (int bit = 0; bit < 8; bit++) {
		int m = 1 << bit;

		if ((mask & m) != (in->buttons & m))
			XTestFakeButtonEvent(in->dpy, (unsigned)bit + 1, (mask & m) ? True : False,
					     CurrentTime);
	}
	in->buttons = mask;
}

static void release_now(struct x11_input *in)
{
	for (int kc = 0; kc < 256; kc++)
		if (in->down[kc])
			fake_key(in, (KeyCode)kc, false);
	in->npressed = 0;
	for (int bit = 0; bit < 8; bit++)
		if (in->buttons & (1 << bit))
			XTestFakeButtonEvent(in->dpy, (unsigned)bit + 1, False, CurrentTime);
	in->buttons = 0;
	in->release_pending = false;
}

/* Applies queued events in order until one needs a fresh keycode binding:
 * that one binds it and waits, with everything behind it, for the gate. */
static void drain(struct x11_input *in, uint64_t now)
{
	while (in->qlen > 0 && now >= in->gate) {
		struct queued *q = &in->queue[in->qhead];
		int level;

		if (q->is_key && q->down && !find_keycode(in, q->ks, &level)) {
			uint64_t ready = 0;

			switch (bind_batch(in, now, &ready)) {
			case BIND_DONE:
				in->gate = now + (uint64_t)in->settle_ms;
				return;
			case BIND_WAIT:
				in->gate = ready;
				return;
			case BIND_NONE:
				break; /* key_down() logs it */
			}
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

static void enqueue(struct x11_input *in, const struct queued *q)
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

void x11_input_key(struct x11_input *in, bool down, uint32_t ks)
{
	struct queued q = {.is_key = true, .down = down, .ks = (KeySym)ks};

	enqueue(in, &q);
	drain(in, util_now_ms());
}

void x11_input_pointer(struct x11_input *in, int mask, int x, int y)
{
	struct queued q = {.is_key = false, .mask = mask, .x = x, .y = y};

	enqueue(in, &q);
	drain(in, util_now_ms());
}

bool x11_input_can_type(const struct x11_input *in, uint32_t ks)
{
	int level;

	return find_keycode(in, (KeySym)ks, &level) != 0 || in->nspare > 0;
}

void x11_input_release_all(struct x11_input *in)
{
	in->release_pending = true;
	drain(in, util_now_ms());
}

unsigned long x11_input_dropped(const struct x11_input *in)
{
	return in->dropped;
}

int x11_input_buttons(const struct x11_input *in)
{
	return in->buttons;
}

int x11_input_timeout_ms(const struct x11_input *in, uint64_t now_ms)
{
	if (in->qlen == 0)
		return -1;
	return in->gate <= now_ms ? 0 : (int)(in->gate - now_ms);
}

void x11_input_run(struct x11_input *in, uint64_t now_ms)
{
	if (in->qlen > 0 || in->release_pending)
		drain(in, now_ms);
}

void x11_input_settle(struct x11_input *in)
{
	int t;

	while ((t = x11_input_timeout_ms(in, util_now_ms())) >= 0) {
		if (t > 0) {
			struct timespec ts = {t / 1000, (long)(t % 1000) * 1000000L};

			XFlush(in->dpy);
			while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
				;
		}
		drain(in, util_now_ms());
	}
	XSync(in->dpy, False);
}

void x11_input_set_settle_ms(struct x11_input *in, int ms)
{
	in->settle_ms = ms > 0 ? ms : BIND_SETTLE_MS;
}

void x11_input_set_size(struct x11_input *in, int width, int height)
{
	in->width = width;
	in->height = height;
}

bool x11_input_handle_event(struct x11_input *in, XEvent *ev)
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

struct x11_input *x11_input_new(Display *dpy, int screen, enum x11_spare_end end,
				struct err *e)
{
	struct x11_input *in = calloc(1, sizeof(*in));

	if (!in) {
		err_set(e, ENOMEM, "input");
		return NULL;
	}
	in->dpy = dpy;
	in->screen = screen;
	in->width = DisplayWidth(dpy, screen);
	in->height = DisplayHeight(dpy, screen);
	in->x = in->y = -1;
	in->settle_ms = BIND_SETTLE_MS;
	XDisplayKeycodes(dpy, &in->min_kc, &in->max_kc);
	if (in->min_kc < 8)
		in->min_kc = 8;
	if (in->max_kc > 255)
		in->max_kc = 255;
	if (load_map(in) == -1) {
		err_set(e, 0, "cannot read the keyboard mapping");
		x11_input_free(in);
		return NULL;
	}
	/* The pool's order is the LRU order of never-used spares: two
	 * processes starting from opposite ends rarely want the same one.
	 * Keycodes another process has bound as spares belong to the pool
	 * too (as a last resort), or a process restarted while the other
	 * holds them all would have none. */
	for (int i = 0; i <= in->max_kc - in->min_kc && in->nspare < MAX_SPARE; i++) {
		int kc = end == X11_SPARE_HIGH ? in->max_kc - i : in->min_kc + i;

		if (kc_unbound(in, kc) || looks_like_spare(in, kc))
			in->spare[in->nspare++] = (struct spare){(KeyCode)kc, NoSymbol, 0};
	}
	log_info("keyboard ready", "{s:i, s:i, s:i, s:i}", "min_keycode", in->min_kc,
		 "max_keycode", in->max_kc, "keysyms_per_keycode", in->per, "spare_keycodes",
		 in->nspare);
	return in;
}

void x11_input_free(struct x11_input *in)
{
	if (!in)
		return;
	if (in->map && in->dpy) {
		KeySym none[2] = {NoSymbol, NoSymbol};

		release_now(in);
		load_map(in);
		/* Only what is still ours: another process may have taken over. */
		for (int i = 0; i < in->nspare; i++)
			if (in->map && in->spare[i].ks != NoSymbol &&
			    sym_at(in, in->spare[i].kc, 0) == in->spare[i].ks)
				XChangeKeyboardMapping(in->dpy, in->spare[i].kc, 2, none, 1);
		XSync(in->dpy, False);
	}
	if (in->map)
		XFree(in->map);
	if (in->modmap)
		XFreeModifiermap(in->modmap);
	free(in);
}
