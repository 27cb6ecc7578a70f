/* The HTTP side of the egress proxy, pure: parsing a client's request head
 * (CONNECT or absolute-form http://) and building the head sent upstream
 * for plain HTTP.  See docs/egress.md. */
#include "node-agent/na_egress.h"

#include "common/util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- request heads ---- */

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

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

/* The head's length when complete, 0 when not (yet), -1 on bytes that can
 * never start a valid head. */
static long head_end(const char *buf, size_t len, struct err *e)
{
	size_t i, lim = len < NA_EGRESS_MAX_HEAD ? len : NA_EGRESS_MAX_HEAD;

	for (i = 0; i < lim; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\n') {
			if ((i >= 1 && buf[i - 1] == '\n') ||
			    (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n'))
				return (long)i + 1;
		} else if (c == '\r') {
			if (i + 1 < len && buf[i + 1] != '\n')
				return err_http(e, 400, "bare CR in the request head");
		} else if ((c < 0x20 && c != '\t') || c == 0x7f) {
			return err_http(e, 400, "control character in the request head");
		}
	}
	if (len >= NA_EGRESS_MAX_HEAD)
		return err_http(e, 431, "request head exceeds %d bytes", NA_EGRESS_MAX_HEAD);
	return 0;
}

/* Length of the line at p (up to end) without its CRLF/LF; *next: the
 * offset after it. */
static size_t line_len(const char *p, const char *end, const char **next)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	size_t n;

	if (!nl)
		nl = end;
	*next = nl < end ? nl + 1 : end;
	n = (size_t)(nl - p);
	if (n > 0 && p[n - 1] == '\r')
		n--;
	return n;
}

int na_egress_parse_head(const char *buf, size_t len, struct na_egress_req *r, struct err *e)
{
	long hl = head_end(buf, len, e);
	const char *p, *end, *next, *sp1, *sp2, *tgt, *ver;
	size_t n, mlen, tlen, vlen, al;

	memset(r, 0, sizeof(*r));
	if (hl <= 0)
		return (int)hl;
	end = buf + hl;
	n = line_len(buf, end, &next);
	r->hdr_off = (size_t)(next - buf);
	sp1 = memchr(buf, ' ', n);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - buf)) : NULL;
	if (!sp1 || !sp2)
		return err_http(e, 400, "malformed request line");
	mlen = (size_t)(sp1 - buf);
	tgt = sp1 + 1;
	tlen = (size_t)(sp2 - tgt);
	ver = sp2 + 1;
	vlen = n - (size_t)(ver - buf);
	if (mlen == 0 || mlen >= sizeof(r->method) || tlen == 0)
		return err_http(e, 400, "malformed request line");
	for (p = buf; p < sp1; p++)
		if (!is_tchar(*p))
			return err_http(e, 400, "malformed request method");
	if (memchr(tgt, '\t', tlen))
		return err_http(e, 400, "malformed request target");
	if (vlen != 8 || memcmp(ver, "HTTP/1.", 7) != 0 || ver[7] < '0' || ver[7] > '9')
		return err_http(e, 400, "unsupported protocol (HTTP/1.x only)");
	r->vminor = ver[7] - '0';
	memcpy(r->method, buf, mlen);
	r->method[mlen] = '\0';

	/* Header lines: "name: value", no folding. */
	for (p = next; p < end;) {
		const char *c;

		n = line_len(p, end, &next);
		if (n == 0)
			break;
		c = memchr(p, ':', n);
		if (!c || c == p)
			return err_http(e, 400, "malformed header line");
		for (const char *q = p; q < c; q++)
			if (!is_tchar(*q))
				return err_http(e, 400, "malformed header name");
		p = next;
	}

	if (strcmp(r->method, "CONNECT") == 0) {
		r->connect = true;
		if (parse_authority(tgt, tlen, true, r, e) == -1)
			return -1;
		return (int)hl;
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
	return (int)hl;
}

static bool hop_header(const char *line, size_t n)
{
	static const char *const drop[] = {"proxy-connection", "proxy-authorization", "connection",
					   "keep-alive", "host"};
	size_t i, k;

	for (i = 0; i < ARRAY_LEN(drop); i++) {
		k = strlen(drop[i]);
		if (n > k && line[k] == ':' && strncasecmp(line, drop[i], k) == 0)
			return true;
	}
	return false;
}

size_t na_egress_upstream_head(const char *buf, size_t hl, const struct na_egress_req *rq,
			       char *out, size_t cap)
{
	const char *p = buf + rq->hdr_off, *end = buf + hl, *next;
	size_t len, n;
	int w;

	w = snprintf(out, cap, "%s %s%.*s HTTP/1.%d\r\nHost: %.*s\r\n", rq->method,
		     rq->path[0] == '/' ? "" : "/", (int)rq->path_len, rq->path, rq->vminor,
		     (int)rq->auth_len, rq->auth);
	if (w < 0 || (size_t)w >= cap)
		return 0;
	len = (size_t)w;
	while (p < end) {
		n = line_len(p, end, &next);
		if (n == 0)
			break;
		if (!hop_header(p, n)) {
			if (len + n + 2 >= cap)
				return 0;
			memcpy(out + len, p, n);
			memcpy(out + len + n, "\r\n", 2);
			len += n + 2;
		}
		p = next;
	}
	w = snprintf(out + len, cap - len, "Connection: close\r\n\r\n");
	if (w < 0 || (size_t)w >= cap - len)
		return 0;
	return len + (size_t)w;
}
