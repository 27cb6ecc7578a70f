/* Unit tests for common/json: bounded parsing with located errors, typed
 * getters and their 400 messages, string vectors, dumping and files. */
#include "common/json.h"
#include "common/util.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Texts cj_parse must refuse: the status and a piece of the message. */
static const struct {
	const char *text;
	size_t max_len;
	int status;
	const char *msg;
} bad_texts[] = {
	{"{", 100, 400, "invalid JSON at line 1, column 1: "},
	{"", 100, 400, "invalid JSON at line 1, column 0: "},
	{"{\"a\":1,}", 100, 400, "invalid JSON at line 1, column 8: "},
	{"{\n  \"a\": tru\n}", 100, 400, "invalid JSON at line 2, column "},
	{"[1,2", 100, 400, "invalid JSON at line 1"},
	{"{} x", 100, 400, "end of file expected"},
	{"{\"a\":1,\"a\":2}", 100, 400, "duplicate object key"},
	{"\"a\\u0000b\"", 100, 400, "\\u0000 is not allowed"},
	{"{\"a\":\"\xff\"}", 100, 400, "unable to decode byte 0xff"},
	{"[1, 2, 3]", 8, 413, "JSON text of 9 bytes exceeds the limit of 8 bytes"},
};

START_TEST(parse_errors_are_located)
{
	struct err e = ERR_INIT;
	json_t *v = cj_parse(bad_texts[_i].text, strlen(bad_texts[_i].text),
			     bad_texts[_i].max_len, CJ_MAX_DEPTH, &e);

	ck_assert_ptr_null(v);
	ck_assert_int_eq(e.http_status, bad_texts[_i].status);
	ck_assert_msg(strstr(e.msg, bad_texts[_i].msg), "got `%s`", e.msg);
}
END_TEST

static char *nested(int depth, const char *inner)
{
	size_t len = strlen(inner);
	char *s = malloc(2 * (size_t)depth + len + 1);

	memset(s, '[', (size_t)depth);
	memcpy(s + depth, inner, len);
	memset(s + depth + len, ']', (size_t)depth);
	s[2 * depth + len] = '\0';
	return s;
}

START_TEST(depth_is_limited)
{
	AUTOFREE char *ok = nested(CJ_MAX_DEPTH, "1");
	AUTOFREE char *deep = nested(CJ_MAX_DEPTH + 1, "1");
	AUTOFREE char *huge = nested(100000, "");
	AUTOFREE char *quoted = nested(2, "\"[[[[[[\\\"[[[[\"");
	struct err e = ERR_INIT;
	json_t *v;

	v = cj_parse(ok, strlen(ok), 1 << 20, CJ_MAX_DEPTH, &e);
	ck_assert_msg(v != NULL, "%s", e.msg);
	json_decref(v);
	ck_assert_ptr_null(cj_parse(deep, strlen(deep), 1 << 20, CJ_MAX_DEPTH, &e));
	ck_assert_str_eq(e.msg, "invalid JSON at line 1, column 33: nested deeper than 32 levels");
	ck_assert_int_eq(e.http_status, 400);
	ck_assert_ptr_null(cj_parse(huge, strlen(huge), 1 << 20, CJ_MAX_DEPTH, &e));
	/* Brackets inside strings, escaped quotes included, do not count. */
	v = cj_parse(quoted, strlen(quoted), 100, 2, &e);
	ck_assert_msg(v != NULL, "%s", e.msg);
	ck_assert_str_eq(json_string_value(json_array_get(json_array_get(v, 0), 0)),
			 "[[[[[[\"[[[[");
	json_decref(v);
}
END_TEST

START_TEST(parse_takes_unterminated_spans)
{
	const char text[] = "{\"a\": [true, null]}GARBAGE";
	struct err e = ERR_INIT;
	AUTOJSON json_t *v = cj_parse(text, 19, 19, CJ_MAX_DEPTH, &e);
	AUTOJSON json_t *scalar = cj_parse("42", 2, 2, 1, &e);

	ck_assert_msg(v != NULL, "%s", e.msg);
	ck_assert(json_is_true(json_array_get(json_object_get(v, "a"), 0)));
	ck_assert_int_eq(json_integer_value(scalar), 42);
}
END_TEST

static const char doc[] = "{\"s\": \"str\", \"i\": 7, \"r\": 7.0, \"t\": true, \"n\": null,"
			  " \"o\": {\"k\": 1}, \"v\": [\"a\", \"\", \"c\"], \"bad\": [\"a\", 2],"
			  " \"e\": []}";

/* One getter call per row: what it returns, or the error it gives. */
enum kind { STR, REQ_STR, INT, REQ_INT, BOOL, REQ_BOOL, OBJ, REQ_OBJ, STRV, REQ_STRV };
static const struct {
	enum kind kind;
	const char *key;
	const char *want; /* value as text, or the error message */
	int ok;
} getters[] = {
	{STR, "s", "str", 1},       {STR, "missing", "def", 1},  {STR, "n", "def", 1},
	{STR, "i", "`i` must be a string", 0},
	{REQ_STR, "s", "str", 1},   {REQ_STR, "missing", "`missing` is required", 0},
	{REQ_STR, "n", "`n` is required", 0},
	{INT, "i", "7", 1},         {INT, "missing", "-1", 1},
	{INT, "r", "`r` must be an integer", 0}, {INT, "s", "`s` must be an integer", 0},
	{REQ_INT, "i", "7", 1},     {REQ_INT, "missing", "`missing` is required", 0},
	{BOOL, "t", "1", 1},        {BOOL, "missing", "1", 1},
	{BOOL, "i", "`i` must be a boolean", 0},
	{REQ_BOOL, "t", "1", 1},    {REQ_BOOL, "n", "`n` is required", 0},
	{OBJ, "o", "{\"k\":1}", 1}, {OBJ, "missing", "(null)", 1},
	{OBJ, "v", "`v` must be an object", 0},
	{REQ_OBJ, "o", "{\"k\":1}", 1}, {REQ_OBJ, "missing", "`missing` is required", 0},
	{STRV, "v", "a,,c,", 1},    {STRV, "e", "", 1},          {STRV, "missing", "(null)", 1},
	{STRV, "s", "`s` must be an array of strings", 0},
	{STRV, "bad", "`bad[1]` must be a string", 0},
	{REQ_STRV, "v", "a,,c,", 1}, {REQ_STRV, "missing", "`missing` is required", 0},
};

START_TEST(getters_check_types)
{
	AUTOJSON json_t *o = cj_parse(doc, sizeof(doc) - 1, sizeof(doc), CJ_MAX_DEPTH, NULL);
	struct err e = ERR_INIT;
	const char *s = NULL;
	long long i = 0;
	bool b = false;
	json_t *obj = NULL;
	char **v = NULL, got[128] = "";
	int r = -1;

	ck_assert_ptr_nonnull(o);
	switch (getters[_i].kind) {
	case STR: r = cj_get_str(o, getters[_i].key, "def", &s, &e); break;
	case REQ_STR: r = cj_req_str(o, getters[_i].key, &s, &e); break;
	case INT: r = cj_get_int(o, getters[_i].key, -1, &i, &e); break;
	case REQ_INT: r = cj_req_int(o, getters[_i].key, &i, &e); break;
	case BOOL: r = cj_get_bool(o, getters[_i].key, true, &b, &e); break;
	case REQ_BOOL: r = cj_req_bool(o, getters[_i].key, &b, &e); break;
	case OBJ: r = cj_get_obj(o, getters[_i].key, &obj, &e); break;
	case REQ_OBJ: r = cj_req_obj(o, getters[_i].key, &obj, &e); break;
	case STRV: r = cj_get_strv(o, getters[_i].key, &v, &e); break;
	case REQ_STRV: r = cj_req_strv(o, getters[_i].key, &v, &e); break;
	}
	if (!getters[_i].ok) {
		ck_assert_int_eq(r, -1);
		ck_assert_int_eq(e.http_status, 400);
		ck_assert_str_eq(e.msg, getters[_i].want);
		ck_assert_ptr_null(v);
		return;
	}
	ck_assert_msg(r == 0, "%s", e.msg);
	switch (getters[_i].kind) {
	case STR: case REQ_STR: snprintf(got, sizeof(got), "%s", s); break;
	case INT: case REQ_INT: snprintf(got, sizeof(got), "%lld", i); break;
	case BOOL: case REQ_BOOL: snprintf(got, sizeof(got), "%d", b); break;
	case OBJ: case REQ_OBJ: {
		AUTOFREE char *text = obj ? cj_dump(obj) : NULL;
		snprintf(got, sizeof(got), "%s", text ? text : "(null)");
		break;
	}
	case STRV: case REQ_STRV:
		if (!v)
			snprintf(got, sizeof(got), "(null)");
		for (size_t k = 0; v && v[k]; k++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s,", v[k]);
		free(v);
		break;
	}
	ck_assert_str_eq(got, getters[_i].want);
}
END_TEST

START_TEST(getters_want_an_object)
{
	AUTOJSON json_t *arr = json_array();
	struct err e = ERR_INIT;
	const char *s;

	ck_assert_int_eq(cj_get_str(arr, "x", "d", &s, &e), -1);
	ck_assert_str_eq(e.msg, "expected a JSON object");
	ck_assert_int_eq(cj_req_str(NULL, "x", &s, &e), -1);
	ck_assert_int_eq(e.http_status, 400);
}
END_TEST

START_TEST(dump_is_compact)
{
	AUTOJSON json_t *v = json_pack("{s:i, s:[s, b], s:s}", "b", 1, "a", "x", 0, "q", "\"\n");
	AUTOJSON json_t *str = json_string("plain");
	AUTOFREE char *text = cj_dump(v);
	AUTOFREE char *scalar = cj_dump(str);

	ck_assert_str_eq(text, "{\"b\":1,\"a\":[\"x\",false],\"q\":\"\\\"\\n\"}");
	ck_assert_str_eq(scalar, "\"plain\"");
}
END_TEST

START_TEST(dump_buf_is_bounded)
{
	AUTOJSON json_t *v = json_pack("{s:s}", "key", "0123456789");
	AUTOBUF struct buf b = BUF_INIT(24);
	struct err e = ERR_INIT;

	ck_assert_int_eq(buf_appends(&b, "x=", NULL), 0);
	ck_assert_int_eq(cj_dump_buf(v, &b, &e), 0);
	ck_assert_str_eq(buf_str(&b), "x={\"key\":\"0123456789\"}");
	ck_assert_int_eq(cj_dump_buf(v, &b, &e), -1);
	ck_assert_int_eq(e.code, E2BIG);
	ck_assert_int_eq(e.http_status, 413);
	ck_assert_str_eq(buf_str(&b), "x={\"key\":\"0123456789\"}");
}
END_TEST

START_TEST(load_file_names_the_file)
{
	char path[] = "/tmp/cloche-json-XXXXXX";
	int fd = mkstemp(path);
	struct err e = ERR_INIT;
	char want[128];
	json_t *v;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(util_write_all(fd, "{\"a\": [1,\n 2,]}", 15), 0);
	close(fd);
	ck_assert_ptr_null(cj_load_file(path, 1 << 20, &e));
	snprintf(want, sizeof(want), "`%s`: invalid JSON at line 2, column", path);
	ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0, "got `%s`", e.msg);

	ck_assert_ptr_null(cj_load_file(path, 10, &e));
	ck_assert_int_eq(e.http_status, 413);
	snprintf(want, sizeof(want), "read `%s`: exceeds the limit of 10 bytes", path);
	ck_assert_str_eq(e.msg, want);

	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(util_write_all(fd, "{\"a\": 1}\n", 9), 0);
	close(fd);
	v = cj_load_file(path, 1 << 20, &e);
	ck_assert_msg(v != NULL, "%s", e.msg);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "a")), 1);
	json_decref(v);
	unlink(path);

	ck_assert_ptr_null(cj_load_file(path, 1 << 20, &e));
	snprintf(want, sizeof(want), "open `%s`: No such file or directory", path);
	ck_assert_str_eq(e.msg, want);
	ck_assert_int_eq(e.code, ENOENT);
}
END_TEST

Suite *suite_json(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, parse_errors_are_located, 0, (int)ARRAY_LEN(bad_texts));
	tcase_add_test(tc, depth_is_limited);
	tcase_add_test(tc, parse_takes_unterminated_spans);
	tcase_add_loop_test(tc, getters_check_types, 0, (int)ARRAY_LEN(getters));
	tcase_add_test(tc, getters_want_an_object);
	tcase_add_test(tc, dump_is_compact);
	tcase_add_test(tc, dump_buf_is_bounded);
	tcase_add_test(tc, load_file_names_the_file);
	suite_add_tcase(s, tc);
	return s;
}
