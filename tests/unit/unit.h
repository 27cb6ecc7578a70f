/* The suites of the unit-test binaries; each test_<module>.c defines one
 * suite_<module>() and the binary's main.c runs them all. */
#ifndef CLOCHE_TESTS_UNIT_H
#define CLOCHE_TESTS_UNIT_H

#include <check.h>

Suite *suite_err(void);

#endif
