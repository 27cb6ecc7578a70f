/* The portal's durable state: SQLite (WAL) behind a small set of calls.
 *
 * One writer connection and one reader connection (WAL lets reads run
 * beside a write without blocking it).  synchronous=FULL: a row change is on
 * disk before the call returns, so a lease the portal answered with is never
 * lost by a crash.  The schema carries a version and forward migrations
 * that run at open, each in its own transaction.  The SQL keeps to what
 * PostgreSQL also runs (no AUTOINCREMENT, no JSON functions, no upserts
 * beyond ON CONFLICT DO UPDATE, BIGINT milliseconds for times), so several
 * portals can later share one PostgreSQL.
 *
 * Not thread-safe: the portal calls it from its loop thread only (and the
 * `key-create` command from its own process; SQLite's locking covers two
 * processes, with a busy timeout). */
#ifndef CLOCHE_PT_STORE_H
#define CLOCHE_PT_STORE_H
#include "common/err.h"
#include "portal/pt_state.h"

#include <jansson.h>
#include <stdbool.h>

struct pt_store;

/* A sandbox row.  Strings are fixed buffers except the JSON texts, which
 * pt_sb_clear() frees. */
struct pt_sb {
	char id[32];
	char owner[32];        /* API key id */
	enum pt_state state;
	char template[128];    /* as the client asked: "desktop" or "desktop@digest" */
	char node[64];         /* "" until placed */
	char node_sid[32];     /* the node's id of it; "" until placed */
	long long ttl_s;
	bool persist;
	long long memory_mb, cpus, pids;
	char *egress;          /* JSON text: "\"none\"" or {"allow":[...]} */
	char *labels;          /* JSON object text */
	char *metadata;        /* JSON object text */
	char idem_key[136];    /* "" when none */
	char reason[512];
	long long created_at, updated_at, ready_at, expires_at; /* ms since the epoch; 0 = unset */
	long long last_activity_at; /* a proxy last carried its traffic; 0 = never */
	/* Hibernation: the policy (seconds, 0 = never), fixed at acquire. */
	long long idle_timeout_s, offload_after_s;
	long long hibernated_at, offloaded_at; /* ms; 0 = not (since the last wake) */
	char l2_prefix[256];   /* where its offloaded checkpoint is; "" when none */
	long long l2_generation;
	char *checkpoint;      /* JSON object text of the last checkpoint, or NULL */
	char forked_from[32];  /* the parent of a fork; "" for an acquire */
	char *desktop;         /* JSON object text {clipboard, resize, record}, or NULL: defaults */
};

void pt_sb_clear(struct pt_sb *sb);

/* Opens (creating when missing) the database at path and migrates it.
 * NULL with e set. */
struct pt_store *pt_store_open(const char *path, struct err *e);
void pt_store_close(struct pt_store *st);
/* The schema version after the migrations. */
int pt_store_version(const struct pt_store *st);

/* Inserts sb with its labels and its first event (NULL -> sb->state).
 * 409 when the id or (owner, idem_key) exists. */
int pt_store_sb_insert(struct pt_store *st, const struct pt_sb *sb, const char *reason,
		       struct err *e);
/* Writes sb's mutable fields (state, node, node_sid, reason, idem_key,
 * ready_at, expires_at, updated_at, hibernated_at, offloaded_at, l2_prefix,
 * l2_generation, checkpoint) if the row is still in state `from`,
 * and records the event from -> sb->state with reason when they differ.
 * 409 when the row is not in `from` any more (someone else changed it). */
int pt_store_sb_update(struct pt_store *st, const struct pt_sb *sb, enum pt_state from,
		       const char *reason, struct err *e);
/* Records an event that changes no state (from = to = the row's state),
 * such as "forked into ...": it shows in the events and the change feed. */
int pt_store_sb_note(struct pt_store *st, const char *id, enum pt_state state,
		     const char *reason, struct err *e);
/* Reads a row into out, overwriting it (free what it held with pt_sb_clear
 * first): 0, or -1 with e (404 when there is none).  The same for the
 * other calls that fill a struct pt_sb. */
int pt_store_sb_get(struct pt_store *st, const char *id, struct pt_sb *out, struct err *e);
/* The row of (owner, idem_key): 1 found, 0 none, -1 error. */
int pt_store_sb_by_idem(struct pt_store *st, const char *owner, const char *key,
			struct pt_sb *out, struct err *e);

struct pt_filter {
	const char *owner;     /* NULL: every owner */
	int state;             /* -1: any */
	const char *template;  /* NULL: any */
	const char *label_key; /* NULL: no label filter */
	const char *label_val;
	long long before_at;   /* cursor: rows older than (before_at, before_id); 0 = start */
	const char *before_id;
	int limit;
};
/* Calls fn for each matching row, newest first, at most f->limit rows.
 * fn may not call the store.  Returns the number of rows or -1. */
int pt_store_sb_list(struct pt_store *st, const struct pt_filter *f,
		     void (*fn)(const struct pt_sb *sb, void *ud), void *ud, struct err *e);
/* Rows in `state` (any state when < 0) on node (any node when NULL); with
 * expires_before > 0 only those whose expires_at is at or before it. */
int pt_store_sb_select(struct pt_store *st, int state, const char *node, long long expires_before,
		       void (*fn)(const struct pt_sb *sb, void *ud), void *ud, struct err *e);
/* Rows on node in a pt_state_on_node() state. */
int pt_store_sb_on_node(struct pt_store *st, const char *node,
			void (*fn)(const struct pt_sb *sb, void *ud), void *ud, struct err *e);
/* The live row (pt_state_on_node) that holds node's sandbox sid: 1, 0 or -1. */
int pt_store_sb_by_node_sid(struct pt_store *st, const char *node, const char *sid,
			    struct pt_sb *out, struct err *e);
/* A row's events, oldest first: [{"at","from","to","reason"}].  New reference or NULL. */
json_t *pt_store_sb_events(struct pt_store *st, const char *id, struct err *e);

/* A share: a link to a sandbox's desktop (pt_view.c makes its token). */
struct pt_share {
	char id[24];
	char sandbox[32];
	char mode[8];		/* "view" or "control" */
	char label[128];
	char created_by[32];	/* API key id */
	long long created_at, expires_at, revoked_at; /* ms; revoked_at 0: not revoked */
};

/* Records a new share, with an event on its sandbox (in state). */
int pt_store_share_insert(struct pt_store *st, const struct pt_share *sh, const char *state,
			  struct err *e);
/* Revokes share id of sandbox at `at`, with an event (the route change
 * feed carries it to the proxies).  404 when there is no such share not
 * revoked yet. */
int pt_store_share_revoke(struct pt_store *st, const char *sandbox, const char *id, long long at,
			  const char *state, struct err *e);
/* Calls fn for each share of sandbox (id NULL: all; else that one),
 * oldest first.  0 or -1 with e set. */
int pt_store_share_each(struct pt_store *st, const char *sandbox, const char *id,
			void (*fn)(const struct pt_share *sh, void *ud), void *ud, struct err *e);
/* The ids of sandbox's revoked shares that have not expired yet. */
json_t *pt_store_share_revoked(struct pt_store *st, const char *sandbox, long long now, struct err *e);
/* A share as the API shows it, without its link; its state (active,
 * expired, revoked) as of now (ms). */
json_t *pt_share_json(const struct pt_share *sh, long long now);
/* Counts by (state, node): calls fn(state, node or "", count). */
int pt_store_sb_counts(struct pt_store *st,
		       void (*fn)(const char *state, const char *node, long long n, void *ud),
		       void *ud, struct err *e);

/* API keys.  hash is the hex SHA-256 of the whole key. */
struct pt_key {
	char id[32];
	char name[128];
	char role[16];
	char hash[65];
	long long created_at, revoked_at;
};
int pt_store_key_insert(struct pt_store *st, const struct pt_key *k, struct err *e);
/* 1 found, 0 none, -1 error. */
int pt_store_key_get(struct pt_store *st, const char *id, struct pt_key *out, struct err *e);
int pt_store_key_list(struct pt_store *st, void (*fn)(const struct pt_key *k, void *ud), void *ud,
		      struct err *e);
/* Sets revoked_at (once); 404 when there is no such key. */
int pt_store_key_revoke(struct pt_store *st, const char *id, long long at, struct err *e);
/* Number of keys with role admin that are not revoked, or -1. */
long long pt_store_key_admins(struct pt_store *st, struct err *e);

/* Nodes the portal has heard of (what they last said is in memory only). */
int pt_store_node_seen(struct pt_store *st, const char *name, const char *url, const char *boot_id,
		       long long at, struct err *e);
int pt_store_node_list(struct pt_store *st,
		       void (*fn)(const char *name, const char *url, const char *boot_id,
				  long long last_seen, void *ud),
		       void *ud, struct err *e);

/* Wall clock in ms since the epoch. */
/* The change feed of routes: *seq gets the newest event's number, and ids
 * (a JSON array) the sandboxes with events after `after` (none when after
 * is negative: a reader's first call only learns where the feed is). */
int pt_store_changes(struct pt_store *st, long long after, long long *seq, json_t *ids,
		     struct err *e);
/* Records proxied traffic: sandbox ids[i] was active at at[i] (ms), in one
 * transaction.  0 or -1. */
int pt_store_activity(struct pt_store *st, const char *const *ids, const long long *at, size_t n,
		      struct err *e);
long long pt_now_ms(void);
/* RFC 3339 UTC with milliseconds of ms since the epoch, into out (>= 32). */
void pt_time_str(long long ms, char *out, size_t len);

#endif
