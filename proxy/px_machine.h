/* What drives client connections: the worker hands this file the epoll
 * events of client and upstream sockets and its tick, and it runs the
 * steps of the state machine (drawn in px_machine.c) until each
 * connection has to wait. */
#ifndef PX_MACHINE_H
#define PX_MACHINE_H
#include "proxy/px_conn.h"

#include <stdbool.h>
#include <stdint.h>

/* epoll events on a client socket: runs c (which may free it). */
void px_machine_event(struct px_conn *c, uint32_t events);
/* epoll events on an upstream socket: runs the connection that uses it, or
 * closes a kept one that the server closed (or sent stray bytes on). */
void px_machine_up_event(struct px_worker *w, struct px_up *up, uint32_t events);
/* Timeouts, idle upstream expiry, drains, share links that ended and the
 * stop flag: called by the worker once a second and whenever it is poked
 * (then held requests are run again: their route may have an answer). */
void px_machine_tick(struct px_worker *w, bool poked);

#endif
