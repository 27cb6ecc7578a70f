/* SHA-256 of files for the node agent (S3 payload hashes, checkpoint
 * checksums), and HMAC-SHA256 (S3 signatures, sandbox tokens, sealed
 * manifests).  Apart from util.c so the programs and fuzz targets that do
 * not link libcrypto need not. */
#include "common/digest.h"
#include "common/util.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <unistd.h>

#define DIGEST_CHUNK (1u << 20)

int digest_sha256_fd(int fd, long long off, long long len, char hex[65], struct err *e)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char *chunk = malloc(DIGEST_CHUNK), out[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	int r = -1;

	if (!md || !chunk || !EVP_DigestInit_ex(md, EVP_sha256(), NULL)) {
		err_set(e, ENOMEM, "hash the file");
		goto out;
	}
	while (len > 0) {
		size_t want = len < DIGEST_CHUNK ? (size_t)len : DIGEST_CHUNK;
		ssize_t got = pread(fd, chunk, want, (off_t)off);

		if (got == -1 && errno == EINTR)
			continue;
		if (got <= 0) {
			err_set(e, got ? errno : 0, "read the file%s",
				got ? "" : ": it is shorter than it was");
			goto out;
		}
		if (!EVP_DigestUpdate(md, chunk, (size_t)got)) {
			err_set(e, 0, "hash the file");
			goto out;
		}
		off += got;
		len -= got;
	}
	if (!EVP_DigestFinal_ex(md, out, &n) || n != 32) {
		err_set(e, 0, "hash the file");
		goto out;
	}
	util_hex(out, 32, hex);
	r = 0;
out:
	EVP_MD_CTX_free(md);
	free(chunk);
	return r;
}

int digest_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
		       unsigned char out[32])
{
	unsigned int n = 0;

	if (!HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &n) || n != 32)
		return -1;
	return 0;
}
