/* The census a checkpoint needs: TCP connections of the sandbox that go
 * through its network interface.  runsc refuses to checkpoint a sandbox
 * with one open, and a refused checkpoint kills the sandbox, so the node
 * agent asks cloche-init (GET /connections on the health port) right
 * before it checkpoints.  Loopback connections and listening sockets are
 * saved with the sandbox and do not count. */
#ifndef INIT_NETCHECK_H
#define INIT_NETCHECK_H

#include <jansson.h>

/* Counts the open entries of a /proc/net/tcp or /proc/net/tcp6 text:
 * every state but LISTEN, TIME_WAIT and CLOSE whose local address is not
 * loopback, leaving out the asker's own connection (local port self_local,
 * remote port self_remote; -1 for none).  Appends up to 32 of them to list
 * as {local, remote, state} (list may be NULL).  Returns the count. */
int netcheck_scan(const char *text, int self_local, int self_remote, json_t *list);

#endif
