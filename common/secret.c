/* Constant-time secret checks and credential files; see secret.h. */
#include "secret.h"

#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

bool secret_token_ok(const char *s, size_t n)
{
	return s && n >= SECRET_TOKEN_MIN && n <= SECRET_TOKEN_MAX && util_token_chars(s, n);
}

bool secret_equal(const void *given, size_t given_len, const void *secret, size_t secret_len)
{
	const volatile unsigned char *g = given, *s = secret;
	volatile unsigned char diff = 0;
	size_t j = 0;

	if (secret_len == 0) /* nothing to read; whether it is empty is no secret */
		return given_len == 0;
	/* Walk what was given, against the secret over and over, so the loop
	 * runs as long whatever the secret's length; the index wraps by a mask,
	 * not a branch. */
	for (size_t i = 0; i < given_len; i++) {
		diff |= (unsigned char)(g[i] ^ s[j]);
		j = (j + 1) & ((size_t)0 - (size_t)(j + 1 < secret_len));
	}
	return (diff | (given_len ^ secret_len)) == 0;
}

/* read(2) into buf until n bytes or end of file, retrying EINTR.  The
 * count, or -1 with errno set. */
static ssize_t read_up_to(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);

		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

int secret_read_file(const char *path, char *out, size_t cap, size_t min, struct err *e)
{
	AUTOCLOSE int fd = -1;
	ssize_t n;
	size_t len;
	char more;

	if (cap == 0)
		return err_set(e, ERANGE, "credential file `%s`", path);
	out[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return err_set(e, errno, "open credential file `%s`", path);
	n = read_up_to(fd, out, cap - 1);
	if (n == -1)
		return err_set(e, errno, "read credential file `%s`", path);
	out[n] = '\0';
	len = strcspn(out, "\r\n");
	/* a line that filled the buffer must end right after it */
	if (len == (size_t)n && len == cap - 1) {
		ssize_t r = read_up_to(fd, &more, 1);

		if (r == -1) {
			explicit_bzero(out, cap);
			return err_set(e, errno, "read credential file `%s`", path);
		}
		if (r == 1 && more != '\n' && more != '\r') {
			explicit_bzero(out, cap);
			return err_set(e, 0, "credential file `%s` holds a line longer than %zu characters",
				       path, cap - 1);
		}
	}
	while (len > 0 && (out[len - 1] == ' ' || out[len - 1] == '\t'))
		len--;
	explicit_bzero(out + len, (size_t)n - len);
	out[len] = '\0';
	if (len < min) {
		explicit_bzero(out, cap);
		out[0] = '\0';
		return err_set(e, 0, "credential file `%s` must hold a token of at least %zu characters",
			       path, min);
	}
	return (int)len;
}
