/* Filling a tool's result from a handler; see mcp.h (mcp_result_*) and
 * result.h.  Text goes through mcp_utf8_clean() so a handler may hand in
 * any bytes and the answer is still valid JSON. */
#include "mcp/lib/result.h"
#include "mcp/lib/cap.h"
#include "mcp/lib/mcp.h"

#include "common/b64.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mcp_result_init(struct mcp_result *res)
{
	memset(res, 0, sizeof(*res));
	res->content = json_array();
	return res->content ? 0 : -1;
}

void mcp_result_release(struct mcp_result *res)
{
	json_decref(res->content);
	json_decref(res->structured);
	memset(res, 0, sizeof(*res));
}

json_t *mcp_result_take_json(struct mcp_result *res)
{
	json_t *v = json_pack("{s:o}", "content", res->content ? res->content : json_array());

	res->content = NULL;
	if (v && res->structured)
		json_object_set_new(v, "structuredContent", res->structured);
	else
		json_decref(res->structured);
	res->structured = NULL;
	if (v && res->is_error)
		json_object_set_new(v, "isError", json_true());
	return v;
}

int mcp_result_textn(struct mcp_result *res, const char *text, size_t len)
{
	size_t n;
	char *clean = mcp_utf8_clean(text, len, &n);
	json_t *item;

	if (!clean)
		return -1;
	item = json_pack("{s:s, s:s%}", "type", "text", "text", clean, n);
	free(clean);
	return item ? json_array_append_new(res->content, item) : -1;
}

static int vtext(struct mcp_result *res, const char *fmt, va_list ap)
{
	char *s = NULL;
	int n = vasprintf(&s, fmt, ap), rc;

	if (n < 0)
		return -1;
	rc = mcp_result_textn(res, s, (size_t)n);
	free(s);
	return rc;
}

int mcp_result_text(struct mcp_result *res, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vtext(res, fmt, ap);
	va_end(ap);
	return rc;
}

int mcp_result_error(struct mcp_result *res, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vtext(res, fmt, ap);
	va_end(ap);
	res->is_error = true;
	return rc;
}

int mcp_result_image(struct mcp_result *res, const void *data, size_t len, const char *mime)
{
	size_t o;
	char *b64 = b64_encode_alloc(data, len, 0, &o);
	json_t *item;

	if (!b64)
		return -1;
	item = json_pack("{s:s, s:s%, s:s}", "type", "image", "data", b64, o, "mimeType", mime);
	free(b64);
	return item ? json_array_append_new(res->content, item) : -1;
}

void mcp_result_structured(struct mcp_result *res, json_t *obj)
{
	json_decref(res->structured);
	res->structured = obj;
}
