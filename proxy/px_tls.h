/* Optional HTTPS on the proxy's listeners: one OpenSSL context with the
 * given certificate chain (a wildcard for *.<domain>) and key, and
 * nonblocking reads and writes that say which readiness they wait for.
 * The only file that speaks OpenSSL's TLS API. */
#ifndef PX_TLS_H
#define PX_TLS_H
#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct px_tls;
typedef struct ssl_st px_ssl;

/* TLS 1.2 and 1.3, ALPN http/1.1.  NULL with e set (unreadable files, a
 * key that does not match the certificate). */
struct px_tls *px_tls_new(const char *cert_file, const char *key_file, struct err *e);
void px_tls_free(struct px_tls *t);
/* A server-side session on an accepted socket; NULL when out of memory. */
px_ssl *px_tls_accept(struct px_tls *t, int fd);
/* >0 bytes, 0 the peer ended the session (or the connection), -1 wait
 * (*want_write tells whether for the socket to be writable rather than
 * readable), -2 failed. */
ssize_t px_tls_read(px_ssl *s, void *buf, size_t n, bool *want_write);
ssize_t px_tls_write(px_ssl *s, const void *buf, size_t n, bool *want_read);
/* Sends close_notify (best effort, never blocks). */
void px_tls_shutdown(px_ssl *s);
void px_tls_close(px_ssl *s);

#endif
