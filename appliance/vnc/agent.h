/* The control socket the agent (mcp-desktop) talks to: the server side of
 * appliance/x11/x11_lease.h, over the lease (lease.h).
 *
 * An "act" connection keeps the agent busy until it closes; a "help"
 * connection waits until a person hands back and is then answered.  All of
 * it runs in cloche-vnc's poll loop: nothing here blocks. */
#ifndef CLOCHE_VNC_AGENT_H
#define CLOCHE_VNC_AGENT_H

#include "lease.h"

#include "common/err.h"

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

struct vnc_agent;

/* Listens on the display's control socket.  NULL with e set (another
 * cloche-vnc serves the display, for one). */
struct vnc_agent *vnc_agent_new(const char *display, struct vnc_lease *lease, struct err *e);

/* Fills up to cap pollfd entries; vnc_agent_process() gets them back. */
size_t vnc_agent_pollfds(struct vnc_agent *a, struct pollfd *fds, size_t cap);

/* Handles poll results, then answers help requests the lease answered. */
void vnc_agent_process(struct vnc_agent *a, const struct pollfd *fds, size_t n, uint64_t now);

/* Answers help requests the lease answered (after a hand-back or a tick). */
void vnc_agent_deliver(struct vnc_agent *a, uint64_t now);

/* Closes every connection (the agent's actions end, help requests are
 * withdrawn) and the socket. */
void vnc_agent_free(struct vnc_agent *a);

#endif
