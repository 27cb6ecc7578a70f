/* The portal's MCP server at /mcp (pt_mcp.c): sandboxes as tools. */
#ifndef CLOCHE_PT_MCP_H
#define CLOCHE_PT_MCP_H
#include "common/err.h"
#include "portal/pt_portal.h"

/* Attaches /mcp to the portal's HTTP server.  listen is the API's listen
 * address (the tools call the REST API there); allowed_hosts the extra
 * names clients may use in Host and Origin (may be empty).  0, or -1 with e. */
int pt_mcp_start(struct pt_portal *p, const char *listen, const char *allowed_hosts,
		 struct err *e);

#endif
