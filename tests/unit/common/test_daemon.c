/* Unit tests for common/daemon: what daemon_start() does with a command
 * line (--help, --version, bad flags and levels, sub-commands, stray
 * arguments) and the state it leaves a daemon in (configuration, log
 * level, blocked signals and their signalfd, SIGPIPE ignored).  It exits
 * and changes the signal mask, so each case runs in a child process of
 * its own, whose exit status, stdout and stderr are checked. */
#include "common/daemon.h"
#include "common/log.h"
#include "common/util.h"
#include "common/version.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define SERVED 100 /* the child's status when daemon_start() returned */

static const struct cfg_opt opts[] = {
	{"name", CFG_STR, "x", "a name"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
};

/* `echo WORDS`: prints the words and the loaded name, says whether SIGTERM
 * is blocked yet, and exits 7. */
static int cmd_echo(struct cfg *c, char *const *args, size_t n)
{
	sigset_t now;

	sigprocmask(SIG_BLOCK, NULL, &now);
	for (size_t i = 0; i < n; i++)
		printf("%s ", args[i]);
	printf("name=%s term-blocked=%d\n", cfg_str(c, "name"), sigismember(&now, SIGTERM));
	return 7;
}

static int cmd_fail(struct cfg *c, char *const *args, size_t n)
{
	(void)c;
	(void)args;
	(void)n;
	return 1;
}

static const struct daemon_cmd cmds[] = {
	{"echo", "WORDS", cmd_echo},
	{"fail", NULL, cmd_fail},
};

/* A daemon with sub-commands, a signalfd for TERM, INT and CHLD, and
 * usage errors exiting 2. */
static const struct daemon_opts with_cmds = {
	.prog = "unit-daemon",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CKD",
	.cmds = cmds,
	.ncmds = ARRAY_LEN(cmds),
	.signals = DAEMON_SIG_FD | DAEMON_SIG_CHLD,
	.usage_status = 2,
};

/* No commands, no arguments, signals left alone, the default status. */
static const struct daemon_opts plain = {
	.prog = "unit-plain",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CKD",
};

/* Arguments are the program's. */
static const struct daemon_opts with_args = {
	.prog = "unit-args",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CKD",
	.args = true,
	.signals = DAEMON_SIG_BLOCK,
};

/* What a child reports once daemon_start() returned: the name, the
 * arguments, the signal state, and a SIGTERM raised and read back. */
static void report(struct daemon *d)
{
	struct signalfd_siginfo si;
	struct sigaction pipe_act;
	sigset_t now;
	size_t n;
	char *const *args = cfg_args(d->cfg, &n);

	sigprocmask(SIG_BLOCK, NULL, &now);
	sigaction(SIGPIPE, NULL, &pipe_act);
	printf("name=%s args=%zu term=%d int=%d chld=%d pipe-ignored=%d sigfd=%d", cfg_str(d->cfg, "name"),
	       n, sigismember(&now, SIGTERM), sigismember(&now, SIGINT), sigismember(&now, SIGCHLD),
	       pipe_act.sa_handler == SIG_IGN, d->sigfd >= 0);
	for (size_t i = 0; i < n; i++)
		printf(" [%s]", args[i]);
	if (d->sigfd >= 0) {
		raise(SIGTERM);
		if (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			printf(" read=%s", si.ssi_signo == SIGTERM ? "TERM" : "other");
	}
	log_debug("debug line", NULL);
	printf("\n");
	fflush(stdout);
	daemon_end(d);
	if (d->cfg || d->sigfd != -1)
		printf("not ended\n");
}

struct run {
	int status;
	char out[4096];
	char err[4096];
};

static void drain(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	ssize_t n;

	while (got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
}

/* Runs daemon_start(o) with args (NULL-terminated, after argv[0]) and, in
 * env, one NAME=VALUE to set first (or NULL), in a child; fills r. */
static void run(const struct daemon_opts *o, const char *const *args, const char *env,
		struct run *r)
{
	int out[2], err[2], st;
	pid_t pid;

	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(pipe(err), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[16] = {(char *)o->prog};
		int argc = 1;
		struct daemon d;

		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		if (env)
			putenv((char *)env);
		for (; args && args[argc - 1]; argc++)
			argv[argc] = (char *)args[argc - 1];
		daemon_start(o, argc, argv, &d);
		report(&d);
		fflush(NULL);
		_exit(SERVED);
	}
	close(out[1]);
	close(err[1]);
	/* The outputs are small: they fit the pipes until the child is gone. */
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	drain(out[0], r->out, sizeof(r->out));
	drain(err[0], r->err, sizeof(r->err));
	ck_assert_msg(WIFEXITED(st), "the child died: %d", st);
	r->status = WEXITSTATUS(st);
}

static const struct {
	const struct daemon_opts *o;
	const char *args[6];
	const char *env;
	int status;
	const char *out; /* in stdout, or NULL */
	const char *err; /* in stderr, or NULL */
} cases[] = {
	/* Answers that end the start with 0. */
	{&with_cmds, {"--help"}, NULL, 0, "--log-level=STR", NULL},
	{&with_cmds, {"--help"}, NULL, 0, "--version", NULL},
	{&plain, {"--name", "y", "--help", "stray"}, NULL, 0, "Usage: unit-plain", NULL},
	/* Bad flags, values and levels: one JSON line, the program's status. */
	{&with_cmds, {"--bogus"}, NULL, 2, NULL,
	 "\"msg\":\"bad configuration\",\"error\":\"unknown flag `--bogus` (see --help)\""},
	{&plain, {"--bogus"}, NULL, 1, NULL, "\"prog\":\"unit-plain\""},
	{&with_cmds, {"--log-level", "loud"}, NULL, 2, NULL,
	 "--log-level: `loud` is not debug, info, warn or error"},
	{&with_cmds, {NULL}, "CKD_LOG_LEVEL=quiet", 2, NULL,
	 "CKD_LOG_LEVEL: `quiet` is not debug, info, warn or error"},
	/* The level is set: a debug line shows with debug only. */
	{&plain, {"--log-level=debug"}, NULL, SERVED, "name=x", "\"msg\":\"debug line\""},
	/* Words after the flags. */
	{&plain, {"stray"}, NULL, 1, NULL, "unexpected argument `stray`"},
	{&with_cmds, {"frob"}, NULL, 2, NULL,
	 "unknown command `frob` (the commands are `echo WORDS` and `fail`)"},
	{&with_cmds, {"--name", "y", "echo", "a", "b"}, NULL, 7, "echo a b name=y term-blocked=0",
	 NULL},
	{&with_cmds, {"fail"}, NULL, 1, NULL, NULL},
	{&with_args, {"--name", "z", "--", "a", "--b"}, NULL, SERVED, "name=z args=2", NULL},
	{&with_args, {"a", "--b"}, NULL, 1, NULL, "unknown flag `--b`"},
	/* Serving: the signals each asked for, SIGPIPE ignored. */
	{&with_cmds, {NULL}, NULL, SERVED,
	 "name=x args=0 term=1 int=1 chld=1 pipe-ignored=1 sigfd=1 read=TERM\n", NULL},
	{&with_args, {"--", "w"}, NULL, SERVED,
	 "args=1 term=1 int=1 chld=0 pipe-ignored=1 sigfd=0 [w]\n", NULL},
	{&plain, {NULL}, NULL, SERVED, "term=0 int=0 chld=0 pipe-ignored=1 sigfd=0\n", NULL},
};

START_TEST(start_answers_the_command_line)
{
	struct run r;

	run(cases[_i].o, cases[_i].args, cases[_i].env, &r);
	ck_assert_msg(r.status == cases[_i].status, "case %d: status %d, out `%s`, err `%s`", _i,
		      r.status, r.out, r.err);
	if (cases[_i].out)
		ck_assert_msg(strstr(r.out, cases[_i].out), "case %d: out `%s`", _i, r.out);
	if (cases[_i].err)
		ck_assert_msg(strstr(r.err, cases[_i].err), "case %d: err `%s`", _i, r.err);
	ck_assert_msg(!strstr(r.out, "not ended"), "case %d: daemon_end left something", _i);
	if (cases[_i].status == SERVED && cases[_i].o != &plain)
		ck_assert_msg(!strstr(r.err, "debug line"), "case %d: %s", _i, r.err);
}
END_TEST

START_TEST(version_is_printed)
{
	static const char *const args[] = {"--name", "y", "--version", NULL};
	char want[64];
	struct run r;

	run(&with_cmds, args, NULL, &r);
	snprintf(want, sizeof(want), "unit-daemon %s\n", version_string());
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.out, want);
	ck_assert_str_eq(r.err, "");
}
END_TEST

START_TEST(die_logs_one_line)
{
	struct err e = ERR_INIT;
	struct run r;
	pid_t pid;
	int p[2], st;

	ck_assert_int_eq(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		log_init("unit-die", LOG_INFO, p[1]);
		err_set(&e, 0, "the pool `x` is full");
		daemon_die(3, "cannot start", &e);
	}
	close(p[1]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	drain(p[0], r.err, sizeof(r.err));
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	ck_assert_msg(strstr(r.err, "\"level\":\"error\",\"prog\":\"unit-die\",\"msg\":\"cannot "
				    "start\",\"error\":\"the pool `x` is full\"}\n"),
		      "%s", r.err);
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
}
END_TEST

Suite *suite_daemon(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, start_answers_the_command_line, 0, (int)ARRAY_LEN(cases));
	tcase_add_test(tc, version_is_printed);
	tcase_add_test(tc, die_logs_one_line);
	suite_add_tcase(s, tc);
	return s;
}
