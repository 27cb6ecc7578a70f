/* Runs every mcp/lib suite; Check prints the summary line CI reads and the
 * exit status is non-zero when anything failed. */
#include "tests/unit/mcp/suites.h"

#include <stdlib.h>

int main(void)
{
	SRunner *sr = srunner_create(suite_mcp_jsonrpc());
	int failed;

	srunner_add_suite(sr, suite_mcp_session());
	srunner_add_suite(sr, suite_mcp_hostcheck());
	srunner_add_suite(sr, suite_mcp_schema());
	srunner_add_suite(sr, suite_mcp_cap());
	srunner_add_suite(sr, suite_mcp_server());
	srunner_add_suite(sr, suite_mcp_trace());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
