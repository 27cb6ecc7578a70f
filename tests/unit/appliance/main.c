/* Runs the suites for appliance/ (the programs inside every sandbox). */
#include "tests/unit/unit.h"

#include <stdlib.h>

int main(void)
{
	SRunner *sr = srunner_create(suite_init_config());
	int failed;

	srunner_add_suite(sr, suite_memguard());
	srunner_add_suite(sr, suite_compat());
	srunner_add_suite(sr, suite_netcheck());
	srunner_add_suite(sr, suite_marker());
	srunner_add_suite(sr, suite_lease());
	srunner_add_suite(sr, suite_size());
	srunner_add_suite(sr, suite_x11_lease());
	srunner_add_suite(sr, suite_recorder());
	srunner_add_suite(sr, suite_vnc_request());
	srunner_add_suite(sr, suite_vnc_state());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
