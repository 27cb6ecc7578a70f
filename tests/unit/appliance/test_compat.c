/* Unit tests for libcloche-compat.so (appliance/compat/xattr.c), the
 * library as built, loaded with dlopen so the test process keeps its own
 * libc.  The gVisor answers it smooths over are produced here with a seccomp
 * filter that makes the kernel answer EBADF or EACCES for one system call,
 * in a child process; everything else must pass through unchanged. */
#include "tests/unit/unit.h"

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef COMPAT_SO
#define COMPAT_SO "build/lib/libcloche-compat.so"
#endif

typedef ssize_t (*get_fn)(const char *, const char *, void *, size_t);
typedef ssize_t (*list_fn)(const char *, char *, size_t);
typedef int (*set_fn)(const char *, const char *, const void *, size_t, int);

static void *lib;
static char dir[64], file[96], link_path[96];

static void *sym(const char *name)
{
	void *p;

	if (!lib) {
		lib = dlopen(COMPAT_SO, RTLD_NOW | RTLD_LOCAL);
		ck_assert_msg(lib != NULL, "dlopen %s: %s", COMPAT_SO, dlerror());
	}
	p = dlsym(lib, name);
	ck_assert_msg(p != NULL, "%s not exported", name);
	return p;
}

static void setup(void)
{
	int fd;

	snprintf(dir, sizeof(dir), "%s/compat.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/f", dir);
	snprintf(link_path, sizeof(link_path), "%s/l", dir);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(symlink("f", link_path), 0);
}

static void teardown(void)
{
	unlink(link_path);
	unlink(file);
	rmdir(dir);
}

/* Makes system call nr fail with err for the rest of this process. */
static void refuse(long nr, int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == -1)
		_exit(99);
}

/* Runs fn in a child with nr refused by err; fn's return is the child's
 * exit code, 0 meaning "as expected". */
static void in_child(long nr, int err, int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (nr)
			refuse(nr, err);
		_exit(fn());
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st), "child died");
	ck_assert_msg(WEXITSTATUS(st) == 0, "child check %d failed", WEXITSTATUS(st));
}

static int lget_ebadf_is_nodata(void)
{
	get_fn lget = (get_fn)sym("lgetxattr");
	char v[64];

	if (lget(link_path, "security.selinux", v, sizeof(v)) != -1)
		return 1;
	return errno == ENODATA ? 0 : 2;
}

START_TEST(symlink_ebadf_reads_as_no_attribute)
{
	in_child(SYS_lgetxattr, EBADF, lget_ebadf_is_nodata);
}
END_TEST

static int llist_ebadf_is_empty(void)
{
	list_fn llist = (list_fn)sym("llistxattr");
	char v[64];

	return llist(link_path, v, sizeof(v)) == 0 ? 0 : 1;
}

static int lset_ebadf_is_enotsup(void)
{
	set_fn lset = (set_fn)sym("lsetxattr");

	if (lset(link_path, "user.x", "1", 1, 0) != -1)
		return 1;
	return errno == ENOTSUP ? 0 : 2;
}

START_TEST(symlink_ebadf_lists_nothing_and_refuses_sets)
{
	in_child(SYS_llistxattr, EBADF, llist_ebadf_is_empty);
	in_child(SYS_lsetxattr, EBADF, lset_ebadf_is_enotsup);
}
END_TEST

static int security_eacces_is_nodata(void)
{
	get_fn get = (get_fn)sym("getxattr");
	char v[64];

	if (get(file, "security.selinux", v, sizeof(v)) != -1 || errno != ENODATA)
		return 1;
	/* Outside security.*, EACCES is a real answer. */
	if (get(file, "user.x", v, sizeof(v)) != -1 || errno != EACCES)
		return 2;
	/* A path that does not resolve keeps its EACCES too. */
	if (get("/nonexistent/x", "security.selinux", v, sizeof(v)) != -1 || errno != EACCES)
		return 3;
	return 0;
}

START_TEST(security_eacces_on_a_reachable_file_reads_as_no_attribute)
{
	in_child(SYS_getxattr, EACCES, security_eacces_is_nodata);
}
END_TEST

static int passes_through(void)
{
	get_fn lget = (get_fn)sym("lgetxattr");
	get_fn get = (get_fn)sym("getxattr");
	char v[64];

	/* No filter: the kernel's own answers come back untouched. */
	if (lget("/nonexistent/x", "user.x", v, sizeof(v)) != -1 || errno != ENOENT)
		return 1;
	if (get(file, "user.cloche-none", v, sizeof(v)) != -1 || (errno != ENODATA && errno != ENOTSUP))
		return 2;
	return 0;
}

/* Under a filter, errors other than the two quirks are not rewritten. */

static int other_errors_kept(void)
{
	get_fn lget = (get_fn)sym("lgetxattr");
	char v[64];

	if (lget(link_path, "security.selinux", v, sizeof(v)) != -1)
		return 1;
	return errno == EIO ? 0 : 2;
}

START_TEST(everything_else_passes_through)
{
	in_child(0, 0, passes_through);
	in_child(SYS_lgetxattr, EIO, other_errors_kept);
}
END_TEST

Suite *suite_compat(void)
{
	Suite *s = suite_create("compat");
	TCase *tc = tcase_create("xattr");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, symlink_ebadf_reads_as_no_attribute);
	tcase_add_test(tc, symlink_ebadf_lists_nothing_and_refuses_sets);
	tcase_add_test(tc, security_eacces_on_a_reachable_file_reads_as_no_attribute);
	tcase_add_test(tc, everything_else_passes_through);
	suite_add_tcase(s, tc);
	return s;
}
