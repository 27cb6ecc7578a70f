/* Unit tests for the control lease (appliance/vnc/lease.c): who may send
 * input when, the agent's turn excluding everyone else's, help requests and
 * their answers, the grace and implicit timers, and what the pages see. */
#include "appliance/vnc/lease.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static struct vnc_lease *l;

static void setup(void)
{
	l = vnc_lease_new();
	ck_assert_ptr_nonnull(l);
}

static void teardown(void)
{
	vnc_lease_free(l);
}

START_TEST(pages_watch_until_they_take_control)
{
	int64_t since = 0;

	vnc_lease_viewer_join(l, "pageA");
	vnc_lease_viewer_join(l, "pageB");
	ck_assert(!vnc_lease_may_input(l, "pageA", false, 10, 1000));
	ck_assert_int_eq(vnc_lease_take(l, "nobody", 1000), VNC_LEASE_NO_VIEWER);
	ck_assert_int_eq(vnc_lease_take(l, "pageA", 5000), VNC_LEASE_OK);
	ck_assert(vnc_lease_may_input(l, "pageA", false, 20, 5001));
	ck_assert(!vnc_lease_may_input(l, "pageB", false, 20, 5001));
	ck_assert(!vnc_lease_may_input(l, "rfb:7", true, 20, 5001)); /* a plain client too */
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_HELD);
	ck_assert_int_eq(since, 5000);
	/* B takes over; A watches again */
	ck_assert_int_eq(vnc_lease_take(l, "pageB", 6000), VNC_LEASE_OK);
	ck_assert(!vnc_lease_may_input(l, "pageA", false, 30, 6001));
	ck_assert_int_eq(vnc_lease_hand_back(l, "pageA", "x", 7000), VNC_LEASE_NOT_HOLDER);
	ck_assert_int_eq(vnc_lease_hand_back(l, "pageB", "done", 7000), VNC_LEASE_OK);
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_OK);
	vnc_lease_agent_end(l);
}
END_TEST

START_TEST(the_agents_action_holds_everyone_elses_input)
{
	int64_t since;

	vnc_lease_viewer_join(l, "pageA");
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_OK);
	ck_assert(!vnc_lease_may_input(l, "rfb:1", true, 10, 1000));
	/* a person takes control mid-action: their input waits for its end */
	ck_assert_int_eq(vnc_lease_take(l, "pageA", 1000), VNC_LEASE_OK);
	ck_assert(!vnc_lease_may_input(l, "pageA", false, 10, 1000));
	vnc_lease_agent_end(l);
	ck_assert(vnc_lease_may_input(l, "pageA", false, 11, 1001));
}
END_TEST

START_TEST(a_plain_client_holds_the_lease_while_it_types)
{
	int64_t since;

	vnc_lease_viewer_join(l, "rfb:3");
	ck_assert(vnc_lease_may_input(l, "rfb:3", true, 100, 1000));
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_HELD);
	ck_assert(!vnc_lease_may_input(l, "rfb:4", true, 200, 1000));
	ck_assert_int_eq(vnc_lease_timeout_ms(l, 200), VNC_LEASE_IMPLICIT_MS - 100);
	vnc_lease_tick(l, 100 + VNC_LEASE_IMPLICIT_MS, 2000);
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_OK);
	vnc_lease_agent_end(l);
	/* and leaving ends it at once */
	ck_assert(vnc_lease_may_input(l, "rfb:3", true, 20000, 3000));
	vnc_lease_viewer_leave(l, "rfb:3", 20001);
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_OK);
	vnc_lease_agent_end(l);
}
END_TEST

START_TEST(help_is_answered_by_the_hand_back_note)
{
	struct vnc_lease_answer a;
	unsigned id;
	json_t *st;

	vnc_lease_viewer_join(l, "pageA");
	id = vnc_lease_help_add(l, "Please solve the captcha", 1000);
	ck_assert_uint_gt(id, 0);
	st = vnc_lease_state_json(l, "pageA");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(st, "help"), 0), "reason")),
			 "Please solve the captcha");
	json_decref(st);
	ck_assert(!vnc_lease_help_result(l, id, &a));
	vnc_lease_take(l, "pageA", 2000);
	ck_assert(!vnc_lease_help_result(l, id, &a));
	vnc_lease_hand_back(l, "pageA", "solved", 3000);
	ck_assert(vnc_lease_help_result(l, id, &a));
	ck_assert_str_eq(a.note, "solved");
	ck_assert(!a.left);
	ck_assert_int_eq(a.taken_wall, 2000);
	ck_assert_int_eq(a.back_wall, 3000);
	/* answered once, and not told again with the next action */
	ck_assert(!vnc_lease_help_result(l, id, &a));
	ck_assert(!vnc_lease_take_handback(l, &a));
}
END_TEST

START_TEST(a_hand_back_nobody_waited_for_goes_with_the_next_action)
{
	struct vnc_lease_answer a;

	vnc_lease_viewer_join(l, "pageA");
	vnc_lease_take(l, "pageA", 2000);
	vnc_lease_hand_back(l, "pageA", "closed the popup", 3000);
	ck_assert(vnc_lease_take_handback(l, &a));
	ck_assert_str_eq(a.note, "closed the popup");
	ck_assert(!vnc_lease_take_handback(l, &a));
}
END_TEST

START_TEST(a_holder_whose_page_went_away_keeps_it_for_the_grace)
{
	struct vnc_lease_answer a;
	unsigned id;
	int64_t since;

	vnc_lease_viewer_join(l, "pageA");
	vnc_lease_take(l, "pageA", 1000);
	id = vnc_lease_help_add(l, "help", 1000);
	vnc_lease_viewer_leave(l, "pageA", 100);
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_HELD);
	/* a reconnect within the grace keeps it */
	vnc_lease_viewer_join(l, "pageA");
	vnc_lease_tick(l, 100 + VNC_LEASE_GRACE_MS, 2000);
	ck_assert(vnc_lease_may_input(l, "pageA", false, 100 + VNC_LEASE_GRACE_MS, 2000));
	/* gone for good: the lease lapses and the request hears of it */
	vnc_lease_viewer_leave(l, "pageA", 20000);
	ck_assert_int_eq(vnc_lease_timeout_ms(l, 20000), VNC_LEASE_GRACE_MS);
	vnc_lease_tick(l, 20000 + VNC_LEASE_GRACE_MS, 9000);
	ck_assert(vnc_lease_help_result(l, id, &a));
	ck_assert(a.left);
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_OK);
	vnc_lease_agent_end(l);
}
END_TEST

START_TEST(a_plain_client_may_take_over_from_a_page_that_went_away)
{
	vnc_lease_viewer_join(l, "pageA");
	vnc_lease_take(l, "pageA", 1000);
	ck_assert(!vnc_lease_may_input(l, "rfb:2", true, 50, 1000));
	vnc_lease_viewer_leave(l, "pageA", 100);
	ck_assert(vnc_lease_may_input(l, "rfb:2", true, 200, 1100));
}
END_TEST

START_TEST(an_abandoned_request_is_taken_up_again_by_a_retry)
{
	unsigned id, again;
	json_t *st;

	id = vnc_lease_help_add(l, "log in please", 1000);
	vnc_lease_help_leave(l, id, 100);
	again = vnc_lease_help_add(l, "log in please", 5000);
	ck_assert_uint_eq(again, id);
	st = vnc_lease_state_json(l, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(st, "help"), 0), "since")),
			 "1970-01-01T00:00:01Z"); /* kept its start */
	json_decref(st);
	/* left again and never retried: gone after the orphan time */
	vnc_lease_help_leave(l, id, 300);
	vnc_lease_tick(l, 300 + VNC_LEASE_ORPHAN_MS, 9000);
	st = vnc_lease_state_json(l, NULL);
	ck_assert_uint_eq(json_array_size(json_object_get(st, "help")), 0);
	json_decref(st);
}
END_TEST

START_TEST(notes_and_reasons_are_cut_on_character_boundaries)
{
	char note[VNC_LEASE_NOTE_MAX + 10];
	struct vnc_lease_answer a;
	unsigned id;

	/* 'é' is 2 bytes: an odd limit would split one */
	for (size_t i = 0; i + 2 < sizeof(note); i += 2)
		memcpy(note + i, "\xc3\xa9", 2);
	note[sizeof(note) - 1 - (sizeof(note) - 1) % 2] = '\0';
	vnc_lease_viewer_join(l, "p");
	id = vnc_lease_help_add(l, "r", 1);
	vnc_lease_take(l, "p", 1);
	vnc_lease_hand_back(l, "p", note, 2);
	ck_assert(vnc_lease_help_result(l, id, &a));
	ck_assert_uint_le(strlen(a.note), VNC_LEASE_NOTE_MAX - 1);
	ck_assert_uint_eq(strlen(a.note) % 2, 0);
}
END_TEST

START_TEST(what_a_page_sees)
{
	json_t *st;

	vnc_lease_viewer_join(l, "pageA");
	vnc_lease_viewer_join(l, "pageB");
	vnc_lease_take(l, "pageA", 1000);
	st = vnc_lease_state_json(l, "pageA");
	ck_assert_str_eq(json_string_value(json_object_get(st, "control")), "person");
	ck_assert(json_is_true(json_object_get(json_object_get(st, "holder"), "you")));
	ck_assert_int_eq(json_integer_value(json_object_get(st, "viewers")), 2);
	json_decref(st);
	st = vnc_lease_state_json(l, "pageB");
	ck_assert(json_is_false(json_object_get(json_object_get(st, "holder"), "you")));
	json_decref(st);
}
END_TEST

/* A restart: what was saved is taken up by a new lease in a new process. */
static struct vnc_lease *restarted(uint64_t now)
{
	json_t *saved = vnc_lease_save_json(l);
	char *text = json_dumps(saved, JSON_COMPACT);
	json_t *back = json_loads(text, 0, NULL);
	struct vnc_lease *n = vnc_lease_new();

	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(vnc_lease_restore(n, back, now), 0);
	json_decref(saved);
	json_decref(back);
	free(text);
	return n;
}

START_TEST(the_holder_keeps_control_across_a_restart)
{
	struct vnc_lease *n;
	int64_t since;

	vnc_lease_viewer_join(l, "pageA");
	ck_assert_int_eq(vnc_lease_take(l, "pageA", 5000), VNC_LEASE_OK);
	n = restarted(100);
	/* the agent stays held; the page comes back within the grace */
	ck_assert_int_eq(vnc_lease_agent_begin(n, &since), VNC_LEASE_HELD);
	ck_assert_int_eq(since, 5000);
	vnc_lease_tick(n, 100 + VNC_LEASE_GRACE_MS - 1, 9000);
	vnc_lease_viewer_join(n, "pageA");
	vnc_lease_tick(n, 100 + VNC_LEASE_GRACE_MS + 1, 9000);
	ck_assert(vnc_lease_may_input(n, "pageA", false, 100 + VNC_LEASE_GRACE_MS + 2, 9001));
	ck_assert_int_eq(vnc_lease_hand_back(n, "pageA", "all yours", 9500), VNC_LEASE_OK);
	vnc_lease_free(n);
}
END_TEST

START_TEST(a_holder_who_does_not_come_back_loses_it_after_the_grace)
{
	struct vnc_lease *n;
	struct vnc_lease_answer a;
	int64_t since;

	vnc_lease_viewer_join(l, "pageA");
	ck_assert_int_eq(vnc_lease_take(l, "pageA", 5000), VNC_LEASE_OK);
	n = restarted(100);
	vnc_lease_tick(n, 100 + VNC_LEASE_GRACE_MS, 9000);
	ck_assert_int_eq(vnc_lease_agent_begin(n, &since), VNC_LEASE_OK);
	vnc_lease_agent_end(n);
	ck_assert(vnc_lease_take_handback(n, &a));
	ck_assert(a.left);
	vnc_lease_free(n);
}
END_TEST

START_TEST(help_requests_and_answers_outlive_a_restart)
{
	struct vnc_lease *n;
	struct vnc_lease_answer a;
	unsigned waiting, answered, id;

	vnc_lease_viewer_join(l, "pageA");
	answered = vnc_lease_help_add(l, "log in for me", 1000);
	ck_assert_int_eq(vnc_lease_take(l, "pageA", 2000), VNC_LEASE_OK);
	ck_assert_int_eq(vnc_lease_hand_back(l, "pageA", "done: logged in", 3000), VNC_LEASE_OK);
	waiting = vnc_lease_help_add(l, "solve the captcha", 4000);
	n = restarted(100);
	/* the request is still shown while its caller is away */
	{
		json_t *st = vnc_lease_state_json(n, NULL);
		json_t *help = json_object_get(st, "help");

		ck_assert_int_eq(json_array_size(help), 1);
		ck_assert_str_eq(json_string_value(json_object_get(json_array_get(help, 0), "reason")),
				 "solve the captcha");
		json_decref(st);
	}
	/* the agent asks again with the same reasons: the answer given before
	 * the restart, and the request it was waiting on */
	id = vnc_lease_help_add(n, "log in for me", 5000);
	ck_assert_uint_eq(id, answered);
	ck_assert(vnc_lease_help_result(n, id, &a));
	ck_assert_str_eq(a.note, "done: logged in");
	ck_assert_int_eq(a.taken_wall, 2000);
	ck_assert_int_eq(a.back_wall, 3000);
	ck_assert_uint_eq(vnc_lease_help_add(n, "solve the captcha", 5000), waiting);
	/* a new request does not reuse an id */
	id = vnc_lease_help_add(n, "something else", 5000);
	ck_assert_uint_gt(id, waiting);
	vnc_lease_free(n);
}
END_TEST

START_TEST(an_orphan_restored_goes_after_its_time)
{
	struct vnc_lease *n;
	json_t *st;

	vnc_lease_help_add(l, "anyone?", 1000);
	n = restarted(100);
	vnc_lease_tick(n, 100 + VNC_LEASE_ORPHAN_MS, 9000);
	st = vnc_lease_state_json(n, NULL);
	ck_assert_int_eq(json_array_size(json_object_get(st, "help")), 0);
	json_decref(st);
	vnc_lease_free(n);
}
END_TEST

START_TEST(what_is_not_a_saved_lease_is_refused)
{
	static const char *const bad[] = {
		"{}",
		"{\"v\":2,\"holder\":null,\"next_help\":0,\"help\":[],\"handback\":null}",
		"{\"v\":1,\"holder\":{\"key\":\"\",\"since\":1},\"next_help\":0,\"help\":[],"
		"\"handback\":null}",
		"{\"v\":1,\"holder\":{\"key\":\"k\"},\"next_help\":0,\"help\":[],\"handback\":null}",
		"{\"v\":1,\"holder\":null,\"next_help\":-1,\"help\":[],\"handback\":null}",
		"{\"v\":1,\"holder\":null,\"next_help\":0,\"help\":[{\"id\":0,\"reason\":\"r\","
		"\"since\":1,\"answer\":null}],\"handback\":null}",
		"{\"v\":1,\"holder\":null,\"next_help\":0,\"help\":[],\"handback\":{\"left\":1}}",
	};
	int64_t since;

	vnc_lease_viewer_join(l, "pageA");
	ck_assert_int_eq(vnc_lease_take(l, "pageA", 5000), VNC_LEASE_OK);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_loads(bad[i], 0, NULL);

		ck_assert_msg(j != NULL, "%s", bad[i]);
		ck_assert_msg(vnc_lease_restore(l, j, 10) == -1, "%s", bad[i]);
		json_decref(j);
	}
	/* left as it was */
	ck_assert_int_eq(vnc_lease_agent_begin(l, &since), VNC_LEASE_HELD);
	ck_assert(vnc_lease_may_input(l, "pageA", false, 20, 5001));
}
END_TEST

Suite *suite_lease(void)
{
	Suite *s = suite_create("lease");
	TCase *tc = tcase_create("control");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pages_watch_until_they_take_control);
	tcase_add_test(tc, the_agents_action_holds_everyone_elses_input);
	tcase_add_test(tc, a_plain_client_holds_the_lease_while_it_types);
	tcase_add_test(tc, help_is_answered_by_the_hand_back_note);
	tcase_add_test(tc, a_hand_back_nobody_waited_for_goes_with_the_next_action);
	tcase_add_test(tc, a_holder_whose_page_went_away_keeps_it_for_the_grace);
	tcase_add_test(tc, a_plain_client_may_take_over_from_a_page_that_went_away);
	tcase_add_test(tc, an_abandoned_request_is_taken_up_again_by_a_retry);
	tcase_add_test(tc, notes_and_reasons_are_cut_on_character_boundaries);
	tcase_add_test(tc, what_a_page_sees);
	tcase_add_test(tc, the_holder_keeps_control_across_a_restart);
	tcase_add_test(tc, a_holder_who_does_not_come_back_loses_it_after_the_grace);
	tcase_add_test(tc, help_requests_and_answers_outlive_a_restart);
	tcase_add_test(tc, an_orphan_restored_goes_after_its_time);
	tcase_add_test(tc, what_is_not_a_saved_lease_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
