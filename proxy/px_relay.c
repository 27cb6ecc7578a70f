/* PROXY and TUNNEL: moving bytes; see px_relay.h.
 *
 * An exchange passes the request body and the response on as they come,
 * framed only as far as needed to know where each message ends (an SSE
 * stream is a response whose body never ends); after a 101 the connection
 * is a plain two-way tunnel (WebSocket) with no framing work.  This is the
 * per-byte path: it calls px_dir.h's inline helpers only, and the worker
 * and the other states only when a message begins or ends. */
#include "proxy/px_relay.h"
#include "proxy/px_rewrite.h"
#include "proxy/px_upstream.h"

#include <stdio.h>
#include <sys/socket.h>

/* ---- PROXY: one exchange ---- */

/* The upstream broke before any of its answer arrived: a request without a
 * body on a kept connection goes again on a fresh one. */
static enum px_step retry_or_fail(struct px_conn *c, const char *what)
{
	char msg[200];

	if (c->retry_ok && !c->resp_head && c->u2c.len == c->u2c.off && !c->retried &&
	    c->c2u.hdr.len) {
		struct err e = ERR_INIT;

		/* The same upstream head again (it is kept until an answer
		 * begins; the request's own bytes may be gone from c2u). */
		c->retried = true;
		px_up_close(c->w, c->up);
		c->up = NULL;
		c->c2u.hoff = 0;
		c->u2c.eof = false;
		if (px_upstream_new(c, &c->view, &e) == -1)
			return px_conn_answer(c, 502, "upstream_unreachable", e.msg, NULL);
		c->st = PX_CS_CONNECT;
		c->deadline = c->w->now + (uint64_t)c->w->p->s.connect_timeout_ms;
		return PX_AGAIN;
	}
	snprintf(msg, sizeof(msg), "the sandbox's server %s (port %d)", what, c->route.port);
	return px_conn_answer(c, 502, "upstream_failed", msg, NULL);
}

static enum px_step finish(struct px_conn *c)
{
	struct px_worker *w = c->w;
	struct px_proxy *p = w->p;
	bool reuse = c->up && c->resp_keep && c->c2u.framed && c->u2c.frame != PX_BODY_CLOSE &&
		     c->u2c.len == c->u2c.off && !c->u2c.eof && !atomic_load(&p->stopping) &&
		     atomic_load(&c->rt->drain_until_ms) <= w->now;

	if (c->up) {
		if (reuse)
			px_idle_put(w, c->up);
		else
			px_up_close(w, c->up);
		c->up = NULL;
	}
	buf_reset(&c->c2u.hdr);
	c->c2u.hoff = 0;
	buf_reset(&c->u2c.hdr);
	c->u2c.hoff = 0;
	if (c->u2c.b) /* anything past the response is not the client's */
		c->u2c.off = c->u2c.len = c->u2c.end = 0;
	px_dir_trim(w, &c->u2c);
	c->u2c.eof = false;
	if (!c->c2u.framed || c->close_after || !c->keep) {
		c->st = PX_CS_LINGER;
		return PX_AGAIN;
	}
	/* The next request (maybe already here, pipelined) starts at end. */
	c->c2u.off = c->c2u.end;
	px_dir_trim(w, &c->c2u);
	c->st = PX_CS_HEAD;
	c->deadline = w->now + (uint64_t)(c->c2u.b ? p->s.head_timeout_ms : p->s.idle_timeout_ms);
	return PX_AGAIN;
}

/* Parses response heads in u2c (1xx ones pass through as they are). */
static enum px_step resp_head(struct px_conn *c, bool *more)
{
	struct px_proxy *p = c->w->p;
	struct px_dir *d = &c->u2c;
	struct px_head *h = px_conn_head(c);
	struct err e = ERR_INIT;
	const char *why = NULL;
	enum px_head_result r;

	*more = false;
	while (!c->resp_head && d->len > d->off) {
		r = px_resp_parse(d->b + d->off, d->len - d->off, c->head_method, h, &why);
		if (r == PX_HEAD_PARTIAL) {
			if (d->len - d->off >= PX_BLOCK / 2)
				return px_conn_answer(c, 502, "bad_response",
						      "the sandbox's server sent a response head that is too large",
						      NULL);
			*more = true;
			return PX_WAIT;
		}
		if (r != PX_HEAD_OK) {
			char msg[200];

			snprintf(msg, sizeof(msg), "the sandbox's server sent a malformed response (%s)",
				 why ? why : "?");
			return px_conn_answer(c, 502, "bad_response", msg, NULL);
		}
		c->status = h->status;
		if (h->status == 101) {
			if (!c->upgrade)
				return px_conn_answer(c, 502, "bad_response",
						      "the sandbox's server switched protocols unasked", NULL);
			if (buf_append(&d->hdr, d->b + d->off, h->len, &e) == -1)
				return px_conn_answer(c, 502, "bad_response", e.msg, NULL);
			d->off += h->len;
			d->end = d->off;
			c->resp_head = true;
			c->st = PX_CS_TUNNEL;
			c->deadline = c->w->now + (uint64_t)p->s.tunnel_timeout_ms;
			c->c2u.frame = c->u2c.frame = PX_BODY_CLOSE;
			c->c2u.framed = c->u2c.framed = false;
			c->c2u.end = c->c2u.len > c->c2u.off ? c->c2u.len : c->c2u.off;
			d->end = d->len;
			atomic_fetch_add(&p->st.tunnels, 1);
			atomic_fetch_add(&p->st.tunnels_open, 1);
			atomic_fetch_add(&p->st.status[1], 1);
			return PX_AGAIN;
		}
		if (h->status < 200) {
			/* 100 Continue and friends: pass on (not to an HTTP/1.0
			 * client, which knows none), read the next head. */
			if (c->minor == 1) {
				if (buf_append(&d->hdr, d->b + d->off, h->len, &e) == -1)
					return px_conn_answer(c, 502, "bad_response", e.msg, NULL);
				c->sent = true;
			}
			d->off += h->len;
			d->end = d->off;
			continue;
		}
		c->resp_head = true;
		c->resp_keep = h->keep_alive;
		if (h->body == PX_BODY_CLOSE || atomic_load(&p->stopping))
			c->close_after = true;
		if (!c->c2u.framed) /* answered before the request was all sent */
			c->close_after = true;
		if (px_rewrite_resp(h, c->keep && !c->close_after, c->minor, &d->hdr, &e) == -1)
			return px_conn_answer(c, 502, "bad_response", e.msg, NULL);
		atomic_fetch_add(&p->st.status[h->status / 100], 1);
		d->off += h->len;
		px_dir_frame(d, h->body, h->content_length);
		/* The request head is no longer needed for a retry. */
		buf_reset(&c->c2u.hdr);
		c->c2u.hoff = 0;
		c->retry_ok = false;
		c->sent = true;
		if (px_dir_classify(d) == -1)
			return px_conn_answer(c, 502, "bad_response", "malformed chunked response", NULL);
	}
	return PX_AGAIN;
}

enum px_step px_relay_step_proxy(struct px_conn *c)
{
	struct px_worker *w = c->w;
	struct px_proxy *p = w->p;
	struct px_up *up = c->up;
	bool progress = true;

	while (progress) {
		int r;
		uint64_t in = 0, out = 0;

		progress = false;
		/* client -> sandbox */
		if (!px_dir_flushed(&c->c2u)) {
			size_t before = c->c2u.off + c->c2u.hoff;

			r = px_dir_write(w, &c->c2u, up->fd, NULL, &up->wr, NULL, &in);
			if (r == -1)
				return retry_or_fail(c, "closed the connection");
			progress |= c->c2u.off + c->c2u.hoff != before;
		}
		if (!c->c2u.framed && c->rd && px_dir_room(&c->c2u)) {
			r = px_dir_read(w, &c->c2u, c->fd, c->ssl, c->hup, &c->rd, &c->wr, NULL);
			if (r == 1) {
				if (px_dir_classify(&c->c2u) == -1) {
					c->keep = false;
					return px_conn_answer(c, 400, "bad_chunked", "malformed chunked request body",
							      NULL);
				}
				progress = true;
			} else if (r == 0 || r == -2) {
				px_conn_free(c); /* the client left in the middle of its body */
				return PX_GONE;
			}
		}
		/* sandbox -> client */
		if (!px_dir_flushed(&c->u2c)) {
			size_t before = c->u2c.off + c->u2c.hoff;

			r = px_dir_write(w, &c->u2c, c->fd, c->ssl, &c->wr, &c->rd, &out);
			if (r == -1) {
				px_conn_free(c);
				return PX_GONE;
			}
			progress |= c->u2c.off + c->u2c.hoff != before;
		}
		if (!c->u2c.framed && !c->u2c.eof && up->rd && px_dir_room(&c->u2c)) {
			r = px_dir_read(w, &c->u2c, up->fd, NULL, up->hup, &up->rd, NULL, NULL);
			if (r == 1) {
				progress = true;
				if (!c->resp_head) {
					bool more;
					enum px_step s = resp_head(c, &more);

					if (c->st != PX_CS_PROXY || s == PX_GONE)
						return s;
				} else if (px_dir_classify(&c->u2c) == -1) {
					return px_conn_answer(c, 502, "bad_response", "malformed chunked response",
							      NULL);
				}
			} else if (r == 0 || r == -2) {
				c->u2c.eof = true;
				if (!c->resp_head)
					return retry_or_fail(c, r ? "reset the connection"
								  : "closed without answering");
				if (c->u2c.frame == PX_BODY_CLOSE) {
					c->u2c.framed = true;
				} else if (!c->u2c.framed) {
					/* cut short: pass on what came, then cut the client */
					c->close_after = true;
					c->keep = false;
					(void)px_dir_write(w, &c->u2c, c->fd, c->ssl, &c->wr, &c->rd, &out);
					px_conn_free(c);
					return PX_GONE;
				}
				progress = true;
			}
		}
		if (in || out) {
			atomic_fetch_add(&c->rt->bytes_in, in);
			atomic_fetch_add(&c->rt->bytes_out, out);
			atomic_fetch_add(&p->st.bytes_in, in);
			atomic_fetch_add(&p->st.bytes_out, out);
			atomic_store(&c->rt->last_seen_ms, w->now);
			c->deadline = w->now + (uint64_t)p->s.read_timeout_ms;
		}
		if (c->resp_head && c->u2c.framed && px_dir_flushed(&c->u2c) &&
		    (c->c2u.framed ? px_dir_flushed(&c->c2u) : true))
			return finish(c);
	}
	return PX_WAIT;
}

/* ---- TUNNEL: bytes both ways until both sides are done ---- */

/* One direction of a tunnel: src (read readiness src_rd, TLS src_ssl) to
 * dst.  The other readiness flags are what a TLS session may want instead. */
struct end {
	int fd;
	px_ssl *ssl;
	bool hup;
	bool *rd, *wr;
};

static enum px_step tunnel_dir(struct px_conn *c, struct px_dir *d, struct end src, struct end dst,
			       uint64_t *count, bool from_up, bool *progress)
{
	struct px_worker *w = c->w;

	for (;;) {
		int r;

		if (d->hoff < d->hdr.len || d->off < d->len) {
			size_t before = d->off + d->hoff;

			d->end = d->len;
			r = px_dir_write(w, d, dst.fd, dst.ssl, dst.wr, dst.rd, count);
			if (r == -1)
				return PX_GONE;
			*progress |= d->off + d->hoff != before;
			if (r == 0)
				break;
		}
		if (d->eof) {
			if (!d->shut && from_up) {
				if (dst.ssl)
					px_tls_shutdown(dst.ssl);
				shutdown(dst.fd, SHUT_WR);
			} else if (!d->shut) {
				/* The client is done: the upstream gets no FIN (see
				 * px_upstream.c's no_fin) but the reset that ends
				 * the tunnel once what the client sent is out (a
				 * WebSocket has its own closing handshake; a
				 * half-closed one has no use). */
				c->u2c.eof = true;
			}
			d->shut = true;
			break;
		}
		if (!*src.rd)
			break;
		r = px_dir_read(w, d, src.fd, src.ssl, src.hup, src.rd, src.wr, NULL);
		if (r == 1) {
			d->end = d->len;
			*progress = true;
			continue;
		}
		if (r == 0 || r == -2) {
			d->eof = true;
			continue;
		}
		break;
	}
	px_dir_trim(w, d);
	if (d->hoff == d->hdr.len && d->hdr.data) {
		buf_free(&d->hdr);
		d->hoff = 0;
	}
	return PX_AGAIN;
}

enum px_step px_relay_step_tunnel(struct px_conn *c)
{
	struct px_worker *w = c->w;
	struct px_proxy *p = w->p;
	struct px_up *up = c->up;
	uint64_t in = 0, out = 0;
	bool progress = false;

	struct end cl = {c->fd, c->ssl, c->hup, &c->rd, &c->wr},
		   sb = {up->fd, NULL, up->hup, &up->rd, &up->wr};

	if (tunnel_dir(c, &c->u2c, sb, cl, &out, true, &progress) == PX_GONE ||
	    tunnel_dir(c, &c->c2u, cl, sb, &in, false, &progress) == PX_GONE ||
	    (c->c2u.eof && c->u2c.eof && px_dir_flushed(&c->c2u) && px_dir_flushed(&c->u2c))) {
		px_conn_free(c);
		return PX_GONE;
	}
	if (in || out || progress) {
		atomic_fetch_add(&c->rt->bytes_in, in);
		atomic_fetch_add(&c->rt->bytes_out, out);
		atomic_fetch_add(&p->st.bytes_in, in);
		atomic_fetch_add(&p->st.bytes_out, out);
		atomic_store(&c->rt->last_seen_ms, w->now);
		c->deadline = w->now + (uint64_t)p->s.tunnel_timeout_ms;
	}
	return PX_WAIT;
}
