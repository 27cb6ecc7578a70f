/* Random bytes, hex ids and URL tokens from getrandom(2); see rnd.h. */
#include "rnd.h"

#include "common/b64.h"
#include "common/util.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#define RND_MAX 64 /* bytes one id or token may take */

int rnd_bytes(void *out, size_t n, struct err *e)
{
	unsigned char *p = out;
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);

		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return err_set(e, errno, "getrandom");
		if (r == 0) /* not for a blocking call; never spin on it */
			return err_set(e, EIO, "getrandom");
		got += (size_t)r;
	}
	return 0;
}

int rnd_hex(const char *prefix, size_t nbytes, char *out, size_t len, struct err *e)
{
	unsigned char r[RND_MAX];
	size_t pl = strlen(prefix);

	if (nbytes > sizeof(r) || len < pl + 2 * nbytes + 1)
		return err_set(e, ERANGE, "random id of %zu bytes", nbytes);
	if (rnd_bytes(r, nbytes, e) == -1) {
		explicit_bzero(r, sizeof(r));
		return err_wrap(e, "random id");
	}
	memcpy(out, prefix, pl);
	util_hex(r, nbytes, out + pl);
	explicit_bzero(r, sizeof(r));
	return 0;
}

int rnd_token(size_t nbytes, char *out, size_t len, struct err *e)
{
	unsigned char r[RND_MAX];
	ssize_t n;

	if (nbytes > sizeof(r) || len < b64_encoded_len(nbytes, B64_URL | B64_NOPAD) + 1)
		return err_set(e, ERANGE, "random token of %zu bytes", nbytes);
	if (rnd_bytes(r, nbytes, e) == -1) {
		explicit_bzero(r, sizeof(r));
		return err_wrap(e, "random token");
	}
	n = b64_encode(r, nbytes, B64_URL | B64_NOPAD, out, len);
	explicit_bzero(r, sizeof(r));
	return n < 0 ? err_set(e, errno, "random token") : 0;
}
