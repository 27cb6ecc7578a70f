/* The port-connect path: how a process on this node (cloche-proxy, an
 * operator) gets a TCP connection to a port inside a sandbox.
 *
 * The agent listens on a unix socket (default /run/cloche/node.sock, mode
 * 0600).  A client sends one line, `CONNECT <id> <port>\n`; the agent checks
 * the peer is root (SO_PEERCRED) and the sandbox is ready, connects from the
 * sandbox's router netns (na_netns_connect) and answers `OK\n` with the
 * connected socket attached (SCM_RIGHTS), or `ERR <status> <message>\n`
 * with an HTTP-like status (400, 403, 404, 409, 502, 504).  The caller then
 * owns a plain TCP socket to 10.0.2.15:<port> and moves the bytes itself:
 * the agent is on the path only for the set-up. */
#ifndef NA_CONNECT_H
#define NA_CONNECT_H

#include "common/err.h"

#include <stdbool.h>

struct na_node;
struct na_connect;

/* Listens on path (a stale socket file there is replaced; one another
 * process still serves is an error) and serves
 * requests for n's sandboxes on a thread of its own.  NULL with e set. */
struct na_connect *na_connect_start(struct na_node *n, const char *path, struct err *e);

/* Stops serving, removes the socket file and waits (a few seconds at most)
 * for the requests in progress, which use the node.  Returns true when none
 * is left, and frees c; false when some still run: then c stays allocated
 * and the node must not be freed either (exit instead).  NULL is fine. */
bool na_connect_stop(struct na_connect *c);

/* Lets the members of group (a name) use the socket too: it becomes
 * root:group 0660, and a peer whose primary group is that group is served
 * (cloche-proxy running as an unprivileged user with Group= set).  0, or
 * -1 with e set (unknown group, chown failed). */
int na_connect_share(struct na_connect *c, const char *group, struct err *e);

/* Client side: asks the agent at path for a connection to id:port.  Returns
 * the connected socket, or -1 with e set (e->http_status from the agent's
 * answer). */
int na_connect_request(const char *path, const char *id, int port, struct err *e);

/* Client side: copies stdin to fd and fd to stdout until the sandbox side
 * ends; the end of stdin is passed on as a half-close.  0 or -1. */
int na_connect_relay_stdio(int fd, struct err *e);

#endif
