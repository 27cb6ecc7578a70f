/* TCP listeners and accepts; see net.h.  Addresses are numeric only: the
 * server runs inside a sandbox with no resolver it should depend on. */
#include "net.h"

#include "common/listenfd.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int vnc_net_listen(const char *addr, int port, struct err *e)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	AUTOCLOSE int fd = -1;
	int one = 1;

	/* A port init holds (common/listenfd.h) is taken as it is. */
	fd = listenfd_take(port);
	if (fd >= 0)
		return take_fd(&fd);
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		sl = sizeof(*sin);
	} else if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		sl = sizeof(*sin6);
	} else {
		return err_set(e, 0, "`%s` is not a numeric IPv4 or IPv6 address", addr);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return err_set(e, errno, "socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1)
		return err_set(e, errno, "SO_REUSEADDR");
	if (bind(fd, (struct sockaddr *)&ss, sl) == -1)
		return err_set(e, errno, "bind %s port %d", addr, port);
	if (listen(fd, 64) == -1)
		return err_set(e, errno, "listen on %s port %d", addr, port);
	return take_fd(&fd);
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		port = ntohs(sin->sin_port);
		snprintf(out, len, "%s:%d", host, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		port = ntohs(sin6->sin6_port);
		snprintf(out, len, "[%s]:%d", host, port);
	} else {
		snprintf(out, len, "unknown");
	}
}

int vnc_net_accept(int listen_fd, char *peer, size_t peer_len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, one = 1;

	do
		fd = accept4(listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (fd == -1 && errno == EINTR);
	if (fd == -1)
		return -1;
	/* Small writes (cursor shapes, HTTP headers) should not wait for acks. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (peer)
		format_addr(&ss, peer, peer_len);
	return fd;
}

void vnc_net_peer(int fd, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == -1) {
		snprintf(out, len, "unknown");
		return;
	}
	format_addr(&ss, out, len);
}
