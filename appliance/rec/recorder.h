/* The screen recorder of cloche-rec: one ffmpeg child at a time, grabbing
 * the X display into an H.264 MP4 in the recordings directory, with a
 * sidecar JSON per recording (what the node lists) and a `current` file
 * while one runs (what the MCP servers' trace reads for its screenshot
 * reference).  Everything here runs on cloche-rec's one thread. */
#ifndef CLOCHE_REC_RECORDER_H
#define CLOCHE_REC_RECORDER_H

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rec_opts {
	const char *dir;     /* recordings directory (root-owned, world-readable) */
	const char *ffmpeg;  /* the encoder, e.g. /usr/bin/ffmpeg */
	const char *display; /* ":0"; grabbed whole, at its size when a segment starts */
	int fps;             /* capture rate; idle frames are dropped (mpdecimate) */
	int crf;             /* libx264 quality */
	long long start_timeout_ms;
	long long stop_timeout_ms;
};

/* The MP4 is fragmented: a keyframe and a fragment at least every
 * REC_FRAGMENT_S, so a file whose ffmpeg died plays up to its last one. */
#define REC_FRAGMENT_S 2
/* When ffmpeg dies under a recording that ran at least REC_SEGMENT_MIN_MS
 * (a resize, a killed X connection), the recording goes on in a new
 * segment: a recording of its own whose sidecar says "continues": <the
 * one before>, up to REC_SEGMENTS_MAX segments a chain. */
#define REC_SEGMENT_MIN_MS 1000
#define REC_SEGMENTS_MAX 32

/* The longest argv rec_ffmpeg_argv() builds (plus its NULL). */
#define REC_ARGV_MAX 48

/* Fills argv (REC_ARGV_MAX entries) with the ffmpeg command line that
 * records o's display into out; the strings point into o, out and
 * scratch (which must outlive argv).  Pure: unit-tested. */
void rec_ffmpeg_argv(const struct rec_opts *o, const char *out, char scratch[4][64],
		     const char *argv[REC_ARGV_MAX]);

struct recorder;

/* A recorder over o (which must outlive it).  Marks recordings left in
 * state "recording" by an earlier run as "interrupted".  NULL with e set. */
struct recorder *recorder_new(const struct rec_opts *o, struct err *e);
void recorder_free(struct recorder *r);

/* Starts recording as id.  Returns once ffmpeg has written the file's
 * head, or -1 with e set (409 when one runs, 400 for a bad id, 500 when
 * ffmpeg failed: its process and file are gone then). */
int recorder_start(struct recorder *r, const char *id, struct err *e);

/* Stops the running recording (id NULL, its id, or the id its chain
 * started with) with reason ("api",
 * "hibernate", "shutdown"): ffmpeg finishes the MP4 on SIGINT.  Returns 0,
 * or -1 with e set (404 when none or another runs). */
int recorder_stop(struct recorder *r, const char *id, const char *reason, struct err *e);

/* Reaps ffmpeg if it died on its own: the segment is then "failed" (and
 * plays up to its last fragment), and the recording goes on in a new one
 * (REC_SEGMENT_MIN_MS). */
void recorder_reap(struct recorder *r);

/* {"recording": <sidecar of the running one> | null}: a new reference. */
json_t *recorder_status(struct recorder *r);

#endif
