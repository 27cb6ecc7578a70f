/* Listening TCP sockets for cloche-vnc's two ports.
 *
 * Both the RFB port and the HTTP port are opened here rather than by
 * libvncserver, so that a port already taken is a start-up error with a
 * sentence, and so that an IPv6 --listen address works the same way. */
#ifndef CLOCHE_VNC_NET_H
#define CLOCHE_VNC_NET_H

#include "common/err.h"

#include <stddef.h>

/* Opens a non-blocking, close-on-exec TCP socket listening on the numeric
 * address addr (IPv4 or IPv6) and port.  Returns the fd, which the caller
 * owns, or -1 with e set. */
int vnc_net_listen(const char *addr, int port, struct err *e);

/* Accepts one connection from listen_fd as a non-blocking, close-on-exec
 * fd and writes the peer's numeric address into peer (may be NULL).
 * Returns the fd (caller owns it), or -1: errno EAGAIN when nothing is
 * waiting, anything else is a real error. */
int vnc_net_accept(int listen_fd, char *peer, size_t peer_len);

/* Writes the numeric address of fd's peer ("1.2.3.4:5" or "[::1]:5"). */
void vnc_net_peer(int fd, char *out, size_t len);

#endif
