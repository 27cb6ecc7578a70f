/* Output caps and UTF-8 cleaning; see cap.h. */
#include "mcp/lib/cap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mcp_cap_init(struct mcp_cap *c, size_t limit)
{
	memset(c, 0, sizeof(*c));
	c->limit = limit;
}

int mcp_cap_add(struct mcp_cap *c, const void *p, size_t n)
{
	size_t room = c->limit - c->len, take = n < room ? n : room;

	if (take) {
		if (!c->data) {
			c->data = malloc(c->limit + 1);
			if (!c->data) {
				c->dropped += n;
				return -1;
			}
		}
		memcpy(c->data + c->len, p, take);
		c->len += take;
	}
	c->dropped += n - take;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

char *mcp_utf8_clean(const char *p, size_t n, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)p;
	char *out = malloc(n * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq(s + i, n - i);
		if (k) {
			memcpy(o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	if (out_len)
		*out_len = (size_t)(o - out);
	return out;
}

int mcp_looks_binary(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t bad = 0;

	for (size_t i = 0; i < n;) {
		size_t k;
		if (!s[i])
			return 1;
		k = utf8_seq(s + i, n - i);
		if (!k) {
			/* A sequence cut by the end of a read window is not binary. */
			if (n - i < 4 && s[i] >= 0xc2)
				break;
			bad++;
			k = 1;
		}
		i += k;
	}
	return bad > n / 100;
}

char *mcp_cap_text(const struct mcp_cap *c, size_t *len)
{
	size_t n, at;
	char *clean = mcp_utf8_clean(c->data ? c->data : "", c->len, &n), *out;
	char marker[80];
	int m = 0;

	if (!clean)
		return NULL;
	if (!c->dropped) {
		if (len)
			*len = n;
		return clean;
	}
	m = snprintf(marker, sizeof(marker), "\n[... truncated: %llu more bytes ...]", c->dropped);
	out = realloc(clean, n + (size_t)m + 1);
	if (!out) {
		free(clean);
		return NULL;
	}
	at = n;
	memcpy(out + at, marker, (size_t)m + 1);
	if (len)
		*len = at + (size_t)m;
	return out;
}

void mcp_cap_free(struct mcp_cap *c)
{
	free(c->data);
	c->data = NULL;
	c->len = 0;
}
