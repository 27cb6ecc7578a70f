/* mcp-desktop's MCP face: the `computer` tool (Anthropic's computer-use
 * vocabulary, one `action` argument) and the same actions as tools of
 * their own (screenshot, left_click, type...), all over one action layer.
 * Argument errors become JSON-RPC -32602; failures at run time a result
 * with isError.  Results carry a text line and, for actions that change
 * the screen, a PNG screenshot taken after a settle delay.  Two more tools,
 * clipboard_get and clipboard_set, read and set the X clipboard as text. */
#ifndef CLOCHE_DESK_TOOLS_H
#define CLOCHE_DESK_TOOLS_H

#include "actions.h"

#include "appliance/x11/x11_clip.h"

#include "mcp/lib/mcp.h"

#include "common/err.h"

/* Registers every tool on srv.  The descriptions name the display size
 * (display_width_px x display_height_px) as of this call.  a and clip must
 * outlive the server; clip NULL means the operator disabled the clipboard
 * (its tools then answer a tool error saying so).  0 or -1 with e set. */
int desk_tools_register(struct mcp_server *srv, struct desk_actions *a, struct x11_clip *clip,
			struct err *e);

/* Frees the tool texts; after mcp_server_free() only. */
void desk_tools_release(void);

#endif
