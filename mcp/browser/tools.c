/* The browser_* tools; see tools.h.  Each handler validates its arguments
 * (a wrong type is a 400, which the MCP library answers as JSON-RPC
 * -32602), takes the browser lock, acts through DevTools, and reports a
 * failure the model can act on as an isError result.  Actions answer with
 * the page state afterwards, as playwright-mcp does, so an agent rarely
 * needs a separate snapshot call. */
#include "mcp/browser/tools.h"
#include "mcp/browser/tools_int.h"

#include "common/b64.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"
#include "mcp/browser/input.h"
#include "mcp/browser/snapshot.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TL_MAX_WAIT_S 120
#define TL_TEXT_WAIT_MS 30000
#define TL_MAX_SHOT_HEIGHT 16384


struct tl_bound {
	const struct tl_def *def;
	struct tools *owner;
};

struct tools {
	struct browser *b;
	struct tools_opts o;
	struct tl_bound *bound;
};

static bool tl_cancelled(void *ud)
{
	return mcp_call_cancelled(ud);
}

/* --- helpers --------------------------------------------------------------- */

long tools_base64_decode(const char *in, size_t len, unsigned char *out)
{
	ssize_t n = b64_decode(in, len, B64_PAD_OPTIONAL, out, b64_decoded_max(len));

	return n < 0 ? -1 : (long)n;
}

json_t *tl_cdp(struct tl *t, const char *method, json_t *params, struct err *e)
{
	return br_cdp(t->b, &t->cx, true, method, params, e);
}

json_t *tl_call_on(struct tl *t, const struct br_el *el, const char *fn, json_t *args,
		   struct err *e)
{
	json_t *argv = json_array();
	size_t i;
	json_t *a;

	json_array_foreach(args, i, a)
		json_array_append_new(argv, json_pack("{s:O}", "value", a));
	json_decref(args);
	AUTOJSON json_t *r = br_cdp_s(t->b, &t->cx, el->session, "Runtime.callFunctionOn",
				      json_pack("{s:s, s:s, s:o, s:b, s:b}", "functionDeclaration", fn,
						"objectId", el->obj, "arguments", argv, "returnByValue", 1,
						"awaitPromise", 1),
				      e);
	if (!r)
		return NULL;
	const json_t *ex = json_object_get(r, "exceptionDetails");
	if (ex) {
		const char *d = json_string_value(json_object_get(json_object_get(ex, "exception"), "description"));
		const char *tx = json_string_value(json_object_get(ex, "text"));
		err_set(e, 0, "%s", d ? d : tx ? tx : "the page threw an exception");
		return NULL;
	}
	json_t *v = json_object_get(json_object_get(r, "result"), "value");
	return json_incref(v ? v : json_null());
}

/* Appends the page state after an action, when configured. */
static int tl_page_state(struct tl *t, struct buf *out, struct err *e)
{
	if (!t->o->snapshot_after_action)
		return 0;
	if (buf_appends(out, "\n### Page state\n", e) == -1)
		return -1;
	/* a short outline: an action's answer should not be a whole huge
	 * page; the note says how to read on */
	/* an action's page state is the start of the page: a walk bounded by
	 * what the answer holds, so a huge page does not cost its whole walk */
	return snapshot_take(t->b, &t->cx, NULL, 0, 0, t->o->max_snapshot / 4, t->o->max_snapshot / 8, out, e);
}

int tl_finish(struct tl *t, struct buf *out, struct mcp_result *res, struct err *e)
{
	char type[16], msg[512];

	if (br_dialog(t->b, type, sizeof(type), msg, sizeof(msg))) {
		/* the page is blocked: a snapshot would only time out */
		if (buf_appendf(out, e, "\n### Modal state\n- [%s dialog]: \"%s\": answer it with browser_handle_dialog\n",
				type, msg) == -1)
			return -1;
	} else if (tl_page_state(t, out, e) == -1) {
		return -1;
	}
	return mcp_result_textn(res, out->data ? out->data : "", out->len);
}

const char *tl_label(const json_t *args, const char *ref)
{
	const char *el = json_string_value(json_object_get(args, "element"));
	return el && el[0] ? el : ref;
}

int tools_element_arg(const json_t *args, const char *name, const char *alias, bool required,
		      const char **ref, struct err *e)
{
	const char *cur, *old;

	*ref = NULL;
	if (cj_get_str(args, name, NULL, &cur, e) == -1 || cj_get_str(args, alias, NULL, &old, e) == -1)
		return -1;
	if (cur && old && strcmp(cur, old) != 0)
		return err_http(e, 400, "`%s` and `%s` name different elements (\"%.40s\" and \"%.40s\"): give only `%s`",
				name, alias, cur, old, name);
	*ref = cur ? cur : old;
	if (!*ref && required)
		return err_http(e, 400, "`%s` is required: the element's ref from browser_snapshot, e.g. \"e12\"", name);
	return 0;
}

/* The element argument of most tools: `target`, or its older name `ref`. */
int tl_target(const json_t *args, bool required, const char **ref, struct err *e)
{
	return tools_element_arg(args, "target", "ref", required, ref, e);
}

/* Reads the required element argument and resolves it to a live element. */
int tl_element(struct tl *t, const json_t *args, const char **ref, struct br_el *el, struct err *e)
{
	if (tl_target(args, true, ref, e) == -1 ||
	    cj_get_str(args, "element", NULL, &(const char *){NULL}, e) == -1)
		return -1;
	return br_ref_resolve(t->b, &t->cx, *ref, el, e);
}

/* --- navigation ------------------------------------------------------------ */

static int tl_navigate(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *url;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);
	AUTOFREE char *full = NULL;

	if (cj_req_str(args, "url", &url, e) == -1)
		return -1;
	if (!url[0])
		return err_http(e, 400, "`url` must not be empty");
	if (!strchr(url, ':')) {
		/* "example.com" means what it means in the address bar */
		if (asprintf(&full, "https://%s", url) == -1)
			return err_set(e, ENOMEM, "url");
		url = full;
	}
	uint64_t mark = br_load_mark(t->b);
	AUTOJSON json_t *r = tl_cdp(t, "Page.navigate", json_pack("{s:s}", "url", url), e);
	if (!r)
		return -1;
	const char *failed = json_string_value(json_object_get(r, "errorText"));
	if (failed && failed[0])
		return err_set(e, 0, "navigation to %s failed: %s", url, failed);
	int loaded = json_object_get(r, "loaderId") ? br_wait_load(t->b, &t->cx, mark, 0, false, e) : 0;
	if (loaded == -1)
		return -1;
	if (buf_appendf(&out, e, "Navigated to %s\n", url) == -1)
		return -1;
	if (loaded == 1 && buf_appends(&out, "The page is usable and still loading (images, frames or scripts): "
				       "browser_wait_for waits for a text to show.\n", e) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static int tl_back(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	AUTOBUF struct buf out = BUF_INIT(4u << 20);
	(void)args;
	AUTOJSON json_t *h = tl_cdp(t, "Page.getNavigationHistory", NULL, e);
	if (!h)
		return -1;
	json_int_t cur = json_integer_value(json_object_get(h, "currentIndex"));
	const json_t *prev = json_array_get(json_object_get(h, "entries"), (size_t)(cur - 1));
	if (cur < 1 || !prev)
		return err_set(e, 0, "there is no previous page in this tab's history");
	uint64_t mark = br_load_mark(t->b);
	AUTOJSON json_t *r = tl_cdp(t, "Page.navigateToHistoryEntry",
				    json_pack("{s:O}", "entryId", json_object_get(prev, "id")), e);
	if (!r || br_wait_load(t->b, &t->cx, mark, 0, true, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "Went back to %s\n",
			json_string_value(json_object_get(prev, "url")) ? json_string_value(json_object_get(prev, "url")) : "") == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

/* An optional whole-number argument within [lo, hi]; *v keeps its default
 * when it is absent or null.  0 or -1 (a bad request). */
int tl_count(const json_t *args, const char *name, long long lo, long long hi, long long *v,
		    struct err *e)
{
	const json_t *j = json_object_get(args, name);

	if (!j || json_is_null(j))
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi)
		return err_http(e, 400, "`%s` must be a whole number from %lld to %lld", name, lo, hi);
	*v = json_integer_value(j);
	return 0;
}

static int tl_snapshot(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref;
	long long depth = 0, offset = 0;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (tl_target(args, false, &ref, e) == -1 || tl_count(args, "depth", 1, 200, &depth, e) == -1 ||
	    tl_count(args, "offset", 0, 100000000, &offset, e) == -1 ||
	    snapshot_take(t->b, &t->cx, ref, (int)depth, (size_t)offset, t->o->max_snapshot, 0, &out, e) == -1)
		return -1;
	return mcp_result_textn(res, buf_str(&out), out.len);
}

static int tl_find(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *text, *pattern;
	long long limit = 20;
	regex_t re;
	int rc;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (cj_get_str(args, "text", NULL, &text, e) == -1 || cj_get_str(args, "regex", NULL, &pattern, e) == -1 ||
	    tl_count(args, "limit", 1, 500, &limit, e) == -1)
		return -1;
	if (!text == !pattern)
		return err_http(e, 400, "give one of `text` and `regex`");
	if (text && !text[0])
		return err_http(e, 400, "`text` is empty");
	if (pattern && (rc = regcomp(&re, pattern, REG_EXTENDED)) != 0) {
		char why[160];

		regerror(rc, &re, why, sizeof(why));
		return err_http(e, 400, "`regex` does not compile: %s", why);
	}
	struct snap_query q = {text, pattern ? &re : NULL, (size_t)limit};
	rc = snapshot_search_take(t->b, &t->cx, &q, &out, e);
	if (pattern)
		regfree(&re);
	if (rc == -1)
		return -1;
	return mcp_result_textn(res, buf_str(&out), out.len);
}

/* --- mouse and keyboard -------------------------------------------------------- */

static int tl_modifiers(const json_t *args, int *mods, struct err *e)
{
	const json_t *m = json_object_get(args, "modifiers");
	size_t i;
	json_t *v;

	*mods = 0;
	if (!m || json_is_null(m))
		return 0;
	if (!json_is_array(m))
		return err_http(e, 400, "`modifiers` must be an array of Alt, Control, ControlOrMeta, Meta, Shift");
	json_array_foreach(m, i, v) {
		int bit = json_is_string(v) ? in_modifier(json_string_value(v)) : 0;
		if (!bit)
			return err_http(e, 400, "`modifiers[%zu]` must be one of Alt, Control, ControlOrMeta, Meta, Shift", i);
		*mods |= bit;
	}
	return 0;
}

static int tl_click(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref, *button;
	struct br_el el;
	int mods;
	bool dbl;
	double x, y;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (cj_get_bool(args, "doubleClick", false, &dbl, e) == -1 ||
	    cj_get_str(args, "button", "left", &button, e) == -1 || tl_modifiers(args, &mods, e) == -1)
		return -1;
	if (strcmp(button, "left") != 0 && strcmp(button, "right") != 0 && strcmp(button, "middle") != 0)
		return err_http(e, 400, "`button` must be \"left\", \"right\" or \"middle\"");
	if (tl_element(t, args, &ref, &el, e) == -1 ||
	    in_element_point(t->b, &t->cx, &el, &x, &y, e) == -1)
		return -1;
	uint64_t mark = br_load_mark(t->b);
	if (in_click(t->b, &t->cx, x, y, button, dbl ? 2 : 1, mods, e) == -1 ||
	    br_wait_load(t->b, &t->cx, mark, 0, true, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "%s %s\n", dbl ? "Double-clicked" : "Clicked", tl_label(args, ref)) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static int tl_hover(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref;
	struct br_el el;
	double x, y;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (tl_element(t, args, &ref, &el, e) == -1 ||
	    in_element_point(t->b, &t->cx, &el, &x, &y, e) == -1 ||
	    in_move(t->b, &t->cx, x, y, 0, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "Hovered over %s\n", tl_label(args, ref)) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

/* Focuses an editable element and selects its content, so what is typed
 * replaces it (as playwright's fill does).  Errors for non-editables. */
static const char tl_focus_js[] =
	"function() {"
	" const tag = this.tagName;"
	" const editable = tag === 'INPUT' || tag === 'TEXTAREA' || this.isContentEditable;"
	" if (!editable) return 'not editable: <' + (tag || 'node').toLowerCase() + '>';"
	" if (this.disabled) return 'disabled';"
	" if (this.readOnly) return 'read-only';"
	" this.focus();"
	" if (tag === 'INPUT' || tag === 'TEXTAREA') { try { this.select(); } catch (e) {} }"
	" else { const r = document.createRange(); r.selectNodeContents(this);"
	"   const s = getSelection(); s.removeAllRanges(); s.addRange(r); }"
	" return 'ok'; }";

static int tl_fill_text(struct tl *t, const char *ref, const struct br_el *el, const char *text,
			bool slowly, struct err *e)
{
	AUTOJSON json_t *r = tl_call_on(t, el, tl_focus_js, NULL, e);
	const char *s = json_string_value(r);

	if (!r)
		return -1;
	if (!s || strcmp(s, "ok") != 0)
		return err_set(e, 0, "cannot type into %s: the element is %s", ref, s ? s : "not editable");
	if (!text[0]) {
		AUTOJSON json_t *d = tl_cdp(t, "Input.dispatchKeyEvent",
					    json_pack("{s:s, s:s, s:s, s:i}", "type", "rawKeyDown", "key",
						      "Delete", "code", "Delete", "windowsVirtualKeyCode", 46), e);
		if (!d)
			return -1;
		json_decref(tl_cdp(t, "Input.dispatchKeyEvent",
				   json_pack("{s:s, s:s, s:s, s:i}", "type", "keyUp", "key", "Delete",
					     "code", "Delete", "windowsVirtualKeyCode", 46), NULL));
		return 0;
	}
	return in_type(t->b, &t->cx, text, slowly, e);
}

static int tl_type(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref, *text;
	struct br_el el;
	bool submit, slowly;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (cj_req_str(args, "text", &text, e) == -1 ||
	    cj_get_bool(args, "submit", false, &submit, e) == -1 ||
	    cj_get_bool(args, "slowly", false, &slowly, e) == -1 ||
	    tl_element(t, args, &ref, &el, e) == -1)
		return -1;
	if (tl_fill_text(t, ref, &el, text, slowly, e) == -1)
		return -1;
	if (submit) {
		uint64_t mark = br_load_mark(t->b);
		if (in_press(t->b, &t->cx, "Enter", e) == -1 ||
		    br_wait_load(t->b, &t->cx, mark, 0, true, e) == -1)
			return -1;
	}
	if (buf_appendf(&out, e, "Typed %zu characters into %s%s\n", strlen(text), tl_label(args, ref),
			submit ? " and pressed Enter" : "") == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static int tl_press(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *key;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (cj_req_str(args, "key", &key, e) == -1)
		return -1;
	uint64_t mark = br_load_mark(t->b);
	if (in_press(t->b, &t->cx, key, e) == -1 || br_wait_load(t->b, &t->cx, mark, 0, true, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "Pressed %s\n", key) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static const char tl_select_js[] =
	"function(values) {"
	" if (this.tagName !== 'SELECT') return {error: 'not a <select> element'};"
	" const opts = Array.from(this.options); const chosen = [];"
	" for (const v of values) {"
	"   const o = opts.find(o => o.value === v) || opts.find(o => o.label === v || o.text.trim() === v);"
	"   if (!o) return {error: 'no option with value or label ' + JSON.stringify(v)};"
	"   chosen.push(o); }"
	" if (chosen.length > 1 && !this.multiple) return {error: 'the element allows only one choice'};"
	" for (const o of opts) o.selected = chosen.includes(o);"
	" this.dispatchEvent(new Event('input', {bubbles: true}));"
	" this.dispatchEvent(new Event('change', {bubbles: true}));"
	" return {selected: chosen.map(o => o.value)}; }";

static int tl_select_values(struct tl *t, const char *ref, const struct br_el *el, json_t *values,
			    struct buf *out, struct err *e)
{
	AUTOJSON json_t *r = tl_call_on(t, el, tl_select_js, json_pack("[O]", values), e);
	const char *err = json_string_value(json_object_get(r, "error"));

	if (!r)
		return -1;
	if (err)
		return err_set(e, 0, "cannot select in %s: %s", ref, err);
	AUTOFREE char *sel = json_dumps(json_object_get(r, "selected"), JSON_COMPACT);
	return buf_appendf(out, e, "Selected %s in %s\n", sel ? sel : "[]", ref);
}

static int tl_select(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref;
	struct br_el el;
	size_t i;
	json_t *v, *values = json_object_get(args, "values");
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (!json_is_array(values))
		return err_http(e, 400, "`values` must be an array of strings");
	json_array_foreach(values, i, v)
		if (!json_is_string(v))
			return err_http(e, 400, "`values[%zu]` must be a string", i);
	if (tl_element(t, args, &ref, &el, e) == -1 ||
	    tl_select_values(t, tl_label(args, ref), &el, values, &out, e) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static const char tl_check_js[] =
	"function(want) {"
	" if (!('checked' in this)) return 'not a checkbox or radio button';"
	" return this.checked === want ? 'done' : 'click'; }";

static int tl_fill_form(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const json_t *fields = json_object_get(args, "fields");
	size_t i;
	json_t *f;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (!json_is_array(fields) || !json_array_size(fields))
		return err_http(e, 400, "`fields` must be a non-empty array of {target, value, type?}");
	json_array_foreach(fields, i, f) {
		const char *ref, *type;
		json_t *value = json_object_get(f, "value");
		if (tl_target(f, true, &ref, e) == -1 || /* also refuses a non-object */
		    cj_get_str(f, "type", "textbox", &type, e) == -1)
			return err_wrap(e, "`fields[%zu]`", i);
		if (!json_is_string(value) && !json_is_boolean(value) && !json_is_number(value))
			return err_http(e, 400, "`fields[%zu].value` must be a string", i);
		if (strcmp(type, "textbox") && strcmp(type, "checkbox") && strcmp(type, "radio") &&
		    strcmp(type, "combobox") && strcmp(type, "slider"))
			return err_http(e, 400, "`fields[%zu].type` must be textbox, checkbox, radio, combobox or slider", i);
	}
	json_array_foreach(fields, i, f) {
		const char *ref, *type = json_string_value(json_object_get(f, "type"));
		const json_t *value = json_object_get(f, "value");
		char num[64];
		struct br_el el;
		const char *sv = json_string_value(value);

		if (json_is_boolean(value))
			sv = json_is_true(value) ? "true" : "false";
		else if (json_is_number(value))
			snprintf(num, sizeof(num), "%g", json_number_value(value)), sv = num;
		if (!type)
			type = "textbox";
		if (tl_target(f, true, &ref, e) == -1 || br_ref_resolve(t->b, &t->cx, ref, &el, e) == -1)
			return err_wrap(e, "field %zu", i);
		if (strcmp(type, "checkbox") == 0 || strcmp(type, "radio") == 0) {
			bool want = strcmp(sv, "true") == 0 || strcmp(sv, "on") == 0 || strcmp(sv, "checked") == 0;
			AUTOJSON json_t *r = tl_call_on(t, &el, tl_check_js, json_pack("[b]", want), e);
			const char *s = json_string_value(r);
			double x, y;
			if (!r)
				return err_wrap(e, "field %zu", i);
			if (s && strcmp(s, "click") == 0) {
				if (in_element_point(t->b, &t->cx, &el, &x, &y, e) == -1 ||
				    in_click(t->b, &t->cx, x, y, "left", 1, 0, e) == -1)
					return err_wrap(e, "field %zu", i);
			} else if (!s || strcmp(s, "done") != 0) {
				return err_set(e, 0, "field %zu (%s): %s", i, ref, s ? s : "cannot be checked");
			}
			buf_appendf(&out, NULL, "Set %s to %s\n", ref, want ? "checked" : "unchecked");
		} else if (strcmp(type, "combobox") == 0) {
			AUTOJSON json_t *vals = json_pack("[s]", sv);
			if (tl_select_values(t, ref, &el, vals, &out, e) == -1)
				return err_wrap(e, "field %zu", i);
		} else if (strcmp(type, "slider") == 0) {
			AUTOJSON json_t *r = tl_call_on(t, &el,
							"function(v) { this.value = v;"
							" this.dispatchEvent(new Event('input', {bubbles: true}));"
							" this.dispatchEvent(new Event('change', {bubbles: true}));"
							" return String(this.value); }",
							json_pack("[s]", sv), e);
			if (!r)
				return err_wrap(e, "field %zu", i);
			buf_appendf(&out, NULL, "Set %s to %s\n", ref, json_string_value(r) ? json_string_value(r) : sv);
		} else {
			if (tl_fill_text(t, ref, &el, sv, false, e) == -1)
				return err_wrap(e, "field %zu", i);
			buf_appendf(&out, NULL, "Filled %s\n", ref);
		}
	}
	return tl_finish(t, &out, res, e);
}

/* --- waiting, looking, evaluating --------------------------------------------- */

static int tl_wait_for(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const json_t *time = json_object_get(args, "time");
	const char *text, *gone;
	double secs = 0;

	if (cj_get_str(args, "text", NULL, &text, e) == -1 ||
	    cj_get_str(args, "textGone", NULL, &gone, e) == -1)
		return -1;
	if (time && !json_is_null(time)) {
		if (!json_is_number(time))
			return err_http(e, 400, "`time` must be a number of seconds");
		secs = json_number_value(time);
		if (!(secs >= 0 && secs <= TL_MAX_WAIT_S))
			return err_http(e, 400, "`time` must be between 0 and %d seconds", TL_MAX_WAIT_S);
	}
	if (!text && !gone && !(time && !json_is_null(time)))
		return err_http(e, 400, "give `time`, `text` or `textGone`");
	if (!text && !gone) {
		if (br_sleep(&t->cx, (unsigned)(secs * 1000), e) == -1)
			return -1;
		return mcp_result_text(res, "Waited %g s", secs);
	}
	/* text waits are bounded by `time` when given, else 30 s */
	unsigned limit = time && !json_is_null(time) ? (unsigned)(secs * 1000) : TL_TEXT_WAIT_MS;
	uint64_t start = util_now_ms(), last_progress = start;
	AUTOJSON json_t *needle = json_string(text ? text : gone);
	AUTOFREE char *lit = needle ? json_dumps(needle, JSON_ENCODE_ANY) : NULL;
	AUTOFREE char *expr = NULL;
	if (!lit || asprintf(&expr, "(t => !!document.body && document.body.innerText.includes(t))(%s)", lit) == -1)
		return err_set(e, ENOMEM, "wait");
	for (;;) {
		AUTOJSON json_t *r = tl_cdp(t, "Runtime.evaluate",
					    json_pack("{s:s, s:b}", "expression", expr, "returnByValue", 1), e);
		/* a navigation in between is not a failure: look again */
		bool found = r && json_is_true(json_object_get(json_object_get(r, "result"), "value"));
		if (r && found == (text != NULL))
			break;
		uint64_t now = util_now_ms();
		if (now - start >= limit)
			return err_set(e, 0, "the text \"%s\" %s within %u ms", text ? text : gone,
				       text ? "did not appear" : "did not go away", limit);
		if (now - last_progress >= 1000) {
			mcp_call_progress(t->call, (double)(now - start), limit, "waiting for the page text");
			last_progress = now;
		}
		if (br_sleep(&t->cx, 200, e) == -1)
			return -1;
	}
	AUTOBUF struct buf out = BUF_INIT(4u << 20);
	if (buf_appendf(&out, e, "Text \"%s\" %s\n", text ? text : gone,
			text ? "appeared" : "is gone") == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static int tl_screenshot(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *type, *ref;
	bool full;
	json_t *params;

	if (cj_get_str(args, "type", "png", &type, e) == -1 ||
	    cj_get_bool(args, "fullPage", false, &full, e) == -1 ||
	    tl_target(args, false, &ref, e) == -1 ||
	    cj_get_str(args, "filename", NULL, &(const char *){NULL}, e) == -1)
		return -1;
	if (strcmp(type, "png") != 0 && strcmp(type, "jpeg") != 0)
		return err_http(e, 400, "`type` must be \"png\" or \"jpeg\"");
	if (full && ref)
		return err_http(e, 400, "`fullPage` and `target` cannot be combined");
	params = json_pack("{s:s}", "format", type);
	if (strcmp(type, "jpeg") == 0)
		json_object_set_new(params, "quality", json_integer(80));
	if (full || ref) {
		double x = 0, y = 0, w, h;
		if (full) {
			AUTOJSON json_t *m = tl_cdp(t, "Page.getLayoutMetrics", NULL, e);
			const json_t *sz = json_object_get(m, "cssContentSize");
			if (!m) {
				json_decref(params);
				return -1;
			}
			w = json_number_value(json_object_get(sz, "width"));
			h = json_number_value(json_object_get(sz, "height"));
		} else {
			struct br_el el;
			double ox, oy;
			if (br_ref_resolve(t->b, &t->cx, ref, &el, e) == -1 ||
			    br_frame_offset(t->b, &t->cx, el.session, &ox, &oy, e) == -1) {
				json_decref(params);
				return -1;
			}
			AUTOJSON json_t *bm = br_cdp_s(t->b, &t->cx, el.session, "DOM.getBoxModel",
						       json_pack("{s:i}", "backendNodeId", el.backend), e);
			const json_t *q = json_object_get(json_object_get(bm, "model"), "border");
			if (json_array_size(q) != 8) {
				json_decref(params);
				return err_set(e, 0, "the element %s has no box to capture", ref);
			}
			AUTOJSON json_t *m = tl_cdp(t, "Page.getLayoutMetrics", NULL, e);
			const json_t *vp = json_object_get(m, "cssVisualViewport");
			x = ox + json_number_value(json_array_get(q, 0)) + json_number_value(json_object_get(vp, "pageX"));
			y = oy + json_number_value(json_array_get(q, 1)) + json_number_value(json_object_get(vp, "pageY"));
			w = json_number_value(json_array_get(q, 4)) - json_number_value(json_array_get(q, 0));
			h = json_number_value(json_array_get(q, 5)) - json_number_value(json_array_get(q, 1));
		}
		if (w < 1 || h < 1) {
			json_decref(params);
			return err_set(e, 0, "nothing to capture: the area is %gx%g", w, h);
		}
		if (h > TL_MAX_SHOT_HEIGHT)
			h = TL_MAX_SHOT_HEIGHT;
		json_object_set_new(params, "clip", json_pack("{s:f, s:f, s:f, s:f, s:i}", "x", x, "y", y,
								 "width", w, "height", h, "scale", 1));
		json_object_set_new(params, "captureBeyondViewport", json_true());
	}
	AUTOJSON json_t *r = tl_cdp(t, "Page.captureScreenshot", params, e);
	const char *data = json_string_value(json_object_get(r, "data"));
	if (!r)
		return -1;
	if (!data)
		return err_set(e, 0, "the browser returned no image");
	size_t len = strlen(data);
	AUTOFREE unsigned char *raw = malloc(len / 4 * 3 + 3);
	long n = raw ? tools_base64_decode(data, len, raw) : -1;
	if (n < 0)
		return err_set(e, 0, "the browser returned a malformed image");
	if (mcp_result_image(res, raw, (size_t)n, strcmp(type, "png") == 0 ? "image/png" : "image/jpeg") == -1)
		return err_set(e, ENOMEM, "screenshot");
	return mcp_result_text(res, "Screenshot of %s (%s, %ld bytes)",
			       ref ? ref : full ? "the full page" : "the viewport", type, n);
}

static int tl_evaluate(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *fn, *ref;
	AUTOJSON json_t *r = NULL;

	if (cj_req_str(args, "function", &fn, e) == -1 || tl_target(args, false, &ref, e) == -1)
		return -1;
	if (ref) {
		struct br_el el;
		if (br_ref_resolve(t->b, &t->cx, ref, &el, e) == -1)
			return -1;
		r = br_cdp_s(t->b, &t->cx, el.session, "Runtime.callFunctionOn",
			     json_pack("{s:s, s:s, s:[{s:s}], s:b, s:b, s:b}", "functionDeclaration", fn,
				       "objectId", el.obj, "arguments", "objectId", el.obj, "returnByValue", 1,
				       "awaitPromise", 1, "userGesture", 1), e);
	} else {
		/* a function is called; a plain expression is just evaluated */
		AUTOFREE char *expr = NULL;
		if (asprintf(&expr, "(() => { const f = (%s\n); return typeof f === 'function' ? f() : f; })()", fn) == -1)
			return err_set(e, ENOMEM, "evaluate");
		r = tl_cdp(t, "Runtime.evaluate",
			   json_pack("{s:s, s:b, s:b, s:b}", "expression", expr, "returnByValue", 1,
				     "awaitPromise", 1, "userGesture", 1), e);
	}
	if (!r)
		return -1;
	const json_t *ex = json_object_get(r, "exceptionDetails");
	if (ex) {
		const char *d = json_string_value(json_object_get(json_object_get(ex, "exception"), "description"));
		const char *tx = json_string_value(json_object_get(ex, "text"));
		return mcp_result_error(res, "The function threw: %s", d ? d : tx ? tx : "an exception");
	}
	const json_t *result = json_object_get(r, "result");
	const json_t *v = json_object_get(result, "value");
	const char *uns = json_string_value(json_object_get(result, "unserializableValue"));
	const char *type = json_string_value(json_object_get(result, "type"));
	AUTOFREE char *text = NULL;
	if (v)
		text = json_dumps(v, JSON_ENCODE_ANY | JSON_INDENT(2));
	else
		text = strdup(uns ? uns : type && strcmp(type, "undefined") == 0 ? "undefined" : "null");
	if (!text)
		return err_set(e, ENOMEM, "evaluate");
	size_t len = strlen(text);
	if (len > t->o->max_result)
		return mcp_result_text(res, "%.*s\n[result truncated: %zu of %zu characters shown]",
				       (int)t->o->max_result, text, t->o->max_result, len);
	return mcp_result_textn(res, text, len);
}

static int tl_console(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	AUTOBUF struct buf out = BUF_INIT(1u << 20);
	(void)args;
	if (br_console(t->b, &out, e) == -1)
		return -1;
	return mcp_result_textn(res, buf_str(&out), out.len);
}

static int tl_tabs(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *action, *url;
	long long index;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);
	int rc = 0;

	if (cj_req_str(args, "action", &action, e) == -1 ||
	    cj_get_int(args, "index", -1, &index, e) == -1 || cj_get_str(args, "url", NULL, &url, e) == -1)
		return -1;
	if (strcmp(action, "list") == 0) {
		/* nothing to do */
	} else if (strcmp(action, "new") == 0) {
		rc = br_tab_new(t->b, &t->cx, url, e);
		if (rc == 0 && url)
			rc = br_wait_load(t->b, &t->cx, 0, 0, true, e);
	} else if (strcmp(action, "select") == 0) {
		if (index < 0)
			return err_http(e, 400, "`index` is required to select a tab");
		rc = br_tab_select(t->b, &t->cx, index, e);
	} else if (strcmp(action, "close") == 0) {
		rc = br_tab_close(t->b, &t->cx, index, e);
	} else {
		return err_http(e, 400, "`action` must be \"list\", \"new\", \"select\" or \"close\"");
	}
	if (rc == -1 || buf_appends(&out, "### Open tabs\n", e) == -1 || br_tabs_list(t->b, &out, e) == -1)
		return -1;
	if (strcmp(action, "list") == 0)
		return mcp_result_textn(res, buf_str(&out), out.len);
	return tl_finish(t, &out, res, e);
}

static int tl_resize(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	long long w, h;
	char target[64];

	if (cj_req_int(args, "width", &w, e) == -1 || cj_req_int(args, "height", &h, e) == -1)
		return -1;
	if (w < 200 || w > 8192 || h < 150 || h > 8192)
		return err_http(e, 400, "`width` must be 200-8192 and `height` 150-8192");
	if (br_target(t->b, target, e) == -1)
		return -1;
	/* The window is sized so that the page gets the asked-for viewport:
	 * the visible browser is resized, not emulated. */
	AUTOJSON json_t *win = br_cdp(t->b, &t->cx, false, "Browser.getWindowForTarget",
				      json_pack("{s:s}", "targetId", target), e);
	AUTOJSON json_t *chrome = tl_cdp(t, "Runtime.evaluate",
					 json_pack("{s:s, s:b}", "expression",
						   "[outerWidth - innerWidth, outerHeight - innerHeight]",
						   "returnByValue", 1), e);
	if (!win || !chrome)
		return -1;
	const json_t *d = json_object_get(json_object_get(chrome, "result"), "value");
	json_t *id = json_object_get(win, "windowId");
	long long dw = json_integer_value(json_array_get(d, 0)), dh = json_integer_value(json_array_get(d, 1));
	AUTOJSON json_t *n = br_cdp(t->b, &t->cx, false, "Browser.setWindowBounds",
				    json_pack("{s:O, s:{s:s}}", "windowId", id, "bounds", "windowState", "normal"), e);
	if (!n)
		return -1;
	AUTOJSON json_t *s = br_cdp(t->b, &t->cx, false, "Browser.setWindowBounds",
				    json_pack("{s:O, s:{s:I, s:I}}", "windowId", id, "bounds", "width",
					      (json_int_t)(w + dw), "height", (json_int_t)(h + dh)), e);
	if (!s || br_sleep(&t->cx, 200, e) == -1)
		return -1;
	AUTOJSON json_t *now = tl_cdp(t, "Runtime.evaluate",
				      json_pack("{s:s, s:b}", "expression", "[innerWidth, innerHeight]",
						"returnByValue", 1), e);
	const json_t *v = json_object_get(json_object_get(now, "result"), "value");
	return mcp_result_text(res, "Resized the browser window; the page viewport is now %lldx%lld (asked for %lldx%lld)",
			       (long long)json_integer_value(json_array_get(v, 0)),
			       (long long)json_integer_value(json_array_get(v, 1)), w, h);
}

static int tl_close(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	(void)args;
	if (br_reset(t->b, &t->cx, e) == -1)
		return -1;
	return mcp_result_text(res, "Closed every tab. The desktop's browser keeps running with one tab on its start page.");
}

static int tl_dialog(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	bool accept;
	const char *prompt;
	char type[16], msg[512];
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (cj_req_bool(args, "accept", &accept, e) == -1 ||
	    cj_get_str(args, "promptText", NULL, &prompt, e) == -1)
		return -1;
	if (!br_dialog(t->b, type, sizeof(type), msg, sizeof(msg)))
		return err_set(e, 0, "no dialog is open in the current tab");
	json_t *p = json_pack("{s:b}", "accept", accept);
	if (prompt)
		json_object_set_new(p, "promptText", json_string(prompt));
	AUTOJSON json_t *r = tl_cdp(t, "Page.handleJavaScriptDialog", p, e);
	if (!r)
		return -1;
	/* the closing event follows the answer */
	for (int i = 0; i < 40 && br_dialog(t->b, type, sizeof(type), msg, sizeof(msg)); i++)
		if (br_sleep(&t->cx, 25, e) == -1)
			return -1;
	if (buf_appendf(&out, e, "%s the %s dialog\n", accept ? "Accepted" : "Dismissed", type) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static int tl_drag(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *from, *to;
	struct br_el e1, e2;
	double x1, y1, x2, y2;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (tools_element_arg(args, "startTarget", "startRef", true, &from, e) == -1 ||
	    tools_element_arg(args, "endTarget", "endRef", true, &to, e) == -1)
		return -1;
	if (br_ref_resolve(t->b, &t->cx, from, &e1, e) == -1 ||
	    br_ref_resolve(t->b, &t->cx, to, &e2, e) == -1 ||
	    in_element_point(t->b, &t->cx, &e1, &x1, &y1, e) == -1 ||
	    in_element_point(t->b, &t->cx, &e2, &x2, &y2, e) == -1)
		return -1;
	/* the end point is measured after scrolling it into view, so the
	 * start is measured again in case that scrolled it */
	if (in_element_point(t->b, &t->cx, &e1, &x1, &y1, e) == -1 ||
	    in_drag(t->b, &t->cx, x1, y1, x2, y2, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "Dragged %s to %s\n", from, to) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

/* --- the table ------------------------------------------------------------------ */


static const struct tl_def tl_defs[] = {
	{"browser_navigate", "Navigate to a URL", "Navigate the current tab to a URL and wait for it to load. Answers with the page snapshot.",
	 "{\"type\": \"object\", \"properties\": {\"url\": {\"type\": \"string\", \"description\": \"The URL to navigate to\"}}, \"required\": [\"url\"]}",
	 false, true, false, tl_navigate},
	{"browser_navigate_back", "Go back", "Go back to the previous page of the current tab.",
	 "{\"type\": \"object\", \"properties\": {}}", false, true, false, tl_back},
	{"browser_snapshot", "Page snapshot",
	 "Capture an accessibility snapshot of the current page (or of one element): an outline of its elements with refs (e.g. [ref=e12]) that the other tools take as `target`. Better than a screenshot for acting on the page. Refs stay valid until the page changes.",
	 "{\"type\": \"object\", \"properties\": {" TARGET_PROPS("optional: the outline of this element only") ","
	 "\"depth\": {\"type\": \"integer\", \"minimum\": 1, \"description\": \"Levels of the outline to show (1: the top ones); deeper parts are summed up with a ref to look into\"},"
	 "\"offset\": {\"type\": \"integer\", \"minimum\": 0, \"description\": \"Line of the outline to start at: a long page's snapshot says where the next part starts\"}}}",
	 true, false, false, tl_snapshot},
	{"browser_find", "Find on the page",
	 "Find elements of the current page by their text: each match names the element that holds it with its ref, its line in the page snapshot and the text around the match. For reaching any part of a long page.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"text\": {\"type\": \"string\", \"description\": \"Text to look for (any case)\"},"
	 "\"regex\": {\"type\": \"string\", \"description\": \"Or a POSIX extended regular expression (case matters)\"},"
	 "\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 500, \"description\": \"Matches to list at most (20)\"}}}",
	 true, false, false, tl_find},
	{"browser_click", "Click", "Click an element of the page, named by its ref from the snapshot (`target`).",
	 "{\"type\": \"object\", \"properties\": {" TARGET_REQUIRED ","
	 "\"doubleClick\": {\"type\": \"boolean\", \"description\": \"Double-click instead of a single click\"},"
	 "\"button\": {\"type\": \"string\", \"enum\": [\"left\", \"right\", \"middle\"], \"description\": \"Button to click, left by default\"},"
	 "\"modifiers\": {\"type\": \"array\", \"items\": {\"type\": \"string\", \"enum\": [\"Alt\", \"Control\", \"ControlOrMeta\", \"Meta\", \"Shift\"]}, \"description\": \"Modifier keys held during the click\"}}}",
	 false, true, false, tl_click},
	{"browser_hover", "Hover", "Move the mouse over an element of the page.",
	 "{\"type\": \"object\", \"properties\": {" TARGET_REQUIRED "}}", false, false, false, tl_hover},
	{"browser_type", "Type text", "Type text into an editable element, replacing what it held.",
	 "{\"type\": \"object\", \"properties\": {" TARGET_REQUIRED ","
	 "\"text\": {\"type\": \"string\", \"description\": \"Text to type\"},"
	 "\"submit\": {\"type\": \"boolean\", \"description\": \"Press Enter afterwards\"},"
	 "\"slowly\": {\"type\": \"boolean\", \"description\": \"Type one key at a time (for pages that react to key presses); by default the text is inserted at once\"}},"
	 " \"required\": [\"text\"]}",
	 false, true, false, tl_type},
	{"browser_press_key", "Press a key", "Press a key on the keyboard, e.g. Enter, ArrowLeft, a, or a chord such as Control+a.",
	 "{\"type\": \"object\", \"properties\": {\"key\": {\"type\": \"string\", \"description\": \"Name of the key to press or a character to generate, such as `ArrowLeft` or `a`\"}}, \"required\": [\"key\"]}",
	 false, true, false, tl_press},
	{"browser_select_option", "Select option", "Select options in a dropdown (<select>), by value or label.",
	 "{\"type\": \"object\", \"properties\": {" TARGET_REQUIRED ","
	 "\"values\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": \"Values or labels to select; several for a multi-select\"}},"
	 " \"required\": [\"values\"]}",
	 false, true, false, tl_select},
	{"browser_fill_form", "Fill form", "Fill several form fields at once.",
	 "{\"type\": \"object\", \"properties\": {\"fields\": {\"type\": \"array\", \"description\": \"Fields to fill in\", \"items\": {\"type\": \"object\", \"properties\": {"
	 "\"name\": {\"type\": \"string\", \"description\": \"Human-readable field name\"},"
	 "\"type\": {\"type\": \"string\", \"enum\": [\"textbox\", \"checkbox\", \"radio\", \"combobox\", \"slider\"], \"description\": \"Type of the field\"},"
	 "\"target\": " TARGET_DESC("field", "required; older clients send it as `ref`") ", \"ref\": " ALIAS_DESC("target") ","
	 "\"value\": {\"type\": \"string\", \"description\": \"Value to fill; for checkboxes true or false; for a combobox the option's label or value\"}},"
	 " \"required\": [\"value\"]}}}, \"required\": [\"fields\"]}",
	 false, true, false, tl_fill_form},
	{"browser_wait_for", "Wait for", "Wait for text to appear or disappear, or for a number of seconds.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"time\": {\"type\": \"number\", \"description\": \"Seconds to wait (at most 120); with text or textGone, the longest to wait (default 30)\"},"
	 "\"text\": {\"type\": \"string\", \"description\": \"Text to wait for\"},"
	 "\"textGone\": {\"type\": \"string\", \"description\": \"Text to wait to disappear\"}}}",
	 true, false, false, tl_wait_for},
	{"browser_take_screenshot", "Take a screenshot",
	 "Take a screenshot of the current page (the viewport, the full page, or one element). For acting on the page, browser_snapshot is better.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"type\": {\"type\": \"string\", \"enum\": [\"png\", \"jpeg\"], \"description\": \"Image format, png by default\"},"
	 "\"fullPage\": {\"type\": \"boolean\", \"description\": \"The full scrollable page instead of the viewport\"},"
	 "\"filename\": {\"type\": \"string\", \"description\": \"Ignored: the image is returned in the answer\"},"
	 TARGET_PROPS("optional: a screenshot of this element instead of the viewport") "}}",
	 true, false, false, tl_screenshot},
	{"browser_evaluate", "Evaluate JavaScript",
	 "Evaluate a JavaScript function on the page, or on an element (which it gets as its argument); answers with the JSON value it returns.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"function\": {\"type\": \"string\", \"description\": \"() => { /* code */ } or (element) => { /* code */ } when an element is given\"},"
	 TARGET_PROPS("optional: the element the function gets as its argument") "},"
	 " \"required\": [\"function\"]}",
	 false, true, false, tl_evaluate},
	{"browser_console_messages", "Console messages", "Return the console messages (and uncaught errors) of the current tab, oldest first.",
	 "{\"type\": \"object\", \"properties\": {}}", true, false, true, tl_console},
	{"browser_tabs", "Manage tabs", "List, open, select or close browser tabs.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"action\": {\"type\": \"string\", \"enum\": [\"list\", \"new\", \"select\", \"close\"], \"description\": \"Operation\"},"
	 "\"index\": {\"type\": \"integer\", \"description\": \"Tab index for select and close; close without it closes the current tab\"},"
	 "\"url\": {\"type\": \"string\", \"description\": \"For new: the URL to open\"}},"
	 " \"required\": [\"action\"]}",
	 false, true, true, tl_tabs},
	{"browser_resize", "Resize browser window", "Resize the browser window so the page viewport gets the given size.",
	 "{\"type\": \"object\", \"properties\": {\"width\": {\"type\": \"integer\", \"description\": \"Viewport width\"}, \"height\": {\"type\": \"integer\", \"description\": \"Viewport height\"}}, \"required\": [\"width\", \"height\"]}",
	 false, false, false, tl_resize},
	{"browser_handle_dialog", "Handle a dialog", "Answer the JavaScript dialog (alert, confirm, prompt) that blocks the page.",
	 "{\"type\": \"object\", \"properties\": {\"accept\": {\"type\": \"boolean\", \"description\": \"Accept (OK) or dismiss (Cancel) the dialog\"},"
	 " \"promptText\": {\"type\": \"string\", \"description\": \"Text to answer a prompt dialog with\"}}, \"required\": [\"accept\"]}",
	 false, true, true, tl_dialog},
	{"browser_drag", "Drag mouse", "Drag and drop between two elements of the page.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"startElement\": {\"type\": \"string\", \"description\": \"Human-readable description of the source element\"},"
	 "\"startTarget\": " TARGET_DESC("source element", "required; older clients send it as `startRef`") ","
	 "\"startRef\": " ALIAS_DESC("startTarget") ","
	 "\"endElement\": {\"type\": \"string\", \"description\": \"Human-readable description of the target element\"},"
	 "\"endTarget\": " TARGET_DESC("target element", "required; older clients send it as `endRef`") ","
	 "\"endRef\": " ALIAS_DESC("endTarget") "}}",
	 false, true, false, tl_drag},
	{"browser_close", "Close the page",
	 "Close every tab. The desktop's browser keeps running (it is what people watch over VNC) with one tab on its start page.",
	 "{\"type\": \"object\", \"properties\": {}}", false, true, true, tl_close},
};

/* The i-th tool of both tables (tools.c's and tools_more.c's), NULL past
 * the end. */
static const struct tl_def *tl_nth(size_t i)
{
	size_t more;
	const struct tl_def *m = tl_more_defs(&more);

	if (i < ARRAY_LEN(tl_defs))
		return &tl_defs[i];
	i -= ARRAY_LEN(tl_defs);
	return i < more ? &m[i] : NULL;
}

const char *tools_schema(const char *name)
{
	const struct tl_def *d;

	for (size_t i = 0; (d = tl_nth(i)); i++)
		if (strcmp(d->name, name) == 0)
			return d->schema;
	return NULL;
}

static int tl_dispatch(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		       struct err *e)
{
	const struct tl_bound *bd = mcp_call_ud(call);
	struct tools *owner = bd->owner;
	struct tl t = {owner->b, {tl_cancelled, call}, call, &owner->o};
	uint64_t t0 = util_now_ms();
	AUTOJSON json_t *none = json_object();
	int rc;

	if (args && !json_is_object(args))
		return err_http(e, 400, "arguments must be a JSON object");
	if (br_lock(t.b, &t.cx, e) == -1)
		return mcp_result_error(res, "%s", e->msg) == -1 ? -1 : 0;
	char type[16], msg[512];
	if (!bd->def->during_dialog && br_dialog(t.b, type, sizeof(type), msg, sizeof(msg))) {
		br_unlock(t.b);
		return mcp_result_error(res, "A dialog is open in the page (%s: \"%s\"). Answer it with "
				       "browser_handle_dialog (accept, and promptText for a prompt) first.",
				       type, msg) == -1 ? -1 : 0;
	}
	rc = bd->def->fn(&t, args ? args : none, res, e);
	br_unlock(t.b);
	log_debug("tool call", "{s:s, s:i, s:I}", "tool", bd->def->name, "rc", rc,
		  "ms", (json_int_t)(util_now_ms() - t0));
	if (rc == 0)
		return 0;
	if (e->http_status == 400)
		return -1;
	/* a failure the model can read and act on */
	mcp_result_error(res, "%s", e->msg);
	return 0;
}

struct tools *tools_register(struct mcp_server *s, struct browser *b, const struct tools_opts *o,
			     struct err *e)
{
	struct tools *t = calloc(1, sizeof(*t));

	size_t n = 0;

	while (tl_nth(n))
		n++;
	if (!t || !(t->bound = calloc(n, sizeof(*t->bound)))) {
		free(t);
		err_set(e, ENOMEM, "tools");
		return NULL;
	}
	t->b = b;
	t->o = *o;
	for (size_t i = 0; i < n; i++) {
		const struct tl_def *d = tl_nth(i);
		struct mcp_tool tool = {d->name, d->title, d->desc, d->schema, NULL, d->read_only,
					d->destructive, tl_dispatch, &t->bound[i]};
		t->bound[i] = (struct tl_bound){d, t};
		if (mcp_server_add_tool(s, &tool, e) == -1) {
			err_wrap(e, "register %s", d->name);
			tools_free(t);
			return NULL;
		}
	}
	return t;
}

void tools_free(struct tools *t)
{
	if (!t)
		return;
	free(t->bound);
	free(t);
}
