/* Egress policy: the allowlist (parse, JSON form, matching) and the
 * addresses no sandbox may reach (private, link-local, the node's own).
 * Pure apart from the cached list of this host's addresses.  See
 * docs/egress.md. */
#include "node-agent/na_egress.h"

#include "common/log.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define IFADDR_TTL_MS 5000

/* ---- policy ---- */

bool na_egress_host_char(char c)
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
	if (len == 0 || len > NA_EGRESS_MAX_NAME)
		return -1;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0)
				return -1;
			label = 0;
		} else if (!na_egress_host_char(c) || ++label > 63) {
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

int na_egress_parse_port(const char *s, size_t len)
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
		if (hlen - (hlen > 0 && h[hlen - 1] == '.') > NA_EGRESS_MAX_NAME)
			return err_http(e, 400, "`egress`: allow[%zu]: host name longer than %d "
				       "characters", idx, NA_EGRESS_MAX_NAME);
		if (norm_name(h, hlen, r->host) == -1)
			return err_http(e, 400, "`egress`: allow[%zu] `%.64s` is not a host name, "
				       "*.domain or IP literal", idx, s);
	}
	if (!colon)
		r->port = 0;
	else if (strcmp(colon + 1, "*") == 0)
		r->port = -1;
	else if ((r->port = na_egress_parse_port(colon + 1, strlen(colon + 1))) == -1)
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

/* 64:ff9b:1::/48 is for local NAT64 prefixes of any length from /48 to
 * /96 (RFC 8215), and where the IPv4 address sits depends on that length
 * (RFC 6052: bits 64-71 are always skipped).  The prefix in use is not known
 * here, so every placement is decoded and any forbidden one refuses. */
static bool nat64_local_forbidden(const uint8_t *b)
{
	static const uint8_t at[][4] = {
		{6, 7, 9, 10},    /* /48 */
		{7, 9, 10, 11},   /* /56 */
		{9, 10, 11, 12},  /* /64 */
		{12, 13, 14, 15}, /* /96 */
	};

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		uint8_t v[4] = {b[at[i][0]], b[at[i][1]], b[at[i][2]], b[at[i][3]]};
		uint32_t v4;
		memcpy(&v4, v, 4);
		if (forbidden_v4(v4))
			return true;
	}
	return false;
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
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) { /* Teredo 2001::/32 */
		/* The server's address, and the client's, stored inverted. */
		memcpy(&v4, b + 4, 4);
		if (forbidden_v4(v4))
			return true;
		memcpy(&v4, b + 12, 4);
		if (forbidden_v4(~v4))
			return true;
	}
	if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && b[5] == 1 &&
	    nat64_local_forbidden(b))                      /* 64:ff9b:1::/48 */
		return true;
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
