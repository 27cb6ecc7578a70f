/* Runs the suites for portal/ (cloche-portal's modules). */
#include "tests/unit/portal/suites.h"

#include <stdlib.h>

int main(void)
{
	SRunner *sr = srunner_create(suite_portal_state());
	int failed;

	srunner_add_suite(sr, suite_portal_store());
	srunner_add_suite(sr, suite_portal_auth());
	srunner_add_suite(sr, suite_portal_policy());
	srunner_add_suite(sr, suite_portal_openapi());
	srunner_add_suite(sr, suite_portal_desk());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
