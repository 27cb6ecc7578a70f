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

#endif
