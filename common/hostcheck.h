/* DNS-rebinding protection: which Host and Origin header values the
 * servers of a sandbox (the MCP servers, cloche-vnc's WebSocket) accept.  A
 * web page on a foreign name that resolves to the sandbox must not reach
 * them through a victim's browser, so only known names pass: localhost,
 * 127.0.0.1, ::1, the sandbox's inner address 10.0.2.15, and the configured
 * list (exact names, "*.suffix" patterns, or "*" for any).  Pure functions;
 * one rule set for every server, so they cannot drift apart. */
#ifndef CLOCHE_HOSTCHECK_H
#define CLOCHE_HOSTCHECK_H

#include <stdbool.h>

/* host is a Host header value ("name", "name:port", "[v6]:port").
 * allowed is a comma-separated list (may be NULL).  Case-insensitive. */
bool hostcheck_host_allowed(const char *host, const char *allowed);

/* origin is an Origin header value ("scheme://host[:port]"); "null" and
 * anything unparsable are refused.  Same list as hostcheck_host_allowed. */
bool hostcheck_origin_allowed(const char *origin, const char *allowed);

#endif
