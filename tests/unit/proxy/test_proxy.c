/* Unit tests for the proxy's request-head parser (px_head) and Host routing
 * (px_host): table-driven, with the smuggling cases of RFC 9112 section 6.3
 * and 11.2 refused. */
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
	ck_assert_int_eq(px_token_find(&h, t, sizeof(t)), PX_TOKEN_BEARER);
	ck_assert_str_eq(t, "st1.b.m");
	parse("GET /a?x=1&token=st1.q.m HTTP/1.1\r\n" H "Cookie: a=b; cloche_token=st1.c.m\r\n\r\n", &h);
	ck_assert_int_eq(px_token_find(&h, t, sizeof(t)), PX_TOKEN_COOKIE);
	ck_assert_str_eq(t, "st1.c.m");
	parse("GET /a?x=1&token=st1.q.m HTTP/1.1\r\n" H "Authorization: Basic eA==\r\n\r\n", &h);
	ck_assert_int_eq(px_token_find(&h, t, sizeof(t)), PX_TOKEN_QUERY);
	ck_assert_str_eq(t, "st1.q.m");
	parse("GET /a?mytoken=st1.q.m HTTP/1.1\r\n" H "Cookie: xcloche_token=st1.c\r\n\r\n", &h);
	ck_assert_int_eq(px_token_find(&h, t, sizeof(t)), PX_TOKEN_NONE);
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
	tcase_add_test(tc, rewrite_hides_the_token);
	tcase_add_loop_test(tc, target_table, 0, (int)(sizeof(targets) / sizeof(targets[0])));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
