/* Sealed manifests; see na_seal.h. */
#include "node-agent/na_seal.h"

#include "common/b64.h"
#include "common/digest.h"
#include "common/json.h"
#include "common/rnd.h"
#include "common/secret.h"
#include "common/util.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAILER "\n#cloche-seal v1 hmac-sha256="
#define AAD "cloche-seal v1 secrets"
#define NONCE 12
#define TAG 16
#define SECRETS_MAX 4096 /* bytes of the secrets' JSON */

int na_seal_init(struct na_seal *k, const char *key, size_t len, struct err *e)
{
	static const char mac[] = "cloche-seal v1 mac", enc[] = "cloche-seal v1 enc";

	if (len < NA_SEAL_KEY_MIN)
		return err_set(e, 0, "the seal key has %zu characters; it needs at least %d", len,
			       NA_SEAL_KEY_MIN);
	if (digest_hmac_sha256(key, len, mac, sizeof(mac) - 1, k->mac) == -1 ||
	    digest_hmac_sha256(key, len, enc, sizeof(enc) - 1, k->enc) == -1)
		return err_set(e, 0, "derive the seal keys");
	return 0;
}

/* AES-256-GCM of in with a random nonce: nonce | ciphertext | tag. */
static int gcm(bool open, const unsigned char key[32], const unsigned char *in, size_t len,
	       unsigned char *out, size_t *olen)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int n = 0, m = 0, ok = 0;

	if (!c)
		return -1;
	if (!open) {
		struct err e = ERR_INIT;

		ok = rnd_bytes(out, NONCE, &e) == 0 &&
		     EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, out) == 1 &&
		     EVP_EncryptUpdate(c, NULL, &n, (const unsigned char *)AAD, sizeof(AAD) - 1) == 1 &&
		     EVP_EncryptUpdate(c, out + NONCE, &n, in, (int)len) == 1 &&
		     EVP_EncryptFinal_ex(c, out + NONCE + n, &m) == 1 &&
		     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG, out + NONCE + n + m) == 1;
		*olen = NONCE + (size_t)n + (size_t)m + TAG;
	} else if (len >= NONCE + TAG) {
		size_t clen = len - NONCE - TAG;

		ok = EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, in) == 1 &&
		     EVP_DecryptUpdate(c, NULL, &n, (const unsigned char *)AAD, sizeof(AAD) - 1) == 1 &&
		     EVP_DecryptUpdate(c, out, &n, in + NONCE, (int)clen) == 1 &&
		     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG, (void *)(in + NONCE + clen)) == 1 &&
		     EVP_DecryptFinal_ex(c, out + n, &m) == 1;
		*olen = (size_t)n + (size_t)m;
	}
	EVP_CIPHER_CTX_free(c);
	return ok ? 0 : -1;
}

int na_seal(const struct na_seal *k, const json_t *m, struct buf *out, struct err *e)
{
	AUTOJSON json_t *copy = json_deep_copy(m);
	json_t *secrets = json_object_get(copy, "secrets");
	unsigned char mac[32];
	char hex[65];
	size_t start = out->len;

	if (!copy)
		return err_set(e, ENOMEM, "seal");
	if (secrets) {
		AUTOFREE char *plain = json_dumps(secrets, JSON_COMPACT);
		unsigned char sealed[NONCE + SECRETS_MAX + TAG];
		size_t slen = 0, plen = plain ? strlen(plain) : 0;
		AUTOFREE char *b64 = NULL;

		if (!plain || !json_is_object(secrets) || plen > SECRETS_MAX ||
		    gcm(false, k->enc, (const unsigned char *)plain, plen, sealed, &slen) == -1 ||
		    !(b64 = b64_encode_alloc(sealed, slen, 0, NULL))) {
			if (plain)
				explicit_bzero(plain, plen);
			return err_set(e, 0, "seal the manifest's secrets");
		}
		explicit_bzero(plain, plen);
		json_object_del(copy, "secrets");
		json_object_set_new(copy, "sealed_secrets", json_string(b64));
	}
	if (cj_dump_buf(copy, out, e) == -1)
		return -1;
	if (digest_hmac_sha256(k->mac, sizeof(k->mac), out->data + start, out->len - start, mac) == -1)
		return err_set(e, 0, "seal the manifest");
	util_hex(mac, sizeof(mac), hex);
	return buf_appendf(out, e, "%s%s\n", TRAILER, hex);
}

/* The last occurrence of the trailer in data, or NULL. */
static const char *find_trailer(const char *data, size_t len)
{
	const char *found = NULL, *p = data;
	size_t tl = sizeof(TRAILER) - 1;

	while ((p = memmem(p, len - (size_t)(p - data), TRAILER, tl)) != NULL) {
		found = p;
		p += tl;
	}
	return found;
}

json_t *na_unseal(const struct na_seal *k, const char *data, size_t len, struct err *e)
{
	const char *t = find_trailer(data, len);
	const char *hex = t ? t + sizeof(TRAILER) - 1 : NULL;
	unsigned char want[32], got[32];
	json_t *m, *sealed;

	if (!t || (size_t)(data + len - hex) < 64 ||
	    (data + len - hex > 64 && !(data + len - hex == 65 && hex[64] == '\n'))) {
		err_http(e, 502, "the manifest in S3 has no seal: it was not written by a node of this "
				 "cluster; not restored");
		return NULL;
	}
	for (int i = 0; i < 32; i++) {
		int hi = util_hexval(hex[2 * i]), lo = util_hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			err_http(e, 502, "the manifest's seal is malformed; not restored");
			return NULL;
		}
		want[i] = (unsigned char)(hi << 4 | lo);
	}
	if (digest_hmac_sha256(k->mac, sizeof(k->mac), data, (size_t)(t - data), got) == -1 ||
	    !secret_equal(got, sizeof(got), want, sizeof(want))) {
		err_http(e, 502, "the manifest in S3 does not match its seal: it was changed, or sealed "
				 "with another key (--s3-seal-key-file); not restored");
		return NULL;
	}
	m = cj_parse(data, (size_t)(t - data), (size_t)(t - data) + 1, CJ_MAX_DEPTH, e);
	if (!m) {
		err_http(e, 502, "the sealed manifest is not JSON");
		return NULL;
	}
	sealed = json_object_get(m, "sealed_secrets");
	if (sealed) {
		const char *s = json_string_value(sealed);
		unsigned char raw[NONCE + SECRETS_MAX + TAG], plain[SECRETS_MAX + 1];
		ssize_t rlen = s ? b64_decode(s, strlen(s), 0, raw, sizeof(raw)) : -1;
		size_t plen = 0;
		json_t *secrets = NULL;

		if (rlen < 0 || gcm(true, k->enc, raw, (size_t)rlen, plain, &plen) == -1 ||
		    !(secrets = cj_parse((char *)plain, plen, SECRETS_MAX, 4, NULL)) ||
		    !json_is_object(secrets)) {
			json_decref(secrets);
			json_decref(m);
			explicit_bzero(plain, sizeof(plain));
			err_http(e, 502, "the manifest's secrets do not open with this node's seal key");
			return NULL;
		}
		explicit_bzero(plain, sizeof(plain));
		json_object_del(m, "sealed_secrets");
		json_object_set_new(m, "secrets", secrets);
	}
	return m;
}
