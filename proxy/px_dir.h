/* One direction of bytes through a client connection (client to sandbox,
 * or back): what was read and not yet written, a head to write before it,
 * and how far the current message reaches, so that keep-alive and
 * pipelined requests stay in step.  The buffer is the worker's (PX_BLOCK
 * bytes) and is held only while bytes are in it.
 *
 * Everything here is static inline: it is the per-byte path of every state
 * that moves bytes (px_request.c reads heads with it, px_relay.c bodies and
 * tunnels, px_conn.c our own answers), and a call across files there would
 * cost what one file used to inline. */
#ifndef PX_DIR_H
#define PX_DIR_H
#include "proxy/px_chunk.h"
#include "proxy/px_head.h"
#include "proxy/px_tls.h"
#include "proxy/px_worker.h"

#include "common/buf.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* One direction of bytes: a buffer of what was read and not yet written,
 * a head to write before it, and how far the current message reaches. */
struct px_dir {
	char *b;           /* PX_BLOCK bytes from the worker, or NULL */
	size_t off, len;   /* unwritten bytes are b[off..len) */
	size_t end;        /* b[off..end) belong to the current message */
	struct buf hdr;    /* written before the data */
	size_t hoff;
	enum px_body frame;
	uint64_t remain;   /* PX_BODY_LENGTH */
	struct px_chunk ck;
	bool framed;       /* the message's last byte is in b (or was written) */
	bool eof;          /* the source is done */
	bool shut;         /* the sink was shut down for writing (tunnels) */
};

/* Gives the buffer back and forgets the head (the connection ends). */
static inline void px_dir_free(struct px_worker *w, struct px_dir *d)
{
	if (d->b)
		px_block_put(w, d->b);
	d->b = NULL;
	d->off = d->len = d->end = 0;
	buf_free(&d->hdr);
	d->hoff = 0;
}

/* Gives the buffer back when nothing is in it (idle connections hold none). */
static inline void px_dir_trim(struct px_worker *w, struct px_dir *d)
{
	if (d->b && d->off == d->len) {
		px_block_put(w, d->b);
		d->b = NULL;
		d->off = d->len = d->end = 0;
	}
}

/* Whether a read has somewhere to go (no buffer yet, or room in it). */
static inline bool px_dir_room(const struct px_dir *d)
{
	return !d->b || d->len < PX_BLOCK || d->off > 0;
}

/* Whether the head and the current message's bytes are all written. */
static inline bool px_dir_flushed(const struct px_dir *d)
{
	return d->hoff == d->hdr.len && d->off == d->end;
}

/* Starts a message of the given framing at b[off]. */
static inline void px_dir_frame(struct px_dir *d, enum px_body frame, uint64_t length)
{
	d->frame = frame;
	d->remain = length;
	d->framed = frame == PX_BODY_NONE;
	d->end = d->off;
	if (frame == PX_BODY_CHUNKED)
		px_chunk_init(&d->ck);
}

/* Takes newly read bytes b[end..len) into the message as far as it goes.
 * 0, or -1 on bad chunked framing. */
static inline int px_dir_classify(struct px_dir *d)
{
	size_t avail = d->len - d->end;

	if (d->framed || avail == 0)
		return 0;
	switch (d->frame) {
	case PX_BODY_NONE:
		d->framed = true;
		break;
	case PX_BODY_LENGTH: {
		size_t k = (uint64_t)avail < d->remain ? avail : (size_t)d->remain;

		d->end += k;
		d->remain -= k;
		d->framed = d->remain == 0;
		break;
	}
	case PX_BODY_CHUNKED: {
		bool done;
		long n = px_chunk_scan(&d->ck, d->b + d->end, avail, &done);

		if (n < 0)
			return -1;
		d->end += (size_t)n;
		d->framed = done;
		break;
	}
	case PX_BODY_CLOSE:
		d->end = d->len;
		break;
	}
	return 0;
}

/* One read from fd, or from the TLS session when ssl is set.  As read(2),
 * with -1/EAGAIN when the socket must become readable (or writable: then
 * *other, the writable flag, is cleared instead). */
static inline ssize_t px_dir_io_read(int fd, px_ssl *ssl, char *b, size_t n, bool *rd,
				     bool *other)
{
	ssize_t r;

	if (!ssl) {
		do
			r = read(fd, b, n);
		while (r == -1 && errno == EINTR);
		if (r == -1 && errno == EAGAIN)
			*rd = false;
		return r;
	}
	{
		bool want_write;

		r = px_tls_read(ssl, b, n, &want_write);
		if (r == -1) {
			if (want_write && other)
				*other = false;
			else
				*rd = false;
			errno = EAGAIN;
		} else if (r == -2) {
			errno = EPROTO;
			r = -1;
		}
	}
	return r;
}

/* Reads from fd (or ssl) into d.  1 bytes came, 0 EOF, -1 wait, -2 error,
 * -3 no buffer, -4 the buffer is full (rd stays set: a write makes room). */
static inline int px_dir_read(struct px_worker *w, struct px_dir *d, int fd, px_ssl *ssl,
			      bool hup, bool *rd, bool *other, uint64_t *count)
{
	ssize_t n;

	if (!d->b) {
		d->b = px_block_get(w);
		if (!d->b)
			return -3;
		d->off = d->len = d->end = 0;
	}
	if (d->len == PX_BLOCK && d->off > 0) {
		memmove(d->b, d->b + d->off, d->len - d->off);
		d->len -= d->off;
		d->end -= d->off;
		d->off = 0;
	}
	if (d->len == PX_BLOCK)
		return -4;
	n = px_dir_io_read(fd, ssl, d->b + d->len, PX_BLOCK - d->len, rd, other);
	if (n > 0) {
		/* A short read emptied the socket: like EAGAIN, the next bytes
		 * (or the FIN) make a new edge, so no read is spent to see it.
		 * Not so for TLS, which may hold a whole record back, nor
		 * once the FIN was reported: it came with this edge, and no
		 * other will say so. */
		if (!ssl && !hup && (size_t)n < PX_BLOCK - d->len)
			*rd = false;
		d->len += (size_t)n;
		if (count)
			*count += (uint64_t)n;
		return 1;
	}
	if (n == 0)
		return 0;
	return errno == EAGAIN ? -1 : -2;
}

/* Writes d's head and message bytes to fd (or ssl).  1 all written, 0 some
 * left (wr cleared, or *other when TLS must read first), -1 error. */
static inline int px_dir_write(struct px_worker *w, struct px_dir *d, int fd, px_ssl *ssl,
			       bool *wr, bool *other, uint64_t *count)
{
	(void)w;
	while (d->hoff < d->hdr.len || d->off < d->end) {
		struct iovec iov[2];
		int n = 0;
		ssize_t r;
		size_t hleft = d->hdr.len - d->hoff;

		if (!*wr)
			return 0;
		if (hleft)
			iov[n++] = (struct iovec){d->hdr.data + d->hoff, hleft};
		if (d->off < d->end)
			iov[n++] = (struct iovec){d->b + d->off, d->end - d->off};
		if (ssl) {
			bool want_read;

			/* one record per call: the head, then the data */
			r = px_tls_write(ssl, iov[0].iov_base, iov[0].iov_len, &want_read);
			if (r == -1) {
				if (want_read && other)
					*other = false;
				else
					*wr = false;
				return 0;
			}
			if (r < 0)
				return -1;
		} else {
			do
				r = writev(fd, iov, n);
			while (r == -1 && errno == EINTR);
			if (r == -1) {
				if (errno == EAGAIN) {
					*wr = false;
					return 0;
				}
				return -1;
			}
		}
		if ((size_t)r <= hleft) {
			d->hoff += (size_t)r;
		} else {
			d->hoff = d->hdr.len;
			d->off += (size_t)r - hleft;
			if (count)
				*count += (uint64_t)r - hleft;
		}
	}
	if (d->b && d->off == d->len)
		d->off = d->len = d->end = 0;
	return 1;
}

#endif
