/* Sandbox tokens (HMAC-SHA256 over the sandbox id); see sbtoken.h. */
#include "common/sbtoken.h"

#include "common/b64.h"
#include "common/digest.h"
#include "common/rnd.h"
#include "common/secret.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "st1."

/* base64url of HMAC-SHA256(key, msg) into mac (44 bytes). */
static int mac_msg(const void *key, size_t key_len, const char *msg, char *mac)
{
	unsigned char md[32];

	if (digest_hmac_sha256(key, key_len, msg, strlen(msg), md) == -1)
		return -1;
	return b64_encode(md, sizeof(md), B64_URL | B64_NOPAD, mac, 44) < 0 ? -1 : 0;
}

/* base64url of the MAC over "st1.<id>" into mac (44 bytes). */
static int mac_of(const void *key, size_t key_len, const char *id, char *mac)
{
	char msg[64];
	int n = snprintf(msg, sizeof(msg), PREFIX "%s", id);

	if (n < 0 || (size_t)n >= sizeof(msg))
		return -1;
	return mac_msg(key, key_len, msg, mac);
}

int sbtoken_make(const void *key, size_t key_len, const char *id, char *out, size_t len,
		 struct err *e)
{
	char mac[48];
	int n;

	if (strlen(id) > 40 || strchr(id, '.'))
		return err_set(e, 0, "sandbox id `%s` cannot be in a token", id);
	if (mac_of(key, key_len, id, mac) == -1)
		return err_set(e, 0, "HMAC failed");
	n = snprintf(out, len, PREFIX "%s.%s", id, mac);
	if (n < 0 || (size_t)n >= len)
		return err_set(e, ERANGE, "token of `%s`", id);
	return 0;
}

bool sbtoken_verify(const void *key, size_t key_len, const char *tok, char *id, size_t idlen)
{
	const char *p, *dot;
	char want[48], sid[48];

	if (strncmp(tok, PREFIX, strlen(PREFIX)) != 0)
		return false;
	p = tok + strlen(PREFIX);
	dot = strchr(p, '.');
	if (!dot || dot == p || (size_t)(dot - p) >= sizeof(sid) || (size_t)(dot - p) >= idlen)
		return false;
	memcpy(sid, p, (size_t)(dot - p));
	sid[dot - p] = '\0';
	if (mac_of(key, key_len, sid, want) == -1)
		return false;
	if (!secret_equal(dot + 1, strlen(dot + 1), want, strlen(want)))
		return false;
	memcpy(id, sid, (size_t)(dot - p) + 1);
	return true;
}

int sbtoken_key_load(const char *path, bool create, unsigned char *key, size_t cap,
		     struct err *e)
{
	AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd == -1 && errno == ENOENT && create) {
		char tok[80];
		AUTOCLOSE int wfd = -1;

		if (rnd_token(48, tok, sizeof(tok), e) == -1)
			return err_wrap(e, "make token key");
		if (util_mkdir_parents(path, 0700) == -1)
			return err_set(e, errno, "mkdir for `%s`", path);
		wfd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (wfd == -1 && errno != EEXIST)
			return err_set(e, errno, "create `%s`", path);
		if (wfd != -1 && (util_write_all(wfd, tok, strlen(tok)) == -1 || fsync(wfd) == -1))
			return err_set(e, errno, "write `%s`", path);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd == -1)
		return err_set(e, errno, "open token key `%s`", path);
	n = read(fd, key, cap);
	if (n == -1)
		return err_set(e, errno, "read `%s`", path);
	while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r'))
		n--;
	if ((size_t)n < SBTOKEN_KEY_MIN)
		return err_set(e, 0, "token key `%s` is shorter than %d bytes", path, SBTOKEN_KEY_MIN);
	return (int)n;
}

/* --- share tokens ------------------------------------------------------------ */

#define SH_PREFIX "sh1."

int shtoken_make(const void *key, size_t key_len, const struct shtoken *t, char *out, size_t len,
		 struct err *e)
{
	char body[SHTOKEN_MAX], mac[48];
	int n;

	if (!util_token_chars(t->id, strlen(t->id)) || strlen(t->id) > 40 || !util_token_chars(t->share, strlen(t->share)) ||
	    strlen(t->share) > 32 || (t->mode != 'v' && t->mode != 'c') || t->expires < 0)
		return err_set(e, 0, "share of `%s` cannot be in a token", t->id);
	n = snprintf(body, sizeof(body), SH_PREFIX "%s.%s.%c.%lld", t->id, t->share, t->mode, t->expires);
	if (n < 0 || (size_t)n >= sizeof(body) || mac_msg(key, key_len, body, mac) == -1)
		return err_set(e, 0, "share token of `%s`", t->id);
	n = snprintf(out, len, "%s.%s", body, mac);
	if (n < 0 || (size_t)n >= len)
		return err_set(e, ERANGE, "share token of `%s`", t->id);
	return 0;
}

bool shtoken_verify(const void *key, size_t key_len, const char *tok, struct shtoken *t)
{
	const char *part[5], *end = strrchr(tok, '.');
	char body[SHTOKEN_MAX], want[48], exp[24];
	size_t blen;

	if (strncmp(tok, SH_PREFIX, strlen(SH_PREFIX)) != 0 || !end)
		return false;
	blen = (size_t)(end - tok);
	if (blen >= sizeof(body))
		return false;
	memcpy(body, tok, blen);
	body[blen] = '\0';
	if (mac_msg(key, key_len, body, want) == -1)
		return false;
	if (!secret_equal(end + 1, strlen(end + 1), want, strlen(want)))
		return false;
	/* sh1 . id . share . mode . expires */
	part[0] = body;
	for (int i = 1; i < 5; i++) {
		char *dot = strchr(part[i - 1], '.');
		if (!dot)
			return false;
		*dot = '\0';
		part[i] = dot + 1;
	}
	if (strchr(part[4], '.') || strlen(part[1]) >= sizeof(t->id) || strlen(part[2]) >= sizeof(t->share) ||
	    strlen(part[3]) != 1 || strlen(part[4]) >= sizeof(exp) || !part[4][0] ||
	    strspn(part[4], "0123456789") != strlen(part[4]))
		return false;
	snprintf(t->id, sizeof(t->id), "%s", part[1]);
	snprintf(t->share, sizeof(t->share), "%s", part[2]);
	t->mode = part[3][0];
	t->expires = strtoll(part[4], NULL, 10);
	return t->mode == 'v' || t->mode == 'c';
}

int sbtoken_view_secret(const char *secret, char *out, size_t len)
{
	char mac[48];

	if (len < 33 || mac_msg(secret, strlen(secret), "cloche-vnc view-only", mac) == -1)
		return -1;
	snprintf(out, len, "%.32s", mac);
	return 0;
}
