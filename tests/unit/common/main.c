/* Runs every common/ suite; Check prints the summary line CI reads and the
 * exit status is non-zero when anything failed. */
#include "tests/unit/unit.h"

#include <stdlib.h>

int main(void)
{
	SRunner *sr = srunner_create(suite_err());
	int failed;

	srunner_add_suite(sr, suite_buf());
	srunner_add_suite(sr, suite_cfg());
	srunner_add_suite(sr, suite_json());
	srunner_add_suite(sr, suite_log());
	srunner_add_suite(sr, suite_http_client());
	srunner_add_suite(sr, suite_http_server());
	srunner_add_suite(sr, suite_http_status());
	srunner_add_suite(sr, suite_job());
	srunner_add_suite(sr, suite_query());
	srunner_add_suite(sr, suite_utf8());
	srunner_add_suite(sr, suite_b64());
	srunner_add_suite(sr, suite_rnd());
	srunner_add_suite(sr, suite_secret());
	srunner_add_suite(sr, suite_nodesock());
	srunner_add_suite(sr, suite_version());
	srunner_add_suite(sr, suite_daemon());
	srunner_add_suite(sr, suite_http1_head());
	srunner_add_suite(sr, suite_listenfd());

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
