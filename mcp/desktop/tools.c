/* Tool declarations and the glue from MCP calls to the action layer; see
 * tools.h.  The schemas are written out as JSON text once, with the
 * display size filled in, and live as long as the process. */
#include "tools.h"

#include "control.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COORD_SCHEMA(what)                                                                   \
	"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":2,"  \
	"\"description\":\"" what "\"}"
#define TEXT_MOD_SCHEMA                                                                      \
	"{\"type\":\"string\",\"description\":\"modifier keys to hold during the action, "    \
	"e.g. shift, ctrl, alt, super, ctrl+shift\"}"

/* Argument schemas, shared by the computer tool and the separate tools. */
static const char *const prop_coordinate =
	"\"coordinate\":" COORD_SCHEMA("[x, y] in screenshot pixels; default: where the pointer is");
static const char *const prop_coordinate_req =
	"\"coordinate\":" COORD_SCHEMA("[x, y] in screenshot pixels");
static const char *const prop_start =
	"\"start_coordinate\":" COORD_SCHEMA("[x, y] where the drag starts; default: where the pointer is");
static const char *const prop_mods = "\"text\":" TEXT_MOD_SCHEMA;
static const char *const prop_direction =
	"\"scroll_direction\":{\"type\":\"string\",\"enum\":[\"up\",\"down\",\"left\",\"right\"]}";
static const char *const prop_amount =
	"\"scroll_amount\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":100,"
	"\"description\":\"wheel clicks; default 3\"}";
static const char *const prop_duration =
	"\"duration\":{\"type\":\"number\",\"minimum\":0,\"maximum\":100,\"description\":\"seconds\"}";
static const char *const prop_region =
	"\"region\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":4,"
	"\"maxItems\":4,\"description\":\"[x0, y0, x1, y1] in screenshot pixels, x1 and y1 "
	"exclusive\"}";
static const char *const prop_scale =
	"\"scale\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":8,\"description\":"
	"\"size of the zoomed image relative to the region's real pixels; default 1\"}";
static const char *const prop_if_changed =
	"\"if_changed\":{\"type\":\"boolean\",\"description\":\"true: when the screen is "
	"exactly as in the last screenshot you were sent, answer `unchanged` with its hash "
	"instead of the image (cheap polling); default false: always the image\"}";
static const char *const prop_key_text =
	"\"text\":{\"type\":\"string\",\"description\":\"xdotool-style keys: Return, ctrl+l, "
	"ctrl+shift+t, super, Page_Down, F5; several separated by spaces are pressed in turn\"}";
static const char *const prop_type_text =
	"\"text\":{\"type\":\"string\",\"description\":\"the text to type, any Unicode; "
	"newlines press Return\"}";
static const char *const prop_hold_text =
	"\"text\":{\"type\":\"string\",\"description\":\"keys to hold, e.g. shift or ctrl+alt\"}";

struct tool_def {
	enum desk_action act;
	const char *summary;
	const char *required[3]; /* NULL-terminated */
	bool read_only;
};

static const struct tool_def defs[] = {
	{DESK_SCREENSHOT, "Take a PNG screenshot of the whole display (if_changed: only when it "
			  "changed since the last one you were sent).", {NULL}, true},
	{DESK_MOUSE_MOVE, "Move the pointer.", {"coordinate", NULL}, false},
	{DESK_LEFT_CLICK, "Click the left button.", {NULL}, false},
	{DESK_RIGHT_CLICK, "Click the right button.", {NULL}, false},
	{DESK_MIDDLE_CLICK, "Click the middle button.", {NULL}, false},
	{DESK_DOUBLE_CLICK, "Double-click the left button.", {NULL}, false},
	{DESK_TRIPLE_CLICK, "Triple-click the left button (selects a line).", {NULL},
	 false},
	{DESK_LEFT_CLICK_DRAG, "Press the left button at start_coordinate, move to coordinate, "
			       "release.", {"coordinate", NULL}, false},
	{DESK_LEFT_MOUSE_DOWN, "Press (and keep pressed) the left button.", {NULL},
	 false},
	{DESK_LEFT_MOUSE_UP, "Release the left button.", {NULL}, false},
	{DESK_SCROLL, "Turn the wheel scroll_amount clicks in scroll_direction at coordinate.",
	 {"scroll_direction", NULL}, false},
	{DESK_KEY, "Press a key or key combination.", {"text", NULL}, false},
	{DESK_TYPE, "Type text exactly, any Unicode characters included.", {"text", NULL},
	 false},
	{DESK_HOLD_KEY, "Hold keys down for duration seconds.", {"text", "duration", NULL},
	 false},
	{DESK_WAIT, "Wait duration seconds, then take a screenshot (if_changed as for "
		    "screenshot).", {"duration", NULL}, true},
	{DESK_CURSOR_POSITION, "Tell where the pointer is (X=..,Y=..).", {NULL}, true},
	{DESK_ZOOM, "A PNG of one region of the display at full resolution.", {"region", NULL}, true},
};

/* The properties each action takes. */
static void props_of(enum desk_action act, const char **p)
{
	int n = 0;

	if (desk_action_is_button(act)) {
		p[n++] = prop_coordinate;
		p[n++] = prop_mods;
		p[n] = NULL;
		return;
	}
	switch (act) {
	case DESK_MOUSE_MOVE:
		p[n++] = prop_coordinate_req;
		break;
	case DESK_LEFT_CLICK_DRAG:
		p[n++] = prop_start;
		p[n++] = prop_coordinate_req;
		p[n++] = prop_mods;
		break;
	case DESK_SCROLL:
		p[n++] = prop_coordinate;
		p[n++] = prop_direction;
		p[n++] = prop_amount;
		p[n++] = prop_mods;
		break;
	case DESK_KEY:
		p[n++] = prop_key_text;
		break;
	case DESK_TYPE:
		p[n++] = prop_type_text;
		break;
	case DESK_HOLD_KEY:
		p[n++] = prop_hold_text;
		p[n++] = prop_duration;
		break;
	case DESK_WAIT:
		p[n++] = prop_duration;
		p[n++] = prop_if_changed;
		break;
	case DESK_SCREENSHOT:
		p[n++] = prop_if_changed;
		break;
	case DESK_ZOOM:
		p[n++] = prop_region;
		p[n++] = prop_scale;
		break;
	default:
		break;
	}
	p[n] = NULL;
}

/* --- handlers ------------------------------------------------------------ */

static bool ctx_cancelled(void *ud)
{
	return mcp_call_cancelled(ud);
}

static void ctx_progress(void *ud, double done, double total, const char *msg)
{
	mcp_call_progress(ud, done, total, msg);
}

/* structuredContent of a reply with an image or an unchanged answer. */
static json_t *image_facts(const struct desk_reply *r)
{
	char hash[20];
	json_t *o = json_pack("{s:i, s:i, s:i, s:i}", "display_width_px", r->display_w,
			      "display_height_px", r->display_h, "real_width_px", r->real_w,
			      "real_height_px", r->real_h);

	if (!o)
		return NULL;
	if (r->png) {
		json_object_set_new(o, "image_width_px", json_integer(r->png_w));
		json_object_set_new(o, "image_height_px", json_integer(r->png_h));
	}
	if (r->has_region) {
		json_object_set_new(o, "region", json_pack("[i, i, i, i]", r->region[0], r->region[1],
							   r->region[2], r->region[3]));
		json_object_set_new(o, "real_region",
				    json_pack("[i, i, i, i]", r->real_region[0], r->real_region[1],
					      r->real_region[2], r->real_region[3]));
	}
	if (r->png) {
		/* Image pixels per real pixel of what the image covers. */
		int cw = r->has_region ? r->real_region[2] - r->real_region[0] : r->real_w;
		int ch = r->has_region ? r->real_region[3] - r->real_region[1] : r->real_h;

		json_object_set_new(o, "scale_x", json_real((double)r->png_w / cw));
		json_object_set_new(o, "scale_y", json_real((double)r->png_h / ch));
	}
	if (r->whole) {
		snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)r->hash);
		json_object_set_new(o, "hash", json_string(hash));
		json_object_set_new(o, "unchanged", json_boolean(r->unchanged));
		if (r->unchanged)
			json_object_set_new(o, "unchanged_since_ms", json_integer(r->seen_ms));
	}
	return o;
}

static int answer(struct desk_reply *r, struct mcp_result *res)
{
	if (r->failed) {
		mcp_result_error(res, "%s", r->text);
		return 0;
	}
	if (r->text[0])
		mcp_result_text(res, "%s", r->text);
	if (r->note[0])
		mcp_result_text(res, "%s", r->note);
	if (r->png)
		mcp_result_image(res, r->png, r->png_len, "image/png");
	if (r->has_cursor)
		mcp_result_structured(res, json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "x",
						     r->cursor_x, "y", r->cursor_y,
						     "display_width_px", r->display_w,
						     "display_height_px", r->display_h, "real_width_px",
						     r->real_w, "real_height_px", r->real_h));
	else if (r->png || r->unchanged) {
		json_t *facts = image_facts(r);

		/* who drives the desktop: the agent sees a person's turn coming,
		 * and the dashboard's thumbnails carry it to the portal */
		if (facts)
			json_object_set_new_nocheck(facts, "control", desk_control_state() ?: json_null());
		mcp_result_structured(res, facts);
	}
	return 0;
}

/* Whether act sends input (and so waits for the control lease). */
static bool is_input(int act)
{
	for (size_t i = 0; i < ARRAY_LEN(defs); i++)
		if ((int)defs[i].act == act)
			return !defs[i].read_only;
	return false;
}

/* Runs one action; an input action only when no person has control. */
static int run(struct desk_actions *a, int act, const json_t *args, struct mcp_call *call,
	       struct mcp_result *res, struct err *e)
{
	struct desk_call_ctx ctx = {ctx_cancelled, ctx_progress, call, mcp_call_session(call)};
	struct desk_reply r;
	int fd = -1, rc;

	if (act >= 0 && is_input(act) &&
	    !desk_control_begin(desk_action_name((enum desk_action)act), res, &fd))
		return 0;
	rc = act >= 0 ? desk_actions_run(a, (enum desk_action)act, args, &ctx, &r, e)
		      : desk_actions_run_json(a, args, &ctx, &r, e);
	desk_control_end(fd);
	if (rc == 0)
		answer(&r, res);
	desk_reply_free(&r);
	return rc;
}

static int computer_fn(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		       struct err *e)
{
	const char *name = json_string_value(json_object_get(args, "action"));

	/* an unknown action: desk_actions_run_json() says what is wrong */
	return run(mcp_call_ud(call), name ? desk_action_parse(name) : -1, args, call, res, e);
}

/* One per action, so the separate tools' handlers know theirs. */
struct single {
	struct desk_actions *a;
	enum desk_action act;
};

static struct single singles[DESK_ACTION_COUNT];

static int single_fn(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		     struct err *e)
{
	const struct single *s = mcp_call_ud(call);
	json_t *empty = NULL;
	int rc;

	if (!args)
		args = empty = json_object();
	rc = run(s->a, (int)s->act, args, call, res, e);
	json_decref(empty);
	return rc;
}

/* --- clipboard ----------------------------------------------------------- */

static char *keep(struct buf *b);

static const char *const clip_off =
	"the clipboard tools are disabled on this desktop by its operator "
	"(mcp-desktop --no-clipboard, or CLOCHE_CLIPBOARD=off for the sandbox)";

static int clip_get_fn(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		       struct err *e)
{
	struct x11_clip *c = mcp_call_ud(call);
	struct err ce = ERR_INIT;
	char *text = NULL;
	size_t len = 0;
	int rc;

	(void)args;
	(void)e;
	if (!c) {
		mcp_result_error(res, "%s", clip_off);
		return 0;
	}
	rc = x11_clip_get(c, &text, &len, &ce);
	if (rc == -1) {
		mcp_result_error(res, "clipboard_get: %s", ce.msg);
		return 0;
	}
	/* The text exactly, so it can be used as is; the structured part
	 * tells an empty clipboard from one holding that sentence. */
	if (len)
		mcp_result_textn(res, text, len);
	else
		mcp_result_text(res, "(the clipboard is empty)");
	mcp_result_structured(res, json_pack("{s:s%, s:I, s:b}", "text", text, len, "bytes",
					     (json_int_t)len, "empty", len == 0));
	free(text);
	return 0;
}

static int clip_set_fn(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		       struct err *e)
{
	struct x11_clip *c = mcp_call_ud(call);
	const json_t *v = json_object_get(args, "text");
	struct err ce = ERR_INIT;
	const char *text;
	size_t len, chars = 0;
	int fd, rc;

	if (!v)
		return err_set(e, 0, "`text` is required (a string)");
	if (!json_is_string(v))
		return err_set(e, 0, "`text` must be a string");
	text = json_string_value(v);
	len = json_string_length(v);
	if (memchr(text, '\0', len))
		return err_set(e, 0, "`text` holds a NUL character, which X text cannot carry");
	if (!c) {
		mcp_result_error(res, "%s", clip_off);
		return 0;
	}
	if (len > x11_clip_max(c))
		return err_set(e, 0, "`text` is %zu bytes, over the clipboard limit of %zu bytes",
			       len, x11_clip_max(c));
	if (!desk_control_begin("clipboard_set", res, &fd))
		return 0;
	rc = x11_clip_set(c, text, len, &ce);
	desk_control_end(fd);
	if (rc == -1) {
		mcp_result_error(res, "clipboard_set: %s", ce.msg);
		return 0;
	}
	for (size_t i = 0; i < len; i++)
		chars += ((unsigned char)text[i] & 0xc0) != 0x80;
	mcp_result_text(res, "the clipboard holds your text (%zu characters, %zu bytes): "
			     "ctrl+v pastes it",
			chars, len);
	mcp_result_structured(res, json_pack("{s:I, s:I}", "bytes", (json_int_t)len, "characters",
					     (json_int_t)chars));
	return 0;
}

static int register_clipboard(struct mcp_server *srv, struct x11_clip *c, struct err *e)
{
	AUTOBUF struct buf d = BUF_INIT(1024);
	AUTOBUF struct buf sch = BUF_INIT(1024);
	size_t max = c ? x11_clip_max(c) : X11_CLIP_MAX;
	struct mcp_tool get = {.name = "clipboard_get",
			       .title = "Read the clipboard",
			       .description = "The text on the desktop's clipboard (what ctrl+c "
					      "copied in any program), exactly.  Structured: text, "
					      "bytes, empty.",
			       .input_schema = "{\"type\":\"object\",\"properties\":{}}",
			       .read_only = true,
			       .fn = clip_get_fn,
			       .ud = c};
	struct mcp_tool set = {.name = "clipboard_set",
			       .title = "Set the clipboard",
			       .fn = clip_set_fn,
			       .ud = c};

	if (buf_appendf(&d, e,
			"Put text on the desktop's clipboard, so that ctrl+v (or a middle-click "
			"menu's Paste) in any program pastes it: faster than type for long texts. "
			"At most %zu bytes.",
			max) == -1 ||
	    buf_appendf(&sch, e,
			"{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
			"\"description\":\"the text, any Unicode, at most %zu bytes of "
			"UTF-8\"}},\"required\":[\"text\"]}",
			max) == -1)
		return -1;
	set.description = keep(&d);
	set.input_schema = keep(&sch);
	if (mcp_server_add_tool(srv, &get, e) == -1 || mcp_server_add_tool(srv, &set, e) == -1)
		return err_wrap(e, "clipboard tools");
	return 0;
}

/* --- registration -------------------------------------------------------- */

/* Appends "{"type":"object","properties":{...},"required":[...]}". */
static int schema(struct buf *b, const char *const *props, const char *const *req,
		  const char *action_prop, struct err *e)
{
	bool first = true;

	if (buf_appends(b, "{\"type\":\"object\",\"properties\":{", e) == -1)
		return -1;
	if (action_prop) {
		if (buf_appends(b, action_prop, e) == -1)
			return -1;
		first = false;
	}
	for (int i = 0; props[i]; i++) {
		if (buf_appendf(b, e, "%s%s", first ? "" : ",", props[i]) == -1)
			return -1;
		first = false;
	}
	if (buf_appends(b, "},\"required\":[", e) == -1)
		return -1;
	for (int i = 0; req[i]; i++)
		if (buf_appendf(b, e, "%s\"%s\"", i ? "," : "", req[i]) == -1)
			return -1;
	return buf_appends(b, "]}", e);
}

/* Strings handed to the server must outlive it: they are kept here. */
static char *kept[2 * DESK_ACTION_COUNT + 8];
static size_t nkept;

static char *keep(struct buf *b)
{
	char *s = buf_take(b, NULL);

	if (nkept < ARRAY_LEN(kept))
		kept[nkept++] = s;
	return s;
}

void desk_tools_release(void)
{
	while (nkept > 0)
		free(kept[--nkept]);
}

static int register_computer(struct mcp_server *srv, struct desk_actions *a, const char *size,
			     struct err *e)
{
	AUTOBUF struct buf sch = BUF_INIT(1 << 16);
	AUTOBUF struct buf desc = BUF_INIT(1 << 14);
	AUTOBUF struct buf action = BUF_INIT(4096);
	/* Every property any action takes, once each. */
	const char *all[] = {prop_coordinate, prop_start, prop_mods, prop_direction,
			     prop_amount,    prop_duration, prop_region, prop_scale,
			     prop_if_changed, NULL};
	const char *req[] = {"action", NULL};
	struct mcp_tool t = {0};

	if (buf_appends(&action, "\"action\":{\"type\":\"string\",\"enum\":[", e) == -1)
		return -1;
	for (int i = 0; i < DESK_ACTION_COUNT; i++)
		if (buf_appendf(&action, e, "%s\"%s\"", i ? "," : "",
				desk_action_name((enum desk_action)i)) == -1)
			return -1;
	if (buf_appends(&action, "]}", e) == -1 || schema(&sch, all, req, action.data, e) == -1)
		return -1;
	if (buf_appendf(&desc, e,
			"Use a mouse and keyboard to interact with a Linux desktop (Chromium on "
			"X), and take screenshots.  %s; coordinates are [x, y] in screenshot pixels "
			"from the top left.  Actions: screenshot (if_changed: true answers "
			"`unchanged` instead of the image when the screen is as you last saw it); "
			"mouse_move "
			"(coordinate); left_click, right_click, middle_click, double_click, "
			"triple_click, left_mouse_down, left_mouse_up (coordinate optional, text = "
			"modifiers to hold such as shift or ctrl); left_click_drag "
			"(start_coordinate, coordinate); scroll (coordinate, scroll_direction "
			"up|down|left|right, scroll_amount, text = modifiers); key (text: "
			"xdotool-style keys such as Return, ctrl+l, ctrl+shift+t, super, "
			"Page_Down); type (text, any Unicode); hold_key (text, duration s); wait "
			"(duration s, at most 100; if_changed as for screenshot); cursor_position; "
			"zoom (region [x0, y0, x1, y1] -> PNG of that region at full resolution, "
			"scale optional).  Actions that "
			"change the screen answer with a screenshot taken shortly after.  Every image "
			"comes with a line stating its size, the display's real size and the scale.",
			size) == -1)
		return -1;
	t.name = "computer";
	t.title = "Computer";
	t.description = keep(&desc);
	t.input_schema = keep(&sch);
	t.read_only = false;
	t.destructive = false;
	t.fn = computer_fn;
	t.ud = a;
	return mcp_server_add_tool(srv, &t, e);
}

int desk_tools_register(struct mcp_server *srv, struct desk_actions *a, struct x11_clip *clip,
			struct err *e)
{
	char size[320];
	int w, h, rw, rh;

	desk_actions_model_size(a, &w, &h);
	desk_actions_real_size(a, &rw, &rh);
	/* The size at start: a person may resize the desktop later (noVNC), so
	 * every screenshot states the size it has. */
	if (w == rw && h == rh)
		snprintf(size, sizeof(size),
			 "The display is %dx%d pixels (display_width_px=%d, display_height_px=%d; "
			 "each screenshot states the current size)",
			 w, h, w, h);
	else
		snprintf(size, sizeof(size),
			 "Screenshots are %dx%d pixels (display_width_px=%d, display_height_px=%d), "
			 "scaled from the real %dx%d display (each screenshot states the current "
			 "sizes)",
			 w, h, w, h, rw, rh);
	if (register_computer(srv, a, size, e) == -1)
		return err_wrap(e, "tool computer");
	for (size_t i = 0; i < ARRAY_LEN(defs); i++) {
		const struct tool_def *d = &defs[i];
		AUTOBUF struct buf sch = BUF_INIT(1 << 14);
		AUTOBUF struct buf desc = BUF_INIT(4096);
		const char *props[8];
		struct mcp_tool t = {0};

		props_of(d->act, props);
		if (schema(&sch, props, d->required, NULL, e) == -1 ||
		    buf_appendf(&desc, e,
				"%s %s; coordinates are [x, y] in screenshot pixels.",
				d->summary, size) == -1)
			return err_wrap(e, "tool %s", desk_action_name(d->act));
		singles[d->act] = (struct single){a, d->act};
		t.name = desk_action_name(d->act);
		t.description = keep(&desc);
		t.input_schema = keep(&sch);
		t.read_only = d->read_only;
		t.fn = single_fn;
		t.ud = &singles[d->act];
		if (mcp_server_add_tool(srv, &t, e) == -1)
			return err_wrap(e, "tool %s", t.name);
	}
	if (desk_control_register(srv, e) == -1)
		return err_wrap(e, "tool request_human_help");
	return register_clipboard(srv, clip, e);
}
