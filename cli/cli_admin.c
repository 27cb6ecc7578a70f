/* The installation's commands (nodes, templates, keys); see cli_admin.h.
 * Tables for people, the portal's JSON with --json. */
#include "cli/cli_admin.h"
#include "cli/cli_out.h"

#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One node's row: name, state, running/max, free memory, CPUs, warm pools
 * ("tmpl ready/target,..."), last seen. */
static json_t *node_row(const json_t *nd)
{
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
	snprintf(cpus, sizeof(cpus), "%lld",
		 (long long)json_integer_value(json_object_get(c, "cpus")));
	json_array_foreach(json_object_get(c, "warm"), j, w)
		snprintf(warm + strlen(warm), sizeof(warm) - strlen(warm), "%s%s %lld/%lld",
			 warm[0] ? "," : "", cli_str(w, "template"),
			 (long long)json_integer_value(json_object_get(w, "ready")),
			 (long long)json_integer_value(json_object_get(w, "target")));
	cli_reltime(json_string_value(json_object_get(nd, "last_heartbeat")), util_wall_ms(), seen,
		    sizeof(seen));
	return json_pack("[s, s, s, s, s, s, s]", cli_str(nd, "name"), cli_str(nd, "state"), run,
			 mem, cpus, warm[0] ? warm : "-", seen);
}

int cli_admin_nodes(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *out = NULL, *nd, *rows = json_array();
	size_t i;
	int rc = cli_fetch_for_table(c, "/sbv1/nodes", &out);

	(void)a;
	(void)cmd;
	if (rc != 1)
		goto out;
	rc = 0;
	json_array_foreach(json_object_get(out, "nodes"), i, nd)
		json_array_append_new(rows, node_row(nd));
	cli_print_rows((const char *const[]){"NAME", "STATE", "RUNNING/MAX", "MEM-FREE", "CPUS",
					     "WARM", "LAST-SEEN"},
		       7, rows);
out:
	json_decref(out);
	json_decref(rows);
	return rc;
}

int cli_admin_templates(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *out = NULL, *t, *rows = json_array();
	size_t i;
	int rc = cli_fetch_for_table(c, "/sbv1/templates", &out);

	(void)a;
	(void)cmd;
	if (rc != 1)
		goto out;
	rc = 0;
	json_array_foreach(json_object_get(out, "templates"), i, t) {
		char *vers = json_dumps(json_object_get(t, "versions"), JSON_COMPACT);
		char *nodes = json_dumps(json_object_get(t, "nodes"), JSON_COMPACT);
		char warm[24];

		snprintf(warm, sizeof(warm), "%lld",
			 (long long)json_integer_value(json_object_get(t, "warm_ready")));
		json_array_append_new(rows, json_pack("[s, s, s, s]", cli_str(t, "name"), warm,
						      vers ? vers : "-", nodes ? nodes : "-"));
		free(vers);
		free(nodes);
	}
	cli_print_rows((const char *const[]){"NAME", "WARM-READY", "VERSIONS", "NODES"}, 4, rows);
out:
	json_decref(out);
	json_decref(rows);
	return rc;
}

static const char keys_usage[] =
	"usage: cloche keys create NAME [--role user|admin] | list | revoke ID";

static int keys_list(const struct cli_ctx *c)
{
	json_t *out = NULL, *k, *rows = json_array();
	size_t i;
	int rc = cli_call(c, "GET", "/sbv1/keys", NULL, &out, NULL, 0, NULL);

	if (rc == 0 && c->json) {
		cli_print_json(out);
	} else if (rc == 0) {
		json_array_foreach(json_object_get(out, "keys"), i, k)
			json_array_append_new(rows, json_pack("[s, s, s, s, s]", cli_str(k, "id"),
							      cli_str(k, "name"), cli_str(k, "role"),
							      cli_str(k, "created_at"),
							      cli_str(k, "revoked_at")));
		cli_print_rows((const char *const[]){"ID", "NAME", "ROLE", "CREATED", "REVOKED"}, 5,
			       rows);
	}
	json_decref(rows);
	json_decref(out);
	return rc;
}

/* keys create NAME [--role R]: a->v[1] is the name. */
static int keys_create(const struct cli_ctx *c, struct cli_args *a)
{
	const char *role = "user", *v;
	json_t *body, *out = NULL;
	bool bad = false;
	int rc = 0;

	for (a->i = 2; a->i < a->n && !rc; a->i++) {
		if ((v = cli_opt_val(a, "--role", &bad)))
			role = v;
		else if (!bad)
			rc = cli_fail(2, "keys create: unknown option `%s`", a->v[a->i]);
		if (bad)
			rc = 2;
	}
	if (rc)
		return rc;
	body = json_pack("{s:s, s:s}", "name", a->v[1], "role", role);
	rc = cli_call(c, "POST", "/sbv1/keys", body, &out, NULL, 0, NULL);
	json_decref(body);
	if (rc == 0 && c->json) {
		cli_print_json(out);
	} else if (rc == 0) {
		printf("%s\n", cli_str(out, "key"));
		fprintf(stderr, "cloche: key %s (%s, %s) made; it is shown only this once\n",
			cli_str(out, "id"), cli_str(out, "name"), cli_str(out, "role"));
	}
	json_decref(out);
	return rc;
}

static int keys_revoke(const struct cli_ctx *c, const char *id)
{
	char path[200];
	json_t *out = NULL;
	int rc;

	snprintf(path, sizeof(path), "/sbv1/keys/%.100s", id);
	rc = cli_call(c, "DELETE", path, NULL, &out, NULL, 0, NULL);
	if (rc == 0 && c->json)
		cli_print_json(out);
	else if (rc == 0)
		printf("%s revoked\n", cli_str(out, "id"));
	json_decref(out);
	return rc;
}

int cli_admin_keys(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	(void)cmd;
	if (a->n < 1)
		return cli_fail(2, "%s", keys_usage);
	if (strcmp(a->v[0], "list") == 0 && a->n == 1)
		return keys_list(c);
	if (strcmp(a->v[0], "create") == 0 && a->n >= 2 && a->v[1][0] != '-')
		return keys_create(c, a);
	if (strcmp(a->v[0], "revoke") == 0 && a->n == 2)
		return keys_revoke(c, a->v[1]);
	return cli_fail(2, "%s", keys_usage);
}
