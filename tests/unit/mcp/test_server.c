/* Unit tests for the MCP transport in mcp/lib/server.c, through a real
 * HTTP client (common/http_client) against mcp_server_run() on a thread:
 * initialize and version negotiation, tools/list pagination, a tool that
 * fails, argument errors, SSE progress streams, a slow call not blocking
 * others, cancellation, and SIGTERM. */
#include "mcp/lib/mcp.h"
#include "common/http_client.h"
#include "common/json.h"
#include "common/util.h"
#include "tests/unit/mcp/suites.h"

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct mcp_server *srv;
static pthread_t loop_th;
static int port;
static atomic_int saw_cancel;

static int t_echo(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *text;

	(void)call;
	if (cj_req_str(args, "text", &text, e))
		return -1;
	if (strcmp(text, "fail") == 0)
		return mcp_result_error(res, "echo: asked to fail"), 0;
	mcp_result_text(res, "%s", text);
	mcp_result_structured(res, json_pack("{s:s}", "text", text));
	return 0;
}

/* Runs ms milliseconds in 50 ms steps, reporting progress; stops early when cancelled. */
static int t_slow(struct mcp_call *call, const json_t *args, struct mcp_result *res, struct err *e)
{
	long long ms;

	if (cj_get_int(args, "ms", 300, &ms, e))
		return -1;
	for (long long t = 0; t < ms; t += 50) {
		if (mcp_call_cancelled(call)) {
			atomic_fetch_add(&saw_cancel, 1);
			return mcp_result_error(res, "cancelled"), 0;
		}
		if (t % 100 == 0)
			mcp_call_progress(call, (double)t, (double)ms, "working");
		usleep(50 * 1000);
	}
	mcp_result_text(res, "slept %lld ms", ms);
	return 0;
}

static void *loop(void *arg)
{
	mcp_server_run(arg);
	return NULL;
}

static void setup(void)
{
	struct err e = ERR_INIT;
	const struct mcp_tool tools[] = {
		{.name = "echo", .description = "echo text", .fn = t_echo,
		 .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
		 .output_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}"},
		{.name = "slow", .description = "sleeps", .fn = t_slow,
		 .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}}"},
	};

	srv = mcp_server_new(&(struct mcp_server_opts){.name = "unit", .version = "1", .listen = "127.0.0.1",
						       .page_size = 1, .max_body = 4096},
			     &e);
	ck_assert_msg(srv, "%s", e.msg);
	for (size_t i = 0; i < 2; i++)
		ck_assert_int_eq(mcp_server_add_tool(srv, &tools[i], &e), 0);
	ck_assert_int_eq(mcp_server_add_tool(srv, &tools[0], &e), -1); /* twice */
	port = mcp_server_port(srv);
	atomic_store(&saw_cancel, 0);
	ck_assert_int_eq(pthread_create(&loop_th, NULL, loop, srv), 0);
}

static void teardown(void)
{
	raise(SIGTERM); /* the server's handler: stop after running calls end */
	pthread_join(loop_th, NULL);
	mcp_server_free(srv);
}

/* POSTs body; returns the status; the body in *out and the session header in sid. */
static long post(const char *session, const char *body, char **out, char *sid)
{
	char url[64], sh[128];
	const char *hdrs[] = {"Content-Type: application/json", "Accept: application/json, text/event-stream",
			      sh, NULL};
	struct http_resp r = {0};
	struct err e = ERR_INIT;
	long st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
	snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", session ? session : "");
	if (!session)
		hdrs[2] = NULL;
	ck_assert_msg(http_request(&(struct http_req){.method = "POST", .url = url, .headers = hdrs, .body = body,
						     .body_len = strlen(body), .timeout_ms = 5000},
				   &r, &e) == 0,
		      "%s", e.msg);
	st = r.status;
	if (out)
		*out = strdup(r.body.data ? r.body.data : "");
	if (sid) {
		const char *h = http_resp_header(&r, "mcp-session-id");
		snprintf(sid, 64, "%s", h ? h : "");
		if (http_resp_header(&r, "content-type") && strstr(http_resp_header(&r, "content-type"), "event-stream"))
			strcat(sid, "|sse");
	}
	http_resp_free(&r);
	return st;
}

static void init_session(char *sid, const char *version, char **body)
{
	char req[256];

	snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		 "{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
		 version);
	ck_assert_int_eq(post(NULL, req, body, sid), 200);
	ck_assert_int_eq(strlen(sid), 32);
}

START_TEST(negotiates_and_lists_tools_in_pages)
{
	char sid[64], *b = NULL;

	init_session(sid, "2025-06-18", &b);
	ck_assert_msg(strstr(b, "\"protocolVersion\":\"2025-06-18\""), "%s", b);
	free(b);
	init_session(sid, "2024-01-01", &b);
	ck_assert_msg(strstr(b, "\"protocolVersion\":\"2025-11-25\""), "%s", b);
	free(b);
	ck_assert_int_eq(post(sid, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &b, NULL), 200);
	ck_assert_msg(strstr(b, "\"name\":\"echo\"") && strstr(b, "\"nextCursor\":\"1\""), "%s", b);
	ck_assert_msg(strstr(b, "\"outputSchema\""), "%s", b);
	free(b);
	ck_assert_int_eq(post(sid, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"cursor\":\"1\"}}", &b, NULL), 200);
	ck_assert_msg(strstr(b, "\"name\":\"slow\"") && !strstr(b, "nextCursor"), "%s", b);
	free(b);
	ck_assert_int_eq(post(sid, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{\"cursor\":\"zz\"}}", &b, NULL), 200);
	ck_assert_msg(strstr(b, "-32602"), "%s", b);
	free(b);
}
END_TEST

START_TEST(calls_tools_and_reports_errors)
{
	static const struct {
		const char *params;
		const char *needle;
	} cases[] = {
		{"{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}", "\"structuredContent\":{\"text\":\"hi\"}"},
		{"{\"name\":\"echo\",\"arguments\":{\"text\":\"fail\"}}", "\"isError\":true"},
		{"{\"name\":\"echo\",\"arguments\":{\"text\":1}}", "\"code\":-32602"},
		{"{\"name\":\"echo\"}", "`text` is required"},
		{"{\"name\":\"nope\",\"arguments\":{}}", "Unknown tool: nope"},
		{"{\"name\":\"echo\",\"arguments\":[1]}", "-32602"},
	};
	char sid[64], *b = NULL, req[512];

	init_session(sid, "2025-11-25", &b);
	free(b);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":\"c%zu\",\"method\":\"tools/call\",\"params\":%s}",
			 i, cases[i].params);
		ck_assert_int_eq(post(sid, req, &b, NULL), 200);
		ck_assert_msg(strstr(b, cases[i].needle), "%s: %s", cases[i].params, b);
		free(b);
	}
}
END_TEST

START_TEST(streams_progress_as_sse)
{
	char sid[64], hdr[64], *b = NULL;

	init_session(sid, "2025-11-25", &b);
	free(b);
	ck_assert_int_eq(post(sid, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":"
				   "{\"name\":\"slow\",\"arguments\":{\"ms\":300},\"_meta\":{\"progressToken\":\"tok\"}}}",
			      &b, hdr),
			 200);
	ck_assert_msg(strstr(hdr, "|sse"), "not a stream: %s", b);
	ck_assert_msg(strstr(b, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\""), "%s", b);
	ck_assert_msg(strstr(b, "\"progressToken\":\"tok\""), "%s", b);
	ck_assert_msg(strstr(b, "\"id\":9,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"slept 300 ms\"}]}"), "%s", b);
	free(b);
	/* Without a token the same call answers plain JSON. */
	ck_assert_int_eq(post(sid, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":"
				   "{\"name\":\"slow\",\"arguments\":{\"ms\":100}}}", &b, hdr), 200);
	ck_assert_msg(!strstr(hdr, "|sse") && b[0] == '{', "%s", b);
	free(b);
}
END_TEST

struct bg {
	char sid[64];
	long status;
	char *body;
};

/* The slow call; its connection is closed without an answer once cancelled. */
static void *bg_call(void *arg)
{
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":\"long\",\"method\":\"tools/call\",\"params\":"
				   "{\"name\":\"slow\",\"arguments\":{\"ms\":3000}}}";
	struct bg *g = arg;
	char url[64], sh[128];
	const char *hdrs[] = {"Content-Type: application/json", "Accept: application/json, text/event-stream",
			      sh, NULL};
	struct http_resp r = {0};
	struct err e = ERR_INIT;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
	snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", g->sid);
	if (http_request(&(struct http_req){.method = "POST", .url = url, .headers = hdrs, .body = body,
					    .body_len = strlen(body), .timeout_ms = 5000}, &r, &e) == 0) {
		g->status = r.status;
		g->body = strdup(r.body.data ? r.body.data : "");
	}
	http_resp_free(&r);
	return NULL;
}

START_TEST(slow_calls_block_nobody_and_can_be_cancelled)
{
	struct bg g = {0};
	char other[64], *b = NULL;
	pthread_t th;
	uint64_t t0;

	init_session(g.sid, "2025-11-25", &b);
	free(b);
	init_session(other, "2025-11-25", &b);
	free(b);
	ck_assert_int_eq(pthread_create(&th, NULL, bg_call, &g), 0);
	usleep(200 * 1000);
	t0 = util_now_ms();
	ck_assert_int_eq(post(other, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &b, NULL), 200);
	ck_assert_msg(strstr(b, "\"result\":{}"), "%s", b);
	free(b);
	ck_assert_int_eq(post(other, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
				    "{\"name\":\"echo\",\"arguments\":{\"text\":\"quick\"}}}", &b, NULL), 200);
	free(b);
	ck_assert_uint_lt(util_now_ms() - t0, 1000);
	/* Cancel the slow call: it stops, and its request gets no answer. */
	ck_assert_int_eq(post(g.sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
				    "{\"requestId\":\"long\",\"reason\":\"test\"}}", &b, NULL), 202);
	ck_assert_str_eq(b, "");
	free(b);
	pthread_join(th, NULL);
	ck_assert_int_eq(atomic_load(&saw_cancel), 1);
	ck_assert_msg(!g.body || !strstr(g.body, "slept"), "%s", g.body);
	free(g.body);
}
END_TEST

START_TEST(refuses_bad_transport_use)
{
	char sid[64], *b = NULL, big[5000];

	ck_assert_int_eq(post(NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &b, NULL), 400);
	free(b);
	ck_assert_int_eq(post("0123", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &b, NULL), 404);
	free(b);
	ck_assert_int_eq(post(NULL, "{not json", &b, NULL), 400);
	ck_assert_msg(strstr(b, "-32700"), "%s", b);
	free(b);
	init_session(sid, "2025-11-25", &b);
	free(b);
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	ck_assert_int_eq(post(sid, big, &b, NULL), 413);
	free(b);
	ck_assert_int_eq(post(sid, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}", &b, NULL), 200);
	ck_assert_msg(strstr(b, "-32601"), "%s", b);
	free(b);
}
END_TEST

Suite *suite_mcp_server(void)
{
	Suite *s = suite_create("mcp_server");
	TCase *tc = tcase_create("http");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, negotiates_and_lists_tools_in_pages);
	tcase_add_test(tc, calls_tools_and_reports_errors);
	tcase_add_test(tc, streams_progress_as_sse);
	tcase_add_test(tc, slow_calls_block_nobody_and_can_be_cancelled);
	tcase_add_test(tc, refuses_bad_transport_use);
	suite_add_tcase(s, tc);
	return s;
}
