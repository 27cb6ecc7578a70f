/* Network namespaces of sandboxes: the only file that touches netns.
 *
 * Sandbox <id> owns two named namespaces (/var/run/netns):
 *   S-<id>  the sandbox's; eth0 10.0.2.15/24, default route via 10.0.2.2.
 *           gVisor takes eth0's addresses into its netstack when it starts.
 *   R-<id>  its router; veth0 10.0.2.2/24, the peer of eth0.
 * Host code reaches a sandbox port by a socket created inside R-<id>. */
#ifndef NA_NETNS_H
#define NA_NETNS_H

#include "common/err.h"

#include <stdbool.h>

#define NA_INNER_ADDR "10.0.2.15"
#define NA_ROUTER_ADDR "10.0.2.2"

/* Writes the path of the sandbox netns of id ("/var/run/netns/S-<id>"). */
void na_netns_path(const char *id, char kind, char *out, size_t len);

/* Creates S-<id> and R-<id> with the veth pair, addresses and routes.  On
 * failure nothing of it is left.  0 or -1 with e set. */
int na_netns_create(const char *id, struct err *e);

/* Deletes both namespaces; absent ones are fine.  0 or -1. */
int na_netns_destroy(const char *id, struct err *e);

/* True when S-<id> exists. */
bool na_netns_exists(const char *id);

/* A listening TCP socket bound to 10.0.2.2:port inside R-<id> (non-blocking,
 * CLOEXEC; created like na_netns_connect's).  The egress proxy serves it.
 * Returns the fd the caller owns, or -1 with e set. */
int na_netns_listen(const char *id, int port, struct err *e);

/* Opens a TCP connection from R-<id> to 10.0.2.15:port, waiting at most
 * timeout_ms for it.  The socket is created on a short-lived thread that
 * entered R-<id> (the namespace of a socket is fixed at creation), so the
 * caller's thread never changes namespace.  Returns a connected fd the
 * caller owns (blocking, CLOEXEC), or -1 with e set. */
int na_netns_connect(const char *id, int port, int timeout_ms, struct err *e);

#endif
