/* Unit tests for cloche-init's census of open connections (netcheck.c):
 * /proc/net/tcp and tcp6 texts as gVisor writes them. */
#include "appliance/init/netcheck.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <string.h>

static const char tcp4[] =
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
	"timeout inode\n"
	/* 0.0.0.0:8080 LISTEN */
	"   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 0 1\n"
	/* 10.0.2.15:8080 <- 10.0.2.2:41000 ESTABLISHED: the asker */
	"   1: 0F02000A:1F90 0202000A:A028 01 00000000:00000000 00:00000000 00000000     0 0 2\n"
	/* 10.0.2.15:8889 <- 10.0.2.2:41001 ESTABLISHED: an MCP client */
	"   2: 0F02000A:22B9 0202000A:A029 01 00000000:00000000 00:00000000 00000000     0 0 3\n"
	/* 127.0.0.1:9222 <-> 127.0.0.1:50000: loopback, saved with the sandbox */
	"   3: 0100007F:2406 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0 0 4\n"
	/* 10.0.2.15:50001 -> 10.0.2.2:3128 CLOSE_WAIT: the egress proxy hung up */
	"   4: 0F02000A:C351 0202000A:0C38 08 00000000:00000000 00:00000000 00000000     0 0 5\n"
	/* TIME_WAIT and CLOSE do not count (they never show in gVisor anyway) */
	"   5: 0F02000A:C352 0202000A:0C38 06 00000000:00000000 00:00000000 00000000     0 0 6\n"
	"   6: 0F02000A:C353 0202000A:0C38 07 00000000:00000000 00:00000000 00000000     0 0 7\n";

static const char tcp6[] =
	"  sl  local_address                         remote_address                        st\n"
	/* [::1]:7999 <-> [::1]:40000 loopback */
	"   0: 00000000000000000000000001000000:1F3F 00000000000000000000000001000000:9C40 01\n"
	/* v4-mapped 127.0.0.1 */
	"   1: 0000000000000000FFFF00000100007F:1F3F 0000000000000000FFFF00000100007F:9C41 01\n"
	/* v4-mapped 10.0.2.15:6080 <- 10.0.2.2:40002: noVNC through the interface */
	"   2: 0000000000000000FFFF00000F02000A:17C0 0000000000000000FFFF00000202000A:9C42 01\n";

START_TEST(counts_only_interface_connections)
{
	json_t *list = json_array();

	ck_assert_int_eq(netcheck_scan(tcp4, 8080, 0xA028, list), 2);
	ck_assert_int_eq(json_array_size(list), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "local")),
			 "10.0.2.15:8889");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "remote")),
			 "10.0.2.2:41001");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 1), "state")),
			 "CLOSE_WAIT");
	json_decref(list);
}
END_TEST

START_TEST(the_asker_counts_when_not_named)
{
	ck_assert_int_eq(netcheck_scan(tcp4, -1, -1, NULL), 3);
}
END_TEST

START_TEST(ipv6_and_mapped)
{
	json_t *list = json_array();

	ck_assert_int_eq(netcheck_scan(tcp6, 8080, 1, list), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "local")),
			 "[::ffff:10.0.2.15]:6080");
	json_decref(list);
}
END_TEST

START_TEST(garbage_counts_nothing)
{
	ck_assert_int_eq(netcheck_scan("", 1, 1, NULL), 0);
	ck_assert_int_eq(netcheck_scan("0: zz:1 0:0 01\n1: 0F02000A:1F90\n2: 0F02:1 0F02:2 01", 1,
				       1, NULL),
			 0);
}
END_TEST

Suite *suite_netcheck(void)
{
	Suite *s = suite_create("netcheck");
	TCase *tc = tcase_create("scan");

	tcase_add_test(tc, counts_only_interface_connections);
	tcase_add_test(tc, the_asker_counts_when_not_named);
	tcase_add_test(tc, ipv6_and_mapped);
	tcase_add_test(tc, garbage_counts_nothing);
	suite_add_tcase(s, tc);
	return s;
}
