/* The action trace: one JSON line per tools/call of any of the sandbox's MCP
 * servers, appended to CLOCHE_TRACE_FILE (unset: no trace), so a person can
 * read afterwards what the agent did, in order, next to the recording of
 * the screen (docs/recording.md).  Lines are small: long strings are cut,
 * images are never copied (their hash is), and the file is rotated at
 * MCP_TRACE_MAX bytes into one older generation (<file>.1). */
#ifndef CLOCHE_MCP_TRACE_H
#define CLOCHE_MCP_TRACE_H

#include <jansson.h>
#include <stdint.h>

#define MCP_TRACE_MAX (4u << 20)    /* bytes of a generation */
#define MCP_TRACE_STR 200           /* characters kept of a string argument */
#define MCP_TRACE_SUMMARY 160       /* characters of the result's summary */

/* The trace line of one call (pure; unit-tested): server and tool names,
 * the call's arguments (copied, strings cut), its status ("ok",
 * "tool_error", "invalid_params", ...), result (a CallToolResult or NULL),
 * wall-clock start and duration in ms, and the recorder's `current` file
 * contents (NULL when no recording runs).  Returns a new reference or NULL. */
json_t *mcp_trace_line(const char *server, const char *tool, const json_t *args,
		       const char *status, const json_t *result, uint64_t start_ms,
		       uint64_t dur_ms, const json_t *recording);

/* Appends the line of one call to CLOCHE_TRACE_FILE, rotating it when
 * full; reads the running recording from CLOCHE_REC_CURRENT.  Best effort:
 * a trace that cannot be written never fails a call.  Any thread. */
void mcp_trace_append(const char *server, const char *tool, const json_t *args,
		      const char *status, const json_t *result, uint64_t start_ms,
		      uint64_t dur_ms);

#endif
