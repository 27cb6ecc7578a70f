/* The tools that move between pages, tabs and the window: navigate, back,
 * the tab list, the window size, closing every tab. */
#include "mcp/browser/tools_int.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

/* --- the table ------------------------------------------------------------------ */

static const struct tl_def nav_defs[] = {
	{"browser_navigate", "Navigate to a URL", "Navigate the current tab to a URL and wait for it to load. Answers with the page snapshot.",
	 "{\"type\": \"object\", \"properties\": {\"url\": {\"type\": \"string\", \"description\": \"The URL to navigate to\"}}, \"required\": [\"url\"]}",
	 false, true, false, tl_navigate},
	{"browser_navigate_back", "Go back", "Go back to the previous page of the current tab.",
	 "{\"type\": \"object\", \"properties\": {}}", false, true, false, tl_back},
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
	{"browser_close", "Close the page",
	 "Close every tab. The desktop's browser keeps running (it is what people watch over VNC) with one tab on its start page.",
	 "{\"type\": \"object\", \"properties\": {}}", false, true, true, tl_close},
};

const struct tl_def *tl_nav_defs(size_t *n)
{
	*n = ARRAY_LEN(nav_defs);
	return nav_defs;
}
