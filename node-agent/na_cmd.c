/* Fork/exec/wait for the node agent's external tools.  The child's output is
 * read through a pipe until EOF, so a tool that writes a lot never blocks. */
#include "node-agent/na_cmd.h"

#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int na_cmd_run(char *const argv[], na_cmd_hook hook, void *ud, struct buf *out, struct err *e)
{
	int p[2];
	int devnull;
	pid_t pid;
	int status;
	char chunk[4096];
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) == -1)
		return err_set(e, errno, "%s: pipe", argv[0]);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull == -1) {
		close(p[0]);
		close(p[1]);
		return err_set(e, errno, "%s: open /dev/null", argv[0]);
	}
	pid = fork();
	if (pid == -1) {
		close(p[0]);
		close(p[1]);
		close(devnull);
		return err_set(e, errno, "%s: fork", argv[0]);
	}
	if (pid == 0) {
		if (dup2(devnull, 0) == -1 || dup2(p[1], 1) == -1 || dup2(p[1], 2) == -1)
			_exit(126);
		if (hook && hook(ud) == -1)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	close(devnull);
	for (;;) {
		n = read(p[0], chunk, sizeof(chunk));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out && out->len < out->max) {
			size_t room = out->max - out->len;
			(void)buf_append(out, chunk, (size_t)n < room ? (size_t)n : room, NULL);
		}
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR)
			return err_set(e, errno, "%s: waitpid", argv[0]);
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int na_cmd_check(char *const argv[], na_cmd_hook hook, void *ud, struct err *e)
{
	AUTOBUF struct buf out = BUF_INIT(8192);
	int rc = na_cmd_run(argv, hook, ud, &out, e);
	char *s, *last;
	size_t len;

	if (rc == -1)
		return -1;
	if (rc == 0)
		return 0;
	s = (char *)buf_str(&out);
	len = strlen(s);
	while (len && (s[len - 1] == '\n' || s[len - 1] == ' '))
		s[--len] = '\0';
	last = strrchr(s, '\n');
	last = last ? last + 1 : s;
	return err_set(e, 0, "%s exited %d%s%s", argv[0], rc, *last ? ": " : "", last);
}
