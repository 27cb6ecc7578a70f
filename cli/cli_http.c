/* The CLI's requests to the portal; see cli_http.h. */
#include "cli/cli_http.h"
#include "cli/cli_out.h"

#include "common/http_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The request's URL and Authorization header line. */
static void target(const struct cli_ctx *c, const char *path, char *url, size_t ulen, char *authz,
		   size_t alen)
{
	snprintf(url, ulen, "%s%s", c->cfg.url, path);
	snprintf(authz, alen, "Authorization: Bearer %s", c->cfg.key);
}

int cli_call(const struct cli_ctx *c, const char *method, const char *path, const json_t *body,
	     json_t **out, const char *idem, long extra_s, long *status_out)
{
	char url[1024], authz[320], idh[200];
	const char *hdrs[4] = {authz, "Content-Type: application/json", NULL, NULL};
	struct http_req req = {.method = method, .url = url, .headers = hdrs};
	struct http_resp resp;
	struct err e = ERR_INIT;
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc;

	*out = NULL;
	if (!c->cfg.url[0]) {
		free(text);
		return cli_fail(2, "no portal: give --url, set CLOCHE_URL, or run `make run` (it "
				   "writes /var/lib/cloche/aio.env)");
	}
	target(c, path, url, sizeof(url), authz, sizeof(authz));
	if (idem) {
		snprintf(idh, sizeof(idh), "Idempotency-Key: %s", idem);
		hdrs[2] = idh;
	}
	if (text) {
		req.body = text;
		req.body_len = strlen(text);
	}
	req.timeout_ms = (c->timeout_s + extra_s) * 1000;
	req.max_resp = 64u << 20;
	memset(&resp, 0, sizeof(resp));
	rc = http_request(&req, &resp, &e);
	free(text);
	if (rc == -1) {
		http_resp_free(&resp);
		return cli_fail(7, "cannot reach the portal at %s: %s", c->cfg.url, e.msg);
	}
	if (status_out)
		*status_out = resp.status;
	*out = json_loads(buf_str(&resp.body), 0, NULL);
	rc = cli_exit_code(resp.status);
	if (rc != 0) {
		const char *m = json_string_value(
			json_object_get(json_object_get(*out, "error"), "message"));
		const char *ra = http_resp_header(&resp, "retry-after");

		if (resp.status == 401 && !c->cfg.key[0])
			cli_fail(rc, "%s %s: no API key: give --api-key or set CLOCHE_API_KEY", method,
				 path);
		else
			cli_fail(rc, "%s %s: %ld: %s%s%s%s", method, path, resp.status,
				 m ? m : "the portal gave no message", ra ? " (retry after " : "",
				 ra ? ra : "", ra ? " s)" : "");
	}
	http_resp_free(&resp);
	return rc;
}

int cli_fetch_raw(const struct cli_ctx *c, const char *path, struct buf *b)
{
	char url[1024], authz[320];
	const char *hdrs[] = {authz, NULL};
	struct http_req req = {.url = url, .headers = hdrs, .max_resp = 512u << 20,
			       .timeout_ms = (c->timeout_s + 300) * 1000};
	struct http_resp resp;
	struct err e = ERR_INIT;
	int rc;

	if (!c->cfg.url[0])
		return cli_fail(2, "no portal: give --url or set CLOCHE_URL");
	target(c, path, url, sizeof(url), authz, sizeof(authz));
	memset(&resp, 0, sizeof(resp));
	if (http_request(&req, &resp, &e) == -1) {
		http_resp_free(&resp);
		return cli_fail(7, "cannot reach the portal at %s: %s", c->cfg.url, e.msg);
	}
	rc = cli_exit_code(resp.status);
	if (rc != 0) {
		json_t *j = json_loads(buf_str(&resp.body), 0, NULL);
		const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

		cli_fail(rc, "GET %s: %ld: %s", path, resp.status, m ? m : "the portal gave no message");
		json_decref(j);
	} else {
		*b = resp.body;
		memset(&resp.body, 0, sizeof(resp.body));
	}
	http_resp_free(&resp);
	return rc;
}

int cli_fetch_for_table(const struct cli_ctx *c, const char *path, json_t **out)
{
	int rc = cli_call(c, "GET", path, NULL, out, NULL, 0, NULL);

	if (rc)
		return rc;
	if (!c->json)
		return 1;
	cli_print_json(*out);
	return 0;
}
