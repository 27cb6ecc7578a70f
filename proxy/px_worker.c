/* A worker's state as the connections on its loop use it; see px_worker.h. */
#include "proxy/px_worker.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_IDLE 1024     /* kept upstream connections per worker */

/* ---- buffers, idle upstreams ---- */

char *px_block_get(struct px_worker *w)
{
	if (w->nblocks)
		return w->blocks[--w->nblocks];
	return malloc(PX_BLOCK);
}

void px_block_put(struct px_worker *w, char *b)
{
	if (w->nblocks < PX_MAX_BLOCKS)
		w->blocks[w->nblocks++] = b;
	else
		free(b);
}

void px_worker_defer_free(struct px_worker *w, void *obj)
{
	if (w->ndead == w->capdead) {
		size_t n = w->capdead ? w->capdead * 2 : 64;
		void **d = realloc(w->dead, n * sizeof(*d));

		if (!d)
			return; /* leak one object rather than risk a use after free */
		w->dead = d;
		w->capdead = n;
	}
	w->dead[w->ndead++] = obj;
}

int px_worker_watch(struct px_worker *w, int fd, struct px_ev *ev)
{
	struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = ev};

	return epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &e);
}

void px_up_close(struct px_worker *w, struct px_up *up)
{
	if (up->fd >= 0)
		close(up->fd);
	if (up->cfd >= 0)
		close(up->cfd);
	up->fd = up->cfd = -1;
	if (up->rt)
		px_rt_put(w->p->routes, up->rt);
	up->rt = NULL;
	up->ev.kind = PX_EV_DEAD;
	px_worker_defer_free(w, up);
}

struct px_up *px_idle_take(struct px_worker *w, struct px_rt *rt, int port)
{
	for (struct px_up **pp = &w->idle; *pp; pp = &(*pp)->next) {
		struct px_up *up = *pp;

		if (up->rt == rt && up->port == port) {
			*pp = up->next;
			up->next = NULL;
			w->nidle--;
			return up;
		}
	}
	return NULL;
}

void px_idle_put(struct px_worker *w, struct px_up *up)
{
	char b;

	up->conn = NULL;
	if (up->hup) {
		px_up_close(w, up);
		return;
	}
	if (up->rd) {
		/* The last read did not see EAGAIN: a close (or stray bytes) may
		 * be waiting, which no new edge would report. */
		ssize_t n = recv(up->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

		if (n >= 0 || errno != EAGAIN) {
			px_up_close(w, up);
			return;
		}
		up->rd = false;
	}
	if (w->nidle >= MAX_IDLE || atomic_load(&w->p->stopping)) {
		px_up_close(w, up);
		return;
	}
	up->idle_since = w->now;
	up->next = w->idle;
	w->idle = up;
	w->nidle++;
}

void px_worker_poke(struct px_worker *w)
{
	uint64_t one = 1;

	(void)!write(w->poke, &one, sizeof(one));
}
