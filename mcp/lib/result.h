/* The inside of struct mcp_result, shared by result.c (which fills it for
 * handlers) and server.c (which turns it into a CallToolResult). */
#ifndef CLOCHE_MCP_RESULT_H
#define CLOCHE_MCP_RESULT_H

#include <jansson.h>
#include <stdbool.h>

struct mcp_result {
	json_t *content;    /* array of content items */
	json_t *structured; /* object or NULL */
	bool is_error;
};

/* Empties res (content becomes a new empty array).  Returns 0 or -1 (ENOMEM). */
int mcp_result_init(struct mcp_result *res);

/* Builds {content, structuredContent?, isError?}; takes res's references
 * and leaves res empty.  Returns a new reference or NULL (ENOMEM). */
json_t *mcp_result_take_json(struct mcp_result *res);

void mcp_result_release(struct mcp_result *res);

#endif
