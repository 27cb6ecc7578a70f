/* mcp/shell/spawn.c directly: the exit-status mapping, the helper's pipes,
 * environment and working directory, refusals before anything is started,
 * and the tree kill (SIGTERM, SIGKILL after the grace period, and
 * descendants that left the session). */
#include "tests/unit/mcp-shell/suites.h"
#include "mcp/shell/spawn.h"
#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Reads fd to EOF (at most 5 s) into buf; closes it. */
static void read_all(int *fd, char *buf, size_t size)
{
	uint64_t until = util_now_ms() + 5000;
	size_t n = 0;

	for (;;) {
		struct pollfd p = {*fd, POLLIN, 0};
		ssize_t r;

		ck_assert_msg(util_now_ms() < until, "no EOF; read so far: %.*s", (int)n, buf);
		if (poll(&p, 1, 100) <= 0)
			continue;
		r = read(*fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		ck_assert_int_ge(r, 0);
		if (r == 0)
			break;
		n += (size_t)r;
		ck_assert_uint_lt(n, size - 1);
	}
	buf[n] = '\0';
	util_closep(fd);
}

/* Waits (at most 5 s) for the helper; returns its wait status. */
static int reap(pid_t helper)
{
	uint64_t until = util_now_ms() + 5000;
	int st = 0;

	while (waitpid(helper, &st, WNOHANG) == 0) {
		ck_assert_msg(util_now_ms() < until, "helper %d did not exit", (int)helper);
		usleep(5 * 1000);
	}
	return st;
}

START_TEST(exit_codes_and_signals)
{
	static const struct {
		int wstatus, code, signo;
	} cases[] = {
		{0, 0, 0},
		{3 << 8, 3, 0},
		{(128 + SIGTERM) << 8, 143, SIGTERM}, /* the helper's way to say "killed by TERM" */
		{(128 + SIGKILL) << 8, 137, SIGKILL},
		{128 << 8, 128, 0},
		{200 << 8, 200, 0},                   /* beyond the signal numbers */
		{SIGKILL, 137, SIGKILL},              /* a helper that was itself killed */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int signo = -1;
		ck_assert_int_eq(msh_exit_code(cases[i].wstatus, &signo), cases[i].code);
		ck_assert_int_eq(signo, cases[i].signo);
	}
}
END_TEST

START_TEST(separate_pipes_env_and_cwd)
{
	json_t *env = json_pack("{s:s}", "MSH_T", "from env");
	struct msh_child c;
	struct err e = ERR_INIT;
	char out[4096], errb[4096], want[4200];
	int signo;

	msh_put("sub/keep", "", 0);
	ck_assert_msg(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash",
							 .command = "echo \"$MSH_T\"; pwd; echo oops >&2; exit 4",
							 .cwd = msh_p("sub"), .env = env},
				&c, &e) == 0,
		      "%s", e.msg);
	json_decref(env);
	ck_assert_int_gt(c.helper, 0);
	ck_assert_int_gt(c.pgid, 0);
	ck_assert_int_ne(c.pgid, c.helper); /* the command has its own group */
	ck_assert_int_eq(c.in_fd, -1);
	ck_assert_int_ge(c.err_fd, 0);
	read_all(&c.out_fd, out, sizeof(out));
	read_all(&c.err_fd, errb, sizeof(errb));
	snprintf(want, sizeof(want), "from env\n%s/sub\n", msh_dir());
	ck_assert_str_eq(out, want);
	ck_assert_str_eq(errb, "oops\n");
	ck_assert_int_eq(msh_exit_code(reap(c.helper), &signo), 4);
	ck_assert_int_eq(signo, 0);

	/* Without a cwd the command starts in $HOME. */
	ck_assert_msg(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash", .command = "pwd"}, &c, &e) == 0,
		      "%s", e.msg);
	read_all(&c.out_fd, out, sizeof(out));
	util_closep(&c.err_fd);
	snprintf(want, sizeof(want), "%s\n", msh_dir());
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(msh_exit_code(reap(c.helper), &signo), 0);
}
END_TEST

START_TEST(merged_stderr_and_stdin)
{
	struct msh_child c;
	struct err e = ERR_INIT;
	char out[4096];
	int signo;

	ck_assert_msg(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash", .command = "cat; echo tail >&2",
							 .want_stdin = true, .merge_stderr = true},
				&c, &e) == 0,
		      "%s", e.msg);
	ck_assert_int_eq(c.err_fd, -1);
	ck_assert_int_ge(c.in_fd, 0);
	ck_assert_int_eq(util_write_all(c.in_fd, "fed\n", 4), 0);
	util_closep(&c.in_fd);
	read_all(&c.out_fd, out, sizeof(out));
	ck_assert_str_eq(out, "fed\ntail\n");
	ck_assert_int_eq(msh_exit_code(reap(c.helper), &signo), 0);
}
END_TEST

START_TEST(refuses_bad_cwd_and_env)
{
	struct msh_child c;
	struct err e = ERR_INIT;
	json_t *env;
	char want[4200];

	ck_assert_int_eq(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash", .command = "true",
							    .cwd = msh_p("missing")},
				   &c, &e),
			 -1);
	snprintf(want, sizeof(want), "cwd %s/missing: No such file or directory", msh_dir());
	ck_assert_str_eq(e.msg, want);
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_int_eq(c.helper, 0);
	ck_assert_int_eq(c.out_fd, -1);

	msh_put("file", "x", -1);
	ck_assert_int_eq(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash", .command = "true",
							    .cwd = msh_p("file")},
				   &c, &e),
			 -1);
	ck_assert_int_eq(e.code, ENOTDIR);

	env = json_pack("{s:s}", "A=B", "x");
	ck_assert_int_eq(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash", .command = "true", .env = env},
				   &c, &e),
			 -1);
	ck_assert_str_eq(e.msg, "env: `A=B` must be a name with a string value: Invalid argument");
	json_decref(env);
	env = json_pack("{s:s, s:i}", "OK", "fine", "N", 1);
	ck_assert_int_eq(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash", .command = "true", .env = env},
				   &c, &e),
			 -1);
	ck_assert_str_eq(e.msg, "env: `N` must be a name with a string value: Invalid argument");
	json_decref(env);
}
END_TEST

/* A command that ignores SIGTERM is killed with SIGKILL after grace_ms. */
START_TEST(escalates_to_sigkill_after_the_grace_period)
{
	struct msh_child c;
	struct err e = ERR_INIT;
	char line[64];
	uint64_t t0;
	ssize_t n;
	int signo;

	ck_assert_msg(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash",
							 .command = "trap '' TERM; echo ready; sleep 30",
							 .grace_ms = 300},
				&c, &e) == 0,
		      "%s", e.msg);
	n = read(c.out_fd, line, sizeof(line) - 1);
	ck_assert_int_eq(n, 6);
	line[n] = '\0';
	ck_assert_str_eq(line, "ready\n");
	t0 = util_now_ms();
	msh_kill_tree(&c);
	read_all(&c.out_fd, line, sizeof(line));
	util_closep(&c.err_fd);
	ck_assert_int_eq(msh_exit_code(reap(c.helper), &signo), 128 + SIGKILL);
	ck_assert_int_eq(signo, SIGKILL);
	ck_assert_uint_ge(util_now_ms() - t0, 250);
	ck_assert_uint_lt(util_now_ms() - t0, 3000);
}
END_TEST

/* A daemon the command leaves behind (double fork, own session) goes with
 * it: it is re-parented to the helper, which kills it. */
START_TEST(kills_what_the_command_leaves_behind)
{
	struct msh_child c;
	struct err e = ERR_INIT;
	char out[256];
	pid_t daemon_pid;
	int signo;

	ck_assert_msg(msh_spawn(&(struct msh_spawn_opts){.shell = "/bin/bash",
							 .command = "(setsid sh -c 'echo $$ > d.pid; exec sleep 30' "
								    "</dev/null >/dev/null 2>&1 &); "
								    "while [ ! -s d.pid ]; do sleep 0.01; done; exit 7"},
				&c, &e) == 0,
		      "%s", e.msg);
	read_all(&c.out_fd, out, sizeof(out));
	util_closep(&c.err_fd);
	ck_assert_int_eq(msh_exit_code(reap(c.helper), &signo), 7);
	daemon_pid = msh_wait_pidfile("d.pid");
	ck_assert_msg(msh_pid_gone(daemon_pid), "pid %d is still there", (int)daemon_pid);
}
END_TEST

Suite *suite_msh_spawn(void)
{
	Suite *s = suite_create("msh_spawn");
	TCase *pure = tcase_create("pure"), *tc = tcase_create("spawn");

	tcase_add_test(pure, exit_codes_and_signals);
	suite_add_tcase(s, pure);
	tcase_add_unchecked_fixture(tc, msh_t_root_make, msh_t_root_remove);
	tcase_add_checked_fixture(tc, msh_t_dir_setup, msh_t_dir_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, separate_pipes_env_and_cwd);
	tcase_add_test(tc, merged_stderr_and_stdin);
	tcase_add_test(tc, refuses_bad_cwd_and_env);
	tcase_add_test(tc, escalates_to_sigkill_after_the_grace_period);
	tcase_add_test(tc, kills_what_the_command_leaves_behind);
	suite_add_tcase(s, tc);
	return s;
}
