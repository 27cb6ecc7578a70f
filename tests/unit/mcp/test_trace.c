/* The action trace's lines (mcp/lib/trace.h): what a call leaves behind,
 * small whatever it carried, and the append with its rotation. */
#include "mcp/lib/trace.h"
#include "tests/unit/mcp/suites.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(line_of_a_call)
{
	char big[1000];
	json_t *args, *result, *rec, *line, *img;
	const char *text;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	args = json_pack("{s:s, s:[i,i], s:{s:s}}", "action", "type", "coordinate", 1, 2, "deep",
			 "text", big);
	result = json_pack("{s:[{s:s, s:s}, {s:s, s:s, s:s}], s:b}", "content", "type", "text",
			   "text", "clicked\nat (1, 2)", "type", "image", "mimeType", "image/png",
			   "data", "iVBORw0KGgoAAAANSUhEUg==", "isError", 0);
	rec = json_pack("{s:s, s:I}", "id", "rec-1", "started_ms", (json_int_t)1000000);
	line = mcp_trace_line("cloche-desktop", "computer", args, "ok", result, 1001500, 42, rec);
	ck_assert_ptr_nonnull(line);
	ck_assert_str_eq(json_string_value(json_object_get(line, "ts")), "1970-01-01T00:16:41.500Z");
	ck_assert_str_eq(json_string_value(json_object_get(line, "server")), "cloche-desktop");
	ck_assert_str_eq(json_string_value(json_object_get(line, "tool")), "computer");
	ck_assert_int_eq(json_integer_value(json_object_get(line, "duration_ms")), 42);
	ck_assert(json_is_false(json_object_get(line, "isError")));
	/* Newlines out of the summary, long strings cut, the image hashed. */
	ck_assert_str_eq(json_string_value(json_object_get(line, "summary")), "clicked at (1, 2)");
	text = json_string_value(json_object_get(json_object_get(json_object_get(line, "arguments"),
								 "deep"), "text"));
	ck_assert_uint_lt(strlen(text), MCP_TRACE_STR + 40);
	ck_assert_ptr_nonnull(strstr(text, "(999 bytes)"));
	img = json_array_get(json_object_get(line, "images"), 0);
	ck_assert_uint_eq(strlen(json_string_value(json_object_get(img, "sha256_16"))), 16);
	{
		char *dump = json_dumps(line, 0);
		ck_assert_ptr_null(strstr(dump, "iVBOR"));
		free(dump);
	}
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(line, "recording"),
							    "offset_ms")),
			 1500);
	json_decref(line);
	/* No recording, no result (a call refused for its arguments). */
	line = mcp_trace_line("cloche-shell", "run_command", NULL, "invalid_params", NULL, 5, 1, NULL);
	ck_assert_ptr_null(json_object_get(line, "recording"));
	ck_assert_ptr_null(json_object_get(line, "summary"));
	ck_assert_str_eq(json_string_value(json_object_get(line, "status")), "invalid_params");
	json_decref(line);
	json_decref(args);
	json_decref(result);
	json_decref(rec);
}
END_TEST

START_TEST(cut_keeps_utf8_whole)
{
	char s[MCP_TRACE_STR + 10];
	json_t *args, *line;
	const char *v;

	/* "é" (2 bytes) straddling the cut. */
	memset(s, 'a', sizeof(s));
	s[MCP_TRACE_STR - 1] = (char)0xc3;
	s[MCP_TRACE_STR] = (char)0xa9;
	s[sizeof(s) - 1] = '\0';
	args = json_pack("{s:s}", "t", s);
	ck_assert_ptr_nonnull(args);
	line = mcp_trace_line("x", "y", args, "ok", NULL, 0, 0, NULL);
	v = json_string_value(json_object_get(json_object_get(line, "arguments"), "t"));
	ck_assert_ptr_nonnull(v); /* jansson refuses invalid UTF-8 */
	json_decref(line);
	json_decref(args);
}
END_TEST

START_TEST(append_and_rotate)
{
	char dir[] = "/tmp/unit-trace-XXXXXX", path[128], old[140], line[512];
	json_t *args = json_pack("{s:s}", "command", "id");
	struct stat st;
	FILE *f;
	int n = 0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/trace.jsonl", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	setenv("CLOCHE_TRACE_FILE", path, 1);
	unsetenv("CLOCHE_REC_CURRENT");
	mcp_trace_append("cloche-shell", "run_command", args, "ok", NULL, 1, 2);
	mcp_trace_append("cloche-shell", "run_command", args, "ok", NULL, 3, 4);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);
		ck_assert_ptr_nonnull(j);
		json_decref(j);
		n++;
	}
	fclose(f);
	ck_assert_int_eq(n, 2);
	/* A full generation moves to .1 and a new one starts. */
	ck_assert_int_eq(truncate(path, MCP_TRACE_MAX), 0);
	mcp_trace_append("cloche-shell", "run_command", args, "ok", NULL, 5, 6);
	ck_assert_int_eq(stat(old, &st), 0);
	ck_assert_int_eq(st.st_size, MCP_TRACE_MAX);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_lt(st.st_size, 400);
	unsetenv("CLOCHE_TRACE_FILE");
	unlink(path);
	unlink(old);
	rmdir(dir);
	json_decref(args);
}
END_TEST

Suite *suite_mcp_trace(void)
{
	Suite *s = suite_create("mcp_trace");
	TCase *tc = tcase_create("trace");

	tcase_add_test(tc, line_of_a_call);
	tcase_add_test(tc, cut_keeps_utf8_whole);
	tcase_add_test(tc, append_and_rotate);
	suite_add_tcase(s, tc);
	return s;
}
