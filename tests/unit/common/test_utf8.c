/* Unit tests for common/utf8: decoding characters (malformed, overlong,
 * surrogate and truncated forms refused), and the UTF-8 / Latin-1
 * conversions that X selections and RFB cut text use. */
#include "common/utf8.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

START_TEST(decodes_characters)
{
	const char *s = "h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", *p = s, *end = s + strlen(s);
	const char *bad[] = {"\xc3", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\xf8\x88\x80\x80",
			     "\x80"};

	ck_assert_int_eq(utf8_next(&p, end), 'h');
	ck_assert_int_eq(utf8_next(&p, end), 0xe9);
	ck_assert_int_eq(utf8_next(&p, end), 0x20ac);
	ck_assert_int_eq(utf8_next(&p, end), 0x1f600);
	ck_assert_ptr_eq(p, end);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = bad[i];
		ck_assert_int_eq(utf8_next(&p, bad[i] + strlen(bad[i])), -1);
	}
}
END_TEST

START_TEST(converts_text)
{
	char *o;
	size_t n;

	/* Latin-1 -> UTF-8. */
	ck_assert_int_eq(utf8_clean("caf\xe9 \xff", 6, true, &o, &n), 0);
	ck_assert_str_eq(o, "caf\xc3\xa9 \xc3\xbf");
	ck_assert_uint_eq(n, 8);
	free(o);
	/* UTF-8 stays; a bad byte becomes U+FFFD; NUL passes as a byte. */
	ck_assert_int_eq(utf8_clean("\xe2\x82\xac\x80x\xf0\x9f\x98\x80", 9, false, &o, &n), 0);
	ck_assert_str_eq(o, "\xe2\x82\xac\xef\xbf\xbdx\xf0\x9f\x98\x80");
	free(o);
	ck_assert_int_eq(utf8_clean("a\0b", 3, false, &o, &n), 0);
	ck_assert_uint_eq(n, 3);
	free(o);
	ck_assert_int_eq(utf8_clean("", 0, false, &o, &n), 0);
	ck_assert_str_eq(o, "");
	free(o);
	/* UTF-8 -> Latin-1: what does not fit is `?`. */
	ck_assert_int_eq(utf8_to_latin1("caf\xc3\xa9 \xe2\x82\xac \xff", 11, &o, &n), 0);
	ck_assert_str_eq(o, "caf\xe9 ? ?");
	free(o);
}
END_TEST

Suite *suite_utf8(void)
{
	Suite *s = suite_create("utf8");
	TCase *tc = tcase_create("utf8");

	tcase_add_test(tc, decodes_characters);
	tcase_add_test(tc, converts_text);
	suite_add_tcase(s, tc);
	return s;
}
