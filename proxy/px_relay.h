/* PROXY and TUNNEL, the states that move bytes between a client and a
 * sandbox (see docs/proxy.md, "A request's way", steps 7 and 8). */
#ifndef PX_RELAY_H
#define PX_RELAY_H
#include "proxy/px_conn.h"

/* PROXY: one exchange on c->up: the upstream head and the request body to
 * the sandbox, the response head (rewritten; 1xx passed on; a 101 turns the
 * connection into TUNNEL) and body to the client.  When both messages are
 * done the upstream is kept or closed and c goes to HEAD (the next,
 * maybe pipelined, request) or LINGER.  An upstream that fails before its
 * answer begins is tried once more on a new connection when the request
 * had no body. */
enum px_step px_relay_step_proxy(struct px_conn *c);
/* TUNNEL: bytes both ways, a half-close passed on to the client (the
 * sandbox gets a reset instead), until both sides are done: then frees c. */
enum px_step px_relay_step_tunnel(struct px_conn *c);

#endif
