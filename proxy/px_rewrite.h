/* What the proxy takes out of a request and what it passes on.
 *
 * A sandbox token reaches the proxy in one of three places: the
 * Authorization header (`Bearer st1....`), the proxy's own cookie, or a
 * `token` query parameter (the one-click link, answered with a redirect
 * that sets the cookie).  px_token_find() finds it; px_rewrite() writes the
 * head the sandbox gets: the token in none of those places, no hop-by-hop
 * headers, and X-Forwarded-For/Proto/Host set by the proxy (never passed
 * through from the client). */
#ifndef PX_REWRITE_H
#define PX_REWRITE_H
#include "common/buf.h"
#include "proxy/px_head.h"

#define PX_COOKIE "cloche_token"

enum px_token_from { PX_TOKEN_NONE, PX_TOKEN_BEARER, PX_TOKEN_COOKIE, PX_TOKEN_QUERY };

/* The sandbox token of the request, by precedence bearer > cookie > query,
 * copied into out (len bytes).  Of several cookies, the one that names
 * sandbox id (the host's) is taken.  Returns where it came from; NONE when
 * no place holds one (or one that does not fit). */
enum px_token_from px_token_find(const struct px_head *h, const char *id, char *out, size_t len);

struct px_rewrite_opts {
	const char *client_addr; /* the peer's address, for X-Forwarded-For */
	bool tls;                /* the client came over HTTPS (X-Forwarded-Proto) */
	bool upgrade;            /* pass Connection: upgrade and Upgrade on (WebSocket) */
	bool keep_token;         /* forwarding to the owning node's proxy, which checks it */
	const char *add_query;   /* "name=value" appended to the query unless name is there */
};

/* Appends the upstream head for h to out (request line, headers, CRLF).
 * 0, or -1 with e set (out full: 431 for the caller). */
int px_rewrite(const struct px_head *h, const struct px_rewrite_opts *o, struct buf *out,
	       struct err *e);
/* Appends the head sent to the client for the response head h: as the
 * server sent it but without hop-by-hop headers and without a Set-Cookie
 * for the whole domain or of the proxy's own cookie, with `Connection: close`
 * when keep_alive is false (and `Connection: keep-alive` for an HTTP/1.0
 * client that keeps it).  0, or -1 with e set. */
int px_rewrite_resp(const struct px_head *h, bool keep_alive, int client_minor, struct buf *out,
		    struct err *e);
/* The target without its `token` query parameter, into out (for the
 * redirect after a query token).  0, or -1 when it does not fit. */
int px_target_without_token(struct px_span target, char *out, size_t len);

#endif
