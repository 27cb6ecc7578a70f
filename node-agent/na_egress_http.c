/* The HTTP side of the egress proxy, pure: a client's request head, read
 * by common/http1_head with a forward proxy's leniencies, then this proxy's
 * rules on top (CONNECT host:port or an absolute http:// URL), and the
 * head sent upstream for plain HTTP.  See docs/egress.md. */
#include "node-agent/na_egress.h"

#include "common/http1_head.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- request heads ---- */

/* host[:port] or [v6][:port] of s (len bytes).  port stays as is when the
 * authority names none and port_required is false. */
static int parse_authority(const char *s, size_t len, bool port_required, struct na_egress_req *r,
			   struct err *e)
{
	const char *colon = NULL, *rb;
	size_t i, hlen;

	if (memchr(s, '@', len))
		return err_http(e, 400, "user information in the target is not supported");
	if (len > 0 && s[0] == '[') {
		rb = memchr(s, ']', len);
		if (!rb || (size_t)(rb - s - 1) >= sizeof(r->host))
			return err_http(e, 400, "malformed IPv6 literal in the target");
		hlen = (size_t)(rb - s - 1);
		memcpy(r->host, s + 1, hlen);
		r->host[hlen] = '\0';
		{
			struct in6_addr a;

			if (inet_pton(AF_INET6, r->host, &a) != 1)
				return err_http(e, 400, "malformed IPv6 literal in the target");
		}
		if ((size_t)(rb - s + 1) < len) {
			if (rb[1] != ':')
				return err_http(e, 400, "malformed target after the IPv6 literal");
			colon = rb + 1;
		}
	} else {
		colon = memchr(s, ':', len);
		hlen = colon ? (size_t)(colon - s) : len;
		if (colon && memchr(colon + 1, ':', len - hlen - 1))
			return err_http(e, 400, "IPv6 literals in the target must be in brackets");
		if (hlen == 0)
			return err_http(e, 400, "empty host in the target");
		if (hlen > NA_EGRESS_MAX_NAME + 1)
			return err_http(e, 400, "host name in the target is too long");
		for (i = 0; i < hlen; i++)
			if (s[i] != '.' && !na_egress_host_char(s[i]) && !(s[i] >= 'A' && s[i] <= 'Z'))
				return err_http(e, 400, "invalid character in the target's host");
		memcpy(r->host, s, hlen);
		r->host[hlen] = '\0';
	}
	if (colon) {
		r->port = na_egress_parse_port(colon + 1, len - (size_t)(colon + 1 - s));
		if (r->port == -1)
			return err_http(e, 400, "bad port in the target (1-65535)");
	} else if (port_required) {
		return err_http(e, 400, "CONNECT needs host:port");
	}
	return 0;
}

/* A forward proxy's clients send bare LF lines (RFC 9112 2.2 lets a server
 * take them), HTTP/1.1 without Host (the URL or the CONNECT target names
 * the server) and targets in absolute or authority form; any HTTP/1.x went
 * through since the start.  Everything else is the strict parser's. */
#define PARSE_FLAGS (HTTP1_BARE_LF | HTTP1_NO_HOST | HTTP1_ANY_MINOR | HTTP1_ANY_TARGET)

/* The bytes of a head that is not complete yet: -1 with e set on one that
 * can never be part of a valid head, so that a client speaking something
 * else (TLS to the plain port) is answered now rather than after the head
 * timeout. */
static int screen(const char *buf, size_t len, struct err *e)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\r') {
			if (i + 1 < len && buf[i + 1] != '\n')
				return err_http(e, 400, "bare CR in the request head");
		} else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
			return err_http(e, 400, "control character in the request head");
		}
	}
	return 0;
}

/* The head in buf[0..len), read by common/http1_head: its length, 0 when
 * it is not complete yet, or -1 with e set. */
static int read_head(const char *buf, size_t len, struct http1_head *h, struct err *e)
{
	size_t lim = len < NA_EGRESS_MAX_HEAD ? len : NA_EGRESS_MAX_HEAD;
	const char *why = NULL;

	switch (http1_request_parse(buf, lim, PARSE_FLAGS, h, &why)) {
	case HTTP1_OK:
		return (int)h->len;
	case HTTP1_PARTIAL:
		if (screen(buf, lim, e) == -1)
			return -1;
		if (len >= NA_EGRESS_MAX_HEAD)
			return err_http(e, 431, "request head exceeds %d bytes",
					NA_EGRESS_MAX_HEAD);
		return 0;
	case HTTP1_TOO_MANY:
		return err_http(e, 431, "more than %d header lines", HTTP1_MAX_HEADERS);
	default: /* malformed, or a version or transfer coding not taken: 400 like every
		  * other refusal of a head here (the table in docs/egress.md) */
		return err_http(e, 400, "%s", why);
	}
}

int na_egress_parse_head(const char *buf, size_t len, struct na_egress_req *r, struct err *e)
{
	struct http1_head h;
	int hl = read_head(buf, len, &h, e);
	const char *tgt;
	size_t tlen, al;

	memset(r, 0, sizeof(*r));
	if (hl <= 0)
		return hl;
	if (h.method.n >= sizeof(r->method))
		return err_http(e, 400, "malformed request line");
	memcpy(r->method, h.method.p, h.method.n);
	r->method[h.method.n] = '\0';
	r->vminor = h.minor;
	tgt = h.target.p;
	tlen = h.target.n;

	if (strcmp(r->method, "CONNECT") == 0) {
		r->connect = true;
		if (parse_authority(tgt, tlen, true, r, e) == -1)
			return -1;
		return hl;
	}
	if (tlen >= 8 && strncasecmp(tgt, "https://", 8) == 0)
		return err_http(e, 400, "https:// URLs go through CONNECT");
	if (tlen < 7 || strncasecmp(tgt, "http://", 7) != 0)
		return err_http(e, 400,
				"not a proxy request (use CONNECT or an absolute http:// URL)");
	r->auth = tgt + 7;
	for (al = 0; al < tlen - 7; al++)
		if (r->auth[al] == '/' || r->auth[al] == '?' || r->auth[al] == '#')
			break;
	r->auth_len = al;
	r->port = 80;
	if (parse_authority(r->auth, al, false, r, e) == -1)
		return -1;
	if (al == tlen - 7 || r->auth[al] == '#') {
		r->path = "/";
		r->path_len = 1;
	} else {
		r->path = r->auth + al;
		r->path_len = tlen - 7 - al;
	}
	return hl;
}

static bool hop_header(struct http1_span name)
{
	static const char *const drop[] = {"proxy-connection", "proxy-authorization", "connection",
					   "keep-alive", "host"};

	for (size_t i = 0; i < ARRAY_LEN(drop); i++)
		if (http1_span_ieq(name, drop[i]))
			return true;
	return false;
}

size_t na_egress_upstream_head(const char *buf, size_t hl, const struct na_egress_req *rq,
			       char *out, size_t cap)
{
	struct http1_head h;
	size_t len;
	int w;

	/* the head parsed before, read again for its header lines */
	if (http1_request_parse(buf, hl, PARSE_FLAGS, &h, NULL) != HTTP1_OK)
		return 0;
	w = snprintf(out, cap, "%s %s%.*s HTTP/1.%d\r\nHost: %.*s\r\n", rq->method,
		     rq->path[0] == '/' ? "" : "/", (int)rq->path_len, rq->path, rq->vminor,
		     (int)rq->auth_len, rq->auth);
	if (w < 0 || (size_t)w >= cap)
		return 0;
	len = (size_t)w;
	for (size_t i = 0; i < h.nh; i++) {
		const char *p = h.h[i].name.p, *end = h.h[i].value.p + h.h[i].value.n;
		size_t n;

		if (hop_header(h.h[i].name))
			continue;
		/* the line as sent, blanks after the value too, without its end */
		while (*end == ' ' || *end == '\t')
			end++;
		n = (size_t)(end - p);
		if (len + n + 2 >= cap)
			return 0;
		memcpy(out + len, p, n);
		memcpy(out + len + n, "\r\n", 2);
		len += n + 2;
	}
	w = snprintf(out + len, cap - len, "Connection: close\r\n\r\n");
	if (w < 0 || (size_t)w >= cap - len)
		return 0;
	return len + (size_t)w;
}
