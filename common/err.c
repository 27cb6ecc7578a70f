/* Fixed-size error values; see err.h.  Nothing here allocates, so error
 * paths work when memory has run out. */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void err_vfill(struct err *e, int code, const char *fmt, va_list ap)
{
	int n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);

	if (n < 0) {
		e->msg[0] = '\0';
		n = 0;
	}
	if (code > 0 && (size_t)n < sizeof(e->msg))
		snprintf(e->msg + n, sizeof(e->msg) - (size_t)n, ": %s", strerror(code));
	e->code = code;
}

int err_set(struct err *e, int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		err_vfill(e, code, fmt, ap);
		va_end(ap);
		e->http_status = 0;
	}
	errno = saved;
	return -1;
}

int err_http(struct err *e, int http_status, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		err_vfill(e, 0, fmt, ap);
		va_end(ap);
		e->http_status = http_status;
	}
	errno = saved;
	return -1;
}

static size_t err_append(char *dst, size_t at, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n > cap - at)
		n = cap - at;
	memcpy(dst + at, src, n);
	return at + n;
}

int err_wrap(struct err *e, const char *fmt, ...)
{
	int saved = errno;
	char prefix[sizeof(e->msg)];
	char old[sizeof(e->msg)];
	va_list ap;
	int n;

	if (!e)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	if (n < 0)
		prefix[0] = '\0';
	memcpy(old, e->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	/* Assemble by hand: prefix, ": ", old message, truncated to fit. */
	size_t cap = sizeof(e->msg) - 1, at = 0;
	at = err_append(e->msg, at, cap, prefix);
	if (old[0]) {
		at = err_append(e->msg, at, cap, ": ");
		at = err_append(e->msg, at, cap, old);
	}
	e->msg[at] = '\0';
	errno = saved;
	return -1;
}

void err_clear(struct err *e)
{
	if (e) {
		e->code = 0;
		e->http_status = 0;
		e->msg[0] = '\0';
	}
}
