/* HTTP/1.1 with the servers inside a sandbox (cloche-init's health port,
 * mcp-desktop, cloche-rec, cloche-vnc), on a connection na_ghttp_connect()
 * opened into the sandbox's netns: one request, one answer with a
 * Content-Length, the connection kept for the next one.  The connection
 * closes with a reset (SO_LINGER {1,0}), so no TIME_WAIT is left inside to
 * refuse a checkpoint (docs/hibernation.md). */
#ifndef CLOCHE_NA_GHTTP_H
#define CLOCHE_NA_GHTTP_H

#include "common/buf.h"
#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>

/* The ports of the servers in a sandbox the node speaks to. */
#define NA_HEALTH_PORT 8080  /* cloche-init's health */
#define NA_DESKTOP_PORT 8100 /* mcp-desktop */
#define NA_REC_PORT 8070     /* cloche-rec */
#define NA_VNC_PORT 6080     /* cloche-vnc's web port */

/* A connection to port in sandbox id's netns (na_netns_connect, within
 * connect_ms), set to close with a reset and to give up on a read or a
 * write after io_s seconds.  The fd, or -1 with e set. */
int na_ghttp_connect(const char *id, int port, int connect_ms, int io_s, struct err *e);

/* Sends `method path` to 10.0.2.15:port with the extra header lines hdrs
 * ("Name: value\r\n" each, may be "") and body (NULL: none), then reads the
 * answer (at most max bytes of body) into out; *bodyp points at its body.
 * Returns the HTTP status, or -1 with e set (a streamed answer is an
 * error). */
int na_ghttp_exchange(int fd, const char *method, const char *path, int port, const char *hdrs,
		      const char *body, size_t max, struct buf *out, const char **bodyp,
		      struct err *e);

/* The value of header name in the head of an answer (NUL-terminated, up to
 * its blank line) into out.  False when absent, empty or too long. */
bool na_ghttp_header(const char *head, const char *name, char *out, size_t len);

#endif
