/* The web port's request layer over common/http1_head; see request.h.
 * Everything here is a function of the bytes (and the guard), so that the
 * unit tests and the fuzzer can drive it without sockets. */
#include "request.h"

#include "common/hostcheck.h"
#include "common/http1_head.h"
#include "common/secret.h"
#include "common/util.h"

#include <stdio.h>
#include <string.h>

/* Browsers and curl send strict heads; the version and target leniencies
 * keep what this server always accepted (a target that is no path is a 404
 * of its own, below). */
#define PARSE_FLAGS (HTTP1_ANY_MINOR | HTTP1_ANY_TARGET)

/* Defaults the "/" redirect adds to noVNC's query unless already there. */
static const char *const redirect_defaults[] = {"autoconnect=1", "resize=scale", "reconnect=1"};

/* Whether the comma-separated header value v has token (any case) as an
 * element, alone or followed by blanks or parameters (";..."). */
static bool has_token(struct http1_span v, const char *token)
{
	size_t n = strlen(token), i = 0;

	while (i < v.n) {
		while (i < v.n && (v.p[i] == ' ' || v.p[i] == ',' || v.p[i] == '\t'))
			i++;
		if (v.n - i >= n && strncasecmp(v.p + i, token, n) == 0 &&
		    (i + n == v.n || memchr(",; \t", v.p[i + n], 4)))
			return true;
		while (i < v.n && v.p[i] != ',')
			i++;
	}
	return false;
}

/* Whether any header called name has token in its value. */
static bool any_token(const struct http1_head *h, const char *name, const char *token)
{
	for (size_t i = 0; i < h->nh; i++)
		if (http1_span_ieq(h->h[i].name, name) && has_token(h->h[i].value, token))
			return true;
	return false;
}

/* Turns the path part of target (before '?' or '#') into a relative path
 * under the web directory: percent-decoded, repeated slashes collapsed, and
 * no segment that is empty, "..", or hidden.  Returns 0, or -1 if the path
 * is not acceptable.  out is empty for "/". */
static int clean_path(const char *target, char *out, size_t cap)
{
	size_t n = 0;
	const char *p = target;

	if (*p != '/')
		return -1;
	while (*p && *p != '?' && *p != '#') {
		char ch = *p++;

		if (ch == '%') {
			int hi = util_hexval(p[0]), lo = hi < 0 ? -1 : util_hexval(p[1]);

			if (hi < 0 || lo < 0)
				return -1;
			ch = (char)(hi * 16 + lo);
			p += 2;
			if (ch == '\0' || ch == '\\')
				return -1;
		}
		if (ch == '/') {
			if (n == 0 || out[n - 1] == '/')
				continue;
		} else if (ch == '.' && (n == 0 || out[n - 1] == '/')) {
			return -1; /* ".", "..", and hidden files */
		}
		if (n + 1 >= cap)
			return -1;
		out[n++] = ch;
	}
	out[n] = '\0';
	return 0;
}

/* The span s of buf made a string in place: the byte after it is the
 * space, CR or blank that ended it in the head, never part of another
 * span's text. */
static const char *terminate(char *buf, struct http1_span s)
{
	char *p = buf + (s.p - buf);

	p[s.n] = '\0';
	return p;
}

static const char *header(char *buf, const struct http1_head *h, const char *name)
{
	const struct http1_header *x = http1_head_get(h, name);

	return x ? terminate(buf, x->value) : NULL;
}

static void done(struct vnc_request *r, enum vnc_req_kind kind, int status)
{
	r->kind = kind;
	r->status = status;
	if (kind == VNC_REQ_MALFORMED || status == 400 || status == 405)
		r->keep_alive = false;
}

void vnc_request_read(char *buf, size_t n, struct vnc_request *r)
{
	struct http1_head h;
	const char *nul = memchr(buf, '\0', n), *end;
	size_t seen = nul ? (size_t)(nul - buf) : n;
	bool body;

	memset(r, 0, sizeof(*r));
	r->method = r->target = "";
	/* Where the head ends: the first empty line, before any NUL.  Without
	 * one, a NUL or a full buffer means it never will. */
	end = memmem(buf, seen, "\r\n\r\n", 4);
	if (!end) {
		if (nul || n >= VNC_REQUEST_MAX)
			done(r, VNC_REQ_MALFORMED, 431);
		else
			done(r, VNC_REQ_PARTIAL, 0);
		return;
	}
	r->len = (size_t)(end - buf) + 4;
	switch (http1_request_parse(buf, r->len, PARSE_FLAGS, &h, NULL)) {
	case HTTP1_OK:
		break;
	case HTTP1_TOO_MANY:
		done(r, VNC_REQ_MALFORMED, 431);
		return;
	default:
		done(r, VNC_REQ_MALFORMED, 400);
		return;
	}
	body = h.body != HTTP1_BODY_NONE;
	r->keep_alive = h.minor == 1 && !any_token(&h, "connection", "close");
	/* Every lookup above reads the head; from here on its spans become
	 * strings in place. */
	if (h.method.n == 3 && memcmp(h.method.p, "GET", 3) == 0 &&
	    any_token(&h, "upgrade", "websocket"))
		r->kind = VNC_REQ_UPGRADE;
	r->host = header(buf, &h, "host");
	r->origin = header(buf, &h, "origin");
	r->if_modified = header(buf, &h, "if-modified-since");
	r->secret_now = header(buf, &h, "x-cloche-secret");
	r->secret_new = header(buf, &h, "x-cloche-new-secret");
	r->method = terminate(buf, h.method);
	r->target = terminate(buf, h.target);
	r->head_only = strcmp(r->method, "HEAD") == 0;
	if (r->kind == VNC_REQ_UPGRADE)
		return;
	if (strncmp(r->target, "/cloche/control", 15) == 0 &&
	    (r->target[15] == '\0' || r->target[15] == '?')) {
		if (body)
			done(r, VNC_REQ_ERROR, 400);
		else if (!r->head_only && strcmp(r->method, "GET") != 0 &&
			 strcmp(r->method, "POST") != 0)
			done(r, VNC_REQ_ERROR, 405);
		else
			done(r, VNC_REQ_CONTROL, 0);
		return;
	}
	if (strcmp(r->target, "/cloche/rekey") == 0) {
		if (body)
			done(r, VNC_REQ_ERROR, 400);
		else if (strcmp(r->method, "POST") != 0)
			done(r, VNC_REQ_ERROR, 405);
		else
			done(r, VNC_REQ_REKEY, 0);
		return;
	}
	if (!r->head_only && strcmp(r->method, "GET") != 0)
		done(r, VNC_REQ_ERROR, 405);
	else if (body) /* a body this server will not read */
		done(r, VNC_REQ_ERROR, 400);
	else if (clean_path(r->target, r->path, sizeof(r->path)) == -1)
		done(r, VNC_REQ_ERROR, 404);
	else
		done(r, r->path[0] ? VNC_REQ_FILE : VNC_REQ_REDIRECT, 0);
}

/* The value of key in the query of target (after '?'), as a pointer into
 * target and a length; NULL when absent. */
static const char *query_value(const char *target, const char *key, size_t *len)
{
	const char *q = strchr(target, '?');
	size_t kl = strlen(key);

	for (const char *p = q ? q + 1 : NULL; p && *p && *p != '#';) {
		const char *end = p + strcspn(p, "&#");

		if ((size_t)(end - p) > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
			*len = (size_t)(end - p) - kl - 1;
			return p + kl + 1;
		}
		p = *end == '&' ? end + 1 : NULL;
	}
	return NULL;
}

/* Whether the query of target has key=value with exactly this value,
 * compared in constant time. */
static bool query_has(const char *target, const char *key, const char *value)
{
	size_t len;
	const char *v = query_value(target, key, &len);

	return v && secret_equal(v, len, value, strlen(value));
}

int vnc_request_rekey(const struct vnc_http_guard *g, const struct vnc_request *r, const char **why)
{
	if (!g->secret) {
		*why = "this server has no secret to replace";
		return 404;
	}
	if (!r->secret_now ||
	    !secret_equal(r->secret_now, strlen(r->secret_now), g->secret, strlen(g->secret))) {
		*why = "X-Cloche-Secret is not the secret in force";
		return 403;
	}
	if (!r->secret_new || !secret_token_ok(r->secret_new, strlen(r->secret_new))) {
		*why = "X-Cloche-New-Secret must be 16-127 base64url characters";
		return 400;
	}
	return 0;
}

int vnc_request_guard(const struct vnc_http_guard *g, const struct vnc_request *r, bool *control,
		      const char **why)
{
	const char *allowed = g->allowed_hosts;

	*control = true;
	if (r->host && !hostcheck_host_allowed(r->host, allowed)) {
		*why = "Host is not allowed";
		return 403;
	}
	if (r->origin && !hostcheck_origin_allowed(r->origin, allowed)) {
		*why = "Origin is not allowed";
		return 403;
	}
	if (g->secret) {
		size_t len;
		bool view = g->view && query_value(r->target, "view", &len);

		if (!view && !query_value(r->target, "secret", &len)) {
			*why = "the secret is missing";
			return 401;
		}
		/* the view secret opens a viewer that libvncserver keeps view-only:
		 * its VNC password is the view secret too */
		if (view ? !query_has(r->target, "view", g->view)
			 : !query_has(r->target, "secret", g->secret)) {
			*why = view ? "the view secret is wrong" : "the secret is wrong";
			return 403;
		}
		*control = !view;
	}
	return 0;
}

int vnc_request_location(const char *target, char *out, size_t cap)
{
	const char *q = strchr(target, '?'), *secret, *which = "secret";
	size_t n, slen;
	int w;

	w = snprintf(out, cap, "vnc.html?%s", q ? q + 1 : "");
	if (w < 0 || (size_t)w >= cap)
		return -1;
	n = (size_t)w;
	secret = query_value(target, "secret", &slen);
	if (!secret && (secret = query_value(target, "view", &slen)))
		which = "view"; /* a viewer that may only watch */
	/* token characters can go into a URL as they are */
	if (secret && util_token_chars(secret, slen) &&
	    !query_value(target, "path", &(size_t){0})) {
		w = snprintf(out + n, cap - n, "&path=websockify%%3F%s%%3D%.*s&password=%.*s",
			     which, (int)slen, secret, (int)slen, secret);
		if (w < 0 || (size_t)w >= cap - n)
			return -1;
		n += (size_t)w;
	}
	for (size_t i = 0; i < ARRAY_LEN(redirect_defaults); i++) {
		const char *d = redirect_defaults[i];
		char key[32];

		snprintf(key, sizeof(key), "%.*s", (int)(strchr(d, '=') - d), d);
		if (query_value(target, key, &(size_t){0}))
			continue;
		w = snprintf(out + n, cap - n, "%s%s", out[n - 1] == '?' ? "" : "&", d);
		if (w < 0 || (size_t)w >= cap - n)
			return -1;
		n += (size_t)w;
	}
	return strpbrk(out, "\r\n") ? -1 : 0;
}
