/* Chromium as a child process with its DevTools pipe.
 *
 * mcp-browser owns the visible browser: it starts Chromium itself (so the
 * pipe ends are simply inherited as fds 3 and 4), in mcp-browser's own
 * process group (cloche-init signals the whole group and kills what is left
 * of it when mcp-browser exits), and with PDEATHSIG so a killed mcp-browser
 * never leaves a browser nobody drives. */
#ifndef CLOCHE_MCP_BROWSER_CHROME_H
#define CLOCHE_MCP_BROWSER_CHROME_H

#include "common/err.h"

#include <stdbool.h>
#include <sys/types.h>

struct chrome {
	pid_t pid;
	int wfd; /* we write: Chromium's fd 3 */
	int rfd; /* we read: Chromium's fd 4 */
};

/* Starts argv (argv[0] an absolute path; "--remote-debugging-pipe" is
 * appended) with the pipe on fds 3 and 4.  Call before any thread exists.
 * Fills ch (the caller owns both fds) and returns 0, or -1 with e set. */
int chrome_launch(char *const argv[], struct chrome *ch, struct err *e);

/* Runs the readiness probe command line (split on blanks) every 500 ms
 * until it exits 0 (returns 0), the child dies (-1) or timeout_ms passes
 * (-1); e says which.  An empty command line is ready at once. */
int chrome_wait_window(struct chrome *ch, const char *probe, unsigned timeout_ms,
		       struct err *e);

/* True while the child has not exited (reaps it when it has). */
bool chrome_running(struct chrome *ch);

/* SIGTERM, then SIGKILL after grace_ms; reaps.  Safe when already gone. */
void chrome_stop(struct chrome *ch, unsigned grace_ms);

#endif
