/* Waiting on the page (for a time, or for a text to show or go) and
 * answering the JavaScript dialog that blocks it. */
#include "mcp/browser/tools_int.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define TL_MAX_WAIT_S 120
#define TL_TEXT_WAIT_MS 30000

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

/* --- the table ------------------------------------------------------------------ */

static const struct tl_def wait_defs[] = {
	{"browser_wait_for", "Wait for", "Wait for text to appear or disappear, or for a number of seconds.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"time\": {\"type\": \"number\", \"description\": \"Seconds to wait (at most 120); with text or textGone, the longest to wait (default 30)\"},"
	 "\"text\": {\"type\": \"string\", \"description\": \"Text to wait for\"},"
	 "\"textGone\": {\"type\": \"string\", \"description\": \"Text to wait to disappear\"}}}",
	 true, false, false, tl_wait_for},
	{"browser_handle_dialog", "Handle a dialog", "Answer the JavaScript dialog (alert, confirm, prompt) that blocks the page.",
	 "{\"type\": \"object\", \"properties\": {\"accept\": {\"type\": \"boolean\", \"description\": \"Accept (OK) or dismiss (Cancel) the dialog\"},"
	 " \"promptText\": {\"type\": \"string\", \"description\": \"Text to answer a prompt dialog with\"}}, \"required\": [\"accept\"]}",
	 false, true, true, tl_dialog},
};

const struct tl_def *tl_wait_defs(size_t *n)
{
	*n = ARRAY_LEN(wait_defs);
	return wait_defs;
}
