/* HTTP/1.1 with the servers inside a sandbox (cloche-init's health port,
 * mcp-desktop, cloche-rec), on a connection the caller opened into the
 * sandbox's netns: one request,
 * one answer with a Content-Length, the connection kept for the next one.
 * The caller closes it with a reset (SO_LINGER {1,0}), so no TIME_WAIT is
 * left inside to refuse a checkpoint (docs/hibernation.md). */
#ifndef CLOCHE_NA_GHTTP_H
#define CLOCHE_NA_GHTTP_H

#include "common/buf.h"
#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>

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
