/* Where a sandbox lives, as far as this proxy knows: one shared table of
 * route entries and the thread that fills it.
 *
 * Workers look an id up without blocking: px_routes_get() answers with the
 * entry at once, and when it is not known yet (or is being held because the
 * sandbox is starting or waking) the resolver thread asks the portal and
 * then wakes every worker, which looks again.  Without a portal every id is
 * taken to be on this node (the node agent answers 404 for unknown ones).
 * Static routes send an id to a fixed TCP address (benchmarks, or services
 * that are not sandboxes).
 *
 * The same thread follows the portal's change feed (an entry whose sandbox
 * changed is asked again), asks the local node agent for a sandbox's VNC
 * secret once, and reports per-sandbox activity to the portal in batches.
 * Entries are reference-counted: a connection keeps its entry while it
 * lives, and the counters on it are atomics. */
#ifndef PX_ROUTE_H
#define PX_ROUTE_H
#include "common/err.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum px_rt_kind {
	PX_RT_PENDING, /* being asked */
	PX_RT_LOCAL,   /* ready on this node: connect through the node agent */
	PX_RT_TCP,     /* a static route: connect to addr */
	PX_RT_REMOTE,  /* ready on another node: forward to its proxy at addr */
	PX_RT_WAIT,    /* starting, asleep or waking: hold the request (waking it) */
	PX_RT_GONE,    /* no such sandbox (or released): 404 */
	PX_RT_FAIL,    /* the portal could not be asked, or the owner has no proxy: 502 */
};

struct px_rt {
	char id[40];
	/* Under the table's lock: */
	enum px_rt_kind kind;
	char addr[64];          /* host:port for TCP and REMOTE */
	char sid[40];           /* LOCAL: the node agent's id of the sandbox */
	char state[16];         /* the portal's state name, for messages */
	char why[160];          /* for FAIL and GONE */
	char vnc_secret[64];    /* LOCAL: the sandbox's VNC secret, "" when unknown */
	char *revoked;          /* ",sh_a,sh_b,": revoked share links not expired; NULL: none */
	uint64_t checked_ms;    /* when the answer was got */
	uint64_t wanted_ms;     /* when a worker last waited on it */
	bool queued, woke;      /* asked for by a worker; wake sent to the portal */
	unsigned refs;
	bool linked;
	struct px_rt *next;
	/* Lock-free: */
	atomic_uint gen;                 /* bumped whenever the answer changes */
	atomic_int conns;                /* client connections on it now */
	atomic_int held;                 /* requests held on it (WAIT) now */
	atomic_uint_fast64_t requests, bytes_in, bytes_out;
	atomic_uint_fast64_t last_seen_ms;
	atomic_uint_fast64_t drain_until_ms;   /* new connections refused until then */
	atomic_uint drain_gen;                 /* bumped by each drain */
	atomic_uint share_gen;                 /* bumped when the revoked shares change */
	/* Reported-so-far values, touched by the resolver only: */
	uint64_t rep_requests, rep_in, rep_out, rep_seen;
};

struct px_route_cfg {
	const char *portal;        /* base URL, or NULL/"" for none */
	const char *credential;    /* node credential (bearer for the portal) */
	const char *node_name;     /* this node's name at the portal */
	const char *advertise;     /* host:port other proxies reach this one at */
	const char *node_socket;   /* the node agent's port-connect socket */
	const char *static_routes; /* "id=host:port,..." or NULL */
	int ttl_ms;                /* how long an answer is trusted without a change */
	int report_ms;             /* activity batch interval */
};

struct px_routes;

/* wake(ud) is called (from the resolver thread) after answers change, so
 * workers look again.  NULL with e set on a bad static route list. */
struct px_routes *px_routes_new(const struct px_route_cfg *cfg, void (*wake)(void *ud),
				void *ud, struct err *e);
/* Starts the resolver thread.  0 or -1. */
int px_routes_start(struct px_routes *r, struct err *e);
/* Stops the thread after one last activity report, and frees everything. */
void px_routes_free(struct px_routes *r);

/* The entry of id with a reference taken (px_rt_put() gives it back).  A
 * PENDING, stale or WAIT entry is queued for the resolver.  NULL only when
 * out of memory. */
struct px_rt *px_routes_get(struct px_routes *r, const char *id);
void px_rt_put(struct px_routes *r, struct px_rt *rt);
/* Another reference to an entry already held. */
void px_rt_ref(struct px_routes *r, struct px_rt *rt);
/* A copy of the entry's answer, taken under the lock. */
struct px_rt_view {
	enum px_rt_kind kind;
	char addr[64], sid[40], state[16], why[160], vnc_secret[64];
};
void px_rt_view(struct px_routes *r, struct px_rt *rt, struct px_rt_view *out);
/* True when the portal said share (a share link's id) of rt is revoked. */
bool px_rt_share_revoked(struct px_routes *r, struct px_rt *rt, const char *share);
/* The answer is wrong (the node said the sandbox is not there): ask again. */
void px_rt_invalidate(struct px_routes *r, struct px_rt *rt);
/* Calls fn for every entry (under the lock: fn must not block). */
void px_routes_each(struct px_routes *r, void (*fn)(struct px_rt *rt, void *ud), void *ud);

#endif
