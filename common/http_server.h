/* An HTTP/1.1 server and event loop over libwebsockets.
 *
 * One hsrv is one lws context with one listening vhost.  Programs register
 * handlers by method and path; a handler sees the whole request (head and a
 * size-limited body) and fills in a response.  The same loop also watches
 * file descriptors (pipes, signalfd) and runs timers, so a daemon needs no
 * second loop: cloche-init runs its supervisor and its health endpoint here.
 * Everything runs on the thread that called hsrv_run(). */
#ifndef CLOCHE_HTTP_SERVER_H
#define CLOCHE_HTTP_SERVER_H

#include "err.h"

#include <stddef.h>
#include <stdint.h>

struct hsrv;
struct hsrv_timer;

struct hsrv_opts {
	const char *listen;    /* interface address; NULL means all */
	int port;              /* 0 picks a free port (see hsrv_port); -1: no listener */
	size_t max_body;       /* request bodies above this get 413; 0 means 1 MiB */
};

struct hsrv_req {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* decoded path without the query */
	const char *query;  /* raw query string without '?', or "" */
	const char *body;   /* NUL-terminated copy of the body, or "" */
	size_t body_len;
	void *conn;         /* opaque; for hsrv_req_header() */
};

struct hsrv_resp {
	int status;              /* defaults to 200 */
	char content_type[64];   /* defaults to application/json */
	char *body;              /* malloc'd; the server frees it */
	size_t body_len;
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

/* Adds a route.  method NULL matches any method.  path is matched exactly,
 * or as a prefix when it ends with '*'.  First match wins; unmatched paths get
 * 404 and a matched path with no handler for its method gets 405, both with a
 * JSON error body.  Returns 0, or -1 with e set. */
int hsrv_route(struct hsrv *srv, const char *method, const char *path, hsrv_handler fn,
	       void *ud, struct err *e);

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

/* Copies request header `name` (case-insensitive, without ':') into out.
 * Returns its length, or -1 when absent or longer than out. */
int hsrv_req_header(const struct hsrv_req *req, const char *name, char *out, size_t len);

/* Response helpers: set status and a body (copied).  hsrv_resp_json takes
 * the reference to v.  hsrv_resp_error writes {"error":{"code","message"}}. */
void hsrv_resp_text(struct hsrv_resp *r, int status, const char *ctype, const char *text);
struct json_t;
void hsrv_resp_json(struct hsrv_resp *r, int status, struct json_t *v);
void hsrv_resp_error(struct hsrv_resp *r, int status, const char *code, const char *message);

#endif
