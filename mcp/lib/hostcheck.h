/* DNS-rebinding protection: which Host and Origin header values an MCP
 * server accepts.  A web page on a foreign name that resolves to the
 * sandbox must not reach its MCP servers through a victim's browser, so
 * only known names pass: localhost, 127.0.0.1, ::1, the sandbox's inner
 * address 10.0.2.15, and the configured list (exact names, "*.suffix"
 * patterns, or "*" for any).  Pure functions. */
#ifndef CLOCHE_MCP_HOSTCHECK_H
#define CLOCHE_MCP_HOSTCHECK_H

#include <stdbool.h>

/* host is a Host header value ("name", "name:port", "[v6]:port").
 * allowed is a comma-separated list (may be NULL).  Case-insensitive. */
bool mcp_host_allowed(const char *host, const char *allowed);

/* origin is an Origin header value ("scheme://host[:port]"); "null" and
 * anything unparsable are refused.  Same list as mcp_host_allowed. */
bool mcp_origin_allowed(const char *origin, const char *allowed);

#endif
