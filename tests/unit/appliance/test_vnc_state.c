/* Unit tests for what cloche-vnc keeps across its restarts
 * (appliance/vnc/state.c): the secret after a rekey, only for a start with
 * the same secret as before; the lease; a file 0600 written only when
 * something changed; a bad file ignored. */
#include "appliance/vnc/state.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/unit-vnc-state-XXXXXX";
static char path[sizeof(dir) + 16];

static void setup(void)
{
	strcpy(dir, "/tmp/unit-vnc-state-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/state.json", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

START_TEST(nothing_is_kept_without_a_directory)
{
	struct err e = ERR_INIT;
	struct vnc_state *st = vnc_state_open(NULL, "s3cret", &e);

	ck_assert_ptr_nonnull(st);
	ck_assert_ptr_null(vnc_state_secret(st));
	ck_assert_ptr_null(vnc_state_lease(st));
	ck_assert_int_eq(vnc_state_save(st, "new", NULL, &e), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	vnc_state_free(st);
}
END_TEST

START_TEST(a_rekeyed_secret_and_the_lease_outlive_a_restart)
{
	struct err e = ERR_INIT;
	struct vnc_state *st = vnc_state_open(dir, "first-secret", &e);
	struct vnc_lease *l = vnc_lease_new(), *back = vnc_lease_new();
	struct stat sb;
	int64_t since;

	ck_assert_ptr_nonnull(st);
	ck_assert_ptr_null(vnc_state_secret(st)); /* a first start */
	vnc_lease_viewer_join(l, "pageA");
	ck_assert_int_eq(vnc_lease_take(l, "pageA", 5000), VNC_LEASE_OK);
	ck_assert_int_eq(vnc_state_save(st, "rekeyed-secret", l, &e), 0);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	vnc_state_free(st);

	/* the same start again (init restarts it with the same environment) */
	st = vnc_state_open(dir, "first-secret", &e);
	ck_assert_ptr_nonnull(st);
	ck_assert_str_eq(vnc_state_secret(st), "rekeyed-secret");
	ck_assert_ptr_nonnull(vnc_state_lease(st));
	ck_assert_int_eq(vnc_lease_restore(back, vnc_state_lease(st), 100), 0);
	ck_assert_int_eq(vnc_lease_agent_begin(back, &since), VNC_LEASE_HELD);
	vnc_state_free(st);

	/* a start with another secret does not take up the old rekey */
	st = vnc_state_open(dir, "another-secret", &e);
	ck_assert_ptr_null(vnc_state_secret(st));
	vnc_state_free(st);
	st = vnc_state_open(dir, NULL, &e);
	ck_assert_ptr_null(vnc_state_secret(st));
	vnc_state_free(st);
	vnc_lease_free(l);
	vnc_lease_free(back);
}
END_TEST

START_TEST(the_file_is_written_only_when_something_changed)
{
	struct err e = ERR_INIT;
	struct vnc_state *st = vnc_state_open(dir, "s", &e);
	struct vnc_lease *l = vnc_lease_new();

	ck_assert_int_eq(vnc_state_save(st, "s", l, &e), 0);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(vnc_state_save(st, "s", l, &e), 0);
	ck_assert_int_eq(access(path, F_OK), -1); /* the same: not written */
	vnc_lease_help_add(l, "help", 1000);
	ck_assert_int_eq(vnc_state_save(st, "s", l, &e), 0);
	ck_assert_int_eq(access(path, F_OK), 0);
	vnc_state_free(st);
	vnc_lease_free(l);
}
END_TEST

START_TEST(a_bad_file_is_a_fresh_start)
{
	static const char *const bad[] = {"not json", "[1]", "{\"v\":7,\"secret\":\"x\"}"};
	struct err e = ERR_INIT;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fopen(path, "w");
		struct vnc_state *st;

		ck_assert_ptr_nonnull(f);
		fputs(bad[i], f);
		fclose(f);
		st = vnc_state_open(dir, "x", &e);
		ck_assert_ptr_nonnull(st);
		ck_assert_ptr_null(vnc_state_secret(st));
		ck_assert_ptr_null(vnc_state_lease(st));
		vnc_state_free(st);
	}
}
END_TEST

START_TEST(an_unwritable_directory_is_an_error_naming_the_file)
{
	struct err e = ERR_INIT;
	struct vnc_state *st = vnc_state_open("/nonexistent/dir", "s", &e);

	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(vnc_state_save(st, "t", NULL, &e), -1);
	ck_assert_msg(strstr(e.msg, "/nonexistent/dir/state.json"), "%s", e.msg);
	vnc_state_free(st);
}
END_TEST

Suite *suite_vnc_state(void)
{
	Suite *s = suite_create("vnc_state");
	TCase *tc = tcase_create("state");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, nothing_is_kept_without_a_directory);
	tcase_add_test(tc, a_rekeyed_secret_and_the_lease_outlive_a_restart);
	tcase_add_test(tc, the_file_is_written_only_when_something_changed);
	tcase_add_test(tc, a_bad_file_is_a_fresh_start);
	tcase_add_test(tc, an_unwritable_directory_is_an_error_naming_the_file);
	suite_add_tcase(s, tc);
	return s;
}
