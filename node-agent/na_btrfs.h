/* btrfs subvolumes of the pool: the only file that runs btrfs.
 * Uses the btrfs CLI (btrfs-progs); every function is thread-safe. */
#ifndef NA_BTRFS_H
#define NA_BTRFS_H

#include "common/err.h"

#include <stdbool.h>

/* Makes dst a writable snapshot of subvolume src.  0 or -1 with e set. */
int na_btrfs_snapshot(const char *src, const char *dst, struct err *e);

/* Makes dst a read-only snapshot of subvolume src (a checkpoint's rootfs:
 * what `btrfs send` can stream, what nothing can change).  0 or -1. */
int na_btrfs_snapshot_ro(const char *src, const char *dst, struct err *e);

/* Deletes subvolume path; a path that does not exist is success. */
int na_btrfs_delete(const char *path, struct err *e);

/* `btrfs send [-p parent] subvol | zstd` into the file out: a full stream,
 * or the difference to parent (a read-only subvolume the receiver has, by
 * UUID).  0 or -1. */
int na_btrfs_send_zst(const char *subvol, const char *parent, const char *out, struct err *e);

/* `zstd -d < in | btrfs receive -e dir`: the subvolume the stream names is
 * made in dir, read-only once complete.  0 or -1. */
int na_btrfs_receive_zst(const char *in, const char *dir, struct err *e);

/* The UUID a send stream names subvolume path by (its received UUID when it
 * was received, else its own).  0 or -1. */
int na_btrfs_uuid(const char *path, char *out, size_t len, struct err *e);

/* True when path is the root of a btrfs subvolume (inode 256 on btrfs). */
bool na_btrfs_is_subvolume(const char *path);

/* Checks that the `btrfs send` stream open on fd (read with pread, the
 * offset is left alone) holds exactly one full subvolume: it starts with
 * SUBVOL, no second SUBVOL or SNAPSHOT follows, it ends with END and nothing
 * comes after that (a second stream appended).  Writes the subvolume's name
 * (the first command's path) into name.  Nothing is received.  0, or -1
 * with e saying what is wrong. */
int na_btrfs_stream_check(int fd, char *name, size_t len, struct err *e);

/* Receives the stream open on fd (from its start; it becomes the child's
 * stdin) into directory dir, where it creates the subvolume the stream
 * names; it turns read-only when complete and keeps the sender's UUID as
 * its received UUID (what later incremental streams need).  Stops at the
 * first END (-e).  0 or -1 with e set. */
int na_btrfs_receive(int fd, const char *dir, struct err *e);

/* True when path is a read-only subvolume (finished templates are; one
 * still being received is not). */
bool na_btrfs_is_readonly(const char *path);

/* True when path is a directory on a btrfs filesystem. */
bool na_btrfs_is_btrfs(const char *path);

/* Makes dir usable as the pool: when it is already on btrfs nothing is
 * done; otherwise the sparse loop image img (size bytes) is created and
 * formatted if missing and mounted on dir.  Serialised with other processes
 * (scripts/lib/pool.sh too) by an flock on img.lock.  Refuses a non-empty
 * dir (mounting would hide it) and a dir that is another filesystem's mount
 * point.  Then templates/, sandboxes/ and checkpoints/ exist.  0 or -1. */
int na_btrfs_pool_ensure(const char *dir, const char *img, long long size, struct err *e);

#endif
