/* Input events for the current tab; see input.h.  Keys are described the
 * way DOM KeyboardEvent sees them (key, code, legacy keyCode, text), since
 * pages read all four; printable ASCII is derived, the rest is a table. */
#include "mcp/browser/input.h"

#include "common/json.h"
#include "common/util.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct in_key {
	const char *name; /* as users write it; also the DOM `key` */
	const char *code;
	int keycode;
	const char *text; /* what the key types, or NULL */
};

static const struct in_key in_keys[] = {
	{"Enter", "Enter", 13, "\r"},       {"Tab", "Tab", 9, NULL},
	{"Backspace", "Backspace", 8, NULL}, {"Delete", "Delete", 46, NULL},
	{"Escape", "Escape", 27, NULL},      {"ArrowUp", "ArrowUp", 38, NULL},
	{"ArrowDown", "ArrowDown", 40, NULL}, {"ArrowLeft", "ArrowLeft", 37, NULL},
	{"ArrowRight", "ArrowRight", 39, NULL}, {"Home", "Home", 36, NULL},
	{"End", "End", 35, NULL},            {"PageUp", "PageUp", 33, NULL},
	{"PageDown", "PageDown", 34, NULL},  {"Insert", "Insert", 45, NULL},
	{"Space", "Space", 32, " "},         {" ", "Space", 32, " "},
	{"Shift", "ShiftLeft", 16, NULL},    {"Control", "ControlLeft", 17, NULL},
	{"Alt", "AltLeft", 18, NULL},        {"Meta", "MetaLeft", 91, NULL},
	{"CapsLock", "CapsLock", 20, NULL},  {"ContextMenu", "ContextMenu", 93, NULL},
	{"F1", "F1", 112, NULL},   {"F2", "F2", 113, NULL},   {"F3", "F3", 114, NULL},
	{"F4", "F4", 115, NULL},   {"F5", "F5", 116, NULL},   {"F6", "F6", 117, NULL},
	{"F7", "F7", 118, NULL},   {"F8", "F8", 119, NULL},   {"F9", "F9", 120, NULL},
	{"F10", "F10", 121, NULL}, {"F11", "F11", 122, NULL}, {"F12", "F12", 123, NULL},
};

/* Aliases people (and xdotool habits) use. */
static const struct {
	const char *alias, *name;
} in_alias[] = {
	{"Return", "Enter"}, {"Esc", "Escape"}, {"Del", "Delete"}, {"Up", "ArrowUp"},
	{"Down", "ArrowDown"}, {"Left", "ArrowLeft"}, {"Right", "ArrowRight"},
	{"Page_Up", "PageUp"}, {"Page_Down", "PageDown"}, {"BackSpace", "Backspace"},
};

int in_modifier(const char *name)
{
	if (strcasecmp(name, "Alt") == 0)
		return IN_ALT;
	if (strcasecmp(name, "Control") == 0 || strcasecmp(name, "Ctrl") == 0 ||
	    strcasecmp(name, "ControlOrMeta") == 0)
		return IN_CTRL; /* Linux: ControlOrMeta is Control */
	if (strcasecmp(name, "Meta") == 0 || strcasecmp(name, "Super") == 0 ||
	    strcasecmp(name, "Command") == 0)
		return IN_META;
	if (strcasecmp(name, "Shift") == 0)
		return IN_SHIFT;
	return 0;
}

static json_t *in_page(struct browser *b, const struct br_cx *cx, const char *method,
		       json_t *params, struct err *e)
{
	return br_cdp(b, cx, true, method, params, e);
}

int in_element_point(struct browser *b, const struct br_cx *cx, const struct br_el *el, double *x,
		     double *y, struct err *e)
{
	double ox, oy;
	AUTOJSON json_t *s = br_cdp_s(b, cx, el->session, "DOM.scrollIntoViewIfNeeded",
				      json_pack("{s:i}", "backendNodeId", el->backend), e);
	if (!s)
		return err_wrap(e, "the element cannot be scrolled into view");
	/* a frame of another process has its own viewport: its place in
	 * the tab's is added */
	if (br_frame_offset(b, cx, el->session, &ox, &oy, e) == -1)
		return -1;
	AUTOJSON json_t *q = br_cdp_s(b, cx, el->session, "DOM.getContentQuads",
				      json_pack("{s:i}", "backendNodeId", el->backend), e);
	const json_t *quad = json_array_get(json_object_get(q, "quads"), 0);
	if (!q)
		return err_wrap(e, "the element has no box on the page (is it hidden?)");
	if (json_array_size(quad) != 8)
		return err_set(e, 0, "the element has no box on the page (is it hidden?)");
	double sx = 0, sy = 0;
	for (size_t i = 0; i < 8; i += 2) {
		sx += json_number_value(json_array_get(quad, i));
		sy += json_number_value(json_array_get(quad, i + 1));
	}
	*x = ox + sx / 4;
	*y = oy + sy / 4;
	return 0;
}

static int in_mouse(struct browser *b, const struct br_cx *cx, const char *type, double x,
		    double y, const char *button, int buttons, int clicks, int modifiers,
		    struct err *e)
{
	AUTOJSON json_t *r = in_page(b, cx, "Input.dispatchMouseEvent",
				     json_pack("{s:s, s:f, s:f, s:s, s:i, s:i, s:i}", "type", type, "x", x,
					       "y", y, "button", button, "buttons", buttons, "clickCount",
					       clicks, "modifiers", modifiers),
				     e);
	return r ? 0 : -1;
}

int in_move(struct browser *b, const struct br_cx *cx, double x, double y, int modifiers,
	    struct err *e)
{
	return in_mouse(b, cx, "mouseMoved", x, y, "none", 0, 0, modifiers, e);
}

int in_click(struct browser *b, const struct br_cx *cx, double x, double y, const char *button,
	     int clicks, int modifiers, struct err *e)
{
	int bit = strcmp(button, "right") == 0 ? 2 : strcmp(button, "middle") == 0 ? 4 : 1;

	if (in_move(b, cx, x, y, modifiers, e) == -1)
		return -1;
	for (int c = 1; c <= clicks; c++)
		if (in_mouse(b, cx, "mousePressed", x, y, button, bit, c, modifiers, e) == -1 ||
		    in_mouse(b, cx, "mouseReleased", x, y, button, 0, c, modifiers, e) == -1)
			return -1;
	return 0;
}

int in_drag(struct browser *b, const struct br_cx *cx, double x1, double y1, double x2, double y2,
	    struct err *e)
{
	const int steps = 8;

	if (in_move(b, cx, x1, y1, 0, e) == -1 ||
	    in_mouse(b, cx, "mousePressed", x1, y1, "left", 1, 1, 0, e) == -1)
		return -1;
	for (int i = 1; i <= steps; i++) {
		double x = x1 + (x2 - x1) * i / steps, y = y1 + (y2 - y1) * i / steps;
		if (in_mouse(b, cx, "mouseMoved", x, y, "left", 1, 0, 0, e) == -1)
			return -1;
	}
	return in_mouse(b, cx, "mouseReleased", x2, y2, "left", 0, 1, 0, e);
}

/* Fills k for one key name; false when unknown.  Single characters are
 * keys of their own; letters and digits get their physical codes. */
static bool in_lookup(const char *name, struct in_key *k, char text[8])
{
	size_t len = strlen(name);

	for (size_t i = 0; i < ARRAY_LEN(in_alias); i++)
		if (strcasecmp(name, in_alias[i].alias) == 0)
			name = in_alias[i].name;
	for (size_t i = 0; i < ARRAY_LEN(in_keys); i++)
		if (strcasecmp(name, in_keys[i].name) == 0) {
			*k = in_keys[i];
			return true;
		}
	/* one character (possibly multi-byte UTF-8) */
	unsigned char c = (unsigned char)name[0];
	size_t clen = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
	if (!clen || len != clen)
		return false;
	memcpy(text, name, len);
	text[len] = '\0';
	*k = (struct in_key){text, "", 0, text};
	if (isalpha(c)) {
		k->keycode = toupper(c);
	} else if (isdigit(c)) {
		k->keycode = c;
	}
	return true;
}

static int in_key_event(struct browser *b, const struct br_cx *cx, const char *type,
			const struct in_key *k, const char *code, int modifiers, const char *text,
			struct err *e)
{
	json_t *p = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i}", "type", type, "key", k->name, "code",
			      code, "windowsVirtualKeyCode", k->keycode, "nativeVirtualKeyCode",
			      k->keycode, "modifiers", modifiers);
	if (p && text) {
		json_object_set_new(p, "text", json_string(text));
		json_object_set_new(p, "unmodifiedText", json_string(text));
	}
	AUTOJSON json_t *r = in_page(b, cx, "Input.dispatchKeyEvent", p, e);
	return r ? 0 : -1;
}

/* keyDown (with its text, unless a command modifier is held) then keyUp. */
static int in_stroke(struct browser *b, const struct br_cx *cx, const struct in_key *k,
		     int modifiers, struct err *e)
{
	char code[16] = "";
	const char *text = k->text;

	if (k->code[0])
		snprintf(code, sizeof(code), "%s", k->code);
	else if (isalpha((unsigned char)k->name[0]) && !k->name[1])
		snprintf(code, sizeof(code), "Key%c", toupper((unsigned char)k->name[0]));
	else if (isdigit((unsigned char)k->name[0]) && !k->name[1])
		snprintf(code, sizeof(code), "Digit%c", k->name[0]);
	if (modifiers & (IN_CTRL | IN_ALT | IN_META))
		text = NULL;
	if (in_key_event(b, cx, text ? "keyDown" : "rawKeyDown", k, code, modifiers, text, e) == -1)
		return -1;
	return in_key_event(b, cx, "keyUp", k, code, modifiers, NULL, e);
}

int in_press(struct browser *b, const struct br_cx *cx, const char *chord, struct err *e)
{
	char copy[128], text[8];
	char *parts[8];
	size_t n = 0;
	int mods = 0;
	struct in_key k;

	if (strlen(chord) >= sizeof(copy) || !chord[0])
		return err_http(e, 400, "`key` must be a key name such as \"Enter\", \"a\" or \"Control+a\"");
	snprintf(copy, sizeof(copy), "%s", chord);
	/* "+" alone, or a chord ending in "+", names the plus key */
	char *p = copy;
	while (n < ARRAY_LEN(parts)) {
		char *plus = strchr(p + 1, '+');
		if (!*p)
			break;
		if (!plus) {
			parts[n++] = p;
			break;
		}
		*plus = '\0';
		parts[n++] = p;
		p = plus + 1;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		int m = in_modifier(parts[i]);
		if (!m)
			return err_http(e, 400, "`key`: \"%s\" is not a modifier (use Alt, Control, Meta or Shift)",
					parts[i]);
		mods |= m;
	}
	if (!n || !in_lookup(parts[n - 1], &k, text))
		return err_http(e, 400,
				"`key`: unknown key \"%s\"; use a character (\"a\", \"é\") or a name such as "
				"Enter, Tab, Backspace, Delete, Escape, ArrowUp/Down/Left/Right, Home, End, "
				"PageUp, PageDown, Space, F1-F12, optionally after modifiers (\"Control+a\")",
				n ? parts[n - 1] : chord);
	/* modifiers go down first, as a keyboard does it */
	static const struct in_key modkeys[] = {{"Alt", "AltLeft", 18, NULL},
						{"Control", "ControlLeft", 17, NULL},
						{"Meta", "MetaLeft", 91, NULL},
						{"Shift", "ShiftLeft", 16, NULL}};
	static const int bits[] = {IN_ALT, IN_CTRL, IN_META, IN_SHIFT};
	int held = 0;
	for (size_t i = 0; i < ARRAY_LEN(bits); i++)
		if (mods & bits[i]) {
			held |= bits[i];
			if (in_key_event(b, cx, "rawKeyDown", &modkeys[i], modkeys[i].code, held, NULL, e) == -1)
				return -1;
		}
	if (in_stroke(b, cx, &k, mods, e) == -1)
		return -1;
	for (size_t i = ARRAY_LEN(bits); i-- > 0;)
		if (mods & bits[i]) {
			held &= ~bits[i];
			if (in_key_event(b, cx, "keyUp", &modkeys[i], modkeys[i].code, held, NULL, e) == -1)
				return -1;
		}
	return 0;
}

int in_type(struct browser *b, const struct br_cx *cx, const char *text, bool slowly,
	    struct err *e)
{
	if (!slowly) {
		AUTOJSON json_t *r = in_page(b, cx, "Input.insertText", json_pack("{s:s}", "text", text), e);
		return r ? 0 : -1;
	}
	for (const char *p = text; *p;) {
		unsigned char c = (unsigned char)*p;
		size_t clen = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
		char one[8];
		struct in_key k;

		if (strnlen(p, clen) < clen)
			break;
		memcpy(one, p, clen);
		one[clen] = '\0';
		p += clen;
		if (c == '\n') {
			if (in_press(b, cx, "Enter", e) == -1)
				return -1;
			continue;
		}
		char ktext[8];
		if (c >= 0x20 && c < 0x7f && in_lookup(one, &k, ktext)) {
			if (in_stroke(b, cx, &k, 0, e) == -1)
				return -1;
		} else {
			AUTOJSON json_t *r = in_page(b, cx, "Input.insertText", json_pack("{s:s}", "text", one), e);
			if (!r)
				return -1;
		}
		if (br_sleep(cx, 20, e) == -1)
			return -1;
	}
	return 0;
}
