/* cloche-node: the node agent.  Serves the node API (bearer credential) on
 * the common HTTP loop; create and destroy run on worker threads and answer
 * through deferred responses posted back to the loop.  SIGTERM stops serving
 * and leaves the sandboxes running: the next start re-adopts them. */
#include "node-agent/na_btrfs.h"
#include "node-agent/na_ckpt.h"
#include "node-agent/na_connect.h"
#include "node-agent/na_egress.h"
#include "node-agent/na_heartbeat.h"
#include "node-agent/na_l2.h"
#include "node-agent/na_s3.h"
#include "node-agent/na_sandbox.h"
#include "node-agent/na_test.h"
#include "node-agent/na_rec.h"
#include "node-agent/na_thumb.h"

#include "common/cfg.h"
#include "common/daemon.h"
#include "common/http_server.h"
#include "common/json.h"
#include "common/log.h"
#include "common/query.h"
#include "common/secret.h"
#include "common/util.h"
#include "common/version.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct agent {
	struct na_node *node;
	struct na_egress *egress;
	struct na_heartbeat *hb; /* NULL without --portal */
	struct hsrv *srv;
	char cred[256];
	size_t cred_len;
	atomic_int jobs; /* worker threads still running */
	/* Answers posted to the loop and not sent yet.  The loop drops tasks
	 * still queued when it stops, so the ones a worker posted after the
	 * last round are released from main at exit. */
	pthread_mutex_t posted_mu;
	struct job *posted;
};

static const struct cfg_opt opts[] = {
	{"pool", CFG_STR, "/var/lib/cloche", "btrfs pool (templates/, sandboxes/)"},
	{"pool-image", CFG_STR, "/var/lib/cloche.img",
	 "loop image made and mounted on the pool when the pool is not on btrfs"},
	{"pool-image-size", CFG_INT, "64", "size of a new pool image in GiB (sparse)"},
	{"warm-pool", CFG_STR, "", "ready sandboxes to keep per template: name=N[,name=N]"},
	{"listen", CFG_STR, "127.0.0.1", "address of the node API"},
	{"port", CFG_INT, "7070", "port of the node API"},
	{"credential-file", CFG_STR, NULL, "file holding the node credential (bearer token)"},
	{"runsc-root", CFG_STR, "/run/cloche/runsc", "runsc --root"},
	{"connect-socket", CFG_STR, "/run/cloche/node.sock",
	 "unix socket of the port-connect path (cloche-node connect ID PORT)"},
	{"connect-socket-group", CFG_STR, "",
	 "also let this group use the connect socket (an unprivileged cloche-proxy)"},
	{"template-name", CFG_STR, "desktop", "template used when a create names none"},
	{"max-sandboxes", CFG_INT, "0",
	 "most sandboxes this node holds at once, warm members too (0: no limit)"},
	{"portal", CFG_STR, "", "the portal's URL: heartbeat to it (empty: none)"},
	{"proxy-admin", CFG_STR, "",
	 "this node's cloche-proxy admin URL (e.g. http://127.0.0.1:7081): drained before a "
	 "checkpoint (empty: no proxy on this node)"},
	{"s3-endpoint", CFG_STR, "",
	 "S3 API endpoint for offloaded checkpoints (L2), http(s)://host[:port]; empty: no L2"},
	{"s3-bucket", CFG_STR, "cloche", "the bucket of offloaded checkpoints and templates"},
	{"s3-region", CFG_STR, "us-east-1", "the bucket's region (signed into every request)"},
	{"s3-prefix", CFG_STR, "cloche/", "prefix of every key this node writes"},
	{"s3-credential-file", CFG_STR, NULL,
	 "file with the access key and the secret key on two lines (default: the environment: "
	 "CLOCHE_S3_ACCESS_KEY/CLOCHE_S3_SECRET_KEY or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"},
	{"proxy-domain", CFG_STR, "cloche.localhost",
	 "the proxy's domain: the sandbox's servers accept *.<domain> as their Host"},
	{"node-name", CFG_STR, NULL, "this node's name at the portal (default: the host name)"},
	{"advertise-url", CFG_STR, NULL,
	 "the node API's URL as the portal should call it (default http://LISTEN:PORT)"},
	{"heartbeat-ms", CFG_INT, "2000", "heartbeat interval until the portal says otherwise"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
	{"test-hooks", CFG_STR, "",
	 "for tests only: pauses that widen race windows, point=ms[,...] (node-agent/na_test.h)"},
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

static const char *err_code(int status)
{
	switch (status) {
	case 400: return "bad_request";
	case 404: return "not_found";
	case 409: return "conflict";
	case 413: return "too_large";
	case 502: return "unreachable";
	case 503: return "full";
	case 507: return "insufficient_storage";
	default: return "internal";
	}
}

static void resp_err(struct hsrv_resp *resp, const struct err *e)
{
	int st = e->http_status ? e->http_status : 500;
	hsrv_resp_error(resp, st, err_code(st), e->msg);
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
	struct job *next; /* in agent.posted */
};

/* Takes j out of a->posted (it may not be there). */
static void unlist_job(struct agent *a, struct job *j)
{
	pthread_mutex_lock(&a->posted_mu);
	for (struct job **p = &a->posted; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			break;
		}
	pthread_mutex_unlock(&a->posted_mu);
}

static void job_gone(void *ud)
{
	(void)ud; /* the answer is still sent (and dropped) when the job ends */
}

static void job_reply(void *ud)
{
	struct job *j = ud;
	struct hsrv_resp resp;

	unlist_job(j->a, j);
	memset(&resp, 0, sizeof(resp));
	hsrv_resp_json(&resp, j->status, j->body);
	hsrv_defer_reply(j->defer, &resp);
	json_decref(j->req);
	free(j);
}

static void *job_thread(void *arg)
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
		j->body = json_pack("{s:{s:s, s:s}}", "error", "code", err_code(j->status),
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
	{
		struct agent *a = j->a; /* j belongs to the loop once posted */

		pthread_mutex_lock(&a->posted_mu);
		j->next = a->posted;
		a->posted = j;
		if (hsrv_post(a->srv, job_reply, j) == -1) {
			a->posted = j->next;
			log_error("cannot post an answer", "{s:s}", "id", j->id);
			json_decref(j->body);
			free(j);
		}
		pthread_mutex_unlock(&a->posted_mu);
		atomic_fetch_sub(&a->jobs, 1);
	}
	return NULL;
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
	pthread_t th;
	pthread_attr_t attr;

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
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	atomic_fetch_add(&a->jobs, 1);
	if (pthread_create(&th, &attr, job_thread, j) != 0) {
		atomic_fetch_sub(&a->jobs, 1);
		job_cancel(a, kind, j->id);
		/* Answer through the handle; resp is no longer ours to fill. */
		j->status = 500;
		j->body = json_pack("{s:{s:s, s:s}}", "error", "code", "internal", "message",
				    "cannot start a worker thread");
		job_reply(j);
	}
	pthread_attr_destroy(&attr);
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

static const char *path_id(const struct hsrv_req *req)
{
	return req->path + strlen("/v1/sandboxes/");
}

/* POST /v1/sandboxes/{id}/{claim|hibernate|wake|fork}: claim {"egress"?}
 * takes that warm pool member now; the others run on a worker
 * (docs/hibernation.md). */
static void h_action(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	const char *rest = path_id(req), *slash = strchr(rest, '/');
	char id[64];
	int rc;

	if (deny(a, req, resp))
		return;
	if (!slash || (size_t)(slash - rest) >= sizeof(id)) {
		hsrv_resp_error(resp, 404, "not_found", "no such resource");
		return;
	}
	snprintf(id, sizeof(id), "%.*s", (int)(slash - rest), rest);
	body = req->body_len ? cj_parse(req->body, req->body_len, 1 << 16, CJ_MAX_DEPTH, &e)
			     : json_object();
	if (!body) {
		e.http_status = 400;
		resp_err(resp, &e);
		return;
	}
	if (strcmp(slash, "/hibernate") == 0 || strcmp(slash, "/wake") == 0 ||
	    strcmp(slash, "/fork") == 0) {
		enum job_kind k = slash[1] == 'h' ? JOB_HIBERNATE : slash[1] == 'w' ? JOB_WAKE
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
	if (strcmp(slash, "/offload") == 0 || strcmp(slash, "/restore") == 0) {
		bool off = slash[1] == 'o';
		rc = off ? na_node_offload_begin(a->node, id, &e)
			 : na_node_restore_begin(a->node, id, body, &e);
		if (rc == -1) {
			resp_err(resp, &e);
			return;
		}
		start_job(a, req, resp, off ? JOB_OFFLOAD : JOB_RESTORE, id, NULL, NULL, body);
		return;
	}
	/* POST .../recordings starts one; POST .../recordings/{rec}/stop ends it. */
	if (strncmp(slash, "/recordings", 11) == 0) {
		const char *r = slash + 11;
		char rec[48];
		size_t rl = 0;

		if (*r == '/') {
			r++;
			rl = strcspn(r, "/");
			if (strcmp(r + rl, "/stop") != 0 || rl >= sizeof(rec)) {
				hsrv_resp_error(resp, 404, "not_found", "no such resource");
				return;
			}
			snprintf(rec, sizeof(rec), "%.*s", (int)rl, r);
		} else if (*r) {
			hsrv_resp_error(resp, 404, "not_found", "no such resource");
			return;
		}
		if (!na_valid_id(id)) {
			hsrv_resp_error(resp, 404, "not_found", "no such sandbox");
			return;
		}
		start_job(a, req, resp, rl ? JOB_REC_STOP : JOB_REC_START, id, rl ? rec : NULL, NULL,
			  NULL);
		return;
	}
	if (strcmp(slash, "/claim") != 0) {
		hsrv_resp_error(resp, 404, "not_found", "no such resource");
		return;
	}
	if (na_node_claim(a->node, id, body, &e) == -1) {
		resp_err(resp, &e);
		return;
	}
	hsrv_resp_json(resp, 201, na_node_get_json(a->node, id));
}

static void h_list(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;

	if (deny(a, req, resp))
		return;
	hsrv_resp_json(resp, 200, na_node_list_json(a->node));
}

/* Downloads are read whole (REC_SERVE_MAX) and answered with a
 * Content-Length; see docs/recording.md. */
#define REC_SERVE_MAX (512u << 20)

/* GET .../recordings, .../recordings/{rec} (the MP4), .../trace (JSON lines). */
static void rec_get(struct agent *a, const char *rest, const char *slash, struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;
	char id[40], rec[48] = "";
	const char *r = slash + 11;
	bool trace = strcmp(slash, "/trace") == 0;
	char *data = NULL;
	size_t len = 0;
	json_t *j;

	(void)a;
	if ((size_t)(slash - rest) >= sizeof(id) ||
	    (!trace && *r && (*r != '/' || strlen(r + 1) >= sizeof(rec) || strchr(r + 1, '/')))) {
		hsrv_resp_error(resp, 404, "not_found", "no such path");
		return;
	}
	snprintf(id, sizeof(id), "%.*s", (int)(slash - rest), rest);
	if (!trace && *r)
		snprintf(rec, sizeof(rec), "%s", r + 1);
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

static void h_get(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	json_t *j;

	if (deny(a, req, resp))
		return;
	{
		/* GET /v1/sandboxes/{id}/thumbnail?width=N: a picture of its screen. */
		const char *rest = path_id(req), *slash = strchr(rest, '/');
		char id[40], width[8] = "320";

		if (slash && (strncmp(slash, "/recordings", 11) == 0 || strcmp(slash, "/trace") == 0)) {
			rec_get(a, rest, slash, resp);
			return;
		}
		if (slash) {
			if (strcmp(slash, "/thumbnail") != 0 || (size_t)(slash - rest) >= sizeof(id)) {
				hsrv_resp_error(resp, 404, "not_found", "no such path");
				return;
			}
			memcpy(id, rest, (size_t)(slash - rest));
			id[slash - rest] = '\0';
			int wr = query_get(req->query, "width", width, sizeof(width));

			if (wr == QUERY_ABSENT)
				snprintf(width, sizeof(width), "320");
			else if (wr == QUERY_BAD || !*width || strspn(width, "0123456789") != strlen(width)) {
				hsrv_resp_error(resp, 400, "bad_request", "`width` must be a number of pixels");
				return;
			}
			start_job(a, req, resp, JOB_THUMBNAIL, id, width, NULL, NULL);
			return;
		}
	}
	j = na_node_get_json(a->node, path_id(req));
	if (!j) {
		char msg[128];
		snprintf(msg, sizeof(msg), "no sandbox `%.64s`", path_id(req));
		hsrv_resp_error(resp, 404, "not_found", msg);
		return;
	}
	hsrv_resp_json(resp, 200, j);
}

static void h_delete(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;

	if (deny(a, req, resp))
		return;
	if (!na_valid_id(path_id(req))) {
		hsrv_resp_error(resp, 404, "not_found", "no such sandbox");
		return;
	}
	start_job(a, req, resp, JOB_DESTROY, path_id(req), NULL, NULL, NULL);
}

/* PUT /v1/sandboxes/{id}/egress */
static void h_put(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct agent *a = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	struct na_egress_policy pol;
	char id[64];
	const char *rest = path_id(req), *slash = strchr(rest, '/');

	if (deny(a, req, resp))
		return;
	if (!slash || strcmp(slash, "/egress") != 0 || (size_t)(slash - rest) >= sizeof(id)) {
		hsrv_resp_error(resp, 404, "not_found", "no such resource");
		return;
	}
	snprintf(id, sizeof(id), "%.*s", (int)(slash - rest), rest);
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
	const char *id = req->path + strlen("/v1/checkpoints/");
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
	struct agent *a = ud;

	if (deny(a, req, resp))
		return;
	hsrv_resp_json(resp, 200, na_node_templates_json(a->node));
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
	struct agent *a = ud;

	if (deny(a, req, resp))
		return;
	hsrv_resp_json(resp, 200, na_node_capacity_json(a->node));
}

static void h_healthz(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	(void)ud;
	(void)req;
	hsrv_resp_json(resp, 200, json_pack("{s:s, s:s}", "status", "ok", "version", version_string()));
}

static int on_signal(void *ud, int fd)
{
	struct agent *a = ud;
	struct signalfd_siginfo si;

	if (fd < 0)
		return -1;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		log_info("shutting down; sandboxes keep running", "{s:s}", "signal",
			 strsignal((int)si.ssi_signo));
		hsrv_stop(a->srv);
	}
	return 0;
}

/* Every sandbox may hold thousands of host tasks (gVisor's ptrace platform
 * gives each guest process stub threads), and a sandbox reaching its pids
 * limit must not leave the host short of pids: raise a small pid_max to the
 * 64-bit maximum. */
static void raise_pid_max(void)
{
	static const char path[] = "/proc/sys/kernel/pid_max";
	static const long want = 4194304;
	char buf[32] = {0};
	AUTOCLOSE int fd = open(path, O_RDWR | O_CLOEXEC);
	long have;

	if (fd == -1 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return;
	have = strtol(buf, NULL, 10);
	if (have >= want)
		return;
	snprintf(buf, sizeof(buf), "%ld\n", want);
	if (pwrite(fd, buf, strlen(buf), 0) == -1)
		log_warn("cannot raise kernel.pid_max", "{s:I, s:s}", "pid_max", (json_int_t)have,
			 "error", strerror(errno));
	else
		log_info("raised kernel.pid_max", "{s:I, s:I}", "from", (json_int_t)have, "to",
			 (json_int_t)want);
}

/* One agent per pool: two would adopt, sweep and tear down each other's
 * sandboxes.  Holds an flock on pool/.cloche-node.lock (which names our
 * pid) for the life of the process; released by the kernel however we
 * exit.  The fd, or -1 with e set. */
static int lock_pool(const char *pool, struct err *e)
{
	char path[4200], who[32] = "?";
	AUTOCLOSE int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/.cloche-node.lock", pool);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd == -1)
		return err_set(e, errno, "open `%s`", path);
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		n = pread(fd, who, sizeof(who) - 1, 0);
		who[n > 0 ? n : 1] = '\0';
		who[strcspn(who, "\n")] = '\0';
		return err_set(e, 0, "another cloche-node (pid %s) serves the pool `%s`", who, pool);
	}
	snprintf(who, sizeof(who), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == -1 || pwrite(fd, who, strlen(who), 0) == -1)
		return err_set(e, errno, "write `%s`", path);
	return take_fd(&fd);
}

/* `cloche-node connect ID PORT`: a connection to a port inside a sandbox
 * through the running agent, relayed to stdin/stdout (like nc). */
static int connect_command(struct cfg *c, char *const *args, size_t n)
{
	const char *sock = cfg_str(c, "connect-socket");
	struct err e = ERR_INIT;
	char *end;
	long port;
	AUTOCLOSE int fd = -1;

	port = n == 3 ? strtol(args[2], &end, 10) : 0;
	if (n != 3 || *end || port < 1 || port > 65535) {
		fprintf(stderr, "usage: cloche-node [--connect-socket PATH] connect ID PORT\n");
		return 2;
	}
	fd = na_connect_request(sock, args[1], (int)port, &e);
	if (fd == -1 || na_connect_relay_stdio(fd, &e) == -1) {
		fprintf(stderr, "cloche-node connect: %s\n", e.msg);
		return 1;
	}
	return 0;
}

static void read_credential(struct agent *a, const char *path)
{
	struct err e = ERR_INIT;
	int n = secret_read_file(path, a->cred, sizeof(a->cred), 16, &e);

	if (n < 0)
		daemon_die(1, "cannot start", &e);
	a->cred_len = (size_t)n;
}

/* The S3 client of --s3-*: keys from --s3-credential-file (access key and
 * secret key on two lines) or the environment.  NULL with e. */
static struct na_s3 *open_s3(struct cfg *c, struct err *e)
{
	char keys[512] = "", *nl;
	const char *ak = NULL, *sk = NULL;
	struct na_s3 *s3;

	if (cfg_str(c, "s3-credential-file")) {
		const char *path = cfg_str(c, "s3-credential-file");
		AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd == -1 ? -1 : read(fd, keys, sizeof(keys) - 1);

		if (n < 0)
			return err_set(e, errno, "--s3-credential-file `%s`", path), NULL;
		keys[n] = '\0';
		nl = strchr(keys, '\n');
		if (!nl)
			return err_set(e, 0, "--s3-credential-file: give the access key and the secret "
					     "key on two lines"),
			       NULL;
		*nl = '\0';
		nl[1 + strcspn(nl + 1, "\r\n")] = '\0';
		keys[strcspn(keys, "\r")] = '\0';
		ak = keys;
		sk = nl + 1;
	} else {
		ak = getenv("CLOCHE_S3_ACCESS_KEY") ? getenv("CLOCHE_S3_ACCESS_KEY")
						    : getenv("AWS_ACCESS_KEY_ID");
		sk = getenv("CLOCHE_S3_SECRET_KEY") ? getenv("CLOCHE_S3_SECRET_KEY")
						    : getenv("AWS_SECRET_ACCESS_KEY");
	}
	if (!ak || !*ak || !sk || !*sk)
		return err_set(e, 0, "--s3-endpoint needs keys: --s3-credential-file, or "
				     "CLOCHE_S3_ACCESS_KEY and CLOCHE_S3_SECRET_KEY"),
		       NULL;
	s3 = na_s3_new(&(struct na_s3_opts){.endpoint = cfg_str(c, "s3-endpoint"),
					     .bucket = cfg_str(c, "s3-bucket"),
					     .region = cfg_str(c, "s3-region"),
					     .access_key = ak,
					     .secret_key = sk,
					     .attempts = getenv("CLOCHE_S3_ATTEMPTS")
								 ? atoi(getenv("CLOCHE_S3_ATTEMPTS"))
								 : 0},
		       e);
	explicit_bzero(keys, sizeof(keys));
	return s3;
}

/* `cloche-node s3 ...`: the S3 client alone, configured from the environment. */
static int s3_command(struct cfg *c, char *const *args, size_t n)
{
	(void)c;
	return na_s3_cli_main((int)n, args);
}

static const struct daemon_cmd commands[] = {
	{"connect", "ID PORT", connect_command},
	{"s3", "...", s3_command},
};

static const struct daemon_opts start = {
	.prog = "cloche-node",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CLOCHE_NODE",
	.cmds = commands,
	.ncmds = ARRAY_LEN(commands),
	.signals = DAEMON_SIG_FD,
};

int main(int argc, char **argv)
{
	struct na_s3 *s3 = NULL;
	struct err e = ERR_INIT;
	struct daemon d;
	struct cfg *c;
	struct agent a;
	struct hsrv_opts ho = {0};
	struct na_node_opts no;
	int rc;
	struct na_connect *conn;
	bool busy;

	memset(&a, 0, sizeof(a));
	pthread_mutex_init(&a.posted_mu, NULL);
	/* Signals go to the signalfd: blocked here, before any thread exists. */
	daemon_start(&start, argc, argv, &d);
	c = d.cfg;
	if (na_test_hooks_set(cfg_str(c, "test-hooks"), &e) == -1)
		daemon_die(1, "bad configuration", &e);
	if (na_test_hooks_on())
		log_warn("test hooks are on: this agent pauses on purpose (tests only)", "{s:s}",
			 "test_hooks", cfg_str(c, "test-hooks"));
	if (!cfg_str(c, "credential-file")) {
		err_set(&e, 0, "--credential-file is required");
		daemon_die(1, "bad configuration", &e);
	}
	read_credential(&a, cfg_str(c, "credential-file"));

	no.pool = cfg_str(c, "pool");
	no.runsc_root = cfg_str(c, "runsc-root");
	no.template_name = cfg_str(c, "template-name");
	no.warm = cfg_str(c, "warm-pool");
	if (cfg_int(c, "max-sandboxes") < 0 || cfg_int(c, "max-sandboxes") > 100000) {
		err_set(&e, 0, "--max-sandboxes: give 0 (no limit) to 100000");
		daemon_die(1, "bad configuration", &e);
	}
	no.max_sandboxes = (int)cfg_int(c, "max-sandboxes");
	no.proxy_domain = cfg_str(c, "proxy-domain");
	no.s3 = NULL;
	no.s3_prefix = cfg_str(c, "s3-prefix");
	if (*cfg_str(c, "s3-endpoint")) {
		s3 = open_s3(c, &e);
		if (!s3)
			daemon_die(1, "bad configuration", &e);
		no.s3 = s3;
	}
	no.proxy_admin = cfg_str(c, "proxy-admin");
	no.credential = a.cred;
	if (*no.proxy_admin && strncmp(no.proxy_admin, "http://", 7) != 0 &&
	    strncmp(no.proxy_admin, "https://", 8) != 0) {
		err_set(&e, 0, "--proxy-admin: `%s` is not an http(s) URL", no.proxy_admin);
		daemon_die(1, "bad configuration", &e);
	}
	if (cfg_int(c, "pool-image-size") < 1 || cfg_int(c, "pool-image-size") > 1 << 20) {
		err_set(&e, 0, "--pool-image-size: give GiB, 1..1048576");
		daemon_die(1, "bad configuration", &e);
	}
	if (na_btrfs_pool_ensure(no.pool, cfg_str(c, "pool-image"),
				 cfg_int(c, "pool-image-size") << 30, &e) == -1)
		daemon_die(1, "cannot set up the pool", &e);
	if (lock_pool(no.pool, &e) == -1)
		daemon_die(1, "cannot start", &e);
	raise_pid_max();
	a.egress = na_egress_new(&e);
	if (!a.egress)
		daemon_die(1, "cannot start", &e);
	no.egress = a.egress;
	a.node = na_node_new(&no, &e);
	if (!a.node)
		daemon_die(1, "bad configuration", &e);
	na_node_adopt(a.node);
	conn = na_connect_start(a.node, cfg_str(c, "connect-socket"), &e);
	if (!conn || (*cfg_str(c, "connect-socket-group") &&
		      na_connect_share(conn, cfg_str(c, "connect-socket-group"), &e) == -1))
		daemon_die(1, "cannot start", &e);

	ho.listen = cfg_str(c, "listen");
	ho.port = (int)cfg_int(c, "port");
	ho.max_body = 1 << 16;
	a.srv = hsrv_new(&ho, &e);
	if (!a.srv)
		daemon_die(1, "cannot listen", &e);
	if (hsrv_watch(a.srv, take_fd(&d.sigfd), on_signal, &a, &e) == -1 ||
	    hsrv_route(a.srv, "POST", "/v1/sandboxes", h_create, &a, &e) == -1 ||
	    hsrv_route(a.srv, "GET", "/v1/sandboxes", h_list, &a, &e) == -1 ||
	    hsrv_route(a.srv, "GET", "/v1/sandboxes/*", h_get, &a, &e) == -1 ||
	    hsrv_route(a.srv, "DELETE", "/v1/sandboxes/*", h_delete, &a, &e) == -1 ||
	    hsrv_route(a.srv, "PUT", "/v1/sandboxes/*", h_put, &a, &e) == -1 ||
	    hsrv_route(a.srv, "POST", "/v1/sandboxes/*", h_action, &a, &e) == -1 ||
	    hsrv_route(a.srv, "DELETE", "/v1/checkpoints/*", h_l2_delete, &a, &e) == -1 ||
	    hsrv_route(a.srv, "GET", "/v1/capacity", h_capacity, &a, &e) == -1 ||
	    hsrv_route(a.srv, "GET", "/v1/templates", h_templates, &a, &e) == -1 ||
	    hsrv_route(a.srv, "POST", "/v1/templates", h_import, &a, &e) == -1 ||
	    hsrv_route(a.srv, "GET", "/healthz", h_healthz, &a, &e) == -1)
		daemon_die(1, "cannot start", &e);
	if (*cfg_str(c, "portal")) {
		struct na_heartbeat_opts hbo = {0};
		char host[256] = "", self[512];
		long iv = (long)cfg_int(c, "heartbeat-ms");

		if (strncmp(cfg_str(c, "portal"), "http://", 7) != 0 &&
		    strncmp(cfg_str(c, "portal"), "https://", 8) != 0) {
			err_set(&e, 0, "--portal: `%s` is not an http(s) URL", cfg_str(c, "portal"));
			daemon_die(1, "bad configuration", &e);
		}
		if (iv < 200 || iv > 60000) {
			err_set(&e, 0, "--heartbeat-ms: give 200..60000");
			daemon_die(1, "bad configuration", &e);
		}
		if (cfg_str(c, "advertise-url")) {
			snprintf(self, sizeof(self), "%s", cfg_str(c, "advertise-url"));
		} else if (!*ho.listen || strcmp(ho.listen, "0.0.0.0") == 0 ||
			   strcmp(ho.listen, "::") == 0) {
			err_set(&e, 0, "--portal with --listen %s needs --advertise-url: the portal "
				       "must know an address it can call",
				*ho.listen ? ho.listen : "(all)");
			daemon_die(1, "bad configuration", &e);
		} else {
			snprintf(self, sizeof(self), strchr(ho.listen, ':') ? "http://[%s]:%d"
									  : "http://%s:%d",
				 ho.listen, hsrv_port(a.srv));
		}
		if (cfg_str(c, "node-name"))
			snprintf(host, sizeof(host), "%s", cfg_str(c, "node-name"));
		else if (gethostname(host, sizeof(host) - 1) == -1 || !*host)
			snprintf(host, sizeof(host), "node");
		hbo.portal = cfg_str(c, "portal");
		hbo.name = host;
		hbo.url = self;
		hbo.credential = a.cred;
		hbo.interval_ms = iv;
		a.hb = na_heartbeat_start(a.node, &hbo, &e);
		if (!a.hb)
			daemon_die(1, "cannot start", &e);
	}
	if (na_node_keeper_start(a.node, &e) == -1)
		daemon_die(1, "cannot start", &e);
	log_info("serving", "{s:s, s:i, s:s, s:s}", "listen", ho.listen, "port", hsrv_port(a.srv),
		 "pool", no.pool, "version", version_string());
	rc = hsrv_run(a.srv);
	na_heartbeat_stop(a.hb);
	a.hb = NULL;
	/* A create or destroy in progress gets a few seconds; one that takes
	 * longer is left to the next start (adopted or cleaned up), and then
	 * nothing it uses may be freed. */
	for (int i = 0; i < 50 && atomic_load(&a.jobs) > 0; i++)
		usleep(100 * 1000);
	busy = atomic_load(&a.jobs) > 0;
	if (!na_connect_stop(conn))
		busy = true; /* its request threads still use the node */
	if (!na_node_keeper_stop(a.node) || busy) {
		/* Threads still work on sandboxes: leave everything to the exit
		 * (and the half-done work to the next start) instead of freeing
		 * what they use. */
		log_warn("stopped with work in progress; the next start finishes or removes it",
			 "{s:i}", "requests", atomic_load(&a.jobs));
		fflush(NULL);
		_exit(rc == 0 ? 0 : 1);
	}
	/* Answers of work that ended after the loop's last round: released
	 * the normal way while their connections still exist (each reply
	 * unlists itself; no worker posts any more).  They are never sent:
	 * the loop does not turn again. */
	while (a.posted)
		job_reply(a.posted);
	hsrv_free(a.srv);
	pthread_mutex_destroy(&a.posted_mu);
	na_node_free(a.node);
	na_s3_free(s3);
	na_egress_free(a.egress);
	daemon_end(&d);
	log_info("stopped", NULL);
	na_test_pause(NA_HOOK_EXIT); /* a thread still using what was freed would show now */
	return rc == 0 ? 0 : 1;
}
