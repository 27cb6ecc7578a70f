/* A Chrome DevTools Protocol client over Chromium's --remote-debugging-pipe.
 *
 * Chromium reads commands from its fd 3 and writes answers and events to its
 * fd 4; every message is one JSON object followed by a NUL byte.  This client
 * owns the two pipe ends: a reader thread splits the stream, hands answers to
 * the threads waiting for them (by request id) and events to one callback.
 * Any number of threads may call cdp_call() at once.  Every message is
 * bounded (max_msg); an oversized answer fails its call, never the client.
 * Sessions (Target.attachToTarget with flatten) are named by the "sessionId"
 * string that rides along in each message. */
#ifndef CLOCHE_MCP_BROWSER_CDP_H
#define CLOCHE_MCP_BROWSER_CDP_H

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct cdp;

/* An event (method set, params borrowed for the call), or the end of the
 * connection (method NULL: Chromium closed its pipe or died).  Runs on the
 * reader thread: it must not call cdp_call(), whose answer that same thread
 * would have to read. */
typedef void (*cdp_event_fn)(void *ud, const char *session, const char *method,
			     json_t *params);

/* Polled while waiting for an answer; true abandons the call. */
typedef bool (*cdp_cancel_fn)(void *ud);

/* Takes ownership of wfd (Chromium's fd 3, which we write) and rfd (its fd
 * 4, which we read), and starts the reader thread.  NULL with e set. */
struct cdp *cdp_new(int wfd, int rfd, size_t max_msg, cdp_event_fn fn, void *ud,
		    struct err *e);

/* Sends method with params (a JSON object, stolen; NULL means {}) on session
 * (NULL for the browser target) and waits up to timeout_ms for the answer.
 * Returns the "result" object (a new reference), or NULL with e set: the
 * protocol's own error text ("Could not find node with given id"), a
 * timeout, cancellation, an oversized answer, or a closed connection. */
json_t *cdp_call(struct cdp *c, const char *session, const char *method, json_t *params,
		 unsigned timeout_ms, cdp_cancel_fn cancel, void *cancel_ud, struct err *e);

/* False once the connection ended. */
bool cdp_alive(struct cdp *c);

/* Stops the reader thread, closes both fds and fails calls still waiting.
 * No call may be in progress on other threads.  NULL is allowed. */
void cdp_free(struct cdp *c);

#endif
