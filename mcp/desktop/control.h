/* mcp-desktop under the desktop's control lease (docs/mcp-desktop.md,
 * When a person has control): input tools ask cloche-vnc before they act
 * and answer a tool error while a person holds control; the
 * request_human_help tool asks for a person and waits for their hand-back
 * and note.  The lease itself lives in cloche-vnc (appliance/x11/x11_lease.h). */
#ifndef CLOCHE_DESK_CONTROL_H
#define CLOCHE_DESK_CONTROL_H

#include "mcp/lib/mcp.h"

#include "common/err.h"

/* The display whose lease is asked (copied; NULL means $DISPLAY). */
void desk_control_init(const char *display);

/* Before an input action (tool names it): returns 1 when the agent may act,
 * with *fd to hand to desk_control_end() afterwards; 0 when a person has
 * control, with res filled with the tool error to answer. */
int desk_control_begin(const char *tool, struct mcp_result *res, int *fd);

/* After the action: lets others' input through again. */
void desk_control_end(int fd);

/* Who drives the desktop now, for screenshot results and the dashboard:
 * {control: "agent"|"person", since?, help: [{reason, since}]}, or NULL
 * when no cloche-vnc keeps a lease.  New reference. */
json_t *desk_control_state(void);

/* Registers request_human_help.  0 or -1 with e set. */
int desk_control_register(struct mcp_server *srv, struct err *e);

#endif
