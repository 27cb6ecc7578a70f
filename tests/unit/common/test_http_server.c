/* Unit tests for common/http_server: routing (exact, prefix, 404, 405),
 * bodies and their limit (413), query strings, request headers, JSON
 * errors, timers and watched fds, response headers, deferred answers and
 * streams completed from other threads through hsrv_post(), and a
 * connection closed before its first request, all through a real HTTP
 * client (common/http_client over libcurl) against the server on a thread.
 * The router's patterns: the matcher on its own (table-driven), then path
 * parameters, 405 with Allow and libwebsockets' decoding over HTTP. */
#include "common/http_client.h"
#include "common/http_server.h"
#include "tests/unit/unit.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct fixture {
	struct hsrv *srv;
	pthread_t thread;
	int port;
	int timer_fired;
	int fd_reads;
	char fd_data[64];
	struct hsrv_timer *timer;
};

static struct fixture fx;

static void h_hello(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	(void)ud;
	hsrv_resp_json(resp, 200, json_pack("{s:s, s:s, s:s}", "method", req->method, "path",
					    req->path, "query", req->query));
}

static void h_echo(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	char ctype[64] = "";
	(void)ud;
	hsrv_req_header(req, "Content-Type", ctype, sizeof(ctype));
	hsrv_resp_json(resp, 201, json_pack("{s:s#, s:i, s:s}", "body", req->body, (int)req->body_len,
					    "len", (int)req->body_len, "ctype", ctype));
}

static void h_header(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	char v[32], host[16];
	int n = hsrv_req_header(req, "X-Cloche-Test", v, sizeof(v));
	(void)ud;
	/* A known header (Host) and a custom one, each too long for its buffer. */
	if (hsrv_req_header(req, "Host", host, sizeof(host)) == HSRV_HDR_TOO_LONG)
		hsrv_resp_error(resp, 431, NULL, "Host too long");
	else if (n == HSRV_HDR_TOO_LONG)
		hsrv_resp_error(resp, 431, NULL, "X-Cloche-Test too long");
	else if (n < 0)
		hsrv_resp_error(resp, 400, NULL, "no X-Cloche-Test header");
	else
		hsrv_resp_text(resp, 200, "text/plain", v);
}

static void h_state(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct fixture *f = ud;
	(void)req;
	hsrv_resp_json(resp, 200, json_pack("{s:i, s:i, s:s}", "timer", f->timer_fired, "reads",
					    f->fd_reads, "data", f->fd_data));
}

static void h_stop(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct fixture *f = ud;
	(void)req;
	hsrv_stop(f->srv);
	hsrv_resp_text(resp, 200, "text/plain", "bye");
}

static void h_resp_header(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	(void)ud;
	(void)req;
	hsrv_resp_header(resp, "X-Answer", "42");
	hsrv_resp_text(resp, 200, "text/plain", "with header");
}

/* A deferred answer, finished by a worker thread through hsrv_post(). */
struct later {
	struct hsrv *srv;
	struct hsrv_defer *d;
	bool stream;
	int step;
};

static void later_task(void *ud)
{
	struct later *l = ud;

	if (!l->stream) {
		struct hsrv_resp r = {.status = 201, .content_type = "text/plain"};
		r.body = strdup("done later");
		r.body_len = strlen(r.body);
		hsrv_resp_header(&r, "X-Later", "yes");
		hsrv_defer_reply(l->d, &r);
		free(l);
		return;
	}
	if (l->step == 0)
		hsrv_defer_stream(l->d, 200, "text/event-stream", NULL);
	if (l->step < 3) {
		char ev[32];
		int n = snprintf(ev, sizeof(ev), "data: %d\n\n", l->step);
		hsrv_defer_write(l->d, ev, (size_t)n);
		l->step++;
		return;
	}
	hsrv_defer_end(l->d);
	free(l);
}

static void *later_worker(void *arg)
{
	struct later *l = arg;
	int posts = l->stream ? 4 : 1; /* the last task frees l */

	for (int i = 0; i < posts; i++) {
		usleep(30 * 1000);
		hsrv_post(l->srv, later_task, l);
	}
	return NULL;
}

static void h_later(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct later *l = calloc(1, sizeof(*l));
	pthread_t th;

	(void)resp;
	l->srv = ((struct fixture *)ud)->srv;
	l->stream = strcmp(req->path, "/stream") == 0;
	l->d = hsrv_defer(req, NULL, NULL);
	ck_assert_ptr_nonnull(l->d);
	pthread_create(&th, NULL, later_worker, l);
	pthread_detach(th);
}

static void on_timer(void *ud)
{
	((struct fixture *)ud)->timer_fired++;
}

static int on_fd(void *ud, int fd)
{
	struct fixture *f = ud;
	ssize_t n;

	if (fd < 0)
		return -1; /* the watch ended */
	n = read(fd, f->fd_data, sizeof(f->fd_data) - 1);
	if (n <= 0)
		return -1;
	f->fd_data[n] = '\0';
	f->fd_reads++;
	return 0;
}

static void *loop(void *arg)
{
	hsrv_run(arg);
	return NULL;
}

static void setup(void)
{
	struct err e = ERR_INIT;
	int p[2];

	memset(&fx, 0, sizeof(fx));
	fx.srv = hsrv_new(&(struct hsrv_opts){.listen = "127.0.0.1", .port = 0, .max_body = 1024}, &e);
	ck_assert_msg(fx.srv, "%s", e.msg);
	fx.port = hsrv_port(fx.srv);
	ck_assert_int_gt(fx.port, 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "GET", "/hello", h_hello, NULL, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "GET", "/files/*", h_hello, NULL, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "POST", "/echo", h_echo, NULL, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, NULL, "/header", h_header, NULL, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "GET", "/state", h_state, &fx, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "POST", "/stop", h_stop, &fx, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "GET", "/resp-header", h_resp_header, NULL, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "GET", "/later", h_later, &fx, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "GET", "/stream", h_later, &fx, &e), 0);
	fx.timer = hsrv_timer_new(fx.srv, on_timer, &fx);
	hsrv_timer_arm(fx.timer, 20);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(hsrv_watch(fx.srv, p[0], on_fd, &fx, &e), 0);
	ck_assert_int_eq(write(p[1], "ping", 4), 4);
	close(p[1]);
	ck_assert_int_eq(pthread_create(&fx.thread, NULL, loop, fx.srv), 0);
}

static void teardown(void)
{
	struct http_resp r = {0};
	struct err e = ERR_INIT;
	char url[64];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/stop", fx.port);
	/* The loop stops before it writes the answer: do not wait for it. */
	http_request(&(struct http_req){.method = "POST", .url = url, .body = "", .timeout_ms = 300}, &r, &e);
	http_resp_free(&r);
	pthread_join(fx.thread, NULL);
	hsrv_timer_free(fx.timer);
	hsrv_free(fx.srv);
}

/* Performs one request and returns the status; body into *out. */
static long call(const char *method, const char *path, const char *body, const char *const *hdrs,
		 char **out)
{
	struct http_resp r = {0};
	struct err e = ERR_INIT;
	char url[256];
	long status;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", fx.port, path);
	ck_assert_msg(http_request(&(struct http_req){.method = method, .url = url, .headers = hdrs,
						     .body = body, .body_len = body ? strlen(body) : 0,
						     .timeout_ms = 5000},
				   &r, &e) == 0,
		      "%s", e.msg);
	status = r.status;
	if (out)
		*out = strdup(r.body.data ? r.body.data : "");
	http_resp_free(&r);
	return status;
}

START_TEST(routes_by_method_and_path)
{
	static const struct {
		const char *method, *path;
		long status;
		const char *needle;
	} cases[] = {
		{"GET", "/hello", 200, "\"path\":\"/hello\""},
		{"GET", "/hello?a=1&b=two", 200, "\"query\":\"a=1&b=two\""},
		{"GET", "/files/x/y.txt", 200, "\"path\":\"/files/x/y.txt\""},
		{"GET", "/nope", 404, "\"code\":\"not_found\""},
		{"DELETE", "/hello", 405, "\"code\":\"method_not_allowed\""},
		{"GET", "/header", 400, "no X-Cloche-Test header"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *body = NULL;
		long st = call(cases[i].method, cases[i].path, NULL, NULL, &body);
		ck_assert_msg(st == cases[i].status, "%s %s: %ld", cases[i].method, cases[i].path, st);
		ck_assert_msg(strstr(body, cases[i].needle), "%s %s: %s", cases[i].method, cases[i].path, body);
		free(body);
	}
}
END_TEST

START_TEST(reads_bodies_and_headers)
{
	const char *hdrs[] = {"Content-Type: application/json", "X-Cloche-Test: yes-42", NULL};
	char *body = NULL;

	ck_assert_int_eq(call("POST", "/echo", "{\"a\":[1,2,3]}", hdrs, &body), 201);
	ck_assert_ptr_nonnull(strstr(body, "\"len\":13"));
	ck_assert_ptr_nonnull(strstr(body, "\"ctype\":\"application/json\""));
	free(body);
	ck_assert_int_eq(call("GET", "/header", NULL, hdrs, &body), 200);
	ck_assert_str_eq(body, "yes-42");
	free(body);
}
END_TEST

/* Present but longer than the caller's buffer is not the same as absent. */
START_TEST(tells_a_too_long_header_from_an_absent_one)
{
	const char *long_custom[] = {"X-Cloche-Test: 0123456789012345678901234567890123456789", NULL};
	const char *long_host[] = {"Host: a-host-name-longer-than-sixteen.example", "X-Cloche-Test: x", NULL};
	char *body = NULL;

	ck_assert_int_eq(call("GET", "/header", NULL, long_custom, &body), 431);
	ck_assert_ptr_nonnull(strstr(body, "X-Cloche-Test too long"));
	free(body);
	ck_assert_int_eq(call("GET", "/header", NULL, long_host, &body), 431);
	ck_assert_ptr_nonnull(strstr(body, "Host too long"));
	free(body);
}
END_TEST

START_TEST(rejects_oversized_body_and_keeps_serving)
{
	char big[4096];
	char *body = NULL;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(call("POST", "/echo", big, NULL, &body), 413);
	ck_assert_ptr_nonnull(strstr(body, "payload_too_large"));
	free(body);
	ck_assert_int_eq(call("GET", "/hello", NULL, NULL, NULL), 200);
}
END_TEST

START_TEST(runs_timers_and_watches_fds)
{
	char *body = NULL;

	usleep(100 * 1000);
	ck_assert_int_eq(call("GET", "/state", NULL, NULL, &body), 200);
	ck_assert_msg(strstr(body, "\"timer\":1"), "%s", body);
	ck_assert_msg(strstr(body, "\"reads\":1"), "%s", body);
	ck_assert_msg(strstr(body, "\"data\":\"ping\""), "%s", body);
	free(body);
}
END_TEST

START_TEST(refuses_a_taken_port)
{
	struct err e = ERR_INIT;
	struct hsrv *two = hsrv_new(&(struct hsrv_opts){.listen = "127.0.0.1", .port = fx.port}, &e);

	ck_assert_ptr_null(two);
	ck_assert_ptr_nonnull(strstr(e.msg, "listen on 127.0.0.1"));
}
END_TEST

START_TEST(answers_later_and_streams)
{
	struct http_resp r = {0};
	struct err e = ERR_INIT;
	char url[128];
	char *body = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/resp-header", fx.port);
	ck_assert_int_eq(http_request(&(struct http_req){.url = url, .timeout_ms = 5000}, &r, &e), 0);
	ck_assert_str_eq(http_resp_header(&r, "x-answer"), "42");
	http_resp_free(&r);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/later", fx.port);
	ck_assert_int_eq(http_request(&(struct http_req){.url = url, .timeout_ms = 5000}, &r, &e), 0);
	ck_assert_int_eq(r.status, 201);
	ck_assert_str_eq(r.body.data, "done later");
	ck_assert_str_eq(http_resp_header(&r, "x-later"), "yes");
	http_resp_free(&r);
	/* A stream: head, three events written over time, then the end. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/stream", fx.port);
	ck_assert_int_eq(http_request(&(struct http_req){.url = url, .timeout_ms = 5000}, &r, &e), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body.data, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
	ck_assert_ptr_nonnull(strstr(http_resp_header(&r, "content-type"), "text/event-stream"));
	http_resp_free(&r);
	/* Other requests were never held up, and still work. */
	ck_assert_int_eq(call("GET", "/hello", NULL, NULL, &body), 200);
	free(body);
}
END_TEST

START_TEST(survives_a_connection_without_request)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)fx.port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd); /* what a TCP readiness probe does */
	usleep(50 * 1000);
	ck_assert_int_eq(call("GET", "/hello", NULL, NULL, NULL), 200);
}
END_TEST

/* --- the router's patterns ------------------------------------------- */

#define LONG127 "0123456789012345678901234567890123456789012345678901234567890123" \
		"456789012345678901234567890123456789012345678901234567890123456"

static const struct {
	const char *pattern, *path;
	bool match;
	const char *params; /* "name=value;..." as matched */
} match_cases[] = {
	/* literal */
	{"/a/b", "/a/b", true, ""},
	{"/a/b", "/a/bc", false, ""},
	{"/a/b", "/a", false, ""},
	{"/", "/", true, ""},
	{"/", "/x", false, ""},
	/* parameters */
	{"/v1/sandboxes/{id}", "/v1/sandboxes/sb-1", true, "id=sb-1;"},
	{"/v1/sandboxes/{id}/{action}", "/v1/sandboxes/sb-1/claim", true, "id=sb-1;action=claim;"},
	{"/r/{id}/wake", "/r/x/wake", true, "id=x;"},
	{"/r/{id}/wake", "/r/x/wakes", false, ""},
	{"/r/{id}/wake", "/r/x", false, ""},
	{"/v1/sandboxes/{id}", "/v1/sandboxes/sb-1/thumbnail", false, ""},
	{"/{a}/{b}/{c}/{d}", "/1/2/3/4", true, "a=1;b=2;c=3;d=4;"},
	/* trailing slash and empty segments: never a match */
	{"/a/b", "/a/b/", false, ""},
	{"/v1/sandboxes/{id}", "/v1/sandboxes/sb-1/", false, ""},
	{"/v1/sandboxes/{id}", "/v1/sandboxes/", false, ""},
	{"/v1/sandboxes/{id}/{action}", "/v1/sandboxes//claim", false, ""},
	/* the matcher sees the path as decoded; it decodes nothing itself */
	{"/v1/sandboxes/{id}", "/v1/sandboxes/sb%2D1", true, "id=sb%2D1;"},
	{"/v1/sandboxes/{id}", "/v1/sandboxes/a b", true, "id=a b;"},
	/* segment length: HSRV_PARAM_MAX - 1 bytes fit, one more does not */
	{"/x/{id}", "/x/" LONG127, true, "id=" LONG127 ";"},
	{"/x/{id}", "/x/" LONG127 "7", false, ""},
	/* prefix */
	{"/files/*", "/files/", true, ""},
	{"/files/*", "/files/x/y.txt", true, ""},
	{"/files/*", "/files", false, ""},
	{"/v1/{id}/*", "/v1/a/b/c", true, "id=a;"},
	/* malformed patterns match nothing */
	{"v1/x", "v1/x", false, ""},
	{"/a{id}", "/ax", false, ""},
	{"/{id}x", "/ax", false, ""},
	{"/{}", "/a", false, ""},
	{"/{a-b}", "/a", false, ""},
	{"/{id", "/a", false, ""},
	{"/}", "/}", false, ""},
	{"/a/*/b", "/a/x/b", false, ""},
	{"/{a}/{b}/{c}/{d}/{e}", "/1/2/3/4/5", false, ""},
	{"/{p0123456789012345678901234567890}", "/x", false, ""},
};

START_TEST(matches_patterns)
{
	struct hsrv_req req;
	char got[512] = "";
	bool m;

	memset(&req, 0, sizeof(req));
	m = hsrv_match(match_cases[_i].pattern, match_cases[_i].path, &req);
	for (size_t i = 0; m && i < req.nparams; i++) {
		size_t at = strlen(got);
		snprintf(got + at, sizeof(got) - at, "%s=%s;", req.params[i].name, req.params[i].value);
		ck_assert_str_eq(hsrv_req_param(&req, req.params[i].name), req.params[i].value);
	}
	ck_assert_msg(m == match_cases[_i].match, "%s ~ %s: %d", match_cases[_i].pattern,
		      match_cases[_i].path, m);
	ck_assert_msg(!m || req.nparams <= HSRV_MAX_PARAMS, "too many parameters");
	ck_assert_msg(!m || strcmp(got, match_cases[_i].params) == 0, "%s ~ %s: %s",
		      match_cases[_i].pattern, match_cases[_i].path, got);
	ck_assert_ptr_null(hsrv_req_param(&req, "nope"));
}
END_TEST

/* A malformed pattern is refused when it is added, with the reason. */
START_TEST(refuses_bad_patterns)
{
	static const char *const bad[] = {"v1/x", "/a{id}", "/{id}x", "/{}", "/{a-b}", "/{id",
					  "/}", "/a/*/b", "/{a}/{b}/{c}/{d}/{e}"};
	struct err e = ERR_INIT;
	struct hsrv *srv = hsrv_new(&(struct hsrv_opts){.port = -1}, &e);

	ck_assert_msg(srv, "%s", e.msg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&e);
		ck_assert_int_eq(hsrv_route(srv, "GET", bad[i], h_hello, NULL, &e), -1);
		ck_assert_int_eq(e.code, EINVAL);
		ck_assert_msg(strstr(e.msg, bad[i]), "%s", e.msg);
	}
	err_clear(&e);
	ck_assert_int_eq(hsrv_route(srv, "GET, POST", "/x", h_hello, NULL, &e), -1);
	ck_assert_int_eq(hsrv_route(srv, "GET", "/ok/{id}/*", h_hello, NULL, &e), 0);
	hsrv_free(srv);
}
END_TEST

/* Answers the method and the parameters the router matched. */
static void h_params(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	json_t *p = json_object();

	(void)ud;
	for (size_t i = 0; i < req->nparams; i++)
		json_object_set_new(p, req->params[i].name, json_string(req->params[i].value));
	hsrv_resp_json(resp, 200, json_pack("{s:s, s:o}", "method", req->method, "params", p));
}

static void router_setup(void)
{
	static const struct {
		const char *method, *pattern;
	} routes[] = {
		{"POST", "/r/activity"}, /* a literal before the parameter that would match it */
		{"GET", "/r/{id}"},
		{"DELETE", "/r/{id}"},
		{"POST", "/r/{id}/{action}"},
		{"GET", "/r/{id}/files/*"},
	};
	struct err e = ERR_INIT;

	memset(&fx, 0, sizeof(fx));
	fx.srv = hsrv_new(&(struct hsrv_opts){.listen = "127.0.0.1", .port = 0}, &e);
	ck_assert_msg(fx.srv, "%s", e.msg);
	fx.port = hsrv_port(fx.srv);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		ck_assert_int_eq(hsrv_route(fx.srv, routes[i].method, routes[i].pattern, h_params,
					    NULL, &e), 0);
	ck_assert_int_eq(hsrv_route(fx.srv, "POST", "/stop", h_stop, &fx, &e), 0);
	ck_assert_int_eq(pthread_create(&fx.thread, NULL, loop, fx.srv), 0);
}

static const struct {
	const char *method, *path;
	long status;
	const char *allow;  /* the Allow header, or NULL for none */
	const char *needle; /* in the body */
} route_cases[] = {
	{"GET", "/r/sb-1", 200, NULL, "\"params\":{\"id\":\"sb-1\"}"},
	{"DELETE", "/r/sb-1", 200, NULL, "\"method\":\"DELETE\""},
	{"PUT", "/r/sb-1", 405, "GET, DELETE", "\"code\":\"method_not_allowed\""},
	{"POST", "/r/activity", 200, NULL, "\"params\":{}"},
	{"GET", "/r/activity", 405, "POST", "\"code\":\"method_not_allowed\""},
	{"POST", "/r/sb-1/claim", 200, NULL, "\"params\":{\"id\":\"sb-1\",\"action\":\"claim\"}"},
	{"GET", "/r/sb-1/claim", 405, "POST", "\"code\":\"method_not_allowed\""},
	{"GET", "/r/sb-1/files/a/b", 200, NULL, "\"params\":{\"id\":\"sb-1\"}"},
	/* libwebsockets decodes the path before routing */
	{"GET", "/r/sb%2D1", 200, NULL, "\"params\":{\"id\":\"sb-1\"}"},
	{"GET", "/r/a%20b", 200, NULL, "\"params\":{\"id\":\"a b\"}"},
	{"POST", "/r/a%2Fb", 200, NULL, "\"params\":{\"id\":\"a\",\"action\":\"b\"}"},
	{"GET", "/r/a%2Fb%2Fc", 404, NULL, "\"code\":\"not_found\""},
	/* trailing slash, empty and over-long segments */
	{"GET", "/r/sb-1/", 404, NULL, "\"code\":\"not_found\""},
	{"GET", "/r/", 404, NULL, "\"code\":\"not_found\""},
	{"GET", "/r/" LONG127, 200, NULL, "\"id\":\"" LONG127 "\""},
	{"GET", "/r/" LONG127 "7", 404, NULL, "\"code\":\"not_found\""},
	{"GET", "/nope", 404, NULL, "\"code\":\"not_found\""},
};

START_TEST(routes_with_parameters)
{
	struct http_resp r = {0};
	struct err e = ERR_INIT;
	char url[512];
	const char *allow;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", fx.port, route_cases[_i].path);
	/* a body, so that PUT is answered (libwebsockets waits for one) */
	ck_assert_msg(http_request(&(struct http_req){.method = route_cases[_i].method, .url = url,
						     .body = "{}", .body_len = 2, .timeout_ms = 5000},
				   &r, &e) == 0,
		      "%s", e.msg);
	allow = http_resp_header(&r, "allow");
	ck_assert_msg(r.status == route_cases[_i].status, "%s %s: %ld", route_cases[_i].method,
		      route_cases[_i].path, r.status);
	ck_assert_msg(route_cases[_i].allow ? allow && strcmp(allow, route_cases[_i].allow) == 0
					    : !allow,
		      "%s %s: Allow %s", route_cases[_i].method, route_cases[_i].path,
		      allow ? allow : "(none)");
	ck_assert_msg(r.body.data && strstr(r.body.data, route_cases[_i].needle), "%s %s: %s",
		      route_cases[_i].method, route_cases[_i].path, r.body.data);
	http_resp_free(&r);
}
END_TEST

Suite *suite_http_server(void)
{
	Suite *s = suite_create("http_server");
	TCase *tc = tcase_create("core");
	TCase *rt = tcase_create("router");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, routes_by_method_and_path);
	tcase_add_test(tc, reads_bodies_and_headers);
	tcase_add_test(tc, tells_a_too_long_header_from_an_absent_one);
	tcase_add_test(tc, rejects_oversized_body_and_keeps_serving);
	tcase_add_test(tc, runs_timers_and_watches_fds);
	tcase_add_test(tc, refuses_a_taken_port);
	tcase_add_test(tc, answers_later_and_streams);
	tcase_add_test(tc, survives_a_connection_without_request);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(rt, matches_patterns, 0,
			    (int)(sizeof(match_cases) / sizeof(match_cases[0])));
	tcase_add_test(rt, refuses_bad_patterns);
	suite_add_tcase(s, rt);
	rt = tcase_create("router_http");
	tcase_add_checked_fixture(rt, router_setup, teardown);
	tcase_add_loop_test(rt, routes_with_parameters, 0,
			    (int)(sizeof(route_cases) / sizeof(route_cases[0])));
	suite_add_tcase(s, rt);
	return s;
}
