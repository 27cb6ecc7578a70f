/* Unit tests for cloche-vnc's request layer (appliance/vnc/request.c):
 * what each request head gets on the web port (431, 400, 405, 404, a
 * WebSocket, the control calls, the redirect, a file), whether the
 * connection stays open, who passes the WebSocket guard, and the "/"
 * redirect's Location.  Table-driven, from raw bytes as a socket gives
 * them. */
#include "appliance/vnc/request.h"
#include "tests/unit/unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H "Host: localhost:6080\r\n"
#define WS "Upgrade: websocket\r\nConnection: Upgrade\r\n"

enum { PART = VNC_REQ_PARTIAL, BAD = VNC_REQ_MALFORMED, ERR = VNC_REQ_ERROR,
       UPG = VNC_REQ_UPGRADE, CTL = VNC_REQ_CONTROL, RED = VNC_REQ_REDIRECT,
       FILE_ = VNC_REQ_FILE, KEY = VNC_REQ_REKEY };

static const struct {
	const char *name, *bytes;
	int kind, status;
	bool keep_alive, head_only;
	const char *path; /* FILE: the relative path */
} reqs[] = {
	/* files and the redirect */
	{"a file", "GET /vnc.html HTTP/1.1\r\n" H "\r\n", FILE_, 0, true, false, "vnc.html"},
	{"a file by HEAD", "HEAD /app/ui.js HTTP/1.1\r\n" H "\r\n", FILE_, 0, true, true, "app/ui.js"},
	{"HTTP/1.0 closes", "GET /vnc.html HTTP/1.0\r\n\r\n", FILE_, 0, false, false, "vnc.html"},
	{"HTTP/1.0 keep-alive still closes", "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	 FILE_, 0, false, false, "a"},
	{"Connection: close", "GET /a HTTP/1.1\r\n" H "Connection: close\r\n\r\n", FILE_, 0, false,
	 false, "a"},
	{"close among tokens", "GET /a HTTP/1.1\r\n" H "Connection: TE, Close\r\n\r\n", FILE_, 0,
	 false, false, "a"},
	{"closed is not close", "GET /a HTTP/1.1\r\n" H "Connection: closed\r\n\r\n", FILE_, 0, true,
	 false, "a"},
	{"HTTP/1.2 is served, and closes", "GET /a HTTP/1.2\r\n" H "\r\n", FILE_, 0, false, false,
	 "a"},
	{"slashes collapse", "GET //core///rfb.js HTTP/1.1\r\n" H "\r\n", FILE_, 0, true, false,
	 "core/rfb.js"},
	{"escapes decode", "GET /a%20b.txt HTTP/1.1\r\n" H "\r\n", FILE_, 0, true, false, "a b.txt"},
	{"query and fragment are not the path", "GET /vnc.html?x=1#y HTTP/1.1\r\n" H "\r\n", FILE_, 0,
	 true, false, "vnc.html"},
	{"Content-Length: 0 is no body", "GET /a HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n", FILE_, 0,
	 true, false, "a"},
	{"/", "GET / HTTP/1.1\r\n" H "\r\n", RED, 0, true, false, NULL},
	{"/?secret=S", "GET /?secret=S HTTP/1.1\r\n" H "\r\n", RED, 0, true, false, NULL},
	{"HEAD /", "HEAD / HTTP/1.1\r\n" H "\r\n", RED, 0, true, true, NULL},
	{"/ by a path of slashes", "GET /// HTTP/1.1\r\n" H "\r\n", RED, 0, true, false, NULL},
	/* 404 for paths: the connection stays */
	{"..", "GET /../../etc/passwd HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"escaped ..", "GET /a/%2e%2e/b HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"a hidden file", "GET /.git/config HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"a bad escape", "GET /a%zz HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"a short escape", "GET /a% HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"an escaped NUL", "GET /a%00 HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"an escaped backslash", "GET /a%5cb HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"an absolute URL", "GET http://localhost/ HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"*", "GET * HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"a bare query", "GET ?a=1 HTTP/1.1\r\n" H "\r\n", ERR, 404, true, false, NULL},
	{"HEAD of a bad path", "HEAD /.x HTTP/1.1\r\n" H "\r\n", ERR, 404, true, true, NULL},
	/* 405 and 400 for what the files do not take: the connection closes */
	{"POST a file", "POST /vnc.html HTTP/1.1\r\n" H "\r\n", ERR, 405, false, false, NULL},
	{"OPTIONS *", "OPTIONS * HTTP/1.1\r\n" H "\r\n", ERR, 405, false, false, NULL},
	{"lower-case get", "get / HTTP/1.1\r\n" H "\r\n", ERR, 405, false, false, NULL},
	{"405 before the body", "PUT /a HTTP/1.1\r\n" H "Content-Length: 3\r\n\r\nabc", ERR, 405,
	 false, false, NULL},
	{"a body", "GET /a HTTP/1.1\r\n" H "Content-Length: 3\r\n\r\nabc", ERR, 400, false, false,
	 NULL},
	{"a chunked body", "GET /a HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", ERR,
	 400, false, false, NULL},
	{"HEAD with a body", "HEAD /a HTTP/1.1\r\n" H "Content-Length: 3\r\n\r\nabc", ERR, 400, false,
	 true, NULL},
	/* the control calls */
	{"control GET", "GET /cloche/control?viewer=k&since=3 HTTP/1.1\r\n" H "\r\n", CTL, 0, true,
	 false, NULL},
	{"control POST", "POST /cloche/control?action=take HTTP/1.1\r\n" H "\r\n", CTL, 0, true, false,
	 NULL},
	{"control POST, Content-Length: 0",
	 "POST /cloche/control?action=take HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n", CTL, 0, true,
	 false, NULL},
	{"control HEAD", "HEAD /cloche/control HTTP/1.1\r\n" H "\r\n", CTL, 0, true, true, NULL},
	{"rekey POST", "POST /cloche/rekey HTTP/1.1\r\n" H "X-Cloche-Secret: a\r\n\r\n", KEY, 0, true,
	 false, NULL},
	{"rekey GET", "GET /cloche/rekey HTTP/1.1\r\n" H "\r\n", ERR, 405, false, false, NULL},
	{"rekey with a body", "POST /cloche/rekey HTTP/1.1\r\n" H "Content-Length: 2\r\n\r\nab", ERR,
	 400, false, false, NULL},
	{"rekey with a query is no rekey", "POST /cloche/rekey?x=1 HTTP/1.1\r\n" H "\r\n", ERR, 405,
	 false, false, NULL},
	{"control DELETE", "DELETE /cloche/control HTTP/1.1\r\n" H "\r\n", ERR, 405, false, false,
	 NULL},
	{"control with a body", "POST /cloche/control HTTP/1.1\r\n" H "Content-Length: 2\r\n\r\n{}",
	 ERR, 400, false, false, NULL},
	{"control: the body before the method",
	 "PUT /cloche/control HTTP/1.1\r\n" H "Content-Length: 2\r\n\r\n{}", ERR, 400, false, false,
	 NULL},
	{"not the control path", "GET /cloche/controls HTTP/1.1\r\n" H "\r\n", FILE_, 0, true, false,
	 "cloche/controls"},
	/* WebSockets: GET with Upgrade naming websocket, whatever the path */
	{"a WebSocket", "GET /websockify?secret=S HTTP/1.1\r\n" H WS "\r\n", UPG, 0, true, false, NULL},
	{"Upgrade alone is enough", "GET / HTTP/1.1\r\n" H "Upgrade: WebSocket\r\n\r\n", UPG, 0, true,
	 false, NULL},
	{"websocket among upgrades", "GET /x HTTP/1.1\r\n" H "Upgrade: h2c, websocket\r\n\r\n", UPG,
	 0, true, false, NULL},
	{"websocket with parameters", "GET /x HTTP/1.1\r\n" H "Upgrade: websocket;v=1\r\n\r\n", UPG, 0,
	 true, false, NULL},
	{"a WebSocket by HTTP/1.0", "GET /x HTTP/1.0\r\n" WS "\r\n", UPG, 0, false, false, NULL},
	{"a WebSocket with a body", "GET /x HTTP/1.1\r\n" H WS "Content-Length: 1\r\n\r\nx", UPG, 0,
	 true, false, NULL},
	{"websocketx is not websocket", "GET /x HTTP/1.1\r\n" H "Upgrade: websocketx\r\n\r\n", FILE_,
	 0, true, false, "x"},
	{"a WebSocket needs GET", "POST /x HTTP/1.1\r\n" H WS "\r\n", ERR, 405, false, false, NULL},
	{"h2c is no WebSocket", "GET /x HTTP/1.1\r\n" H "Upgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
	 FILE_, 0, true, false, "x"},
	/* heads the parser refuses: 400, closed */
	{"no Host in HTTP/1.1", "GET / HTTP/1.1\r\n\r\n", BAD, 400, false, false, NULL},
	{"two Hosts", "GET / HTTP/1.1\r\n" H H "\r\n", BAD, 400, false, false, NULL},
	{"no version", "GET /\r\n" H "\r\n", BAD, 400, false, false, NULL},
	{"HTTP/2.0", "GET / HTTP/2.0\r\n" H "\r\n", BAD, 400, false, false, NULL},
	{"a bad method", "G(T / HTTP/1.1\r\n" H "\r\n", BAD, 400, false, false, NULL},
	{"a header without colon", "GET / HTTP/1.1\r\n" H "Nope\r\n\r\n", BAD, 400, false, false,
	 NULL},
	{"a space before the colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", BAD, 400, false, false,
	 NULL},
	{"obs-fold", "GET / HTTP/1.1\r\n" H "X: 1\r\n 2\r\n\r\n", BAD, 400, false, false, NULL},
	{"a bare LF", "GET / HTTP/1.1\n" H "\r\n", BAD, 400, false, false, NULL},
	{"a control character", "GET / HTTP/1.1\r\n" H "X: \x01\r\n\r\n", BAD, 400, false, false,
	 NULL},
	{"CL and TE", "GET / HTTP/1.1\r\n" H "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	 BAD, 400, false, false, NULL},
	{"TE gzip", "GET / HTTP/1.1\r\n" H "Transfer-Encoding: gzip\r\n\r\n", BAD, 400, false, false,
	 NULL},
	{"an empty request line", "\r\n\r\n", BAD, 400, false, false, NULL},
	/* incomplete, and 431 when it can never complete */
	{"nothing yet", "", PART, 0, false, false, NULL},
	{"half a line", "GET / HT", PART, 0, false, false, NULL},
	{"no empty line yet", "GET / HTTP/1.1\r\n" H, PART, 0, false, false, NULL},
	{"a bad line, not yet complete", "G(T / HTTP/1.1\r\n" H, PART, 0, false, false, NULL},
	{"a bare-LF head never ends", "GET / HTTP/1.1\nHost: a\n\n", PART, 0, false, false, NULL},
};

START_TEST(read_table)
{
	size_t n = strlen(reqs[_i].bytes);
	char *buf = malloc(n + 1);
	struct vnc_request r;
	const char *nl;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, reqs[_i].bytes, n + 1);
	vnc_request_read(buf, n, &r);
	ck_assert_msg((int)r.kind == reqs[_i].kind && r.status == reqs[_i].status,
		      "%s: kind %d status %d", reqs[_i].name, r.kind, r.status);
	if (r.kind != VNC_REQ_PARTIAL) {
		ck_assert_msg(r.keep_alive == reqs[_i].keep_alive, "%s: keep_alive", reqs[_i].name);
		ck_assert_msg(r.head_only == reqs[_i].head_only, "%s: head_only", reqs[_i].name);
	}
	/* the head is everything up to the empty line, not the body after it */
	nl = strstr(reqs[_i].bytes, "\r\n\r\n");
	if (r.kind != VNC_REQ_PARTIAL)
		ck_assert_uint_eq(r.len, (size_t)(nl - reqs[_i].bytes) + 4);
	if (reqs[_i].path)
		ck_assert_str_eq(r.path, reqs[_i].path);
	/* the bytes after the head are left as they came */
	if (r.len)
		ck_assert_int_eq(memcmp(buf + r.len, reqs[_i].bytes + r.len, n - r.len), 0);
	free(buf);
}
END_TEST

/* The strings the answers use, cut from the head in place. */
START_TEST(read_strings)
{
	char buf[] = "GET /websockify?secret=S HTTP/1.1\r\nHost:  localhost:6080 \r\n"
		     "Origin: http://localhost:6080\r\nIf-Modified-Since: Tue, 01 Jan 2030 00:00:00 GMT\r\n"
		     "Upgrade: websocket\r\n\r\nGET /next HTTP/1.1\r\n";
	struct vnc_request r;

	vnc_request_read(buf, sizeof(buf) - 1, &r);
	ck_assert_int_eq(r.kind, VNC_REQ_UPGRADE);
	ck_assert_str_eq(r.method, "GET");
	ck_assert_str_eq(r.target, "/websockify?secret=S");
	ck_assert_str_eq(r.host, "localhost:6080");
	ck_assert_str_eq(r.origin, "http://localhost:6080");
	ck_assert_str_eq(r.if_modified, "Tue, 01 Jan 2030 00:00:00 GMT");
	ck_assert_str_eq(buf + r.len, "GET /next HTTP/1.1\r\n");

	char none[] = "GET / HTTP/1.0\r\n\r\n";
	vnc_request_read(none, sizeof(none) - 1, &r);
	ck_assert_ptr_null(r.host);
	ck_assert_ptr_null(r.origin);
	ck_assert_ptr_null(r.if_modified);

	char bad[] = "GET / HTTP/9.9\r\n\r\n";
	vnc_request_read(bad, sizeof(bad) - 1, &r);
	ck_assert_int_eq(r.kind, VNC_REQ_MALFORMED);
	ck_assert_str_eq(r.method, "");
	ck_assert_str_eq(r.target, "");
}
END_TEST

/* 431: a buffer full without an empty line, a NUL before the end (the head
 * can never complete), more headers than the parser holds. */
START_TEST(read_too_large)
{
	static char buf[VNC_REQUEST_MAX + 1];
	struct vnc_request r;
	size_t n = 0;

	memset(buf, 'x', sizeof(buf));
	memcpy(buf, "GET / HTTP/1.1\r\nX: ", 19);
	vnc_request_read(buf, VNC_REQUEST_MAX - 1, &r);
	ck_assert_int_eq(r.kind, VNC_REQ_PARTIAL);
	vnc_request_read(buf, VNC_REQUEST_MAX, &r);
	ck_assert_int_eq(r.kind, VNC_REQ_MALFORMED);
	ck_assert_int_eq(r.status, 431);
	ck_assert_uint_eq(r.len, 0);
	ck_assert(!r.keep_alive);

	memcpy(buf, "GET /\0 HTTP/1.1\r\n" H "\r\n", 17 + sizeof(H) - 1 + 2);
	vnc_request_read(buf, 17 + sizeof(H) - 1 + 2, &r);
	ck_assert_int_eq(r.kind, VNC_REQ_MALFORMED);
	ck_assert_int_eq(r.status, 431);
	ck_assert_uint_eq(r.len, 0);

	n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\n" H);
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "X-%d: y\r\n", i);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n");
	vnc_request_read(buf, n, &r);
	ck_assert_int_eq(r.kind, VNC_REQ_MALFORMED);
	ck_assert_int_eq(r.status, 431);
	ck_assert_uint_eq(r.len, n);
}
END_TEST

/* ---- the WebSocket guard ---- */

#define SECRET "Zx9_k-2PqLmN4tVw8yB1cD0e"
#define VIEW "viewsecretviewsecretviewsecret12"

static const struct {
	const char *name;
	struct vnc_http_guard g;
	const char *target, *host, *origin;
	int want;
	bool control;
} guards[] = {
	{"no secret, local", {NULL, NULL, NULL}, "/websockify", "localhost:6080",
	 "http://localhost:6080", 0, true},
	{"no secret, no Host or Origin", {NULL, NULL, NULL}, "/websockify", NULL, NULL, 0, true},
	{"a foreign Host", {NULL, NULL, NULL}, "/websockify", "evil.example.com", NULL, 403, true},
	{"a foreign Origin", {NULL, NULL, NULL}, "/websockify", "localhost",
	 "http://evil.example.com", 403, true},
	{"Origin null", {NULL, NULL, NULL}, "/websockify", "localhost", "null", 403, true},
	{"an allowed proxy name", {"*.cloche.localhost", SECRET, NULL}, "/websockify?secret=" SECRET,
	 "6080-sb-1.cloche.localhost", "http://6080-sb-1.cloche.localhost", 0, true},
	{"the sandbox address", {NULL, NULL, NULL}, "/", "10.0.2.15:6080", NULL, 0, true},
	{"no secret given", {NULL, SECRET, NULL}, "/websockify", "localhost", NULL, 401, true},
	{"a wrong secret", {NULL, SECRET, NULL}, "/websockify?secret=" SECRET "x", "localhost", NULL,
	 403, true},
	{"an empty secret", {NULL, SECRET, NULL}, "/websockify?secret=", "localhost", NULL, 403, true},
	{"the secret", {NULL, SECRET, NULL}, "/websockify?a=1&secret=" SECRET, "localhost", NULL, 0,
	 true},
	{"the secret after a fragment", {NULL, SECRET, NULL}, "/websockify#&secret=" SECRET,
	 "localhost", NULL, 401, true},
	{"Host first, then the secret", {NULL, SECRET, NULL}, "/websockify?secret=" SECRET, "evil",
	 NULL, 403, true},
	{"the view secret", {NULL, SECRET, VIEW}, "/websockify?view=" VIEW, "localhost", NULL, 0,
	 false},
	{"a wrong view secret", {NULL, SECRET, VIEW}, "/websockify?view=x", "localhost", NULL, 403,
	 true},
	{"view wins over secret", {NULL, SECRET, VIEW}, "/?secret=" SECRET "&view=" VIEW, "localhost",
	 NULL, 0, false},
	{"view without a view secret", {NULL, SECRET, NULL}, "/websockify?view=" VIEW, "localhost",
	 NULL, 401, true},
};

START_TEST(guard_table)
{
	struct vnc_request r = {.method = "GET",
				.target = guards[_i].target,
				.host = guards[_i].host,
				.origin = guards[_i].origin};
	const char *why = NULL;
	bool control = false;
	int got = vnc_request_guard(&guards[_i].g, &r, &control, &why);

	ck_assert_msg(got == guards[_i].want, "%s: %d (%s)", guards[_i].name, got, why ? why : "");
	if (got) {
		ck_assert_msg(why && *why, "%s: no reason", guards[_i].name);
		return;
	}
	ck_assert_msg(control == guards[_i].control, "%s: control", guards[_i].name);
}
END_TEST

/* ---- replacing the secret ---- */

#define NEW "bmV3LXNlY3JldC1vZi1hLWNoaWxk"

static const struct {
	const char *name;
	struct vnc_http_guard g;
	const char *now, *next;
	int want;
} rekeys[] = {
	{"the secret in force and a new one", {NULL, SECRET, VIEW}, SECRET, NEW, 0},
	{"no secret here", {NULL, NULL, NULL}, SECRET, NEW, 404},
	{"without the secret in force", {NULL, SECRET, VIEW}, NULL, NEW, 403},
	{"a wrong secret in force", {NULL, SECRET, VIEW}, SECRET "x", NEW, 403},
	{"the view secret is not the secret", {NULL, SECRET, VIEW}, VIEW, NEW, 403},
	{"no new secret", {NULL, SECRET, VIEW}, SECRET, NULL, 400},
	{"a short new secret", {NULL, SECRET, VIEW}, SECRET, "abc", 400},
	{"a new secret with other characters", {NULL, SECRET, VIEW}, SECRET, NEW "&view=x", 400},
	{"a new secret of 128 characters", {NULL, SECRET, VIEW}, SECRET,
	 NEW NEW NEW NEW "0123456789abcdef", 400},
};

START_TEST(rekey_table)
{
	struct vnc_request r = {.method = "POST",
				.target = "/cloche/rekey",
				.secret_now = rekeys[_i].now,
				.secret_new = rekeys[_i].next};
	const char *why = NULL;
	int got = vnc_request_rekey(&rekeys[_i].g, &r, &why);

	ck_assert_msg(got == rekeys[_i].want, "%s: %d (%s)", rekeys[_i].name, got, why ? why : "");
	if (got)
		ck_assert_msg(why && *why, "%s: no reason", rekeys[_i].name);
}
END_TEST

/* ---- the "/" redirect ---- */

static const struct {
	const char *target, *want; /* want NULL: 414 */
} locations[] = {
	{"/", "vnc.html?autoconnect=1&resize=scale&reconnect=1"},
	{"/?secret=S1",
	 "vnc.html?secret=S1&path=websockify%3Fsecret%3DS1&password=S1&autoconnect=1&resize=scale"
	 "&reconnect=1"},
	{"/?view=V1",
	 "vnc.html?view=V1&path=websockify%3Fview%3DV1&password=V1&autoconnect=1&resize=scale"
	 "&reconnect=1"},
	{"/?resize=remote&x=1", "vnc.html?resize=remote&x=1&autoconnect=1&reconnect=1"},
	{"/?autoconnect=0&resize=off&reconnect=0", "vnc.html?autoconnect=0&resize=off&reconnect=0"},
	{"/?secret=a%20b", "vnc.html?secret=a%20b&autoconnect=1&resize=scale&reconnect=1"},
	{"/?secret=S&path=custom", "vnc.html?secret=S&path=custom&autoconnect=1&resize=scale"
				   "&reconnect=1"},
	{"//?", "vnc.html?autoconnect=1&resize=scale&reconnect=1"},
};

START_TEST(location_table)
{
	char out[1024];
	int rc = vnc_request_location(locations[_i].target, out, sizeof(out));

	if (!locations[_i].want) {
		ck_assert_int_eq(rc, -1);
		return;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out, locations[_i].want);
}
END_TEST

/* A query that does not fit is a 414, at every length around the limit. */
START_TEST(location_too_long)
{
	char target[1100], out[64];

	memset(target, 'a', sizeof(target));
	memcpy(target, "/?q=", 4);
	target[sizeof(target) - 1] = '\0';
	ck_assert_int_eq(vnc_request_location(target, out, sizeof(out)), -1);
	for (size_t n = 4; n < 80; n++) {
		int rc;

		target[n] = '\0';
		rc = vnc_request_location(target, out, sizeof(out));
		/* "vnc.html?" + "q=a..." + the three defaults (39) */
		ck_assert_int_eq(rc, 9 + (n - 2) + 39 < sizeof(out) ? 0 : -1);
		target[n] = 'a';
	}
}
END_TEST

Suite *suite_vnc_request(void)
{
	Suite *s = suite_create("vnc_request");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, read_table, 0, (int)(sizeof(reqs) / sizeof(reqs[0])));
	tcase_add_test(tc, read_strings);
	tcase_add_test(tc, read_too_large);
	tcase_add_loop_test(tc, guard_table, 0, (int)(sizeof(guards) / sizeof(guards[0])));
	tcase_add_loop_test(tc, rekey_table, 0, (int)(sizeof(rekeys) / sizeof(rekeys[0])));
	tcase_add_loop_test(tc, location_table, 0, (int)(sizeof(locations) / sizeof(locations[0])));
	tcase_add_test(tc, location_too_long);
	suite_add_tcase(s, tc);
	return s;
}
