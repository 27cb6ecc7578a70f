/* cloche-rec's recorder: the ffmpeg command line, recording ids, that a
 * start whose encoder fails leaves neither a process nor a file (with
 * /bin/false and a missing program standing in for ffmpeg), and where an
 * unfinished fragmented MP4 is cut (appliance/rec/mp4.c). */
#include "appliance/rec/mp4.h"
#include "appliance/rec/recorder.h"
#include "common/recid.h"
#include "tests/unit/unit.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(ffmpeg_command_line)
{
	struct rec_opts o = {.dir = "/d", .ffmpeg = "/usr/bin/ffmpeg", .display = ":0",
			     .fps = 15, .crf = 30};
	char scratch[4][64], line[1024] = "";
	const char *argv[REC_ARGV_MAX];
	size_t n;

	rec_ffmpeg_argv(&o, "/d/rec-1.mp4", scratch, argv);
	for (n = 0; argv[n]; n++) {
		strcat(line, argv[n]);
		strcat(line, " ");
	}
	ck_assert_int_lt(n, REC_ARGV_MAX);
	ck_assert_str_eq(argv[0], "/usr/bin/ffmpeg");
	ck_assert_str_eq(argv[n - 1], "/d/rec-1.mp4");
	ck_assert_ptr_nonnull(strstr(line, "-f x11grab "));
	ck_assert_ptr_nonnull(strstr(line, "-framerate 15 -i :0 ")); /* the screen at its size */
	ck_assert_ptr_nonnull(strstr(line, "-force_key_frames expr:gte(t,n_forced*2) "));
	ck_assert_ptr_nonnull(strstr(line, "-movflags +frag_keyframe+empty_moov+default_base_moof -f mp4 "));
	/* An idle screen: equal frames dropped, but one a second kept, so the
	 * video lasts as long as the recording. */
	ck_assert_ptr_nonnull(strstr(line, "-vf mpdecimate=max=15 -fps_mode vfr "));
	ck_assert_ptr_nonnull(strstr(line, "-c:v libx264 "));
	ck_assert_ptr_nonnull(strstr(line, "-crf 30 -pix_fmt yuv420p "));
	ck_assert_ptr_nonnull(strstr(line, "-nostdin "));
}
END_TEST

START_TEST(recording_ids)
{
	static const struct {
		const char *id;
		bool ok;
	} cases[] = {
		{"rec-0a1b2c3d4e5f", true}, {"rec-a", true}, {"rec-", false}, {"rec", false},
		{"REC-abc", false}, {"rec-AB", false}, {"rec-a/b", false}, {"rec-../x", false},
		{"rec-a.mp4", false}, {"", false},
		{"rec-0123456789012345678901234567890123456789", true},
		{"rec-01234567890123456789012345678901234567890", false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(recid_valid(cases[i].id, strlen(cases[i].id)) == cases[i].ok, "%s", cases[i].id);
}
END_TEST

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

START_TEST(failed_start_leaves_nothing)
{
	static const char *const encoders[] = {"/bin/false", "/nonexistent/ffmpeg"};
	char dir[] = "/tmp/unit-rec-XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (size_t i = 0; i < 2; i++) {
		struct rec_opts o = {.dir = dir, .ffmpeg = encoders[i], .display = ":99",
				     .fps = 5, .crf = 30,
				     .start_timeout_ms = 5000, .stop_timeout_ms = 1000};
		struct err e = ERR_INIT;
		struct recorder *r = recorder_new(&o, &e);
		json_t *st;

		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(recorder_start(r, "bad id", &e), -1);
		ck_assert_int_eq(e.http_status, 400);
		ck_assert_int_eq(recorder_start(r, "rec-1", &e), -1);
		ck_assert_int_eq(e.http_status, 500);
		ck_assert_msg(strstr(e.msg, "ffmpeg exited"), "%s", e.msg);
		ck_assert_uint_eq(entries(dir), 0);
		ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1); /* no child left */
		st = recorder_status(r);
		ck_assert(json_is_null(json_object_get(st, "recording")));
		json_decref(st);
		ck_assert_int_eq(recorder_stop(r, NULL, "api", &e), -1);
		ck_assert_int_eq(e.http_status, 404);
		recorder_free(r);
	}
	rmdir(dir);
}
END_TEST

/* An MP4 made of boxes: "type:len" items, len the box's whole size; a
 * '+' after the type makes a 64-bit size, a '!' claims len but writes only
 * half (an unfinished box). */
struct mp4 {
	unsigned char b[4096];
	size_t n;
};

static void box(struct mp4 *m, const char *type, uint32_t len, bool large, bool cut)
{
	size_t at = m->n, head = large ? 16 : 8, keep = cut ? len / 2 : len;
	uint64_t big = len;

	memset(m->b + at, 0xab, len);
	for (int i = 0; i < 4; i++) {
		m->b[at + i] = large ? (i == 3) : (unsigned char)(len >> (24 - 8 * i));
		m->b[at + 4 + i] = (unsigned char)type[i];
	}
	for (int i = 0; large && i < 8; i++)
		m->b[at + 8 + i] = (unsigned char)(big >> (56 - 8 * i));
	ck_assert_uint_ge(len, head);
	m->n += keep;
}

static size_t mem_read(void *ctx, uint64_t off, void *buf, size_t n)
{
	const struct mp4 *m = ctx;

	if (off >= m->n)
		return 0;
	if (n > m->n - off)
		n = m->n - off;
	memcpy(buf, m->b + off, n);
	return n;
}

START_TEST(an_unfinished_mp4_is_cut_after_its_last_whole_fragment)
{
	struct mp4 m = {.n = 0};

	/* head only: the moov */
	box(&m, "ftyp", 24, false, false);
	box(&m, "moov", 100, false, false);
	ck_assert_uint_eq(mp4_whole_end(m.n, mem_read, &m), 124);
	/* two whole fragments, the third's moof whole and its mdat cut */
	box(&m, "moof", 40, false, false);
	box(&m, "mdat", 200, false, false);
	box(&m, "moof", 40, false, false);
	box(&m, "mdat", 300, true, false); /* a 64-bit size */
	box(&m, "moof", 40, false, false);
	box(&m, "mdat", 400, false, true);
	ck_assert_uint_eq(mp4_whole_end(m.n, mem_read, &m), 124 + 240 + 340);
	/* a file that ends inside a box head */
	m.n = 124 + 240 + 4;
	ck_assert_uint_eq(mp4_whole_end(m.n, mem_read, &m), 124 + 240);
	/* a fragment whose moof is whole but whose mdat never began */
	m.n = 124 + 240 + 40;
	ck_assert_uint_eq(mp4_whole_end(m.n, mem_read, &m), 124 + 240);
	/* a finished file is left whole, with the index ffmpeg writes last */
	m.n = 124 + 240 + 340;
	box(&m, "mfra", 30, false, false);
	ck_assert_uint_eq(mp4_whole_end(m.n, mem_read, &m), m.n);
}
END_TEST

START_TEST(what_is_not_an_mp4_is_left_alone)
{
	struct mp4 m = {.n = 0};

	box(&m, "ftyp", 24, false, false);
	box(&m, "mdat", 50, false, false); /* no moov before it */
	ck_assert_uint_eq(mp4_whole_end(m.n, mem_read, &m), 0);
	m.n = 0;
	box(&m, "moov", 40, false, false);
	memset(m.b + m.n, 0, 3);
	m.b[m.n + 3] = 4; /* a box smaller than its own head */
	memcpy(m.b + m.n + 4, "mdat", 4);
	m.n += 8;
	ck_assert_uint_eq(mp4_whole_end(m.n, mem_read, &m), 0);
	m.b[40] = m.b[41] = m.b[42] = m.b[43] = 0; /* size 0: "to the end", never filled in */
	ck_assert_uint_eq(mp4_whole_end(m.n, mem_read, &m), 40);
	ck_assert_uint_eq(mp4_whole_end(0, mem_read, &m), 0);
}
END_TEST

START_TEST(mp4_trim_cuts_the_file)
{
	char path[] = "/tmp/unit-mp4-XXXXXX";
	int fd = mkstemp(path);
	struct mp4 m = {.n = 0};
	struct err e = ERR_INIT;
	uint64_t cut;

	ck_assert_int_ge(fd, 0);
	box(&m, "ftyp", 24, false, false);
	box(&m, "moov", 100, false, false);
	box(&m, "moof", 40, false, false);
	box(&m, "mdat", 200, false, true);
	ck_assert_int_eq(write(fd, m.b, m.n), (ssize_t)m.n);
	close(fd);
	ck_assert_int_eq(mp4_trim(path, &cut, &e), 0);
	ck_assert_uint_eq(cut, 140);
	ck_assert_int_eq(mp4_trim(path, &cut, &e), 0); /* whole now: nothing to cut */
	ck_assert_uint_eq(cut, 0);
	unlink(path);
	ck_assert_int_eq(mp4_trim(path, &cut, &e), -1);
	ck_assert_msg(strstr(e.msg, path), "%s", e.msg);
}
END_TEST

Suite *suite_recorder(void)
{
	Suite *s = suite_create("recorder");
	TCase *tc = tcase_create("recorder");

	tcase_add_test(tc, ffmpeg_command_line);
	tcase_add_test(tc, recording_ids);
	tcase_add_test(tc, failed_start_leaves_nothing);
	tcase_add_test(tc, an_unfinished_mp4_is_cut_after_its_last_whole_fragment);
	tcase_add_test(tc, what_is_not_an_mp4_is_left_alone);
	tcase_add_test(tc, mp4_trim_cuts_the_file);
	suite_add_tcase(s, tc);
	return s;
}
