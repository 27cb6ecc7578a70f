/* Unit tests for common/query: lookup, decoding, absent and bad values. */
#include "common/query.h"
#include "tests/unit/unit.h"

#include <string.h>

static const struct {
	const char *q, *key;
	int want;         /* length, QUERY_ABSENT or QUERY_BAD */
	const char *val;
} cases[] = {
	{"a=1&b=2", "b", 1, "2"},
	{"a=1&b=2", "a", 1, "1"},
	{"ab=1&b=2", "b", 1, "2"},            /* not a prefix match */
	{"label=team%3Dx&y", "label", 6, "team=x"},
	{"q=a+b%20c", "q", 5, "a b c"},
	{"flag&x=1", "flag", 0, ""},
	{"x=", "x", 0, ""},
	{"a=1&a=2", "a", 1, "1"},            /* the first one */
	{"", "a", QUERY_ABSENT, ""},
	{"a=1", "b", QUERY_ABSENT, ""},
	{"a=%zz", "a", QUERY_BAD, ""},
	{"a=%4", "a", QUERY_BAD, ""},
	{"a=%00", "a", QUERY_BAD, ""},        /* no NUL smuggled into a C string */
	{"a=0123456789abcdef", "a", QUERY_BAD, ""}, /* longer than out */
};

START_TEST(table)
{
	char out[16];
	int got = query_get(cases[_i].q, cases[_i].key, out, sizeof(out));

	ck_assert_msg(got == cases[_i].want, "%s [%s]: %d", cases[_i].q, cases[_i].key, got);
	ck_assert_str_eq(out, cases[_i].val);
}
END_TEST

/* query_escape: unreserved bytes as they are, the rest as upper-case %XX;
 * never past the buffer, and a bound that fits exactly keeps everything. */
START_TEST(escape)
{
	char out[64], small[8];

	query_escape("ke y=va/l~-._", out, sizeof(out));
	ck_assert_str_eq(out, "ke%20y%3Dva%2Fl~-._");
	query_escape("\xff", out, sizeof(out));
	ck_assert_str_eq(out, "%FF");
	query_escape("a=b", small, sizeof(small)); /* no room for the last byte */
	ck_assert_str_eq(small, "a%3D");
	{
		char fit[3 * 2 + 4];
		query_escape("==", fit, sizeof(fit));
		ck_assert_str_eq(fit, "%3D%3D");
	}
}
END_TEST

Suite *suite_query(void)
{
	Suite *s = suite_create("query");
	TCase *tc = tcase_create("get");

	tcase_add_loop_test(tc, table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, escape);
	suite_add_tcase(s, tc);
	return s;
}
