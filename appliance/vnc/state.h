/* What cloche-vnc keeps across its own restarts (docs/vnc.md, Restarts).
 *
 * In the sandbox init restarts cloche-vnc whenever it ends, and the agent
 * can end it at will: X lets any client kill any other's connection.  So
 * what people rely on does not live in its memory only: the secret in
 * force after a rekey (a fork child's or a restored sandbox's; the one in
 * the environment is the old one) and the control lease (lease.h) are
 * written to DIR/state.json (mode 0600, in a directory only cloche-vnc
 * may enter; /run is a tmpfs, so a boot starts without one) and taken up
 * again at start.
 *
 * The saved secret is used only when the process was started with the same
 * secret as the one whose rekey it followed (the state's "origin"), so a
 * start with a different secret never runs on a stale one. */
#ifndef CLOCHE_VNC_STATE_H
#define CLOCHE_VNC_STATE_H

#include "lease.h"

#include "common/err.h"

#include <jansson.h>

struct vnc_state;

/* Opens the state in dir (NULL: keep nothing; returns a state that saves
 * nothing).  started: the secret from the environment, or NULL.  Reads
 * what an earlier run left: a missing file is a first start, a bad one is
 * logged and ignored.  NULL with e set when out of memory. */
struct vnc_state *vnc_state_open(const char *dir, const char *started, struct err *e);

/* The secret an earlier run of this start was rekeyed to, or NULL. */
const char *vnc_state_secret(const struct vnc_state *st);

/* The lease an earlier run saved, or NULL. */
const json_t *vnc_state_lease(const struct vnc_state *st);

/* Writes the secret in force and the lease (NULL: none) when either
 * changed since the last write.  0, or -1 with e set. */
int vnc_state_save(struct vnc_state *st, const char *secret, const struct vnc_lease *l,
		   struct err *e);

void vnc_state_free(struct vnc_state *st);

#endif
