/* The whole part of a fragmented MP4 that its writer left unfinished.
 *
 * ffmpeg writes a recording as `ftyp`, `moov` (no samples), then one
 * `moof` + `mdat` pair per fragment (docs/recording.md).  When it dies in
 * the middle of a fragment (a full disk, its X connection killed) the file
 * ends in part of one: players stop there with errors, and on a full disk
 * those bytes are also the room the recording's record needs.  Cutting the
 * file after its last whole `mdat` leaves every whole fragment, and nothing
 * else. */
#ifndef CLOCHE_REC_MP4_H
#define CLOCHE_REC_MP4_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

/* Where the whole part ends, reading the top-level boxes of a file of size
 * bytes through read_at (which reads n bytes at off into buf, returning
 * how many it read): size when every box is whole and the last is not a
 * fragment's head (`moof`) without its data; else after the last
 * whole `mdat` that follows a `moov`, or after the `moov` when no fragment
 * is whole; 0 when there is no `moov` (nothing worth keeping) or the boxes
 * make no sense. */
uint64_t mp4_whole_end(uint64_t size, size_t (*read_at)(void *ctx, uint64_t off, void *buf, size_t n),
		       void *ctx);

/* Cuts the file at path after its whole part (mp4_whole_end), when that is
 * before its end and not 0.  *cut: the bytes removed.  0, or -1 with e set. */
int mp4_trim(const char *path, uint64_t *cut, struct err *e);

#endif
