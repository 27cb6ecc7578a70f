/* Unit tests for cloche-vnc's desktop size rules (appliance/vnc/size.c):
 * "WxH" parsing, the operator's switch words, the limits narrowed to the X
 * server's, and the verdict on a viewer's SetDesktopSize, table-driven. */
#include "appliance/vnc/size.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <rfb/rfbproto.h>

START_TEST(sizes_parse_as_digits_x_digits)
{
	static const struct {
		const char *in;
		int ok, w, h;
	} cases[] = {
		{"1280x800", 1, 1280, 800},
		{"640x480", 1, 640, 480},
		{"1x1", 1, 1, 1},
		{"65535x65535", 1, 65535, 65535},
		{"65536x10", 0, 0, 0},
		{"0x800", 0, 0, 0},
		{"1280X800", 0, 0, 0},
		{"1280x", 0, 0, 0},
		{"x800", 0, 0, 0},
		{" 1280x800", 0, 0, 0},
		{"1280x800 ", 0, 0, 0},
		{"+1280x800", 0, 0, 0},
		{"1280x-800", 0, 0, 0},
		{"1280x800x24", 0, 0, 0},
		{"0001280x800", 0, 0, 0},
		{"", 0, 0, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int w = -1, h = -1;
		int rc = vnc_size_parse(cases[i].in, &w, &h);

		ck_assert_msg((rc == 0) == cases[i].ok, "`%s`: rc %d", cases[i].in, rc);
		if (cases[i].ok) {
			ck_assert_int_eq(w, cases[i].w);
			ck_assert_int_eq(h, cases[i].h);
		} else {
			ck_assert_int_eq(w, -1); /* untouched */
			ck_assert_int_eq(h, -1);
		}
	}
	ck_assert_int_eq(vnc_size_parse(NULL, &(int){0}, &(int){0}), -1);
}
END_TEST

START_TEST(switch_words)
{
	static const struct {
		const char *in;
		int rc;
		bool on;
	} cases[] = {
		{"on", 0, true},   {"ON", 0, true},   {"true", 0, true}, {"yes", 0, true},
		{"1", 0, true},    {"off", 0, false}, {"Off", 0, false}, {"false", 0, false},
		{"no", 0, false},  {"0", 0, false},   {"", -1, false},   {"maybe", -1, false},
		{"onn", -1, false}, {"o", -1, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool on = !cases[i].on; /* so that "untouched" shows */
		int rc = vnc_switch_parse(cases[i].in, &on);

		ck_assert_msg(rc == cases[i].rc, "`%s`: rc %d", cases[i].in, rc);
		if (rc == 0)
			ck_assert_msg(on == cases[i].on, "`%s`", cases[i].in);
		else
			ck_assert_msg(on == !cases[i].on, "`%s` changed the value", cases[i].in);
	}
	ck_assert_int_eq(vnc_switch_parse(NULL, &(bool){false}), -1);
}
END_TEST

START_TEST(limits_are_narrowed_to_the_x_server)
{
	struct vnc_size_limits l = vnc_size_limits_for(2560, 1600);

	ck_assert_int_eq(l.min_w, 640);
	ck_assert_int_eq(l.min_h, 480);
	ck_assert_int_eq(l.max_w, 2560);
	ck_assert_int_eq(l.max_h, 1600);
	l = vnc_size_limits_for(32767, 32767); /* Xvfb started huge */
	ck_assert_int_eq(l.max_w, VNC_SIZE_MAX_W);
	ck_assert_int_eq(l.max_h, VNC_SIZE_MAX_H);
}
END_TEST

START_TEST(verdicts)
{
	struct vnc_size_limits l = vnc_size_limits_for(2560, 1600);
	static const struct {
		bool enabled, view_only;
		int screens, w, h;
		enum vnc_size_status want;
	} cases[] = {
		{true, false, 1, 1500, 900, VNC_SIZE_OK},
		{true, false, 1, 640, 480, VNC_SIZE_OK},    /* the bounds themselves */
		{true, false, 1, 2560, 1600, VNC_SIZE_OK},
		{true, false, 1, 1501, 901, VNC_SIZE_OK},   /* odd sizes are fine for Xvfb */
		{false, false, 1, 1500, 900, VNC_SIZE_PROHIBITED}, /* the switch off */
		{true, true, 1, 1500, 900, VNC_SIZE_PROHIBITED},   /* a watcher */
		{false, true, 1, 99999, 0, VNC_SIZE_PROHIBITED},   /* prohibited first */
		{true, false, 1, 639, 480, VNC_SIZE_INVALID},
		{true, false, 1, 640, 479, VNC_SIZE_INVALID},
		{true, false, 1, 2561, 1600, VNC_SIZE_INVALID},
		{true, false, 1, 2560, 1601, VNC_SIZE_INVALID},
		{true, false, 1, 0, 0, VNC_SIZE_INVALID},
		{true, false, 2, 1500, 900, VNC_SIZE_INVALID}, /* one screen only */
		{true, false, 0, 1500, 900, VNC_SIZE_INVALID},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(vnc_size_verdict(cases[i].enabled, cases[i].view_only, cases[i].screens,
					       cases[i].w, cases[i].h, &l) == cases[i].want,
			      "case %zu", i);
}
END_TEST

START_TEST(status_codes_are_rfbs)
{
	ck_assert_int_eq(VNC_SIZE_OK, rfbExtDesktopSize_Success);
	ck_assert_int_eq(VNC_SIZE_PROHIBITED, rfbExtDesktopSize_ResizeProhibited);
	ck_assert_int_eq(VNC_SIZE_NO_RESOURCES, rfbExtDesktopSize_OutOfResources);
	ck_assert_int_eq(VNC_SIZE_INVALID, rfbExtDesktopSize_InvalidScreenLayout);
	ck_assert_str_eq(vnc_size_status_name(VNC_SIZE_PROHIBITED), "prohibited");
	ck_assert_str_eq(vnc_size_status_name((enum vnc_size_status)9), "unknown");
}
END_TEST

Suite *suite_size(void)
{
	Suite *s = suite_create("size");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, sizes_parse_as_digits_x_digits);
	tcase_add_test(tc, switch_words);
	tcase_add_test(tc, limits_are_narrowed_to_the_x_server);
	tcase_add_test(tc, verdicts);
	tcase_add_test(tc, status_codes_are_rfbs);
	suite_add_tcase(s, tc);
	return s;
}
