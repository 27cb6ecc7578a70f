/* libFuzzer target: what a sandbox sends the egress proxy (the request head
 * layer over common/http1_head, fed the input as bytes read so far, and
 * the head it sends upstream for plain HTTP) and the `egress` policy of an
 * API request (the input parsed as JSON, then as a policy, and the policy's
 * JSON form parsed back). */
#include "node-agent/na_egress.h"

#include "common/http1_head.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The head sent upstream for plain HTTP is one the strict parser reads
 * (with the client's version and target), framing the body as the client
 * did, with no hop-by-hop header left and the Host of the URL. */
static void upstream(const char *buf, size_t hl, const struct na_egress_req *r)
{
	static char out[NA_EGRESS_MAX_HEAD + 1024];
	struct http1_head c, u;
	size_t n = na_egress_upstream_head(buf, hl, r, out, sizeof(out));
	enum http1_result res;

	if (n == 0)
		abort(); /* a head within the limit always fits */
	if (http1_request_parse(buf, hl,
				HTTP1_BARE_LF | HTTP1_NO_HOST | HTTP1_ANY_MINOR | HTTP1_ANY_TARGET, &c,
				NULL) != HTTP1_OK)
		abort();
	res = http1_request_parse(out, n, HTTP1_ANY_MINOR | HTTP1_ANY_TARGET, &u, NULL);
	if (res == HTTP1_TOO_MANY && c.nh >= HTTP1_MAX_HEADERS - 1)
		return;
	if (res != HTTP1_OK || u.len != n || u.body != c.body ||
	    u.content_length != c.content_length || u.minor != r->vminor || u.keep_alive ||
	    u.host.n != r->auth_len || memcmp(u.host.p, r->auth, r->auth_len) != 0)
		abort();
	for (size_t i = 0; i < u.nh; i++)
		if (http1_span_ieq(u.h[i].name, "proxy-connection") ||
		    http1_span_ieq(u.h[i].name, "proxy-authorization") ||
		    http1_span_ieq(u.h[i].name, "keep-alive"))
			abort();
}

static void head(const uint8_t *data, size_t size)
{
	struct na_egress_req r;
	struct err e = ERR_INIT;
	int n = na_egress_parse_head((const char *)data, size, &r, &e);

	if (n == -1 && (!e.msg[0] || e.http_status < 400 || e.http_status > 499))
		abort(); /* a refusal must say why, with a 4xx */
	if (n > 0) {
		if ((size_t)n > size || n > NA_EGRESS_MAX_HEAD || r.port < 1 || r.port > 65535 ||
		    !r.host[0] || strlen(r.method) >= sizeof(r.method))
			abort();
		if (!r.connect && (!r.path || r.path_len == 0))
			abort();
		if (!r.connect && r.path[0] != '/' && r.path[0] != '?')
			abort();
		if (!r.connect)
			upstream((const char *)data, (size_t)n, &r);
	}
	/* Every shorter prefix of a valid head is just incomplete. */
	if (n > 0 && size < 512) {
		struct na_egress_req r2;
		size_t i;

		for (i = 0; i < (size_t)n; i++)
			if (na_egress_parse_head((const char *)data, i, &r2, &e) != 0)
				abort();
	}
}

static void policy(const uint8_t *data, size_t size)
{
	struct na_egress_policy p, q;
	struct err e = ERR_INIT;
	json_error_t je;
	json_t *v, *back;
	int i;

	if (size > 4096)
		return;
	v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!v)
		return;
	if (na_egress_policy_parse(v, &p, &e) == -1) {
		if (e.http_status != 400 || strncmp(e.msg, "`egress`: ", 10) != 0)
			abort();
	} else {
		back = na_egress_policy_json(&p);
		if (!back || na_egress_policy_parse(back, &q, &e) == -1 || q.n != p.n)
			abort();
		for (i = 0; i < p.n; i++) {
			if (strcmp(p.rules[i].host, q.rules[i].host) != 0 ||
			    p.rules[i].port != q.rules[i].port ||
			    p.rules[i].wildcard != q.rules[i].wildcard)
				abort();
			/* A rule allows its own host (a wildcard: a subdomain). */
			if (!p.rules[i].wildcard && p.rules[i].port > 0 &&
			    !na_egress_policy_allows(&p, p.rules[i].host, p.rules[i].port))
				abort();
		}
		json_decref(back);
	}
	json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	head(data, size);
	policy(data, size);
	return 0;
}
