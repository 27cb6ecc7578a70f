/* Unit tests for cloche-vnc's click rings (appliance/vnc/marker.c): who
 * sees a ring, that painting and unpainting leave the framebuffer exactly
 * as it was (screen edges included), expiry, and the bounds.  The screen
 * is a real libvncserver screen; its viewers are client records linked
 * into it by hand (no socket is ever used). */
#include "appliance/vnc/marker.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <rfb/rfbregion.h>
#include <stdlib.h>
#include <string.h>

#define W 200
#define H 120
#define BG 0x3060a0u

static rfbScreenInfoPtr screen;
static rfbClientPtr viewer_a, viewer_b;
static struct vnc_marker *m;
static uint32_t fb[W * H], before[W * H];

static rfbClientPtr fake_client(void)
{
	rfbClientPtr cl = calloc(1, sizeof(*cl));

	ck_assert_ptr_nonnull(cl);
	cl->screen = screen;
	cl->sock = 1000; /* the client iterator skips closed (negative) sockets */
	cl->modifiedRegion = sraRgnCreate();
	cl->next = screen->clientHead;
	screen->clientHead = cl;
	return cl;
}

static void setup(void)
{
	static char *argv[] = {"test", NULL};
	int argc = 1;

	screen = rfbGetScreen(&argc, argv, W, H, 8, 3, 4);
	ck_assert_ptr_nonnull(screen);
	for (int i = 0; i < W * H; i++)
		fb[i] = BG + (uint32_t)(i % 7); /* not uniform: a wrong restore shows */
	memcpy(before, fb, sizeof(fb));
	screen->frameBuffer = (char *)fb;
	viewer_a = fake_client();
	viewer_b = fake_client();
	m = vnc_marker_new(screen, &(struct err)ERR_INIT);
	ck_assert_ptr_nonnull(m);
}

static void teardown(void)
{
	vnc_marker_free(m);
	for (rfbClientPtr cl = screen->clientHead, next; cl; cl = next) {
		next = cl->next;
		sraRgnDestroy(cl->modifiedRegion);
		free(cl);
	}
	screen->clientHead = NULL;
	screen->frameBuffer = NULL;
	rfbScreenCleanup(screen);
}

static uint32_t px(int x, int y)
{
	return fb[y * W + x];
}

static bool marked(rfbClientPtr cl, int x, int y)
{
	sraRegionPtr r = sraRgnCreateRect(x, y, x + 1, y + 1);
	bool hit = sraRgnAnd(r, cl->modifiedRegion);

	sraRgnDestroy(r);
	return hit;
}

static void clear_marks(void)
{
	sraRgnMakeEmpty(viewer_a->modifiedRegion);
	sraRgnMakeEmpty(viewer_b->modifiedRegion);
}

START_TEST(a_click_rings_for_every_viewer_and_unpaints_exactly)
{
	vnc_marker_click(m, 100, 60, 1, 1000);
	ck_assert(marked(viewer_a, 100 - 14, 60));
	ck_assert(marked(viewer_b, 100, 60 + 14));
	ck_assert(!marked(viewer_a, 100 - 30, 60));
	vnc_marker_paint(m, viewer_a);
	ck_assert_uint_eq(px(100 - 14, 60), 0xffd000u);
	ck_assert_uint_eq(px(100, 60 - 14), 0xffd000u);
	ck_assert_uint_eq(px(100, 60), before[60 * W + 100]); /* the centre is left alone */
	vnc_marker_unpaint(m);
	ck_assert_mem_eq(fb, before, sizeof(fb));
}
END_TEST

START_TEST(the_viewer_that_clicked_sees_no_ring)
{
	vnc_marker_expect(m, viewer_a, 1, 1000);
	vnc_marker_click(m, 50, 50, 1, 1005);
	ck_assert(!marked(viewer_a, 50 - 14, 50));
	ck_assert(marked(viewer_b, 50 - 14, 50));
	vnc_marker_paint(m, viewer_a);
	ck_assert_mem_eq(fb, before, sizeof(fb));
	vnc_marker_unpaint(m);
	vnc_marker_paint(m, viewer_b);
	ck_assert_uint_eq(px(50 - 14, 50), 0xffd000u);
	vnc_marker_unpaint(m);
	ck_assert_mem_eq(fb, before, sizeof(fb));
	/* The announcement was used up: the next press is someone else's. */
	clear_marks();
	vnc_marker_click(m, 150, 50, 1, 1010);
	ck_assert(marked(viewer_a, 150 - 14, 50));
}
END_TEST

START_TEST(announcements_match_by_button_and_go_stale)
{
	vnc_marker_expect(m, viewer_a, 3, 1000);
	vnc_marker_click(m, 50, 50, 1, 1001); /* button 1: not A's */
	ck_assert(marked(viewer_a, 50 - 14, 50));
	clear_marks();
	vnc_marker_click(m, 150, 50, 3, 1000 + VNC_MARKER_EXPECT_MS + 1); /* too late */
	ck_assert(marked(viewer_a, 150 - 14, 50));
}
END_TEST

START_TEST(rings_at_the_edges_stay_inside_the_screen)
{
	static const int spots[][2] = {{0, 0}, {W - 1, H - 1}, {W - 1, 0}, {0, H - 1}};

	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		vnc_marker_click(m, spots[i][0], spots[i][1], 2, 1000);
		vnc_marker_paint(m, viewer_b);
		vnc_marker_unpaint(m);
		ck_assert_mem_eq(fb, before, sizeof(fb));
	}
}
END_TEST

START_TEST(a_ring_expires_and_its_area_is_sent_again)
{
	ck_assert_int_eq(vnc_marker_timeout_ms(m, 1000), -1);
	vnc_marker_click(m, 100, 60, 1, 1000);
	ck_assert_int_eq(vnc_marker_timeout_ms(m, 1000), VNC_MARKER_MS);
	ck_assert_int_eq(vnc_marker_timeout_ms(m, 1300), VNC_MARKER_MS - 300);
	clear_marks();
	vnc_marker_run(m, 1000 + VNC_MARKER_MS - 1);
	ck_assert(!marked(viewer_a, 100 - 14, 60));
	vnc_marker_run(m, 1000 + VNC_MARKER_MS);
	ck_assert(marked(viewer_a, 100 - 14, 60));
	ck_assert_int_eq(vnc_marker_timeout_ms(m, 1000 + VNC_MARKER_MS), -1);
	vnc_marker_paint(m, viewer_a);
	ck_assert_mem_eq(fb, before, sizeof(fb));
	vnc_marker_unpaint(m);
}
END_TEST

START_TEST(a_fifth_ring_replaces_the_oldest_and_overlaps_restore)
{
	for (int i = 0; i < 4; i++)
		vnc_marker_click(m, 60 + 10 * i, 60, 1, 1000 + (uint64_t)i);
	clear_marks();
	vnc_marker_click(m, 170, 60, 1, 1010);
	ck_assert(marked(viewer_a, 60 - 14, 60)); /* the first ring's area, sent again */
	vnc_marker_paint(m, viewer_a);
	ck_assert_uint_eq(px(60 - 14, 60), before[60 * W + 60 - 14]);
	ck_assert_uint_eq(px(170 - 14, 60), 0xffd000u);
	vnc_marker_unpaint(m);
	ck_assert_mem_eq(fb, before, sizeof(fb));
}
END_TEST

START_TEST(a_viewer_gone_is_forgotten)
{
	vnc_marker_expect(m, viewer_a, 1, 1000);
	vnc_marker_client_gone(m, viewer_a);
	vnc_marker_click(m, 50, 50, 1, 1001);
	ck_assert(marked(viewer_a, 50 - 14, 50)); /* nobody's press any more */
}
END_TEST

Suite *suite_marker(void)
{
	Suite *s = suite_create("marker");
	TCase *tc = tcase_create("rings");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_click_rings_for_every_viewer_and_unpaints_exactly);
	tcase_add_test(tc, the_viewer_that_clicked_sees_no_ring);
	tcase_add_test(tc, announcements_match_by_button_and_go_stale);
	tcase_add_test(tc, rings_at_the_edges_stay_inside_the_screen);
	tcase_add_test(tc, a_ring_expires_and_its_area_is_sent_again);
	tcase_add_test(tc, a_fifth_ring_replaces_the_oldest_and_overlaps_restore);
	tcase_add_test(tc, a_viewer_gone_is_forgotten);
	suite_add_tcase(s, tc);
	return s;
}
