/* An HTTP/1.1 server and event loop over libwebsockets.
 *
 * One hsrv is one lws context with one listening vhost.  Programs register
 * handlers by method and path pattern ("/v1/sandboxes/{id}"), and the router
 * answers 404 and 405 itself; a handler sees the whole request (head, path
 * parameters and a size-limited body) and fills in a response.  The same loop also watches
 * file descriptors (pipes, signalfd) and runs timers, so a daemon needs no
 * second loop: cloche-init runs its supervisor and its health endpoint here.
 * Everything runs on the thread that called hsrv_run(). */
#ifndef CLOCHE_HTTP_SERVER_H
#define CLOCHE_HTTP_SERVER_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hsrv;
struct hsrv_timer;

/* Seconds an idle keep-alive connection may stay open: longer than
 * cloche-proxy keeps an idle upstream connection, so the proxy closes it. */
#define HSRV_KEEPALIVE_S 75

struct hsrv_opts {
	const char *listen;    /* interface address; NULL means all */
	int port;              /* 0 picks a free port (see hsrv_port); -1: no listener */
	size_t max_body;       /* request bodies above this get 413; 0 means 1 MiB */
};

/* Path parameters: the segments a route's "{name}" matched (hsrv_route). */
#define HSRV_MAX_PARAMS 4      /* "{name}"s in one pattern */
#define HSRV_PARAM_NAME_MAX 32 /* a name's bytes, with its NUL */
#define HSRV_PARAM_MAX 128     /* a value's bytes, with its NUL */

struct hsrv_param {
	char name[HSRV_PARAM_NAME_MAX];
	char value[HSRV_PARAM_MAX]; /* one decoded segment: never "", never holds '/' */
};

struct hsrv_req {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* decoded path without the query */
	const char *query;  /* raw query string without '?', or "" */
	const char *body;   /* NUL-terminated copy of the body, or "" */
	size_t body_len;
	void *conn;         /* opaque; for hsrv_req_header() */
	size_t nparams;     /* the matched route's parameters; see hsrv_req_param() */
	struct hsrv_param params[HSRV_MAX_PARAMS];
};

struct hsrv_resp {
	int status;              /* defaults to 200 */
	char content_type[64];   /* defaults to application/json */
	char *body;              /* malloc'd; the server frees it */
	size_t body_len;
	char headers[512];       /* extra "name: value\r\n" lines; see hsrv_resp_header */
};

/* Fills resp; the handler must not keep req after returning. */
typedef void (*hsrv_handler)(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp);
/* Called with the fd when it is readable.  Return 0 to keep watching, -1 to
 * stop (the server then closes fd).  Called once more with fd == -1 when
 * the watch ends for any reason (that -1, a hang-up, hsrv_free), so the
 * owner can release what ud points to; the return value is then ignored. */
typedef int (*hsrv_fd_cb)(void *ud, int fd);
typedef void (*hsrv_timer_cb)(void *ud);

/* Creates the loop and, when o->port >= 0, its listener.  NULL with e set. */
struct hsrv *hsrv_new(const struct hsrv_opts *o, struct err *e);

/* Stops watching everything, closes watched fds and frees srv.  NULL is fine. */
void hsrv_free(struct hsrv *srv);

/* Adds a route: requests for `pattern` with `method` (NULL: any method) go
 * to fn(ud, ...).  Returns 0, or -1 with e set (a malformed pattern, too
 * many routes, out of memory).
 *
 * A pattern is a path whose segments are literal text or a parameter,
 * "{name}" (a whole segment; name of letters, digits and '_'; at most
 * HSRV_MAX_PARAMS of them), and may end with '*', which matches any rest of
 * the path, "" included (the pattern is then a prefix):
 *
 *     hsrv_route(srv, "POST", "/v1/sandboxes/{id}/{action}", h_action, a, &e);
 *
 * Matching is on req->path, the path as libwebsockets decoded it: %XX
 * escapes are decoded and "." and ".." segments resolved before routing,
 * so "%2F" in an id is a '/' that ends the segment (ids cannot hold one)
 * and "sb%2D1" matches "{id}" as "sb-1".  A parameter matches one
 * non-empty segment of at most HSRV_PARAM_MAX - 1 bytes; a longer one does
 * not match, so such a path gets 404.  Literal text matches byte for byte,
 * and a trailing '/' is part of the path: "/a/{id}" matches neither "/a/"
 * nor "/a/x/".  The handler reads the values with hsrv_req_param(), as
 * NUL-terminated copies in req (no escaping is left to undo).
 *
 * Dispatch: the first route, in the order they were added, whose pattern
 * matches the path decides; the request goes to the first route with that
 * same pattern whose method fits.  So add a literal path before a pattern
 * that would also match it ("/routes/activity" before "/routes/{id}").  A
 * path no pattern matches gets 404; a matched pattern without a route for
 * the method gets 405 with an Allow header naming the methods it has.  Both
 * are JSON errors with the codes of http_status_code(). */
int hsrv_route(struct hsrv *srv, const char *method, const char *pattern, hsrv_handler fn,
	       void *ud, struct err *e);

/* The routing rule of hsrv_route(), on its own: true when path matches
 * pattern, with the parameters copied into req->params (req->nparams of
 * them).  False for no match, and for a malformed pattern. */
bool hsrv_match(const char *pattern, const char *path, struct hsrv_req *req);

/* The value of path parameter `name` of the route that matched the request
 * (a "{name}" of its pattern): a NUL-terminated string in req, non-empty and
 * shorter than HSRV_PARAM_MAX.  NULL when the pattern has no such name. */
const char *hsrv_req_param(const struct hsrv_req *req, const char *name);

/* The port the listener is bound to (useful with port 0), or -1. */
int hsrv_port(struct hsrv *srv);

/* Watches fd for readability.  The server owns fd from now on, even on error. */
int hsrv_watch(struct hsrv *srv, int fd, hsrv_fd_cb cb, void *ud, struct err *e);

/* Timers: one-shot, re-armable.  A timer belongs to srv and must be freed
 * before it; arming an armed timer moves its deadline. */
struct hsrv_timer *hsrv_timer_new(struct hsrv *srv, hsrv_timer_cb cb, void *ud);
void hsrv_timer_arm(struct hsrv_timer *t, uint64_t ms);
void hsrv_timer_cancel(struct hsrv_timer *t);
void hsrv_timer_free(struct hsrv_timer *t);

/* Runs the loop until hsrv_stop().  Returns 0, or -1 if the loop failed. */
int hsrv_run(struct hsrv *srv);

/* Makes hsrv_run() return after the current iteration.  Loop thread only. */
void hsrv_stop(struct hsrv *srv);

/* hsrv_req_header()'s answers other than a length. */
#define HSRV_HDR_ABSENT (-1)   /* no such header, or an empty one */
#define HSRV_HDR_TOO_LONG (-2) /* present, but it does not fit in out */

/* Copies request header `name` (case-insensitive, without ':') into out,
 * NUL-terminated.  Returns its length (> 0, or 0 for a present but empty
 * custom header), HSRV_HDR_ABSENT, or HSRV_HDR_TOO_LONG; out is "" unless a
 * length is returned.  A caller that checks a header (Host, Origin, a
 * version, a credential) must refuse the request on HSRV_HDR_TOO_LONG: it is
 * there, only unreadable, and must never pass as absent. */
int hsrv_req_header(const struct hsrv_req *req, const char *name, char *out, size_t len);

/* The TCP port the request's peer connected from, or -1 (not TCP, or
 * unknown).  cloche-init uses it to leave the asker out of its census of
 * open connections. */
int hsrv_req_peer_port(const struct hsrv_req *req);

/* Adds a response header (e.g. "Mcp-Session-Id").  Returns 0, or -1 when
 * the headers no longer fit in resp->headers (the header is then dropped). */
int hsrv_resp_header(struct hsrv_resp *r, const char *name, const char *value);

/* --- answering later (deferred responses and streams) -----------------
 *
 * A handler that cannot answer at once (the work runs on another thread)
 * calls hsrv_defer() and leaves resp alone.  The connection then waits until
 * the owner of the handle, on the loop thread, either answers in one piece
 * with hsrv_defer_reply(), or starts a stream (hsrv_defer_stream(), then
 * hsrv_defer_write() any number of times, then hsrv_defer_end()), e.g. for
 * Server-Sent Events.  A stream is sent with chunked transfer encoding, so
 * its connection stays usable for the next request.  If the peer goes away
 * first, gone(ud) runs once on the loop thread; the owner must still end
 * the handle (reply or end), which then only frees it.  Every function here
 * is loop-thread only. */
struct hsrv_defer;
typedef void (*hsrv_gone_cb)(void *ud);

/* From inside a handler: the answer comes later.  Returns the handle, or
 * NULL when out of memory (the handler then fills resp as usual). */
struct hsrv_defer *hsrv_defer(const struct hsrv_req *req, hsrv_gone_cb gone, void *ud);

/* True while the peer is still connected. */
bool hsrv_defer_alive(const struct hsrv_defer *d);

/* Answers in one piece (resp as a handler fills it; its body is freed here)
 * and releases d.  Returns 0, or -1 when the peer is gone or the answer did
 * not fit; d is released either way. */
int hsrv_defer_reply(struct hsrv_defer *d, struct hsrv_resp *resp);

/* Sends the head of a streamed answer: status, content type and the extra
 * headers of hdrs (may be NULL).  Returns 0 or -1 (peer gone, or already
 * started). */
int hsrv_defer_stream(struct hsrv_defer *d, int status, const char *ctype,
		      const struct hsrv_resp *hdrs);

/* Queues n bytes of the stream's body (copied).  Returns 0 or -1. */
int hsrv_defer_write(struct hsrv_defer *d, const void *p, size_t n);

/* Ends the stream once the queued bytes are out, and releases d. */
void hsrv_defer_end(struct hsrv_defer *d);

/* --- work from other threads -------------------------------------------- */

typedef void (*hsrv_task_fn)(void *ud);

/* Runs fn(ud) on the loop thread soon, in the order posted.  Safe from any
 * thread while srv lives.  Tasks still queued when srv is freed are dropped
 * without running.  Returns 0, or -1 when out of memory. */
int hsrv_post(struct hsrv *srv, hsrv_task_fn fn, void *ud);

/* Response helpers: set status and a body (copied).  hsrv_resp_json takes
 * the reference to v.  hsrv_resp_error writes {"error":{"code","message"}};
 * code NULL means the status's code in the shared table (http_status.h),
 * which is what a handler should use unless it has a more precise code. */
void hsrv_resp_text(struct hsrv_resp *r, int status, const char *ctype, const char *text);
struct json_t;
void hsrv_resp_json(struct hsrv_resp *r, int status, struct json_t *v);
void hsrv_resp_error(struct hsrv_resp *r, int status, const char *code, const char *message);

#endif
