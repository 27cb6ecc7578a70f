/* Unit tests for common/rnd: the shapes of hex ids and URL tokens, buffers
 * that are too small, and that what comes out is not the same twice. */
#include "common/rnd.h"
#include "common/util.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

START_TEST(bytes_differ)
{
	struct err e = ERR_INIT;
	unsigned char a[32], b[32], zero[32] = {0};

	ck_assert_int_eq(rnd_bytes(a, sizeof(a), &e), 0);
	ck_assert_int_eq(rnd_bytes(b, sizeof(b), &e), 0);
	ck_assert_int_ne(memcmp(a, b, sizeof(a)), 0);
	ck_assert_int_ne(memcmp(a, zero, sizeof(a)), 0);
	ck_assert_int_eq(rnd_bytes(a, 0, NULL), 0);
}
END_TEST

/* More than getrandom(2) promises in one call (256 bytes), so the loop
 * over short reads is what fills it. */
START_TEST(bytes_large)
{
	struct err e = ERR_INIT;
	size_t n = 1 << 20, zeros = 0;
	unsigned char *p = calloc(1, n);

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(rnd_bytes(p, n, &e), 0);
	for (size_t i = n - 4096; i < n; i++)
		zeros += p[i] == 0;
	ck_assert_uint_lt(zeros, 100); /* about 16 expected; all 4096 if unfilled */
	free(p);
}
END_TEST

/* The ids the programs make: prefix, byte count, and the text's length. */
static const struct {
	const char *prefix;
	size_t nbytes, want_len;
} ids[] = {
	{"sb-", 5, 13},  /* the node's sandbox ids */
	{"sb-", 8, 19},  /* the portal's */
	{"rec-", 6, 16}, /* recordings */
	{"", 16, 32},    /* MCP sessions */
	{"", 6, 12},     /* API key ids */
	{"x", 0, 1},
};

START_TEST(hex_ids)
{
	struct err e = ERR_INIT;
	char a[48], b[48];
	size_t pl = strlen(ids[_i].prefix);

	memset(a, '#', sizeof(a));
	ck_assert_int_eq(rnd_hex(ids[_i].prefix, ids[_i].nbytes, a, sizeof(a), &e), 0);
	ck_assert_uint_eq(strlen(a), ids[_i].want_len);
	ck_assert_int_eq(strncmp(a, ids[_i].prefix, pl), 0);
	ck_assert_uint_eq(strspn(a + pl, "0123456789abcdef"), 2 * ids[_i].nbytes);
	/* a buffer that holds exactly the text and its NUL is enough */
	ck_assert_int_eq(rnd_hex(ids[_i].prefix, ids[_i].nbytes, b, ids[_i].want_len + 1, &e), 0);
	ck_assert_uint_eq(strlen(b), ids[_i].want_len);
	if (ids[_i].nbytes >= 5)
		ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(hex_too_small)
{
	struct err e = ERR_INIT;
	char out[20];

	memset(out, '#', sizeof(out));
	ck_assert_int_eq(rnd_hex("sb-", 8, out, 19, &e), -1); /* no room for the NUL */
	ck_assert_int_eq(e.code, ERANGE);
	ck_assert_int_eq(out[0], '#');
	ck_assert_int_eq(rnd_hex("", 65, out, sizeof(out), &e), -1);
	ck_assert_int_eq(e.code, ERANGE);
	ck_assert_int_eq(rnd_hex("", 1, out, 0, NULL), -1);
}
END_TEST

/* Tokens: byte count and the unpadded base64url length it gives. */
static const struct {
	size_t nbytes, want_len;
} toks[] = {
	{9, 12},  /* share ids */
	{18, 24}, /* VNC and recorder secrets */
	{32, 43}, /* API key secrets */
	{48, 64}, /* a token key file */
	{64, 86}, /* the most */
	{1, 2},
	{0, 0},
};

START_TEST(tokens)
{
	struct err e = ERR_INIT;
	char a[100], b[100];

	ck_assert_int_eq(rnd_token(toks[_i].nbytes, a, sizeof(a), &e), 0);
	ck_assert_uint_eq(strlen(a), toks[_i].want_len);
	ck_assert(toks[_i].want_len == 0 || util_token_chars(a, strlen(a)));
	ck_assert_int_eq(rnd_token(toks[_i].nbytes, b, toks[_i].want_len + 1, &e), 0);
	ck_assert_uint_eq(strlen(b), toks[_i].want_len);
	if (toks[_i].nbytes >= 9)
		ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(token_too_small)
{
	struct err e = ERR_INIT;
	char out[128];

	ck_assert_int_eq(rnd_token(18, out, 24, &e), -1);
	ck_assert_int_eq(e.code, ERANGE);
	ck_assert_int_eq(rnd_token(65, out, sizeof(out), &e), -1);
	ck_assert_int_eq(e.code, ERANGE);
	ck_assert_int_eq(rnd_token(1, out, 0, NULL), -1);
}
END_TEST

Suite *suite_rnd(void)
{
	Suite *s = suite_create("rnd");
	TCase *tc = tcase_create("rnd");

	tcase_add_test(tc, bytes_differ);
	tcase_add_test(tc, bytes_large);
	tcase_add_loop_test(tc, hex_ids, 0, (int)(sizeof(ids) / sizeof(ids[0])));
	tcase_add_test(tc, hex_too_small);
	tcase_add_loop_test(tc, tokens, 0, (int)(sizeof(toks) / sizeof(toks[0])));
	tcase_add_test(tc, token_too_small);
	suite_add_tcase(s, tc);
	return s;
}
