/* Synchronous HTTP over libcurl; see http_client.h.  Each request uses its
 * own easy handle, so threads share nothing but curl's global state, which
 * is initialised once.  The body and the headers of the answer are
 * collected in bounded buffers: when one overflows, the callback refuses
 * the data, curl aborts the transfer, and the buffer's own error (with
 * E2BIG) is what the caller sees instead of curl's generic write error. */
#include "common/http_client.h"
#include "common/json.h"
#include "common/util.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_init_rc;

static void http_global_init(void)
{
	http_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Where a callback leaves its reason for aborting the transfer. */
struct http_ctx {
	struct http_resp *resp;
	struct err err;
	bool failed;
	const struct http_req *req;
};

void http_resp_free(struct http_resp *resp)
{
	buf_free(&resp->body);
	buf_free(&resp->headers);
	resp->status = 0;
}

/* Messages show the URL only up to '?': queries may carry tokens. */
static int http_url_len(const char *url)
{
	return (int)strcspn(url, "?");
}

static size_t http_on_body(char *p, size_t size, size_t n, void *data)
{
	struct http_ctx *x = data;

	if (buf_append(&x->resp->body, p, size * n, &x->err) == -1) {
		err_wrap(&x->err, "response body");
		x->failed = true;
		return 0;
	}
	return size * n;
}

/* Keeps "name: value" entries of the last response only: a status line
 * starts a new response (after 100 Continue, for instance). */
static size_t http_on_header(char *p, size_t size, size_t n, void *data)
{
	struct http_ctx *x = data;
	struct buf *h = &x->resp->headers;
	size_t len = size * n, name_len;
	const char *colon, *val, *end = p + len;

	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		buf_reset(h);
		return len;
	}
	while (end > p && (end[-1] == '\r' || end[-1] == '\n'))
		end--;
	colon = memchr(p, ':', (size_t)(end - p));
	if (!colon || colon == p || *p == ' ' || *p == '\t')
		return len; /* blank end-of-headers line, or obsolete folding */
	name_len = (size_t)(colon - p);
	for (val = colon + 1; val < end && (*val == ' ' || *val == '\t'); val++)
		;
	while (end > val && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (buf_append(h, p, name_len, &x->err) == -1 || buf_append(h, ": ", 2, &x->err) == -1 ||
	    buf_append(h, val, (size_t)(end - val), &x->err) == -1 ||
	    buf_append(h, "", 1, &x->err) == -1) {
		err_wrap(&x->err, "response headers");
		x->failed = true;
		return 0;
	}
	return len;
}

const char *http_resp_header(const struct http_resp *resp, const char *name)
{
	size_t n = strlen(name);
	const char *p = resp->headers.data, *end = p + resp->headers.len;

	for (; p && p < end; p += strlen(p) + 1)
		if (strncasecmp(p, name, n) == 0 && p[n] == ':')
			return p + n + 2;
	return NULL;
}

/* Says why curl failed: its error buffer is more precise ("Failed to
 * connect to ... port 80"), its code's text is the stable part. */
static void http_curl_error(struct err *e, const struct http_req *req, const char *method,
			    CURLcode rc, char *detail)
{
	const char *what = curl_easy_strerror(rc);
	size_t n = strlen(detail);

	while (n > 0 && (detail[n - 1] == '\n' || detail[n - 1] == ' '))
		detail[--n] = '\0';
	if (!n || strstr(detail, what))
		err_http(e, 502, "%s %.*s: %s", method, http_url_len(req->url), req->url,
			 n ? detail : what);
	else
		err_http(e, 502, "%s %.*s: %s (%s)", method, http_url_len(req->url), req->url,
			 what, detail);
	if (e && rc == CURLE_OPERATION_TIMEDOUT) {
		e->http_status = 504;
		e->code = ETIMEDOUT;
	}
}

/* The caller's poll hook: nonzero aborts the transfer. */
static int http_on_poll(void *data, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln)
{
	struct http_ctx *x = data;

	(void)dlt, (void)dln, (void)ult, (void)uln;
	if (!x->req->poll(x->req->poll_ud))
		return 0;
	err_set(&x->err, 0, "cancelled");
	x->err.code = ECANCELED;
	x->failed = true;
	return 1;
}

static bool http_sends_body(const struct http_req *req, const char *method)
{
	return req->body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
	       strcmp(method, "PATCH") == 0;
}

int http_request(const struct http_req *req, struct http_resp *resp, struct err *e)
{
	const char *method = req->method ? req->method : "GET";
	long timeout = req->timeout_ms > 0 ? req->timeout_ms : HTTP_TIMEOUT_MS_DEFAULT;
	struct http_ctx ctx = {resp, ERR_INIT, false, req};
	char detail[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL, *next;
	CURLcode rc = CURLE_OK;
	CURL *h;
	int r = -1;

	resp->status = 0;
	buf_init(&resp->body, req->max_resp ? req->max_resp : HTTP_MAX_RESP_DEFAULT);
	buf_init(&resp->headers, HTTP_MAX_HEADERS);
	pthread_once(&http_once, http_global_init);
	if (http_init_rc != CURLE_OK)
		return err_set(e, 0, "initialise libcurl: %s", curl_easy_strerror(http_init_rc));
	h = curl_easy_init();
	if (!h)
		return err_set(e, ENOMEM, "%s %.*s", method, http_url_len(req->url), req->url);
	/* No 100-continue round trip: our peers answer at once or not at all. */
	hdrs = curl_slist_append(NULL, "Expect:");
	for (size_t i = 0; hdrs && req->headers && req->headers[i]; i++) {
		next = curl_slist_append(hdrs, req->headers[i]);
		if (!next) {
			curl_slist_free_all(hdrs);
			hdrs = NULL;
		}
		hdrs = next;
	}
	if (!hdrs) {
		err_set(e, ENOMEM, "%s %.*s: headers", method, http_url_len(req->url), req->url);
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_URL, req->url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &ctx);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &ctx);
	if (req->unix_socket)
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
	if (req->poll) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, http_on_poll);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, &ctx);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
	if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else {
		if (http_sends_body(req, method)) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		}
		if (strcmp(method, "GET") != 0 || req->body)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	if (ctx.failed) {
		if (e) {
			*e = ctx.err;
			e->http_status = 502;
		}
		err_wrap(e, "%s %.*s", method, http_url_len(req->url), req->url);
	} else if (rc != CURLE_OK) {
		http_curl_error(e, req, method, rc, detail);
	} else {
		r = 0;
	}
out:
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	return r;
}

/* The server's own words from an error answer, when it gave any. */
static const char *http_json_reason(const json_t *v)
{
	json_t *err = json_object_get(v, "error");
	const char *s = json_string_value(json_object_get(err, "message"));

	if (!s)
		s = json_string_value(err);
	if (!s)
		s = json_string_value(json_object_get(v, "message"));
	return s;
}

int http_json(const char *method, const char *url, const json_t *body, json_t **out,
	      const struct http_json_opts *opts, struct err *e)
{
	static const struct http_json_opts none;
	AUTOFREE const char **hdrs = NULL;
	AUTOFREE char *text = NULL;
	AUTOJSON json_t *v = NULL;
	struct http_resp resp = {0};
	struct err perr = ERR_INIT;
	size_t n = 0, k = 0;
	const char *why;
	int r = -1;

	if (!opts)
		opts = &none;
	if (!method)
		method = "GET";
	if (out)
		*out = NULL;
	while (opts->headers && opts->headers[n])
		n++;
	hdrs = calloc(n + 3, sizeof(*hdrs));
	if (body)
		text = cj_dump(body);
	if (!hdrs || (body && !text))
		return err_set(e, ENOMEM, "%s %.*s", method, http_url_len(url), url);
	hdrs[k++] = "Accept: application/json";
	if (body)
		hdrs[k++] = "Content-Type: application/json";
	for (size_t i = 0; i < n; i++)
		hdrs[k++] = opts->headers[i];
	struct http_req req = {
		.method = method, .url = url, .headers = hdrs,
		.body = text, .body_len = text ? strlen(text) : 0,
		.timeout_ms = opts->timeout_ms, .max_resp = opts->max_resp,
		.unix_socket = opts->unix_socket,
	};
	if (http_request(&req, &resp, e) == -1)
		goto out;
	if (resp.body.len)
		v = cj_parse(resp.body.data, resp.body.len, resp.body.len, CJ_MAX_DEPTH, &perr);
	if (resp.status < 200 || resp.status > 299) {
		why = v ? http_json_reason(v) : NULL;
		err_http(e, resp.status >= 400 && resp.status < 500 ? (int)resp.status : 502,
			 "%s %.*s: server answered %ld%s%s", method, http_url_len(url), url,
			 resp.status, why ? ": " : "", why ? why : "");
		goto out;
	}
	if (resp.body.len && !v) {
		err_http(e, 502, "%s %.*s: response is not JSON: %s", method, http_url_len(url),
			 url, perr.msg);
		goto out;
	}
	if (out)
		*out = take_ptr(&v);
	r = (int)resp.status;
out:
	http_resp_free(&resp);
	return r;
}
