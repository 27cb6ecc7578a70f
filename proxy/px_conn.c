/* A client connection's life: taken over from accept, ended at once by
 * px_conn_free(), or after an answer of the proxy's own (ANSWER, then
 * LINGER to let the client read it before the close); see px_conn.h. */
#include "proxy/px_conn.h"
#include "proxy/px_answer.h"
#include "proxy/px_proxy.h"

#include "common/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINGER_MS 2000 /* reading what a client still sends after our last answer */

/* ---- birth and end ---- */

void px_conn_accept(struct px_worker *w, int fd, bool admin)
{
	struct px_proxy *p = w->p;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct px_conn *c;
	int one = 1;

	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->ev.kind = PX_EV_CLIENT;
	c->w = w;
	c->fd = fd;
	c->admin = admin;
	c->wr = true;
	buf_init(&c->c2u.hdr, 64 << 10);
	buf_init(&c->u2c.hdr, 64 << 10);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->peer,
				  sizeof(c->peer));
		else if (ss.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->peer,
				  sizeof(c->peer));
	}
	snprintf(c->addr, sizeof(c->addr), "%s", c->peer[0] ? c->peer : "unknown");
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	atomic_fetch_add(&p->st.conns, 1);
	atomic_fetch_add(&p->st.accepted, 1);
	c->st = PX_CS_HEAD;
	c->deadline = w->now + (uint64_t)p->s.head_timeout_ms;
	if (!admin && (atomic_load(&p->st.conns) > p->s.max_conns || !px_addr_take(p, c->peer))) {
		/* Over a limit: a short 503 and close.  Counted against nothing. */
		c->peer[0] = '\0';
		if (!admin)
			c->admin = true; /* nothing to give back at close */
		atomic_fetch_add(&p->st.refused_limit, 1);
		static const char full[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
					   "Retry-After: 1\r\nConnection: close\r\n\r\n";

		if (!p->s.tls)
			(void)send(fd, full, sizeof(full) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		px_conn_free(c);
		return;
	}
	if (!admin && p->s.tls) {
		c->ssl = px_tls_accept(p->s.tls, fd);
		c->tls = true;
		if (!c->ssl) {
			px_conn_free(c);
			return;
		}
	}
	if (px_worker_watch(w, fd, &c->ev) == -1)
		px_conn_free(c);
}

void px_conn_leave_rt(struct px_conn *c)
{
	px_conn_set_waiting(c, false);
	if (c->rt) {
		atomic_fetch_sub(&c->rt->conns, 1);
		px_rt_put(c->w->p->routes, c->rt);
		c->rt = NULL;
	}
}

void px_conn_free(struct px_conn *c)
{
	struct px_worker *w = c->w;

	if (c->up)
		px_up_close(w, c->up);
	c->up = NULL;
	if (c->st == PX_CS_TUNNEL)
		atomic_fetch_sub(&w->p->st.tunnels_open, 1);
	px_conn_leave_rt(c);
	if (c->ssl)
		px_tls_close(c->ssl);
	c->ssl = NULL;
	if (c->fd >= 0)
		close(c->fd);
	if (!c->admin)
		px_addr_give(w->p, c->peer);
	px_dir_free(w, &c->c2u);
	px_dir_free(w, &c->u2c);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	atomic_fetch_sub(&w->p->st.conns, 1);
	c->ev.kind = PX_EV_DEAD;
	c->fd = -1;
	px_worker_defer_free(w, c);
}

void px_conn_close_all(struct px_worker *w)
{
	while (w->conns)
		px_conn_free(w->conns);
	while (w->idle) {
		struct px_up *up = w->idle;

		w->idle = up->next;
		px_up_close(w, up);
	}
	w->nidle = 0;
}

/* ---- answers of our own ---- */

enum px_step px_conn_answer(struct px_conn *c, int status, const char *code, const char *msg,
			    const char *headers)
{
	struct px_proxy *p = c->w->p;
	struct err e = ERR_INIT;
	struct px_answer a = {.status = status, .code = code, .message = msg, .html = c->html,
			      .headers = headers};

	if (status >= 500 || status == 408 || status == 400 || status == 431 || status == 413)
		log_info("refused a request", "{s:i, s:s, s:s, s:s, s:s}", "status", status, "code",
			 code, "message", msg, "client", c->addr, "sandbox", c->route.id);
	else
		log_debug("refused a request", "{s:i, s:s, s:s, s:s}", "status", status, "code", code,
			  "message", msg, "client", c->addr);
	/* Keep the connection only when the request ended with its head. */
	if (c->st != PX_CS_HEAD && c->st != PX_CS_ROUTE)
		c->close_after = true;
	if (c->c2u.frame != PX_BODY_NONE || c->sent || c->upgrade || !c->keep ||
	    atomic_load(&p->stopping))
		c->close_after = true;
	a.keep_alive = !c->close_after;
	if (!c->close_after && !c->consumed) {
		/* the head was all of the request: the next one starts after it */
		c->c2u.off += c->head_len;
		c->consumed = true;
	}
	c->c2u.end = c->c2u.off;
	if (c->up) {
		px_up_close(c->w, c->up);
		c->up = NULL;
	}
	c->status = status;
	atomic_fetch_add(&p->st.status[status / 100], 1);
	if (c->sent) {
		/* The client has part of a response: all that can be done is to cut it. */
		c->st = PX_CS_LINGER;
		return PX_AGAIN;
	}
	buf_reset(&c->u2c.hdr);
	c->u2c.hoff = 0;
	if (c->u2c.b)
		c->u2c.off = c->u2c.len = c->u2c.end = 0;
	if (px_answer_build(&a, &c->u2c.hdr, &e) == -1) {
		c->close_after = true;
		c->st = PX_CS_LINGER;
		return PX_AGAIN;
	}
	c->st = PX_CS_ANSWER;
	return PX_AGAIN;
}

/* ---- ANSWER and LINGER ---- */

enum px_step px_conn_step_answer(struct px_conn *c)
{
	struct px_worker *w = c->w;
	int r = px_dir_write(w, &c->u2c, c->fd, c->ssl, &c->wr, &c->rd, NULL);

	if (r == -1) {
		px_conn_free(c);
		return PX_GONE;
	}
	if (r == 0)
		return PX_WAIT;
	buf_reset(&c->u2c.hdr);
	c->u2c.hoff = 0;
	if (c->close_after || !c->keep) {
		c->st = PX_CS_LINGER;
		return PX_AGAIN;
	}
	px_dir_trim(w, &c->c2u);
	c->st = PX_CS_HEAD;
	c->deadline = w->now + (uint64_t)w->p->s.idle_timeout_ms;
	return PX_AGAIN;
}

/* The last answer is out: shut our side, read (and drop) what the client
 * still sends, so our answer is not lost to a reset, then close. */
enum px_step px_conn_step_linger(struct px_conn *c)
{
	struct px_worker *w = c->w;

	if (!c->lingering) {
		c->lingering = true;
		if (c->up) {
			px_up_close(w, c->up);
			c->up = NULL;
		}
		px_dir_free(w, &c->u2c);
		if (c->ssl)
			px_tls_shutdown(c->ssl);
		shutdown(c->fd, SHUT_WR);
		c->deadline = w->now + LINGER_MS;
	}
	for (;;) {
		char sink[4096];
		ssize_t n;

		if (!c->rd)
			return PX_WAIT;
		n = read(c->fd, sink, sizeof(sink));
		if (n > 0 || (n == -1 && errno == EINTR))
			continue;
		if (n == -1 && errno == EAGAIN) {
			c->rd = false;
			return PX_WAIT;
		}
		px_conn_free(c);
		return PX_GONE;
	}
}
