/* Host header routing; see px_host.h.  Host names are case-insensitive; ids
 * are what the portal makes (a-z, 0-9, '-', at most 31), so a host that
 * could not name one is refused here, before any lookup. */
#include "proxy/px_host.h"

#include <ctype.h>
#include <string.h>

bool px_host_route(struct px_span host, const char *domain, struct px_route *out)
{
	size_t n = host.n, dl = strlen(domain), i, dash;
	const char *h = host.p;
	long port = 0;

	/* An optional :port of the proxy's own listener. */
	for (i = n; i > 0; i--) {
		if (h[i - 1] == ':') {
			for (size_t k = i; k < n; k++)
				if (!isdigit((unsigned char)h[k]))
					return false;
			if (i == n)
				return false;
			n = i - 1;
			break;
		}
		if (!isdigit((unsigned char)h[i - 1]))
			break;
	}
	if (n > 0 && h[n - 1] == '.')
		n--; /* a fully qualified name's trailing dot */
	if (dl == 0 || n < dl + 2 || h[n - dl - 1] != '.' || strncasecmp(h + n - dl, domain, dl) != 0)
		return false;
	n -= dl + 1; /* h[0..n) is the first label: port-id */
	for (dash = 0; dash < n && isdigit((unsigned char)h[dash]); dash++) {
		port = port * 10 + (h[dash] - '0');
		if (port > 65535)
			return false;
	}
	if (dash == 0 || dash >= n || h[dash] != '-' || port < 1 || h[0] == '0')
		return false;
	if (n - dash - 1 == 0 || n - dash - 1 >= sizeof(out->id))
		return false;
	for (i = dash + 1; i < n; i++) {
		char c = (char)tolower((unsigned char)h[i]);

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
		out->id[i - dash - 1] = c;
	}
	if (h[dash + 1] == '-')
		return false;
	out->id[n - dash - 1] = '\0';
	out->port = (int)port;
	return true;
}
