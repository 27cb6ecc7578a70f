/* btrfs subvolume snapshot/delete through the btrfs CLI.  Subvolume roots are
 * recognised without a process: on btrfs every subvolume's top directory has
 * inode number 256. */
#include "node-agent/na_btrfs.h"
#include "node-agent/na_cmd.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#define NA_BTRFS_MAGIC 0x9123683E
#define NA_BTRFS_FIRST_FREE_OBJECTID 256

int na_btrfs_snapshot(const char *src, const char *dst, struct err *e)
{
	char *argv[] = {"btrfs", "-q", "subvolume", "snapshot", (char *)src, (char *)dst, NULL};

	if (na_cmd_check(argv, NULL, NULL, e) == -1)
		return err_wrap(e, "snapshot `%s` to `%s`", src, dst);
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
