/* Unit tests for common/http_status: the status table's codes and reason
 * phrases, the defaults for statuses it does not hold, and that every
 * error status has a code of its own. */
#include "common/http_status.h"
#include "tests/unit/unit.h"

#include <string.h>

static const struct {
	int status;
	const char *code, *reason;
} cases[] = {
	{400, "bad_request", "Bad Request"},
	{401, "unauthorized", "Unauthorized"},
	{403, "forbidden", "Forbidden"},
	{404, "not_found", "Not Found"},
	{405, "method_not_allowed", "Method Not Allowed"},
	{409, "conflict", "Conflict"},
	{410, "gone", "Gone"},
	{413, "payload_too_large", "Content Too Large"}, /* not too_large (the node's, once) */
	{500, "internal", "Internal Server Error"},
	{502, "bad_gateway", "Bad Gateway"},              /* not unreachable (the node's, once) */
	{503, "unavailable", "Service Unavailable"},      /* not full (the node's, once) */
	{504, "timeout", "Gateway Timeout"},
	{507, "insufficient_storage", "Insufficient Storage"},
	{200, "error", "OK"},                             /* not an error: no code of its own */
	{302, "error", "Found"},
	{418, "error", "Error"},                          /* not in the table */
	{599, "internal", "Error"},
	{0, "error", "Error"},
	{-1, "error", "Error"},
};

START_TEST(table)
{
	ck_assert_str_eq(http_status_code(cases[_i].status), cases[_i].code);
	ck_assert_str_eq(http_status_reason(cases[_i].status), cases[_i].reason);
}
END_TEST

/* Two error statuses never share a code: a client can tell them apart. */
START_TEST(codes_are_distinct)
{
	for (int a = 400; a < 600; a++)
		for (int b = a + 1; b < 600; b++) {
			const char *ca = http_status_code(a), *cb = http_status_code(b);

			if (strcmp(http_status_reason(a), "Error") == 0 ||
			    strcmp(http_status_reason(b), "Error") == 0)
				continue;
			ck_assert_msg(strcmp(ca, cb) != 0, "%d and %d share `%s`", a, b, ca);
		}
}
END_TEST

Suite *suite_http_status(void)
{
	Suite *s = suite_create("http_status");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, codes_are_distinct);
	suite_add_tcase(s, tc);
	return s;
}
