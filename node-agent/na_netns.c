/* Netns pairs via iproute2 (`ip netns add` makes the bind-mounted names the
 * rest of the system knows), and sockets made inside a router namespace by
 * setns(2) on a dedicated thread. */
#include "node-agent/na_netns.h"
#include "node-agent/na_cmd.h"

#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

void na_netns_path(const char *id, char kind, char *out, size_t len)
{
	snprintf(out, len, "/var/run/netns/%c-%s", kind, id);
}

/* Runs `ip` with the NULL-terminated arguments. */
static int ip(struct err *e, ...)
{
	char *argv[16] = {"ip"};
	size_t n = 1;
	va_list ap;
	char *a;

	va_start(ap, e);
	while ((a = va_arg(ap, char *)) != NULL && n < ARRAY_LEN(argv) - 1)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return na_cmd_check(argv, NULL, NULL, e);
}

int na_netns_create(const char *id, struct err *e)
{
	char s[64], r[64];

	snprintf(s, sizeof(s), "S-%s", id);
	snprintf(r, sizeof(r), "R-%s", id);
	if (ip(e, "netns", "add", s, NULL) == -1 || ip(e, "netns", "add", r, NULL) == -1 ||
	    ip(e, "link", "add", "veth0", "netns", r, "type", "veth", "peer", "name", "eth0",
	       "netns", s, NULL) == -1 ||
	    ip(e, "-n", r, "addr", "add", NA_ROUTER_ADDR "/24", "dev", "veth0", NULL) == -1 ||
	    ip(e, "-n", r, "link", "set", "veth0", "up", NULL) == -1 ||
	    ip(e, "-n", r, "link", "set", "lo", "up", NULL) == -1 ||
	    ip(e, "-n", s, "addr", "add", NA_INNER_ADDR "/24", "dev", "eth0", NULL) == -1 ||
	    ip(e, "-n", s, "link", "set", "eth0", "up", NULL) == -1 ||
	    ip(e, "-n", s, "link", "set", "lo", "up", NULL) == -1 ||
	    ip(e, "-n", s, "route", "add", "default", "via", NA_ROUTER_ADDR, NULL) == -1) {
		err_wrap(e, "create netns pair for %s", id);
		na_netns_destroy(id, NULL);
		return -1;
	}
	return 0;
}

static int del_one(const char *id, char kind, struct err *e)
{
	char path[128], name[64];

	na_netns_path(id, kind, path, sizeof(path));
	if (access(path, F_OK) == -1)
		return 0;
	snprintf(name, sizeof(name), "%c-%s", kind, id);
	if (ip(e, "netns", "del", name, NULL) == -1)
		return err_wrap(e, "delete netns %s", name);
	return 0;
}

int na_netns_destroy(const char *id, struct err *e)
{
	int rs = del_one(id, 'S', e);
	int rr = del_one(id, 'R', rs == -1 ? NULL : e);

	return rs == -1 || rr == -1 ? -1 : 0;
}

bool na_netns_exists(const char *id)
{
	char path[128];

	na_netns_path(id, 'S', path, sizeof(path));
	return access(path, F_OK) == 0;
}

struct mksock {
	int nsfd;
	int fd;
	int err;
};

/* Thread body: enter the router netns and make the socket there.  The thread
 * ends right after, so its changed namespace never serves anything else. */
static void *mksock_thread(void *arg)
{
	struct mksock *m = arg;

	if (setns(m->nsfd, CLONE_NEWNET) == -1) {
		m->err = errno;
		return NULL;
	}
	m->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (m->fd == -1)
		m->err = errno;
	return NULL;
}

/* Makes a non-blocking TCP socket inside R-<id>.  -1 with e set. */
static int router_socket(const char *id, struct err *e)
{
	char path[128];
	struct mksock m = {-1, -1, 0};
	pthread_t th;
	int r;

	na_netns_path(id, 'R', path, sizeof(path));
	m.nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (m.nsfd == -1)
		return err_set(e, errno, "open netns `%s`", path);
	r = pthread_create(&th, NULL, mksock_thread, &m);
	if (r != 0) {
		close(m.nsfd);
		return err_set(e, r, "socket in netns R-%s: start thread", id);
	}
	pthread_join(th, NULL);
	close(m.nsfd);
	if (m.fd == -1)
		return err_set(e, m.err, "socket in netns R-%s", id);
	return m.fd;
}

int na_netns_listen(const char *id, int port, struct err *e)
{
	AUTOCLOSE int fd = router_socket(id, e);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int one = 1;

	if (fd == -1)
		return -1;
	inet_pton(AF_INET, NA_ROUTER_ADDR, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 || listen(fd, 128) == -1)
		return err_set(e, errno, "listen on %s:%d in R-%s", NA_ROUTER_ADDR, port, id);
	return take_fd(&fd);
}

int na_netns_connect(const char *id, int port, int timeout_ms, struct err *e)
{
	AUTOCLOSE int fd = -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct pollfd pfd;
	int r, soerr = 0;
	socklen_t sl = sizeof(soerr);

	fd = router_socket(id, e);
	if (fd == -1)
		return -1;
	inet_pton(AF_INET, NA_INNER_ADDR, &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		if (errno != EINPROGRESS)
			return err_set(e, errno, "connect %s:%s:%d", id, NA_INNER_ADDR, port);
		pfd.fd = fd;
		pfd.events = POLLOUT;
		do
			r = poll(&pfd, 1, timeout_ms);
		while (r == -1 && errno == EINTR);
		if (r == 0)
			return err_set(e, ETIMEDOUT, "connect %s:%s:%d", id, NA_INNER_ADDR, port);
		if (r == -1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1)
			return err_set(e, errno, "connect %s:%s:%d", id, NA_INNER_ADDR, port);
		if (soerr)
			return err_set(e, soerr, "connect %s:%s:%d", id, NA_INNER_ADDR, port);
	}
	r = fcntl(fd, F_GETFL);
	if (r == -1 || fcntl(fd, F_SETFL, r & ~O_NONBLOCK) == -1)
		return err_set(e, errno, "connect %s: fcntl", id);
	return take_fd(&fd);
}
