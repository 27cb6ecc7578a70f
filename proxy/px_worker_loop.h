/* The worker threads: one event loop (epoll, edge-triggered) per thread,
 * each with its own SO_REUSEPORT listeners, so connections spread over the
 * workers and no lock is taken on the data path.  The loop accepts, hands
 * the events of client and upstream sockets to px_machine.c, ticks it once
 * a second (and when poked), frees what was closed after each batch, and
 * on the stop flag closes its listeners and drains.  The worker's state
 * and what it lends its connections are px_worker.h's. */
#ifndef PX_WORKER_LOOP_H
#define PX_WORKER_LOOP_H
#include "proxy/px_proxy.h"
#include "proxy/px_worker.h"

#include "common/err.h"

/* Makes worker idx of p with its listeners bound (worker 0 also gets the
 * admin listener).  NULL with e set. */
struct px_worker *px_worker_new(struct px_proxy *p, int idx, struct err *e);
/* Starts the worker's thread.  0, or -1 with e set. */
int px_worker_start(struct px_worker *w, struct err *e);
/* Joins the thread (it ends once p->stopping is set and the drain is
 * over) and frees the worker. */
void px_worker_join(struct px_worker *w);

#endif
