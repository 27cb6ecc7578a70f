/* The suites of unit-node; each test_<module>.c defines its suite_node_*(). */
#ifndef CLOCHE_TESTS_UNIT_NODE_SUITES_H
#define CLOCHE_TESTS_UNIT_NODE_SUITES_H

#include <check.h>

Suite *suite_node_egress_pure(void);
Suite *suite_node_egress_head(void);
Suite *suite_node_egress_engine(void);
Suite *suite_node_spec(void);
Suite *suite_node_btrfs(void);
Suite *suite_node_s3(void);
Suite *suite_node_api(void);
Suite *suite_node_seal(void);

#endif
