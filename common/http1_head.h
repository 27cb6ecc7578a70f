/* HTTP/1 message heads, parsed once and strictly: the one parser under
 * every server here that reads HTTP itself (cloche-proxy, the node's egress
 * proxy, cloche-vnc's web port).
 *
 * The caller reads a head into a buffer and hands it here; the answer is
 * spans (pointer, length) into that buffer for the method, the target and
 * every header, plus what framing the body has.  Nothing is allocated or
 * copied.  Everything a request smuggler plays with is refused rather than
 * interpreted: a Content-Length together with Transfer-Encoding, two
 * different Content-Lengths, a Transfer-Encoding other than a final
 * "chunked", obs-fold (a header line starting with a space), a space before
 * the colon, control characters, a bare CR, and versions other than 1.0 and
 * 1.1.  A server whose clients need less (a forward proxy's) asks for it
 * with HTTP1_* flags; each one relaxes one rule and nothing else. */
#ifndef CLOCHE_HTTP1_HEAD_H
#define CLOCHE_HTTP1_HEAD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#define HTTP1_MAX_HEADERS 100

struct http1_span {
	const char *p;
	size_t n;
};

struct http1_header {
	struct http1_span name, value; /* value without surrounding spaces/tabs */
};

enum http1_body {
	HTTP1_BODY_NONE,
	HTTP1_BODY_LENGTH,
	HTTP1_BODY_CHUNKED,
	HTTP1_BODY_CLOSE, /* responses only: the body ends when the server closes */
};

struct http1_head {
	struct http1_span start;          /* the request or status line, without its end */
	struct http1_span method, target; /* requests */
	int status;                       /* responses: 100..599 */
	int minor;                        /* HTTP/1.<minor>: 0 or 1 (0-9 with HTTP1_ANY_MINOR) */
	size_t len;                       /* bytes of the head, the empty line included */
	struct http1_header h[HTTP1_MAX_HEADERS];
	size_t nh;
	enum http1_body body;
	uint64_t content_length;          /* with HTTP1_BODY_LENGTH */
	bool keep_alive;                  /* by version and Connection */
	bool upgrade;                     /* Connection: upgrade with an Upgrade header */
	struct http1_span host;           /* the one Host header ({NULL, 0} when none) */
};

enum http1_result {
	HTTP1_OK = 0,
	HTTP1_PARTIAL = -1,     /* no empty line yet: read more (if the buffer may grow) */
	HTTP1_BAD = -2,         /* malformed or ambiguous: 400 */
	HTTP1_TOO_MANY = -3,    /* more than HTTP1_MAX_HEADERS headers: 431 */
	HTTP1_UNSUPPORTED = -4, /* a transfer coding or version not done here: 501 / 505 */
};

/* Leniencies for http1_request_parse(); 0 is the strictest reading. */
enum {
	/* A LF alone ends a line too (RFC 9112 2.2 lets a recipient accept it);
	 * a CR that is not followed by LF stays an error. */
	HTTP1_BARE_LF = 1 << 0,
	/* An HTTP/1.1 request without Host is accepted (two Hosts are not). */
	HTTP1_NO_HOST = 1 << 1,
	/* HTTP/1.2 to HTTP/1.9 are read as 1.1 (RFC 9110 2.5) and minor says
	 * which was sent, instead of HTTP1_UNSUPPORTED. */
	HTTP1_ANY_MINOR = 1 << 2,
	/* The request-target may take any form (absolute, authority, a bare
	 * query, with a fragment): the caller judges it.  It still has to be
	 * visible characters.  Without this flag only origin-form ("/...", no
	 * '#') and "*" pass. */
	HTTP1_ANY_TARGET = 1 << 3,
};

/* Parses the request head at the start of buf[0..len), by RFC 9112 and the
 * leniencies in flags.  On HTTP1_OK, out holds spans into buf and out->len
 * says where the head ends (what follows is the body or the next request).
 * Lines that are complete are checked before HTTP1_PARTIAL is returned, so
 * a bad head is refused as soon as its bad line is in.  why (may be NULL)
 * gets a short static reason for the other results (NULL on HTTP1_OK), for
 * an error page and the log; an unsupported version's reason names
 * "HTTP/1", a transfer coding's does not. */
enum http1_result http1_request_parse(const char *buf, size_t len, unsigned flags,
				      struct http1_head *out, const char **why);

/* Parses a response head at the start of buf[0..len), as strictly as
 * requests (a sandbox's server is no more trusted than a client).  The
 * framing in out->body already applies RFC 9112 6.3: a response to HEAD,
 * a 1xx, 204 or 304 has none; without Content-Length or chunked, the body
 * runs until the server closes (HTTP1_BODY_CLOSE). */
enum http1_result http1_response_parse(const char *buf, size_t len, bool head_request,
				       struct http1_head *out, const char **why);

/* The first header called name (case-insensitive), or NULL. */
const struct http1_header *http1_head_get(const struct http1_head *h, const char *name);

/* Calls fn for each comma-separated token of a header value (trimmed of
 * blanks; empty ones skipped) until fn returns false.  False when it did. */
bool http1_each_token(struct http1_span v, bool (*fn)(struct http1_span t, void *ud), void *ud);

/* True when span s equals the NUL-terminated t, case-insensitively.
 * Inline: with a constant t the length test folds and rejects most
 * header names before any byte is compared (it runs per header, per
 * request). */
static inline bool http1_span_ieq(struct http1_span s, const char *t)
{
	return __builtin_strlen(t) == s.n && strncasecmp(s.p, t, s.n) == 0;
}

#endif
