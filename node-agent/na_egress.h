/* The egress proxy of the sandboxes: the only way out of a sandbox.
 *
 * A sandbox with an allowlist reaches the world through an HTTP proxy at
 * 10.0.2.2:3128 in its router netns R-<id>.  The listening socket is made in
 * R-<id> and handed to this engine, which accepts there and connects
 * upstream from the agent's own (host) netns, after the sandbox's policy and
 * the address checks said yes.  It speaks `CONNECT host:port` (HTTPS tunnels)
 * and absolute-form `GET http://host[:port]/path` (plain HTTP).
 * See docs/egress.md.  Every function is thread-safe. */
#ifndef NA_EGRESS_H
#define NA_EGRESS_H

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define NA_EGRESS_PORT 3128
#define NA_EGRESS_MAX_RULES 64
#define NA_EGRESS_MAX_HEAD 8192 /* bytes of a request head, up to the empty line */
#define NA_EGRESS_MAX_CONNS 256 /* open connections per sandbox */
#define NA_EGRESS_MAX_NAME 253  /* characters of a host name */

struct na_egress_rule {
	char host[256]; /* lowercase, no trailing dot; IPv6 without brackets */
	bool wildcard;  /* "*.example.com": subdomains only */
	int port;       /* 0: 80 and 443; -1: any port; else that port */
};

/* n == 0: "none", nothing is allowed. */
struct na_egress_policy {
	int n;
	struct na_egress_rule rules[NA_EGRESS_MAX_RULES];
};

/* v: NULL, JSON null or "none" -> none; {"allow": ["example.com",
 * "*.debian.org:443", "198.51.100.10:8080", "[2001:db8::1]:443", "host:*"]}
 * -> allowlist.  Anything else (empty or over-long names, bad ports, more
 * than 64 rules, unknown keys): -1 with err_http(e, 400, "`egress`: ...").
 * Host names are lowercased and a trailing dot dropped. */
int na_egress_policy_parse(const json_t *v, struct na_egress_policy *p, struct err *e);

/* The JSON form parse() accepts back: "none" or {"allow":[...]}.  New
 * reference (NULL only when out of memory). */
json_t *na_egress_policy_json(const struct na_egress_policy *p);

/* True when p lets a sandbox reach host:port.  host as the client sent it:
 * case-insensitive, a trailing dot ignored, IPv6 with or without brackets. */
bool na_egress_policy_allows(const struct na_egress_policy *p, const char *host, int port);

/* True for addresses a sandbox may never reach, whatever its policy:
 * IPv4 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12, 192.0.0/24,
 * 192.168/16, 198.18/15, 224/4, 240/4; IPv6 ::, ::1, fc00::/7, fe80::/10,
 * fec0::/10, ff00::/8; IPv4 embedded in IPv6 (mapped, compatible,
 * translated, NAT64 64:ff9b::/96, 6to4 2002::/16) judged as that IPv4
 * address; every address configured on one of this host's interfaces
 * (cached for 5 s); any other address family.  The documentation ranges
 * (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) are allowed. */
bool na_egress_addr_forbidden(const struct sockaddr *sa, socklen_t len);

/* Shared by the policy and request parsers: a lowercase host-name
 * character (a-z 0-9 - _), and "1".."65535" (len bytes) as a port or -1. */
bool na_egress_host_char(char c);
int na_egress_parse_port(const char *s, size_t len);

/* A parsed request head. */
struct na_egress_req {
	bool connect;     /* CONNECT host:port */
	char host[256];   /* as sent (IPv6 without brackets) */
	int port;         /* 1-65535; 80 when an http:// URL names none */
	char method[16];
	const char *path; /* origin-form of an http:// URL: points into buf, or
			   * to a static "/" when the URL has no path; it may
			   * start with '?' (the engine then sends a '/' first) */
	size_t path_len;
	int vminor;       /* HTTP/1.<vminor> */
	const char *auth; /* authority of an http:// URL (into buf) */
	size_t auth_len;
};

/* Parses the request head at buf (len bytes read so far from the client)
 * with common/http1_head, lines ending in LF or CRLF, then checks it is
 * CONNECT host:port or an absolute http:// URL.  Returns 0 when the head
 * (up to the empty line) is not complete yet, its length (> 0) when parsed,
 * and -1 with e set when it is malformed or not a proxy request (400, also
 * as soon as the bytes so far hold a control character or a bare CR), or
 * exceeds NA_EGRESS_MAX_HEAD or 100 header lines (431).  Pure. */
int na_egress_parse_head(const char *buf, size_t len, struct na_egress_req *r, struct err *e);

/* The head sent upstream for a plain-HTTP request r parsed from buf (head
 * length hl): origin-form request line, Host from the URL, the client's
 * header lines minus Host, Connection, Keep-Alive, Proxy-Connection and
 * Proxy-Authorization, then Connection: close.  Its length in out (cap
 * bytes), or 0 when it does not fit.  Pure. */
size_t na_egress_upstream_head(const char *buf, size_t hl, const struct na_egress_req *r,
			       char *out, size_t cap);

struct na_egress;

/* Starts the engine (its acceptor thread).  NULL with e set. */
struct na_egress *na_egress_new(struct err *e);

/* Detaches every sandbox, stops the acceptor and closes every fd the engine
 * owns.  NULL is fine. */
void na_egress_free(struct na_egress *eg);

/* Serves listen_fd (bound and listening; ownership passes to the engine,
 * also on failure) for sandbox id with policy p (copied).  -1 (409) when id
 * is already attached. */
int na_egress_attach(struct na_egress *eg, const char *id, int listen_fd,
		     const struct na_egress_policy *p, struct err *e);

/* Replaces id's policy; connections accepted from now on use it.  -1 (404)
 * when id is not attached. */
int na_egress_set_policy(struct na_egress *eg, const char *id, const struct na_egress_policy *p,
			 struct err *e);

/* Closes id's listener and every open connection of it, and returns when
 * their threads are done with it.  An unknown id is a no-op.  May wait for
 * a name lookup in progress to finish. */
void na_egress_detach(struct na_egress *eg, const char *id);

/* Open connections of id; 0 when id is not attached. */
int na_egress_connections(struct na_egress *eg, const char *id);

#endif
