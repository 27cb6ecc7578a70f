/* libFuzzer target: what an MCP server does with a request body before any
 * tool runs: bounded JSON parsing, JSON-RPC classification, argument checks
 * against a tool's input schema, and the Host/Origin checks (the same bytes
 * reused as a header value). */
#include "common/json.h"
#include "common/hostcheck.h"
#include "mcp/lib/jsonrpc.h"
#include "mcp/lib/schema.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char schema_text[] =
	"{\"type\":\"object\",\"required\":[\"command\"],\"properties\":{"
	"\"command\":{\"type\":\"string\"},\"timeout_ms\":{\"type\":\"integer\"},"
	"\"env\":{\"type\":\"object\"},\"argv\":{\"type\":\"array\"},\"tty\":{\"type\":\"boolean\"},"
	"\"scale\":{\"type\":\"number\"}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *schema;
	struct err e = ERR_INIT;
	struct mcp_msg m;
	char header[256];
	json_t *msg;

	if (!schema)
		schema = json_loads(schema_text, 0, NULL);
	msg = cj_parse((const char *)data, size, 1 << 20, 64, &e);
	if (msg) {
		if (mcp_rpc_classify(msg, &m, &e) == 0 && m.params) {
			json_t *args = json_object_get(m.params, "arguments");
			if (args)
				mcp_schema_check(schema, args, &e);
		}
		json_decref(msg);
	}
	size = size < sizeof(header) - 1 ? size : sizeof(header) - 1;
	memcpy(header, data, size);
	header[size] = '\0';
	hostcheck_host_allowed(header, "*.cloche.localhost,example.test");
	hostcheck_origin_allowed(header, "*.cloche.localhost");
	return 0;
}
