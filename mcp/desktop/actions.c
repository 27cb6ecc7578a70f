/* The computer-use actions; see actions.h.
 *
 * Every action validates all of its arguments before touching X, so a bad
 * call changes nothing.  Input goes through the shared XTest module
 * (appliance/x11), which binds characters without a keycode to spare
 * keycodes: that is what makes `type` exact for any Unicode text, where
 * xdotool-style typing through the current layout produces wrong
 * characters. */
#include "actions.h"

#include "geom.h"
#include "keys.h"

#include "appliance/x11/x11_input.h"

#include "common/log.h"
#include "common/util.h"
#include "common/utf8.h"

#include <X11/keysym.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Characters sent between checks for cancellation and progress reports. */
#define TYPE_CHUNK 64
#define KEY_SEQUENCE_MAX 32
#define DRAG_STEPS 10
#define ZOOM_MAX_SIDE 4096

static const char *const names[DESK_ACTION_COUNT] = {
	[DESK_SCREENSHOT] = "screenshot",
	[DESK_MOUSE_MOVE] = "mouse_move",
	[DESK_LEFT_CLICK] = "left_click",
	[DESK_RIGHT_CLICK] = "right_click",
	[DESK_MIDDLE_CLICK] = "middle_click",
	[DESK_DOUBLE_CLICK] = "double_click",
	[DESK_TRIPLE_CLICK] = "triple_click",
	[DESK_LEFT_CLICK_DRAG] = "left_click_drag",
	[DESK_LEFT_MOUSE_DOWN] = "left_mouse_down",
	[DESK_LEFT_MOUSE_UP] = "left_mouse_up",
	[DESK_SCROLL] = "scroll",
	[DESK_KEY] = "key",
	[DESK_TYPE] = "type",
	[DESK_HOLD_KEY] = "hold_key",
	[DESK_WAIT] = "wait",
	[DESK_CURSOR_POSITION] = "cursor_position",
	[DESK_ZOOM] = "zoom",
};

struct desk_actions {
	struct desk_screen *scr;
	struct desk_actions_opts o;
	struct desk_seen *seen;
};

/* The sizes one call works with: model pixels and real pixels. */
struct frame {
	int mw, mh; /* model */
	int rw, rh; /* real */
};

const char *desk_action_name(enum desk_action act)
{
	return (unsigned)act < DESK_ACTION_COUNT ? names[act] : NULL;
}

int desk_action_parse(const char *name)
{
	for (int i = 0; i < DESK_ACTION_COUNT; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

static struct frame frame_of(struct desk_actions *a)
{
	struct frame f;

	/* The size now: a viewer (noVNC's remote resize) or xrandr may have
	 * changed it since the last call. */
	desk_screen_current_size(a->scr, &f.rw, &f.rh);
	if (a->o.model_auto)
		desk_size_auto(f.rw, f.rh, &f.mw, &f.mh);
	else {
		f.mw = a->o.model_w;
		f.mh = a->o.model_h;
	}
	if (f.mw <= 0 || f.mh <= 0) {
		f.mw = f.rw;
		f.mh = f.rh;
	}
	return f;
}

void desk_actions_model_size(struct desk_actions *a, int *w, int *h)
{
	struct frame f = frame_of(a);

	*w = f.mw;
	*h = f.mh;
}

void desk_actions_real_size(struct desk_actions *a, int *w, int *h)
{
	desk_screen_current_size(a->scr, w, h);
}

static void reply_text(struct desk_reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void reply_text(struct desk_reply *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->text, sizeof(r->text), fmt, ap);
	va_end(ap);
}

static int reply_fail(struct desk_reply *r, const struct err *e, const char *what)
{
	r->failed = true;
	reply_text(r, "%s: %s", what, e->msg);
	return 0;
}

/* --- arguments ---------------------------------------------------------- */

/* An integer-valued JSON number (models sometimes send 512.0). */
static int num_int(const json_t *v, long long *out)
{
	double d;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (!json_is_real(v))
		return -1;
	d = json_real_value(v);
	if (!isfinite(d) || d < -1e9 || d > 1e9)
		return -1;
	*out = llround(d);
	return 0;
}

/* Reads [x, y] at key into real pixels.  Returns 1 when present, 0 when
 * absent (an error if required), -1 with e set when malformed. */
static int arg_coord(const json_t *args, const char *key, bool required, const struct frame *f,
		     int *x, int *y, struct err *e)
{
	const json_t *v = json_object_get(args, key);
	long long cx, cy;

	if (!v || json_is_null(v)) {
		if (required)
			return err_set(e, 0, "`%s` is required: [x, y] in screenshot pixels",
				       key);
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) != 2 ||
	    num_int(json_array_get(v, 0), &cx) == -1 || num_int(json_array_get(v, 1), &cy) == -1)
		return err_set(e, 0, "`%s` must be an array of two integers [x, y]", key);
	if (cx < 0 || cy < 0 || cx >= f->mw || cy >= f->mh)
		return err_set(e, 0,
			       "`%s` [%lld, %lld] is outside the display (%dx%d: x 0-%d, y 0-%d)",
			       key, cx, cy, f->mw, f->mh, f->mw - 1, f->mh - 1);
	*x = desk_to_real((int)cx, f->mw, f->rw);
	*y = desk_to_real((int)cy, f->mh, f->rh);
	return 1;
}

/* Reads a string at key.  NULL when absent (e set if required or when it
 * is not a string; check e->msg[0]). */
static int arg_str(const json_t *args, const char *key, bool required, const char **out,
		   size_t *len, struct err *e)
{
	const json_t *v = json_object_get(args, key);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return err_set(e, 0, "`%s` is required (a string)", key);
		return 0;
	}
	if (!json_is_string(v))
		return err_set(e, 0, "`%s` must be a string", key);
	*out = json_string_value(v);
	if (len)
		*len = json_string_length(v);
	return 1;
}

/* A number of seconds in [0, DESK_MAX_DURATION_S]. */
static int arg_duration(const json_t *args, bool required, double def, double *out,
			struct err *e)
{
	const json_t *v = json_object_get(args, "duration");

	*out = def;
	if (!v || json_is_null(v)) {
		if (required)
			return err_set(e, 0, "`duration` is required (seconds, 0-%d)",
				       DESK_MAX_DURATION_S);
		return 0;
	}
	if (!json_is_number(v))
		return err_set(e, 0, "`duration` must be a number of seconds");
	*out = json_number_value(v);
	if (!(*out >= 0 && *out <= DESK_MAX_DURATION_S))
		return err_set(e, 0, "`duration` %g is out of range (0-%d seconds)", *out,
			       DESK_MAX_DURATION_S);
	return 1;
}

/* An optional boolean (false when absent). */
static int arg_bool(const json_t *args, const char *key, bool *out, struct err *e)
{
	const json_t *v = json_object_get(args, key);

	*out = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return err_set(e, 0, "`%s` must be true or false", key);
	*out = json_is_true(v);
	return 1;
}

/* The `text` of click and scroll actions: modifier keys to hold. */
static int arg_modifiers(const json_t *args, struct desk_combo *mods, struct err *e)
{
	const char *s;
	int r = arg_str(args, "text", false, &s, NULL, e);

	mods->n = 0;
	if (r <= 0)
		return r;
	if (!*s)
		return 0;
	return desk_keys_modifiers(s, mods, e) == -1 ? -1 : 1;
}

/* --- input helpers (between desk_screen_begin and _end) ------------------- */

static void press_combo(struct x11_input *in, const struct desk_combo *c)
{
	for (int i = 0; i < c->n; i++)
		x11_input_key(in, true, c->ks[i]);
}

static void release_combo(struct x11_input *in, const struct desk_combo *c)
{
	for (int i = c->n - 1; i >= 0; i--)
		x11_input_key(in, false, c->ks[i]);
}

/* Clicks button (1-3) count times at the current position. */
static void click(struct x11_input *in, int button, int count, int x, int y)
{
	int base = x11_input_buttons(in);

	for (int i = 0; i < count; i++) {
		x11_input_pointer(in, base | (1 << (button - 1)), x, y);
		x11_input_pointer(in, base & ~(1 << (button - 1)), x, y);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Sleeps ms in slices, returning early (false) when the call is cancelled. */
static bool wait_ms(const struct desk_call_ctx *ctx, long ms)
{
	uint64_t end = util_now_ms() + (uint64_t)ms;

	for (;;) {
		uint64_t now = util_now_ms();

		if (ctx && ctx->cancelled && ctx->cancelled(ctx->ud))
			return false;
		if (now >= end)
			return true;
		sleep_ms(end - now > 50 ? 50 : (long)(end - now));
	}
}

/* --- screenshots ---------------------------------------------------------- */

/* Grabs real rectangle (x, y, w, h) into img, with the pointer drawn in
 * when configured (X keeps it out of the framebuffer).  Locks the screen
 * itself. */
static int grab(struct desk_actions *a, int x, int y, int w, int h, struct desk_image *img,
		struct err *e)
{
	struct desk_cursor cur = {0};
	struct err ce = ERR_INIT;
	bool drawn = false;
	int rc;

	desk_screen_begin(a->scr);
	rc = desk_screen_grab(a->scr, x, y, w, h, img, e);
	if (rc == 0 && a->o.pointer)
		drawn = desk_screen_cursor(a->scr, &cur, &ce) == 0;
	desk_screen_end(a->scr);
	if (drawn)
		desk_image_draw_cursor(img, x, y, &cur);
	else if (rc == 0 && a->o.pointer)
		log_debug("pointer not drawn", "{s:s}", "error", ce.msg);
	desk_cursor_free(&cur);
	return rc;
}

/* Scales img to ow x oh (if different) and encodes it into r. */
static int encode(struct desk_actions *a, const struct desk_image *img, int ow, int oh,
		  struct desk_reply *r, struct err *e)
{
	struct desk_image scaled = {0};
	const struct desk_image *out = img;
	int rc;

	if (ow != img->w || oh != img->h) {
		if (desk_image_scale(img, ow, oh, &scaled, e) == -1)
			return -1;
		out = &scaled;
	}
	free(r->png);
	r->png = NULL;
	rc = desk_image_png(out, a->o.png_level, &r->png, &r->png_len, e);
	if (rc == 0) {
		r->png_w = out->w;
		r->png_h = out->h;
	}
	desk_image_free(&scaled);
	return rc;
}

/* "scale 0.8", or "scale 0.8 x 0.96" when the axes differ: image pixels
 * per real pixel. */
static void scale_words(char *buf, size_t len, int iw, int ih, int rw, int rh)
{
	double sx = (double)iw / rw, sy = (double)ih / rh;

	if (iw * rh == ih * rw)
		snprintf(buf, len, "scale %.4g", sx);
	else
		snprintf(buf, len, "scale %.4g x %.4g", sx, sy);
}

/* The whole screen into r, or r->unchanged when if_changed and the
 * client's last image was this same screen. */
static int shoot_screen(struct desk_actions *a, const struct desk_call_ctx *ctx, bool if_changed,
			struct desk_reply *r, struct err *e)
{
	struct frame f = frame_of(a);
	const char *client = ctx && ctx->client ? ctx->client : "";
	struct desk_image img = {0};
	char sc[48];
	int64_t at;

	r->display_w = f.mw;
	r->display_h = f.mh;
	r->real_w = f.rw;
	r->real_h = f.rh;
	if (grab(a, 0, 0, f.rw, f.rh, &img, e) == -1)
		return -1;
	r->whole = true;
	r->hash = desk_image_hash(&img);
	if (if_changed && desk_seen_same(a->seen, client, r->hash, &at)) {
		time_t secs = (time_t)(at / 1000);
		struct tm tm;
		char when[32];

		desk_image_free(&img);
		gmtime_r(&secs, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		r->unchanged = true;
		r->seen_ms = at;
		snprintf(r->note, sizeof(r->note),
			 "unchanged since %s.%03d UTC (the screenshot you were sent %.1f s ago; "
			 "hash %016llx); no image sent: the screen is %dx%d pixels as you saw it",
			 when, (int)(at % 1000), (double)(util_wall_ms() - at) / 1000,
			 (unsigned long long)r->hash, f.mw, f.mh);
		return 0;
	}
	if (encode(a, &img, f.mw, f.mh, r, e) == -1) {
		desk_image_free(&img);
		return -1;
	}
	desk_image_free(&img);
	desk_seen_put(a->seen, client, r->hash, util_wall_ms());
	scale_words(sc, sizeof(sc), r->png_w, r->png_h, f.rw, f.rh);
	if (f.mw == f.rw && f.mh == f.rh)
		snprintf(r->note, sizeof(r->note),
			 "screenshot %dx%d: the whole display at its real size (%s); "
			 "coordinates are these pixels",
			 r->png_w, r->png_h, sc);
	else
		snprintf(r->note, sizeof(r->note),
			 "screenshot %dx%d of the whole %dx%d display (%s); coordinates are "
			 "in these screenshot pixels (display_width_px=%d, display_height_px=%d), "
			 "not the display's",
			 r->png_w, r->png_h, f.rw, f.rh, sc, f.mw, f.mh);
	return 0;
}

/* After an action that may change the screen: the settle pause, then a
 * screenshot (when configured).  A failure is reported, not fatal. */
static int after_action(struct desk_actions *a, const struct desk_call_ctx *ctx,
			struct desk_reply *r)
{
	struct err e = ERR_INIT;

	if (!a->o.screenshot_after)
		return 0;
	if (a->o.settle_ms > 0 && !wait_ms(ctx, a->o.settle_ms))
		return 0;
	if (shoot_screen(a, ctx, false, r, &e) == -1)
		log_warn("screenshot after an action failed", "{s:s}", "error", e.msg);
	return 0;
}

/* --- the actions --------------------------------------------------------- */

static int do_pointer_action(struct desk_actions *a, enum desk_action act, const json_t *args,
			     const struct desk_call_ctx *ctx, struct desk_reply *r, struct err *e)
{
	struct frame f = frame_of(a);
	struct desk_combo mods = {.n = 0};
	struct x11_input *in;
	int x = 0, y = 0, has, button = 1, count = 1;
	struct err qe = ERR_INIT;

	has = arg_coord(args, "coordinate", act == DESK_MOUSE_MOVE, &f, &x, &y, e);
	if (has == -1)
		return -1;
	if (act != DESK_MOUSE_MOVE && arg_modifiers(args, &mods, e) == -1)
		return -1;
	switch (act) {
	case DESK_RIGHT_CLICK: button = 3; break;
	case DESK_MIDDLE_CLICK: button = 2; break;
	case DESK_DOUBLE_CLICK: count = 2; break;
	case DESK_TRIPLE_CLICK: count = 3; break;
	default: break;
	}
	in = desk_screen_begin(a->scr);
	if (!has && desk_screen_pointer(a->scr, &x, &y, &qe) == -1) {
		desk_screen_end(a->scr);
		return reply_fail(r, &qe, names[act]);
	}
	press_combo(in, &mods);
	switch (act) {
	case DESK_MOUSE_MOVE:
		x11_input_pointer(in, x11_input_buttons(in), x, y);
		break;
	case DESK_LEFT_MOUSE_DOWN:
		x11_input_pointer(in, x11_input_buttons(in) | 1, x, y);
		break;
	case DESK_LEFT_MOUSE_UP:
		x11_input_pointer(in, x11_input_buttons(in) & ~1, x, y);
		break;
	default:
		/* Move first and let the target see the pointer arrive (hover
		 * handlers, menus) before the button goes down. */
		x11_input_pointer(in, x11_input_buttons(in), x, y);
		desk_screen_flush(a->scr);
		click(in, button, count, x, y);
		break;
	}
	release_combo(in, &mods);
	desk_screen_end(a->scr);
	reply_text(r, "%s at (%d, %d)%s%s", names[act], desk_to_model(x, f.mw, f.rw),
		   desk_to_model(y, f.mh, f.rh), mods.n ? " holding " : "",
		   mods.n ? json_string_value(json_object_get(args, "text")) : "");
	return after_action(a, ctx, r);
}

static int do_drag(struct desk_actions *a, const json_t *args, const struct desk_call_ctx *ctx,
		   struct desk_reply *r, struct err *e)
{
	struct frame f = frame_of(a);
	int sx = 0, sy = 0, ex, ey, has;
	struct desk_combo mods;
	struct x11_input *in;
	struct err qe = ERR_INIT;

	if ((has = arg_coord(args, "start_coordinate", false, &f, &sx, &sy, e)) == -1 ||
	    arg_coord(args, "coordinate", true, &f, &ex, &ey, e) == -1 ||
	    arg_modifiers(args, &mods, e) == -1)
		return -1;
	in = desk_screen_begin(a->scr);
	if (!has && desk_screen_pointer(a->scr, &sx, &sy, &qe) == -1) {
		desk_screen_end(a->scr);
		return reply_fail(r, &qe, "left_click_drag");
	}
	press_combo(in, &mods);
	x11_input_pointer(in, 0, sx, sy);
	desk_screen_flush(a->scr);
	x11_input_pointer(in, 1, sx, sy);
	desk_screen_flush(a->scr);
	/* Intermediate motion: drag sources start a drag only on motion, and
	 * some need a few events past a threshold. */
	for (int i = 1; i <= DRAG_STEPS; i++) {
		x11_input_pointer(in, 1, sx + (ex - sx) * i / DRAG_STEPS,
				  sy + (ey - sy) * i / DRAG_STEPS);
		desk_screen_flush(a->scr);
		sleep_ms(10);
	}
	x11_input_pointer(in, 0, ex, ey);
	release_combo(in, &mods);
	desk_screen_end(a->scr);
	reply_text(r, "dragged from (%d, %d) to (%d, %d)", desk_to_model(sx, f.mw, f.rw),
		   desk_to_model(sy, f.mh, f.rh), desk_to_model(ex, f.mw, f.rw),
		   desk_to_model(ey, f.mh, f.rh));
	return after_action(a, ctx, r);
}

static int do_scroll(struct desk_actions *a, const json_t *args, const struct desk_call_ctx *ctx,
		     struct desk_reply *r, struct err *e)
{
	struct frame f = frame_of(a);
	const json_t *amount_v = json_object_get(args, "scroll_amount");
	long long amount = 3;
	const char *dir;
	int x = 0, y = 0, has, button;
	struct desk_combo mods;
	struct x11_input *in;
	struct err qe = ERR_INIT;

	if ((has = arg_coord(args, "coordinate", false, &f, &x, &y, e)) == -1 ||
	    arg_str(args, "scroll_direction", true, &dir, NULL, e) == -1 ||
	    arg_modifiers(args, &mods, e) == -1)
		return -1;
	if (strcmp(dir, "up") == 0)
		button = 4;
	else if (strcmp(dir, "down") == 0)
		button = 5;
	else if (strcmp(dir, "left") == 0)
		button = 6;
	else if (strcmp(dir, "right") == 0)
		button = 7;
	else
		return err_set(e, 0, "`scroll_direction` must be up, down, left or right");
	if (amount_v && !json_is_null(amount_v)) {
		if (num_int(amount_v, &amount) == -1)
			return err_set(e, 0, "`scroll_amount` must be an integer");
		if (amount < 0 || amount > 100)
			return err_set(e, 0, "`scroll_amount` %lld is out of range (0-100)",
				       amount);
	}
	in = desk_screen_begin(a->scr);
	if (!has && desk_screen_pointer(a->scr, &x, &y, &qe) == -1) {
		desk_screen_end(a->scr);
		return reply_fail(r, &qe, "scroll");
	}
	x11_input_pointer(in, x11_input_buttons(in), x, y);
	press_combo(in, &mods);
	for (long long i = 0; i < amount; i++) {
		int base = x11_input_buttons(in);

		x11_input_pointer(in, base | (1 << (button - 1)), x, y);
		x11_input_pointer(in, base, x, y);
	}
	release_combo(in, &mods);
	desk_screen_end(a->scr);
	reply_text(r, "scrolled %s %lld at (%d, %d)", dir, amount, desk_to_model(x, f.mw, f.rw),
		   desk_to_model(y, f.mh, f.rh));
	return after_action(a, ctx, r);
}

static int do_key(struct desk_actions *a, const json_t *args, const struct desk_call_ctx *ctx,
		  struct desk_reply *r, struct err *e)
{
	struct desk_combo seq[KEY_SEQUENCE_MAX];
	struct x11_input *in;
	const char *text;
	int n;

	if (arg_str(args, "text", true, &text, NULL, e) == -1 ||
	    desk_keys_sequence(text, seq, KEY_SEQUENCE_MAX, &n, e) == -1)
		return -1;
	in = desk_screen_begin(a->scr);
	for (int i = 0; i < n; i++) {
		press_combo(in, &seq[i]);
		release_combo(in, &seq[i]);
	}
	desk_screen_end(a->scr);
	reply_text(r, "pressed %.400s", text);
	return after_action(a, ctx, r);
}

static int do_hold_key(struct desk_actions *a, const json_t *args,
		       const struct desk_call_ctx *ctx, struct desk_reply *r, struct err *e)
{
	struct desk_combo c;
	struct x11_input *in;
	const char *text;
	size_t len;
	double secs;

	if (arg_str(args, "text", true, &text, &len, e) == -1 ||
	    desk_keys_combo(text, len, &c, e) == -1 || arg_duration(args, true, 0, &secs, e) == -1)
		return -1;
	in = desk_screen_begin(a->scr);
	press_combo(in, &c);
	desk_screen_end(a->scr);
	/* Released however the wait ends: a key must never stay stuck. */
	wait_ms(ctx, (long)(secs * 1000));
	in = desk_screen_begin(a->scr);
	release_combo(in, &c);
	desk_screen_end(a->scr);
	reply_text(r, "held %.400s for %g s", text, secs);
	return after_action(a, ctx, r);
}

static int do_type(struct desk_actions *a, const json_t *args, const struct desk_call_ctx *ctx,
		   struct desk_reply *r, struct err *e)
{
	const char *text, *p, *end;
	uint32_t *syms;
	size_t len, n = 0, sent = 0;
	struct x11_input *in;
	bool cancelled = false;
	unsigned long dropped;

	if (arg_str(args, "text", true, &text, &len, e) == -1)
		return -1;
	syms = malloc(sizeof(*syms) * (len + 1));
	if (!syms) {
		r->failed = true;
		reply_text(r, "type: out of memory");
		return 0;
	}
	/* All characters are checked before the first key goes out. */
	for (p = text, end = text + len; p < end;) {
		int32_t cp = utf8_next(&p, end);
		uint32_t ks;

		if (cp < 0) {
			free(syms);
			return err_set(e, 0, "`text` is not valid UTF-8");
		}
		if (cp == '\r' && p < end && *p == '\n')
			continue; /* CRLF is one Return */
		ks = desk_keys_char((uint32_t)cp);
		if (!ks) {
			free(syms);
			return err_set(e, 0, "`text` holds control character U+%04X, which no "
					      "key types (use the key action)",
				       (unsigned)cp);
		}
		if (n == DESK_MAX_TYPE_CHARS) {
			free(syms);
			return err_set(e, 0, "`text` is longer than %d characters; split it",
				       DESK_MAX_TYPE_CHARS);
		}
		syms[n++] = ks;
	}
	if (n == 0) {
		free(syms);
		return err_set(e, 0, "`text` is empty");
	}
	in = desk_screen_begin(a->scr);
	dropped = x11_input_dropped(in);
	while (sent < n) {
		size_t chunk = n - sent < TYPE_CHUNK ? n - sent : TYPE_CHUNK;

		for (size_t i = 0; i < chunk; i++) {
			x11_input_key(in, true, syms[sent + i]);
			x11_input_key(in, false, syms[sent + i]);
		}
		desk_screen_flush(a->scr);
		sent += chunk;
		if (ctx && ctx->progress && n > TYPE_CHUNK)
			ctx->progress(ctx->ud, (double)sent, (double)n, NULL);
		if (sent < n && ctx && ctx->cancelled && ctx->cancelled(ctx->ud)) {
			cancelled = true;
			break;
		}
	}
	dropped = x11_input_dropped(in) - dropped;
	desk_screen_end(a->scr);
	free(syms);
	if (dropped) {
		/* Only when every spare keycode is held down at once. */
		r->failed = true;
		reply_text(r, "type: %lu of %zu characters could not be typed (no free keycode)",
			   dropped, n);
		return 0;
	}
	reply_text(r, "typed %zu of %zu characters%s", sent, n, cancelled ? " (cancelled)" : "");
	return after_action(a, ctx, r);
}

static int do_wait(struct desk_actions *a, const json_t *args, const struct desk_call_ctx *ctx,
		   struct desk_reply *r, struct err *e)
{
	double secs;
	bool if_changed;
	struct err se = ERR_INIT;

	if (arg_duration(args, true, 0, &secs, e) == -1 ||
	    arg_bool(args, "if_changed", &if_changed, e) == -1)
		return -1;
	if (!wait_ms(ctx, (long)(secs * 1000)))
		return 0;
	reply_text(r, "waited %g s", secs);
	if (shoot_screen(a, ctx, if_changed, r, &se) == -1)
		return reply_fail(r, &se, "screenshot");
	return 0;
}

static int do_screenshot(struct desk_actions *a, const json_t *args,
			 const struct desk_call_ctx *ctx, struct desk_reply *r, struct err *e)
{
	bool if_changed;
	struct err se = ERR_INIT;

	if (arg_bool(args, "if_changed", &if_changed, e) == -1)
		return -1;
	if (shoot_screen(a, ctx, if_changed, r, &se) == -1)
		return reply_fail(r, &se, "screenshot");
	return 0;
}

static int do_cursor(struct desk_actions *a, struct desk_reply *r)
{
	struct frame f = frame_of(a);
	struct err qe = ERR_INIT;
	int x, y, rc;

	desk_screen_begin(a->scr);
	rc = desk_screen_pointer(a->scr, &x, &y, &qe);
	desk_screen_end(a->scr);
	if (rc == -1)
		return reply_fail(r, &qe, "cursor_position");
	r->has_cursor = true;
	r->cursor_x = desk_to_model(x, f.mw, f.rw);
	r->cursor_y = desk_to_model(y, f.mh, f.rh);
	r->display_w = f.mw;
	r->display_h = f.mh;
	reply_text(r, "X=%d,Y=%d", r->cursor_x, r->cursor_y);
	return 0;
}

static int do_zoom(struct desk_actions *a, const json_t *args, struct desk_reply *r,
		   struct err *e)
{
	struct frame f = frame_of(a);
	const json_t *v = json_object_get(args, "region"), *sv = json_object_get(args, "scale");
	long long c[4];
	int x0, y0, x1, y1, ow, oh, rc;
	double scale = 1;
	struct desk_image img = {0};
	char sc[48];
	struct err se = ERR_INIT;

	if (!v || json_is_null(v))
		return err_set(e, 0, "`region` is required: [x0, y0, x1, y1]");
	if (!json_is_array(v) || json_array_size(v) != 4)
		return err_set(e, 0, "`region` must be an array of four integers [x0, y0, x1, y1]");
	for (int i = 0; i < 4; i++)
		if (num_int(json_array_get(v, (size_t)i), &c[i]) == -1)
			return err_set(e, 0,
				       "`region` must be an array of four integers [x0, y0, x1, y1]");
	if (c[0] < 0 || c[1] < 0 || c[2] > f.mw || c[3] > f.mh || c[0] >= c[2] || c[1] >= c[3])
		return err_set(e, 0,
			       "`region` [%lld, %lld, %lld, %lld] must have 0 <= x0 < x1 <= %d and "
			       "0 <= y0 < y1 <= %d",
			       c[0], c[1], c[2], c[3], f.mw, f.mh);
	if (sv && !json_is_null(sv)) {
		if (!json_is_number(sv))
			return err_set(e, 0, "`scale` must be a number");
		scale = json_number_value(sv);
		if (!(scale > 0 && scale <= 8))
			return err_set(e, 0, "`scale` %g is out of range (0-8)", scale);
	}
	/* Corners map to real pixel edges, so the region keeps all it covers. */
	x0 = (int)((double)c[0] * f.rw / f.mw);
	y0 = (int)((double)c[1] * f.rh / f.mh);
	x1 = (int)ceil((double)c[2] * f.rw / f.mw);
	y1 = (int)ceil((double)c[3] * f.rh / f.mh);
	if (x1 > f.rw)
		x1 = f.rw;
	if (y1 > f.rh)
		y1 = f.rh;
	ow = (int)lround((x1 - x0) * scale);
	oh = (int)lround((y1 - y0) * scale);
	if (ow < 1)
		ow = 1;
	if (oh < 1)
		oh = 1;
	if (ow > ZOOM_MAX_SIDE || oh > ZOOM_MAX_SIDE)
		return err_set(e, 0, "zoomed image %dx%d is larger than %d pixels a side", ow,
			       oh, ZOOM_MAX_SIDE);
	r->display_w = f.mw;
	r->display_h = f.mh;
	r->real_w = f.rw;
	r->real_h = f.rh;
	if (grab(a, x0, y0, x1 - x0, y1 - y0, &img, &se) == -1)
		return reply_fail(r, &se, "zoom");
	rc = encode(a, &img, ow, oh, r, &se);
	desk_image_free(&img);
	if (rc == -1)
		return reply_fail(r, &se, "zoom");
	r->has_region = true;
	for (int i = 0; i < 4; i++)
		r->region[i] = (int)c[i];
	r->real_region[0] = x0;
	r->real_region[1] = y0;
	r->real_region[2] = x1;
	r->real_region[3] = y1;
	scale_words(sc, sizeof(sc), ow, oh, x1 - x0, y1 - y0);
	snprintf(r->note, sizeof(r->note),
		 "zoom of region [%d, %d, %d, %d] of the %dx%d screenshot space: real pixels "
		 "[%d, %d, %d, %d] of the %dx%d display, shown %dx%d (%s of real pixels); "
		 "coordinates stay in screenshot pixels, not this image's",
		 r->region[0], r->region[1], r->region[2], r->region[3], f.mw, f.mh, x0, y0, x1,
		 y1, f.rw, f.rh, ow, oh, sc);
	return 0;
}

int desk_actions_run(struct desk_actions *a, enum desk_action act, const json_t *args,
		     const struct desk_call_ctx *ctx, struct desk_reply *r, struct err *e)
{
	struct frame f = frame_of(a);

	memset(r, 0, sizeof(*r));
	r->display_w = f.mw;
	r->display_h = f.mh;
	r->real_w = f.rw;
	r->real_h = f.rh;
	if (!json_is_object(args))
		return err_set(e, 0, "arguments must be an object");
	if (act == DESK_MOUSE_MOVE || desk_action_is_button(act))
		return do_pointer_action(a, act, args, ctx, r, e);
	switch (act) {
	case DESK_SCREENSHOT:
		return do_screenshot(a, args, ctx, r, e);
	case DESK_LEFT_CLICK_DRAG:
		return do_drag(a, args, ctx, r, e);
	case DESK_SCROLL:
		return do_scroll(a, args, ctx, r, e);
	case DESK_KEY:
		return do_key(a, args, ctx, r, e);
	case DESK_TYPE:
		return do_type(a, args, ctx, r, e);
	case DESK_HOLD_KEY:
		return do_hold_key(a, args, ctx, r, e);
	case DESK_WAIT:
		return do_wait(a, args, ctx, r, e);
	case DESK_CURSOR_POSITION:
		return do_cursor(a, r);
	case DESK_ZOOM:
		return do_zoom(a, args, r, e);
	default: /* the pointer actions are above; DESK_ACTION_COUNT is none */
		break;
	}
	return err_set(e, 0, "unknown action");
}

int desk_actions_run_json(struct desk_actions *a, const json_t *args,
			  const struct desk_call_ctx *ctx, struct desk_reply *r, struct err *e)
{
	const json_t *v = json_is_object(args) ? json_object_get(args, "action") : NULL;
	int act;

	memset(r, 0, sizeof(*r));
	if (!v)
		return err_set(e, 0, "`action` is required");
	if (!json_is_string(v))
		return err_set(e, 0, "`action` must be a string");
	act = desk_action_parse(json_string_value(v));
	if (act < 0)
		return err_set(e, 0,
			       "unknown action `%.60s`; one of: screenshot, mouse_move, left_click, "
			       "right_click, middle_click, double_click, triple_click, "
			       "left_click_drag, left_mouse_down, left_mouse_up, scroll, key, type, "
			       "hold_key, wait, cursor_position, zoom",
			       json_string_value(v));
	return desk_actions_run(a, (enum desk_action)act, args, ctx, r, e);
}

void desk_reply_free(struct desk_reply *r)
{
	free(r->png);
	r->png = NULL;
}

struct desk_actions *desk_actions_new(struct desk_screen *s, const struct desk_actions_opts *o,
				      struct err *e)
{
	struct desk_actions *a = calloc(1, sizeof(*a));

	if (!a) {
		err_set(e, ENOMEM, "actions");
		return NULL;
	}
	if ((o->model_w > 0) != (o->model_h > 0)) {
		free(a);
		err_set(e, 0, "model size %dx%d", o->model_w, o->model_h);
		return NULL;
	}
	a->seen = desk_seen_new(0);
	if (!a->seen) {
		free(a);
		err_set(e, ENOMEM, "actions");
		return NULL;
	}
	a->scr = s;
	a->o = *o;
	return a;
}

void desk_actions_free(struct desk_actions *a)
{
	if (!a)
		return;
	desk_seen_free(a->seen);
	free(a);
}
