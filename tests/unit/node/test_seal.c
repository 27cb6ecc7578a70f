/* Tests for sealed manifests (node-agent/na_seal.c): what a node writes
 * opens with its key and with nothing else, a change of one byte anywhere
 * is refused, the secrets are not in the text, and a manifest without a
 * seal (an old or a forged one) is refused. */
#include "tests/unit/node/suites.h"

#include "node-agent/na_seal.h"

#include "common/json.h"
#include "common/util.h"

#include <string.h>

#define KEY "0123456789abcdef0123456789abcdef-node-key"

static json_t *manifest(void)
{
	return json_pack("{s:i, s:s, s:i, s:{s:s, s:s}, s:[{s:s, s:s}]}", "version", 2, "id",
			 "sb-1", "generation", 3, "secrets", "vnc", "VNC-SECRET-xyz123456", "rec",
			 "REC-SECRET-abc987654", "objects", "name", "rootfs", "sha256", "00ff");
}

START_TEST(round_trip_keeps_everything)
{
	struct na_seal k;
	struct err e = ERR_INIT;
	AUTOBUF struct buf b = BUF_INIT(1 << 20);
	AUTOJSON json_t *m = manifest(), *back = NULL;

	ck_assert_int_eq(na_seal_init(&k, KEY, strlen(KEY), &e), 0);
	ck_assert_int_eq(na_seal(&k, m, &b, &e), 0);
	ck_assert_ptr_null(strstr(buf_str(&b), "VNC-SECRET"));
	ck_assert_ptr_null(strstr(buf_str(&b), "REC-SECRET"));
	ck_assert_ptr_nonnull(strstr(buf_str(&b), "\n#cloche-seal v1 hmac-sha256="));
	back = na_unseal(&k, b.data, b.len, &e);
	ck_assert_msg(back != NULL, "%s", e.msg);
	ck_assert_msg(json_equal(back, m), "the manifest changed on the way");
	ck_assert_ptr_nonnull(json_object_get(m, "secrets")); /* the input is untouched */
}
END_TEST

START_TEST(every_changed_byte_is_refused)
{
	struct na_seal k;
	struct err e = ERR_INIT;
	AUTOBUF struct buf b = BUF_INIT(1 << 20);
	AUTOJSON json_t *m = manifest();

	ck_assert_int_eq(na_seal_init(&k, KEY, strlen(KEY), &e), 0);
	ck_assert_int_eq(na_seal(&k, m, &b, &e), 0);
	for (size_t i = 0; i < b.len; i++) {
		json_t *x;
		char saved = b.data[i];

		b.data[i] = (char)(saved ^ 0x01);
		err_clear(&e);
		x = na_unseal(&k, b.data, b.len, &e);
		ck_assert_msg(x == NULL, "byte %zu changed and still opened", i);
		ck_assert_int_eq(e.http_status, 502);
		b.data[i] = saved;
	}
}
END_TEST

START_TEST(other_key_no_seal_and_truncation_are_refused)
{
	struct na_seal k, other;
	struct err e = ERR_INIT;
	AUTOBUF struct buf b = BUF_INIT(1 << 20);
	AUTOJSON json_t *m = manifest();
	static const char plain[] = "{\"version\":1,\"id\":\"sb-1\",\"objects\":[]}";

	ck_assert_int_eq(na_seal_init(&k, KEY, strlen(KEY), &e), 0);
	ck_assert_int_eq(na_seal_init(&other, KEY "2", strlen(KEY) + 1, &e), 0);
	ck_assert_int_eq(na_seal(&k, m, &b, &e), 0);
	ck_assert_ptr_null(na_unseal(&other, b.data, b.len, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "does not match its seal"));
	err_clear(&e);
	ck_assert_ptr_null(na_unseal(&k, plain, sizeof(plain) - 1, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "no seal"));
	err_clear(&e);
	ck_assert_ptr_null(na_unseal(&k, b.data, b.len - 10, &e));
	err_clear(&e);
	ck_assert_int_eq(na_seal_init(&other, "short", 5, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "at least 32"));
}
END_TEST

START_TEST(two_seals_of_one_manifest_differ)
{
	struct na_seal k;
	struct err e = ERR_INIT;
	AUTOBUF struct buf a = BUF_INIT(1 << 20);
	AUTOBUF struct buf b = BUF_INIT(1 << 20);
	AUTOJSON json_t *m = manifest();

	ck_assert_int_eq(na_seal_init(&k, KEY, strlen(KEY), &e), 0);
	ck_assert_int_eq(na_seal(&k, m, &a, &e), 0);
	ck_assert_int_eq(na_seal(&k, m, &b, &e), 0);
	/* a fresh nonce per seal: equal secrets do not show as equal text */
	ck_assert(a.len != b.len || memcmp(a.data, b.data, a.len) != 0);
}
END_TEST

Suite *suite_node_seal(void)
{
	Suite *s = suite_create("seal");
	TCase *tc = tcase_create("seal");

	tcase_add_test(tc, round_trip_keeps_everything);
	tcase_add_test(tc, every_changed_byte_is_refused);
	tcase_add_test(tc, other_key_no_seal_and_truncation_are_refused);
	tcase_add_test(tc, two_seals_of_one_manifest_differ);
	suite_add_tcase(s, tc);
	return s;
}
