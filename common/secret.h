/* Shared secrets (node credentials, recorder and VNC secrets, API key
 * hashes, token MACs): checking one a peer presents without telling it
 * through timing how much of its guess was right, and reading one from the
 * credential file an operator wrote.  The only place that compares secrets,
 * so no program needs CRYPTO_memcmp or a loop of its own. */
#ifndef CLOCHE_SECRET_H
#define CLOCHE_SECRET_H

#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>

/* True when the given_len bytes at given (what a peer presented) are the
 * secret_len bytes at secret.  The time taken depends on given_len only
 * (and on whether the secret is empty): not on where the two differ, nor on
 * secret_len, so a length that differs shows only in the answer.  Two empty
 * strings are equal; a caller for whom an empty secret means "refuse
 * everything" says so itself. */
bool secret_equal(const void *given, size_t given_len, const void *secret, size_t secret_len);

#define SECRET_TOKEN_MIN 16  /* characters of a sandbox secret, at least */
#define SECRET_TOKEN_MAX 127 /* ... and at most */

/* True when s[0..n) may be a sandbox secret that a node hands a server in
 * the sandbox (cloche-vnc's and cloche-rec's rekey): SECRET_TOKEN_MIN to
 * SECRET_TOKEN_MAX base64url characters (util_token_chars). */
bool secret_token_ok(const char *s, size_t n);

/* Reads a credential from the first line of file path into out (cap bytes,
 * NUL-terminated): the line without its end ("\n" or "\r\n") and without
 * trailing spaces or tabs, so `echo` and editors can write one.  It must
 * hold at least min characters and fit in cap - 1.  The file's mode is not
 * checked (the operator's umask decides; deploy/install.sh makes it 0600),
 * and a link is followed (secret mounts are links).  Returns the length,
 * or -1 with e set: e->code is the errno when the file could not be opened
 * or read, 0 when its line is too short or too long. */
int secret_read_file(const char *path, char *out, size_t cap, size_t min, struct err *e);

#endif
