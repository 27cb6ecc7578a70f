/* HTTP server and event loop over libwebsockets; see http_server.h.
 *
 * lws delivers a request in pieces (head, body chunks, completion) and wants
 * the answer written from its WRITEABLE callback with LWS_PRE bytes of
 * headroom.  This file hides that: it collects the request into per-
 * connection state, runs the handler once the body is complete, and streams
 * the prepared answer.  Watched fds are adopted as lws "raw file" connections
 * and timers are lws sorted-usec-list entries. */
#include "http_server.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define HSRV_MAX_ROUTES 64
#define HSRV_DEFAULT_MAX_BODY (1u << 20)
#define HSRV_CHUNK 16384

struct hsrv_route {
	char *method;
	char *path;
	bool prefix;
	hsrv_handler fn;
	void *ud;
};

struct hsrv {
	struct lws_context *ctx;
	struct lws_vhost *vh;
	struct lws_protocols protocols[3];
	struct hsrv_route routes[HSRV_MAX_ROUTES];
	size_t nroutes;
	size_t max_body;
	bool stopping;
};

struct hsrv_timer {
	lws_sorted_usec_list_t sul; /* first: the lws callback gets its address */
	struct hsrv *srv;
	hsrv_timer_cb cb;
	void *ud;
};

struct hsrv_watch {
	hsrv_fd_cb cb;
	void *ud;
};

/* Per-connection state, zeroed by lws for each new connection. */
struct hsrv_conn {
	char method[16];
	char *path;
	char *query;
	char *body;
	size_t body_len;
	bool too_big;
	/* The prepared answer: LWS_PRE headroom, then head + body. */
	unsigned char *out;
	size_t out_len;
	size_t out_sent;
};

static void conn_reset(struct hsrv_conn *c)
{
	free(c->path);
	free(c->query);
	free(c->body);
	free(c->out);
	memset(c, 0, sizeof(*c));
}

static const char *status_reason(int s)
{
	switch (s) {
	case 400: return "bad_request";
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not_found";
	case 405: return "method_not_allowed";
	case 413: return "payload_too_large";
	case 503: return "unavailable";
	default: return s >= 500 ? "internal" : "error";
	}
}

void hsrv_resp_text(struct hsrv_resp *r, int status, const char *ctype, const char *text)
{
	free(r->body);
	r->status = status;
	if (ctype != r->content_type)
		snprintf(r->content_type, sizeof(r->content_type), "%s", ctype);
	r->body = strdup(text ? text : "");
	r->body_len = r->body ? strlen(r->body) : 0;
}

void hsrv_resp_json(struct hsrv_resp *r, int status, json_t *v)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(v);
	free(r->body);
	r->status = s ? status : 500;
	snprintf(r->content_type, sizeof(r->content_type), "application/json");
	r->body = s ? s : strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
	r->body_len = r->body ? strlen(r->body) : 0;
}

void hsrv_resp_error(struct hsrv_resp *r, int status, const char *code, const char *message)
{
	hsrv_resp_json(r, status, json_pack("{s:{s:s, s:s}}", "error", "code",
					    code ? code : status_reason(status), "message",
					    message ? message : ""));
}

/* Formats the answer into c->out: LWS_PRE, status line and headers from lws's
 * helpers, then the body.  Returns 0 or -1. */
static int conn_prepare(struct lws *wsi, struct hsrv_conn *c, struct hsrv_resp *r)
{
	size_t head_room = 1024 + LWS_PRE;
	unsigned char *buf = malloc(head_room + r->body_len);
	unsigned char *start, *p, *end;

	if (!buf)
		return -1;
	start = p = buf + LWS_PRE;
	end = buf + head_room - 1;
	if (lws_add_http_common_headers(wsi, (unsigned)r->status, r->content_type,
					r->body_len, &p, end) ||
	    lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:",
					(const unsigned char *)"no-store", 8, &p, end) ||
	    lws_finalize_http_header(wsi, &p, end)) {
		free(buf);
		return -1;
	}
	memcpy(p, r->body, r->body_len);
	p += r->body_len;
	free(c->out);
	c->out = buf;
	c->out_sent = (size_t)(start - buf);
	c->out_len = (size_t)(p - buf);
	return 0;
}

static void conn_dispatch(struct hsrv *srv, struct lws *wsi, struct hsrv_conn *c)
{
	struct hsrv_resp resp = {.status = 200, .content_type = "application/json"};
	struct hsrv_req req = {
		.method = c->method,
		.path = c->path ? c->path : "/",
		.query = c->query ? c->query : "",
		.body = c->body ? c->body : "",
		.body_len = c->body_len,
		.conn = wsi,
	};
	bool path_seen = false;

	if (c->too_big) {
		hsrv_resp_error(&resp, 413, NULL, "request body is larger than the limit");
	} else {
		size_t i;
		for (i = 0; i < srv->nroutes; i++) {
			struct hsrv_route *rt = &srv->routes[i];
			bool hit = rt->prefix ? strncmp(req.path, rt->path, strlen(rt->path)) == 0
					      : strcmp(req.path, rt->path) == 0;
			if (!hit)
				continue;
			path_seen = true;
			if (rt->method && strcmp(rt->method, req.method) != 0)
				continue;
			rt->fn(rt->ud, &req, &resp);
			break;
		}
		if (i == srv->nroutes)
			hsrv_resp_error(&resp, path_seen ? 405 : 404, NULL,
					path_seen ? "method not allowed on this path" : "no such path");
	}
	if (!resp.body) {
		resp.body = strdup("");
		if (!resp.body)
			return;
	}
	if (conn_prepare(wsi, c, &resp) == 0)
		lws_callback_on_writable(wsi);
	else
		log_error("http answer does not fit", "{s:s}", "path", req.path);
	free(resp.body);
}

static const char *method_name(int m)
{
	static const char *const names[] = {"GET", "POST", "OPTIONS", "PUT", "PATCH", "DELETE",
					    "CONNECT", "HEAD"};
	return m >= 0 && (size_t)m < ARRAY_LEN(names) ? names[m] : "UNKNOWN";
}

static int conn_begin(struct lws *wsi, struct hsrv_conn *c)
{
	char *uri = NULL;
	int uri_len = 0, m, qlen;

	conn_reset(c);
	m = lws_http_get_uri_and_method(wsi, &uri, &uri_len);
	snprintf(c->method, sizeof(c->method), "%s", method_name(m));
	c->path = strndup(uri ? uri : "/", uri ? (size_t)uri_len : 1);
	qlen = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS);
	if (qlen > 0) {
		/* lws splits the query at '&' and hands the parts out one by one:
		 * glue them back so handlers see the query as sent. */
		size_t cap = (size_t)qlen + 64, at = 0;
		char frag[1024];
		c->query = calloc(1, cap);
		for (int i = 0; c->query; i++) {
			int n = lws_hdr_copy_fragment(wsi, frag, sizeof(frag), WSI_TOKEN_HTTP_URI_ARGS, i);
			if (n <= 0)
				break;
			if (at + (size_t)n + 2 > cap)
				break;
			if (at)
				c->query[at++] = '&';
			memcpy(c->query + at, frag, (size_t)n);
			at += (size_t)n;
		}
	}
	return c->path ? 0 : -1;
}

static bool method_has_body(const char *m)
{
	return strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0;
}

static int http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		   size_t len)
{
	struct hsrv_conn *c = user;
	struct hsrv *srv = lws_context_user(lws_get_context(wsi));

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		if (conn_begin(wsi, c))
			return -1;
		if (method_has_body(c->method) &&
		    (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0 ||
		     lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0))
			return 0; /* wait for BODY / BODY_COMPLETION */
		conn_dispatch(srv, wsi, c);
		return 0;
	case LWS_CALLBACK_HTTP_BODY:
		if (c->too_big || !len)
			return 0;
		if (c->body_len + len > srv->max_body) {
			c->too_big = true;
			free(c->body);
			c->body = NULL;
			c->body_len = 0;
			return 0;
		} else {
			char *nb = realloc(c->body, c->body_len + len + 1);
			if (!nb)
				return -1;
			memcpy(nb + c->body_len, in, len);
			c->body = nb;
			c->body_len += len;
			c->body[c->body_len] = '\0';
		}
		return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		conn_dispatch(srv, wsi, c);
		return 0;
	case LWS_CALLBACK_HTTP_WRITEABLE: {
		size_t left, n;
		int rc;
		if (!c->out)
			return 0;
		left = c->out_len - c->out_sent;
		n = left > HSRV_CHUNK ? HSRV_CHUNK : left;
		/* lws_write needs LWS_PRE writable bytes before the data; the
		 * bytes before out_sent were already sent, so they can serve. */
		rc = lws_write(wsi, c->out + c->out_sent, n,
			       n == left ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP);
		if (rc < 0)
			return -1;
		c->out_sent += n;
		if (c->out_sent < c->out_len) {
			lws_callback_on_writable(wsi);
			return 0;
		}
		conn_reset(c);
		return lws_http_transaction_completed(wsi) ? -1 : 0;
	}
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		conn_reset(c);
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static int fd_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		 size_t len)
{
	struct hsrv_watch *w = lws_get_opaque_user_data(wsi);

	(void)user;
	(void)in;
	(void)len;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		return w && w->cb(w->ud, lws_get_socket_fd(wsi)) ? -1 : 0;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		if (w) {
			w->cb(w->ud, -1);
			free(w);
		}
		lws_set_opaque_user_data(wsi, NULL);
		return 0;
	default:
		return 0;
	}
}

static void lws_log_emit(int level, const char *line)
{
	char msg[512];
	size_t n;

	snprintf(msg, sizeof(msg), "%s", line);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	log_emit(level == LLL_ERR ? LOG_ERROR : LOG_WARN, msg, "{s:s}", "lib", "lws");
}

struct hsrv *hsrv_new(const struct hsrv_opts *o, struct err *e)
{
	struct lws_context_creation_info info;
	struct hsrv *srv = calloc(1, sizeof(*srv));

	if (!srv) {
		err_set(e, ENOMEM, "http server");
		return NULL;
	}
	srv->max_body = o->max_body ? o->max_body : HSRV_DEFAULT_MAX_BODY;
	srv->protocols[0] = (struct lws_protocols){"http", http_cb, sizeof(struct hsrv_conn), 0, 0, NULL, 0};
	srv->protocols[1] = (struct lws_protocols){"cloche-fd", fd_cb, 0, 0, 0, NULL, 0};

	lws_set_log_level(LLL_ERR | LLL_WARN, lws_log_emit);
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6;
	info.user = srv;
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = srv->protocols;
	srv->ctx = lws_create_context(&info);
	if (!srv->ctx) {
		err_set(e, 0, "create event loop");
		free(srv);
		return NULL;
	}
	info.port = o->port < 0 ? CONTEXT_PORT_NO_LISTEN : o->port;
	info.iface = o->listen;
	info.vhost_name = "default";
	srv->vh = lws_create_vhost(srv->ctx, &info);
	if (!srv->vh) {
		err_set(e, 0, "listen on %s:%d (address in use?)", o->listen ? o->listen : "*", o->port);
		lws_context_destroy(srv->ctx);
		free(srv);
		return NULL;
	}
	return srv;
}

void hsrv_free(struct hsrv *srv)
{
	if (!srv)
		return;
	lws_context_destroy(srv->ctx);
	for (size_t i = 0; i < srv->nroutes; i++) {
		free(srv->routes[i].method);
		free(srv->routes[i].path);
	}
	free(srv);
}

int hsrv_route(struct hsrv *srv, const char *method, const char *path, hsrv_handler fn,
	       void *ud, struct err *e)
{
	struct hsrv_route *rt;
	size_t n = strlen(path);

	if (srv->nroutes == HSRV_MAX_ROUTES)
		return err_set(e, ENOSPC, "route `%s`: too many routes", path);
	rt = &srv->routes[srv->nroutes];
	rt->prefix = n > 0 && path[n - 1] == '*';
	rt->path = strndup(path, rt->prefix ? n - 1 : n);
	rt->method = method ? strdup(method) : NULL;
	if (!rt->path || (method && !rt->method)) {
		free(rt->path);
		free(rt->method);
		return err_set(e, ENOMEM, "route `%s`", path);
	}
	rt->fn = fn;
	rt->ud = ud;
	srv->nroutes++;
	return 0;
}

int hsrv_port(struct hsrv *srv)
{
	int p = lws_get_vhost_listen_port(srv->vh);
	return p > 0 ? p : -1;
}

int hsrv_watch(struct hsrv *srv, int fd, hsrv_fd_cb cb, void *ud, struct err *e)
{
	struct hsrv_watch *w = malloc(sizeof(*w));
	lws_sock_file_fd_type u;
	struct lws *wsi;

	if (!w) {
		close(fd);
		return err_set(e, ENOMEM, "watch fd %d", fd);
	}
	w->cb = cb;
	w->ud = ud;
	u.filefd = (lws_filefd_type)(intptr_t)fd;
	wsi = lws_adopt_descriptor_vhost(srv->vh, LWS_ADOPT_RAW_FILE_DESC, u, "cloche-fd", NULL);
	if (!wsi) {
		free(w);
		close(fd);
		return err_set(e, 0, "watch fd %d: the event loop refused it", fd);
	}
	lws_set_opaque_user_data(wsi, w);
	return 0;
}

static void timer_fire(lws_sorted_usec_list_t *sul)
{
	struct hsrv_timer *t = (struct hsrv_timer *)sul;
	t->cb(t->ud);
}

struct hsrv_timer *hsrv_timer_new(struct hsrv *srv, hsrv_timer_cb cb, void *ud)
{
	struct hsrv_timer *t = calloc(1, sizeof(*t));

	if (t) {
		t->srv = srv;
		t->cb = cb;
		t->ud = ud;
	}
	return t;
}

void hsrv_timer_arm(struct hsrv_timer *t, uint64_t ms)
{
	lws_sul_schedule(t->srv->ctx, 0, &t->sul, timer_fire, (lws_usec_t)ms * LWS_US_PER_MS);
}

void hsrv_timer_cancel(struct hsrv_timer *t)
{
	if (t)
		lws_sul_cancel(&t->sul);
}

void hsrv_timer_free(struct hsrv_timer *t)
{
	if (t) {
		lws_sul_cancel(&t->sul);
		free(t);
	}
}

int hsrv_run(struct hsrv *srv)
{
	srv->stopping = false;
	while (!srv->stopping)
		if (lws_service(srv->ctx, 0) < 0)
			return -1;
	return 0;
}

void hsrv_stop(struct hsrv *srv)
{
	srv->stopping = true;
	lws_cancel_service(srv->ctx);
}

int hsrv_req_header(const struct hsrv_req *req, const char *name, char *out, size_t len)
{
	struct lws *wsi = req->conn;
	char key[128];
	int n;

	/* lws keeps custom headers with their ':' and lower-case names. */
	n = snprintf(key, sizeof(key), "%s:", name);
	if (n <= 0 || (size_t)n >= sizeof(key))
		return -1;
	for (char *k = key; *k; k++)
		*k = (char)(*k >= 'A' && *k <= 'Z' ? *k + 32 : *k);
	for (int tok = 0; tok < WSI_TOKEN_COUNT; tok++) {
		const unsigned char *tn = lws_token_to_string((enum lws_token_indexes)tok);
		if (tn && strcasecmp((const char *)tn, key) == 0) {
			if (lws_hdr_total_length(wsi, (enum lws_token_indexes)tok) >= (int)len)
				return -1;
			return lws_hdr_copy(wsi, out, (int)len, (enum lws_token_indexes)tok) < 0 ? -1 : (int)strlen(out);
		}
	}
	n = lws_hdr_custom_length(wsi, key, (int)strlen(key));
	if (n < 0 || n >= (int)len)
		return -1;
	return lws_hdr_custom_copy(wsi, out, (int)len, key, (int)strlen(key)) < 0 ? -1 : n;
}
