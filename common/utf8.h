/* UTF-8 and Latin-1 text: decoding one character, and the conversions
 * that X selections and RFB cut text need (both carry either UTF-8 or
 * Latin-1, and a peer may send bytes that are neither). */
#ifndef CLOCHE_UTF8_H
#define CLOCHE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes the character at *p (before end) and advances *p past it.
 * Returns the code point, or -1 for an invalid, overlong, truncated or
 * surrogate sequence (then *p is unchanged). */
int32_t utf8_next(const char **p, const char *end);

/* n bytes of UTF-8 (invalid bytes become U+FFFD) or, with latin1, of
 * Latin-1, as valid UTF-8 into *out (malloc'ed, NUL-terminated; the caller
 * frees it) of *len bytes.  A NUL byte passes as a byte.  0, or -1 when out
 * of memory. */
int utf8_clean(const char *s, size_t n, bool latin1, char **out, size_t *len);

/* n bytes of UTF-8 as Latin-1 into *out (malloc'ed, NUL-terminated) of
 * *len bytes: characters above U+00FF and invalid bytes become `?`.  0, or
 * -1 when out of memory. */
int utf8_to_latin1(const char *s, size_t n, char **out, size_t *len);

/* The length of the longest start of s (n bytes) that is at most max bytes
 * and does not end inside a character. */
size_t utf8_cut(const char *s, size_t n, size_t max);

#endif
