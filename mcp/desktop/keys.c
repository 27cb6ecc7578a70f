/* Key name and text parsing; see keys.h.  Pure functions over Xlib's
 * keysym name table (XStringToKeysym needs no display). */
#include "keys.h"

#include "common/utf8.h"

#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/keysym.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <strings.h>

struct alias {
	const char *name;
	uint32_t ks;
};

/* What models write besides exact keysym names; matched ignoring case. */
static const struct alias aliases[] = {
	{"ctrl", XK_Control_L},      {"control", XK_Control_L},  {"ctl", XK_Control_L},
	{"lctrl", XK_Control_L},     {"rctrl", XK_Control_R},    {"shift", XK_Shift_L},
	{"lshift", XK_Shift_L},      {"rshift", XK_Shift_R},     {"alt", XK_Alt_L},
	{"lalt", XK_Alt_L},          {"ralt", XK_Alt_R},         {"option", XK_Alt_L},
	{"altgr", XK_ISO_Level3_Shift}, {"super", XK_Super_L},   {"win", XK_Super_L},
	{"windows", XK_Super_L},     {"cmd", XK_Super_L},        {"command", XK_Super_L},
	{"meta", XK_Meta_L},         {"enter", XK_Return},       {"return", XK_Return},
	{"ret", XK_Return},          {"esc", XK_Escape},         {"escape", XK_Escape},
	{"backspace", XK_BackSpace}, {"bksp", XK_BackSpace},     {"tab", XK_Tab},
	{"space", XK_space},         {"spacebar", XK_space},     {"del", XK_Delete},
	{"delete", XK_Delete},       {"ins", XK_Insert},         {"insert", XK_Insert},
	{"home", XK_Home},           {"end", XK_End},            {"pageup", XK_Prior},
	{"page_up", XK_Prior},       {"pgup", XK_Prior},         {"prior", XK_Prior},
	{"pagedown", XK_Next},       {"page_down", XK_Next},     {"pgdn", XK_Next},
	{"next", XK_Next},           {"up", XK_Up},              {"down", XK_Down},
	{"left", XK_Left},           {"right", XK_Right},        {"arrowup", XK_Up},
	{"arrowdown", XK_Down},      {"arrowleft", XK_Left},     {"arrowright", XK_Right},
	{"capslock", XK_Caps_Lock},  {"caps_lock", XK_Caps_Lock}, {"numlock", XK_Num_Lock},
	{"printscreen", XK_Print},   {"print", XK_Print},        {"menu", XK_Menu},
	{"pause", XK_Pause},         {"plus", XK_plus},          {"minus", XK_minus},
};

uint32_t desk_keys_char(uint32_t cp)
{
	if (cp == '\n' || cp == '\r')
		return XK_Return;
	if (cp == '\t')
		return XK_Tab;
	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return 0;
	if (cp <= 0xff)
		return cp;
	return 0x01000000u | cp;
}

bool desk_keys_is_modifier(uint32_t ks)
{
	return IsModifierKey(ks) || ks == XK_ISO_Level3_Shift;
}

int desk_keys_name(const char *name, size_t len, uint32_t *ks, struct err *e)
{
	char buf[64];
	const char *p = name;
	KeySym k;
	int32_t cp;

	if (len == 0)
		return err_set(e, 0, "empty key name");
	if (len >= sizeof(buf))
		return err_set(e, 0, "key name `%.*s...` is too long", 20, name);
	memcpy(buf, name, len);
	buf[len] = '\0';
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		if (strcasecmp(buf, aliases[i].name) == 0) {
			*ks = aliases[i].ks;
			return 0;
		}
	}
	/* "f5" as well as "F5". */
	if ((buf[0] == 'f' || buf[0] == 'F') && len >= 2 && len <= 3 && isdigit((unsigned char)buf[1]) &&
	    (len == 2 || isdigit((unsigned char)buf[2]))) {
		int n = atoi(buf + 1);

		if (n >= 1 && n <= 35) {
			*ks = XK_F1 + (uint32_t)(n - 1);
			return 0;
		}
	}
	k = XStringToKeysym(buf);
	if (k != NoSymbol) {
		*ks = (uint32_t)k;
		return 0;
	}
	cp = utf8_next(&p, name + len);
	if (cp >= 0 && p == name + len && desk_keys_char((uint32_t)cp)) {
		*ks = desk_keys_char((uint32_t)cp);
		return 0;
	}
	return err_set(e, 0,
		       "unknown key name `%s` (use X keysym names such as Return, Page_Down, "
		       "ctrl, alt, shift, super, F5, or a single character)",
		       buf);
}

int desk_keys_combo(const char *s, size_t len, struct desk_combo *c, struct err *e)
{
	const char *end = s + len, *p = s;

	c->n = 0;
	if (len == 0)
		return err_set(e, 0, "empty key combination");
	while (p < end) {
		const char *q = p;
		size_t n;

		/* A '+' that starts a part is the key itself ("ctrl++"). */
		if (*q == '+')
			q++;
		while (q < end && *q != '+')
			q++;
		n = (size_t)(q - p);
		if (n == 0)
			return err_set(e, 0, "key combination `%.*s` has an empty part", (int)len, s);
		if (c->n == DESK_COMBO_MAX)
			return err_set(e, 0, "key combination `%.*s` has more than %d keys",
				       (int)len, s, DESK_COMBO_MAX);
		if (desk_keys_name(p, n, &c->ks[c->n], e) == -1)
			return -1;
		c->n++;
		p = q;
		if (p < end) {
			p++; /* the '+' */
			if (p == end)
				return err_set(e, 0, "key combination `%.*s` ends with `+`",
					       (int)len, s);
		}
	}
	return 0;
}

int desk_keys_sequence(const char *s, struct desk_combo *out, int max, int *n, struct err *e)
{
	const char *p = s;

	*n = 0;
	for (;;) {
		const char *q;

		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		q = p;
		while (*q && !isspace((unsigned char)*q))
			q++;
		if (*n == max)
			return err_set(e, 0, "more than %d key combinations", max);
		if (desk_keys_combo(p, (size_t)(q - p), &out[*n], e) == -1)
			return -1;
		(*n)++;
		p = q;
	}
	if (*n == 0)
		return err_set(e, 0, "no key given");
	return 0;
}

int desk_keys_modifiers(const char *s, struct desk_combo *c, struct err *e)
{
	size_t len = strlen(s);

	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	while (len > 0 && isspace((unsigned char)*s))
		s++, len--;
	if (desk_keys_combo(s, len, c, e) == -1)
		return -1;
	for (int i = 0; i < c->n; i++)
		if (!desk_keys_is_modifier(c->ks[i]))
			return err_set(e, 0,
				       "`%s`: text of a click or scroll names modifier keys to hold "
				       "(shift, ctrl, alt, super)",
				       s);
	return 0;
}
