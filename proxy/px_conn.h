/* Client connections: the request/response state machine of the proxy.
 *
 * A connection reads one request head (bounded, timed), decides from it
 * alone (Host -> sandbox and port, token -> allowed or not), gets a
 * connection into the sandbox (a kept one, or a new one through the node
 * agent's socket or to the owning node's proxy), writes the rewritten head
 * and then moves bytes: the request body and the response as they come,
 * framed only as far as needed to know where each message ends (so
 * keep-alive and pipelined requests stay in step), and after a 101 as a
 * plain two-way tunnel.  Buffers are taken from the worker only while
 * bytes are in flight, so an idle connection costs its struct and fds. */
#ifndef PX_CONN_H
#define PX_CONN_H
#include "proxy/px_worker.h"

#include "common/buf.h"

#include <stdbool.h>
#include <stdint.h>

/* Takes over an accepted socket (admin: from the admin listener). */
void px_conn_accept(struct px_worker *w, int fd, bool admin);
/* epoll events on a client socket or on an upstream one. */
void px_conn_event(struct px_conn *c, uint32_t events);
void px_up_event(struct px_worker *w, struct px_up *up, uint32_t events);
/* Timeouts, idle upstream expiry, drains and the stop flag: called by the
 * worker once a second and whenever it is poked. */
void px_conn_tick(struct px_worker *w, bool poked);
/* Closes everything of the worker (the end of a shutdown). */
void px_conn_close_all(struct px_worker *w);

/* The admin endpoints (px_admin.c): answers a parsed admin request into
 * out.  Never blocks. */
struct px_head;
void px_admin_answer(struct px_proxy *p, const struct px_head *h, struct buf *out);

#endif
