/* Unit suite of mcp-desktop's pure parts: key names and combinations,
 * character keysyms, resampling and PNG encoding, the screen hash,
 * drawing the pointer, the per-client table of last images, screen-size
 * presets and the model/real pixel mapping (UTF-8 and the clipboard's text
 * conversions are common/utf8's, tested in tests/unit/common).
 * Self-contained (its own main), so it shares no header with the other
 * unit binaries. */
#include "mcp/desktop/geom.h"
#include "mcp/desktop/image.h"
#include "mcp/desktop/keys.h"
#include "mcp/desktop/seen.h"

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

START_TEST(test_hash)
{
	struct desk_image a, b;
	struct err e = ERR_INIT;
	uint64_t h;

	ck_assert_int_eq(desk_image_alloc(&a, 7, 5, &e), 0); /* 105 bytes: a tail too */
	ck_assert_int_eq(desk_image_alloc(&b, 5, 7, &e), 0);
	memset(a.px, 0x40, 105);
	memset(b.px, 0x40, 105);
	h = desk_image_hash(&a);
	ck_assert_uint_eq(h, desk_image_hash(&a));
	/* Same bytes, other shape: another hash. */
	ck_assert_uint_ne(h, desk_image_hash(&b));
	/* One bit anywhere, in the words or in the tail, changes it. */
	for (size_t i = 0; i < 105; i++) {
		a.px[i] ^= 1;
		ck_assert_uint_ne(h, desk_image_hash(&a));
		a.px[i] ^= 1;
	}
	/* Two swapped bytes too (a plain sum would miss it). */
	a.px[3] = 1;
	h = desk_image_hash(&a);
	a.px[3] = 0x40;
	a.px[11] = 1;
	ck_assert_uint_ne(h, desk_image_hash(&a));
	desk_image_free(&a);
	desk_image_free(&b);
}
END_TEST

START_TEST(test_draw_cursor)
{
	uint32_t argb[4] = {0xff000000, 0x80800000, 0x00000000, 0xffffffff};
	struct desk_cursor c = {.x = 3, .y = 1, .w = 2, .h = 2, .argb = argb};
	struct desk_image img;
	struct err e = ERR_INIT;

	ck_assert_int_eq(desk_image_alloc(&img, 4, 4, &e), 0);
	memset(img.px, 200, 4 * 4 * 3);
	/* The image shows the screen from (1, 0): the cursor's column 0 lands
	 * on x 2, its column 1 on x 3; row 0 on y 1. */
	desk_image_draw_cursor(&img, 1, 0, &c);
	ck_assert_int_eq(img.px[(1 * 4 + 2) * 3], 0);           /* opaque black */
	ck_assert_int_eq(img.px[(1 * 4 + 3) * 3], 128 + 100);   /* half red over 200 */
	ck_assert_int_eq(img.px[(1 * 4 + 3) * 3 + 1], 100);
	ck_assert_int_eq(img.px[(2 * 4 + 2) * 3], 200);         /* transparent */
	ck_assert_int_eq(img.px[(2 * 4 + 3) * 3 + 2], 255);     /* opaque white */
	ck_assert_int_eq(img.px[(0 * 4 + 2) * 3], 200);         /* untouched */
	/* Clipped: a cursor half off every edge writes only inside. */
	c.x = -1;
	c.y = -1;
	desk_image_draw_cursor(&img, 0, 0, &c);
	ck_assert_int_eq(img.px[0], 255);
	c.x = 3;
	c.y = 3;
	desk_image_draw_cursor(&img, 0, 0, &c);
	ck_assert_int_eq(img.px[(3 * 4 + 3) * 3], 0);
	desk_image_free(&img);
}
END_TEST

START_TEST(test_seen)
{
	struct desk_seen *t = desk_seen_new(2);
	int64_t at = 0;
	char sid[200];

	ck_assert_ptr_nonnull(t);
	ck_assert(!desk_seen_same(t, "a", 1, &at));
	desk_seen_put(t, "a", 1, 1000);
	ck_assert(desk_seen_same(t, "a", 1, &at));
	ck_assert_int_eq(at, 1000);
	ck_assert(!desk_seen_same(t, "a", 2, &at));
	ck_assert(!desk_seen_same(t, "b", 1, &at)); /* clients are apart */
	desk_seen_put(t, "a", 2, 2000);
	ck_assert(!desk_seen_same(t, "a", 1, &at));
	ck_assert(desk_seen_same(t, "a", 2, &at));
	/* Full: the client not heard from longest goes. */
	desk_seen_put(t, "b", 5, 3000);
	ck_assert(desk_seen_same(t, "a", 2, &at));
	desk_seen_put(t, "c", 6, 4000);
	ck_assert(!desk_seen_same(t, "b", 5, &at));
	ck_assert(desk_seen_same(t, "a", 2, &at));
	ck_assert(desk_seen_same(t, "c", 6, &at));
	/* A long id is cut the same way each time, so it is still found. */
	memset(sid, 'x', sizeof(sid) - 1);
	sid[sizeof(sid) - 1] = '\0';
	desk_seen_put(t, sid, 9, 5000);
	ck_assert(desk_seen_same(t, sid, 9, &at));
	desk_seen_free(t);
}
END_TEST

static const struct {
	const char *in;
	int rw, rh, w, h, rc;
} sizes[] = {
	{"", 1280, 800, 0, 0, 0},
	{"native", 1280, 800, 0, 0, 0},
	{"xga", 1280, 800, 1024, 768, 0},
	{"XGA", 1280, 800, 1024, 768, 0},
	{"wxga", 1280, 800, 1280, 800, 0},
	{"fwxga", 1920, 1080, 1366, 768, 0},
	{"1024x640", 1280, 800, 1024, 640, 0},
	{"auto", 1280, 800, 0, 0, 0},      /* WXGA is the aspect, not smaller */
	{"auto", 1920, 1200, 1280, 800, 0}, /* 16:10 */
	{"auto", 1920, 1080, 1366, 768, 0}, /* 16:9 */
	{"auto", 1600, 1200, 1024, 768, 0}, /* 4:3 */
	{"auto", 1000, 1000, 0, 0, 0},      /* no preset of that aspect */
	{"auto", 0, 0, 0, 0, 0},            /* size unknown yet */
	{"svga", 1280, 800, 0, 0, -1},
	{"12x", 1280, 800, 0, 0, -1},
	{"1024x768x", 1280, 800, 0, 0, -1},
	{"8x8", 1280, 800, 0, 0, -1},
	{"9000x100", 1280, 800, 0, 0, -1},
};

START_TEST(test_size_parse)
{
	struct err e = ERR_INIT;
	int w = -1, h = -1;

	ck_assert_int_eq(desk_size_parse(sizes[_i].in, sizes[_i].rw, sizes[_i].rh, &w, &h, &e),
			 sizes[_i].rc);
	ck_assert_int_eq(w, sizes[_i].w);
	ck_assert_int_eq(h, sizes[_i].h);
	if (sizes[_i].rc)
		ck_assert_msg(strstr(e.msg, "xga (1024x768)"), "%s", e.msg);
}
END_TEST

START_TEST(test_geom)
{
	/* Scaled 1280 -> 1024: every model pixel maps inside the display and
	 * back onto itself. */
	for (int v = 0; v < 1024; v++) {
		int r = desk_to_real(v, 1024, 1280);

		ck_assert_int_ge(r, 0);
		ck_assert_int_lt(r, 1280);
		ck_assert_int_eq(desk_to_model(r, 1024, 1280), v);
	}
	/* XGA on 800 rows: 768 model rows. */
	for (int v = 0; v < 768; v++)
		ck_assert_int_eq(desk_to_model(desk_to_real(v, 768, 800), 768, 800), v);
	ck_assert_int_eq(desk_to_real(1023, 1024, 1280), 1279);
	ck_assert_int_eq(desk_to_real(5, 1280, 1280), 5);
	ck_assert_int_eq(desk_to_model(1279, 1024, 1280), 1023);
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
	tcase_add_test(tc, test_char_keysyms);
	suite_add_tcase(s, tc);
	tc = tcase_create("image");
	tcase_add_test(tc, test_scale_and_png);
	tcase_add_test(tc, test_hash);
	tcase_add_test(tc, test_draw_cursor);
	suite_add_tcase(s, tc);
	tc = tcase_create("screens");
	tcase_add_test(tc, test_seen);
	tcase_add_loop_test(tc, test_size_parse, 0, (int)(sizeof(sizes) / sizeof(sizes[0])));
	tcase_add_test(tc, test_geom);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
