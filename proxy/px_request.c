/* HEAD: a request head read (bounded, timed) and judged from it alone:
 * admin or not, the Host (which sandbox and port), the token or share link
 * and its place (a ?token= becomes a cookie by a redirect), the Origin, and
 * the sandbox's connection limit; see px_request.h. */
#include "proxy/px_request.h"
#include "proxy/px_admin.h"
#include "proxy/px_host.h"
#include "proxy/px_rewrite.h"

#include "common/sbtoken.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Whether peer is one of --trusted-peers, whose X-Forwarded-For/Proto count. */
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

static enum px_step on_request(struct px_conn *c);

enum px_step px_request_step_head(struct px_conn *c)
{
	struct px_proxy *p = c->w->p;
	struct px_dir *d = &c->c2u;

	for (;;) {
		const char *why = NULL;
		enum px_head_result r = PX_HEAD_PARTIAL;
		int n;

		if (d->b && d->len > d->off) {
			size_t avail = d->len - d->off;

			r = px_head_parse(d->b + d->off, avail, px_conn_head(c), &why);
			if (r == PX_HEAD_OK) {
				if (px_conn_head(c)->len > p->s.head_max) {
					c->keep = false;
					return px_conn_answer(c, 431, "head_too_large",
							      "the request head is larger than this proxy takes",
							      NULL);
				}
				c->head_len = px_conn_head(c)->len;
				c->head_ok = true;
				return on_request(c);
			}
			c->keep = false;
			if (r == PX_HEAD_BAD) {
				atomic_fetch_add(&p->st.bad_requests, 1);
				return px_conn_answer(c, 400, "bad_request", why, NULL);
			}
			if (r == PX_HEAD_TOO_MANY)
				return px_conn_answer(c, 431, "too_many_headers", why, NULL);
			if (r == PX_HEAD_UNSUPPORTED)
				return px_conn_answer(c, strstr(why, "HTTP/1") ? 505 : 501, "unsupported", why,
						      NULL);
			if (avail >= p->s.head_max)
				return px_conn_answer(c, 431, "head_too_large",
						      "the request head is larger than this proxy takes", NULL);
			c->keep = true;
		}
		if (!c->rd) {
			px_dir_trim(c->w, d);
			return PX_WAIT;
		}
		n = px_dir_read(c->w, d, c->fd, c->ssl, c->hup, &c->rd, &c->wr, NULL);
		if (n == 1) {
			/* A head has begun: it has head_timeout from now at most (an
			 * idle connection's longer deadline shrinks; a slow one's never
			 * grows). */
			if (c->deadline > c->w->now + (uint64_t)p->s.head_timeout_ms)
				c->deadline = c->w->now + (uint64_t)p->s.head_timeout_ms;
			continue;
		}
		if (n == -1) {
			px_dir_trim(c->w, d);
			return PX_WAIT;
		}
		px_conn_free(c); /* EOF, error or no memory between requests: just close */
		return PX_GONE;
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

/* A request a page of another site, or of another sandbox under the same
 * domain (Sec-Fetch-Site: same-site), made: a frame, an image, a script, a
 * fetch.  A top-level navigation (a link followed, a bookmark) is not one of
 * them.  Browsers that send no Sec-Fetch-* headers are judged by Origin
 * alone. */
static bool from_elsewhere(const struct px_head *h)
{
	const struct px_header *site = px_head_get(h, "sec-fetch-site");
	const struct px_header *mode = px_head_get(h, "sec-fetch-mode");
	const struct px_header *dest = px_head_get(h, "sec-fetch-dest");

	if (!site || px_span_ieq(site->value, "same-origin") || px_span_ieq(site->value, "none"))
		return false;
	return !(mode && px_span_ieq(mode->value, "navigate") && dest &&
		 px_span_ieq(dest->value, "document"));
}

static bool accepts_html(const struct px_head *h)
{
	const struct px_header *a = px_head_get(h, "accept");

	return a && memmem(a->value.p, a->value.n, "text/html", 9) != NULL;
}

/* The redirect that turns ?token= into a cookie for this host. */
static enum px_step token_redirect(struct px_conn *c, const struct px_head *h)
{
	char target[8192], hdrs[8192 + 2 * SBTOKEN_MAX + 256];

	if (px_target_without_token(h->target, target, sizeof(target)) == -1)
		return px_conn_answer(c, 414, "target_too_long", "the request target is too long", NULL);
	snprintf(hdrs, sizeof(hdrs),
		 "Location: %s\r\nSet-Cookie: " PX_COOKIE "=%s; Path=/; HttpOnly; SameSite=Lax%s\r\n",
		 target, c->tok, c->tls ? "; Secure" : "");
	return px_conn_answer(c, 302, "token_accepted", "the token is now a cookie of this host", hdrs);
}

static enum px_step on_request(struct px_conn *c)
{
	struct px_proxy *p = c->w->p;
	const struct px_head *h = px_conn_head(c);
	char tok[SHTOKEN_MAX], id[48];
	enum px_token_from from;
	uint64_t now = c->w->now;

	atomic_fetch_add(&p->st.requests, 1);
	c->minor = h->minor;
	c->keep = h->keep_alive && !atomic_load(&p->stopping);
	c->upgrade = h->upgrade;
	c->head_method = px_span_ieq(h->method, "HEAD");
	c->html = accepts_html(h);
	px_conn_set_waiting(c, false);
	c->sent = c->resp_head = c->retried = c->consumed = false;
	c->hold_until = 0;
	c->status = 0;
	c->c2u.frame = h->body;
	c->u2c.framed = c->u2c.eof = false; /* no response yet */
	if (c->admin) {
		if (h->body != PX_BODY_NONE) {
			c->keep = false;
			return px_conn_answer(c, 413, "no_body", "admin requests take no body", NULL);
		}
		buf_reset(&c->u2c.hdr);
		c->u2c.hoff = 0;
		px_admin_answer(p, h, &c->u2c.hdr); /* answers with Connection: close */
		c->close_after = true;
		c->st = PX_CS_ANSWER;
		return PX_AGAIN;
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
		return px_conn_answer(c, 404, "unknown_host",
				      "this proxy serves {port}-{sandbox}.<domain> names only", NULL);
	}
	from = px_token_find(h, c->route.id, tok, sizeof(tok));
	if (from == PX_TOKEN_NONE)
		return px_conn_answer(c, 401, "token_required",
				      "this sandbox wants its token: an Authorization: Bearer header, or "
				      "?token= once in a browser",
				      "WWW-Authenticate: Bearer realm=\"cloche\"\r\n");
	if (strcmp(tok, c->tok) != 0) {
		struct shtoken sh;
		bool share = strncmp(tok, "sh1.", 4) == 0;

		if (share ? !shtoken_verify(p->s.token_key, p->s.token_key_len, tok, &sh)
			  : !sbtoken_verify(p->s.token_key, p->s.token_key_len, tok, id, sizeof(id)))
			return px_conn_answer(c, 401, "token_invalid", "the sandbox token is not valid",
					      "WWW-Authenticate: Bearer realm=\"cloche\", error=\"invalid_token\"\r\n");
		if (share)
			snprintf(id, sizeof(id), "%s", sh.id);
		if (strcmp(id, c->route.id) != 0)
			return px_conn_answer(c, 403, "token_other_sandbox",
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
		return px_conn_answer(c, 403, "token_other_sandbox", "the token is for another sandbox", NULL);
	}
	/* A share link opens the desktop, while it lasts (its revocation is
	 * checked with the route). */
	if (c->share[0] && c->route.port != 6080)
		return px_conn_answer(c, 403, "share_port",
				      "a share link opens the sandbox's desktop (port 6080) only", NULL);
	if (c->share[0] && (long long)time(NULL) >= c->share_exp)
		return px_conn_answer(c, 401, "share_expired", "this share link has expired", NULL);
	if (from == PX_TOKEN_COOKIE && !same_origin(h))
		return px_conn_answer(c, 403, "cross_origin",
				      "a request from another origin may not use this sandbox's cookie",
				      NULL);
	if (from == PX_TOKEN_COOKIE && from_elsewhere(h))
		return px_conn_answer(c, 403, "cross_site",
				      "a page of another site or sandbox may not use this sandbox's cookie "
				      "(only following a link to it may)",
				      NULL);
	if (from == PX_TOKEN_QUERY && !c->upgrade && h->body == PX_BODY_NONE &&
	    (px_span_ieq(h->method, "GET") || c->head_method))
		return token_redirect(c, h);

	/* The sandbox: its entry, limits and drains. */
	if (c->rt && strcmp(c->rt->id, c->route.id) != 0) {
		px_conn_leave_rt(c);
		c->have_view = false;
	}
	if (!c->rt) {
		c->rt = px_routes_get(p->routes, c->route.id);
		if (!c->rt)
			return px_conn_answer(c, 503, "no_memory", "the proxy is out of memory", NULL);
		if (atomic_fetch_add(&c->rt->conns, 1) >= p->s.max_conns_sandbox) {
			atomic_fetch_add(&p->st.refused_limit, 1);
			c->keep = false;
			return px_conn_answer(c, 503, "too_many_connections",
					      "this sandbox has as many connections as it may have",
					      "Retry-After: 1\r\n");
		}
	}
	c->drain_gen = atomic_load(&c->rt->drain_gen);
	atomic_fetch_add(&c->rt->requests, 1);
	atomic_store(&c->rt->last_seen_ms, now);
	c->st = PX_CS_ROUTE;
	c->deadline = now + (uint64_t)p->s.connect_timeout_ms;
	return PX_AGAIN;
}
