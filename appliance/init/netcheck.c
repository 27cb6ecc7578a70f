/* Reads the kernel's (here: gVisor's) TCP tables.  A line is
 *   "  0: 0F02000A:22B9 0202000A:A1C2 01 ..."
 * with each 32-bit word of an address printed as a host-order number. */
#include "netcheck.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NETCHECK_LIST_MAX 32

static const char *const tcp_states[] = {
	"?",	       "ESTABLISHED", "SYN_SENT", "SYN_RECV",	"FIN_WAIT1", "FIN_WAIT2",
	"TIME_WAIT",   "CLOSE",	      "CLOSE_WAIT", "LAST_ACK", "LISTEN",    "CLOSING",
	"NEW_SYN_RECV"};

struct endpoint {
	int family;
	unsigned char addr[16];
	int port;
};

/* Parses "HEX:PORT" (8 or 32 hex digits) at *p and advances past it. */
static bool parse_endpoint(const char **p, struct endpoint *ep)
{
	const char *s = *p, *colon;
	size_t hexlen;
	char word[9];

	while (*s == ' ')
		s++;
	colon = strchr(s, ':');
	if (!colon)
		return false;
	hexlen = (size_t)(colon - s);
	if (hexlen != 8 && hexlen != 32)
		return false;
	ep->family = hexlen == 8 ? AF_INET : AF_INET6;
	for (size_t w = 0; w < hexlen / 8; w++) {
		char *end;
		uint32_t v;

		memcpy(word, s + w * 8, 8);
		word[8] = '\0';
		v = (uint32_t)strtoul(word, &end, 16);
		if (*end)
			return false;
		memcpy(ep->addr + w * 4, &v, 4); /* host order, as printed */
	}
	ep->port = (int)strtol(colon + 1, (char **)p, 16);
	return ep->port >= 0 && ep->port <= 65535;
}

static bool is_loopback(const struct endpoint *ep)
{
	static const unsigned char v6_lo[16] = {[15] = 1};
	static const unsigned char v4_mapped[12] = {[10] = 0xff, [11] = 0xff};

	if (ep->family == AF_INET)
		return ep->addr[0] == 127;
	return memcmp(ep->addr, v6_lo, 16) == 0 ||
	       (memcmp(ep->addr, v4_mapped, 12) == 0 && ep->addr[12] == 127);
}

static void format(const struct endpoint *ep, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(ep->family, ep->addr, a, sizeof(a));
	snprintf(out, len, ep->family == AF_INET6 ? "[%s]:%d" : "%s:%d", a, ep->port);
}

int netcheck_scan(const char *text, int self_local, int self_remote, json_t *list)
{
	int count = 0;

	for (const char *line = text; line && *line;) {
		const char *next = strchr(line, '\n'), *p = strchr(line, ':');
		struct endpoint l, r;
		char *end;
		long st;

		/* The header line has no "N:" before its first ':'. */
		if (p && (!next || p < next) && p > line && p[-1] >= '0' && p[-1] <= '9') {
			p++;
			if (parse_endpoint(&p, &l) && parse_endpoint(&p, &r)) {
				st = strtol(p, &end, 16);
				if (end != p && st != 0x0A && st != 0x06 && st != 0x07 &&
				    !is_loopback(&l) && !(l.port == self_local && r.port == self_remote)) {
					count++;
					if (list && json_array_size(list) < NETCHECK_LIST_MAX) {
						char ls[64], rs[64];
						format(&l, ls, sizeof(ls));
						format(&r, rs, sizeof(rs));
						json_array_append_new(
							list, json_pack("{s:s, s:s, s:s}", "local", ls, "remote", rs,
									"state",
									st > 0 && st < (long)(sizeof(tcp_states) / sizeof(tcp_states[0]))
										? tcp_states[st] : "?"));
					}
				}
			}
		}
		line = next ? next + 1 : NULL;
	}
	return count;
}
