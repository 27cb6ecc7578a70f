/* Where a chunked body ends, found without decoding it.
 *
 * The proxy passes chunked bodies on as they are (chunk sizes and all) and
 * only needs to know which bytes belong to the message, so that the next
 * request or response on the same connection starts at the right byte.  A
 * px_chunk walks the framing incrementally: chunk-size lines (hex, at most
 * 16 digits, extensions bounded), data, CRLFs, the last chunk and the
 * trailer section (bounded).  Anything else is an error, never a guess. */
#ifndef PX_CHUNK_H
#define PX_CHUNK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PX_CHUNK_EXT_MAX 4096      /* bytes of extensions on one size line */
#define PX_CHUNK_TRAILER_MAX 16384 /* bytes of the trailer section */

struct px_chunk {
	int st;            /* internal state; 0 = at a chunk-size line */
	uint64_t n;        /* size being read, or data bytes left */
	unsigned digits;
	size_t ext;        /* bytes of extensions or trailers so far */
};

/* Starts a new body. */
void px_chunk_init(struct px_chunk *c);
/* Scans the next len bytes of the body.  Returns how many of them belong
 * to it (all of them, or fewer when its end is among them: then *done is
 * set), or -1 when the framing is malformed or over a bound. */
long px_chunk_scan(struct px_chunk *c, const char *buf, size_t len, bool *done);

#endif
