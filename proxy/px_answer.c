/* The proxy's own answers; see px_answer.h. */
#include "proxy/px_answer.h"

#include "common/http_status.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Appends s with the five HTML specials escaped. */
static int html_escape(struct buf *out, const char *s, struct err *e)
{
	for (; *s; s++) {
		const char *r = NULL;

		switch (*s) {
		case '<': r = "&lt;"; break;
		case '>': r = "&gt;"; break;
		case '&': r = "&amp;"; break;
		case '"': r = "&quot;"; break;
		case '\'': r = "&#39;"; break;
		}
		if (r ? buf_appends(out, r, e) == -1 : buf_append(out, s, 1, e) == -1)
			return -1;
	}
	return 0;
}

int px_answer_build(const struct px_answer *a, struct buf *out, struct err *e)
{
	struct buf body = BUF_INIT(16384);
	const char *type = a->type;
	int rc = -1;

	if (a->body) {
		if (buf_appends(&body, a->body, e) == -1)
			goto out;
	} else if (a->html) {
		type = "text/html; charset=utf-8";
		if (buf_appendf(&body, e,
				"<!doctype html><html><head><meta charset=\"utf-8\"><title>%d %s</title>"
				"<style>body{font:16px system-ui,sans-serif;margin:3em auto;max-width:40em;"
				"padding:0 1em;color:#222}h1{font-size:1.4em}code{color:#666}</style>"
				"</head><body><h1>%d %s</h1><p>",
				a->status, http_status_reason(a->status), a->status,
				http_status_reason(a->status)) == -1 ||
		    html_escape(&body, a->message ? a->message : "", e) == -1 ||
		    buf_appendf(&body, e, "</p><p><code>%s</code> &middot; cloche-proxy</p></body></html>\n",
				a->code ? a->code : http_status_code(a->status)) == -1)
			goto out;
	} else {
		json_t *j = json_pack("{s:{s:s, s:s}}", "error", "code",
				      a->code ? a->code : http_status_code(a->status),
				      "message", a->message ? a->message : "");
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

		json_decref(j);
		type = "application/json";
		if (!s || buf_appends(&body, s, e) == -1 || buf_appends(&body, "\n", e) == -1) {
			free(s);
			goto out;
		}
		free(s);
	}
	if (buf_appendf(out, e,
			"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			"Cache-Control: no-store\r\n%s%s\r\n",
			a->status, http_status_reason(a->status), type ? type : "text/plain", body.len,
			a->headers ? a->headers : "",
			a->keep_alive ? "" : "Connection: close\r\n") == -1 ||
	    buf_append(out, body.data ? body.data : "", body.len, e) == -1)
		goto out;
	rc = 0;
out:
	buf_free(&body);
	return rc;
}
