/* The node API; see na_api.h and docs/node.md.
 *
 * Routes by resource: the sandboxes and their actions, their recordings and
 * trace, checkpoints in S3, templates, capacity.  Every handler but
 * /healthz checks the credential first.  A request that takes long becomes
 * a job: the handler reserves what it needs on the node (so a second one
 * is refused at once), the work runs on a thread of the job set and the
 * answer is given on the loop through the request's deferred response. */
#include "node-agent/na_api.h"
#include "node-agent/na_ckpt.h"
#include "node-agent/na_egress.h"
#include "node-agent/na_l2.h"
#include "node-agent/na_rec.h"
#include "node-agent/na_sandbox.h"
#include "node-agent/na_thumb.h"

#include "common/http_server.h"
#include "common/http_status.h"
#include "common/job.h"
#include "common/json.h"
#include "common/log.h"
#include "common/query.h"
#include "common/secret.h"
#include "common/util.h"
#include "common/version.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What the handlers see (their ud).  Called `agent` as in main.c, where the
 * API was written: authorized() reads its credential as it did there. */
struct agent {
	struct na_node *node;
	char cred[256];
	size_t cred_len;
	struct job_set *jobs; /* the slow requests at work, and their answers */
};

/* The handle main.c holds. */
struct na_api {
	struct agent a;
};

/* Constant-time comparison of the bearer token with the credential. */
static bool authorized(struct agent *a, const struct hsrv_req *req)
{
	char h[512];
	int n = hsrv_req_header(req, "authorization", h, sizeof(h));
	const char *tok;

	if (n < 7 || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	tok = h + 7;
	return secret_equal(tok, strlen(tok), a->cred, a->cred_len);
}

static bool deny(struct agent *a, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	if (authorized(a, req))
		return false;
	hsrv_resp_error(resp, 401, "unauthorized", "a valid node credential is required");
	hsrv_resp_header(resp, "WWW-Authenticate", "Bearer");
	return true;
}

/* Copies path parameter name of req into out; when it is too long to be a
 * name this node gave, answers 404 and returns false. */
static bool path_param(const struct hsrv_req *req, const char *name, char *out, size_t len,
		       struct hsrv_resp *resp)
{
	const char *v = hsrv_req_param(req, name);

	if (!v || strlen(v) >= len) {
		hsrv_resp_error(resp, 404, "not_found", "no such resource");
		return false;
	}
	snprintf(out, len, "%s", v);
	return true;
}

static void resp_err(struct hsrv_resp *resp, const struct err *e)
{
	int st = e->http_status ? e->http_status : 500;
	hsrv_resp_error(resp, st, NULL, e->msg);
}

/* A slow request: runs on its own thread, answers on the loop thread. */
enum job_kind { JOB_CREATE, JOB_DESTROY, JOB_IMPORT, JOB_EGRESS, JOB_HIBERNATE, JOB_WAKE,
		JOB_FORK, JOB_OFFLOAD, JOB_RESTORE, JOB_L2_DELETE, JOB_THUMBNAIL, JOB_REC_START,
		JOB_REC_STOP };

struct job {
	struct agent *a;
	struct hsrv_defer *defer;
	enum job_kind kind;
	char id[32];   /* the sandbox; for JOB_IMPORT the imported template */
	char file[1024];
	struct na_egress_policy pol; /* JOB_EGRESS */
	json_t *req;                 /* JOB_RESTORE's body */
	int status;
	json_t *body;
};

static void job_gone(void *ud)
{
	(void)ud; /* the answer is still sent (and dropped) when the job ends */
}

/* Loop thread: the answer of a job that ended (the job set's done). */
static void job_reply(void *ud)
{
	struct job *j = ud;
	struct hsrv_resp resp;

	memset(&resp, 0, sizeof(resp));
	hsrv_resp_json(&resp, j->status, j->body);
	hsrv_defer_reply(j->defer, &resp);
	json_decref(j->req);
	free(j);
}

/* Worker thread: a job whose answer cannot reach the loop (the job set's
 * drop; out of memory). */
static void job_drop(void *ud)
{
	struct job *j = ud;

	log_error("cannot post an answer", "{s:s}", "id", j->id);
	json_decref(j->body);
	json_decref(j->req);
	free(j);
}

/* Worker thread: the job's work; the answer goes to j->status and j->body. */
static void job_work(void *arg)
{
	struct job *j = arg;
	struct err e = ERR_INIT;
	int rc;

	char name[256];

	switch (j->kind) {
	case JOB_CREATE:
		rc = na_node_create_run(j->a->node, j->id, &e);
		if (rc == 0) {
			j->status = 201;
			j->body = na_node_get_json(j->a->node, j->id);
		}
		break;
	case JOB_DESTROY:
		rc = na_node_destroy(j->a->node, j->id, &e);
		if (rc == 0) {
			j->status = 200;
			j->body = json_pack("{s:s, s:s}", "id", j->id, "state", "destroyed");
		}
		break;
	case JOB_EGRESS:
		rc = na_node_egress_run(j->a->node, j->id, &j->pol, &e);
		if (rc == 0) {
			j->status = 200;
			j->body = na_node_get_json(j->a->node, j->id);
		}
		break;
	case JOB_HIBERNATE:
	case JOB_WAKE:
	case JOB_FORK:
		j->body = j->kind == JOB_HIBERNATE ? na_node_hibernate_run(j->a->node, j->id, &e)
			  : j->kind == JOB_WAKE    ? na_node_wake_run(j->a->node, j->id, &e)
						   : na_node_fork_run(j->a->node, j->id, &e);
		rc = j->body ? 0 : -1;
		j->status = 200;
		break;
	case JOB_OFFLOAD:
	case JOB_RESTORE:
		j->body = j->kind == JOB_OFFLOAD ? na_node_offload_run(j->a->node, j->id, &e)
						 : na_node_restore_run(j->a->node, j->id, j->req, &e);
		rc = j->body ? 0 : -1;
		j->status = 200;
		break;
	case JOB_THUMBNAIL:
		j->body = na_node_thumbnail(j->a->node, j->id, atoi(j->file), &e);
		rc = j->body ? 0 : -1;
		j->status = 200;
		break;
	case JOB_REC_START:
		j->body = na_node_rec_start(j->a->node, j->id, &e);
		rc = j->body ? 0 : -1;
		j->status = 201;
		break;
	case JOB_REC_STOP:
		j->body = na_node_rec_stop(j->a->node, j->id, j->file, "api", &e);
		rc = j->body ? 0 : -1;
		j->status = 200;
		break;
	case JOB_L2_DELETE: {
		long long nkeys = na_node_l2_delete(j->a->node, j->id, j->file, &e);
		rc = nkeys < 0 ? -1 : 0;
		j->status = 200;
		if (rc == 0)
			j->body = json_pack("{s:s, s:s, s:I}", "id", j->id, "prefix", j->file, "deleted",
					    (json_int_t)nkeys);
		break;
	}
	default:
		rc = na_node_import_template(j->a->node, j->file, name, sizeof(name), &e);
		if (rc == 0) {
			j->status = 201;
			j->body = json_pack("{s:s}", "template", name);
		}
		break;
	}
	if (rc == -1) {
		j->status = e.http_status ? e.http_status : 500;
		j->body = json_pack("{s:{s:s, s:s}}", "error", "code", http_status_code(j->status),
				    "message", e.msg);
		/* After a checkpoint step the sandbox's state is part of the
		 * answer (ready again, rebooted, failed, still hibernated). */
		if (j->body && (j->kind == JOB_HIBERNATE || j->kind == JOB_WAKE ||
				j->kind == JOB_FORK || j->kind == JOB_OFFLOAD)) {
			json_t *v = na_node_get_json(j->a->node, j->id);
			if (v)
				json_object_set_new(j->body, "sandbox", v);
		}
	}
}

/* Undoes what the handler reserved for a job that will not run, so the
 * sandbox is not left "starting" or busy for good. */
static void job_cancel(struct agent *a, enum job_kind kind, const char *id)
{
	if (kind == JOB_EGRESS)
		na_node_egress_cancel(a->node, id);
	else if (kind == JOB_OFFLOAD)
		na_node_ckpt_cancel(a->node, id);
	else if (kind == JOB_RESTORE)
		na_node_restore_cancel(a->node, id);
	else if (kind == JOB_HIBERNATE || kind == JOB_WAKE || kind == JOB_FORK)
		na_node_ckpt_cancel(a->node, id);
	else if (kind == JOB_CREATE)
		na_node_create_cancel(a->node, id);
}

static void start_job(struct agent *a, const struct hsrv_req *req, struct hsrv_resp *resp,
		      enum job_kind kind, const char *id, const char *file,
		      const struct na_egress_policy *pol, json_t *body)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		job_cancel(a, kind, id);
		hsrv_resp_error(resp, 500, "internal", "out of memory");
		return;
	}
	j->a = a;
	j->kind = kind;
	snprintf(j->id, sizeof(j->id), "%s", id ? id : "");
	snprintf(j->file, sizeof(j->file), "%s", file ? file : "");
	if (pol)
		j->pol = *pol;
	j->req = json_incref(body);
	j->defer = hsrv_defer(req, job_gone, j);
	if (!j->defer) {
		job_cancel(a, kind, j->id);
		json_decref(j->req);
		free(j);
		hsrv_resp_error(resp, 500, "internal", "out of memory");
		return;
	}
	if (job_start(a->jobs, job_work, job_reply, job_drop, j) != 0) {
		job_cancel(a, kind, j->id);
		/* Answer through the handle; resp is no longer ours to fill. */
		j->status = 500;
		j->body = json_pack("{s:{s:s, s:s}}", "error", "code", "internal", "message",
				    "cannot start a worker thread");
		job_reply(j);
	}
}

static void h_create(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	char id[32];
	bool claimed;

	if (deny(a, req, resp))
		return;
	body = req->body_len ? cj_parse(req->body, req->body_len, 1 << 16, CJ_MAX_DEPTH, &e)
			     : json_object();
	if (!body || na_node_create_begin(a->node, body, id, &claimed, &e) == -1) {
		resp_err(resp, &e);
		return;
	}
	if (claimed) /* a warm pool member: ready now */
		hsrv_resp_json(resp, 201, na_node_get_json(a->node, id));
	else
		start_job(a, req, resp, JOB_CREATE, id, NULL, NULL, NULL);
}

/* POST /v1/sandboxes/{id}/{claim|hibernate|wake|fork|offload|restore}:
 * claim {"egress"?} takes that warm pool member now; the others run on a
 * worker (docs/hibernation.md).  Also POST .../recordings and
 * .../recordings/{rec}/stop, whose patterns have no {action}. */
static void h_action(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	const char *act = hsrv_req_param(req, "action");
	char id[64];
	int rc;

	if (deny(a, req, resp) || !path_param(req, "id", id, sizeof(id), resp))
		return;
	body = req->body_len ? cj_parse(req->body, req->body_len, 1 << 16, CJ_MAX_DEPTH, &e)
			     : json_object();
	if (!body) {
		e.http_status = 400;
		resp_err(resp, &e);
		return;
	}
	/* POST .../recordings starts one; POST .../recordings/{rec}/stop ends it. */
	if (!act) {
		const char *r = hsrv_req_param(req, "rec");
		char rec[48];
		size_t rl = r ? strlen(r) : 0;

		if (rl) {
			if (rl >= sizeof(rec)) {
				hsrv_resp_error(resp, 404, "not_found", "no such resource");
				return;
			}
			snprintf(rec, sizeof(rec), "%s", r);
		}
		if (!na_valid_id(id)) {
			hsrv_resp_error(resp, 404, "not_found", "no such sandbox");
			return;
		}
		start_job(a, req, resp, rl ? JOB_REC_STOP : JOB_REC_START, id, rl ? rec : NULL, NULL,
			  NULL);
		return;
	}
	if (strcmp(act, "hibernate") == 0 || strcmp(act, "wake") == 0 ||
	    strcmp(act, "fork") == 0) {
		enum job_kind k = act[0] == 'h' ? JOB_HIBERNATE : act[0] == 'w' ? JOB_WAKE
									       : JOB_FORK;
		rc = !na_valid_id(id) ? err_http(&e, 404, "no sandbox `%s`", id)
		     : k == JOB_HIBERNATE ? na_node_hibernate_begin(a->node, id, &e)
		     : k == JOB_WAKE	  ? na_node_wake_begin(a->node, id, &e)
					  : na_node_fork_begin(a->node, id, body, &e);
		if (rc == -1)
			resp_err(resp, &e);
		else
			start_job(a, req, resp, k, id, NULL, NULL, NULL);
		return;
	}
	if (strcmp(act, "offload") == 0 || strcmp(act, "restore") == 0) {
		bool off = act[0] == 'o';
		rc = off ? na_node_offload_begin(a->node, id, &e)
			 : na_node_restore_begin(a->node, id, body, &e);
		if (rc == -1) {
			resp_err(resp, &e);
			return;
		}
		start_job(a, req, resp, off ? JOB_OFFLOAD : JOB_RESTORE, id, NULL, NULL, body);
		return;
	}
	if (strcmp(act, "claim") != 0) {
		hsrv_resp_error(resp, 404, "not_found", "no such resource");
		return;
	}
	if (na_node_claim(a->node, id, body, &e) == -1) {
		resp_err(resp, &e);
		return;
	}
	hsrv_resp_json(resp, 201, na_node_get_json(a->node, id));
}

/* GET answers that are one view of the node: the list, the templates, the
 * capacity. */
static void node_view(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp,
		      json_t *(*view)(struct na_node *))
{
	struct agent *a = ud;

	if (!deny(a, req, resp))
		hsrv_resp_json(resp, 200, view(a->node));
}

static void h_list(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	node_view(ud, req, resp, na_node_list_json);
}

/* Downloads are read whole (REC_SERVE_MAX) and answered with a
 * Content-Length; see docs/recording.md. */
#define REC_SERVE_MAX (512u << 20)

/* GET .../recordings, .../recordings/{rec} (the MP4), .../trace (JSON lines). */
static void rec_get(struct agent *a, const char *pid, const char *prec, bool trace,
		    struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;
	char id[40], rec[48] = "";
	char *data = NULL;
	size_t len = 0;
	json_t *j;

	(void)a;
	if (strlen(pid) >= sizeof(id) || (prec && strlen(prec) >= sizeof(rec))) {
		hsrv_resp_error(resp, 404, "not_found", "no such path");
		return;
	}
	snprintf(id, sizeof(id), "%s", pid);
	if (prec)
		snprintf(rec, sizeof(rec), "%s", prec);
	if (!trace && !rec[0]) {
		j = na_node_rec_list(a->node, id, &e);
		if (!j)
			resp_err(resp, &e);
		else
			hsrv_resp_json(resp, 200, j);
		return;
	}
	if (na_node_rec_read(a->node, id, trace ? NULL : rec, REC_SERVE_MAX, &data, &len, &e) == -1) {
		resp_err(resp, &e);
		return;
	}
	resp->status = 200;
	snprintf(resp->content_type, sizeof(resp->content_type), "%s",
		 trace ? "application/x-ndjson" : "video/mp4");
	resp->body = data;
	resp->body_len = len;
}

/* GET /v1/sandboxes/{id}/recordings[/{rec}] */
static void h_recordings(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;

	if (deny(a, req, resp))
		return;
	rec_get(a, hsrv_req_param(req, "id"), hsrv_req_param(req, "rec"), false, resp);
}

/* GET /v1/sandboxes/{id}/trace */
static void h_trace(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;

	if (deny(a, req, resp))
		return;
	rec_get(a, hsrv_req_param(req, "id"), NULL, true, resp);
}

/* GET /v1/sandboxes/{id}/thumbnail?width=N: a picture of its screen. */
static void h_thumbnail(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	char id[40], width[8] = "320";

	if (deny(a, req, resp) || !path_param(req, "id", id, sizeof(id), resp))
		return;
	int wr = query_get(req->query, "width", width, sizeof(width));

	if (wr == QUERY_ABSENT)
		snprintf(width, sizeof(width), "320");
	else if (wr == QUERY_BAD || !*width || strspn(width, "0123456789") != strlen(width)) {
		hsrv_resp_error(resp, 400, "bad_request", "`width` must be a number of pixels");
		return;
	}
	start_job(a, req, resp, JOB_THUMBNAIL, id, width, NULL, NULL);
}

static void h_get(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	const char *id = hsrv_req_param(req, "id");
	json_t *j;

	if (deny(a, req, resp))
		return;
	j = na_node_get_json(a->node, id);
	if (!j) {
		char msg[128];
		snprintf(msg, sizeof(msg), "no sandbox `%.64s`", id);
		hsrv_resp_error(resp, 404, "not_found", msg);
		return;
	}
	hsrv_resp_json(resp, 200, j);
}

static void h_delete(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	const char *id = hsrv_req_param(req, "id");

	if (deny(a, req, resp))
		return;
	if (!na_valid_id(id)) {
		hsrv_resp_error(resp, 404, "not_found", "no such sandbox");
		return;
	}
	start_job(a, req, resp, JOB_DESTROY, id, NULL, NULL, NULL);
}

/* PUT /v1/sandboxes/{id}/egress */
static void h_put(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	struct na_egress_policy pol;
	char id[64];

	if (deny(a, req, resp) || !path_param(req, "id", id, sizeof(id), resp))
		return;
	body = cj_parse(req->body, req->body_len, 1 << 16, CJ_MAX_DEPTH, &e);
	if (!body) {
		e.http_status = 400;
		resp_err(resp, &e);
		return;
	}
	if (!na_valid_id(id) || na_node_egress_begin(a->node, id, body, &pol, &e) == -1) {
		if (!na_valid_id(id))
			err_http(&e, 404, "no sandbox `%s`", id);
		resp_err(resp, &e);
		return;
	}
	start_job(a, req, resp, JOB_EGRESS, id, NULL, &pol, NULL);
}

/* DELETE /v1/checkpoints/{id}?prefix=P: an offloaded sandbox's objects in
 * S3 (any node with S3 can do it; the portal asks one). */
static void h_l2_delete(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	const char *id = hsrv_req_param(req, "id");
	char prefix[1024];

	if (deny(a, req, resp))
		return;
	if (!na_valid_id(id) || query_get(req->query, "prefix", prefix, sizeof(prefix)) <= 0) {
		hsrv_resp_error(resp, 400, "bad_request",
				"give DELETE /v1/checkpoints/{id}?prefix=<its S3 prefix>");
		return;
	}
	start_job(a, req, resp, JOB_L2_DELETE, id, prefix, NULL, NULL);
}

static void h_templates(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	node_view(ud, req, resp, na_node_templates_json);
}

/* POST /v1/templates {"import": "/path/to/stream"} */
static void h_import(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	const char *file = NULL;

	if (deny(a, req, resp))
		return;
	body = cj_parse(req->body, req->body_len, 1 << 16, CJ_MAX_DEPTH, &e);
	if (body && (!json_is_object(body) || cj_get_str(body, "import", NULL, &file, NULL) == -1 ||
		     !file || strlen(file) >= 1024)) {
		file = NULL;
		err_set(&e, 0, "the body must be {\"import\": \"/absolute/path/of/a/send/stream\"}");
	}
	if (!file) {
		e.http_status = 400;
		resp_err(resp, &e);
		return;
	}
	start_job(a, req, resp, JOB_IMPORT, NULL, file, NULL, NULL);
}

static void h_capacity(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	node_view(ud, req, resp, na_node_capacity_json);
}

static void h_healthz(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	(void)ud;
	(void)req;
	hsrv_resp_json(resp, 200, json_pack("{s:s, s:s}", "status", "ok", "version", version_string()));
}

/* The routes, in the order the router tries them: a literal segment before
 * a {parameter} that would also match it. */
static const struct {
	const char *method, *pattern;
	hsrv_handler fn;
} routes[] = {
	{"GET", "/healthz", h_healthz},
	{"POST", "/v1/sandboxes", h_create},
	{"GET", "/v1/sandboxes", h_list},
	{"GET", "/v1/sandboxes/{id}", h_get},
	{"DELETE", "/v1/sandboxes/{id}", h_delete},
	{"GET", "/v1/sandboxes/{id}/thumbnail", h_thumbnail},
	{"PUT", "/v1/sandboxes/{id}/egress", h_put},
	{"GET", "/v1/sandboxes/{id}/trace", h_trace},
	{"GET", "/v1/sandboxes/{id}/recordings", h_recordings},
	{"POST", "/v1/sandboxes/{id}/recordings", h_action},
	{"GET", "/v1/sandboxes/{id}/recordings/{rec}", h_recordings},
	{"POST", "/v1/sandboxes/{id}/recordings/{rec}/stop", h_action},
	{"POST", "/v1/sandboxes/{id}/{action}", h_action},
	{"DELETE", "/v1/checkpoints/{id}", h_l2_delete},
	{"GET", "/v1/capacity", h_capacity},
	{"GET", "/v1/templates", h_templates},
	{"POST", "/v1/templates", h_import},
};

struct na_api *na_api_new(struct hsrv *srv, struct na_node *node, const char *cred,
			  size_t cred_len, struct err *e)
{
	struct na_api *api;
	struct agent *a;

	if (cred_len >= sizeof(api->a.cred))
		return err_set(e, EINVAL, "node API: the credential is longer than %zu bytes",
			       sizeof(api->a.cred) - 1),
		       NULL;
	api = calloc(1, sizeof(*api));
	if (!api)
		return err_set(e, ENOMEM, "node API"), NULL;
	a = &api->a;
	a->node = node;
	memcpy(a->cred, cred, cred_len);
	a->cred_len = cred_len;
	a->jobs = job_set_new(srv);
	if (!a->jobs) {
		free(api);
		return err_set(e, ENOMEM, "node API: jobs"), NULL;
	}
	for (size_t i = 0; i < ARRAY_LEN(routes); i++)
		if (hsrv_route(srv, routes[i].method, routes[i].pattern, routes[i].fn, a, e) == -1) {
			job_set_free(a->jobs, JOB_DRAIN_DROP);
			explicit_bzero(a->cred, sizeof(a->cred));
			free(api);
			return NULL;
		}
	return api;
}

int na_api_wait(struct na_api *api, long ms)
{
	return job_set_wait(api->a.jobs, ms);
}

void na_api_free(struct na_api *api)
{
	if (!api)
		return;
	/* Each reply releases its deferred response while the connection
	 * still exists; the loop does not turn again, so none is sent. */
	job_set_free(api->a.jobs, JOB_DRAIN_DONE);
	explicit_bzero(api->a.cred, sizeof(api->a.cred));
	free(api);
}
