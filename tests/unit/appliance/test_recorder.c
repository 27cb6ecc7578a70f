/* cloche-rec's recorder: the ffmpeg command line, recording ids, and that a
 * start whose encoder fails leaves neither a process nor a file (with
 * /bin/false and a missing program standing in for ffmpeg). */
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

Suite *suite_recorder(void)
{
	Suite *s = suite_create("recorder");
	TCase *tc = tcase_create("recorder");

	tcase_add_test(tc, ffmpeg_command_line);
	tcase_add_test(tc, recording_ids);
	tcase_add_test(tc, failed_start_leaves_nothing);
	suite_add_tcase(s, tc);
	return s;
}
