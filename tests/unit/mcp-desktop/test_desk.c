/* Unit suite of mcp-desktop's pure parts: key names and combinations,
 * UTF-8 decoding and character keysyms, resampling and PNG encoding.
 * Self-contained (its own main), so it shares no header with the other
 * unit binaries. */
#include "mcp/desktop/image.h"
#include "mcp/desktop/keys.h"

#include <X11/keysym.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *in;
	int n;
	uint32_t ks[3];
} combos[] = {
	{"Return", 1, {XK_Return}},
	{"ctrl+l", 2, {XK_Control_L, XK_l}},
	{"ctrl+shift+t", 3, {XK_Control_L, XK_Shift_L, XK_t}},
	{"super", 1, {XK_Super_L}},
	{"Page_Down", 1, {XK_Next}},
	{"pagedown", 1, {XK_Next}},
	{"CTRL+A", 2, {XK_Control_L, XK_A}},
	{"alt+F4", 2, {XK_Alt_L, XK_F4}},
	{"f12", 1, {XK_F12}},
	{"Escape", 1, {XK_Escape}},
	{"esc", 1, {XK_Escape}},
	{"BackSpace", 1, {XK_BackSpace}},
	{"ctrl++", 2, {XK_Control_L, '+'}},
	{"ctrl+/", 2, {XK_Control_L, '/'}},
	{"é", 1, {0xe9}},
	{"€", 1, {0x010020ac}},
	{"XF86AudioMute", 1, {0x1008ff12}},
	{"KP_Enter", 1, {XK_KP_Enter}},
};

START_TEST(test_combo)
{
	struct desk_combo c;
	struct err e = ERR_INIT;
	const char *in = combos[_i].in;

	ck_assert_msg(desk_keys_combo(in, strlen(in), &c, &e) == 0, "%s: %s", in, e.msg);
	ck_assert_int_eq(c.n, combos[_i].n);
	for (int i = 0; i < c.n; i++)
		ck_assert_uint_eq(c.ks[i], combos[_i].ks[i]);
}
END_TEST

static const char *const bad_combos[] = {"", "ctrl+", "a++b", "ctrl+nosuchkey", "Retrun",
					 "a+b+c+d+e+f+g+h+i"};

START_TEST(test_bad_combo)
{
	struct desk_combo c;
	struct err e = ERR_INIT;
	const char *in = bad_combos[_i];

	ck_assert_int_eq(desk_keys_combo(in, strlen(in), &c, &e), -1);
	ck_assert(e.msg[0] != '\0');
}
END_TEST

START_TEST(test_sequence)
{
	struct desk_combo seq[4];
	struct err e = ERR_INIT;
	int n;

	ck_assert_int_eq(desk_keys_sequence("  ctrl+a  BackSpace ", seq, 4, &n, &e), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(seq[1].ks[0], XK_BackSpace);
	ck_assert_int_eq(desk_keys_sequence("   ", seq, 4, &n, &e), -1);
	ck_assert_int_eq(desk_keys_sequence("a b c d e", seq, 4, &n, &e), -1);
}
END_TEST

START_TEST(test_modifiers)
{
	struct desk_combo c;
	struct err e = ERR_INIT;

	ck_assert_int_eq(desk_keys_modifiers("shift", &c, &e), 0);
	ck_assert_int_eq(desk_keys_modifiers(" ctrl+alt ", &c, &e), 0);
	ck_assert_int_eq(c.n, 2);
	ck_assert_int_eq(desk_keys_modifiers("super", &c, &e), 0);
	ck_assert_int_eq(desk_keys_modifiers("ctrl+a", &c, &e), -1);
	ck_assert_int_eq(desk_keys_modifiers("hello", &c, &e), -1);
}
END_TEST

START_TEST(test_utf8)
{
	const char *s = "h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", *p = s, *end = s + strlen(s);
	const char *bad[] = {"\xc3", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\xf8\x88\x80\x80",
			     "\x80"};

	ck_assert_int_eq(desk_utf8_next(&p, end), 'h');
	ck_assert_int_eq(desk_utf8_next(&p, end), 0xe9);
	ck_assert_int_eq(desk_utf8_next(&p, end), 0x20ac);
	ck_assert_int_eq(desk_utf8_next(&p, end), 0x1f600);
	ck_assert_ptr_eq(p, end);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = bad[i];
		ck_assert_int_eq(desk_utf8_next(&p, bad[i] + strlen(bad[i])), -1);
	}
}
END_TEST

START_TEST(test_char_keysyms)
{
	ck_assert_uint_eq(desk_keys_char('a'), 'a');
	ck_assert_uint_eq(desk_keys_char('\n'), XK_Return);
	ck_assert_uint_eq(desk_keys_char('\t'), XK_Tab);
	ck_assert_uint_eq(desk_keys_char(0xe9), 0xe9);
	ck_assert_uint_eq(desk_keys_char(0x65e5), 0x010065e5);
	ck_assert_uint_eq(desk_keys_char(0x07), 0);
	ck_assert_uint_eq(desk_keys_char(0x7f), 0);
}
END_TEST

static unsigned be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

START_TEST(test_scale_and_png)
{
	struct desk_image img, half;
	struct err e = ERR_INIT;
	unsigned char *png;
	size_t len;

	ck_assert_int_eq(desk_image_alloc(&img, 4, 2, &e), 0);
	/* Left half black, right half white: halving gives one of each. */
	for (int y = 0; y < 2; y++)
		for (int x = 0; x < 4; x++)
			memset(img.px + (y * 4 + x) * 3, x < 2 ? 0 : 255, 3);
	ck_assert_int_eq(desk_image_scale(&img, 2, 1, &half, &e), 0);
	ck_assert_int_eq(half.px[0], 0);
	ck_assert_int_eq(half.px[3], 255);
	desk_image_free(&half);
	/* Mixed pixels average. */
	ck_assert_int_eq(desk_image_scale(&img, 1, 1, &half, &e), 0);
	ck_assert_int_eq(half.px[0], 128);
	desk_image_free(&half);
	/* Enlarging repeats pixels. */
	ck_assert_int_eq(desk_image_scale(&img, 8, 4, &half, &e), 0);
	ck_assert_int_eq(half.px[(3 * 8 + 7) * 3], 255);
	ck_assert_int_eq(half.px[(3 * 8 + 3) * 3], 0);
	desk_image_free(&half);

	ck_assert_int_eq(desk_image_png(&img, 1, &png, &len, &e), 0);
	ck_assert_uint_gt(len, 33);
	ck_assert_int_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
	ck_assert_int_eq(memcmp(png + 12, "IHDR", 4), 0);
	ck_assert_uint_eq(be32(png + 16), 4);
	ck_assert_uint_eq(be32(png + 20), 2);
	free(png);
	desk_image_free(&img);
	ck_assert_int_eq(desk_image_alloc(&img, 0, 5, &e), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mcp-desktop");
	TCase *tc = tcase_create("keys");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, test_combo, 0, (int)(sizeof(combos) / sizeof(combos[0])));
	tcase_add_loop_test(tc, test_bad_combo, 0,
			    (int)(sizeof(bad_combos) / sizeof(bad_combos[0])));
	tcase_add_test(tc, test_sequence);
	tcase_add_test(tc, test_modifiers);
	tcase_add_test(tc, test_utf8);
	tcase_add_test(tc, test_char_keysyms);
	suite_add_tcase(s, tc);
	tc = tcase_create("image");
	tcase_add_test(tc, test_scale_and_png);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
