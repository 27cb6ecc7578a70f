/* The web port's requests, pure: what one request head asks for, and
 * whether it may reach the desktop.
 *
 * http.c peeks at a connection's next bytes and hands them here.  The head
 * is read by common/http1_head, strictly (CRLF lines, token methods and
 * header names, no control characters, no folding, one Host and HTTP/1.1
 * needs it, unambiguous framing), with two leniencies kept from before:
 * HTTP/1.2-1.9 pass as 1.x, and the target's form is judged here.  On top,
 * cloche-vnc's rules, in this order:
 *
 *   no complete head in VNC_REQUEST_MAX bytes, or a NUL before its end: 431
 *   a head the parser refuses: 400 (too many headers: 431)
 *   GET with an Upgrade header naming websocket: a WebSocket, whatever the
 *       path; vnc_request_guard() then says 401/403 or hand over
 *   /cloche/control[?...]: a body 400, a method but GET/HEAD/POST 405
 *   /cloche/rekey: a body 400, a method but POST 405; then
 *       vnc_request_rekey() says whether the secret may change
 *   anything else: a method but GET/HEAD 405, a body 400, a path that is
 *       not "/..." or has "..", hidden or empty-after-decoding segments or
 *       bad %-escapes 404, "/" a redirect into noVNC, else a file
 *
 * The connection stays open after the answer for HTTP/1.1 without
 * "Connection: close", except after 400, 405 and 431. */
#ifndef CLOCHE_VNC_REQUEST_H
#define CLOCHE_VNC_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#define VNC_REQUEST_MAX 8192 /* bytes of a head, up to and with the empty line */

/* Who may open a WebSocket or use the control calls.  Both strings must
 * outlive their users. */
struct vnc_http_guard {
	const char *allowed_hosts; /* extra names for Host/Origin, or NULL */
	const char *secret;        /* required as ?secret= when not NULL */
	const char *view;          /* ... or, for a view-only viewer, this as ?view= */
};

enum vnc_req_kind {
	VNC_REQ_PARTIAL,   /* no complete head yet: look again later */
	VNC_REQ_MALFORMED, /* the head itself is refused: status 400 or 431 */
	VNC_REQ_ERROR,     /* understood, answered with status 400, 404 or 405 */
	VNC_REQ_UPGRADE,   /* a WebSocket: vnc_request_guard(), then hand over */
	VNC_REQ_CONTROL,   /* /cloche/control */
	VNC_REQ_REKEY,     /* /cloche/rekey: the node replaces the secret */
	VNC_REQ_REDIRECT,  /* "/": vnc_request_location() */
	VNC_REQ_FILE,      /* path under the web directory */
};

struct vnc_request {
	enum vnc_req_kind kind;
	int status;      /* VNC_REQ_MALFORMED and VNC_REQ_ERROR */
	size_t len;      /* bytes of the head, to take off the socket before
			  * answering; 0 when its end is unknown (431) */
	bool head_only;  /* HEAD: the answer goes without its body */
	bool keep_alive; /* serve the connection's next request after this one */
	/* NUL-terminated in the caller's buffer; method and target are "" and
	 * the headers NULL when the head did not parse */
	const char *method, *target;
	const char *host, *origin, *if_modified; /* NULL when absent */
	const char *secret_now, *secret_new;     /* X-Cloche-Secret, X-Cloche-New-Secret */
	char path[1024]; /* VNC_REQ_FILE: relative, percent-decoded, no ".." */
};

/* Reads the request at the start of buf: the n bytes peeked so far from a
 * connection (n <= VNC_REQUEST_MAX).  Fills r; the strings it points to are
 * made NUL-terminated inside buf's head, so buf must outlive r and is
 * changed (the bytes after the head are not touched).  Pure. */
void vnc_request_read(char *buf, size_t n, struct vnc_request *r);

/* Whether request r may reach the desktop (a WebSocket, the control calls)
 * under guard g: 0 when it may, with *control saying whether it may also
 * drive (the secret, or no secret at all; the view secret only watches).
 * Otherwise 403 (a Host or Origin not allowed, a wrong secret) or 401 (no
 * secret given), with a reason for the log and the body in *why.  Pure. */
int vnc_request_guard(const struct vnc_http_guard *g, const struct vnc_request *r, bool *control,
		      const char **why);

/* Whether rekey request r may replace guard g's secret: it must carry the
 * secret in force as X-Cloche-Secret (compared in constant time) and the
 * new one as X-Cloche-New-Secret (secret_token_ok: 16-127 base64url
 * characters).  A fork child and a sandbox restored elsewhere wake with
 * their parent's secret in memory; their node sends this before anyone
 * may connect, so that no secret opens two sandboxes.  0, or 404 (this
 * server has no secret), 403 (wrong or missing secret) or 400 (a new
 * secret that is no secret), with the reason in *why.  Pure. */
int vnc_request_rekey(const struct vnc_http_guard *g, const struct vnc_request *r, const char **why);

/* The Location of the "/" redirect for target (NUL-terminated) into out
 * (cap bytes): vnc.html with the query given, cloche's defaults for noVNC
 * (autoconnect=1, resize=scale, reconnect=1) where the query has none, and
 * for ?secret=S (or ?view=V) the WebSocket path and the VNC password too,
 * so one link opens the desktop.  0, or -1 when it does not fit (414). */
int vnc_request_location(const char *target, char *out, size_t cap);

#endif
