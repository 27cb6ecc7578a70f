/* The supervisor at the heart of cloche-init: starts services in dependency
 * order once their dependencies are ready, probes readiness, restarts what
 * dies with exponential backoff, restarts dependents of a service that died,
 * relays every service's output as structured log lines, reaps every child
 * (init is PID 1, so orphans land here too) and stops everything within a
 * bound on shutdown.  It runs on an hsrv event loop and arms a timer only
 * while something is starting, backing off or stopping: a steady desktop
 * costs no wake-ups. */
#ifndef CLOCHE_INIT_SUPERVISOR_H
#define CLOCHE_INIT_SUPERVISOR_H

#include "config.h"

#include "common/http_server.h"

#include <sys/types.h>

struct sup;
struct json_t;

/* Creates a supervisor for cfg (borrowed; must outlive it) on srv. */
struct sup *sup_new(struct init_config *cfg, struct hsrv *srv, struct err *e);
void sup_free(struct sup *s);

/* Starts what can start now; the rest follows from events. */
void sup_start(struct sup *s);

/* Reaps exited children and reacts; call on SIGCHLD. */
void sup_reap(struct sup *s);

/* Begins an orderly stop: SIGTERM to every service (dependents first), then
 * SIGKILL once the stop timeout passes.  Calls hsrv_stop() when all are gone. */
void sup_shutdown(struct sup *s);

/* True when every service is ready. */
int sup_all_ready(const struct sup *s);

/* A JSON object describing every service (state, pid, restarts, ...). */
struct json_t *sup_status(const struct sup *s);

#endif
