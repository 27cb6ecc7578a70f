/* libFuzzer target: cloche-vnc's web port request layer
 * (appliance/vnc/request.c over common/http1_head), fed the input as the
 * bytes a peek at a browser's connection gives.  Checks what http.c relies
 * on: the head ends inside the input and only its bytes change, every
 * string is NUL-terminated inside it, a file path never leaves the web
 * directory, answers that close say so, every shorter read is incomplete,
 * the request layer agrees with the parser on which heads are good, and the
 * guard and the "/" redirect answer within their contracts. */
#include "appliance/vnc/request.h"
#include "common/http1_head.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

/* s is "" or a string that ends inside buf[0..len). */
static void string_in(const char *s, const char *buf, size_t len)
{
	if (!s || !*s)
		return;
	CHECK(s >= buf && s < buf + len);
	CHECK(memchr(s, '\0', (size_t)(buf + len - s)) != NULL);
}

static void path_check(const char *p)
{
	CHECK(p[0] != '/' && p[0] != '.');
	CHECK(!strstr(p, "/.") && !strstr(p, "//"));
}

static void guard_check(const struct vnc_request *r)
{
	static const struct vnc_http_guard guards[] = {
		{NULL, NULL, NULL},
		{"*.cloche.localhost", "S3cret", NULL},
		{NULL, "S3cret", "V1ew"},
	};

	for (size_t i = 0; i < sizeof(guards) / sizeof(guards[0]); i++) {
		const char *why = NULL;
		bool control = false;
		int st = vnc_request_guard(&guards[i], r, &control, &why);

		CHECK(st == 0 || st == 401 || st == 403);
		CHECK(st == 0 || (why && *why));
		if (st == 0 && !guards[i].secret)
			CHECK(control);
		if (st == 0 && guards[i].secret)
			CHECK(strstr(r->target, "secret=") || strstr(r->target, "view="));
	}
}

static void location_check(const char *target)
{
	char out[1024];

	if (vnc_request_location(target, out, sizeof(out)) == -1)
		return;
	CHECK(strlen(out) < sizeof(out) && strncmp(out, "vnc.html?", 9) == 0);
	CHECK(!strpbrk(out, "\r\n"));
	CHECK(strstr(out, "autoconnect="));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;
	struct vnc_request r, r2;
	struct http1_head h;
	enum http1_result parsed;

	if (size > VNC_REQUEST_MAX)
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	vnc_request_read(buf, size, &r);
	CHECK(r.kind >= VNC_REQ_PARTIAL && r.kind <= VNC_REQ_FILE);
	CHECK(r.len <= size);
	/* only the head's own bytes may change (strings cut in place) */
	CHECK(memcmp(buf + r.len, data + r.len, size - r.len) == 0);
	string_in(r.method, buf, r.len);
	string_in(r.target, buf, r.len);
	string_in(r.host, buf, r.len);
	string_in(r.origin, buf, r.len);
	string_in(r.if_modified, buf, r.len);
	switch (r.kind) {
	case VNC_REQ_PARTIAL:
		CHECK(r.len == 0 && size < VNC_REQUEST_MAX && !memchr(data, '\0', size));
		break;
	case VNC_REQ_MALFORMED:
		CHECK(r.status == 400 || r.status == 431);
		CHECK(!r.keep_alive && !r.head_only && !*r.method && !r.host);
		CHECK(r.len > 0 || r.status == 431);
		break;
	case VNC_REQ_ERROR:
		CHECK(r.status == 400 || r.status == 404 || r.status == 405);
		CHECK(r.status == 404 || !r.keep_alive);
		break;
	case VNC_REQ_FILE:
		path_check(r.path);
		CHECK(r.path[0]);
		break;
	default:
		CHECK(r.status == 0);
	}
	if (r.kind != VNC_REQ_PARTIAL && r.len)
		CHECK(r.len >= 4 && memcmp(data + r.len - 4, "\r\n\r\n", 4) == 0);
	/* the layer's good heads are the parser's */
	if (r.len) {
		parsed = http1_request_parse((const char *)data, r.len,
					     HTTP1_ANY_MINOR | HTTP1_ANY_TARGET, &h, NULL);
		if (r.kind == VNC_REQ_MALFORMED)
			CHECK(parsed != HTTP1_OK);
		else
			CHECK(parsed == HTTP1_OK && h.len == r.len && h.method.n == strlen(r.method) &&
			      h.target.n == strlen(r.target));
		/* every shorter read is incomplete */
		if (size < 1024)
			for (size_t i = 0; i < r.len; i++) {
				char *cut = malloc(i ? i : 1);

				if (!cut)
					break;
				memcpy(cut, data, i);
				vnc_request_read(cut, i, &r2);
				CHECK(r2.kind == VNC_REQ_PARTIAL);
				free(cut);
			}
	}
	if (r.kind == VNC_REQ_UPGRADE || r.kind == VNC_REQ_CONTROL)
		guard_check(&r);
	if (r.kind == VNC_REQ_REDIRECT)
		location_check(r.target);
	free(buf);
	return 0;
}
