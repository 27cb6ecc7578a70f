/* HEAD, the first state of a client connection: reads a request head and
 * judges it (see docs/proxy.md, "A request's way", steps 1 to 3).  The
 * admin listener's requests are answered here too (px_admin.c). */
#ifndef PX_REQUEST_H
#define PX_REQUEST_H
#include "proxy/px_conn.h"

/* Reads until a whole head is in c->c2u, parses it into the worker's head
 * and decides: our own answer (px_conn_answer()), or ROUTE with c->route
 * and c->rt set and the head kept in c->c2u for px_upstream.c.  An EOF or
 * error between requests frees c (PX_GONE). */
enum px_step px_request_step_head(struct px_conn *c);

#endif
