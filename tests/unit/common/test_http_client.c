/* Unit tests for common/http_client against a tiny HTTP/1.1 server that
 * runs in a thread of the test (on 127.0.0.1:0 and on a Unix socket): status,
 * body and headers, methods and request bodies, the response size limit,
 * timeouts, refused connections, and the JSON convenience call. */
#include "common/http_client.h"
#include "common/json.h"
#include "common/util.h"
#include "tests/unit/unit.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct srv {
	int fd, stop[2];
	pthread_t thread;
};

static struct srv tcp_srv, unix_srv;
static char base[64];      /* http://127.0.0.1:PORT */
static char sock_path[64]; /* the Unix socket */

static void send_all(int c, const void *p, size_t n)
{
	/* MSG_NOSIGNAL: the client may already be gone (size limit, timeout). */
	while (n > 0) {
		ssize_t w = send(c, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

static void reply(int c, bool head, int status, const char *ctype, const char *body, size_t len)
{
	char hdr[256];
	int n = snprintf(hdr, sizeof(hdr),
			 "HTTP/1.1 %d Whatever\r\nContent-Length: %zu\r\nConnection: close\r\n"
			 "X-Test:   padded value  \r\n%s%s%s\r\n",
			 status, len, ctype ? "Content-Type: " : "", ctype ? ctype : "",
			 ctype ? "\r\n" : "");

	send_all(c, hdr, (size_t)n);
	if (!head)
		send_all(c, body, len);
}

/* The value of a request header, copied into out ("" when absent). */
static void req_header(const char *req, const char *name, char *out, size_t len)
{
	char pat[64];
	const char *p, *end;

	snprintf(pat, sizeof(pat), "\r\n%s:", name);
	out[0] = '\0';
	p = strcasestr(req, pat);
	if (!p)
		return;
	for (p += strlen(pat); *p == ' '; p++)
		;
	end = strstr(p, "\r\n");
	snprintf(out, len, "%.*s", (int)(end - p), p);
}

static void serve(int c)
{
	static char req[65536], big[100000];
	char method[16] = "", path[256] = "", ctype[128], auth[128];
	size_t got = 0, body_len = 0, head_len;
	const char *body, *end = NULL;

	while (!end && got < sizeof(req) - 1) {
		ssize_t n = recv(c, req + got, sizeof(req) - 1 - got, 0);
		if (n <= 0)
			return;
		got += (size_t)n;
		req[got] = '\0';
		end = strstr(req, "\r\n\r\n");
	}
	head_len = (size_t)(end - req) + 4;
	req_header(req, "Content-Length", ctype, sizeof(ctype));
	body_len = (size_t)strtoul(ctype, NULL, 10);
	while (got < head_len + body_len && got < sizeof(req) - 1) {
		ssize_t n = recv(c, req + got, sizeof(req) - 1 - got, 0);
		if (n <= 0)
			return;
		got += (size_t)n;
	}
	req[got] = '\0';
	body = req + head_len;
	sscanf(req, "%15s %255s", method, path);
	bool head = strcmp(method, "HEAD") == 0;

	if (strcmp(path, "/hello") == 0) {
		reply(c, head, 200, "text/plain", "hello", 5);
	} else if (strcmp(path, "/echo") == 0) {
		req_header(req, "Content-Type", ctype, sizeof(ctype));
		req_header(req, "X-Auth", auth, sizeof(auth));
		json_t *v = json_pack("{s:s, s:s%, s:s, s:s}", "method", method, "body", body,
				      body_len, "ctype", ctype, "auth", auth);
		char *text = cj_dump(v);
		reply(c, head, 200, "application/json", text, strlen(text));
		free(text);
		json_decref(v);
	} else if (strcmp(path, "/big") == 0) {
		memset(big, 'b', sizeof(big));
		reply(c, head, 200, "application/octet-stream", big, sizeof(big));
	} else if (strcmp(path, "/hang") == 0) {
		struct pollfd p = {c, POLLIN, 0};
		poll(&p, 1, 5000); /* until the client gives up and closes */
	} else if (strcmp(path, "/empty") == 0) {
		reply(c, head, 204, NULL, "", 0);
	} else if (strcmp(path, "/status/404") == 0) {
		const char *t = "{\"error\":{\"code\":\"not_found\",\"message\":\"no sandbox `x`\"}}";
		reply(c, head, 404, "application/json", t, strlen(t));
	} else if (strcmp(path, "/status/500") == 0) {
		reply(c, head, 500, "text/plain", "boom", 4);
	} else {
		reply(c, head, 200, "text/plain", "oops", 4); /* not JSON */
	}
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;

	for (;;) {
		struct pollfd p[2] = {{s->fd, POLLIN, 0}, {s->stop[0], POLLIN, 0}};
		int c;

		if (poll(p, 2, -1) == -1 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c == -1)
			continue;
		serve(c);
		close(c);
	}
	return NULL;
}

static void srv_start(struct srv *s, int fd)
{
	ck_assert_int_eq(listen(fd, 16), 0);
	s->fd = fd;
	ck_assert_int_eq(pipe2(s->stop, O_CLOEXEC), 0);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, srv_main, s), 0);
}

static void srv_stop(struct srv *s)
{
	util_write_all(s->stop[1], "x", 1);
	pthread_join(s->thread, NULL);
	close(s->fd);
	close(s->stop[0]);
	close(s->stop[1]);
}

/* A port nothing listens on: bound once, then released. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void setup(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_un u = {.sun_family = AF_UNIX};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", ntohs(a.sin_port));
	srv_start(&tcp_srv, fd);

	snprintf(sock_path, sizeof(sock_path), "/tmp/cloche-http-%d.sock", (int)getpid());
	unlink(sock_path);
	snprintf(u.sun_path, sizeof(u.sun_path), "%s", sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&u, sizeof(u)), 0);
	srv_start(&unix_srv, fd);
}

static void teardown(void)
{
	srv_stop(&tcp_srv);
	srv_stop(&unix_srv);
	unlink(sock_path);
}

static void url(char *out, size_t len, const char *path)
{
	snprintf(out, len, "%s%s", base, path);
}

/* Requests that must succeed: status, exact body, Content-Type. */
static const struct {
	const char *method, *path, *body;
	int status;
	const char *want_body, *ctype;
} fetches[] = {
	{"GET", "/hello", NULL, 200, "hello", "text/plain"},
	{NULL, "/hello", NULL, 200, "hello", "text/plain"},
	{"HEAD", "/hello", NULL, 200, "", "text/plain"},
	{"GET", "/empty", NULL, 204, "", NULL},
	{"GET", "/status/500", NULL, 500, "boom", "text/plain"},
	{"PUT", "/echo", "abc",
	 200, "{\"method\":\"PUT\",\"body\":\"abc\",\"ctype\":\"text/x\",\"auth\":\"t0k\"}", NULL},
	{"POST", "/echo", NULL,
	 200, "{\"method\":\"POST\",\"body\":\"\",\"ctype\":\"text/x\",\"auth\":\"t0k\"}", NULL},
	{"DELETE", "/echo", NULL,
	 200, "{\"method\":\"DELETE\",\"body\":\"\",\"ctype\":\"text/x\",\"auth\":\"t0k\"}", NULL},
};

START_TEST(requests_return_status_body_headers)
{
	static const char *const hdrs[] = {"X-Auth: t0k", "Content-Type: text/x", NULL};
	struct http_resp resp = {0};
	struct err e = ERR_INIT;
	char u[128];
	struct http_req req = {.method = fetches[_i].method, .url = u, .headers = hdrs,
			       .body = fetches[_i].body,
			       .body_len = fetches[_i].body ? strlen(fetches[_i].body) : 0};

	url(u, sizeof(u), fetches[_i].path);
	ck_assert_msg(http_request(&req, &resp, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(resp.status, fetches[_i].status);
	ck_assert_str_eq(buf_str(&resp.body), fetches[_i].want_body);
	if (fetches[_i].ctype)
		ck_assert_str_eq(http_resp_header(&resp, "Content-Type"), fetches[_i].ctype);
	http_resp_free(&resp);
}
END_TEST

START_TEST(header_lookup_is_case_insensitive)
{
	struct http_resp resp = {0};
	char u[128];
	struct http_req req = {.url = u};

	url(u, sizeof(u), "/hello");
	ck_assert_int_eq(http_request(&req, &resp, NULL), 0);
	ck_assert_str_eq(http_resp_header(&resp, "content-type"), "text/plain");
	ck_assert_str_eq(http_resp_header(&resp, "X-TEST"), "padded value");
	ck_assert_str_eq(http_resp_header(&resp, "Content-Length"), "5");
	ck_assert_ptr_null(http_resp_header(&resp, "X-Tes"));
	ck_assert_ptr_null(http_resp_header(&resp, "Location"));
	http_resp_free(&resp);
}
END_TEST

START_TEST(response_size_is_limited)
{
	struct http_resp resp = {0};
	struct err e = ERR_INIT;
	char u[128], want[256];
	struct http_req req = {.url = u, .max_resp = 1000};

	url(u, sizeof(u), "/big");
	ck_assert_int_eq(http_request(&req, &resp, &e), -1);
	snprintf(want, sizeof(want), "GET %s: response body: exceeds the limit of 1000 bytes", u);
	ck_assert_str_eq(e.msg, want);
	ck_assert_int_eq(e.code, E2BIG);
	ck_assert_int_eq(e.http_status, 502);
	ck_assert_uint_le(resp.body.len, 1000);
	http_resp_free(&resp);

	req.max_resp = 100000; /* exactly the body's size */
	ck_assert_msg(http_request(&req, &resp, &e) == 0, "%s", e.msg);
	ck_assert_uint_eq(resp.body.len, 100000);
	http_resp_free(&resp);
}
END_TEST

START_TEST(silent_server_times_out)
{
	struct http_resp resp = {0};
	struct err e = ERR_INIT;
	char u[128], want[256];
	struct http_req req = {.url = u, .timeout_ms = 300};
	uint64_t t0 = util_now_ms(), took;

	url(u, sizeof(u), "/hang");
	ck_assert_int_eq(http_request(&req, &resp, &e), -1);
	took = util_now_ms() - t0;
	ck_assert_uint_ge(took, 250);
	ck_assert_uint_lt(took, 2000);
	snprintf(want, sizeof(want), "GET %s: Timeout was reached (", u);
	ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "got `%s`", e.msg);
	ck_assert_int_eq(e.http_status, 504);
	ck_assert_int_eq(e.code, ETIMEDOUT);
	http_resp_free(&resp);
}
END_TEST

/* Counts its calls and asks to stop at the third. */
static int stop_at_third(void *ud)
{
	return ++*(int *)ud >= 3;
}

START_TEST(poll_hook_cancels)
{
	struct http_resp resp = {0};
	struct err e = ERR_INIT;
	char u[128], want[256];
	int polls = 0;
	struct http_req req = {.url = u, .timeout_ms = 20000, .poll = stop_at_third, .poll_ud = &polls};
	uint64_t t0 = util_now_ms(), took;

	url(u, sizeof(u), "/hang");
	ck_assert_int_eq(http_request(&req, &resp, &e), -1);
	took = util_now_ms() - t0;
	ck_assert_int_eq(polls, 3);
	ck_assert_uint_lt(took, 10000); /* libcurl polls at least once a second */
	snprintf(want, sizeof(want), "GET %s: cancelled", u);
	ck_assert_msg(strcmp(e.msg, want) == 0, "got `%s`", e.msg);
	ck_assert_int_eq(e.code, ECANCELED);
	http_resp_free(&resp);

	/* Never asked to stop: the answer arrives as without a hook. */
	polls = -1000;
	url(u, sizeof(u), "/hello");
	ck_assert_msg(http_request(&req, &resp, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(resp.status, 200);
	http_resp_free(&resp);
}
END_TEST

START_TEST(refused_connection_is_explained)
{
	struct http_resp resp = {0};
	struct err e = ERR_INIT;
	char u[128], want[160];
	struct http_req req = {.method = "POST", .url = u, .body = "x", .body_len = 1};

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/v1/x?token=s3cret", free_port());
	ck_assert_int_eq(http_request(&req, &resp, &e), -1);
	snprintf(want, sizeof(want), "POST %.*s: ", (int)strcspn(u, "?"), u);
	ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "got `%s`", e.msg);
	ck_assert_msg(strstr(e.msg, "Couldn't connect to server"), "got `%s`", e.msg);
	ck_assert_msg(!strstr(e.msg, "s3cret"), "token leaked: `%s`", e.msg);
	ck_assert_int_eq(e.http_status, 502);
	ck_assert_int_eq(resp.status, 0);
	http_resp_free(&resp);
}
END_TEST

START_TEST(other_protocols_are_refused)
{
	struct http_resp resp = {0};
	struct err e = ERR_INIT;
	struct http_req req = {.url = "file:///etc/passwd"};

	ck_assert_int_eq(http_request(&req, &resp, &e), -1);
	ck_assert_uint_eq(resp.body.len, 0);
	http_resp_free(&resp);
}
END_TEST

START_TEST(unix_socket_is_used)
{
	struct http_resp resp = {0};
	struct err e = ERR_INIT;
	struct http_req req = {.url = "http://localhost/hello", .unix_socket = sock_path};

	ck_assert_msg(http_request(&req, &resp, &e) == 0, "%s", e.msg);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(buf_str(&resp.body), "hello");
	http_resp_free(&resp);
}
END_TEST

START_TEST(json_round_trip)
{
	static const char *const hdrs[] = {"X-Auth: k", NULL};
	struct http_json_opts opts = {.timeout_ms = 2000, .headers = hdrs};
	AUTOJSON json_t *body = json_pack("{s:i}", "a", 1);
	AUTOJSON json_t *out = NULL;
	struct err e = ERR_INIT;
	char u[128];

	url(u, sizeof(u), "/echo");
	ck_assert_msg(http_json("POST", u, body, &out, &opts, &e) == 200, "%s", e.msg);
	ck_assert_str_eq(json_string_value(json_object_get(out, "method")), "POST");
	ck_assert_str_eq(json_string_value(json_object_get(out, "body")), "{\"a\":1}");
	ck_assert_str_eq(json_string_value(json_object_get(out, "ctype")), "application/json");
	ck_assert_str_eq(json_string_value(json_object_get(out, "auth")), "k");
}
END_TEST

/* http_json's answers to statuses and bodies that are not plain success. */
static const struct {
	const char *path;
	int ret, status;
	const char *msg; /* after "GET <url>: " */
} json_cases[] = {
	{"/empty", 204, 0, NULL},
	{"/status/404", -1, 404, "server answered 404: no sandbox `x`"},
	{"/status/500", -1, 502, "server answered 500"},
	{"/notjson", -1, 502, "response is not JSON: invalid JSON at line 1, column "},
};

START_TEST(json_errors)
{
	AUTOJSON json_t *out = NULL;
	struct err e = ERR_INIT;
	char u[128], want[256];

	url(u, sizeof(u), json_cases[_i].path);
	ck_assert_int_eq(http_json(NULL, u, NULL, &out, NULL, &e), json_cases[_i].ret);
	ck_assert_ptr_null(out);
	if (!json_cases[_i].msg)
		return;
	snprintf(want, sizeof(want), "GET %s: %s", u, json_cases[_i].msg);
	ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "got `%s`", e.msg);
	ck_assert_int_eq(e.http_status, json_cases[_i].status);
}
END_TEST

Suite *suite_http_client(void)
{
	Suite *s = suite_create("http_client");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, requests_return_status_body_headers, 0, (int)ARRAY_LEN(fetches));
	tcase_add_test(tc, header_lookup_is_case_insensitive);
	tcase_add_test(tc, response_size_is_limited);
	tcase_add_test(tc, silent_server_times_out);
	tcase_add_test(tc, poll_hook_cancels);
	tcase_add_test(tc, refused_connection_is_explained);
	tcase_add_test(tc, other_protocols_are_refused);
	tcase_add_test(tc, unix_socket_is_used);
	tcase_add_test(tc, json_round_trip);
	tcase_add_loop_test(tc, json_errors, 0, (int)ARRAY_LEN(json_cases));
	suite_add_tcase(s, tc);
	return s;
}
