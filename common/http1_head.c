/* Strict HTTP/1 head parsing; see http1_head.h.  RFC 9112 sections 2-7 for
 * the grammar; where it allows leniency that smugglers use, this is strict,
 * and the few leniencies a server may ask for are flags. */
#include "common/http1_head.h"

#include <string.h>
#include <strings.h>

/* tchar of RFC 9110 5.6.2 */
static bool tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Field value characters: visible, space, tab, obs-text (>= 0x80). */
static bool vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

const struct http1_header *http1_head_get(const struct http1_head *h, const char *name)
{
	for (size_t i = 0; i < h->nh; i++)
		if (http1_span_ieq(h->h[i].name, name))
			return &h->h[i];
	return NULL;
}

/* The line starting at p: *end gets the index of its CR (or of a bare LF
 * with HTTP1_BARE_LF), *next where the next line starts.  HTTP1_PARTIAL
 * when the line is not complete yet, HTTP1_BAD for a CR without LF or,
 * without the flag, a LF without CR. */
static enum http1_result line_end(const char *buf, size_t len, size_t p, unsigned flags,
				  size_t *end, size_t *next)
{
	for (size_t i = p; i < len; i++) {
		if (buf[i] == '\n') {
			if (!(flags & HTTP1_BARE_LF))
				return HTTP1_BAD;
			*end = i;
			*next = i + 1;
			return HTTP1_OK;
		}
		if (buf[i] == '\r') {
			if (i + 1 == len)
				return HTTP1_PARTIAL;
			if (buf[i + 1] != '\n')
				return HTTP1_BAD;
			*end = i;
			*next = i + 2;
			return HTTP1_OK;
		}
	}
	return HTTP1_PARTIAL;
}

static bool parse_uint(struct http1_span s, uint64_t *out)
{
	uint64_t v = 0;

	if (s.n == 0 || s.n > 19)
		return false;
	for (size_t i = 0; i < s.n; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s.p[i] - '0');
	}
	*out = v;
	return true;
}

bool http1_each_token(struct http1_span v, bool (*fn)(struct http1_span t, void *ud), void *ud)
{
	size_t i = 0;

	while (i <= v.n) {
		size_t j = i;
		struct http1_span t;

		while (j < v.n && v.p[j] != ',')
			j++;
		t.p = v.p + i;
		t.n = j - i;
		while (t.n && (*t.p == ' ' || *t.p == '\t')) {
			t.p++;
			t.n--;
		}
		while (t.n && (t.p[t.n - 1] == ' ' || t.p[t.n - 1] == '\t'))
			t.n--;
		if (t.n && !fn(t, ud))
			return false;
		i = j + 1;
	}
	return true;
}

struct conn_tokens {
	bool close, keep, upgrade;
};

static bool conn_token(struct http1_span t, void *ud)
{
	struct conn_tokens *c = ud;

	if (http1_span_ieq(t, "close"))
		c->close = true;
	else if (http1_span_ieq(t, "keep-alive"))
		c->keep = true;
	else if (http1_span_ieq(t, "upgrade"))
		c->upgrade = true;
	return true;
}

struct te_tokens {
	int n;
	bool last_chunked, other;
};

static bool te_token(struct http1_span t, void *ud)
{
	struct te_tokens *te = ud;

	te->n++;
	te->last_chunked = http1_span_ieq(t, "chunked");
	if (!te->last_chunked)
		te->other = true;
	return true;
}

#define FAIL(code, reason)                                                                         \
	do {                                                                                       \
		if (why)                                                                           \
			*why = (reason);                                                           \
		return (code);                                                                     \
	} while (0)

/* The header line buf[p..e), not folded: HTTP1_OK with h filled, or
 * HTTP1_BAD with a reason in *why. */
static enum http1_result field(const char *buf, size_t p, size_t e, struct http1_header *h,
			       const char **why)
{
	size_t c;

	for (c = p; c < e && tchar((unsigned char)buf[c]); c++)
		;
	if (c == e || buf[c] != ':' || c == p) {
		if (buf[p] == ':' || !memchr(buf + p, ':', e - p))
			FAIL(HTTP1_BAD, "malformed header line");
		FAIL(HTTP1_BAD, "malformed header name (or a space before the colon)");
	}
	h->name.p = buf + p;
	h->name.n = c - p;
	c++;
	while (c < e && (buf[c] == ' ' || buf[c] == '\t'))
		c++;
	h->value.p = buf + c;
	h->value.n = e - c;
	for (size_t k = 0; k < h->value.n; k++)
		if (!vchar((unsigned char)h->value.p[k]))
			FAIL(HTTP1_BAD, "control character in a header value");
	while (h->value.n &&
	       (h->value.p[h->value.n - 1] == ' ' || h->value.p[h->value.n - 1] == '\t'))
		h->value.n--;
	return HTTP1_OK;
}

/* The header fields from p on and the empty line after them: fills out's
 * headers, len and the framing facts every message has.  request says
 * which rules apply (Host is a request header). */
static enum http1_result fields(const char *buf, size_t len, size_t p, unsigned flags,
				bool request, struct http1_head *out, const char **why)
{
	size_t e, next;
	enum http1_result r;
	const struct http1_header *cl = NULL, *te = NULL;
	struct conn_tokens conn = {0};
	bool have_upgrade = false;

	for (;;) {
		struct http1_header *h;

		r = line_end(buf, len, p, flags, &e, &next);
		if (r == HTTP1_PARTIAL)
			FAIL(HTTP1_PARTIAL, "incomplete head");
		if (r == HTTP1_BAD)
			FAIL(HTTP1_BAD, "bare CR or LF in a header");
		if (e == p)
			break; /* the empty line */
		if (buf[p] == ' ' || buf[p] == '\t')
			FAIL(HTTP1_BAD, "folded header line (obsolete line folding)");
		if (out->nh == HTTP1_MAX_HEADERS)
			FAIL(HTTP1_TOO_MANY, "too many headers");
		h = &out->h[out->nh];
		if ((r = field(buf, p, e, h, why)) != HTTP1_OK)
			return r;
		out->nh++;
		if (http1_span_ieq(h->name, "content-length")) {
			uint64_t v;

			if (!parse_uint(h->value, &v))
				FAIL(HTTP1_BAD, "malformed Content-Length");
			if (cl && out->content_length != v)
				FAIL(HTTP1_BAD, "conflicting Content-Length headers");
			cl = h;
			out->content_length = v;
		} else if (http1_span_ieq(h->name, "transfer-encoding")) {
			if (te)
				FAIL(HTTP1_BAD, "more than one Transfer-Encoding header");
			te = h;
		} else if (request && http1_span_ieq(h->name, "host")) {
			if (out->host.p)
				FAIL(HTTP1_BAD, "more than one Host header");
			out->host = h->value;
		} else if (http1_span_ieq(h->name, "connection")) {
			http1_each_token(h->value, conn_token, &conn);
		} else if (http1_span_ieq(h->name, "upgrade")) {
			have_upgrade = true;
		}
		p = next;
	}
	out->len = next;
	if (te) {
		struct te_tokens t = {0};

		if (cl)
			FAIL(HTTP1_BAD, "both Content-Length and Transfer-Encoding");
		if (out->minor == 0)
			FAIL(HTTP1_BAD, "Transfer-Encoding in HTTP/1.0");
		http1_each_token(te->value, te_token, &t);
		if (t.n == 0 || !t.last_chunked)
			FAIL(HTTP1_BAD, "Transfer-Encoding that does not end in chunked");
		if (t.other || t.n != 1)
			FAIL(HTTP1_UNSUPPORTED, "transfer codings other than chunked");
		out->body = HTTP1_BODY_CHUNKED;
	} else if (cl) {
		out->body = out->content_length ? HTTP1_BODY_LENGTH : HTTP1_BODY_NONE;
	} else {
		out->body = request ? HTTP1_BODY_NONE : HTTP1_BODY_CLOSE;
	}
	/* a minor above 1 (HTTP1_ANY_MINOR) is read as 1.1 */
	out->keep_alive = out->minor >= 1 ? !conn.close : conn.keep && !conn.close;
	out->upgrade = conn.upgrade && have_upgrade;
	if (why)
		*why = NULL;
	return HTTP1_OK;
}

/* The 8 bytes "HTTP/1.x" at v: sets out->minor.  HTTP1_OK, or a result to
 * return. */
static enum http1_result version(const char *v, unsigned flags, struct http1_head *out,
				 const char **why)
{
	if (memcmp(v, "HTTP/1.", 7) != 0)
		FAIL(HTTP1_BAD, "unsupported protocol (HTTP/1.x only)");
	if (v[7] == '0' || v[7] == '1' ||
	    ((flags & HTTP1_ANY_MINOR) && v[7] >= '2' && v[7] <= '9')) {
		out->minor = v[7] - '0';
		return HTTP1_OK;
	}
	if (flags & HTTP1_ANY_MINOR)
		FAIL(HTTP1_BAD, "unsupported protocol (HTTP/1.x only)");
	FAIL(HTTP1_UNSUPPORTED, "only HTTP/1.0 and HTTP/1.1");
}

enum http1_result http1_request_parse(const char *buf, size_t len, unsigned flags,
				      struct http1_head *out, const char **why)
{
	size_t e, next, p, i;
	const char *sp;
	enum http1_result r;

	memset(out, 0, sizeof(*out));
	/* request-line = method SP request-target SP HTTP-version CRLF */
	r = line_end(buf, len, 0, flags, &e, &next);
	if (r == HTTP1_PARTIAL)
		FAIL(HTTP1_PARTIAL, "incomplete request line");
	if (r == HTTP1_BAD)
		FAIL(HTTP1_BAD, "bare CR or LF in the request line");
	sp = memchr(buf, ' ', e);
	if (!sp)
		FAIL(HTTP1_BAD, "malformed request line");
	for (i = 0; buf + i < sp; i++)
		if (!tchar((unsigned char)buf[i]))
			break;
	if (i == 0 || buf + i != sp)
		FAIL(HTTP1_BAD, "malformed request method");
	out->method.p = buf;
	out->method.n = i;
	p = i + 1;
	for (i = p; i < e && buf[i] != ' '; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			FAIL(HTTP1_BAD, "control character in the request target");
		else if (buf[i] == '#' && !(flags & HTTP1_ANY_TARGET))
			FAIL(HTTP1_BAD, "a fragment in the request target");
	if (i == p || i == e)
		FAIL(HTTP1_BAD, "malformed request line");
	/* A reverse proxy or an origin server takes origin-form (and `*` for
	 * OPTIONS) only: an absolute URL or a bare query would name something
	 * else upstream. */
	if (!(flags & HTTP1_ANY_TARGET) && buf[p] != '/' && !(i - p == 1 && buf[p] == '*'))
		FAIL(HTTP1_BAD, "the request target must start with /");
	out->target.p = buf + p;
	out->target.n = i - p;
	p = i + 1;
	if (e - p != 8)
		FAIL(HTTP1_BAD, "unsupported protocol (HTTP/1.x only)");
	if ((r = version(buf + p, flags, out, why)) != HTTP1_OK)
		return r;
	out->start.p = buf;
	out->start.n = e;
	if ((r = fields(buf, len, next, flags, true, out, why)) != HTTP1_OK)
		return r;
	if (out->minor >= 1 && !out->host.p && !(flags & HTTP1_NO_HOST))
		FAIL(HTTP1_BAD, "HTTP/1.1 without Host");
	return HTTP1_OK;
}

enum http1_result http1_response_parse(const char *buf, size_t len, bool head_request,
				       struct http1_head *out, const char **why)
{
	size_t e, next;
	enum http1_result r;

	memset(out, 0, sizeof(*out));
	/* status-line = HTTP-version SP 3DIGIT SP [ reason-phrase ] CRLF */
	r = line_end(buf, len, 0, 0, &e, &next);
	if (r == HTTP1_PARTIAL)
		FAIL(HTTP1_PARTIAL, "incomplete status line");
	if (r == HTTP1_BAD)
		FAIL(HTTP1_BAD, "bare CR or LF in the status line");
	if (e < 12 || buf[8] != ' ' || (e > 12 && buf[12] != ' ') || buf[9] < '1' || buf[9] > '5' ||
	    buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9')
		FAIL(HTTP1_BAD, "malformed status line");
	if ((r = version(buf, 0, out, why)) != HTTP1_OK)
		return r;
	for (size_t i = 13; i < e; i++)
		if (!vchar((unsigned char)buf[i]))
			FAIL(HTTP1_BAD, "control character in the reason phrase");
	out->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	out->start.p = buf;
	out->start.n = e;
	if ((r = fields(buf, len, next, 0, false, out, why)) != HTTP1_OK)
		return r;
	/* RFC 9112 6.3: these have no body whatever their headers say. */
	if (head_request || out->status < 200 || out->status == 204 || out->status == 304)
		out->body = HTTP1_BODY_NONE;
	return HTTP1_OK;
}
