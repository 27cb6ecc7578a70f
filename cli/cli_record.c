/* The recording commands (record, recordings, download, trace); see
 * cli_record.h.  They share one argument reader: a sandbox id, a
 * recording for download, and each command's own option. */
#include "cli/cli_record.h"
#include "cli/cli_out.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct rec_args {
	const char *id;   /* the sandbox */
	const char *rec;  /* download's REC, record's --stop REC; may be NULL */
	const char *file; /* download's -o FILE; may be NULL */
};

/* Reads record ID [--stop REC] | recordings ID | download ID REC [-o FILE]
 * | trace ID for cmd into r.  0, or 2 with the complaint printed. */
static int rec_args(struct cli_args *a, const char *cmd, struct rec_args *r)
{
	const char *v;
	bool bad = false;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	for (a->i = 0; a->i < a->n && !rc; a->i++) {
		if (strcmp(cmd, "record") == 0 && (v = cli_opt_val(a, "--stop", &bad)))
			r->rec = v;
		else if (strcmp(cmd, "download") == 0 && (v = cli_opt_val(a, "-o", &bad)))
			r->file = v;
		else if (!bad && a->v[a->i][0] == '-')
			rc = cli_fail(2, "%s: unknown option `%s`", cmd, a->v[a->i]);
		else if (!bad && !r->id)
			r->id = a->v[a->i];
		else if (!bad && strcmp(cmd, "download") == 0 && !r->rec)
			r->rec = a->v[a->i];
		else if (!bad)
			rc = cli_fail(2, "%s: one sandbox at a time", cmd);
		if (bad)
			rc = 2;
	}
	if (!rc && (!r->id || (strcmp(cmd, "download") == 0 && !r->rec)))
		rc = cli_fail(2, "usage: cloche %s",
			      strcmp(cmd, "record") == 0     ? "record ID [--stop REC]"
			      : strcmp(cmd, "download") == 0 ? "download ID REC [-o FILE]"
			      : strcmp(cmd, "trace") == 0    ? "trace ID"
							     : "recordings ID");
	return rc;
}

/* Writes b to fname ("-": stdout).  Returns the exit code. */
static int save_to(const char *fname, const struct buf *b)
{
	bool out = strcmp(fname, "-") == 0;
	FILE *f = out ? stdout : fopen(fname, "wb");

	/* On a terminal, the bytes are the agent's (the trace is its own
	 * account): cli_term_write shows its control characters, and writes
	 * a file or a pipe as it is. */
	if (!f || cli_term_write(f, b->data ? b->data : "", b->len) == -1 ||
	    (!out && fclose(f) != 0))
		return cli_fail(1, "write `%s`: %s", fname, strerror(errno));
	if (!out)
		fprintf(stderr, "cloche: %s: %zu bytes\n", fname, b->len);
	return 0;
}

int cli_record_start(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	struct rec_args r;
	char path[300];
	json_t *out = NULL, *rec;
	int rc = rec_args(a, cmd, &r);

	if (rc)
		return rc;
	if (r.rec)
		snprintf(path, sizeof(path), "/sbv1/sandboxes/%.100s/recordings/%.100s/stop", r.id,
			 r.rec);
	else
		snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/recordings", r.id);
	if ((rc = cli_call(c, "POST", path, NULL, &out, NULL, 30, NULL)) == 0) {
		rec = r.rec ? out : json_object_get(out, "recording");
		if (c->json)
			cli_print_json(out);
		else
			printf("%s\n", cli_str(rec, "id"));
		if (!c->json && !r.rec)
			fprintf(stderr, "cloche: recording %s; `cloche record %s --stop %s` ends it\n",
				cli_str(rec, "id"), r.id, cli_str(rec, "id"));
	}
	json_decref(out);
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
		json_array_append_new(rows, json_pack("[s, s, s, s, s, s]", cli_str(r, "id"),
						      cli_str(r, "state"), cli_str(r, "started"), dur,
						      bytes, cli_str(r, "reason")));
	}
	return rows;
}

int cli_record_list(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	struct rec_args r;
	char path[300];
	json_t *out = NULL, *rows;
	int rc = rec_args(a, cmd, &r);

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/recordings", r.id);
	if ((rc = cli_fetch_for_table(c, path, &out)) == 1) {
		rc = 0;
		rows = recording_rows(out);
		cli_print_rows((const char *const[]){"ID", "STATE", "STARTED", "DURATION", "BYTES",
						     "REASON"},
			       6, rows);
		json_decref(rows);
	}
	json_decref(out);
	return rc;
}

int cli_record_download(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	struct rec_args r;
	char path[300], fname[300];
	struct buf b = BUF_INIT(0);
	int rc = rec_args(a, cmd, &r);

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%.100s/recordings/%.100s", r.id, r.rec);
	if (r.file)
		snprintf(fname, sizeof(fname), "%s", r.file);
	else
		snprintf(fname, sizeof(fname), "%.200s.mp4", r.rec);
	if ((rc = cli_fetch_raw(c, path, &b)) == 0)
		rc = save_to(fname, &b);
	buf_free(&b);
	return rc;
}

int cli_record_trace(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	struct rec_args r;
	char path[300];
	struct buf b = BUF_INIT(0);
	int rc = rec_args(a, cmd, &r);

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/sbv1/sandboxes/%.200s/trace", r.id);
	if ((rc = cli_fetch_raw(c, path, &b)) == 0)
		rc = save_to("-", &b);
	buf_free(&b);
	return rc;
}
