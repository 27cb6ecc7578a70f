/* The node API (docs/node.md): cloche-node's HTTP routes over its node
 * (na_sandbox.h), behind the node credential.  Slow requests (create,
 * destroy, checkpoints, imports, thumbnails, recordings) run as jobs
 * (common/job.h) and answer through deferred responses. */
#ifndef CLOCHE_NA_API_H
#define CLOCHE_NA_API_H

#include "common/err.h"

#include <stddef.h>

struct hsrv;
struct na_node;
struct na_api;

/* Adds the API's routes to srv.  Every route but /healthz asks for the
 * bearer credential cred (cred_len bytes, copied; fewer than 256).  node
 * and srv must outlive the API.  NULL with e set; srv may then hold some
 * of the routes, so the caller gives it up too (a start-up failure). */
struct na_api *na_api_new(struct hsrv *srv, struct na_node *node, const char *cred,
			  size_t cred_len, struct err *e);

/* Once the loop stopped: waits up to ms for the requests still at work
 * (a create, a destroy...).  Returns how many still run; 0 ms only counts. */
int na_api_wait(struct na_api *api, long ms);

/* Releases the answers of work that ended after the loop's last round, the
 * normal way while their connections still exist (they are never sent),
 * and frees api.  Only when na_api_wait() returned 0, before hsrv_free().
 * NULL is fine. */
void na_api_free(struct na_api *api);

#endif
