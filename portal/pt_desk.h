/* What a sandbox says of its desktop, made safe to keep and show.
 *
 * The node passes on mcp-desktop's thumbnail answer, and mcp-desktop runs
 * inside the sandbox, where the agent can stop it and answer in its place.
 * So its `control` object is agent-made: the portal keeps only the fields
 * the dashboard shows, of the types and sizes they have, and drops
 * anything else (pure, unit-tested). */
#ifndef CLOCHE_PT_DESK_H
#define CLOCHE_PT_DESK_H
#include <jansson.h>

#define PT_DESK_REASON_MAX 1000 /* bytes of a help reason (mcp-desktop's bound) */
#define PT_DESK_HELP_MAX 8      /* help requests kept */

/* {control: "agent"|"person", since?, help: [{reason, since?}]} from in:
 * since strings are RFC 3339 times (at most 40 characters), a reason is
 * valid UTF-8 cut to PT_DESK_REASON_MAX bytes.  NULL when in is not an
 * object or names no known controller.  New reference. */
json_t *pt_desk_clean(const json_t *in);

#endif
