/* Manifests in S3, sealed with a key only the nodes hold (docs/s3.md).
 *
 * The bucket is storage, not a party the nodes trust: whoever can write
 * to it must not be able to make a node `btrfs receive` or restore what
 * they chose, and whoever can read it must not learn a sandbox's secrets.
 * So every manifest a node writes (a generation's and a template's) is
 *   <the manifest's JSON text>\n#cloche-seal v1 hmac-sha256=<64 hex>\n
 * with the HMAC over the JSON text's bytes, and its "secrets" object (the
 * VNC and recorder secrets) travels as "sealed_secrets", AES-256-GCM.  A
 * node checks the seal before it reads anything the manifest names.
 * Both keys derive from one seal key (--s3-seal-key-file), which every
 * node sharing a bucket must have and nothing else should. */
#ifndef CLOCHE_NA_SEAL_H
#define CLOCHE_NA_SEAL_H

#include "common/buf.h"
#include "common/err.h"

#include <jansson.h>
#include <stddef.h>

#define NA_SEAL_KEY_MIN 32 /* characters of the seal key */

struct na_seal {
	unsigned char mac[32]; /* HMAC-SHA256(seal key, "cloche-seal v1 mac") */
	unsigned char enc[32]; /* HMAC-SHA256(seal key, "cloche-seal v1 enc") */
};

/* Derives both keys from the seal key (len >= NA_SEAL_KEY_MIN).  0, or -1
 * with e set. */
int na_seal_init(struct na_seal *k, const char *key, size_t len, struct err *e);

/* Writes m sealed into out: a "secrets" member (an object) is encrypted
 * into "sealed_secrets" first; m itself is not changed.  0, or -1 with e
 * set. */
int na_seal(const struct na_seal *k, const json_t *m, struct buf *out, struct err *e);

/* Checks the seal of data (len bytes, as read from S3) and returns the
 * manifest with its "secrets" decrypted (new reference).  NULL with e set
 * (HTTP 502: no seal, a seal that does not verify, secrets that do not
 * decrypt), before anything else of the text is trusted. */
json_t *na_unseal(const struct na_seal *k, const char *data, size_t len, struct err *e);

#endif
