/* The suites of the unit-test binaries; each test_<module>.c defines one
 * suite_<module>() and the binary's main.c runs them all. */
#ifndef CLOCHE_TESTS_UNIT_H
#define CLOCHE_TESTS_UNIT_H

#include <check.h>

Suite *suite_err(void);
Suite *suite_buf(void);
Suite *suite_cfg(void);
Suite *suite_json(void);
Suite *suite_log(void);
Suite *suite_http_client(void);
Suite *suite_http_server(void);
Suite *suite_http_status(void);
Suite *suite_job(void);
Suite *suite_query(void);
Suite *suite_utf8(void);
Suite *suite_b64(void);
Suite *suite_rnd(void);
Suite *suite_secret(void);
Suite *suite_listenfd(void);
Suite *suite_nodesock(void);
Suite *suite_version(void);
Suite *suite_daemon(void);
Suite *suite_http1_head(void);
Suite *suite_init_config(void);
Suite *suite_memguard(void);
Suite *suite_compat(void);
Suite *suite_netcheck(void);
Suite *suite_marker(void);
Suite *suite_lease(void);
Suite *suite_size(void);
Suite *suite_x11_lease(void);
Suite *suite_recorder(void);
Suite *suite_vnc_request(void);
Suite *suite_vnc_state(void);

#endif
