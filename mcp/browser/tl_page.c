/* The tools that read the page: its snapshot (the outline with refs) and a
 * search in it, a screenshot, a JavaScript function's value, the console
 * messages and network requests of the tab, and the page saved as PDF. */
#include "mcp/browser/tools_int.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/util.h"
#include "mcp/browser/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TL_MAX_SHOT_HEIGHT 16384

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

static int tm_network(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	(void)args;
	if (br_network(t->b, &out, e) == -1)
		return -1;
	return mcp_result_textn(res, buf_str(&out), out.len);
}

/* Where a file the agent names goes: absolute as given, else in $HOME
 * (the sandbox user's, where mcp-shell starts too), else /tmp. */
static int tm_out_path(const char *name, char *path, size_t len, struct err *e)
{
	const char *home = getenv("HOME");

	if (!name[0] || strlen(name) > 255 || strstr(name, "/../") || strncmp(name, "../", 3) == 0)
		return err_http(e, 400, "`filename` must be a file name without `..`");
	if (name[0] == '/')
		snprintf(path, len, "%s", name);
	else
		snprintf(path, len, "%s/%s", home && home[0] == '/' ? home : "/tmp", name);
	return 0;
}

static int tm_pdf(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *name = NULL;
	char def[64], path[PATH_MAX];
	time_t now = time(NULL);
	struct tm tmv;
	AUTOJSON json_t *r = NULL;
	AUTOFREE unsigned char *pdf = NULL;
	const char *data;
	long n;

	if (cj_get_str(args, "filename", NULL, &name, e) == -1)
		return -1;
	gmtime_r(&now, &tmv);
	strftime(def, sizeof(def), "page-%Y%m%d-%H%M%S.pdf", &tmv);
	if (tm_out_path(name ? name : def, path, sizeof(path), e) == -1)
		return -1;
	r = tl_cdp(t, "Page.printToPDF", json_pack("{s:b}", "printBackground", 1), e);
	if (!r)
		return err_wrap(e, "save as PDF");
	data = json_string_value(json_object_get(r, "data"));
	if (!data || !(pdf = malloc(strlen(data) / 4 * 3 + 3)) ||
	    (n = tools_base64_decode(data, strlen(data), pdf)) < 0)
		return err_set(e, 0, "save as PDF: Chromium's answer holds no PDF");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd == -1)
		return err_http(e, 400, "cannot write `%s`: %s", path, strerror(errno));
	if (util_write_all(fd, pdf, (size_t)n) == -1) {
		err_set(e, errno, "write `%s`", path);
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return mcp_result_text(res, "Saved the page as PDF: %s (%ld bytes)", path, n);
}

/* --- the table ------------------------------------------------------------------ */

static const struct tl_def page_defs[] = {
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
	{"browser_network_requests", "List network requests",
	 "List the network requests of the current page since it was loaded: method, URL, status (or the error) and kind.",
	 "{\"type\": \"object\", \"properties\": {}}", true, false, true, tm_network},
	{"browser_pdf_save", "Save as PDF",
	 "Save the current page as a PDF file in the sandbox (in the home directory unless the name is absolute).",
	 "{\"type\": \"object\", \"properties\": {\"filename\": {\"type\": \"string\", \"description\": \"File name, page-<time>.pdf by default\"}}}",
	 false, false, false, tm_pdf},
};

const struct tl_def *tl_page_defs(size_t *n)
{
	*n = ARRAY_LEN(page_defs);
	return page_defs;
}
