/* Accessibility tree -> bounded outline with refs; see snapshot.h.  The tree
 * arrives as a flat array whose nodes name their children by id; a jansson
 * object indexes ids to nodes.  Rendering keeps walking after the bound is
 * reached, counting instead of writing, so the truncation note can say how
 * much of the page was left out. */
#include "mcp/browser/snapshot.h"

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNAP_MAX_DEPTH 200
#define SNAP_MAX_TEXT 300

struct snap {
	const json_t *nodes;
	json_t *index; /* nodeId -> position in nodes */
	struct buf *out;
	size_t max_chars;
	size_t start; /* out->len when rendering began */
	bool full;
	size_t omitted;
	unsigned (*ref_for)(void *ud, int backend_id);
	void *ud;
};

static const json_t *snap_node(const struct snap *s, const json_t *id)
{
	const char *key = json_string_value(id);
	const json_t *pos = key ? json_object_get(s->index, key) : NULL;

	return pos ? json_array_get(s->nodes, (size_t)json_integer_value(pos)) : NULL;
}

static const char *snap_str(const json_t *node, const char *field)
{
	const char *v = json_string_value(json_object_get(json_object_get(node, field), "value"));
	return v ? v : "";
}

static const json_t *snap_prop(const json_t *node, const char *name)
{
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(node, "properties"), i, p) {
		const char *n = json_string_value(json_object_get(p, "name"));
		if (n && strcmp(n, name) == 0)
			return json_object_get(json_object_get(p, "value"), "value");
	}
	return NULL;
}

static bool snap_blank(const char *t)
{
	for (; *t; t++)
		if (!isspace((unsigned char)*t))
			return false;
	return true;
}

static bool snap_is_text(const json_t *node)
{
	return strcmp(snap_str(node, "role"), "StaticText") == 0;
}

/* Nodes with nothing to say themselves: their children take their place. */
static bool snap_passthrough(const json_t *node)
{
	static const char *const roles[] = {"generic", "none", "presentation", "GenericContainer",
					    "Ignored", "IgnoredRole", "RootWebArea", "WebArea"};
	const char *role = snap_str(node, "role");

	if (json_is_true(json_object_get(node, "ignored")))
		return true;
	if (!snap_blank(snap_str(node, "name")) && strcmp(role, "RootWebArea") != 0)
		return false;
	for (size_t i = 0; i < ARRAY_LEN(roles); i++)
		if (strcmp(role, roles[i]) == 0)
			return true;
	return false;
}

/* Nodes never shown, nor their children. */
static bool snap_dropped(const json_t *node)
{
	const char *role = snap_str(node, "role");

	return strcmp(role, "InlineTextBox") == 0 || strcmp(role, "LineBreak") == 0 ||
	       (snap_is_text(node) && snap_blank(snap_str(node, "name")));
}

/* The children shown under node, with pass-through nodes lifted. */
static void snap_kids(const struct snap *s, const json_t *node, json_t *acc, int depth)
{
	size_t i;
	json_t *id;

	if (depth > SNAP_MAX_DEPTH)
		return;
	json_array_foreach(json_object_get(node, "childIds"), i, id) {
		const json_t *k = snap_node(s, id);
		if (!k || snap_dropped(k))
			continue;
		if (snap_passthrough(k))
			snap_kids(s, k, acc, depth + 1);
		else
			json_array_append_new(acc, json_integer((json_int_t)json_integer_value(
						  json_object_get(s->index, json_string_value(id)))));
	}
}

/* Appends text on one line: whitespace collapsed, quotes escaped when
 * quoted, at most SNAP_MAX_TEXT characters. */
static void snap_text(struct buf *line, const char *t, bool quoted)
{
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
		if (n >= SNAP_MAX_TEXT && (c & 0xC0) != 0x80) {
			buf_appends(line, "…", NULL);
			return;
		}
		if (quoted && (c == '"' || c == '\\'))
			buf_append(line, "\\", 1, NULL);
		buf_append(line, t, 1, NULL);
		n++;
	}
}

static void snap_emit(struct snap *s, const struct buf *line)
{
	if (s->full) {
		s->omitted++;
		return;
	}
	if (s->out->len - s->start + line->len + 1 > s->max_chars ||
	    buf_append(s->out, line->data, line->len, NULL) == -1 ||
	    buf_append(s->out, "\n", 1, NULL) == -1) {
		s->full = true;
		s->omitted++;
	}
}

static void snap_attrs(struct buf *line, const json_t *node)
{
	const json_t *v;

	if ((v = snap_prop(node, "level")) && json_is_integer(v))
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
	if ((v = snap_prop(node, "pressed")) && (json_is_true(v) || (json_is_string(v) && strcmp(json_string_value(v), "true") == 0)))
		buf_appends(line, " [pressed]", NULL);
	if (json_is_true(snap_prop(node, "focused")))
		buf_appends(line, " [active]", NULL);
}

static bool snap_has_value(const char *role)
{
	static const char *const roles[] = {"textbox", "searchbox", "combobox", "spinbutton",
					    "slider", "TextField", "textField"};
	for (size_t i = 0; i < ARRAY_LEN(roles); i++)
		if (strcmp(role, roles[i]) == 0)
			return true;
	return false;
}

static void snap_render(struct snap *s, const json_t *node, int depth);

static void snap_render_kids(struct snap *s, const json_t *kids, int depth)
{
	size_t i;
	json_t *pos;

	json_array_foreach(kids, i, pos)
		snap_render(s, json_array_get(s->nodes, (size_t)json_integer_value(pos)), depth);
}

static void snap_render(struct snap *s, const json_t *node, int depth)
{
	struct buf line = BUF_INIT(4096);
	AUTOJSON json_t *kids = json_array();
	const char *role = snap_str(node, "role"), *name = snap_str(node, "name");
	int indent = depth < 40 ? depth : 40;

	for (int i = 0; i < indent; i++)
		buf_append(&line, "  ", 2, NULL);
	if (snap_is_text(node)) {
		buf_appends(&line, "- text: ", NULL);
		snap_text(&line, name, false);
		snap_emit(s, &line);
		buf_free(&line);
		return;
	}
	snap_kids(s, node, kids, 0);
	buf_appendf(&line, NULL, "- %s", role[0] ? role : "node");
	if (!snap_blank(name)) {
		buf_appends(&line, " \"", NULL);
		snap_text(&line, name, true);
		buf_appends(&line, "\"", NULL);
	}
	snap_attrs(&line, node);
	const json_t *backend = json_object_get(node, "backendDOMNodeId");
	/* past the bound nothing is shown, so nothing gets a ref (room is
	 * kept for the ref and a folded text, so a ref is never handed out
	 * for a line that then does not fit) */
	if (!s->full && s->out->len - s->start + line.len + 24 > s->max_chars)
		s->full = true;
	if (json_is_integer(backend) && s->ref_for && !s->full) {
		unsigned n = s->ref_for(s->ud, (int)json_integer_value(backend));
		if (n)
			buf_appendf(&line, NULL, " [ref=e%u]", n);
	}

	/* Text-only children fold into the line: "- paragraph [ref=e4]: Hi". */
	bool only_text = json_array_size(kids) > 0;
	struct buf text = BUF_INIT(8192);
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
	const char *value = snap_str(node, "value");
	if (snap_has_value(role) && !snap_blank(value)) {
		buf_appends(&line, ": ", NULL);
		snap_text(&line, value, false);
		if (only_text)
			json_array_clear(kids);
	} else if (only_text) {
		struct buf a = BUF_INIT(8192), b = BUF_INIT(8192);
		snap_text(&a, buf_str(&text), false);
		snap_text(&b, name, false);
		if (snap_blank(name)) {
			buf_appends(&line, ": ", NULL);
			buf_appends(&line, buf_str(&a), NULL);
			json_array_clear(kids);
		} else if (strcmp(buf_str(&a), buf_str(&b)) == 0) {
			json_array_clear(kids);
		}
		buf_free(&a);
		buf_free(&b);
	}
	buf_free(&text);
	snap_emit(s, &line);
	buf_free(&line);

	const json_t *url = snap_prop(node, "url");
	if (strcmp(role, "link") == 0 && json_is_string(url) && json_string_length(url)) {
		struct buf u = BUF_INIT(4096);
		for (int k = 0; k <= indent; k++)
			buf_append(&u, "  ", 2, NULL);
		buf_appends(&u, "- /url: ", NULL);
		snap_text(&u, json_string_value(url), false);
		snap_emit(s, &u);
		buf_free(&u);
	}
	if (depth < SNAP_MAX_DEPTH)
		snap_render_kids(s, kids, depth + 1);
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

size_t snapshot_render(const json_t *nodes, const json_t *root, size_t max_chars,
		       unsigned (*ref_for)(void *ud, int backend_id), void *ud, struct buf *out)
{
	struct snap s = {nodes, json_object(), out, max_chars, out->len, false, 0, ref_for, ud};
	size_t i;
	json_t *n;

	json_array_foreach(nodes, i, n) {
		const char *id = json_string_value(json_object_get(n, "nodeId"));
		if (id)
			json_object_set_new(s.index, id, json_integer((json_int_t)i));
		if (!root && !json_object_get(n, "parentId"))
			root = n;
	}
	if (root) {
		if (snap_passthrough(root) || snap_dropped(root)) {
			AUTOJSON json_t *kids = json_array();
			snap_kids(&s, root, kids, 0);
			snap_render_kids(&s, kids, 0);
		} else {
			snap_render(&s, root, 0);
		}
	}
	json_decref(s.index);
	return s.omitted;
}

static unsigned snap_ref(void *ud, int backend_id)
{
	return br_ref_for(ud, backend_id);
}

int snapshot_take(struct browser *b, const struct br_cx *cx, const char *ref, size_t max_chars,
		  struct buf *out, struct err *e)
{
	AUTOJSON json_t *r = NULL;
	char url[2048], title[256], obj[128];
	int backend = 0;
	const json_t *top = NULL;
	size_t omitted;

	if (ref && br_ref_resolve(b, cx, ref, obj, &backend, e) == -1)
		return -1;
	uint64_t t0 = util_now_ms();
	br_refs_begin(b);
	r = br_cdp(b, cx, true, "Accessibility.getFullAXTree", NULL, e);
	if (!r)
		return err_wrap(e, "snapshot");
	/* the tree is the whole page's: an element is found in it, so it is
	 * rendered exactly as it shows in a page snapshot */
	if (ref && !(top = snapshot_find(json_object_get(r, "nodes"), backend)))
		return err_set(e, 0, "the element %s is not in the page's accessibility tree (hidden, or the "
			       "page changed); take a snapshot of the whole page", ref);
	/* the AX call may have raced a navigation: refs must name this document */
	br_refs_begin(b);
	br_page_info(b, url, sizeof(url), title, sizeof(title));
	/* the tree's root is the document, named by its title; the target
	 * info carrying the title can lag behind a navigation */
	const json_t *root = json_array_get(json_object_get(r, "nodes"), 0);
	if (root && strcmp(snap_str(root, "role"), "RootWebArea") == 0 && snap_str(root, "name")[0])
		snprintf(title, sizeof(title), "%s", snap_str(root, "name"));
	if (buf_appendf(out, e, "- Page URL: %s\n- Page Title: %s\n", url, title) == -1 ||
	    (ref ? buf_appendf(out, e, "- Element Snapshot (%s):\n```yaml\n", ref)
		 : buf_appends(out, "- Page Snapshot:\n```yaml\n", e)) == -1)
		return -1;
	uint64_t t1 = util_now_ms();
	omitted = snapshot_render(json_object_get(r, "nodes"), top, max_chars, snap_ref, b, out);
	log_debug("snapshot", "{s:I, s:I, s:I, s:I}", "nodes", (json_int_t)json_array_size(json_object_get(r, "nodes")),
		  "ax_ms", (json_int_t)(t1 - t0), "render_ms", (json_int_t)(util_now_ms() - t1),
		  "omitted", (json_int_t)omitted);
	if (buf_appends(out, "```\n", e) == -1)
		return -1;
	if (omitted)
		return buf_appendf(out, e,
				   "[Snapshot truncated: %zu more lines left out to stay within %zu characters. "
				   "The refs shown are valid; read other parts of the page with "
				   "browser_evaluate.]\n",
				   omitted, max_chars);
	return 0;
}
