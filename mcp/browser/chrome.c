/* Starting, probing and stopping the browser child; see chrome.h.  The fd
 * shuffle between fork and exec moves the pipe ends above 4 first, so that
 * dup2 onto 3 and 4 can never clobber the other end. */
#include "mcp/browser/chrome.h"

#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int chrome_launch(char *const argv[], struct chrome *ch, struct err *e)
{
	int to_chrome[2] = {-1, -1}, from_chrome[2] = {-1, -1};
	size_t n = 0;
	char **av;
	pid_t parent = getpid();

	while (argv[n])
		n++;
	if (n == 0 || argv[0][0] != '/')
		return err_set(e, 0, "the browser command must start with an absolute path");
	av = calloc(n + 2, sizeof(*av));
	if (!av)
		return err_set(e, ENOMEM, "browser argv");
	memcpy(av, argv, n * sizeof(*av));
	av[n] = "--remote-debugging-pipe";
	if (pipe2(to_chrome, O_CLOEXEC) == -1 || pipe2(from_chrome, O_CLOEXEC) == -1) {
		err_set(e, errno, "pipe");
		goto fail;
	}
	pid_t pid = fork();
	if (pid == -1) {
		err_set(e, errno, "fork for `%s`", av[0]);
		goto fail;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int r = fcntl(to_chrome[0], F_DUPFD, 10), w = fcntl(from_chrome[1], F_DUPFD, 10);
		if (r == -1 || w == -1 || dup2(r, 3) == -1 || dup2(w, 4) == -1)
			_exit(127);
		close(r);
		close(w);
		execve(av[0], av, environ);
		dprintf(2, "mcp-browser: exec `%s`: %s\n", av[0], strerror(errno));
		_exit(127);
	}
	close(to_chrome[0]);
	close(from_chrome[1]);
	free(av);
	ch->pid = pid;
	ch->wfd = to_chrome[1];
	ch->rfd = from_chrome[0];
	log_info("browser started", "{s:i, s:s}", "pid", (int)pid, "cmd", argv[0]);
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (to_chrome[i] >= 0)
			close(to_chrome[i]);
		if (from_chrome[i] >= 0)
			close(from_chrome[i]);
	}
	free(av);
	return -1;
}

bool chrome_running(struct chrome *ch)
{
	int st;

	if (ch->pid <= 0)
		return false;
	pid_t r = waitpid(ch->pid, &st, WNOHANG);
	if (r == ch->pid || (r == -1 && errno == ECHILD)) {
		if (r == ch->pid)
			log_warn("browser exited", "{s:i, s:i, s:i}", "pid", (int)ch->pid, "status",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1, "signal",
				 WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		ch->pid = -1;
		return false;
	}
	return true;
}

/* Runs argv once; its exit status, or -1. */
static int run_probe(char **argv)
{
	pid_t pid;
	int st;
	posix_spawn_file_actions_t fa;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	int r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return -1;
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int chrome_wait_window(struct chrome *ch, const char *probe, unsigned timeout_ms,
		       struct err *e)
{
	char *argv[32];
	size_t n = 0;
	AUTOFREE char *copy = strdup(probe ? probe : "");
	char *save = NULL;
	uint64_t deadline = util_now_ms() + timeout_ms;

	if (!copy)
		return err_set(e, ENOMEM, "probe");
	for (char *t = strtok_r(copy, " \t", &save); t && n < ARRAY_LEN(argv) - 1;
	     t = strtok_r(NULL, " \t", &save))
		argv[n++] = t;
	argv[n] = NULL;
	if (n == 0)
		return 0;
	for (;;) {
		if (run_probe(argv) == 0)
			return 0;
		if (!chrome_running(ch))
			return err_set(e, 0, "the browser exited before its window was painted");
		if (util_now_ms() >= deadline)
			return err_set(e, 0, "the browser window was not painted within %u ms (probe `%s`)",
				       timeout_ms, probe);
		usleep(500 * 1000);
	}
}

void chrome_stop(struct chrome *ch, unsigned grace_ms)
{
	uint64_t deadline = util_now_ms() + grace_ms;

	if (ch->pid <= 0)
		return;
	kill(ch->pid, SIGTERM);
	while (chrome_running(ch)) {
		if (util_now_ms() >= deadline) {
			kill(ch->pid, SIGKILL);
			waitpid(ch->pid, NULL, 0);
			ch->pid = -1;
			break;
		}
		usleep(50 * 1000);
	}
}
