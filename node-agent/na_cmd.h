/* Child processes for the node agent's CLI-backed modules (btrfs, ip, runsc).
 *
 * One call forks, optionally runs a hook in the child before exec (the runsc
 * wrapper enters namespaces there), and waits.  stdin is /dev/null; stdout
 * and stderr are collected together into a bounded buffer so a failure can
 * quote the tool's own words. */
#ifndef NA_CMD_H
#define NA_CMD_H

#include "common/buf.h"
#include "common/err.h"

/* Runs in the child after fork and before exec.  Only async-signal-safe
 * calls are allowed (raw syscalls).  Returns 0, or -1 to make the child exit
 * 126 without exec. */
typedef int (*na_cmd_hook)(void *ud);

/* Runs argv (argv[0] searched in PATH) and waits for it.  out (may be NULL)
 * receives stdout+stderr up to its max, the rest is drained and dropped.
 * Returns the exit status (0-255; 128+signal when killed), or -1 with e set
 * when the child could not be started. */
int na_cmd_run(char *const argv[], na_cmd_hook hook, void *ud, struct buf *out, struct err *e);

/* na_cmd_run() that turns a non-zero exit into an error quoting the last
 * line of the tool's output.  Returns 0 or -1. */
int na_cmd_check(char *const argv[], na_cmd_hook hook, void *ud, struct err *e);

#endif
