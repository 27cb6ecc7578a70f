/* Starting shell commands whose whole process tree can be killed.
 *
 * Every command runs under a small helper process (a fork of mcp-shell, no
 * exec) that makes itself a child subreaper (PR_SET_CHILD_SUBREAPER) and a
 * session leader, then forks the command in its own process group.  Every
 * descendant of the command therefore stays a descendant of the helper,
 * even one that calls setsid() or double-forks to daemonize: orphans are
 * re-parented to the helper, not to init.  Killing the tree is the helper's
 * job: on SIGTERM, or as soon as the command itself exits, it walks /proc
 * for its descendants and sends them SIGTERM, then SIGKILL after a grace
 * period, and exits once it has no children left, with the command's
 * status (exit code, or 128 + signal).  No cgroups are needed, which
 * matters inside gVisor.
 *
 * All forks happen on one long-lived spawner thread, because the helper's
 * PR_SET_PDEATHSIG (the helper kills its tree when mcp-shell dies) fires
 * when the *thread* that forked it exits, and tool calls run on short-lived
 * worker threads. */
#ifndef CLOCHE_MCP_SHELL_SPAWN_H
#define CLOCHE_MCP_SHELL_SPAWN_H

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct msh_child {
	pid_t helper;  /* waitpid() this; its status is the command's */
	pid_t pgid;    /* the command's process group */
	int in_fd;     /* write end of the command's stdin, or -1 (/dev/null) */
	int out_fd;    /* read end of stdout (and stderr when merged) */
	int err_fd;    /* read end of stderr, or -1 when merged */
};

struct msh_spawn_opts {
	const char *shell;   /* e.g. "/bin/bash"; run as SHELL -c COMMAND */
	const char *command;
	const char *cwd;     /* NULL: $HOME, else / */
	const json_t *env;   /* object of string values added to the environment; may be NULL */
	bool want_stdin;     /* give the command a pipe for stdin */
	bool merge_stderr;   /* stderr into the stdout pipe (2>&1) */
	unsigned grace_ms;   /* SIGTERM -> SIGKILL for the tree; 0 means 1000 */
};

/* Starts the spawner thread.  Call once, before any msh_spawn(). */
int msh_spawn_init(struct err *e);

/* Starts o->command.  Fills c; the caller owns its fds and must reap
 * c->helper.  Errors: bad cwd or env (EINVAL/ENOENT, said in e), fork. */
int msh_spawn(const struct msh_spawn_opts *o, struct msh_child *c, struct err *e);

/* Kills the command's whole tree (SIGTERM to the helper, which escalates
 * to SIGKILL by itself after the grace period). */
void msh_kill_tree(const struct msh_child *c);

/* Turns a helper's wait status into the command's: exit code, or -signal.
 * *signo receives the signal number (0 when it exited). */
int msh_exit_code(int wstatus, int *signo);

#endif
