/* A thumbnail of a sandbox's screen, for the dashboard: one small PNG from
 * the sandbox's own mcp-desktop (its `zoom` action over the whole screen
 * at a scale), fetched over MCP through the sandbox's network namespace.
 *
 * Nothing runs in the sandbox for it unless somebody asks: the portal asks
 * only for thumbnails a dashboard shows, and caches them.  The exchange
 * (initialize, the call, the session's DELETE) goes over ONE keep-alive
 * connection, closed by us with a reset: a checkpoint's census sees it for
 * the whole exchange (three connections would leave gaps in which a
 * checkpoint could start and then meet the next one, and a refused
 * checkpoint kills the sandbox), and no TIME_WAIT is left inside. */
#include "node-agent/na_thumb.h"
#include "node-agent/na_ghttp.h"
#include "node-agent/na_netns.h"
#include "node-agent/na_sandbox.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define SCREEN_W 1280 /* the display every sandbox gets (na_spec.c) */
#define SCREEN_H 800
#define MAX_ANSWER (4u << 20)

/* One request to mcp-desktop on the open connection fd (its session id in
 * the head when there is one). */
static int exchange(int fd, const char *method, const char *session, const char *body,
		    struct buf *out, const char **bodyp, struct err *e)
{
	char hdrs[400];

	snprintf(hdrs, sizeof(hdrs),
		 "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
		 "MCP-Protocol-Version: 2025-06-18\r\n%s%s%s",
		 session ? "Mcp-Session-Id: " : "", session ? session : "", session ? "\r\n" : "");
	return na_ghttp_exchange(fd, method, "/mcp", NA_DESKTOP_PORT, hdrs, body, MAX_ANSWER, out,
				 bodyp, e);
}

json_t *na_node_thumbnail(struct na_node *n, const char *id, int width, struct err *e)
{
	char state[32], session[128], call[256];
	AUTOBUF struct buf b = BUF_INIT(MAX_ANSWER);
	uint64_t t0 = util_now_ms();
	AUTOCLOSE int fd = -1;
	json_t *ans = NULL, *out = NULL, *item;
	const char *data = NULL, *body;
	size_t i;
	int st;

	if (width < 16 || width > SCREEN_W) {
		err_http(e, 400, "`width` must be between 16 and %d", SCREEN_W);
		return NULL;
	}
	if (!na_node_state(n, id, state, sizeof(state))) {
		err_http(e, 404, "no sandbox `%s`", id);
		return NULL;
	}
	if (strcmp(state, "ready") != 0) {
		err_http(e, 409, "sandbox `%s` is %s: only a running desktop has a screen to show",
			 id, state);
		return NULL;
	}
	fd = na_ghttp_connect(id, NA_DESKTOP_PORT, 2000, 5, e);
	if (fd == -1)
		goto fail;
	st = exchange(fd, "POST", NULL,
		      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		      "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
		      "{\"name\":\"cloche-node-thumbnail\",\"version\":\"1\"}}}",
		      &b, &body, e);
	if (st != 200 || !na_ghttp_header(b.data, "Mcp-Session-Id", session, sizeof(session))) {
		if (st > 0)
			err_set(e, 0, "mcp-desktop refused the session (%d)", st);
		goto fail;
	}
	snprintf(call, sizeof(call),
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"computer\",\"arguments\":{\"action\":\"zoom\",\"region\":[0,0,%d,%d],"
		 "\"scale\":%.4f}}}",
		 SCREEN_W, SCREEN_H, (double)width / SCREEN_W);
	st = exchange(fd, "POST", session, call, &b, &body, e);
	if (st == 200)
		ans = json_loadb(body, b.len - (size_t)(body - b.data), 0, NULL);
	/* The session ends whatever the call gave (its answer is not needed). */
	{
		AUTOBUF struct buf c = BUF_INIT(1 << 16);
		struct err ignored = ERR_INIT;
		const char *cb;

		if (st > 0)
			(void)exchange(fd, "DELETE", session, NULL, &c, &cb, &ignored);
	}
	if (st != 200) {
		if (st > 0)
			err_set(e, 0, "mcp-desktop answered %d", st);
		goto fail;
	}
	json_array_foreach(json_object_get(json_object_get(ans, "result"), "content"), i, item) {
		const char *type = json_string_value(json_object_get(item, "type"));

		if (type && strcmp(type, "image") == 0 && json_is_string(json_object_get(item, "data")))
			data = json_string_value(json_object_get(item, "data"));
	}
	if (!data) {
		const char *msg = json_string_value(
			json_object_get(json_object_get(ans, "error"), "message"));
		err_set(e, 0, "mcp-desktop gave no image: %s", msg ? msg : "no image in its answer");
		goto fail;
	}
	out = json_pack("{s:s, s:s, s:s, s:i, s:i, s:I}", "id", id, "mime", "image/png", "data", data,
			"width", width, "height", (int)((long)width * SCREEN_H / SCREEN_W), "ms",
			(json_int_t)(util_now_ms() - t0));
	if (!out)
		err_set(e, ENOMEM, "thumbnail");
	else if (json_is_object(json_object_get(
			 json_object_get(json_object_get(ans, "result"), "structuredContent"), "control")))
		/* who drives the desktop (mcp-desktop asks cloche-vnc's lease) */
		json_object_set(out, "control",
				json_object_get(json_object_get(json_object_get(ans, "result"),
								"structuredContent"),
						"control"));
fail:
	if (!out && !e->http_status) {
		/* The sandbox may have left ready meanwhile (hibernate, release,
		 * fork): then the picture failed because of that, which is a 409
		 * (or 404) like asking then, not a fault of the sandbox. */
		if (!na_node_state(n, id, state, sizeof(state)))
			err_http(e, 404, "no sandbox `%s`", id);
		else if (strcmp(state, "ready") != 0)
			err_http(e, 409, "sandbox `%s` became %s while its picture was taken", id,
				 state);
		else
			e->http_status = 502;
	}
	json_decref(ans);
	return out;
}
