/* Strict HTTP/1.1 request head parsing; see px_head.h.  RFC 9112 section 2-7
 * for the grammar; where it allows leniency that smugglers use, this is
 * strict. */
#include "proxy/px_head.h"

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


const struct px_header *px_head_get(const struct px_head *h, const char *name)
{
	for (size_t i = 0; i < h->nh; i++)
		if (px_span_ieq(h->h[i].name, name))
			return &h->h[i];
	return NULL;
}

/* Finds the CRLF that ends the line starting at p; a bare LF or CR inside
 * is an error.  Returns the index of the CR, or -1 (partial) / -2 (bad). */
static long line_end(const char *buf, size_t len, size_t p)
{
	for (size_t i = p; i < len; i++) {
		if (buf[i] == '\n')
			return -2; /* LF without CR */
		if (buf[i] == '\r') {
			if (i + 1 == len)
				return -1;
			return buf[i + 1] == '\n' ? (long)i : -2;
		}
	}
	return -1;
}

static bool parse_uint(struct px_span s, uint64_t *out)
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

bool px_each_token(struct px_span v, bool (*fn)(struct px_span t, void *ud), void *ud)
{
	size_t i = 0;

	while (i <= v.n) {
		size_t j = i;
		struct px_span t;

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

static bool conn_token(struct px_span t, void *ud)
{
	struct conn_tokens *c = ud;

	if (px_span_ieq(t, "close"))
		c->close = true;
	else if (px_span_ieq(t, "keep-alive"))
		c->keep = true;
	else if (px_span_ieq(t, "upgrade"))
		c->upgrade = true;
	return true;
}

struct te_tokens {
	int n;
	bool last_chunked, other;
};

static bool te_token(struct px_span t, void *ud)
{
	struct te_tokens *te = ud;

	te->n++;
	te->last_chunked = px_span_ieq(t, "chunked");
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

/* The header fields from p on and the empty line after them: fills out's
 * headers, len and the framing facts every message has.  request says
 * which rules apply (Host is a request header). */
static enum px_head_result fields(const char *buf, size_t len, size_t p, bool request,
				  struct px_head *out, const char **why)
{
	long e;
	const struct px_header *cl = NULL, *te = NULL;
	struct conn_tokens conn = {0};
	bool have_upgrade = false;

	for (;;) {
		struct px_header *h;
		size_t c;

		e = line_end(buf, len, p);
		if (e == -1)
			FAIL(PX_HEAD_PARTIAL, "incomplete head");
		if (e == -2)
			FAIL(PX_HEAD_BAD, "bare CR or LF in a header");
		if ((size_t)e == p)
			break; /* the empty line */
		if (buf[p] == ' ' || buf[p] == '\t')
			FAIL(PX_HEAD_BAD, "obsolete line folding");
		if (out->nh == PX_HEAD_MAX_HEADERS)
			FAIL(PX_HEAD_TOO_MANY, "too many headers");
		for (c = p; c < (size_t)e && tchar((unsigned char)buf[c]); c++)
			;
		if (c == p || c >= (size_t)e || buf[c] != ':')
			FAIL(PX_HEAD_BAD, "malformed header name (or a space before the colon)");
		h = &out->h[out->nh++];
		h->name.p = buf + p;
		h->name.n = c - p;
		c++;
		while (c < (size_t)e && (buf[c] == ' ' || buf[c] == '\t'))
			c++;
		h->value.p = buf + c;
		h->value.n = (size_t)e - c;
		for (size_t k = 0; k < h->value.n; k++)
			if (!vchar((unsigned char)h->value.p[k]))
				FAIL(PX_HEAD_BAD, "control character in a header value");
		while (h->value.n && (h->value.p[h->value.n - 1] == ' ' ||
				      h->value.p[h->value.n - 1] == '\t'))
			h->value.n--;
		if (px_span_ieq(h->name, "content-length")) {
			uint64_t v;

			if (!parse_uint(h->value, &v))
				FAIL(PX_HEAD_BAD, "malformed Content-Length");
			if (cl && out->content_length != v)
				FAIL(PX_HEAD_BAD, "conflicting Content-Length headers");
			cl = h;
			out->content_length = v;
		} else if (px_span_ieq(h->name, "transfer-encoding")) {
			if (te)
				FAIL(PX_HEAD_BAD, "more than one Transfer-Encoding header");
			te = h;
		} else if (request && px_span_ieq(h->name, "host")) {
			if (out->host.p)
				FAIL(PX_HEAD_BAD, "more than one Host header");
			out->host = h->value;
		} else if (px_span_ieq(h->name, "connection")) {
			px_each_token(h->value, conn_token, &conn);
		} else if (px_span_ieq(h->name, "upgrade")) {
			have_upgrade = true;
		}
		p = (size_t)e + 2;
	}
	out->len = (size_t)e + 2;
	if (te) {
		struct te_tokens t = {0};

		if (cl)
			FAIL(PX_HEAD_BAD, "both Content-Length and Transfer-Encoding");
		if (out->minor == 0)
			FAIL(PX_HEAD_BAD, "Transfer-Encoding in HTTP/1.0");
		px_each_token(te->value, te_token, &t);
		if (t.n == 0 || !t.last_chunked)
			FAIL(PX_HEAD_BAD, "Transfer-Encoding that does not end in chunked");
		if (t.other || t.n != 1)
			FAIL(PX_HEAD_UNSUPPORTED, "transfer codings other than chunked");
		out->body = PX_BODY_CHUNKED;
	} else if (cl) {
		out->body = out->content_length ? PX_BODY_LENGTH : PX_BODY_NONE;
	} else {
		out->body = request ? PX_BODY_NONE : PX_BODY_CLOSE;
	}
	out->keep_alive = out->minor == 1 ? !conn.close : conn.keep && !conn.close;
	out->upgrade = conn.upgrade && have_upgrade;
	if (why)
		*why = NULL;
	return PX_HEAD_OK;
}

/* "HTTP/1.x" at buf[p]: sets out->minor.  0, or a result to return. */
static enum px_head_result version(const char *buf, size_t p, struct px_head *out,
				   const char **why)
{
	if (strncmp(buf + p, "HTTP/1.", 7) != 0)
		FAIL(PX_HEAD_BAD, "malformed HTTP version");
	if (buf[p + 7] != '0' && buf[p + 7] != '1')
		FAIL(PX_HEAD_UNSUPPORTED, "only HTTP/1.0 and HTTP/1.1");
	out->minor = buf[p + 7] - '0';
	return PX_HEAD_OK;
}

enum px_head_result px_head_parse(const char *buf, size_t len, struct px_head *out,
				  const char **why)
{
	size_t p = 0, i;
	long e;
	enum px_head_result r;

	memset(out, 0, sizeof(*out));
	/* request-line = method SP request-target SP HTTP-version CRLF */
	e = line_end(buf, len, 0);
	if (e == -1)
		FAIL(PX_HEAD_PARTIAL, "incomplete request line");
	if (e == -2)
		FAIL(PX_HEAD_BAD, "bare CR or LF in the request line");
	for (i = 0; i < (size_t)e && tchar((unsigned char)buf[i]); i++)
		;
	if (i == 0 || i >= (size_t)e || buf[i] != ' ')
		FAIL(PX_HEAD_BAD, "malformed method");
	out->method.p = buf;
	out->method.n = i;
	p = i + 1;
	for (i = p; i < (size_t)e && buf[i] != ' '; i++)
		if ((unsigned char)buf[i] <= 0x20 || buf[i] == 0x7f)
			FAIL(PX_HEAD_BAD, "control character in the target");
		else if (buf[i] == '#')
			FAIL(PX_HEAD_BAD, "a fragment in the target");
	if (i == p || i >= (size_t)e)
		FAIL(PX_HEAD_BAD, "malformed request target");
	/* A reverse proxy takes origin-form (and `*` for OPTIONS) only: an
	 * absolute URL or a bare query would name something else upstream. */
	if (buf[p] != '/' && !(i - p == 1 && buf[p] == '*'))
		FAIL(PX_HEAD_BAD, "the target must start with /");
	out->target.p = buf + p;
	out->target.n = i - p;
	p = i + 1;
	if ((size_t)e - p != 8)
		FAIL(PX_HEAD_BAD, "malformed HTTP version");
	if ((r = version(buf, p, out, why)) != PX_HEAD_OK)
		return r;
	out->start.p = buf;
	out->start.n = (size_t)e;
	if ((r = fields(buf, len, (size_t)e + 2, true, out, why)) != PX_HEAD_OK)
		return r;
	if (out->minor == 1 && !out->host.p)
		FAIL(PX_HEAD_BAD, "HTTP/1.1 without Host");
	return PX_HEAD_OK;
}

enum px_head_result px_resp_parse(const char *buf, size_t len, bool head_request,
				  struct px_head *out, const char **why)
{
	long e;
	enum px_head_result r;

	memset(out, 0, sizeof(*out));
	/* status-line = HTTP-version SP 3DIGIT SP [ reason-phrase ] CRLF */
	e = line_end(buf, len, 0);
	if (e == -1)
		FAIL(PX_HEAD_PARTIAL, "incomplete status line");
	if (e == -2)
		FAIL(PX_HEAD_BAD, "bare CR or LF in the status line");
	if (e < 12 || buf[8] != ' ' || (e > 12 && buf[12] != ' ') || buf[9] < '1' || buf[9] > '5' ||
	    buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9')
		FAIL(PX_HEAD_BAD, "malformed status line");
	if ((r = version(buf, 0, out, why)) != PX_HEAD_OK)
		return r;
	for (long i = 13; i < e; i++)
		if (!vchar((unsigned char)buf[i]))
			FAIL(PX_HEAD_BAD, "control character in the reason phrase");
	out->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	out->start.p = buf;
	out->start.n = (size_t)e;
	if ((r = fields(buf, len, (size_t)e + 2, false, out, why)) != PX_HEAD_OK)
		return r;
	/* RFC 9112 6.3: these have no body whatever their headers say. */
	if (head_request || out->status < 200 || out->status == 204 || out->status == 304)
		out->body = PX_BODY_NONE;
	return PX_HEAD_OK;
}
