/* btrfs subvolume snapshot/delete through the btrfs CLI, and the pool's
 * loop image (mkfs.btrfs, mount).  Subvolume roots are
 * recognised without a process: on btrfs every subvolume's top directory has
 * inode number 256. */
#include "node-agent/na_btrfs.h"
#include "node-agent/na_cmd.h"

#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/btrfs.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define NA_BTRFS_MAGIC 0x9123683E
#define NA_BTRFS_FIRST_FREE_OBJECTID 256

int na_btrfs_snapshot(const char *src, const char *dst, struct err *e)
{
	char *argv[] = {"btrfs", "-q", "subvolume", "snapshot", (char *)src, (char *)dst, NULL};

	if (na_cmd_check(argv, NULL, NULL, e) == -1)
		return err_wrap(e, "snapshot `%s` to `%s`", src, dst);
	return 0;
}

int na_btrfs_snapshot_ro(const char *src, const char *dst, struct err *e)
{
	char *argv[] = {"btrfs", "-q", "subvolume", "snapshot", "-r", (char *)src, (char *)dst, NULL};

	if (na_cmd_check(argv, NULL, NULL, e) == -1)
		return err_wrap(e, "read-only snapshot `%s` to `%s`", src, dst);
	return 0;
}

int na_btrfs_send_zst(const char *subvol, const char *parent, const char *out, struct err *e)
{
	/* One pipeline, its status the first failure (pipefail); the paths
	 * are arguments, never part of the script. */
	char *argv[] = {"bash", "-o", "pipefail", "-c",
			parent ? "btrfs -q send -p \"$1\" \"$2\" | zstd -q -3 -T2 -f -o \"$3\""
			       : "btrfs -q send \"$2\" | zstd -q -3 -T2 -f -o \"$3\"",
			"na-btrfs-send", (char *)(parent ? parent : "-"), (char *)subvol, (char *)out,
			NULL};

	if (na_cmd_check(argv, NULL, NULL, e) == -1)
		return err_wrap(e, "btrfs send `%s`%s%s", subvol, parent ? " -p " : "",
				parent ? parent : "");
	return 0;
}

int na_btrfs_receive_zst(const char *in, const char *dir, struct err *e)
{
	char *argv[] = {"bash", "-o", "pipefail", "-c",
			"zstd -q -d -c \"$1\" | btrfs -q receive -e \"$2\"", "na-btrfs-receive",
			(char *)in, (char *)dir, NULL};

	if (na_cmd_check(argv, NULL, NULL, e) == -1)
		return err_wrap(e, "btrfs receive into `%s`", dir);
	return 0;
}

int na_btrfs_uuid(const char *path, char *out, size_t len, struct err *e)
{
	char *argv[] = {"btrfs", "subvolume", "show", (char *)path, NULL};
	AUTOBUF struct buf b = BUF_INIT(64 << 10);
	char uuid[64] = "", rcvd[64] = "";
	const char *line;
	int rc = na_cmd_run(argv, NULL, NULL, &b, e);

	if (rc == -1)
		return -1;
	if (rc != 0)
		return err_set(e, 0, "btrfs subvolume show `%s` exited %d", path, rc);
	for (line = buf_str(&b); line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		while (*line == ' ' || *line == '\t')
			line++;
		if (strncmp(line, "UUID:", 5) == 0)
			sscanf(line + 5, " %63s", uuid);
		else if (strncmp(line, "Received UUID:", 14) == 0)
			sscanf(line + 14, " %63s", rcvd);
	}
	/* What a send stream names this subvolume by: its received UUID
	 * when it came from a stream, else its own. */
	snprintf(out, len, "%s", rcvd[0] && strcmp(rcvd, "-") != 0 ? rcvd : uuid);
	if (!out[0])
		return err_set(e, 0, "btrfs subvolume show `%s`: no UUID", path);
	return 0;
}

bool na_btrfs_is_subvolume(const char *path)
{
	struct stat st;
	struct statfs sf;

	if (stat(path, &st) == -1 || !S_ISDIR(st.st_mode) || statfs(path, &sf) == -1)
		return false;
	return sf.f_type == NA_BTRFS_MAGIC && st.st_ino == NA_BTRFS_FIRST_FREE_OBJECTID;
}

int na_btrfs_delete(const char *path, struct err *e)
{
	char *argv[] = {"btrfs", "-q", "subvolume", "delete", (char *)path, NULL};
	struct stat st;

	if (lstat(path, &st) == -1 && errno == ENOENT)
		return 0;
	if (!na_btrfs_is_subvolume(path))
		return err_set(e, 0, "delete `%s`: not a btrfs subvolume", path);
	if (na_cmd_check(argv, NULL, NULL, e) == -1)
		return err_wrap(e, "delete subvolume `%s`", path);
	return 0;
}

/* Send stream layout (btrfs-progs send.h): "btrfs-stream\0", le32 version,
 * then commands: le32 length, le16 command, le32 crc, then attributes as
 * le16 type, le16 length, data.  The first command is SUBVOL (1) with the
 * subvolume's PATH (15); the last is END (21).  `btrfs send A B` writes one
 * such stream per subvolume, one after the other. */
#define STREAM_MAGIC "btrfs-stream"
#define STREAM_HEAD (sizeof(STREAM_MAGIC) + 4)
#define STREAM_CMD_HEAD 10
#define STREAM_CMD_SUBVOL 1
#define STREAM_CMD_SNAPSHOT 2
#define STREAM_CMD_END 21
#define STREAM_ATTR_PATH 15

static unsigned le16(const unsigned char *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static unsigned long le32(const unsigned char *p)
{
	return (unsigned long)p[0] | (unsigned long)p[1] << 8 | (unsigned long)p[2] << 16 |
	       (unsigned long)p[3] << 24;
}

/* The PATH attribute of the stream's first command (SUBVOL), from the
 * stream's first got bytes in buf, into name.  0 or -1. */
static int stream_first_name(const unsigned char *buf, size_t got, char *name, size_t len,
			     struct err *e)
{
	size_t off = STREAM_HEAD, end;

	if (got < off + STREAM_CMD_HEAD || memcmp(buf, STREAM_MAGIC, sizeof(STREAM_MAGIC)) != 0)
		return err_set(e, 0, "not a btrfs send stream");
	end = off + STREAM_CMD_HEAD + le32(buf + off);
	if (le16(buf + off + 4) != STREAM_CMD_SUBVOL || end > got)
		return err_set(e, 0, "it does not start with a (full) subvolume");
	for (off += STREAM_CMD_HEAD; off + 4 <= end;) {
		unsigned type = le16(buf + off), alen = le16(buf + off + 2);

		if (off + 4 + alen > end)
			break;
		if (type == STREAM_ATTR_PATH) {
			if (alen == 0 || alen >= len || memchr(buf + off + 4, '/', alen) ||
			    memchr(buf + off + 4, '\0', alen))
				return err_set(e, 0, "it names a bad subvolume path");
			memcpy(name, buf + off + 4, alen);
			name[alen] = '\0';
			return 0;
		}
		off += 4 + alen;
	}
	return err_set(e, 0, "its subvolume has no name");
}

/* Walks the command heads of the stream (size bytes) from its second
 * command to END: no other subvolume may begin, END must come, and nothing
 * may follow it.  Reads heads only (pread), so a big stream costs one read
 * of 10 bytes per command.  0 or -1. */
static int stream_walk(int fd, off_t size, struct err *e)
{
	unsigned char head[STREAM_CMD_HEAD];
	off_t off = (off_t)STREAM_HEAD;
	bool first = true;

	for (;;) {
		ssize_t r;
		unsigned cmd;

		if (off == size)
			return err_set(e, 0, "it ends without its end marker (cut short?)");
		do
			r = pread(fd, head, sizeof(head), off);
		while (r == -1 && errno == EINTR);
		if (r == -1)
			return err_set(e, errno, "read");
		if (r != (ssize_t)sizeof(head))
			return err_set(e, 0, "it is cut short inside a command");
		cmd = le16(head + 4);
		if (!first && (cmd == STREAM_CMD_SUBVOL || cmd == STREAM_CMD_SNAPSHOT))
			return err_set(e, 0, "it holds more than one subvolume (a template stream "
				       "holds exactly one)");
		first = false;
		off += (off_t)STREAM_CMD_HEAD + (off_t)le32(head);
		if (off > size)
			return err_set(e, 0, "it is cut short inside a command");
		if (cmd == STREAM_CMD_END) {
			if (off != size)
				return err_set(e, 0, "it goes on after its end marker (another stream "
					       "appended?); a template stream holds exactly one "
					       "subvolume");
			return 0;
		}
	}
}

int na_btrfs_stream_check(int fd, char *name, size_t len, struct err *e)
{
	unsigned char buf[4096];
	struct stat st;
	ssize_t got;

	if (fstat(fd, &st) == -1)
		return err_set(e, errno, "stat");
	do
		got = pread(fd, buf, sizeof(buf), 0);
	while (got == -1 && errno == EINTR);
	if (got == -1)
		return err_set(e, errno, "read");
	if (stream_first_name(buf, (size_t)got, name, len, e) == -1 ||
	    stream_walk(fd, st.st_size, e) == -1)
		return -1;
	return 0;
}

static int stdin_hook(void *ud)
{
	int fd = *(int *)ud;

	return dup2(fd, 0) == -1 || lseek(0, 0, SEEK_SET) == -1 ? -1 : 0;
}

int na_btrfs_receive(int fd, const char *dir, struct err *e)
{
	/* -e: stop at the stream's end marker, so nothing after it is ever
	 * received (na_btrfs_stream_check refuses such streams already). */
	char *argv[] = {"btrfs", "-q", "receive", "-e", (char *)dir, NULL};

	if (na_cmd_check(argv, stdin_hook, &fd, e) == -1)
		return err_wrap(e, "receive into `%s`", dir);
	return 0;
}

bool na_btrfs_is_readonly(const char *path)
{
	AUTOCLOSE int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t flags = 0;

	return fd != -1 && na_btrfs_is_subvolume(path) &&
	       ioctl(fd, BTRFS_IOC_SUBVOL_GETFLAGS, &flags) == 0 && (flags & BTRFS_SUBVOL_RDONLY);
}

bool na_btrfs_is_btrfs(const char *path)
{
	struct stat st;
	struct statfs sf;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && statfs(path, &sf) == 0 &&
	       sf.f_type == NA_BTRFS_MAGIC;
}

static bool dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	bool empty = true;

	if (!d)
		return errno == ENOENT;
	while (empty && (de = readdir(d)) != NULL)
		empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
	closedir(d);
	return empty;
}

/* True when path is the root of a mount (its device differs from its parent's). */
static bool is_mount_point(const char *path)
{
	char parent[4200];
	struct stat a, b;

	snprintf(parent, sizeof(parent), "%s/..", path);
	return stat(path, &a) == 0 && stat(parent, &b) == 0 &&
	       (a.st_dev != b.st_dev || a.st_ino == b.st_ino);
}

/* The mount half of na_btrfs_pool_ensure, under the lock. */
static int pool_mount_locked(const char *dir, const char *img, long long size, struct err *e)
{
	char tmp[4200], sz[32], opts[] = "loop,noatime";
	struct stat st;

	if (na_btrfs_is_btrfs(dir))
		return 0; /* another process mounted it meanwhile */
	if (is_mount_point(dir))
		return err_set(e, 0, "pool `%s` is a mount point of another filesystem, not btrfs",
			       dir);
	if (!dir_empty(dir))
		return err_set(e, 0, "pool `%s` is not on btrfs and not empty: mounting `%s` "
			       "there would hide its contents", dir, img);
	if (stat(img, &st) == -1) {
		char *mkfs[] = {"mkfs.btrfs", "-q", "-L", "cloche", tmp, NULL};
		AUTOCLOSE int fd = -1;

		/* Format under a temporary name: a crash must not leave an image
		 * that looks ready. */
		snprintf(tmp, sizeof(tmp), "%s.tmp-%d", img, (int)getpid());
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd == -1 || ftruncate(fd, size) == -1) {
			err_set(e, errno, "create pool image `%s`", tmp);
			unlink(tmp);
			return -1;
		}
		if (na_cmd_check(mkfs, NULL, NULL, e) == -1 || rename(tmp, img) == -1) {
			if (!e->msg[0])
				err_set(e, errno, "rename `%s`", tmp);
			unlink(tmp);
			return err_wrap(e, "format pool image `%s`", img);
		}
		snprintf(sz, sizeof(sz), "%lld", size);
		log_info("pool image created", "{s:s, s:s}", "image", img, "bytes", sz);
	}
	{
		char *mnt[] = {"mount", "-o", opts, (char *)img, (char *)dir, NULL};
		if (na_cmd_check(mnt, NULL, NULL, e) == -1)
			return err_wrap(e, "mount pool image `%s` on `%s`", img, dir);
	}
	if (!na_btrfs_is_btrfs(dir))
		return err_set(e, 0, "pool `%s` is still not btrfs after mounting `%s`", dir, img);
	log_info("pool mounted", "{s:s, s:s}", "pool", dir, "image", img);
	return 0;
}

int na_btrfs_pool_ensure(const char *dir, const char *img, long long size, struct err *e)
{
	static const struct {
		const char *name;
		mode_t mode;
	} subdirs[] = {{"templates", 0755}, {"sandboxes", 0711}, {"checkpoints", 0700}};
	char path[4200];

	if (!na_btrfs_is_btrfs(dir)) {
		char lock[4200];
		AUTOCLOSE int fd = -1;
		int rc;

		if (util_mkdir_parents(dir, 0755) == -1 ||
		    (mkdir(dir, 0755) == -1 && errno != EEXIST))
			return err_set(e, errno, "mkdir `%s`", dir);
		if (util_mkdir_parents(img, 0755) == -1)
			return err_set(e, errno, "mkdir the directory of `%s`", img);
		snprintf(lock, sizeof(lock), "%s.lock", img);
		fd = open(lock, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd == -1)
			return err_set(e, errno, "open `%s`", lock);
		if (flock(fd, LOCK_EX) == -1)
			return err_set(e, errno, "lock `%s`", lock);
		rc = pool_mount_locked(dir, img, size, e);
		flock(fd, LOCK_UN);
		if (rc == -1)
			return -1;
	}
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, subdirs[i].name);
		if ((mkdir(path, subdirs[i].mode) == -1 && errno != EEXIST) ||
		    chmod(path, subdirs[i].mode) == -1)
			return err_set(e, errno, "mkdir `%s`", path);
	}
	return 0;
}
