/* File digests (libcrypto). */
#ifndef CLOCHE_DIGEST_H
#define CLOCHE_DIGEST_H

#include "common/err.h"

/* The SHA-256 of len bytes of fd from off (pread; the offset is left
 * alone), as 64 hex digits and a NUL.  A file shorter than off + len is an
 * error.  0 or -1. */
int digest_sha256_fd(int fd, long long off, long long len, char hex[65], struct err *e);

#endif
