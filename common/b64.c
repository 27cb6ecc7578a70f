/* Base64 encoding and strict decoding; see b64.h. */
#include "b64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static const char std_tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t b64_encoded_len(size_t n, unsigned flags)
{
	if (flags & B64_NOPAD)
		return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
	return (n / 3 + (n % 3 != 0)) * 4;
}

size_t b64_decoded_max(size_t len)
{
	return len / 4 * 3 + len % 4 * 3 / 4;
}

ssize_t b64_encode(const void *in, size_t n, unsigned flags, char *out, size_t cap)
{
	const char *tab = flags & B64_URL ? url_tab : std_tab;
	const unsigned char *p = in;
	size_t need = b64_encoded_len(n, flags), o = 0;

	if (cap == 0 || need > cap - 1) {
		errno = ERANGE;
		return -1;
	}
	for (size_t i = 0; i < n; i += 3) {
		size_t left = n - i;
		uint32_t v = (uint32_t)p[i] << 16;

		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		if (left > 1)
			out[o++] = tab[v >> 6 & 63];
		else if (!(flags & B64_NOPAD))
			out[o++] = '=';
		if (left > 2)
			out[o++] = tab[v & 63];
		else if (!(flags & B64_NOPAD))
			out[o++] = '=';
	}
	out[o] = '\0';
	return (ssize_t)o;
}

char *b64_encode_alloc(const void *in, size_t n, unsigned flags, size_t *olen)
{
	size_t need;
	char *out;
	ssize_t r;

	/* 4 characters for every 3 bytes must not wrap around */
	if (n > (SIZE_MAX / 4 - 1) * 3) {
		errno = ENOMEM;
		return NULL;
	}
	need = b64_encoded_len(n, flags) + 1;
	out = malloc(need);
	if (!out)
		return NULL;
	r = b64_encode(in, n, flags, out, need);
	if (olen)
		*olen = (size_t)r;
	return out;
}

/* The 6-bit value of character c in the alphabet of flags, or -1. */
static int sextet(unsigned char c, unsigned flags)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (flags & B64_URL ? '-' : '+'))
		return 62;
	if (c == (flags & B64_URL ? '_' : '/'))
		return 63;
	return -1;
}

ssize_t b64_decode(const char *in, size_t len, unsigned flags, void *out, size_t cap)
{
	unsigned char *o = out;
	uint32_t acc = 0;
	size_t q = 0, pad = 0, n = 0, rest;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		int v;

		if ((flags & B64_SPACE) && (c == ' ' || c == '\t' || c == '\r' || c == '\n'))
			continue;
		if (c == '=') {
			if (flags & B64_NOPAD)
				return B64_EPADDING;
			pad++;
			continue;
		}
		v = sextet(c, flags);
		if (v < 0)
			return B64_EBADCHAR;
		if (pad)
			return B64_EPADDING; /* data after '=' */
		acc = acc << 6 | (uint32_t)v;
		if (++q % 4 == 0) {
			if (cap - n < 3)
				return B64_ERANGE;
			o[n++] = (unsigned char)(acc >> 16);
			o[n++] = (unsigned char)(acc >> 8);
			o[n++] = (unsigned char)acc;
			acc = 0;
		}
	}
	rest = q % 4; /* characters of the last, partial quantum */
	if (rest == 1)
		return B64_ELENGTH;
	if (pad ? rest == 0 || rest + pad != 4
		: rest != 0 && !(flags & (B64_NOPAD | B64_PAD_OPTIONAL)))
		return B64_EPADDING;
	if (rest && cap - n < rest - 1)
		return B64_ERANGE;
	if (rest == 2) {
		o[n++] = (unsigned char)(acc >> 4);
	} else if (rest == 3) {
		o[n++] = (unsigned char)(acc >> 10);
		o[n++] = (unsigned char)(acc >> 2);
	}
	return (ssize_t)n;
}

const char *b64_strerror(ssize_t rc)
{
	switch (rc) {
	case B64_EBADCHAR:
		return "a character outside the base64 alphabet";
	case B64_ELENGTH:
		return "a length that is not whole bytes";
	case B64_EPADDING:
		return "bad '=' padding";
	case B64_ERANGE:
		return "more bytes than the buffer holds";
	default:
		return rc < 0 ? "not base64" : "no error";
	}
}
