/* Test hooks: named pauses at the points where two requests can meet, so
 * the integration tests can force a race instead of hoping for it.  They
 * are off unless cloche-node is started with `--test-hooks point=ms[,...]`
 * (tests/integration/test-node-races.sh); production never passes it, and
 * an agent that has them on says so in its log.  A pause is a plain sleep
 * of the calling thread that nothing can cut short, as a slow system call
 * (a name lookup, a runsc command) would be. */
#ifndef NA_TEST_H
#define NA_TEST_H

#include "common/err.h"

#include <stdbool.h>

enum na_hook {
	NA_HOOK_DESTROY,      /* "destroy": a destroy, before it looks at the registry */
	NA_HOOK_TEARDOWN,     /* "teardown": after the egress proxy is closed, before runsc kill */
	NA_HOOK_EGRESS_APPLY, /* "egress-apply": an egress change, after its check, before it applies */
	NA_HOOK_RESOLVE,      /* "egress-resolve": a proxy connection, just before its name lookup */
	NA_HOOK_CONNECT,      /* "connect-serve": a port-connect request, after its line was read */
	NA_HOOK_EXIT,         /* "exit": the agent, after it freed everything, before it returns */
	NA_HOOK_CHECKPOINT,   /* "checkpoint": rescue snapshot taken, before runsc checkpoint */
	NA_HOOK_CHECKPOINT_DONE, /* "checkpoint-done": runsc checkpoint done, generation not yet complete */
	NA_HOOK_RESTORE,      /* "restore": rootfs and netns made, before runsc restore */
	NA_HOOK_UPLOAD,       /* "upload": an offload, after the first object, before the manifest */
	NA_HOOK_COUNT
};

/* Parses "point=ms[,point=ms...]" (ms 0..60000) and switches those pauses
 * on.  Call once, before any thread starts.  0, or -1 with e set (unknown
 * point, bad number). */
int na_test_hooks_set(const char *spec, struct err *e);

/* True when at least one pause is on. */
bool na_test_hooks_on(void);

/* Sleeps the pause set for h (logging it first), or returns at once. */
void na_test_pause(enum na_hook h);

#endif
