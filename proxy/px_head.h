/* The proxy's HTTP/1 heads: common/http1_head, the one parser, under the
 * names the proxy's code and tests use, read at its strictest.  A reverse
 * proxy takes origin-form targets (and `*`) only, since an absolute URL or
 * a bare query would name something else upstream; lines end in CRLF;
 * HTTP/1.1 needs its one Host; only versions 1.0 and 1.1 (505 otherwise).
 * Everything http1_head.h says about spans and framing holds here. */
#ifndef PX_HEAD_H
#define PX_HEAD_H
#include "common/http1_head.h"

#define PX_HEAD_MAX_HEADERS HTTP1_MAX_HEADERS

#define px_span http1_span
#define px_header http1_header
#define px_head http1_head
#define px_body http1_body
#define PX_BODY_NONE HTTP1_BODY_NONE
#define PX_BODY_LENGTH HTTP1_BODY_LENGTH
#define PX_BODY_CHUNKED HTTP1_BODY_CHUNKED
#define PX_BODY_CLOSE HTTP1_BODY_CLOSE
#define px_head_result http1_result
#define PX_HEAD_OK HTTP1_OK
#define PX_HEAD_PARTIAL HTTP1_PARTIAL
#define PX_HEAD_BAD HTTP1_BAD
#define PX_HEAD_TOO_MANY HTTP1_TOO_MANY
#define PX_HEAD_UNSUPPORTED HTTP1_UNSUPPORTED

/* A client's request head at the start of buf[0..len), with no leniency;
 * see http1_request_parse(). */
static inline enum http1_result px_head_parse(const char *buf, size_t len, struct http1_head *out,
					      const char **why)
{
	return http1_request_parse(buf, len, 0, out, why);
}

/* A sandbox's response head; see http1_response_parse(). */
#define px_resp_parse http1_response_parse
/* The first header called name, or NULL; see http1_head_get(). */
#define px_head_get http1_head_get
/* Each comma-separated token of a value; see http1_each_token(). */
#define px_each_token http1_each_token
/* Span equals string, case-insensitively; see http1_span_ieq(). */
#define px_span_ieq http1_span_ieq

#endif
