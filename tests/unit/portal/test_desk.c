/* pt_desk_clean: what mcp-desktop (or whatever answers in its place inside
 * the sandbox) says of the desktop, in the shape the dashboard shows. */
#include "portal/pt_desk.h"
#include "tests/unit/portal/suites.h"

#include <stdlib.h>
#include <string.h>

static json_t *clean(const char *text)
{
	json_t *in = json_loads(text, 0, NULL), *out;

	ck_assert_ptr_nonnull(in);
	out = pt_desk_clean(in);
	json_decref(in);
	return out;
}

static void assert_json(json_t *got, const char *want)
{
	char *s = got ? json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	ck_assert_msg(s && strcmp(s, want) == 0, "got %s, want %s", s ? s : "NULL", want);
	free(s);
	json_decref(got);
}

START_TEST(as_mcp_desktop_says)
{
	assert_json(clean("{\"control\":\"person\",\"since\":\"2026-11-27T21:00:00.123Z\","
			  "\"help\":[{\"reason\":\"pay?\",\"since\":\"2026-11-27T20:59:00Z\"}]}"),
		    "{\"control\":\"person\",\"help\":[{\"reason\":\"pay?\",\"since\":"
		    "\"2026-11-27T20:59:00Z\"}],\"since\":\"2026-11-27T21:00:00.123Z\"}");
	assert_json(clean("{\"control\":\"agent\",\"help\":[]}"), "{\"control\":\"agent\",\"help\":[]}");
}
END_TEST

START_TEST(forged)
{
	char big[4000];
	json_t *in, *out;

	/* no known controller: nothing at all */
	ck_assert_ptr_null(clean("{\"control\":\"the owner\"}"));
	ck_assert_ptr_null(clean("{\"control\":1}"));
	ck_assert_ptr_null(clean("[\"person\"]"));
	/* extra fields and wrong types dropped; a since that is no time dropped */
	assert_json(clean("{\"control\":\"agent\",\"html\":\"<script>\",\"since\":\"<b>now</b>\","
			  "\"help\":[{\"reason\":7},{\"reason\":\"\"},{\"reason\":\"ok\",\"x\":1,"
			  "\"since\":{}}]}"),
		    "{\"control\":\"agent\",\"help\":[{\"reason\":\"ok\"}]}");
	/* help is not an array */
	assert_json(clean("{\"control\":\"agent\",\"help\":{\"reason\":\"r\"}}"),
		    "{\"control\":\"agent\",\"help\":[]}");
	/* at most 8 requests, each reason at most 1000 bytes, cut on a character */
	memset(big, 'a', sizeof(big));
	memcpy(big + 999, "\xc3\xa9", 2); /* across byte 1000 */
	big[sizeof(big) - 1] = '\0';
	in = json_pack("{s:s, s:[]}", "control", "person", "help");
	for (int i = 0; i < 20; i++)
		json_array_append_new(json_object_get(in, "help"), json_pack("{s:s}", "reason", big + 997));
	json_array_append_new(json_object_get(in, "help"), json_pack("{s:s}", "reason", big));
	out = pt_desk_clean(in);
	ck_assert_int_eq(json_array_size(json_object_get(out, "help")), 8);
	json_decref(in);
	json_decref(out);
	in = json_pack("{s:s, s:[{s:s}]}", "control", "person", "help", "reason", big);
	out = pt_desk_clean(in);
	ck_assert_int_eq(strlen(json_string_value(
				 json_object_get(json_array_get(json_object_get(out, "help"), 0), "reason"))),
			 999);
	json_decref(in);
	json_decref(out);
}
END_TEST

Suite *suite_portal_desk(void)
{
	Suite *s = suite_create("portal_desk");
	TCase *tc = tcase_create("clean");

	tcase_add_test(tc, as_mcp_desktop_says);
	tcase_add_test(tc, forged);
	suite_add_tcase(s, tc);
	return s;
}
