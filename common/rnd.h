/* Randomness for ids, secrets and sampling, from getrandom(2) only: the
 * one place that asks the kernel, so no program grows its own /dev/urandom
 * reader or a clock-and-pid fallback that would hand out guessable ids.
 * Every call blocks until the kernel's pool is ready (at boot) and fails
 * only when the kernel cannot give randomness at all. */
#ifndef CLOCHE_RND_H
#define CLOCHE_RND_H

#include "common/err.h"

#include <stddef.h>

/* Fills the n bytes at out with random bytes, retrying EINTR and short
 * reads.  0, or -1 with e set (e->code the errno). */
int rnd_bytes(void *out, size_t n, struct err *e);

/* Writes prefix (may be "") and then nbytes random bytes as 2 * nbytes
 * lower-case hex digits, with a NUL, into out (len bytes): "sb-" and 8
 * bytes is "sb-" and 16 hex digits.  0, or -1 with e set (ERANGE when
 * out is too small, or no randomness). */
int rnd_hex(const char *prefix, size_t nbytes, char *out, size_t len, struct err *e);

/* A secret for a URL: nbytes (at most 64) random bytes in unpadded
 * base64url ([A-Za-z0-9_-], 4 characters per 3 bytes, see util_token_chars)
 * with a NUL into out (len bytes).  0, or -1 with e set (ERANGE when out is
 * too small or nbytes too big, or no randomness).  The random bytes are
 * wiped before returning. */
int rnd_token(size_t nbytes, char *out, size_t len, struct err *e);

#endif
