/* The suites of unit-mcp; each test_<module>.c defines one suite_mcp_<module>(). */
#ifndef CLOCHE_TESTS_UNIT_MCP_SUITES_H
#define CLOCHE_TESTS_UNIT_MCP_SUITES_H

#include <check.h>

Suite *suite_mcp_jsonrpc(void);
Suite *suite_mcp_session(void);
Suite *suite_mcp_hostcheck(void);
Suite *suite_mcp_schema(void);
Suite *suite_mcp_cap(void);
Suite *suite_mcp_server(void);
Suite *suite_mcp_trace(void);

#endif
