/* The egress proxy: policy, address checks, request heads, and the engine
 * (one acceptor thread over every sandbox's listener, one thread per
 * connection doing blocking-style I/O with poll timeouts).  See
 * docs/egress.md. */
#include "node-agent/na_egress.h"

#include "common/log.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define HEAD_TIMEOUT_MS 15000
#define CONNECT_TIMEOUT_MS 10000
#define IDLE_TIMEOUT_MS (10 * 60 * 1000)
#define SEND_TIMEOUT_MS 10000
#define IFADDR_TTL_MS 5000
#define MAX_NAME 253
#define RELAY_BUF 16384
#define THREAD_STACK (256 * 1024)

/* ---- policy ---- */

static bool is_host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Lowercases s (len bytes) into out and checks it is a DNS name or IPv4
 * literal: labels of 1-63 of [a-z0-9-_] separated by dots, at most 253.  A
 * trailing dot is dropped.  0 or -1. */
static int norm_name(const char *s, size_t len, char *out)
{
	size_t i, label = 0;

	if (len > 0 && s[len - 1] == '.')
		len--;
	if (len == 0 || len > MAX_NAME)
		return -1;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0)
				return -1;
			label = 0;
		} else if (!is_host_char(c) || ++label > 63) {
			return -1;
		}
		out[i] = c;
	}
	out[len] = '\0';
	return label == 0 ? -1 : 0;
}

/* Canonical text of an IPv6 literal (s, len bytes, no brackets) into out
 * (>= INET6_ADDRSTRLEN).  0 or -1 when s is not one. */
static int norm_v6(const char *s, size_t len, char *out)
{
	char tmp[INET6_ADDRSTRLEN];
	struct in6_addr a;

	if (len == 0 || len >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	if (inet_pton(AF_INET6, tmp, &a) != 1)
		return -1;
	inet_ntop(AF_INET6, &a, out, INET6_ADDRSTRLEN);
	return 0;
}

/* "1".."65535" -> port, or -1. */
static int parse_port(const char *s, size_t len)
{
	int port = 0;
	size_t i;

	if (len == 0 || len > 5)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		port = port * 10 + (s[i] - '0');
	}
	return port >= 1 && port <= 65535 ? port : -1;
}

static int parse_rule(const char *s, size_t idx, struct na_egress_rule *r, struct err *e)
{
	size_t len = strlen(s), hlen;
	const char *h = s, *colon = NULL, *rb;

	memset(r, 0, sizeof(*r));
	if (len == 0)
		return err_http(e, 400, "`egress`: allow[%zu] is empty", idx);
	if (len > 2 && s[0] == '*' && s[1] == '.') {
		r->wildcard = true;
		h += 2;
	} else if (s[0] == '*') {
		return err_http(e, 400, "`egress`: allow[%zu] `%.64s`: a wildcard must be `*.` "
			       "followed by a domain", idx, s);
	}
	if (h[0] == '[') {
		rb = strchr(h, ']');
		if (!rb || r->wildcard || norm_v6(h + 1, (size_t)(rb - h - 1), r->host) == -1)
			return err_http(e, 400, "`egress`: allow[%zu] `%.64s` is not a valid "
				       "[IPv6] literal", idx, s);
		if (rb[1] == ':')
			colon = rb + 1;
		else if (rb[1] != '\0')
			return err_http(e, 400, "`egress`: allow[%zu] `%.64s`: expected `:port` "
				       "after `]`", idx, s);
	} else if (strchr(h, ':') != strrchr(h, ':')) {
		/* Several colons: a bare IPv6 literal, which takes no port. */
		if (r->wildcard || norm_v6(h, strlen(h), r->host) == -1)
			return err_http(e, 400, "`egress`: allow[%zu] `%.64s` is not a host "
				       "name or IP literal (IPv6 with a port: [addr]:port)", idx, s);
	} else {
		colon = strchr(h, ':');
		hlen = colon ? (size_t)(colon - h) : strlen(h);
		if (hlen - (hlen > 0 && h[hlen - 1] == '.') > MAX_NAME)
			return err_http(e, 400, "`egress`: allow[%zu]: host name longer than %d "
				       "characters", idx, MAX_NAME);
		if (norm_name(h, hlen, r->host) == -1)
			return err_http(e, 400, "`egress`: allow[%zu] `%.64s` is not a host name, "
				       "*.domain or IP literal", idx, s);
	}
	if (!colon)
		r->port = 0;
	else if (strcmp(colon + 1, "*") == 0)
		r->port = -1;
	else if ((r->port = parse_port(colon + 1, strlen(colon + 1))) == -1)
		return err_http(e, 400, "`egress`: allow[%zu] `%.64s`: bad port (1-65535 or *)",
			       idx, s);
	return 0;
}

int na_egress_policy_parse(const json_t *v, struct na_egress_policy *p, struct err *e)
{
	const char *key;
	json_t *val, *allow = NULL;
	size_t i;

	p->n = 0;
	if (!v || json_is_null(v) ||
	    (json_is_string(v) && strcmp(json_string_value(v), "none") == 0))
		return 0;
	if (!json_is_object(v))
		return err_http(e, 400,
				"`egress`: must be \"none\" or {\"allow\": [host patterns]}");
	json_object_foreach((json_t *)v, key, val) {
		if (strcmp(key, "allow") != 0)
			return err_http(e, 400, "`egress`: unknown key `%.64s` (only `allow`)",
					key);
		allow = val;
	}
	if (!allow)
		return err_http(e, 400, "`egress`: `allow` is required");
	if (!json_is_array(allow))
		return err_http(e, 400, "`egress`: `allow` must be an array of host patterns");
	if (json_array_size(allow) > NA_EGRESS_MAX_RULES)
		return err_http(e, 400, "`egress`: `allow` has %zu entries, at most %d",
				json_array_size(allow), NA_EGRESS_MAX_RULES);
	json_array_foreach(allow, i, val) {
		if (!json_is_string(val)) {
			p->n = 0;
			return err_http(e, 400, "`egress`: allow[%zu] must be a string", i);
		}
		if (parse_rule(json_string_value(val), i, &p->rules[i], e) == -1) {
			p->n = 0;
			return -1;
		}
		p->n = (int)i + 1;
	}
	return 0;
}

json_t *na_egress_policy_json(const struct na_egress_policy *p)
{
	json_t *allow, *o;
	char s[300], port[16];
	int i;

	if (p->n == 0)
		return json_string("none");
	allow = json_array();
	o = json_pack("{s:o}", "allow", allow);
	if (!o)
		return NULL;
	for (i = 0; i < p->n; i++) {
		const struct na_egress_rule *r = &p->rules[i];
		bool v6 = strchr(r->host, ':') != NULL;

		if (r->port == -1)
			snprintf(port, sizeof(port), ":*");
		else if (r->port > 0)
			snprintf(port, sizeof(port), ":%d", r->port);
		else
			port[0] = '\0';
		snprintf(s, sizeof(s), "%s%s%s%s%s", r->wildcard ? "*." : "", v6 ? "[" : "",
			 r->host, v6 ? "]" : "", port);
		json_array_append_new(allow, json_string(s));
	}
	return o;
}

bool na_egress_policy_allows(const struct na_egress_policy *p, const char *host, int port)
{
	char h[256];
	size_t len = strlen(host), hl, rl;
	int i;

	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		host++;
		len -= 2;
	}
	if (memchr(host, ':', len)) {
		if (norm_v6(host, len, h) == -1)
			return false;
	} else if (norm_name(host, len, h) == -1) {
		return false;
	}
	hl = strlen(h);
	for (i = 0; i < p->n; i++) {
		const struct na_egress_rule *r = &p->rules[i];

		if (r->port == 0 ? port != 80 && port != 443 : r->port > 0 && r->port != port)
			continue;
		if (!r->wildcard) {
			if (strcmp(h, r->host) == 0)
				return true;
			continue;
		}
		rl = strlen(r->host);
		if (hl > rl + 1 && h[hl - rl - 1] == '.' && strcmp(h + hl - rl, r->host) == 0)
			return true;
	}
	return false;
}

/* ---- forbidden addresses ---- */

static struct {
	pthread_mutex_t mu;
	uint64_t at_ms;
	bool loaded;
	size_t n4, n6;
	uint32_t *v4; /* network order */
	struct in6_addr *v6;
} ifc = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Refreshes the list of this host's addresses when older than the TTL.
 * Called with ifc.mu held.  On failure the old list stays. */
static void ifc_refresh(void)
{
	struct ifaddrs *ifa, *i;
	size_t n4 = 0, n6 = 0;
	uint32_t *v4;
	struct in6_addr *v6;
	uint64_t now = util_now_ms();

	if (ifc.loaded && now - ifc.at_ms < IFADDR_TTL_MS)
		return;
	if (getifaddrs(&ifa) == -1) {
		log_warn("egress: getifaddrs failed", "{s:s}", "error", strerror(errno));
		return;
	}
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
			n4++;
		else if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6)
			n6++;
	}
	v4 = calloc(n4 + 1, sizeof(*v4));
	v6 = calloc(n6 + 1, sizeof(*v6));
	if (!v4 || !v6) {
		free(v4);
		free(v6);
		freeifaddrs(ifa);
		return;
	}
	n4 = n6 = 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
			v4[n4++] = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr;
		else if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6)
			v6[n6++] = ((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
	}
	freeifaddrs(ifa);
	free(ifc.v4);
	free(ifc.v6);
	ifc.v4 = v4;
	ifc.v6 = v6;
	ifc.n4 = n4;
	ifc.n6 = n6;
	ifc.at_ms = now;
	ifc.loaded = true;
}

static bool is_host_v4(uint32_t net)
{
	bool hit = false;
	size_t i;

	pthread_mutex_lock(&ifc.mu);
	ifc_refresh();
	for (i = 0; i < ifc.n4 && !hit; i++)
		hit = ifc.v4[i] == net;
	pthread_mutex_unlock(&ifc.mu);
	return hit;
}

static bool is_host_v6(const struct in6_addr *a)
{
	bool hit = false;
	size_t i;

	pthread_mutex_lock(&ifc.mu);
	ifc_refresh();
	for (i = 0; i < ifc.n6 && !hit; i++)
		hit = memcmp(&ifc.v6[i], a, sizeof(*a)) == 0;
	pthread_mutex_unlock(&ifc.mu);
	return hit;
}

/* net: an IPv4 address in network order. */
static bool forbidden_v4(uint32_t net)
{
	uint32_t a = ntohl(net);

	if ((a >> 24) == 0 || (a >> 24) == 10 || (a >> 24) == 127 ||
	    (a & 0xffc00000u) == 0x64400000u ||  /* 100.64/10 */
	    (a >> 16) == 0xa9feu ||              /* 169.254/16 */
	    (a & 0xfff00000u) == 0xac100000u ||  /* 172.16/12 */
	    (a & 0xffffff00u) == 0xc0000000u ||  /* 192.0.0/24 */
	    (a >> 16) == 0xc0a8u ||              /* 192.168/16 */
	    (a & 0xfffe0000u) == 0xc6120000u ||  /* 198.18/15 */
	    (a >> 28) >= 0xeu)                   /* 224/4, 240/4 */
		return true;
	return is_host_v4(net);
}

static bool zero(const uint8_t *b, size_t n)
{
	while (n--)
		if (*b++)
			return false;
	return true;
}

static bool forbidden_v6(const struct in6_addr *a)
{
	const uint8_t *b = a->s6_addr;
	uint32_t v4;

	if (zero(b, 15) && b[15] <= 1)                    /* :: and ::1 */
		return true;
	if ((b[0] & 0xfe) == 0xfc ||                       /* fc00::/7 */
	    (b[0] == 0xfe && (b[1] & 0x80) == 0x80) ||     /* fe80::/10, fec0::/10 */
	    b[0] == 0xff)                                  /* ff00::/8 */
		return true;
	if ((zero(b, 10) && b[10] == 0xff && b[11] == 0xff) ||               /* ::ffff:a.b.c.d */
	    zero(b, 12) ||                                                    /* ::a.b.c.d */
	    (zero(b, 8) && b[8] == 0xff && b[9] == 0xff && zero(b + 10, 2)) || /* ::ffff:0:v4 */
	    (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(b + 4, 8))) {
		memcpy(&v4, b + 12, 4);
		return forbidden_v4(v4);
	}
	if (b[0] == 0x20 && b[1] == 0x02) { /* 6to4 */
		memcpy(&v4, b + 2, 4);
		if (forbidden_v4(v4))
			return true;
	}
	return is_host_v6(a);
}

bool na_egress_addr_forbidden(const struct sockaddr *sa, socklen_t len)
{
	if (!sa || len < (socklen_t)sizeof(sa->sa_family))
		return true;
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
		return forbidden_v4(
			((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr);
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
		return forbidden_v6(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return true;
}

/* ---- request heads ---- */

struct head_ex {
	int vminor;         /* HTTP/1.x */
	size_t hdr_off;     /* first header line */
	const char *auth;   /* authority of an http:// URL */
	size_t auth_len;
};

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
		if (hlen > MAX_NAME + 1)
			return err_http(e, 400, "host name in the target is too long");
		for (i = 0; i < hlen; i++)
			if (s[i] != '.' && !is_host_char(s[i]) && !(s[i] >= 'A' && s[i] <= 'Z'))
				return err_http(e, 400, "invalid character in the target's host");
		memcpy(r->host, s, hlen);
		r->host[hlen] = '\0';
	}
	if (colon) {
		r->port = parse_port(colon + 1, len - (size_t)(colon + 1 - s));
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

static int parse_head_ex(const char *buf, size_t len, struct na_egress_req *r, struct head_ex *x,
			 struct err *e)
{
	long hl = head_end(buf, len, e);
	const char *p, *end, *next, *sp1, *sp2, *tgt, *ver;
	size_t n, mlen, tlen, vlen, al;

	memset(r, 0, sizeof(*r));
	memset(x, 0, sizeof(*x));
	if (hl <= 0)
		return (int)hl;
	end = buf + hl;
	n = line_len(buf, end, &next);
	x->hdr_off = (size_t)(next - buf);
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
	x->vminor = ver[7] - '0';
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
	x->auth = tgt + 7;
	for (al = 0; al < tlen - 7; al++)
		if (x->auth[al] == '/' || x->auth[al] == '?' || x->auth[al] == '#')
			break;
	x->auth_len = al;
	r->port = 80;
	if (parse_authority(x->auth, al, false, r, e) == -1)
		return -1;
	if (al == tlen - 7 || x->auth[al] == '#') {
		r->path = "/";
		r->path_len = 1;
	} else {
		r->path = x->auth + al;
		r->path_len = tlen - 7 - al;
	}
	return (int)hl;
}

int na_egress_parse_head(const char *buf, size_t len, struct na_egress_req *r, struct err *e)
{
	struct head_ex x;

	return parse_head_ex(buf, len, r, &x, e);
}

/* ---- the engine ---- */

struct conn {
	struct sb *sb;
	int cfd, ufd;
	struct conn *prev, *next;
};

struct sb {
	char id[64];
	int lfd;
	struct na_egress_policy pol;
	int nconn;
	atomic_bool detaching;
	struct conn *conns;
	struct sb *next;
};

struct na_egress {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* iter advanced, a connection ended */
	int wakefd;
	pthread_t acceptor;
	bool stop, acceptor_done;
	unsigned long iter; /* acceptor snapshots taken */
	struct sb *sbs;
};

static void wake(struct na_egress *eg)
{
	uint64_t one = 1;
	ssize_t r = write(eg->wakefd, &one, sizeof(one));

	(void)r; /* EAGAIN: already pending */
}

static struct sb *find_sb(struct na_egress *eg, const char *id)
{
	struct sb *s;

	for (s = eg->sbs; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static const char *reason_of(int code)
{
	switch (code) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/* Waits until fd is ready for events or the deadline/cancel; 1 ready, 0
 * timed out, -1 cancelled or error. */
static int wait_fd(int fd, short events, uint64_t deadline, const atomic_bool *cancel)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	uint64_t now;
	int r;

	for (;;) {
		if (cancel && atomic_load(cancel))
			return -1;
		now = util_now_ms();
		if (now >= deadline)
			return 0;
		r = poll(&pfd, 1, (int)(deadline - now > 500 ? 500 : deadline - now));
		if (r > 0)
			return 1;
		if (r == -1 && errno != EINTR)
			return -1;
	}
}

/* Sends all of buf on a non-blocking socket within SEND_TIMEOUT_MS.  0/-1. */
static int send_all(int fd, const void *buf, size_t len, const atomic_bool *cancel)
{
	const char *p = buf;
	uint64_t deadline = util_now_ms() + SEND_TIMEOUT_MS;
	ssize_t w;

	while (len > 0) {
		w = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			len -= (size_t)w;
		} else if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(fd, POLLOUT, deadline, cancel) != 1)
				return -1;
		} else if (!(w == -1 && errno == EINTR)) {
			return -1;
		}
	}
	return 0;
}

static void send_error(int fd, int code, const char *msg, const atomic_bool *cancel)
{
	char body[320], head[256];
	int bl = snprintf(body, sizeof(body), "cloche egress: %s\n", msg);
	int hl;

	if (bl < 0)
		return;
	if ((size_t)bl >= sizeof(body))
		bl = (int)sizeof(body) - 1;
	hl = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
		      "Content-Length: %d\r\nConnection: close\r\n\r\n", code, reason_of(code), bl);
	if (send_all(fd, head, (size_t)hl, cancel) == 0)
		send_all(fd, body, (size_t)bl, cancel);
}

static void fmt_addr(const struct sockaddr *sa, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(out, len, "%s:%d", a, ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(out, len, "[%s]:%d", a, ntohs(s6->sin6_port));
	} else {
		snprintf(out, len, "?");
	}
}

/* What a connection thread found out, for its log line. */
struct outcome {
	const char *verdict; /* allowed, denied, error */
	int status;
	char reason[256];
	char upstream[64];
	unsigned long long up, down;
};

static void refuse(struct conn *c, struct outcome *o, const char *verdict, int code,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void refuse(struct conn *c, struct outcome *o, const char *verdict, int code,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->reason, sizeof(o->reason), fmt, ap);
	va_end(ap);
	o->verdict = verdict;
	o->status = code;
	send_error(c->cfd, code, o->reason, &c->sb->detaching);
}

/* Registers fd as c's upstream socket so detach can shut it down.  -1 when
 * the sandbox is being detached. */
static int set_ufd(struct na_egress *eg, struct conn *c, int fd)
{
	int r = 0;

	pthread_mutex_lock(&eg->mu);
	if (atomic_load(&c->sb->detaching))
		r = -1;
	else
		c->ufd = fd;
	pthread_mutex_unlock(&eg->mu);
	return r;
}

/* Resolves and connects host:port; on success c->ufd is the connected
 * non-blocking socket.  On failure the client has been answered. */
static int connect_upstream(struct na_egress *eg, struct conn *c, const struct na_egress_req *rq,
			    struct outcome *o)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = 0};
	struct addrinfo *res = NULL, *ai;
	char port[8], addr[64];
	uint64_t deadline;
	int r, fd, soerr, last_err = 0, tried = 0;
	bool timed_out = false;
	socklen_t sl;

	snprintf(port, sizeof(port), "%d", rq->port);
	r = getaddrinfo(rq->host, port, &hints, &res);
	if (r != 0) {
		refuse(c, o, "error", 502, "cannot resolve %s: %s", rq->host,
		       r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return -1;
	}
	deadline = util_now_ms() + CONNECT_TIMEOUT_MS;
	for (ai = res; ai; ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    na_egress_addr_forbidden(ai->ai_addr, ai->ai_addrlen))
			continue;
		if (util_now_ms() >= deadline) {
			timed_out = true;
			break;
		}
		tried++;
		fmt_addr(ai->ai_addr, o->upstream, sizeof(o->upstream));
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd == -1) {
			last_err = errno;
			continue;
		}
		if (set_ufd(eg, c, fd) == -1) {
			close(fd);
			freeaddrinfo(res);
			o->verdict = "error";
			snprintf(o->reason, sizeof(o->reason), "sandbox detached");
			return -1;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return 0;
		}
		soerr = errno;
		if (soerr == EINPROGRESS) {
			r = wait_fd(fd, POLLOUT, deadline, &c->sb->detaching);
			sl = sizeof(soerr);
			if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
			    soerr == 0) {
				freeaddrinfo(res);
				return 0;
			}
			if (r == 0) {
				soerr = ETIMEDOUT;
				timed_out = true;
			} else if (r == -1) {
				soerr = errno ? errno : ECANCELED;
			}
		}
		last_err = soerr;
		pthread_mutex_lock(&eg->mu);
		c->ufd = -1;
		pthread_mutex_unlock(&eg->mu);
		close(fd);
		if (timed_out || atomic_load(&c->sb->detaching))
			break;
	}
	freeaddrinfo(res);
	if (tried == 0 && !timed_out) {
		refuse(c, o, "denied", 403, "%s resolves to a private/link-local/node address",
		       rq->host);
		return -1;
	}
	snprintf(addr, sizeof(addr), "%s", o->upstream);
	if (timed_out)
		refuse(c, o, "error", 504, "connect to %s (%s) timed out after %d s", rq->host,
		       addr, CONNECT_TIMEOUT_MS / 1000);
	else
		refuse(c, o, "error", 502, "connect to %s (%s): %s", rq->host, addr,
		       strerror(last_err));
	return -1;
}

/* One direction of the relay. */
struct pipe_dir {
	int from, to;
	char buf[RELAY_BUF];
	size_t off, len;
	bool eof, done;
	unsigned long long bytes;
};

/* Moves bytes both ways until both directions ended, an error, the idle
 * timeout or detach. */
static void relay(struct conn *c, struct outcome *o, const char *pre, size_t pre_len)
{
	struct pipe_dir *d = calloc(2, sizeof(*d));
	struct pollfd pfd[2];
	uint64_t last = util_now_ms(), now;
	int i, r;
	ssize_t n;

	if (!d)
		return;
	d[0].from = c->cfd;
	d[0].to = c->ufd;
	d[1].from = c->ufd;
	d[1].to = c->cfd;
	if (pre_len > 0) {
		memcpy(d[0].buf, pre, pre_len);
		d[0].len = pre_len;
	}
	while (!(d[0].done && d[1].done) && !atomic_load(&c->sb->detaching)) {
		/* pfd[0] watches the client, pfd[1] the upstream. */
		pfd[0] = (struct pollfd){.fd = c->cfd};
		pfd[1] = (struct pollfd){.fd = c->ufd};
		for (i = 0; i < 2; i++) {
			int src = i, dst = 1 - i; /* d[i] reads pfd[i], writes pfd[1-i] */

			if (d[i].done)
				continue;
			if (d[i].len > 0)
				pfd[dst].events |= POLLOUT;
			else if (!d[i].eof)
				pfd[src].events |= POLLIN;
		}
		for (i = 0; i < 2; i++)
			if (!pfd[i].events)
				pfd[i].fd = -1; /* a hang-up there must not spin the loop */
		now = util_now_ms();
		if (now - last >= IDLE_TIMEOUT_MS) {
			snprintf(o->reason, sizeof(o->reason), "idle for %d s",
				 IDLE_TIMEOUT_MS / 1000);
			break;
		}
		r = poll(pfd, 2, (int)(IDLE_TIMEOUT_MS - (now - last) > 1000 ? 1000
					     : IDLE_TIMEOUT_MS - (now - last)));
		if (r == -1 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		for (i = 0; i < 2; i++) {
			struct pipe_dir *p = &d[i];

			if (p->done)
				continue;
			if (p->len == 0 && !p->eof &&
			    (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
				n = recv(p->from, p->buf, sizeof(p->buf), MSG_DONTWAIT);
				if (n > 0) {
					p->off = 0;
					p->len = (size_t)n;
					last = util_now_ms();
				} else if (n == 0) {
					p->eof = true;
				} else if (errno != EAGAIN && errno != EINTR) {
					goto out;
				}
			}
			if (p->len > 0) {
				n = send(p->to, p->buf + p->off, p->len,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
				if (n > 0) {
					p->off += (size_t)n;
					p->len -= (size_t)n;
					p->bytes += (unsigned long long)n;
					last = util_now_ms();
				} else if (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK &&
					   errno != EINTR) {
					goto out;
				}
			}
			if (p->eof && p->len == 0) {
				shutdown(p->to, SHUT_WR);
				p->done = true;
			}
		}
	}
out:
	o->up += d[0].bytes;
	o->down += d[1].bytes;
	free(d);
}

/* Reads the head within HEAD_TIMEOUT_MS.  Returns the head length, 0 when
 * the client went away or was answered (o filled), into buf (have: bytes). */
static int read_head(struct conn *c, char *buf, size_t cap, size_t *have, struct na_egress_req *rq,
		     struct head_ex *x, struct outcome *o)
{
	uint64_t deadline = util_now_ms() + HEAD_TIMEOUT_MS;
	struct err e = ERR_INIT;
	ssize_t n;
	int r;

	*have = 0;
	for (;;) {
		r = wait_fd(c->cfd, POLLIN, deadline, &c->sb->detaching);
		if (r == 0) {
			refuse(c, o, "error", 408, "no complete request head within %d s",
			       HEAD_TIMEOUT_MS / 1000);
			return 0;
		}
		if (r == -1)
			return 0;
		n = recv(c->cfd, buf + *have, cap - *have, MSG_DONTWAIT);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
			snprintf(o->reason, sizeof(o->reason), "client closed before a head");
			return 0;
		}
		if (n < 0)
			continue;
		*have += (size_t)n;
		r = parse_head_ex(buf, *have, rq, x, &e);
		if (r > 0)
			return r;
		if (r == -1) {
			refuse(c, o, "error", e.http_status ? e.http_status : 400, "%s", e.msg);
			return 0;
		}
	}
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

/* The head sent upstream for an absolute-form request: origin-form request
 * line, the client's headers minus hop-by-hop and proxy ones, Host from the
 * URL, Connection: close.  Returns its length in out (cap bytes) or 0. */
static size_t upstream_head(const char *buf, size_t hl, const struct na_egress_req *rq,
			    const struct head_ex *x, char *out, size_t cap)
{
	const char *p = buf + x->hdr_off, *end = buf + hl, *next;
	size_t len, n;
	int w;

	w = snprintf(out, cap, "%s %s%.*s HTTP/1.%d\r\nHost: %.*s\r\n", rq->method,
		     rq->path[0] == '/' ? "" : "/", (int)rq->path_len, rq->path, x->vminor,
		     (int)x->auth_len, x->auth);
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

struct conn_arg {
	struct na_egress *eg;
	struct conn *c;
};

static void serve(struct na_egress *eg, struct conn *c, struct outcome *o, struct na_egress_req *rq)
{
	char buf[NA_EGRESS_MAX_HEAD + 1];
	char *fwd;
	size_t have, fl;
	struct head_ex x;
	bool ok;
	int hl;
	static const char est[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	hl = read_head(c, buf, NA_EGRESS_MAX_HEAD, &have, rq, &x, o);
	if (hl <= 0)
		return;
	pthread_mutex_lock(&eg->mu);
	ok = na_egress_policy_allows(&c->sb->pol, rq->host, rq->port);
	pthread_mutex_unlock(&eg->mu);
	if (!ok) {
		refuse(c, o, "denied", 403, "%s:%d is not in this sandbox's allowlist", rq->host,
		       rq->port);
		return;
	}
	if (connect_upstream(eg, c, rq, o) == -1)
		return;
	o->verdict = "allowed";
	if (rq->connect) {
		o->status = 200;
		if (send_all(c->cfd, est, sizeof(est) - 1, &c->sb->detaching) == -1)
			return;
		relay(c, o, buf + hl, have - (size_t)hl);
		return;
	}
	fwd = malloc(NA_EGRESS_MAX_HEAD + 1024);
	if (!fwd)
		return;
	fl = upstream_head(buf, (size_t)hl, rq, &x, fwd, NA_EGRESS_MAX_HEAD + 1024);
	if (fl == 0 || send_all(c->ufd, fwd, fl, &c->sb->detaching) == -1) {
		free(fwd);
		return;
	}
	free(fwd);
	o->up += fl;
	relay(c, o, buf + hl, have - (size_t)hl);
}

/* After an error answer: stop sending, and read what the client still
 * sends for a moment, so closing with unread data (a reset) does not destroy
 * the answer before the client read it. */
static void linger_close(struct conn *c)
{
	uint64_t deadline = util_now_ms() + 2000;
	char sink[4096];
	size_t total = 0;
	ssize_t n;

	shutdown(c->cfd, SHUT_WR);
	while (total < 65536 && wait_fd(c->cfd, POLLIN, deadline, &c->sb->detaching) == 1) {
		n = recv(c->cfd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n <= 0 && !(n == -1 && (errno == EAGAIN || errno == EINTR)))
			break;
		if (n > 0)
			total += (size_t)n;
	}
}

static void *conn_thread(void *arg)
{
	struct conn_arg *a = arg;
	struct na_egress *eg = a->eg;
	struct conn *c = a->c;
	struct sb *sb = c->sb;
	struct outcome o = {.verdict = "error"};
	struct na_egress_req rq;
	uint64_t t0 = util_now_ms();
	int fl;

	free(a);
	memset(&rq, 0, sizeof(rq));
	fl = fcntl(c->cfd, F_GETFL);
	if (fl != -1)
		fcntl(c->cfd, F_SETFL, fl | O_NONBLOCK);
	serve(eg, c, &o, &rq);
	if (o.status && strcmp(o.verdict, "allowed") != 0)
		linger_close(c);
	if (o.status && strcmp(o.verdict, "allowed") != 0)
		log_info("egress", "{s:s, s:s, s:i, s:s, s:i, s:s, s:s, s:I}", "id", sb->id, "host",
			 rq.host, "port", rq.port, "verdict", o.verdict, "status", o.status,
			 "reason", o.reason, "upstream", o.upstream,
			 "ms", (json_int_t)(util_now_ms() - t0));
	else
		log_info("egress", "{s:s, s:s, s:i, s:s, s:i, s:s, s:s, s:I, s:I, s:I}", "id",
			 sb->id, "host", rq.host, "port", rq.port, "verdict", o.verdict, "status",
			 o.status, "reason", o.reason, "upstream", o.upstream,
			 "up", (json_int_t)o.up, "down", (json_int_t)o.down,
			 "ms", (json_int_t)(util_now_ms() - t0));

	pthread_mutex_lock(&eg->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		sb->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	sb->nconn--;
	close(c->cfd);
	if (c->ufd != -1)
		close(c->ufd);
	free(c);
	pthread_cond_broadcast(&eg->cv);
	pthread_mutex_unlock(&eg->mu);
	return NULL;
}

/* Accepts what is pending on sb's listener.  Called with eg->mu held.
 * Returns -1 when out of file descriptors (the caller backs off). */
static int accept_on(struct na_egress *eg, struct sb *sb)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
				   "Content-Type: text/plain\r\nContent-Length: 54\r\n"
				   "Connection: close\r\n\r\n"
				   "cloche egress: too many connections from this sandbox\n";
	pthread_attr_t attr;
	struct conn_arg *a;
	struct conn *c;
	int fd, r, k;

	for (k = 0; k < 64; k++) {
		fd = accept4(sb->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd == -1)
			return errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
			       errno == ENOBUFS ? -1 : 0;
		if (sb->nconn >= NA_EGRESS_MAX_CONNS) {
			char sink[4096];

			/* Answer, and drop what the client sent already, so the
			 * close does not reset the connection under the answer. */
			if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
				shutdown(fd, SHUT_WR);
			while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
				;
			close(fd);
			log_info("egress", "{s:s, s:s, s:i, s:s}", "id", sb->id, "verdict", "error",
				 "status", 503, "reason", "too many connections");
			continue;
		}
		c = calloc(1, sizeof(*c));
		a = malloc(sizeof(*a));
		if (!c || !a) {
			free(c);
			free(a);
			close(fd);
			continue;
		}
		c->sb = sb;
		c->cfd = fd;
		c->ufd = -1;
		a->eg = eg;
		a->c = c;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, THREAD_STACK);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		{
			pthread_t th;

			r = pthread_create(&th, &attr, conn_thread, a);
		}
		pthread_attr_destroy(&attr);
		if (r != 0) {
			log_warn("egress: cannot start a connection thread", "{s:s, s:s}", "id",
				 sb->id, "error", strerror(r));
			free(c);
			free(a);
			close(fd);
			continue;
		}
		c->next = sb->conns;
		if (sb->conns)
			sb->conns->prev = c;
		sb->conns = c;
		sb->nconn++;
	}
	return 0;
}

static void *acceptor_thread(void *arg)
{
	struct na_egress *eg = arg;
	struct pollfd *pfd = NULL;
	struct sb **who = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t drain;
	struct sb *s;
	bool starved = false;

	pthread_mutex_lock(&eg->mu);
	while (!eg->stop) {
		/* Results of the last poll; the sbs are alive (detach waits for
		 * the next snapshot) but may be detaching. */
		for (i = 1; i < n; i++)
			if ((pfd[i].revents & POLLIN) && !atomic_load(&who[i]->detaching) &&
			    accept_on(eg, who[i]) == -1)
				starved = true;
		if (starved) {
			log_warn("egress: out of file descriptors", NULL);
			pthread_mutex_unlock(&eg->mu);
			usleep(100000);
			pthread_mutex_lock(&eg->mu);
			starved = false;
		}
		/* New snapshot. */
		n = 1;
		for (s = eg->sbs; s; s = s->next)
			n++;
		if (n > cap) {
			struct pollfd *np = realloc(pfd, n * sizeof(*pfd));
			struct sb **nw = np ? realloc(who, n * sizeof(*who)) : NULL;

			if (np)
				pfd = np;
			if (nw)
				who = nw;
			if (!np || !nw) {
				n = 0;
				eg->iter++;
				pthread_cond_broadcast(&eg->cv);
				pthread_mutex_unlock(&eg->mu);
				usleep(100000);
				pthread_mutex_lock(&eg->mu);
				continue;
			}
			cap = n;
		}
		pfd[0] = (struct pollfd){.fd = eg->wakefd, .events = POLLIN};
		for (i = 1, s = eg->sbs; s; s = s->next, i++) {
			pfd[i] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
			who[i] = s;
		}
		eg->iter++;
		pthread_cond_broadcast(&eg->cv);
		pthread_mutex_unlock(&eg->mu);
		if (poll(pfd, n, -1) == -1)
			for (i = 0; i < n; i++)
				pfd[i].revents = 0;
		if (pfd[0].revents & POLLIN) {
			if (read(eg->wakefd, &drain, sizeof(drain)) < 0) {
				/* nothing pending after all */
			}
		}
		pthread_mutex_lock(&eg->mu);
	}
	eg->acceptor_done = true;
	pthread_cond_broadcast(&eg->cv);
	pthread_mutex_unlock(&eg->mu);
	free(pfd);
	free(who);
	return NULL;
}

struct na_egress *na_egress_new(struct err *e)
{
	struct na_egress *eg = calloc(1, sizeof(*eg));
	int r;

	if (!eg) {
		err_set(e, ENOMEM, "egress");
		return NULL;
	}
	pthread_mutex_init(&eg->mu, NULL);
	pthread_cond_init(&eg->cv, NULL);
	eg->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (eg->wakefd == -1) {
		err_set(e, errno, "egress: eventfd");
		goto fail;
	}
	r = pthread_create(&eg->acceptor, NULL, acceptor_thread, eg);
	if (r != 0) {
		err_set(e, r, "egress: start the acceptor thread");
		close(eg->wakefd);
		goto fail;
	}
	return eg;
fail:
	pthread_cond_destroy(&eg->cv);
	pthread_mutex_destroy(&eg->mu);
	free(eg);
	return NULL;
}

int na_egress_attach(struct na_egress *eg, const char *id, int listen_fd,
		     const struct na_egress_policy *p, struct err *e)
{
	AUTOCLOSE int fd = listen_fd;
	struct sb *s;
	int fl;

	if (!id || !id[0] || strlen(id) >= sizeof(s->id))
		return err_http(e, 400, "egress: bad sandbox id");
	fl = fcntl(fd, F_GETFL);
	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return err_set(e, errno, "egress %s: listener", id);
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(e, ENOMEM, "egress %s", id);
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->pol = *p;
	atomic_init(&s->detaching, false);
	pthread_mutex_lock(&eg->mu);
	if (find_sb(eg, id)) {
		pthread_mutex_unlock(&eg->mu);
		free(s);
		return err_http(e, 409, "egress: %s is already attached", id);
	}
	s->lfd = take_fd(&fd);
	s->next = eg->sbs;
	eg->sbs = s;
	wake(eg);
	pthread_mutex_unlock(&eg->mu);
	return 0;
}

int na_egress_set_policy(struct na_egress *eg, const char *id, const struct na_egress_policy *p,
			 struct err *e)
{
	struct sb *s;

	pthread_mutex_lock(&eg->mu);
	s = find_sb(eg, id);
	if (s)
		s->pol = *p;
	pthread_mutex_unlock(&eg->mu);
	if (!s)
		return err_http(e, 404, "egress: %s is not attached", id);
	return 0;
}

void na_egress_detach(struct na_egress *eg, const char *id)
{
	struct sb **pp, *s = NULL;
	struct conn *c;
	unsigned long it;

	pthread_mutex_lock(&eg->mu);
	for (pp = &eg->sbs; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->id, id) == 0) {
			s = *pp;
			*pp = s->next;
			break;
		}
	if (!s) {
		pthread_mutex_unlock(&eg->mu);
		return;
	}
	atomic_store(&s->detaching, true);
	/* Wait until the acceptor polls a set without s's listener. */
	it = eg->iter;
	wake(eg);
	while (eg->iter == it && !eg->acceptor_done)
		pthread_cond_wait(&eg->cv, &eg->mu);
	close(s->lfd);
	for (c = s->conns; c; c = c->next) {
		shutdown(c->cfd, SHUT_RDWR);
		if (c->ufd != -1)
			shutdown(c->ufd, SHUT_RDWR);
	}
	while (s->nconn > 0)
		pthread_cond_wait(&eg->cv, &eg->mu);
	pthread_mutex_unlock(&eg->mu);
	free(s);
}

int na_egress_connections(struct na_egress *eg, const char *id)
{
	struct sb *s;
	int n;

	pthread_mutex_lock(&eg->mu);
	s = find_sb(eg, id);
	n = s ? s->nconn : 0;
	pthread_mutex_unlock(&eg->mu);
	return n;
}

void na_egress_free(struct na_egress *eg)
{
	char id[64];

	if (!eg)
		return;
	pthread_mutex_lock(&eg->mu);
	eg->stop = true;
	wake(eg);
	pthread_mutex_unlock(&eg->mu);
	pthread_join(eg->acceptor, NULL);
	for (;;) {
		pthread_mutex_lock(&eg->mu);
		if (!eg->sbs) {
			pthread_mutex_unlock(&eg->mu);
			break;
		}
		snprintf(id, sizeof(id), "%s", eg->sbs->id);
		pthread_mutex_unlock(&eg->mu);
		na_egress_detach(eg, id);
	}
	close(eg->wakefd);
	pthread_cond_destroy(&eg->cv);
	pthread_mutex_destroy(&eg->mu);
	free(eg);
}
