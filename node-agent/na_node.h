/* The node's internals shared by na_sandbox.c (registry, lifecycle, API
 * views), na_template.c (templates: resolve, list, import) and na_keeper.c
 * (liveness and warm pools).  Not for other modules: they use
 * na_sandbox.h. */
#ifndef NA_NODE_H
#define NA_NODE_H

#include "node-agent/na_egress.h"
#include "node-agent/na_seal.h"
#include "node-agent/na_sandbox.h"
#include "node-agent/na_spec.h"

#include "common/buf.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define NA_WARM_MAX 16
#define NA_WARM_RETRY_MAX_MS 300000


struct na_sb {
	char id[32];
	char template[256]; /* name@digest */
	char state[16];     /* starting, ready, hibernating, hibernated, waking, forking,
			     * offloading, stopping, failed */
	char created_at[40];
	struct na_limits lim;
	struct na_egress_policy egress;
	bool pooled;        /* an unclaimed warm pool member */
	bool claimed;       /* was a warm pool member, now someone's */
	bool busy;          /* an egress change holds it (DELETE gets 409) */
	bool rekey;         /* its next restore gives it new secrets (it came from S3,
			     * whose readers may have seen the old ones) */
	long long boot_ms;  /* create to ready; -1 when adopted */
	int sandbox_pid;    /* runsc's sandbox process once ready, or -1 */
	char reason[160];   /* why it is "failed" */
	char vnc_secret[40]; /* cloche-vnc's secret (docs/vnc.md); "" for none */
	struct na_desk desk; /* desktop switches and the recorder's secret */
	int generation;      /* newest complete checkpoint (checkpoints/<id>/<gen>); 0: none */
	char last_error[240]; /* a checkpoint or wake that failed, for the caller to see */
	char forked_from[32]; /* the parent of a fork child */
	long long wake_ms;    /* the last wake, hibernate request to health 200; -1 none */
	json_t *checkpoint;   /* the last checkpoint's figures (owned), or NULL */
	struct na_sb *next;
};

/* One warm pool: keep `target` ready, unclaimed members of template `name`. */
struct na_warm {
	char name[128];
	int target;
	int failures;      /* creates failed in a row */
	uint64_t retry_at; /* no new create before this (monotonic ms) */
};

#define NA_IMPORTS_MAX 8

struct na_node {
	char pool[1024];
	char runsc_root[1024];
	char proxy_domain[256];
	char template_name[128];
	struct na_egress *egress;
	pthread_mutex_t mu;
	pthread_cond_t wake;
	struct na_sb *list;
	struct na_warm warm[NA_WARM_MAX];
	int nwarm;
	bool warm_running, warm_stop;
	pthread_t warm_th;
	/* Templates being imported right now, by name@digest (under mu): a
	 * second import of the same one gets 409 before it touches the disk. */
	char importing[NA_IMPORTS_MAX][256];
	int max_sandboxes;          /* 0: no limit */
	char proxy_admin[256];      /* this node's cloche-proxy admin URL, "" for none */
	char cred[256];             /* the node credential (for the proxy's admin API) */
	struct na_s3 *s3;           /* L2; NULL when S3 is not configured (not owned) */
	struct na_seal seal;        /* the keys of the manifests there (na_seal.h) */
	char s3_prefix[256];        /* the keys' prefix, e.g. "cloche/" */
	/* Checkpoint outcomes since start (capacity JSON). */
	long long ckpt_ok, ckpt_failed, ckpt_refused, wakes, wake_failures;
	/* Called (under mu or not) when a sandbox becomes ready, fails, is
	 * claimed or goes: the heartbeat reports at once. */
	void (*changed)(void *ud);
	void *changed_ud;
};

/* Tells whoever listens (the heartbeat) that the sandbox list changed. */
void na_node_changed(struct na_node *n);
/* True when the node may hold one more sandbox (--max-sandboxes).  Caller
 * holds n->mu. */
bool na_room_locked(const struct na_node *n);

/* Writes sandboxes/<id>/meta.json from s (state, generation and all). */
int na_write_meta(struct na_node *n, const struct na_sb *s, struct err *e);

/* Removes whatever exists of sandbox id (container, netns, egress, rootfs,
 * checkpoints, directory), in the reverse order of making it. */
int na_teardown(struct na_node *n, const char *id, struct err *e);

/* GET path on the sandbox's health port (8080) through R-<id>; the
 * connection is closed with a reset, so it leaves no TIME_WAIT inside
 * (a checkpoint would be refused).  Returns the status (0: no answer) and
 * the body in body (may be NULL). */
int na_sandbox_get(const char *id, const char *path, struct buf *body);

/* A registry entry (state "ready", not linked) from meta.json; NULL when
 * meta lacks what is needed. */
struct na_sb *na_sb_from_meta(const char *id, const json_t *meta);

/* Opens, changes or closes sandbox id's egress proxy listener to match p. */
int na_apply_egress(struct na_node *n, const char *id, const struct na_egress_policy *p,
		    struct err *e);

/* Polls sandbox id's health every poll_ms until it answers 200 (0), the
 * container stops running or deadline (monotonic ms) passes (-1, e says
 * which; log_path is named for the console). */
int na_wait_ready(struct na_node *n, const char *id, uint64_t deadline, int poll_ms,
		  const char *log_path, struct err *e);

/* Sets id's state (no notification).  Takes n->mu. */
void na_set_state(struct na_node *n, const char *id, const char *state);

/* Removes a directory tree of plain files (never into a subvolume: callers
 * delete those first); a missing one is fine.  0 or -1 (errno). */
int na_rm_files(const char *dir);

/* Unlinks and frees id's registry entry.  Caller holds n->mu. */
void na_unlink_locked(struct na_node *n, const char *id);

/* Limits of a create that names none, and of warm members. */
extern const struct na_limits na_default_limits;

/* pool/sandboxes/<id>. */
void na_sb_dir(const struct na_node *n, const char *id, char *out, size_t len);

/* The registry entry of id, or NULL.  Caller holds n->mu. */
struct na_sb *na_find_locked(struct na_node *n, const char *id);

/* Registers id in state "starting".  Caller holds n->mu.  409 when the id
 * is taken in memory or on disk. */
int na_reserve_locked(struct na_node *n, const char *id, const char *tpl,
		      const struct na_limits *lim, const struct na_egress_policy *pol, bool pooled,
		      struct err *e);

/* A fresh id "sb-<10 hex>" into out (len >= 14).  0, or -1 with e set. */
int na_random_id(char *out, size_t len, struct err *e);

/* The HTTP status of sandbox id's health endpoint, 0 when nothing answered. */
int na_health_status(const char *id);

/* True when t is a well-formed template name (name or name@digest). */
bool na_valid_template(const char *t);

/* Resolves name (or name@digest) to the newest read-only name@digest.
 * 0, or -1 with 400/404. */
int na_resolve_template(const struct na_node *n, const char *name, char *out, size_t len,
			struct err *e);

/* Removes unfinished template imports (at start). */
void na_sweep_imports(struct na_node *n);

/* "name=N[,name=N]" into n->warm.  -1 with e when malformed. */
int na_parse_warm(struct na_node *n, const char *spec, struct err *e);

/* Warm members of template tpl counted by state.  Caller holds n->mu. */
void na_warm_count_locked(struct na_node *n, const char *tpl, int *ready, int *starting);

#endif
