/* File digests and MACs (libcrypto). */
#ifndef CLOCHE_DIGEST_H
#define CLOCHE_DIGEST_H

#include "common/err.h"

#include <stddef.h>

/* The SHA-256 of len bytes of fd from off (pread; the offset is left
 * alone), as 64 hex digits and a NUL.  A file shorter than off + len is an
 * error.  0 or -1. */
int digest_sha256_fd(int fd, long long off, long long len, char hex[65], struct err *e);

/* HMAC-SHA256(key, msg) into out.  0, or -1 when libcrypto fails. */
int digest_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
		       unsigned char out[32]);

#endif
