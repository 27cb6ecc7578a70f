/* The sharing commands (share, shares, unshare); see cli_share.h.  They
 * share one argument reader: a sandbox id, share's options into the
 * request body, unshare's SHARE into the path. */
#include "cli/cli_share.h"
#include "cli/cli_out.h"

#include <stdio.h>
#include <string.h>

/* Reads share ID [--mode M] [--ttl S] [--label L] | shares ID |
 * unshare ID SHARE for cmd: the sandbox into *id, share's options into
 * body (only read for share), unshare's path into path (len bytes).
 * 0, or 2 with the complaint printed. */
static int share_args(struct cli_args *a, const char *cmd, json_t *body, const char **id,
		      char *path, size_t len)
{
	const char *v;
	bool bad = false;
	long n;
	int rc = 0;

	*id = NULL;
	for (a->i = 0; a->i < a->n && !rc; a->i++) {
		if (strcmp(cmd, "share") == 0 && (v = cli_opt_val(a, "--mode", &bad)))
			json_object_set_new(body, "mode", json_string(v));
		else if (strcmp(cmd, "share") == 0 && (v = cli_opt_val(a, "--label", &bad)))
			json_object_set_new(body, "label", json_string(v));
		else if (strcmp(cmd, "share") == 0 && (v = cli_opt_val(a, "--ttl", &bad)))
			rc = cli_whole(v, 1, 1L << 30, &n)
				     ? json_object_set_new(body, "ttl", json_integer(n))
				     : cli_bad_number("--ttl", v);
		else if (!bad && a->v[a->i][0] == '-')
			rc = cli_fail(2, "%s: unknown option `%s`", cmd, a->v[a->i]);
		else if (!bad && !*id)
			*id = a->v[a->i];
		else if (!bad && strcmp(cmd, "unshare") == 0 && a->i == 1)
			snprintf(path, len, "/sbv1/sandboxes/%.100s/shares/%.100s", *id, a->v[a->i]);
		else if (!bad)
			rc = cli_fail(2, "%s: one sandbox at a time", cmd);
		if (bad)
			rc = 2;
	}
	if (!rc && (!*id || (strcmp(cmd, "unshare") == 0 && a->n != 2)))
		rc = cli_fail(2, "usage: cloche %s",
			      strcmp(cmd, "share") == 0
				      ? "share ID [--mode view|control] [--ttl S] [--label L]"
			      : strcmp(cmd, "shares") == 0 ? "shares ID"
							   : "unshare ID SHARE");
	return rc;
}

int cli_share_create(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *body = json_object(), *out = NULL;
	const char *id;
	char path[300];
	int rc = share_args(a, cmd, body, &id, path, sizeof(path));

	if (rc)
		goto out;
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/shares", id);
	if ((rc = cli_call(c, "POST", path, body, &out, NULL, 0, NULL)) != 0)
		goto out;
	if (c->json) {
		cli_print_json(out);
	} else {
		printf("%s\n", cli_str(out, "url"));
		fprintf(stderr, "cloche: share %s (%s) until %s; `cloche unshare %s %s` ends it\n",
			cli_str(out, "id"), cli_str(out, "mode"), cli_str(out, "expires_at"), id,
			cli_str(out, "id"));
	}
out:
	json_decref(body);
	json_decref(out);
	return rc;
}

int cli_share_list(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *out = NULL, *sh, *rows = NULL;
	const char *id;
	char path[300];
	size_t i;
	int rc = share_args(a, cmd, NULL, &id, path, sizeof(path));

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/shares", id);
	if ((rc = cli_fetch_for_table(c, path, &out)) != 1)
		goto out;
	rc = 0;
	rows = json_array();
	json_array_foreach(json_object_get(out, "shares"), i, sh)
		json_array_append_new(rows, json_pack("[s, s, s, s, s]", cli_str(sh, "id"),
						      cli_str(sh, "mode"), cli_str(sh, "state"),
						      cli_str(sh, "expires_at"), cli_str(sh, "label")));
	cli_print_rows((const char *const[]){"ID", "MODE", "STATE", "EXPIRES", "LABEL"}, 5, rows);
out:
	json_decref(rows);
	json_decref(out);
	return rc;
}

int cli_share_revoke(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *out = NULL;
	const char *id;
	char path[300];
	int rc = share_args(a, cmd, NULL, &id, path, sizeof(path));

	if (rc)
		return rc;
	if ((rc = cli_call(c, "DELETE", path, NULL, &out, NULL, 0, NULL)) == 0) {
		if (c->json)
			cli_print_json(out);
		else
			printf("%s %s\n", cli_str(out, "id"), cli_str(out, "state"));
	}
	json_decref(out);
	return rc;
}
