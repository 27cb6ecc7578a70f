/* Runs the suites for node-agent/ (cloche-node's modules). */
#include "tests/unit/node/suites.h"

#include <stdlib.h>

int main(void)
{
	SRunner *sr = srunner_create(suite_node_egress_pure());
	int failed;

	srunner_add_suite(sr, suite_node_egress_head());
	srunner_add_suite(sr, suite_node_egress_engine());
	srunner_add_suite(sr, suite_node_spec());
	srunner_add_suite(sr, suite_node_btrfs());
	srunner_add_suite(sr, suite_node_s3());
	srunner_add_suite(sr, suite_node_api());
	srunner_add_suite(sr, suite_node_seal());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
