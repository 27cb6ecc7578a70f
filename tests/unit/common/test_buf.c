/* Unit tests for common/buf: growth, the hard limit (413/E2BIG with the
 * buffer untouched), the trailing NUL, and handing data out. */
#include "common/buf.h"
#include "common/util.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A sequence of appends against a limit: which succeed, and what remains. */
static const struct {
	size_t max;
	const char *parts[4];
	int fails_at; /* index of the first failing part, or -1 */
	const char *want;
} append_cases[] = {
	{16, {"abc", "def", NULL}, -1, "abcdef"},
	{6, {"abc", "def", NULL}, -1, "abcdef"},  /* exactly at the limit */
	{5, {"abc", "def", NULL}, 1, "abc"},      /* one byte over */
	{0, {"", "", NULL}, -1, ""},              /* empty appends always fit */
	{0, {"x", NULL}, 0, ""},
	{3, {"abcd", "abc", NULL}, 0, "abc"},     /* a failed append leaves room */
};

START_TEST(append_respects_limit)
{
	AUTOBUF struct buf b = BUF_INIT(append_cases[_i].max);
	struct err e = ERR_INIT;
	int failed = -1;

	for (int k = 0; append_cases[_i].parts[k]; k++) {
		size_t before = b.len;

		if (buf_appends(&b, append_cases[_i].parts[k], &e) == -1) {
			if (failed == -1)
				failed = k;
			ck_assert_int_eq(e.code, E2BIG);
			ck_assert_int_eq(e.http_status, 413);
			ck_assert_uint_eq(b.len, before);
		}
	}
	ck_assert_int_eq(failed, append_cases[_i].fails_at);
	ck_assert_str_eq(buf_str(&b), append_cases[_i].want);
	ck_assert_uint_le(b.len, b.max);
}
END_TEST

START_TEST(grows_geometrically_and_keeps_nul)
{
	AUTOBUF struct buf b = BUF_INIT(1 << 20);
	size_t reallocs = 0, cap = 0, bad_appends = 0, bad_nuls = 0;

	/* Counted here and asserted once: each ck_assert records a mark
	 * point, and 200000 of them took this test past Check's timeout
	 * under ASan on a loaded machine. */
	for (int i = 0; i < 100000; i++) {
		bad_appends += buf_append(&b, "x", 1, NULL) != 0;
		bad_nuls += b.data[b.len] != '\0';
		if (b.cap != cap) {
			reallocs++;
			cap = b.cap;
		}
	}
	ck_assert_uint_eq(bad_appends, 0);
	ck_assert_uint_eq(bad_nuls, 0);
	ck_assert_uint_eq(b.len, 100000);
	ck_assert_uint_lt(reallocs, 20);
	ck_assert_uint_le(b.cap, b.max + 1);
}
END_TEST

START_TEST(capacity_never_exceeds_limit)
{
	AUTOBUF struct buf b = BUF_INIT(100);

	ck_assert_int_eq(buf_append(&b, "0123456789", 10, NULL), 0);
	for (int i = 0; i < 9; i++)
		ck_assert_int_eq(buf_append(&b, "0123456789", 10, NULL), 0);
	ck_assert_uint_eq(b.len, 100);
	ck_assert_uint_eq(b.cap, 101);
	ck_assert_int_eq(buf_append(&b, "x", 1, NULL), -1);
}
END_TEST

START_TEST(huge_append_does_not_overflow)
{
	AUTOBUF struct buf b = BUF_INIT(SIZE_MAX);
	struct err e = ERR_INIT;

	ck_assert_int_eq(buf_append(&b, "0123456789", 10, &e), 0);
	/* len + n wraps around: must be refused before memcpy reads p. */
	ck_assert_int_eq(buf_append(&b, "", SIZE_MAX - 5, &e), -1);
	ck_assert_int_eq(e.code, E2BIG);
	ck_assert_str_eq(buf_str(&b), "0123456789");
}
END_TEST

START_TEST(binary_data_with_nuls)
{
	AUTOBUF struct buf b = BUF_INIT(64);

	ck_assert_int_eq(buf_append(&b, "a\0b", 3, NULL), 0);
	ck_assert_int_eq(buf_append(&b, "\0", 1, NULL), 0);
	ck_assert_uint_eq(b.len, 4);
	ck_assert_mem_eq(b.data, "a\0b\0", 5);
}
END_TEST

START_TEST(appendf_formats_and_checks_limit)
{
	AUTOBUF struct buf b = BUF_INIT(20);
	struct err e = ERR_INIT;

	ck_assert_int_eq(buf_appendf(&b, &e, "%s=%d", "port", 8080), 0);
	ck_assert_int_eq(buf_appendf(&b, &e, ";%05.1f", 2.5), 0);
	ck_assert_str_eq(buf_str(&b), "port=8080;002.5");
	ck_assert_int_eq(buf_appendf(&b, &e, "%s", "-too-long"), -1);
	ck_assert_str_eq(e.msg, "exceeds the limit of 20 bytes");
	ck_assert_str_eq(buf_str(&b), "port=8080;002.5");
	ck_assert_int_eq(buf_appendf(&b, &e, "%s", "12345"), 0);
	ck_assert_uint_eq(b.len, 20);
}
END_TEST

START_TEST(appendf_longer_than_initial_capacity)
{
	AUTOBUF struct buf b = BUF_INIT(4096);
	char big[1000];

	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(buf_appendf(&b, NULL, "[%s]", big), 0);
	ck_assert_uint_eq(b.len, 1001);
	ck_assert_int_eq(b.data[0], '[');
	ck_assert_int_eq(b.data[1000], ']');
}
END_TEST

START_TEST(reset_keeps_memory)
{
	AUTOBUF struct buf b = BUF_INIT(64);
	char *mem;

	buf_appends(&b, "hello", NULL);
	mem = b.data;
	buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(buf_str(&b), "");
	ck_assert_ptr_eq(b.data, mem);
	buf_appends(&b, "hi", NULL);
	ck_assert_str_eq(buf_str(&b), "hi");
}
END_TEST

START_TEST(take_hands_out_data)
{
	AUTOBUF struct buf b = BUF_INIT(64);
	size_t len = 99;
	char *s;

	buf_appends(&b, "owned", NULL);
	s = buf_take(&b, &len);
	ck_assert_str_eq(s, "owned");
	ck_assert_uint_eq(len, 5);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.max, 64);
	free(s);

	/* Empty buffers still give a string the caller can free. */
	s = buf_take(&b, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);
}
END_TEST

START_TEST(free_is_idempotent)
{
	struct buf b;

	buf_init(&b, 10);
	ck_assert_str_eq(buf_str(&b), "");
	buf_free(&b);
	buf_appends(&b, "abc", NULL);
	buf_free(&b);
	buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.max, 10);
}
END_TEST

Suite *suite_buf(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, append_respects_limit, 0, (int)ARRAY_LEN(append_cases));
	tcase_add_test(tc, grows_geometrically_and_keeps_nul);
	tcase_add_test(tc, capacity_never_exceeds_limit);
	tcase_add_test(tc, huge_append_does_not_overflow);
	tcase_add_test(tc, binary_data_with_nuls);
	tcase_add_test(tc, appendf_formats_and_checks_limit);
	tcase_add_test(tc, appendf_longer_than_initial_capacity);
	tcase_add_test(tc, reset_keeps_memory);
	tcase_add_test(tc, take_hands_out_data);
	tcase_add_test(tc, free_is_idempotent);
	suite_add_tcase(s, tc);
	return s;
}
