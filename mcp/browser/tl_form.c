/* The keyboard and form tools: typing into a field, pressing a key,
 * choosing in a <select>, filling several fields at once, and file upload
 * (files from the sandbox into a page's file input). */
#include "mcp/browser/input.h"
#include "mcp/browser/tools_int.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TM_MAX_FILES 64

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

/* --- file upload ------------------------------------------------------------------ */

/* Checks `paths`: absolute names of readable regular files. */
static int tm_paths(const json_t *paths, struct err *e)
{
	size_t i;
	json_t *p;
	struct stat st;

	if (!json_is_array(paths))
		return err_http(e, 400, "`paths` must be an array of absolute file names");
	if (json_array_size(paths) > TM_MAX_FILES)
		return err_http(e, 400, "at most %d files at once", TM_MAX_FILES);
	json_array_foreach(paths, i, p) {
		const char *f = json_string_value(p);

		if (!f || f[0] != '/')
			return err_http(e, 400, "`paths[%zu]` must be an absolute file name", i);
		if (stat(f, &st) == -1)
			return err_http(e, 400, "`%.300s`: %s", f, strerror(errno));
		if (!S_ISREG(st.st_mode))
			return err_http(e, 400, "`%.300s` is not a regular file", f);
		if (access(f, R_OK) == -1)
			return err_http(e, 400, "`%.300s` cannot be read: %s", f, strerror(errno));
	}
	return 0;
}

static int tm_upload(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref;
	const json_t *paths = json_object_get(args, "paths");
	AUTOJSON json_t *files = NULL, *r = NULL;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);
	struct br_el el = {.session = ""};
	int backend = 0;
	bool multiple = false, chooser = false;

	if (tl_target(args, false, &ref, e) == -1)
		return -1;
	files = paths && !json_is_null(paths) ? json_incref((json_t *)paths) : json_array();
	if (tm_paths(files, e) == -1)
		return -1;
	if (ref) {
		AUTOJSON json_t *m = NULL;

		if (br_ref_resolve(t->b, &t->cx, ref, &el, e) == -1 ||
		    !(m = tl_call_on(t, &el,
				     "function() { return this instanceof HTMLInputElement && this.type === 'file'"
				     " ? this.multiple : null; }",
				     NULL, e)))
			return -1;
		if (!json_is_boolean(m))
			return err_http(e, 400, "%s is not a file input", tl_label(args, ref));
		multiple = json_is_true(m);
		backend = el.backend;
	} else if (!(backend = br_file_chooser(t->b, &multiple))) {
		return err_http(e, 400, "no file chooser is open: click the page's file input first "
				"(browser_click), or give the input's `target`");
	} else {
		chooser = true;
	}
	if (json_array_size(files) > 1 && !multiple)
		return err_http(e, 400, "this file input takes one file, and %zu were given",
				json_array_size(files));
	r = br_cdp_s(t->b, &t->cx, el.session, "DOM.setFileInputFiles",
		     json_pack("{s:O, s:i}", "files", files, "backendNodeId", backend), e);
	if (!r)
		return err_wrap(e, "file upload%s", ref ? " (is the target a file input?)" : "");
	if (json_array_size(files) == 0)
		buf_appendf(&out, e, "%s\n", chooser ? "Cancelled the file chooser" : "Cleared the file input");
	else
		buf_appendf(&out, e, "Set %zu file%s on %s\n", json_array_size(files),
			    json_array_size(files) == 1 ? "" : "s", ref ? tl_label(args, ref) : "the file chooser");
	return tl_finish(t, &out, res, e);
}

/* --- the table ------------------------------------------------------------------ */

static const struct tl_def form_defs[] = {
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
	{"browser_file_upload", "Upload files",
	 "Set files from the sandbox's file system on the page's file input: the one whose file chooser the last click opened, or the input given as `target`. Without `paths` the chooser is cancelled.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"paths\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": \"Absolute paths of the files; none cancels the file chooser\"},"
	 TARGET_PROPS("optional: the file input, when no file chooser was opened by a click") "}}",
	 false, true, false, tm_upload},
};

const struct tl_def *tl_form_defs(size_t *n)
{
	*n = ARRAY_LEN(form_defs);
	return form_defs;
}
