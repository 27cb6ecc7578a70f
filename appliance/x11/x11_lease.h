/* The agent's side of the desktop's control lease (docs/vnc.md, Control):
 * how mcp-desktop asks cloche-vnc whether it may drive the display now,
 * and asks for a person.
 *
 * cloche-vnc listens on a Unix socket named after the display in a
 * directory only it may write and only mcp-desktop's group may enter
 * (X11_LEASE_DIR, made by cloche-init: docs/security.md), so the agent can
 * neither listen in its place while it restarts nor ask as mcp-desktop.
 * (An abstract name or a peer-credential check would not do: anyone may
 * bind an abstract name that is free, and gVisor answers SO_PEERCRED with
 * the caller's own credentials.)  One request per connection, a JSON line
 * each way:
 *   {"op":"act","tool":T}     -> {"ok":true[,"handback":{...}]}: the agent
 *                                may act until it closes the connection
 *                                (nobody else's input passes meanwhile);
 *                                {"ok":false,"since":ISO}: a person holds
 *                                control since then
 *   {"op":"help","reason":R}  -> {"ok":true,"id":N}, later
 *                                {"answer":{"note","left","taken","back"}}
 *                                when a person hands back; closing first
 *                                withdraws the request
 *   {"op":"state"}            -> the lease's state (lease.h)
 * Without a cloche-vnc on the display (connect fails) there is nobody to
 * take control, so the agent may always act. */
#ifndef CLOCHE_X11_LEASE_H
#define CLOCHE_X11_LEASE_H

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#define X11_LEASE_LINE_MAX 8192 /* bytes of one line, newline included */

/* Where the sockets are: $CLOCHE_CONTROL_DIR, else this. */
#define X11_LEASE_DIR "/run/cloche/control"

/* The socket address for display (":0", NULL means $DISPLAY): the
 * directory, then the display ("/run/cloche/control/:0").  Returns its
 * length for bind/connect, 0 when the path does not fit. */
socklen_t x11_lease_addr(const char *display, struct sockaddr_un *sa);

/* The outcome of x11_lease_act(). */
struct x11_lease_act {
	bool held;         /* refused: a person has control */
	char since[32];    /* ... since this time (RFC 3339) */
	json_t *handback;  /* a hand-back the agent has not heard of, or NULL */
};

/* Asks to act (tool names the action, for the logs).  Returns a connection
 * fd the caller keeps open while it acts and then closes; -2 when there is
 * no cloche-vnc (act freely); -1 with out->held set when refused, or -1
 * with e set when the exchange failed.  out->handback is the caller's to
 * json_decref. */
int x11_lease_act(const char *display, const char *tool, struct x11_lease_act *out,
		  struct err *e);

/* Sends one request line and reads one answer line on a new connection,
 * within timeout_ms.  Returns the fd (kept open for a second answer, as
 * help needs) with *answer set (new reference), -2 when no cloche-vnc
 * listens, -1 with e set otherwise. */
int x11_lease_request(const char *display, json_t *req, int timeout_ms, json_t **answer,
		      struct err *e);

/* Reads one more answer line on fd if it begins within timeout_ms.
 * Returns 1 with *answer set, 0 when nothing came (nothing was read: call
 * again), -1 with e set when the connection failed or closed, or a line
 * that began did not end within a few seconds. */
int x11_lease_read(int fd, int timeout_ms, json_t **answer, struct err *e);

#endif
