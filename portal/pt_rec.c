/* Recordings and the action trace, portal side (pt_rec.h).  A request
 * becomes one node call, a job of p->jobs like the portal's other node
 * calls so shutdown waits for it, and is answered on the loop thread
 * through a deferred response. */
#include "portal/pt_rec.h"
#include "portal/pt_core.h"
#include "portal/pt_nodes.h"
#include "portal/pt_store.h"

#include "common/http_client.h"
#include "common/log.h"
#include "common/recid.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_CALL_TIMEOUT_MS 40000
#define REC_DOWNLOAD_TIMEOUT_MS 300000
#define REC_DOWNLOAD_MAX (512u << 20)

struct rec_call {
	struct pt_portal *p;
	struct hsrv_defer *d; /* NULL: nobody waits (an acquire's recording) */
	char id[32];          /* the portal's sandbox */
	char method[8];
	char url[1400];
	char event[64];       /* the event to note when it worked, or "" */
	bool raw;             /* pass the body on as bytes (MP4, trace) */
	long status;
	struct buf body;
	char ctype[64];
	char msg[300];
};

static void call_gone(void *ud)
{
	(void)ud; /* answered (and dropped) when the call ends */
}

/* Loop thread: the node answered (or did not). */
static void call_done(void *ud)
{
	struct rec_call *c = ud;
	struct pt_portal *p = c->p;
	struct hsrv_resp r = {0};

	if (c->status >= 200 && c->status < 300 && c->event[0]) {
		struct err e = ERR_INIT;
		struct pt_sb sb = {0};
		json_t *j = json_loadb(c->body.data ? c->body.data : "", c->body.len, 0, NULL);
		json_t *rec = json_object_get(j, "recording");
		const char *rid = json_string_value(json_object_get(rec ? rec : j, "id"));
		char reason[160];

		snprintf(reason, sizeof(reason), "%s %s", c->event, rid ? rid : "");
		if (pt_store_sb_get(p->st, c->id, &sb, &e) == 0)
			pt_store_sb_note(p->st, c->id, sb.state, reason, &e);
		pt_sb_clear(&sb);
		log_info(c->event, "{s:s, s:s?}", "sandbox", c->id, "recording", rid);
		json_decref(j); /* rid points into it */
	} else if (c->event[0]) {
		log_warn("recording call failed", "{s:s, s:s, s:i, s:s}", "sandbox", c->id, "event",
			 c->event, "status", (int)c->status, "error", c->msg);
	}
	if (c->d) {
		if (c->status < 0) {
			hsrv_resp_error(&r, 502, NULL, c->msg);
		} else {
			r.status = (int)c->status;
			snprintf(r.content_type, sizeof(r.content_type), "%s",
				 c->ctype[0] ? c->ctype : "application/json");
			r.body = c->body.data ? c->body.data : strdup("");
			r.body_len = c->body.len;
			c->body.data = NULL;
			if (c->raw && c->status == 200)
				hsrv_resp_header(&r, "Cache-Control", "no-store");
		}
		hsrv_defer_reply(c->d, &r);
	}
	buf_free(&c->body);
	free(c);
}

/* The node call, on the job's thread. */
static void call_work(void *arg)
{
	struct rec_call *c = arg;
	struct pt_portal *p = c->p;
	char authz[300];
	const char *hdrs[] = {authz, "Content-Type: application/json", NULL};
	struct http_req req = {.method = c->method, .url = c->url, .headers = hdrs,
			       .timeout_ms = c->raw ? REC_DOWNLOAD_TIMEOUT_MS : REC_CALL_TIMEOUT_MS,
			       .max_resp = c->raw ? REC_DOWNLOAD_MAX : (1u << 20)};
	struct http_resp resp;
	struct err e = ERR_INIT;

	memset(&resp, 0, sizeof(resp));
	snprintf(authz, sizeof(authz), "Authorization: Bearer %s", p->cfg.node_cred);
	if (strcmp(c->method, "POST") == 0) {
		req.body = "{}";
		req.body_len = 2;
	}
	c->status = -1;
	if (http_request(&req, &resp, &e) == 0) {
		const char *ct = http_resp_header(&resp, "Content-Type");

		c->status = resp.status;
		c->body = resp.body;
		memset(&resp.body, 0, sizeof(resp.body));
		snprintf(c->ctype, sizeof(c->ctype), "%s", ct ? ct : "application/json");
		if (c->status < 200 || c->status > 299) {
			json_t *j = json_loadb(c->body.data ? c->body.data : "", c->body.len, 0, NULL);
			const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

			snprintf(c->msg, sizeof(c->msg), "%s", m ? m : "the node refused");
			json_decref(j);
		}
	} else {
		snprintf(c->msg, sizeof(c->msg), "the sandbox's node did not answer: %.200s", e.msg);
	}
	explicit_bzero(authz, sizeof(authz));
	http_resp_free(&resp);
}

/* Shutting down: the deferred answer goes with the server. */
static void call_drop(void *ud)
{
	struct rec_call *c = ud;

	buf_free(&c->body);
	free(c);
}

/* Starts c on a thread.  0, or -1 (c is still the caller's). */
static int call_start(struct pt_portal *p, struct rec_call *c)
{
	c->p = p;
	return job_start(p->jobs, call_work, call_done, call_drop, c) == 0 ? 0 : -1;
}

/* A call for sb to its node's path (after /v1/sandboxes/{sid}); NULL with
 * resp filled when the sandbox cannot be reached. */
static struct rec_call *new_call(struct pt_portal *p, const struct pt_sb *sb, const char *method,
				 const char *path, struct hsrv_resp *resp)
{
	struct pt_node *n;
	struct rec_call *c;

	if (sb->state != PT_READY) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "the sandbox is %s: recordings and the trace are reached while it runs "
			 "(wake it first)",
			 pt_state_name(sb->state));
		if (resp)
			hsrv_resp_error(resp, 409, NULL, msg);
		return NULL;
	}
	n = pt_nodes_find(p, sb->node);
	if (!n || !n->up) {
		if (resp)
			hsrv_resp_error(resp, 503, NULL, "the sandbox's node is not answering");
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		if (resp)
			hsrv_resp_error(resp, 500, NULL, "out of memory");
		return NULL;
	}
	snprintf(c->id, sizeof(c->id), "%s", sb->id);
	snprintf(c->method, sizeof(c->method), "%s", method);
	snprintf(c->url, sizeof(c->url), "%s/v1/sandboxes/%s%s", n->url, sb->node_sid, path);
	return c;
}

void pt_rec_handle(struct pt_portal *p, const struct pt_sb *sb, enum pt_rec_op op,
		   const char *rec, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	bool get = op != PT_REC_START && op != PT_REC_STOP;
	char path[128], event[64] = "";
	bool raw = false;
	struct rec_call *c;

	if ((op == PT_REC_GET || op == PT_REC_STOP) && !recid_valid(rec, strlen(rec))) {
		hsrv_resp_error(resp, 404, NULL, "no such recording");
		return;
	}
	switch (op) {
	case PT_REC_TRACE:
		snprintf(path, sizeof(path), "/trace");
		raw = true;
		break;
	case PT_REC_START:
		snprintf(path, sizeof(path), "/recordings");
		snprintf(event, sizeof(event), "recording started");
		break;
	case PT_REC_LIST:
		snprintf(path, sizeof(path), "/recordings");
		break;
	case PT_REC_STOP:
		snprintf(path, sizeof(path), "/recordings/%s/stop", rec);
		snprintf(event, sizeof(event), "recording stopped");
		break;
	case PT_REC_GET:
		snprintf(path, sizeof(path), "/recordings/%s", rec);
		raw = true;
		break;
	}
	c = new_call(p, sb, get ? "GET" : "POST", path, resp);
	if (!c)
		return;
	c->raw = raw;
	snprintf(c->event, sizeof(c->event), "%s", event);
	c->d = hsrv_defer(req, call_gone, c);
	if (!c->d || call_start(p, c) == -1) {
		if (c->d) {
			struct hsrv_resp r = {0};

			hsrv_resp_error(&r, 500, NULL, "cannot start the node call");
			hsrv_defer_reply(c->d, &r);
		} else {
			hsrv_resp_error(resp, 500, NULL, "out of memory");
		}
		free(c);
	}
}

void pt_rec_start_quiet(struct pt_portal *p, const struct pt_sb *sb)
{
	struct rec_call *c = new_call(p, sb, "POST", "/recordings", NULL);

	if (!c) {
		log_warn("recording not started", "{s:s, s:s}", "sandbox", sb->id, "error",
			 "the sandbox or its node is not ready");
		return;
	}
	snprintf(c->event, sizeof(c->event), "recording started");
	if (call_start(p, c) == -1)
		free(c);
}
