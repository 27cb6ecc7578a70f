/* Error values that carry a sentence of context up the stack.
 *
 * Every fallible function takes a `struct err *` out-parameter and returns -1
 * (or NULL) on failure after filling it.  Error paths never allocate: the
 * message lives in a fixed buffer, and err_wrap() prefixes context in place so
 * a failure reads like "boot sandbox sb-2: mkdir `sb-2`: No space left on
 * device" by the time it reaches a user. */
#ifndef CLOCHE_ERR_H
#define CLOCHE_ERR_H

#include <stddef.h>

struct err {
	int code;        /* errno, or 0 when the failure is not a system error */
	int http_status; /* hint for the HTTP layer; 0 means 500 */
	char msg[256];
};

#define ERR_INIT {0, 0, {0}}

/* Sets e (may be NULL) from a printf format; when code is an errno value
 * its strerror text is appended.  Preserves errno.  Always returns -1. */
int err_set(struct err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like err_set() and also sets the HTTP status hint.  Returns -1. */
int err_http(struct err *e, int http_status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the current message with formatted context and ": ".
 * Truncates rather than fails.  Preserves errno.  Always returns -1. */
int err_wrap(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Clears e. */
void err_clear(struct err *e);

#endif
