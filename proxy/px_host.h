/* Which sandbox and port a request is for: the Host header
 * `{port}-{id}.{domain}[:listen-port]` against the configured domain. */
#ifndef PX_HOST_H
#define PX_HOST_H
#include "proxy/px_head.h"

#include <stdbool.h>

struct px_route {
	int port;      /* the sandbox port, 1..65535 */
	char id[32];   /* the sandbox id, lower case */
};

/* Parses host (a Host header value) for domain (lower case, no leading dot).
 * True with out filled when it names a sandbox port; false for anything
 * else (another domain, no port label, a bad id, a port out of range). */
bool px_host_route(struct px_span host, const char *domain, struct px_route *out);

#endif
