/* Outbound HTTP for our programs: synchronous requests over libcurl.
 *
 * One call makes one request on a fresh easy handle and waits for the
 * answer, bounded in time (timeout_ms covers connect and transfer) and in
 * size (a response body larger than max_resp is an error, never a silent
 * truncation).  Only http and https are allowed, redirects are not followed,
 * and a Unix socket can stand in for TCP (the node agent's local API).
 * Errors name the request: "GET http://10.0.0.2:8080/healthz: Couldn't
 * connect to server (Failed to connect to ... Connection refused)", with
 * http_status 504 for timeouts and 502 for other upstream failures.
 * Safe to call from several threads at once. */
#ifndef CLOCHE_HTTP_CLIENT_H
#define CLOCHE_HTTP_CLIENT_H

#include "common/buf.h"
#include "common/err.h"

#include <jansson.h>
#include <stddef.h>

#define HTTP_TIMEOUT_MS_DEFAULT 30000
#define HTTP_MAX_RESP_DEFAULT (1u << 20)
#define HTTP_MAX_HEADERS (64u << 10) /* response header bytes kept */

struct http_req {
	const char *method;         /* "GET", "POST", ...; NULL means GET */
	const char *url;            /* http:// or https:// */
	const char *const *headers; /* "Name: value" strings, NULL-terminated; may be NULL */
	const void *body;           /* sent when not NULL (even if body_len is 0) */
	size_t body_len;
	long timeout_ms;            /* whole request; 0 means HTTP_TIMEOUT_MS_DEFAULT */
	size_t max_resp;            /* body limit; 0 means HTTP_MAX_RESP_DEFAULT */
	const char *unix_socket;    /* connect to this AF_UNIX path instead; may be NULL */
	/* May be NULL.  Called on the caller's thread about once a second
	 * while the request runs (more often while data flows); nonzero
	 * aborts it: http_request() then fails with code ECANCELED. */
	int (*poll)(void *ud);
	void *poll_ud;
};

struct http_resp {
	long status;         /* e.g. 200; 0 when no response arrived */
	struct buf body;     /* NUL-terminated for convenience */
	struct buf headers;  /* internal: "name: value\0" entries of the final response */
};

/* Frees the response's buffers and zeroes it; safe on a zeroed struct and
 * on a response that http_request() failed to fill. */
void http_resp_free(struct http_resp *resp);

/* Returns the value of response header name (case-insensitive), without
 * surrounding spaces, or NULL when absent.  With several, the first. */
const char *http_resp_header(const struct http_resp *resp, const char *name);

/* Performs req and fills resp, overwriting it (free a previous response
 * first).  The caller frees resp with http_resp_free(), also after a
 * failure: a partial response may be kept for diagnostics.
 * Any HTTP status is a success here; the caller judges resp->status.
 * Returns 0, or -1 with e set when no complete response was received:
 * connection or TLS failure, timeout, or a body larger than max_resp
 * (code E2BIG). */
int http_request(const struct http_req *req, struct http_resp *resp, struct err *e);

struct http_json_opts {
	long timeout_ms;            /* as in struct http_req */
	size_t max_resp;
	const char *unix_socket;
	const char *const *headers; /* extra headers, e.g. "Authorization: ..." */
};

/* Sends body (NULL for none) as application/json and parses the answer.
 * opts may be NULL for the defaults.  On a 2xx status, *out (when out is not
 * NULL) receives the parsed body as a new reference, or NULL for an empty
 * body, and the status is returned.  Any other status is an error whose
 * message carries the server's own ("POST url: 404: no sandbox `x`", taken
 * from {"error": {"message": ...}} or {"error": "..."} when present) and
 * whose http_status is the upstream status for 4xx, 502 otherwise; a
 * non-JSON answer is a 502.  Returns the status or -1. */
int http_json(const char *method, const char *url, const json_t *body, json_t **out,
	      const struct http_json_opts *opts, struct err *e);

#endif
