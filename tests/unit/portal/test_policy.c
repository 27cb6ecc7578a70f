/* Unit tests for portal/pt_policy: --hibernate-policy parsing and lookup. */
#include "portal/pt_policy.h"
#include "tests/unit/portal/suites.h"

#include <string.h>

START_TEST(parses_and_looks_up)
{
	struct err e = ERR_INIT;
	struct pt_policy pol = {.idle_s = 0, .offload_s = 86400};
	long long idle, off;

	ck_assert_int_eq(pt_policy_parse(&pol, "desktop:idle=10m,offload=1h; mini:idle=30s", &e), 0);
	ck_assert_int_eq(pol.n, 2);
	pt_policy_for(&pol, "desktop", &idle, &off);
	ck_assert_int_eq(idle, 600);
	ck_assert_int_eq(off, 3600);
	pt_policy_for(&pol, "desktop@0123abcd", &idle, &off);
	ck_assert_int_eq(idle, 600);
	pt_policy_for(&pol, "mini@x", &idle, &off); /* offload: the global one */
	ck_assert_int_eq(idle, 30);
	ck_assert_int_eq(off, 86400);
	pt_policy_for(&pol, "desk", &idle, &off); /* not a prefix match */
	ck_assert_int_eq(idle, 0);
	ck_assert_int_eq(off, 86400);
	ck_assert_int_eq(pt_policy_parse(&pol, "", &e), 0);
	ck_assert_int_eq(pol.n, 0);
	ck_assert_int_eq(pt_policy_parse(&pol, "a:idle=0", &e), 0);
	pt_policy_for(&pol, "a", &idle, &off);
	ck_assert_int_eq(idle, 0);
}
END_TEST

START_TEST(refuses_what_is_wrong)
{
	static const char *const bad[] = {
		"desktop",		  /* no colon */
		":idle=1m",		  /* no name */
		"desktop@abc:idle=1m",	  /* a version */
		"desktop:idle=",	  /* no duration */
		"desktop:idle=5",	  /* no unit */
		"desktop:idle=1500ms",	  /* not whole seconds */
		"desktop:sleep=1m",	  /* unknown key */
		"desktop:idle=1m,",	  /* empty value */
		"desktop:idle=1m;desktop:idle=2m", /* twice */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct err e = ERR_INIT;
		struct pt_policy pol;

		memset(&pol, 0, sizeof(pol));
		ck_assert_msg(pt_policy_parse(&pol, bad[i], &e) == -1, "%s", bad[i]);
		ck_assert_msg(e.msg[0], "%s has a message", bad[i]);
	}
}
END_TEST

Suite *suite_portal_policy(void)
{
	Suite *s = suite_create("portal_policy");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, parses_and_looks_up);
	tcase_add_test(tc, refuses_what_is_wrong);
	suite_add_tcase(s, tc);
	return s;
}
