/* Unit tests for common/b64: the RFC 4648 section 10 vectors both ways, the
 * URL-safe alphabet, padding on and off, the size helpers, and every kind
 * of bad input the strict decoder must refuse. */
#include "common/b64.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* RFC 4648, section 10; unpadded is the same text without its '='. */
static const struct {
	const char *raw, *b64;
} rfc[] = {
	{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
	{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
};

START_TEST(rfc_vectors_encode)
{
	const char *raw = rfc[_i].raw, *want = rfc[_i].b64;
	size_t n = strlen(raw), plen = strcspn(want, "=");
	char out[16], *a;
	size_t alen = 99;

	ck_assert_int_eq(b64_encode(raw, n, 0, out, sizeof(out)), (ssize_t)strlen(want));
	ck_assert_str_eq(out, want);
	ck_assert_uint_eq(b64_encoded_len(n, 0), strlen(want));
	/* unpadded, in both alphabets (these vectors use neither '+' nor '/') */
	ck_assert_int_eq(b64_encode(raw, n, B64_NOPAD, out, sizeof(out)), (ssize_t)plen);
	ck_assert_uint_eq(strlen(out), plen);
	ck_assert_int_eq(strncmp(out, want, plen), 0);
	ck_assert_uint_eq(b64_encoded_len(n, B64_NOPAD | B64_URL), plen);
	ck_assert_int_eq(b64_encode(raw, n, B64_URL | B64_NOPAD, out, sizeof(out)), (ssize_t)plen);
	a = b64_encode_alloc(raw, n, 0, &alen);
	ck_assert_ptr_nonnull(a);
	ck_assert_str_eq(a, want);
	ck_assert_uint_eq(alen, strlen(want));
	free(a);
}
END_TEST

START_TEST(rfc_vectors_decode)
{
	const char *raw = rfc[_i].raw, *b64 = rfc[_i].b64;
	size_t len = strlen(b64), plen = strcspn(b64, "=");
	unsigned char out[16];

	ck_assert_int_eq(b64_decode(b64, len, 0, out, sizeof(out)), (ssize_t)strlen(raw));
	ck_assert_mem_eq(out, raw, strlen(raw));
	ck_assert_int_eq(b64_decode(b64, len, B64_PAD_OPTIONAL, out, sizeof(out)),
			 (ssize_t)strlen(raw));
	ck_assert_int_eq(b64_decode(b64, plen, B64_PAD_OPTIONAL, out, sizeof(out)),
			 (ssize_t)strlen(raw));
	ck_assert_int_eq(b64_decode(b64, plen, B64_NOPAD | B64_URL, out, sizeof(out)),
			 (ssize_t)strlen(raw));
	ck_assert_mem_eq(out, raw, strlen(raw));
	/* exactly the bytes it needs is room enough */
	ck_assert_int_eq(b64_decode(b64, len, 0, out, strlen(raw)), (ssize_t)strlen(raw));
	ck_assert_uint_ge(b64_decoded_max(len), strlen(raw));
	ck_assert_uint_eq(b64_decoded_max(plen), strlen(raw));
}
END_TEST

/* Decoding, good and bad: want is the byte count or a B64_E* value. */
static const struct {
	const char *in;
	unsigned flags;
	ssize_t want;
	const char *out;
} dec[] = {
	/* the two alphabets */
	{"+/8=", 0, 2, "\xfb\xff"},
	{"-_8=", B64_URL, 2, "\xfb\xff"},
	{"-_8", B64_URL | B64_NOPAD, 2, "\xfb\xff"},
	{"+/+/", 0, 3, "\xfb\xff\xbf"},
	{"-_-_", B64_URL, 3, "\xfb\xff\xbf"},
	{"FPucA9l+", 0, 6, "\x14\xfb\x9c\x03\xd9\x7e"},
	{"-_8=", 0, B64_EBADCHAR, NULL},
	{"+/8", B64_URL | B64_NOPAD, B64_EBADCHAR, NULL},
	{"AP8=", 0, 2, "\x00\xff"},
	/* characters outside the alphabet */
	{"Zm9v!mFy", 0, B64_EBADCHAR, NULL},
	{"Zm9v\x80mFy", 0, B64_EBADCHAR, NULL},
	{"Zm9v.", B64_PAD_OPTIONAL, B64_EBADCHAR, NULL},
	{"Zm 9v", 0, B64_EBADCHAR, NULL},
	{"Zm9v\n", 0, B64_EBADCHAR, NULL},
	/* whitespace, only when asked for */
	{"Zm 9v", B64_SPACE, 3, "foo"},
	{" Zm9v\r\nYmFy\n\t", B64_SPACE, 6, "foobar"},
	{"Zg= =\n", B64_SPACE, 1, "f"},
	{"Zg\n", B64_SPACE | B64_PAD_OPTIONAL, 1, "f"},
	{" \n", B64_SPACE, 0, ""},
	/* lengths no encoder makes */
	{"Z", 0, B64_ELENGTH, NULL},
	{"Z", B64_NOPAD, B64_ELENGTH, NULL},
	{"Zm9vY", B64_PAD_OPTIONAL, B64_ELENGTH, NULL},
	{"Z===", 0, B64_ELENGTH, NULL},
	/* padding: missing, short, long, misplaced, unwanted */
	{"Zg", 0, B64_EPADDING, NULL},
	{"Zm8", 0, B64_EPADDING, NULL},
	{"Zg", B64_PAD_OPTIONAL, 1, "f"},
	{"Zm8", B64_NOPAD, 2, "fo"},
	{"Zg=", 0, B64_EPADDING, NULL},
	{"Zg=", B64_PAD_OPTIONAL, B64_EPADDING, NULL},
	{"Zg===", 0, B64_EPADDING, NULL},
	{"Zm8==", 0, B64_EPADDING, NULL},
	{"Zm9v=", 0, B64_EPADDING, NULL},
	{"====", 0, B64_EPADDING, NULL},
	{"=", B64_PAD_OPTIONAL, B64_EPADDING, NULL},
	{"Zg==Zg==", 0, B64_EPADDING, NULL},
	{"Z=g=", 0, B64_EPADDING, NULL},
	{"Zg==", B64_NOPAD, B64_EPADDING, NULL},
	{"Zm8=", B64_NOPAD | B64_URL, B64_EPADDING, NULL},
	/* bits past the last byte are not checked (RFC 4648 3.5 allows it) */
	{"Zh==", 0, 1, "f"},
	{"", 0, 0, ""},
};

START_TEST(decode_table)
{
	unsigned char out[16];
	ssize_t got = b64_decode(dec[_i].in, strlen(dec[_i].in), dec[_i].flags, out, sizeof(out));

	ck_assert_msg(got == dec[_i].want, "`%s` (flags %u): %zd, want %zd", dec[_i].in,
		      dec[_i].flags, got, dec[_i].want);
	if (got > 0)
		ck_assert_mem_eq(out, dec[_i].out, (size_t)got);
	ck_assert_ptr_nonnull(b64_strerror(got));
}
END_TEST

/* The length counts, not a NUL: bytes past len are never read. */
START_TEST(decode_stops_at_len)
{
	unsigned char out[8];

	ck_assert_int_eq(b64_decode("Zm9v!!!!", 4, 0, out, sizeof(out)), 3);
	ck_assert_int_eq(b64_decode("Zg==", 2, B64_PAD_OPTIONAL, out, sizeof(out)), 1);
	ck_assert_int_eq(b64_decode(NULL, 0, 0, out, 0), 0);
}
END_TEST

START_TEST(output_too_small)
{
	unsigned char out[8];
	char text[8];

	memset(out, 0xaa, sizeof(out));
	ck_assert_int_eq(b64_decode("Zm9vYmFy", 8, 0, out, 5), B64_ERANGE);
	ck_assert_int_eq(out[5], 0xaa); /* nothing past cap */
	ck_assert_int_eq(b64_decode("Zm9vYg==", 8, 0, out, 3), B64_ERANGE);
	ck_assert_int_eq(b64_decode("Zg==", 4, 0, out, 0), B64_ERANGE);
	ck_assert_int_eq(b64_decode("Zm8=", 4, 0, out, 1), B64_ERANGE);
	/* encoding wants room for the NUL too */
	errno = 0;
	ck_assert_int_eq(b64_encode("f", 1, 0, text, 4), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(b64_encode("f", 1, 0, text, 0), -1);
	ck_assert_int_eq(b64_encode("f", 1, B64_NOPAD, text, 3), 2);
	ck_assert_str_eq(text, "Zg");
	ck_assert_int_eq(b64_encode("", 0, 0, text, 1), 0);
	ck_assert_str_eq(text, "");
}
END_TEST

static const struct {
	size_t n, padded, unpadded;
} sizes[] = {
	{0, 0, 0}, {1, 4, 2}, {2, 4, 3}, {3, 4, 4}, {4, 8, 6}, {32, 44, 43}, {48, 64, 64},
};

START_TEST(size_helpers)
{
	ck_assert_uint_eq(b64_encoded_len(sizes[_i].n, 0), sizes[_i].padded);
	ck_assert_uint_eq(b64_encoded_len(sizes[_i].n, B64_URL), sizes[_i].padded);
	ck_assert_uint_eq(b64_encoded_len(sizes[_i].n, B64_NOPAD), sizes[_i].unpadded);
	ck_assert_uint_eq(b64_decoded_max(sizes[_i].unpadded), sizes[_i].n);
	ck_assert_uint_ge(b64_decoded_max(sizes[_i].padded), sizes[_i].n);
	ck_assert_uint_le(b64_decoded_max(sizes[_i].padded), sizes[_i].n + 2);
}
END_TEST

/* Every byte value, every length up to 3 quanta and more, every flavour. */
START_TEST(round_trip)
{
	static const unsigned flavours[] = {0, B64_URL, B64_NOPAD, B64_URL | B64_NOPAD};
	unsigned char in[300], back[300];

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 167 + 13);
	for (size_t f = 0; f < sizeof(flavours) / sizeof(flavours[0]); f++) {
		for (size_t n = 0; n <= sizeof(in); n += n < 16 ? 1 : 71) {
			size_t tlen;
			char *t = b64_encode_alloc(in, n, flavours[f], &tlen);
			ssize_t got;

			ck_assert_ptr_nonnull(t);
			ck_assert_uint_eq(tlen, b64_encoded_len(n, flavours[f]));
			ck_assert_uint_eq(strlen(t), tlen);
			got = b64_decode(t, tlen, flavours[f], back, b64_decoded_max(tlen));
			ck_assert_int_eq(got, (ssize_t)n);
			ck_assert_mem_eq(back, in, n);
			free(t);
		}
	}
}
END_TEST

Suite *suite_b64(void)
{
	Suite *s = suite_create("b64");
	TCase *tc = tcase_create("b64");

	tcase_add_loop_test(tc, rfc_vectors_encode, 0, (int)(sizeof(rfc) / sizeof(rfc[0])));
	tcase_add_loop_test(tc, rfc_vectors_decode, 0, (int)(sizeof(rfc) / sizeof(rfc[0])));
	tcase_add_loop_test(tc, decode_table, 0, (int)(sizeof(dec) / sizeof(dec[0])));
	tcase_add_loop_test(tc, size_helpers, 0, (int)(sizeof(sizes) / sizeof(sizes[0])));
	tcase_add_test(tc, decode_stops_at_len);
	tcase_add_test(tc, output_too_small);
	tcase_add_test(tc, round_trip);
	suite_add_tcase(s, tc);
	return s;
}
