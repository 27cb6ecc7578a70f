/* Base64 (RFC 4648): the standard alphabet (section 4) and the URL-safe one
 * (section 5), padded or not, for every program that encodes or decodes it:
 * MCP image results and binary files, sandbox and share tokens, random
 * tokens, thumbnails, Chromium's screenshots and PDFs.  Decoding is strict:
 * a character outside the alphabet, a length no encoder makes, or padding
 * that is missing, misplaced or unwanted is an error the caller can name;
 * only ASCII whitespace may be allowed on request.  Nothing here allocates
 * except b64_encode_alloc(). */
#ifndef CLOCHE_B64_H
#define CLOCHE_B64_H

#include <stddef.h>
#include <sys/types.h>

/* Flags; 0 is the standard alphabet with '=' padding, required on decode. */
#define B64_URL 0x1u          /* '-' and '_' in place of '+' and '/' */
#define B64_NOPAD 0x2u        /* encode without '='; decode refuses any '=' */
#define B64_PAD_OPTIONAL 0x4u /* decode: right padding, or none at all */
#define B64_SPACE 0x8u        /* decode: skip ' ', '\t', '\r' and '\n' anywhere */

/* b64_decode()'s failures (all negative, so apart from any length). */
enum b64_error {
	B64_EBADCHAR = -1, /* a character outside the alphabet */
	B64_ELENGTH = -2,  /* one character too many or too few for whole bytes */
	B64_EPADDING = -3, /* '=' missing, misplaced, too many, or not allowed */
	B64_ERANGE = -4,   /* the output buffer is too small */
};

/* The number of characters (without a NUL) that n bytes encode to with
 * flags (B64_NOPAD and B64_URL matter; the rest are ignored). */
size_t b64_encoded_len(size_t n, unsigned flags);

/* The most bytes len characters of base64 can decode to, padded or not:
 * floor(len * 3 / 4).  A buffer of this size is always big enough. */
size_t b64_decoded_max(size_t len);

/* Encodes the n bytes at in into out as text with a NUL; out holds cap
 * bytes, at least b64_encoded_len(n, flags) + 1.  Returns the text's length,
 * or -1 with errno ERANGE (out untouched) when it does not fit. */
ssize_t b64_encode(const void *in, size_t n, unsigned flags, char *out, size_t cap);

/* Encodes the n bytes at in into a NUL-terminated string the caller frees;
 * its length into *olen when olen is not NULL.  NULL with errno ENOMEM. */
char *b64_encode_alloc(const void *in, size_t n, unsigned flags, size_t *olen);

/* Decodes the len characters at in (no NUL needed) into out (cap bytes;
 * b64_decoded_max(len) is always enough).  The bits past the last whole
 * byte are ignored, whatever their value (RFC 4648 3.5 lets a decoder
 * accept them).  Returns the number of bytes decoded, or a negative
 * enum b64_error; out's contents are then unspecified. */
ssize_t b64_decode(const char *in, size_t len, unsigned flags, void *out, size_t cap);

/* A short English phrase for a b64_decode() failure ("a character outside
 * the alphabet"), for error messages; static storage. */
const char *b64_strerror(ssize_t rc);

#endif
