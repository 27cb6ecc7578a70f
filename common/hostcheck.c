/* Host/Origin checks; see hostcheck.h.  Both reduce the header to a bare
 * lower-case host name (no port, no brackets) and compare it with the
 * built-in names and the configured list. */
#include "common/hostcheck.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const builtin[] = {"localhost", "127.0.0.1", "::1", "10.0.2.15"};

/* Copies the host part of "name[:port]" or "[v6][:port]" into out.
 * Returns 0, or -1 when malformed or too long. */
static int bare_host(const char *hp, size_t n, char *out, size_t len)
{
	const char *end;

	if (n && hp[0] == '[') {
		end = memchr(hp, ']', n);
		if (!end || (end + 1 < hp + n && end[1] != ':'))
			return -1;
		hp++;
	} else {
		end = memchr(hp, ':', n);
		if (!end)
			end = hp + n;
	}
	if (end == hp || (size_t)(end - hp) >= len)
		return -1;
	for (size_t i = 0; i < (size_t)(end - hp); i++) {
		char ch = hp[i];
		if (ch == '/' || ch == '@' || ch == ' ' || (unsigned char)ch < 0x21)
			return -1;
		out[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
	}
	out[end - hp] = '\0';
	return 0;
}

static bool name_allowed(const char *name, const char *allowed)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (strcmp(name, builtin[i]) == 0)
			return true;
	while (allowed && *allowed) {
		const char *comma = strchr(allowed, ',');
		size_t len = comma ? (size_t)(comma - allowed) : strlen(allowed);
		const char *p = allowed;

		while (len && *p == ' ')
			p++, len--;
		while (len && p[len - 1] == ' ')
			len--;
		if (len == 1 && *p == '*')
			return true;
		if (len > 2 && p[0] == '*' && p[1] == '.') {
			/* "*.example.com" matches "a.example.com", not "example.com". */
			size_t sl = len - 1;
			if (nl > sl && strncasecmp(name + nl - sl, p + 1, sl) == 0)
				return true;
		} else if (len == nl && strncasecmp(name, p, len) == 0) {
			return true;
		}
		allowed = comma ? comma + 1 : NULL;
	}
	return false;
}

bool hostcheck_host_allowed(const char *host, const char *allowed)
{
	char name[256];

	if (!host || bare_host(host, strlen(host), name, sizeof(name)))
		return false;
	return name_allowed(name, allowed);
}

bool hostcheck_origin_allowed(const char *origin, const char *allowed)
{
	const char *p, *end;
	char name[256];

	if (!origin)
		return false;
	p = strstr(origin, "://");
	if (!p)
		return false;
	p += 3;
	end = strchr(p, '/');
	if (!end)
		end = p + strlen(p);
	if (bare_host(p, (size_t)(end - p), name, sizeof(name)))
		return false;
	return name_allowed(name, allowed);
}
