/* Heartbeats and reconciliation: the portal's rows against what each node
 * says it holds.
 *
 * Both directions, after either side restarted or anything went wrong:
 * - a sandbox on a node that no live row owns is destroyed there (a claim
 *   or create whose answer the portal never saw, a sandbox of a released
 *   or lost row, one made by hand);
 * - a live row whose sandbox the node no longer lists fails (or, when it
 *   was being released, is released); one the node reports failed fails;
 * - a row left placing/starting by a portal restart is adopted when the
 *   node has it ready, and fails when the claim never reached the node;
 * - a checkpoint operation whose answer was not seen (a restart, a timeout)
 *   is settled by what the node lists: hibernating -> hibernated or ready,
 *   waking -> ready or hibernated, offloading -> hibernated; a restore that
 *   never reached its node leaves the sandbox offloaded;
 * - hibernated rows stay hibernated while their node is silent (the node
 *   re-adopts its checkpoints when it comes back), and offloaded rows
 *   belong to no node at all;
 * - a node silent for longer than the node timeout is down: it is not
 *   placed on, and its sandboxes are lost (never leased again; if it comes
 *   back, they are orphans and go).
 * Rows with a node call in flight, and rows changed in the last few
 * seconds (a heartbeat may have been assembled before the change), wait
 * for a later heartbeat. */
#include "portal/pt_core.h"

#include "common/json.h"
#include "common/log.h"
#include "portal/pt_hib.h"
#include "portal/pt_nodes.h"

#include <stdlib.h>
#include <string.h>

#define SETTLE_MS 5000
#define STORE_SEEN_MS 30000

struct rowlist {
	struct pt_sb *v;
	int n, cap;
};

static void collect(const struct pt_sb *sb, void *ud)
{
	struct rowlist *l = ud;
	struct pt_sb *c;

	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 16;
		void *v = realloc(l->v, (size_t)cap * sizeof(*l->v));

		if (!v)
			return;
		l->v = v;
		l->cap = cap;
	}
	c = &l->v[l->n++];
	*c = *sb;
	c->egress = strdup(sb->egress ? sb->egress : "\"none\"");
	c->labels = strdup(sb->labels ? sb->labels : "{}");
	c->metadata = strdup(sb->metadata ? sb->metadata : "{}");
	c->checkpoint = sb->checkpoint ? strdup(sb->checkpoint) : NULL;
	c->desktop = sb->desktop ? strdup(sb->desktop) : NULL;
}

static void rowlist_free(struct rowlist *l)
{
	for (int i = 0; i < l->n; i++)
		pt_sb_clear(&l->v[i]);
	free(l->v);
}

static void move_logged(struct pt_portal *p, struct pt_sb *sb, enum pt_state to, const char *why)
{
	struct err e = ERR_INIT;

	if (to == PT_READY) {
		sb->ready_at = pt_now_ms();
		sb->expires_at = sb->ready_at + sb->ttl_s * 1000;
	}
	if (pt_core_move(p, sb, to, why, &e) == -1)
		log_warn("reconcile: state change not made", "{s:s, s:s}", "id", sb->id, "error",
			 e.msg);
	else if (to == PT_LOST)
		p->metrics.lost++;
}

/* A move back to ready that keeps the lease and ready_at as they were
 * (the sandbox never stopped). */
static void move_kept(struct pt_portal *p, struct pt_sb *sb, enum pt_state to, const char *why)
{
	struct err e = ERR_INIT;

	if (pt_core_move(p, sb, to, why, &e) == -1)
		log_warn("reconcile: state change not made", "{s:s, s:s}", "id", sb->id, "error",
			 e.msg);
}

/* Sandboxes the node lists, against the rows. */
static void reconcile_listed(struct pt_portal *p, struct pt_node *n)
{
	size_t i;
	json_t *s;
	long long now = pt_now_ms();

	json_array_foreach(n->sandboxes, i, s) {
		const char *sid = json_string_value(json_object_get(s, "id"));
		const char *state = json_string_value(json_object_get(s, "state"));
		const char *reason = json_string_value(json_object_get(s, "reason"));
		struct err e = ERR_INIT;
		struct pt_sb sb;
		char why[600];
		int rc;

		/* Pool members are the node's own; a stopping one is going anyway. */
		if (!sid || !state || json_is_true(json_object_get(s, "pooled")) ||
		    strcmp(state, "stopping") == 0)
			continue;
		memset(&sb, 0, sizeof(sb));
		rc = pt_store_sb_by_node_sid(p->st, n->name, sid, &sb, &e);
		if (rc == -1) {
			log_error("reconcile: store", "{s:s}", "error", e.msg);
			return;
		}
		if (rc == 0) {
			if (!pt_core_destroy_find(p, n->name, sid)) {
				log_warn("orphan on node: destroying it", "{s:s, s:s, s:s}", "node",
					 n->name, "sandbox", sid, "state", state);
				pt_core_destroy(p, n->name, sid, NULL);
			}
			continue;
		}
		if (pt_core_busy(p, sb.id) || now - sb.updated_at < SETTLE_MS) {
			pt_sb_clear(&sb);
			continue;
		}
		if (strcmp(state, "failed") == 0 && sb.state != PT_RELEASING) {
			snprintf(why, sizeof(why), "%s reports it failed: %s", n->name,
				 reason ? reason : "no reason given");
			move_logged(p, &sb, PT_FAILED, why);
			pt_core_destroy(p, n->name, sid, NULL);
		} else if (strcmp(state, "ready") == 0 &&
			   (sb.state == PT_PLACING || sb.state == PT_STARTING)) {
			snprintf(why, sizeof(why), "ready on %s (adopted: its answer was not seen)",
				 n->name);
			move_logged(p, &sb, PT_READY, why);
		} else if (strcmp(state, "ready") == 0 && sb.state == PT_HIBERNATING) {
			snprintf(why, sizeof(why), "%s lists it ready: it did not hibernate", n->name);
			move_kept(p, &sb, PT_READY, why);
		} else if (strcmp(state, "ready") == 0 &&
			   (sb.state == PT_WAKING || sb.state == PT_HIBERNATED)) {
			snprintf(why, sizeof(why), "ready on %s (woken; its answer was not seen)",
				 n->name);
			sb.hibernated_at = sb.offloaded_at = 0;
			move_logged(p, &sb, PT_READY, why);
		} else if (strcmp(state, "hibernated") == 0 &&
			   (sb.state == PT_HIBERNATING || sb.state == PT_WAKING ||
			    sb.state == PT_OFFLOADING)) {
			json_t *ck = json_object_get(s, "checkpoint");

			if (sb.state == PT_HIBERNATING) {
				sb.hibernated_at = now;
				if (json_is_object(ck)) {
					free(sb.checkpoint);
					sb.checkpoint = json_dumps(ck, JSON_COMPACT | JSON_SORT_KEYS);
				}
			}
			snprintf(why, sizeof(why), "%s lists it hibernated (%s; its answer was not seen)",
				 n->name,
				 sb.state == PT_HIBERNATING ? "hibernated"
				 : sb.state == PT_WAKING    ? "the wake did not happen"
							    : "the offload did not happen");
			move_logged(p, &sb, PT_HIBERNATED, why);
		}
		pt_sb_clear(&sb);
	}
}

/* The node's rows, against what it lists. */
static void reconcile_rows(struct pt_portal *p, struct pt_node *n, bool rebooted)
{
	struct err e = ERR_INIT;
	struct rowlist l = {0};
	long long now = pt_now_ms();

	if (pt_store_sb_on_node(p->st, n->name, collect, &l, &e) == -1) {
		log_error("reconcile: store", "{s:s}", "error", e.msg);
		return;
	}
	for (int i = 0; i < l.n; i++) {
		struct pt_sb *sb = &l.v[i];
		struct pt_destroy *d = pt_core_destroy_find(p, n->name, sb->node_sid);
		bool pooled = false;
		char why[300];

		if (pt_core_busy(p, sb->id) || (d && d->running) || now - sb->updated_at < SETTLE_MS)
			continue;
		if (!pt_node_lists(n, sb->node_sid, &pooled, NULL)) {
			if (sb->state == PT_RELEASING) {
				move_logged(p, sb, PT_RELEASED, "gone from its node");
				if (d) {
					d->id[0] = '\0';
					d->next_try = 0;
				}
			} else if (sb->state == PT_WAKING && sb->l2_prefix[0]) {
				/* A restore from S3 that never reached the node. */
				snprintf(why, sizeof(why), "%s does not have it: the restore did not "
							   "happen; still offloaded", n->name);
				sb->node[0] = '\0';
				move_logged(p, sb, PT_OFFLOADED, why);
			} else {
				snprintf(why, sizeof(why), "%s no longer has it%s%s", n->name,
					 rebooted ? " (the node agent restarted)" : "",
					 sb->state == PT_OFFLOADING
						 ? " (an offload whose answer was lost: where its "
						   "checkpoint went is not known)"
						 : "");
				move_logged(p, sb, PT_FAILED, why);
			}
		} else if (pooled && sb->state == PT_PLACING) {
			move_logged(p, sb, PT_FAILED,
				    "the portal restarted before its claim reached the node");
		} else if (sb->state == PT_RELEASING && !d) {
			pt_core_destroy(p, n->name, sb->node_sid, sb->id); /* after a restart */
		}
	}
	rowlist_free(&l);
}

int pt_core_heartbeat(struct pt_portal *p, json_t *body, struct err *e)
{
	struct pt_node *n;
	bool rebooted = false;
	long long now = pt_now_ms();
	char old_url[256], old_boot[64];

	{
		const char *name = json_string_value(json_object_get(body, "name"));
		struct pt_node *prev = name ? pt_nodes_find(p, name) : NULL;

		snprintf(old_url, sizeof(old_url), "%s", prev ? prev->url : "");
		snprintf(old_boot, sizeof(old_boot), "%s", prev ? prev->boot_id : "");
	}
	if (pt_nodes_record(p, body, &n, &rebooted, e) == -1)
		return -1;
	p->metrics.heartbeats++;
	if (!n->heard || !n->up || rebooted)
		log_info("node up", "{s:s, s:s, s:b}", "node", n->name, "url", n->url, "restarted",
			 rebooted);
	n->up = true;
	n->heard = true;
	n->last_seen = now;
	if (strcmp(old_url, n->url) != 0 || strcmp(old_boot, n->boot_id) != 0 ||
	    now - n->stored_at >= STORE_SEEN_MS) {
		if (pt_store_node_seen(p->st, n->name, n->url, n->boot_id, now, e) == -1)
			return -1;
		n->stored_at = now;
	}
	pt_hib_heartbeat(p, n);
	reconcile_listed(p, n);
	reconcile_rows(p, n, rebooted);
	pt_core_dispatch(p);
	return 0;
}

void pt_reconcile_liveness(struct pt_portal *p)
{
	long long now = pt_now_ms();

	for (struct pt_node *n = p->nodes; n; n = n->next) {
		struct err e = ERR_INIT;
		struct rowlist l = {0};

		if (!n->up || now - n->last_seen <= p->cfg.node_timeout_ms)
			continue;
		n->up = false;
		log_warn("node down: no heartbeat", "{s:s, s:I}", "node", n->name, "silent_ms",
			 (json_int_t)(now - n->last_seen));
		if (pt_store_sb_on_node(p->st, n->name, collect, &l, &e) == -1) {
			log_error("liveness: store", "{s:s}", "error", e.msg);
			n->up = true; /* judge again next time */
			continue;
		}
		for (int i = 0; i < l.n; i++) {
			struct pt_sb *sb = &l.v[i];
			struct pt_destroy *d = pt_core_destroy_find(p, n->name, sb->node_sid);

			if (sb->state == PT_HIBERNATED || sb->state == PT_OFFLOADING)
				continue; /* on the node's disk: it re-adopts them */
			if (sb->state == PT_WAKING && sb->l2_prefix[0]) {
				/* The S3 copy is still there: restore it elsewhere. */
				sb->node[0] = '\0';
				move_logged(p, sb, PT_OFFLOADED,
					    "its node went silent while restoring it; still offloaded");
				continue;
			}
			if (sb->state == PT_RELEASING)
				move_logged(p, sb, PT_RELEASED,
					    "its node went silent; the node destroys it when it "
					    "comes back");
			else
				move_logged(p, sb, PT_LOST, "its node stopped heartbeating");
			if (d && !d->running)
				d->id[0] = '\0';
		}
		rowlist_free(&l);
	}
}

static void load_node(const char *name, const char *url, const char *boot_id, long long last_seen,
		      void *ud)
{
	struct pt_portal *p = ud;
	struct pt_node *n = pt_nodes_get(p, name);

	(void)last_seen;
	if (!n)
		return;
	snprintf(n->url, sizeof(n->url), "%s", url);
	snprintf(n->boot_id, sizeof(n->boot_id), "%s", boot_id);
	/* Up but unheard: nothing is placed on it before a heartbeat (it has no
	 * templates yet), and it gets the node timeout from now to send one. */
	n->up = true;
	n->last_seen = pt_now_ms();
	n->stored_at = n->last_seen;
}

int pt_reconcile_load(struct pt_portal *p, struct err *e)
{
	return pt_store_node_list(p->st, load_node, p, e);
}
