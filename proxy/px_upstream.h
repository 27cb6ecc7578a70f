/* ROUTE and CONNECT, the states between a judged request head and the
 * exchange: where the sandbox is, and a connection into it (see
 * docs/proxy.md, "A request's way", steps 4 to 6). */
#ifndef PX_UPSTREAM_H
#define PX_UPSTREAM_H
#include "proxy/px_conn.h"

#include "common/err.h"

/* ROUTE: waits (PX_WAIT) while c->rt has no answer, or holds the request
 * (with the wait deadline) while the sandbox starts, wakes or is drained;
 * then writes the upstream head into c->c2u.hdr and goes to PROXY on a kept
 * connection or to CONNECT on a new one (px_upstream_new()).  A gone or
 * failed route, a revoked share link or a bad body is our own answer. */
enum px_step px_upstream_step_route(struct px_conn *c);
/* CONNECT: the node agent's answer (its socket, or an error: a stale route
 * is asked again once, "not ready" holds the request in ROUTE) or the TCP
 * connect's outcome; then PROXY. */
enum px_step px_upstream_step_connect(struct px_conn *c);
/* Starts a new connection to port c->route.port of the sandbox as v says
 * (LOCAL: through the node agent; TCP or REMOTE: to v->addr), registered
 * with the worker and set as c->up, holding its own reference to c->rt.
 * 0, or -1 with e set (http_status 502 when the sandbox is unreachable). */
int px_upstream_new(struct px_conn *c, const struct px_rt_view *v, struct err *e);

#endif
