/* The worker threads and their event loops; see px_worker_loop.h. */
#include "proxy/px_worker_loop.h"
#include "proxy/px_conn.h"
#include "proxy/px_machine.h"

#include "common/log.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define TICK_MS 1000

/* ---- listeners ---- */

static int listener(const char *addr, int port, struct err *e)
{
	struct sockaddr_storage ss = {0};
	socklen_t sl;
	int one = 1;
	AUTOCLOSE int fd = -1;

	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
			return err_set(e, 0, "`%s` is not an IP address", addr);
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
			return err_set(e, 0, "`%s` is not an IP address", addr);
		sl = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return err_set(e, errno, "socket");
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) == -1)
		return err_set(e, errno, "bind %s:%d", addr, port);
	if (listen(fd, 4096) == -1)
		return err_set(e, errno, "listen %s:%d", addr, port);
	return take_fd(&fd);
}

/* Opens one listener per comma-separated address of list. */
static int listen_all(struct px_worker *w, const char *list, int port, bool admin, struct err *e)
{
	char copy[512], *save = NULL;
	struct epoll_event ev = {.events = EPOLLIN};

	snprintf(copy, sizeof(copy), "%s", list);
	for (char *a = strtok_r(copy, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
		struct px_listen *l;

		if (w->nls == PX_MAX_LISTEN)
			return err_set(e, 0, "more than %d listen addresses", PX_MAX_LISTEN);
		l = &w->ls[w->nls];
		l->fd = listener(a, port, e);
		if (l->fd == -1)
			return -1;
		l->ev.kind = admin ? PX_EV_ADMIN_LISTEN : PX_EV_LISTEN;
		l->admin = admin;
		w->nls++;
		ev.data.ptr = l;
		if (epoll_ctl(w->ep, EPOLL_CTL_ADD, l->fd, &ev) == -1)
			return err_set(e, errno, "epoll");
	}
	return 0;
}

static void close_listeners(struct px_worker *w)
{
	for (int i = 0; i < w->nls; i++)
		if (w->ls[i].fd >= 0)
			close(w->ls[i].fd);
	w->nls = 0;
	w->closing = true;
	w->drain_deadline = w->now + (uint64_t)w->p->s.drain_timeout_ms;
}

struct px_worker *px_worker_new(struct px_proxy *p, int idx, struct err *e)
{
	struct px_worker *w = calloc(1, sizeof(*w));
	struct epoll_event ev = {.events = EPOLLIN};

	if (!w) {
		err_set(e, ENOMEM, "worker");
		return NULL;
	}
	w->p = p;
	w->idx = idx;
	w->poke = -1;
	w->blocks = calloc(PX_MAX_BLOCKS, sizeof(char *));
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->poke = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!w->blocks || w->ep == -1 || w->poke == -1) {
		err_set(e, errno, "worker %d: epoll", idx);
		goto fail;
	}
	w->pev.kind = PX_EV_POKE;
	if (listen_all(w, p->s.listen, p->s.port, false, e) == -1)
		goto fail;
	if (idx == 0 && p->s.admin_port > 0 &&
	    listen_all(w, p->s.admin_listen, p->s.admin_port, true, e) == -1) {
		err_wrap(e, "admin listener");
		goto fail;
	}
	ev.data.ptr = &w->pev;
	epoll_ctl(w->ep, EPOLL_CTL_ADD, w->poke, &ev);
	return w;
fail:
	close_listeners(w);
	if (w->ep >= 0)
		close(w->ep);
	if (w->poke >= 0)
		close(w->poke);
	free(w->blocks);
	free(w);
	return NULL;
}

static void accept_all(struct px_worker *w, int lfd, bool admin)
{
	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE)
				log_warn("out of file descriptors: a connection waits", "{s:i}",
					 "worker", w->idx);
			return;
		}
		px_conn_accept(w, fd, admin);
	}
}

static void *loop(void *arg)
{
	struct px_worker *w = arg;
	struct epoll_event evs[MAX_EVENTS];
	uint64_t last_tick = util_now_ms();

	for (;;) {
		int n = epoll_wait(w->ep, evs, MAX_EVENTS, TICK_MS / 4);
		bool poked = false;

		w->now = util_now_ms();
		for (int i = 0; i < n; i++) {
			struct px_ev *ev = evs[i].data.ptr;

			switch (ev->kind) {
			case PX_EV_LISTEN:
			case PX_EV_ADMIN_LISTEN:
				if (!w->closing)
					accept_all(w, ((struct px_listen *)ev)->fd,
						   ((struct px_listen *)ev)->admin);
				break;
			case PX_EV_POKE: {
				uint64_t v;

				(void)!read(w->poke, &v, sizeof(v));
				poked = true;
				break;
			}
			case PX_EV_CLIENT:
				px_machine_event((struct px_conn *)ev, evs[i].events);
				break;
			case PX_EV_UP:
				px_machine_up_event(w, (struct px_up *)ev, evs[i].events);
				break;
			case PX_EV_DEAD:
				break;
			}
		}
		if (atomic_load(&w->p->stopping) && !w->closing) {
			close_listeners(w);
			poked = true;
		}
		if (poked || w->now - last_tick >= TICK_MS) {
			last_tick = w->now;
			px_machine_tick(w, poked);
		}
		for (size_t i = 0; i < w->ndead; i++)
			free(w->dead[i]);
		w->ndead = 0;
		if (w->closing && (!w->conns || w->now >= w->drain_deadline)) {
			if (w->conns)
				log_info("drain time is over: closing what is left", "{s:i}", "worker",
					 w->idx);
			px_conn_close_all(w);
			for (size_t i = 0; i < w->ndead; i++)
				free(w->dead[i]);
			w->ndead = 0;
			break;
		}
	}
	return NULL;
}

int px_worker_start(struct px_worker *w, struct err *e)
{
	int rc = pthread_create(&w->th, NULL, loop, w);

	return rc ? err_set(e, rc, "start worker %d", w->idx) : 0;
}

void px_worker_join(struct px_worker *w)
{
	pthread_join(w->th, NULL);
	close_listeners(w);
	close(w->ep);
	close(w->poke);
	while (w->nblocks)
		free(w->blocks[--w->nblocks]);
	free(w->blocks);
	free(w->dead);
	free(w);
}
