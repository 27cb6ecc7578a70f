/* UTF-8 and Latin-1 text; see utf8.h. */
#include "utf8.h"

#include <stdlib.h>

int32_t utf8_next(const char **p, const char *end)
{
	const unsigned char *s = (const unsigned char *)*p;
	uint32_t cp, min;
	int n;

	if ((const char *)s >= end)
		return -1;
	if (s[0] < 0x80) {
		*p += 1;
		return s[0];
	}
	if ((s[0] & 0xe0) == 0xc0)
		n = 1, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 2, cp = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 3, cp = s[0] & 0x07, min = 0x10000;
	else
		return -1;
	if (end - (const char *)s <= n)
		return -1;
	for (int i = 1; i <= n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*p += n + 1;
	return (int32_t)cp;
}

/* Writes cp as UTF-8 at q; returns the byte after it. */
static char *put_utf8(char *q, int32_t cp)
{
	if (cp < 0x80) {
		*q++ = (char)cp;
	} else if (cp < 0x800) {
		*q++ = (char)(0xc0 | cp >> 6);
		*q++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*q++ = (char)(0xe0 | cp >> 12);
		*q++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*q++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*q++ = (char)(0xf0 | cp >> 18);
		*q++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*q++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*q++ = (char)(0x80 | (cp & 0x3f));
	}
	return q;
}

int utf8_clean(const char *s, size_t n, bool latin1, char **out, size_t *len)
{
	const char *p = s, *end = s + n;
	/* At most 3 bytes out per byte in: U+FFFD for one bad byte; a 4-byte
	 * form only comes from 4 bytes of input. */
	char *o = malloc(3 * n + 1), *q = o;

	if (!o)
		return -1;
	while (p < end) {
		int32_t cp;

		if (latin1) {
			cp = (unsigned char)*p++;
		} else {
			cp = utf8_next(&p, end);
			if (cp < 0) {
				p++;
				cp = 0xfffd;
			}
		}
		q = put_utf8(q, cp);
	}
	*q = '\0';
	*out = o;
	*len = (size_t)(q - o);
	return 0;
}

int utf8_to_latin1(const char *s, size_t n, char **out, size_t *len)
{
	const char *p = s, *end = s + n;
	char *o = malloc(n + 1), *q = o;

	if (!o)
		return -1;
	while (p < end) {
		int32_t cp = utf8_next(&p, end);

		if (cp < 0)
			p++;
		*q++ = cp >= 0 && cp < 0x100 ? (char)cp : '?';
	}
	*q = '\0';
	*out = o;
	*len = (size_t)(q - o);
	return 0;
}

size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	/* back over continuation bytes to the start of the character cut */
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return max;
}
