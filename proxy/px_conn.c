/* The connection state machine; see px_conn.h.
 *
 *	HEAD -> ROUTE -> CONNECT -> PROXY -> HEAD (keep-alive) ...
 *	                                  -> TUNNEL (after 101)
 *	any -> ANSWER (the proxy's own answer) -> HEAD or LINGER -> closed
 *
 * Every state has a step function that makes what progress it can and
 * says whether to run again (the state changed), wait for an event, or
 * stop (the connection is gone).  Sockets are edge-triggered: c->rd/c->wr
 * (and up->rd/up->wr) remember readiness until a call says EAGAIN. */

#include "proxy/px_conn.h"
#include "proxy/px_answer.h"
#include "proxy/px_chunk.h"
#include "proxy/px_head.h"
#include "proxy/px_host.h"
#include "proxy/px_rewrite.h"
#include "proxy/px_tls.h"

#include "common/log.h"
#include "common/sbtoken.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define LINGER_MS 2000 /* reading what a client still sends after our last answer */

enum cst { CS_HEAD, CS_ROUTE, CS_CONNECT, CS_PROXY, CS_TUNNEL, CS_ANSWER, CS_LINGER };
enum step { AGAIN, WAIT, GONE };

/* One direction of bytes: a buffer of what was read and not yet written,
 * a head to write before it, and how far the current message reaches. */
struct dir {
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

struct px_conn {
	struct px_ev ev;
	struct px_worker *w;
	int fd;
	px_ssl *ssl;         /* HTTPS: the client's TLS session, or NULL */
	bool rd, wr, admin;
	bool hup;            /* the client's FIN (or an error) was reported */
	char addr[48];       /* the client's address, as X-Forwarded-For gives it */
	char peer[48];       /* the socket's peer */
	enum cst st;
	struct dir c2u, u2c;
	size_t head_len;     /* of the request head at c2u.b + c2u.off */
	bool head_ok;        /* w's scratch head is this request's (same call) */
	int minor;           /* the request's HTTP/1.minor */
	bool keep, upgrade, head_method, html, tls;
	bool resp_head;      /* the response head has been parsed */
	bool resp_keep;      /* the server keeps the connection */
	bool sent;           /* response bytes went to the client */
	bool close_after;    /* close the client after this answer */
	bool retry_ok;       /* the request may go again on a fresh connection */
	bool retried;
	uint64_t hold_until; /* held because its node said "not ready": until then */
	bool consumed;       /* the request head was taken out of c2u */
	bool lingering;
	bool waiting;        /* held in ROUTE with a deadline set */
	struct px_route route;
	struct px_rt *rt;    /* a reference while the connection is on a sandbox */
	struct px_rt_view view; /* rt's answer as of view_gen (no lock per request) */
	unsigned view_gen;
	bool have_view;
	unsigned drain_gen;
	struct px_up *up;
	uint64_t deadline;
	int status;
	char tok[SHTOKEN_MAX]; /* the last token this connection proved */
	/* when that token is a share link's: its id ("" otherwise), mode,
	 * expiry (unix s), and the route's revocations seen */
	char share[40];
	char share_mode;
	long long share_exp;
	unsigned share_gen;
	struct px_conn *prev, *next;
};

/* The worker's one parsed head: a request's from on_request() until its
 * upstream head is built in the same run (head_ok), or a response's. */
static struct px_head *whead(struct px_conn *c)
{
	return &c->w->head;
}

/* ---- small helpers ---- */

static void dir_free(struct px_worker *w, struct dir *d)
{
	if (d->b)
		px_block_put(w, d->b);
	d->b = NULL;
	d->off = d->len = d->end = 0;
	buf_free(&d->hdr);
	d->hoff = 0;
}

/* Gives the buffer back when nothing is in it (idle connections hold none). */
static void dir_trim(struct px_worker *w, struct dir *d)
{
	if (d->b && d->off == d->len) {
		px_block_put(w, d->b);
		d->b = NULL;
		d->off = d->len = d->end = 0;
	}
}

static bool dir_room(const struct dir *d)
{
	return !d->b || d->len < PX_BLOCK || d->off > 0;
}

static bool dir_flushed(const struct dir *d)
{
	return d->hoff == d->hdr.len && d->off == d->end;
}

/* Starts a message of the given framing at b[off]. */
static void dir_frame(struct dir *d, enum px_body frame, uint64_t length)
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
static int dir_classify(struct dir *d)
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
static ssize_t io_read(int fd, px_ssl *ssl, char *b, size_t n, bool *rd, bool *other)
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
static int dir_read(struct px_worker *w, struct dir *d, int fd, px_ssl *ssl, bool hup, bool *rd,
		    bool *other, uint64_t *count)
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
	n = io_read(fd, ssl, d->b + d->len, PX_BLOCK - d->len, rd, other);
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
static int dir_write(struct px_worker *w, struct dir *d, int fd, px_ssl *ssl, bool *wr,
		     bool *other, uint64_t *count)
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

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl != -1)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- lifecycle ---- */

/* Whether c holds a request for its sandbox: the route's count of held
 * requests is what makes the resolver ask the portal for a wake. */
static void set_waiting(struct px_conn *c, bool on)
{
	if (c->waiting == on)
		return;
	c->waiting = on;
	if (c->rt)
		atomic_fetch_add(&c->rt->held, on ? 1 : -1);
}

static void rt_leave(struct px_conn *c)
{
	set_waiting(c, false);
	if (c->rt) {
		atomic_fetch_sub(&c->rt->conns, 1);
		px_rt_put(c->w->p->routes, c->rt);
		c->rt = NULL;
	}
}

static void conn_free(struct px_conn *c)
{
	struct px_worker *w = c->w;

	if (c->up)
		px_up_close(w, c->up);
	c->up = NULL;
	if (c->st == CS_TUNNEL)
		atomic_fetch_sub(&w->p->st.tunnels_open, 1);
	rt_leave(c);
	if (c->ssl)
		px_tls_close(c->ssl);
	c->ssl = NULL;
	if (c->fd >= 0)
		close(c->fd);
	if (!c->admin)
		px_addr_give(w->p, c->peer);
	dir_free(w, &c->c2u);
	dir_free(w, &c->u2c);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	atomic_fetch_sub(&w->p->st.conns, 1);
	c->ev.kind = PX_EV_DEAD;
	c->fd = -1;
	px_worker_defer_free(w, c);
}

static bool peer_trusted(const struct px_proxy *p, const char *peer)
{
	const char *s = p->s.trusted_peers;
	size_t n = strlen(peer);

	while (s && *s) {
		const char *end = strchr(s, ',');
		size_t l = end ? (size_t)(end - s) : strlen(s);

		if (l == n && strncmp(s, peer, n) == 0)
			return true;
		s = end ? end + 1 : NULL;
	}
	return false;
}

void px_conn_accept(struct px_worker *w, int fd, bool admin)
{
	struct px_proxy *p = w->p;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct px_conn *c;
	int one = 1;

	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->ev.kind = PX_EV_CLIENT;
	c->w = w;
	c->fd = fd;
	c->admin = admin;
	c->wr = true;
	buf_init(&c->c2u.hdr, 64 << 10);
	buf_init(&c->u2c.hdr, 64 << 10);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->peer,
				  sizeof(c->peer));
		else if (ss.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->peer,
				  sizeof(c->peer));
	}
	snprintf(c->addr, sizeof(c->addr), "%s", c->peer[0] ? c->peer : "unknown");
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	atomic_fetch_add(&p->st.conns, 1);
	atomic_fetch_add(&p->st.accepted, 1);
	c->st = CS_HEAD;
	c->deadline = w->now + (uint64_t)p->s.head_timeout_ms;
	if (!admin && (atomic_load(&p->st.conns) > p->s.max_conns || !px_addr_take(p, c->peer))) {
		/* Over a limit: a short 503 and close.  Counted against nothing. */
		c->peer[0] = '\0';
		if (!admin)
			c->admin = true; /* nothing to give back at close */
		atomic_fetch_add(&p->st.refused_limit, 1);
		static const char full[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
					   "Retry-After: 1\r\nConnection: close\r\n\r\n";

		if (!p->s.tls)
			(void)send(fd, full, sizeof(full) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		conn_free(c);
		return;
	}
	if (!admin && p->s.tls) {
		c->ssl = px_tls_accept(p->s.tls, fd);
		c->tls = true;
		if (!c->ssl) {
			conn_free(c);
			return;
		}
	}
	if (px_worker_watch(w, fd, &c->ev) == -1)
		conn_free(c);
}

/* ---- answers of our own ---- */

static enum step answer(struct px_conn *c, int status, const char *code, const char *msg,
			const char *headers)
{
	struct px_proxy *p = c->w->p;
	struct err e = ERR_INIT;
	struct px_answer a = {.status = status, .code = code, .message = msg, .html = c->html,
			      .headers = headers};

	if (status >= 500 || status == 408 || status == 400 || status == 431 || status == 413)
		log_info("refused a request", "{s:i, s:s, s:s, s:s, s:s}", "status", status, "code",
			 code, "message", msg, "client", c->addr, "sandbox", c->route.id);
	else
		log_debug("refused a request", "{s:i, s:s, s:s, s:s}", "status", status, "code", code,
			  "message", msg, "client", c->addr);
	/* Keep the connection only when the request ended with its head. */
	if (c->st != CS_HEAD && c->st != CS_ROUTE)
		c->close_after = true;
	if (c->c2u.frame != PX_BODY_NONE || c->sent || c->upgrade || !c->keep ||
	    atomic_load(&p->stopping))
		c->close_after = true;
	a.keep_alive = !c->close_after;
	if (!c->close_after && !c->consumed) {
		/* the head was all of the request: the next one starts after it */
		c->c2u.off += c->head_len;
		c->consumed = true;
	}
	c->c2u.end = c->c2u.off;
	if (c->up) {
		px_up_close(c->w, c->up);
		c->up = NULL;
	}
	c->status = status;
	atomic_fetch_add(&p->st.status[status / 100], 1);
	if (c->sent) {
		/* The client has part of a response: all that can be done is to cut it. */
		c->st = CS_LINGER;
		return AGAIN;
	}
	buf_reset(&c->u2c.hdr);
	c->u2c.hoff = 0;
	if (c->u2c.b)
		c->u2c.off = c->u2c.len = c->u2c.end = 0;
	if (px_answer_build(&a, &c->u2c.hdr, &e) == -1) {
		c->close_after = true;
		c->st = CS_LINGER;
		return AGAIN;
	}
	c->st = CS_ANSWER;
	return AGAIN;
}

/* ---- HEAD: read and judge a request head ---- */

static enum step on_request(struct px_conn *c);

static enum step step_head(struct px_conn *c)
{
	struct px_proxy *p = c->w->p;
	struct dir *d = &c->c2u;

	for (;;) {
		const char *why = NULL;
		enum px_head_result r = PX_HEAD_PARTIAL;
		int n;

		if (d->b && d->len > d->off) {
			size_t avail = d->len - d->off;

			r = px_head_parse(d->b + d->off, avail, whead(c), &why);
			if (r == PX_HEAD_OK) {
				if (whead(c)->len > p->s.head_max) {
					c->keep = false;
					return answer(c, 431, "head_too_large",
						      "the request head is larger than this proxy takes",
						      NULL);
				}
				c->head_len = whead(c)->len;
				c->head_ok = true;
				return on_request(c);
			}
			c->keep = false;
			if (r == PX_HEAD_BAD) {
				atomic_fetch_add(&p->st.bad_requests, 1);
				return answer(c, 400, "bad_request", why, NULL);
			}
			if (r == PX_HEAD_TOO_MANY)
				return answer(c, 431, "too_many_headers", why, NULL);
			if (r == PX_HEAD_UNSUPPORTED)
				return answer(c, strstr(why, "HTTP/1") ? 505 : 501, "unsupported", why,
					      NULL);
			if (avail >= p->s.head_max)
				return answer(c, 431, "head_too_large",
					      "the request head is larger than this proxy takes", NULL);
			c->keep = true;
		}
		if (!c->rd) {
			dir_trim(c->w, d);
			return WAIT;
		}
		n = dir_read(c->w, d, c->fd, c->ssl, c->hup, &c->rd, &c->wr, NULL);
		if (n == 1) {
			/* A head has begun: it has head_timeout from now at most (an
			 * idle connection's longer deadline shrinks; a slow one's never
			 * grows). */
			if (c->deadline > c->w->now + (uint64_t)p->s.head_timeout_ms)
				c->deadline = c->w->now + (uint64_t)p->s.head_timeout_ms;
			continue;
		}
		if (n == -1) {
			dir_trim(c->w, d);
			return WAIT;
		}
		conn_free(c); /* EOF, error or no memory between requests: just close */
		return GONE;
	}
}

/* Origin (when a browser sent one) must be this very host: a page of one
 * sandbox must not use another sandbox's cookie. */
static bool same_origin(const struct px_head *h)
{
	const struct px_header *o = px_head_get(h, "origin");
	struct px_span v;

	if (!o)
		return true;
	v = o->value;
	if (v.n > 7 && strncasecmp(v.p, "http://", 7) == 0) {
		v.p += 7;
		v.n -= 7;
	} else if (v.n > 8 && strncasecmp(v.p, "https://", 8) == 0) {
		v.p += 8;
		v.n -= 8;
	} else {
		return false;
	}
	return v.n == h->host.n && strncasecmp(v.p, h->host.p, v.n) == 0;
}

static bool accepts_html(const struct px_head *h)
{
	const struct px_header *a = px_head_get(h, "accept");

	return a && memmem(a->value.p, a->value.n, "text/html", 9) != NULL;
}

/* The redirect that turns ?token= into a cookie for this host. */
static enum step token_redirect(struct px_conn *c, const struct px_head *h)
{
	char target[8192], hdrs[8192 + 2 * SBTOKEN_MAX + 256];

	if (px_target_without_token(h->target, target, sizeof(target)) == -1)
		return answer(c, 414, "target_too_long", "the request target is too long", NULL);
	snprintf(hdrs, sizeof(hdrs),
		 "Location: %s\r\nSet-Cookie: " PX_COOKIE "=%s; Path=/; HttpOnly; SameSite=Lax%s\r\n",
		 target, c->tok, c->tls ? "; Secure" : "");
	return answer(c, 302, "token_accepted", "the token is now a cookie of this host", hdrs);
}

static enum step on_request(struct px_conn *c)
{
	struct px_proxy *p = c->w->p;
	const struct px_head *h = whead(c);
	char tok[SHTOKEN_MAX], id[48];
	enum px_token_from from;
	uint64_t now = c->w->now;

	atomic_fetch_add(&p->st.requests, 1);
	c->minor = h->minor;
	c->keep = h->keep_alive && !atomic_load(&p->stopping);
	c->upgrade = h->upgrade;
	c->head_method = px_span_ieq(h->method, "HEAD");
	c->html = accepts_html(h);
	set_waiting(c, false);
	c->sent = c->resp_head = c->retried = c->consumed = false;
	c->hold_until = 0;
	c->status = 0;
	c->c2u.frame = h->body;
	c->u2c.framed = c->u2c.eof = false; /* no response yet */
	if (c->admin) {
		if (h->body != PX_BODY_NONE) {
			c->keep = false;
			return answer(c, 413, "no_body", "admin requests take no body", NULL);
		}
		buf_reset(&c->u2c.hdr);
		c->u2c.hoff = 0;
		px_admin_answer(p, h, &c->u2c.hdr); /* answers with Connection: close */
		c->close_after = true;
		c->st = CS_ANSWER;
		return AGAIN;
	}
	if (c->peer[0] && p->s.trusted_peers && peer_trusted(p, c->peer)) {
		const struct px_header *xf = px_head_get(h, "x-forwarded-for");
		const struct px_header *xp = px_head_get(h, "x-forwarded-proto");

		if (xf && xf->value.n < sizeof(c->addr))
			snprintf(c->addr, sizeof(c->addr), "%.*s", (int)xf->value.n, xf->value.p);
		c->tls = c->ssl || (xp && px_span_ieq(xp->value, "https"));
	}
	if (!h->host.p || !px_host_route(h->host, p->s.domain, &c->route)) {
		c->route.id[0] = '\0';
		return answer(c, 404, "unknown_host",
			      "this proxy serves {port}-{sandbox}.<domain> names only", NULL);
	}
	from = px_token_find(h, tok, sizeof(tok));
	if (from == PX_TOKEN_NONE)
		return answer(c, 401, "token_required",
			      "this sandbox wants its token: an Authorization: Bearer header, or "
			      "?token= once in a browser",
			      "WWW-Authenticate: Bearer realm=\"cloche\"\r\n");
	if (strcmp(tok, c->tok) != 0) {
		struct shtoken sh;
		bool share = strncmp(tok, "sh1.", 4) == 0;

		if (share ? !shtoken_verify(p->s.token_key, p->s.token_key_len, tok, &sh)
			  : !sbtoken_verify(p->s.token_key, p->s.token_key_len, tok, id, sizeof(id)))
			return answer(c, 401, "token_invalid", "the sandbox token is not valid",
				      "WWW-Authenticate: Bearer realm=\"cloche\", error=\"invalid_token\"\r\n");
		if (share)
			snprintf(id, sizeof(id), "%s", sh.id);
		if (strcmp(id, c->route.id) != 0)
			return answer(c, 403, "token_other_sandbox",
				      "the token is for another sandbox", NULL);
		snprintf(c->tok, sizeof(c->tok), "%s", tok);
		c->share[0] = '\0';
		if (share) {
			snprintf(c->share, sizeof(c->share), "%s", sh.share);
			c->share_mode = sh.mode;
			c->share_exp = sh.expires;
		}
	} else if (strncmp(tok + 4, c->route.id, strlen(c->route.id)) != 0 ||
		   tok[4 + strlen(c->route.id)] != '.') {
		return answer(c, 403, "token_other_sandbox", "the token is for another sandbox", NULL);
	}
	/* A share link opens the desktop, while it lasts (its revocation is
	 * checked with the route). */
	if (c->share[0] && c->route.port != 6080)
		return answer(c, 403, "share_port", "a share link opens the sandbox's desktop (port 6080) only",
			      NULL);
	if (c->share[0] && (long long)time(NULL) >= c->share_exp)
		return answer(c, 401, "share_expired", "this share link has expired", NULL);
	if (from == PX_TOKEN_COOKIE && !same_origin(h))
		return answer(c, 403, "cross_origin",
			      "a request from another origin may not use this sandbox's cookie",
			      NULL);
	if (from == PX_TOKEN_QUERY && !c->upgrade && h->body == PX_BODY_NONE &&
	    (px_span_ieq(h->method, "GET") || c->head_method))
		return token_redirect(c, h);

	/* The sandbox: its entry, limits and drains. */
	if (c->rt && strcmp(c->rt->id, c->route.id) != 0) {
		rt_leave(c);
		c->have_view = false;
	}
	if (!c->rt) {
		c->rt = px_routes_get(p->routes, c->route.id);
		if (!c->rt)
			return answer(c, 503, "no_memory", "the proxy is out of memory", NULL);
		if (atomic_fetch_add(&c->rt->conns, 1) >= p->s.max_conns_sandbox) {
			atomic_fetch_add(&p->st.refused_limit, 1);
			c->keep = false;
			return answer(c, 503, "too_many_connections",
				      "this sandbox has as many connections as it may have",
				      "Retry-After: 1\r\n");
		}
	}
	c->drain_gen = atomic_load(&c->rt->drain_gen);
	atomic_fetch_add(&c->rt->requests, 1);
	atomic_store(&c->rt->last_seen_ms, now);
	c->st = CS_ROUTE;
	c->deadline = now + (uint64_t)p->s.connect_timeout_ms;
	return AGAIN;
}

/* ---- ROUTE and CONNECT: a connection into the sandbox ---- */

/* An upstream never gets a FIN from us, only a reset, whoever ends the
 * connection and even when we die: a TIME_WAIT comes only from the other
 * side's FIN, and inside a sandbox one refuses a checkpoint for a minute. */
static void no_fin(int fd)
{
	struct linger l = {1, 0};

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

static int up_new(struct px_conn *c, const struct px_rt_view *v, struct err *e)
{
	struct px_worker *w = c->w;
	struct px_up *up = calloc(1, sizeof(*up));
	int fd = -1;

	if (!up)
		return err_set(e, ENOMEM, "upstream");
	up->ev.kind = PX_EV_UP;
	up->fd = up->cfd = -1;
	up->port = c->route.port;
	up->remote = v->kind == PX_RT_REMOTE;
	up->conn = c;
	if (v->kind == PX_RT_LOCAL) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		char line[96];
		int n = snprintf(line, sizeof(line), "CONNECT %s %d\n", v->sid, c->route.port);

		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->p->s.node_socket);
		if (fd == -1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
		    send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
			err_http(e, 502, "cannot reach the node agent at %s: %s", sa.sun_path,
				 strerror(errno));
			if (fd >= 0)
				close(fd);
			free(up);
			return -1;
		}
		up->cfd = fd;
	} else {
		char host[64], *colon;
		struct sockaddr_in sa = {.sin_family = AF_INET};
		long port;

		snprintf(host, sizeof(host), "%s", v->addr);
		colon = strrchr(host, ':');
		port = colon ? strtol(colon + 1, NULL, 10) : 80;
		if (colon)
			*colon = '\0';
		if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || port < 1 || port > 65535) {
			free(up);
			return err_http(e, 502, "the route's address `%s` is not ip:port", v->addr);
		}
		sa.sin_port = htons((uint16_t)port);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd >= 0) {
			int one = 1;

			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			no_fin(fd);
		}
		if (fd == -1 ||
		    (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 && errno != EINPROGRESS)) {
			err_http(e, 502, "cannot connect to %s: %s", v->addr, strerror(errno));
			if (fd >= 0)
				close(fd);
			free(up);
			return -1;
		}
		up->fd = fd;
	}
	if (px_worker_watch(w, fd, &up->ev) == -1) {
		close(fd);
		free(up);
		return err_set(e, errno, "epoll");
	}
	px_rt_ref(w->p->routes, c->rt);
	up->rt = c->rt;
	c->up = up;
	return 0;
}

/* Builds the head for the upstream from the request head (parsed again
 * when the route had to be waited for). */
static int build_up_head(struct px_conn *c, const struct px_rt_view *v, struct err *e)
{
	struct px_head *h = whead(c);
	char q[96];
	struct px_rewrite_opts o = {.client_addr = c->addr, .tls = c->tls, .upgrade = c->upgrade,
				    .keep_token = v->kind == PX_RT_REMOTE};

	if (!c->head_ok &&
	    px_head_parse(c->c2u.b + c->c2u.off, c->c2u.len - c->c2u.off, h, NULL) != PX_HEAD_OK)
		return err_http(e, 500, "the request head changed");
	c->head_ok = false;
	if (v->kind == PX_RT_LOCAL && c->route.port == 6080 && v->vnc_secret[0]) {
		/* noVNC: the proxy supplies the desktop's secret, so the link from
		 * acquire opens it in one click; a view-only share link gets the
		 * view secret instead, with which cloche-vnc drops its input. */
		char view[48];

		if (c->share[0] && c->share_mode == 'v') {
			if (sbtoken_view_secret(v->vnc_secret, view, sizeof(view)) == -1)
				return err_http(e, 500, "no view secret");
			snprintf(q, sizeof(q), "view=%s", view);
		} else {
			snprintf(q, sizeof(q), "secret=%s", v->vnc_secret);
		}
		o.add_query = q;
	}
	buf_reset(&c->c2u.hdr);
	c->c2u.hoff = 0;
	if (px_rewrite(h, &o, &c->c2u.hdr, e) == -1)
		return -1;
	c->c2u.off += c->head_len;
	c->consumed = true;
	dir_frame(&c->c2u, h->body, h->content_length);
	return 0;
}

static enum step step_route(struct px_conn *c)
{
	struct px_proxy *p = c->w->p;
	struct err e = ERR_INIT;
	char msg[256];
	unsigned gen = atomic_load(&c->rt->gen);

	if (!c->have_view || gen != c->view_gen) {
		px_rt_view(p->routes, c->rt, &c->view);
		c->view_gen = gen;
		c->have_view = true;
	}
	/* Being saved: held like a request for a hibernated sandbox (and, like
	 * it, a reason to wake it once saved), until the node resumes us. */
	if (atomic_load(&c->rt->drain_until_ms) > c->w->now) {
		if (!c->waiting) {
			set_waiting(c, true);
			c->deadline = c->w->now + (uint64_t)p->s.wait_timeout_ms;
		}
		return WAIT;
	}
	switch (c->view.kind) {
	case PX_RT_PENDING:
		return WAIT;
	case PX_RT_WAIT:
		if (!c->waiting) {
			set_waiting(c, true);
			c->deadline = c->w->now + (uint64_t)p->s.wait_timeout_ms;
		}
		return WAIT;
	case PX_RT_GONE:
		return answer(c, 404, "unknown_sandbox", c->view.why[0] ? c->view.why : "no such sandbox", NULL);
	case PX_RT_FAIL:
		return answer(c, 502, "route_failed", c->view.why, NULL);
	default:
		break;
	}
	set_waiting(c, false);
	if (c->share[0]) {
		c->share_gen = atomic_load(&c->rt->share_gen);
		if (px_rt_share_revoked(p->routes, c->rt, c->share))
			return answer(c, 401, "share_revoked", "this share link was revoked", NULL);
	}
	if (build_up_head(c, &c->view, &e) == -1)
		return answer(c, e.http_status ? e.http_status : 500, "bad_request", e.msg, NULL);
	if (dir_classify(&c->c2u) == -1) {
		c->keep = false;
		return answer(c, 400, "bad_chunked", "malformed chunked request body", NULL);
	}
	c->retry_ok = c->c2u.frame == PX_BODY_NONE;
	c->up = px_idle_take(c->w, c->rt, c->route.port);
	if (c->up) {
		c->up->conn = c;
		atomic_fetch_add(&p->st.upstream_reused, 1);
		c->st = CS_PROXY;
		c->deadline = c->w->now + (uint64_t)p->s.read_timeout_ms;
		return AGAIN;
	}
	c->retry_ok = false;
	if (up_new(c, &c->view, &e) == -1) {
		snprintf(msg, sizeof(msg), "%s", e.msg);
		return answer(c, 502, "upstream_unreachable", msg, NULL);
	}
	c->st = CS_CONNECT;
	c->deadline = c->w->now + (uint64_t)p->s.connect_timeout_ms;
	return AGAIN;
}

/* Receives the node agent's answer: "OK\n" with the socket, or
 * "ERR <status> <message>\n".  1 connected, 0 wait, -1 answered. */
static int node_answer(struct px_conn *c, enum step *out)
{
	struct px_up *up = c->up;
	char data[256];
	struct iovec iov = {.iov_base = data, .iov_len = sizeof(data) - 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm;
	ssize_t n;
	int sock = -1, status = 502;
	char msg[300];

	if (!up->rd)
		return 0;
	do
		n = recvmsg(up->cfd, &mh, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n == -1 && errno == EAGAIN) {
		up->rd = false;
		return 0;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&sock, CMSG_DATA(cm), sizeof(int));
	data[n > 0 ? n : 0] = '\0';
	if (n >= 3 && strncmp(data, "OK\n", 3) == 0 && sock >= 0) {
		close(up->cfd); /* leaves the epoll set with it */
		up->cfd = -1;
		set_nonblock(sock);
		no_fin(sock);
		up->fd = sock;
		if (px_worker_watch(c->w, sock, &up->ev) == -1) {
			*out = answer(c, 502, "upstream_unreachable", "epoll", NULL);
			return -1;
		}
		up->connected = true;
		up->rd = false;
		up->wr = true;
		return 1;
	}
	if (sock >= 0)
		close(sock);
	data[strcspn(data, "\n")] = '\0';
	if (n > 4 && sscanf(data, "ERR %d", &status) == 1 && strlen(data) > 8)
		snprintf(msg, sizeof(msg), "%s", data + 8);
	else
		snprintf(msg, sizeof(msg), "the node agent closed without an answer");
	if (status == 404) {
		/* The route was stale: ask the portal again once. */
		px_rt_invalidate(c->w->p->routes, c->rt);
		if (!c->retried) {
			c->retried = true;
			px_up_close(c->w, up);
			c->up = NULL;
			c->c2u.off -= c->head_len;
			c->consumed = false;
			c->st = CS_ROUTE;
			*out = AGAIN;
			return -1;
		}
		*out = answer(c, 404, "unknown_sandbox", msg, NULL);
	} else if (status == 409 && (!c->hold_until || c->w->now < c->hold_until)) {
		/* Not ready on its node (being saved, asleep, waking) while the
		 * route still said ready: ask the portal again and hold the request
		 * as for a hibernated sandbox (a noVNC reconnect must not get an
		 * error answer: it would not retry). */
		px_rt_invalidate(c->w->p->routes, c->rt);
		px_up_close(c->w, up);
		c->up = NULL;
		c->c2u.off -= c->head_len;
		c->consumed = false;
		if (!c->hold_until)
			c->hold_until = c->w->now + (uint64_t)c->w->p->s.wait_timeout_ms;
		set_waiting(c, true);
		c->deadline = c->hold_until;
		c->st = CS_ROUTE;
		*out = WAIT;
		return -1;
	} else if (status == 409) {
		*out = answer(c, 503, "sandbox_not_ready", msg, "Retry-After: 1\r\n");
	} else if (status == 504) {
		*out = answer(c, 504, "upstream_timeout", msg, NULL);
	} else {
		char m2[400];

		snprintf(m2, sizeof(m2), "nothing answers on port %d of sandbox %s (%s)",
			 c->route.port, c->route.id, msg);
		*out = answer(c, 502, "port_closed", m2, NULL);
	}
	return -1;
}

static enum step step_connect(struct px_conn *c)
{
	struct px_up *up = c->up;
	struct px_proxy *p = c->w->p;
	enum step s;

	if (up->cfd >= 0) {
		int r = node_answer(c, &s);

		if (r == 0)
			return WAIT;
		if (r < 0)
			return s;
	} else if (!up->connected) {
		int err = 0;
		socklen_t l = sizeof(err);
		char msg[200];

		if (!up->wr)
			return WAIT;
		if (getsockopt(up->fd, SOL_SOCKET, SO_ERROR, &err, &l) == -1)
			err = errno;
		if (err) {
			snprintf(msg, sizeof(msg), "cannot connect to the sandbox's node: %s",
				 strerror(err));
			return answer(c, 502, "upstream_unreachable", msg, NULL);
		}
		up->connected = true;
	}
	atomic_fetch_add(&p->st.upstream_connects, 1);
	c->st = CS_PROXY;
	c->deadline = c->w->now + (uint64_t)p->s.read_timeout_ms;
	return AGAIN;
}

/* ---- PROXY: one exchange ---- */

/* The upstream broke before any of its answer arrived: a request without a
 * body on a kept connection goes again on a fresh one. */
static enum step retry_or_fail(struct px_conn *c, const char *what)
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
		if (up_new(c, &c->view, &e) == -1)
			return answer(c, 502, "upstream_unreachable", e.msg, NULL);
		c->st = CS_CONNECT;
		c->deadline = c->w->now + (uint64_t)c->w->p->s.connect_timeout_ms;
		return AGAIN;
	}
	snprintf(msg, sizeof(msg), "the sandbox's server %s (port %d)", what, c->route.port);
	return answer(c, 502, "upstream_failed", msg, NULL);
}

static enum step finish(struct px_conn *c)
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
	dir_trim(w, &c->u2c);
	c->u2c.eof = false;
	if (!c->c2u.framed || c->close_after || !c->keep) {
		c->st = CS_LINGER;
		return AGAIN;
	}
	/* The next request (maybe already here, pipelined) starts at end. */
	c->c2u.off = c->c2u.end;
	dir_trim(w, &c->c2u);
	c->st = CS_HEAD;
	c->deadline = w->now + (uint64_t)(c->c2u.b ? p->s.head_timeout_ms : p->s.idle_timeout_ms);
	return AGAIN;
}

/* Parses response heads in u2c (1xx ones pass through as they are). */
static enum step resp_head(struct px_conn *c, bool *more)
{
	struct px_proxy *p = c->w->p;
	struct dir *d = &c->u2c;
	struct px_head *h = whead(c);
	struct err e = ERR_INIT;
	const char *why = NULL;
	enum px_head_result r;

	*more = false;
	while (!c->resp_head && d->len > d->off) {
		r = px_resp_parse(d->b + d->off, d->len - d->off, c->head_method, h, &why);
		if (r == PX_HEAD_PARTIAL) {
			if (d->len - d->off >= PX_BLOCK / 2)
				return answer(c, 502, "bad_response",
					      "the sandbox's server sent a response head that is too large",
					      NULL);
			*more = true;
			return WAIT;
		}
		if (r != PX_HEAD_OK) {
			char msg[200];

			snprintf(msg, sizeof(msg), "the sandbox's server sent a malformed response (%s)",
				 why ? why : "?");
			return answer(c, 502, "bad_response", msg, NULL);
		}
		c->status = h->status;
		if (h->status == 101) {
			if (!c->upgrade)
				return answer(c, 502, "bad_response",
					      "the sandbox's server switched protocols unasked", NULL);
			if (buf_append(&d->hdr, d->b + d->off, h->len, &e) == -1)
				return answer(c, 502, "bad_response", e.msg, NULL);
			d->off += h->len;
			d->end = d->off;
			c->resp_head = true;
			c->st = CS_TUNNEL;
			c->deadline = c->w->now + (uint64_t)p->s.tunnel_timeout_ms;
			c->c2u.frame = c->u2c.frame = PX_BODY_CLOSE;
			c->c2u.framed = c->u2c.framed = false;
			c->c2u.end = c->c2u.len > c->c2u.off ? c->c2u.len : c->c2u.off;
			d->end = d->len;
			atomic_fetch_add(&p->st.tunnels, 1);
			atomic_fetch_add(&p->st.tunnels_open, 1);
			atomic_fetch_add(&p->st.status[1], 1);
			return AGAIN;
		}
		if (h->status < 200) {
			/* 100 Continue and friends: pass on (not to an HTTP/1.0
			 * client, which knows none), read the next head. */
			if (c->minor == 1) {
				if (buf_append(&d->hdr, d->b + d->off, h->len, &e) == -1)
					return answer(c, 502, "bad_response", e.msg, NULL);
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
			return answer(c, 502, "bad_response", e.msg, NULL);
		atomic_fetch_add(&p->st.status[h->status / 100], 1);
		d->off += h->len;
		dir_frame(d, h->body, h->content_length);
		/* The request head is no longer needed for a retry. */
		buf_reset(&c->c2u.hdr);
		c->c2u.hoff = 0;
		c->retry_ok = false;
		c->sent = true;
		if (dir_classify(d) == -1)
			return answer(c, 502, "bad_response", "malformed chunked response", NULL);
	}
	return AGAIN;
}

static enum step step_proxy(struct px_conn *c)
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
		if (!dir_flushed(&c->c2u)) {
			size_t before = c->c2u.off + c->c2u.hoff;

			r = dir_write(w, &c->c2u, up->fd, NULL, &up->wr, NULL, &in);
			if (r == -1)
				return retry_or_fail(c, "closed the connection");
			progress |= c->c2u.off + c->c2u.hoff != before;
		}
		if (!c->c2u.framed && c->rd && dir_room(&c->c2u)) {
			r = dir_read(w, &c->c2u, c->fd, c->ssl, c->hup, &c->rd, &c->wr, NULL);
			if (r == 1) {
				if (dir_classify(&c->c2u) == -1) {
					c->keep = false;
					return answer(c, 400, "bad_chunked", "malformed chunked request body",
						      NULL);
				}
				progress = true;
			} else if (r == 0 || r == -2) {
				conn_free(c); /* the client left in the middle of its body */
				return GONE;
			}
		}
		/* sandbox -> client */
		if (!dir_flushed(&c->u2c)) {
			size_t before = c->u2c.off + c->u2c.hoff;

			r = dir_write(w, &c->u2c, c->fd, c->ssl, &c->wr, &c->rd, &out);
			if (r == -1) {
				conn_free(c);
				return GONE;
			}
			progress |= c->u2c.off + c->u2c.hoff != before;
		}
		if (!c->u2c.framed && !c->u2c.eof && up->rd && dir_room(&c->u2c)) {
			r = dir_read(w, &c->u2c, up->fd, NULL, up->hup, &up->rd, NULL, NULL);
			if (r == 1) {
				progress = true;
				if (!c->resp_head) {
					bool more;
					enum step s = resp_head(c, &more);

					if (c->st != CS_PROXY || s == GONE)
						return s;
				} else if (dir_classify(&c->u2c) == -1) {
					return answer(c, 502, "bad_response", "malformed chunked response",
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
					(void)dir_write(w, &c->u2c, c->fd, c->ssl, &c->wr, &c->rd, &out);
					conn_free(c);
					return GONE;
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
		if (c->resp_head && c->u2c.framed && dir_flushed(&c->u2c) &&
		    (c->c2u.framed ? dir_flushed(&c->c2u) : true))
			return finish(c);
	}
	return WAIT;
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

static enum step tunnel_dir(struct px_conn *c, struct dir *d, struct end src, struct end dst,
			    uint64_t *count, bool from_up, bool *progress)
{
	struct px_worker *w = c->w;

	for (;;) {
		int r;

		if (d->hoff < d->hdr.len || d->off < d->len) {
			size_t before = d->off + d->hoff;

			d->end = d->len;
			r = dir_write(w, d, dst.fd, dst.ssl, dst.wr, dst.rd, count);
			if (r == -1)
				return GONE;
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
				 * no_fin) but the reset that ends the tunnel once what
				 * the client sent is out (a WebSocket has its own
				 * closing handshake; a half-closed one has no use). */
				c->u2c.eof = true;
			}
			d->shut = true;
			break;
		}
		if (!*src.rd)
			break;
		r = dir_read(w, d, src.fd, src.ssl, src.hup, src.rd, src.wr, NULL);
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
	dir_trim(w, d);
	if (d->hoff == d->hdr.len && d->hdr.data) {
		buf_free(&d->hdr);
		d->hoff = 0;
	}
	return AGAIN;
}

static enum step step_tunnel(struct px_conn *c)
{
	struct px_worker *w = c->w;
	struct px_proxy *p = w->p;
	struct px_up *up = c->up;
	uint64_t in = 0, out = 0;
	bool progress = false;

	struct end cl = {c->fd, c->ssl, c->hup, &c->rd, &c->wr},
		   sb = {up->fd, NULL, up->hup, &up->rd, &up->wr};

	if (tunnel_dir(c, &c->u2c, sb, cl, &out, true, &progress) == GONE ||
	    tunnel_dir(c, &c->c2u, cl, sb, &in, false, &progress) == GONE ||
	    (c->c2u.eof && c->u2c.eof && dir_flushed(&c->c2u) && dir_flushed(&c->u2c))) {
		conn_free(c);
		return GONE;
	}
	if (in || out || progress) {
		atomic_fetch_add(&c->rt->bytes_in, in);
		atomic_fetch_add(&c->rt->bytes_out, out);
		atomic_fetch_add(&p->st.bytes_in, in);
		atomic_fetch_add(&p->st.bytes_out, out);
		atomic_store(&c->rt->last_seen_ms, w->now);
		c->deadline = w->now + (uint64_t)p->s.tunnel_timeout_ms;
	}
	return WAIT;
}

/* ---- ANSWER and LINGER ---- */

static enum step step_answer(struct px_conn *c)
{
	struct px_worker *w = c->w;
	int r = dir_write(w, &c->u2c, c->fd, c->ssl, &c->wr, &c->rd, NULL);

	if (r == -1) {
		conn_free(c);
		return GONE;
	}
	if (r == 0)
		return WAIT;
	buf_reset(&c->u2c.hdr);
	c->u2c.hoff = 0;
	if (c->close_after || !c->keep) {
		c->st = CS_LINGER;
		return AGAIN;
	}
	dir_trim(w, &c->c2u);
	c->st = CS_HEAD;
	c->deadline = w->now + (uint64_t)w->p->s.idle_timeout_ms;
	return AGAIN;
}

/* The last answer is out: shut our side, read (and drop) what the client
 * still sends, so our answer is not lost to a reset, then close. */
static enum step step_linger(struct px_conn *c)
{
	struct px_worker *w = c->w;

	if (!c->lingering) {
		c->lingering = true;
		if (c->up) {
			px_up_close(w, c->up);
			c->up = NULL;
		}
		dir_free(w, &c->u2c);
		if (c->ssl)
			px_tls_shutdown(c->ssl);
		shutdown(c->fd, SHUT_WR);
		c->deadline = w->now + LINGER_MS;
	}
	for (;;) {
		char sink[4096];
		ssize_t n;

		if (!c->rd)
			return WAIT;
		n = read(c->fd, sink, sizeof(sink));
		if (n > 0 || (n == -1 && errno == EINTR))
			continue;
		if (n == -1 && errno == EAGAIN) {
			c->rd = false;
			return WAIT;
		}
		conn_free(c);
		return GONE;
	}
}

/* ---- driving ---- */

static void run(struct px_conn *c)
{
	for (;;) {
		enum step s;

		switch (c->st) {
		case CS_HEAD: s = step_head(c); break;
		case CS_ROUTE: s = step_route(c); break;
		case CS_CONNECT: s = step_connect(c); break;
		case CS_PROXY: s = step_proxy(c); break;
		case CS_TUNNEL: s = step_tunnel(c); break;
		case CS_ANSWER: s = step_answer(c); break;
		default: s = step_linger(c); break;
		}
		if (s == GONE)
			return;
		if (s == WAIT) {
			c->head_ok = false;
			return;
		}
	}
}

void px_conn_event(struct px_conn *c, uint32_t ev)
{
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->rd = true;
	if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->hup = true;
	if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		c->wr = true;
	run(c);
}

void px_up_event(struct px_worker *w, struct px_up *up, uint32_t ev)
{
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		up->rd = true;
	if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		up->hup = true;
	if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		up->wr = true;
	if (up->conn) {
		run(up->conn);
		return;
	}
	/* A kept connection said something (the server closed it): drop it. */
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		struct px_up **pp = &w->idle;

		while (*pp && *pp != up)
			pp = &(*pp)->next;
		if (*pp) {
			*pp = up->next;
			w->nidle--;
		}
		px_up_close(w, up);
	}
}

/* A connection on a share link whose link expired or was revoked since. */
static bool share_ended(struct px_conn *c)
{
	unsigned gen;

	if ((long long)time(NULL) >= c->share_exp)
		return true;
	if (!c->rt || (gen = atomic_load(&c->rt->share_gen)) == c->share_gen)
		return false;
	c->share_gen = gen;
	return px_rt_share_revoked(c->w->p->routes, c->rt, c->share);
}

void px_conn_tick(struct px_worker *w, bool poked)
{
	struct px_proxy *p = w->p;
	bool stopping = atomic_load(&p->stopping);
	struct px_conn *c, *next;

	for (c = w->conns; c; c = next) {
		next = c->next;
		if (c->rt && atomic_load(&c->rt->drain_gen) != c->drain_gen) {
			/* Drained: cut it, our side first, by a reset. */
			conn_free(c);
			continue;
		}
		if (c->share[0] && share_ended(c)) {
			/* a share link that expired or was revoked: its noVNC goes */
			atomic_fetch_add(&p->st.share_cut, 1);
			conn_free(c);
			continue;
		}
		if (stopping && c->st == CS_HEAD && !(c->c2u.b && c->c2u.len > c->c2u.off)) {
			conn_free(c);
			continue;
		}
		if (stopping)
			c->keep = false;
		if (c->deadline && w->now >= c->deadline) {
			atomic_fetch_add(&p->st.timeouts, 1);
			switch (c->st) {
			case CS_HEAD:
				if (c->c2u.b && c->c2u.len > c->c2u.off) {
					c->keep = false;
					c->deadline = 0;
					(void)answer(c, 408, "head_timeout",
						     "the request head did not arrive in time", NULL);
					run(c);
				} else {
					conn_free(c);
				}
				continue;
			case CS_ROUTE:
				c->deadline = 0;
				if (c->waiting) {
					char msg[200];

					snprintf(msg, sizeof(msg),
						 "sandbox %s did not become ready within %d s",
						 c->route.id, p->s.wait_timeout_ms / 1000);
					(void)answer(c, 504, "wake_timeout", msg, NULL);
				} else {
					(void)answer(c, 504, "route_timeout",
						     "the portal did not say where the sandbox is in time",
						     NULL);
				}
				run(c);
				continue;
			case CS_CONNECT:
				c->deadline = 0;
				(void)answer(c, 504, "connect_timeout",
					     "no connection into the sandbox in time", NULL);
				run(c);
				continue;
			case CS_PROXY:
				c->deadline = 0;
				if (c->sent) {
					conn_free(c);
					continue;
				}
				(void)answer(c, 504, "upstream_timeout",
					     "the sandbox's server did not answer in time", NULL);
				run(c);
				continue;
			default:
				conn_free(c);
				continue;
			}
		}
		if (poked && c->st == CS_ROUTE)
			run(c);
	}
	/* Kept upstream connections: expiry, drains, stop. */
	for (struct px_up **pp = &w->idle; *pp;) {
		struct px_up *up = *pp;
		bool drained = up->rt && atomic_load(&up->rt->drain_until_ms) > w->now;

		if (stopping || drained || w->now - up->idle_since >= (uint64_t)p->s.upstream_idle_ms) {
			*pp = up->next;
			w->nidle--;
			px_up_close(w, up);
			continue;
		}
		pp = &up->next;
	}
}

void px_conn_close_all(struct px_worker *w)
{
	while (w->conns)
		conn_free(w->conns);
	while (w->idle) {
		struct px_up *up = w->idle;

		w->idle = up->next;
		px_up_close(w, up);
	}
	w->nidle = 0;
}
