/* Unit tests for the pure parts of mcp/lib: JSON-RPC classification and
 * answers, the session table, Host/Origin checks, schema checks of tool
 * arguments, output caps and UTF-8 cleaning.  Table-driven. */
#include "mcp/lib/cap.h"
#include "common/hostcheck.h"
#include "mcp/lib/jsonrpc.h"
#include "mcp/lib/schema.h"
#include "mcp/lib/session.h"
#include "tests/unit/mcp/suites.h"

#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

START_TEST(classifies_messages)
{
	static const struct {
		const char *json;
		int code; /* 0 or the JSON-RPC error */
		enum mcp_msg_kind kind;
		const char *id; /* JSON of the id read, or NULL */
	} cases[] = {
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 0, MCP_MSG_REQUEST, "1"},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"a-b\",\"method\":\"tools/list\",\"params\":{}}", 0, MCP_MSG_REQUEST, "\"a-b\""},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 0, MCP_MSG_NOTIFICATION, NULL},
		{"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", 0, MCP_MSG_RESPONSE, "7"},
		{"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":1,\"message\":\"x\"}}", 0, MCP_MSG_RESPONSE, "7"},
		{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MCP_INVALID_REQUEST, 0, NULL},
		{"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 0, "3"},
		{"{\"id\":3,\"method\":\"ping\"}", MCP_INVALID_REQUEST, 0, "3"},
		{"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":5}", MCP_INVALID_REQUEST, 0, "3"},
		{"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", MCP_INVALID_REQUEST, 0, NULL},
		{"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":7}", MCP_INVALID_REQUEST, 0, "3"},
		{"{\"jsonrpc\":\"2.0\",\"id\":3}", MCP_INVALID_REQUEST, 0, "3"},
		{"{\"jsonrpc\":\"2.0\",\"result\":{}}", MCP_INVALID_REQUEST, 0, NULL},
		{"42", MCP_INVALID_REQUEST, 0, NULL},
	};

	for (size_t i = 0; i < N(cases); i++) {
		json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
		struct err e = ERR_INIT;
		struct mcp_msg m;
		int code;

		ck_assert_msg(v, "%s", cases[i].json);
		code = mcp_rpc_classify(v, &m, &e);
		ck_assert_msg(code == cases[i].code, "%s: %d %s", cases[i].json, code, e.msg);
		if (!code)
			ck_assert_int_eq(m.kind, cases[i].kind);
		else
			ck_assert_msg(e.msg[0], "%s: no message", cases[i].json);
		if (cases[i].id) {
			char *s = json_dumps(m.id, JSON_ENCODE_ANY);
			ck_assert_msg(s && strcmp(s, cases[i].id) == 0, "%s: id %s", cases[i].json, s);
			free(s);
		} else {
			ck_assert_ptr_null(m.id);
		}
		json_decref(v);
	}
}
END_TEST

START_TEST(builds_answers_that_echo_ids)
{
	json_t *id = json_string("x-9"), *r = mcp_rpc_result(id, json_pack("{s:b}", "ok", 1));
	char *s = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);

	ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":\"x-9\",\"result\":{\"ok\":true}}");
	free(s);
	json_decref(r);
	r = mcp_rpc_error(NULL, MCP_PARSE_ERROR, "Parse error");
	s = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}");
	free(s);
	json_decref(r);
	json_decref(id);
}
END_TEST

START_TEST(sessions_live_expire_and_evict)
{
	struct mcp_sessions *t = mcp_sessions_new(2, 1000);
	struct err e = ERR_INIT;
	struct mcp_session *a, *b, *c;
	char ida[40], idb[40];

	a = mcp_sessions_create(t, "2025-06-18", 100, &e);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(strlen(a->id), 32);
	ck_assert(mcp_session_id_valid(a->id));
	strcpy(ida, a->id);
	b = mcp_sessions_create(t, "2025-11-25", 200, &e);
	strcpy(idb, b->id);
	ck_assert_str_ne(ida, idb);
	ck_assert_ptr_nonnull(mcp_sessions_get(t, ida, 300)); /* a is now the most recent */
	c = mcp_sessions_create(t, "2025-11-25", 400, &e);  /* full: b (LRU) goes */
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_null(mcp_sessions_get(t, idb, 400));
	ck_assert_ptr_nonnull(mcp_sessions_get(t, ida, 500));
	ck_assert_str_eq(mcp_sessions_get(t, ida, 500)->version, "2025-06-18");
	/* Busy sessions are never evicted: with both busy, creation fails 503. */
	mcp_sessions_get(t, ida, 500)->active = 1;
	mcp_sessions_get(t, c->id, 500)->active = 1;
	ck_assert_ptr_null(mcp_sessions_create(t, "2025-11-25", 600, &e));
	ck_assert_int_eq(e.http_status, 503);
	/* Idle expiry (1 s here), but not while a call runs. */
	ck_assert_ptr_nonnull(mcp_sessions_get(t, ida, 5000));
	mcp_sessions_get(t, ida, 5000)->active = 0;
	ck_assert_ptr_null(mcp_sessions_get(t, ida, 7000));
	ck_assert_int_eq(mcp_sessions_end(t, "nope"), -1);
	mcp_sessions_free(t);
}
END_TEST

START_TEST(session_ids_are_visible_ascii)
{
	static const struct {
		const char *id;
		bool valid;
	} cases[] = {{"abc", true}, {"a b", false}, {"", false}, {"x\x7f", false}, {"~!#", true}, {"\xc3\xa9", false}};

	for (size_t i = 0; i < N(cases); i++)
		ck_assert_msg(mcp_session_id_valid(cases[i].id) == cases[i].valid, "%s", cases[i].id);
}
END_TEST

START_TEST(checks_host_and_origin)
{
	static const struct {
		const char *v;
		bool origin;
		const char *allowed;
		bool ok;
	} cases[] = {
		{"localhost", false, NULL, true},
		{"localhost:8889", false, NULL, true},
		{"127.0.0.1:8889", false, NULL, true},
		{"[::1]:8889", false, NULL, true},
		{"10.0.2.15:8889", false, NULL, true},
		{"LOCALHOST", false, NULL, true},
		{"evil.example.com", false, NULL, false},
		{"localhost.evil.com", false, NULL, false},
		{"10.0.2.150", false, NULL, false},
		{"8889-sb1.cloche.example", false, "*.cloche.example", true},
		{"cloche.example", false, "*.cloche.example", false},
		{"mcp.internal:80", false, "a.b, mcp.internal", true},
		{"anything", false, "*", true},
		{"http://localhost:3000", true, NULL, true},
		{"https://127.0.0.1", true, NULL, true},
		{"http://evil.example.com", true, NULL, false},
		{"null", true, NULL, false},
		{"http://user@localhost", true, NULL, false},
		{"https://8889-sb1.cloche.example", true, "*.cloche.example", true},
	};

	for (size_t i = 0; i < N(cases); i++) {
		bool got = cases[i].origin ? hostcheck_origin_allowed(cases[i].v, cases[i].allowed)
					   : hostcheck_host_allowed(cases[i].v, cases[i].allowed);
		ck_assert_msg(got == cases[i].ok, "%s (allowed %s): %d", cases[i].v, cases[i].allowed, got);
	}
}
END_TEST

START_TEST(checks_arguments_against_schemas)
{
	static const char schema[] =
		"{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},"
		"\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},"
		"\"env\":{\"type\":\"object\"},\"flag\":{\"type\":\"boolean\"},"
		"\"mode\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},\"n\":{\"type\":[\"number\",\"string\"]}},"
		"\"required\":[\"command\"],\"additionalProperties\":false}";
	static const struct {
		const char *args;
		const char *err; /* substring, or NULL for valid */
	} cases[] = {
		{"{\"command\":\"ls\"}", NULL},
		{"{\"command\":\"ls\",\"timeout_ms\":5,\"env\":{},\"flag\":true,\"mode\":\"b\",\"n\":1.5}", NULL},
		{"{\"command\":\"ls\",\"timeout_ms\":5.0}", NULL},
		{"{\"command\":\"ls\",\"n\":\"x\",\"timeout_ms\":null}", NULL},
		{"{}", "`command` is required"},
		{"{\"command\":null}", "`command` is required"},
		{"{\"command\":5}", "`command` must be a string"},
		{"{\"command\":\"ls\",\"timeout_ms\":\"5\"}", "`timeout_ms` must be an integer"},
		{"{\"command\":\"ls\",\"timeout_ms\":2.5}", "`timeout_ms` must be an integer"},
		{"{\"command\":\"ls\",\"timeout_ms\":0}", "at least 1"},
		{"{\"command\":\"ls\",\"timeout_ms\":5000}", "at most 1000"},
		{"{\"command\":\"ls\",\"env\":[]}", "`env` must be an object"},
		{"{\"command\":\"ls\",\"flag\":\"yes\"}", "`flag` must be a boolean"},
		{"{\"command\":\"ls\",\"mode\":\"c\"}", "one of [\"a\",\"b\"]"},
		{"{\"command\":\"ls\",\"n\":true}", "`n` has the wrong type"},
		{"{\"command\":\"ls\",\"extra\":1}", "unknown argument `extra`"},
		{"[]", "`arguments` must be an object"},
	};
	json_t *s = json_loads(schema, 0, NULL);

	ck_assert_ptr_nonnull(s);
	for (size_t i = 0; i < N(cases); i++) {
		json_t *a = json_loads(cases[i].args, JSON_DECODE_ANY, NULL);
		struct err e = ERR_INIT;
		int rc = mcp_schema_check(s, a, &e);
		if (!cases[i].err)
			ck_assert_msg(rc == 0, "%s: %s", cases[i].args, e.msg);
		else
			ck_assert_msg(rc == -1 && strstr(e.msg, cases[i].err), "%s: %d %s", cases[i].args, rc, e.msg);
		json_decref(a);
	}
	json_decref(s);
}
END_TEST

START_TEST(caps_output_with_a_marker)
{
	struct mcp_cap c;
	char *t;
	size_t n;

	mcp_cap_init(&c, 10);
	mcp_cap_add(&c, "hello ", 6);
	t = mcp_cap_text(&c, &n);
	ck_assert_str_eq(t, "hello ");
	ck_assert_uint_eq(n, 6);
	free(t);
	mcp_cap_add(&c, "world, and more", 15);
	mcp_cap_add(&c, "0123456789", 10);
	t = mcp_cap_text(&c, &n);
	ck_assert_str_eq(t, "hello worl\n[... truncated: 21 more bytes ...]");
	ck_assert_uint_eq(n, strlen(t));
	free(t);
	mcp_cap_free(&c);
	mcp_cap_init(&c, 0);
	mcp_cap_add(&c, "x", 1);
	t = mcp_cap_text(&c, NULL);
	ck_assert_str_eq(t, "\n[... truncated: 1 more bytes ...]");
	free(t);
	mcp_cap_free(&c);
}
END_TEST

START_TEST(cleans_utf8_and_detects_binary)
{
	static const struct {
		const char *in;
		size_t len;
		const char *out;
	} cases[] = {
		{"plain", 5, "plain"},
		{"caf\xc3\xa9", 5, "caf\xc3\xa9"},
		{"a\xff" "b", 3, "a\xef\xbf\xbd" "b"},
		{"\xc3", 1, "\xef\xbf\xbd"},              /* cut sequence */
		{"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* surrogate */
		{"\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80"},
	};

	for (size_t i = 0; i < N(cases); i++) {
		size_t n;
		char *o = mcp_utf8_clean(cases[i].in, cases[i].len, &n);
		ck_assert_msg(strcmp(o, cases[i].out) == 0, "case %zu", i);
		ck_assert_uint_eq(n, strlen(cases[i].out));
		{
			json_t *js = json_stringn(o, n); /* jansson accepts it as UTF-8 */
			ck_assert_ptr_nonnull(js);
			json_decref(js);
		}
		free(o);
	}
	ck_assert(!mcp_looks_binary("text\nmore text", 14));
	ck_assert(mcp_looks_binary("ab\0cd", 5));
	ck_assert(mcp_looks_binary("\x89PNG\r\n\x1a\n\xff\xfe\xfd", 11));
	ck_assert(!mcp_looks_binary("caf\xc3", 4)); /* a sequence cut by the read window */
}
END_TEST

Suite *suite_mcp_jsonrpc(void)
{
	Suite *s = suite_create("mcp_jsonrpc");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, classifies_messages);
	tcase_add_test(tc, builds_answers_that_echo_ids);
	suite_add_tcase(s, tc);
	return s;
}

Suite *suite_mcp_session(void)
{
	Suite *s = suite_create("mcp_session");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, sessions_live_expire_and_evict);
	tcase_add_test(tc, session_ids_are_visible_ascii);
	suite_add_tcase(s, tc);
	return s;
}

Suite *suite_mcp_hostcheck(void)
{
	Suite *s = suite_create("mcp_hostcheck");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, checks_host_and_origin);
	suite_add_tcase(s, tc);
	return s;
}

Suite *suite_mcp_schema(void)
{
	Suite *s = suite_create("mcp_schema");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, checks_arguments_against_schemas);
	suite_add_tcase(s, tc);
	return s;
}

Suite *suite_mcp_cap(void)
{
	Suite *s = suite_create("mcp_cap");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, caps_output_with_a_marker);
	tcase_add_test(tc, cleans_utf8_and_detects_binary);
	suite_add_tcase(s, tc);
	return s;
}
