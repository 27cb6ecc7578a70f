/* Inherited listening sockets; see listenfd.h. */
#include "common/listenfd.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define LISTENFD_FIRST 3
#define LISTENFD_MAX 16

static bool scanned;
static int nfds;
static int ports[LISTENFD_MAX]; /* by fd - LISTENFD_FIRST; 0: none or taken */

static int port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct stat st;
	int listening = 0;
	socklen_t ll = sizeof(listening);

	if (fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == -1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) == -1 || !listening)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

static void scan(void)
{
	const char *v = getenv("LISTEN_FDS");
	char *end;
	long n;

	scanned = true;
	if (!v)
		return;
	n = strtol(v, &end, 10);
	unsetenv("LISTEN_FDS");
	if (*v == '\0' || *end != '\0' || n < 1 || n > LISTENFD_MAX)
		return;
	nfds = (int)n;
	for (int i = 0; i < nfds; i++) {
		int fd = LISTENFD_FIRST + i;
		int fl = fcntl(fd, F_GETFD);

		if (fl == -1)
			continue;
		fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
		if ((ports[i] = port_of(fd)) > 0 &&
		    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
			ports[i] = 0;
	}
}

int listenfd_take(int port)
{
	if (!scanned)
		scan();
	for (int i = 0; i < nfds; i++)
		if (port > 0 && ports[i] == port) {
			ports[i] = 0;
			return LISTENFD_FIRST + i;
		}
	return -1;
}
