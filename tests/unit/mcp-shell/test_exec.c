/* run_command (mcp/shell/exec.c) through the server: output, exit status
 * and stderr, the working directory, environment and stdin, the output
 * cap, the timeout that kills the whole tree, leftovers killed at exit,
 * and arguments refused. */
#include "tests/unit/mcp-shell/suites.h"
#include "common/util.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static void setup(void)
{
	msh_t_server_setup(&MSH_T_CONF);
}

static void setup_small(void)
{
	struct msh_conf c = MSH_T_CONF;

	c.max_output = 64;
	msh_t_server_setup(&c);
}

START_TEST(reports_stdout_stderr_and_exit_code)
{
	const struct msh_ans *a = msh_call("run_command", "{s:s}", "command",
					   "echo out; echo err >&2; exit 3");

	ck_assert_int_eq(a->code, 0);
	ck_assert_msg(!a->is_error, "a non-zero exit is not a tool failure: %s", a->text);
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "out\n");
	ck_assert_str_eq(msh_str(a->sc, "stderr"), "err\n");
	ck_assert_int_eq(msh_int(a->sc, "exit_code"), 3);
	ck_assert_int_eq(msh_bool(a->sc, "timed_out"), 0);
	ck_assert_int_eq(msh_int(a->sc, "signal"), MSH_NO_INT);
	ck_assert_int_ge(msh_int(a->sc, "duration_ms"), 0);
	ck_assert_uint_eq(a->nitems, 3);
	ck_assert_str_eq(msh_item(a, 0), "out\n");
	ck_assert_str_eq(msh_item(a, 1), "[stderr]\nerr\n");
	ck_assert_str_eq(msh_item(a, 2), "[exit code: 3]");

	/* No output: only the exit code. */
	a = msh_call("run_command", "{s:s}", "command", "true");
	ck_assert_uint_eq(a->nitems, 1);
	ck_assert_str_eq(a->text, "[exit code: 0]");
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "");
}
END_TEST

START_TEST(reports_a_signal)
{
	const struct msh_ans *a = msh_call("run_command", "{s:s}", "command", "echo before; kill -KILL $$");

	ck_assert(!a->is_error);
	ck_assert_int_eq(msh_int(a->sc, "exit_code"), 128 + SIGKILL);
	ck_assert_int_eq(msh_int(a->sc, "signal"), SIGKILL);
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "before\n");
	ck_assert_str_eq(msh_item(a, 1), "[exit code: 137 (killed by signal 9)]");
}
END_TEST

START_TEST(cwd_env_and_stdin)
{
	char want[4200];
	const struct msh_ans *a;

	a = msh_call("run_command", "{s:s}", "command", "pwd");
	snprintf(want, sizeof(want), "%s\n", msh_dir());
	ck_assert_str_eq(msh_str(a->sc, "stdout"), want);

	/* A relative cwd is resolved against $HOME. */
	msh_put("work/dir/keep", "", 0);
	a = msh_call("run_command", "{s:s, s:s}", "command", "pwd", "cwd", "work/dir");
	snprintf(want, sizeof(want), "%s/work/dir\n", msh_dir());
	ck_assert_str_eq(msh_str(a->sc, "stdout"), want);

	a = msh_call("run_command", "{s:s, s:{s:s, s:s}}", "command", "echo \"$MSH_A-$MSH_B\"", "env",
		     "MSH_A", "one", "MSH_B", "two words");
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "one-two words\n");

	/* env overrides what the server's environment has. */
	a = msh_call("run_command", "{s:s, s:{s:s}}", "command", "echo \"$HOME\"", "env", "HOME", "/elsewhere");
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "/elsewhere\n");

	a = msh_call("run_command", "{s:s, s:s}", "command", "tr a-z A-Z; echo done", "stdin", "fed in\nlines\n");
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "FED IN\nLINES\ndone\n");

	/* Without stdin the command reads EOF at once (/dev/null). */
	a = msh_call("run_command", "{s:s, s:i}", "command", "cat; echo eof", "timeout_ms", 3000);
	ck_assert_int_eq(msh_bool(a->sc, "timed_out"), 0);
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "eof\n");
}
END_TEST

START_TEST(bad_cwd_is_a_tool_error)
{
	char want[4200];
	const struct msh_ans *a = msh_call("run_command", "{s:s, s:s}", "command", "pwd", "cwd", "nowhere");

	ck_assert_int_eq(a->code, 0);
	ck_assert(a->is_error);
	snprintf(want, sizeof(want), "run_command: cwd %s/nowhere: No such file or directory", msh_dir());
	ck_assert_str_eq(a->text, want);

	a = msh_call("run_command", "{s:s, s:{s:i}}", "command", "true", "env", "N", 1);
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, "run_command: env: `N` must be a name with a string value: Invalid argument");
}
END_TEST

START_TEST(refuses_bad_arguments)
{
	static const struct {
		const char *fmt, *needle;
	} cases[] = {
		{"{}", "`command` is required"},
		{"{s:i}", "`command` must be a string"},
		{"{s:s, s:i}", "`timeout_ms` must be at least 1"},
		{"{s:s, s:i}", "`timeout_ms` must be between 1 and 10000"},
		{"{s:s, s:s}", "unknown argument `cmd`"},
		{"{s:s, s:s}", "`env` must be an object"},
	};
	const struct msh_ans *a[6];

	a[0] = msh_call("run_command", cases[0].fmt);
	a[1] = msh_call("run_command", cases[1].fmt, "command", 5);
	a[2] = msh_call("run_command", cases[2].fmt, "command", "true", "timeout_ms", 0);
	a[3] = msh_call("run_command", cases[3].fmt, "command", "true", "timeout_ms", 10001);
	a[4] = msh_call("run_command", cases[4].fmt, "command", "true", "cmd", "x");
	a[5] = msh_call("run_command", cases[5].fmt, "command", "true", "env", "A=1");
	for (size_t i = 0; i < 6; i++) {
		ck_assert_msg(a[i]->code == -32602, "case %zu: code %ld, %s", i, a[i]->code, a[i]->text);
		ck_assert_msg(strstr(a[i]->message, cases[i].needle), "case %zu: %s", i, a[i]->message);
	}
}
END_TEST

START_TEST(caps_each_stream)
{
	char want[128];
	const struct msh_ans *a = msh_call("run_command", "{s:s}", "command",
					   "head -c 1000 /dev/zero | tr '\\0' a; printf 0123456789 >&2");

	ck_assert(!a->is_error);
	memset(want, 'a', 64);
	snprintf(want + 64, sizeof(want) - 64, "\n[... truncated: 936 more bytes ...]");
	ck_assert_str_eq(msh_str(a->sc, "stdout"), want);
	ck_assert_str_eq(msh_str(a->sc, "stderr"), "0123456789");
	ck_assert_int_eq(msh_int(a->sc, "exit_code"), 0);

	/* Exactly at the cap: nothing is marked. */
	a = msh_call("run_command", "{s:s}", "command", "head -c 64 /dev/zero | tr '\\0' b");
	memset(want, 'b', 64);
	want[64] = '\0';
	ck_assert_str_eq(msh_str(a->sc, "stdout"), want);
}
END_TEST

/* The timeout kills the command and everything it started, a child in its
 * own session included, and says so. */
START_TEST(timeout_kills_the_whole_tree)
{
	const struct msh_ans *a;
	uint64_t t0 = util_now_ms(), took;
	pid_t bg, daemon_pid;

	a = msh_call("run_command", "{s:s, s:i}", "command",
		     "sleep 30 & echo $! > bg.pid; "
		     "setsid sh -c 'echo $$ > d.pid; exec sleep 30' </dev/null >/dev/null 2>&1 & "
		     "while [ ! -s d.pid ]; do sleep 0.01; done; echo started; sleep 30",
		     "timeout_ms", 400);
	took = util_now_ms() - t0;
	ck_assert_int_eq(a->code, 0);
	ck_assert(a->is_error);
	ck_assert_str_eq(msh_item(a, 0), "run_command: timed out after 400 ms; the command and every process it started were killed");
	ck_assert_int_eq(msh_bool(a->sc, "timed_out"), 1);
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "started\n");
	ck_assert_int_eq(msh_int(a->sc, "exit_code"), 128 + SIGTERM);
	ck_assert_int_eq(msh_int(a->sc, "signal"), SIGTERM);
	ck_assert_int_ge(msh_int(a->sc, "duration_ms"), 400);
	ck_assert_msg(took < 4000, "took %llu ms", (unsigned long long)took);
	bg = msh_wait_pidfile("bg.pid");
	daemon_pid = msh_wait_pidfile("d.pid");
	ck_assert_msg(msh_pid_gone(bg), "background child %d survived", (int)bg);
	ck_assert_msg(msh_pid_gone(daemon_pid), "setsid child %d survived", (int)daemon_pid);
}
END_TEST

/* Output goes on past a NUL byte. */
START_TEST(output_past_a_nul)
{
	const struct msh_ans *a;
	const json_t *o;

	a = msh_call("run_command", "{s:s}", "command", "printf 'a\\0b'; printf 'c\\0d' >&2");
	ck_assert(!a->is_error);
	o = json_object_get(a->sc, "stdout");
	ck_assert_uint_eq(json_string_length(o), 3);
	ck_assert_mem_eq(json_string_value(o), "a\0b", 3);
	o = json_object_get(a->sc, "stderr");
	ck_assert_uint_eq(json_string_length(o), 3);
	ck_assert_mem_eq(json_string_value(o), "c\0d", 3);
}
END_TEST

/* A command that closed its output still has its timeout. */
START_TEST(timeout_holds_after_the_output_closes)
{
	const struct msh_ans *a;
	uint64_t t0 = util_now_ms(), took;

	a = msh_call("run_command", "{s:s, s:i}", "command", "echo before; exec >&- 2>&-; sleep 30",
		     "timeout_ms", 400);
	took = util_now_ms() - t0;
	ck_assert(a->is_error);
	ck_assert_int_eq(msh_bool(a->sc, "timed_out"), 1);
	ck_assert_str_eq(msh_str(a->sc, "stdout"), "before\n");
	ck_assert_msg(took < 4000, "took %llu ms", (unsigned long long)took);
	/* and one that exits right after closing them is answered at once */
	t0 = util_now_ms();
	a = msh_call("run_command", "{s:s}", "command", "exec >&- 2>&-; sleep 0.2; exit 3");
	ck_assert(!a->is_error);
	ck_assert_int_eq(msh_int(a->sc, "exit_code"), 3);
	ck_assert_uint_lt(util_now_ms() - t0, 2000);
}
END_TEST

/* What a command leaves running is killed when it exits; the call does
 * not wait for it. */
START_TEST(leftovers_die_with_the_command)
{
	const struct msh_ans *a;
	uint64_t t0 = util_now_ms();
	long long pid;

	a = msh_call("run_command", "{s:s}", "command", "sleep 30 >/dev/null 2>&1 & echo $!");
	ck_assert(!a->is_error);
	ck_assert_int_eq(msh_int(a->sc, "exit_code"), 0);
	ck_assert_int_eq(msh_bool(a->sc, "timed_out"), 0);
	pid = strtoll(msh_str(a->sc, "stdout"), NULL, 10);
	ck_assert_int_gt(pid, 0);
	ck_assert_uint_lt(util_now_ms() - t0, 4000);
	ck_assert_msg(msh_pid_gone((pid_t)pid), "background child %lld survived", pid);
}
END_TEST

Suite *suite_msh_exec(void)
{
	Suite *s = suite_create("msh_exec");
	TCase *tc = tcase_create("run_command"), *small = tcase_create("run_command_cap");

	tcase_add_unchecked_fixture(tc, msh_t_root_make, msh_t_root_remove);
	tcase_add_checked_fixture(tc, setup, msh_t_server_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, reports_stdout_stderr_and_exit_code);
	tcase_add_test(tc, reports_a_signal);
	tcase_add_test(tc, cwd_env_and_stdin);
	tcase_add_test(tc, bad_cwd_is_a_tool_error);
	tcase_add_test(tc, refuses_bad_arguments);
	tcase_add_test(tc, timeout_kills_the_whole_tree);
	tcase_add_test(tc, timeout_holds_after_the_output_closes);
	tcase_add_test(tc, output_past_a_nul);
	tcase_add_test(tc, leftovers_die_with_the_command);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(small, msh_t_root_make, msh_t_root_remove);
	tcase_add_checked_fixture(small, setup_small, msh_t_server_teardown);
	tcase_set_timeout(small, 30);
	tcase_add_test(small, caps_each_stream);
	suite_add_tcase(s, small);
	return s;
}
