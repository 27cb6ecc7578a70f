/* JSON-RPC 2.0 message shapes for MCP: classifying what a client sent and
 * building what the server answers.  Pure functions over jansson values; no
 * I/O, no state. */
#ifndef CLOCHE_MCP_JSONRPC_H
#define CLOCHE_MCP_JSONRPC_H

#include "common/err.h"

#include <jansson.h>

#define MCP_PARSE_ERROR -32700
#define MCP_INVALID_REQUEST -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS -32602
#define MCP_INTERNAL_ERROR -32603
#define MCP_SERVER_ERROR -32000 /* transport-level refusals (the SDK's choice) */

enum mcp_msg_kind { MCP_MSG_REQUEST, MCP_MSG_NOTIFICATION, MCP_MSG_RESPONSE };

struct mcp_msg {
	enum mcp_msg_kind kind;
	const char *method; /* requests and notifications; borrowed */
	json_t *id;         /* requests and responses; borrowed; NULL otherwise */
	json_t *params;     /* borrowed; NULL when absent */
};

/* Classifies one message.  Returns 0 with *m filled, or a JSON-RPC error
 * code (MCP_INVALID_REQUEST) with e->msg saying why; m->id is then the id
 * when one could be read (to echo in the error), else NULL.  A JSON array
 * (a batch) is refused: MCP revisions since 2025-06-18 have no batches. */
int mcp_rpc_classify(json_t *msg, struct mcp_msg *m, struct err *e);

/* True when id is a valid JSON-RPC request id for MCP: a string or a number. */
int mcp_rpc_id_valid(const json_t *id);

/* {"jsonrpc":"2.0","id":<copy of id>,"result":result}; takes result.
 * Returns a new reference, NULL when out of memory. */
json_t *mcp_rpc_result(const json_t *id, json_t *result);

/* {"jsonrpc":"2.0","id":<copy of id, or null>,"error":{"code","message"}}. */
json_t *mcp_rpc_error(const json_t *id, int code, const char *message);

/* {"jsonrpc":"2.0","method":method,"params":params}; takes params. */
json_t *mcp_rpc_notification(const char *method, json_t *params);

#endif
