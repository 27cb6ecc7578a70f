/* Background processes (mcp/shell/procs.c) through the server:
 * start_process, list_processes, read_process_output (offsets, waiting,
 * the bounded buffer), kill_process (the tree, other signals) and the
 * limit on processes at once. */
#include "tests/unit/mcp-shell/suites.h"
#include "common/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void setup(void)
{
	msh_t_server_setup(&MSH_T_CONF);
}

static void setup_small(void)
{
	struct msh_conf c = MSH_T_CONF;

	c.ring = 16;
	c.max_procs = 2;
	msh_t_server_setup(&c);
}

/* Starts command; returns its id ("p<n>"). */
static const char *start(const char *command)
{
	const struct msh_ans *a = msh_call("start_process", "{s:s}", "command", command);

	ck_assert_msg(a->code == 0 && !a->is_error, "start_process %s: %s%s", command, a->message, a->text);
	ck_assert_int_eq(msh_bool(a->sc, "running"), 1);
	ck_assert_int_gt(msh_int(a->sc, "pid"), 0);
	ck_assert_int_eq(msh_str(a->sc, "id")[0], 'p');
	return msh_str(a->sc, "id");
}

/* The list_processes entry of id, or NULL. */
static const json_t *entry(const char *id)
{
	const struct msh_ans *a = msh_call("list_processes", "{}");
	const json_t *p;
	size_t i;

	ck_assert(!a->is_error);
	json_array_foreach(json_object_get(a->sc, "processes"), i, p)
		if (strcmp(msh_str(p, "id"), id) == 0)
			return p;
	return NULL;
}

/* Waits (at most 5 s) until id has exited; returns its exit code. */
static long long wait_exit(const char *id)
{
	uint64_t until = util_now_ms() + 5000;

	for (;;) {
		const json_t *p = entry(id);
		ck_assert_msg(p, "%s is not listed", id);
		if (msh_bool(p, "running") == 0)
			return msh_int(p, "exit_code");
		ck_assert_msg(util_now_ms() < until, "%s still runs", id);
		usleep(10 * 1000);
	}
}

/* Reads id's output from where the last read ended until it holds want
 * (at most 5 s); returns everything read. */
static const char *read_until(const char *id, const char *want)
{
	static char got[8192];
	uint64_t until = util_now_ms() + 5000;

	got[0] = '\0';
	while (!strstr(got, want)) {
		const struct msh_ans *a = msh_call("read_process_output", "{s:s, s:i}", "id", id, "wait_ms", 500);
		ck_assert_msg(a->code == 0 && !a->is_error, "%s%s", a->message, a->text);
		ck_assert_uint_lt(strlen(got) + strlen(msh_str(a->sc, "output")), sizeof(got));
		strcat(got, msh_str(a->sc, "output"));
		ck_assert_msg(util_now_ms() < until, "%s: no \"%s\" in \"%s\"", id, want, got);
	}
	return got;
}

START_TEST(start_read_list_and_kill)
{
	const char *id = start("echo hello; echo oops >&2; exec sleep 30");
	const struct msh_ans *a;
	const json_t *p;
	char want[128];

	ck_assert_str_eq(read_until(id, "oops\n"), "hello\noops\n"); /* stderr is merged */
	p = entry(id);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(msh_str(p, "command"), "echo hello; echo oops >&2; exec sleep 30");
	ck_assert_int_eq(msh_bool(p, "running"), 1);
	ck_assert_int_eq(msh_int(p, "output_bytes"), 11);
	ck_assert_int_eq(msh_int(p, "exit_code"), MSH_NO_INT);

	/* Nothing new: an empty read that says where it stands. */
	a = msh_call("read_process_output", "{s:s}", "id", id);
	ck_assert_str_eq(msh_str(a->sc, "output"), "");
	ck_assert_int_eq(msh_int(a->sc, "offset"), 11);
	ck_assert_int_eq(msh_int(a->sc, "next_offset"), 11);
	snprintf(want, sizeof(want), "[%s is running; next_offset 11]", id);
	ck_assert_str_eq(msh_item(a, 1), want);

	a = msh_call("kill_process", "{s:s}", "id", id);
	ck_assert(!a->is_error);
	snprintf(want, sizeof(want), "sent SIGTERM to %s and every process it started", id);
	ck_assert_str_eq(a->text, want);
	ck_assert_int_eq(wait_exit(id), 128 + SIGTERM);

	a = msh_call("read_process_output", "{s:s, s:i}", "id", id, "offset", 0);
	ck_assert_str_eq(msh_str(a->sc, "output"), "hello\noops\n");
	ck_assert_int_eq(msh_bool(a->sc, "running"), 0);
	ck_assert_int_eq(msh_int(a->sc, "exit_code"), 143);
	snprintf(want, sizeof(want), "[%s exited with code 143; next_offset 11]", id);
	ck_assert_str_eq(msh_item(a, 1), want);

	a = msh_call("kill_process", "{s:s}", "id", id);
	ck_assert(!a->is_error);
	snprintf(want, sizeof(want), "%s had already exited with code 143", id);
	ck_assert_str_eq(a->text, want);
}
END_TEST

START_TEST(cwd_env_and_exit_code)
{
	const struct msh_ans *a;
	const char *id;
	char want[4200];

	msh_put("sub/keep", "", 0);
	a = msh_call("start_process", "{s:s, s:s, s:{s:s}}", "command", "pwd; echo \"$MSH_X\"; exit 5",
		     "cwd", "sub", "env", "MSH_X", "x value");
	ck_assert(!a->is_error);
	id = msh_str(a->sc, "id");
	ck_assert_int_eq(wait_exit(id), 5);
	a = msh_call("read_process_output", "{s:s}", "id", id);
	snprintf(want, sizeof(want), "%s/sub\nx value\n", msh_dir());
	ck_assert_str_eq(msh_str(a->sc, "output"), want);

	a = msh_call("start_process", "{s:s, s:s}", "command", "true", "cwd", "nowhere");
	ck_assert(a->is_error);
	snprintf(want, sizeof(want), "start_process: cwd %s/nowhere: No such file or directory", msh_dir());
	ck_assert_str_eq(a->text, want);
}
END_TEST

/* read_process_output waits for output, and for the exit, up to wait_ms. */
START_TEST(waits_for_output)
{
	const char *id = start("sleep 0.2; echo late; sleep 0.2");
	const struct msh_ans *a;
	uint64_t t0 = util_now_ms();

	a = msh_call("read_process_output", "{s:s, s:i}", "id", id, "wait_ms", 5000);
	ck_assert_str_eq(msh_str(a->sc, "output"), "late\n");
	ck_assert_uint_lt(util_now_ms() - t0, 4000);
	/* The next read waits for the exit, which adds no output. */
	a = msh_call("read_process_output", "{s:s, s:i}", "id", id, "wait_ms", 5000);
	ck_assert_str_eq(msh_str(a->sc, "output"), "");
	ck_assert_int_eq(msh_bool(a->sc, "running"), 0);
	ck_assert_int_eq(msh_int(a->sc, "exit_code"), 0);
	ck_assert_uint_lt(util_now_ms() - t0, 4000);

	/* Without wait_ms the answer is immediate. */
	id = start("sleep 30");
	t0 = util_now_ms();
	a = msh_call("read_process_output", "{s:s}", "id", id);
	ck_assert_str_eq(msh_str(a->sc, "output"), "");
	ck_assert_int_eq(msh_bool(a->sc, "running"), 1);
	ck_assert_uint_lt(util_now_ms() - t0, 1000);
}
END_TEST

/* kill_process ends the whole tree; other signals go to the group. */
START_TEST(kill_ends_the_tree_and_sends_other_signals)
{
	const struct msh_ans *a;
	const char *id, *out;
	char want[128];
	long bg;

	id = start("sleep 30 & echo $!; wait");
	bg = strtol(read_until(id, "\n"), NULL, 10);
	ck_assert_int_gt(bg, 0);
	ck_assert(!msh_pid_gone((pid_t)bg));
	a = msh_call("kill_process", "{s:s, s:s}", "id", id, "signal", "KILL");
	snprintf(want, sizeof(want), "sent SIGKILL to %s and every process it started", id);
	ck_assert_str_eq(a->text, want);
	ck_assert_int_eq(wait_exit(id), 128 + SIGKILL);
	ck_assert_msg(msh_pid_gone((pid_t)bg), "background child %ld survived", bg);

	id = start("trap 'echo got USR1; exit 5' USR1; echo ready; while :; do sleep 0.05; done");
	read_until(id, "ready\n");
	a = msh_call("kill_process", "{s:s, s:s}", "id", id, "signal", "SIGUSR1");
	snprintf(want, sizeof(want), "sent SIGUSR1 to %s's process group", id);
	ck_assert_str_eq(a->text, want);
	ck_assert_int_eq(wait_exit(id), 5);
	a = msh_call("read_process_output", "{s:s}", "id", id);
	/* bash may first report its sleep's death ("User defined signal 1"). */
	out = msh_str(a->sc, "output");
	ck_assert_msg(strlen(out) >= 9 && strcmp(out + strlen(out) - 9, "got USR1\n") == 0, "%s", out);
}
END_TEST

/* TERM goes to the whole tree through the helper, which follows with
 * SIGKILL after its grace period (1 s): a process that traps TERM ends too
 * (a signal to the process group alone would leave it running). */
START_TEST(kill_escalates_when_term_is_ignored)
{
	const char *id = start("trap 'echo ignored TERM' TERM; echo ready; while :; do sleep 0.05; done");
	const struct msh_ans *a;
	uint64_t t0;

	read_until(id, "ready\n");
	t0 = util_now_ms();
	a = msh_call("kill_process", "{s:s}", "id", id);
	ck_assert(!a->is_error);
	ck_assert_int_eq(wait_exit(id), 128 + SIGKILL);
	ck_assert_uint_ge(util_now_ms() - t0, 900);
	ck_assert_uint_lt(util_now_ms() - t0, 4500);
	a = msh_call("read_process_output", "{s:s}", "id", id);
	ck_assert_msg(strstr(msh_str(a->sc, "output"), "ignored TERM\n"), "%s", msh_str(a->sc, "output"));
}
END_TEST

START_TEST(refuses_bad_arguments)
{
	const struct msh_ans *a;

	a = msh_call("read_process_output", "{s:s}", "id", "x1");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_str_eq(a->message, "`id` must be a process id like \"p1\" (from start_process)");
	/* ids past an int, signs and blanks are not ids (p4294967297 once
	 * named p1) */
	{
		static const char *const bad[] = {"p4294967297", "p2147483648", "p-1", "p+1", "p 1",
						  "p", "", "p0", "p1x"};

		for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
			a = msh_call("kill_process", "{s:s}", "id", bad[i]);
			ck_assert_msg(a->code == -32602, "%s: %ld %s", bad[i], (long)a->code,
				      a->text ? a->text : "");
		}
	}
	a = msh_call("read_process_output", "{s:s, s:i}", "id", "p1", "max_bytes", 0);
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`max_bytes` must be at least 1"), "%s", a->message);
	a = msh_call("read_process_output", "{s:s, s:i}", "id", "p1", "wait_ms", 60001);
	ck_assert_int_eq(a->code, -32602);
	a = msh_call("kill_process", "{s:s, s:s}", "id", "p1", "signal", "BOGUS");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`signal` must be one of TERM, KILL"), "%s", a->message);
	a = msh_call("start_process", "{}");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`command` is required"), "%s", a->message);

	/* Well-formed ids of no process are the tool's failures. */
	a = msh_call("read_process_output", "{s:s}", "id", "p999");
	ck_assert_int_eq(a->code, 0);
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, "read_process_output: no process p999 (see list_processes)");
	a = msh_call("kill_process", "{s:s}", "id", "999");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, "kill_process: no process p999 (see list_processes)");

	a = msh_call("list_processes", "{}");
	ck_assert_uint_eq(json_array_size(json_object_get(a->sc, "processes")), 0);
	ck_assert_str_eq(a->text, "[]");
}
END_TEST

/* The buffer keeps the last `ring` bytes; offsets stay absolute. */
START_TEST(bounded_buffer_and_offsets)
{
	/* Two writes, so the second wraps around the ring. */
	const char *id = start("printf 0123456789abcdefghij; sleep 0.1; printf klmnopqrstuvwxyz");
	const struct msh_ans *a;

	ck_assert_int_eq(wait_exit(id), 0);
	a = msh_call("read_process_output", "{s:s, s:i}", "id", id, "offset", 0);
	ck_assert_str_eq(msh_str(a->sc, "output"), "klmnopqrstuvwxyz");
	ck_assert_int_eq(msh_int(a->sc, "dropped_bytes"), 20);
	ck_assert_int_eq(msh_int(a->sc, "offset"), 20);
	ck_assert_int_eq(msh_int(a->sc, "next_offset"), 36);
	ck_assert_int_eq(msh_int(a->sc, "output_bytes"), 36);
	ck_assert_str_eq(msh_item(a, 0), "[... 20 earlier bytes were dropped from the buffer ...]");

	a = msh_call("read_process_output", "{s:s, s:i, s:i}", "id", id, "offset", 30, "max_bytes", 3);
	ck_assert_str_eq(msh_str(a->sc, "output"), "uvw");
	ck_assert_int_eq(msh_int(a->sc, "next_offset"), 33);
	ck_assert_int_eq(msh_int(a->sc, "dropped_bytes"), 0);
	a = msh_call("read_process_output", "{s:s}", "id", id); /* on from 33 */
	ck_assert_str_eq(msh_str(a->sc, "output"), "xyz");
	a = msh_call("read_process_output", "{s:s, s:i}", "id", id, "offset", 1000);
	ck_assert_str_eq(msh_str(a->sc, "output"), "");
	ck_assert_int_eq(msh_int(a->sc, "offset"), 36);
}
END_TEST

/* At max_procs running processes start_process says no; an exited one
 * makes room (and its entry goes). */
START_TEST(limits_processes_at_once)
{
	const char *p1 = start("sleep 30"), *p2 = start("sleep 30"), *p3;
	const struct msh_ans *a;
	char want[128];

	a = msh_call("start_process", "{s:s}", "command", "true");
	ck_assert_int_eq(a->code, 0);
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, "start_process: 2 processes are running already; kill_process one first");
	ck_assert_uint_eq(json_array_size(json_object_get(msh_call("list_processes", "{}")->sc, "processes")), 2);

	msh_call("kill_process", "{s:s}", "id", p1);
	ck_assert_int_eq(wait_exit(p1), 128 + SIGTERM);
	p3 = start("sleep 30");
	ck_assert_str_ne(p3, p1);
	ck_assert_str_ne(p3, p2);
	ck_assert_ptr_null(entry(p1));
	ck_assert_ptr_nonnull(entry(p2));
	ck_assert_ptr_nonnull(entry(p3));
	a = msh_call("read_process_output", "{s:s}", "id", p1);
	ck_assert(a->is_error);
	snprintf(want, sizeof(want), "read_process_output: no process %s (see list_processes)", p1);
	ck_assert_str_eq(a->text, want);
}
END_TEST

Suite *suite_msh_procs(void)
{
	Suite *s = suite_create("msh_procs");
	TCase *tc = tcase_create("procs"), *small = tcase_create("procs_limits");

	tcase_add_unchecked_fixture(tc, msh_t_root_make, msh_t_root_remove);
	tcase_add_checked_fixture(tc, setup, msh_t_server_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, start_read_list_and_kill);
	tcase_add_test(tc, cwd_env_and_exit_code);
	tcase_add_test(tc, waits_for_output);
	tcase_add_test(tc, kill_ends_the_tree_and_sends_other_signals);
	tcase_add_test(tc, kill_escalates_when_term_is_ignored);
	tcase_add_test(tc, refuses_bad_arguments);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(small, msh_t_root_make, msh_t_root_remove);
	tcase_add_checked_fixture(small, setup_small, msh_t_server_teardown);
	tcase_set_timeout(small, 30);
	tcase_add_test(small, bounded_buffer_and_offsets);
	tcase_add_test(small, limits_processes_at_once);
	suite_add_tcase(s, small);
	return s;
}
