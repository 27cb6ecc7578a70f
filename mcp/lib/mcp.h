/* The MCP server library: JSON-RPC 2.0 over MCP Streamable HTTP at /mcp.
 *
 * A program (mcp-shell, mcp-desktop, mcp-browser) declares its tools and
 * calls mcp_server_run(); this library does everything protocol-side:
 * protocol-version negotiation (2025-06-18, 2025-11-25), Mcp-Session-Id
 * sessions, Origin/Host validation, body limits, JSON or SSE answers,
 * ping, tools/list with pagination, progress notifications, cancellation,
 * and the spec's error codes.
 *
 * Tool handlers run on worker threads, one call per thread, so a slow call
 * never blocks other sessions or other calls.  A handler fills a result;
 * it may report progress and should poll mcp_call_cancelled() in long
 * loops.  Everything in this header is safe to call from a handler's
 * thread unless it says otherwise. */
#ifndef CLOCHE_MCP_H
#define CLOCHE_MCP_H

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct mcp_server;
struct mcp_call;
struct mcp_result;
struct hsrv;
struct hsrv_req;

#define MCP_PRINCIPAL_MAX 128 /* what an auth hook may hand to the handlers */

/* Who may use the server.  Called on the loop thread for every request to
 * /mcp, after the Host/Origin check and before anything else.  Returns 0 to
 * serve it, with principal (MCP_PRINCIPAL_MAX bytes) filled: the handlers of
 * the calls this request starts read it with mcp_call_principal().  Or
 * returns an HTTP status (401: a WWW-Authenticate: Bearer header is added;
 * 403; 500) with msg (200 bytes) saying why; the request is then refused. */
typedef int (*mcp_auth_fn)(void *ud, const struct hsrv_req *req, char *principal, char *msg);

/* Returns 0 when the result is filled (success, or a tool-level failure
 * set with mcp_result_error()), or -1 with e set for a bad request: the
 * client then gets JSON-RPC -32602 with e->msg (wrong argument types,
 * missing required arguments, values out of range). */
typedef int (*mcp_tool_fn)(struct mcp_call *call, const json_t *args, struct mcp_result *res,
			   struct err *e);

struct mcp_tool {
	const char *name;          /* e.g. "run_command" */
	const char *title;         /* human-readable; may be NULL */
	const char *description;   /* what a model needs to know to use it */
	const char *input_schema;  /* JSON Schema text of the arguments object */
	const char *output_schema; /* JSON Schema text, or NULL; when set the
	                            * tool must give mcp_result_structured() */
	bool read_only;            /* annotations.readOnlyHint */
	bool destructive;          /* annotations.destructiveHint */
	mcp_tool_fn fn;
	void *ud;                  /* handed back through mcp_call_ud() */
};

struct mcp_server_opts {
	const char *name;          /* serverInfo.name, e.g. "cloche-shell" */
	const char *version;       /* serverInfo.version */
	const char *instructions;  /* InitializeResult.instructions; may be NULL */
	const char *listen;        /* address; NULL means all */
	int port;                  /* 0 picks one (see mcp_server_port) */
	size_t max_body;           /* request limit, 0 means 4 MiB; above it 413 */
	/* Host names accepted in Host and Origin, besides localhost, 127.0.0.1,
	 * [::1] and the sandbox's inner address 10.0.2.15: exact names or
	 * "*.suffix" patterns ("*" allows any), comma-separated; may be NULL.
	 * The environment variable CLOCHE_MCP_ALLOWED_HOSTS (same syntax) is
	 * always added by the library, so every server honours it. */
	const char *allowed_hosts;
	unsigned page_size;        /* tools/list page size; 0 means 50 */
	unsigned max_sessions;     /* 0 means 64; the oldest idle one goes first */
	unsigned session_idle_s;   /* idle sessions end after this; 0 means 3600 */
	unsigned max_calls;        /* tool calls running at once; 0 means 64;
	                            * above it a call gets JSON-RPC -32000 */
	mcp_auth_fn auth;          /* NULL: no authentication (a sandbox's servers) */
	void *auth_ud;
};

/* Creates a server listening on o->port.  NULL with e set. */
struct mcp_server *mcp_server_new(const struct mcp_server_opts *o, struct err *e);

/* The same server on another program's HTTP server at /mcp (o->listen and
 * o->port are not used): that program runs the loop (mcp_server_run() is
 * not called) and, when it stops, calls mcp_server_stop() and waits while
 * mcp_server_calls() is not 0 before its loop ends.  NULL with e set. */
struct mcp_server *mcp_server_attach(struct hsrv *http, const struct mcp_server_opts *o,
				     struct err *e);

/* Refuses new sessions and calls and cancels the running ones (loop thread). */
void mcp_server_stop(struct mcp_server *s);

/* Tool calls still running (any thread). */
unsigned mcp_server_calls(const struct mcp_server *s);

/* Registers a tool (copied; strings must stay valid while the server
 * lives).  Before mcp_server_run() only.  Bad schema JSON is an error. */
int mcp_server_add_tool(struct mcp_server *s, const struct mcp_tool *t, struct err *e);

/* The bound port. */
int mcp_server_port(const struct mcp_server *s);

/* Serves until SIGTERM or SIGINT (which it handles), then waits up to
 * 2 s for running calls, and returns 0; -1 if the loop failed. */
int mcp_server_run(struct mcp_server *s);

void mcp_server_free(struct mcp_server *s);

/* --- inside a handler ------------------------------------------------ */

void *mcp_call_ud(const struct mcp_call *call);

/* True once the client sent notifications/cancelled for this call, its
 * session ended, or the server is stopping.  The answer is then dropped. */
bool mcp_call_cancelled(const struct mcp_call *call);

/* What the server's auth hook said of the request that started this call
 * ("" without a hook). */
const char *mcp_call_principal(const struct mcp_call *call);

/* The Mcp-Session-Id of the session this call came in (valid while the
 * call runs): what tells one client's calls from another's. */
const char *mcp_call_session(const struct mcp_call *call);

/* Sends notifications/progress when the client gave a progressToken
 * (otherwise does nothing).  total <= 0 means unknown; message may be NULL. */
void mcp_call_progress(struct mcp_call *call, double progress, double total, const char *message);

/* Result content, in order of the calls.  Text is copied; image data is
 * raw bytes (base64-encoded here).  mcp_result_error() adds a text item and
 * marks the result isError: a failure the model can read and act on. */
int mcp_result_text(struct mcp_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int mcp_result_textn(struct mcp_result *res, const char *text, size_t len);
int mcp_result_image(struct mcp_result *res, const void *data, size_t len, const char *mime);
int mcp_result_error(struct mcp_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Sets structuredContent (takes the reference). */
void mcp_result_structured(struct mcp_result *res, json_t *obj);

#endif
