/* JSON-RPC 2.0 classification and answers; see jsonrpc.h.  The checks are
 * the ones the spec makes: "jsonrpc" is exactly "2.0", a request has a
 * string method and a string or numeric id, params (when present) is an
 * object or array, and a response has an id and exactly one of result or
 * error. */
#include "mcp/lib/jsonrpc.h"

#include <stdbool.h>
#include <string.h>

int mcp_rpc_id_valid(const json_t *id)
{
	return id && (json_is_string(id) || json_is_number(id));
}

int mcp_rpc_classify(json_t *msg, struct mcp_msg *m, struct err *e)
{
	json_t *ver, *method, *id, *params;
	bool has_result, has_error;

	memset(m, 0, sizeof(*m));
	if (json_is_array(msg)) {
		err_set(e, 0, "batches are not supported: send one JSON-RPC message per request");
		return MCP_INVALID_REQUEST;
	}
	if (!json_is_object(msg)) {
		err_set(e, 0, "a JSON-RPC message must be a JSON object");
		return MCP_INVALID_REQUEST;
	}
	id = json_object_get(msg, "id");
	if (mcp_rpc_id_valid(id))
		m->id = id;
	ver = json_object_get(msg, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
		err_set(e, 0, "`jsonrpc` must be \"2.0\"");
		return MCP_INVALID_REQUEST;
	}
	method = json_object_get(msg, "method");
	has_result = json_object_get(msg, "result") != NULL;
	has_error = json_object_get(msg, "error") != NULL;
	if (method) {
		if (!json_is_string(method) || !json_string_length(method)) {
			err_set(e, 0, "`method` must be a non-empty string");
			return MCP_INVALID_REQUEST;
		}
		if (has_result || has_error) {
			err_set(e, 0, "a request cannot carry `result` or `error`");
			return MCP_INVALID_REQUEST;
		}
		params = json_object_get(msg, "params");
		if (params && !json_is_object(params) && !json_is_array(params)) {
			err_set(e, 0, "`params` must be an object");
			return MCP_INVALID_REQUEST;
		}
		if (id && !m->id) {
			err_set(e, 0, "`id` must be a string or a number");
			return MCP_INVALID_REQUEST;
		}
		m->kind = id ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
		m->method = json_string_value(method);
		m->params = params;
		return 0;
	}
	if (has_result == has_error) {
		err_set(e, 0, "a message needs `method`, or exactly one of `result` and `error`");
		return MCP_INVALID_REQUEST;
	}
	if (!m->id) {
		err_set(e, 0, "a response needs a string or numeric `id`");
		return MCP_INVALID_REQUEST;
	}
	m->kind = MCP_MSG_RESPONSE;
	return 0;
}

json_t *mcp_rpc_result(const json_t *id, json_t *result)
{
	json_t *v = json_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
	return v;
}

json_t *mcp_rpc_error(const json_t *id, int code, const char *message)
{
	return json_pack("{s:s, s:O?, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
			 code, "message", message ? message : "");
}

json_t *mcp_rpc_notification(const char *method, json_t *params)
{
	return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}
