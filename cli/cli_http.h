/* The CLI's requests to the portal: the URL from the configured base and
 * an API path, the key as a bearer token, the timeout, and the answer
 * turned into the process exit code (cli_exit_code) with a one-line
 * error on stderr when it is not a success.  The key is never printed.
 * Every command's handler gets the struct cli_ctx that main() filled. */
#ifndef CLOCHE_CLI_HTTP_H
#define CLOCHE_CLI_HTTP_H
#include "cli/cli_config.h"
#include "common/buf.h"

#include <jansson.h>
#include <stdbool.h>

/* What the global options and the configuration settled for this run. */
struct cli_ctx {
	struct cli_config cfg; /* the portal's base URL and the API key */
	bool json;             /* --json: print the portal's JSON, not tables */
	long timeout_s;        /* --timeout: seconds a request may take */
};

/* One API call: method on path (e.g. "/sbv1/keys") with body (may be NULL)
 * as JSON and idem (may be NULL) as the Idempotency-Key, allowed
 * c->timeout_s + extra_s seconds.  *out gets the parsed answer (a new
 * reference, NULL when it is not JSON) whatever the status, and
 * *status_out (may be NULL) the status when one came.  Returns the exit
 * code; when it is not 0, `cloche: METHOD PATH: STATUS: message` (or why
 * the portal was not reached) is printed. */
int cli_call(const struct cli_ctx *c, const char *method, const char *path, const json_t *body,
	     json_t **out, const char *idem, long extra_s, long *status_out);
/* GETs path whole into *b (a recording, a trace: up to 512 MiB, allowed
 * c->timeout_s + 300 seconds).  *b is the caller's to buf_free() on 0 and
 * untouched otherwise.  Returns the exit code, the error printed. */
int cli_fetch_raw(const struct cli_ctx *c, const char *path, struct buf *b);
/* GETs path for a command that prints a table.  With --json the answer is
 * printed here and 0 returned; without, 1 says the caller has the answer
 * in *out to render.  Any other value is an exit code, the error printed.
 * *out is the caller's to json_decref() in every case. */
int cli_fetch_for_table(const struct cli_ctx *c, const char *path, json_t **out);

#endif
