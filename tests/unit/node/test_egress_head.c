/* Unit tests for the egress proxy's request layer over common/http1_head
 * (node-agent/na_egress_http.c): what the shared parser lets through for a
 * forward proxy's clients (bare LF lines, HTTP/1.1 without Host, HTTP/1.x,
 * any target form), what it refuses for everyone (smuggling shapes, 431 for
 * too many headers), what the egress refuses before a head is complete, its
 * CONNECT and absolute-form rules on top, and the head it sends upstream.
 * Table-driven. */
#include "node-agent/na_egress.h"
#include "tests/unit/node/suites.h"

#include "common/util.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name, *text;
	int want;             /* 1: parsed (the head is all of text up to `end`), 0, -1 */
	int status;           /* with -1 */
	const char *needle;   /* with -1: in the message */
	bool connect;         /* with 1 */
	const char *host;
	int port, vminor;
	const char *path;     /* with 1 and not CONNECT */
	const char *end;      /* with 1: the head ends before this (NULL: at the end) */
} heads[] = {
	/* what a forward proxy's clients may send */
	{"CONNECT, 1.1 without Host", "CONNECT a.example:443 HTTP/1.1\r\n\r\n", 1, 0, NULL, true,
	 "a.example", 443, 1, NULL, NULL},
	{"CONNECT, 1.0", "CONNECT a.example:443 HTTP/1.0\r\nUser-Agent: x\r\n\r\n", 1, 0, NULL, true,
	 "a.example", 443, 0, NULL, NULL},
	{"CONNECT with early data", "CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n\x16\x03\x01",
	 1, 0, NULL, true, "a.example", 443, 1, NULL, "\x16"},
	{"bare LF lines", "GET http://a.example/x HTTP/1.1\nUser-Agent: x\n\n", 1, 0, NULL, false,
	 "a.example", 80, 1, "/x", NULL},
	{"LF then CRLF", "GET http://a.example/x HTTP/1.1\nA: b\r\n\r\n", 1, 0, NULL, false,
	 "a.example", 80, 1, "/x", NULL},
	{"HTTP/1.2 passes as 1.x", "GET http://a.example/ HTTP/1.2\r\n\r\n", 1, 0, NULL, false,
	 "a.example", 80, 2, "/", NULL},
	{"Host is the URL's", "GET http://a.example:8080/p HTTP/1.1\r\nHost: other\r\n\r\n", 1, 0,
	 NULL, false, "a.example", 8080, 1, "/p", NULL},
	{"a fragment alone", "GET http://a.example#top HTTP/1.1\r\n\r\n", 1, 0, NULL, false,
	 "a.example", 80, 1, "/", NULL},
	{"a path with a fragment", "GET http://a.example/x#f HTTP/1.1\r\n\r\n", 1, 0, NULL, false,
	 "a.example", 80, 1, "/x#f", NULL},
	{"a query alone", "GET http://a.example?q=1 HTTP/1.1\r\n\r\n", 1, 0, NULL, false, "a.example",
	 80, 1, "?q=1", NULL},
	{"an IPv6 literal", "PUT http://[2001:db8::2]/ HTTP/1.1\r\n\r\n", 1, 0, NULL, false,
	 "2001:db8::2", 80, 1, "/", NULL},
	{"a body follows", "POST http://a.example/ HTTP/1.1\r\nContent-Length: 2\r\n\r\nab", 1, 0,
	 NULL, false, "a.example", 80, 1, "/", "ab"},
	/* not complete yet */
	{"nothing", "", 0, 0, NULL, false, NULL, 0, 0, NULL, NULL},
	{"a request line", "CONNECT a:1 HTTP/1.1\r\n", 0, 0, NULL, false, NULL, 0, 0, NULL, NULL},
	{"a CR at the end", "CONNECT a:1 HTTP/1.1\r\n\r", 0, 0, NULL, false, NULL, 0, 0, NULL, NULL},
	{"LF lines, no end", "CONNECT a:1 HTTP/1.1\nHost: a\n", 0, 0, NULL, false, NULL, 0, 0, NULL,
	 NULL},
	/* refused before the head is complete */
	{"TLS to the plain port", "\x16\x03\x01\x02\x00", -1, 400, "control character", false, NULL,
	 0, 0, NULL, NULL},
	{"a control character, more to come", "GET http://a/ HTTP/1.1\r\nX: a\x01", -1, 400,
	 "control character", false, NULL, 0, 0, NULL, NULL},
	{"a bare CR, more to come", "GET http://a/ HTTP/1.1\rX", -1, 400, "bare CR", false, NULL, 0,
	 0, NULL, NULL},
	{"a bad request line, more to come", "G(T http://a/ HTTP/1.1\r\nX: y", -1, 400, "method",
	 false, NULL, 0, 0, NULL, NULL},
	/* refused by the parser, for every server */
	{"CL and TE", "POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
	 -1, 400, "Content-Length and Transfer-Encoding", false, NULL, 0, 0, NULL, NULL},
	{"two Content-Lengths", "POST http://a/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
	 -1, 400, "Content-Length", false, NULL, 0, 0, NULL, NULL},
	{"a transfer coding", "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	 -1, 400, "transfer coding", false, NULL, 0, 0, NULL, NULL},
	{"two Hosts", "CONNECT a:1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -1, 400, "Host", false,
	 NULL, 0, 0, NULL, NULL},
	{"obs-fold", "CONNECT a:1 HTTP/1.1\r\nA: b\r\n c\r\n\r\n", -1, 400, "header", false, NULL, 0,
	 0, NULL, NULL},
	{"a space before the colon", "CONNECT a:1 HTTP/1.1\r\nA : b\r\n\r\n", -1, 400, "header name",
	 false, NULL, 0, 0, NULL, NULL},
	{"a tab in the target", "GET http://a/\tb HTTP/1.1\r\n\r\n", -1, 400, "control character",
	 false, NULL, 0, 0, NULL, NULL},
	{"a control character in a value", "CONNECT a:1 HTTP/1.1\r\nA: \x7f\r\n\r\n", -1, 400,
	 "control character", false, NULL, 0, 0, NULL, NULL},
	{"HTTP/1.x", "CONNECT a:1 HTTP/1.x\r\n\r\n", -1, 400, "HTTP/1.x", false, NULL, 0, 0, NULL,
	 NULL},
	{"HTTP/0.9", "CONNECT a:1 HTTP/0.9\r\n\r\n", -1, 400, "HTTP/1.x", false, NULL, 0, 0, NULL,
	 NULL},
	/* the egress's own rules */
	{"origin-form", "GET /x HTTP/1.1\r\nHost: a\r\n\r\n", -1, 400, "not a proxy request", false,
	 NULL, 0, 0, NULL, NULL},
	{"asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", -1, 400, "not a proxy request",
	 false, NULL, 0, 0, NULL, NULL},
	{"https://", "GET HTTPS://a/ HTTP/1.1\r\n\r\n", -1, 400, "CONNECT", false, NULL, 0, 0, NULL,
	 NULL},
	{"CONNECT is case-sensitive", "connect a:1 HTTP/1.1\r\n\r\n", -1, 400, "not a proxy request",
	 false, NULL, 0, 0, NULL, NULL},
	{"CONNECT to a path", "CONNECT /x HTTP/1.1\r\n\r\n", -1, 400, "invalid character", false, NULL,
	 0, 0, NULL, NULL},
	{"a 16-byte method", "ABCDEFGHIJKLMNOP http://a/ HTTP/1.1\r\n\r\n", -1, 400, "request line",
	 false, NULL, 0, 0, NULL, NULL},
	{"user information", "GET http://u:p@a/ HTTP/1.1\r\n\r\n", -1, 400, "user information", false,
	 NULL, 0, 0, NULL, NULL},
	{"port 0", "GET http://a:0/ HTTP/1.1\r\n\r\n", -1, 400, "bad port", false, NULL, 0, 0, NULL,
	 NULL},
};

START_TEST(head_table)
{
	struct na_egress_req r;
	struct err e = ERR_INIT;
	const char *t = heads[_i].text;
	size_t len = strlen(t);
	int got = na_egress_parse_head(t, len, &r, &e);

	if (heads[_i].want != 1) {
		ck_assert_msg(got == heads[_i].want, "%s: %d (%s)", heads[_i].name, got, e.msg);
		if (got == -1) {
			ck_assert_int_eq(e.http_status, heads[_i].status);
			ck_assert_msg(strstr(e.msg, heads[_i].needle), "%s: `%s` lacks `%s`",
				      heads[_i].name, e.msg, heads[_i].needle);
		}
		return;
	}
	ck_assert_msg(got > 0, "%s: %d (%s)", heads[_i].name, got, e.msg);
	ck_assert_int_eq(got, heads[_i].end ? (int)(strstr(t, heads[_i].end) - t) : (int)len);
	ck_assert(r.connect == heads[_i].connect);
	ck_assert_str_eq(r.host, heads[_i].host);
	ck_assert_int_eq(r.port, heads[_i].port);
	ck_assert_int_eq(r.vminor, heads[_i].vminor);
	if (!r.connect) {
		ck_assert_uint_eq(r.path_len, strlen(heads[_i].path));
		ck_assert_int_eq(memcmp(r.path, heads[_i].path, r.path_len), 0);
	}
}
END_TEST

/* More header lines than the parser holds: 431, like a head too long. */
START_TEST(head_too_many_headers)
{
	char b[NA_EGRESS_MAX_HEAD];
	size_t n = (size_t)snprintf(b, sizeof(b), "CONNECT a:1 HTTP/1.1\r\n");
	struct na_egress_req r;
	struct err e = ERR_INIT;

	for (int i = 0; i < 101; i++)
		n += (size_t)snprintf(b + n, sizeof(b) - n, "X%d: y\r\n", i);
	n += (size_t)snprintf(b + n, sizeof(b) - n, "\r\n");
	ck_assert_int_eq(na_egress_parse_head(b, n, &r, &e), -1);
	ck_assert_int_eq(e.http_status, 431);
	ck_assert_msg(strstr(e.msg, "header lines") != NULL, "%s", e.msg);
	/* one fewer is fine */
	n = (size_t)snprintf(b, sizeof(b), "CONNECT a:1 HTTP/1.1\r\n");
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(b + n, sizeof(b) - n, "X%d: y\r\n", i);
	n += (size_t)snprintf(b + n, sizeof(b) - n, "\r\n");
	ck_assert_int_eq(na_egress_parse_head(b, n, &r, &e), (int)n);
}
END_TEST

/* ---- the head sent upstream for plain HTTP ---- */

static const struct {
	const char *name, *client, *upstream; /* upstream NULL: does not fit (0) */
} ups[] = {
	{"hop-by-hop headers go, the rest stays in order",
	 "GET http://a.example:81/p?q HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\n"
	 "User-Agent: t\r\nConnection: keep-alive\r\nKeep-Alive: 5\r\nProxy-Authorization: Basic x\r\n"
	 "Accept: */*\r\n\r\n",
	 "GET /p?q HTTP/1.1\r\nHost: a.example:81\r\nUser-Agent: t\r\nAccept: */*\r\n"
	 "Connection: close\r\n\r\n"},
	{"bare LF lines go on as CRLF", "GET http://a.example/ HTTP/1.0\nUser-Agent: t\nX: y\n\n",
	 "GET / HTTP/1.0\r\nHost: a.example\r\nUser-Agent: t\r\nX: y\r\nConnection: close\r\n\r\n"},
	{"a query alone gets its /", "GET http://a.example?q HTTP/1.1\r\n\r\n",
	 "GET /?q HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n"},
	{"header lines as sent", "POST http://a.example/ HTTP/1.1\r\nX-Sp:   v  \r\nhOsT: h\r\n"
	 "Hostname: n\r\nConnection-X: c\r\nContent-Length: 0\r\n\r\n",
	 "POST / HTTP/1.1\r\nHost: a.example\r\nX-Sp:   v  \r\nHostname: n\r\nConnection-X: c\r\n"
	 "Content-Length: 0\r\nConnection: close\r\n\r\n"},
	{"the authority as sent", "GET http://A.Example:80 HTTP/1.1\r\n\r\n",
	 "GET / HTTP/1.1\r\nHost: A.Example:80\r\nConnection: close\r\n\r\n"},
};

START_TEST(upstream_table)
{
	struct na_egress_req r;
	struct err e = ERR_INIT;
	const char *t = ups[_i].client;
	int hl = na_egress_parse_head(t, strlen(t), &r, &e);
	char out[1024];
	size_t n;

	ck_assert_msg(hl > 0, "%s: %s", ups[_i].name, e.msg);
	n = na_egress_upstream_head(t, (size_t)hl, &r, out, sizeof(out));
	ck_assert_uint_eq(n, strlen(ups[_i].upstream));
	ck_assert_int_eq(memcmp(out, ups[_i].upstream, n), 0);
	/* one byte short of room: nothing */
	ck_assert_uint_eq(na_egress_upstream_head(t, (size_t)hl, &r, out, n), 0);
}
END_TEST

Suite *suite_node_egress_head(void)
{
	Suite *s = suite_create("egress_head");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, head_table, 0, (int)ARRAY_LEN(heads));
	tcase_add_test(tc, head_too_many_headers);
	tcase_add_loop_test(tc, upstream_table, 0, (int)ARRAY_LEN(ups));
	suite_add_tcase(s, tc);
	return s;
}
