/* API keys and the node credential; see pt_auth.h. */
#include "portal/pt_auth.h"

#include "common/rnd.h"
#include "common/secret.h"
#include "common/util.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define KEY_ID_HEX 12

static int sha256_hex(const char *s, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (!EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) || n != 32)
		return -1;
	util_hex(md, n, out);
	return 0;
}

int pt_auth_key_create(struct pt_store *st, const char *name, const char *role, char *out,
		       struct pt_key *k, struct err *e)
{
	struct pt_key key;
	char secret[48];

	if (strcmp(role, "admin") != 0 && strcmp(role, "user") != 0)
		return err_http(e, 400, "`role` must be \"admin\" or \"user\"");
	if (!*name || strlen(name) >= sizeof(key.name))
		return err_http(e, 400, "`name` must be 1 to %zu characters", sizeof(key.name) - 1);
	memset(&key, 0, sizeof(key));
	if (rnd_token(32, secret, sizeof(secret), e) == -1 ||
	    rnd_hex("", KEY_ID_HEX / 2, key.id, sizeof(key.id), e) == -1)
		return err_wrap(e, "new API key");
	snprintf(out, PT_KEY_MAX, "ck_%.12s_%.44s", key.id, secret);
	snprintf(key.name, sizeof(key.name), "%s", name);
	snprintf(key.role, sizeof(key.role), "%s", role);
	if (sha256_hex(out, key.hash) == -1)
		return err_set(e, 0, "SHA-256 failed");
	key.created_at = pt_now_ms();
	explicit_bzero(secret, sizeof(secret));
	if (pt_store_key_insert(st, &key, e) == -1) {
		explicit_bzero(out, PT_KEY_MAX);
		return -1;
	}
	if (k)
		*k = key;
	return 0;
}

int pt_auth_check(struct pt_store *st, const char *authz, struct pt_caller *who, struct err *e)
{
	const char *tok;
	char id[KEY_ID_HEX + 1], hash[65];
	struct pt_key k;
	int rc;

	if (!authz || strncasecmp(authz, "Bearer ", 7) != 0)
		return 0;
	tok = authz + 7;
	if (strncmp(tok, "ck_", 3) != 0 || strlen(tok) < 3 + KEY_ID_HEX + 2 ||
	    tok[3 + KEY_ID_HEX] != '_' || strlen(tok) >= PT_KEY_MAX)
		return 0;
	memcpy(id, tok + 3, KEY_ID_HEX);
	id[KEY_ID_HEX] = '\0';
	for (int i = 0; i < KEY_ID_HEX; i++)
		if (!strchr("0123456789abcdef", id[i]))
			return 0;
	rc = pt_store_key_get(st, id, &k, e);
	if (rc != 1)
		return rc;
	if (sha256_hex(tok, hash) == -1 || !secret_equal(hash, 64, k.hash, 64) || k.revoked_at)
		return 0;
	snprintf(who->key_id, sizeof(who->key_id), "%s", k.id);
	who->admin = strcmp(k.role, "admin") == 0;
	return 1;
}

bool pt_auth_node(const char *authz, const char *cred, size_t cred_len)
{
	const char *tok;

	if (!authz || strncasecmp(authz, "Bearer ", 7) != 0 || cred_len == 0)
		return false;
	tok = authz + 7;
	return secret_equal(tok, strlen(tok), cred, cred_len);
}
