/* Hibernate, wake, offload, fork and the idle policy; see pt_hib.h.
 *
 * An operation (struct op) is a row's one node call in flight and the API
 * requests waiting for its end.  The row is moved before the call and
 * settled by the answer: hibernating -> hibernated (or back to ready when
 * the node refused, or rebooted it after a failed checkpoint), waking ->
 * ready (or back to hibernated/offloaded when the restore failed but can
 * be tried again), offloading -> offloaded (or back to hibernated, the
 * local copy kept).  No answer at all leaves the row where it is, for
 * pt_reconcile.c to settle from the node's heartbeats.
 *
 * The policy runs once a second: a ready sandbox with an idle timeout,
 * without proxied traffic (last_activity_at, else ready_at) and with CPU
 * below --idle-cpu-percent between heartbeats for that long, hibernates;
 * one hibernated for its offload delay goes to S3; an offloaded one older
 * than --offload-retention is deleted and released; a hibernated or
 * offloaded one without persist is released when its lease runs out. */
#include "portal/pt_hib.h"

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"
#include "portal/pt_nodes.h"

#include <stdlib.h>
#include <string.h>

#define POLICY_MS 1000
#define FORK_MAX 8
#define TRACK_BUCKETS 256
#define TRACK_KEEP_MS (10 * 60 * 1000)
/* After a refused or failed automatic hibernate, offload: wait this long. */
#define IDLE_RETRY_MS 30000
#define OFFLOAD_RETRY_MS (5 * 60 * 1000)
/* An expired persist lease whose sandbox cannot be hibernated this many
 * times in a row is released after all. */
#define EXPIRY_TRIES 3

enum op_kind { OP_HIBERNATE, OP_WAKE, OP_OFFLOAD, OP_FORK };
/* What a waiting request wants to see: asleep (hibernated or further),
 * ready, or a fork's children. */
enum want { WANT_ASLEEP, WANT_READY, WANT_FORK };

struct opw {
	struct opw *next;
	struct hsrv_defer *d;
	enum want want;
	uint64_t deadline; /* monotonic ms */
	bool gone;
};

struct op {
	struct op *next;
	enum op_kind kind;
	char id[32];
	uint64_t t0;         /* monotonic ms */
	bool wake_after;     /* a wake was asked for while it hibernated or offloaded */
	bool expiry;         /* the hibernate of a persist lease that ran out */
	long long host_mb;   /* a restore: what it counts against its node's memory */
	int nchild;
	char child[FORK_MAX][32];
	struct opw *waiters;
};

/* What the policy remembers of a sandbox between heartbeats. */
struct track {
	struct track *next;
	char key[32];        /* the row's id, or a node's sandbox id for cpu_ms */
	long long cpu_ms, cpu_at; /* the last heartbeat's figure and when it came */
	long long busy_at;   /* CPU above the idle threshold last seen then */
	long long retry_at;  /* no automatic hibernate or offload before */
	int fails;           /* hibernates of an expired persist lease that failed */
	long long touched;
};

struct pt_hib {
	struct op *ops;
	struct track *tr[TRACK_BUCKETS];
	uint64_t last_policy, last_prune;
};

/* ------------------------------------------------------------ bookkeeping */

static struct pt_hib *hib(struct pt_portal *p)
{
	if (!p->hib)
		p->hib = calloc(1, sizeof(*p->hib));
	return p->hib;
}

static struct op *op_find(struct pt_portal *p, const char *id)
{
	for (struct op *o = p->hib ? p->hib->ops : NULL; o; o = o->next)
		if (strcmp(o->id, id) == 0)
			return o;
	return NULL;
}

bool pt_hib_busy(struct pt_portal *p, const char *id)
{
	for (struct op *o = p->hib ? p->hib->ops : NULL; o; o = o->next) {
		if (strcmp(o->id, id) == 0)
			return true;
		for (int i = 0; i < o->nchild; i++)
			if (strcmp(o->child[i], id) == 0)
				return true;
	}
	return false;
}

static struct op *op_new(struct pt_portal *p, enum op_kind kind, const char *id)
{
	struct pt_hib *h = hib(p);
	struct op *o = h ? calloc(1, sizeof(*o)) : NULL;

	if (!o)
		return NULL;
	o->kind = kind;
	snprintf(o->id, sizeof(o->id), "%s", id);
	o->t0 = util_now_ms();
	o->next = h->ops;
	h->ops = o;
	return o;
}

static void op_unlink(struct pt_portal *p, struct op *o)
{
	for (struct op **pp = &p->hib->ops; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			return;
		}
}

static unsigned track_hash(const char *k)
{
	unsigned h = 2166136261u;

	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 16777619u;
	return h % TRACK_BUCKETS;
}

/* The record of key, made when missing (NULL only when out of memory). */
static struct track *track(struct pt_portal *p, const char *key)
{
	struct pt_hib *h = hib(p);
	struct track *t;
	unsigned b;

	if (!h)
		return NULL;
	b = track_hash(key);
	for (t = h->tr[b]; t; t = t->next)
		if (strcmp(t->key, key) == 0)
			break;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		snprintf(t->key, sizeof(t->key), "%s", key);
		t->next = h->tr[b];
		h->tr[b] = t;
	}
	t->touched = pt_now_ms();
	return t;
}

static struct track *track_peek(struct pt_portal *p, const char *key)
{
	if (!p->hib)
		return NULL;
	for (struct track *t = p->hib->tr[track_hash(key)]; t; t = t->next)
		if (strcmp(t->key, key) == 0)
			return t;
	return NULL;
}

static void track_prune(struct pt_portal *p, long long now)
{
	for (int b = 0; p->hib && b < TRACK_BUCKETS; b++) {
		struct track **pp = &p->hib->tr[b];

		while (*pp) {
			struct track *t = *pp;

			if (now - t->touched > TRACK_KEEP_MS && now >= t->retry_at) {
				*pp = t->next;
				free(t);
			} else {
				pp = &t->next;
			}
		}
	}
}

void pt_hib_heartbeat(struct pt_portal *p, const struct pt_node *n)
{
	long long now = pt_now_ms();
	size_t i;
	json_t *s;

	json_array_foreach(n->sandboxes, i, s) {
		const char *sid = json_string_value(json_object_get(s, "id"));
		json_t *cpu = json_object_get(s, "cpu_ms");
		struct track *t;

		if (!sid || !json_is_integer(cpu) || json_is_true(json_object_get(s, "pooled")))
			continue;
		t = track(p, sid);
		if (!t)
			return;
		/* Share of one CPU since the last figure, in percent. */
		if (t->cpu_at && now > t->cpu_at && json_integer_value(cpu) >= t->cpu_ms &&
		    (json_integer_value(cpu) - t->cpu_ms) * 100 >=
			    p->cfg.idle_cpu_pct * (now - t->cpu_at))
			t->busy_at = now;
		t->cpu_ms = json_integer_value(cpu);
		t->cpu_at = now;
	}
}

/* ---------------------------------------------------------------- answers */

static void resp_err(struct hsrv_resp *resp, int status, const char *msg)
{
	struct err e = ERR_INIT;

	err_http(&e, status, "%s", msg);
	pt_resp_err(resp, &e);
}

/* {parent, children} of a fork as the rows are now. */
static json_t *fork_view(struct pt_portal *p, const struct op *o)
{
	json_t *kids = json_array();

	for (int i = 0; i < o->nchild; i++) {
		json_t *v = pt_core_view(p, o->child[i]);

		if (v)
			json_array_append_new(kids, v);
	}
	return json_pack("{s:o*, s:o}", "parent", pt_core_view(p, o->id), "children", kids);
}

static void opw_gone(void *ud)
{
	((struct opw *)ud)->gone = true; /* answered (to nobody) by the next tick */
}

static int opw_add(struct op *o, const struct hsrv_req *req, enum want want, long long wait_s)
{
	struct opw *w = calloc(1, sizeof(*w));

	if (!w)
		return -1;
	w->d = hsrv_defer(req, opw_gone, w);
	if (!w->d) {
		free(w);
		return -1;
	}
	w->want = want;
	w->deadline = util_now_ms() + (uint64_t)wait_s * 1000;
	w->next = o->waiters;
	o->waiters = w;
	return 0;
}

/* Answers w: status with the row (or the fork) as it is now, or the error. */
static void opw_answer(struct pt_portal *p, const struct op *o, struct opw *w, int status,
		       const char *msg)
{
	struct hsrv_resp resp;
	json_t *v = NULL;

	memset(&resp, 0, sizeof(resp));
	if (status == 200 || status == 202)
		v = w->want == WANT_FORK ? fork_view(p, o) : pt_core_view(p, o->id);
	if (v)
		hsrv_resp_json(&resp, status, v);
	else
		resp_err(&resp, status == 200 || status == 202 ? 500 : status,
			 msg ? msg : "the sandbox cannot be read");
	hsrv_defer_reply(w->d, &resp);
}

/* Answers now the waiters of o that want `want` (before a wake that
 * follows changes what the sandbox looks like: the answer to a hibernate
 * shows it hibernated, not already waking again). */
static void answer_now(struct pt_portal *p, struct op *o, enum want want, int status,
		       const char *msg)
{
	for (struct opw **pw = &o->waiters; *pw;) {
		struct opw *w = *pw;

		if (w->want != want || w->gone) {
			pw = &w->next;
			continue;
		}
		*pw = w->next;
		opw_answer(p, o, w, status, msg);
		free(w);
	}
}

/* Ends o: answers the waiters that want `want` with status (msg for an
 * error), hands the others to `next` (the wake that follows) or answers
 * them with their own outcome, and frees o. */
static void op_end(struct pt_portal *p, struct op *o, enum want want, int status,
		   const char *msg, struct op *next)
{
	struct err e = ERR_INIT;
	struct pt_sb sb;
	bool ready = false, asleep = false;

	memset(&sb, 0, sizeof(sb));
	if (pt_store_sb_get(p->st, o->id, &sb, &e) == 0) {
		ready = sb.state == PT_READY;
		asleep = sb.state == PT_HIBERNATED || sb.state == PT_OFFLOADED;
	}
	pt_sb_clear(&sb);
	op_unlink(p, o);
	while (o->waiters) {
		struct opw *w = o->waiters;

		o->waiters = w->next;
		if (w->want == want || w->gone) {
			opw_answer(p, o, w, status, msg);
		} else if (next) {
			w->next = next->waiters;
			next->waiters = w;
			continue;
		} else if (w->want == WANT_READY) {
			opw_answer(p, o, w, ready ? 200 : status == 200 ? 409 : status,
				   ready ? NULL : msg ? msg : "the sandbox did not wake");
		} else {
			opw_answer(p, o, w, asleep ? 200 : status == 200 ? 409 : status,
				   asleep ? NULL : msg ? msg : "the sandbox did not hibernate");
		}
		free(w);
	}
	free(o);
}

/* --------------------------------------------------------------- starting */

static struct pt_node *up_node(struct pt_portal *p, const char *name, struct err *e)
{
	struct pt_node *n = name[0] ? pt_nodes_find(p, name) : NULL;

	if (!n || !n->up || !n->heard) {
		err_http(e, 503, "its node %s is not up; try again when it is back",
			 name[0] ? name : "(none)");
		return NULL;
	}
	return n;
}

/* Starts j for op o; on failure the caller undoes its move. */
static int send_job(struct pt_portal *p, const struct pt_node *n, const struct pt_sb *sb,
		    enum pt_job_kind kind, json_t *body, struct err *e)
{
	struct pt_job *j = calloc(1, sizeof(*j));

	if (!j) {
		json_decref(body);
		return err_http(e, 500, "out of memory");
	}
	j->kind = kind;
	snprintf(j->node, sizeof(j->node), "%s", n->name);
	snprintf(j->url, sizeof(j->url), "%s", n->url);
	snprintf(j->id, sizeof(j->id), "%s", sb->id);
	snprintf(j->sid, sizeof(j->sid), "%s", sb->node_sid);
	j->body = body;
	if (pt_job_start(p, j, e) == -1) {
		pt_job_free(j);
		return -1;
	}
	return 0;
}

/* ready -> hibernating and the node's hibernate.  The op, or NULL with e. */
static struct op *start_hibernate(struct pt_portal *p, struct pt_sb *sb, const char *why,
				  struct err *e)
{
	struct pt_node *n;
	struct op *o;

	if (sb->state != PT_READY || pt_core_busy(p, sb->id)) {
		err_http(e, 409, "sandbox `%s` is %s%s", sb->id, pt_state_name(sb->state),
			 sb->state == PT_READY ? " and busy (a fork runs)" : ", not ready");
		return NULL;
	}
	if (!(n = up_node(p, sb->node, e)))
		return NULL;
	if (!(o = op_new(p, OP_HIBERNATE, sb->id))) {
		err_http(e, 500, "out of memory");
		return NULL;
	}
	if (pt_core_move(p, sb, PT_HIBERNATING, why, e) == -1) {
		op_unlink(p, o);
		free(o);
		return NULL;
	}
	if (send_job(p, n, sb, PT_JOB_HIBERNATE, NULL, e) == -1) {
		pt_core_move(p, sb, PT_READY, "the hibernate could not be sent", NULL);
		op_unlink(p, o);
		free(o);
		return NULL;
	}
	return o;
}

/* hibernated -> waking on its node, or offloaded -> waking on a node with
 * room (restored from S3).  The op, or NULL with e. */
static struct op *start_wake(struct pt_portal *p, struct pt_sb *sb, struct err *e)
{
	struct pt_node *n;
	struct op *o;
	json_t *body = NULL;
	char why[400];

	if (sb->state == PT_HIBERNATED) {
		if (!(n = up_node(p, sb->node, e)))
			return NULL;
		snprintf(why, sizeof(why), "waking on %s", n->name);
	} else if (sb->state == PT_OFFLOADED) {
		AUTOJSON json_t *ck = sb->checkpoint ? json_loads(sb->checkpoint, 0, NULL) : NULL;
		const char *tmpl = json_string_value(json_object_get(ck, "template"));
		json_t *egress = json_loads(sb->egress ? sb->egress : "\"none\"", JSON_DECODE_ANY, NULL);

		if (!tmpl)
			tmpl = sb->template;
		n = pt_nodes_pick_new(p, tmpl, sb->memory_mb);
		if (!n) {
			json_decref(egress);
			err_http(e, 503, "no node %s room for it now (template %s); try again",
				 pt_core_template_known(p, tmpl) ? "has" : "is up with", tmpl);
			return NULL;
		}
		body = json_pack("{s:{s:s, s:I}, s:I, s:I, s:I, s:o*}", "l2", "prefix", sb->l2_prefix,
				 "generation", (json_int_t)sb->l2_generation, "memory_mb",
				 (json_int_t)sb->memory_mb, "cpus", (json_int_t)sb->cpus, "pids",
				 (json_int_t)sb->pids, "egress", egress);
		snprintf(sb->node, sizeof(sb->node), "%s", n->name);
		snprintf(why, sizeof(why), "restoring it on %s from S3 (%s, generation %lld)", n->name,
			 sb->l2_prefix, sb->l2_generation);
	} else {
		err_http(e, 409, "sandbox `%s` is %s, not hibernated", sb->id,
			 pt_state_name(sb->state));
		return NULL;
	}
	if (!(o = op_new(p, OP_WAKE, sb->id))) {
		json_decref(body);
		err_http(e, 500, "out of memory");
		return NULL;
	}
	{
		enum pt_state from = sb->state;

		if (pt_core_move(p, sb, PT_WAKING, why, e) == -1) {
			json_decref(body);
			op_unlink(p, o);
			free(o);
			return NULL;
		}
		if (from == PT_OFFLOADED) {
			o->host_mb = sb->memory_mb + 192 + sb->memory_mb / 8;
			n->inflight++;
			n->inflight_mb += o->host_mb;
		}
		if (send_job(p, n, sb, from == PT_OFFLOADED ? PT_JOB_RESTORE : PT_JOB_WAKE, body, e) ==
		    -1) {
			if (from == PT_OFFLOADED) {
				n->inflight--;
				n->inflight_mb -= o->host_mb;
				sb->node[0] = '\0';
			}
			pt_core_move(p, sb, from, "the wake could not be sent", NULL);
			op_unlink(p, o);
			free(o);
			return NULL;
		}
	}
	return o;
}

/* hibernated -> offloading and the node's offload.  0 or -1 with e. */
static int start_offload(struct pt_portal *p, struct pt_sb *sb, const char *why, struct err *e)
{
	struct pt_destroy *d = pt_core_destroy_find(p, "", sb->node_sid);
	struct pt_node *n;
	struct op *o;

	if (d && d->running)
		return err_http(e, 409, "an older checkpoint of it is being deleted");
	if (!(n = up_node(p, sb->node, e)))
		return -1;
	if (d) {
		/* An older copy's delete, not sent yet, would take the new one. */
		for (struct pt_destroy **pp = &p->destroys; *pp; pp = &(*pp)->next)
			if (*pp == d) {
				*pp = d->next;
				free(d);
				break;
			}
	}
	if (!(o = op_new(p, OP_OFFLOAD, sb->id)))
		return err_http(e, 500, "out of memory");
	if (pt_core_move(p, sb, PT_OFFLOADING, why, e) == -1) {
		op_unlink(p, o);
		free(o);
		return -1;
	}
	if (send_job(p, n, sb, PT_JOB_OFFLOAD, NULL, e) == -1) {
		pt_core_move(p, sb, PT_HIBERNATED, "the offload could not be sent", NULL);
		op_unlink(p, o);
		free(o);
		return -1;
	}
	return 0;
}

/* ----------------------------------------------------------- node answers */

/* Loads row id, which must be in `want` (else the op is over: someone else,
 * e.g. liveness, moved it).  0 or -1. */
static int load_in(struct pt_portal *p, const char *id, enum pt_state want, struct pt_sb *sb)
{
	struct err e = ERR_INIT;

	memset(sb, 0, sizeof(*sb));
	if (pt_store_sb_get(p->st, id, sb, &e) == 0 && sb->state == want)
		return 0;
	log_warn("checkpoint answer for a row that moved", "{s:s, s:s, s:s}", "id", id, "state",
		 pt_state_name(sb->state), "error", e.msg);
	pt_sb_clear(sb);
	return -1;
}

static void move_or_log(struct pt_portal *p, struct pt_sb *sb, enum pt_state to, const char *why)
{
	struct err e = ERR_INIT;

	if (pt_core_move(p, sb, to, why, &e) == -1)
		log_warn("state change not made", "{s:s, s:s, s:s}", "id", sb->id, "to",
			 pt_state_name(to), "error", e.msg);
}

static long long mib(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) / 1048576 : 0;
}

/* A persist lease ran out and its hibernate did not happen: try again in a
 * while, and release it after EXPIRY_TRIES. */
static void expiry_failed(struct pt_portal *p, struct pt_sb *sb, const char *msg)
{
	struct track *t = track(p, sb->id);
	struct err e = ERR_INIT;
	char why[400];
	int rc;

	if (t && ++t->fails < EXPIRY_TRIES) {
		t->retry_at = pt_now_ms() + IDLE_RETRY_MS;
		return;
	}
	snprintf(why, sizeof(why), "lease expired (persist), and it could not be hibernated: %s",
		 msg);
	pt_core_release_row(p, sb, why, &e, &rc);
}

/* After a 500 to a hibernate: 1 the node booted the sandbox again (ready),
 * 0 it failed, -1 not known (the heartbeats will say).  From the sandbox's
 * view when the answer has one, else from the node's message. */
static int rebooted(const struct pt_job *j)
{
	const char *st = json_string_value(json_object_get(json_object_get(j->out, "sandbox"),
							   "state"));

	if (st)
		return strcmp(st, "ready") == 0 ? 1 : strcmp(st, "failed") == 0 ? 0 : -1;
	if (strstr(j->msg, "reboot failed"))
		return 0;
	if (strstr(j->msg, "rebooted from its rootfs snapshot"))
		return 1;
	return -1;
}

static void hibernate_done(struct pt_portal *p, struct pt_job *j, struct op *o)
{
	struct pt_sb sb;
	char why[600];
	int status = 200;
	const char *msg = NULL;
	struct op *next = NULL;

	if (load_in(p, j->id, PT_HIBERNATING, &sb) == -1) {
		op_end(p, o, WANT_ASLEEP, 409, "the sandbox changed while it hibernated", NULL);
		return;
	}
	if (j->status == 200) {
		json_t *ck = json_deep_copy(json_object_get(j->out, "checkpoint"));
		const char *tmpl = json_string_value(json_object_get(j->out, "template"));

		if (!json_is_object(ck)) {
			json_decref(ck);
			ck = json_object();
		}
		if (tmpl)
			json_object_set_new(ck, "template", json_string(tmpl));
		free(sb.checkpoint);
		sb.checkpoint = json_dumps(ck, JSON_COMPACT | JSON_SORT_KEYS);
		sb.hibernated_at = pt_now_ms();
		snprintf(why, sizeof(why),
			 "hibernated on %s (generation %lld: %lld MiB state, %lld MiB rootfs, "
			 "checkpoint %lld ms)",
			 j->node, (long long)json_integer_value(json_object_get(ck, "generation")),
			 mib(ck, "state_bytes"), mib(ck, "rootfs_bytes"),
			 (long long)json_integer_value(json_object_get(ck, "checkpoint_ms")));
		json_decref(ck);
		move_or_log(p, &sb, PT_HIBERNATED, why);
		p->metrics.hib_ok++;
		{
			struct track *t = track_peek(p, sb.id);

			if (t)
				t->fails = 0;
		}
		if (o->wake_after && sb.state == PT_HIBERNATED) {
			struct err e = ERR_INIT;

			answer_now(p, o, WANT_ASLEEP, 200, NULL);
			next = start_wake(p, &sb, &e);
			if (!next)
				log_warn("wake after hibernate not started", "{s:s, s:s}", "id", sb.id,
					 "error", e.msg);
		}
	} else if (j->status == 500 && rebooted(j) >= 0) {
		/* runsc's checkpoint failed: the node booted it again from the
		 * rootfs snapshot it took first (files kept), or it failed. */
		bool up = rebooted(j) == 1;

		p->metrics.checkpoint_failures++;
		p->metrics.hib_failed++;
		status = 502;
		if (strncmp(j->msg, "checkpoint failed", 17) == 0)
			snprintf(why, sizeof(why), "%s", j->msg);
		else
			snprintf(why, sizeof(why), "checkpoint failed: %s%s", j->msg,
				 up ? "; rebooted from its rootfs snapshot (files kept, processes "
				      "restarted)"
				    : "");
		move_or_log(p, &sb, up ? PT_READY : PT_FAILED, why);
		msg = why;
	} else if (j->status == -1 || j->status == 500) {
		/* Maybe hibernated, maybe not: the node's heartbeats will say. */
		snprintf(why, sizeof(why),
			 "hibernate on %s: %s; the sandbox settles with its next heartbeats",
			 j->node, j->msg);
		if (j->status == 500)
			p->metrics.checkpoint_failures++;
		p->metrics.hib_failed++;
		status = 502;
		msg = why;
	} else {
		/* 409: not ready, busy, or connections stayed open: untouched. */
		snprintf(why, sizeof(why), "hibernate %s by %s: %s",
			 j->status == 409 ? "refused" : "failed", j->node, j->msg);
		move_or_log(p, &sb, PT_READY, why);
		if (j->status == 409)
			p->metrics.hib_refused++;
		else
			p->metrics.hib_failed++;
		status = j->status == 409 || j->status == 503 ? (int)j->status : 502;
		msg = why;
	}
	if (sb.state == PT_READY) {
		struct track *t = track(p, sb.id);

		if (t)
			t->retry_at = pt_now_ms() + IDLE_RETRY_MS;
		if (o->expiry)
			expiry_failed(p, &sb, msg);
	}
	pt_sb_clear(&sb);
	op_end(p, o, WANT_ASLEEP, status, msg, next);
}

static void wake_done(struct pt_portal *p, struct pt_job *j, struct op *o)
{
	bool restore = j->kind == PT_JOB_RESTORE;
	struct pt_node *n = pt_nodes_find(p, j->node);
	struct pt_sb sb;
	char why[600];
	int status = 200;
	const char *msg = NULL;

	if (restore && n) {
		n->inflight--;
		n->inflight_mb -= o->host_mb;
	}
	if (load_in(p, j->id, PT_WAKING, &sb) == -1) {
		op_end(p, o, WANT_READY, 409, "the sandbox changed while it woke", NULL);
		return;
	}
	if (j->status == 200) {
		json_t *wm = json_object_get(j->out, "wake_ms");
		uint64_t took = util_now_ms() - o->t0;

		sb.ready_at = pt_now_ms();
		sb.expires_at = sb.ready_at + sb.ttl_s * 1000;
		sb.hibernated_at = sb.offloaded_at = 0;
		if (restore) {
			snprintf(why, sizeof(why), "restored from S3 on %s in %llu ms", j->node,
				 (unsigned long long)took);
			/* It lives on the node now: the S3 copy goes. */
			pt_core_forget_checkpoint(p, sb.node_sid, sb.l2_prefix, NULL);
			sb.l2_prefix[0] = '\0';
			sb.l2_generation = 0;
		} else {
			snprintf(why, sizeof(why), "woken on %s in %lld ms", j->node,
				 json_is_integer(wm) ? (long long)json_integer_value(wm)
						     : (long long)took);
		}
		move_or_log(p, &sb, PT_READY, why);
		pt_hist_observe(&p->metrics.wake, (double)took / 1000.0);
		p->metrics.wakes_ok++;
	} else if (j->status == -1) {
		snprintf(why, sizeof(why),
			 "%s did not answer the wake (%s); the sandbox settles with its next "
			 "heartbeats",
			 j->node, j->msg);
		p->metrics.wakes_failed++;
		status = 502;
		msg = why;
	} else if (restore && (j->status == 404 || j->status == 502)) {
		snprintf(why, sizeof(why),
			 "restore on %s failed: %s (its checkpoint in S3 is missing or damaged)",
			 j->node, j->msg);
		pt_core_forget_checkpoint(p, sb.node_sid, sb.l2_prefix, NULL);
		move_or_log(p, &sb, PT_FAILED, why);
		p->metrics.wakes_failed++;
		status = 502;
		msg = why;
	} else if (restore) {
		snprintf(why, sizeof(why), "restore on %s failed: %s; still offloaded (wake again)",
			 j->node, j->msg);
		sb.node[0] = '\0';
		move_or_log(p, &sb, PT_OFFLOADED, why);
		p->metrics.wakes_failed++;
		status = j->status == 503 ? 503 : 502;
		msg = why;
	} else if (j->status == 404) {
		snprintf(why, sizeof(why), "%s no longer has it: %s", j->node, j->msg);
		move_or_log(p, &sb, PT_FAILED, why);
		p->metrics.wakes_failed++;
		status = 502;
		msg = why;
	} else {
		/* 500: the restore failed and can be tried again; 409: it was not
		 * hibernated (the heartbeats say what it is). */
		snprintf(why, sizeof(why), "wake on %s failed: %s; it stays hibernated (wake again)",
			 j->node, j->msg);
		move_or_log(p, &sb, PT_HIBERNATED, why);
		p->metrics.wakes_failed++;
		status = j->status == 409 ? 409 : 502;
		msg = why;
	}
	pt_sb_clear(&sb);
	op_end(p, o, WANT_READY, status, msg, NULL);
	pt_core_dispatch(p); /* a failed restore freed what it held */
}

static void offload_done(struct pt_portal *p, struct pt_job *j, struct op *o)
{
	struct pt_sb sb;
	char why[600];
	int status = 200;
	const char *msg = NULL;
	struct op *next = NULL;

	if (load_in(p, j->id, PT_OFFLOADING, &sb) == -1) {
		op_end(p, o, WANT_ASLEEP, 409, "the sandbox changed while it was offloaded", NULL);
		return;
	}
	if (j->status == 200) {
		json_t *l2 = json_object_get(j->out, "l2");
		const char *prefix = json_string_value(json_object_get(l2, "prefix"));
		json_t *ck = sb.checkpoint ? json_loads(sb.checkpoint, 0, NULL) : NULL;

		if (!ck)
			ck = json_object();
		json_object_set(ck, "l2", l2 ? l2 : json_null());
		free(sb.checkpoint);
		sb.checkpoint = json_dumps(ck, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(ck);
		snprintf(sb.l2_prefix, sizeof(sb.l2_prefix), "%s", prefix ? prefix : "");
		sb.l2_generation = json_integer_value(json_object_get(l2, "generation"));
		sb.offloaded_at = pt_now_ms();
		snprintf(why, sizeof(why), "offloaded to S3 from %s (%lld MiB at %s)", j->node,
			 mib(l2, "bytes"), sb.l2_prefix);
		sb.node[0] = '\0';
		move_or_log(p, &sb, PT_OFFLOADED, why);
		p->metrics.offloads_ok++;
	} else if (j->status == -1) {
		snprintf(why, sizeof(why),
			 "%s did not answer the offload (%s); the sandbox settles with its next "
			 "heartbeats",
			 j->node, j->msg);
		p->metrics.offloads_failed++;
		status = 502;
		msg = why;
	} else {
		struct track *t = track(p, sb.id);

		snprintf(why, sizeof(why), "offload failed: %s; kept hibernated on %s", j->msg,
			 j->node);
		move_or_log(p, &sb, PT_HIBERNATED, why);
		if (t)
			t->retry_at = pt_now_ms() + OFFLOAD_RETRY_MS;
		p->metrics.offloads_failed++;
		status = j->status == 503 ? 503 : 502;
		msg = why;
	}
	if (o->wake_after && (sb.state == PT_OFFLOADED || sb.state == PT_HIBERNATED)) {
		struct err e = ERR_INIT;

		answer_now(p, o, WANT_ASLEEP, status, msg);
		next = start_wake(p, &sb, &e);
		if (!next)
			log_warn("wake after offload not started", "{s:s, s:s}", "id", sb.id, "error",
				 e.msg);
	}
	pt_sb_clear(&sb);
	op_end(p, o, WANT_ASLEEP, status, msg, next);
}

/* The node's error for fork child id, from the answer's "failed" list. */
static const char *failed_why(json_t *out, const char *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(out, "failed"), i, v) {
		const char *fid = json_string_value(json_object_get(v, "id"));
		const char *err = json_string_value(json_object_get(v, "error"));

		if (fid && strcmp(fid, id) == 0)
			return err ? err : "no reason given";
	}
	return "not in the node's answer";
}

static void fork_done(struct pt_portal *p, struct pt_job *j, struct op *o)
{
	char why[600];
	int status = 200;
	const char *msg = NULL;

	if (j->status == 200) {
		char list[FORK_MAX * 34] = "";
		size_t len = 0;
		struct err e = ERR_INIT;
		json_t *kids = json_object_get(j->out, "children");
		const char *pst = json_string_value(
			json_object_get(json_object_get(j->out, "parent"), "state"));
		int made = 0;

		for (int i = 0; i < o->nchild; i++) {
			bool there = false;
			size_t k;
			json_t *v;

			json_array_foreach(kids, k, v)
				there |= json_is_string(json_object_get(v, "id")) &&
					 strcmp(json_string_value(json_object_get(v, "id")),
						o->child[i]) == 0;
			if (there) {
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
							made++ ? ", " : "", o->child[i]);
				snprintf(why, sizeof(why), "forked from %s on %s", o->id, j->node);
				pt_core_move_id(p, o->child[i], PT_STARTING, PT_READY, why, NULL);
			} else {
				snprintf(why, sizeof(why), "fork of %s on %s: this child failed: %s",
					 o->id, j->node, failed_why(j->out, o->child[i]));
				pt_core_move_id(p, o->child[i], PT_STARTING, PT_FAILED, why, NULL);
			}
		}
		snprintf(why, sizeof(why), "forked into %d on %s: %s", made, j->node, list);
		if (pt_store_sb_note(p->st, o->id, PT_READY, why, &e) == -1)
			log_warn("fork note not stored", "{s:s, s:s}", "id", o->id, "error", e.msg);
		if (pst && strcmp(pst, "hibernated") == 0) {
			/* Its checkpoint is complete but its restore failed: a wake
			 * brings it back. */
			snprintf(why, sizeof(why), "forked on %s, but it could not be restored "
						   "after the checkpoint: hibernated (wake it)", j->node);
			if (pt_core_move_id(p, o->id, PT_READY, PT_HIBERNATING, why, NULL) == 0)
				pt_core_move_id(p, o->id, PT_HIBERNATING, PT_HIBERNATED, why, NULL);
		}
		if (made == o->nchild) {
			p->metrics.forks_ok++;
		} else {
			p->metrics.forks_failed++;
			status = made ? 200 : 502;
			msg = "no child could be made";
		}
	} else if (j->status == -1) {
		/* The children become ready (adopted) or fail by the heartbeats. */
		snprintf(why, sizeof(why), "%s did not answer the fork (%s)", j->node, j->msg);
		p->metrics.forks_failed++;
		status = 502;
		msg = why;
	} else {
		json_t *v = json_object_get(j->out, "sandbox");
		const char *st = json_string_value(json_object_get(v, "state"));

		snprintf(why, sizeof(why), "fork of %s on %s failed: %s", o->id, j->node, j->msg);
		for (int i = 0; i < o->nchild; i++)
			pt_core_move_id(p, o->child[i], PT_STARTING, PT_FAILED, why, NULL);
		if (st && strcmp(st, "failed") == 0)
			pt_core_move_id(p, o->id, PT_READY, PT_FAILED, why, NULL);
		p->metrics.forks_failed++;
		status = j->status == 409 || j->status == 503 || j->status == 400 ? (int)j->status
										   : 502;
		msg = why;
	}
	op_end(p, o, WANT_FORK, status, msg, NULL);
}

void pt_hib_job_done(struct pt_portal *p, struct pt_job *j)
{
	struct op *o = op_find(p, j->id);

	if (!o) {
		log_warn("checkpoint answer without its operation", "{s:s, s:s}", "id", j->id,
			 "node", j->node);
		return;
	}
	switch (j->kind) {
	case PT_JOB_HIBERNATE:
		hibernate_done(p, j, o);
		break;
	case PT_JOB_WAKE:
	case PT_JOB_RESTORE:
		wake_done(p, j, o);
		break;
	case PT_JOB_OFFLOAD:
		offload_done(p, j, o);
		break;
	case PT_JOB_FORK:
		fork_done(p, j, o);
		break;
	default:
		break;
	}
}

/* --------------------------------------------------------------- requests */

void pt_hib_hibernate(struct pt_portal *p, struct pt_sb *sb, long long wait_s,
		      const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;
	struct op *o = op_find(p, sb->id);

	if (sb->state == PT_HIBERNATED || sb->state == PT_OFFLOADED ||
	    (sb->state == PT_OFFLOADING && !o)) {
		hsrv_resp_json(resp, 200, pt_view_sb(p, sb, true));
		return;
	}
	if (o && o->kind == OP_FORK) {
		resp_err(resp, 409, "the sandbox is being forked; hibernate it once that is done");
		return;
	}
	if (!o && sb->state != PT_READY) {
		char msg[160];

		snprintf(msg, sizeof(msg), "the sandbox is %s; only a ready one can hibernate",
			 pt_state_name(sb->state));
		resp_err(resp, 409, msg);
		return;
	}
	if (o && o->kind == OP_WAKE) {
		resp_err(resp, 409, "the sandbox is waking; hibernate it once it is ready");
		return;
	}
	if (!o && !(o = start_hibernate(p, sb, "hibernated by its client", &e))) {
		pt_resp_err(resp, &e);
		return;
	}
	if (wait_s == 0 || opw_add(o, req, WANT_ASLEEP, wait_s) == -1)
		hsrv_resp_json(resp, 202, pt_view_sb(p, sb, true));
}

void pt_hib_wake(struct pt_portal *p, struct pt_sb *sb, long long wait_s,
		 const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;
	struct op *o = op_find(p, sb->id);

	if (sb->state == PT_READY && !o) {
		if (req) {
			/* A wake of a running sandbox renews its lease, like keepalive. */
			sb->expires_at = pt_now_ms() + sb->ttl_s * 1000;
			sb->updated_at = pt_now_ms();
			if (pt_store_sb_update(p->st, sb, PT_READY, NULL, &e) == -1) {
				pt_resp_err(resp, &e);
				return;
			}
			hsrv_resp_json(resp, 200, pt_view_sb(p, sb, true));
		} else {
			hsrv_resp_json(resp, 200, json_pack("{s:s, s:s}", "id", sb->id, "state", "ready"));
		}
		return;
	}
	if (o && o->kind == OP_FORK) {
		resp_err(resp, 409, "the sandbox is ready and being forked");
		return;
	}
	if (o && (o->kind == OP_HIBERNATE || o->kind == OP_OFFLOAD)) {
		o->wake_after = true; /* the wake follows when it is done */
	} else if (!o) {
		if (!pt_state_asleep(sb->state) || sb->state == PT_HIBERNATING ||
		    sb->state == PT_OFFLOADING || sb->state == PT_WAKING) {
			char msg[200];

			/* Transitional states without an operation: a restart left
			 * them for the heartbeats to settle. */
			snprintf(msg, sizeof(msg), "sandbox `%s` is %s%s", sb->id,
				 pt_state_name(sb->state),
				 pt_state_asleep(sb->state) ? "; it settles within seconds, ask again"
							    : ", not hibernated");
			resp_err(resp, 409, msg);
			return;
		}
		if (!(o = start_wake(p, sb, &e))) {
			pt_resp_err(resp, &e);
			return;
		}
	}
	if (!req) {
		hsrv_resp_json(resp, 202,
			       json_pack("{s:s, s:s}", "id", sb->id, "state", pt_state_name(sb->state)));
		return;
	}
	if (wait_s == 0 || opw_add(o, req, WANT_READY, wait_s) == -1)
		hsrv_resp_json(resp, 202, pt_view_sb(p, sb, true));
}

void pt_hib_fork(struct pt_portal *p, const struct pt_caller *who, struct pt_sb *sb, int count,
		 long long wait_s, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;
	struct pt_node *n;
	struct op *o;
	json_t *ids;
	char why[200];

	if (sb->state != PT_READY || pt_core_busy(p, sb->id)) {
		char msg[200];

		snprintf(msg, sizeof(msg), "the sandbox is %s%s; only a ready one can be forked",
			 pt_state_name(sb->state), sb->state == PT_READY ? " and busy" : "");
		resp_err(resp, 409, msg);
		return;
	}
	if (count < 1 || count > FORK_MAX) {
		resp_err(resp, 400, "count must be 1..8");
		return;
	}
	if (!(n = up_node(p, sb->node, &e))) {
		pt_resp_err(resp, &e);
		return;
	}
	if (!(o = op_new(p, OP_FORK, sb->id))) {
		resp_err(resp, 500, "out of memory");
		return;
	}
	ids = json_array();
	snprintf(why, sizeof(why), "forked from %s: the node makes it", sb->id);
	/* The rows first: after a crash the portal knows what it asked for. */
	for (int i = 0; i < count; i++) {
		struct pt_sb c = *sb;

		pt_core_new_id(o->child[i], sizeof(o->child[i]));
		snprintf(c.id, sizeof(c.id), "%s", o->child[i]);
		snprintf(c.owner, sizeof(c.owner), "%s", who->key_id);
		snprintf(c.node_sid, sizeof(c.node_sid), "%s", o->child[i]);
		snprintf(c.forked_from, sizeof(c.forked_from), "%s", sb->id);
		c.state = PT_STARTING;
		c.idem_key[0] = c.reason[0] = '\0';
		c.created_at = c.updated_at = pt_now_ms();
		c.ready_at = c.expires_at = c.last_activity_at = 0;
		c.hibernated_at = c.offloaded_at = 0;
		c.l2_prefix[0] = '\0';
		c.l2_generation = 0;
		c.checkpoint = NULL;
		if (pt_store_sb_insert(p->st, &c, why, &e) == -1) {
			for (int k = 0; k < o->nchild; k++)
				pt_core_move_id(p, o->child[k], PT_STARTING, PT_FAILED,
						"the fork was not sent", NULL);
			json_decref(ids);
			op_unlink(p, o);
			free(o);
			pt_resp_err(resp, &e);
			return;
		}
		o->nchild++;
		json_array_append_new(ids, json_string(o->child[i]));
	}
	if (send_job(p, n, sb, PT_JOB_FORK, json_pack("{s:o}", "ids", ids), &e) == -1) {
		for (int k = 0; k < o->nchild; k++)
			pt_core_move_id(p, o->child[k], PT_STARTING, PT_FAILED, "the fork was not sent",
					NULL);
		op_unlink(p, o);
		free(o);
		pt_resp_err(resp, &e);
		return;
	}
	log_info("fork", "{s:s, s:s, s:i, s:s}", "id", sb->id, "node", n->name, "count", count,
		 "by", who->key_id);
	if (wait_s == 0 || opw_add(o, req, WANT_FORK, wait_s) == -1)
		hsrv_resp_json(resp, 202, fork_view(p, o));
}

/* ----------------------------------------------------------------- policy */

int pt_hib_expired(struct pt_portal *p, struct pt_sb *sb)
{
	struct err e = ERR_INIT;
	struct track *t = track_peek(p, sb->id);
	struct op *o;

	if (t && pt_now_ms() < t->retry_at)
		return -1;
	o = start_hibernate(p, sb, "lease expired (persist): hibernating", &e);
	if (!o) {
		log_warn("persist lease: hibernate not started", "{s:s, s:s}", "id", sb->id, "error",
			 e.msg);
		if (e.http_status == 503 || e.http_status == 409)
			expiry_failed(p, sb, e.msg);
		return -1;
	}
	o->expiry = true;
	return 0;
}

struct cand {
	struct pt_portal *p;
	long long now;
	char (*id)[32];
	int n, cap;
};

static void cand_add(struct cand *c, const char *id)
{
	if (c->n == c->cap) {
		int cap = c->cap ? c->cap * 2 : 16;
		void *v = realloc(c->id, (size_t)cap * sizeof(*c->id));

		if (!v)
			return;
		c->id = v;
		c->cap = cap;
	}
	snprintf(c->id[c->n++], 32, "%s", id);
}

/* When a ready row was last in use: proxied traffic, its start or wake,
 * CPU above the threshold. */
static long long last_use(struct pt_portal *p, const struct pt_sb *sb)
{
	struct track *t = track_peek(p, sb->node_sid);
	long long last = sb->ready_at > sb->last_activity_at ? sb->ready_at : sb->last_activity_at;

	if (t && t->busy_at > last)
		last = t->busy_at;
	return last;
}

static bool cooling(struct pt_portal *p, const char *id, long long now)
{
	struct track *t = track_peek(p, id);

	return t && now < t->retry_at;
}

/* Which rows the policy acts on (no store calls here: just the choice). */
static void pick(const struct pt_sb *sb, void *ud)
{
	struct cand *c = ud;
	struct pt_portal *p = c->p;
	long long now = c->now;

	if (pt_core_busy(p, sb->id) || cooling(p, sb->id, now))
		return;
	switch (sb->state) {
	case PT_READY:
		if (sb->idle_timeout_s > 0 && now - last_use(p, sb) >= sb->idle_timeout_s * 1000)
			cand_add(c, sb->id);
		break;
	case PT_HIBERNATED:
		if ((!sb->persist && sb->expires_at && sb->expires_at <= now) ||
		    (sb->offload_after_s > 0 && sb->hibernated_at &&
		     now - sb->hibernated_at >= sb->offload_after_s * 1000))
			cand_add(c, sb->id);
		break;
	case PT_OFFLOADED:
		if ((!sb->persist && sb->expires_at && sb->expires_at <= now) ||
		    (p->cfg.offload_retention_s > 0 && sb->offloaded_at &&
		     now - sb->offloaded_at >= p->cfg.offload_retention_s * 1000))
			cand_add(c, sb->id);
		break;
	default:
		break;
	}
}

static void act(struct pt_portal *p, struct pt_sb *sb, long long now)
{
	struct err e = ERR_INIT;
	char why[300];
	int rc = 0;

	if (sb->state == PT_READY) {
		snprintf(why, sizeof(why),
			 "idle for %lld s (no proxied traffic, CPU under %lld%%): hibernating",
			 (now - last_use(p, sb)) / 1000, p->cfg.idle_cpu_pct);
		if (start_hibernate(p, sb, why, &e))
			p->metrics.idle_hibernations++;
		else
			rc = -1;
	} else if (!sb->persist && sb->expires_at && sb->expires_at <= now) {
		snprintf(why, sizeof(why), "lease expired while %s (persist is off)",
			 pt_state_name(sb->state));
		pt_core_release_row(p, sb, why, &e, &rc);
		if (rc == 0)
			p->metrics.lease_expiries++;
	} else if (sb->state == PT_HIBERNATED) {
		snprintf(why, sizeof(why), "hibernated for %lld s: offloading to S3",
			 (now - sb->hibernated_at) / 1000);
		rc = start_offload(p, sb, why, &e);
	} else if (sb->state == PT_OFFLOADED) {
		snprintf(why, sizeof(why),
			 "offloaded for longer than --offload-retention (%lld s): its checkpoint is "
			 "deleted",
			 p->cfg.offload_retention_s);
		pt_core_release_row(p, sb, why, &e, &rc);
		if (rc == 0)
			p->metrics.retention_releases++;
	}
	if (rc == -1) {
		struct track *t = track(p, sb->id);

		if (t)
			t->retry_at = now + IDLE_RETRY_MS;
		log_warn("policy: not done", "{s:s, s:s, s:s}", "id", sb->id, "state",
			 pt_state_name(sb->state), "error", e.msg);
	}
}

static void policy(struct pt_portal *p)
{
	static const enum pt_state states[] = {PT_READY, PT_HIBERNATED, PT_OFFLOADED};
	struct cand c = {.p = p, .now = pt_now_ms()};
	struct err e = ERR_INIT;

	for (size_t i = 0; i < ARRAY_LEN(states); i++)
		if (pt_store_sb_select(p->st, (int)states[i], NULL, 0, pick, &c, &e) == -1)
			log_error("policy: store", "{s:s}", "error", e.msg);
	for (int i = 0; i < c.n; i++) {
		struct pt_sb sb;

		memset(&sb, 0, sizeof(sb));
		if (pt_store_sb_get(p->st, c.id[i], &sb, &e) == 0 && !pt_core_busy(p, sb.id))
			act(p, &sb, pt_now_ms());
		pt_sb_clear(&sb);
	}
	free(c.id);
}

void pt_hib_tick(struct pt_portal *p, uint64_t now)
{
	struct pt_hib *h = hib(p);

	if (!h)
		return;
	/* Waits that ran out (or whose client left): 202 with what it is now. */
	for (struct op *o = h->ops; o; o = o->next) {
		struct opw **pp = &o->waiters;

		while (*pp) {
			struct opw *w = *pp;

			if (!w->gone && now < w->deadline) {
				pp = &w->next;
				continue;
			}
			*pp = w->next;
			opw_answer(p, o, w, 202, NULL);
			free(w);
		}
	}
	if (now - h->last_policy >= POLICY_MS) {
		h->last_policy = now;
		policy(p);
	}
	if (now - h->last_prune >= 60000) {
		h->last_prune = now;
		track_prune(p, pt_now_ms());
	}
}

static void resend_delete(const struct pt_sb *sb, void *ud)
{
	struct cand *c = ud;

	/* Releasing with no node: an offloaded one whose checkpoint delete a
	 * previous run did not see done. */
	if (!sb->node[0] && sb->l2_prefix[0])
		cand_add(c, sb->id);
}

int pt_hib_start(struct pt_portal *p, struct err *e)
{
	struct cand c = {.p = p};

	if (!hib(p))
		return err_set(e, 12, "out of memory");
	if (pt_store_sb_select(p->st, PT_RELEASING, NULL, 0, resend_delete, &c, e) == -1)
		return -1;
	for (int i = 0; i < c.n; i++) {
		struct pt_sb sb;

		memset(&sb, 0, sizeof(sb));
		if (pt_store_sb_get(p->st, c.id[i], &sb, e) == 0)
			pt_core_forget_checkpoint(p, sb.node_sid, sb.l2_prefix, sb.id);
		pt_sb_clear(&sb);
	}
	free(c.id);
	return 0;
}

void pt_hib_stop(struct pt_portal *p)
{
	for (struct op *o = p->hib ? p->hib->ops : NULL; o; o = o->next)
		while (o->waiters) {
			struct opw *w = o->waiters;
			struct hsrv_resp resp;

			o->waiters = w->next;
			memset(&resp, 0, sizeof(resp));
			resp_err(&resp, 503, "the portal is stopping");
			hsrv_defer_reply(w->d, &resp);
			free(w);
		}
}

void pt_hib_free(struct pt_portal *p)
{
	if (!p->hib)
		return;
	pt_hib_stop(p);
	while (p->hib->ops) {
		struct op *o = p->hib->ops;

		p->hib->ops = o->next;
		free(o);
	}
	for (int b = 0; b < TRACK_BUCKETS; b++)
		while (p->hib->tr[b]) {
			struct track *t = p->hib->tr[b];

			p->hib->tr[b] = t->next;
			free(t);
		}
	free(p->hib);
	p->hib = NULL;
}
