/* ROUTE and CONNECT: where the sandbox is, and a connection into it.
 *
 * ROUTE waits for the route entry's answer (a request for a sandbox that
 * is starting, asleep, waking or being drained for a checkpoint is held,
 * which is what asks the portal for its wake), then builds the head for
 * the sandbox and takes a kept upstream connection or starts a new one:
 * through the node agent's socket, which answers with the connected socket
 * (SCM_RIGHTS), or by TCP to a static route or to the owning node's proxy.
 * CONNECT waits for that connection; see px_upstream.h. */
#include "proxy/px_upstream.h"
#include "proxy/px_rewrite.h"

#include "common/nodesock.h"
#include "common/sbtoken.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

/* An upstream never gets a FIN from us, only a reset, whoever ends the
 * connection and even when we die: a TIME_WAIT comes only from the other
 * side's FIN, and inside a sandbox one refuses a checkpoint for a minute. */
static void no_fin(int fd)
{
	struct linger l = {1, 0};

	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl != -1)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int px_upstream_new(struct px_conn *c, const struct px_rt_view *v, struct err *e)
{
	struct px_worker *w = c->w;
	struct px_up *up = calloc(1, sizeof(*up));
	int fd = -1;

	if (!up)
		return err_set(e, ENOMEM, "upstream");
	up->ev.kind = PX_EV_UP;
	up->fd = up->cfd = -1;
	up->port = c->route.port;
	up->remote = v->kind == PX_RT_REMOTE;
	up->conn = c;
	if (v->kind == PX_RT_LOCAL) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		char line[NODESOCK_LINE_MAX];
		int n = nodesock_connect_line(line, sizeof(line), v->sid, c->route.port);

		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->p->s.node_socket);
		if (n < 0 || fd == -1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
		    send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
			err_http(e, 502, "cannot reach the node agent at %s: %s", sa.sun_path,
				 strerror(errno));
			if (fd >= 0)
				close(fd);
			free(up);
			return -1;
		}
		up->cfd = fd;
	} else {
		char host[64], *colon;
		struct sockaddr_in sa = {.sin_family = AF_INET};
		long port;

		snprintf(host, sizeof(host), "%s", v->addr);
		colon = strrchr(host, ':');
		port = colon ? strtol(colon + 1, NULL, 10) : 80;
		if (colon)
			*colon = '\0';
		if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || port < 1 || port > 65535) {
			free(up);
			return err_http(e, 502, "the route's address `%s` is not ip:port", v->addr);
		}
		sa.sin_port = htons((uint16_t)port);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd >= 0) {
			int one = 1;

			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			no_fin(fd);
		}
		if (fd == -1 ||
		    (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 && errno != EINPROGRESS)) {
			err_http(e, 502, "cannot connect to %s: %s", v->addr, strerror(errno));
			if (fd >= 0)
				close(fd);
			free(up);
			return -1;
		}
		up->fd = fd;
	}
	if (px_worker_watch(w, fd, &up->ev) == -1) {
		close(fd);
		free(up);
		return err_set(e, errno, "epoll");
	}
	px_rt_ref(w->p->routes, c->rt);
	up->rt = c->rt;
	c->up = up;
	return 0;
}

/* Builds the head for the upstream from the request head (parsed again
 * when the route had to be waited for). */
static int build_up_head(struct px_conn *c, const struct px_rt_view *v, struct err *e)
{
	struct px_head *h = px_conn_head(c);
	char q[96];
	struct px_rewrite_opts o = {.client_addr = c->addr, .tls = c->tls, .upgrade = c->upgrade,
				    .keep_token = v->kind == PX_RT_REMOTE};

	if (!c->head_ok &&
	    px_head_parse(c->c2u.b + c->c2u.off, c->c2u.len - c->c2u.off, h, NULL) != PX_HEAD_OK)
		return err_http(e, 500, "the request head changed");
	c->head_ok = false;
	if (v->kind == PX_RT_LOCAL && c->route.port == 6080 && v->vnc_secret[0]) {
		/* noVNC: the proxy supplies the desktop's secret, so the link from
		 * acquire opens it in one click; a view-only share link gets the
		 * view secret instead, with which cloche-vnc drops its input. */
		char view[48];

		if (c->share[0] && c->share_mode == 'v') {
			if (sbtoken_view_secret(v->vnc_secret, view, sizeof(view)) == -1)
				return err_http(e, 500, "no view secret");
			snprintf(q, sizeof(q), "view=%s", view);
		} else {
			snprintf(q, sizeof(q), "secret=%s", v->vnc_secret);
		}
		o.add_query = q;
	}
	buf_reset(&c->c2u.hdr);
	c->c2u.hoff = 0;
	if (px_rewrite(h, &o, &c->c2u.hdr, e) == -1)
		return -1;
	c->c2u.off += c->head_len;
	c->consumed = true;
	px_dir_frame(&c->c2u, h->body, h->content_length);
	return 0;
}

enum px_step px_upstream_step_route(struct px_conn *c)
{
	struct px_proxy *p = c->w->p;
	struct err e = ERR_INIT;
	char msg[256];
	unsigned gen = atomic_load(&c->rt->gen);

	if (!c->have_view || gen != c->view_gen) {
		px_rt_view(p->routes, c->rt, &c->view);
		c->view_gen = gen;
		c->have_view = true;
	}
	/* Being saved: held like a request for a hibernated sandbox (and, like
	 * it, a reason to wake it once saved), until the node resumes us. */
	if (atomic_load(&c->rt->drain_until_ms) > c->w->now) {
		if (!c->waiting) {
			px_conn_set_waiting(c, true);
			c->deadline = c->w->now + (uint64_t)p->s.wait_timeout_ms;
		}
		return PX_WAIT;
	}
	switch (c->view.kind) {
	case PX_RT_PENDING:
		return PX_WAIT;
	case PX_RT_WAIT:
		if (!c->waiting) {
			px_conn_set_waiting(c, true);
			c->deadline = c->w->now + (uint64_t)p->s.wait_timeout_ms;
		}
		return PX_WAIT;
	case PX_RT_GONE:
		return px_conn_answer(c, 404, "unknown_sandbox",
				      c->view.why[0] ? c->view.why : "no such sandbox", NULL);
	case PX_RT_FAIL:
		return px_conn_answer(c, 502, "route_failed", c->view.why, NULL);
	default:
		break;
	}
	px_conn_set_waiting(c, false);
	if (c->share[0]) {
		c->share_gen = atomic_load(&c->rt->share_gen);
		if (px_rt_share_revoked(p->routes, c->rt, c->share))
			return px_conn_answer(c, 401, "share_revoked", "this share link was revoked", NULL);
	}
	if (build_up_head(c, &c->view, &e) == -1)
		return px_conn_answer(c, e.http_status ? e.http_status : 500, "bad_request", e.msg, NULL);
	if (px_dir_classify(&c->c2u) == -1) {
		c->keep = false;
		return px_conn_answer(c, 400, "bad_chunked", "malformed chunked request body", NULL);
	}
	c->retry_ok = c->c2u.frame == PX_BODY_NONE;
	c->up = px_idle_take(c->w, c->rt, c->route.port);
	if (c->up) {
		c->up->conn = c;
		atomic_fetch_add(&p->st.upstream_reused, 1);
		c->st = PX_CS_PROXY;
		c->deadline = c->w->now + (uint64_t)p->s.read_timeout_ms;
		return PX_AGAIN;
	}
	c->retry_ok = false;
	if (px_upstream_new(c, &c->view, &e) == -1) {
		snprintf(msg, sizeof(msg), "%s", e.msg);
		return px_conn_answer(c, 502, "upstream_unreachable", msg, NULL);
	}
	c->st = PX_CS_CONNECT;
	c->deadline = c->w->now + (uint64_t)p->s.connect_timeout_ms;
	return PX_AGAIN;
}

/* Receives the node agent's answer: "OK\n" with the socket, or
 * "ERR <status> <message>\n".  1 connected, 0 wait, -1 answered. */
static int node_answer(struct px_conn *c, enum px_step *out)
{
	struct px_up *up = c->up;
	char data[NODESOCK_LINE_MAX];
	const char *why;
	ssize_t n;
	int sock = -1, status = 502, said;
	char msg[300];

	if (!up->rd)
		return 0;
	n = nodesock_recv(up->cfd, data, sizeof(data), &sock);
	if (n == -1 && errno == EAGAIN) {
		up->rd = false;
		return 0;
	}
	said = n > 0 ? nodesock_parse_answer(data, &status, &why) : -1;
	if (said == 1 && sock >= 0) {
		close(up->cfd); /* leaves the epoll set with it */
		up->cfd = -1;
		set_nonblock(sock);
		no_fin(sock);
		up->fd = sock;
		if (px_worker_watch(c->w, sock, &up->ev) == -1) {
			*out = px_conn_answer(c, 502, "upstream_unreachable", "epoll", NULL);
			return -1;
		}
		up->connected = true;
		up->rd = false;
		up->wr = true;
		return 1;
	}
	if (sock >= 0)
		close(sock);
	if (said == 0) {
		snprintf(msg, sizeof(msg), "%s", why);
	} else {
		status = 502;
		snprintf(msg, sizeof(msg), "the node agent closed without an answer");
	}
	if (status == 404) {
		/* The route was stale: ask the portal again once. */
		px_rt_invalidate(c->w->p->routes, c->rt);
		if (!c->retried) {
			c->retried = true;
			px_up_close(c->w, up);
			c->up = NULL;
			c->c2u.off -= c->head_len;
			c->consumed = false;
			c->st = PX_CS_ROUTE;
			*out = PX_AGAIN;
			return -1;
		}
		*out = px_conn_answer(c, 404, "unknown_sandbox", msg, NULL);
	} else if (status == 409 && (!c->hold_until || c->w->now < c->hold_until)) {
		/* Not ready on its node (being saved, asleep, waking) while the
		 * route still said ready: ask the portal again and hold the request
		 * as for a hibernated sandbox (a noVNC reconnect must not get an
		 * error answer: it would not retry). */
		px_rt_invalidate(c->w->p->routes, c->rt);
		px_up_close(c->w, up);
		c->up = NULL;
		c->c2u.off -= c->head_len;
		c->consumed = false;
		if (!c->hold_until)
			c->hold_until = c->w->now + (uint64_t)c->w->p->s.wait_timeout_ms;
		px_conn_set_waiting(c, true);
		c->deadline = c->hold_until;
		c->st = PX_CS_ROUTE;
		*out = PX_WAIT;
		return -1;
	} else if (status == 409) {
		*out = px_conn_answer(c, 503, "sandbox_not_ready", msg, "Retry-After: 1\r\n");
	} else if (status == 504) {
		*out = px_conn_answer(c, 504, "upstream_timeout", msg, NULL);
	} else {
		char m2[400];

		snprintf(m2, sizeof(m2), "nothing answers on port %d of sandbox %s (%s)",
			 c->route.port, c->route.id, msg);
		*out = px_conn_answer(c, 502, "port_closed", m2, NULL);
	}
	return -1;
}

enum px_step px_upstream_step_connect(struct px_conn *c)
{
	struct px_up *up = c->up;
	struct px_proxy *p = c->w->p;
	enum px_step s;

	if (up->cfd >= 0) {
		int r = node_answer(c, &s);

		if (r == 0)
			return PX_WAIT;
		if (r < 0)
			return s;
	} else if (!up->connected) {
		int err = 0;
		socklen_t l = sizeof(err);
		char msg[200];

		if (!up->wr)
			return PX_WAIT;
		if (getsockopt(up->fd, SOL_SOCKET, SO_ERROR, &err, &l) == -1)
			err = errno;
		if (err) {
			snprintf(msg, sizeof(msg), "cannot connect to the sandbox's node: %s",
				 strerror(err));
			return px_conn_answer(c, 502, "upstream_unreachable", msg, NULL);
		}
		up->connected = true;
	}
	atomic_fetch_add(&p->st.upstream_connects, 1);
	c->st = PX_CS_PROXY;
	c->deadline = c->w->now + (uint64_t)p->s.read_timeout_ms;
	return PX_AGAIN;
}
