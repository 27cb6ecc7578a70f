/* Bounded growable buffers; see buf.h.  Every append first checks the limit
 * against what is already held, with arithmetic that cannot overflow, and
 * only then grows the allocation, so a failed append leaves the buffer
 * exactly as it was. */
#include "common/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 64

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

static int buf_too_big(const struct buf *b, struct err *e)
{
	err_http(e, 413, "exceeds the limit of %zu bytes", b->max);
	if (e)
		e->code = E2BIG;
	return -1;
}

/* Makes room for n more bytes plus the NUL.  Doubles the allocation so a
 * series of small appends stays linear, but never allocates past max + 1. */
static int buf_grow(struct buf *b, size_t n, struct err *e)
{
	size_t need, cap;
	char *p;

	if (n > b->max || b->len > b->max - n)
		return buf_too_big(b, e);
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : BUF_MIN_CAP;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->max < SIZE_MAX && cap > b->max + 1)
		cap = b->max + 1;
	p = realloc(b->data, cap);
	if (!p)
		return err_set(e, ENOMEM, "grow buffer to %zu bytes", cap);
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *p, size_t n, struct err *e)
{
	if (buf_grow(b, n, e) == -1)
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_appends(struct buf *b, const char *s, struct err *e)
{
	return buf_append(b, s, strlen(s), e);
}

int buf_appendf(struct buf *b, struct err *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* Measure first: the limit is checked before anything is written. */
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return err_set(e, errno, "format `%s`", fmt);
	if (buf_grow(b, (size_t)n, e) == -1)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b, b->max);
}

char *buf_take(struct buf *b, size_t *len)
{
	char *p = b->data;

	if (!p) {
		p = calloc(1, 1);
		if (!p)
			return NULL;
	}
	if (len)
		*len = b->len;
	buf_init(b, b->max);
	return p;
}

const char *buf_str(const struct buf *b)
{
	return b->data ? b->data : "";
}
