/* The connection state machine; see px_machine.h and px_conn.h.
 *
 *	HEAD -> ROUTE -> CONNECT -> PROXY -> HEAD (keep-alive) ...
 *	                                  -> TUNNEL (after 101)
 *	any -> ANSWER (the proxy's own answer) -> HEAD or LINGER -> closed
 *
 * Every state has a step function that makes what progress it can and
 * says whether to run again (the state changed), wait for an event, or
 * stop (the connection is gone).  Sockets are edge-triggered: c->rd/c->wr
 * (and up->rd/up->wr) remember readiness until a call says EAGAIN.  Events
 * and the worker's tick are what run the steps; the tick also ends what
 * took too long, was drained, or rode on a share link that ended. */
#include "proxy/px_machine.h"
#include "proxy/px_relay.h"
#include "proxy/px_request.h"
#include "proxy/px_upstream.h"

#include <stdio.h>
#include <sys/epoll.h>
#include <time.h>

static void run(struct px_conn *c)
{
	for (;;) {
		enum px_step s;

		switch (c->st) {
		case PX_CS_HEAD: s = px_request_step_head(c); break;
		case PX_CS_ROUTE: s = px_upstream_step_route(c); break;
		case PX_CS_CONNECT: s = px_upstream_step_connect(c); break;
		case PX_CS_PROXY: s = px_relay_step_proxy(c); break;
		case PX_CS_TUNNEL: s = px_relay_step_tunnel(c); break;
		case PX_CS_ANSWER: s = px_conn_step_answer(c); break;
		default: s = px_conn_step_linger(c); break;
		}
		if (s == PX_GONE)
			return;
		if (s == PX_WAIT) {
			c->head_ok = false;
			return;
		}
	}
}

void px_machine_event(struct px_conn *c, uint32_t ev)
{
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->rd = true;
	if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->hup = true;
	if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		c->wr = true;
	run(c);
}

void px_machine_up_event(struct px_worker *w, struct px_up *up, uint32_t ev)
{
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		up->rd = true;
	if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		up->hup = true;
	if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		up->wr = true;
	if (up->conn) {
		run(up->conn);
		return;
	}
	/* A kept connection said something (the server closed it): drop it. */
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		struct px_up **pp = &w->idle;

		while (*pp && *pp != up)
			pp = &(*pp)->next;
		if (*pp) {
			*pp = up->next;
			w->nidle--;
		}
		px_up_close(w, up);
	}
}

/* A connection on a share link whose link expired or was revoked since. */
static bool share_ended(struct px_conn *c)
{
	unsigned gen;

	if ((long long)time(NULL) >= c->share_exp)
		return true;
	if (!c->rt || (gen = atomic_load(&c->rt->share_gen)) == c->share_gen)
		return false;
	c->share_gen = gen;
	return px_rt_share_revoked(c->w->p->routes, c->rt, c->share);
}

void px_machine_tick(struct px_worker *w, bool poked)
{
	struct px_proxy *p = w->p;
	bool stopping = atomic_load(&p->stopping);
	struct px_conn *c, *next;

	for (c = w->conns; c; c = next) {
		next = c->next;
		if (c->rt && atomic_load(&c->rt->drain_gen) != c->drain_gen) {
			/* Drained: cut it, our side first, by a reset. */
			px_conn_free(c);
			continue;
		}
		if (c->share[0] && share_ended(c)) {
			/* a share link that expired or was revoked: its noVNC goes */
			atomic_fetch_add(&p->st.share_cut, 1);
			px_conn_free(c);
			continue;
		}
		if (stopping && c->st == PX_CS_HEAD && !(c->c2u.b && c->c2u.len > c->c2u.off)) {
			px_conn_free(c);
			continue;
		}
		if (stopping)
			c->keep = false;
		if (c->deadline && w->now >= c->deadline) {
			atomic_fetch_add(&p->st.timeouts, 1);
			switch (c->st) {
			case PX_CS_HEAD:
				if (c->c2u.b && c->c2u.len > c->c2u.off) {
					c->keep = false;
					c->deadline = 0;
					(void)px_conn_answer(c, 408, "head_timeout",
							     "the request head did not arrive in time", NULL);
					run(c);
				} else {
					px_conn_free(c);
				}
				continue;
			case PX_CS_ROUTE:
				c->deadline = 0;
				if (c->waiting) {
					char msg[200];

					snprintf(msg, sizeof(msg),
						 "sandbox %s did not become ready within %d s",
						 c->route.id, p->s.wait_timeout_ms / 1000);
					(void)px_conn_answer(c, 504, "wake_timeout", msg, NULL);
				} else {
					(void)px_conn_answer(c, 504, "route_timeout",
							     "the portal did not say where the sandbox is in time",
							     NULL);
				}
				run(c);
				continue;
			case PX_CS_CONNECT:
				c->deadline = 0;
				(void)px_conn_answer(c, 504, "connect_timeout",
						     "no connection into the sandbox in time", NULL);
				run(c);
				continue;
			case PX_CS_PROXY:
				c->deadline = 0;
				if (c->sent) {
					px_conn_free(c);
					continue;
				}
				(void)px_conn_answer(c, 504, "upstream_timeout",
						     "the sandbox's server did not answer in time", NULL);
				run(c);
				continue;
			default:
				px_conn_free(c);
				continue;
			}
		}
		if (poked && c->st == PX_CS_ROUTE)
			run(c);
	}
	/* Kept upstream connections: expiry, drains, stop. */
	for (struct px_up **pp = &w->idle; *pp;) {
		struct px_up *up = *pp;
		bool drained = up->rt && atomic_load(&up->rt->drain_until_ms) > w->now;

		if (stopping || drained || w->now - up->idle_since >= (uint64_t)p->s.upstream_idle_ms) {
			*pp = up->next;
			w->nidle--;
			px_up_close(w, up);
			continue;
		}
		pp = &up->next;
	}
}
