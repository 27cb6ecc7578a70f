/* URL query parameters; see query.h. */
#include "common/query.h"
#include "common/util.h"

#include <stdio.h>
#include <string.h>

int query_get(const char *q, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);

	if (len)
		out[0] = '\0';
	while (q && *q) {
		const char *end = strchr(q, '&');
		size_t n = end ? (size_t)(end - q) : strlen(q);

		if (n >= klen && strncmp(q, key, klen) == 0 && (n == klen || q[klen] == '=')) {
			const char *v = n == klen ? q + n : q + klen + 1;
			size_t o = 0;

			for (; v < q + n; v++) {
				int c = (unsigned char)*v;

				if (c == '+') {
					c = ' ';
				} else if (c == '%') {
					int h, l;

					if (q + n - v < 3)
						goto bad;
					h = util_hexval(v[1]);
					l = util_hexval(v[2]);
					if (h < 0 || l < 0 || (h == 0 && l == 0))
						goto bad;
					c = h * 16 + l;
					v += 2;
				}
				if (o + 1 >= len)
					goto bad;
				out[o++] = (char)c;
			}
			out[o] = '\0';
			return (int)o;
		}
		q = end ? end + 1 : NULL;
	}
	return QUERY_ABSENT;
bad:
	if (len)
		out[0] = '\0';
	return QUERY_BAD;
}

void query_escape(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c))
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, len - o, "%%%02X", c);
	}
	out[o] = '\0';
}
