/* runsc command lines and the wrapper they run in.  The namespace file and
 * any log file are opened before fork, so the child only makes raw syscalls
 * (the agent is multi-threaded). */
#include "node-agent/na_runsc.h"
#include "node-agent/na_cmd.h"
#include "node-agent/na_netns.h"

#include "common/json.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

struct wrap {
	int nsfd;  /* S-<id>, or -1 for no wrapper */
	int logfd; /* becomes stdout+stderr when >= 0 */
};

static int wrap_hook(void *ud)
{
	struct wrap *w = ud;

	if (w->logfd >= 0 && (dup2(w->logfd, 1) == -1 || dup2(w->logfd, 2) == -1))
		return -1;
	if (w->nsfd < 0)
		return 0;
	if (setns(w->nsfd, CLONE_NEWNET) == -1 || unshare(CLONE_NEWNS) == -1 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount("none", "/proc/sys/net/core", "tmpfs", 0, NULL) == -1)
		return -1;
	return 0;
}

/* The flags every runsc command of ours carries (docs/sandbox.md): the
 * ptrace platform (systrap, 20240729's default, was slower on these VMs) and
 * no rootfs overlay, so a sandbox's writes land in its btrfs subvolume, where
 * snapshots and send streams see them. */
#define NA_RUNSC_FLAGS "--network=sandbox", "--platform=ptrace", "--overlay2=none"

/* Checkpoint images are written uncompressed, through the page cache: a
 * wake from the local disk is then a plain read, often from memory
 * (docs/hibernation.md has the measurements: --direct was no faster here);
 * what goes to S3 is compressed with zstd on the way. */
#define NA_RUNSC_CKPT_FLAGS "--compression=none", "--exclude-committed-zero-pages"

/* Runs `runsc --root ROOT FLAGS ARGS...`, wrapped when S-<id>
 * exists (or always, when need_ns).  out may be NULL.  Returns runsc's exit
 * status or -1. */
static int runsc(const char *root, const char *id, bool need_ns, int logfd, struct buf *out,
		 struct err *e, char *const args[])
{
	char path[128];
	char *argv[20] = {"runsc", "--root", (char *)root, NA_RUNSC_FLAGS};
	size_t n = 6;
	struct wrap w = {-1, logfd};
	int rc;

	for (size_t i = 0; args[i] && n < ARRAY_LEN(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	na_netns_path(id, 'S', path, sizeof(path));
	w.nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (w.nsfd == -1 && (need_ns || errno != ENOENT))
		return err_set(e, errno, "runsc %s %s: open netns `%s`", args[0], id, path);
	rc = na_cmd_run(argv, wrap_hook, &w, out, e);
	if (w.nsfd >= 0)
		close(w.nsfd);
	return rc;
}

/* Runs a runsc command whose output belongs in the sandbox's console log;
 * on a non-zero exit e carries the log's last line. */
static int runsc_logged(const char *root, const char *id, const char *log_path, struct err *e,
			char *const args[])
{
	AUTOCLOSE int logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	char tail[200] = "";
	int rc;

	if (logfd == -1)
		return err_set(e, errno, "open `%s`", log_path);
	rc = runsc(root, id, true, logfd, NULL, e, args);
	if (rc == -1)
		return -1;
	if (rc != 0) {
		AUTOCLOSE int fd = open(log_path, O_RDONLY | O_CLOEXEC);
		off_t end = fd == -1 ? 0 : lseek(fd, 0, SEEK_END);
		ssize_t r;

		if (fd != -1 && end > 0) {
			lseek(fd, end > (off_t)sizeof(tail) - 1 ? end - (off_t)sizeof(tail) + 1 : 0,
			      SEEK_SET);
			r = read(fd, tail, sizeof(tail) - 1);
			tail[r > 0 ? r : 0] = '\0';
			while (r > 0 && (tail[r - 1] == '\n' || tail[r - 1] == '\r'))
				tail[--r] = '\0';
		}
		{
			const char *last = strrchr(tail, '\n');
			return err_set(e, 0, "runsc %s %s exited %d: %s", args[0], id, rc,
				       last ? last + 1 : tail);
		}
	}
	return 0;
}

int na_runsc_run(const char *root, const char *id, const char *bundle, const char *log_path,
		 struct err *e)
{
	char *args[] = {"run", "-detach", "--bundle", (char *)bundle, (char *)id, NULL};

	return runsc_logged(root, id, log_path, e, args);
}

int na_runsc_checkpoint(const char *root, const char *id, const char *image_dir,
			const char *log_path, struct err *e)
{
	char *args[] = {"checkpoint", "--image-path", (char *)image_dir, NA_RUNSC_CKPT_FLAGS,
			(char *)id, NULL};

	return runsc_logged(root, id, log_path, e, args);
}

int na_runsc_restore(const char *root, const char *id, const char *bundle, const char *image_dir,
		     const char *log_path, struct err *e)
{
	char *args[] = {"restore", "-detach", "--bundle", (char *)bundle, "--image-path",
			(char *)image_dir, (char *)id, NULL};

	return runsc_logged(root, id, log_path, e, args);
}

void na_runsc_state(const char *root, const char *id, char *out, size_t len)
{
	char *args[] = {"state", (char *)id, NULL};
	AUTOBUF struct buf b = BUF_INIT(64 << 10);
	AUTOJSON json_t *st = NULL;
	const char *status = NULL;
	const char *start;

	snprintf(out, len, "absent");
	if (!na_netns_exists(id) || runsc(root, id, true, -1, &b, NULL, args) != 0)
		return;
	/* runsc may print warnings before the document. */
	start = strchr(buf_str(&b), '{');
	if (!start)
		return;
	st = cj_parse(start, strlen(start), 64 << 10, CJ_MAX_DEPTH, NULL);
	if (st && cj_get_str(st, "status", NULL, &status, NULL) == 0 && status)
		snprintf(out, len, "%s", status);
}

int na_runsc_kill(const char *root, const char *id, const char *sig, struct err *e)
{
	char *args[] = {"kill", (char *)id, (char *)sig, NULL};
	AUTOBUF struct buf b = BUF_INIT(4096);
	int rc = runsc(root, id, true, -1, &b, e, args);

	if (rc == -1)
		return -1;
	if (rc != 0)
		return err_set(e, 0, "runsc kill %s %s exited %d: %s", id, sig, rc, buf_str(&b));
	return 0;
}

int na_runsc_delete(const char *root, const char *id, struct err *e)
{
	char *args[] = {"delete", "-force", (char *)id, NULL};
	AUTOBUF struct buf b = BUF_INIT(4096);
	int rc = runsc(root, id, false, -1, &b, e, args);

	if (rc == -1)
		return -1;
	/* "does not exist" is what idempotent teardown hopes for. */
	if (rc != 0 && !strstr(buf_str(&b), "not exist") && !strstr(buf_str(&b), "not found"))
		return err_set(e, 0, "runsc delete %s exited %d: %s", id, rc, buf_str(&b));
	return 0;
}

int na_runsc_each(const char *root, void (*fn)(const char *id, void *ud), void *ud,
		  struct err *e)
{
	DIR *d = opendir(root);
	struct dirent *de;

	if (!d)
		return errno == ENOENT ? 0 : err_set(e, errno, "open runsc root `%s`", root);
	while ((de = readdir(d)) != NULL) {
		char id[64];
		size_t n = strcspn(de->d_name, "_");
		size_t len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 6, ".state") != 0 || n == 0 ||
		    n >= sizeof(id) || strncmp(de->d_name + n, "_sandbox:", 9) != 0)
			continue;
		memcpy(id, de->d_name, n);
		id[n] = '\0';
		fn(id, ud);
	}
	closedir(d);
	return 0;
}

int na_runsc_sandbox_pid(const char *root, const char *id)
{
	char path[4200];
	AUTOJSON json_t *st = NULL;
	json_t *sb;
	long long pid = -1;

	snprintf(path, sizeof(path), "%s/%s_sandbox:%s.state", root, id, id);
	st = cj_load_file(path, 1 << 20, NULL);
	sb = st ? json_object_get(st, "sandbox") : NULL;
	if (!json_is_object(sb) || cj_get_int(sb, "pid", -1, &pid, NULL) == -1 || pid <= 1 ||
	    pid > 1 << 30)
		return -1;
	return (int)pid;
}
