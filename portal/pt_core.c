/* Acquire, placement, the queue, node calls, leases and release.
 *
 * An acquire either places at once (a warm pool member is claimed, or a
 * new sandbox is created on the best of K sampled nodes) or waits in one
 * bounded FIFO queue; a template whose head cannot be placed blocks only
 * that template's later entries, so each template is first come, first
 * served.  Every room-freeing event (a destroy done, a heartbeat, a failed
 * claim) runs the queue at once.  The row is written before the node is
 * called, so after a crash the portal always knows what it may have asked
 * for; pt_reconcile.c settles it with what the node reports. */
#include "portal/pt_rec.h"
#include "portal/pt_core.h"

#include "common/http_client.h"
#include "common/json.h"
#include "common/log.h"
#include "common/query.h"
#include "common/rnd.h"
#include "common/util.h"
#include "portal/pt_hib.h"
#include "portal/pt_nodes.h"
#include "portal/pt_thumb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TICK_MS 200
#define RETRY_AFTER_S "5"
#define CLAIM_TIMEOUT_MS 15000
#define CREATE_TIMEOUT_MS 300000
#define DESTROY_TIMEOUT_MS 90000
#define MAX_CLAIM_TRIES 5
/* A checkpoint, restore, fork or S3 transfer of a big sandbox takes a while. */
#define CHECKPOINT_TIMEOUT_MS 600000
#define THUMB_TIMEOUT_MS 15000

struct pt_waiter {
	struct pt_waiter *next;
	struct pt_acq *a;
	struct hsrv_defer *d;
	uint64_t t0, deadline; /* monotonic ms */
	bool gone;
};

/* ------------------------------------------------------------------ rows */

int pt_core_move(struct pt_portal *p, struct pt_sb *sb, enum pt_state to, const char *reason,
		 struct err *e)
{
	enum pt_state from = sb->state;

	if (!pt_state_allowed(from, to))
		return err_http(e, 409, "sandbox `%s` is %s and cannot become %s", sb->id,
				pt_state_name(from), pt_state_name(to));
	sb->state = to;
	sb->updated_at = pt_now_ms();
	if (reason)
		snprintf(sb->reason, sizeof(sb->reason), "%s", reason);
	if (pt_store_sb_update(p->st, sb, from, reason, e) == -1) {
		sb->state = from;
		return err_wrap(e, "sandbox %s: %s -> %s", sb->id, pt_state_name(from),
				pt_state_name(to));
	}
	log_info("sandbox state", "{s:s, s:s, s:s, s:s, s:s, s:s?}", "id", sb->id, "from",
		 pt_state_name(from), "to", pt_state_name(to), "node", sb->node, "node_sandbox",
		 sb->node_sid, "reason", reason);
	return 0;
}

/* Loads row id and moves it; logs instead of failing loudly (the callers
 * are reactions to node answers: a row someone else moved meanwhile, e.g.
 * marked lost, is not an error to report to anyone). */
int pt_core_move_id(struct pt_portal *p, const char *id, enum pt_state from, enum pt_state to,
		   const char *reason, struct pt_sb *out)
{
	struct err e = ERR_INIT;
	struct pt_sb sb;
	int rc = -1;

	memset(&sb, 0, sizeof(sb));
	if (pt_store_sb_get(p->st, id, &sb, &e) == 0) {
		if (sb.state != from)
			err_http(&e, 409, "sandbox `%s` is %s, not %s", id, pt_state_name(sb.state),
				 pt_state_name(from));
		else {
			if (to == PT_READY) {
				sb.ready_at = pt_now_ms();
				sb.expires_at = sb.ready_at + sb.ttl_s * 1000;
			}
			rc = pt_core_move(p, &sb, to, reason, &e);
		}
	}
	if (rc == -1)
		log_warn("state change not made", "{s:s, s:s, s:s}", "id", id, "to",
			 pt_state_name(to), "error", e.msg);
	if (out && rc == 0) {
		*out = sb;
		return 0;
	}
	pt_sb_clear(&sb);
	return rc;
}

/* ------------------------------------------------------------- node calls */

void pt_job_free(struct pt_job *j)
{
	json_decref(j->body);
	json_decref(j->out);
	free(j);
}

static void job_done(void *ud);

/* The node's answer: status and body; an error message from an error body. */
static void node_call(struct pt_job *j, const char *method, const char *url, long timeout_ms)
{
	struct pt_portal *p = j->p;
	char authz[300];
	const char *hdrs[] = {authz, "Content-Type: application/json", NULL};
	struct http_req req = {.method = method, .url = url, .headers = hdrs,
			       .timeout_ms = timeout_ms};
	struct http_resp resp;
	char *body = j->body ? json_dumps(j->body, JSON_COMPACT) : NULL;

	memset(&resp, 0, sizeof(resp));
	snprintf(authz, sizeof(authz), "Authorization: Bearer %s", p->cfg.node_cred);
	if (body) {
		req.body = body;
		req.body_len = strlen(body);
	}
	j->status = -1;
	if (http_request(&req, &resp, &j->e) == 0) {
		j->status = resp.status;
		j->out = json_loads(buf_str(&resp.body), 0, NULL);
		if (j->status < 200 || j->status > 299) {
			const char *m = json_string_value(
				json_object_get(json_object_get(j->out, "error"), "message"));

			err_http(&j->e, (int)j->status, "%s %s: %ld: %s", method, url, j->status,
				 m ? m : "no error message");
			snprintf(j->msg, sizeof(j->msg), "%s", m ? m : "no error message");
		}
	} else {
		snprintf(j->msg, sizeof(j->msg), "no answer: %.200s", j->e.msg);
	}
	explicit_bzero(authz, sizeof(authz));
	free(body);
	http_resp_free(&resp);
}

/* The job's work, on its own thread (common/job.h). */
static void job_work(void *arg)
{
	struct pt_job *j = arg;
	char url[1280];

	switch (j->kind) {
	case PT_JOB_CLAIM:
		snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/claim", j->url, j->sid);
		node_call(j, "POST", url, CLAIM_TIMEOUT_MS);
		break;
	case PT_JOB_CREATE:
		snprintf(url, sizeof(url), "%s/v1/sandboxes", j->url);
		node_call(j, "POST", url, CREATE_TIMEOUT_MS);
		break;
	case PT_JOB_DESTROY:
		snprintf(url, sizeof(url), "%s/v1/sandboxes/%s", j->url, j->sid);
		node_call(j, "DELETE", url, DESTROY_TIMEOUT_MS);
		break;
	case PT_JOB_HIBERNATE:
	case PT_JOB_WAKE:
	case PT_JOB_RESTORE:
	case PT_JOB_OFFLOAD:
	case PT_JOB_FORK: {
		static const char *const act[] = {[PT_JOB_HIBERNATE] = "hibernate",
						  [PT_JOB_WAKE] = "wake", [PT_JOB_RESTORE] = "restore",
						  [PT_JOB_OFFLOAD] = "offload", [PT_JOB_FORK] = "fork"};

		snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/%s", j->url, j->sid, act[j->kind]);
		if (!j->body)
			j->body = json_object();
		node_call(j, "POST", url, CHECKPOINT_TIMEOUT_MS);
		break;
	}
	case PT_JOB_THUMBNAIL:
		snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/thumbnail?width=%s", j->url, j->sid,
			 j->prefix);
		node_call(j, "GET", url, THUMB_TIMEOUT_MS);
		break;
	case PT_JOB_CKPT_DELETE: {
		char q[3 * sizeof(j->prefix) + 4];

		query_escape(j->prefix, q, sizeof(q));
		snprintf(url, sizeof(url), "%s/v1/checkpoints/%s?prefix=%s", j->url, j->sid, q);
		node_call(j, "DELETE", url, DESTROY_TIMEOUT_MS);
		break;
	}
	}
}

/* The answer is not used (the portal stops): the next start reconciles
 * what this call did. */
static void job_drop(void *ud)
{
	pt_job_free(ud);
}

int pt_job_start(struct pt_portal *p, struct pt_job *j, struct err *e)
{
	int rc;

	j->p = p;
	rc = job_start(p->jobs, job_work, job_done, job_drop, j);
	return rc ? err_set(e, rc, "start a node call") : 0;
}

/* ------------------------------------------------------------- acquires */

static struct pt_acq *pending_find(struct pt_portal *p, const char *id)
{
	for (struct pt_acq *a = p->pending; a; a = a->all_next)
		if (strcmp(a->id, id) == 0)
			return a;
	return NULL;
}

static void queue_push(struct pt_portal *p, struct pt_acq *a, bool front)
{
	a->in_queue = true;
	a->prev = a->next = NULL;
	if (!p->queue_head) {
		p->queue_head = p->queue_tail = a;
	} else if (front) {
		a->next = p->queue_head;
		p->queue_head->prev = a;
		p->queue_head = a;
	} else {
		a->prev = p->queue_tail;
		p->queue_tail->next = a;
		p->queue_tail = a;
	}
	p->queue_len++;
	if (!a->queued_at)
		a->queued_at = util_now_ms();
}

static void queue_remove(struct pt_portal *p, struct pt_acq *a)
{
	if (!a->in_queue)
		return;
	if (a->prev)
		a->prev->next = a->next;
	else
		p->queue_head = a->next;
	if (a->next)
		a->next->prev = a->prev;
	else
		p->queue_tail = a->prev;
	a->in_queue = false;
	a->next = a->prev = NULL;
	p->queue_len--;
}

static void acq_free(struct pt_portal *p, struct pt_acq *a)
{
	queue_remove(p, a);
	for (struct pt_acq **pp = &p->pending; *pp; pp = &(*pp)->all_next)
		if (*pp == a) {
			*pp = a->all_next;
			break;
		}
	while (a->waiters) {
		struct pt_waiter *w = a->waiters;

		a->waiters = w->next;
		free(w);
	}
	free(a->egress);
	free(a);
}

static void resp_error(struct hsrv_resp *r, int status, const char *msg)
{
	hsrv_resp_error(r, status, NULL, msg);
	if (status == 503)
		hsrv_resp_header(r, "Retry-After", RETRY_AFTER_S);
}

/* Answers one waiter with status and a copy of body (or an error message),
 * frees it, and observes the acquire latency. */
static void waiter_answer(struct pt_portal *p, struct pt_waiter *w, int status, json_t *body,
			  const char *msg)
{
	struct hsrv_resp resp;

	memset(&resp, 0, sizeof(resp));
	if (body)
		hsrv_resp_json(&resp, status, json_deep_copy(body));
	else
		resp_error(&resp, status, msg);
	hsrv_defer_reply(w->d, &resp);
	pt_hist_observe(&p->metrics.acquire, (double)(util_now_ms() - w->t0) / 1000.0);
	if (status == 201)
		p->metrics.acquires_ok++;
	else if (status == 503)
		p->metrics.acquires_unavailable++;
	else if (status >= 400)
		p->metrics.acquires_failed++;
}

/* Answers every waiter of a and forgets a. */
static void acq_finish(struct pt_portal *p, struct pt_acq *a, int status, json_t *body,
		       const char *msg)
{
	for (struct pt_waiter *w = a->waiters; w; w = w->next)
		waiter_answer(p, w, status, body, msg);
	acq_free(p, a);
}

/* Answers a's waiters with the row as it is now. */
static void acq_finish_row(struct pt_portal *p, struct pt_acq *a, int status)
{
	struct err e = ERR_INIT;
	struct pt_sb sb;
	json_t *v;

	memset(&sb, 0, sizeof(sb));
	if (pt_store_sb_get(p->st, a->id, &sb, &e) == -1) {
		acq_finish(p, a, 500, NULL, e.msg);
		return;
	}
	v = pt_view_sb(p, &sb, true);
	acq_finish(p, a, status, v, NULL);
	json_decref(v);
	pt_sb_clear(&sb);
}

/* The row changed under a pending acquire (its node went silent and it was
 * marked lost, or it was failed): tell the waiters. */
static void acq_gone(struct pt_portal *p, struct pt_acq *a)
{
	acq_finish(p, a, 502, NULL,
		   "the sandbox was lost while it was being made (its node went silent); "
		   "acquire again");
}

static void waiter_gone(void *ud)
{
	((struct pt_waiter *)ud)->gone = true; /* settled by the next tick */
}

static int waiter_add(struct pt_acq *a, const struct hsrv_req *req, long long wait_s, uint64_t t0)
{
	struct pt_waiter *w = calloc(1, sizeof(*w));

	if (!w)
		return -1;
	w->d = hsrv_defer(req, waiter_gone, w);
	if (!w->d) {
		free(w);
		return -1;
	}
	w->a = a;
	w->t0 = t0;
	w->deadline = t0 + (uint64_t)wait_s * 1000;
	w->next = a->waiters;
	a->waiters = w;
	return 0;
}

/* Whether pool member sid on n is spoken for: a live row holds it (a claim
 * in flight included). */
static bool member_taken(struct pt_portal *p, const struct pt_node *n, const char *sid)
{
	struct err e = ERR_INIT;
	struct pt_sb sb;
	int rc;

	/* A claim in flight has its row already (written before the call). */
	memset(&sb, 0, sizeof(sb));
	rc = pt_store_sb_by_node_sid(p->st, n->name, sid, &sb, &e);
	pt_sb_clear(&sb);
	return rc != 0; /* an error counts as taken: never risk a double claim */
}

struct placement {
	struct pt_node *node;
	bool warm;
	char sid[32];
};

static bool decide(struct pt_portal *p, const struct pt_acq *a, struct placement *pl)
{
	memset(pl, 0, sizeof(*pl));
	if (a->default_res) {
		pl->node = pt_nodes_pick_warm(p, a->template, member_taken, pl->sid, sizeof(pl->sid));
		if (pl->node) {
			pl->warm = true;
			return true;
		}
	}
	pl->node = pt_nodes_pick_new(p, a->template, a->memory_mb);
	if (!pl->node)
		return false;
	snprintf(pl->sid, sizeof(pl->sid), "%s", a->id);
	return true;
}

/* Sends the node call for a placed acquire whose row is `placing` on
 * pl->node.  On failure the row fails and the waiters hear why. */
static void place(struct pt_portal *p, struct pt_acq *a, const struct placement *pl)
{
	struct err e = ERR_INIT;
	struct pt_job *j = calloc(1, sizeof(*j));
	json_t *egress = json_loads(a->egress, JSON_DECODE_ANY, NULL);

	if (!j || !egress) {
		free(j);
		json_decref(egress);
		pt_core_move_id(p, a->id, PT_PLACING, PT_FAILED, "out of memory", NULL);
		acq_finish(p, a, 500, NULL, "out of memory");
		return;
	}
	j->kind = pl->warm ? PT_JOB_CLAIM : PT_JOB_CREATE;
	snprintf(j->node, sizeof(j->node), "%s", pl->node->name);
	snprintf(j->url, sizeof(j->url), "%s", pl->node->url);
	snprintf(j->id, sizeof(j->id), "%s", a->id);
	snprintf(j->sid, sizeof(j->sid), "%s", pl->sid);
	if (pl->warm) {
		j->body = json_pack("{s:o}", "egress", egress);
	} else {
		char why[160];

		j->body = json_pack("{s:s, s:s, s:I, s:I, s:I, s:o}", "id", pl->sid, "template",
				    a->template, "memory_mb", (json_int_t)a->memory_mb, "cpus",
				    (json_int_t)a->cpus, "pids", (json_int_t)a->pids, "egress",
				    egress);
		if (j->body)
			json_object_set_new(j->body, "desktop",
					    json_pack("{s:b, s:b}", "clipboard", a->clipboard,
						      "resize", a->resize));
		snprintf(why, sizeof(why), "creating it on %s", pl->node->name);
		if (pt_core_move_id(p, a->id, PT_PLACING, PT_STARTING, why, NULL) == -1) {
			pt_job_free(j);
			acq_gone(p, a);
			return;
		}
		a->state = PT_STARTING;
		pl->node->inflight++;
		pl->node->inflight_mb += a->memory_mb + 192 + a->memory_mb / 8;
	}
	a->job = true;
	if (pt_job_start(p, j, &e) == -1) {
		a->job = false;
		if (!pl->warm) {
			pl->node->inflight--;
			pl->node->inflight_mb -= a->memory_mb + 192 + a->memory_mb / 8;
		}
		pt_core_move_id(p, a->id, a->state, PT_FAILED, e.msg, NULL);
		pt_job_free(j);
		acq_gone(p, a);
	}
}

/* Moves a queued acquire to placing on pl's node and calls the node. */
static void place_queued(struct pt_portal *p, struct pt_acq *a, const struct placement *pl)
{
	struct err e = ERR_INIT;
	struct pt_sb sb;
	char why[200];

	memset(&sb, 0, sizeof(sb));
	queue_remove(p, a);
	if (pt_store_sb_get(p->st, a->id, &sb, &e) == -1 || sb.state != PT_QUEUED) {
		log_warn("queued acquire vanished", "{s:s, s:s}", "id", a->id, "error", e.msg);
		pt_sb_clear(&sb);
		acq_finish(p, a, 500, NULL, "the sandbox changed while it was queued");
		return;
	}
	snprintf(sb.node, sizeof(sb.node), "%s", pl->node->name);
	snprintf(sb.node_sid, sizeof(sb.node_sid), "%s", pl->sid);
	snprintf(why, sizeof(why), "%s on %s", pl->warm ? "claiming pool member" : "placed",
		 pl->node->name);
	if (pt_core_move(p, &sb, PT_PLACING, why, &e) == -1) {
		pt_sb_clear(&sb);
		acq_finish(p, a, 500, NULL, e.msg);
		return;
	}
	pt_sb_clear(&sb);
	a->state = PT_PLACING;
	if (a->queued_at && !a->wait_observed) {
		pt_hist_observe(&p->metrics.queue_wait, (double)(util_now_ms() - a->queued_at) / 1000.0);
		a->wait_observed = true;
	}
	place(p, a, pl);
}

/* Runs the queue: places what can be placed, in order, per template. */
void pt_core_dispatch(struct pt_portal *p)
{
	const char *blocked[64];
	int nb = 0;
	struct pt_acq *a = p->queue_head;

	while (a) {
		struct pt_acq *next = a->next;
		struct placement pl;
		bool skip = false;

		for (int i = 0; i < nb; i++)
			if (strcmp(blocked[i], a->template) == 0)
				skip = true;
		if (!skip) {
			if (decide(p, a, &pl))
				place_queued(p, a, &pl);
			else if (nb < (int)ARRAY_LEN(blocked))
				blocked[nb++] = a->template;
			else
				break;
		}
		a = next;
	}
}

json_t *pt_core_view(struct pt_portal *p, const char *id)
{
	struct err e = ERR_INIT;
	struct pt_sb sb;
	json_t *v = NULL;

	memset(&sb, 0, sizeof(sb));
	if (pt_store_sb_get(p->st, id, &sb, &e) == 0)
		v = pt_view_sb(p, &sb, true);
	pt_sb_clear(&sb);
	return v;
}

void pt_core_new_id(char *out, size_t len)
{
	if (rnd_hex("sb-", 8, out, len, NULL) == -1)
		abort(); /* getrandom on Linux >= 3.17 does not fail for 8 bytes */
}

/* A retried acquire (same owner and Idempotency-Key): joins the pending one
 * or answers with the row.  Returns true when it answered or joined. */
static bool acquire_again(struct pt_portal *p, const struct pt_acquire_req *r,
			  struct pt_sb *old, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_acq *a = pending_find(p, old->id);
	json_t *v;
	struct err e = ERR_INIT;

	if (a) {
		if (waiter_add(a, req, r->wait_s, util_now_ms()) == -1)
			resp_error(resp, 500, "out of memory");
		return true;
	}
	if (old->state == PT_FAILED) {
		/* A failed attempt does not hold the key: this retry starts afresh. */
		old->idem_key[0] = '\0';
		old->updated_at = pt_now_ms();
		if (pt_store_sb_update(p->st, old, PT_FAILED, NULL, &e) == -1) {
			pt_resp_err(resp, &e);
			return true;
		}
		return false;
	}
	v = pt_view_sb(p, old, true);
	hsrv_resp_json(resp, old->state == PT_READY ? 201 : old->state == PT_STARTING ||
				     old->state == PT_PLACING || old->state == PT_QUEUED ? 202 : 200,
		       v);
	hsrv_resp_header(resp, "Idempotent-Replayed", "true");
	return true;
}

static bool any_node_up(struct pt_portal *p)
{
	for (struct pt_node *n = p->nodes; n; n = n->next)
		if (n->up && n->capacity)
			return true;
	return false;
}

void pt_core_acquire(struct pt_portal *p, const struct pt_caller *who,
		     const struct pt_acquire_req *r, const struct hsrv_req *req,
		     struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;
	uint64_t t0 = util_now_ms();
	struct pt_acq *a;
	struct placement pl;
	struct pt_sb sb;
	bool placed;
	char desk[64];

	snprintf(desk, sizeof(desk), "{\"clipboard\":%s,\"resize\":%s,\"record\":%s}",
		 r->clipboard ? "true" : "false", r->resize ? "true" : "false",
		 r->record ? "true" : "false");
	if (p->stopping) {
		resp_error(resp, 503, "the portal is stopping");
		return;
	}
	memset(&sb, 0, sizeof(sb));
	if (r->idem_key[0]) {
		int rc = pt_store_sb_by_idem(p->st, who->key_id, r->idem_key, &sb, &e);

		if (rc == -1) {
			pt_resp_err(resp, &e);
			return;
		}
		if (rc == 1 && acquire_again(p, r, &sb, req, resp)) {
			pt_sb_clear(&sb);
			return;
		}
		pt_sb_clear(&sb);
	}
	if (!pt_core_template_known(p, r->template)) {
		if (!any_node_up(p))
			resp_error(resp, 503, "no node is up yet");
		else
			hsrv_resp_json(resp, 400,
				       json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "bad_request",
						 "message", "no node has this template", "field",
						 "template"));
		return;
	}
	a = calloc(1, sizeof(*a));
	if (!a || !(a->egress = strdup(r->egress))) {
		free(a);
		resp_error(resp, 500, "out of memory");
		return;
	}
	pt_core_new_id(a->id, sizeof(a->id));
	snprintf(a->owner, sizeof(a->owner), "%s", who->key_id);
	snprintf(a->template, sizeof(a->template), "%s", r->template);
	/* Warm members booted with the default desktop switches. */
	a->default_res = r->default_res && r->clipboard && !r->resize;
	a->clipboard = r->clipboard;
	a->resize = r->resize;
	a->record = r->record;
	a->memory_mb = r->memory_mb;
	a->cpus = r->cpus;
	a->pids = r->pids;
	a->t0 = t0;
	placed = decide(p, a, &pl);
	if (!placed && (r->wait_s == 0 || p->queue_len >= p->cfg.queue_max)) {
		free(a->egress);
		free(a);
		p->metrics.acquires_unavailable++;
		pt_hist_observe(&p->metrics.acquire, (double)(util_now_ms() - t0) / 1000.0);
		resp_error(resp, 503,
			   r->wait_s == 0 ? "no node has room now (wait is 0)"
					  : "every node is full and the queue is full");
		return;
	}
	/* The row first: from here on a crash leaves a record of the attempt. */
	snprintf(sb.id, sizeof(sb.id), "%s", a->id);
	snprintf(sb.owner, sizeof(sb.owner), "%s", who->key_id);
	sb.state = placed ? PT_PLACING : PT_QUEUED;
	snprintf(sb.template, sizeof(sb.template), "%s", r->template);
	if (placed) {
		snprintf(sb.node, sizeof(sb.node), "%s", pl.node->name);
		snprintf(sb.node_sid, sizeof(sb.node_sid), "%s", pl.sid);
	}
	sb.ttl_s = r->ttl_s;
	sb.persist = r->persist;
	sb.memory_mb = r->memory_mb;
	sb.cpus = r->cpus;
	sb.pids = r->pids;
	sb.egress = r->egress;
	sb.desktop = desk;
	sb.labels = r->labels;
	sb.metadata = r->metadata;
	sb.idle_timeout_s = r->idle_timeout_s;
	sb.offload_after_s = r->offload_after_s;
	snprintf(sb.idem_key, sizeof(sb.idem_key), "%s", r->idem_key);
	sb.created_at = sb.updated_at = pt_now_ms();
	if (pt_store_sb_insert(p->st, &sb,
			       placed ? (pl.warm ? "acquired: claiming a pool member"
						 : "acquired: placed at once")
				      : "acquired: waiting for room",
			       &e) == -1) {
		free(a->egress);
		free(a);
		pt_resp_err(resp, &e);
		return;
	}
	a->state = sb.state;
	a->all_next = p->pending;
	p->pending = a;
	if (waiter_add(a, req, r->wait_s, t0) == -1) {
		pt_core_move_id(p, a->id, sb.state, PT_FAILED, "out of memory", NULL);
		acq_free(p, a);
		resp_error(resp, 500, "out of memory");
		return;
	}
	log_info("acquire", "{s:s, s:s, s:s, s:s, s:s?}", "id", a->id, "owner", who->key_id,
		 "template", r->template, "placement", placed ? (pl.warm ? "warm" : "new") : "queued",
		 "node", placed ? pl.node->name : NULL);
	if (placed)
		place(p, a, &pl);
	else
		queue_push(p, a, false);
}

/* ------------------------------------------------------------ node answers */

static void forget_destroy(struct pt_portal *p, struct pt_destroy *d)
{
	for (struct pt_destroy **pp = &p->destroys; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			free(d);
			return;
		}
}

struct pt_destroy *pt_core_destroy_find(struct pt_portal *p, const char *node, const char *sid)
{
	for (struct pt_destroy *d = p->destroys; d; d = d->next)
		if (strcmp(d->node, node) == 0 && strcmp(d->sid, sid) == 0)
			return d;
	return NULL;
}

/* Any up node that heartbeats: the one that deletes an offloaded
 * sandbox's checkpoint (every node can reach S3). */
static struct pt_node *any_up_node(struct pt_portal *p)
{
	for (struct pt_node *n = p->nodes; n; n = n->next)
		if (n->up && n->heard)
			return n;
	return NULL;
}

static void destroy_send(struct pt_portal *p, struct pt_destroy *d)
{
	struct pt_node *n = d->node[0] ? pt_nodes_find(p, d->node) : any_up_node(p);
	struct pt_job *j;
	struct err e = ERR_INIT;

	if (!n || !n->up || d->running)
		return;
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->kind = d->node[0] ? PT_JOB_DESTROY : PT_JOB_CKPT_DELETE;
	snprintf(j->node, sizeof(j->node), "%s", d->node);
	snprintf(j->url, sizeof(j->url), "%s", n->url);
	snprintf(j->id, sizeof(j->id), "%s", d->id);
	snprintf(j->sid, sizeof(j->sid), "%s", d->sid);
	snprintf(j->prefix, sizeof(j->prefix), "%s", d->prefix);
	d->running = true;
	if (pt_job_start(p, j, &e) == -1) {
		d->running = false;
		d->next_try = util_now_ms() + 1000;
		pt_job_free(j);
		log_warn("destroy not sent", "{s:s, s:s, s:s}", "node", d->node, "sandbox", d->sid,
			 "error", e.msg);
	}
}

/* Queues a destroy of (node, sid), or of an offloaded sandbox's checkpoint
 * (node "", prefix set), unless one is pending: that one serves (a delete
 * of a checkpoint removes every generation); only its row id is updated. */
static void destroy_queue(struct pt_portal *p, const char *node, const char *sid,
			  const char *prefix, const char *id)
{
	struct pt_destroy *d = pt_core_destroy_find(p, node, sid);

	if (d) {
		if (id && *id)
			snprintf(d->id, sizeof(d->id), "%s", id);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return; /* the next heartbeat (or start, for a checkpoint) finds it again */
	snprintf(d->node, sizeof(d->node), "%s", node);
	snprintf(d->sid, sizeof(d->sid), "%s", sid);
	snprintf(d->prefix, sizeof(d->prefix), "%s", prefix);
	snprintf(d->id, sizeof(d->id), "%s", id ? id : "");
	d->next = p->destroys;
	p->destroys = d;
	destroy_send(p, d);
}

void pt_core_destroy(struct pt_portal *p, const char *node, const char *sid, const char *id)
{
	destroy_queue(p, node, sid, "", id);
}

void pt_core_forget_checkpoint(struct pt_portal *p, const char *sid, const char *prefix,
			       const char *id)
{
	destroy_queue(p, "", sid, prefix, id);
}

static void destroy_done(struct pt_portal *p, struct pt_job *j)
{
	struct pt_destroy *d = pt_core_destroy_find(p, j->node, j->sid);

	if (!d)
		return;
	d->running = false;
	if (j->status == 200 || j->status == 404) {
		log_info(j->kind == PT_JOB_DESTROY ? "destroyed on node" : "checkpoint deleted",
			 "{s:s, s:s, s:s}", "node", j->node, "sandbox", j->sid, "id", j->id);
		if (j->id[0])
			pt_core_move_id(p, j->id, PT_RELEASING, PT_RELEASED,
					j->kind == PT_JOB_DESTROY
						? "destroyed on its node"
						: "its offloaded checkpoint was deleted from S3",
					NULL);
		else
			p->metrics.orphans_destroyed++;
		forget_destroy(p, d);
		pt_core_dispatch(p); /* room was freed */
		return;
	}
	d->tries++;
	d->next_try = util_now_ms() + (uint64_t)(d->tries < 5 ? 1000 << d->tries : 30000);
	log_warn("destroy failed; will retry", "{s:s, s:s, s:i, s:s}", "node", j->node, "sandbox",
		 j->sid, "tries", d->tries, "error", j->e.msg);
}

/* An acquire with desktop.record: its recording starts as it is ready. */
static void record_if_asked(struct pt_portal *p, struct pt_acq *a)
{
	struct pt_sb sb = {0};
	struct err e = ERR_INIT;

	if (!a->record)
		return;
	if (pt_store_sb_get(p->st, a->id, &sb, &e) == 0)
		pt_rec_start_quiet(p, &sb);
	else
		log_warn("recording not started", "{s:s, s:s}", "sandbox", a->id, "error", e.msg);
	pt_sb_clear(&sb);
}

static void claim_done(struct pt_portal *p, struct pt_job *j, struct pt_acq *a)
{
	char why[400];

	if (j->status == 201) {
		snprintf(why, sizeof(why), "claimed pool member %s on %s", j->sid, j->node);
		if (pt_core_move_id(p, a->id, PT_PLACING, PT_READY, why, NULL) == 0) {
			p->metrics.acquires_warm++;
			record_if_asked(p, a);
			acq_finish_row(p, a, 201);
		} else {
			/* The row moved meanwhile (lost with its node): the member is
			 * ours on the node but no lease holds it; reconcile destroys it. */
			acq_gone(p, a);
		}
		return;
	}
	if (j->status == 400) {
		/* The request itself is wrong (an egress rule the node refuses). */
		pt_core_move_id(p, a->id, PT_PLACING, PT_FAILED, j->e.msg, NULL);
		acq_finish(p, a, 400, NULL, j->e.msg);
		return;
	}
	/* Refused (409: claimed or gone since the heartbeat; 404) or no answer:
	 * nothing was claimed, or if it was, reconcile sees an unowned sandbox.
	 * Place again, keeping its turn. */
	snprintf(why, sizeof(why), "claim of %s on %s refused: %s", j->sid, j->node, j->e.msg);
	{
		struct pt_node *n = pt_nodes_find(p, j->node);

		if (n)
			pt_node_forget(n, j->sid);
	}
	if (pt_core_move_id(p, a->id, PT_PLACING, PT_QUEUED, why, NULL) == -1) {
		acq_gone(p, a);
		return;
	}
	a->state = PT_QUEUED;
	queue_push(p, a, true);
	pt_core_dispatch(p);
}

static void create_done(struct pt_portal *p, struct pt_job *j, struct pt_acq *a)
{
	struct pt_node *n = pt_nodes_find(p, j->node);
	char why[400];

	if (n) {
		n->inflight--;
		n->inflight_mb -= a->memory_mb + 192 + a->memory_mb / 8;
	}
	if (j->status == 201) {
		snprintf(why, sizeof(why), "ready on %s", j->node);
		if (pt_core_move_id(p, a->id, PT_STARTING, PT_READY, why, NULL) == 0) {
			record_if_asked(p, a);
			acq_finish_row(p, a, 201);
		} else
			acq_gone(p, a);
		return;
	}
	if (j->status == 503) {
		/* The node was full: it made nothing.  Place again, keeping the turn,
		 * but not there before its next heartbeat says how full it is. */
		if (n)
			n->full = true;
		snprintf(why, sizeof(why), "%s had no room: %s", j->node, j->e.msg);
		if (pt_core_move_id(p, a->id, PT_STARTING, PT_QUEUED, why, NULL) == 0) {
			a->state = PT_QUEUED;
			queue_push(p, a, true);
			pt_core_dispatch(p);
			return;
		}
		acq_gone(p, a);
		return;
	}
	snprintf(why, sizeof(why), "start on %s failed: %s", j->node, j->e.msg);
	pt_core_move_id(p, a->id, PT_STARTING, PT_FAILED, why, NULL);
	/* Whatever the node may have left is unowned now; reconcile removes it. */
	acq_finish(p, a, j->status == 400 ? 400 : 502, NULL, why);
	pt_core_dispatch(p);
}

static void job_done(void *ud)
{
	struct pt_job *j = ud;
	struct pt_portal *p = j->p;
	struct pt_acq *a;

	if (j->kind == PT_JOB_THUMBNAIL) {
		pt_thumb_job_done(p, j);
		pt_job_free(j);
		return;
	}
	if (j->kind != PT_JOB_CLAIM && j->kind != PT_JOB_CREATE && j->kind != PT_JOB_DESTROY &&
	    j->kind != PT_JOB_CKPT_DELETE) {
		pt_hib_job_done(p, j);
		pt_job_free(j);
		return;
	}
	if (j->kind == PT_JOB_DESTROY || j->kind == PT_JOB_CKPT_DELETE) {
		destroy_done(p, j);
		pt_job_free(j);
		return;
	}
	a = pending_find(p, j->id);
	if (!a) {
		pt_job_free(j);
		return;
	}
	a->job = false;
	if (j->kind == PT_JOB_CLAIM)
		claim_done(p, j, a);
	else
		create_done(p, j, a);
	pt_job_free(j);
}

/* --------------------------------------------------------- release, leases */

void pt_core_release_row(struct pt_portal *p, struct pt_sb *sb, const char *reason,
			 struct err *e, int *rc)
{
	bool offloaded = sb->state == PT_OFFLOADED;

	*rc = pt_core_move(p, sb, PT_RELEASING, reason, e);
	if (*rc == 0 && offloaded)
		pt_core_forget_checkpoint(p, sb->node_sid, sb->l2_prefix, sb->id);
	else if (*rc == 0)
		pt_core_destroy(p, sb->node, sb->node_sid, sb->id);
}

void pt_core_release(struct pt_portal *p, struct pt_sb *sb, struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;
	int rc;

	if (pt_state_final(sb->state) || sb->state == PT_RELEASING) {
		hsrv_resp_json(resp, 200, pt_view_sb(p, sb, true));
		return;
	}
	if (sb->state == PT_HIBERNATING || sb->state == PT_WAKING || sb->state == PT_OFFLOADING ||
	    (sb->state != PT_OFFLOADED && pt_core_busy(p, sb->id))) {
		char msg[200];

		snprintf(msg, sizeof(msg),
			 "the sandbox is %s%s; release it once that is done", pt_state_name(sb->state),
			 sb->state == PT_READY ? " and being forked" : "");
		resp_error(resp, 409, msg);
		return;
	}
	if (sb->state != PT_READY && sb->state != PT_HIBERNATED && sb->state != PT_OFFLOADED) {
		resp_error(resp, 409, "the sandbox is still being made; release it once acquire has "
				      "answered");
		return;
	}
	pt_core_release_row(p, sb, "released by its client", &e, &rc);
	if (rc == -1) {
		pt_resp_err(resp, &e);
		return;
	}
	hsrv_resp_json(resp, 200, pt_view_sb(p, sb, true));
}

void pt_core_keepalive(struct pt_portal *p, struct pt_sb *sb, long long ttl_s,
		       struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;

	/* A hibernated or offloaded sandbox has a lease too: without persist it
	 * is released when the lease runs out. */
	if (sb->state != PT_READY && sb->state != PT_HIBERNATED && sb->state != PT_OFFLOADED) {
		resp_error(resp, 409, "only a ready, hibernated or offloaded sandbox can be kept "
				      "alive");
		return;
	}
	sb->expires_at = pt_now_ms() + ttl_s * 1000;
	sb->updated_at = pt_now_ms();
	if (pt_store_sb_update(p->st, sb, sb->state, NULL, &e) == -1) {
		pt_resp_err(resp, &e);
		return;
	}
	hsrv_resp_json(resp, 200, pt_view_sb(p, sb, true));
}

struct idlist {
	char (*id)[32];
	int n, cap;
};

static void collect_id(const struct pt_sb *sb, void *ud)
{
	struct idlist *l = ud;

	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 16;
		void *v = realloc(l->id, (size_t)cap * sizeof(*l->id));

		if (!v)
			return;
		l->id = v;
		l->cap = cap;
	}
	snprintf(l->id[l->n++], 32, "%s", sb->id);
}

static void expire_leases(struct pt_portal *p)
{
	struct err e = ERR_INIT;
	struct idlist l = {0};

	if (pt_store_sb_select(p->st, PT_READY, NULL, pt_now_ms(), collect_id, &l, &e) == -1)
		log_error("lease check failed", "{s:s}", "error", e.msg);
	for (int i = 0; i < l.n; i++) {
		struct pt_sb sb;
		int rc;

		memset(&sb, 0, sizeof(sb));
		/* A fork in flight holds it; the next tick expires it. */
		if (pt_store_sb_get(p->st, l.id[i], &sb, &e) == 0 && sb.state == PT_READY &&
		    !pt_core_busy(p, sb.id)) {
			if (sb.persist) {
				/* The owner keeps its state: hibernate (released when
				 * the node cannot, see pt_hib.c). */
				if (pt_hib_expired(p, &sb) == 0)
					p->metrics.lease_expiries++;
			} else {
				pt_core_release_row(p, &sb, "lease expired", &e, &rc);
				if (rc == 0)
					p->metrics.lease_expiries++;
			}
		}
		pt_sb_clear(&sb);
	}
	free(l.id);
}

/* Waiters whose wait ran out or whose client left. */
static void expire_waiters(struct pt_portal *p, uint64_t now)
{
	struct pt_acq *a = p->pending;

	while (a) {
		struct pt_acq *next = a->all_next;
		struct pt_waiter **pp = &a->waiters;

		while (*pp) {
			struct pt_waiter *w = *pp;

			/* A claim in flight is a matter of milliseconds: its answer
			 * is worth waiting for even past the deadline. */
			if (!w->gone && (now < w->deadline || a->state == PT_PLACING)) {
				pp = &w->next;
				continue;
			}
			*pp = w->next;
			if (a->state == PT_QUEUED) {
				waiter_answer(p, w, 503, NULL, "no room on any node within the wait");
			} else {
				json_t *v = pt_core_view(p, a->id);

				/* It is being made and is the client's: 202, poll or retry. */
				waiter_answer(p, w, v ? 202 : 500, v, "the sandbox cannot be read");
				json_decref(v);
			}
			free(w);
		}
		if (!a->waiters && a->state == PT_QUEUED) {
			pt_core_move_id(p, a->id, PT_QUEUED, PT_FAILED,
				"no room on any node within the wait (or the client left)", NULL);
			acq_free(p, a);
		} else if (!a->waiters && !a->job) {
			acq_free(p, a); /* nothing left to tell anyone */
		}
		a = next;
	}
}

static void retry_destroys(struct pt_portal *p, uint64_t now)
{
	for (struct pt_destroy *d = p->destroys; d; d = d->next)
		if (!d->running && now >= d->next_try)
			destroy_send(p, d);
}

static void tick(void *ud)
{
	struct pt_portal *p = ud;
	uint64_t now = util_now_ms();

	expire_waiters(p, now);
	expire_leases(p);
	pt_reconcile_liveness(p);
	retry_destroys(p, now);
	pt_hib_tick(p, now);
	pt_core_dispatch(p);
	hsrv_timer_arm(p->tick, TICK_MS);
}

int pt_core_start(struct pt_portal *p, struct err *e)
{
	struct idlist l = {0};

	/* Queued rows of the last run have no client any more. */
	if (pt_store_sb_select(p->st, PT_QUEUED, NULL, 0, collect_id, &l, e) == -1)
		return -1;
	for (int i = 0; i < l.n; i++)
		pt_core_move_id(p, l.id[i], PT_QUEUED, PT_FAILED,
			"the portal restarted while it was queued", NULL);
	free(l.id);
	if (pt_reconcile_load(p, e) == -1 || pt_hib_start(p, e) == -1)
		return -1;
	p->tick = hsrv_timer_new(p->srv, tick, p);
	if (!p->tick)
		return err_set(e, ENOMEM, "timer");
	hsrv_timer_arm(p->tick, TICK_MS);
	return 0;
}

void pt_core_stop(struct pt_portal *p)
{
	while (p->pending) {
		struct pt_acq *a = p->pending;

		for (struct pt_waiter *w = a->waiters; w; w = w->next)
			waiter_answer(p, w, 503, NULL, "the portal is stopping");
		acq_free(p, a);
	}
	pt_hib_stop(p);
	if (p->tick) {
		hsrv_timer_free(p->tick);
		p->tick = NULL;
	}
}

void pt_core_free(struct pt_portal *p)
{
	while (p->destroys) {
		struct pt_destroy *d = p->destroys;

		p->destroys = d->next;
		free(d);
	}
	pt_hib_free(p);
}

bool pt_core_template_known(struct pt_portal *p, const char *template)
{
	for (struct pt_node *n = p->nodes; n; n = n->next)
		if (pt_node_has_template(n, template))
			return true;
	return false;
}

bool pt_core_busy(struct pt_portal *p, const char *id)
{
	struct pt_acq *a = pending_find(p, id);

	return (a && a->job) || pt_hib_busy(p, id);
}

int pt_core_queue_len(const struct pt_portal *p)
{
	return p->queue_len;
}
