/* The port-connect path over a unix socket; see na_connect.h.  One accept
 * thread; each request is answered on a short-lived thread of its own, since
 * a connect into a sandbox may take seconds. */
#include "node-agent/na_connect.h"
#include "node-agent/na_netns.h"
#include "node-agent/na_sandbox.h"
#include "node-agent/na_test.h"

#include "common/log.h"
#include "common/nodesock.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_MS 5000
#define REQUEST_TIMEOUT_MS 5000
#define MAX_LINE 128

struct na_connect {
	struct na_node *node;
	char path[108];
	int lfd;
	int stopfd[2];
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t idle;
	int active; /* request threads still running (under mu) */
	gid_t group; /* na_connect_share(): peers of this primary group too, */
	atomic_bool shared; /* once this is set (after group) */
};

struct req {
	struct na_connect *c;
	int fd;
};

/* Reads one line (without the newline) within the request timeout.  0 or -1. */
static int read_line(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	uint64_t deadline = util_now_ms() + REQUEST_TIMEOUT_MS;

	while (got < cap - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = util_now_ms();
		ssize_t r;

		if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
			return -1;
		r = read(fd, buf + got, 1);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (buf[got] == '\n') {
			buf[got] = '\0';
			return 0;
		}
		got++;
	}
	return -1;
}

static void serve(struct na_connect *c, int fd)
{
	char line[MAX_LINE], id[NODESOCK_ID_SIZE], state[16];
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct err e = ERR_INIT;
	AUTOCLOSE int sock = -1;
	int port;
	enum nodesock_verb verb;
	uint64_t t0 = util_now_ms();

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == -1 ||
	    (cred.uid != 0 && cred.uid != geteuid() && !(atomic_load(&c->shared) && cred.gid == c->group))) {
		nodesock_send_err(fd, 403, "only root (or the socket's group) may connect into sandboxes");
		return;
	}
	if (read_line(fd, line, sizeof(line)) == -1) {
		nodesock_send_err(fd, 400, "send one line: CONNECT <id> <port>, or SECRET <id>");
		return;
	}
	verb = nodesock_parse_request(line, id, &port);
	if (verb == NODESOCK_SECRET) {
		/* The proxy supplies the desktop's VNC secret itself, so the
		 * noVNC link from acquire opens it in one click. */
		char secret[64], ok[80];

		if (!na_valid_id(id) || !na_node_secret(c->node, id, secret, sizeof(secret))) {
			nodesock_send_err(fd, 404, "no such sandbox");
			return;
		}
		snprintf(ok, sizeof(ok), "OK %s\n", secret);
		(void)send(fd, ok, strlen(ok), MSG_NOSIGNAL);
		explicit_bzero(secret, sizeof(secret));
		explicit_bzero(ok, sizeof(ok));
		return;
	}
	if (verb != NODESOCK_CONNECT) {
		nodesock_send_err(fd, 400, "send one line: CONNECT <id> <port>, or SECRET <id>");
		return;
	}
	if (port < 1 || port > 65535 || !na_valid_id(id)) {
		nodesock_send_err(fd, 400, "bad sandbox id or port");
		return;
	}
	na_test_pause(NA_HOOK_CONNECT);
	if (!na_node_state(c->node, id, state, sizeof(state))) {
		nodesock_send_err(fd, 404, "no such sandbox");
		return;
	}
	if (strcmp(state, "ready") != 0) {
		snprintf(line, sizeof(line), "sandbox is %s", state);
		nodesock_send_err(fd, 409, line);
		return;
	}
	sock = na_netns_connect(id, port, CONNECT_TIMEOUT_MS, &e);
	if (sock == -1) {
		nodesock_send_err(fd, e.code == ETIMEDOUT ? 504 : 502, e.msg);
		log_info("port connect failed", "{s:s, s:i, s:i, s:s}", "id", id, "port", port,
			 "pid", (int)cred.pid, "error", e.msg);
		return;
	}
	if (nodesock_send_ok(fd, sock) == -1)
		return;
	log_debug("port connect", "{s:s, s:i, s:i, s:I}", "id", id, "port", port, "pid",
		  (int)cred.pid, "ms", (json_int_t)(util_now_ms() - t0));
}

static void *req_thread(void *arg)
{
	struct req *r = arg;

	struct na_connect *c = r->c;

	serve(c, r->fd);
	close(r->fd);
	free(r);
	pthread_mutex_lock(&c->mu);
	if (--c->active == 0)
		pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static void *accept_thread(void *arg)
{
	struct na_connect *c = arg;

	for (;;) {
		struct pollfd p[2] = {{.fd = c->lfd, .events = POLLIN},
				      {.fd = c->stopfd[0], .events = POLLIN}};
		pthread_attr_t attr;
		pthread_t th;
		struct req *r;
		int fd;

		if (poll(p, 2, -1) == -1 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd == -1)
			continue;
		r = malloc(sizeof(*r));
		if (!r) {
			close(fd);
			continue;
		}
		r->c = c;
		r->fd = fd;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		pthread_mutex_lock(&c->mu);
		c->active++;
		pthread_mutex_unlock(&c->mu);
		if (pthread_create(&th, &attr, req_thread, r) != 0) {
			pthread_mutex_lock(&c->mu);
			c->active--;
			pthread_mutex_unlock(&c->mu);
			nodesock_send_err(fd, 503, "busy");
			close(fd);
			free(r);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

struct na_connect *na_connect_start(struct na_node *n, const char *path, struct err *e)
{
	struct na_connect *c = calloc(1, sizeof(*c));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	mode_t old;
	int r;

	if (!c) {
		err_set(e, ENOMEM, "connect socket");
		return NULL;
	}
	c->node = n;
	c->lfd = -1;
	c->stopfd[0] = c->stopfd[1] = -1;
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->idle, &ca);
		pthread_condattr_destroy(&ca);
		pthread_mutex_init(&c->mu, NULL);
	}
	if (strlen(path) >= sizeof(sa.sun_path)) {
		err_set(e, 0, "--connect-socket `%s` is too long", path);
		goto fail;
	}
	snprintf(c->path, sizeof(c->path), "%s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->lfd == -1 || pipe2(c->stopfd, O_CLOEXEC) == -1) {
		err_set(e, errno, "connect socket");
		goto fail;
	}
	/* A live socket there belongs to another agent: do not steal it. */
	if (connect(c->lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		err_set(e, 0, "`%s` is served by another process (another cloche-node?)", path);
		goto fail;
	}
	close(c->lfd);
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->lfd == -1) {
		err_set(e, errno, "connect socket");
		goto fail;
	}
	unlink(path);
	old = umask(0177); /* the socket file is 0600 from the start */
	r = bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r == -1 || listen(c->lfd, 64) == -1) {
		err_set(e, errno, "listen on `%s`", path);
		goto fail;
	}
	r = pthread_create(&c->th, NULL, accept_thread, c);
	if (r != 0) {
		err_set(e, r, "connect socket thread");
		unlink(path);
		goto fail;
	}
	return c;
fail:
	if (c->lfd != -1)
		close(c->lfd);
	if (c->stopfd[0] != -1) {
		close(c->stopfd[0]);
		close(c->stopfd[1]);
	}
	free(c);
	return NULL;
}

bool na_connect_stop(struct na_connect *c)
{
	struct timespec until;
	bool idle;

	if (!c)
		return true;
	if (write(c->stopfd[1], "x", 1) == 1)
		pthread_join(c->th, NULL);
	close(c->lfd);
	unlink(c->path);
	/* A request reads its line and connects within these bounds. */
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (REQUEST_TIMEOUT_MS + CONNECT_TIMEOUT_MS) / 1000 + 1;
	pthread_mutex_lock(&c->mu);
	while (c->active > 0 &&
	       pthread_cond_timedwait(&c->idle, &c->mu, &until) != ETIMEDOUT)
		;
	idle = c->active == 0;
	pthread_mutex_unlock(&c->mu);
	if (!idle) {
		log_warn("port-connect requests still running at stop", "{s:i}", "requests",
			 c->active);
		return false;
	}
	close(c->stopfd[0]);
	close(c->stopfd[1]);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return true;
}

int na_connect_request(const char *path, const char *id, int port, struct err *e)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	AUTOCLOSE int fd = -1;
	char line[NODESOCK_LINE_MAX], buf[NODESOCK_LINE_MAX];
	const char *msg;
	ssize_t n;
	int sock, status, len;

	if (strlen(path) >= sizeof(sa.sun_path))
		return err_set(e, 0, "socket path `%s` is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		return err_set(e, errno, "connect to cloche-node at `%s`", path);
	len = nodesock_connect_line(line, sizeof(line), id, port);
	if (len < 0 || util_write_all(fd, line, (size_t)len) == -1)
		return err_set(e, errno, "send request");
	n = nodesock_recv(fd, buf, sizeof(buf), &sock);
	if (n <= 0)
		return err_set(e, n == 0 ? 0 : errno, "no answer from cloche-node");
	switch (nodesock_parse_answer(buf, &status, &msg)) {
	case 1:
		if (sock != -1)
			return sock;
		return err_set(e, 0, "cloche-node answered OK without a socket");
	case 0:
		if (sock != -1)
			close(sock);
		return err_http(e, status, "%s", msg);
	default:
		if (sock != -1)
			close(sock);
		return err_set(e, 0, "unexpected answer `%.60s`", buf);
	}
}

int na_connect_relay_stdio(int fd, struct err *e)
{
	char buf[16384];
	bool in_open = true, out_open = true;

	while (out_open) {
		struct pollfd p[2] = {{.fd = in_open ? 0 : -1, .events = POLLIN},
				      {.fd = out_open ? fd : -1, .events = POLLIN}};
		ssize_t n;

		if (poll(p, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			return err_set(e, errno, "poll");
		}
		if (p[0].revents) {
			n = read(0, buf, sizeof(buf));
			if (n <= 0) {
				in_open = false;
				shutdown(fd, SHUT_WR);
			} else if (util_write_all(fd, buf, (size_t)n) == -1) {
				return err_set(e, errno, "send");
			}
		}
		if (p[1].revents) {
			n = read(fd, buf, sizeof(buf));
			if (n <= 0)
				out_open = false;
			else if (util_write_all(1, buf, (size_t)n) == -1)
				return err_set(e, errno, "write stdout");
		}
	}
	return 0;
}

int na_connect_share(struct na_connect *c, const char *group, struct err *e)
{
	struct group gr, *g = NULL;
	char buf[4096];

	if (getgrnam_r(group, &gr, buf, sizeof(buf), &g) != 0 || !g)
		return err_set(e, 0, "--connect-socket-group: no group `%s`", group);
	if (chown(c->path, 0, g->gr_gid) == -1 || chmod(c->path, 0660) == -1)
		return err_set(e, errno, "--connect-socket-group: `%s`", c->path);
	c->group = g->gr_gid;
	atomic_store(&c->shared, true);
	return 0;
}
