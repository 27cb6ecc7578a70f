/* Unit tests for the proxy's HTTP pieces: the request and response head
 * parser (px_head), Host routing (px_host), the chunked-framing walker
 * (px_chunk) and the heads passed on (px_rewrite).  Table-driven, with the
 * smuggling cases of RFC 9112 section 6.3 and 11.2 refused, and the framing
 * walked in every split a socket could deliver, since that is where an
 * incremental parser goes wrong. */
#include "proxy/px_chunk.h"
#include "proxy/px_head.h"
#include "proxy/px_host.h"
#include "proxy/px_rewrite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H "Host: 8889-sb-1.d\r\n"

static const struct {
	const char *name, *head;
	enum px_head_result want;
	enum px_body body;
	bool keep_alive, upgrade;
} heads[] = {
	{"plain GET", "GET / HTTP/1.1\r\n" H "\r\n", PX_HEAD_OK, PX_BODY_NONE, true, false},
	{"HTTP/1.0 closes", "GET / HTTP/1.0\r\n\r\n", PX_HEAD_OK, PX_BODY_NONE, false, false},
	{"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", PX_HEAD_OK,
	 PX_BODY_NONE, true, false},
	{"Connection: close", "GET / HTTP/1.1\r\n" H "Connection: close\r\n\r\n", PX_HEAD_OK,
	 PX_BODY_NONE, false, false},
	{"WebSocket upgrade", "GET /ws HTTP/1.1\r\n" H "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n",
	 PX_HEAD_OK, PX_BODY_NONE, true, true},
	{"Connection upgrade without Upgrade", "GET / HTTP/1.1\r\n" H "Connection: upgrade\r\n\r\n",
	 PX_HEAD_OK, PX_BODY_NONE, true, false},
	{"Content-Length", "POST / HTTP/1.1\r\n" H "Content-Length: 12\r\n\r\n", PX_HEAD_OK,
	 PX_BODY_LENGTH, true, false},
	{"Content-Length 0", "POST / HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n", PX_HEAD_OK,
	 PX_BODY_NONE, true, false},
	{"same Content-Length twice", "POST / HTTP/1.1\r\n" H "Content-Length: 3\r\nContent-Length: 3\r\n\r\n",
	 PX_HEAD_OK, PX_BODY_LENGTH, true, false},
	{"chunked", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n", PX_HEAD_OK,
	 PX_BODY_CHUNKED, true, false},
	{"partial", "GET / HTTP/1.1\r\n" H, PX_HEAD_PARTIAL, 0, 0, 0},
	{"partial request line", "GET / HT", PX_HEAD_PARTIAL, 0, 0, 0},
	{"CL and TE", "POST / HTTP/1.1\r\n" H "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
	 PX_HEAD_BAD, 0, 0, 0},
	{"two different CL", "POST / HTTP/1.1\r\n" H "Content-Length: 4\r\nContent-Length: 5\r\n\r\n",
	 PX_HEAD_BAD, 0, 0, 0},
	{"CL list", "POST / HTTP/1.1\r\n" H "Content-Length: 4, 4\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"CL sign", "POST / HTTP/1.1\r\n" H "Content-Length: +4\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"TE not ending in chunked", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked, gzip\r\n\r\n",
	 PX_HEAD_BAD, 0, 0, 0},
	{"TE gzip, chunked", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: gzip, chunked\r\n\r\n",
	 PX_HEAD_UNSUPPORTED, 0, 0, 0},
	{"two TE headers", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	 PX_HEAD_BAD, 0, 0, 0},
	{"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"obs-fold", "GET / HTTP/1.1\r\n" H "X-A: 1\r\n 2\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"space before colon", "GET / HTTP/1.1\r\n" H "Content-Length : 4\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"bare LF", "GET / HTTP/1.1\n" H "\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"bare CR in a value", "GET / HTTP/1.1\r\n" H "X-A: a\rb\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"NUL in a value", "GET / HTTP/1.1\r\n" H "X-A: a\001b\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"no Host in 1.1", "GET / HTTP/1.1\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"two Hosts", "GET / HTTP/1.1\r\n" H H "\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"a bare query as target", "GET ?token=st1.a.b HTTP/1.1\r\n" H "\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"absolute-form target", "GET http://x/ HTTP/1.1\r\n" H "\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"a fragment in the target", "GET /p#x?token=st1.a.b HTTP/1.1\r\n" H "\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"OPTIONS *", "OPTIONS * HTTP/1.1\r\n" H "\r\n", PX_HEAD_OK, PX_BODY_NONE, true, false},
	{"HTTP/2.0", "GET / HTTP/2.0\r\n" H "\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"HTTP/1.2", "GET / HTTP/1.2\r\n" H "\r\n", PX_HEAD_UNSUPPORTED, 0, 0, 0},
	{"space in the target", "GET /a b HTTP/1.1\r\n" H "\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"no method", " / HTTP/1.1\r\n" H "\r\n", PX_HEAD_BAD, 0, 0, 0},
	{"empty header name", "GET / HTTP/1.1\r\n" H ": x\r\n\r\n", PX_HEAD_BAD, 0, 0, 0},
};

START_TEST(head_table)
{
	struct px_head h;
	const char *why = NULL;
	enum px_head_result r = px_head_parse(heads[_i].head, strlen(heads[_i].head), &h, &why);

	ck_assert_msg(r == heads[_i].want, "%s: got %d (%s)", heads[_i].name, r, why ? why : "");
	if (r != PX_HEAD_OK)
		return;
	ck_assert_msg(h.len == strlen(heads[_i].head), "%s: len", heads[_i].name);
	ck_assert_msg(h.body == heads[_i].body, "%s: body", heads[_i].name);
	ck_assert_msg(h.keep_alive == heads[_i].keep_alive, "%s: keep-alive", heads[_i].name);
	ck_assert_msg(h.upgrade == heads[_i].upgrade, "%s: upgrade", heads[_i].name);
}
END_TEST

START_TEST(head_spans)
{
	static const char req[] = "PUT /x?y=1 HTTP/1.1\r\nHost: 80-sb-a.d\r\nX-Pad:  v a l  \r\n"
				  "Content-Length: 7\r\n\r\nbody...NEXT";
	struct px_head h;

	ck_assert_int_eq(px_head_parse(req, sizeof(req) - 1, &h, NULL), PX_HEAD_OK);
	ck_assert(px_span_ieq(h.method, "PUT"));
	ck_assert(px_span_ieq(h.target, "/x?y=1"));
	ck_assert(px_span_ieq(h.host, "80-sb-a.d"));
	ck_assert(px_span_ieq(px_head_get(&h, "x-pad")->value, "v a l"));
	ck_assert_uint_eq(h.content_length, 7);
	ck_assert_str_eq(req + h.len, "body...NEXT");
	ck_assert_ptr_null(px_head_get(&h, "cookie"));
}
END_TEST

START_TEST(head_too_many)
{
	char buf[8192];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\n" H);
	struct px_head h;

	for (int i = 0; i < PX_HEAD_MAX_HEADERS; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "X-%d: 1\r\n", i);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n");
	ck_assert_int_eq(px_head_parse(buf, n, &h, NULL), PX_HEAD_TOO_MANY);
}
END_TEST

static const struct {
	const char *host;
	bool ok;
	int port;
	const char *id;
} hosts[] = {
	{"8889-sb-0123456789abcdef.cloche.localhost", true, 8889, "sb-0123456789abcdef"},
	{"6080-SB-AB.Cloche.Localhost", true, 6080, "sb-ab"},
	{"6080-sb-ab.cloche.localhost:7080", true, 6080, "sb-ab"},
	{"6080-sb-ab.cloche.localhost.", true, 6080, "sb-ab"},
	{"65535-x.cloche.localhost", true, 65535, "x"},
	{"65536-x.cloche.localhost", false, 0, NULL},
	{"0-x.cloche.localhost", false, 0, NULL},
	{"080-x.cloche.localhost", false, 0, NULL},
	{"8889.cloche.localhost", false, 0, NULL},
	{"8889-.cloche.localhost", false, 0, NULL},
	{"8889--x.cloche.localhost", false, 0, NULL},
	{"-x.cloche.localhost", false, 0, NULL},
	{"8889-sb_x.cloche.localhost", false, 0, NULL},
	{"8889-sb.x.cloche.localhost", false, 0, NULL},
	{"8889-x.evil.localhost", false, 0, NULL},
	{"8889-x.cloche.localhost.evil", false, 0, NULL},
	{"8889-xcloche.localhost", false, 0, NULL},
	{"cloche.localhost", false, 0, NULL},
	{"8889-x.cloche.localhost:", false, 0, NULL},
	{"8889-x.cloche.localhost:80a", false, 0, NULL},
	{"8889-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.cloche.localhost", false, 0, NULL}, /* 32 chars */
	{"", false, 0, NULL},
};

START_TEST(host_table)
{
	struct px_route r;
	struct px_span s = {hosts[_i].host, strlen(hosts[_i].host)};
	bool ok = px_host_route(s, "cloche.localhost", &r);

	ck_assert_msg(ok == hosts[_i].ok, "%s", hosts[_i].host);
	if (ok) {
		ck_assert_int_eq(r.port, hosts[_i].port);
		ck_assert_str_eq(r.id, hosts[_i].id);
	}
}
END_TEST

static void parse(const char *req, struct px_head *h)
{
	ck_assert_int_eq(px_head_parse(req, strlen(req), h, NULL), PX_HEAD_OK);
}

START_TEST(token_places)
{
	struct px_head h;
	char t[128];

	parse("GET /a?x=1&token=st1.q.m HTTP/1.1\r\n" H "Cookie: a=b; cloche_token=st1.c.m\r\n"
	      "Authorization: Bearer st1.b.m\r\n\r\n", &h);
	ck_assert_int_eq(px_token_find(&h, "", t, sizeof(t)), PX_TOKEN_BEARER);
	ck_assert_str_eq(t, "st1.b.m");
	parse("GET /a?x=1&token=st1.q.m HTTP/1.1\r\n" H "Cookie: a=b; cloche_token=st1.c.m\r\n\r\n", &h);
	ck_assert_int_eq(px_token_find(&h, "", t, sizeof(t)), PX_TOKEN_COOKIE);
	ck_assert_str_eq(t, "st1.c.m");
	parse("GET /a?x=1&token=st1.q.m HTTP/1.1\r\n" H "Authorization: Basic eA==\r\n\r\n", &h);
	ck_assert_int_eq(px_token_find(&h, "", t, sizeof(t)), PX_TOKEN_QUERY);
	ck_assert_str_eq(t, "st1.q.m");
	parse("GET /a?mytoken=st1.q.m HTTP/1.1\r\n" H "Cookie: xcloche_token=st1.c\r\n\r\n", &h);
	ck_assert_int_eq(px_token_find(&h, "", t, sizeof(t)), PX_TOKEN_NONE);
}
END_TEST

/* A page of another sandbox on the same domain can set a cloche_token for
 * the whole domain; the browser then sends both, in an order of its own. */
START_TEST(token_cookie_of_this_sandbox)
{
	struct px_head h;
	char t[128];

	parse("GET / HTTP/1.1\r\n" H "Cookie: cloche_token=st1.evil.m; a=b\r\n"
	      "Cookie: cloche_token=st1.mine.m\r\n\r\n", &h);
	ck_assert_int_eq(px_token_find(&h, "mine", t, sizeof(t)), PX_TOKEN_COOKIE);
	ck_assert_str_eq(t, "st1.mine.m");
	parse("GET / HTTP/1.1\r\n" H "Cookie: cloche_token=st1.mine2.m; cloche_token=sh1.mine.s.v.9.m\r\n\r\n",
	      &h);
	ck_assert_int_eq(px_token_find(&h, "mine", t, sizeof(t)), PX_TOKEN_COOKIE);
	ck_assert_str_eq(t, "sh1.mine.s.v.9.m");
	/* none names it: the first, which the proxy then refuses as another's */
	ck_assert_int_eq(px_token_find(&h, "other", t, sizeof(t)), PX_TOKEN_COOKIE);
	ck_assert_str_eq(t, "st1.mine2.m");
}
END_TEST

START_TEST(rewrite_hides_the_token)
{
	struct px_head h;
	struct buf b = BUF_INIT(1 << 16);
	struct err e = ERR_INIT;
	struct px_rewrite_opts o = {.client_addr = "192.0.2.7"};
	const char *s;

	parse("POST /mcp?token=st1.q.m&x=1 HTTP/1.1\r\n" H "Authorization: Bearer st1.b.m\r\n"
	      "Cookie: a=b; cloche_token=st1.c.m; z=y\r\nConnection: keep-alive, X-Hop\r\n"
	      "Keep-Alive: 5\r\nTE: trailers\r\nUpgrade: h2c\r\nX-Forwarded-For: 6.6.6.6\r\n"
	      "Content-Length: 2\r\nMcp-Session-Id: abc\r\n\r\n", &h);
	ck_assert_int_eq(px_rewrite(&h, &o, &b, &e), 0);
	s = buf_str(&b);
	ck_assert_msg(strncmp(s, "POST /mcp?x=1 HTTP/1.1\r\n", 24) == 0, "%s", s);
	ck_assert_ptr_null(strstr(s, "st1."));
	ck_assert_ptr_null(strstr(s, "Authorization"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nCookie: a=b; z=y\r\n"));
	ck_assert_ptr_null(strstr(s, "Keep-Alive"));
	ck_assert_ptr_null(strstr(s, "TE:"));
	ck_assert_ptr_null(strstr(s, "Upgrade"));
	ck_assert_ptr_null(strstr(s, "6.6.6.6"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Forwarded-For: 192.0.2.7\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Forwarded-Proto: http\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Forwarded-Host: 8889-sb-1.d\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nContent-Length: 2\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nMcp-Session-Id: abc\r\n"));
	ck_assert_msg(strstr(s, "Connection: keep-alive\r\n\r\n") == s + strlen(s) - 26, "%s", s);
	buf_free(&b);
	parse("GET /ws HTTP/1.1\r\n" H "Connection: Upgrade\r\nUpgrade: websocket\r\n"
	      "Cookie: cloche_token=st1.c.m\r\n\r\n", &h);
	o.upgrade = true;
	o.tls = true;
	ck_assert_int_eq(px_rewrite(&h, &o, &b, &e), 0);
	s = buf_str(&b);
	ck_assert_ptr_nonnull(strstr(s, "\r\nUpgrade: websocket\r\n"));
	ck_assert_ptr_null(strstr(s, "Cookie"));
	ck_assert_ptr_nonnull(strstr(s, "X-Forwarded-Proto: https"));
	ck_assert_ptr_nonnull(strstr(s, "Connection: upgrade\r\n\r\n"));
	buf_free(&b);
}
END_TEST

static const struct {
	const char *in, *out;
} targets[] = {
	{"/", "/"},
	{"/?token=a", "/"},
	{"/p?token=a&b=1", "/p?b=1"},
	{"/p?b=1&token=a", "/p?b=1"},
	{"/p?b=1&token=a&c=2#f", "/p?b=1&c=2#f"},
	{"/p?mytoken=a", "/p?mytoken=a"},
	{"/p#token=a", "/p#token=a"},
};

START_TEST(target_table)
{
	char out[64];
	struct px_span t = {targets[_i].in, strlen(targets[_i].in)};

	ck_assert_int_eq(px_target_without_token(t, out, sizeof(out)), 0);
	ck_assert_str_eq(out, targets[_i].out);
}
END_TEST

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- px_chunk: where a chunked body ends ---- */

/* Whole, well-formed bodies.  None contains a NUL, so strlen is its length. */
static const char *const chunks_ok[] = {
	"0\r\n\r\n",
	"5\r\nhello\r\n0\r\n\r\n",
	"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
	"5;a=b\r\nhello\r\n0;last\r\n\r\n",
	"5;a=b;c;d=\"q u o\\\"t\"\r\nhello\r\n0\r\n\r\n",
	"5 ;a=b\r\nhello\r\n0\t;x\r\n\r\n",
	"5 \r\nhello\r\n0\r\n\r\n",
	"5;\x80\xff\r\nhello\r\n0\r\n\r\n", /* obs-text in an extension */
	"A\r\n0123456789\r\n0\r\n\r\n",
	"a\r\n0123456789\r\n1F\r\n0123456789abcdef0123456789abcde\r\n0\r\n\r\n",
	"0005\r\nhello\r\n0000\r\n\r\n",
	"0000000000000005\r\nhello\r\n0\r\n\r\n", /* 16 digits */
	"0\r\nX-Trailer: 1\r\n\r\n",
	"5\r\nhello\r\n0\r\nA: 1\r\nB: two words\r\n\r\n",
	"0;e=1\r\nA: 1\r\n\r\n",
	/* data that looks like framing is data */
	"7\r\n0\r\n\r\nab\r\n0\r\n\r\n",
	"2\r\n\r\n\r\n0\r\n\r\n",
};

/* What follows the body on the connection: never part of it. */
#define NEXT "GET / HTTP/1.1\r\n"

/* Starts c from garbage, so that init is seen to reset every field. */
static void chunk_start(struct px_chunk *c)
{
	memset(c, 0xa5, sizeof(*c));
	px_chunk_init(c);
}

START_TEST(chunk_whole)
{
	const char *b = chunks_ok[_i];
	size_t n = strlen(b);
	char more[256];
	struct px_chunk c;
	bool done = false;

	chunk_start(&c);
	ck_assert_msg(px_chunk_scan(&c, b, n, &done) == (long)n, "%s", b);
	ck_assert_msg(done, "%s: not done", b);
	/* The bytes after the end are left for the next message. */
	ck_assert_uint_lt(n + sizeof(NEXT), sizeof(more));
	snprintf(more, sizeof(more), "%s" NEXT, b);
	chunk_start(&c);
	ck_assert_msg(px_chunk_scan(&c, more, strlen(more), &done) == (long)n, "%s", b);
	ck_assert(done);
	/* Even one byte after the end stays out. */
	chunk_start(&c);
	ck_assert_msg(px_chunk_scan(&c, more, n + 1, &done) == (long)n, "%s", b);
	ck_assert(done);
}
END_TEST

START_TEST(chunk_bytewise)
{
	const char *b = chunks_ok[_i];
	size_t n = strlen(b);
	struct px_chunk c;
	bool done = false;

	chunk_start(&c);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(px_chunk_scan(&c, b + i, 1, &done) == 1, "%s: byte %zu", b, i);
		ck_assert_msg(done == (i == n - 1), "%s: done at byte %zu", b, i);
	}
}
END_TEST

/* Two reads at every split point, the second with the next message after
 * the body. */
START_TEST(chunk_split)
{
	const char *b = chunks_ok[_i];
	size_t n = strlen(b);
	char more[256];
	struct px_chunk c;
	bool done = false;

	snprintf(more, sizeof(more), "%s" NEXT, b);
	for (size_t k = 0; k <= n; k++) {
		long r;

		chunk_start(&c);
		r = px_chunk_scan(&c, more, k, &done);
		ck_assert_msg(r == (long)k, "%s: split %zu: first read %ld", b, k, r);
		ck_assert_msg(done == (k == n), "%s: split %zu: done early", b, k);
		if (k == n)
			continue;
		r = px_chunk_scan(&c, more + k, strlen(more) - k, &done);
		ck_assert_msg(r == (long)(n - k), "%s: split %zu: second read %ld", b, k, r);
		ck_assert_msg(done, "%s: split %zu: not done", b, k);
	}
}
END_TEST

static const struct {
	const char *name, *body;
} chunks_bad[] = {
	{"no digits", "\r\nhello\r\n0\r\n\r\n"},
	{"extension without a size", ";a=b\r\n"},
	{"space before the size", " 5\r\nhello\r\n"},
	{"non-hex", "g\r\n"},
	{"non-hex after digits", "5x\r\nhello\r\n"},
	{"0x prefix", "0x5\r\nhello\r\n"},
	{"sign", "-5\r\nhello\r\n"},
	{"17 hex digits", "00000000000000005\r\nhello\r\n0\r\n\r\n"},
	{"17 hex digits, all F", "FFFFFFFFFFFFFFFFF\r\n"},
	{"bare LF after the size", "5\nhello\r\n0\r\n\r\n"},
	{"bare CR after the size", "5\rhello\r\n0\r\n\r\n"},
	{"bare LF in an extension", "5;a=b\nhello\r\n0\r\n\r\n"},
	{"control character in an extension", "5;a\001b\r\nhello\r\n0\r\n\r\n"},
	{"DEL in an extension", "5;a\177b\r\nhello\r\n0\r\n\r\n"},
	{"data longer than the size", "5\r\nhello!\r\n0\r\n\r\n"},
	{"data shorter than the size", "6\r\nhello\r\n0\r\n\r\n"},
	{"bare LF after data", "5\r\nhello\n0\r\n\r\n"},
	{"CR without LF after data", "5\r\nhello\r0\r\n\r\n"},
	{"no CRLF after data", "5\r\nhello0\r\n\r\n"},
	{"bare LF ending the body", "0\r\n\n"},
	{"CR CR ending the body", "0\r\n\r\r\n"},
	{"bare LF ending a trailer", "0\r\nA: 1\n\r\n"},
	{"LF inside a trailer", "0\r\nA: 1\nB: 2\r\n\r\n"},
	{"bare CR in a trailer", "0\r\nA: 1\rB\r\n\r\n"},
	{"bare LF after the last size", "0\nA: 1\r\n\r\n"},
};

START_TEST(chunk_bad)
{
	const char *b = chunks_bad[_i].body;
	size_t n = strlen(b), i;
	struct px_chunk c;
	bool done = false;
	long r = 0;

	chunk_start(&c);
	ck_assert_msg(px_chunk_scan(&c, b, n, &done) == -1, "%s", chunks_bad[_i].name);
	/* The same error when the bytes come one at a time, and no end first. */
	chunk_start(&c);
	for (i = 0; i < n; i++) {
		r = px_chunk_scan(&c, b + i, 1, &done);
		if (r == -1)
			break;
		ck_assert_msg(r == 1 && !done, "%s: byte %zu", chunks_bad[_i].name, i);
	}
	ck_assert_msg(r == -1, "%s: one byte at a time", chunks_bad[_i].name);
}
END_TEST

/* The largest size there is: all of it is data, nothing wraps. */
START_TEST(chunk_huge)
{
	static const char b[] = "FFFFFFFFFFFFFFFF\r\nabc";
	char data[4096];
	struct px_chunk c;
	bool done = true;

	chunk_start(&c);
	ck_assert_int_eq(px_chunk_scan(&c, b, sizeof(b) - 1, &done), (long)sizeof(b) - 1);
	ck_assert(!done);
	memset(data, '\n', sizeof(data));
	ck_assert_int_eq(px_chunk_scan(&c, data, sizeof(data), &done), (long)sizeof(data));
	ck_assert(!done);
	ck_assert_uint_eq(c.n, UINT64_MAX - 3 - sizeof(data));
}
END_TEST

/* Walks b whole and one byte at a time; both must give want (n or -1). */
static void chunk_both_ways(const char *b, size_t n, long want, const char *what)
{
	struct px_chunk c;
	bool done = false;
	long r = 0;
	size_t i;

	chunk_start(&c);
	ck_assert_msg(px_chunk_scan(&c, b, n, &done) == want, "%s: whole", what);
	ck_assert_msg(done == (want >= 0), "%s: done", what);
	chunk_start(&c);
	for (i = 0; i < n && (r = px_chunk_scan(&c, b + i, 1, &done)) == 1; i++)
		;
	ck_assert_msg(want == -1 ? r == -1 : i == n && done, "%s: one byte at a time", what);
}

/* The extension bytes of a size line (from the first ';' or blank on) are
 * bounded at PX_CHUNK_EXT_MAX, on every size line. */
START_TEST(chunk_ext_bound)
{
	static char b[PX_CHUNK_EXT_MAX + 64];
	static const char *const lead[] = {"5;", "5 \t;", "0;"};

	for (size_t l = 0; l < NELEM(lead); l++) {
		for (int over = 0; over <= 1; over++) {
			bool last = lead[l][0] == '0';
			size_t n = (size_t)snprintf(b, sizeof(b), "5\r\nhello\r\n%s", lead[l]);

			/* the extension's bytes are those after the ';' */
			memset(b + n, 'x', PX_CHUNK_EXT_MAX + (size_t)over);
			n += PX_CHUNK_EXT_MAX + (size_t)over;
			n += (size_t)snprintf(b + n, sizeof(b) - n, "%s",
					      last ? "\r\n\r\n" : "\r\nhello\r\n0\r\n\r\n");
			chunk_both_ways(b, n, over ? -1 : (long)n, lead[l]);
		}
	}
}
END_TEST

/* After a chunk size, blanks may lead to `;` or the CR, nothing else: a
 * size line that another parser could read differently is refused. */
START_TEST(chunk_size_then_junk)
{
	static const char *const bad[] = {"5 6\r\nhello\r\n0\r\n\r\n", "5 zz\r\nhello\r\n0\r\n\r\n",
					  "5\tx;a\r\nhello\r\n0\r\n\r\n", "0\r\n X: 1\r\n\r\n",
					  "0\r\nX: \001\r\n\r\n"};
	static const char *const good[] = {"5 \r\nhello\r\n0\r\n\r\n", "5\t ;a=b\r\nhello\r\n0 \r\n\r\n"};

	for (size_t i = 0; i < NELEM(bad); i++)
		chunk_both_ways(bad[i], strlen(bad[i]), -1, bad[i]);
	for (size_t i = 0; i < NELEM(good); i++)
		chunk_both_ways(good[i], strlen(good[i]), (long)strlen(good[i]), good[i]);
}
END_TEST

/* The trailer section is bounded at PX_CHUNK_TRAILER_MAX bytes, CRLFs not
 * counted, across all its lines. */
START_TEST(chunk_trailer_bound)
{
	static char b[PX_CHUNK_TRAILER_MAX + 64];

	for (int lines = 1; lines <= 2; lines++) {
		for (int over = 0; over <= 1; over++) {
			size_t n = (size_t)snprintf(b, sizeof(b), "0\r\n");
			size_t total = PX_CHUNK_TRAILER_MAX + (size_t)over;
			size_t first = lines == 1 ? total : total / 2;

			b[n] = 'A';
			memset(b + n + 1, 'a', first - 1);
			n += first;
			if (lines == 2) {
				memcpy(b + n, "\r\nB", 3);
				memset(b + n + 3, 'b', total - first - 1);
				n += 2 + total - first;
			}
			n += (size_t)snprintf(b + n, sizeof(b) - n, "\r\n\r\n");
			chunk_both_ways(b, n, over ? -1 : (long)n,
					lines == 1 ? "one trailer line" : "two trailer lines");
		}
	}
}
END_TEST

/* ---- px_resp_parse: response heads ---- */

static const struct {
	const char *name, *head;
	bool head_request;
	enum px_head_result want;
	int status, minor;
	enum px_body body;
	uint64_t content_length;
	bool keep_alive;
} resps[] = {
	{"200 with CL", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", false, PX_HEAD_OK, 200, 1,
	 PX_BODY_LENGTH, 5, true},
	{"200 chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, PX_HEAD_OK,
	 200, 1, PX_BODY_CHUNKED, 0, true},
	{"200 until close", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", false, PX_HEAD_OK,
	 200, 1, PX_BODY_CLOSE, 0, true},
	{"200 CL 0", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, PX_HEAD_OK, 200, 1,
	 PX_BODY_NONE, 0, true},
	{"reason with blanks and obs-text", "HTTP/1.1 200 It\tis \xe2\x9c\x93 fine\r\n\r\n", false,
	 PX_HEAD_OK, 200, 1, PX_BODY_CLOSE, 0, true},
	{"no reason", "HTTP/1.1 204\r\n\r\n", false, PX_HEAD_OK, 204, 1, PX_BODY_NONE, 0, true},
	{"empty reason", "HTTP/1.1 204 \r\n\r\n", false, PX_HEAD_OK, 204, 1, PX_BODY_NONE, 0, true},
	{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n", false, PX_HEAD_OK, 200, 0,
	 PX_BODY_LENGTH, 2, false},
	{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n",
	 false, PX_HEAD_OK, 200, 0, PX_BODY_LENGTH, 2, true},
	{"HTTP/1.0 keep-alive, close", "HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\n\r\n",
	 false, PX_HEAD_OK, 200, 0, PX_BODY_CLOSE, 0, false},
	{"HTTP/1.1 close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n", false,
	 PX_HEAD_OK, 200, 1, PX_BODY_LENGTH, 2, false},
	{"HTTP/1.1 close in a list", "HTTP/1.1 200 OK\r\nConnection: x-a , CLOSE\r\n\r\n", false,
	 PX_HEAD_OK, 200, 1, PX_BODY_CLOSE, 0, false},
	{"HTTP/1.1 other token", "HTTP/1.1 200 OK\r\nConnection: closed\r\n\r\n", false, PX_HEAD_OK,
	 200, 1, PX_BODY_CLOSE, 0, true},
	{"404", "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\n", false, PX_HEAD_OK, 404, 1,
	 PX_BODY_LENGTH, 9, true},
	{"599", "HTTP/1.1 599 X\r\n\r\n", false, PX_HEAD_OK, 599, 1, PX_BODY_CLOSE, 0, true},
	{"100", "HTTP/1.1 100 Continue\r\n\r\n", false, PX_HEAD_OK, 100, 1, PX_BODY_NONE, 0, true},
	{"101", "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
	 false, PX_HEAD_OK, 101, 1, PX_BODY_NONE, 0, true},
	{"103 with CL", "HTTP/1.1 103 Early Hints\r\nContent-Length: 5\r\n\r\n", false, PX_HEAD_OK,
	 103, 1, PX_BODY_NONE, 5, true},
	{"199 chunked", "HTTP/1.1 199 X\r\nTransfer-Encoding: chunked\r\n\r\n", false, PX_HEAD_OK,
	 199, 1, PX_BODY_NONE, 0, true},
	{"204 with CL", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", false, PX_HEAD_OK,
	 204, 1, PX_BODY_NONE, 5, true},
	{"204 chunked", "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", false,
	 PX_HEAD_OK, 204, 1, PX_BODY_NONE, 0, true},
	{"304 with CL", "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n", false, PX_HEAD_OK,
	 304, 1, PX_BODY_NONE, 50, true},
	{"304 bare", "HTTP/1.0 304 Not Modified\r\n\r\n", false, PX_HEAD_OK, 304, 0, PX_BODY_NONE, 0,
	 false},
	{"205 bare is until close", "HTTP/1.1 205 Reset Content\r\n\r\n", false, PX_HEAD_OK, 205, 1,
	 PX_BODY_CLOSE, 0, true},
	{"HEAD with CL", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", true, PX_HEAD_OK, 200, 1,
	 PX_BODY_NONE, 100, true},
	{"HEAD chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true, PX_HEAD_OK,
	 200, 1, PX_BODY_NONE, 0, true},
	{"HEAD bare", "HTTP/1.1 200 OK\r\n\r\n", true, PX_HEAD_OK, 200, 1, PX_BODY_NONE, 0, true},
	{"HEAD 404", "HTTP/1.0 404 Not Found\r\nContent-Length: 9\r\n\r\n", true, PX_HEAD_OK, 404, 0,
	 PX_BODY_NONE, 9, false},
	{"Host headers mean nothing", "HTTP/1.1 200 OK\r\nHost: a\r\nHost: b\r\n\r\n", false,
	 PX_HEAD_OK, 200, 1, PX_BODY_CLOSE, 0, true},
	{"same CL twice", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\ncontent-length: 003\r\n\r\n", false,
	 PX_HEAD_OK, 200, 1, PX_BODY_LENGTH, 3, true},
	/* framing that smuggles */
	{"CL and TE", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
	 false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"TE and CL", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
	 false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"CL and TE to HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
	 true, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"CL and TE in a 204", "HTTP/1.1 204 X\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
	 false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"two different CL", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", false,
	 PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"CL list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0,
	 false},
	{"CL of 20 digits", "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n", false,
	 PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"TE chunked, gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", false,
	 PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"TE gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false,
	 PX_HEAD_UNSUPPORTED, 0, 0, 0, 0, false},
	{"TE in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, PX_HEAD_BAD,
	 0, 0, 0, 0, false},
	{"two TE headers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	 false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n", false, PX_HEAD_BAD, 0,
	 0, 0, 0, false},
	{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 5\n\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"bare LF in a header", "HTTP/1.1 200 OK\r\nX-A: 1\nX-B: 2\r\n\r\n", false, PX_HEAD_BAD, 0, 0,
	 0, 0, false},
	{"NUL-ish in a value", "HTTP/1.1 200 OK\r\nX-A: a\001b\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0,
	 false},
	/* status lines */
	{"two-digit status", "HTTP/1.1 20 OK\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"two-digit status, no reason", "HTTP/1.1 20\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"four-digit status", "HTTP/1.1 2000 OK\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"status 600", "HTTP/1.1 600 X\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"status 099", "HTTP/1.1 099 X\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"status 2a0", "HTTP/1.1 2a0 X\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"no space before reason", "HTTP/1.1 200OK\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"two spaces before status", "HTTP/1.1  200 OK\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"control in reason", "HTTP/1.1 200 O\001K\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"lower-case version", "http/1.1 200 OK\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"HTTP/2", "HTTP/2 200 OK\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n", false, PX_HEAD_UNSUPPORTED, 0, 0, 0, 0, false},
	{"a request", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	{"empty line", "\r\n\r\n", false, PX_HEAD_BAD, 0, 0, 0, 0, false},
	/* not all here yet */
	{"nothing", "", false, PX_HEAD_PARTIAL, 0, 0, 0, 0, false},
	{"half a status line", "HTTP/1.1 2", false, PX_HEAD_PARTIAL, 0, 0, 0, 0, false},
	{"status line without CRLF", "HTTP/1.1 200 OK", false, PX_HEAD_PARTIAL, 0, 0, 0, 0, false},
	{"status line, CR", "HTTP/1.1 200 OK\r", false, PX_HEAD_PARTIAL, 0, 0, 0, 0, false},
	{"status line only", "HTTP/1.1 200 OK\r\n", false, PX_HEAD_PARTIAL, 0, 0, 0, 0, false},
	{"headers without the end", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", false,
	 PX_HEAD_PARTIAL, 0, 0, 0, 0, false},
	{"last CR only", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r", true, PX_HEAD_PARTIAL, 0, 0, 0,
	 0, false},
};

START_TEST(resp_table)
{
	const char *b = resps[_i].head, *name = resps[_i].name;
	size_t n = strlen(b);
	struct px_head h;
	const char *why = NULL;
	enum px_head_result r = px_resp_parse(b, n, resps[_i].head_request, &h, &why);
	char more[512];

	ck_assert_msg(r == resps[_i].want, "%s: got %d (%s)", name, r, why ? why : "");
	if (r != PX_HEAD_OK) {
		ck_assert_msg(why && *why, "%s: no reason", name);
		return;
	}
	ck_assert_msg(!why, "%s: a reason for success", name);
	ck_assert_msg(h.len == n, "%s: len %zu", name, h.len);
	ck_assert_msg(h.status == resps[_i].status, "%s: status %d", name, h.status);
	ck_assert_msg(h.minor == resps[_i].minor, "%s: minor", name);
	ck_assert_msg(h.body == resps[_i].body, "%s: body %d", name, h.body);
	ck_assert_msg(h.content_length == resps[_i].content_length, "%s: content-length", name);
	ck_assert_msg(h.keep_alive == resps[_i].keep_alive, "%s: keep-alive", name);
	/* start is the status line, without its CRLF */
	ck_assert_msg(h.start.p == b && h.start.n == (size_t)(strstr(b, "\r\n") - b), "%s: start",
		      name);
	ck_assert_ptr_null(h.method.p);
	ck_assert_ptr_null(h.target.p);
	ck_assert_ptr_null(h.host.p);
	/* A body after the head changes nothing... */
	ck_assert_uint_lt(n + 16, sizeof(more));
	snprintf(more, sizeof(more), "%sHTTP/1.1 200 OK\r\n", b);
	ck_assert_int_eq(px_resp_parse(more, strlen(more), resps[_i].head_request, &h, NULL),
			 PX_HEAD_OK);
	ck_assert_msg(h.len == n && h.body == resps[_i].body, "%s: with a body after it", name);
	/* ...and every part of the head short of all of it is partial. */
	for (size_t k = 0; k < n; k++)
		ck_assert_msg(px_resp_parse(b, k, resps[_i].head_request, &h, &why) == PX_HEAD_PARTIAL,
			      "%s: %zu bytes of it", name, k);
}
END_TEST

START_TEST(resp_spans)
{
	static const char resp[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nX-Pad:  v a l \t\r\n"
				   "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nabcHTTP/1.1 200 OK\r\n";
	struct px_head h;

	ck_assert_int_eq(px_resp_parse(resp, sizeof(resp) - 1, false, &h, NULL), PX_HEAD_OK);
	ck_assert_int_eq(h.status, 404);
	ck_assert(px_span_ieq(h.start, "HTTP/1.1 404 Not Found"));
	ck_assert_uint_eq(h.nh, 4);
	ck_assert(px_span_ieq(px_head_get(&h, "x-pad")->value, "v a l"));
	ck_assert(px_span_ieq(px_head_get(&h, "SET-COOKIE")->value, "a=1"));
	ck_assert(px_span_ieq(h.h[3].value, "b=2"));
	ck_assert_uint_eq(h.content_length, 3);
	ck_assert_str_eq(resp + h.len, "abcHTTP/1.1 200 OK\r\n");
}
END_TEST

/* ---- px_rewrite: what goes on ---- */

START_TEST(rewrite_keeps_the_token)
{
	struct px_head h;
	struct buf b = BUF_INIT(1 << 16);
	struct err e = ERR_INIT;
	struct px_rewrite_opts o = {.client_addr = "192.0.2.7", .keep_token = true};
	const char *s;

	parse("GET /a?token=st1.q.m&x=1 HTTP/1.1\r\n" H "Authorization: Bearer st1.b.m\r\n"
	      "Cookie: a=b; cloche_token=st1.c.m; z=y\r\nConnection: close\r\n\r\n", &h);
	ck_assert_int_eq(px_rewrite(&h, &o, &b, &e), 0);
	s = buf_str(&b);
	ck_assert_msg(strncmp(s, "GET /a?token=st1.q.m&x=1 HTTP/1.1\r\n", 35) == 0, "%s", s);
	ck_assert_ptr_nonnull(strstr(s, "\r\nAuthorization: Bearer st1.b.m\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nCookie: a=b; cloche_token=st1.c.m; z=y\r\n"));
	ck_assert_ptr_null(strstr(s, "close"));
	/* the hop-by-hop headers still go */
	ck_assert_msg(strstr(s, "Connection: keep-alive\r\n\r\n") == s + strlen(s) - 26, "%s", s);
	buf_free(&b);
}
END_TEST

/* Headers a Connection header names are this hop's (RFC 9110 7.6.1), both
 * ways; a cookie hidden behind a tab is still ours and still removed. */
START_TEST(rewrite_connection_names_and_tabbed_cookie)
{
	struct px_head h;
	struct buf b = BUF_INIT(1 << 16);
	struct err e = ERR_INIT;
	struct px_rewrite_opts o = {.client_addr = "192.0.2.7"};
	const char *s;

	parse("GET /a HTTP/1.1\r\n" H "Connection: X-Hop, keep-alive\r\nX-Hop: 1\r\nX-Kept: 2\r\n"
	      "Cookie: a=b;\tcloche_token=st1.c.m\r\n\r\n", &h);
	ck_assert_int_eq(px_rewrite(&h, &o, &b, &e), 0);
	s = buf_str(&b);
	ck_assert_msg(strstr(s, "X-Hop") == NULL, "%s", s);
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Kept: 2\r\n"));
	ck_assert_msg(strstr(s, "st1.") == NULL, "%s", s);
	ck_assert_ptr_nonnull(strstr(s, "\r\nCookie: a=b\r\n"));
	buf_reset(&b);
	ck_assert_int_eq(px_resp_parse("HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\n"
				       "Content-Length: 0\r\n\r\n", 67, false, &h, NULL), PX_HEAD_OK);
	ck_assert_int_eq(px_rewrite_resp(&h, true, 1, &b, &e), 0);
	ck_assert_str_eq(buf_str(&b), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	/* the framing and routing fields stay whatever Connection names */
	buf_reset(&b);
	parse("POST /a HTTP/1.1\r\n" H "Connection: content-length, host, transfer-encoding\r\n"
	      "Content-Length: 5\r\n\r\n", &h);
	ck_assert_int_eq(px_rewrite(&h, &o, &b, &e), 0);
	s = buf_str(&b);
	ck_assert_msg(strstr(s, "\r\nContent-Length: 5\r\n") && strstr(s, "\r\nHost: "), "%s", s);
	/* an HTTP/1.0 request goes as 1.0; equal Content-Lengths go as one */
	buf_reset(&b);
	parse("POST /a HTTP/1.0\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", &h);
	ck_assert_int_eq(px_rewrite(&h, &o, &b, &e), 0);
	s = buf_str(&b);
	ck_assert_msg(strncmp(s, "POST /a HTTP/1.0\r\nContent-Length: 2\r\nX-Forwarded-For", 52) == 0, "%s", s);
	buf_reset(&b);
	ck_assert_int_eq(px_resp_parse("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
				       57, false, &h, NULL), PX_HEAD_OK);
	ck_assert_int_eq(px_rewrite_resp(&h, true, 1, &b, &e), 0);
	ck_assert_str_eq(buf_str(&b), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	/* OPTIONS * gets no query */
	buf_reset(&b);
	parse("OPTIONS * HTTP/1.1\r\n" H "\r\n", &h);
	o.add_query = "secret=S";
	ck_assert_int_eq(px_rewrite(&h, &o, &b, &e), 0);
	ck_assert_msg(strncmp(buf_str(&b), "OPTIONS * HTTP/1.1\r\n", 20) == 0, "%s", buf_str(&b));
	buf_free(&b);
}
END_TEST

static const struct {
	const char *target;
	bool keep_token;
	const char *want; /* the target sent on */
} queries[] = {
	{"/vnc.html", false, "/vnc.html?secret=S"},
	{"/vnc.html?", false, "/vnc.html?secret=S"},
	{"/vnc.html?autoconnect=1", false, "/vnc.html?autoconnect=1&secret=S"},
	{"/vnc.html?secret=X", false, "/vnc.html?secret=X"},
	{"/vnc.html?a=1&secret=X&b=2", false, "/vnc.html?a=1&secret=X&b=2"},
	{"/vnc.html?secret", false, "/vnc.html?secret"},
	{"/vnc.html?secret&a=1", false, "/vnc.html?secret&a=1"},
	{"/vnc.html?secret=", false, "/vnc.html?secret="},
	{"/vnc.html?mysecret=1", false, "/vnc.html?mysecret=1&secret=S"},
	{"/vnc.html?secretx=1", false, "/vnc.html?secretx=1&secret=S"},
	{"/vnc.html?a=secret=1", false, "/vnc.html?a=secret=1&secret=S"},
	{"/secret=1/vnc.html", false, "/secret=1/vnc.html?secret=S"},
	/* the token goes first, then the secret is added to what is left */
	{"/vnc.html?token=st1.q.m", false, "/vnc.html?secret=S"},
	{"/vnc.html?token=st1.q.m&a=1", false, "/vnc.html?a=1&secret=S"},
	{"/vnc.html?token=st1.q.m&secret=X", false, "/vnc.html?secret=X"},
	{"/vnc.html?token=st1.q.m", true, "/vnc.html?token=st1.q.m&secret=S"},
	{"/vnc.html?token=st1.q.m&secret=X", true, "/vnc.html?token=st1.q.m&secret=X"},
};

START_TEST(query_table)
{
	struct px_head h;
	struct buf b = BUF_INIT(1 << 16);
	struct err e = ERR_INIT;
	struct px_rewrite_opts o = {.keep_token = queries[_i].keep_token, .add_query = "secret=S"};
	char req[256], want[256];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n" H "\r\n", queries[_i].target);
	parse(req, &h);
	ck_assert_int_eq(px_rewrite(&h, &o, &b, &e), 0);
	snprintf(want, sizeof(want), "GET %s HTTP/1.1\r\n", queries[_i].want);
	ck_assert_msg(strncmp(buf_str(&b), want, strlen(want)) == 0, "%s: got %s", queries[_i].target,
		      buf_str(&b));
	buf_free(&b);
}
END_TEST

/* Rewrites GET /?aaa...a or GET /aaa...a (n bytes of target); the result of
 * px_rewrite. */
static int rewrite_target(size_t n, bool query, const struct px_rewrite_opts *o, struct err *e)
{
	static char req[9000];
	struct px_head h;
	struct buf b = BUF_INIT(1 << 16);
	size_t k;
	int r;

	memcpy(req, query ? "GET /?" : "GET /a", 6);
	memset(req + 6, 'a', n - 2);
	k = 6 + n - 2;
	k += (size_t)snprintf(req + k, sizeof(req) - k, " HTTP/1.1\r\n" H "\r\n");
	ck_assert_uint_lt(k, sizeof(req) - 1);
	ck_assert_int_eq(px_head_parse(req, k, &h, NULL), PX_HEAD_OK);
	ck_assert_uint_eq(h.target.n, n);
	r = px_rewrite(&h, o, &b, e);
	if (r == 0)
		ck_assert_uint_eq(strcspn(buf_str(&b) + 4, " "), n + (o->add_query ? 9 : 0));
	buf_free(&b);
	return r;
}

/* A target that is rewritten (a query to take the token out of, or one to
 * add to) goes through an 8 KiB buffer: what does not fit is 414.  One
 * passed on as it is has no such bound. */
START_TEST(rewrite_long_target)
{
	struct px_rewrite_opts o = {.add_query = "secret=S"};
	struct err e = ERR_INIT;

	ck_assert_int_eq(rewrite_target(8182, false, &o, &e), 0); /* + "?secret=S" is 8191 */
	ck_assert_int_eq(rewrite_target(8183, false, &o, &e), -1);
	ck_assert_int_eq(e.http_status, 414);
	o.keep_token = true;
	e = (struct err)ERR_INIT;
	ck_assert_int_eq(rewrite_target(8191, true, &o, &e), -1); /* + "&secret=S" */
	ck_assert_int_eq(e.http_status, 414);
	o.add_query = NULL;
	o.keep_token = false;
	e = (struct err)ERR_INIT;
	ck_assert_int_eq(rewrite_target(8191, true, &o, &e), 0);
	ck_assert_int_eq(rewrite_target(8192, true, &o, &e), -1);
	ck_assert_int_eq(e.http_status, 414);
	ck_assert_int_eq(rewrite_target(8800, false, &o, &e), 0);
	o.keep_token = true;
	ck_assert_int_eq(rewrite_target(8800, true, &o, &e), 0);
}
END_TEST

/* Kept header lines go on byte for byte (spacing and case as the server
 * wrote them); only the hop-by-hop ones are taken out. */
#define RESP_HOP "Connection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nProxy-Connection: x\r\n"

static const struct {
	const char *head;
	bool keep_alive;
	int client_minor;
	const char *want;
} resp_rewrites[] = {
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" RESP_HOP "X-A:  b \r\n\r\n", true, 1,
	 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A:  b \r\n\r\n"},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" RESP_HOP "X-A:  b \r\n\r\n", false, 1,
	 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A:  b \r\nConnection: close\r\n\r\n"},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" RESP_HOP "X-A:  b \r\n\r\n", true, 0,
	 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A:  b \r\nConnection: keep-alive\r\n\r\n"},
	{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" RESP_HOP "X-A:  b \r\n\r\n", false, 0,
	 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A:  b \r\nConnection: close\r\n\r\n"},
	{"HTTP/1.1 200 OK\r\nCONNECTION: close\r\nkeep-alive: 1\r\nTransfer-Encoding: chunked\r\n"
	 "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n", true, 1,
	 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n"},
	{"HTTP/1.0 204\r\n\r\n", true, 1, "HTTP/1.0 204\r\n\r\n"},
	{"HTTP/1.1 204 \r\n\r\n", true, 1, "HTTP/1.1 204 \r\n\r\n"},
	{"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nConnection: close\r\n\r\n", false, 1,
	 "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nConnection: close\r\n\r\n"},
	{"HTTP/1.1 200 OK\r\nConnection: close\r\nA:1\r\nKeep-Alive: 1\r\nb:\t2\t\r\nC: 3\r\n"
	 "Proxy-Connection: x\r\n\r\n", true, 1, "HTTP/1.1 200 OK\r\nA:1\r\nb:\t2\t\r\nC: 3\r\n\r\n"},
	{"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", false, 0,
	 "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"},
	{"HTTP/1.1 404 Not  Found \r\nX-Empty:\r\n\r\n", true, 0,
	 "HTTP/1.1 404 Not  Found \r\nX-Empty:\r\nConnection: keep-alive\r\n\r\n"},
	/* a sandbox sets cookies for its own host only, and never the proxy's */
	{"HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/; Domain=.cloche.example\r\n"
	 "Set-Cookie: b=2; domain = x\r\nSet-Cookie: c=3; Path=/; HttpOnly\r\n"
	 "Set-Cookie: cloche_token=st1.x.m; Path=/\r\nSet-Cookie: d=4;DOMAIN\r\n"
	 "Set-Cookie: e=domain=5; Max-Age=9; mydomain=x\r\n\r\n", true, 1,
	 "HTTP/1.1 200 OK\r\nSet-Cookie: c=3; Path=/; HttpOnly\r\n"
	 "Set-Cookie: e=domain=5; Max-Age=9; mydomain=x\r\n\r\n"},
};

START_TEST(resp_rewrite_table)
{
	const char *in = resp_rewrites[_i].head;
	struct px_head h;
	struct buf b = BUF_INIT(1 << 16);
	struct err e = ERR_INIT;

	ck_assert_int_eq(px_resp_parse(in, strlen(in), false, &h, NULL), PX_HEAD_OK);
	ck_assert_int_eq(px_rewrite_resp(&h, resp_rewrites[_i].keep_alive,
					 resp_rewrites[_i].client_minor, &b, &e), 0);
	ck_assert_str_eq(buf_str(&b), resp_rewrites[_i].want);
	buf_free(&b);
}
END_TEST

START_TEST(resp_rewrite_full)
{
	static const char in[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
	struct px_head h;
	struct buf b = BUF_INIT(20);
	struct err e = ERR_INIT;

	ck_assert_int_eq(px_resp_parse(in, sizeof(in) - 1, false, &h, NULL), PX_HEAD_OK);
	ck_assert_int_eq(px_rewrite_resp(&h, true, 1, &b, &e), -1);
	ck_assert_int_eq(e.http_status, 413);
	buf_free(&b);
	b = (struct buf)BUF_INIT(sizeof(in) - 1);
	ck_assert_int_eq(px_rewrite_resp(&h, true, 1, &b, &e), 0);
	ck_assert_str_eq(buf_str(&b), in);
	buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proxy");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, head_table, 0, (int)(sizeof(heads) / sizeof(heads[0])));
	tcase_add_test(tc, head_spans);
	tcase_add_test(tc, head_too_many);
	tcase_add_loop_test(tc, host_table, 0, (int)(sizeof(hosts) / sizeof(hosts[0])));
	tcase_add_test(tc, token_places);
	tcase_add_test(tc, token_cookie_of_this_sandbox);
	tcase_add_test(tc, rewrite_hides_the_token);
	tcase_add_loop_test(tc, target_table, 0, (int)(sizeof(targets) / sizeof(targets[0])));
	tcase_add_loop_test(tc, chunk_whole, 0, (int)NELEM(chunks_ok));
	tcase_add_loop_test(tc, chunk_bytewise, 0, (int)NELEM(chunks_ok));
	tcase_add_loop_test(tc, chunk_split, 0, (int)NELEM(chunks_ok));
	tcase_add_loop_test(tc, chunk_bad, 0, (int)NELEM(chunks_bad));
	tcase_add_test(tc, chunk_huge);
	tcase_add_test(tc, chunk_ext_bound);
	tcase_add_test(tc, chunk_size_then_junk);
	tcase_add_test(tc, chunk_trailer_bound);
	tcase_add_loop_test(tc, resp_table, 0, (int)NELEM(resps));
	tcase_add_test(tc, resp_spans);
	tcase_add_test(tc, rewrite_keeps_the_token);
	tcase_add_test(tc, rewrite_connection_names_and_tabbed_cookie);
	tcase_add_loop_test(tc, query_table, 0, (int)NELEM(queries));
	tcase_add_test(tc, rewrite_long_target);
	tcase_add_loop_test(tc, resp_rewrite_table, 0, (int)NELEM(resp_rewrites));
	tcase_add_test(tc, resp_rewrite_full);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
