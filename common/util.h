/* Small ownership helpers used everywhere: cleanup-attribute locals that
 * close or free themselves, "take" helpers that hand ownership out of such a
 * local, and EINTR-safe I/O. */
#ifndef CLOCHE_UTIL_H
#define CLOCHE_UTIL_H

#include "common/err.h"
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/types.h>

void util_closep(int *fd);
void util_freep(void *pp);

#define AUTOCLOSE __attribute__((cleanup(util_closep)))
#define AUTOFREE __attribute__((cleanup(util_freep)))
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Returns *fd and sets it to -1, so a cleanup cannot close what was handed out. */
static inline int take_fd(int *fd)
{
	int r = *fd;
	*fd = -1;
	return r;
}

/* Returns *p and sets it to NULL. */
static inline void *take_ptr(void *pp)
{
	void **p = (void **)pp;
	void *r = *p;
	*p = NULL;
	return r;
}

/* The value of hex digit c (either case), or -1. */
static inline int util_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Writes the n bytes at p as 2n lower-case hex digits and a NUL into out
 * (2n + 1 bytes). */
void util_hex(const void *p, size_t n, char *out);

/* write(2) all of buf, retrying on EINTR and short writes.  0 or -1/errno. */
int util_write_all(int fd, const void *buf, size_t len);


/* mkdir -p of the directories above path's last component (each with
 * mode; existing ones are fine).  0, or -1 with errno set. */
int util_mkdir_parents(const char *path, mode_t mode);

/* Monotonic clock in milliseconds. */
uint64_t util_now_ms(void);

/* Wall clock (CLOCK_REALTIME) in milliseconds since the epoch. */
int64_t util_wall_ms(void);

/* True when s[0..n) is not empty and all letters, digits, '-' and '_' (the
 * base64url of rnd_token: safe in a URL and between dots). */
bool util_token_chars(const char *s, size_t n);

/* Wall clock formatted as RFC 3339 UTC with milliseconds into out (>= 32 bytes). */
void util_rfc3339(char *out, size_t len);

/* RFC 3339 UTC time to the second ("2026-11-23T23:34:17Z", 21 bytes with
 * the NUL) of wall-clock milliseconds wall_ms. */
void util_rfc3339_s(int64_t wall_ms, char *out, size_t len);

#endif
