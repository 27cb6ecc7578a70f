/* The suites of unit-portal (cloche-portal's modules). */
#ifndef CLOCHE_TESTS_UNIT_PORTAL_H
#define CLOCHE_TESTS_UNIT_PORTAL_H
#include <check.h>

Suite *suite_portal_state(void);
Suite *suite_portal_store(void);
Suite *suite_portal_auth(void);
Suite *suite_portal_policy(void);
Suite *suite_portal_openapi(void);
Suite *suite_portal_desk(void);

#endif
