/* HTTP server and event loop over libwebsockets; see http_server.h.
 *
 * lws delivers a request in pieces (head, body chunks, completion) and wants
 * the answer written from its WRITEABLE callback with LWS_PRE bytes of
 * headroom.  This file hides that: it collects the request into per-
 * connection state, runs the handler once the body is complete, and streams
 * the prepared answer.  Watched fds are adopted as lws "raw file" connections
 * and timers are lws sorted-usec-list entries. */
#include "http_server.h"
#include "http_status.h"
#include "listenfd.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#define HSRV_MAX_ROUTES 64
#define HSRV_DEFAULT_MAX_BODY (1u << 20)
#define HSRV_CHUNK 16384

struct hsrv_route {
	char *method;  /* NULL: any */
	char *pattern; /* as added, checked by pattern_check() */
	hsrv_handler fn;
	void *ud;
};

struct hsrv_task {
	struct hsrv_task *next;
	hsrv_task_fn fn;
	void *ud;
};

struct hsrv {
	struct lws_context *ctx;
	pthread_mutex_t tasks_mu;
	struct hsrv_task *tasks, *tasks_tail;
	struct lws_vhost *vh;
	struct lws_protocols protocols[3];
	struct hsrv_route routes[HSRV_MAX_ROUTES];
	size_t nroutes;
	size_t max_body;
	int held_port;     /* the port of a listener init holds (listenfd.h), or 0 */
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

/* A deferred answer: owned jointly by its connection (until it closes or
 * has written everything) and by the owner (until reply or end). */
struct hsrv_defer {
	struct lws *wsi;      /* NULL once the connection is gone */
	hsrv_gone_cb gone;
	void *ud;
	bool owner_done;      /* reply/end was called */
	bool streaming;       /* the head was queued */
	bool last;            /* nothing more will be queued */
	/* Bytes to send: LWS_PRE headroom, then q_len bytes from q_off. */
	unsigned char *q;
	size_t q_off, q_len, q_cap;
};

/* Per-connection state, zeroed by lws for each new connection. */
struct hsrv_conn {
	struct hsrv_defer *defer;
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

static void defer_free(struct hsrv_defer *d)
{
	free(d->q);
	free(d);
}

/* The connection lets go of its deferred answer. */
static void conn_drop_defer(struct hsrv_conn *c)
{
	struct hsrv_defer *d = c->defer;

	if (!d)
		return;
	c->defer = NULL;
	d->wsi = NULL;
	if (d->owner_done) {
		defer_free(d);
		return;
	}
	if (d->gone)
		d->gone(d->ud);
}

static void conn_reset(struct hsrv_conn *c)
{
	if (!c) /* a connection closed before lws gave it state (no request) */
		return;
	conn_drop_defer(c);
	free(c->path);
	free(c->query);
	free(c->body);
	free(c->out);
	memset(c, 0, sizeof(*c));
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
					    code ? code : http_status_code(status), "message",
					    message ? message : ""));
}

int hsrv_resp_header(struct hsrv_resp *r, const char *name, const char *value)
{
	size_t at = strlen(r->headers);
	int n = snprintf(r->headers + at, sizeof(r->headers) - at, "%s: %s\r\n", name, value);

	if (n < 0 || (size_t)n >= sizeof(r->headers) - at) {
		r->headers[at] = '\0';
		return -1;
	}
	return 0;
}

/* Adds the "name: value\r\n" lines of hdrs through lws.  Returns 0 or -1. */
static int add_extra_headers(struct lws *wsi, const char *hdrs, unsigned char **p,
			     unsigned char *end)
{
	const char *line = hdrs;

	while (line && *line) {
		const char *eol = strstr(line, "\r\n"), *colon = strchr(line, ':');
		char name[128];
		const char *v;

		if (!eol || !colon || colon > eol || (size_t)(colon - line) + 2 > sizeof(name))
			return -1;
		memcpy(name, line, (size_t)(colon - line) + 1);
		name[colon - line + 1] = '\0';
		for (char *k = name; *k; k++)
			*k = (char)(*k >= 'A' && *k <= 'Z' ? *k + 32 : *k);
		v = colon + 1;
		while (*v == ' ')
			v++;
		if (lws_add_http_header_by_name(wsi, (const unsigned char *)name,
						(const unsigned char *)v, (int)(eol - v), p, end))
			return -1;
		line = eol + 2;
	}
	return 0;
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
	    add_extra_headers(wsi, r->headers, &p, end) ||
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

/* Matches path against pattern, which pattern_check() passed; see
 * hsrv_route for the rules.  Fills req's parameters; true on a match. */
static bool match(const char *pat, const char *path, struct hsrv_req *req)
{
	size_t n = 0;

	req->nparams = 0;
	while (*pat) {
		if (pat[0] == '*' && pat[1] == '\0')
			break;
		if (pat[0] == '{') {
			const char *close = strchr(pat, '}');
			size_t nl = (size_t)(close - pat - 1), vl = strcspn(path, "/");

			if (vl == 0 || vl >= HSRV_PARAM_MAX)
				return false;
			memcpy(req->params[n].name, pat + 1, nl);
			req->params[n].name[nl] = '\0';
			memcpy(req->params[n].value, path, vl);
			req->params[n].value[vl] = '\0';
			n++;
			pat = close + 1;
			path += vl;
			continue;
		}
		if (*pat != *path)
			return false;
		pat++;
		path++;
	}
	if (!*pat && *path)
		return false;
	req->nparams = n;
	return true;
}

/* Why pattern is not one hsrv_route takes, or NULL when it is. */
static const char *pattern_check(const char *pat)
{
	size_t n = 0;

	if (pat[0] != '/')
		return "a pattern starts with '/'";
	for (const char *p = pat; *p; p++) {
		if (*p == '*' && p[1])
			return "'*' may only end a pattern";
		if (*p == '}')
			return "'}' without its '{'";
		if (*p != '{')
			continue;
		if (p[-1] != '/')
			return "a parameter is a whole segment";
		if (++n > HSRV_MAX_PARAMS)
			return "too many parameters";
		{
			size_t nl = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz"
						  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
			if (nl == 0 || nl >= HSRV_PARAM_NAME_MAX)
				return "a parameter's name is 1-31 letters, digits or '_'";
			p += nl + 1;
		}
		if (*p != '}' || (p[1] && p[1] != '/'))
			return "a parameter is a whole segment";
	}
	return NULL;
}

bool hsrv_match(const char *pattern, const char *path, struct hsrv_req *req)
{
	req->nparams = 0;
	return !pattern_check(pattern) && match(pattern, path, req);
}

const char *hsrv_req_param(const struct hsrv_req *req, const char *name)
{
	for (size_t i = 0; i < req->nparams; i++)
		if (strcmp(req->params[i].name, name) == 0)
			return req->params[i].value;
	return NULL;
}

/* True when the ", "-separated list holds word. */
static bool list_has(const char *list, const char *word)
{
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, ",");

		if (len == strlen(word) && strncmp(p, word, len) == 0)
			return true;
		p += len;
		if (*p)
			p += 2; /* ", " */
	}
	return false;
}

/* The router: the first pattern that matches decides, then the method picks
 * among the routes of that pattern (hsrv_route). */
static void route(struct hsrv *srv, struct hsrv_req *req, struct hsrv_resp *resp)
{
	const struct hsrv_route *first = NULL;
	char allow[128] = "";

	for (size_t i = 0; i < srv->nroutes && !first; i++)
		if (match(srv->routes[i].pattern, req->path, req))
			first = &srv->routes[i];
	if (!first) {
		hsrv_resp_error(resp, 404, NULL, "no such path");
		return;
	}
	for (const struct hsrv_route *rt = first; rt < srv->routes + srv->nroutes; rt++) {
		if (strcmp(rt->pattern, first->pattern) != 0)
			continue;
		if (!rt->method || strcmp(rt->method, req->method) == 0) {
			rt->fn(rt->ud, req, resp);
			return;
		}
		if (!list_has(allow, rt->method)) {
			size_t at = strlen(allow);
			snprintf(allow + at, sizeof(allow) - at, "%s%s", at ? ", " : "", rt->method);
		}
	}
	hsrv_resp_error(resp, 405, NULL, "method not allowed on this path");
	hsrv_resp_header(resp, "Allow", allow);
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

	if (c->too_big)
		hsrv_resp_error(&resp, 413, NULL, "request body is larger than the limit");
	else
		route(srv, &req, &resp);
	if (c->defer) {
		/* Answered later; a slow answer must not be cut by lws timeouts. */
		free(resp.body);
		lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
		return;
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

struct hsrv_defer *hsrv_defer(const struct hsrv_req *req, hsrv_gone_cb gone, void *ud)
{
	struct lws *wsi = req->conn;
	struct hsrv_conn *c = lws_wsi_user(wsi);
	struct hsrv_defer *d;

	if (!c || c->defer)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->wsi = wsi;
	d->gone = gone;
	d->ud = ud;
	c->defer = d;
	return d;
}

bool hsrv_defer_alive(const struct hsrv_defer *d)
{
	return d && d->wsi;
}

int hsrv_defer_reply(struct hsrv_defer *d, struct hsrv_resp *resp)
{
	struct hsrv_conn *c;
	int rc = -1;

	if (d->streaming) { /* too late for a whole answer: end the stream */
		free(resp->body);
		resp->body = NULL;
		hsrv_defer_end(d);
		return -1;
	}
	if (d->wsi) {
		c = lws_wsi_user(d->wsi);
		if (!resp->body)
			resp->body = strdup("");
		if (resp->body && conn_prepare(d->wsi, c, resp) == 0) {
			lws_callback_on_writable(d->wsi);
			rc = 0;
		}
		c->defer = NULL;
	}
	free(resp->body);
	resp->body = NULL;
	if (d->wsi && rc) /* the answer did not fit: there is none to give */
		lws_set_timeout(d->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
	defer_free(d);
	return rc;
}

/* Appends n bytes to d's queue and asks for a writeable callback. */
static int defer_queue(struct hsrv_defer *d, const void *p, size_t n)
{
	if (!d->wsi || d->last)
		return -1;
	if (d->q_off && LWS_PRE + d->q_off + d->q_len + n > d->q_cap) {
		memmove(d->q + LWS_PRE, d->q + LWS_PRE + d->q_off, d->q_len);
		d->q_off = 0;
	}
	if (LWS_PRE + d->q_off + d->q_len + n > d->q_cap) {
		size_t cap = (LWS_PRE + d->q_len + n) * 2;
		unsigned char *nq = realloc(d->q, cap);
		if (!nq)
			return -1;
		d->q = nq;
		d->q_cap = cap;
	}
	memcpy(d->q + LWS_PRE + d->q_off + d->q_len, p, n);
	d->q_len += n;
	lws_callback_on_writable(d->wsi);
	return 0;
}

int hsrv_defer_stream(struct hsrv_defer *d, int status, const char *ctype,
		      const struct hsrv_resp *hdrs)
{
	unsigned char head[LWS_PRE + 2048], *start = head + LWS_PRE, *p = start;
	unsigned char *end = head + sizeof(head) - 1;

	if (!d->wsi || d->streaming)
		return -1;
	/* Chunked, so the connection stays open for the next request and the
	 * client is the side that closes it (a server inside a sandbox that
	 * closes first holds a TIME_WAIT that blocks checkpoints). */
	if (lws_add_http_header_status(d->wsi, (unsigned)status, &p, end) ||
	    lws_add_http_header_by_token(d->wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
					 (const unsigned char *)ctype, (int)strlen(ctype), &p, end) ||
	    lws_add_http_header_by_name(d->wsi, (const unsigned char *)"transfer-encoding:",
					(const unsigned char *)"chunked", 7, &p, end) ||
	    lws_add_http_header_by_name(d->wsi, (const unsigned char *)"cache-control:",
					(const unsigned char *)"no-cache", 8, &p, end) ||
	    (hdrs && add_extra_headers(d->wsi, hdrs->headers, &p, end)) ||
	    lws_finalize_http_header(d->wsi, &p, end))
		return -1;
	d->streaming = true;
	return defer_queue(d, start, (size_t)(p - start));
}

int hsrv_defer_write(struct hsrv_defer *d, const void *p, size_t n)
{
	char size[24];
	int m;

	if (!d->streaming)
		return -1;
	if (!n)
		return 0;
	m = snprintf(size, sizeof(size), "%zx\r\n", n);
	if (defer_queue(d, size, (size_t)m) || defer_queue(d, p, n) || defer_queue(d, "\r\n", 2))
		return -1;
	return 0;
}

void hsrv_defer_end(struct hsrv_defer *d)
{
	if (d->wsi && d->streaming && !d->last)
		defer_queue(d, "0\r\n\r\n", 5);
	d->owner_done = true;
	d->last = true;
	if (!d->wsi) {
		defer_free(d);
		return;
	}
	if (!d->streaming) {
		/* Nothing was started: there is no answer to give, so close. */
		lws_set_timeout(d->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
		return;
	}
	lws_callback_on_writable(d->wsi);
}

/* Sends the next piece of a stream.  Returns -1 to close the connection. */
static int defer_send(struct lws *wsi, struct hsrv_conn *c)
{
	struct hsrv_defer *d = c->defer;
	size_t n;

	if (d->q_len) {
		n = d->q_len > HSRV_CHUNK ? HSRV_CHUNK : d->q_len;
		if (lws_write(wsi, d->q + LWS_PRE + d->q_off, n, LWS_WRITE_HTTP) < 0)
			return -1;
		d->q_off += n;
		d->q_len -= n;
		if (!d->q_len)
			d->q_off = 0;
	}
	if (d->q_len) {
		lws_callback_on_writable(wsi);
		return 0;
	}
	if (!d->last)
		return 0;
	/* The last chunk is out: the connection is ready for the next request. */
	c->defer = NULL;
	defer_free(d);
	conn_reset(c);
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static void tasks_run(struct hsrv *srv)
{
	struct hsrv_task *t;

	pthread_mutex_lock(&srv->tasks_mu);
	t = srv->tasks;
	srv->tasks = srv->tasks_tail = NULL;
	pthread_mutex_unlock(&srv->tasks_mu);
	while (t) {
		struct hsrv_task *next = t->next;
		t->fn(t->ud);
		free(t);
		t = next;
	}
}

int hsrv_post(struct hsrv *srv, hsrv_task_fn fn, void *ud)
{
	struct hsrv_task *t = malloc(sizeof(*t));

	if (!t)
		return -1;
	t->next = NULL;
	t->fn = fn;
	t->ud = ud;
	pthread_mutex_lock(&srv->tasks_mu);
	if (srv->tasks_tail)
		srv->tasks_tail->next = t;
	else
		srv->tasks = t;
	srv->tasks_tail = t;
	pthread_mutex_unlock(&srv->tasks_mu);
	lws_cancel_service(srv->ctx);
	return 0;
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
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		if (srv)
			tasks_run(srv);
		return 0;
	case LWS_CALLBACK_HTTP_WRITEABLE: {
		size_t left, n;
		int rc;
		if (!c->out)
			return c->defer && c->defer->streaming ? defer_send(wsi, c) : 0;
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

/* Connections on a listener init holds: accepted here and handed to lws
 * as if its own listener had accepted them. */
static int accept_held(void *ud, int fd)
{
	struct hsrv *srv = ud;

	for (int i = 0; fd >= 0 && i < 64; i++) {
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (c == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* EAGAIN, or out of fds: the next readiness retries */
		}
		lws_adopt_socket_vhost(srv->vh, c); /* closes c when it fails */
	}
	return 0;
}

struct hsrv *hsrv_new(const struct hsrv_opts *o, struct err *e)
{
	struct lws_context_creation_info info;
	struct hsrv *srv = calloc(1, sizeof(*srv));
	int held;

	if (!srv) {
		err_set(e, ENOMEM, "http server");
		return NULL;
	}
	srv->max_body = o->max_body ? o->max_body : HSRV_DEFAULT_MAX_BODY;
	pthread_mutex_init(&srv->tasks_mu, NULL);
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
		pthread_mutex_destroy(&srv->tasks_mu);
		free(srv);
		return NULL;
	}
	held = o->port > 0 ? listenfd_take(o->port) : -1;
	info.port = o->port < 0 || held >= 0 ? CONTEXT_PORT_NO_LISTEN : o->port;
	info.iface = o->listen;
	/* An idle keep-alive connection is left for the client to close: a
	 * server that closes first holds the TIME_WAIT, and inside a sandbox
	 * that delays its next checkpoint by a minute (docs/hibernation.md).
	 * cloche-proxy closes its idle upstream connections after 30 s. */
	info.keepalive_timeout = HSRV_KEEPALIVE_S;
	info.vhost_name = "default";
	srv->vh = lws_create_vhost(srv->ctx, &info);
	if (!srv->vh) {
		err_set(e, 0, "listen on %s:%d (address in use?)", o->listen ? o->listen : "*", o->port);
		lws_context_destroy(srv->ctx);
		pthread_mutex_destroy(&srv->tasks_mu);
		free(srv);
		return NULL;
	}
	if (held >= 0) {
		srv->held_port = o->port;
		if (hsrv_watch(srv, held, accept_held, srv, e)) {
			err_wrap(e, "port %d from init", o->port);
			hsrv_free(srv);
			return NULL;
		}
	}
	return srv;
}

void hsrv_free(struct hsrv *srv)
{
	if (!srv)
		return;
	lws_context_destroy(srv->ctx);
	while (srv->tasks) {
		struct hsrv_task *t = srv->tasks;
		srv->tasks = t->next;
		free(t);
	}
	pthread_mutex_destroy(&srv->tasks_mu);
	for (size_t i = 0; i < srv->nroutes; i++) {
		free(srv->routes[i].method);
		free(srv->routes[i].pattern);
	}
	free(srv);
}

int hsrv_route(struct hsrv *srv, const char *method, const char *pattern, hsrv_handler fn,
	       void *ud, struct err *e)
{
	struct hsrv_route *rt;
	const char *why = pattern_check(pattern);

	if (why)
		return err_set(e, EINVAL, "route `%s`: %s", pattern, why);
	if (method && (!*method || strchr(method, ',') || strlen(method) > 15))
		return err_set(e, EINVAL, "route `%s`: `%s` is not a method", pattern, method);
	if (srv->nroutes == HSRV_MAX_ROUTES)
		return err_set(e, ENOSPC, "route `%s`: too many routes", pattern);
	rt = &srv->routes[srv->nroutes];
	rt->pattern = strdup(pattern);
	rt->method = method ? strdup(method) : NULL;
	if (!rt->pattern || (method && !rt->method)) {
		free(rt->pattern);
		free(rt->method);
		return err_set(e, ENOMEM, "route `%s`", pattern);
	}
	rt->fn = fn;
	rt->ud = ud;
	srv->nroutes++;
	return 0;
}

int hsrv_port(struct hsrv *srv)
{
	int p = srv->held_port ? srv->held_port : lws_get_vhost_listen_port(srv->vh);
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

int hsrv_req_peer_port(const struct hsrv_req *req)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = req->conn ? lws_get_socket_fd(req->conn) : -1;

	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl) == -1)
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -1;
}

int hsrv_req_header(const struct hsrv_req *req, const char *name, char *out, size_t len)
{
	struct lws *wsi = req->conn;
	char key[128];
	int n;

	if (len)
		out[0] = '\0';
	/* lws keeps custom headers with their ':' and lower-case names. */
	n = snprintf(key, sizeof(key), "%s:", name);
	if (n <= 0 || (size_t)n >= sizeof(key))
		return HSRV_HDR_ABSENT;
	for (char *k = key; *k; k++)
		*k = (char)(*k >= 'A' && *k <= 'Z' ? *k + 32 : *k);
	for (int tok = 0; tok < WSI_TOKEN_COUNT; tok++) {
		const unsigned char *tn = lws_token_to_string((enum lws_token_indexes)tok);
		if (tn && strcasecmp((const char *)tn, key) == 0) {
			int total = lws_hdr_total_length(wsi, (enum lws_token_indexes)tok);
			if (total <= 0)
				return HSRV_HDR_ABSENT;
			if (total >= (int)len)
				return HSRV_HDR_TOO_LONG;
			if (lws_hdr_copy(wsi, out, (int)len, (enum lws_token_indexes)tok) < 0) {
				out[0] = '\0';
				return HSRV_HDR_TOO_LONG;
			}
			return (int)strlen(out);
		}
	}
	n = lws_hdr_custom_length(wsi, key, (int)strlen(key));
	if (n < 0)
		return HSRV_HDR_ABSENT;
	if (n >= (int)len)
		return HSRV_HDR_TOO_LONG;
	if (lws_hdr_custom_copy(wsi, out, (int)len, key, (int)strlen(key)) < 0) {
		out[0] = '\0';
		return HSRV_HDR_TOO_LONG;
	}
	return n;
}
