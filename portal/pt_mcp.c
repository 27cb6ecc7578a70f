/* Sandboxes as MCP tools: the portal's MCP server at /mcp.
 *
 * An agent that has only this endpoint and an API key can get desktops for
 * itself: acquire_sandbox answers the sandbox's MCP URLs and token, and the
 * other tools list, keep alive, hibernate, wake, fork and release them.
 *
 * Each tool is one call of the portal's own REST API, made over loopback
 * with the caller's key from the tool's worker thread (the MCP library runs
 * every call on its own thread; the portal's core belongs to the loop
 * thread).  So scoping (a user key sees its own sandboxes), validation,
 * state rules and waiting are exactly the REST API's, and an error there
 * is the tool's error: a 400 becomes JSON-RPC -32602 (bad arguments), any
 * other refusal a tool result with isError and the API's message, which a
 * model can read and act on. */
#include "portal/pt_mcp.h"
#include "portal/pt_auth.h"
#include "common/http_client.h"
#include "common/http_server.h"
#include "common/json.h"
#include "common/log.h"
#include "common/query.h"
#include "common/util.h"
#include "common/version.h"
#include "mcp/lib/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the workers reach the REST API, and the longest call (a fork or an
 * acquire that waits; the API bounds its own waits below this). */
static char api_base[128];
#define CALL_TIMEOUT_MS (15 * 60 * 1000)
static long long wait_default_s; /* the acquire's wait when none is given */

/* A call in progress: the client hears how long it has been running (when
 * it gave a progressToken), and a cancellation ends the REST request, so
 * the portal forgets a queued acquire at once. */
struct watch {
	struct mcp_call *call;
	const char *what;
	double total;      /* seconds it may wait; 0: unknown */
	uint64_t t0, next; /* ms */
};

/* The REST request's poll hook (the worker thread, about once a second). */
static int watch_poll(void *ud)
{
	struct watch *w = ud;
	uint64_t now = util_now_ms();
	char msg[160];
	double s;

	if (mcp_call_cancelled(w->call))
		return 1;
	if (now < w->next)
		return 0;
	s = (double)(now - w->t0) / 1000.0;
	if (w->total > 0 && s < w->total)
		snprintf(msg, sizeof(msg), "%s: %.0f s of a wait of at most %.0f s", w->what, s, w->total);
	else
		snprintf(msg, sizeof(msg), "%s: still working after %.0f s", w->what, s);
	mcp_call_progress(w->call, s, w->total > s ? w->total : 0, msg);
	w->next = now + 1000;
	return 0;
}

/* The auth hook (loop thread): a valid API key as Bearer, which the calls
 * then use. */
static int auth(void *ud, const struct hsrv_req *req, char *principal, char *msg)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct err e = ERR_INIT;
	char authz[PT_KEY_MAX + 16];
	int n = hsrv_req_header(req, "Authorization", authz, sizeof(authz));

	if (n > 0) {
		int ok = pt_auth_check(p->st, authz, &who, &e);

		if (ok < 0) {
			snprintf(msg, 200, "cannot check the key: %.150s", e.msg);
			return 500;
		}
		if (ok == 1) {
			snprintf(principal, MCP_PRINCIPAL_MAX, "%s", authz + strlen("Bearer "));
			return 0;
		}
	}
	snprintf(msg, 200, "Unauthorized: send a portal API key as `Authorization: Bearer ck_...`");
	return 401;
}

/* One REST call with the caller's key, for tool what, which may wait up to
 * wait_s (0: unknown).  Returns the status (0 when no answer came or the
 * call was cancelled, with *out NULL and e set) and the parsed body in
 * *out. */
static long api(struct mcp_call *call, const char *what, const char *method, const char *path,
		const json_t *body, double wait_s, json_t **out, struct err *e)
{
	uint64_t t0 = util_now_ms();
	struct watch w = {call, what, wait_s, t0, t0 + 1000};
	char url[512], authz[MCP_PRINCIPAL_MAX + 32];
	const char *headers[] = {authz, "Content-Type: application/json", NULL};
	struct http_req r = {.method = method, .url = url, .headers = headers,
			     .timeout_ms = CALL_TIMEOUT_MS, .max_resp = 16u << 20,
			     .poll = watch_poll, .poll_ud = &w};
	struct http_resp resp = {0};
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	long status = 0;

	*out = NULL;
	snprintf(url, sizeof(url), "%s%s", api_base, path);
	snprintf(authz, sizeof(authz), "Authorization: Bearer %s", mcp_call_principal(call));
	if (text) {
		r.body = text;
		r.body_len = strlen(text);
	}
	if (http_request(&r, &resp, e) == 0) {
		status = resp.status;
		*out = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
		if (!*out)
			err_set(e, 0, "the portal answered %ld without JSON", status);
	}
	http_resp_free(&resp);
	free(text);
	return status;
}

/* The API's own words for a refusal. */
static const char *api_message(const json_t *v)
{
	const json_t *er = json_object_get(v, "error");
	const char *m = json_string_value(json_object_get(er, "message"));

	return m ? m : json_is_string(er) ? json_string_value(er) : "no message";
}

/* A call's answer as the tool's result: 2xx -> structured content plus the
 * text; 400 -> bad arguments (-1 with e); anything else -> a tool error. */
static int answer(long status, json_t *v, const struct err *ce, const char *what,
		  struct mcp_result *res, struct err *e, void (*text)(struct mcp_result *, json_t *))
{
	if (status >= 200 && status < 300 && v) {
		text(res, v);
		mcp_result_structured(res, v);
		return 0;
	}
	if (status == 400) {
		err_set(e, 0, "%s: %s", what, api_message(v));
		json_decref(v);
		return -1;
	}
	if (status == 0)
		mcp_result_error(res, "%s: the portal did not answer: %s", what, ce->msg);
	else
		mcp_result_error(res, "%s: %ld: %s", what, status, api_message(v));
	json_decref(v);
	return 0;
}

/* One line a model can read about a sandbox view. */
static void sandbox_line(struct mcp_result *res, const json_t *sb, bool with_urls)
{
	const json_t *urls = json_object_get(sb, "urls");
	const json_t *mcp = json_object_get(urls, "mcp");
	const char *tok = json_string_value(json_object_get(sb, "token"));

	mcp_result_text(res, "%s: %s (template %s, lease until %s)",
			json_string_value(json_object_get(sb, "id")),
			json_string_value(json_object_get(sb, "state")),
			json_string_value(json_object_get(sb, "template")),
			json_is_string(json_object_get(sb, "expires_at"))
				? json_string_value(json_object_get(sb, "expires_at"))
				: "-");
	if (!with_urls || !mcp)
		return;
	mcp_result_text(res,
			"MCP servers (Streamable HTTP; send `Authorization: Bearer %s`):\n"
			"  shell:   %s\n  desktop: %s\n  browser: %s\n"
			"desktop in a browser (noVNC): %s",
			tok ? tok : "<the sandbox's token>",
			json_string_value(json_object_get(mcp, "shell")),
			json_string_value(json_object_get(mcp, "desktop")),
			json_string_value(json_object_get(mcp, "browser")),
			json_string_value(json_object_get(urls, "novnc")));
}

static void text_sandbox(struct mcp_result *res, json_t *v)
{
	sandbox_line(res, v, true);
}

static void text_list(struct mcp_result *res, json_t *v)
{
	const json_t *list = json_object_get(v, "sandboxes");
	size_t i;
	json_t *sb;

	if (!json_array_size(list))
		mcp_result_text(res, "no sandboxes");
	json_array_foreach(list, i, sb)
		sandbox_line(res, sb, false);
}

static void text_fork(struct mcp_result *res, json_t *v)
{
	const json_t *kids = json_object_get(v, "children");
	size_t i;
	json_t *sb;

	mcp_result_text(res, "forked into %zu:", json_array_size(kids));
	json_array_foreach(kids, i, sb)
		sandbox_line(res, sb, true);
}

/* The `id` argument: a sandbox id as the API writes them. */
static const char *id_arg(const json_t *args, struct err *e)
{
	const char *id = json_string_value(json_object_get(args, "id"));
	size_t n = id ? strlen(id) : 0;

	if (!n || n > 64 || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != n) {
		err_set(e, 0, "`id` must be a sandbox id such as sb-0123456789abcdef");
		return NULL;
	}
	return id;
}

static int t_acquire(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		     struct err *e)
{
	struct err ce = ERR_INIT;
	json_t *v;
	const json_t *wait = json_object_get(args, "wait");
	long st = api(call, "acquire_sandbox", "POST", "/sbv1/acquire", args,
		      json_is_integer(wait) ? (double)json_integer_value(wait) : (double)wait_default_s,
		      &v, &ce);

	if (st == 202) /* still starting when the wait ran out */
		mcp_result_text(res, "not ready yet: call list_sandboxes until it is ready");
	return answer(st, v, &ce, "acquire_sandbox", res, e, text_sandbox);
}

static int t_list(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	struct err ce = ERR_INIT;
	char path[1200] = "/sbv1/sandboxes?limit=500";
	const char *state = json_string_value(json_object_get(args, "state"));
	const char *label = json_string_value(json_object_get(args, "label"));
	json_t *v;
	long st;

	if (state) {
		if (strspn(state, "abcdefghijklmnopqrstuvwxyz") != strlen(state) || strlen(state) > 20)
			return err_set(e, 0, "`state` must be a state name such as ready");
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&state=%s", state);
	}
	if (label) {
		char q[3 * 320 + 4];

		if (strlen(label) > 320)
			return err_set(e, 0, "`label` must be `key=value`, at most 320 bytes");
		query_escape(label, q, sizeof(q));
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&label=%s", q);
	}
	st = api(call, "list_sandboxes", "GET", path, NULL, 0, &v, &ce);
	return answer(st, v, &ce, "list_sandboxes", res, e, text_list);
}

/* release, keepalive, hibernate, wake: POST /sbv1/sandboxes/{id}/<action>. */
static int t_action(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		    struct err *e)
{
	const char *action = mcp_call_ud(call);
	struct err ce = ERR_INIT;
	char path[160], what[40];
	const char *id = id_arg(args, e);
	json_t *v;
	long st;

	if (!id)
		return -1;
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%s/%s", id, action);
	snprintf(what, sizeof(what), "%s_sandbox", action);
	st = api(call, what, "POST", path, NULL, 0, &v, &ce);
	return answer(st, v, &ce, what, res, e, text_sandbox);
}

static int t_fork(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	struct err ce = ERR_INIT;
	char path[160];
	const char *id = id_arg(args, e);
	json_t *body, *v;
	long st;

	if (!id)
		return -1;
	body = json_pack("{s:O}", "count", json_object_get(args, "count"));
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%s/fork", id);
	st = api(call, "fork_sandbox", "POST", path, body, 0, &v, &ce);
	json_decref(body);
	return answer(st, v, &ce, "fork_sandbox", res, e, text_fork);
}

#define ID_SCHEMA "\"id\":{\"type\":\"string\",\"description\":\"the sandbox's id (sb-...)\"}"
/* The arguments of the tools that take a sandbox and nothing else. */
#define ID_ONLY "{\"type\":\"object\",\"properties\":{" ID_SCHEMA "},\"required\":[\"id\"]," \
		"\"additionalProperties\":false}"
#define SANDBOX_OUT "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"state\":{\"type\":\"string\"}},\"required\":[\"id\",\"state\"]}"

static const struct mcp_tool tools[] = {
	{.name = "acquire_sandbox",
	 .title = "Acquire a sandbox",
	 .description =
		 "Gets a disposable Linux desktop (Chromium on a display, a shell, files) and "
		 "leases it to you. Answers its id, state, lease expiry (expires_at), token and "
		 "URLs: urls.mcp.shell, urls.mcp.desktop and urls.mcp.browser are MCP servers "
		 "(Streamable HTTP) to connect to with the header `Authorization: Bearer <token>`; "
		 "urls.novnc shows the desktop to a person. The lease ends after ttl seconds "
		 "unless kept alive; persist makes it hibernate instead of ending.",
	 .input_schema =
		 "{\"type\":\"object\",\"properties\":{"
		 "\"template\":{\"type\":\"string\",\"description\":\"template name, e.g. desktop\"},"
		 "\"ttl\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"lease in seconds\"},"
		 "\"wait\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"seconds to wait for room\"},"
		 "\"persist\":{\"type\":\"boolean\"},"
		 "\"idle_timeout\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"hibernate after this many idle seconds (0: never)\"},"
		 "\"offload_after\":{\"type\":\"integer\",\"minimum\":0},"
		 "\"resources\":{\"type\":\"object\",\"properties\":{\"memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"integer\"},\"pids\":{\"type\":\"integer\"}}},"
		 "\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}},"
		 "\"additionalProperties\":false}",
	 .output_schema = SANDBOX_OUT,
	 .fn = t_acquire},
	{.name = "list_sandboxes",
	 .title = "List your sandboxes",
	 .description = "Lists the sandboxes you hold (an admin key sees all), optionally only "
			"those in one state (ready, hibernated, offloaded, released, ...) or with a "
			"label `key=value`.",
	 .input_schema = "{\"type\":\"object\",\"properties\":{"
			 "\"state\":{\"type\":\"string\"},\"label\":{\"type\":\"string\"}},"
			 "\"additionalProperties\":false}",
	 .output_schema = "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\"}},"
			  "\"required\":[\"sandboxes\"]}",
	 .read_only = true,
	 .fn = t_list},
	{.name = "release_sandbox",
	 .title = "Release a sandbox",
	 .description = "Ends a sandbox for good: its processes and files are gone.",
	 .input_schema = ID_ONLY,
	 .output_schema = SANDBOX_OUT,
	 .destructive = true,
	 .fn = t_action,
	 .ud = "release"},
	{.name = "keepalive_sandbox",
	 .title = "Extend a sandbox's lease",
	 .description = "Renews the lease: it now ends ttl seconds from now.",
	 .input_schema = ID_ONLY,
	 .output_schema = SANDBOX_OUT,
	 .fn = t_action,
	 .ud = "keepalive"},
	{.name = "hibernate_sandbox",
	 .title = "Hibernate a sandbox",
	 .description = "Saves the whole sandbox (processes, browser tabs, files) and stops it; "
			"it costs no memory while hibernated. Any request to its URLs, or "
			"wake_sandbox, brings it back as it was.",
	 .input_schema = ID_ONLY,
	 .output_schema = SANDBOX_OUT,
	 .fn = t_action,
	 .ud = "hibernate"},
	{.name = "wake_sandbox",
	 .title = "Wake a sandbox",
	 .description = "Brings a hibernated sandbox back as it was and renews its lease.",
	 .input_schema = ID_ONLY,
	 .output_schema = SANDBOX_OUT,
	 .fn = t_action,
	 .ud = "wake"},
	{.name = "fork_sandbox",
	 .title = "Fork a sandbox",
	 .description = "Copies a ready sandbox, running processes and open pages included, into "
			"count new sandboxes (1-8) that then go their own ways; the original runs "
			"on. Answers the children with their own ids, tokens and MCP URLs.",
	 .input_schema = "{\"type\":\"object\",\"properties\":{" ID_SCHEMA ","
			 "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":8}},"
			 "\"required\":[\"id\",\"count\"],\"additionalProperties\":false}",
	 .output_schema = "{\"type\":\"object\",\"properties\":{\"parent\":{\"type\":\"object\"},"
			  "\"children\":{\"type\":\"array\"}},\"required\":[\"children\"]}",
	 .fn = t_fork},
};

int pt_mcp_start(struct pt_portal *p, const char *listen, const char *allowed_hosts, struct err *e)
{
	struct mcp_server_opts o = {
		.name = "cloche-portal",
		.version = version_string(),
		.instructions = "Sandboxes for you: acquire_sandbox gives you a Linux desktop with "
				"its own MCP servers (shell, desktop, browser); connect to them "
				"with its token. Release what you no longer need.",
		.allowed_hosts = allowed_hosts,
		.max_sessions = 256,
		.auth = auth,
		.auth_ud = p,
	};
	int port = hsrv_port(p->srv);

	wait_default_s = p->cfg.wait_default_s;

	/* The REST API as seen from here: the listen address, or loopback
	 * when it listens on every address. */
	if (!*listen || strcmp(listen, "0.0.0.0") == 0)
		snprintf(api_base, sizeof(api_base), "http://127.0.0.1:%d", port);
	else if (strcmp(listen, "::") == 0)
		snprintf(api_base, sizeof(api_base), "http://[::1]:%d", port);
	else if (strchr(listen, ':'))
		snprintf(api_base, sizeof(api_base), "http://[%s]:%d", listen, port);
	else
		snprintf(api_base, sizeof(api_base), "http://%s:%d", listen, port);
	p->mcp = mcp_server_attach(p->srv, &o, e);
	if (!p->mcp)
		return -1;
	for (size_t i = 0; i < ARRAY_LEN(tools); i++)
		if (mcp_server_add_tool(p->mcp, &tools[i], e))
			return -1;
	return 0;
}
