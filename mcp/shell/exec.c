/* run_command: one shell command with a timeout that kills its whole
 * process tree, capped output, progress notifications while it runs, and
 * cancellation.  The worker thread of the call polls the command's pipes
 * itself; see spawn.h for how the tree is kept together. */
#include "mcp/shell/shell.h"
#include "mcp/shell/spawn.h"
#include "mcp/lib/cap.h"
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROGRESS_EVERY_MS 2000
#define KILL_WAIT_MS 5000

static const char run_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"command\":{\"type\":\"string\",\"description\":\"Shell command line, run with bash -c (pipes, redirections, && work).\"},"
	"\"cwd\":{\"type\":\"string\",\"description\":\"Working directory (default: the home directory).\"},"
	"\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},\"description\":\"Extra environment variables.\"},"
	"\"stdin\":{\"type\":\"string\",\"description\":\"Text written to the command's standard input (default: empty).\"},"
	"\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Kill the command and everything it started after this many milliseconds (default 30000).\"}"
	"},\"required\":[\"command\"],\"additionalProperties\":false}";

static const char run_out_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
	"\"exit_code\":{\"type\":\"integer\"},\"timed_out\":{\"type\":\"boolean\"},"
	"\"duration_ms\":{\"type\":\"integer\"}},"
	"\"required\":[\"stdout\",\"stderr\",\"exit_code\"]}";

/* Reads what is available on *fd into cap; closes it at EOF. */
static void drain(int *fd, struct mcp_cap *cap)
{
	char buf[16384];
	ssize_t n = read(*fd, buf, sizeof(buf));

	if (n > 0)
		mcp_cap_add(cap, buf, (size_t)n);
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		util_closep(fd);
}

static int run_command(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		       struct err *e)
{
	struct msh_conf *conf = mcp_call_ud(call);
	const char *command, *cwd = NULL, *in_text = NULL;
	long long timeout;
	json_t *env = NULL;
	struct msh_spawn_opts o = {0};
	struct msh_child ch;
	struct mcp_cap out, errc;
	struct err se = ERR_INIT;
	size_t in_len = 0, in_off = 0, out_len = 0, err_len = 0;
	uint64_t t0 = util_now_ms(), deadline, next_progress, kill_at = 0;
	bool timed_out = false, cancelled = false, reaped = false;
	char *out_text, *err_text, cwd_buf[4096];
	int status = 0, code, signo, exit_step = 1;

	if (cj_req_str(args, "command", &command, e) || cj_get_str(args, "cwd", NULL, &cwd, e) ||
	    cj_get_str(args, "stdin", NULL, &in_text, e) || cj_get_obj(args, "env", &env, e) ||
	    cj_get_int(args, "timeout_ms", conf->timeout_ms, &timeout, e))
		return -1;
	if (timeout < 1 || timeout > conf->max_timeout_ms)
		return err_set(e, 0, "`timeout_ms` must be between 1 and %ld", conf->max_timeout_ms);
	o.shell = conf->shell;
	o.command = command;
	o.cwd = cwd ? msh_path(cwd, cwd_buf) : NULL;
	o.env = env;
	o.want_stdin = in_text && *in_text;
	if (msh_spawn(&o, &ch, &se)) {
		mcp_result_error(res, "run_command: %s", se.msg);
		return 0;
	}
	if (o.want_stdin)
		in_len = strlen(in_text);
	mcp_cap_init(&out, conf->max_output);
	mcp_cap_init(&errc, conf->max_output);
	deadline = t0 + (uint64_t)timeout;
	next_progress = t0 + PROGRESS_EVERY_MS;
	/* Until the command has exited: its pipes may close long before (a
	 * daemon that closed its output, `exec >&-`), and the timeout still
	 * holds then. */
	while (!reaped) {
		struct pollfd p[3] = {{ch.out_fd, POLLIN, 0}, {ch.err_fd, POLLIN, 0}, {ch.in_fd, POLLOUT, 0}};
		uint64_t now = util_now_ms();
		int wait = 250;

		if (!kill_at && (now >= deadline || mcp_call_cancelled(call))) {
			timed_out = now >= deadline;
			cancelled = !timed_out;
			msh_kill_tree(&ch);
			kill_at = now;
			util_closep(&ch.in_fd);
		}
		if (kill_at && now - kill_at > KILL_WAIT_MS) {
			kill(ch.helper, SIGKILL); /* the helper itself is stuck: give up on the pipes */
			break;
		}
		if (!kill_at && now >= next_progress) {
			char msg[64];
			snprintf(msg, sizeof(msg), "running for %llu s", (unsigned long long)(now - t0) / 1000);
			mcp_call_progress(call, (double)(now - t0), (double)timeout, msg);
			next_progress = now + PROGRESS_EVERY_MS;
		}
		if (!kill_at && deadline - now < (uint64_t)wait)
			wait = (int)(deadline - now);
		if (ch.out_fd < 0 && ch.err_fd < 0) {
			/* Pipes closed: the exit is usually a moment away, so
			 * look again after 1, 2, 4 ... 50 ms. */
			pid_t r = waitpid(ch.helper, &status, WNOHANG);

			if (r == ch.helper || (r == -1 && errno != EINTR)) {
				reaped = r == ch.helper;
				break;
			}
			if (wait > exit_step)
				wait = exit_step;
			exit_step = exit_step >= 25 ? 50 : exit_step * 2;
		}
		if (poll(p, 3, wait) == -1 && errno != EINTR)
			break;
		if (p[0].revents)
			drain(&ch.out_fd, &out);
		if (p[1].revents)
			drain(&ch.err_fd, &errc);
		if (p[2].revents & POLLOUT) {
			ssize_t n = write(ch.in_fd, in_text + in_off, in_len - in_off > 65536 ? 65536 : in_len - in_off);
			if (n > 0)
				in_off += (size_t)n;
			if (n < 0 || in_off == in_len)
				util_closep(&ch.in_fd);
		} else if (p[2].revents) {
			util_closep(&ch.in_fd);
		}
	}
	util_closep(&ch.out_fd);
	util_closep(&ch.err_fd);
	util_closep(&ch.in_fd);
	while (!reaped && waitpid(ch.helper, &status, 0) == -1 && errno == EINTR)
		;
	code = msh_exit_code(status, &signo);
	/* Lengths, not C strings: output may hold NUL bytes, and what follows
	 * one is output too. */
	out_text = mcp_cap_text(&out, &out_len);
	err_text = mcp_cap_text(&errc, &err_len);
	if (out_text && err_text) {
		json_t *sc = json_pack("{s:s%, s:s%, s:i, s:b, s:I}", "stdout", out_text, out_len,
				       "stderr", err_text, err_len, "exit_code", code, "timed_out",
				       timed_out, "duration_ms", (json_int_t)(util_now_ms() - t0));
		if (timed_out)
			mcp_result_error(res, "run_command: timed out after %lld ms; the command and every process it started were killed", timeout);
		else if (cancelled)
			mcp_result_error(res, "run_command: cancelled; the command and every process it started were killed");
		if (out_len)
			mcp_result_textn(res, out_text, out_len);
		if (err_len) {
			char *t = malloc(err_len + 9);

			if (t) {
				memcpy(t, "[stderr]\n", 9);
				memcpy(t + 9, err_text, err_len);
				mcp_result_textn(res, t, err_len + 9);
			}
			free(t);
		}
		if (signo && !timed_out)
			mcp_result_text(res, "[exit code: %d (killed by signal %d)]", code, signo);
		else
			mcp_result_text(res, "[exit code: %d]", code);
		if (sc && signo)
			json_object_set_new(sc, "signal", json_integer(signo));
		mcp_result_structured(res, sc);
	} else {
		mcp_result_error(res, "run_command: out of memory");
	}
	free(out_text);
	free(err_text);
	mcp_cap_free(&out);
	mcp_cap_free(&errc);
	return 0;
}

int msh_exec_register(struct mcp_server *s, struct msh_conf *c, struct err *e)
{
	static char desc[1024];
	struct mcp_tool t = {
		.name = "run_command",
		.title = "Run a shell command",
		.description = desc,
		.input_schema = run_schema,
		.output_schema = run_out_schema,
		.destructive = true,
		.fn = run_command,
		.ud = c,
	};

	snprintf(desc, sizeof(desc),
		 "Run a shell command in the sandbox (bash -c, as the unprivileged user `agent`) and "
		 "wait for it. Returns stdout, stderr and exit_code. A non-zero exit code is reported, "
		 "not treated as a tool failure. Each stream is capped at %zu bytes; longer output ends "
		 "with \"[... truncated: N more bytes ...]\" (redirect to a file and use read_file or "
		 "grep for big outputs). timeout_ms (default %ld, at most %ld) kills the command and "
		 "every process it started. Processes the command leaves running in the background are "
		 "killed when it exits: use start_process for servers and other long-running programs.",
		 c->max_output, c->timeout_ms, c->max_timeout_ms);
	return mcp_server_add_tool(s, &t, e);
}
