/* Reading one parameter of a URL query string ("a=1&b=x%20y"). */
#ifndef CLOCHE_QUERY_H
#define CLOCHE_QUERY_H
#include <stddef.h>

#define QUERY_ABSENT (-1)
#define QUERY_BAD (-2) /* present but too long for out, or bad %-escapes */

/* Copies the first value of key in q (without '?') into out, decoding
 * %XX and '+'.  Returns its length, QUERY_ABSENT or QUERY_BAD (out is ""
 * then).  A key without '=' has the value "". */
int query_get(const char *q, const char *key, char *out, size_t len);

/* Writes s into out (len bytes) with every byte but RFC 3986's unreserved
 * characters (A-Z a-z 0-9 - . _ ~) as %XX, for a query value or a path
 * segment.  Stops early rather than overflow: out needs 3 * strlen(s) + 4
 * bytes for the whole of s. */
void query_escape(const char *s, char *out, size_t len);

#endif
