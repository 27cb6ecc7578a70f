/* Token extraction and the upstream head; see px_rewrite.h. */
#include "proxy/px_rewrite.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Hop-by-hop headers (RFC 9110 7.6.1) and the ones the proxy sets itself. */
static const char *const dropped[] = {
	"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade",
	"proxy-authorization", "proxy-authenticate", "x-forwarded-for", "x-forwarded-proto",
	"x-forwarded-host", "forwarded", NULL,
};

/* px_each_token callback: stops at the token equal to *ud. */
static bool not_name(struct px_span t, void *ud)
{
	const struct px_span *name = ud;

	return !(t.n == name->n && strncasecmp(t.p, name->p, t.n) == 0);
}

/* True when a Connection header of h lists name (RFC 9110 7.6.1: such
 * headers are for this hop only). */
static bool named_in_connection(const struct px_head *h, struct px_span name)
{
	/* Never the fields that frame or route the message: `Connection:
	 * content-length` must not make the proxy send a body the sandbox
	 * does not expect (a smuggling shape). */
	if (px_span_ieq(name, "host") || px_span_ieq(name, "content-length") ||
	    px_span_ieq(name, "transfer-encoding"))
		return false;
	for (size_t i = 0; i < h->nh; i++)
		if (px_span_ieq(h->h[i].name, "connection") &&
		    !px_each_token(h->h[i].value, not_name, &name))
			return true;
	return false;
}

static bool is_dropped(struct px_span name, bool upgrade)
{
	for (const char *const *d = dropped; *d; d++)
		if (px_span_ieq(name, *d))
			return !(upgrade && strcmp(*d, "upgrade") == 0);
	return false;
}

static bool bearer_token(struct px_span v, struct px_span *tok)
{
	if (v.n < 7 || strncasecmp(v.p, "Bearer ", 7) != 0)
		return false;
	tok->p = v.p + 7;
	tok->n = v.n - 7;
	while (tok->n && *tok->p == ' ') {
		tok->p++;
		tok->n--;
	}
	/* ours: a sandbox token or a share link's; any other bearer is the
	 * user's own, for their server inside */
	return tok->n > 4 && (strncmp(tok->p, "st1.", 4) == 0 || strncmp(tok->p, "sh1.", 4) == 0);
}

/* The next `name=value` pair of a Cookie header value from *i on, leading
 * blanks skipped (it may be empty); false at the end. */
static bool cookie_next(struct px_span v, size_t *i, struct px_span *pair)
{
	size_t j = *i;

	if (*i >= v.n)
		return false;
	while (j < v.n && v.p[j] != ';')
		j++;
	while (*i < j && (v.p[*i] == ' ' || v.p[*i] == '\t'))
		(*i)++;
	pair->p = v.p + *i;
	pair->n = j - *i;
	*i = j + 1;
	return true;
}

/* True when pair is cookie name's; its value into *value (may be NULL). */
static bool cookie_is(struct px_span pair, const char *name, struct px_span *value)
{
	size_t nl = strlen(name);

	if (pair.n <= nl || strncmp(pair.p, name, nl) != 0 || pair.p[nl] != '=')
		return false;
	if (value) {
		value->p = pair.p + nl + 1;
		value->n = pair.n - nl - 1;
	}
	return true;
}

/* True when token t names sandbox id: "st1.<id>." or "sh1.<id>.". */
static bool token_names(struct px_span t, const char *id)
{
	size_t n = strlen(id);

	return id[0] && t.n > 5 + n && t.p[3] == '.' && strncmp(t.p + 4, id, n) == 0 &&
	       t.p[4 + n] == '.';
}

/* The value of cookie name in the Cookie headers of h: the first one that
 * names sandbox id (a browser sends every cookie of that name it holds for
 * the host, and a page of another sandbox on the same domain can set one for
 * the whole domain), else the first one. */
static bool cookie_get(const struct px_head *h, const char *name, const char *id,
		       struct px_span *out)
{
	struct px_span pair, v;
	bool found = false;

	for (size_t k = 0; k < h->nh; k++) {
		size_t i = 0;

		if (!px_span_ieq(h->h[k].name, "cookie"))
			continue;
		while (cookie_next(h->h[k].value, &i, &pair)) {
			if (!cookie_is(pair, name, &v))
				continue;
			if (token_names(v, id)) {
				*out = v;
				return true;
			}
			if (!found)
				*out = v;
			found = true;
		}
	}
	return found;
}

/* The value of query parameter name in a target, undecoded. */
static bool query_get_span(struct px_span target, const char *name, struct px_span *out)
{
	const char *q = memchr(target.p, '?', target.n);
	size_t nl = strlen(name), i;

	if (!q)
		return false;
	i = (size_t)(q - target.p) + 1;
	while (i <= target.n) {
		size_t j = i;

		while (j < target.n && target.p[j] != '&' && target.p[j] != '#')
			j++;
		if (j - i > nl && strncmp(target.p + i, name, nl) == 0 && target.p[i + nl] == '=') {
			out->p = target.p + i + nl + 1;
			out->n = j - i - nl - 1;
			return true;
		}
		if (j < target.n && target.p[j] == '#')
			break;
		i = j + 1;
	}
	return false;
}

static enum px_token_from copy(struct px_span s, enum px_token_from from, char *out, size_t len)
{
	if (s.n == 0 || s.n >= len)
		return PX_TOKEN_NONE;
	memcpy(out, s.p, s.n);
	out[s.n] = '\0';
	return from;
}

enum px_token_from px_token_find(const struct px_head *h, const char *id, char *out, size_t len)
{
	struct px_span t;

	for (size_t i = 0; i < h->nh; i++)
		if (px_span_ieq(h->h[i].name, "authorization") && bearer_token(h->h[i].value, &t))
			return copy(t, PX_TOKEN_BEARER, out, len);
	if (cookie_get(h, PX_COOKIE, id, &t))
		return copy(t, PX_TOKEN_COOKIE, out, len);
	if (query_get_span(h->target, "token", &t))
		return copy(t, PX_TOKEN_QUERY, out, len);
	return PX_TOKEN_NONE;
}

int px_target_without_token(struct px_span target, char *out, size_t len)
{
	const char *q = memchr(target.p, '?', target.n);
	size_t o = 0, i, end = target.n;
	bool first = true;
	const char *hash = memchr(target.p, '#', target.n);

	if (hash)
		end = (size_t)(hash - target.p);
	if (!q || q > target.p + end) {
		if (target.n >= len)
			return -1;
		memcpy(out, target.p, target.n);
		out[target.n] = '\0';
		return 0;
	}
	i = (size_t)(q - target.p);
	if (i >= len)
		return -1;
	memcpy(out, target.p, i);
	o = i;
	i++;
	while (i <= end) {
		size_t j = i;

		while (j < end && target.p[j] != '&')
			j++;
		if (j > i && !(j - i >= 6 && strncmp(target.p + i, "token=", 6) == 0)) {
			if (o + 1 + (j - i) >= len)
				return -1;
			out[o++] = first ? '?' : '&';
			memcpy(out + o, target.p + i, j - i);
			o += j - i;
			first = false;
		}
		i = j + 1;
	}
	if (o + (target.n - end) >= len)
		return -1;
	memcpy(out + o, target.p + end, target.n - end);
	o += target.n - end;
	out[o] = '\0';
	return 0;
}

/* Appends a Cookie header without the proxy's cookie (nothing when that
 * was the only one). */
static int cookie_without_ours(struct px_span v, struct buf *out, struct err *e)
{
	struct px_span pair;
	size_t i = 0;
	bool any = false;

	while (cookie_next(v, &i, &pair)) {
		if (pair.n == 0 || cookie_is(pair, PX_COOKIE, NULL))
			continue;
		if (buf_appends(out, any ? "; " : "Cookie: ", e) == -1 ||
		    buf_append(out, pair.p, pair.n, e) == -1)
			return -1;
		any = true;
	}
	return any ? buf_appends(out, "\r\n", e) : 0;
}

/* Appends "name=value" (param) to target's query unless a parameter of
 * that name is there already.  0, or -1 when it does not fit. */
static int add_param(char *target, size_t cap, const char *param)
{
	const char *eq = strchr(param, '=');
	size_t nl = eq ? (size_t)(eq - param) : strlen(param), n = strlen(target);
	char *q = strchr(target, '?'), *hash = strchr(target, '#');
	int w;

	if (hash || target[0] != '/')
		return 0; /* fragments (refused by the parser anyway) and `*` stay as they are */
	for (char *s = q; s && *s;) {
		s++;
		if (strncmp(s, param, nl) == 0 && (s[nl] == '=' || s[nl] == '&' || !s[nl]))
			return 0;
		s = strchr(s, '&');
	}
	w = snprintf(target + n, cap - n, "%s%s", q ? (q[1] ? "&" : "") : "?", param);
	return w < 0 || (size_t)w >= cap - n ? -1 : 0;
}

/* The bytes of header i's line, CRLF included: headers are contiguous in
 * the head, so a line ends where the next begins (the last one before the
 * empty line). */
static const char *line_end(const struct px_head *h, size_t i)
{
	return i + 1 < h->nh ? h->h[i + 1].name.p : h->start.p + h->len - 2;
}

/* Runs of kept header lines are copied as they are, in one append each:
 * most heads keep almost every line. */
struct run {
	const char *p, *end;
};

static int run_flush(struct run *r, struct buf *out, struct err *e)
{
	int rc = r->p ? buf_append(out, r->p, (size_t)(r->end - r->p), e) : 0;

	r->p = r->end = NULL;
	return rc;
}

static int run_keep(struct run *r, const struct px_head *h, size_t i, struct buf *out,
		    struct err *e)
{
	if (r->p && r->end != h->h[i].name.p && run_flush(r, out, e) == -1)
		return -1;
	if (!r->p)
		r->p = h->h[i].name.p;
	r->end = line_end(h, i);
	return 0;
}

/* Response headers the proxy does not pass on: hop-by-hop ones. */
static const char *const resp_dropped[] = {"connection", "keep-alive", "proxy-connection", NULL};

/* A Set-Cookie a sandbox may not send: one with a Domain attribute (it
 * would reach every sandbox under the proxy's domain) or one named like the
 * proxy's own cookie. */
static bool cookie_refused(struct px_span v)
{
	size_t i = 0;
	struct px_span a;
	bool first = true;

	while (cookie_next(v, &i, &a)) {
		if (first && a.n >= sizeof(PX_COOKIE) && strncmp(a.p, PX_COOKIE "=", sizeof(PX_COOKIE)) == 0)
			return true;
		if (!first && a.n >= 6 && strncasecmp(a.p, "domain", 6) == 0 &&
		    (a.n == 6 || a.p[6] == '=' || a.p[6] == ' ' || a.p[6] == '\t'))
			return true;
		first = false;
	}
	return false;
}

int px_rewrite_resp(const struct px_head *h, bool keep_alive, int client_minor, struct buf *out,
		    struct err *e)
{
	struct run run = {NULL, NULL};
	bool conn = px_head_get(h, "connection") != NULL, seen_cl = false;

	if (buf_append(out, h->start.p, h->start.n, e) == -1 || buf_appends(out, "\r\n", e) == -1)
		return -1;
	for (size_t i = 0; i < h->nh; i++) {
		const struct px_header *x = &h->h[i];
		bool drop = false;

		for (const char *const *d = resp_dropped; *d && !drop; d++)
			drop = px_span_ieq(x->name, *d);
		if (px_span_ieq(x->name, "set-cookie"))
			drop |= cookie_refused(x->value);
		if (px_span_ieq(x->name, "content-length")) {
			drop |= seen_cl;
			seen_cl = true;
		}
		if (!drop && conn)
			drop = named_in_connection(h, x->name);
		if (drop ? run_flush(&run, out, e) == -1 : run_keep(&run, h, i, out, e) == -1)
			return -1;
	}
	if (run_flush(&run, out, e) == -1)
		return -1;
	if (!keep_alive)
		return buf_appends(out, "Connection: close\r\n\r\n", e);
	return buf_appends(out, client_minor == 0 ? "Connection: keep-alive\r\n\r\n" : "\r\n", e);
}

int px_rewrite(const struct px_head *h, const struct px_rewrite_opts *o, struct buf *out,
	       struct err *e)
{
	char target[8192];
	struct px_span t;
	const struct px_header *host = NULL;
	bool conn = px_head_get(h, "connection") != NULL, seen_cl = false;
	struct run run = {NULL, NULL};

	if (buf_append(out, h->method.p, h->method.n, e) == -1 || buf_appends(out, " ", e) == -1)
		return -1;
	if (!o->add_query && (o->keep_token || !memchr(h->target.p, '?', h->target.n))) {
		if (buf_append(out, h->target.p, h->target.n, e) == -1)
			return -1;
	} else {
		if (o->keep_token) {
			if (h->target.n >= sizeof(target))
				return err_http(e, 414, "the request target is too long");
			memcpy(target, h->target.p, h->target.n);
			target[h->target.n] = '\0';
		} else if (px_target_without_token(h->target, target, sizeof(target)) == -1) {
			return err_http(e, 414, "the request target is too long");
		}
		if (o->add_query && add_param(target, sizeof(target), o->add_query) == -1)
			return err_http(e, 414, "the request target is too long");
		if (buf_appends(out, target, e) == -1)
			return -1;
	}
	/* An HTTP/1.0 client's request goes as 1.0: the server then sends
	 * nothing a 1.0 client cannot read (chunked, 1xx). */
	if (buf_appends(out, h->minor == 0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n", e) == -1)
		return -1;
	for (size_t i = 0; i < h->nh; i++) {
		const struct px_header *x = &h->h[i];

		bool cl = px_span_ieq(x->name, "content-length");

		if (!host && px_span_ieq(x->name, "host"))
			host = x;
		if (is_dropped(x->name, o->upgrade) || (cl && seen_cl) ||
		    (conn && !(o->upgrade && px_span_ieq(x->name, "upgrade")) &&
		     named_in_connection(h, x->name)) ||
		    (!o->keep_token && px_span_ieq(x->name, "authorization") &&
		     bearer_token(x->value, &t))) {
			/* hop-by-hop, ours, or the sandbox token (the proxy's, not the
			 * sandbox's) */
			if (run_flush(&run, out, e) == -1)
				return -1;
			continue;
		}
		seen_cl |= cl; /* repeats (equal: the parser saw to it) go as one */
		if (!o->keep_token && px_span_ieq(x->name, "cookie")) {
			if (run_flush(&run, out, e) == -1 || cookie_without_ours(x->value, out, e) == -1)
				return -1;
			continue;
		}
		if (run_keep(&run, h, i, out, e) == -1)
			return -1;
	}
	if (run_flush(&run, out, e) == -1 || buf_appends(out, "X-Forwarded-For: ", e) == -1 ||
	    buf_appends(out, o->client_addr ? o->client_addr : "unknown", e) == -1 ||
	    buf_appends(out, o->tls ? "\r\nX-Forwarded-Proto: https\r\n"
				    : "\r\nX-Forwarded-Proto: http\r\n", e) == -1)
		return -1;
	if (host && (buf_appends(out, "X-Forwarded-Host: ", e) == -1 ||
		     buf_append(out, host->value.p, host->value.n, e) == -1 ||
		     buf_appends(out, "\r\n", e) == -1))
		return -1;
	return buf_appends(out, o->upgrade ? "Connection: upgrade\r\n\r\n" : "Connection: keep-alive\r\n\r\n",
			   e);
}
