/* A worker: the state of one event loop (epoll, edge-triggered, one per
 * thread, see px_worker_loop.h) and what it lends the objects on it.  A
 * worker owns its connections and its kept upstream connections, so no
 * lock is taken on the data path; its I/O blocks are lent to connections
 * only while bytes are in flight.  Other threads talk to it through
 * px_worker_poke(), which makes it look again at routes, drains and the
 * stop flag.
 *
 * This is the lower half of the worker: the connections (px_conn.h and
 * the state files) use it, and the loop in px_worker_loop.c calls them. */
#ifndef PX_WORKER_H
#define PX_WORKER_H
#include "proxy/px_head.h"
#include "proxy/px_proxy.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct px_conn;

/* What the worker's epoll reports on: a tag first in every registered
 * object. */
enum px_ev_kind { PX_EV_LISTEN, PX_EV_ADMIN_LISTEN, PX_EV_POKE, PX_EV_CLIENT, PX_EV_UP, PX_EV_DEAD };
struct px_ev {
	enum px_ev_kind kind;
};

/* A connection into a sandbox (or to another proxy), in use by one client
 * connection or kept idle for the next request to the same port. */
struct px_up {
	struct px_ev ev;
	int fd;
	int cfd;                 /* the node agent's socket while connecting through it */
	struct px_rt *rt;        /* a reference */
	int port;
	bool remote;             /* to another proxy */
	bool connected;
	bool rd, wr;             /* readiness (edge-triggered) */
	bool hup;                /* the server's FIN (or an error) was reported */
	struct px_conn *conn;    /* the user, or NULL when idle */
	uint64_t idle_since;
	struct px_up *next;      /* in the worker's idle list */
};

#define PX_MAX_LISTEN 8

/* A listening socket (the admin one too). */
struct px_listen {
	struct px_ev ev;
	int fd;
	bool admin;
};

struct px_worker {
	struct px_proxy *p;
	int idx;
	int ep, poke;
	struct px_listen ls[PX_MAX_LISTEN];
	int nls;
	pthread_t th;
	struct px_conn *conns;   /* every client connection of this worker */
	struct px_ev pev;
	/* Closed this turn, freed after it: events already fetched may name them. */
	void **dead;
	size_t ndead, capdead;
	struct px_up *idle;      /* kept upstream connections */
	int nidle;
	char **blocks;           /* free I/O buffers */
	int nblocks;
	unsigned seen_gen;       /* route generation last looked at */
	uint64_t now;            /* refreshed each loop turn */
	bool closing;            /* listeners closed */
	uint64_t drain_deadline;
	struct px_head head;     /* the connections' scratch head (one at a time) */
};

#define PX_BLOCK 32768       /* one I/O buffer */
#define PX_MAX_BLOCKS 64     /* free I/O buffers kept per worker */

/* Wakes the worker from another thread. */
void px_worker_poke(struct px_worker *w);

/* For the connections: an I/O block from the worker's free list (or
 * malloc), and back.  NULL when out of memory. */
char *px_block_get(struct px_worker *w);
void px_block_put(struct px_worker *w, char *b);
/* Frees obj (a closed connection or upstream, its tag set to PX_EV_DEAD)
 * once the current batch of events is done. */
void px_worker_defer_free(struct px_worker *w, void *obj);
/* Registers fd (edge-triggered, in and out) with ev as its tag.  0 or -1. */
int px_worker_watch(struct px_worker *w, int fd, struct px_ev *ev);
/* A kept upstream connection to (rt, port), taken off the idle list, or NULL. */
struct px_up *px_idle_take(struct px_worker *w, struct px_rt *rt, int port);
/* Keeps up for the next request to the same port (or closes it when the
 * list is full). */
void px_idle_put(struct px_worker *w, struct px_up *up);
/* Closes an upstream connection: by a reset, as every upstream socket has
 * SO_LINGER 0 from the start (px_upstream.c's no_fin), so nothing lingers in
 * the sandbox. */
void px_up_close(struct px_worker *w, struct px_up *up);

#endif
