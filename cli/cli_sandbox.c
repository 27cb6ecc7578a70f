/* The sandbox lifecycle commands (acquire, list, get, events, release,
 * keepalive, hibernate, wake, fork): each builds its request from the
 * arguments, sends it through cli_http and prints the answer as a table or
 * a few lines for people, or the portal's JSON with --json. */
#include "cli/cli_sandbox.h"
#include "cli/cli_out.h"

#include "common/query.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s with every byte but RFC 3986's unreserved ones as %XX, all of it: a new
 * string the caller frees, or NULL when out of memory. */
static char *escaped(const char *s)
{
	size_t len = strlen(s) * 3 + 4; /* what query_escape needs for the whole of s */
	char *o = malloc(len);

	if (o)
		query_escape(s, o, len);
	return o;
}

static void print_sandbox(const json_t *sb)
{
	char exp[40];
	json_t *urls = json_object_get(sb, "urls"), *mcp = json_object_get(urls, "mcp");

	cli_reltime(json_string_value(json_object_get(sb, "expires_at")), util_wall_ms(), exp,
		    sizeof(exp));
	printf("id        %s\nstate     %s\ntemplate  %s\nnode      %s\nexpires   %s (%s)\n",
	       cli_str(sb, "id"), cli_str(sb, "state"), cli_str(sb, "template"),
	       cli_str(sb, "node"), cli_str(sb, "expires_at"), exp);
	if (json_object_get(sb, "reason"))
		printf("reason    %s\n", cli_str(sb, "reason"));
	if (json_is_object(urls) && json_object_get(sb, "token"))
		printf("novnc     %s\nmcp       shell   %s\n          desktop %s\n          browser %s\n",
		       cli_str(urls, "novnc"), cli_str(mcp, "shell"), cli_str(mcp, "desktop"),
		       cli_str(mcp, "browser"));
}

/* A whole number in lo..hi for option opt into obj[key]: 0 (-1 when out of
 * memory), or 2 with the complaint printed. */
static int set_number(json_t *obj, const char *key, const char *opt, const char *v, long lo,
		      long hi)
{
	long n;

	if (!cli_whole(v, lo, hi, &n))
		return cli_bad_number(opt, v);
	return json_object_set_new(obj, key, json_integer(n));
}

int cli_sandbox_acquire(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *body = json_object(), *res = json_object(), *labels = json_object(),
	       *meta = json_object(), *out = NULL;
	const char *idem = NULL, *v;
	long wait = -1, status = 0;
	int rc = 0;
	bool bad = false;

	(void)cmd;
	for (a->i = 0; a->i < a->n && rc == 0; a->i++) {
		const char *arg = a->v[a->i];

		if ((v = cli_opt_val(a, "--template", &bad)))
			json_object_set_new(body, "template", json_string(v));
		else if ((v = cli_opt_val(a, "--ttl", &bad)))
			rc = set_number(body, "ttl", "--ttl", v, 1, 1L << 30);
		else if ((v = cli_opt_val(a, "--wait", &bad))) {
			rc = cli_whole(v, 0, 1L << 20, &wait) ? 0 : cli_bad_number("--wait", v);
			json_object_set_new(body, "wait", json_integer(wait));
		} else if (strcmp(arg, "--persist") == 0)
			json_object_set_new(body, "persist", json_true());
		else if ((v = cli_opt_val(a, "--memory", &bad)))
			rc = set_number(res, "memory_mb", "--memory", v, 1, 1L << 30);
		else if ((v = cli_opt_val(a, "--cpus", &bad)))
			rc = set_number(res, "cpus", "--cpus", v, 1, 1024);
		else if ((v = cli_opt_val(a, "--pids", &bad)))
			rc = set_number(res, "pids", "--pids", v, 1, 1L << 30);
		else if ((v = cli_opt_val(a, "--egress", &bad))) {
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
		} else if (strcmp(arg, "--no-clipboard") == 0 || strcmp(arg, "--resize") == 0 ||
			   strcmp(arg, "--record") == 0) {
			const char *k = arg + 2;

			if (!json_object_get(body, "desktop"))
				json_object_set_new(body, "desktop", json_object());
			json_object_set_new(json_object_get(body, "desktop"),
					    strcmp(k, "no-clipboard") == 0 ? "clipboard" : k,
					    json_boolean(strcmp(k, "no-clipboard") != 0));
		} else if ((v = cli_opt_val(a, "--label", &bad)))
			rc = cli_kv_into(labels, "--label", v) ? 2 : 0;
		else if ((v = cli_opt_val(a, "--meta", &bad)))
			rc = cli_kv_into(meta, "--meta", v) ? 2 : 0;
		else if ((v = cli_opt_val(a, "--idempotency-key", &bad)))
			idem = v;
		else if (!bad)
			rc = cli_fail(2, "acquire: unknown option `%s` (cloche --help)", arg);
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
		rc = cli_call(c, "POST", "/sbv1/acquire", body, &out, idem,
			      wait >= 0 ? wait + 30 : 600, &status);
		if (rc == 0 && status == 202) {
			rc = 6;
			cli_fail(6, "the wait ran out while %s starts; it is yours: `cloche get %s`",
				 cli_str(out, "id"), cli_str(out, "id"));
		}
		if (out && (rc == 0 || rc == 6) && json_object_get(out, "id")) {
			if (c->json)
				cli_print_json(out);
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

/* One page of the list: appends the sandboxes to show to every (as they
 * are) and to rows (as table cells); ended ones only when ended is set. */
static void list_page(const json_t *out, bool ended, json_t *every, json_t *rows)
{
	size_t i;
	json_t *sb;

	json_array_foreach(json_object_get(out, "sandboxes"), i, sb) {
		char exp[40], labels[256] = "";
		const char *k, *state = cli_str(sb, "state");
		json_t *lv;
		bool final = strcmp(state, "released") == 0 || strcmp(state, "failed") == 0 ||
			     strcmp(state, "lost") == 0;

		/* Ended sandboxes are history: shown when asked for. */
		if (final && !ended)
			continue;
		json_array_append(every, sb);
		if (final)
			snprintf(exp, sizeof(exp), "-");
		else
			cli_reltime(json_string_value(json_object_get(sb, "expires_at")),
				    util_wall_ms(), exp, sizeof(exp));
		json_object_foreach(json_object_get(sb, "labels"), k, lv)
			snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels), "%s%s=%s",
				 labels[0] ? "," : "", k, json_string_value(lv));
		json_array_append_new(rows, json_pack("[s, s, s, s, s, s]", cli_str(sb, "id"),
						      cli_str(sb, "state"), cli_str(sb, "template"),
						      cli_str(sb, "node"), exp,
						      labels[0] ? labels : "-"));
	}
}

int cli_sandbox_list(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	char q[1200] = "", path[1400], cursor[128] = "";
	const char *v, *next;
	bool all = false, bad = false, history = false, state_given = false;
	json_t *rows = json_array(), *every = json_array(), *out = NULL;
	int rc = 0;

	(void)cmd; /* list or ls */
	for (a->i = 0; a->i < a->n; a->i++) {
		const char *key = NULL;

		if ((v = cli_opt_val(a, "--state", &bad))) {
			key = "state";
			state_given = true;
		} else if ((v = cli_opt_val(a, "--label", &bad)))
			key = "label";
		else if ((v = cli_opt_val(a, "--template", &bad)))
			key = "template";
		else if (strcmp(a->v[a->i], "--all") == 0)
			all = true;
		else if (strcmp(a->v[a->i], "--history") == 0)
			history = true;
		else if (!bad)
			rc = cli_fail(2, "list: unknown option `%s`", a->v[a->i]);
		if (bad || rc)
			goto out;
		if (key) {
			char *e = escaped(v);

			snprintf(q + strlen(q), sizeof(q) - strlen(q), "&%s=%s", key, e ? e : "");
			free(e);
		}
	}
	do {
		snprintf(path, sizeof(path), "/sbv1/sandboxes?limit=%d%s%s%s", all ? 500 : 100, q,
			 cursor[0] ? "&cursor=" : "", cursor);
		json_decref(out);
		rc = cli_call(c, "GET", path, NULL, &out, NULL, 0, NULL);
		if (rc)
			goto out;
		/* A state asked for is shown, ended or not. */
		list_page(out, history || state_given, every, rows);
		next = json_string_value(json_object_get(out, "next_cursor"));
		snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
	} while (all && cursor[0]);
	if (c->json) {
		json_t *o = json_pack("{s:O}", "sandboxes", every);

		cli_print_json(o);
		json_decref(o);
	} else {
		static const char *const h[] = {"ID", "STATE", "TEMPLATE", "NODE", "EXPIRES", "LABELS"};
		struct buf b = BUF_INIT(64u << 20);

		/* Not cli_print_rows: every page of a long list may need more than its 16 MiB. */
		cli_table(&b, h, 6, rows);
		fputs(buf_str(&b), stdout);
		buf_free(&b);
		if (!all && json_string_value(json_object_get(out, "next_cursor")))
			fprintf(stderr, "cloche: more sandboxes: --all lists every page\n");
	}
out:
	json_decref(out);
	json_decref(rows);
	json_decref(every);
	return bad ? 2 : rc;
}

int cli_sandbox_get(const struct cli_ctx *c, const char *id, json_t **out)
{
	char path[300];
	char *e = escaped(id);

	snprintf(path, sizeof(path), "/sbv1/sandboxes/%s", e ? e : "");
	free(e);
	return cli_call(c, "GET", path, NULL, out, NULL, 0, NULL);
}

int cli_sandbox_show(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *sb = NULL;
	int rc = cli_one_id(a, cmd);

	if (rc || (rc = cli_sandbox_get(c, a->v[0], &sb)))
		goto out;
	if (c->json)
		cli_print_json(sb);
	else
		print_sandbox(sb);
out:
	json_decref(sb);
	return rc;
}

int cli_sandbox_events(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	char path[300];
	json_t *out = NULL, *ev, *rows = json_array();
	size_t i;
	int rc = cli_one_id(a, cmd);

	if (rc)
		goto out;
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/events", a->v[0]);
	if ((rc = cli_call(c, "GET", path, NULL, &out, NULL, 0, NULL)))
		goto out;
	if (c->json) {
		cli_print_json(out);
		goto out;
	}
	json_array_foreach(json_object_get(out, "events"), i, ev)
		json_array_append_new(rows, json_pack("[s, s, s, s]", cli_str(ev, "at"),
						      cli_str(ev, "from"), cli_str(ev, "to"),
						      cli_str(ev, "reason")));
	cli_print_rows((const char *const[]){"AT", "FROM", "TO", "REASON"}, 4, rows);
out:
	json_decref(out);
	json_decref(rows);
	return rc;
}

/* One action's answer for people: the sandbox's id and state, or each
 * fork child's with its noVNC URL. */
static void print_action(const json_t *out)
{
	json_t *kids = json_object_get(out, "children"), *kid;
	size_t k;

	if (json_is_array(kids))
		json_array_foreach(kids, k, kid)
			printf("%s %s %s\n", cli_str(kid, "id"), cli_str(kid, "state"),
			       cli_str(json_object_get(kid, "urls"), "novnc"));
	else
		printf("%s %s\n", cli_str(out, "id"), cli_str(out, "state"));
}

int cli_sandbox_action(struct cli_ctx *c, struct cli_args *a, const char *action)
{
	json_t *body = json_object(), *out = NULL;
	const char *ids[256], *v;
	int nids = 0, rc = 0, worst = 0;
	bool bad = false, release = strcmp(action, "release") == 0;

	for (a->i = 0; a->i < a->n && !rc; a->i++) {
		if (strcmp(action, "keepalive") == 0 && (v = cli_opt_val(a, "--ttl", &bad)))
			rc = set_number(body, "ttl", "--ttl", v, 1, 1L << 30);
		else if (strcmp(action, "fork") == 0 && (v = cli_opt_val(a, "--count", &bad)))
			rc = set_number(body, "count", "--count", v, 1, 8);
		else if (!bad && a->v[a->i][0] == '-')
			rc = cli_fail(2, "%s: unknown option `%s`", action, a->v[a->i]);
		else if (!bad && nids < 256)
			ids[nids++] = a->v[a->i];
		if (bad)
			rc = 2;
	}
	/* The portal waits for the node; answer before our own timeout (a 202
	 * then says it is still under way). */
	if (!strcmp(action, "hibernate") || !strcmp(action, "wake") || !strcmp(action, "fork"))
		json_object_set_new(body, "wait",
				    json_integer(c->timeout_s > 10 ? c->timeout_s - 5 : 5));
	if (!rc && (nids == 0 || (nids > 1 && !release)))
		rc = cli_fail(2, "usage: cloche %s ID%s", action, release ? "..." : "");
	for (int i = 0; i < nids && !rc; i++) {
		char path[300];

		snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/%s", ids[i], action);
		json_decref(out);
		rc = cli_call(c, "POST", path, body, &out, NULL, 0, NULL);
		if (rc == 0 && c->json)
			cli_print_json(out);
		else if (rc == 0)
			print_action(out);
		if (rc && release) {
			worst = worst ? worst : rc; /* release the others all the same */
			rc = 0;
		}
	}
	json_decref(body);
	json_decref(out);
	return rc ? rc : worst;
}
