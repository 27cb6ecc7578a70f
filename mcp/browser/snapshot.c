/* The page's elements -> compact numbered outline with refs; see snapshot.h.
 * The tree arrives as a flat array whose nodes name their children by id; a
 * jansson object indexes ids to positions.  Rendering always walks the whole
 * outline (of its root), counting the lines it does not write, so an answer
 * can say where it stopped and the next one can start there. */
#include "mcp/browser/snapshot.h"

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SNAP_MAX_DEPTH 200
/* Nesting is one space a level: YAML all the same, and on a page of nested
 * lists the half of the indentation saved is a tenth of the outline. */
#define SNAP_MAX_NAME 300   /* characters of a name or an address */
#define SNAP_MAX_TEXT 4000  /* of a text (a paragraph is read, not cut) */
#define SNAP_REF_ROOM 16   /* " [ref=e12345678]" */
#define SNAP_MAX_INLINE 8000 /* a line of inline content; longer ones keep their structure */
#define SNAP_MARK '\x01'      /* a ref to write in an inline line: \x01<backend>\x02 */
#define SNAP_MARK_END '\x02'
#define FIND_BEFORE 60     /* bytes of context before a match */
#define FIND_AFTER 100     /* and after it */

struct snap {
	const json_t *nodes;
	json_t *index; /* nodeId -> position in nodes */
	const struct snap_opts *o;
	struct buf *out;
	size_t start; /* out->len when rendering began */
	size_t line;  /* lines of the outline so far */
	size_t shown;
	bool full;
	json_t *line_of; /* nodeId -> its line, when asked (search) */
};

/* --- reading nodes ------------------------------------------------------------- */

/* Nodes come from the page walker (walk.js: plain strings, properties in
 * "p") or from Chromium's accessibility tree ({"value": ...} objects, a
 * "properties" list), which the unit tests use. */
static const char *snap_str(const json_t *node, const char *field)
{
	const json_t *f = json_object_get(node, field);
	const char *v = json_is_string(f) ? json_string_value(f) : json_string_value(json_object_get(f, "value"));
	return v ? v : "";
}

static const json_t *snap_prop(const json_t *node, const char *name)
{
	size_t i;
	json_t *p;
	const json_t *pp = json_object_get(node, "p");

	if (pp)
		return json_object_get(pp, name);
	json_array_foreach(json_object_get(node, "properties"), i, p) {
		const char *n = json_string_value(json_object_get(p, "name"));
		if (n && strcmp(n, name) == 0)
			return json_object_get(json_object_get(p, "value"), "value");
	}
	return NULL;
}

static bool snap_true(const json_t *v)
{
	return json_is_true(v) || (json_is_string(v) && strcmp(json_string_value(v), "true") == 0);
}

static bool snap_blank(const char *t)
{
	for (; *t; t++)
		if (!isspace((unsigned char)*t))
			return false;
	return true;
}

static bool snap_role_in(const char *role, const char *const *roles, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(role, roles[i]) == 0)
			return true;
	return false;
}

static bool snap_is_text(const json_t *node)
{
	return strcmp(snap_str(node, "role"), "StaticText") == 0;
}

static const json_t *snap_by_id(const json_t *nodes, json_t *index, const json_t *id)
{
	const char *key = json_string_value(id);
	const json_t *pos = key ? json_object_get(index, key) : NULL;

	return pos ? json_array_get(nodes, (size_t)json_integer_value(pos)) : NULL;
}

static json_t *snap_index(const json_t *nodes)
{
	json_t *index = json_object();
	size_t i;
	json_t *n;

	json_array_foreach(nodes, i, n) {
		const char *id = json_string_value(json_object_get(n, "nodeId"));
		if (id && index)
			json_object_set_new(index, id, json_integer((json_int_t)i));
	}
	return index;
}

/* Nodes with nothing to say themselves: their children take their place. */
static bool snap_passthrough(const json_t *node)
{
	static const char *const roles[] = {"generic", "none", "presentation", "GenericContainer",
					    "Ignored", "IgnoredRole", "RootWebArea", "WebArea",
					    "Section", "Div", "LayoutTable", "LayoutTableRow",
					    "LayoutTableCell"};
	const char *role = snap_str(node, "role");

	if (json_is_true(json_object_get(node, "ignored")))
		return true;
	if (!snap_blank(snap_str(node, "name")) && strcmp(role, "RootWebArea") != 0)
		return false;
	return snap_role_in(role, roles, ARRAY_LEN(roles));
}

/* Nodes never shown, nor their children. */
static bool snap_dropped(const json_t *node)
{
	const char *role = snap_str(node, "role");

	return strcmp(role, "InlineTextBox") == 0 || strcmp(role, "LineBreak") == 0 ||
	       strcmp(role, "ListMarker") == 0 ||
	       (snap_is_text(node) && snap_blank(snap_str(node, "name")));
}

/* Nodes an agent acts on or points at: they get a ref. */
static bool snap_pointable(const json_t *node)
{
	static const char *const roles[] = {
		"link",	      "button",	      "textbox",     "searchbox",	 "checkbox",
		"radio",      "combobox",     "listbox",     "option",		 "menuitem",
		"menuitemcheckbox", "menuitemradio", "tab", "switch",		 "slider",
		"spinbutton", "treeitem",     "heading",
		"table",      "grid",	      "treegrid",    "dialog",		 "alertdialog",
		"main",	      "navigation",   "region",	     "article",		 "complementary",
		"form",	      "search",	      "banner",	     "contentinfo",	 "figure",
		"video",      "audio",	      "menu",	     "menubar",		 "tablist",
		"tree",	      "Iframe",	      "iframe",	     "DisclosureTriangle", "scrollbar",
	};

	return snap_role_in(snap_str(node, "role"), roles, ARRAY_LEN(roles)) ||
	       snap_true(snap_prop(node, "focusable")) || json_is_string(snap_prop(node, "editable"));
}

static bool snap_has_value(const char *role)
{
	static const char *const roles[] = {"textbox", "searchbox", "combobox", "spinbutton",
					    "slider", "TextField", "textField"};

	return snap_role_in(role, roles, ARRAY_LEN(roles));
}

/* --- writing --------------------------------------------------------------------- */

/* Appends text on one line: whitespace collapsed, quotes escaped when
 * quoted (a name: at most SNAP_MAX_NAME characters; else SNAP_MAX_TEXT). */
static void snap_text(struct buf *line, const char *t, bool quoted)
{
	size_t max = quoted ? SNAP_MAX_NAME : SNAP_MAX_TEXT;
	size_t n = 0;
	bool space = false;

	while (*t && isspace((unsigned char)*t))
		t++;
	for (; *t; t++) {
		unsigned char c = (unsigned char)*t;
		if (isspace(c)) {
			space = true;
			continue;
		}
		if (space)
			buf_append(line, " ", 1, NULL);
		space = false;
		if (n >= max && (c & 0xC0) != 0x80) {
			buf_appends(line, "…", NULL);
			return;
		}
		if (quoted && (c == '"' || c == '\\'))
			buf_append(line, "\\", 1, NULL);
		buf_append(line, t, 1, NULL);
		n++;
	}
}

/* The length of page's scheme://authority ("file://" for a file), 0 when
 * it has none. */
static size_t snap_origin_len(const char *page)
{
	const char *s = strstr(page, "://"), *slash;

	if (!s)
		return 0;
	slash = strchr(s + 3, '/');
	return slash ? (size_t)(slash - page) : strlen(page);
}

void snapshot_rel_url(const char *page, const char *url, struct buf *out)
{
	size_t po = page ? snap_origin_len(page) : 0, plen, ulen, dir = 0;
	const char *pp, *up;

	if (!po || strncmp(url, page, po) != 0 || url[po] != '/') {
		buf_appends(out, url, NULL);
		return;
	}
	pp = page + po;
	up = url + po;
	plen = strcspn(pp, "?#");
	ulen = strcspn(up, "?#");
	if (ulen == plen && strncmp(up, pp, plen) == 0) {
		const char *rest = up + ulen, *file = memrchr(pp, '/', plen);

		if (*rest)
			buf_appends(out, rest, NULL);
		else /* the page itself: its file name */
			buf_append(out, file ? file + 1 : pp, file ? plen - (size_t)(file + 1 - pp) : plen,
				   NULL);
		return;
	}
	for (size_t i = 0; i < plen; i++)
		if (pp[i] == '/')
			dir = i + 1;
	if (dir && strncmp(up, pp, dir) == 0 && up[dir])
		up += dir;
	buf_appends(out, up, NULL);
}

/* One line of the outline: prefix, the node's ref when backend is set (and
 * the line is written), rest.  Lines before the offset and past the bound
 * are counted only. */
/* Appends the ref of DOM node backend (" [ref=e12]", or with space false
 * "[ref=e12]"); nothing when it gets no number. */
static int snap_ref_text(struct snap *s, int backend, bool space, struct buf *out)
{
	unsigned r = s->o->ref_for ? s->o->ref_for(s->o->ud, backend) : 0;

	return r ? buf_appendf(out, NULL, "%s[ref=e%u]", space ? " " : "", r) : 0;
}

/* One line of the outline: prefix, the node's ref when backend is set (and
 * the line is written), rest, whose ref marks (SNAP_MARK backend
 * SNAP_MARK_END, from inline links) become refs too.  Lines before the
 * offset and past the bound are counted only. */
static void snap_line(struct snap *s, const json_t *node, const struct buf *prefix, int backend,
		      const char *rest)
{
	size_t n = s->line++, restlen = strlen(rest), marks = 0;
	const char *id = node ? json_string_value(json_object_get(node, "nodeId")) : NULL;

	if (s->line_of && id)
		json_object_set_new(s->line_of, id, json_integer((json_int_t)n));
	if (n < s->o->offset || s->full)
		return;
	for (const char *p = rest; (p = strchr(p, SNAP_MARK)); p++)
		marks++;
	if (s->out->len - s->start + prefix->len + restlen + 1 + (marks + (backend ? 1 : 0)) * SNAP_REF_ROOM >
	    s->o->max_chars) {
		s->full = true;
		return;
	}
	if (buf_append(s->out, prefix->data, prefix->len, NULL) == -1 ||
	    (backend && snap_ref_text(s, backend, true, s->out) == -1)) {
		s->full = true;
		return;
	}
	for (const char *p = rest; *p;) {
		const char *m = strchr(p, SNAP_MARK), *end;

		if (!m) {
			buf_appends(s->out, p, NULL);
			break;
		}
		buf_append(s->out, p, (size_t)(m - p), NULL);
		end = strchr(m, SNAP_MARK_END);
		if (!end)
			break;
		snap_ref_text(s, atoi(m + 1), false, s->out);
		p = end + 1;
	}
	if (buf_append(s->out, "\n", 1, NULL) == -1) {
		s->full = true;
		return;
	}
	s->shown++;
}

/* The children shown under node, with pass-through nodes lifted. */
static void snap_kids(const struct snap *s, const json_t *node, json_t *acc, int depth)
{
	size_t i;
	json_t *id;

	if (depth > SNAP_MAX_DEPTH)
		return;
	json_array_foreach(json_object_get(node, "childIds"), i, id) {
		const json_t *k = snap_by_id(s->nodes, s->index, id);
		if (!k || snap_dropped(k))
			continue;
		if (snap_passthrough(k))
			snap_kids(s, k, acc, depth + 1);
		else
			json_array_append_new(acc, json_integer((json_int_t)json_integer_value(
						  json_object_get(s->index, json_string_value(id)))));
	}
}

static void snap_attrs(struct buf *line, const json_t *node)
{
	const json_t *v;

	if ((v = snap_prop(node, "level")) && json_is_integer(v) &&
	    strcmp(snap_str(node, "role"), "heading") == 0)
		buf_appendf(line, NULL, " [level=%lld]", (long long)json_integer_value(v));
	if ((v = snap_prop(node, "checked"))) {
		const char *c = json_string_value(v);
		if (json_is_true(v) || (c && strcmp(c, "true") == 0))
			buf_appends(line, " [checked]", NULL);
		else if (c && strcmp(c, "mixed") == 0)
			buf_appends(line, " [checked=mixed]", NULL);
	}
	if (json_is_true(snap_prop(node, "disabled")))
		buf_appends(line, " [disabled]", NULL);
	if (json_is_true(snap_prop(node, "expanded")))
		buf_appends(line, " [expanded]", NULL);
	if (json_is_true(snap_prop(node, "selected")))
		buf_appends(line, " [selected]", NULL);
	if (snap_true(snap_prop(node, "pressed")))
		buf_appends(line, " [pressed]", NULL);
	if (json_is_true(snap_prop(node, "focused")))
		buf_appends(line, " [active]", NULL);
}

static void snap_render(struct snap *s, const json_t *node, int depth);

static bool snap_run_member(const struct snap *s, json_t *pos);
static void snap_render_run(struct snap *s, const json_t *run, int depth);

/* Renders kids at depth; a run of inline kids side by side (the text,
 * links and code of a container that is not itself shown) goes on one
 * `- text:` line, as it reads. */
static void snap_render_kids(struct snap *s, const json_t *kids, int depth)
{
	size_t i = 0, n = json_array_size(kids);

	while (i < n) {
		size_t j = i;

		while (j < n && snap_run_member(s, json_array_get(kids, j)))
			j++;
		if (j - i >= 2) {
			AUTOJSON json_t *run = json_array();

			for (size_t k = i; k < j; k++)
				json_array_append(run, json_array_get(kids, k));
			snap_render_run(s, run, depth);
			i = j;
			continue;
		}
		snap_render(s, json_array_get(s->nodes, (size_t)json_integer_value(json_array_get(kids, i))), depth);
		i++;
	}
}

/* Appends the text of node's subtree to acc; false when it holds anything
 * that is more than text (an element that gets a ref, a control). */
static bool snap_only_text(const struct snap *s, const json_t *node, struct buf *acc, int depth)
{
	size_t i;
	json_t *id;

	if (depth > SNAP_MAX_DEPTH || acc->len > 4 * SNAP_MAX_TEXT)
		return false;
	json_array_foreach(json_object_get(node, "childIds"), i, id) {
		const json_t *k = snap_by_id(s->nodes, s->index, id);

		if (!k || snap_dropped(k))
			continue;
		if (snap_is_text(k)) {
			buf_append(acc, " ", 1, NULL);
			buf_appends(acc, snap_str(k, "name"), NULL);
		} else if (snap_pointable(k) || !snap_only_text(s, k, acc, depth + 1)) {
			return false;
		}
	}
	return true;
}

/* True when the words of a and b are the same (whitespace aside). */
static bool snap_same_words(const char *a, const char *b)
{
	for (;;) {
		while (isspace((unsigned char)*a))
			a++;
		while (isspace((unsigned char)*b))
			b++;
		if (!*a || !*b)
			return !*a && !*b;
		if (*a != *b)
			return false;
		a++;
		b++;
	}
}

/* Folds text-only children into the line's rest ("- paragraph: Hi") or a
 * textbox's value; clears kids when they are said by it. */
static void snap_fold(const struct snap *s, const json_t *node, json_t *kids, struct buf *rest)
{
	const char *role = snap_str(node, "role"), *name = snap_str(node, "name"),
		   *value = snap_str(node, "value");
	bool only_text = json_array_size(kids) > 0;
	struct buf text = BUF_INIT(1 << 20);
	size_t i;
	json_t *pos;

	json_array_foreach(kids, i, pos) {
		const json_t *k = json_array_get(s->nodes, (size_t)json_integer_value(pos));
		if (!snap_is_text(k)) {
			only_text = false;
			break;
		}
		if (text.len)
			buf_append(&text, " ", 1, NULL);
		buf_appends(&text, snap_str(k, "name"), NULL);
	}
	if (snap_has_value(role) && !snap_blank(value)) {
		buf_appends(rest, ": ", NULL);
		snap_text(rest, value, false);
		if (only_text)
			json_array_clear(kids);
	} else if (!only_text && !snap_blank(name)) {
		/* a name that is all its subtree says: "- link "Class: Foo""
		 * rather than the link and then its text and code again */
		struct buf all = BUF_INIT(1 << 16);

		if (snap_only_text(s, node, &all, 0) && snap_same_words(buf_str(&all), name))
			json_array_clear(kids);
		buf_free(&all);
	} else if (only_text) {
		struct buf a = BUF_INIT(1 << 20), b = BUF_INIT(1 << 20);

		snap_text(&a, buf_str(&text), false);
		snap_text(&b, name, false);
		if (snap_blank(name)) {
			buf_appends(rest, ": ", NULL);
			buf_appends(rest, buf_str(&a), NULL);
			json_array_clear(kids);
		} else if (strcmp(buf_str(&a), buf_str(&b)) == 0) {
			json_array_clear(kids);
		}
		buf_free(&a);
		buf_free(&b);
	}
	buf_free(&text);
}

/* Appends a link's address (url: its property), relative to the page,
 * between open and close; nothing when it has none. */
static void snap_url(const struct snap *s, const json_t *url, const char *open, const char *close,
		     struct buf *out)
{
	struct buf u = BUF_INIT(1 << 16);

	if (!json_is_string(url) || !json_string_length(url))
		return;
	snapshot_rel_url(s->o->page_url, json_string_value(url), &u);
	buf_appends(out, open, NULL);
	snap_text(out, buf_str(&u), false);
	buf_appends(out, close, NULL);
	buf_free(&u);
}

/* Roles that live inside a line of text. */
static bool snap_inline_role(const char *role)
{
	static const char *const roles[] = {"code",	  "emphasis", "strong",	  "mark",
					    "superscript", "subscript", "abbr",	  "time",
					    "insertion",   "deletion",	 "image",  "img"};

	return snap_role_in(role, roles, ARRAY_LEN(roles));
}

/* A line of text being put together from inline pieces: markup for the
 * outline, plain words for comparing with a name. */
struct snap_inl {
	struct buf *out, *plain;
	bool space;   /* a space is due before the next piece */
	bool started;
	bool element; /* the last piece was a link or code, not text */
	char last;    /* its last character */
	size_t texts; /* pieces of text that say something */
};

/* Appends a piece; the spaces between pieces come from the text's own,
 * and around a link or code (whose neighbouring spaces the tree dropped)
 * one goes unless punctuation follows or a bracket opened. */
static void snap_inl_piece(struct snap_inl *in, const char *raw, const char *markup, bool text)
{
	bool punct = raw[0] && strchr(".,;:!?)]}'\"", raw[0]);

	if (in->started && (in->space || isspace((unsigned char)raw[0]) ||
			    ((in->element || !text) && !punct && !strchr("([{/'\"", in->last)))) {
		buf_append(in->out, " ", 1, NULL);
		buf_append(in->plain, " ", 1, NULL);
	}
	buf_appends(in->out, markup, NULL);
	buf_appends(in->plain, raw, NULL);
	if (!snap_blank(raw)) {
		in->started = true;
		in->last = raw[strlen(raw) - 1];
		if (text)
			in->texts++;
	}
	in->element = !text;
	in->space = raw[0] && isspace((unsigned char)raw[strlen(raw) - 1]);
}

/* Puts kids (positions in nodes) on one line: text as it is, code in
 * backticks, a link as [label](address) with its ref, an image as its
 * name.  False when a kid is more than inline (a block, a control, a link
 * around more than text) or the line grows too long. */
static bool snap_inline(const struct snap *s, const json_t *kids, struct snap_inl *in, bool in_link,
			int depth)
{
	size_t i;
	json_t *pos;

	if (depth > 8)
		return false;
	json_array_foreach(kids, i, pos) {
		const json_t *k = json_array_get(s->nodes, (size_t)json_integer_value(pos));
		const char *role = snap_str(k, "role"), *name = snap_str(k, "name");
		struct buf m = BUF_INIT(SNAP_MAX_INLINE * 2), inner = BUF_INIT(SNAP_MAX_INLINE * 2),
			   plain = BUF_INIT(SNAP_MAX_INLINE * 2);
		AUTOJSON json_t *kk = json_array();
		struct snap_inl sub = {&inner, &plain, false, false, false, ' ', 0};
		bool ok = true;

		if (snap_is_text(k)) {
			snap_text(&m, name, false);
			snap_inl_piece(in, name, buf_str(&m), true);
		} else if ((strcmp(role, "link") == 0 && !in_link) || snap_inline_role(role)) {
			const json_t *url = snap_prop(k, "url"), *be = json_object_get(k, "backendDOMNodeId");
			bool link = strcmp(role, "link") == 0;

			snap_kids(s, k, kk, 0);
			ok = snap_pointable(k) == link && snap_inline(s, kk, &sub, in_link || link, depth + 1);
			if (ok && snap_blank(buf_str(&plain)) && !snap_blank(name)) {
				snap_text(&inner, name, false);
				buf_appends(&plain, name, NULL);
			}
			if (ok && link) {
				buf_appendf(&m, NULL, "[%s]", buf_str(&inner));
				snap_url(s, url, "(", ")", &m);
				if (json_is_integer(be))
					buf_appendf(&m, NULL, "%c%lld%c", SNAP_MARK, (long long)json_integer_value(be),
						    SNAP_MARK_END);
			} else if (ok && strcmp(role, "code") == 0 && !snap_blank(buf_str(&inner))) {
				buf_appendf(&m, NULL, "`%s`", buf_str(&inner));
			} else if (ok) {
				buf_appends(&m, buf_str(&inner), NULL);
			}
			if (ok)
				snap_inl_piece(in, buf_str(&plain), buf_str(&m), false);
		} else {
			ok = false;
		}
		buf_free(&m);
		buf_free(&inner);
		buf_free(&plain);
		if (!ok || in->out->len > SNAP_MAX_INLINE)
			return false;
	}
	return true;
}

/* A kid (its position in nodes) that can share a line of text with its
 * neighbours. */
static bool snap_run_member(const struct snap *s, json_t *pos)
{
	const json_t *node = json_array_get(s->nodes, (size_t)json_integer_value(pos));
	const char *role = snap_str(node, "role");
	AUTOJSON json_t *kk = NULL;
	struct buf a = BUF_INIT(SNAP_MAX_INLINE * 2), b = BUF_INIT(SNAP_MAX_INLINE * 2);
	struct snap_inl in = {&a, &b, false, false, false, ' ', 0};
	bool ok;

	if (!node)
		return false;
	if (snap_is_text(node))
		return true;
	if (strcmp(role, "link") != 0 && !snap_inline_role(role))
		return false;
	kk = json_array();
	json_array_append(kk, pos);
	ok = snap_inline(s, kk, &in, false, 0);
	buf_free(&a);
	buf_free(&b);
	return ok;
}

static void snap_render_run(struct snap *s, const json_t *run, int depth)
{
	struct buf line = BUF_INIT(1 << 20), il = BUF_INIT(SNAP_MAX_INLINE * 4),
		   plain = BUF_INIT(SNAP_MAX_INLINE * 4);
	struct snap_inl in = {&il, &plain, false, false, false, ' ', 0};
	int indent = depth < 40 ? depth : 40;
	size_t i;
	json_t *pos;

	/* too long for one line, or links side by side without text between
	 * (a bar of links, not a sentence) */
	if (!snap_inline(s, run, &in, false, 0) || in.texts == 0) {
		json_array_foreach(run, i, pos)
			snap_render(s, json_array_get(s->nodes, (size_t)json_integer_value(pos)), depth);
		goto out;
	}
	/* find's lines: each piece is on this one */
	json_array_foreach(run, i, pos) {
		const char *id = json_string_value(
			json_object_get(json_array_get(s->nodes, (size_t)json_integer_value(pos)), "nodeId"));
		if (s->line_of && id)
			json_object_set_new(s->line_of, id, json_integer((json_int_t)s->line));
	}
	for (int k = 0; k < indent; k++)
		buf_append(&line, " ", 1, NULL);
	buf_appends(&line, "- text: ", NULL);
	snap_line(s, NULL, &line, 0, buf_str(&il));
out:
	buf_free(&line);
	buf_free(&il);
	buf_free(&plain);
}

/* A row whose cells hold only inline content is one line, its cells
 * between bars ("- row: Name | [Docs](d.html)[ref=e4] | 3"), a row of
 * header cells marked so.  False (nothing written) for any other row. */
static bool snap_row(const struct snap *s, const json_t *kids, struct buf *rest, bool *header)
{
	static const char *const cells[] = {"cell", "gridcell", "columnheader", "rowheader"};
	size_t i, heads = 0, start = rest->len;
	json_t *pos;
	bool ok = json_array_size(kids) > 0;

	buf_appends(rest, ":", NULL);
	json_array_foreach(kids, i, pos) {
		const json_t *k = json_array_get(s->nodes, (size_t)json_integer_value(pos));
		const char *role = snap_str(k, "role");
		AUTOJSON json_t *kk = json_array();
		struct buf il = BUF_INIT(SNAP_MAX_INLINE * 2), plain = BUF_INIT(SNAP_MAX_INLINE * 2);
		struct snap_inl in = {&il, &plain, false, false, false, ' ', 0};

		if (!k || !snap_role_in(role, cells, ARRAY_LEN(cells)) || snap_pointable(k)) {
			ok = false;
			break;
		}
		heads += strstr(role, "header") != NULL;
		snap_kids(s, k, kk, 0);
		buf_appends(rest, i ? " | " : " ", NULL);
		if (json_array_size(kk) == 0)
			snap_text(rest, snap_str(k, "name"), false);
		else if (snap_inline(s, kk, &in, false, 0))
			buf_appends(rest, buf_str(&il), NULL);
		else
			ok = false;
		buf_free(&il);
		buf_free(&plain);
		if (!ok || rest->len - start > SNAP_MAX_INLINE)
			break;
	}
	if (!ok || rest->len - start > SNAP_MAX_INLINE) {
		rest->len = start;
		if (rest->data)
			rest->data[start] = '\0';
		return false;
	}
	*header = heads == json_array_size(kids);
	return true;
}

/* How many of kids go on their parent's line: all when all are inline,
 * else those before the first block when they are text or links (and the
 * parent is not a link); 0 for none. */
static size_t snap_lead(const struct snap *s, const json_t *kids, bool in_link)
{
	size_t n = 0;

	while (n < json_array_size(kids) && snap_run_member(s, json_array_get(kids, n)))
		n++;
	if (n == json_array_size(kids))
		return n;
	return in_link ? 0 : n;
}

static void snap_render(struct snap *s, const json_t *node, int depth)
{
	struct buf line = BUF_INIT(1 << 20), rest = BUF_INIT(1 << 20);
	AUTOJSON json_t *kids = json_array();
	const char *role = snap_str(node, "role"), *name = snap_str(node, "name");
	const json_t *backend = json_object_get(node, "backendDOMNodeId"), *url;
	int indent = depth < 40 ? depth : 40;
	bool hidden, header = false;

	for (int i = 0; i < indent; i++)
		buf_append(&line, " ", 1, NULL);
	if (snap_is_text(node)) {
		buf_appends(&line, "- text: ", NULL);
		snap_text(&line, name, false);
		snap_line(s, node, &line, 0, "");
		buf_free(&line);
		buf_free(&rest);
		return;
	}
	snap_kids(s, node, kids, 0);
	/* an only child that is a bare paragraph says its text on this line:
	 * "- definition: ..." rather than the definition and its paragraph */
	if (json_array_size(kids) == 1 && !snap_has_value(role)) {
		const json_t *p = json_array_get(s->nodes, (size_t)json_integer_value(json_array_get(kids, 0)));

		if (strcmp(snap_str(p, "role"), "paragraph") == 0 && !snap_pointable(p) &&
		    snap_blank(snap_str(p, "name"))) {
			json_array_clear(kids);
			snap_kids(s, p, kids, 0);
		}
	}
	if (strcmp(role, "row") == 0 && snap_row(s, kids, &rest, &header)) {
		name = "";
		json_array_clear(kids);
	}
	/* Inline content on the node's own line, all of it or what comes
	 * before its first block ("- listitem: [Intro](#intro)[ref=e4]" above
	 * the list inside the item); a name it only repeats goes. */
	size_t lead = snap_lead(s, kids, strcmp(role, "link") == 0);
	if (lead > 0 && !snap_has_value(role)) {
		struct buf il = BUF_INIT(SNAP_MAX_INLINE * 2), plain = BUF_INIT(SNAP_MAX_INLINE * 2);
		struct snap_inl in = {&il, &plain, false, false, false, ' ', 0};
		AUTOJSON json_t *head = json_array();

		for (size_t i = 0; i < lead; i++)
			json_array_append(head, json_array_get(kids, i));
		if (snap_inline(s, head, &in, strcmp(role, "link") == 0, 0) && !snap_blank(buf_str(&plain))) {
			bool markup = strchr(buf_str(&il), SNAP_MARK) || strchr(buf_str(&il), '`') ||
				      strchr(buf_str(&il), '[');
			bool same = snap_same_words(buf_str(&plain), name);

			if (same && !markup) {
				/* the name says it all */
			} else if (markup) {
				if (same)
					name = "";
				buf_appends(&rest, ": ", NULL);
				buf_appends(&rest, buf_str(&il), NULL);
			} else {
				buf_appends(&rest, ": ", NULL);
				snap_text(&rest, buf_str(&plain), false);
			}
			for (size_t i = 0; i < lead; i++)
				json_array_remove(kids, 0);
		}
		buf_free(&il);
		buf_free(&plain);
	}
	buf_appendf(&line, NULL, "- %s", role[0] ? role : "node");
	if (!snap_blank(name)) {
		buf_appends(&line, " \"", NULL);
		snap_text(&line, name, true);
		buf_appends(&line, "\"", NULL);
	}
	snap_attrs(&line, node);
	if (header)
		buf_appends(&line, " [header]", NULL);
	url = snap_prop(node, "url");
	if (strcmp(role, "link") == 0)
		snap_url(s, url, " [url=", "]", &line);
	snap_fold(s, node, kids, &rest);
	/* Below the depth limit nothing is shown: the node says how much it
	 * holds and gets a ref to be looked into. */
	hidden = s->o->depth > 0 && depth + 1 >= s->o->depth && json_array_size(kids) > 0;
	if (hidden)
		buf_appendf(&rest, NULL, " (%zu inside)", json_array_size(kids));
	snap_line(s, node, &line,
		  json_is_integer(backend) && (hidden || snap_pointable(node)) ? (int)json_integer_value(backend) : 0,
		  buf_str(&rest));
	buf_free(&line);
	buf_free(&rest);
	if (!hidden && depth < SNAP_MAX_DEPTH)
		snap_render_kids(s, kids, depth + 1);
}

static void snap_walk(struct snap *s)
{
	const json_t *root = s->o->root;

	if (!root) {
		size_t i;
		json_t *n;

		json_array_foreach(s->nodes, i, n)
			if (!json_object_get(n, "parentId")) {
				root = n;
				break;
			}
	}
	if (!root)
		return;
	if (snap_passthrough(root) || snap_dropped(root)) {
		AUTOJSON json_t *kids = json_array();
		snap_kids(s, root, kids, 0);
		snap_render_kids(s, kids, 0);
	} else {
		snap_render(s, root, 0);
	}
}

void snapshot_render(const json_t *nodes, const struct snap_opts *o, struct buf *out,
		     struct snap_stats *st)
{
	struct snap s = {nodes, snap_index(nodes), o, out, out->len, 0, 0, false, NULL};

	snap_walk(&s);
	json_decref(s.index);
	if (st) {
		st->lines = s.line;
		st->shown = s.shown;
	}
}

const json_t *snapshot_find(const json_t *nodes, int backend_id)
{
	size_t i;
	json_t *n;

	json_array_foreach(nodes, i, n) {
		const json_t *id = json_object_get(n, "backendDOMNodeId");
		if (json_is_integer(id) && json_integer_value(id) == backend_id)
			return n;
	}
	return NULL;
}

/* --- search ---------------------------------------------------------------------- */

/* Where q matches t: 0 and the match's bounds, or -1. */
static int snap_match(const struct snap_query *q, const char *t, size_t *at, size_t *len)
{
	if (q->re) {
		regmatch_t m;

		if (regexec(q->re, t, 1, &m, 0) != 0)
			return -1;
		*at = (size_t)m.rm_so;
		*len = (size_t)(m.rm_eo - m.rm_so);
		return 0;
	}
	const char *p = strcasestr(t, q->text);
	if (!p)
		return -1;
	*at = (size_t)(p - t);
	*len = strlen(q->text);
	return 0;
}

/* Appends t[from, to) on one line, whole UTF-8 characters, "…" where cut. */
static void snap_excerpt(struct buf *out, const char *t, size_t at, size_t len)
{
	size_t n = strlen(t), from = at > FIND_BEFORE ? at - FIND_BEFORE : 0,
	       to = at + len + FIND_AFTER < n ? at + len + FIND_AFTER : n;
	struct buf part = BUF_INIT(1 << 16);

	while (from > 0 && ((unsigned char)t[from] & 0xC0) == 0x80)
		from--;
	while (to < n && ((unsigned char)t[to] & 0xC0) == 0x80)
		to++;
	buf_append(&part, t + from, to - from, NULL);
	if (from > 0)
		buf_appends(out, "…", NULL);
	snap_text(out, buf_str(&part), false);
	if (to < n)
		buf_appends(out, "…", NULL);
	buf_free(&part);
}

/* The element a match in node belongs to: itself or its nearest ancestor
 * that stands for itself in the outline and has a DOM node. */
static const json_t *snap_anchor(const json_t *nodes, json_t *index, const json_t *node)
{
	/* inside a line of text: the element holding the line says more */
	static const char *const inline_roles[] = {"code",     "emphasis",  "strong",   "mark",
						   "superscript", "subscript", "time", "abbr",
						   "insertion", "deletion", "LabelText"};

	for (int hops = 0; node && hops < SNAP_MAX_DEPTH; hops++) {
		if (!snap_is_text(node) && !snap_passthrough(node) && !snap_dropped(node) &&
		    json_is_integer(json_object_get(node, "backendDOMNodeId")) &&
		    (snap_pointable(node) ||
		     !snap_role_in(snap_str(node, "role"), inline_roles, ARRAY_LEN(inline_roles))))
			return node;
		node = snap_by_id(nodes, index, json_object_get(node, "parentId"));
	}
	return NULL;
}

size_t snapshot_search(const json_t *nodes, const struct snap_query *q, const char *page_url,
		       unsigned (*ref_for)(void *ud, int backend_id), void *ud, struct buf *out)
{
	struct snap_opts o = {NULL, 0, 0, 0, page_url, NULL, NULL};
	struct buf none = BUF_INIT(16);
	struct snap s = {nodes, snap_index(nodes), &o, &none, 0, 0, 0, false, json_object()};
	AUTOJSON json_t *seen = json_object();
	size_t i, found = 0;
	json_t *n;

	/* A pass over the outline that writes nothing numbers its lines. */
	s.full = true;
	snap_walk(&s);
	json_array_foreach(nodes, i, n) {
		const char *role = snap_str(n, "role"), *t = snap_str(n, "name");
		const json_t *anchor, *up;
		size_t at, len;

		if (strcmp(role, "InlineTextBox") == 0 || json_is_true(json_object_get(n, "ignored")))
			continue;
		if (snap_match(q, t, &at, &len) == -1) {
			t = snap_str(n, "value");
			if (!snap_has_value(role) || snap_match(q, t, &at, &len) == -1)
				continue;
		}
		anchor = snap_anchor(nodes, s.index, n);
		const char *aid = anchor ? json_string_value(json_object_get(anchor, "nodeId")) : NULL;
		if (aid && json_object_get(seen, aid))
			continue;
		if (aid)
			json_object_set_new(seen, aid, json_true());
		if (found++ >= q->limit)
			continue;
		/* the line of the outline that shows it: its own, or the one
		 * its text is folded into */
		json_int_t line = -1;
		for (up = n; up && line < 0; up = snap_by_id(nodes, s.index, json_object_get(up, "parentId"))) {
			const char *uid = json_string_value(json_object_get(up, "nodeId"));
			const json_t *l = uid ? json_object_get(s.line_of, uid) : NULL;

			if (json_is_integer(l))
				line = json_integer_value(l);
		}
		const json_t *target = anchor ? anchor : n;
		const char *arole = snap_str(target, "role"), *aname = snap_str(target, "name");
		buf_appendf(out, NULL, "- %s", arole[0] ? arole : "node");
		if (!snap_blank(aname)) {
			buf_appends(out, " \"", NULL);
			snap_text(out, aname, true);
			buf_appends(out, "\"", NULL);
		}
		if (anchor && ref_for) {
			unsigned r = ref_for(ud, (int)json_integer_value(json_object_get(anchor, "backendDOMNodeId")));
			if (r)
				buf_appendf(out, NULL, " [ref=e%u]", r);
		}
		if (line >= 0)
			buf_appendf(out, NULL, " [line=%lld]", (long long)line);
		buf_appends(out, ": ", NULL);
		snap_excerpt(out, t, at, len);
		buf_append(out, "\n", 1, NULL);
	}
	json_decref(s.index);
	json_decref(s.line_of);
	buf_free(&none);
	return found;
}

/* --- on the live page ---------------------------------------------------------------- */

static unsigned snap_ref(void *ud, int backend_id)
{
	return br_ref_for(ud, backend_id);
}

/* Renames an id of frame k's tree ("f2:17"): ids of two documents may be
 * the same. */
static json_t *snap_frame_id(int k, const json_t *id)
{
	char v[96];

	snprintf(v, sizeof(v), "f%d:%s", k, json_string_value(id) ? json_string_value(id) : "");
	return json_string(v);
}

/* Puts the tree of frame k (its nodes, renamed, their elements keyed with
 * the frame's number) under the Iframe node owner of nodes. */
static void snap_graft(json_t *nodes, json_t *owner, const json_t *inner, int k)
{
	size_t i, j;
	json_t *n, *id, *kids;

	json_array_foreach(inner, i, n) {
		json_t *c = json_deep_copy(n), *nk = json_array();
		const json_t *be = json_object_get(n, "backendDOMNodeId");

		json_object_set_new(c, "nodeId", snap_frame_id(k, json_object_get(n, "nodeId")));
		if (json_is_integer(be))
			json_object_set_new(c, "backendDOMNodeId",
					    json_integer((json_integer_value(be) & BR_KEY_ID) |
							 ((json_int_t)k << BR_KEY_FRAME_SHIFT)));
		if (json_object_get(n, "parentId")) {
			json_object_set_new(c, "parentId", snap_frame_id(k, json_object_get(n, "parentId")));
		} else {
			json_object_set(c, "parentId", json_object_get(owner, "nodeId"));
			kids = json_array();
			json_array_append_new(kids, snap_frame_id(k, json_object_get(n, "nodeId")));
			json_object_set_new(owner, "childIds", kids);
		}
		json_array_foreach(json_object_get(n, "childIds"), j, id)
			json_array_append_new(nk, snap_frame_id(k, id));
		json_object_set_new(c, "childIds", nk);
		json_array_append_new(nodes, c);
	}
}

/* The walker's outline of frame k: {url, title, nodes}. */
static json_t *snap_read(struct browser *b, const struct br_cx *cx, int k, size_t limit, struct err *e)
{
	char session[64], call[48];

	snprintf(call, sizeof(call), "walk(%zu)", limit);
	AUTOJSON json_t *r = br_walker(b, cx, k, call, true, session, e);
	const char *text = json_string_value(json_object_get(json_object_get(r, "result"), "value"));
	json_error_t je;
	json_t *t;

	if (!r)
		return NULL;
	if (!text) {
		err_set(e, 0, "the page could not be read");
		return NULL;
	}
	if (!(t = json_loads(text, 0, &je)) || !json_is_array(json_object_get(t, "nodes"))) {
		json_decref(t);
		err_set(e, 0, "the page's outline is not JSON: %s", je.text);
		return NULL;
	}
	log_debug("walk", "{s:i, s:I, s:O?}", "frame", k, "chars", (json_int_t)strlen(text), "js_ms",
		  json_object_get(t, "ms"));
	return t;
}

/* The iframes whose document the walker of their parent cannot reach
 * (another origin's) are walked in their own frame's world and join the
 * tree under their Iframe nodes, nested ones too: in the tab's session, or
 * in the frame's own when it is a process of its own (another site's).  A
 * frame that cannot be read stays an Iframe line without content. */
static void snap_frames(struct browser *b, const struct br_cx *cx, json_t *nodes)
{
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		json_t *n = json_array_get(nodes, i);
		const json_t *be = json_object_get(n, "backendDOMNodeId");
		AUTOJSON json_t *d = NULL, *t = NULL;
		struct err e2 = ERR_INIT;
		const char *frame = NULL;
		char session[64];
		int k;

		if (!snap_true(snap_prop(n, "frame")) || !json_is_integer(be))
			continue;
		if (br_key_node(b, cx, (int)json_integer_value(be), session, &d, &e2) == 0)
			frame = json_string_value(json_object_get(d, "frameId"));
		if (!frame || (k = br_frame_number(b, frame)) < 0 || !(t = snap_read(b, cx, k, 0, &e2))) {
			log_debug("iframe not in the snapshot", "{s:s}", "error", e2.msg);
			continue;
		}
		snap_graft(nodes, n, json_object_get(t, "nodes"), k);
	}
}

/* The whole page's outline nodes with its frames', the page's URL and its
 * title (the target info can lag behind a navigation). */
static json_t *snap_tree(struct browser *b, const struct br_cx *cx, size_t limit, char *url,
			 size_t url_len, char *title, size_t title_len, struct err *e)
{
	json_t *r;

	/* refs must name the document read: a navigation since the last
	 * snapshot starts a new epoch before the walk */
	br_refs_begin(b);
	if (!(r = snap_read(b, cx, 0, limit, e)))
		return NULL;
	snap_frames(b, cx, json_object_get(r, "nodes"));
	snprintf(url, url_len, "%s", json_string_value(json_object_get(r, "url")) ?: "");
	snprintf(title, title_len, "%s", json_string_value(json_object_get(r, "title")) ?: "");
	return r;
}

int snapshot_take(struct browser *b, const struct br_cx *cx, const char *ref, int depth,
		  size_t offset, size_t max_chars, size_t max_nodes, struct buf *out, struct err *e)
{
	AUTOJSON json_t *r = NULL;
	char url[2048], title[256], part[64] = "";
	struct br_el el = {.key = 0};
	const json_t *top = NULL;
	struct snap_stats st;
	size_t head;

	if (ref && br_ref_resolve(b, cx, ref, &el, e) == -1)
		return -1;
	uint64_t t0 = util_now_ms();
	if (!(r = snap_tree(b, cx, max_nodes, url, sizeof(url), title, sizeof(title), e)))
		return err_wrap(e, "snapshot");
	bool more = json_is_true(json_object_get(r, "truncated"));
	/* the tree is the whole page's: an element is found in it, so it is
	 * rendered exactly as it shows in a page snapshot */
	if (ref && !(top = snapshot_find(json_object_get(r, "nodes"), el.key)))
		return err_set(e, 0, "the element %s is not in the page's outline (hidden, or the page "
			       "changed); take a snapshot of the whole page", ref);
	if (ref)
		snprintf(part, sizeof(part), "\"target\": \"%s\", ", ref);
	if (buf_appendf(out, e, "- Page URL: %s\n- Page Title: %s\n", url, title) == -1)
		return -1;
	head = out->len;
	if ((ref ? buf_appendf(out, e, "- Element Snapshot (%s):\n```yaml\n", ref)
		 : buf_appends(out, "- Page Snapshot:\n```yaml\n", e)) == -1)
		return -1;
	uint64_t t1 = util_now_ms();
	struct snap_opts o = {top, max_chars, depth, offset, url, snap_ref, b};
	snapshot_render(json_object_get(r, "nodes"), &o, out, &st);
	log_debug("snapshot", "{s:I, s:I, s:I, s:I, s:I}", "nodes",
		  (json_int_t)json_array_size(json_object_get(r, "nodes")), "walk_ms", (json_int_t)(t1 - t0),
		  "render_ms", (json_int_t)(util_now_ms() - t1), "lines", (json_int_t)st.lines, "shown",
		  (json_int_t)st.shown);
	if (offset && offset >= st.lines) {
		out->len = head;
		out->data[out->len] = '\0';
		return err_http(e, 400, "offset %zu is past the end of the outline (%zu lines)", offset, st.lines);
	}
	if (buf_appends(out, "```\n", e) == -1)
		return -1;
	if (offset == 0 && st.shown == st.lines && !more)
		return 0;
	if (st.shown == 0)
		return err_http(e, 400, "line %zu is longer than %zu characters", offset, max_chars);
	size_t next = offset + st.shown;
	if (buf_appendf(out, e, "[Lines %zu-%zu of %s%zu shown (lines count from 0)", offset, next - 1,
			more ? "more than " : "", st.lines) == -1)
		return -1;
	if (next < st.lines || more)
		return buf_appendf(out, e,
				   ", at most %zu characters. The rest: browser_snapshot {%s\"offset\": %zu}; "
				   "one part: browser_snapshot {\"target\": \"<ref>\", \"depth\": 2}; a text: "
				   "browser_find {\"text\": \"...\"}.]\n",
				   max_chars, part, next);
	return buf_appends(out, ": the end.]\n", e);
}

int snapshot_search_take(struct browser *b, const struct br_cx *cx, const struct snap_query *q,
			 struct buf *out, struct err *e)
{
	AUTOJSON json_t *r = NULL;
	char url[2048], title[256];
	size_t found, head;

	if (!(r = snap_tree(b, cx, 0, url, sizeof(url), title, sizeof(title), e)))
		return err_wrap(e, "find");
	if (buf_appendf(out, e, "- Page URL: %s\n- Page Title: %s\n", url, title) == -1)
		return -1;
	head = out->len;
	if (buf_appends(out, "- Matches:\n```yaml\n", e) == -1)
		return -1;
	found = snapshot_search(json_object_get(r, "nodes"), q, url, snap_ref, b, out);
	if (!found) {
		out->len = head;
		out->data[out->len] = '\0';
		return buf_appendf(out, e, "No element's text matches %s%s%s.\n", q->re ? "the pattern" : "\"",
				   q->re ? "" : q->text, q->re ? "" : "\"");
	}
	if (buf_appends(out, "```\n", e) == -1)
		return -1;
	return buf_appendf(out, e,
			   "[%zu match%s%s. Each names the element that holds it and its line in the page "
			   "snapshot: browser_snapshot {\"offset\": <line>} shows it in place, {\"target\": "
			   "\"<ref>\"} its element.]\n",
			   found, found == 1 ? "" : "es",
			   found > q->limit ? ", the first ones shown" : "");
}
