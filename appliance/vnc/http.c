/* Static files and WebSocket hand-over on the web port; see http.h.
 *
 * A connection is in one of three states:
 *   READ   waiting for a request (POLLIN)
 *   WAIT   a partial request sits unread in the socket: because it was only
 *          peeked, POLLIN would fire at once, so it is looked at again on a
 *          short back-off timer instead of spinning
 *   WRITE  sending the header block, then the file with sendfile()
 *   HOLD   a control long-poll waiting for the lease to change
 * Exactly the bytes of one request are consumed before it is answered, so
 * pipelined or keep-alive requests, WebSocket upgrades included, work. */
#include "http.h"

#include "net.h"

#include "common/log.h"
#include "common/query.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 64
#define MAX_HTML (1024 * 1024)
#define REQUEST_TIMEOUT_MS 10000
/* Longer than cloche-proxy keeps an idle upstream connection (30 s), so the
 * proxy closes first and no TIME_WAIT delays a checkpoint (HSRV_KEEPALIVE_S). */
#define IDLE_TIMEOUT_MS 75000
#define WRITE_TIMEOUT_MS 30000

/* How long a control long-poll is held before it is answered unchanged;
 * shorter than the proxy's upstream timeout. */
#define HOLD_MS 25000

enum conn_state { C_READ, C_WAIT, C_WRITE, C_HOLD };

struct conn {
	int fd;
	enum conn_state state;
	uint64_t deadline; /* close the connection at this time */
	uint64_t retry_at; /* WAIT: peek again at this time */
	unsigned retry_ms;
	char peer[64];
	char *out; /* header block (and small bodies) */
	size_t out_len, out_off;
	int file_fd; /* body from a file, or -1 */
	off_t file_off, file_len;
	bool keep_alive;
	/* HOLD: the lease version the page has seen, its key and rights */
	unsigned since;
	char key[VNC_LEASE_KEY_MAX];
	bool may_control;
};

struct vnc_http {
	int listen_fd;
	int dir_fd;
	vnc_http_upgrade_fn upgrade;
	void *ctx;
	struct vnc_lease *lease; /* NULL: no control lease */
	struct vnc_http_guard guard;
	vnc_http_rekey_fn rekey;
	void *rekey_ctx;
	struct conn conns[MAX_CONNS];
	int nconns;
	/* Which connection each pollfd entry after the listener belongs to. */
	int slot[MAX_CONNS];
	size_t nslots;
};

/* page.js, run in every page before noVNC's modules: noVNC's defaults
 * ("scale", the dot cursor), the tab's viewer key, the control bar. */
extern const char vnc_page_js[];

static const struct {
	const char *ext;
	const char *type;
} content_types[] = {
	{".html", "text/html; charset=utf-8"},
	{".js", "application/javascript; charset=utf-8"},
	{".css", "text/css; charset=utf-8"},
	{".json", "application/json"},
	{".svg", "image/svg+xml"},
	{".png", "image/png"},
	{".ico", "image/x-icon"},
	{".jpg", "image/jpeg"},
	{".gif", "image/gif"},
	{".woff", "font/woff"},
	{".woff2", "font/woff2"},
	{".ttf", "font/ttf"},
	{".mp3", "audio/mpeg"},
	{".oga", "audio/ogg"},
	{".ogg", "audio/ogg"},
	{".wav", "audio/wav"},
	{".txt", "text/plain; charset=utf-8"},
	{".md", "text/plain; charset=utf-8"},
};

static const char *content_type(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (dot && !strchr(dot, '/'))
		for (size_t i = 0; i < ARRAY_LEN(content_types); i++)
			if (strcasecmp(dot, content_types[i].ext) == 0)
				return content_types[i].type;
	return "application/octet-stream";
}

static void conn_close(struct vnc_http *h, int i)
{
	struct conn *c = &h->conns[i];

	if (c->fd >= 0)
		close(c->fd);
	if (c->file_fd >= 0)
		close(c->file_fd);
	free(c->out);
	h->conns[i] = h->conns[--h->nconns];
}

/* Drops the connection from the table without closing its socket (it was
 * handed to libvncserver). */
static void conn_forget(struct vnc_http *h, int i)
{
	struct conn *c = &h->conns[i];

	if (c->file_fd >= 0)
		close(c->file_fd);
	free(c->out);
	h->conns[i] = h->conns[--h->nconns];
}

static void reset_response(struct conn *c)
{
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	if (c->file_fd >= 0)
		close(c->file_fd);
	c->file_fd = -1;
	c->file_off = c->file_len = 0;
}

/* Sets the response to a header block announcing `length` body bytes,
 * followed by body_len bytes of body from memory (none for HEAD, or when
 * the body will come from a file).  Returns status, or -1 out of memory. */
static int respond_with(struct conn *c, int status, const char *reason, const char *extra,
			const char *type, long long length, const char *body, size_t body_len)
{
	char head[1024];
	int n;

	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\n"
		     "Server: cloche-vnc\r\n"
		     "Content-Type: %s\r\n"
		     "Content-Length: %lld\r\n"
		     "X-Content-Type-Options: nosniff\r\n"
		     "X-Frame-Options: DENY\r\n"
		     "Content-Security-Policy: frame-ancestors 'none'\r\n"
		     "Referrer-Policy: no-referrer\r\n"
		     "Cache-Control: no-cache\r\n"
		     "Connection: %s\r\n"
		     "%s\r\n",
		     status, reason, type, length, c->keep_alive ? "keep-alive" : "close",
		     extra ? extra : "");
	if (n < 0 || (size_t)n >= sizeof(head))
		return -1;
	c->out = malloc((size_t)n + body_len);
	if (!c->out)
		return -1;
	memcpy(c->out, head, (size_t)n);
	if (body_len)
		memcpy(c->out + n, body, body_len);
	c->out_len = (size_t)n + body_len;
	c->out_off = 0;
	return status;
}

/* A complete response from memory. */
static int respond(struct conn *c, int status, const char *reason, const char *extra,
		   const char *type, const char *body, size_t body_len, bool head_only)
{
	return respond_with(c, status, reason, extra, type, (long long)body_len, body,
			    head_only ? 0 : body_len);
}

static int respond_error(struct conn *c, int status, const char *reason, bool head_only)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "%d %s\n", status, reason);

	return respond(c, status, reason, NULL, "text/plain; charset=utf-8", body, (size_t)n,
		       head_only);
}

/* The "/" redirect into noVNC (request.c builds the Location). */
static int respond_redirect(struct conn *c, const char *target, bool head_only)
{
	char loc[1024], hdr[1100];

	if (vnc_request_location(target, loc, sizeof(loc)) == -1)
		return respond_error(c, 414, "URI Too Long", head_only);
	snprintf(hdr, sizeof(hdr), "Location: %s\r\n", loc);
	return respond(c, 302, "Found", hdr, "text/plain; charset=utf-8", "", 0, head_only);
}

/* An .html page read into memory with the defaults script after <head>. */
static int respond_html(struct conn *c, int fd, off_t size, const char *extra,
			bool head_only)
{
	static const char open_tag[] = "<script>", close_tag[] = "</script>";
	size_t js = strlen(vnc_page_js), inj = js + sizeof(open_tag) - 1 + sizeof(close_tag) - 1;
	size_t at = 0;
	AUTOFREE char *page = NULL;
	AUTOFREE char *body = NULL;
	size_t got = 0;

	if (size > MAX_HTML)
		return -1;
	page = malloc((size_t)size + 1);
	body = malloc((size_t)size + inj);
	if (!page || !body)
		return -1;
	while (got < (size_t)size) {
		ssize_t r = read(fd, page + got, (size_t)size - got);

		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	page[got] = '\0';
	for (const char *p = page; (p = strchr(p, '<')); p++) {
		if (strncasecmp(p, "<head>", 6) == 0) {
			at = (size_t)(p - page) + 6;
			break;
		}
	}
	memcpy(body, page, at);
	memcpy(body + at, open_tag, sizeof(open_tag) - 1);
	memcpy(body + at + sizeof(open_tag) - 1, vnc_page_js, js);
	memcpy(body + at + sizeof(open_tag) - 1 + js, close_tag, sizeof(close_tag) - 1);
	memcpy(body + at + inj, page + at, got - at);
	return respond(c, 200, "OK", extra, "text/html; charset=utf-8", body, got + inj,
		       head_only);
}

static int respond_file(struct vnc_http *h, struct conn *c, const struct vnc_request *r,
			const char *rel, bool head_only)
{
	AUTOCLOSE int fd = -1;
	struct stat st;
	struct tm tm;
	char mod[64], extra[128];
	const char *type;

	fd = openat(h->dir_fd, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd == -1) {
		if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
			return respond_error(c, 404, "Not Found", head_only);
		return respond_error(c, 403, "Forbidden", head_only);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return respond_error(c, 404, "Not Found", head_only);
	gmtime_r(&st.st_mtime, &tm);
	strftime(mod, sizeof(mod), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	snprintf(extra, sizeof(extra), "Last-Modified: %s\r\n", mod);
	/* Browsers echo Last-Modified back verbatim, so equality is enough. */
	if (r->if_modified && strcmp(r->if_modified, mod) == 0)
		return respond(c, 304, "Not Modified", extra, content_type(rel), "", 0, true);
	type = content_type(rel);
	if (strncmp(type, "text/html", 9) == 0) {
		int status = respond_html(c, fd, st.st_size, extra, head_only);

		return status == -1 ? respond_error(c, 500, "Internal Server Error", head_only)
				    : status;
	}
	if (respond_with(c, 200, "OK", extra, type, (long long)st.st_size, NULL, 0) == -1)
		return -1;
	if (!head_only) {
		c->file_fd = take_fd(&fd);
		c->file_off = 0;
		c->file_len = st.st_size;
	}
	return 200;
}

/* A JSON answer (takes the reference); error bodies are {"error": msg}. */
static int respond_json(struct conn *c, int status, const char *reason, json_t *body,
			bool head_only)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc;

	json_decref(body);
	if (!text)
		return respond_error(c, 500, "Internal Server Error", head_only);
	rc = respond(c, status, reason, NULL, "application/json", text, strlen(text), head_only);
	free(text);
	return rc;
}

static int control_error(struct conn *c, int status, const char *reason, const char *msg)
{
	return respond_json(c, status, reason, json_pack("{s:s}", "error", msg), false);
}

/* The lease as the page of c->key sees it, with its rights. */
static int control_state(struct vnc_http *h, struct conn *c, bool head_only)
{
	json_t *st = vnc_lease_state_json(h->lease, c->key[0] ? c->key : NULL);

	if (st)
		json_object_set_new(st, "may_control", json_boolean(c->may_control));
	return respond_json(c, 200, "OK", st, head_only);
}

/* /cloche/control: GET answers the lease's state (with ?since=V, once it
 * differs from version V, holding the request up to HOLD_MS: returns 0
 * then); POST ?action=take|hand_back[&note=...] changes it.  Both name
 * the page's viewer key (?viewer=).  Returns the status, 0 when held. */
static int answer_control(struct vnc_http *h, struct conn *c, const struct vnc_request *r,
			  bool head_only, uint64_t now)
{
	const char *q = strchr(r->target, '?');
	char since[16], action[16], note[3 * VNC_LEASE_NOTE_MAX];
	const char *why = NULL;
	bool post = strcmp(r->method, "POST") == 0;
	int status = vnc_request_guard(&h->guard, r, &c->may_control, &why);

	q = q ? q + 1 : "";
	if (status)
		return control_error(c, status, status == 401 ? "Unauthorized" : "Forbidden", why);
	if (!h->lease)
		return control_error(c, 404, "Not Found",
				     "this desktop has no control lease: everyone drives at once");
	if (query_get(q, "viewer", c->key, sizeof(c->key)) < 0)
		c->key[0] = '\0';
	if (!post) {
		long v;
		char *end;

		if (query_get(q, "since", since, sizeof(since)) > 0 &&
		    (v = strtol(since, &end, 10), *end == '\0') &&
		    (unsigned)v == vnc_lease_version(h->lease) && !head_only) {
			c->since = (unsigned)v;
			c->state = C_HOLD;
			c->deadline = now + HOLD_MS;
			return 0;
		}
		return control_state(h, c, head_only);
	}
	if (!c->may_control)
		return control_error(c, 403, "Forbidden", "this link may only watch");
	if (!r->origin && !r->host)
		return control_error(c, 403, "Forbidden", "no Origin or Host");
	if (query_get(q, "action", action, sizeof(action)) < 0)
		action[0] = '\0';
	if (strcmp(action, "take") == 0) {
		if (vnc_lease_take(h->lease, c->key, util_wall_ms()) != VNC_LEASE_OK)
			return control_error(c, 409, "Conflict",
					     "no viewer of this page is connected (reload it)");
		log_info("a person took control", "{s:s}", "addr", c->peer);
	} else if (strcmp(action, "hand_back") == 0) {
		int n = query_get(q, "note", note, sizeof(note));

		if (n == QUERY_BAD)
			return control_error(c, 400, "Bad Request", "the note is too long or badly escaped");
		if (vnc_lease_hand_back(h->lease, c->key, n > 0 ? note : "", util_wall_ms()) !=
		    VNC_LEASE_OK)
			return control_error(c, 409, "Conflict", "this page does not have control");
		log_info("a person handed control back", "{s:s, s:I}", "addr", c->peer, "note_bytes",
			 (json_int_t)(n > 0 ? n : 0));
	} else {
		return control_error(c, 400, "Bad Request", "action must be take or hand_back");
	}
	return control_state(h, c, false);
}

static const char *reason(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 431:
		return "Request Header Fields Too Large";
	default:
		return "Error";
	}
}

/* POST /cloche/rekey: the node replaces the secret (request.h). */
static int answer_rekey(struct vnc_http *h, struct conn *c, const struct vnc_request *r)
{
	const char *why = "this server cannot change its secret";
	struct err e = ERR_INIT;
	int status = h->rekey ? vnc_request_rekey(&h->guard, r, &why) : 404;

	if (status) {
		log_warn("rekey refused", "{s:s, s:i, s:s}", "addr", c->peer, "status", status, "why",
			 why);
		return control_error(c, status, status == 404 ? "Not Found"
					       : status == 403 ? "Forbidden"
							       : "Bad Request",
				     why);
	}
	if (h->rekey(h->rekey_ctx, r->secret_new, &e) == -1) {
		log_error("rekey failed", "{s:s}", "error", e.msg);
		return control_error(c, 500, "Internal Server Error", e.msg);
	}
	log_info("the secret was replaced", "{s:s}", "addr", c->peer);
	return respond_json(c, 200, "OK", json_pack("{s:b}", "rekeyed", 1), false);
}

/* Builds the answer to one read (and consumed) request that is no
 * WebSocket.  Returns the status, 0 when the request is held (a control
 * long-poll), or -1 when even an error response could not be built. */
static int answer(struct vnc_http *h, struct conn *c, const struct vnc_request *r, uint64_t now)
{
	switch (r->kind) {
	case VNC_REQ_CONTROL:
		return answer_control(h, c, r, r->head_only, now);
	case VNC_REQ_REKEY:
		return answer_rekey(h, c, r);
	case VNC_REQ_REDIRECT:
		return respond_redirect(c, r->target, r->head_only);
	case VNC_REQ_FILE:
		return respond_file(h, c, r, r->path, r->head_only);
	default:
		return respond_error(c, r->status, reason(r->status), r->head_only);
	}
}

/* Sends as much of the response as the socket takes.  Returns 1 when it
 * is complete, 0 when the socket is full, -1 on error. */
static int send_some(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n == -1) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		c->out_off += (size_t)n;
	}
	while (c->file_fd >= 0 && c->file_off < c->file_len) {
		ssize_t n = sendfile(c->fd, c->file_fd, &c->file_off,
				     (size_t)(c->file_len - c->file_off));

		if (n == -1) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		if (n == 0)
			return -1; /* the file shrank under us */
	}
	return 1;
}

/* Continues a response.  Returns false when the connection was closed. */
static bool conn_write(struct vnc_http *h, int i, uint64_t now)
{
	struct conn *c = &h->conns[i];
	int r = send_some(c);

	if (r == 0) {
		c->deadline = now + WRITE_TIMEOUT_MS;
		return true;
	}
	if (r == -1 || !c->keep_alive) {
		if (r == 1)
			shutdown(c->fd, SHUT_WR);
		conn_close(h, i);
		return false;
	}
	reset_response(c);
	c->state = C_READ;
	c->deadline = now + IDLE_TIMEOUT_MS;
	return true;
}

/* Hands a WebSocket upgrade to libvncserver, or refuses it.  Returns false
 * when the connection left the table (handed over). */
static bool hand_over(struct vnc_http *h, int i, const struct vnc_request *r)
{
	struct conn *c = &h->conns[i];
	int fd = c->fd;
	char peer[64];
	const char *why = NULL;
	bool control;
	int refused = vnc_request_guard(&h->guard, r, &control, &why);
	char key[VNC_LEASE_KEY_MAX];
	const char *q = strchr(r->target, '?');

	if (refused) {
		log_warn("websocket refused", "{s:s, s:s, s:s, s:s}", "addr", c->peer, "reason", why,
			 "host", r->host ? r->host : "", "origin", r->origin ? r->origin : "");
		c->keep_alive = false;
		respond_error(c, refused, refused == 401 ? "Unauthorized" : "Forbidden", false);
		return true;
	}
	log_debug("websocket upgrade", "{s:s, s:s}", "addr", c->peer, "path", r->target);
	memcpy(peer, c->peer, sizeof(peer));
	if (!q || query_get(q + 1, "viewer", key, sizeof(key)) <= 0 ||
	    !util_token_chars(key, strlen(key)))
		key[0] = '\0';
	conn_forget(h, i);
	h->upgrade(h->ctx, fd, peer, key[0] ? key : NULL);
	return false;
}

/* Looks at the next request without consuming it.  Returns false when the
 * connection left the table (closed or handed over). */
static bool conn_read(struct vnc_http *h, int i, uint64_t now)
{
	struct conn *c = &h->conns[i];
	char buf[VNC_REQUEST_MAX];
	struct vnc_request r;
	ssize_t n;
	int status;

	do
		n = recv(c->fd, buf, sizeof(buf), MSG_PEEK);
	while (n == -1 && errno == EINTR);
	if (n == -1 && errno == EAGAIN) {
		c->state = C_READ;
		return true;
	}
	if (n <= 0) {
		conn_close(h, i);
		return false;
	}
	vnc_request_read(buf, (size_t)n, &r);
	c->keep_alive = r.keep_alive;
	switch (r.kind) {
	case VNC_REQ_PARTIAL:
		/* Look again shortly rather than spin on POLLIN. */
		if (c->state != C_WAIT) {
			c->state = C_WAIT;
			c->retry_ms = 5;
			c->deadline = now + REQUEST_TIMEOUT_MS;
		} else if (c->retry_ms < 200) {
			c->retry_ms *= 2;
		}
		c->retry_at = now + c->retry_ms;
		return true;
	case VNC_REQ_MALFORMED:
		respond_error(c, r.status, reason(r.status), false);
		break; /* consumed when its end is known, then closed */
	case VNC_REQ_UPGRADE:
		if (!hand_over(h, i, &r))
			return false;
		break;
	default:
		status = answer(h, c, &r, now);
		if (status == -1) {
			conn_close(h, i);
			return false;
		}
		log_debug("http request", "{s:s, s:s, s:s, s:i}", "addr", c->peer, "method",
			  r.method, "path", r.target, "status", status);
	}
	/* Take exactly this request off the socket; the peek saw it all. */
	for (size_t got = 0; got < r.len;) {
		ssize_t m = recv(c->fd, buf, r.len - got, 0);

		if (m == -1 && errno == EINTR)
			continue;
		if (m <= 0) {
			conn_close(h, i);
			return false;
		}
		got += (size_t)m;
	}
	if (c->state == C_HOLD)
		return true; /* answered when the lease changes or the hold ends */
	c->state = C_WRITE;
	return conn_write(h, i, now);
}

static void accept_all(struct vnc_http *h, uint64_t now)
{
	for (;;) {
		char peer[64];
		int fd = vnc_net_accept(h->listen_fd, peer, sizeof(peer));
		struct conn *c;

		if (fd == -1) {
			if (errno != EAGAIN && errno != ECONNABORTED)
				log_warn("http accept failed", "{s:s}", "error", strerror(errno));
			return;
		}
		if (h->nconns == MAX_CONNS) {
			log_warn("too many http connections; refusing one", "{s:s}", "addr", peer);
			close(fd);
			continue;
		}
		c = &h->conns[h->nconns++];
		*c = (struct conn){.fd = fd, .state = C_READ, .file_fd = -1,
				   .deadline = now + REQUEST_TIMEOUT_MS};
		memcpy(c->peer, peer, sizeof(c->peer));
	}
}

struct vnc_http *vnc_http_new(int listen_fd, const char *web_dir,
			      const struct vnc_http_guard *guard, vnc_http_upgrade_fn upgrade,
			      void *ctx, struct err *e)
{
	struct vnc_http *h = calloc(1, sizeof(*h));

	if (!h) {
		close(listen_fd);
		err_set(e, ENOMEM, "http");
		return NULL;
	}
	h->listen_fd = listen_fd;
	h->upgrade = upgrade;
	h->ctx = ctx;
	if (guard)
		h->guard = *guard;
	if (!h->guard.secret)
		log_warn("no sandbox secret: WebSockets need only an allowed Host and Origin", NULL);
	h->dir_fd = open(web_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (h->dir_fd == -1) {
		err_set(e, errno, "open web directory `%s`", web_dir);
		vnc_http_free(h);
		return NULL;
	}
	if (faccessat(h->dir_fd, "vnc.html", R_OK, 0) == -1)
		log_warn("web directory has no vnc.html", "{s:s}", "dir", web_dir);
	return h;
}

size_t vnc_http_pollfds(struct vnc_http *h, struct pollfd *fds, size_t cap, uint64_t now_ms)
{
	size_t n = 0;

	(void)now_ms;
	h->nslots = 0;
	if (cap == 0)
		return 0;
	fds[n++] = (struct pollfd){.fd = h->listen_fd, .events = POLLIN};
	for (int i = 0; i < h->nconns && n < cap; i++) {
		struct conn *c = &h->conns[i];

		if (c->state == C_WAIT)
			continue;
		fds[n++] = (struct pollfd){.fd = c->fd,
					   .events = c->state == C_WRITE ? POLLOUT : POLLIN};
		h->slot[h->nslots++] = i;
	}
	return n;
}

int vnc_http_timeout_ms(const struct vnc_http *h, uint64_t now_ms)
{
	uint64_t next = UINT64_MAX;

	for (int i = 0; i < h->nconns; i++) {
		const struct conn *c = &h->conns[i];

		if (c->deadline < next)
			next = c->deadline;
		if (c->state == C_WAIT && c->retry_at < next)
			next = c->retry_at;
	}
	if (next == UINT64_MAX)
		return -1;
	return next <= now_ms ? 0 : (int)(next - now_ms);
}

/* Answers a held control long-poll with the lease as it is now. */
static void answer_hold(struct vnc_http *h, int i, uint64_t now)
{
	struct conn *c = &h->conns[i];

	c->state = C_WRITE;
	if (control_state(h, c, false) == -1) {
		conn_close(h, i);
		return;
	}
	conn_write(h, i, now);
}

void vnc_http_set_lease(struct vnc_http *h, struct vnc_lease *lease)
{
	h->lease = lease;
}

void vnc_http_set_rekey(struct vnc_http *h, vnc_http_rekey_fn fn, void *ctx)
{
	h->rekey = fn;
	h->rekey_ctx = ctx;
}

void vnc_http_lease_changed(struct vnc_http *h, uint64_t now_ms)
{
	unsigned v = h->lease ? vnc_lease_version(h->lease) : 0;

	for (int i = h->nconns - 1; i >= 0; i--)
		if (h->conns[i].state == C_HOLD && h->conns[i].since != v)
			answer_hold(h, i, now_ms);
}

void vnc_http_process(struct vnc_http *h, const struct pollfd *fds, size_t n, uint64_t now_ms)
{
	bool ready[MAX_CONNS] = {false};
	bool accept_ready = n > 0 && (fds[0].revents & POLLIN);

	/* Collect first: handling one connection reorders the table. */
	for (size_t k = 1; k < n && k - 1 < h->nslots; k++)
		if (fds[k].revents)
			ready[h->slot[k - 1]] = true;
	/* Walk backwards so a removal (last moved into i) never skips one. */
	for (int i = h->nconns - 1; i >= 0; i--) {
		struct conn *c = &h->conns[i];
		bool due = c->state == C_WAIT && now_ms >= c->retry_at;

		if (c->state == C_HOLD) {
			/* readable: closed, or another request behind it */
			if (ready[i] || now_ms >= c->deadline)
				answer_hold(h, i, now_ms);
			continue;
		}
		if (!ready[i] && !due) {
			if (now_ms >= c->deadline) {
				log_debug("http connection timed out", "{s:s}", "addr", c->peer);
				conn_close(h, i);
			}
			continue;
		}
		if (c->state == C_WRITE)
			conn_write(h, i, now_ms);
		else
			conn_read(h, i, now_ms);
	}
	h->nslots = 0;
	if (accept_ready)
		accept_all(h, now_ms);
}

void vnc_http_free(struct vnc_http *h)
{
	if (!h)
		return;
	while (h->nconns > 0)
		conn_close(h, h->nconns - 1);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	if (h->dir_fd >= 0)
		close(h->dir_fd);
	free(h);
}
