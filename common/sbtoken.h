/* Sandbox tokens: a bearer token scoped to one sandbox, checked without a
 * database.
 *
 *	st1.<sandbox id>.<base64url HMAC-SHA256(key, "st1.<sandbox id>")>
 *
 * The portal makes them with its token key; the proxy, holding the same
 * key, verifies one with a single HMAC and learns which sandbox it is for.
 * A token is revoked with its sandbox: ids are never reused, and a released
 * sandbox has no route, so its token opens nothing. */
#ifndef CLOCHE_SBTOKEN_H
#define CLOCHE_SBTOKEN_H
#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>

#define SBTOKEN_KEY_MIN 32 /* bytes of key material at least */
#define SBTOKEN_MAX 96     /* longest token text, with its NUL */

/* Writes the token of sandbox id into out (SBTOKEN_MAX bytes).  0, or -1
 * with e set (an id that does not fit, or a crypto failure). */
int sbtoken_make(const void *key, size_t key_len, const char *id, char *out, size_t len,
		 struct err *e);
/* True when tok is a well-formed token made with key; then its sandbox id
 * is copied into id (idlen bytes).  The MAC is compared in constant time. */
bool sbtoken_verify(const void *key, size_t key_len, const char *tok, char *id, size_t idlen);
/* Reads a token key file: its bytes up to cap, without trailing newlines
 * (so `echo` can write one), at least SBTOKEN_KEY_MIN of them.  With
 * create, a missing file is made first with 48 random bytes in base64url,
 * mode 0600.  Returns the key length, or -1 with e set. */
int sbtoken_key_load(const char *path, bool create, unsigned char *key, size_t cap,
		     struct err *e);

/* Share tokens: a link to one sandbox's desktop for whoever holds it,
 * view-only or with control, until it expires (or the portal revokes the
 * share, which the proxy learns with the sandbox's route):
 *
 *	sh1.<sandbox id>.<share id>.<v|c>.<expires, unix s>.<base64url HMAC-SHA256(key, all before)> */
#define SHTOKEN_MAX 200

struct shtoken {
	char id[48];
	char share[40];
	char mode; /* 'v': view only; 'c': control */
	long long expires;
};

/* Writes t's token into out (SHTOKEN_MAX bytes).  0, or -1 with e set. */
int shtoken_make(const void *key, size_t key_len, const struct shtoken *t, char *out, size_t len,
		 struct err *e);
/* True when tok is a well-formed share token made with key, read into t
 * (its expiry is not checked here). */
bool shtoken_verify(const void *key, size_t key_len, const char *tok, struct shtoken *t);

/* The view-only secret of a sandbox's VNC secret: what a viewer who may
 * only watch is given instead of the secret (cloche-vnc derives the same
 * and makes such a viewer view-only).  32 characters of base64url into out
 * (len >= 33).  0 or -1. */
int sbtoken_view_secret(const char *secret, char *out, size_t len);

#endif
