/* Listening sockets handed down by cloche-init (docs/init.md, "listen").
 *
 * init binds some ports once and passes them to every run of a service as
 * fds 3, 4, ... with LISTEN_FDS=n in its environment (systemd's layout,
 * without LISTEN_PID: init builds the environment before it forks).  A
 * server asks for its port here and, when it gets a socket, accepts on it
 * instead of binding: the port then stays init's across the server's
 * restarts, so nothing else in the sandbox can take it in the gap.
 * Outside a sandbox (tests, a developer's shell) there is no LISTEN_FDS and
 * every server binds as before. */
#ifndef CLOCHE_LISTENFD_H
#define CLOCHE_LISTENFD_H

/* The inherited listening TCP socket bound to port, non-blocking (for an
 * event loop's accept), or -1 when there is none.  The first call reads
 * LISTEN_FDS, marks every inherited socket close-on-exec (a child of the
 * server must not hold the port) and removes LISTEN_FDS from the
 * environment; each socket is handed out once.  For
 * start-up code on the main thread. */
int listenfd_take(int port);

#endif
