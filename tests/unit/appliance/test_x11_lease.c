/* Unit tests for the agent's reading of cloche-vnc's control answers
 * (appliance/x11/x11_lease.c), over a real socket pair: a wait that times
 * out reads nothing, so the next call gets the whole line; a line that
 * arrives in two pieces around the timeout is still read whole (a lost
 * first half made request_human_help fail under load); a line that never
 * ends, and a closed connection, are errors. */
#include "appliance/x11/x11_lease.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static int sp[2];

static void setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
}

static void teardown(void)
{
	close(sp[0]);
	if (sp[1] != -1)
		close(sp[1]);
}

START_TEST(a_timeout_reads_nothing)
{
	struct err e = ERR_INIT;
	json_t *ans = NULL;
	static const char line[] = "{\"answer\":{\"note\":\"done\"}}\n";

	ck_assert_int_eq(x11_lease_read(sp[0], 30, &ans, &e), 0);
	ck_assert_int_eq(write(sp[1], line, strlen(line)), (ssize_t)strlen(line));
	ck_assert_int_eq(x11_lease_read(sp[0], 30, &ans, &e), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ans, "answer"), "note")),
			 "done");
	json_decref(ans);
}
END_TEST

static void *second_half(void *arg)
{
	static const char rest[] = "\":{\"note\":\"late\"}}\n";

	(void)arg;
	usleep(300 * 1000);
	ck_assert_int_eq(write(sp[1], rest, strlen(rest)), (ssize_t)strlen(rest));
	return NULL;
}

START_TEST(a_line_begun_before_the_timeout_is_read_whole)
{
	struct err e = ERR_INIT;
	json_t *ans = NULL;
	pthread_t t;

	ck_assert_int_eq(write(sp[1], "{\"answer", 8), 8);
	ck_assert_int_eq(pthread_create(&t, NULL, second_half, NULL), 0);
	/* 50 ms to begin; the rest comes 300 ms later */
	ck_assert_int_eq(x11_lease_read(sp[0], 50, &ans, &e), 1);
	pthread_join(t, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ans, "answer"), "note")),
			 "late");
	json_decref(ans);
}
END_TEST

START_TEST(a_closed_connection_mid_line_is_an_error)
{
	struct err e = ERR_INIT;
	json_t *ans = NULL;

	ck_assert_int_eq(write(sp[1], "{\"ans", 5), 5);
	close(sp[1]);
	sp[1] = -1;
	ck_assert_int_eq(x11_lease_read(sp[0], 50, &ans, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "closed"));
}
END_TEST

START_TEST(not_json_is_an_error)
{
	struct err e = ERR_INIT;
	json_t *ans = NULL;

	ck_assert_int_eq(write(sp[1], "hello\n", 6), 6);
	ck_assert_int_eq(x11_lease_read(sp[0], 50, &ans, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "not JSON"));
}
END_TEST

Suite *suite_x11_lease(void)
{
	Suite *s = suite_create("x11_lease");
	TCase *tc = tcase_create("x11_lease");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_timeout_reads_nothing);
	tcase_add_test(tc, a_line_begun_before_the_timeout_is_read_whole);
	tcase_add_test(tc, a_closed_connection_mid_line_is_an_error);
	tcase_add_test(tc, not_json_is_an_error);
	suite_add_tcase(s, tc);
	return s;
}
