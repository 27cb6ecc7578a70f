/* libcloche-compat.so: preloaded in every sandbox (/etc/ld.so.preload) to
 * smooth over two ways gVisor (runsc 0.0~20240729) answers extended-
 * attribute calls on its gofer-backed rootfs differently from Linux, which
 * make everyday tools print errors for files that are fine:
 *
 *   - on a symlink, getxattr/listxattr/setxattr answer EBADF (the sentry
 *     works on an O_PATH host fd, which the host refuses for xattr calls).
 *     A path-based call involves no descriptor, so EBADF can only be that
 *     quirk; `ls -l` printed "Bad file descriptor" for /bin, /lib and every
 *     /etc/alternatives link, `cp -a` of a symlink failed.
 *   - gVisor checks read permission on the file itself before reading any
 *     attribute; Linux does not for the security.* namespace, so `ls -la /`
 *     as a user printed "Permission denied" for /root.
 *
 * Only the path-based calls are wrapped, and only those two answers are
 * changed: to what Linux says of a file without the attribute (ENODATA, an
 * empty list, ENOTSUP for a set).  Everything else passes through unchanged,
 * as a raw system call, so no other libc behaviour is touched.  docs/sandbox.md
 * tells how this was found and how to see it. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#define CLOCHE_EXPORT __attribute__((visibility("default")))

/* A get refused with EACCES although the path resolves: gVisor's own
 * permission check, which Linux skips for security.* (read by ls for the
 * SELinux label). */
static int security_eacces(const char *path, const char *name, int follow)
{
	struct stat st;

	if (errno != EACCES || !name || strncmp(name, "security.", 9) != 0)
		return 0;
	return (follow ? stat(path, &st) : lstat(path, &st)) == 0;
}

static ssize_t get(long nr, const char *path, const char *name, void *value, size_t size, int follow)
{
	long r = syscall(nr, path, name, value, size);
	int saved = errno;

	if (r == -1 && (saved == EBADF || security_eacces(path, name, follow))) {
		errno = ENODATA;
		return -1;
	}
	errno = saved;
	return r;
}

static ssize_t list(long nr, const char *path, char *out, size_t size)
{
	long r = syscall(nr, path, out, size);

	if (r == -1 && errno == EBADF)
		return 0; /* no attributes */
	return r;
}

static int set(long nr, const char *path, const char *name, const void *value, size_t size, int flags)
{
	long r = syscall(nr, path, name, value, size, flags);

	if (r == -1 && errno == EBADF)
		errno = ENOTSUP;
	return (int)r;
}

CLOCHE_EXPORT ssize_t getxattr(const char *path, const char *name, void *value, size_t size)
{
	return get(SYS_getxattr, path, name, value, size, 1);
}

CLOCHE_EXPORT ssize_t lgetxattr(const char *path, const char *name, void *value, size_t size)
{
	return get(SYS_lgetxattr, path, name, value, size, 0);
}

CLOCHE_EXPORT ssize_t listxattr(const char *path, char *list_out, size_t size)
{
	return list(SYS_listxattr, path, list_out, size);
}

CLOCHE_EXPORT ssize_t llistxattr(const char *path, char *list_out, size_t size)
{
	return list(SYS_llistxattr, path, list_out, size);
}

CLOCHE_EXPORT int setxattr(const char *path, const char *name, const void *value, size_t size, int flags)
{
	return set(SYS_setxattr, path, name, value, size, flags);
}

CLOCHE_EXPORT int lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags)
{
	return set(SYS_lsetxattr, path, name, value, size, flags);
}
