/* cloche: the command-line client of the cloche portal (docs/cli.md).
 *
 *	cloche [--url URL] [--api-key KEY] [--json] [--timeout S] COMMAND [ARGS]
 *
 * Human tables by default, the server's JSON with --json.  Exit codes:
 * 0 ok, 1 other error (5xx...), 2 usage (bad flags or a request the portal
 * refused as malformed), 3 not found, 4 not allowed (401/403), 5 conflict
 * (409), 6 unavailable (503, or acquire's wait ran out), 7 cannot reach the
 * portal.  The API key is never printed, also not in errors. */
#include "cli/cli_config.h"
#include "cli/cli_out.h"

#include "common/http_client.h"
#include "common/json.h"
#include "common/version.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static struct cli_config cfg;
static bool as_json;
static long timeout_s = 60;

static const char usage[] =
	"usage: cloche [--url URL] [--api-key KEY] [--json] [--timeout S] COMMAND [ARGS]\n"
	"\n"
	"commands:\n"
	"  acquire [--template T] [--ttl S] [--wait S] [--persist] [--memory MB] [--cpus N]\n"
	"          [--pids N] [--egress none|HOST,HOST...] [--label K=V]... [--meta K=V]...\n"
	"          [--no-clipboard] [--resize] [--record]\n"
	"          [--idempotency-key K]          lease a sandbox (waits until it is ready)\n"
	"  list [--state S] [--label K=V] [--template T] [--history] [--all]\n"
	"                                         live sandboxes (--history: ended ones too;\n"
	"                                         --all: every page)\n"
	"  get ID                                 one sandbox\n"
	"  events ID                              its state changes\n"
	"  release ID...                          end leases (the sandboxes are destroyed)\n"
	"  keepalive ID [--ttl S]                 extend a lease\n"
	"  hibernate ID                           checkpoint it and stop it (state kept)\n"
	"  wake ID                                bring it back; renews the lease\n"
	"  fork ID [--count N]                    N copies (1..8) with their own tokens\n"
	"  vnc ID                                 the noVNC URL\n"
	"  mcp-config ID                          the mcpServers block for an MCP client\n"
	"  nodes | templates\n"
	"  keys create NAME [--role user|admin] | keys list | keys revoke ID\n"
	"  share ID [--mode view|control] [--ttl S] [--label L]\n"
	"                                         a link to its desktop (view-only by default)\n"
	"  shares ID | unshare ID SHARE           its share links; revoke one\n"
	"  record ID [--stop REC]                 start recording its screen (or stop REC)\n"
	"  recordings ID                          its recordings\n"
	"  download ID REC [-o FILE]              a recording's MP4 (default REC.mp4)\n"
	"  trace ID                               its action trace (JSON lines) on stdout\n"
	"\n"
	"The portal and key come from --url/--api-key, else CLOCHE_URL/CLOCHE_API_KEY,\n"
	"else ~/.config/cloche/config, else /var/lib/cloche/aio.env (written by make run).\n"
	"exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 not allowed, 5 conflict,\n"
	"            6 unavailable (or the wait ran out), 7 cannot reach the portal\n";

__attribute__((format(printf, 2, 3))) static int fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("cloche: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static long long now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* One API call.  *out gets the parsed body (any status).  Returns the exit
 * code; on an error it has printed `cloche: what: message`. */
static int call(const char *method, const char *path, json_t *body, json_t **out,
		const char *idem, long extra_s, long *status_out)
{
	char url[1024], authz[320], idh[200];
	const char *hdrs[4] = {authz, "Content-Type: application/json", NULL, NULL};
	struct http_req req = {.method = method, .url = url, .headers = hdrs};
	struct http_resp resp;
	struct err e = ERR_INIT;
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc;

	*out = NULL;
	if (!cfg.url[0])
		return fail(2, "no portal: give --url, set CLOCHE_URL, or run `make run` (it writes "
			       "/var/lib/cloche/aio.env)");
	snprintf(url, sizeof(url), "%s%s", cfg.url, path);
	snprintf(authz, sizeof(authz), "Authorization: Bearer %s", cfg.key);
	if (idem) {
		snprintf(idh, sizeof(idh), "Idempotency-Key: %s", idem);
		hdrs[2] = idh;
	}
	if (text) {
		req.body = text;
		req.body_len = strlen(text);
	}
	req.timeout_ms = (timeout_s + extra_s) * 1000;
	req.max_resp = 64u << 20;
	memset(&resp, 0, sizeof(resp));
	rc = http_request(&req, &resp, &e);
	free(text);
	if (rc == -1) {
		http_resp_free(&resp);
		return fail(7, "cannot reach the portal at %s: %s", cfg.url, e.msg);
	}
	if (status_out)
		*status_out = resp.status;
	*out = json_loads(buf_str(&resp.body), 0, NULL);
	rc = cli_exit_code(resp.status);
	if (rc != 0) {
		const char *m = json_string_value(
			json_object_get(json_object_get(*out, "error"), "message"));
		const char *ra = http_resp_header(&resp, "retry-after");

		if (resp.status == 401 && !cfg.key[0])
			fail(rc, "%s %s: no API key: give --api-key or set CLOCHE_API_KEY", method, path);
		else
			fail(rc, "%s %s: %ld: %s%s%s%s", method, path, resp.status,
			     m ? m : "the portal gave no message", ra ? " (retry after " : "",
			     ra ? ra : "", ra ? " s)" : "");
	}
	http_resp_free(&resp);
	return rc;
}

static void print_json(const json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (s)
		puts(s);
	free(s);
}

static void print_buf(struct buf *b)
{
	fputs(buf_str(b), stdout);
	buf_free(b);
}

/* Prints rows (a JSON array of arrays of n strings) as a table under h. */
static void print_rows(const char *const *h, size_t n, json_t *rows)
{
	struct buf b = BUF_INIT(16u << 20);

	cli_table(&b, h, n, rows);
	print_buf(&b);
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static void print_sandbox(const json_t *sb)
{
	char exp[40];
	json_t *urls = json_object_get(sb, "urls"), *mcp = json_object_get(urls, "mcp");

	cli_reltime(json_string_value(json_object_get(sb, "expires_at")), now_ms(), exp, sizeof(exp));
	printf("id        %s\nstate     %s\ntemplate  %s\nnode      %s\nexpires   %s (%s)\n",
	       str(sb, "id"), str(sb, "state"), str(sb, "template"), str(sb, "node"),
	       str(sb, "expires_at"), exp);
	if (json_object_get(sb, "reason"))
		printf("reason    %s\n", str(sb, "reason"));
	if (json_is_object(urls) && json_object_get(sb, "token"))
		printf("novnc     %s\nmcp       shell   %s\n          desktop %s\n          browser %s\n",
		       str(urls, "novnc"), str(mcp, "shell"), str(mcp, "desktop"), str(mcp, "browser"));
}

/* --- argument helpers -------------------------------------------------- */

struct args {
	int n;
	char **v;
	int i;
};

/* The value of option name at a->v[a->i] ("--name V" or "--name=V"). */
static const char *opt_val(struct args *a, const char *name, bool *bad)
{
	const char *s = a->v[a->i];
	size_t n = strlen(name);

	if (strncmp(s, name, n) != 0)
		return NULL;
	if (s[n] == '=')
		return s + n + 1;
	if (s[n] != '\0')
		return NULL;
	if (a->i + 1 >= a->n) {
		*bad = true;
		fail(2, "%s needs a value", name);
		return NULL;
	}
	return a->v[++a->i];
}

static bool whole(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static int bad_number(const char *opt, const char *v)
{
	return fail(2, "%s: `%s` is not a whole number in range", opt, v);
}

static int kv_into(json_t *obj, const char *opt, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char k[256];

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(k))
		return fail(2, "%s takes KEY=VALUE, not `%s`", opt, kv);
	snprintf(k, sizeof(k), "%.*s", (int)(eq - kv), kv);
	json_object_set_new(obj, k, json_string(eq + 1));
	return 0;
}

/* --- commands ------------------------------------------------------------ */

static int cmd_acquire(struct args *a)
{
	json_t *body = json_object(), *res = json_object(), *labels = json_object(),
	       *meta = json_object(), *out = NULL;
	const char *idem = NULL, *v;
	long n, wait = -1, status = 0;
	int rc = 0;
	bool bad = false;

	for (a->i = 0; a->i < a->n && rc == 0; a->i++) {
		if ((v = opt_val(a, "--template", &bad)))
			json_object_set_new(body, "template", json_string(v));
		else if ((v = opt_val(a, "--ttl", &bad)))
			rc = whole(v, 1, 1L << 30, &n) ? json_object_set_new(body, "ttl", json_integer(n))
						       : bad_number("--ttl", v);
		else if ((v = opt_val(a, "--wait", &bad))) {
			rc = whole(v, 0, 1L << 20, &wait) ? 0 : bad_number("--wait", v);
			json_object_set_new(body, "wait", json_integer(wait));
		} else if (strcmp(a->v[a->i], "--persist") == 0)
			json_object_set_new(body, "persist", json_true());
		else if ((v = opt_val(a, "--memory", &bad)))
			rc = whole(v, 1, 1L << 30, &n) ? json_object_set_new(res, "memory_mb", json_integer(n))
						       : bad_number("--memory", v);
		else if ((v = opt_val(a, "--cpus", &bad)))
			rc = whole(v, 1, 1024, &n) ? json_object_set_new(res, "cpus", json_integer(n))
						   : bad_number("--cpus", v);
		else if ((v = opt_val(a, "--pids", &bad)))
			rc = whole(v, 1, 1L << 30, &n) ? json_object_set_new(res, "pids", json_integer(n))
						       : bad_number("--pids", v);
		else if ((v = opt_val(a, "--egress", &bad))) {
			if (strcmp(v, "none") == 0) {
				json_object_set_new(body, "egress", json_string("none"));
			} else {
				json_t *allow = json_array();
				char *copy = strdup(v), *save = NULL;

				for (char *h = strtok_r(copy, ",", &save); h; h = strtok_r(NULL, ",", &save))
					json_array_append_new(allow, json_string(h));
				free(copy);
				json_object_set_new(body, "egress", json_pack("{s:o}", "allow", allow));
			}
		} else if (strcmp(a->v[a->i], "--no-clipboard") == 0 || strcmp(a->v[a->i], "--resize") == 0 ||
			   strcmp(a->v[a->i], "--record") == 0) {
			const char *k = a->v[a->i] + 2;

			if (!json_object_get(body, "desktop"))
				json_object_set_new(body, "desktop", json_object());
			json_object_set_new(json_object_get(body, "desktop"),
					    strcmp(k, "no-clipboard") == 0 ? "clipboard" : k,
					    json_boolean(strcmp(k, "no-clipboard") != 0));
		} else if ((v = opt_val(a, "--label", &bad)))
			rc = kv_into(labels, "--label", v) ? 2 : 0;
		else if ((v = opt_val(a, "--meta", &bad)))
			rc = kv_into(meta, "--meta", v) ? 2 : 0;
		else if ((v = opt_val(a, "--idempotency-key", &bad)))
			idem = v;
		else if (!bad)
			rc = fail(2, "acquire: unknown option `%s` (cloche --help)", a->v[a->i]);
		if (bad)
			rc = 2;
	}
	if (rc == 0) {
		if (json_object_size(res))
			json_object_set(body, "resources", res);
		if (json_object_size(labels))
			json_object_set(body, "labels", labels);
		if (json_object_size(meta))
			json_object_set(body, "metadata", meta);
		/* The HTTP timeout must outlast the wait (the portal's default is 120 s). */
		rc = call("POST", "/sbv1/acquire", body, &out, idem, wait >= 0 ? wait + 30 : 600,
			  &status);
		if (rc == 0 && status == 202) {
			rc = 6;
			fail(6, "the wait ran out while %s starts; it is yours: `cloche get %s`",
			     str(out, "id"), str(out, "id"));
		}
		if (out && (rc == 0 || rc == 6) && json_object_get(out, "id")) {
			if (as_json)
				print_json(out);
			else
				print_sandbox(out);
		}
	}
	json_decref(body);
	json_decref(res);
	json_decref(labels);
	json_decref(meta);
	json_decref(out);
	return rc;
}

static char *query_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *o = malloc(strlen(s) * 3 + 1), *p = o;

	if (!o)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-_.~", c)) {
			*p++ = (char)c;
		} else {
			*p++ = '%';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
		}
	}
	*p = '\0';
	return o;
}

static int cmd_list(struct args *a)
{
	char q[1200] = "", path[1400];
	const char *v;
	bool all = false, bad = false, history = false, state_given = false;
	json_t *rows = json_array(), *every = json_array(), *out = NULL;
	int rc = 0;

	for (a->i = 0; a->i < a->n; a->i++) {
		const char *key = NULL;

		if ((v = opt_val(a, "--state", &bad))) {
			key = "state";
			state_given = true;
		}
		else if ((v = opt_val(a, "--label", &bad)))
			key = "label";
		else if ((v = opt_val(a, "--template", &bad)))
			key = "template";
		else if (strcmp(a->v[a->i], "--all") == 0)
			all = true;
		else if (strcmp(a->v[a->i], "--history") == 0)
			history = true;
		else if (!bad)
			rc = fail(2, "list: unknown option `%s`", a->v[a->i]);
		if (bad || rc)
			goto out;
		if (key) {
			char *e = query_escape(v);

			snprintf(q + strlen(q), sizeof(q) - strlen(q), "&%s=%s", key, e ? e : "");
			free(e);
		}
	}
	{
		char cursor[128] = "";

		do {
			size_t i;
			json_t *sb;

			snprintf(path, sizeof(path), "/sbv1/sandboxes?limit=%d%s%s%s", all ? 500 : 100, q,
				 cursor[0] ? "&cursor=" : "", cursor);
			json_decref(out);
			rc = call("GET", path, NULL, &out, NULL, 0, NULL);
			if (rc)
				goto out;
			json_array_foreach(json_object_get(out, "sandboxes"), i, sb) {
				char exp[40], labels[256] = "";
				const char *k, *state = str(sb, "state");
				json_t *lv;
				bool final = strcmp(state, "released") == 0 ||
					     strcmp(state, "failed") == 0 || strcmp(state, "lost") == 0;

				/* Ended sandboxes are history: shown when asked for. */
				if (final && !history && !state_given)
					continue;
				json_array_append(every, sb);
				if (final)
					snprintf(exp, sizeof(exp), "-");
				else
					cli_reltime(json_string_value(json_object_get(sb, "expires_at")),
						    now_ms(), exp, sizeof(exp));
				json_object_foreach(json_object_get(sb, "labels"), k, lv)
					snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels),
						 "%s%s=%s", labels[0] ? "," : "", k,
						 json_string_value(lv));
				json_array_append_new(rows, json_pack("[s, s, s, s, s, s]", str(sb, "id"),
								      str(sb, "state"), str(sb, "template"),
								      str(sb, "node"), exp,
								      labels[0] ? labels : "-"));
			}
			snprintf(cursor, sizeof(cursor), "%s",
				 json_string_value(json_object_get(out, "next_cursor"))
					 ? json_string_value(json_object_get(out, "next_cursor"))
					 : "");
		} while (all && cursor[0]);
	}
	if (as_json) {
		json_t *o = json_pack("{s:O}", "sandboxes", every);

		print_json(o);
		json_decref(o);
	} else {
		static const char *const h[] = {"ID", "STATE", "TEMPLATE", "NODE", "EXPIRES", "LABELS"};
		struct buf b = BUF_INIT(64u << 20);

		cli_table(&b, h, 6, rows);
		print_buf(&b);
		if (!all && json_string_value(json_object_get(out, "next_cursor")))
			fprintf(stderr, "cloche: more sandboxes: --all lists every page\n");
	}
out:
	json_decref(out);
	json_decref(rows);
	json_decref(every);
	return bad ? 2 : rc;
}

/* GET /sbv1/sandboxes/ID: the sandbox, or an exit code. */
static int get_sandbox(const char *id, json_t **out)
{
	char path[300];
	char *e = query_escape(id);

	snprintf(path, sizeof(path), "/sbv1/sandboxes/%s", e ? e : "");
	free(e);
	return call("GET", path, NULL, out, NULL, 0, NULL);
}

static int one_id(struct args *a, const char *cmd)
{
	if (a->n != 1 || a->v[0][0] == '-')
		return fail(2, "usage: cloche %s ID", cmd);
	return 0;
}

static int cmd_get(struct args *a, const char *what)
{
	json_t *sb = NULL;
	int rc = one_id(a, what);

	if (rc || (rc = get_sandbox(a->v[0], &sb)))
		goto out;
	if (strcmp(what, "vnc") == 0) {
		const char *u = json_string_value(json_object_get(json_object_get(sb, "urls"), "novnc"));

		if (!u || !json_object_get(sb, "token"))
			rc = fail(5, "%s is %s: no desktop to open", a->v[0], str(sb, "state"));
		else
			puts(u);
	} else if (strcmp(what, "mcp-config") == 0) {
		json_t *m = cli_mcp_config(sb);

		if (!m)
			rc = fail(5, "%s is %s: no MCP servers to reach", a->v[0], str(sb, "state"));
		else
			print_json(m);
		json_decref(m);
	} else if (as_json) {
		print_json(sb);
	} else {
		print_sandbox(sb);
	}
out:
	json_decref(sb);
	return rc;
}

static int cmd_events(struct args *a)
{
	char path[300];
	json_t *out = NULL, *ev, *rows = json_array();
	size_t i;
	int rc = one_id(a, "events");

	if (rc)
		goto out;
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/events", a->v[0]);
	if ((rc = call("GET", path, NULL, &out, NULL, 0, NULL)))
		goto out;
	if (as_json) {
		print_json(out);
		goto out;
	}
	json_array_foreach(json_object_get(out, "events"), i, ev)
		json_array_append_new(rows, json_pack("[s, s, s, s]", str(ev, "at"), str(ev, "from"),
						      str(ev, "to"), str(ev, "reason")));
	print_rows((const char *const[]){"AT", "FROM", "TO", "REASON"}, 4, rows);
out:
	json_decref(out);
	json_decref(rows);
	return rc;
}

/* POST /sbv1/sandboxes/ID/ACTION for each id (release takes several). */
static int cmd_action(struct args *a, const char *action)
{
	json_t *body = json_object(), *out = NULL;
	const char *ids[256], *v;
	int nids = 0, rc = 0, worst = 0;
	bool bad = false;
	long n;

	for (a->i = 0; a->i < a->n && !rc; a->i++) {
		if (strcmp(action, "keepalive") == 0 && (v = opt_val(a, "--ttl", &bad)))
			rc = whole(v, 1, 1L << 30, &n) ? json_object_set_new(body, "ttl", json_integer(n))
						       : bad_number("--ttl", v);
		else if (strcmp(action, "fork") == 0 && (v = opt_val(a, "--count", &bad)))
			rc = whole(v, 1, 8, &n) ? json_object_set_new(body, "count", json_integer(n))
						   : bad_number("--count", v);
		else if (!bad && a->v[a->i][0] == '-')
			rc = fail(2, "%s: unknown option `%s`", action, a->v[a->i]);
		else if (!bad && nids < 256)
			ids[nids++] = a->v[a->i];
		if (bad)
			rc = 2;
	}
	/* The portal waits for the node; answer before our own timeout (a 202
	 * then says it is still under way). */
	if (!strcmp(action, "hibernate") || !strcmp(action, "wake") || !strcmp(action, "fork"))
		json_object_set_new(body, "wait", json_integer(timeout_s > 10 ? timeout_s - 5 : 5));
	if (!rc && (nids == 0 || (nids > 1 && strcmp(action, "release") != 0)))
		rc = fail(2, "usage: cloche %s ID%s", action, strcmp(action, "release") ? "" : "...");
	for (int i = 0; i < nids && !rc; i++) {
		char path[300];

		snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/%s", ids[i], action);
		json_decref(out);
		rc = call("POST", path, body, &out, NULL, 0, NULL);
		if (rc == 0) {
			json_t *kids = json_object_get(out, "children");
			size_t k;
			json_t *c;

			if (as_json)
				print_json(out);
			else if (json_is_array(kids))
				json_array_foreach(kids, k, c)
					printf("%s %s %s\n", str(c, "id"), str(c, "state"),
					       str(json_object_get(c, "urls"), "novnc"));
			else
				printf("%s %s\n", str(out, "id"), str(out, "state"));
		}
		if (rc && strcmp(action, "release") == 0) {
			worst = worst ? worst : rc; /* release the others all the same */
			rc = 0;
		}
	}
	json_decref(body);
	json_decref(out);
	return rc ? rc : worst;
}

/* GET path for a table: 1 when the answer still needs the table (in
 * *out), else the exit code with the JSON printed (--json) or the error. */
static int fetch_for_table(const char *path, json_t **out)
{
	int rc = call("GET", path, NULL, out, NULL, 0, NULL);

	if (rc)
		return rc;
	if (!as_json)
		return 1;
	print_json(*out);
	return 0;
}

static int cmd_nodes(void)
{
	json_t *out = NULL, *nd, *rows = json_array();
	size_t i;
	int rc = fetch_for_table("/sbv1/nodes", &out);

	if (rc != 1)
		goto out;
	rc = 0;
	json_array_foreach(json_object_get(out, "nodes"), i, nd) {
		json_t *c = json_object_get(nd, "capacity"), *w;
		char run[48], mem[32], cpus[16], warm[128] = "", seen[40];
		size_t j;

		if (json_integer_value(json_object_get(c, "max_sandboxes")) > 0)
			snprintf(run, sizeof(run), "%lld/%lld",
				 (long long)json_integer_value(json_object_get(c, "sandboxes")),
				 (long long)json_integer_value(json_object_get(c, "max_sandboxes")));
		else
			snprintf(run, sizeof(run), "%lld/-",
				 (long long)json_integer_value(json_object_get(c, "sandboxes")));
		snprintf(mem, sizeof(mem), "%.1fG",
			 (double)json_integer_value(json_object_get(json_object_get(c, "memory"),
								    "available")) / (1 << 30));
		snprintf(cpus, sizeof(cpus), "%lld", (long long)json_integer_value(json_object_get(c, "cpus")));
		json_array_foreach(json_object_get(c, "warm"), j, w)
			snprintf(warm + strlen(warm), sizeof(warm) - strlen(warm), "%s%s %lld/%lld",
				 warm[0] ? "," : "", str(w, "template"),
				 (long long)json_integer_value(json_object_get(w, "ready")),
				 (long long)json_integer_value(json_object_get(w, "target")));
		cli_reltime(json_string_value(json_object_get(nd, "last_heartbeat")), now_ms(), seen,
			    sizeof(seen));
		json_array_append_new(rows, json_pack("[s, s, s, s, s, s, s]", str(nd, "name"),
						      str(nd, "state"), run, mem, cpus,
						      warm[0] ? warm : "-", seen));
	}
	print_rows((const char *const[]){"NAME", "STATE", "RUNNING/MAX", "MEM-FREE", "CPUS", "WARM",
						"LAST-SEEN"}, 7, rows);
out:
	json_decref(out);
	json_decref(rows);
	return rc;
}

static int cmd_templates(void)
{
	json_t *out = NULL, *t, *rows = json_array();
	size_t i;
	int rc = fetch_for_table("/sbv1/templates", &out);

	if (rc != 1)
		goto out;
	rc = 0;
	json_array_foreach(json_object_get(out, "templates"), i, t) {
		char *vers = json_dumps(json_object_get(t, "versions"), JSON_COMPACT);
		char *nodes = json_dumps(json_object_get(t, "nodes"), JSON_COMPACT);
		char warm[24];

		snprintf(warm, sizeof(warm), "%lld", (long long)json_integer_value(json_object_get(t, "warm_ready")));
		json_array_append_new(rows, json_pack("[s, s, s, s]", str(t, "name"), warm,
						      vers ? vers : "-", nodes ? nodes : "-"));
		free(vers);
		free(nodes);
	}
	print_rows((const char *const[]){"NAME", "WARM-READY", "VERSIONS", "NODES"}, 4, rows);
out:
	json_decref(out);
	json_decref(rows);
	return rc;
}

static int cmd_keys(struct args *a)
{
	json_t *out = NULL;
	int rc = 0;
	bool bad = false;

	if (a->n < 1)
		return fail(2, "usage: cloche keys create NAME [--role user|admin] | list | revoke ID");
	if (strcmp(a->v[0], "list") == 0 && a->n == 1) {
		json_t *k, *rows = json_array();
		size_t i;

		if ((rc = call("GET", "/sbv1/keys", NULL, &out, NULL, 0, NULL)) == 0) {
			if (as_json) {
				print_json(out);
			} else {
				json_array_foreach(json_object_get(out, "keys"), i, k)
					json_array_append_new(rows, json_pack("[s, s, s, s, s]", str(k, "id"),
									      str(k, "name"), str(k, "role"),
									      str(k, "created_at"),
									      str(k, "revoked_at")));
				print_rows((const char *const[]){"ID", "NAME", "ROLE", "CREATED", "REVOKED"}, 5,
					   rows);
			}
		}
		json_decref(rows);
	} else if (strcmp(a->v[0], "create") == 0 && a->n >= 2 && a->v[1][0] != '-') {
		const char *role = "user", *v;
		json_t *body;

		for (a->i = 2; a->i < a->n && !rc; a->i++) {
			if ((v = opt_val(a, "--role", &bad)))
				role = v;
			else if (!bad)
				rc = fail(2, "keys create: unknown option `%s`", a->v[a->i]);
			if (bad)
				rc = 2;
		}
		if (rc)
			return rc;
		body = json_pack("{s:s, s:s}", "name", a->v[1], "role", role);
		rc = call("POST", "/sbv1/keys", body, &out, NULL, 0, NULL);
		json_decref(body);
		if (rc == 0) {
			if (as_json) {
				print_json(out);
			} else {
				printf("%s\n", str(out, "key"));
				fprintf(stderr, "cloche: key %s (%s, %s) made; it is shown only this once\n",
					str(out, "id"), str(out, "name"), str(out, "role"));
			}
		}
	} else if (strcmp(a->v[0], "revoke") == 0 && a->n == 2) {
		char path[200];

		snprintf(path, sizeof(path), "/sbv1/keys/%.100s", a->v[1]);
		if ((rc = call("DELETE", path, NULL, &out, NULL, 0, NULL)) == 0) {
			if (as_json)
				print_json(out);
			else
				printf("%s revoked\n", str(out, "id"));
		}
	} else {
		rc = fail(2, "usage: cloche keys create NAME [--role user|admin] | list | revoke ID");
	}
	json_decref(out);
	return rc;
}

/* GET path into b whole (a recording, the trace).  Returns the exit code. */
static int fetch_raw(const char *path, struct buf *b)
{
	char url[1024], authz[320];
	const char *hdrs[] = {authz, NULL};
	struct http_req req = {.url = url, .headers = hdrs, .max_resp = 512u << 20,
			       .timeout_ms = (timeout_s + 300) * 1000};
	struct http_resp resp;
	struct err e = ERR_INIT;
	int rc;

	if (!cfg.url[0])
		return fail(2, "no portal: give --url or set CLOCHE_URL");
	snprintf(url, sizeof(url), "%s%s", cfg.url, path);
	snprintf(authz, sizeof(authz), "Authorization: Bearer %s", cfg.key);
	memset(&resp, 0, sizeof(resp));
	if (http_request(&req, &resp, &e) == -1) {
		http_resp_free(&resp);
		return fail(7, "cannot reach the portal at %s: %s", cfg.url, e.msg);
	}
	rc = cli_exit_code(resp.status);
	if (rc != 0) {
		json_t *j = json_loads(buf_str(&resp.body), 0, NULL);
		const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

		fail(rc, "GET %s: %ld: %s", path, resp.status, m ? m : "the portal gave no message");
		json_decref(j);
	} else {
		*b = resp.body;
		memset(&resp.body, 0, sizeof(resp.body));
	}
	http_resp_free(&resp);
	return rc;
}

/* The rows of `cloche recordings`. */
static json_t *recording_rows(const json_t *out)
{
	json_t *rows = json_array(), *r;
	size_t i;

	json_array_foreach(json_object_get(out, "recordings"), i, r) {
		char dur[32] = "-", bytes[32] = "-";

		if (json_object_get(r, "duration_ms"))
			snprintf(dur, sizeof(dur), "%.1f s",
				 (double)json_integer_value(json_object_get(r, "duration_ms")) / 1000);
		if (json_object_get(r, "bytes"))
			snprintf(bytes, sizeof(bytes), "%lld",
				 (long long)json_integer_value(json_object_get(r, "bytes")));
		json_array_append_new(rows, json_pack("[s, s, s, s, s, s]", str(r, "id"), str(r, "state"),
						      str(r, "started"), dur, bytes, str(r, "reason")));
	}
	return rows;
}

/* Writes b to fname ("-": stdout).  Returns the exit code. */
static int save_to(const char *fname, const struct buf *b)
{
	bool out = strcmp(fname, "-") == 0;
	FILE *f = out ? stdout : fopen(fname, "wb");

	if (!f || fwrite(b->data ? b->data : "", 1, b->len, f) != b->len || (!out && fclose(f) != 0))
		return fail(1, "write `%s`: %s", fname, strerror(errno));
	if (!out)
		fprintf(stderr, "cloche: %s: %zu bytes\n", fname, b->len);
	return 0;
}

/* record ID [--stop REC] | recordings ID | download ID REC [-o FILE] | trace ID */
static int cmd_record(struct args *a, const char *cmd)
{
	const char *id = NULL, *rec = NULL, *file = NULL, *v;
	char path[300], fname[300];
	json_t *out = NULL, *r, *rows = NULL;
	struct buf b = BUF_INIT(0);
	bool bad = false;
	int rc = 0;

	for (a->i = 0; a->i < a->n && !rc; a->i++) {
		if (strcmp(cmd, "record") == 0 && (v = opt_val(a, "--stop", &bad)))
			rec = v;
		else if (strcmp(cmd, "download") == 0 && (v = opt_val(a, "-o", &bad)))
			file = v;
		else if (!bad && a->v[a->i][0] == '-')
			rc = fail(2, "%s: unknown option `%s`", cmd, a->v[a->i]);
		else if (!bad && !id)
			id = a->v[a->i];
		else if (!bad && strcmp(cmd, "download") == 0 && !rec)
			rec = a->v[a->i];
		else if (!bad)
			rc = fail(2, "%s: one sandbox at a time", cmd);
		if (bad)
			rc = 2;
	}
	if (!rc && (!id || (strcmp(cmd, "download") == 0 && !rec)))
		rc = fail(2, "usage: cloche %s",
			  strcmp(cmd, "record") == 0	 ? "record ID [--stop REC]"
			  : strcmp(cmd, "download") == 0 ? "download ID REC [-o FILE]"
			  : strcmp(cmd, "trace") == 0	 ? "trace ID"
							 : "recordings ID");
	if (rc)
		return rc;
	if (strcmp(cmd, "record") == 0) {
		if (rec)
			snprintf(path, sizeof(path), "/sbv1/sandboxes/%.100s/recordings/%.100s/stop", id, rec);
		else
			snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/recordings", id);
		if ((rc = call("POST", path, NULL, &out, NULL, 30, NULL)) == 0) {
			r = rec ? out : json_object_get(out, "recording");
			if (as_json)
				print_json(out);
			else
				printf("%s\n", str(r, "id"));
			if (!as_json && !rec)
				fprintf(stderr, "cloche: recording %s; `cloche record %s --stop %s` ends it\n",
					str(r, "id"), id, str(r, "id"));
		}
	} else if (strcmp(cmd, "recordings") == 0) {
		snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/recordings", id);
		if ((rc = fetch_for_table(path, &out)) == 1) {
			rc = 0;
			rows = recording_rows(out);
			print_rows((const char *const[]){"ID", "STATE", "STARTED", "DURATION", "BYTES",
							 "REASON"},
				   6, rows);
		}
	} else if (strcmp(cmd, "trace") == 0) {
		snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/trace", id);
		if ((rc = fetch_raw(path, &b)) == 0)
			rc = save_to("-", &b);
	} else {
		snprintf(path, sizeof(path), "/sbv1/sandboxes/%.100s/recordings/%.100s", id, rec);
		snprintf(fname, sizeof(fname), "%s", file ? file : "");
		if (!file)
			snprintf(fname, sizeof(fname), "%.200s.mp4", rec);
		if ((rc = fetch_raw(path, &b)) == 0)
			rc = save_to(fname, &b);
	}
	buf_free(&b);
	json_decref(rows);
	json_decref(out);
	return rc;
}

/* share ID [--mode M] [--ttl S] [--label L] | shares ID | unshare ID SHARE */
static int cmd_share(struct args *a, const char *cmd)
{
	json_t *body = json_object(), *out = NULL, *sh, *rows = NULL;
	const char *id = NULL, *v;
	char path[300];
	bool bad = false;
	long n;
	size_t i;
	int rc = 0;

	for (a->i = 0; a->i < a->n && !rc; a->i++) {
		if (strcmp(cmd, "share") == 0 && (v = opt_val(a, "--mode", &bad)))
			json_object_set_new(body, "mode", json_string(v));
		else if (strcmp(cmd, "share") == 0 && (v = opt_val(a, "--label", &bad)))
			json_object_set_new(body, "label", json_string(v));
		else if (strcmp(cmd, "share") == 0 && (v = opt_val(a, "--ttl", &bad)))
			rc = whole(v, 1, 1L << 30, &n) ? json_object_set_new(body, "ttl", json_integer(n))
						       : bad_number("--ttl", v);
		else if (!bad && a->v[a->i][0] == '-')
			rc = fail(2, "%s: unknown option `%s`", cmd, a->v[a->i]);
		else if (!bad && !id)
			id = a->v[a->i];
		else if (!bad && strcmp(cmd, "unshare") == 0 && a->i == 1)
			snprintf(path, sizeof(path), "/sbv1/sandboxes/%.100s/shares/%.100s", id, a->v[a->i]);
		else if (!bad)
			rc = fail(2, "%s: one sandbox at a time", cmd);
		if (bad)
			rc = 2;
	}
	if (!rc && (!id || (strcmp(cmd, "unshare") == 0 && a->n != 2)))
		rc = fail(2, "usage: cloche %s", strcmp(cmd, "share") == 0 ? "share ID [--mode view|control] [--ttl S] [--label L]"
						 : strcmp(cmd, "shares") == 0 ? "shares ID" : "unshare ID SHARE");
	if (rc)
		goto out;
	if (strcmp(cmd, "share") == 0) {
		snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/shares", id);
		if ((rc = call("POST", path, body, &out, NULL, 0, NULL)) == 0) {
			if (as_json)
				print_json(out);
			else
				printf("%s\n", str(out, "url"));
			if (!as_json)
				fprintf(stderr, "cloche: share %s (%s) until %s; `cloche unshare %s %s` ends it\n",
					str(out, "id"), str(out, "mode"), str(out, "expires_at"), id, str(out, "id"));
		}
		goto out;
	}
	if (strcmp(cmd, "unshare") == 0) {
		if ((rc = call("DELETE", path, NULL, &out, NULL, 0, NULL)) == 0) {
			if (as_json)
				print_json(out);
			else
				printf("%s %s\n", str(out, "id"), str(out, "state"));
		}
		goto out;
	}
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/shares", id);
	if ((rc = fetch_for_table(path, &out)) != 1)
		goto out;
	rc = 0;
	rows = json_array();
	json_array_foreach(json_object_get(out, "shares"), i, sh)
		json_array_append_new(rows, json_pack("[s, s, s, s, s]", str(sh, "id"), str(sh, "mode"),
						      str(sh, "state"), str(sh, "expires_at"), str(sh, "label")));
	print_rows((const char *const[]){"ID", "MODE", "STATE", "EXPIRES", "LABEL"}, 5, rows);
out:
	json_decref(rows);
	json_decref(body);
	json_decref(out);
	return rc;
}

int main(int argc, char **argv)
{
	char *rest[256];
	struct args a = {0};
	const char *cmd = NULL;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *val = NULL;

		if (!cmd && (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0 || strcmp(s, "help") == 0)) {
			fputs(usage, stdout);
			return 0;
		}
		if (!cmd && strcmp(s, "--version") == 0) {
			version_print("cloche");
			return 0;
		}
		if (strcmp(s, "--json") == 0) {
			as_json = true;
			continue;
		}
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		}
		for (int k = 0; k < 3; k++) {
			static const char *const names[] = {"--url", "--api-key", "--timeout"};
			size_t n = strlen(names[k]);

			if (strncmp(s, names[k], n) == 0 && (s[n] == '=' || s[n] == '\0')) {
				if (s[n] == '=')
					val = s + n + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else
					return fail(2, "%s needs a value", names[k]);
				if (k == 0)
					snprintf(cfg.url, sizeof(cfg.url), "%s", val);
				else if (k == 1)
					snprintf(cfg.key, sizeof(cfg.key), "%s", val);
				else if (!whole(val, 1, 86400, &timeout_s))
					return bad_number("--timeout", val);
			}
		}
		if (val)
			continue;
		if (!cmd) {
			if (s[0] == '-')
				return fail(2, "unknown option `%s` (cloche --help)", s);
			cmd = s;
		} else if (a.n < (int)(sizeof(rest) / sizeof(rest[0]))) {
			rest[a.n++] = argv[i];
		}
	}
	a.v = rest;
	if (!cmd) {
		fputs(usage, stderr);
		return 2;
	}
	cli_config_load(&cfg, NULL, NULL);
	if (strcmp(cmd, "acquire") == 0)
		rc = cmd_acquire(&a);
	else if (strcmp(cmd, "list") == 0 || strcmp(cmd, "ls") == 0)
		rc = cmd_list(&a);
	else if (strcmp(cmd, "get") == 0 || strcmp(cmd, "vnc") == 0 || strcmp(cmd, "mcp-config") == 0)
		rc = cmd_get(&a, cmd);
	else if (strcmp(cmd, "events") == 0)
		rc = cmd_events(&a);
	else if (strcmp(cmd, "release") == 0 || strcmp(cmd, "keepalive") == 0 ||
		 strcmp(cmd, "hibernate") == 0 || strcmp(cmd, "wake") == 0 || strcmp(cmd, "fork") == 0)
		rc = cmd_action(&a, cmd);
	else if (strcmp(cmd, "nodes") == 0 && a.n == 0)
		rc = cmd_nodes();
	else if (strcmp(cmd, "templates") == 0 && a.n == 0)
		rc = cmd_templates();
	else if (strcmp(cmd, "keys") == 0)
		rc = cmd_keys(&a);
	else if (strcmp(cmd, "share") == 0 || strcmp(cmd, "shares") == 0 || strcmp(cmd, "unshare") == 0)
		rc = cmd_share(&a, cmd);
	else if (strcmp(cmd, "record") == 0 || strcmp(cmd, "recordings") == 0 ||
		 strcmp(cmd, "download") == 0 || strcmp(cmd, "trace") == 0)
		rc = cmd_record(&a, cmd);
	else
		rc = fail(2, "unknown command `%s` (cloche --help)", cmd);
	explicit_bzero(cfg.key, sizeof(cfg.key));
	return rc;
}
