/* A thumbnail of a sandbox's screen, for the dashboard: one small PNG from
 * the sandbox's own mcp-desktop (its `zoom` action over the whole screen
 * at a scale), fetched over MCP through the sandbox's network namespace.
 *
 * Nothing runs in the sandbox for it unless somebody asks: the portal asks
 * only for thumbnails a dashboard shows, and caches them.  The exchange is
 * three HTTP/1.0 requests (initialize, the call, the session's DELETE),
 * each on its own connection that we close with a reset, like every probe
 * of the agent's: no TIME_WAIT is left inside to refuse a checkpoint. */
#include "node-agent/na_thumb.h"
#include "node-agent/na_netns.h"
#include "node-agent/na_sandbox.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define DESKTOP_PORT 8100
#define SCREEN_W 1280 /* the display every sandbox gets (na_spec.c) */
#define SCREEN_H 800
#define MAX_ANSWER (4u << 20)

/* One request to the sandbox's mcp-desktop; the whole answer (head and
 * body) into out.  Returns the HTTP status, or -1 with e set. */
static int exchange(const char *id, const char *method, const char *session, const char *body,
		    struct buf *out, struct err *e)
{
	AUTOCLOSE int fd = na_netns_connect(id, DESKTOP_PORT, 2000, e);
	struct timeval tv = {5, 0};
	struct linger lg = {1, 0};
	char head[512], chunk[16384];
	int n, status = 0;
	ssize_t r;

	if (fd == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	n = snprintf(head, sizeof(head),
		     "%s /mcp HTTP/1.0\r\nHost: 10.0.2.15:%d\r\nAccept: application/json, "
		     "text/event-stream\r\nContent-Type: application/json\r\n"
		     "MCP-Protocol-Version: 2025-06-18\r\n%s%s%sContent-Length: %zu\r\n\r\n",
		     method, DESKTOP_PORT, session ? "Mcp-Session-Id: " : "", session ? session : "",
		     session ? "\r\n" : "", body ? strlen(body) : 0);
	if (n <= 0 || (size_t)n >= sizeof(head) || util_write_all(fd, head, (size_t)n) == -1 ||
	    (body && util_write_all(fd, body, strlen(body)) == -1))
		return err_set(e, errno, "send to mcp-desktop");
	while ((r = read(fd, chunk, sizeof(chunk))) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return err_set(e, errno, "read from mcp-desktop");
		if (buf_append(out, chunk, (size_t)r, e) == -1)
			return -1;
	}
	if (!out->data || sscanf(out->data, "HTTP/%*d.%*d %d", &status) != 1)
		return err_set(e, 0, "mcp-desktop answered no HTTP");
	return status;
}

/* The body of an answer in b (after the blank line). */
static const char *body_of(const struct buf *b)
{
	const char *p = strstr(b->data, "\r\n\r\n");
	return p ? p + 4 : "";
}

/* The value of header name in the answer's head, into out. */
static bool header_of(const struct buf *b, const char *name, char *out, size_t len)
{
	const char *end = strstr(b->data, "\r\n\r\n");
	size_t nl = strlen(name);

	for (const char *p = strstr(b->data, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n")) {
		const char *l = p + 2;
		if (strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
			l += nl + 1;
			l += strspn(l, " \t");
			size_t vl = strcspn(l, "\r\n");
			if (vl == 0 || vl >= len)
				return false;
			memcpy(out, l, vl);
			out[vl] = '\0';
			return true;
		}
	}
	return false;
}

json_t *na_node_thumbnail(struct na_node *n, const char *id, int width, struct err *e)
{
	char state[32], session[128], call[256];
	struct buf a = BUF_INIT(MAX_ANSWER), b = BUF_INIT(MAX_ANSWER), c = BUF_INIT(MAX_ANSWER);
	uint64_t t0 = util_now_ms();
	json_t *ans = NULL, *out = NULL, *item;
	const char *data = NULL;
	size_t i;
	int st;

	if (!na_node_state(n, id, state, sizeof(state))) {
		err_http(e, 404, "no sandbox `%s`", id);
		return NULL;
	}
	if (strcmp(state, "ready") != 0) {
		err_http(e, 409, "sandbox `%s` is %s: only a running desktop has a screen to show",
			 id, state);
		return NULL;
	}
	if (width < 16 || width > SCREEN_W) {
		err_http(e, 400, "`width` must be between 16 and %d", SCREEN_W);
		return NULL;
	}
	st = exchange(id, "POST", NULL,
		      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		      "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
		      "{\"name\":\"cloche-node-thumbnail\",\"version\":\"1\"}}}",
		      &a, e);
	if (st != 200 || !header_of(&a, "Mcp-Session-Id", session, sizeof(session))) {
		if (st > 0)
			err_set(e, 0, "mcp-desktop refused the session (%d)", st);
		goto fail;
	}
	snprintf(call, sizeof(call),
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"computer\",\"arguments\":{\"action\":\"zoom\",\"region\":[0,0,%d,%d],"
		 "\"scale\":%.4f}}}",
		 SCREEN_W, SCREEN_H, (double)width / SCREEN_W);
	st = exchange(id, "POST", session, call, &b, e);
	/* The session ends whatever the call gave. */
	{
		struct err ignored = ERR_INIT;
		(void)exchange(id, "DELETE", session, NULL, &c, &ignored);
	}
	if (st != 200) {
		if (st > 0)
			err_set(e, 0, "mcp-desktop answered %d", st);
		goto fail;
	}
	ans = json_loads(body_of(&b), 0, NULL);
	json_array_foreach(json_object_get(json_object_get(ans, "result"), "content"), i, item)
		if (json_is_string(json_object_get(item, "data")) &&
		    strcmp(json_string_value(json_object_get(item, "type")), "image") == 0)
			data = json_string_value(json_object_get(item, "data"));
	if (!data) {
		const json_t *er = json_object_get(ans, "error");
		err_set(e, 0, "mcp-desktop gave no image: %s",
			er ? json_string_value(json_object_get(er, "message")) : "no image item");
		goto fail;
	}
	out = json_pack("{s:s, s:s, s:s, s:i, s:i, s:I}", "id", id, "mime", "image/png", "data", data,
			"width", width, "height", (int)((long)width * SCREEN_H / SCREEN_W), "ms",
			(json_int_t)(util_now_ms() - t0));
	if (!out)
		err_set(e, ENOMEM, "thumbnail");
fail:
	if (!out && !e->http_status)
		e->http_status = 502;
	json_decref(ans);
	buf_free(&a);
	buf_free(&b);
	buf_free(&c);
	return out;
}
