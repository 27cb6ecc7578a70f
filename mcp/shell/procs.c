/* Background processes: start_process, list_processes,
 * read_process_output, kill_process.  Each process runs under a tree
 * helper (spawn.h) with stdout and stderr merged into one pipe; a reader
 * thread per process copies the output into a bounded ring and reaps the
 * helper at EOF.  Output is addressed by absolute byte offsets since the
 * start, so a client can resume where it stopped and learn how much the
 * ring dropped.  A process table entry stays after exit (so its output can
 * still be read) until the table is full, then the oldest exited one goes. */
#include "mcp/shell/shell.h"
#include "mcp/shell/spawn.h"
#include "mcp/lib/cap.h"
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct proc {
	int id;
	char *command;
	struct msh_child ch;
	uint64_t started;
	bool running;
	int exit_code, signo;
	char *ring;
	size_t cap;
	unsigned long long total; /* bytes ever written; the ring holds the last min(total, cap) */
	unsigned long long cursor; /* where the next read without offset starts */
	struct proc *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct proc *procs;
static int next_id = 1;
static unsigned starting; /* start_process calls between their check and their insert */

static void unreserve(void)
{
	pthread_mutex_lock(&mu);
	starting--;
	pthread_mutex_unlock(&mu);
}

static struct proc *find(int id)
{
	for (struct proc *p = procs; p; p = p->next)
		if (p->id == id)
			return p;
	return NULL;
}

static void *reader(void *arg)
{
	struct proc *p = arg;
	char buf[16384];
	int status = 0, fd = p->ch.out_fd;
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		pthread_mutex_lock(&mu);
		for (ssize_t i = 0; i < n; i++)
			p->ring[(p->total + (unsigned long long)i) % p->cap] = buf[i];
		p->total += (unsigned long long)n;
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&mu);
	}
	close(fd);
	while (waitpid(p->ch.helper, &status, 0) == -1 && errno == EINTR)
		;
	pthread_mutex_lock(&mu);
	p->exit_code = msh_exit_code(status, &p->signo);
	p->running = false;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static json_t *describe(const struct proc *p)
{
	json_t *v = json_pack("{s:s, s:s, s:i, s:b, s:I, s:I}", "id", "", "command", p->command, "pid",
			      (int)p->ch.pgid, "running", p->running, "output_bytes",
			      (json_int_t)p->total, "age_ms", (json_int_t)(util_now_ms() - p->started));
	char id[16];

	snprintf(id, sizeof(id), "p%d", p->id);
	if (v) {
		json_object_set_new(v, "id", json_string(id));
		if (!p->running)
			json_object_set_new(v, "exit_code", json_integer(p->exit_code));
	}
	return v;
}

/* Parses "p3" or "3". */
static int parse_id(const json_t *args, struct err *e)
{
	const char *s;
	char *end;
	long v;

	if (cj_req_str(args, "id", &s, e))
		return -1;
	if (s[0] == 'p')
		s++;
	errno = 0;
	v = *s >= '0' && *s <= '9' ? strtol(s, &end, 10) : 0;
	if (v <= 0 || *end || errno || v > INT_MAX)
		return err_set(e, 0, "`id` must be a process id like \"p1\" (from start_process)");
	return (int)v;
}

static int start_process(struct mcp_call *call, const json_t *args, struct mcp_result *res,
			 struct err *e)
{
	struct msh_conf *conf = mcp_call_ud(call);
	const char *command, *cwd = NULL;
	json_t *env = NULL;
	char cwd_buf[4096];
	struct msh_spawn_opts o = {0};
	struct err se = ERR_INIT;
	struct proc *p, **pp, *victim = NULL;
	unsigned n = 0;
	pthread_t th;
	pthread_attr_t attr;

	if (cj_req_str(args, "command", &command, e) || cj_get_str(args, "cwd", NULL, &cwd, e) ||
	    cj_get_obj(args, "env", &env, e))
		return -1;
	pthread_mutex_lock(&mu);
	n = starting; /* slots taken by calls that are spawning right now */
	for (struct proc *q = procs; q; q = q->next) {
		n++;
		if (!q->running)
			victim = q; /* the list is newest first: this ends as the oldest */
	}
	if (n >= conf->max_procs && !victim) {
		pthread_mutex_unlock(&mu);
		mcp_result_error(res, "start_process: %u processes are running already; kill_process one first",
				 n);
		return 0;
	}
	if (n >= conf->max_procs) {
		for (pp = &procs; *pp != victim; pp = &(*pp)->next)
			;
		*pp = victim->next;
		free(victim->ring);
		free(victim->command);
		free(victim);
	}
	starting++; /* the slot is this call's until it inserts or fails */
	pthread_mutex_unlock(&mu);
	p = calloc(1, sizeof(*p));
	if (p) {
		p->ring = malloc(conf->ring);
		p->command = strdup(command);
	}
	if (!p || !p->ring || !p->command) {
		if (p) {
			free(p->ring);
			free(p->command);
		}
		free(p);
		unreserve();
		return err_set(e, ENOMEM, "start_process");
	}
	p->cap = conf->ring;
	o.shell = conf->shell;
	o.command = command;
	o.cwd = cwd ? msh_path(cwd, cwd_buf) : NULL;
	o.env = env;
	o.merge_stderr = true;
	if (msh_spawn(&o, &p->ch, &se)) {
		free(p->ring);
		free(p->command);
		free(p);
		unreserve();
		mcp_result_error(res, "start_process: %s", se.msg);
		return 0;
	}
	p->started = util_now_ms();
	p->running = true;
	pthread_mutex_lock(&mu);
	starting--;
	p->id = next_id++;
	p->next = procs;
	procs = p;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256u << 10);
	if (pthread_create(&th, &attr, reader, p)) {
		msh_kill_tree(&p->ch);
		p->running = false;
	}
	pthread_attr_destroy(&attr);
	mcp_result_structured(res, describe(p));
	mcp_result_text(res, "started p%d (pid %d): %s\nUse read_process_output with id \"p%d\" to see its output.",
			p->id, (int)p->ch.pgid, command, p->id);
	pthread_mutex_unlock(&mu);
	return 0;
}

static int list_processes(struct mcp_call *call, const json_t *args, struct mcp_result *res,
			  struct err *e)
{
	json_t *list = json_array();
	char *text;

	(void)call;
	(void)args;
	(void)e;
	pthread_mutex_lock(&mu);
	for (struct proc *p = procs; p; p = p->next)
		json_array_append_new(list, describe(p));
	pthread_mutex_unlock(&mu);
	text = json_dumps(list, JSON_INDENT(1));
	mcp_result_text(res, "%s", text ? text : "[]");
	free(text);
	mcp_result_structured(res, json_pack("{s:o}", "processes", list));
	return 0;
}

static int read_output(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		       struct err *e)
{
	long long off, max, wait;
	unsigned long long start, from, to, dropped = 0;
	struct proc *p;
	char *chunk, *clean;
	size_t clean_len;
	int id = parse_id(args, e);
	uint64_t deadline;

	(void)call;
	if (id < 0 || cj_get_int(args, "offset", -1, &off, e) || cj_get_int(args, "max_bytes", 65536, &max, e) ||
	    cj_get_int(args, "wait_ms", 0, &wait, e))
		return -1;
	if (max < 1 || max > 1 << 20)
		return err_set(e, 0, "`max_bytes` must be between 1 and 1048576");
	if (wait < 0 || wait > 60000)
		return err_set(e, 0, "`wait_ms` must be between 0 and 60000");
	deadline = util_now_ms() + (uint64_t)wait;
	pthread_mutex_lock(&mu);
	p = find(id);
	if (!p) {
		pthread_mutex_unlock(&mu);
		mcp_result_error(res, "read_process_output: no process p%d (see list_processes)", id);
		return 0;
	}
	from = off >= 0 ? (unsigned long long)off : p->cursor;
	/* Optionally wait for output beyond `from`, or for the exit. */
	while (wait && p->running && p->total <= from && !mcp_call_cancelled(call)) {
		struct timespec ts;
		uint64_t now = util_now_ms();
		if (now >= deadline)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&changed, &mu, &ts);
	}
	start = p->total > p->cap ? p->total - p->cap : 0;
	if (from > p->total)
		from = p->total;
	if (from < start) {
		dropped = start - from;
		from = start;
	}
	to = from + (unsigned long long)max < p->total ? from + (unsigned long long)max : p->total;
	chunk = malloc((size_t)(to - from) + 1);
	if (!chunk) {
		pthread_mutex_unlock(&mu);
		return err_set(e, ENOMEM, "read_process_output");
	}
	for (unsigned long long i = from; i < to; i++)
		chunk[i - from] = p->ring[i % p->cap];
	p->cursor = to;
	clean = mcp_utf8_clean(chunk, (size_t)(to - from), &clean_len);
	free(chunk);
	{
		json_t *sc = describe(p);
		if (sc && clean) {
			json_object_set_new(sc, "output", json_stringn(clean, clean_len));
			json_object_set_new(sc, "offset", json_integer((json_int_t)from));
			json_object_set_new(sc, "next_offset", json_integer((json_int_t)to));
			json_object_set_new(sc, "dropped_bytes", json_integer((json_int_t)dropped));
		}
		if (dropped)
			mcp_result_text(res, "[... %llu earlier bytes were dropped from the buffer ...]", dropped);
		mcp_result_textn(res, clean ? clean : "", clean ? clean_len : 0);
		if (p->running)
			mcp_result_text(res, "[p%d is running; next_offset %llu%s]", p->id, to,
					to < p->total ? "; more output is buffered" : "");
		else
			mcp_result_text(res, "[p%d exited with code %d; next_offset %llu]", p->id,
					p->exit_code, to);
		mcp_result_structured(res, sc);
	}
	free(clean);
	pthread_mutex_unlock(&mu);
	return 0;
}

static const struct {
	const char *name;
	int sig;
} signals[] = {{"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"HUP", SIGHUP},
	       {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP},
	       {"CONT", SIGCONT}};

static int kill_process(struct mcp_call *call, const json_t *args, struct mcp_result *res,
			struct err *e)
{
	const char *sname = "TERM";
	int id = parse_id(args, e), sig = 0;
	struct proc *p;

	(void)call;
	if (id < 0 || cj_get_str(args, "signal", "TERM", &sname, e))
		return -1;
	if (!strncasecmp(sname, "SIG", 3))
		sname += 3;
	for (size_t i = 0; i < ARRAY_LEN(signals); i++)
		if (!strcasecmp(sname, signals[i].name))
			sig = signals[i].sig;
	if (!sig)
		return err_set(e, 0, "`signal` must be one of TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT");
	pthread_mutex_lock(&mu);
	p = find(id);
	if (!p) {
		pthread_mutex_unlock(&mu);
		mcp_result_error(res, "kill_process: no process p%d (see list_processes)", id);
		return 0;
	}
	if (!p->running) {
		mcp_result_text(res, "p%d had already exited with code %d", id, p->exit_code);
	} else if (sig == SIGTERM || sig == SIGKILL) {
		if (sig == SIGKILL)
			kill(-p->ch.pgid, SIGKILL);
		msh_kill_tree(&p->ch); /* the helper ends the rest of the tree */
		mcp_result_text(res, "sent SIG%s to p%d and every process it started", sname, id);
	} else {
		kill(-p->ch.pgid, sig);
		mcp_result_text(res, "sent SIG%s to p%d's process group", sname, id);
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

void msh_procs_shutdown(void)
{
	pthread_mutex_lock(&mu);
	for (struct proc *p = procs; p; p = p->next)
		if (p->running)
			msh_kill_tree(&p->ch);
	pthread_mutex_unlock(&mu);
}

int msh_procs_register(struct mcp_server *s, struct msh_conf *c, struct err *e)
{
	static char read_desc[512];
	const struct mcp_tool tools[] = {
		{.name = "start_process", .title = "Start a background process",
		 .description = "Start a long-running command in the background (a server, a watcher, a "
				"build) and return at once with its id. stdout and stderr are merged and kept "
				"in a bounded buffer: read them with read_process_output; stop it with "
				"kill_process. Background processes end when the MCP server stops.",
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"command\":{\"type\":\"string\",\"description\":\"Shell command line (bash -c).\"},"
				 "\"cwd\":{\"type\":\"string\",\"description\":\"Working directory (default: the home directory).\"},"
				 "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}},"
				 "\"required\":[\"command\"],\"additionalProperties\":false}",
		 .destructive = true, .fn = start_process, .ud = c},
		{.name = "list_processes", .title = "List background processes",
		 .description = "List the processes started with start_process: id, command, pid, "
				"running, exit_code, output_bytes.",
		 .input_schema = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
		 .read_only = true, .fn = list_processes, .ud = c},
		{.name = "read_process_output", .title = "Read a background process's output",
		 .description = read_desc,
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"id\":{\"type\":\"string\"},"
				 "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Byte offset to read from (default: where the last read ended).\"},"
				 "\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1048576,\"description\":\"At most this many bytes (default 65536).\"},"
				 "\"wait_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000,\"description\":\"Wait up to this long for new output or the exit (default 0).\"}},"
				 "\"required\":[\"id\"],\"additionalProperties\":false}",
		 .read_only = true, .fn = read_output, .ud = c},
		{.name = "kill_process", .title = "Stop a background process",
		 .description = "Send a signal to a background process. TERM (default) and KILL end the "
				"process and every process it started; other signals (INT, HUP, USR1, ...) go "
				"to its process group.",
		 .input_schema = "{\"type\":\"object\",\"properties\":{"
				 "\"id\":{\"type\":\"string\"},"
				 "\"signal\":{\"type\":\"string\",\"description\":\"TERM (default), KILL, INT, HUP, QUIT, USR1, USR2, STOP or CONT.\"}},"
				 "\"required\":[\"id\"],\"additionalProperties\":false}",
		 .destructive = true, .fn = kill_process, .ud = c},
	};

	snprintf(read_desc, sizeof(read_desc),
		 "Read the output (stdout and stderr merged) of a process started with start_process. "
		 "Without offset it continues where the last read ended; next_offset in the answer is "
		 "where the next read starts. The last %zu bytes are kept; older output is reported as "
		 "dropped. Also tells whether the process still runs and its exit_code. wait_ms waits "
		 "for new output.",
		 c->ring);
	for (size_t i = 0; i < ARRAY_LEN(tools); i++)
		if (mcp_server_add_tool(s, &tools[i], e))
			return -1;
	return 0;
}
