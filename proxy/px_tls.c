/* TLS for the proxy's clients; see px_tls.h. */
#include "proxy/px_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

struct px_tls {
	SSL_CTX *ctx;
};

static int alpn(SSL *s, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
		unsigned int inlen, void *arg)
{
	static const unsigned char h11[] = "\x08http/1.1";

	(void)s;
	(void)arg;
	if (SSL_select_next_proto((unsigned char **)out, outlen, h11, sizeof(h11) - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL; /* h2 only: we speak HTTP/1.1 */
	return SSL_TLSEXT_ERR_OK;
}

static int tls_err(struct err *e, const char *what)
{
	char b[160];
	unsigned long code = ERR_get_error();

	ERR_error_string_n(code, b, sizeof(b));
	ERR_clear_error();
	return err_set(e, 0, "%s: %s", what, code ? b : "failed");
}

struct px_tls *px_tls_new(const char *cert_file, const char *key_file, struct err *e)
{
	struct px_tls *t = calloc(1, sizeof(*t));

	if (!t) {
		err_set(e, 0, "out of memory");
		return NULL;
	}
	t->ctx = SSL_CTX_new(TLS_server_method());
	if (!t->ctx) {
		tls_err(e, "TLS context");
		goto fail;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
					 SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_alpn_select_cb(t->ctx, alpn, NULL);
	if (SSL_CTX_use_certificate_chain_file(t->ctx, cert_file) != 1) {
		tls_err(e, "--tls-cert");
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM) != 1) {
		tls_err(e, "--tls-key");
		goto fail;
	}
	if (SSL_CTX_check_private_key(t->ctx) != 1) {
		tls_err(e, "the key does not match the certificate");
		goto fail;
	}
	return t;
fail:
	px_tls_free(t);
	return NULL;
}

void px_tls_free(struct px_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

px_ssl *px_tls_accept(struct px_tls *t, int fd)
{
	SSL *s = SSL_new(t->ctx);

	if (s && SSL_set_fd(s, fd) != 1) {
		SSL_free(s);
		return NULL;
	}
	if (s)
		SSL_set_accept_state(s);
	return s;
}

/* The outcome of a call that returned r <= 0. */
static ssize_t outcome(SSL *s, int r, bool *want_other, bool reading)
{
	switch (SSL_get_error(s, r)) {
	case SSL_ERROR_WANT_READ:
		*want_other = !reading;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		*want_other = reading;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		return r == 0 ? 0 : -2;
	default:
		ERR_clear_error();
		return -2;
	}
}

ssize_t px_tls_read(px_ssl *s, void *buf, size_t n, bool *want_write)
{
	int r = SSL_read(s, buf, n > INT32_MAX ? INT32_MAX : (int)n);

	*want_write = false;
	return r > 0 ? r : outcome(s, r, want_write, true);
}

ssize_t px_tls_write(px_ssl *s, const void *buf, size_t n, bool *want_read)
{
	int r = SSL_write(s, buf, n > INT32_MAX ? INT32_MAX : (int)n);

	*want_read = false;
	return r > 0 ? r : outcome(s, r, want_read, false);
}

void px_tls_shutdown(px_ssl *s)
{
	if (SSL_is_init_finished(s))
		(void)SSL_shutdown(s);
	ERR_clear_error();
}

void px_tls_close(px_ssl *s)
{
	SSL_free(s);
	ERR_clear_error();
}
