/* libFuzzer target: the proxy's request-head parser and Host routing, the
 * first code every client byte meets.  Checks the parser's own promises:
 * every span lies inside the input, the head length is within it, and a
 * head that parsed parses again the same when more bytes follow it. */
#include "proxy/px_head.h"
#include "proxy/px_host.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *buf, size_t len, struct px_span s)
{
	if (s.p && (s.p < buf || s.p + s.n > buf + len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct px_head h, h2;
	struct px_route r;
	char *more;

	if (px_head_parse(buf, size, &h, NULL) != PX_HEAD_OK)
		return 0;
	if (h.len == 0 || h.len > size)
		abort();
	inside(buf, size, h.method);
	inside(buf, size, h.target);
	inside(buf, size, h.host);
	for (size_t i = 0; i < h.nh; i++) {
		inside(buf, h.len, h.h[i].name);
		inside(buf, h.len, h.h[i].value);
	}
	if (px_host_route(h.host, "cloche.localhost", &r) && (r.port < 1 || r.port > 65535 ||
							      strlen(r.id) == 0))
		abort();
	/* The head ends where it says: what follows does not change it. */
	more = malloc(size + 16);
	if (!more)
		return 0;
	memcpy(more, data, size);
	memcpy(more + size, "GARBAGE\r\n\r\nXYZW", 16);
	if (px_head_parse(more, size + 16, &h2, NULL) != PX_HEAD_OK || h2.len != h.len ||
	    h2.nh != h.nh || h2.body != h.body)
		abort();
	free(more);
	return 0;
}
