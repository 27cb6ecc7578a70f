/* Unit tests for common/secret: equality of secrets of equal and unequal
 * lengths (a repeated or cut secret is not the secret), bytes a C string
 * could not hold, and credential files: the first line, its end and
 * trailing blanks dropped, too short, too long, and missing. */
#include "common/secret.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
	const char *given;
	size_t glen;
	const char *secret;
	size_t slen;
	bool want;
} eq[] = {
	{"abc", 3, "abc", 3, true},
	{"abc", 3, "abd", 3, false},
	{"xbc", 3, "abc", 3, false},
	{"abc", 3, "abcd", 4, false},
	{"abcd", 4, "abc", 3, false},
	{"abcabc", 6, "abc", 3, false}, /* the secret twice is not the secret */
	{"abc", 3, "abcabc", 6, false},
	{"ab", 2, "abc", 3, false},
	{"", 0, "", 0, true},
	{"", 0, "x", 1, false},
	{"x", 1, "", 0, false},
	{"a\0b", 3, "a\0b", 3, true},
	{"a\0b", 3, "a\0c", 3, false},
	{"a\0", 2, "a", 1, false},
	{"\xff\x80\x01", 3, "\xff\x80\x01", 3, true},
	{"\xff\x80\x01", 3, "\x7f\x80\x01", 3, false},
	{"Bearer 0123456789abcdef", 23, "Bearer 0123456789abcdef", 23, true},
	{"Bearer 0123456789abcdeF", 23, "Bearer 0123456789abcdef", 23, false},
};

START_TEST(equal_table)
{
	ck_assert_msg(secret_equal(eq[_i].given, eq[_i].glen, eq[_i].secret, eq[_i].slen) ==
			      eq[_i].want,
		      "case %d", _i);
}
END_TEST

/* Every single-byte difference, at every place, in a longer secret. */
START_TEST(equal_every_position)
{
	unsigned char s[64], g[64];

	for (size_t i = 0; i < sizeof(s); i++)
		s[i] = (unsigned char)(i * 31 + 7);
	memcpy(g, s, sizeof(g));
	ck_assert(secret_equal(g, sizeof(g), s, sizeof(s)));
	for (size_t i = 0; i < sizeof(s); i++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			g[i] ^= (unsigned char)(1u << bit);
			ck_assert(!secret_equal(g, sizeof(g), s, sizeof(s)));
			g[i] ^= (unsigned char)(1u << bit);
		}
		ck_assert(!secret_equal(g, i, s, sizeof(s)));
		ck_assert(!secret_equal(g, sizeof(g), s, i));
	}
}
END_TEST

/* Credential files: contents, the buffer's size, the minimum, and the
 * length and text wanted (-1: refused, with errno-less e->code 0). */
static const struct {
	const char *content;
	size_t cap, min;
	int want;
	const char *text;
} files[] = {
	{"0123456789abcdef\n", 64, 16, 16, "0123456789abcdef"},
	{"0123456789abcdef", 64, 16, 16, "0123456789abcdef"},
	{"0123456789abcdef\r\n", 64, 16, 16, "0123456789abcdef"},
	{"0123456789abcdef \t \n", 64, 16, 16, "0123456789abcdef"},
	{"0123456789abcdef\nsecond line\n", 64, 16, 16, "0123456789abcdef"},
	{"  lead kept 0123456789\n", 64, 16, 22, "  lead kept 0123456789"},
	{"0123456789abcde\n", 64, 16, -1, ""},     /* one short */
	{"0123456789abcde   \n", 64, 16, -1, ""},  /* blanks do not count */
	{"", 64, 16, -1, ""},
	{"\n0123456789abcdef\n", 64, 16, -1, ""},  /* the first line is the one */
	{"0123456789abcdef", 17, 16, 16, "0123456789abcdef"},   /* fills it exactly */
	{"0123456789abcdef\n", 17, 16, 16, "0123456789abcdef"},
	{"0123456789abcdef\r\n", 17, 16, 16, "0123456789abcdef"},
	{"0123456789abcdefg", 17, 16, -1, ""},   /* one too long */
	{"0123456789abcdefg\n", 17, 16, -1, ""},
	{"short\n", 8, 0, 5, "short"},
};

START_TEST(read_file_table)
{
	char path[] = "/tmp/cloche-secret-XXXXXX", out[64];
	struct err e = ERR_INIT;
	int fd = mkstemp(path), got;
	size_t n = strlen(files[_i].content);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, files[_i].content, n), (ssize_t)n);
	close(fd);
	memset(out, '#', sizeof(out));
	got = secret_read_file(path, out, files[_i].cap, files[_i].min, &e);
	unlink(path);
	ck_assert_msg(got == files[_i].want, "case %d: %d (%s)", _i, got, e.msg);
	if (got >= 0) {
		ck_assert_str_eq(out, files[_i].text);
	} else {
		ck_assert_int_eq(e.code, 0);
		ck_assert_ptr_nonnull(strstr(e.msg, path));
		ck_assert_str_eq(out, ""); /* nothing of a refused secret stays */
	}
}
END_TEST

/* The shape of a secret a node hands a server in a sandbox. */
START_TEST(token_shape)
{
	char s[SECRET_TOKEN_MAX + 2];

	memset(s, 'a', sizeof(s));
	ck_assert(secret_token_ok(s, SECRET_TOKEN_MIN));
	ck_assert(secret_token_ok(s, SECRET_TOKEN_MAX));
	ck_assert(!secret_token_ok(s, SECRET_TOKEN_MIN - 1));
	ck_assert(!secret_token_ok(s, SECRET_TOKEN_MAX + 1));
	ck_assert(secret_token_ok("Zx9_k-2PqLmN4tVw8yB1cD0e", 24));
	ck_assert(!secret_token_ok("Zx9_k-2PqLmN4tVw8yB1cD0=", 24));
	ck_assert(!secret_token_ok("Zx9_k-2PqLmN4tVw8yB1&view=x", 27));
	ck_assert(!secret_token_ok(NULL, 20));
}
END_TEST

START_TEST(read_file_missing)
{
	struct err e = ERR_INIT;
	char out[64];

	ck_assert_int_eq(secret_read_file("/nonexistent/cloche/cred", out, sizeof(out), 16, &e), -1);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/cloche/cred"));
	ck_assert_int_eq(secret_read_file("/", out, sizeof(out), 16, &e), -1);
	ck_assert_int_eq(e.code, EISDIR);
}
END_TEST

Suite *suite_secret(void)
{
	Suite *s = suite_create("secret");
	TCase *tc = tcase_create("secret");

	tcase_add_loop_test(tc, equal_table, 0, (int)(sizeof(eq) / sizeof(eq[0])));
	tcase_add_test(tc, equal_every_position);
	tcase_add_loop_test(tc, read_file_table, 0, (int)(sizeof(files) / sizeof(files[0])));
	tcase_add_test(tc, read_file_missing);
	tcase_add_test(tc, token_shape);
	suite_add_tcase(s, tc);
	return s;
}
