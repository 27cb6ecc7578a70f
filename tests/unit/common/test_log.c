/* Unit tests for common/log: every line is one JSON object with ts, level,
 * prog and msg plus the caller's fields; levels filter; hostile text in a
 * message cannot split or drop a line. */
#include "common/log.h"
#include "common/util.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINES 16

static int pipe_fds[2] = {-1, -1};
static char captured[65536];
static json_t *lines[MAX_LINES];
static size_t nlines;

static void setup(void)
{
	ck_assert_int_eq(pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK), 0);
	log_init("unit", LOG_INFO, pipe_fds[1]);
	nlines = 0;
}

static void teardown(void)
{
	log_init("cloche", LOG_INFO, 2);
	for (size_t i = 0; i < nlines; i++)
		json_decref(lines[i]);
	nlines = 0;
	close(pipe_fds[0]);
	close(pipe_fds[1]);
}

/* Reads what was logged so far and parses it line by line; a line that is
 * not one JSON object fails the test. */
static void collect(void)
{
	ssize_t n = read(pipe_fds[0], captured, sizeof(captured) - 1);
	char *line, *save = NULL;

	captured[n > 0 ? n : 0] = '\0';
	if (n > 0)
		ck_assert_int_eq(captured[n - 1], '\n');
	for (line = strtok_r(captured, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_error_t jerr;
		json_t *v = json_loads(line, 0, &jerr);

		ck_assert_msg(v && json_is_object(v), "not a JSON object: %s (%s)", line, jerr.text);
		ck_assert_uint_lt(nlines, MAX_LINES);
		lines[nlines++] = v;
	}
}

static const char *field(size_t line, const char *key)
{
	return json_string_value(json_object_get(lines[line], key));
}

START_TEST(lines_have_standard_fields)
{
	const char *ts;

	log_info("service started", NULL);
	collect();
	ck_assert_uint_eq(nlines, 1);
	ck_assert_str_eq(field(0, "level"), "info");
	ck_assert_str_eq(field(0, "prog"), "unit");
	ck_assert_str_eq(field(0, "msg"), "service started");
	ts = field(0, "ts");
	ck_assert_ptr_nonnull(ts);
	/* 2026-01-02T03:04:05.678Z */
	ck_assert_uint_eq(strlen(ts), 24);
	ck_assert_int_eq(ts[10], 'T');
	ck_assert_int_eq(ts[19], '.');
	ck_assert_int_eq(ts[23], 'Z');
}
END_TEST

START_TEST(extra_fields_are_added)
{
	log_warn("child exited", "{s:s, s:i, s:b}", "svc", "xvfb", "status", 137, "restart", 1);
	collect();
	ck_assert_uint_eq(nlines, 1);
	ck_assert_str_eq(field(0, "level"), "warn");
	ck_assert_str_eq(field(0, "svc"), "xvfb");
	ck_assert_int_eq(json_integer_value(json_object_get(lines[0], "status")), 137);
	ck_assert(json_is_true(json_object_get(lines[0], "restart")));
}
END_TEST

/* Which levels get through at each minimum. */
static const struct {
	enum log_level min;
	const char *want; /* levels written, in order */
} filters[] = {
	{LOG_DEBUG, "debug,info,warn,error,"},
	{LOG_INFO, "info,warn,error,"},
	{LOG_WARN, "warn,error,"},
	{LOG_ERROR, "error,"},
};

START_TEST(levels_filter)
{
	char got[64] = "";

	log_init("unit", filters[_i].min, pipe_fds[1]);
	log_debug("d", NULL);
	log_info("i", NULL);
	log_warn("w", NULL);
	log_error("e", NULL);
	collect();
	for (size_t i = 0; i < nlines; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s,", field(i, "level"));
	ck_assert_str_eq(got, filters[_i].want);
}
END_TEST

START_TEST(hostile_text_stays_on_one_line)
{
	const char *msg = "he said \"hi\"\nand left\r\n\t{\"level\":\"error\"}\\";

	log_error(msg, "{s:s}", "out", "line1\nline2\x01");
	collect();
	ck_assert_uint_eq(nlines, 1);
	ck_assert_str_eq(field(0, "msg"), msg);
	ck_assert_str_eq(field(0, "out"), "line1\nline2\x01");
	ck_assert_str_eq(field(0, "level"), "error");
}
END_TEST

START_TEST(invalid_utf8_is_not_dropped)
{
	log_info("output: \xff\xfe ok", NULL);
	collect();
	ck_assert_uint_eq(nlines, 1);
	ck_assert_ptr_nonnull(field(0, "msg"));
	ck_assert_msg(strstr(field(0, "msg"), "output: ") && strstr(field(0, "msg"), " ok"), "%s",
		      field(0, "msg"));
}
END_TEST

START_TEST(bad_field_format_is_reported)
{
	log_info("with bad fields", "{s:s", "k", "v");
	collect();
	ck_assert_uint_eq(nlines, 1);
	ck_assert_str_eq(field(0, "msg"), "with bad fields");
	ck_assert_ptr_nonnull(json_object_get(lines[0], "log_format_error"));
}
END_TEST

START_TEST(errno_is_preserved)
{
	errno = ENOSPC;
	log_info("x", "{s:i}", "n", 1);
	ck_assert_int_eq(errno, ENOSPC);
}
END_TEST

static const struct {
	const char *text;
	int want;
} level_names[] = {
	{"debug", LOG_DEBUG}, {"info", LOG_INFO}, {"warn", LOG_WARN}, {"error", LOG_ERROR},
	{"INFO", -1},         {"", -1},           {"warning", -1},    {NULL, -1},
};

START_TEST(level_names_parse)
{
	ck_assert_int_eq(log_level_parse(level_names[_i].text), level_names[_i].want);
}
END_TEST

Suite *suite_log(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, lines_have_standard_fields);
	tcase_add_test(tc, extra_fields_are_added);
	tcase_add_loop_test(tc, levels_filter, 0, (int)ARRAY_LEN(filters));
	tcase_add_test(tc, hostile_text_stays_on_one_line);
	tcase_add_test(tc, invalid_utf8_is_not_dropped);
	tcase_add_test(tc, bad_field_format_is_reported);
	tcase_add_test(tc, errno_is_preserved);
	tcase_add_loop_test(tc, level_names_parse, 0, (int)ARRAY_LEN(level_names));
	suite_add_tcase(s, tc);
	return s;
}
