/* Who is calling: API keys for the REST API and the node credential.
 *
 * An API key is `ck_<id>_<secret>`: a 12-hex-digit id that names it in
 * lists and logs, and 32 random bytes in base64url.  The store keeps the
 * SHA-256 of the whole key, never the key; the key is shown once when it
 * is made.  Comparisons are constant-time. */
#ifndef CLOCHE_PT_AUTH_H
#define CLOCHE_PT_AUTH_H
#include "common/err.h"
#include "portal/pt_store.h"

#include <stdbool.h>
#include <stddef.h>

#define PT_KEY_MAX 80 /* key text with its NUL */

struct pt_caller {
	char key_id[32];
	bool admin;
};

/* Makes a key: stores its hash under name and role ("admin" or "user") and
 * writes the key text to out (PT_KEY_MAX bytes).  k (may be NULL) gets the
 * stored row.  0, or -1 with e set (400 for a bad role or name). */
int pt_auth_key_create(struct pt_store *st, const char *name, const char *role, char *out,
		       struct pt_key *k, struct err *e);
/* Checks an Authorization header value ("Bearer ck_...").  1 with *who
 * filled for a valid, unrevoked key; 0 when absent, malformed, unknown or
 * revoked; -1 with e on a store failure. */
int pt_auth_check(struct pt_store *st, const char *authz, struct pt_caller *who, struct err *e);
/* Constant-time: authz is "Bearer <cred>" for the node credential cred. */
bool pt_auth_node(const char *authz, const char *cred, size_t cred_len);

#endif
