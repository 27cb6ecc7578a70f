/* Unit tests for common/http1_head's leniency flags: each one relaxes its
 * one rule and nothing else, so what the strict parser refuses for
 * smuggling stays refused under every flag.  The strict parser itself is
 * tested at length through the proxy's names (tests/unit/proxy). */
#include "common/http1_head.h"
#include "tests/unit/unit.h"

#include <string.h>

#define ALL (HTTP1_BARE_LF | HTTP1_NO_HOST | HTTP1_ANY_MINOR | HTTP1_ANY_TARGET)
#define H "Host: a\r\n"

static const struct {
	const char *name, *head;
	unsigned flags;
	enum http1_result want;
	int minor;          /* with HTTP1_OK */
	const char *target; /* with HTTP1_OK, or NULL */
} cases[] = {
	/* HTTP1_BARE_LF */
	{"bare LF, strict", "GET / HTTP/1.1\n" H "\r\n", 0, HTTP1_BAD, 0, NULL},
	{"bare LF", "GET / HTTP/1.1\nHost: a\n\n", HTTP1_BARE_LF, HTTP1_OK, 1, "/"},
	{"LF then CRLF", "GET / HTTP/1.1\nHost: a\r\n\r\n", HTTP1_BARE_LF, HTTP1_OK, 1, "/"},
	{"CRLF then LF", "GET / HTTP/1.1\r\nHost: a\r\n\n", HTTP1_BARE_LF, HTTP1_OK, 1, "/"},
	{"bare CR stays bad", "GET / HTTP/1.1\rHost: a\r\n\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"bare CR in a value", "GET / HTTP/1.1\r\nX: a\rb\n\n", ALL, HTTP1_BAD, 0, NULL},
	{"CR at the end: more to come", "GET / HTTP/1.1\r\n" H "\r", ALL, HTTP1_PARTIAL, 0, NULL},
	{"LF-only head without its end", "GET / HTTP/1.1\nHost: a\n", ALL, HTTP1_PARTIAL, 0, NULL},
	/* HTTP1_NO_HOST */
	{"no Host, strict", "GET / HTTP/1.1\r\n\r\n", 0, HTTP1_BAD, 0, NULL},
	{"no Host", "GET / HTTP/1.1\r\n\r\n", HTTP1_NO_HOST, HTTP1_OK, 1, "/"},
	{"two Hosts stay bad", "GET / HTTP/1.1\r\n" H H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	/* HTTP1_ANY_MINOR */
	{"HTTP/1.2, strict", "GET / HTTP/1.2\r\n" H "\r\n", 0, HTTP1_UNSUPPORTED, 0, NULL},
	{"HTTP/1.2", "GET / HTTP/1.2\r\n" H "\r\n", HTTP1_ANY_MINOR, HTTP1_OK, 2, "/"},
	{"HTTP/1.9 needs Host like 1.1", "GET / HTTP/1.9\r\n\r\n", HTTP1_ANY_MINOR, HTTP1_BAD, 0, NULL},
	{"HTTP/1.x is no version", "GET / HTTP/1.x\r\n" H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"HTTP/2.0 stays bad", "GET / HTTP/2.0\r\n" H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"HTTP/1.10 stays bad", "GET / HTTP/1.10\r\n" H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	/* HTTP1_ANY_TARGET */
	{"absolute-form, strict", "GET http://a/b HTTP/1.1\r\n" H "\r\n", 0, HTTP1_BAD, 0, NULL},
	{"absolute-form", "GET http://a/b HTTP/1.1\r\n" H "\r\n", HTTP1_ANY_TARGET, HTTP1_OK, 1,
	 "http://a/b"},
	{"authority-form", "CONNECT a:443 HTTP/1.1\r\n" H "\r\n", HTTP1_ANY_TARGET, HTTP1_OK, 1,
	 "a:443"},
	{"a bare query", "GET ?q HTTP/1.1\r\n" H "\r\n", HTTP1_ANY_TARGET, HTTP1_OK, 1, "?q"},
	{"a fragment, strict", "GET /a#b HTTP/1.1\r\n" H "\r\n", 0, HTTP1_BAD, 0, NULL},
	{"a fragment", "GET /a#b HTTP/1.1\r\n" H "\r\n", HTTP1_ANY_TARGET, HTTP1_OK, 1, "/a#b"},
	{"a tab in the target stays bad", "GET /a\tb HTTP/1.1\r\n" H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"DEL in the target stays bad", "GET /a\x7f HTTP/1.1\r\n" H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"obs-text in the target", "GET /\xc3\xa9 HTTP/1.1\r\n" H "\r\n", 0, HTTP1_OK, 1,
	 "/\xc3\xa9"},
	/* what no flag relaxes */
	{"obs-fold", "GET / HTTP/1.1\r\n" H "X: 1\r\n 2\r\n\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"space before the colon", "GET / HTTP/1.1\r\n" H "X : 1\r\n\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"CL and TE", "POST / HTTP/1.1\r\n" H "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	 ALL, HTTP1_BAD, 0, NULL},
	{"two CLs", "POST / HTTP/1.1\r\n" H "Content-Length: 1\r\nContent-Length: 2\r\n\r\n", ALL,
	 HTTP1_BAD, 0, NULL},
	{"TE gzip", "POST / HTTP/1.1\r\n" H "Transfer-Encoding: gzip, chunked\r\n\r\n", ALL,
	 HTTP1_UNSUPPORTED, 0, NULL},
	{"TE in 1.2 is 1.1's", "POST / HTTP/1.2\r\n" H "Transfer-Encoding: chunked\r\n\r\n",
	 HTTP1_ANY_MINOR, HTTP1_OK, 2, "/"},
	{"a control character in a value", "GET / HTTP/1.1\r\n" H "X: \x01\r\n\r\n", ALL, HTTP1_BAD, 0,
	 NULL},
	{"an empty method", " / HTTP/1.1\r\n" H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"an empty target", "GET  HTTP/1.1\r\n" H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"an empty request line", "\r\n" H "\r\n", ALL, HTTP1_BAD, 0, NULL},
	{"a bad line before the end", "G(T / HTTP/1.1\r\nHost", ALL, HTTP1_BAD, 0, NULL},
};

START_TEST(flags_table)
{
	struct http1_head h;
	const char *why = "unset";
	size_t len = strlen(cases[_i].head);
	enum http1_result r = http1_request_parse(cases[_i].head, len, cases[_i].flags, &h, &why);

	ck_assert_msg(r == cases[_i].want, "%s: got %d (%s)", cases[_i].name, r, why ? why : "");
	if (r != HTTP1_OK) {
		ck_assert_msg(why && *why, "%s: no reason", cases[_i].name);
		return;
	}
	ck_assert_ptr_null(why);
	ck_assert_uint_eq(h.len, len);
	ck_assert_int_eq(h.minor, cases[_i].minor);
	ck_assert_uint_eq(h.target.n, strlen(cases[_i].target));
	ck_assert_int_eq(memcmp(h.target.p, cases[_i].target, h.target.n), 0);
	/* the flags relax what is accepted, never what an accepted head means */
	if (http1_request_parse(cases[_i].head, len, ALL, &h, NULL) != HTTP1_OK)
		ck_abort_msg("%s: refused with every flag", cases[_i].name);
}
END_TEST

/* A bare LF head reads like its CRLF twin: the same spans, a shorter len. */
START_TEST(bare_lf_same_head)
{
	static const char crlf[] = "POST /p HTTP/1.1\r\nHost: a \r\nContent-Length: 3\r\n"
				   "Connection: close\r\n\r\nabc",
			  lf[] = "POST /p HTTP/1.1\nHost: a \nContent-Length: 3\n"
				 "Connection: close\n\nabc";
	struct http1_head a, b;

	ck_assert_int_eq(http1_request_parse(crlf, sizeof(crlf) - 1, 0, &a, NULL), HTTP1_OK);
	ck_assert_int_eq(http1_request_parse(lf, sizeof(lf) - 1, HTTP1_BARE_LF, &b, NULL), HTTP1_OK);
	ck_assert_uint_eq(a.len, sizeof(crlf) - 4);
	ck_assert_uint_eq(b.len, sizeof(lf) - 4);
	ck_assert_uint_eq(a.nh, b.nh);
	for (size_t i = 0; i < a.nh; i++) {
		ck_assert_uint_eq(a.h[i].value.n, b.h[i].value.n);
		ck_assert_int_eq(memcmp(a.h[i].value.p, b.h[i].value.p, a.h[i].value.n), 0);
	}
	ck_assert_uint_eq(b.host.n, 1);
	ck_assert_int_eq(b.body, HTTP1_BODY_LENGTH);
	ck_assert_uint_eq(b.content_length, 3);
	ck_assert(!b.keep_alive);
	ck_assert_uint_eq(b.start.n, strlen("POST /p HTTP/1.1"));
}
END_TEST

/* The reasons callers tell apart: a version names HTTP/1 (cloche-proxy
 * answers 505), a transfer coding does not (501). */
START_TEST(reasons)
{
	const char *why = NULL;
	struct http1_head h;
	static const char v[] = "GET / HTTP/1.2\r\nHost: a\r\n\r\n",
			  te[] = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";

	ck_assert_int_eq(http1_request_parse(v, sizeof(v) - 1, 0, &h, &why), HTTP1_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(why, "HTTP/1"));
	ck_assert_int_eq(http1_request_parse(te, sizeof(te) - 1, 0, &h, &why), HTTP1_UNSUPPORTED);
	ck_assert_ptr_null(strstr(why, "HTTP/1"));
}
END_TEST

/* http1_each_token: trimmed, empty ones skipped, stops when told. */
static bool collect(struct http1_span t, void *ud)
{
	char *out = ud;

	strncat(out, t.p, t.n);
	strcat(out, "|");
	return !http1_span_ieq(t, "stop");
}

START_TEST(tokens)
{
	char out[64] = "";
	static const char v[] = " a ,, b\t,STOP, c";

	ck_assert(!http1_each_token((struct http1_span){v, sizeof(v) - 1}, collect, out));
	ck_assert_str_eq(out, "a|b|STOP|");
	out[0] = '\0';
	ck_assert(http1_each_token((struct http1_span){v, 7}, collect, out));
	ck_assert_str_eq(out, "a|b|");
}
END_TEST

Suite *suite_http1_head(void)
{
	Suite *s = suite_create("http1_head");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, flags_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, bare_lf_same_head);
	tcase_add_test(tc, reasons);
	tcase_add_test(tc, tokens);
	suite_add_tcase(s, tc);
	return s;
}
