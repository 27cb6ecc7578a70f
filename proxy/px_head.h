/* HTTP/1.1 request heads, parsed once and strictly.
 *
 * The proxy reads a request head into a buffer and hands it here; the
 * answer is spans (pointer, length) into that buffer for the method, the
 * target and every header, plus what framing the body has.  Everything a
 * request smuggler plays with is refused rather than interpreted: a
 * Content-Length together with Transfer-Encoding, two different
 * Content-Lengths, a Transfer-Encoding other than a final "chunked",
 * obs-fold (a header line starting with a space), a space before the colon,
 * control characters, a bare LF, and versions other than 1.0 and 1.1. */
#ifndef PX_HEAD_H
#define PX_HEAD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#define PX_HEAD_MAX_HEADERS 100

struct px_span {
	const char *p;
	size_t n;
};

struct px_header {
	struct px_span name, value; /* value without surrounding spaces/tabs */
};

enum px_body {
	PX_BODY_NONE,
	PX_BODY_LENGTH,
	PX_BODY_CHUNKED,
	PX_BODY_CLOSE, /* responses only: the body ends when the server closes */
};

struct px_head {
	struct px_span start;      /* the request or status line, without CRLF */
	struct px_span method, target; /* requests */
	int status;                /* responses: 100..599 */
	int minor;                 /* HTTP/1.<minor>: 0 or 1 */
	size_t len;                /* bytes of the head, CRLFCRLF included */
	struct px_header h[PX_HEAD_MAX_HEADERS];
	size_t nh;
	enum px_body body;
	uint64_t content_length;   /* with PX_BODY_LENGTH */
	bool keep_alive;           /* by version and Connection */
	bool upgrade;              /* Connection: upgrade with an Upgrade header */
	struct px_span host;       /* the one Host header ("" when none) */
};

enum px_head_result {
	PX_HEAD_OK = 0,
	PX_HEAD_PARTIAL = -1,     /* no CRLFCRLF yet: read more (if the buffer may grow) */
	PX_HEAD_BAD = -2,         /* malformed or ambiguous: 400 */
	PX_HEAD_TOO_MANY = -3,    /* more than PX_HEAD_MAX_HEADERS headers: 431 */
	PX_HEAD_UNSUPPORTED = -4, /* a transfer coding or version we do not do: 501 / 505 */
};

/* Parses the head at the start of buf[0..len).  On PX_HEAD_OK, out holds
 * spans into buf.  why (may be NULL) gets a short reason for the other
 * results, for the error page and the log. */
enum px_head_result px_head_parse(const char *buf, size_t len, struct px_head *out,
				  const char **why);
/* Parses a response head at the start of buf[0..len), as strictly as
 * requests (a sandbox's server is no more trusted than a client).  The
 * framing in out->body already applies RFC 9112 6.3: a response to HEAD,
 * a 1xx, 204 or 304 has none; without Content-Length or chunked, the body
 * runs until the server closes (PX_BODY_CLOSE). */
enum px_head_result px_resp_parse(const char *buf, size_t len, bool head_request,
				  struct px_head *out, const char **why);
/* The first header called name (case-insensitive), or NULL. */
const struct px_header *px_head_get(const struct px_head *h, const char *name);
/* Calls fn for each comma-separated token of a header value (trimmed of
 * blanks; empty ones skipped) until fn returns false.  False when it did. */
bool px_each_token(struct px_span v, bool (*fn)(struct px_span t, void *ud), void *ud);
/* True when span s equals the NUL-terminated t, case-insensitively.
 * Inline: with a constant t the length test folds and rejects most
 * header names before any byte is compared (it runs per header, per
 * request). */
static inline bool px_span_ieq(struct px_span s, const char *t)
{
	return __builtin_strlen(t) == s.n && strncasecmp(s.p, t, s.n) == 0;
}

#endif
