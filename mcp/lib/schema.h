/* Basic checks of tool arguments against a tool's input schema, so a model
 * that sends the wrong shape gets a JSON-RPC -32602 that names the field,
 * and handlers can trust the types of what they read.  Only the top level
 * of the schema is checked: "type" of the arguments (object), "required",
 * and per property "type" (a name or a list of names), "enum", "minimum",
 * "maximum", plus "additionalProperties": false.  Pure. */
#ifndef CLOCHE_MCP_SCHEMA_H
#define CLOCHE_MCP_SCHEMA_H

#include "common/err.h"

#include <jansson.h>

/* Returns 0 when args (a JSON object) fits schema, or -1 with e->msg like
 * "`timeout_ms` must be an integer" or "`command` is required". */
int mcp_schema_check(const json_t *schema, const json_t *args, struct err *e);

#endif
