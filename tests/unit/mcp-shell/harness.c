/* The fixture of unit-mcp-shell; see suites.h. */
#include "tests/unit/mcp-shell/suites.h"
#include "mcp/shell/spawn.h"
#include "common/http_client.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[PATH_MAX - 64]; /* made in Check's parent, inherited by each test */
static char dir[PATH_MAX];
static struct msh_conf conf;
static struct mcp_server *srv;
static pthread_t loop_th;
static int port, next_id;
static char sid[64];

/* Everything handed out to a test, freed at its teardown. */
struct kept {
	struct kept *next;
	struct msh_ans *ans;
	char *mem;
};
static struct kept *kept;

static void keep(struct msh_ans *a, char *mem)
{
	struct kept *k = calloc(1, sizeof(*k));

	ck_assert_ptr_nonnull(k);
	k->ans = a;
	k->mem = mem;
	k->next = kept;
	kept = k;
}

static void free_kept(void)
{
	while (kept) {
		struct kept *k = kept;
		kept = k->next;
		if (k->ans) {
			json_decref(k->ans->raw);
			free(k->ans->text);
			free(k->ans);
		}
		free(k->mem);
		free(k);
	}
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

static void rm_rf(const char *p)
{
	if (*p)
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void msh_t_root_make(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(root, sizeof(root), "%s/unit-mcp-shell.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_msg(mkdtemp(root), "mkdtemp %s: %s", root, strerror(errno));
}

void msh_t_root_remove(void)
{
	rm_rf(root);
	root[0] = '\0';
}

void msh_t_dir_setup(void)
{
	struct err e = ERR_INIT;

	log_init("unit-mcp-shell", LOG_WARN, 2);
	ck_assert_msg(root[0], "no root directory");
	snprintf(dir, sizeof(dir), "%s/t.XXXXXX", root);
	ck_assert_msg(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
	ck_assert_int_eq(setenv("HOME", dir, 1), 0);
	umask(022);
	ck_assert_msg(msh_spawn_init(&e) == 0, "%s", e.msg);
}

void msh_t_dir_teardown(void)
{
	free_kept();
	rm_rf(dir);
	dir[0] = '\0';
}

static void *loop(void *arg)
{
	mcp_server_run(arg);
	return NULL;
}

/* POSTs body to /mcp; returns the status and the body (caller frees). */
static long post(const char *body, char **out, char *session_out)
{
	char url[64], sh[128];
	const char *hdrs[] = {"Content-Type: application/json", "Accept: application/json, text/event-stream",
			      sh, NULL};
	struct http_resp r = {0};
	struct err e = ERR_INIT;
	long st;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
	snprintf(sh, sizeof(sh), "Mcp-Session-Id: %s", sid);
	if (!sid[0])
		hdrs[2] = NULL;
	ck_assert_msg(http_request(&(struct http_req){.method = "POST", .url = url, .headers = hdrs,
						     .body = body, .body_len = strlen(body),
						     .timeout_ms = 30000},
				   &r, &e) == 0,
		      "POST %s: %s", body, e.msg);
	st = r.status;
	*out = strdup(r.body.data ? r.body.data : "");
	ck_assert_ptr_nonnull(*out);
	if (session_out) {
		const char *h = http_resp_header(&r, "mcp-session-id");
		snprintf(session_out, 64, "%s", h ? h : "");
	}
	http_resp_free(&r);
	return st;
}

void msh_t_server_setup(const struct msh_conf *c)
{
	struct err e = ERR_INIT;
	char *b = NULL;

	msh_t_dir_setup();
	conf = *c;
	srv = mcp_server_new(&(struct mcp_server_opts){.name = "unit-mcp-shell", .version = "1",
						       .listen = "127.0.0.1"},
			     &e);
	ck_assert_msg(srv, "%s", e.msg);
	ck_assert_msg(msh_exec_register(srv, &conf, &e) == 0 && msh_procs_register(srv, &conf, &e) == 0 &&
			      msh_files_register(srv, &conf, &e) == 0 && msh_search_register(srv, &conf, &e) == 0,
		      "%s", e.msg);
	port = mcp_server_port(srv);
	ck_assert_int_eq(pthread_create(&loop_th, NULL, loop, srv), 0);
	sid[0] = '\0';
	ck_assert_int_eq(post("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
			      "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
			      "\"clientInfo\":{\"name\":\"unit\",\"version\":\"1\"}}}",
			      &b, sid),
			 200);
	free(b);
	ck_assert_int_eq(strlen(sid), 32);
	next_id = 1;
}

void msh_t_server_teardown(void)
{
	uint64_t until = util_now_ms() + 5000;

	/* Background processes end with the test: kill their trees and wait
	 * until every one has been reaped. */
	msh_procs_shutdown();
	for (;;) {
		const struct msh_ans *a = msh_call("list_processes", "{}");
		const json_t *list = json_object_get(a->sc, "processes"), *p;
		size_t i;
		bool running = false;

		json_array_foreach(list, i, p)
			running |= msh_bool(p, "running") == 1;
		if (!running || util_now_ms() > until)
			break;
		usleep(20 * 1000);
	}
	raise(SIGTERM); /* the server's handler: stop once running calls end */
	pthread_join(loop_th, NULL);
	mcp_server_free(srv);
	srv = NULL;
	msh_t_dir_teardown();
}

const struct msh_ans *msh_call(const char *tool, const char *fmt, ...)
{
	struct msh_ans *a = calloc(1, sizeof(*a));
	json_error_t je;
	json_t *args, *req, *result, *err, *content, *item;
	char *body, *out = NULL;
	struct buf text = BUF_INIT(16u << 20);
	va_list ap;
	size_t i;

	ck_assert_ptr_nonnull(a);
	keep(a, NULL);
	va_start(ap, fmt);
	args = json_vpack_ex(&je, 0, fmt, ap);
	va_end(ap);
	ck_assert_msg(args, "%s: bad arguments format: %s", tool, je.text);
	req = json_pack("{s:s, s:i, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "id", next_id++, "method",
			"tools/call", "params", "name", tool, "arguments", args);
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	ck_assert_ptr_nonnull(body);
	ck_assert_int_eq(post(body, &out, NULL), 200);
	a->raw = json_loads(out, JSON_ALLOW_NUL, &je); /* output may hold NUL bytes */
	ck_assert_msg(a->raw, "%s: not JSON (%s): %s", body, je.text, out);
	free(body);
	free(out);
	result = json_object_get(a->raw, "result");
	err = json_object_get(a->raw, "error");
	ck_assert_msg(result || err, "neither result nor error");
	if (err) {
		a->code = (long)json_integer_value(json_object_get(err, "code"));
		a->message = json_string_value(json_object_get(err, "message"));
	}
	if (!a->message)
		a->message = "";
	a->sc = json_object_get(result, "structuredContent");
	a->is_error = json_is_true(json_object_get(result, "isError"));
	content = json_object_get(result, "content");
	json_array_foreach(content, i, item) {
		const char *t = json_string_value(json_object_get(item, "text"));
		ck_assert_int_eq(buf_appendf(&text, NULL, "%s%s", i ? "\n" : "", t ? t : ""), 0);
	}
	a->nitems = json_array_size(content);
	a->text = buf_take(&text, NULL);
	if (!a->text)
		a->text = strdup("");
	ck_assert_ptr_nonnull(a->text);
	return a;
}

const char *msh_item(const struct msh_ans *a, size_t i)
{
	const json_t *content = json_object_get(json_object_get(a->raw, "result"), "content");
	const char *t = json_string_value(json_object_get(json_array_get(content, i), "text"));

	return t ? t : "<absent>";
}

const char *msh_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "<absent>";
}

long long msh_int(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : MSH_NO_INT;
}

int msh_bool(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_boolean(v) ? json_is_true(v) : -1;
}

const char *msh_dir(void)
{
	return dir;
}

const char *msh_p(const char *rel)
{
	char *p = NULL;

	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, rel), 0);
	keep(NULL, p);
	return p;
}

void msh_put(const char *rel, const char *content, ssize_t len)
{
	const char *p = msh_p(rel);
	int fd;

	ck_assert_int_eq(util_mkdir_parents(p, 0755), 0);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_msg(fd >= 0, "%s: %s", p, strerror(errno));
	ck_assert_int_eq(util_write_all(fd, content, len < 0 ? strlen(content) : (size_t)len), 0);
	close(fd);
}

const char *msh_get(const char *rel)
{
	FILE *f = fopen(msh_p(rel), "rb");
	char *data;
	size_t n;

	if (!f)
		return NULL;
	data = calloc(1, 1u << 16);
	ck_assert_ptr_nonnull(data);
	n = fread(data, 1, (1u << 16) - 1, f);
	data[n] = '\0';
	fclose(f);
	keep(NULL, data);
	return data;
}

bool msh_pid_gone(pid_t pid)
{
	return pid > 0 && kill(pid, 0) == -1 && errno == ESRCH;
}

pid_t msh_wait_pidfile(const char *rel)
{
	uint64_t until = util_now_ms() + 5000;

	for (;;) {
		const char *s = msh_get(rel);
		long v = s ? strtol(s, NULL, 10) : 0;
		if (s && strchr(s, '\n') && v > 0)
			return (pid_t)v;
		ck_assert_msg(util_now_ms() < until, "no pid in %s", rel);
		usleep(10 * 1000);
	}
}
