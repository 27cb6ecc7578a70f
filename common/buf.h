/* Growable byte buffers with a hard size limit.
 *
 * Anything whose size a peer controls (a request body, a response, a line
 * read from a child) is collected in a struct buf, so an oversized input is a
 * clean error (HTTP 413, E2BIG) instead of unbounded memory growth.  The
 * buffer keeps a NUL after its data, so text can be used as a C string
 * without copying; binary data may contain NULs of its own, so `len` is the
 * authority.  A zeroed or BUF_INIT buffer owns no memory until the first
 * append, and buf_free() may be called on it at any time. */
#ifndef CLOCHE_BUF_H
#define CLOCHE_BUF_H

#include "common/err.h"

#include <stddef.h>

struct buf {
	char *data; /* NULL until something is appended; then data[len] == '\0' */
	size_t len; /* bytes held, excluding the trailing NUL */
	size_t cap; /* bytes allocated, including room for the NUL */
	size_t max; /* most bytes len may reach */
};

#define BUF_INIT(limit) {NULL, 0, 0, (limit)}

/* Frees b's memory when the variable goes out of scope. */
#define AUTOBUF __attribute__((cleanup(buf_free)))

/* Makes b an empty buffer that will hold at most max bytes.  Allocates
 * nothing; any memory b owned before is NOT freed (use buf_free first). */
void buf_init(struct buf *b, size_t max);

/* Appends n bytes from p.  When len + n would exceed max, fails with
 * e->code E2BIG and e->http_status 413, and b is unchanged; on allocation
 * failure, ENOMEM.  Returns 0 or -1. */
int buf_append(struct buf *b, const void *p, size_t n, struct err *e);

/* Appends the NUL-terminated string s (without its NUL); as buf_append(). */
int buf_appends(struct buf *b, const char *s, struct err *e);

/* Appends printf-formatted text; as buf_append(), and b is unchanged on
 * failure. */
int buf_appendf(struct buf *b, struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Empties b but keeps its memory for reuse. */
void buf_reset(struct buf *b);

/* Frees b's memory and empties it; max is kept, so b can be reused. */
void buf_free(struct buf *b);

/* Hands b's data to the caller, who frees it with free(), and leaves b empty
 * (max kept).  The result is NUL-terminated; *len (when len is not NULL)
 * receives its length.  An empty buffer gives an allocated "".  Returns
 * NULL only when that allocation fails. */
char *buf_take(struct buf *b, size_t *len);

/* Returns b's contents as a C string: "" when nothing was appended.  The
 * pointer is valid until the next change to b. */
const char *buf_str(const struct buf *b);

#endif
