/* The table of MCP sessions (Mcp-Session-Id).  Loop-thread only: no locks.
 *
 * A session is created by `initialize` with a random id of 32 hex digits,
 * remembers the negotiated protocol version, and ends on DELETE, after
 * idle_ms without a request, or when the table is full and it is the least
 * recently used session that has no call running. */
#ifndef CLOCHE_MCP_SESSION_H
#define CLOCHE_MCP_SESSION_H

#include "common/err.h"

#include <stdbool.h>
#include <stdint.h>

#define MCP_SESSION_ID_MAX 128

struct mcp_session {
	char id[40];
	char version[16];   /* negotiated protocol version */
	uint64_t last_ms;   /* last request, monotonic */
	bool initialized;   /* notifications/initialized seen */
	unsigned active;    /* calls running; a busy session is never evicted */
};

struct mcp_sessions;

/* A table of at most max sessions (0 means 64) that end after idle_ms
 * without requests (0 means one hour).  NULL when out of memory. */
struct mcp_sessions *mcp_sessions_new(unsigned max, uint64_t idle_ms);
void mcp_sessions_free(struct mcp_sessions *t);

/* Creates a session with a fresh random id.  Expired sessions go first; when
 * the table is still full, the least recently used idle one.  Returns the
 * session (owned by the table), or NULL with e set (503: all busy). */
struct mcp_session *mcp_sessions_create(struct mcp_sessions *t, const char *version, uint64_t now,
					struct err *e);

/* Looks a session up by id and marks it used at now.  NULL when unknown or
 * expired (an expired session is removed here). */
struct mcp_session *mcp_sessions_get(struct mcp_sessions *t, const char *id, uint64_t now);

/* Ends a session.  Returns 0, or -1 when there was none with that id. */
int mcp_sessions_end(struct mcp_sessions *t, const char *id);

/* Number of live sessions (expired ones included until swept). */
unsigned mcp_sessions_count(const struct mcp_sessions *t);

/* True when id is a well-formed session id: 1..128 visible ASCII bytes
 * (0x21-0x7e), as the transport spec requires. */
bool mcp_session_id_valid(const char *id);

#endif
