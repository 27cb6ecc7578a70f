/* libFuzzer target: the HTTP/1 head parser (common/http1_head, which every
 * server that reads HTTP itself uses) and the proxy's heads built from it,
 * the first code every client and sandbox byte meets.  One input is read
 * as a request head (px_head_parse, then Host routing and px_rewrite), as
 * a request head under every combination of the parser's leniency flags
 * (what the egress proxy and cloche-vnc ask for), as a response head to GET
 * and to HEAD (px_resp_parse, then px_rewrite_resp), and as a chunked body
 * (px_chunk_scan, whole, split in two and a byte at a time).  Checks the
 * promises callers rely on: every span lies inside the input, a head ends
 * where it says whatever follows it, a flag only ever lets more through and
 * never changes what an accepted head means, the framing upstream sees in a
 * rewritten head is the framing the proxy walked, the token does not go
 * on, and the chunk walker gives the same answer however the bytes are
 * cut. */
#include "proxy/px_chunk.h"
#include "proxy/px_head.h"
#include "proxy/px_host.h"
#include "proxy/px_rewrite.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

static const char *const junk = "GARBAGE\r\n\r\nXYZW";

static void inside(const char *buf, size_t len, struct px_span s)
{
	if (s.p && (s.p < buf || s.p + s.n > buf + len))
		abort();
}

static void heads_inside(const char *buf, const struct px_head *h)
{
	inside(buf, h->len, h->start);
	inside(buf, h->len, h->method);
	inside(buf, h->len, h->target);
	inside(buf, h->len, h->host);
	for (size_t i = 0; i < h->nh; i++) {
		inside(buf, h->len, h->h[i].name);
		inside(buf, h->len, h->h[i].value);
	}
}

/* buf[0..len) and then the junk, in a fresh allocation (so ASan sees any
 * read past it). */
static char *with_junk(const char *buf, size_t len)
{
	char *more = malloc(len + 16);

	if (more) {
		memcpy(more, buf, len);
		memcpy(more + len, junk, 16);
	}
	return more;
}

static void route_check(struct px_span host)
{
	struct px_route r;

	if (!px_host_route(host, "cloche.localhost", &r))
		return;
	CHECK(r.port >= 1 && r.port <= 65535);
	CHECK(r.id[0] && strlen(r.id) < sizeof(r.id));
	for (const char *c = r.id; *c; c++)
		CHECK((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-');
}

/* ---- chunked bodies ---- */

/* Walks p[0..n) whole, in two reads split at k, and (when short) a byte at
 * a time: all three must agree, since the walker's answer may not depend on
 * how the socket cut the bytes. */
static void chunk_check(const char *p, size_t n, size_t k)
{
	struct px_chunk c;
	bool done, done2;
	long whole, r1, r2, split;

	px_chunk_init(&c);
	whole = px_chunk_scan(&c, p, n, &done);
	CHECK(whole >= -1 && whole <= (long)n);
	CHECK(whole == -1 ? !done : done || whole == (long)n);
	if (done)
		CHECK(whole >= 5); /* "0\r\n\r\n" is the shortest body */

	px_chunk_init(&c);
	r1 = px_chunk_scan(&c, p, k, &done2);
	if (r1 == -1 || done2) {
		split = r1;
	} else {
		CHECK(r1 == (long)k);
		r2 = px_chunk_scan(&c, p + k, n - k, &done2);
		split = r2 == -1 ? -1 : (long)k + r2;
	}
	CHECK(split == whole && done2 == done);

	if (n > 512)
		return;
	px_chunk_init(&c);
	split = 0;
	done2 = false;
	for (size_t i = 0; i < n && !done2; i++) {
		r1 = px_chunk_scan(&c, p + i, 1, &done2);
		if (r1 == -1) {
			split = -1;
			break;
		}
		CHECK(r1 == 1);
		split++;
	}
	CHECK(split == whole && done2 == done);
}

/* ---- requests ---- */

/* The query of a rewritten target (up to any '#') holds no token=. */
static bool query_has_token(struct px_span t)
{
	const char *q = memchr(t.p, '?', t.n), *hash = memchr(t.p, '#', t.n);
	size_t end = hash ? (size_t)(hash - t.p) : t.n, i;

	if (!q || q > t.p + end)
		return false;
	for (i = (size_t)(q - t.p) + 1; i < end;) {
		size_t j = i;

		while (j < end && t.p[j] != '&')
			j++;
		if (j - i >= 6 && memcmp(t.p + i, "token=", 6) == 0)
			return true;
		i = j + 1;
	}
	return false;
}

static bool bearer(struct px_span v)
{
	size_t i = 7;

	if (v.n < 7 || strncasecmp(v.p, "Bearer ", 7) != 0)
		return false;
	while (i < v.n && v.p[i] == ' ')
		i++;
	return v.n - i > 4 && memcmp(v.p + i, "st1.", 4) == 0;
}

static void rewrite_check(const struct px_head *h, const struct px_rewrite_opts *o)
{
	struct buf b = BUF_INIT(1 << 20);
	struct err e = ERR_INIT;
	struct px_head h2;
	enum px_head_result r;
	const char *s, *t, *sp;

	if (px_rewrite(h, o, &b, &e) == -1) {
		/* only a target too long for the rewrite buffer is refused */
		CHECK(e.http_status == 414 && h->target.n >= 8192 - 64);
		buf_free(&b);
		return;
	}
	s = buf_str(&b);
	CHECK(b.len >= h->method.n + 4 && memcmp(s, h->method.p, h->method.n) == 0 &&
	      s[h->method.n] == ' ');
	CHECK(memcmp(s + b.len - 4, "\r\n\r\n", 4) == 0);
	t = s + h->method.n + 1;
	sp = memchr(t, ' ', b.len - h->method.n - 1);
	CHECK(sp);
	if (sp == t) {
		/* Known: a target that is only a token query (`?token=...`) comes
		 * out empty, which nothing parses; not checked further here. */
		CHECK(!o->keep_token && !o->add_query && h->target.p[0] == '?');
		buf_free(&b);
		return;
	}
	r = px_head_parse(s, b.len, &h2, NULL);
	if (r == PX_HEAD_TOO_MANY)
		CHECK(h->nh > PX_HEAD_MAX_HEADERS - 4); /* the proxy adds up to four */
	else
		CHECK(r == PX_HEAD_OK);
	if (r == PX_HEAD_OK) {
		CHECK(h2.len == b.len);
		/* upstream frames the body as the proxy walked it */
		CHECK(h2.body == h->body && h2.content_length == h->content_length);
		CHECK(h2.minor == h->minor && h2.host.n == h->host.n &&
		      memcmp(h2.host.p, h->host.p, h->host.n) == 0);
		if (o->keep_token && !o->add_query)
			CHECK(h2.target.n == h->target.n &&
			      memcmp(h2.target.p, h->target.p, h->target.n) == 0);
		if (!o->keep_token) {
			CHECK(!query_has_token(h2.target));
			for (size_t i = 0; i < h2.nh; i++)
				CHECK(!px_span_ieq(h2.h[i].name, "authorization") ||
				      !bearer(h2.h[i].value));
		}
		CHECK(o->upgrade || !px_head_get(&h2, "upgrade"));
		CHECK(!px_head_get(&h2, "keep-alive") && !px_head_get(&h2, "proxy-connection"));
	}
	buf_free(&b);
}

static void request_check(const char *buf, size_t size, size_t k)
{
	struct px_head h, h2;
	char tok[256], *more;

	if (px_head_parse(buf, size, &h, NULL) != PX_HEAD_OK)
		return;
	CHECK(h.len > 0 && h.len <= size);
	CHECK(h.start.p == buf && h.start.n + 4 <= h.len);
	heads_inside(buf, &h);
	route_check(h.host);
	/* with no sandbox, and with the one the Host names (cookies that
	 * name it win) */
	if (px_token_find(&h, "", tok, sizeof(tok)) != PX_TOKEN_NONE)
		CHECK(tok[0] && strlen(tok) < sizeof(tok));
	{
		struct px_route r;

		if (h.host.p && px_host_route(h.host, "cloche.localhost", &r) &&
		    px_token_find(&h, r.id, tok, sizeof(tok)) != PX_TOKEN_NONE)
			CHECK(tok[0] && strlen(tok) < sizeof(tok));
	}
	/* The head ends where it says: what follows does not change it. */
	more = with_junk(buf, size);
	if (!more)
		return;
	CHECK(px_head_parse(more, size + 16, &h2, NULL) == PX_HEAD_OK && h2.len == h.len &&
	      h2.nh == h.nh && h2.body == h.body);
	free(more);
	if (h.body == PX_BODY_CHUNKED)
		chunk_check(buf + h.len, size - h.len, k % (size - h.len + 1));
	if (h.minor == 0 && !h.host.p)
		return; /* rewritten as HTTP/1.1, which needs a Host */
	for (int i = 0; i < 4; i++) {
		struct px_rewrite_opts o = {
			.client_addr = i & 1 ? "192.0.2.1" : NULL,
			.tls = i == 1 || i == 2,
			.upgrade = h.upgrade,
			.keep_token = i & 1,
			.add_query = i & 2 ? "secret=S" : NULL,
		};

		rewrite_check(&h, &o);
	}
}

/* ---- the parser's leniency flags ---- */

#define ALL_FLAGS (HTTP1_BARE_LF | HTTP1_NO_HOST | HTTP1_ANY_MINOR | HTTP1_ANY_TARGET)

static bool same_span(struct px_span a, struct px_span b)
{
	return a.p == b.p && a.n == b.n;
}

/* Under each set of flags: the result is one of the five, with a reason
 * exactly when it is not OK; an accepted head lies inside the input, ends
 * where it says, and is accepted with every flag that adds to these; a head
 * the strict parser accepts reads the same under any flags. */
static void flags_check(const char *buf, size_t size)
{
	struct px_head strict, h, more;
	enum px_head_result rs = http1_request_parse(buf, size, 0, &strict, NULL);

	for (unsigned f = 0; f <= ALL_FLAGS; f++) {
		const char *why = "unset";
		enum px_head_result r = http1_request_parse(buf, size, f, &h, &why);
		char *junk;

		CHECK(r <= PX_HEAD_OK && r >= PX_HEAD_UNSUPPORTED);
		CHECK(r == PX_HEAD_OK ? why == NULL : why && *why);
		if (rs == PX_HEAD_OK)
			CHECK(r == PX_HEAD_OK && h.len == strict.len && h.nh == strict.nh &&
			      h.body == strict.body && h.content_length == strict.content_length &&
			      h.minor == strict.minor && h.keep_alive == strict.keep_alive &&
			      h.upgrade == strict.upgrade && same_span(h.target, strict.target) &&
			      same_span(h.host, strict.host));
		if (r != PX_HEAD_OK)
			continue;
		CHECK(h.len > 0 && h.len <= size && h.start.p == buf);
		CHECK(h.minor >= 0 && h.minor <= ((f & HTTP1_ANY_MINOR) ? 9 : 1));
		CHECK(h.body != PX_BODY_CLOSE);
		heads_inside(buf, &h);
		if (!(f & HTTP1_NO_HOST) && h.minor >= 1)
			CHECK(h.host.p);
		if (!(f & HTTP1_ANY_TARGET))
			CHECK(h.target.p[0] == '/' || (h.target.n == 1 && h.target.p[0] == '*'));
		if (!(f & HTTP1_BARE_LF))
			CHECK(memcmp(buf + h.len - 4, "\r\n\r\n", 4) == 0);
		for (size_t i = 0; i < h.target.n; i++)
			CHECK((unsigned char)h.target.p[i] > 0x20 && h.target.p[i] != 0x7f);
		/* more flags: still accepted, the same head */
		CHECK(http1_request_parse(buf, size, ALL_FLAGS, &more, NULL) == PX_HEAD_OK &&
		      more.len == h.len && more.nh == h.nh && more.body == h.body);
		/* what follows the head does not change it */
		junk = with_junk(buf, h.len);
		if (!junk)
			continue;
		CHECK(http1_request_parse(junk, h.len + 16, f, &more, NULL) == PX_HEAD_OK &&
		      more.len == h.len && more.nh == h.nh && more.body == h.body);
		free(junk);
	}
}

/* ---- responses ---- */

static bool resp_dropped(struct px_span name)
{
	return px_span_ieq(name, "connection") || px_span_ieq(name, "keep-alive") ||
	       px_span_ieq(name, "proxy-connection");
}

static void resp_rewrite_check(const struct px_head *h, bool head_request, bool keep, int minor)
{
	struct buf b = BUF_INIT(1 << 20);
	struct err e = ERR_INIT;
	struct px_head h2;
	enum px_head_result r;
	size_t kept = 0;
	bool added = !keep || minor == 0;

	CHECK(px_rewrite_resp(h, keep, minor, &b, &e) == 0);
	CHECK(b.len >= h->start.n + 4 && memcmp(b.data, h->start.p, h->start.n) == 0 &&
	      memcmp(b.data + h->start.n, "\r\n", 2) == 0);
	CHECK(memcmp(b.data + b.len - 4, "\r\n\r\n", 4) == 0);
	for (size_t i = 0; i < h->nh; i++)
		kept += !resp_dropped(h->h[i].name);
	r = px_resp_parse(b.data, b.len, head_request, &h2, NULL);
	/* kept counts headers a Connection header may name too (those go) */
	if (r == PX_HEAD_TOO_MANY) {
		CHECK(added && kept >= PX_HEAD_MAX_HEADERS);
	} else {
		CHECK(r == PX_HEAD_OK && h2.len == b.len);
		CHECK(h2.status == h->status && h2.minor == h->minor);
		CHECK(h2.body == h->body && h2.content_length == h->content_length);
		CHECK(h2.nh <= kept + added);
		CHECK(h2.keep_alive == (keep && (h->minor == 1 || minor == 0)));
	}
	buf_free(&b);
}

static void response_check(const char *buf, size_t size, size_t k)
{
	struct px_head h[2], h2;
	const char *why[2];
	enum px_head_result r[2];
	char *more;

	for (int hr = 0; hr <= 1; hr++) {
		why[hr] = "unset";
		r[hr] = px_resp_parse(buf, size, hr, &h[hr], &why[hr]);
		CHECK(r[hr] <= PX_HEAD_OK && r[hr] >= PX_HEAD_UNSUPPORTED);
		CHECK(r[hr] == PX_HEAD_OK ? why[hr] == NULL : why[hr] && *why[hr]);
	}
	/* a request to HEAD changes what body there is, not whether the head is
	 * good or where it ends */
	CHECK(r[0] == r[1]);
	if (r[0] != PX_HEAD_OK)
		return;
	CHECK(h[0].len == h[1].len && h[0].status == h[1].status && h[0].nh == h[1].nh &&
	      h[0].keep_alive == h[1].keep_alive && h[0].content_length == h[1].content_length);
	for (int hr = 0; hr <= 1; hr++) {
		const struct px_head *x = &h[hr];

		CHECK(x->len >= 16 && x->len <= size);
		CHECK(x->start.p == buf && x->start.n >= 12 && x->start.n + 4 <= x->len);
		CHECK(x->status >= 100 && x->status <= 599 && (x->minor == 0 || x->minor == 1));
		CHECK(!x->method.p && !x->target.p && !x->host.p);
		heads_inside(buf, x);
		if (hr || x->status < 200 || x->status == 204 || x->status == 304)
			CHECK(x->body == PX_BODY_NONE);
		if (x->body == PX_BODY_LENGTH)
			CHECK(x->content_length > 0);
		if (x->body == PX_BODY_CLOSE)
			CHECK(!px_head_get(x, "content-length") && !px_head_get(x, "transfer-encoding"));
		if (x->body == PX_BODY_CHUNKED)
			CHECK(x->minor == 1 && px_head_get(x, "transfer-encoding"));
	}
	more = with_junk(buf, size);
	if (!more)
		return;
	CHECK(px_resp_parse(more, size + 16, false, &h2, NULL) == PX_HEAD_OK && h2.len == h[0].len &&
	      h2.nh == h[0].nh && h2.body == h[0].body);
	free(more);
	if (h[0].body == PX_BODY_CHUNKED)
		chunk_check(buf + h[0].len, size - h[0].len, k % (size - h[0].len + 1));
	for (int hr = 0; hr <= 1; hr++)
		for (int keep = 0; keep <= 1; keep++)
			for (int minor = 0; minor <= 1; minor++)
				resp_rewrite_check(&h[hr], hr, keep, minor);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	/* where to split the input in two, from its own bytes */
	size_t k = size ? ((size_t)data[size - 1] * 131 + (size_t)data[0]) % (size + 1) : 0;

	request_check(buf, size, k);
	flags_check(buf, size);
	response_check(buf, size, k);
	chunk_check(buf, size, k);
	route_check((struct px_span){buf, size});
	return 0;
}
