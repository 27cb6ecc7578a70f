/* runsc for networked sandboxes: the only file that builds runsc command
 * lines.  Every command runs inside the wrapper this runsc needs on new
 * kernels (FACTS.md): the child enters S-<id>, takes a private mount
 * namespace and hides /proc/sys/net/core under a tmpfs, then execs
 * `runsc --root ROOT --network=sandbox ...`.  Thread-safe. */
#ifndef NA_RUNSC_H
#define NA_RUNSC_H

#include "common/err.h"

/* Starts container id detached from bundle dir; runsc's output is appended to
 * log_path.  0 or -1 with e set. */
int na_runsc_run(const char *root, const char *id, const char *bundle, const char *log_path,
		 struct err *e);

/* Checkpoints container id into image_dir (which must exist and be
 * empty); the container is stopped afterwards, successful or not: a refused
 * checkpoint kills the sandbox in this runsc (docs/hibernation.md), which is
 * why callers gate it.  runsc's output is appended to log_path.  0 or -1. */
int na_runsc_checkpoint(const char *root, const char *id, const char *image_dir,
			const char *log_path, struct err *e);

/* Restores container id from image_dir with the spec in bundle (restore
 * creates the container itself).  0 or -1. */
int na_runsc_restore(const char *root, const char *id, const char *bundle, const char *image_dir,
		     const char *log_path, struct err *e);

/* Writes the container's status ("running", "stopped", "created", ...) into
 * out, or "absent" when runsc does not know it or S-<id> is gone.  Never
 * fails. */
void na_runsc_state(const char *root, const char *id, char *out, size_t len);

/* Sends signal sig (e.g. "TERM") to the container's init.  0 or -1. */
int na_runsc_kill(const char *root, const char *id, const char *sig, struct err *e);

/* `runsc delete -force`, inside the wrapper when S-<id> exists and plainly
 * otherwise (a container whose netns is already gone).  0 or -1. */
int na_runsc_delete(const char *root, const char *id, struct err *e);

/* The host pid of container id's sandbox process (the sentry), from runsc's
 * state file under root, or -1.  A cheap liveness handle: kill(pid, 0). */
int na_runsc_sandbox_pid(const char *root, const char *id);

/* Calls fn(id, ud) for every container runsc has state for under root (its
 * `<id>_sandbox:<id>.state` files), so orphans can be found.  0 or -1. */
int na_runsc_each(const char *root, void (*fn)(const char *id, void *ud), void *ud,
		  struct err *e);

#endif
