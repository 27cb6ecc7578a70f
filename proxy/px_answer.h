/* Answers the proxy makes itself (errors, the token redirect, the admin
 * endpoints): a short HTML page for browsers and a JSON error object for
 * everything else, chosen by the request's Accept header. */
#ifndef PX_ANSWER_H
#define PX_ANSWER_H
#include "common/buf.h"

#include <stdbool.h>

struct px_answer {
	int status;
	const char *code;      /* machine-readable: "unknown_sandbox", ... */
	const char *message;   /* a sentence for a person */
	bool html;             /* the client prefers HTML */
	bool keep_alive;
	const char *headers;   /* extra header lines, each ending in CRLF; may be NULL */
	const char *body;      /* a body instead of the error page (with type); may be NULL */
	const char *type;      /* its Content-Type */
};

/* Appends the whole response to out (the reason phrase, and the code when
 * a->code is NULL, from common/http_status.h).  0, or -1 with e set. */
int px_answer_build(const struct px_answer *a, struct buf *out, struct err *e);

#endif
