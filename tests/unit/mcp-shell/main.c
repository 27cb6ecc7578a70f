/* Runs every mcp-shell suite; Check prints the summary line CI reads and
 * the exit status is non-zero when anything failed. */
#include "tests/unit/mcp-shell/suites.h"

#include <stdlib.h>

int main(void)
{
	SRunner *sr = srunner_create(suite_msh_spawn());
	int failed;

	srunner_add_suite(sr, suite_msh_exec());
	srunner_add_suite(sr, suite_msh_procs());
	srunner_add_suite(sr, suite_msh_files());
	srunner_add_suite(sr, suite_msh_search());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
