/* Fresh secrets for a sandbox that woke with another's.
 *
 * A fork child is a restore of its parent's checkpoint: its cloche-vnc and
 * cloche-rec hold the parent's secrets in memory.  Before the child counts
 * as ready, its node gives both new ones (cloche-vnc's POST /cloche/rekey,
 * cloche-rec's POST /rekey, each authenticated with the secret in force),
 * so that a link or view secret given for one child opens neither its
 * parent nor a sibling. */
#ifndef CLOCHE_NA_REKEY_H
#define CLOCHE_NA_REKEY_H
#include "common/err.h"
#include "node-agent/na_node.h"

/* Makes new secrets for s, sends them into the sandbox and, when both
 * servers took them, writes them into s (vnc_secret, desk.rec_secret).  A
 * server that is not there (a template without a desktop or recorder:
 * the connection is refused) keeps nothing to replace.  0, or -1 with e
 * set (s unchanged: the sandbox must not be handed out). */
int na_rekey(struct na_sb *s, struct err *e);

#endif
