/* The MCP server: Streamable HTTP transport, JSON-RPC dispatch, sessions
 * and tool calls on worker threads; see mcp.h.
 *
 * Threads.  One lws loop thread owns the HTTP connections, the session
 * table and the list of running calls; it never blocks.  Each tools/call
 * runs on its own detached worker thread.  A worker talks back only
 * through hsrv_post() (a mutex-protected queue plus lws_cancel_service(),
 * drained on LWS_CALLBACK_EVENT_WAIT_CANCELLED): "progress" and "done"
 * tasks, in order, so a call is freed by the loop thread after the last
 * message about it.  The cancelled flag is the only field both sides
 * write, and it is atomic.
 *
 * Answers.  A request is answered as one application/json body, except a
 * tools/call that reports progress while the client accepts SSE: its answer
 * turns into a text/event-stream at the first progress notification, and
 * the result is the stream's last event. */
#include "mcp/lib/mcp.h"
#include "common/hostcheck.h"
#include "mcp/lib/jsonrpc.h"
#include "mcp/lib/result.h"
#include "mcp/lib/schema.h"
#include "mcp/lib/session.h"
#include "mcp/lib/trace.h"
#include "common/http_server.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MCP_LATEST "2025-11-25"
static const char *const versions[] = {"2025-11-25", "2025-06-18"};
/* MCP-Protocol-Version values accepted on requests after initialize: the
 * negotiable ones plus the older revisions the SDK's server also accepts
 * there (the conformance suite sends 2025-03-26 on raw requests). */
static const char *const header_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

struct tool_entry {
	struct mcp_tool t;
	json_t *schema; /* parsed input schema */
	json_t *def;    /* the tools/list entry */
};

struct mcp_call {
	struct mcp_server *srv;
	const struct tool_entry *tool;
	json_t *id, *token, *args; /* private copies */
	char session[40];
	char principal[MCP_PRINCIPAL_MAX]; /* what the auth hook said of the caller */
	atomic_bool cancelled;
	bool sse_ok;               /* the client accepts text/event-stream */
	/* loop thread only: */
	struct hsrv_defer *defer;
	bool streaming;
	struct mcp_call *prev, *next;
	uint64_t t0;
	/* written by the worker before "done": */
	char *answer;
	const char *status;
};

struct mcp_server {
	struct mcp_server_opts o;
	char *allowed; /* o.allowed_hosts + CLOCHE_MCP_ALLOWED_HOSTS */
	struct hsrv *http;
	bool owns_http;  /* made by mcp_server_new, not attached */
	/* Workers post to the loop under post_mu; once gone (the server is
	 * freed while calls still run) they post nothing. */
	pthread_mutex_t post_mu;
	bool gone;
	struct mcp_sessions *sessions;
	struct tool_entry *tools;
	size_t ntools;
	struct mcp_call *calls; /* running, loop thread only */
	atomic_uint workers;
	bool stopping;
	uint64_t stop_at;
	struct hsrv_timer *stop_timer;
	int sig_pipe[2];
};

static int sig_fd = -1;

void *mcp_call_ud(const struct mcp_call *call)
{
	return call->tool->t.ud;
}

bool mcp_call_cancelled(const struct mcp_call *call)
{
	return atomic_load(&call->cancelled);
}

const char *mcp_call_principal(const struct mcp_call *call)
{
	return call->principal;
}

const char *mcp_call_session(const struct mcp_call *call)
{
	return call->session;
}

/* A worker's message to the loop thread.  0, or -1 when out of memory (the
 * caller retries) or when the server is gone (nothing more will run). */
static int post(struct mcp_server *s, void (*fn)(void *), void *arg, bool *gone)
{
	int rc = 0;

	pthread_mutex_lock(&s->post_mu);
	*gone = s->gone;
	if (!s->gone)
		rc = hsrv_post(s->http, fn, arg);
	pthread_mutex_unlock(&s->post_mu);
	return rc;
}

/* --- answers --------------------------------------------------------- */

static void reply_json(struct hsrv_resp *resp, int status, json_t *v)
{
	hsrv_resp_json(resp, status, v);
}

/* A transport-level refusal, shaped like the SDK server's. */
static void refuse(struct hsrv_resp *resp, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void refuse(struct hsrv_resp *resp, int status, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_json(resp, status, mcp_rpc_error(NULL, status == 404 ? -32001 : MCP_SERVER_ERROR, msg));
}

static void log_call(const char *method, const char *tool, uint64_t t0, const char *status,
		     const char *session)
{
	log_info("mcp call", "{s:s, s:s?, s:I, s:s, s:s?}", "method", method, "tool", tool, "ms",
		 (json_int_t)(util_now_ms() - t0), "status", status, "session", session);
}

/* --- calls ----------------------------------------------------------- */

static void call_free(struct mcp_call *c)
{
	json_decref(c->id);
	json_decref(c->token);
	json_decref(c->args);
	free(c->answer);
	free(c);
}

static void call_unlink(struct mcp_call *c)
{
	struct mcp_server *s = c->srv;
	struct mcp_session *ss = mcp_sessions_get(s->sessions, c->session, util_now_ms());

	if (ss && ss->active)
		ss->active--;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

static void call_gone(void *ud)
{
	atomic_store(&((struct mcp_call *)ud)->cancelled, true);
}

static void sse_send(struct mcp_call *c, const char *json)
{
	if (!c->streaming) {
		if (!c->sse_ok || !hsrv_defer_alive(c->defer) ||
		    hsrv_defer_stream(c->defer, 200, "text/event-stream", NULL))
			return;
		c->streaming = true;
	}
	hsrv_defer_write(c->defer, "event: message\ndata: ", 21);
	hsrv_defer_write(c->defer, json, strlen(json));
	hsrv_defer_write(c->defer, "\n\n", 2);
}

struct progress_msg {
	struct mcp_call *call;
	char *json;
};

static void on_progress(void *ud)
{
	struct progress_msg *m = ud;

	if (!atomic_load(&m->call->cancelled))
		sse_send(m->call, m->json);
	free(m->json);
	free(m);
}

void mcp_call_progress(struct mcp_call *call, double progress, double total, const char *message)
{
	struct progress_msg *m;
	json_t *params, *n;

	if (!call->token || !call->sse_ok || atomic_load(&call->cancelled))
		return;
	params = json_pack("{s:O, s:f}", "progressToken", call->token, "progress", progress);
	if (!params)
		return;
	if (total > 0)
		json_object_set_new(params, "total", json_real(total));
	if (message)
		json_object_set_new(params, "message", json_string(message));
	n = mcp_rpc_notification("notifications/progress", params);
	m = calloc(1, sizeof(*m));
	if (m && n && (m->json = json_dumps(n, JSON_COMPACT)) != NULL) {
		bool gone;

		m->call = call;
		if (post(call->srv, on_progress, m, &gone) == 0 && !gone)
			m = NULL;
	}
	if (m)
		free(m->json);
	free(m);
	json_decref(n);
}

/* Loop thread: the worker finished. */
static void on_done(void *ud)
{
	struct mcp_call *c = ud;
	struct mcp_server *s = c->srv;
	bool cancelled = atomic_load(&c->cancelled);

	call_unlink(c);
	if (cancelled || !c->answer) {
		/* The spec: no answer to a cancelled request.  Close its stream. */
		hsrv_defer_end(c->defer);
	} else if (c->streaming) {
		sse_send(c, c->answer);
		hsrv_defer_end(c->defer);
	} else {
		struct hsrv_resp r = {.status = 200, .content_type = "application/json"};
		r.body = c->answer;
		r.body_len = strlen(c->answer);
		c->answer = NULL;
		hsrv_defer_reply(c->defer, &r);
	}
	log_call("tools/call", c->tool->t.name, c->t0, cancelled ? "cancelled" : c->status, c->session);
	call_free(c);
	atomic_fetch_sub(&s->workers, 1);
}

static uint64_t trace_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *worker(void *arg)
{
	struct mcp_call *c = arg;
	struct mcp_result res;
	struct err e = ERR_INIT;
	json_t *out = NULL;
	int rc;

	if (mcp_result_init(&res) == 0) {
		uint64_t wall0 = trace_clock_ms();

		rc = c->tool->t.fn(c, c->args, &res, &e);
		if (rc) {
			out = mcp_rpc_error(c->id, MCP_INVALID_PARAMS, e.msg);
			c->status = "invalid_params";
			mcp_trace_append(c->srv->o.name, c->tool->t.name, c->args, c->status, NULL,
					 wall0, util_now_ms() - c->t0);
		} else {
			json_t *r;

			c->status = res.is_error ? "tool_error" : "ok";
			r = mcp_result_take_json(&res);
			mcp_trace_append(c->srv->o.name, c->tool->t.name, c->args, c->status, r, wall0,
					 util_now_ms() - c->t0);
			out = mcp_rpc_result(c->id, r);
		}
		mcp_result_release(&res);
	}
	if (!out) {
		out = mcp_rpc_error(c->id, MCP_INTERNAL_ERROR, "out of memory");
		c->status = "internal";
	}
	c->answer = out ? json_dumps(out, JSON_COMPACT) : NULL;
	json_decref(out);
	for (bool gone = false; post(c->srv, on_done, c, &gone) && !gone;)
		usleep(10000); /* out of memory: the loop must hear of it anyway */
	return NULL;
}

/* --- requests -------------------------------------------------------- */

/* What the loop thread knows about one POSTed request. */
struct post_ctx {
	struct mcp_server *s;
	const struct hsrv_req *req;
	struct hsrv_resp *resp;
	const char *session; /* NULL for initialize */
	const char *principal;
	bool sse_ok;
};

static const struct tool_entry *find_tool(const struct mcp_server *s, const char *name)
{
	for (size_t i = 0; i < s->ntools; i++)
		if (strcmp(s->tools[i].t.name, name) == 0)
			return &s->tools[i];
	return NULL;
}

static const char *negotiate(const char *asked)
{
	for (size_t i = 0; i < ARRAY_LEN(versions); i++)
		if (asked && strcmp(asked, versions[i]) == 0)
			return versions[i];
	return MCP_LATEST;
}

static bool header_version_ok(const char *v)
{
	for (size_t i = 0; i < ARRAY_LEN(header_versions); i++)
		if (strcmp(v, header_versions[i]) == 0)
			return true;
	return false;
}

static json_t *do_initialize(struct post_ctx *p, const json_t *params, struct err *e)
{
	const char *asked = NULL;
	struct mcp_session *ss;
	json_t *r;

	if (!json_is_object(params) || cj_get_str(params, "protocolVersion", NULL, &asked, e))
		return err_set(e, 0, "initialize: `protocolVersion` must be a string"), NULL;
	if (!asked)
		return err_set(e, 0, "initialize: `protocolVersion` is required"), NULL;
	ss = mcp_sessions_create(p->s->sessions, negotiate(asked), util_now_ms(), e);
	if (!ss)
		return NULL;
	hsrv_resp_header(p->resp, "Mcp-Session-Id", ss->id);
	r = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}}", "protocolVersion", ss->version,
		      "capabilities", "tools", "listChanged", 0, "serverInfo", "name", p->s->o.name,
		      "version", p->s->o.version ? p->s->o.version : "0");
	if (r && p->s->o.instructions)
		json_object_set_new(r, "instructions", json_string(p->s->o.instructions));
	log_info("mcp session", "{s:s, s:s, s:s}", "session", ss->id, "version", ss->version, "asked",
		 asked);
	return r;
}

static json_t *do_tools_list(struct mcp_server *s, const json_t *params, struct err *e)
{
	const char *cursor = NULL;
	size_t from = 0, page = s->o.page_size ? s->o.page_size : 50;
	json_t *list, *r;

	if (params && json_is_object(params) && cj_get_str(params, "cursor", NULL, &cursor, e))
		return NULL;
	if (cursor) {
		char *end;
		unsigned long v = strtoul(cursor, &end, 10);
		if (!*cursor || *end || v > s->ntools)
			return err_set(e, 0, "tools/list: invalid cursor `%s`", cursor), NULL;
		from = v;
	}
	list = json_array();
	for (size_t i = from; list && i < s->ntools && i < from + page; i++)
		json_array_append(list, s->tools[i].def);
	r = json_pack("{s:o}", "tools", list);
	if (r && from + page < s->ntools) {
		char next[32];
		snprintf(next, sizeof(next), "%zu", from + page);
		json_object_set_new(r, "nextCursor", json_string(next));
	}
	return r;
}

/* Starts a tools/call on a worker.  Returns 0 when the answer is deferred,
 * or a JSON-RPC error code with e set. */
static int do_tools_call(struct post_ctx *p, const struct mcp_msg *m, struct err *e)
{
	struct mcp_server *s = p->s;
	const char *name = NULL;
	json_t *args = NULL, *meta = NULL;
	const struct tool_entry *t;
	struct mcp_session *ss;
	struct mcp_call *c;
	pthread_attr_t attr;
	pthread_t th;
	char msg[sizeof(e->msg)];

	if (!json_is_object(m->params) || cj_req_str(m->params, "name", &name, e))
		return err_set(e, 0, "tools/call: `name` must be a string"), MCP_INVALID_PARAMS;
	t = find_tool(s, name);
	if (!t)
		return err_set(e, 0, "Unknown tool: %s", name), MCP_INVALID_PARAMS;
	args = json_object_get(m->params, "arguments");
	if (args && !json_is_null(args) && !json_is_object(args))
		return err_set(e, 0, "Invalid arguments for tool %s: `arguments` must be an object",
			       name), MCP_INVALID_PARAMS;
	if (!args || json_is_null(args))
		args = NULL;
	{
		json_t *empty = args ? NULL : json_object();
		int bad = mcp_schema_check(t->schema, args ? args : empty, e);
		json_decref(empty);
		if (bad) {
			snprintf(msg, sizeof(msg), "%s", e->msg);
			return err_set(e, 0, "Invalid arguments for tool %s: %s", name, msg), MCP_INVALID_PARAMS;
		}
	}
	if (s->stopping)
		return err_set(e, 0, "the server is shutting down"), MCP_SERVER_ERROR;
	if (atomic_load(&s->workers) >= (s->o.max_calls ? s->o.max_calls : 64))
		return err_set(e, 0, "too many calls are running; try again shortly"), MCP_SERVER_ERROR;
	c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(e, ENOMEM, "tools/call"), MCP_INTERNAL_ERROR;
	c->srv = s;
	c->tool = t;
	c->id = json_deep_copy(m->id);
	c->args = args ? json_deep_copy(args) : json_object();
	meta = json_object_get(m->params, "_meta");
	if (json_is_object(meta) && mcp_rpc_id_valid(json_object_get(meta, "progressToken")))
		c->token = json_deep_copy(json_object_get(meta, "progressToken"));
	snprintf(c->session, sizeof(c->session), "%s", p->session);
	snprintf(c->principal, sizeof(c->principal), "%s", p->principal);
	c->sse_ok = p->sse_ok;
	c->t0 = util_now_ms();
	c->defer = hsrv_defer(p->req, call_gone, c);
	if (!c->id || !c->args || !c->defer) {
		if (c->defer)
			hsrv_defer_end(c->defer);
		call_free(c);
		return err_set(e, ENOMEM, "tools/call"), MCP_INTERNAL_ERROR;
	}
	atomic_fetch_add(&s->workers, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1u << 20);
	if (pthread_create(&th, &attr, worker, c)) {
		pthread_attr_destroy(&attr);
		atomic_fetch_sub(&s->workers, 1);
		hsrv_defer_end(c->defer);
		call_free(c);
		return err_set(e, EAGAIN, "tools/call: start a worker"), MCP_INTERNAL_ERROR;
	}
	pthread_attr_destroy(&attr);
	c->next = s->calls;
	if (s->calls)
		s->calls->prev = c;
	s->calls = c;
	ss = mcp_sessions_get(s->sessions, p->session, util_now_ms());
	if (ss)
		ss->active++;
	return 0;
}

static void cancel_calls(struct mcp_server *s, const char *session, const json_t *id)
{
	for (struct mcp_call *c = s->calls; c; c = c->next)
		if ((!session || strcmp(c->session, session) == 0) && (!id || json_equal(c->id, id)))
			atomic_store(&c->cancelled, true);
}

static void do_notification(struct post_ctx *p, const struct mcp_msg *m)
{
	if (strcmp(m->method, "notifications/initialized") == 0) {
		struct mcp_session *ss = mcp_sessions_get(p->s->sessions, p->session, util_now_ms());
		if (ss)
			ss->initialized = true;
	} else if (strcmp(m->method, "notifications/cancelled") == 0) {
		json_t *rid = json_is_object(m->params) ? json_object_get(m->params, "requestId") : NULL;
		if (mcp_rpc_id_valid(rid))
			cancel_calls(p->s, p->session, rid);
	}
}

static bool header_has(const struct hsrv_req *req, const char *name, const char *needle)
{
	char v[512];
	return hsrv_req_header(req, name, v, sizeof(v)) >= 0 && strcasestr(v, needle);
}

/* Reads Mcp-Session-Id into sid.  Answers the request itself (400 when
 * missing, 404 when it cannot be one of ours, too long included) and returns
 * false, or returns true with a well-formed id in sid. */
static bool session_header(const struct hsrv_req *req, struct hsrv_resp *resp, char *sid, size_t len)
{
	int n = hsrv_req_header(req, "Mcp-Session-Id", sid, len);

	if (n == HSRV_HDR_ABSENT || n == 0) {
		refuse(resp, 400, "Bad Request: Mcp-Session-Id header is required");
		return false;
	}
	if (n < 0 || !mcp_session_id_valid(sid)) {
		refuse(resp, 404, "Session not found");
		return false;
	}
	return true;
}

/* Host and Origin, when present, must name this sandbox or a configured
 * name; one present but too long to read is refused, never skipped.
 * Answers the request (403) and returns false, or returns true. */
static bool origin_ok(const struct mcp_server *s, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	char host[256], origin[512];
	int n = hsrv_req_header(req, "Host", host, sizeof(host));

	if (n == HSRV_HDR_TOO_LONG || (n > 0 && !hostcheck_host_allowed(host, s->allowed))) {
		log_warn("mcp refused host", "{s:s}", "host", n > 0 ? host : "(too long)");
		refuse(resp, 403, "Forbidden: Host `%s` is not allowed", n > 0 ? host : "(too long)");
		return false;
	}
	n = hsrv_req_header(req, "Origin", origin, sizeof(origin));
	if (n == HSRV_HDR_TOO_LONG || (n > 0 && !hostcheck_origin_allowed(origin, s->allowed))) {
		log_warn("mcp refused origin", "{s:s}", "origin", n > 0 ? origin : "(too long)");
		refuse(resp, 403, "Forbidden: Origin `%s` is not allowed", n > 0 ? origin : "(too long)");
		return false;
	}
	return true;
}

static void handle_post(struct mcp_server *s, const struct hsrv_req *req, struct hsrv_resp *resp,
			const char *principal)
{
	struct post_ctx p = {.s = s, .req = req, .resp = resp, .principal = principal};
	char sid[MCP_SESSION_ID_MAX + 2] = "", ver[32];
	struct err e = ERR_INIT;
	AUTOJSON json_t *msg = NULL;
	struct mcp_msg m;
	json_t *result = NULL;
	uint64_t t0 = util_now_ms();
	int code, n;

	if (!header_has(req, "Accept", "application/json") || !header_has(req, "Accept", "text/event-stream"))
		return refuse(resp, 406, "Not Acceptable: Client must accept both application/json and text/event-stream");
	if (!header_has(req, "Content-Type", "application/json"))
		return refuse(resp, 415, "Unsupported Media Type: Content-Type must be application/json");
	p.sse_ok = true;
	msg = cj_parse(req->body, req->body_len, req->body_len + 1, CJ_MAX_DEPTH, &e);
	if (!msg) {
		log_call("?", NULL, t0, "parse_error", NULL);
		return reply_json(resp, 400, mcp_rpc_error(NULL, MCP_PARSE_ERROR, "Parse error"));
	}
	code = mcp_rpc_classify(msg, &m, &e);
	if (code) {
		log_call("?", NULL, t0, "invalid_request", NULL);
		return reply_json(resp, 400, mcp_rpc_error(m.id, code, e.msg));
	}
	if (m.kind == MCP_MSG_REQUEST && strcmp(m.method, "initialize") == 0) {
		if (s->stopping)
			return refuse(resp, 503, "the server is shutting down");
		result = do_initialize(&p, m.params, &e);
		log_call(m.method, NULL, t0, result ? "ok" : "error", NULL);
		if (!result)
			return reply_json(resp, e.http_status == 503 ? 503 : 200,
					  mcp_rpc_error(m.id, MCP_INVALID_PARAMS, e.msg));
		return reply_json(resp, 200, mcp_rpc_result(m.id, result));
	}
	if (!session_header(req, resp, sid, sizeof(sid)))
		return;
	if (!mcp_sessions_get(s->sessions, sid, util_now_ms()))
		return refuse(resp, 404, "Session not found");
	n = hsrv_req_header(req, "MCP-Protocol-Version", ver, sizeof(ver));
	if (n == HSRV_HDR_TOO_LONG)
		return refuse(resp, 400, "Bad Request: Unsupported protocol version (too long)");
	if (n > 0 && !header_version_ok(ver))
		return refuse(resp, 400, "Bad Request: Unsupported protocol version: %s", ver);
	p.session = sid;
	if (m.kind != MCP_MSG_REQUEST) {
		if (m.kind == MCP_MSG_NOTIFICATION)
			do_notification(&p, &m);
		hsrv_resp_text(resp, 202, "application/json", "");
		return;
	}
	if (strcmp(m.method, "ping") == 0) {
		result = json_object();
	} else if (strcmp(m.method, "tools/list") == 0) {
		result = do_tools_list(s, m.params, &e);
		if (!result) {
			log_call(m.method, NULL, t0, "invalid_params", sid);
			return reply_json(resp, 200, mcp_rpc_error(m.id, MCP_INVALID_PARAMS, e.msg));
		}
	} else if (strcmp(m.method, "tools/call") == 0) {
		code = do_tools_call(&p, &m, &e);
		if (!code)
			return; /* answered by the worker */
		log_call(m.method, NULL, t0, "invalid_params", sid);
		return reply_json(resp, 200, mcp_rpc_error(m.id, code, e.msg));
	} else {
		char text[200];
		snprintf(text, sizeof(text), "Method not found: %s", m.method);
		log_call(m.method, NULL, t0, "method_not_found", sid);
		return reply_json(resp, 200, mcp_rpc_error(m.id, MCP_METHOD_NOT_FOUND, text));
	}
	log_call(m.method, NULL, t0, "ok", sid);
	reply_json(resp, 200, mcp_rpc_result(m.id, result));
}

static void handle_mcp(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct mcp_server *s = ud;
	char sid[MCP_SESSION_ID_MAX + 2], principal[MCP_PRINCIPAL_MAX] = "";

	if (!origin_ok(s, req, resp))
		return;
	if (s->o.auth) {
		char msg[200] = "";
		int st = s->o.auth(s->o.auth_ud, req, principal, msg);

		if (st) {
			if (st == 401)
				hsrv_resp_header(resp, "WWW-Authenticate", "Bearer");
			return refuse(resp, st, "%s", *msg ? msg : "Unauthorized");
		}
	}
	if (strcmp(req->method, "POST") == 0)
		return handle_post(s, req, resp, principal);
	if (strcmp(req->method, "DELETE") == 0) {
		if (!session_header(req, resp, sid, sizeof(sid)))
			return;
		if (mcp_sessions_end(s->sessions, sid))
			return refuse(resp, 404, "Session not found");
		cancel_calls(s, sid, NULL);
		log_info("mcp session ended", "{s:s}", "session", sid);
		return hsrv_resp_text(resp, 200, "application/json", "");
	}
	/* GET would open the optional server-to-client stream: we send no
	 * server-initiated messages, so 405 (allowed by the spec). */
	hsrv_resp_header(resp, "Allow", "POST, DELETE");
	refuse(resp, 405, "Method Not Allowed: %s", req->method);
}

/* --- lifecycle ------------------------------------------------------- */

/* Everything but the HTTP server. */
static struct mcp_server *server_init(const struct mcp_server_opts *o, struct err *e)
{
	struct mcp_server *s = calloc(1, sizeof(*s));
	const char *env = getenv("CLOCHE_MCP_ALLOWED_HOSTS");

	if (!s) {
		err_set(e, ENOMEM, "mcp server");
		return NULL;
	}
	s->o = *o;
	s->sig_pipe[0] = s->sig_pipe[1] = -1;
	pthread_mutex_init(&s->post_mu, NULL);
	if (asprintf(&s->allowed, "%s,%s", o->allowed_hosts ? o->allowed_hosts : "",
		     env ? env : "") < 0) {
		s->allowed = NULL;
		goto oom;
	}
	s->sessions = mcp_sessions_new(o->max_sessions, (uint64_t)(o->session_idle_s ? o->session_idle_s : 3600) * 1000);
	if (!s->sessions)
		goto oom;
	return s;
oom:
	mcp_server_free(s);
	err_set(e, ENOMEM, "mcp server");
	return NULL;
}

struct mcp_server *mcp_server_new(const struct mcp_server_opts *o, struct err *e)
{
	struct hsrv_opts ho = {.listen = o->listen, .port = o->port,
			       .max_body = o->max_body ? o->max_body : 4u << 20};
	struct mcp_server *s = server_init(o, e);

	if (!s)
		return NULL;
	s->owns_http = true;
	s->http = hsrv_new(&ho, e);
	if (!s->http || hsrv_route(s->http, NULL, "/mcp", handle_mcp, s, e)) {
		mcp_server_free(s);
		return NULL;
	}
	return s;
}

struct mcp_server *mcp_server_attach(struct hsrv *http, const struct mcp_server_opts *o,
				     struct err *e)
{
	struct mcp_server *s = server_init(o, e);

	if (!s)
		return NULL;
	s->http = http;
	if (hsrv_route(http, NULL, "/mcp", handle_mcp, s, e)) {
		s->http = NULL;
		mcp_server_free(s);
		return NULL;
	}
	return s;
}

void mcp_server_stop(struct mcp_server *s)
{
	if (s->stopping)
		return;
	log_info("mcp stopping", "{s:i}", "running", (int)atomic_load(&s->workers));
	s->stopping = true;
	cancel_calls(s, NULL, NULL);
}

unsigned mcp_server_calls(const struct mcp_server *s)
{
	return atomic_load(&s->workers);
}

int mcp_server_add_tool(struct mcp_server *s, const struct mcp_tool *t, struct err *e)
{
	struct tool_entry *te, *nt;
	json_t *out = NULL;

	if (find_tool(s, t->name))
		return err_set(e, EEXIST, "tool %s: registered twice", t->name);
	nt = realloc(s->tools, (s->ntools + 1) * sizeof(*nt));
	if (!nt)
		return err_set(e, ENOMEM, "tool %s", t->name);
	s->tools = nt;
	te = &s->tools[s->ntools];
	memset(te, 0, sizeof(*te));
	te->t = *t;
	te->schema = cj_parse(t->input_schema, strlen(t->input_schema), 1u << 20, CJ_MAX_DEPTH, e);
	if (!te->schema)
		return err_wrap(e, "tool %s: input schema", t->name);
	if (t->output_schema) {
		out = cj_parse(t->output_schema, strlen(t->output_schema), 1u << 20, CJ_MAX_DEPTH, e);
		if (!out) {
			json_decref(te->schema);
			return err_wrap(e, "tool %s: output schema", t->name);
		}
	}
	te->def = json_pack("{s:s, s:s, s:O, s:{s:b, s:b}}", "name", t->name, "description",
			    t->description ? t->description : "", "inputSchema", te->schema,
			    "annotations", "readOnlyHint", t->read_only, "destructiveHint",
			    t->destructive);
	if (te->def && t->title) {
		json_object_set_new(te->def, "title", json_string(t->title));
		json_object_set_new(json_object_get(te->def, "annotations"), "title", json_string(t->title));
	}
	if (te->def && out)
		json_object_set(te->def, "outputSchema", out);
	json_decref(out);
	if (!te->def) {
		json_decref(te->schema);
		return err_set(e, ENOMEM, "tool %s", t->name);
	}
	s->ntools++;
	return 0;
}

int mcp_server_port(const struct mcp_server *s)
{
	return hsrv_port(s->http);
}

static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int saved = errno;

	if (sig_fd >= 0 && write(sig_fd, &b, 1) < 0) {
		/* nothing to do: a full pipe already holds a wake-up */
	}
	errno = saved;
}

static void stop_tick(void *ud)
{
	struct mcp_server *s = ud;

	if (!s->calls || util_now_ms() >= s->stop_at) {
		if (s->calls)
			log_warn("mcp stop: calls still running", "{s:i}", "workers",
				 (int)atomic_load(&s->workers));
		hsrv_stop(s->http);
		return;
	}
	hsrv_timer_arm(s->stop_timer, 20);
}

static int on_sig_fd(void *ud, int fd)
{
	struct mcp_server *s = ud;
	unsigned char b = 0;

	if (fd < 0)
		return -1;
	if (read(fd, &b, 1) <= 0 || s->stopping)
		return 0;
	log_info("mcp stopping", "{s:i, s:i}", "signal", b, "running", (int)atomic_load(&s->workers));
	s->stopping = true;
	s->stop_at = util_now_ms() + 2000;
	cancel_calls(s, NULL, NULL);
	stop_tick(s);
	return 0;
}

int mcp_server_run(struct mcp_server *s)
{
	struct sigaction sa;
	struct err e = ERR_INIT;
	int rc;

	if (pipe2(s->sig_pipe, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	sig_fd = s->sig_pipe[1];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	s->stop_timer = hsrv_timer_new(s->http, stop_tick, s);
	if (!s->stop_timer || hsrv_watch(s->http, s->sig_pipe[0], on_sig_fd, s, &e)) {
		s->sig_pipe[0] = -1;
		return -1;
	}
	s->sig_pipe[0] = -1; /* the loop owns it now */
	log_info("mcp serving", "{s:s, s:i, s:i, s:s}", "name", s->o.name, "port", mcp_server_port(s),
		 "tools", (int)s->ntools, "version", s->o.version ? s->o.version : "0");
	rc = hsrv_run(s->http);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	log_info("mcp stopped", "{s:i}", "running", (int)atomic_load(&s->workers));
	return rc;
}

void mcp_server_free(struct mcp_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->post_mu);
	s->gone = true;
	pthread_mutex_unlock(&s->post_mu);
	if (atomic_load(&s->workers)) {
		/* A worker still holds pointers into s: leak rather than race;
		 * it posts nothing more. */
		return;
	}
	hsrv_timer_free(s->stop_timer);
	if (s->owns_http)
		hsrv_free(s->http);
	pthread_mutex_destroy(&s->post_mu);
	if (sig_fd == s->sig_pipe[1])
		sig_fd = -1;
	if (s->sig_pipe[1] >= 0)
		close(s->sig_pipe[1]);
	for (size_t i = 0; i < s->ntools; i++) {
		json_decref(s->tools[i].schema);
		json_decref(s->tools[i].def);
	}
	free(s->tools);
	mcp_sessions_free(s->sessions);
	free(s->allowed);
	free(s);
}
