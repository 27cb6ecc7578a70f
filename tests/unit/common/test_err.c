/* Unit tests for common/err: messages, errno text, wrapping and truncation. */
#include "common/err.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <errno.h>
#include <string.h>

START_TEST(set_appends_strerror)
{
	struct err e = ERR_INIT;

	ck_assert_int_eq(err_set(&e, ENOENT, "open `%s`", "x"), -1);
	ck_assert_str_eq(e.msg, "open `x`: No such file or directory");
	ck_assert_int_eq(e.code, ENOENT);
}
END_TEST

START_TEST(wrap_prefixes_context)
{
	struct err e = ERR_INIT;

	err_set(&e, 0, "inner");
	err_wrap(&e, "outer %d", 2);
	ck_assert_str_eq(e.msg, "outer 2: inner");
}
END_TEST

START_TEST(wrap_truncates_without_overflow)
{
	struct err e = ERR_INIT;
	char big[600];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	err_set(&e, 0, "%s", big);
	err_wrap(&e, "%s", big);
	ck_assert_uint_eq(strlen(e.msg), sizeof(e.msg) - 1);
}
END_TEST

START_TEST(errno_is_preserved)
{
	struct err e = ERR_INIT;

	errno = EAGAIN;
	err_set(&e, EPERM, "x");
	err_wrap(&e, "y");
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(err_http(&e, 404, "no sandbox `%s`", "a"), -1);
	ck_assert_int_eq(e.http_status, 404);
}
END_TEST

START_TEST(null_err_is_allowed)
{
	ck_assert_int_eq(err_set(NULL, EPERM, "x"), -1);
	ck_assert_int_eq(err_wrap(NULL, "x"), -1);
}
END_TEST

Suite *suite_err(void)
{
	Suite *s = suite_create("err");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, set_appends_strerror);
	tcase_add_test(tc, wrap_prefixes_context);
	tcase_add_test(tc, wrap_truncates_without_overflow);
	tcase_add_test(tc, errno_is_preserved);
	tcase_add_test(tc, null_err_is_allowed);
	suite_add_tcase(s, tc);
	return s;
}
