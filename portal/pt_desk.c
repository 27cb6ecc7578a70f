/* What a sandbox says of its desktop, kept only in the shape the dashboard
 * shows (see pt_desk.h). */
#include "portal/pt_desk.h"

#include <string.h>

/* An RFC 3339 time as mcp-desktop writes it: digits, '-', ':', 'T', 'Z',
 * '.', '+', at most 40 characters. */
static const char *time_or_null(const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n;

	if (!s || (n = strlen(s)) == 0 || n > 40 || strspn(s, "0123456789-:TZ.+") != n)
		return NULL;
	return s;
}

/* s cut to at most max bytes, back to the start of a UTF-8 sequence
 * (jansson's strings are valid UTF-8). */
static json_t *cut_utf8(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	return json_stringn(s, n);
}

json_t *pt_desk_clean(const json_t *in)
{
	const char *who = json_string_value(json_object_get(in, "control"));
	const char *since;
	const json_t *h;
	json_t *out, *help;
	size_t i;

	if (!json_is_object(in) || !who || (strcmp(who, "agent") != 0 && strcmp(who, "person") != 0))
		return NULL;
	out = json_pack("{s:s, s:[]}", "control", who, "help");
	if (!out)
		return NULL;
	if ((since = time_or_null(json_object_get(in, "since"))))
		json_object_set_new(out, "since", json_string(since));
	help = json_object_get(out, "help");
	json_array_foreach(json_object_get(in, "help"), i, h) {
		const char *reason = json_string_value(json_object_get(h, "reason"));
		json_t *item;

		if (json_array_size(help) >= PT_DESK_HELP_MAX)
			break;
		if (!reason || !reason[0])
			continue;
		item = json_pack("{s:o}", "reason", cut_utf8(reason, PT_DESK_REASON_MAX));
		if (item && (since = time_or_null(json_object_get(h, "since"))))
			json_object_set_new(item, "since", json_string(since));
		if (item)
			json_array_append_new(help, item);
	}
	return out;
}
