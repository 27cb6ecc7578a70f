/* The recorder: ffmpeg's x11grab of the display through mpdecimate (frames
 * equal to the last one kept are dropped, so an idle screen costs the
 * encoder almost nothing and the file almost no bytes) into libx264 with
 * variable frame rate.  ffmpeg finishes the MP4 (its index) on SIGINT, so a
 * stop is a signal and a wait.  The sidecar <id>.json is the recording's
 * record for the node, rewritten whole (temporary file and rename) at start
 * and at the end. */
#include "recorder.h"
#include "mp4.h"

#include "common/json.h"
#include "common/log.h"
#include "common/recid.h"
#include "common/rnd.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FFMPEG_LOG "/run/cloche-rec-ffmpeg.log"

struct recorder {
	const struct rec_opts *o;
	pid_t pid;          /* ffmpeg, or 0 */
	char id[48];
	char chain[48];     /* the id the node started; a continuation keeps it */
	char continues[48]; /* the segment this one continues, or "" */
	int segments;       /* of the chain so far */
	char started[40];
	uint64_t started_ms; /* wall clock, ms since the epoch */
	uint64_t started_mono;
};

void rec_ffmpeg_argv(const struct rec_opts *o, const char *out, char scratch[4][64],
		     const char *argv[REC_ARGV_MAX])
{
	size_t n = 0;

	snprintf(scratch[0], 64, "%d", o->fps);
	/* A keyframe, and with frag_keyframe a finished fragment, at least
	 * every REC_FRAGMENT_S: whatever ends ffmpeg, the file plays up to the
	 * last one. */
	snprintf(scratch[1], 64, "expr:gte(t,n_forced*%d)", REC_FRAGMENT_S);
	/* At least one frame a second even when nothing moves, so the video
	 * lasts as long as the recording did (a dropped tail would shorten it). */
	snprintf(scratch[2], 64, "mpdecimate=max=%d", o->fps);
	snprintf(scratch[3], 64, "%d", o->crf);
	const char *words[] = {
		o->ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error",
		/* no -video_size: the whole screen at its size now */
		"-f", "x11grab", "-draw_mouse", "1", "-framerate", scratch[0], "-i", o->display,
		"-vf", scratch[2], "-fps_mode", "vfr",
		"-c:v", "libx264", "-preset", "veryfast", "-tune", "stillimage,zerolatency",
		"-crf", scratch[3], "-pix_fmt", "yuv420p", "-threads", "1",
		"-force_key_frames", scratch[1],
		"-movflags", "+frag_keyframe+empty_moov+default_base_moof", "-f", "mp4", "-y", out,
	};
	for (size_t i = 0; i < ARRAY_LEN(words) && n < REC_ARGV_MAX - 1; i++)
		argv[n++] = words[i];
	argv[n] = NULL;
}

static void path_of(const struct recorder *r, const char *id, const char *ext, char *out,
		    size_t len)
{
	snprintf(out, len, "%s/%s%s", r->o->dir, id, ext);
}

static json_t *sidecar(const struct recorder *r, const char *state)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:I}", "id", r->id, "state", state, "started",
			      r->started, "started_ms", (json_int_t)r->started_ms);

	if (j && r->continues[0])
		json_object_set_new(j, "continues", json_string(r->continues));
	return j;
}

/* Marks sidecars still "recording" from an earlier run (cloche-rec or the
 * whole sandbox restarted under a recording) as "interrupted": their ffmpeg
 * is gone and their MP4 has no index. */
static void sweep_interrupted(const struct rec_opts *o)
{
	DIR *d = opendir(o->dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4200];
		size_t n = strlen(de->d_name);
		const char *state = NULL;
		struct err e = ERR_INIT;
		AUTOJSON json_t *j = NULL;

		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", o->dir, de->d_name);
		j = cj_load_file(path, 1 << 16, &e);
		if (!j || cj_get_str(j, "state", "", &state, &e) == -1 || strcmp(state, "recording"))
			continue;
		json_object_set_new(j, "state", json_string("interrupted"));
		if (cj_save_file(path, j, 0644, &e) == -1)
			log_warn("cannot mark a recording interrupted", "{s:s}", "error", e.msg);
		else
			log_warn("recording interrupted by a restart", "{s:s}", "file", de->d_name);
	}
	closedir(d);
}

struct recorder *recorder_new(const struct rec_opts *o, struct err *e)
{
	struct recorder *r = calloc(1, sizeof(*r));
	char cur[4200];

	if (!r) {
		err_set(e, ENOMEM, "recorder");
		return NULL;
	}
	r->o = o;
	if (util_mkdir_parents(o->dir, 0755) == -1 || (mkdir(o->dir, 0755) == -1 && errno != EEXIST)) {
		err_set(e, errno, "mkdir `%s`", o->dir);
		free(r);
		return NULL;
	}
	snprintf(cur, sizeof(cur), "%s/current", o->dir);
	unlink(cur);
	sweep_interrupted(o);
	return r;
}

/* Cuts the running segment's MP4 after its last whole fragment. */
static void trim(struct recorder *r)
{
	char path[4200];
	uint64_t cut;
	struct err e = ERR_INIT;

	path_of(r, r->id, ".mp4", path, sizeof(path));
	if (mp4_trim(path, &cut, &e) == -1)
		log_warn("cannot cut a recording to its whole fragments", "{s:s, s:s}", "id", r->id,
			 "error", e.msg);
	else if (cut)
		log_info("a recording's unfinished fragment was cut", "{s:s, s:I}", "id", r->id,
			 "bytes", (json_int_t)cut);
}

/* Writes a recording's record whole; on a full disk, over the record it
 * replaces (whose blocks are already there), so that it still says how the
 * recording ended. */
static int save_record(const char *path, const json_t *j, struct err *e)
{
	AUTOFREE char *text = NULL;
	AUTOCLOSE int fd = -1;

	if (cj_save_file(path, j, 0644, e) == 0)
		return 0;
	if (e->code != ENOSPC)
		return -1;
	text = cj_dump(j);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (!text || fd == -1 || pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text) ||
	    ftruncate(fd, (off_t)strlen(text)) == -1)
		return -1; /* e still says ENOSPC */
	log_warn("the disk is full: a recording's record was written over its last one",
		 "{s:s}", "path", path);
	return 0;
}

/* Ends the bookkeeping of the running recording: its sidecar says state,
 * `current` goes. */
static void finish(struct recorder *r, const char *state, const char *reason)
{
	char path[4200];
	struct stat st;
	struct err e = ERR_INIT;
	AUTOJSON json_t *j = sidecar(r, state);
	char stopped[40];

	util_rfc3339(stopped, sizeof(stopped));
	path_of(r, r->id, ".mp4", path, sizeof(path));
	json_object_set_new(j, "stopped", json_string(stopped));
	json_object_set_new(j, "duration_ms", json_integer((json_int_t)(util_now_ms() - r->started_mono)));
	json_object_set_new(j, "bytes", json_integer(stat(path, &st) == 0 ? (json_int_t)st.st_size : 0));
	json_object_set_new(j, "reason", json_string(reason));
	path_of(r, r->id, ".json", path, sizeof(path));
	if (save_record(path, j, &e) == -1)
		log_error("cannot write a recording's record", "{s:s, s:s}", "id", r->id, "error", e.msg);
	snprintf(path, sizeof(path), "%s/current", r->o->dir);
	unlink(path);
	log_info("recording ended", "{s:s, s:s, s:s, s:I}", "id", r->id, "state", state, "reason",
		 reason, "duration_ms", (json_int_t)(util_now_ms() - r->started_mono));
	r->pid = 0;
	r->id[0] = '\0';
}

/* Waits up to ms for r->pid to exit.  Returns its wait status, or -1. */
static int wait_exit(struct recorder *r, long long ms)
{
	uint64_t until = util_now_ms() + (uint64_t)ms;
	int st;

	for (;;) {
		pid_t w = waitpid(r->pid, &st, WNOHANG);
		if (w == r->pid)
			return st;
		if (w == -1 && errno != EINTR)
			return -1;
		if (util_now_ms() >= until)
			return -1;
		usleep(20000);
	}
}

/* The last line ffmpeg wrote to its log, for an error message. */
static bool ffmpeg_said(char *out, size_t len)
{
	char text[2048];
	AUTOCLOSE int fd = open(FFMPEG_LOG, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd == -1 ? -1 : read(fd, text, sizeof(text) - 1);
	char *last;

	snprintf(out, len, "no message");
	if (n <= 0)
		return false;
	text[n] = '\0';
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		text[--n] = '\0';
	last = strrchr(text, '\n');
	snprintf(out, len, "%.280s", last ? last + 1 : text);
	return strstr(text, strerror(ENOSPC)) != NULL;
}

static pid_t spawn_ffmpeg(const struct rec_opts *o, const char *out, struct err *e)
{
	char scratch[4][64];
	const char *argv[REC_ARGV_MAX];
	sigset_t all;
	pid_t pid;

	rec_ffmpeg_argv(o, out, scratch, argv);
	pid = fork();
	if (pid == -1)
		return err_set(e, errno, "fork");
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int log = open(FFMPEG_LOG, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		/* cloche-rec takes its signals through a signalfd; ffmpeg must
		 * get SIGINT the ordinary way to finish the file. */
		sigfillset(&all);
		sigprocmask(SIG_UNBLOCK, &all, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (null == -1 || dup2(null, 0) == -1 || dup2(null, 1) == -1 ||
		    dup2(log == -1 ? null : log, 2) == -1)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

static int start_segment(struct recorder *r, const char *id, struct err *e);

int recorder_start(struct recorder *r, const char *id, struct err *e)
{
	if (!recid_valid(id, strlen(id)))
		return err_http(e, 400, "`%.60s` is not a recording id (rec-[a-z0-9-]+)", id);
	recorder_reap(r);
	if (r->pid)
		return err_http(e, 409, "recording `%s` is running; stop it first", r->id);
	r->continues[0] = '\0';
	r->segments = 1;
	if (start_segment(r, id, e) == -1)
		return -1;
	snprintf(r->chain, sizeof(r->chain), "%s", id);
	return 0;
}

static int start_segment(struct recorder *r, const char *id, struct err *e)
{
	char mp4[4200], side[4200], cur[4200], said[300];
	uint64_t until;
	struct stat st;
	AUTOJSON json_t *j = NULL;
	AUTOJSON json_t *c = NULL;

	path_of(r, id, ".mp4", mp4, sizeof(mp4));
	path_of(r, id, ".json", side, sizeof(side));
	if (stat(side, &st) == 0 || stat(mp4, &st) == 0)
		return err_http(e, 409, "recording `%s` exists", id);
	snprintf(r->id, sizeof(r->id), "%s", id);
	util_rfc3339(r->started, sizeof(r->started));
	r->started_ms = (uint64_t)util_wall_ms();
	r->started_mono = util_now_ms();
	r->pid = spawn_ffmpeg(r->o, mp4, e);
	if (r->pid == -1) {
		r->pid = 0;
		r->id[0] = '\0';
		return err_wrap(e, "start recording `%s`", id);
	}
	/* ffmpeg writes the file's head once the first frame went through its
	 * filters and encoder: then the grab works. */
	until = util_now_ms() + (uint64_t)r->o->start_timeout_ms;
	for (;;) {
		int ws;
		pid_t w = waitpid(r->pid, &ws, WNOHANG);

		if (w == r->pid) {
			ffmpeg_said(said, sizeof(said));
			r->pid = 0;
			r->id[0] = '\0';
			unlink(mp4);
			log_error("ffmpeg failed to start", "{s:s, s:s}", "id", id, "ffmpeg", said);
			return err_http(e, 500, "start recording `%s`: ffmpeg exited: %s", id, said);
		}
		if (stat(mp4, &st) == 0 && st.st_size > 0)
			break;
		if (util_now_ms() >= until) {
			kill(r->pid, SIGKILL);
			wait_exit(r, 5000);
			r->pid = 0;
			r->id[0] = '\0';
			unlink(mp4);
			return err_http(e, 504, "start recording `%s`: ffmpeg wrote nothing in %lld ms", id,
					r->o->start_timeout_ms);
		}
		usleep(20000);
	}
	j = sidecar(r, "recording");
	c = json_pack("{s:s, s:I}", "id", r->id, "started_ms", (json_int_t)r->started_ms);
	snprintf(cur, sizeof(cur), "%s/current", r->o->dir);
	if (!j || !c || cj_save_file(side, j, 0644, e) == -1 || cj_save_file(cur, c, 0644, e) == -1) {
		kill(r->pid, SIGKILL);
		wait_exit(r, 5000);
		r->pid = 0;
		r->id[0] = '\0';
		unlink(mp4);
		unlink(side);
		unlink(cur);
		return err_wrap(e, "start recording `%s`", id);
	}
	log_info("recording started", "{s:s, s:i, s:I}", "id", r->id, "pid", (int)r->pid,
		 "start_ms", (json_int_t)(util_now_ms() - r->started_mono));
	return 0;
}

int recorder_stop(struct recorder *r, const char *id, const char *reason, struct err *e)
{
	int st;

	recorder_reap(r);
	if (!r->pid)
		return err_http(e, 404, "no recording is running");
	/* The node knows the chain by the id it started. */
	if (id && strcmp(id, r->id) != 0 && strcmp(id, r->chain) != 0)
		return err_http(e, 404, "recording `%.60s` is not the running one (`%s`)", id, r->id);
	kill(r->pid, SIGINT);
	st = wait_exit(r, r->o->stop_timeout_ms);
	if (st == -1) {
		kill(r->pid, SIGKILL);
		wait_exit(r, 5000);
		log_error("ffmpeg did not finish in time", "{s:s}", "id", r->id);
		finish(r, "failed", reason);
		return err_http(e, 500, "ffmpeg did not finish the recording in %lld ms",
				r->o->stop_timeout_ms);
	}
	/* ffmpeg leaves with 255 after it handled SIGINT and wrote the index. */
	if (!(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 255))) {
		char said[300];
		ffmpeg_said(said, sizeof(said));
		log_error("ffmpeg failed at stop", "{s:s, s:i, s:s}", "id", r->id, "status", st,
			  "ffmpeg", said);
		finish(r, "failed", reason);
		return err_http(e, 500, "ffmpeg failed finishing the recording: %s", said);
	}
	finish(r, "done", reason);
	return 0;
}

void recorder_reap(struct recorder *r)
{
	int st;

	if (r->pid && waitpid(r->pid, &st, WNOHANG) == r->pid) {
		char said[300], prev[48], next[48];
		uint64_t ran = util_now_ms() - r->started_mono;
		struct err e = ERR_INIT;

		bool full = ffmpeg_said(said, sizeof(said));

		log_error("ffmpeg died while recording", "{s:s, s:i, s:s}", "id", r->id, "status", st,
			  "ffmpeg", said);
		snprintf(prev, sizeof(prev), "%s", r->id);
		/* Its fragments so far play (rec_ffmpeg_argv): the segment ends
		 * "failed" but whole up to its last fragment.  The fragment it
		 * was writing goes (on a full disk, the room for its record). */
		trim(r);
		finish(r, "failed", full ? "disk full" : "ffmpeg died");
		/* The screen was resized, the grab's X connection killed, the
		 * display restarted: the recording goes on in a new segment at
		 * the screen's new size.  Not on a full disk (the cut fragment's
		 * room would only go to the next one), not after a segment that
		 * ended at once (a display that is gone), nor forever. */
		if (full || ran < REC_SEGMENT_MIN_MS || r->segments >= REC_SEGMENTS_MAX)
			return;
		if (rnd_hex("rec-", 8, next, sizeof(next), &e) == -1)
			return;
		snprintf(r->continues, sizeof(r->continues), "%s", prev);
		r->segments++;
		if (start_segment(r, next, &e) == -1) {
			log_error("the recording could not go on in a new segment", "{s:s, s:s}", "id",
				  prev, "error", e.msg);
			return;
		}
		log_info("recording goes on in a new segment", "{s:s, s:s, s:s, s:i}", "id", next,
			 "continues", prev, "chain", r->chain, "segment", r->segments);
	}
}

json_t *recorder_status(struct recorder *r)
{
	recorder_reap(r);
	return json_pack("{s:o}", "recording", r->pid ? sidecar(r, "recording") : json_null());
}

void recorder_free(struct recorder *r)
{
	free(r);
}
