/* Process creation for cloche-init; see spawn.h.  The child runs only a
 * short list of system calls between fork and exec, and reports a failure
 * through its output pipe before exiting 127. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void spawn_signal_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

static void child_fail(const char *what, const char *arg)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "cloche-init: %s `%s`: %s\n", what, arg, strerror(errno));

	if (n > 0 && write(2, buf, (size_t)n) < 0) {
		/* nothing more to do */
	}
	_exit(127);
}

pid_t spawn_service(const struct init_service *svc, char *const argv[], int out_fd,
		    bool with_listen, struct err *e)
{
	sigset_t none;
	pid_t pid = fork();

	if (pid == -1)
		return err_set(e, errno, "fork for `%s`", svc->name);
	if (pid > 0)
		return pid;

	/* Child. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setsid();
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0)
		dup2(devnull, 0);
	if (out_fd < 0)
		out_fd = devnull;
	if (out_fd >= 0) {
		dup2(out_fd, 1);
		dup2(out_fd, 2);
	}
	if (with_listen && svc->nlisten > 0) {
		/* Held ports become fds 3.. (LISTEN_FDS is in svc->env): first
		 * out of the way of the targets, then into place. */
		int hi[INIT_MAX_LISTEN];

		for (size_t i = 0; i < svc->nlisten; i++)
			if ((hi[i] = fcntl(svc->listen_fd[i], F_DUPFD_CLOEXEC, 64)) == -1)
				child_fail("pass the socket of", svc->name);
		for (size_t i = 0; i < svc->nlisten; i++)
			if (dup2(hi[i], 3 + (int)i) == -1)
				child_fail("pass the socket of", svc->name);
	}
	if (chdir(svc->cwd) == -1 && chdir("/") == -1)
		child_fail("chdir", svc->cwd);
	if (getuid() != svc->uid || getgid() != svc->gid) {
		if (setgroups((size_t)svc->ngroups, svc->groups) == -1)
			child_fail("setgroups for", svc->user);
		if (setgid(svc->gid) == -1)
			child_fail("setgid for", svc->user);
		if (setuid(svc->uid) == -1)
			child_fail("setuid for", svc->user);
	}
	execve(argv[0], argv, svc->env);
	child_fail("exec", argv[0]);
	return -1;
}
