/* The portal's HTTP API (see docs/portal.md and the OpenAPI document this
 * serves): authentication, request checks with errors that name the field,
 * and the views.  State changes go through pt_core. */
#include "portal/pt_rec.h"
#include "portal/pt_api.h"

#include "common/json.h"
#include "common/log.h"
#include "common/query.h"
#include "common/rnd.h"
#include "common/util.h"
#include "common/version.h"
#include "portal/pt_core.h"
#include "portal/pt_hib.h"
#include "portal/pt_thumb.h"
#include "portal/pt_web.h"
#include "portal/pt_nodes.h"
#include "portal/pt_openapi.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BODY_MAX (64 * 1024)
#define LABELS_MAX 64
#define META_MAX (16 * 1024)
#define IDLE_MAX_S (30LL * 86400)
#define OFFLOAD_MAX_S (365LL * 86400)

/* {"error":{"code":"bad_request","message":...,"field":field}} */
__attribute__((format(printf, 3, 4))) static void bad_field(struct hsrv_resp *resp,
							     const char *field, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hsrv_resp_json(resp, 400,
		       json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "bad_request", "message",
				 msg, "field", field));
}

static void fail(struct hsrv_resp *resp, int status, const char *msg)
{
	struct err e = ERR_INIT;

	err_http(&e, status, "%s", msg);
	pt_resp_err(resp, &e);
}

/* The caller, or false after answering 401. */
static bool caller(struct pt_portal *p, const struct hsrv_req *req, struct hsrv_resp *resp,
		   struct pt_caller *who)
{
	char h[256];
	struct err e = ERR_INIT;
	int n = hsrv_req_header(req, "authorization", h, sizeof(h));
	int rc = n > 0 ? pt_auth_check(p->st, h, who, &e) : 0;

	if (rc == 1)
		return true;
	if (rc == -1)
		pt_resp_err(resp, &e);
	else {
		fail(resp, 401, n == HSRV_HDR_ABSENT ? "an API key is required (Authorization: Bearer ck_...)"
						     : "the API key is not valid (unknown, malformed or revoked)");
		hsrv_resp_header(resp, "WWW-Authenticate", "Bearer");
	}
	return false;
}

static bool admin_only(const struct pt_caller *who, struct hsrv_resp *resp)
{
	if (who->admin)
		return true;
	fail(resp, 403, "this needs an admin key");
	return false;
}

/* Parses the body as a JSON object ({} when empty); NULL after answering. */
static json_t *body_object(const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;
	json_t *v;

	if (req->body_len == 0)
		return json_object();
	v = cj_parse(req->body, req->body_len, BODY_MAX, CJ_MAX_DEPTH, &e);
	if (!v) {
		pt_resp_err(resp, &e);
		return NULL;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		fail(resp, 400, "the body must be a JSON object");
		return NULL;
	}
	return v;
}

/* Refuses a field not in allowed (NULL-terminated).  Returns false after answering. */
static bool only_fields(json_t *obj, const char *const *allowed, const char *prefix,
			struct hsrv_resp *resp)
{
	const char *k;
	json_t *v;

	json_object_foreach(obj, k, v) {
		bool ok = false;

		for (const char *const *a = allowed; *a; a++)
			ok |= strcmp(*a, k) == 0;
		if (!ok) {
			char f[160];

			snprintf(f, sizeof(f), "%s%s", prefix, k);
			bad_field(resp, f, "unknown field `%s`", f);
			return false;
		}
	}
	return true;
}

/* An optional integer field in lo..hi; false after answering. */
static bool int_field(json_t *obj, const char *key, const char *field, long long lo, long long hi,
		      long long *out, struct hsrv_resp *resp)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return true;
	if (!json_is_integer(v)) {
		bad_field(resp, field, "`%s` must be an integer", field);
		return false;
	}
	if (json_integer_value(v) < lo || json_integer_value(v) > hi) {
		bad_field(resp, field, "`%s` must be between %lld and %lld", field, lo, hi);
		return false;
	}
	*out = json_integer_value(v);
	return true;
}

static bool name_ok(const char *s, size_t max, const char *extra)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr(extra, s[i]))
			return false;
	return true;
}

/* A {string: string} object with limits; false after answering. */
static bool string_map(json_t *obj, const char *field, size_t max_entries, size_t max_bytes,
		       bool label_keys, char **out, struct hsrv_resp *resp)
{
	json_t *v = json_object_get(obj, field);
	const char *k;
	json_t *x;
	size_t total = 0;

	if (!v || json_is_null(v)) {
		*out = strdup("{}");
		return true;
	}
	if (!json_is_object(v)) {
		bad_field(resp, field, "`%s` must be an object of strings", field);
		return false;
	}
	if (json_object_size(v) > max_entries) {
		bad_field(resp, field, "`%s` has more than %zu entries", field, max_entries);
		return false;
	}
	json_object_foreach(v, k, x) {
		char f[200];

		snprintf(f, sizeof(f), "%s.%s", field, k);
		if (!json_is_string(x)) {
			bad_field(resp, f, "`%s` must be a string", f);
			return false;
		}
		if (label_keys && (!name_ok(k, 63, "-_./") || json_string_length(x) > 255)) {
			bad_field(resp, f,
				  "label keys are 1-63 letters, digits, '-', '_', '.', '/'; values "
				  "at most 255 bytes");
			return false;
		}
		total += strlen(k) + json_string_length(x);
	}
	if (total > max_bytes) {
		bad_field(resp, field, "`%s` is larger than %zu bytes", field, max_bytes);
		return false;
	}
	*out = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	return *out != NULL;
}

/* egress: "none" or {"allow": [host patterns]}; the node checks each pattern. */
static bool egress_field(json_t *obj, char **out, struct hsrv_resp *resp)
{
	json_t *v = json_object_get(obj, "egress"), *allow;
	size_t i;
	json_t *h;
	static const char *const keys[] = {"allow", NULL};

	if (!v || json_is_null(v) || (json_is_string(v) && strcmp(json_string_value(v), "none") == 0)) {
		*out = strdup("\"none\"");
		return true;
	}
	if (!json_is_object(v)) {
		bad_field(resp, "egress", "`egress` must be \"none\" or {\"allow\": [\"host\", ...]}");
		return false;
	}
	if (!only_fields(v, keys, "egress.", resp))
		return false;
	if (!json_is_array(allow = json_object_get(v, "allow"))) {
		bad_field(resp, "egress.allow", "`egress.allow` must be an array of host patterns");
		return false;
	}
	if (json_array_size(allow) > 256) {
		bad_field(resp, "egress.allow", "`egress.allow` has more than 256 entries");
		return false;
	}
	json_array_foreach(allow, i, h)
		if (!json_is_string(h) || json_string_length(h) == 0 || json_string_length(h) > 260) {
			bad_field(resp, "egress.allow", "`egress.allow` entries must be host patterns");
			return false;
		}
	*out = json_dumps(v, JSON_COMPACT);
	return *out != NULL;
}

static void h_acquire(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	static const char *const keys[] = {"template", "ttl",	   "wait",	    "persist",
					   "resources", "egress", "labels",	    "metadata",
					   "idle_timeout", "offload_after", "desktop", NULL};
	static const char *const rkeys[] = {"memory_mb", "cpus", "pids", NULL};
	static const char *const dkeys[] = {"clipboard", "resize", "record", NULL};
	struct pt_caller who;
	struct pt_acquire_req r;
	json_t *body, *res, *v;
	int n;

	if (!caller(p, req, resp, &who) || !(body = body_object(req, resp)))
		return;
	memset(&r, 0, sizeof(r));
	snprintf(r.template, sizeof(r.template), "%s", p->cfg.default_template);
	r.ttl_s = p->cfg.ttl_default_s;
	r.wait_s = p->cfg.wait_default_s;
	r.memory_mb = p->cfg.mem_default_mb;
	r.cpus = p->cfg.cpus_default;
	r.pids = p->cfg.pids_default;
	if (!only_fields(body, keys, "", resp))
		goto out;
	if ((v = json_object_get(body, "template")) && !json_is_null(v)) {
		if (!json_is_string(v) || !name_ok(json_string_value(v), 120, "-_.@")) {
			bad_field(resp, "template", "`template` must be a template name like "
						    "\"desktop\" or \"desktop@digest\"");
			goto out;
		}
		snprintf(r.template, sizeof(r.template), "%s", json_string_value(v));
	}
	if (!int_field(body, "ttl", "ttl", 1, p->cfg.ttl_max_s, &r.ttl_s, resp) ||
	    !int_field(body, "wait", "wait", 0, p->cfg.wait_max_s, &r.wait_s, resp))
		goto out;
	if ((v = json_object_get(body, "persist")) && !json_is_null(v)) {
		if (!json_is_boolean(v)) {
			bad_field(resp, "persist", "`persist` must be a boolean");
			goto out;
		}
		r.persist = json_is_true(v);
	}
	res = json_object_get(body, "resources");
	if (res && !json_is_null(res)) {
		if (!json_is_object(res)) {
			bad_field(resp, "resources", "`resources` must be an object");
			goto out;
		}
		if (!only_fields(res, rkeys, "resources.", resp) ||
		    !int_field(res, "memory_mb", "resources.memory_mb", 256, p->cfg.mem_max_mb,
			       &r.memory_mb, resp) ||
		    !int_field(res, "cpus", "resources.cpus", 1, p->cfg.cpus_max, &r.cpus, resp) ||
		    !int_field(res, "pids", "resources.pids", 64, p->cfg.pids_max, &r.pids, resp))
			goto out;
	}
	r.clipboard = true;
	if ((v = json_object_get(body, "desktop")) && !json_is_null(v)) {
		bool *slot[] = {&r.clipboard, &r.resize, &r.record};

		if (!json_is_object(v)) {
			bad_field(resp, "desktop", "`desktop` must be an object like {\"clipboard\": "
						   "true, \"resize\": false, \"record\": false}");
			goto out;
		}
		if (!only_fields(v, dkeys, "desktop.", resp))
			goto out;
		for (size_t i = 0; dkeys[i]; i++) {
			json_t *x = json_object_get(v, dkeys[i]);
			char field[32];

			if (!x || json_is_null(x))
				continue;
			if (!json_is_boolean(x)) {
				snprintf(field, sizeof(field), "desktop.%s", dkeys[i]);
				bad_field(resp, field, "`%s` must be true or false", field);
				goto out;
			}
			*slot[i] = json_is_true(x);
		}
	}
	pt_policy_for(&p->cfg.policy, r.template, &r.idle_timeout_s, &r.offload_after_s);
	if (!int_field(body, "idle_timeout", "idle_timeout", 0, IDLE_MAX_S, &r.idle_timeout_s,
		       resp) ||
	    !int_field(body, "offload_after", "offload_after", 0, OFFLOAD_MAX_S,
		       &r.offload_after_s, resp))
		goto out;
	r.default_res = r.memory_mb == p->cfg.mem_default_mb && r.cpus == p->cfg.cpus_default &&
			r.pids == p->cfg.pids_default;
	if (!egress_field(body, &r.egress, resp) ||
	    !string_map(body, "labels", LABELS_MAX, 16 * 1024, true, &r.labels, resp) ||
	    !string_map(body, "metadata", 256, META_MAX, false, &r.metadata, resp))
		goto out;
	n = hsrv_req_header(req, "idempotency-key", r.idem_key, sizeof(r.idem_key));
	if (n == HSRV_HDR_TOO_LONG || n > 128 || (n >= 0 && !name_ok(r.idem_key, 128, "-_.:/+=")) ||
	    n == 0) {
		bad_field(resp, "Idempotency-Key",
			  "the Idempotency-Key header must be 1-128 letters, digits or -_.:/+=");
		goto out;
	}
	if (n < 0)
		r.idem_key[0] = '\0';
	pt_core_acquire(p, &who, &r, req, resp);
out:
	free(r.egress);
	free(r.labels);
	free(r.metadata);
	json_decref(body);
}

/* Loads sandbox id for who: false after answering (404 also for another
 * user's sandbox: its existence is not theirs to learn). */
static bool load_visible(struct pt_portal *p, const struct pt_caller *who, const char *id,
			 struct pt_sb *sb, struct hsrv_resp *resp)
{
	struct err e = ERR_INIT;

	memset(sb, 0, sizeof(*sb));
	if (strlen(id) >= sizeof(sb->id) || pt_store_sb_get(p->st, id, sb, &e) == -1 ||
	    (!who->admin && strcmp(sb->owner, who->key_id) != 0)) {
		if (e.http_status && e.http_status != 404)
			pt_resp_err(resp, &e);
		else
			fail(resp, 404, "no such sandbox");
		pt_sb_clear(sb);
		return false;
	}
	return true;
}

struct listing {
	json_t *arr;
	long long last_at;
	char last_id[32];
	struct pt_portal *p;
};

static void list_one(const struct pt_sb *sb, void *ud)
{
	struct listing *l = ud;

	json_array_append_new(l->arr, pt_view_sb(l->p, sb, true));
	l->last_at = sb->created_at;
	snprintf(l->last_id, sizeof(l->last_id), "%s", sb->id);
}

static void h_list(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_filter f = {.state = -1, .limit = 50};
	char state[32], tmpl[128], label[320], limit[16], cursor[64];
	struct listing l = {.p = p};
	struct err e = ERR_INIT;
	int n;

	if (!caller(p, req, resp, &who))
		return;
	f.owner = who.admin ? NULL : who.key_id;
	if (query_get(req->query, "state", state, sizeof(state)) >= 0 &&
	    (f.state = pt_state_parse(state)) < 0) {
		bad_field(resp, "state", "unknown state `%s`", state);
		return;
	}
	if ((n = query_get(req->query, "template", tmpl, sizeof(tmpl))) >= 0)
		f.template = tmpl;
	if ((n = query_get(req->query, "label", label, sizeof(label))) >= 0) {
		char *eq = strchr(label, '=');

		if (!eq || eq == label) {
			bad_field(resp, "label", "`label` must be key=value");
			return;
		}
		*eq = '\0';
		f.label_key = label;
		f.label_val = eq + 1;
	}
	if (query_get(req->query, "limit", limit, sizeof(limit)) >= 0) {
		char *end;
		long v = strtol(limit, &end, 10);

		if (*end || v < 1 || v > 500) {
			bad_field(resp, "limit", "`limit` must be 1..500");
			return;
		}
		f.limit = (int)v;
	}
	if (query_get(req->query, "cursor", cursor, sizeof(cursor)) >= 0) {
		char *dot = strchr(cursor, '.');

		if (!dot || (f.before_at = strtoll(cursor, NULL, 10)) <= 0) {
			bad_field(resp, "cursor", "`cursor` is not one this portal gave");
			return;
		}
		f.before_id = dot + 1;
	}
	l.arr = json_array();
	n = pt_store_sb_list(p->st, &f, list_one, &l, &e);
	if (n == -1) {
		json_decref(l.arr);
		pt_resp_err(resp, &e);
		return;
	}
	if (n == f.limit) {
		snprintf(cursor, sizeof(cursor), "%lld.%s", l.last_at, l.last_id);
		hsrv_resp_json(resp, 200, json_pack("{s:o, s:s}", "sandboxes", l.arr, "next_cursor", cursor));
	} else {
		hsrv_resp_json(resp, 200, json_pack("{s:o, s:n}", "sandboxes", l.arr, "next_cursor"));
	}
}

/* The optional body of hibernate and wake: {wait}; false after answering. */
static bool wait_body(struct pt_portal *p, const struct hsrv_req *req, struct hsrv_resp *resp,
		      long long *wait_s, long long *count)
{
	static const char *const keys[] = {"wait", NULL};
	static const char *const fkeys[] = {"wait", "count", NULL};
	json_t *body = body_object(req, resp);
	bool ok;

	*wait_s = p->cfg.wait_default_s;
	if (!body)
		return false;
	ok = only_fields(body, count ? fkeys : keys, "", resp) &&
	     int_field(body, "wait", "wait", 0, p->cfg.wait_max_s, wait_s, resp) &&
	     (!count || int_field(body, "count", "count", 1, 8, count, resp));
	json_decref(body);
	return ok;
}

#define SHARE_TTL_DEFAULT_S 3600
#define SHARE_TTL_MAX_S (7 * 24 * 3600)
#define SHARE_LABEL_MAX 100
#define SHARES_MAX 100 /* active shares of one sandbox */

/* Shares as the API shows them (arr NULL: only counted), and how many
 * are active. */
struct share_list {
	struct pt_portal *p;
	json_t *arr;
	long long now;
	int active;
};

static void share_row(const struct pt_share *sh, void *ud)
{
	struct share_list *l = ud;

	if (l->arr)
		json_array_append_new(l->arr, pt_view_share(l->p, sh, l->now));
	l->active += !sh->revoked_at && sh->expires_at > l->now;
}

/* POST /sbv1/sandboxes/{id}/shares {mode?, ttl?, label?}: a link to the
 * sandbox's desktop, view-only unless control is asked for. */
static void share_create(struct pt_portal *p, const struct pt_caller *who, const struct pt_sb *sb,
			 const struct hsrv_req *req, struct hsrv_resp *resp)
{
	static const char *const keys[] = {"mode", "ttl", "label", NULL};
	json_t *body = body_object(req, resp), *mode, *label;
	struct pt_share sh = {.created_at = pt_now_ms()};
	long long ttl = SHARE_TTL_DEFAULT_S;
	struct err e = ERR_INIT;

	if (!body || !only_fields(body, keys, "", resp) ||
	    !int_field(body, "ttl", "ttl", 10, SHARE_TTL_MAX_S, &ttl, resp))
		goto out;
	mode = json_object_get(body, "mode");
	label = json_object_get(body, "label");
	if (mode && !json_is_null(mode) &&
	    (!json_is_string(mode) || (strcmp(json_string_value(mode), "view") != 0 &&
				       strcmp(json_string_value(mode), "control") != 0))) {
		bad_field(resp, "mode", "`mode` must be \"view\" or \"control\"");
		goto out;
	}
	if (label && !json_is_null(label) &&
	    (!json_is_string(label) || strlen(json_string_value(label)) > SHARE_LABEL_MAX)) {
		bad_field(resp, "label", "`label` must be a string of at most %d bytes", SHARE_LABEL_MAX);
		goto out;
	}
	if (pt_state_final(sb->state) || sb->state == PT_RELEASING) {
		fail(resp, 409, "the sandbox is released: there is no desktop to share");
		goto out;
	}
	struct share_list cnt = {p, NULL, sh.created_at, 0};
	if (pt_store_share_each(p->st, sb->id, NULL, share_row, &cnt, &e) == -1) {
		pt_resp_err(resp, &e);
		goto out;
	}
	if (cnt.active >= SHARES_MAX) {
		fail(resp, 409, "the sandbox has as many active shares as it may have: revoke one first");
		goto out;
	}
	char rnd[16];
	if (rnd_token(9, rnd, sizeof(rnd), NULL) == -1) {
		fail(resp, 500, "no randomness for a share id");
		goto out;
	}
	snprintf(sh.id, sizeof(sh.id), "sh_%s", rnd);
	snprintf(sh.sandbox, sizeof(sh.sandbox), "%s", sb->id);
	snprintf(sh.mode, sizeof(sh.mode), "%s", mode && json_is_string(mode) ? json_string_value(mode) : "view");
	snprintf(sh.label, sizeof(sh.label), "%s", label && json_is_string(label) ? json_string_value(label) : "");
	snprintf(sh.created_by, sizeof(sh.created_by), "%s", who->key_id);
	sh.expires_at = sh.created_at + ttl * 1000;
	if (pt_store_share_insert(p->st, &sh, pt_state_name(sb->state), &e) == -1) {
		pt_resp_err(resp, &e);
		goto out;
	}
	log_info("share made", "{s:s, s:s, s:s, s:I}", "sandbox", sb->id, "share", sh.id, "mode", sh.mode,
		 "ttl_s", (json_int_t)ttl);
	hsrv_resp_json(resp, 201, pt_view_share(p, &sh, sh.created_at));
out:
	json_decref(body);
}

/* /sbv1/sandboxes/{id}/shares[/{share}]: list (GET), make (POST), show
 * (GET .../{share}), revoke (DELETE .../{share}); the router sends no other
 * method. */
static void sb_shares(struct pt_portal *p, const struct pt_caller *who, const struct pt_sb *sb,
		      const char *share, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	long long now = pt_now_ms();
	struct err e = ERR_INIT;

	if (!share && strcmp(req->method, "POST") == 0) {
		share_create(p, who, sb, req, resp);
		return;
	}
	if (share && strcmp(req->method, "DELETE") == 0) {
		if (pt_store_share_revoke(p->st, sb->id, share, now, pt_state_name(sb->state), &e) == -1) {
			pt_resp_err(resp, &e);
			return;
		}
		log_info("share revoked", "{s:s, s:s}", "sandbox", sb->id, "share", share);
	}
	struct share_list l = {p, json_array(), now, 0};
	if (pt_store_share_each(p->st, sb->id, share, share_row, &l, &e) == -1) {
		json_decref(l.arr);
		pt_resp_err(resp, &e);
		return;
	}
	if (share && json_array_size(l.arr) == 0)
		fail(resp, 404, "no such share");
	else if (share)
		hsrv_resp_json(resp, 200, json_incref(json_array_get(l.arr, 0)));
	else
		hsrv_resp_json(resp, 200, json_pack("{s:s, s:O}", "id", sb->id, "shares", l.arr));
	json_decref(l.arr);
}

/* The caller and the sandbox of the route's {id}, visible to them; false
 * after answering (401, 404).  pt_sb_clear(sb) after true. */
static bool sandbox_of(struct pt_portal *p, const struct hsrv_req *req, struct hsrv_resp *resp,
		       struct pt_caller *who, struct pt_sb *sb)
{
	return caller(p, req, resp, who) &&
	       load_visible(p, who, hsrv_req_param(req, "id"), sb, resp);
}

/* GET /sbv1/sandboxes/{id} */
static void h_sandbox(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_sb sb;

	if (!sandbox_of(p, req, resp, &who, &sb))
		return;
	hsrv_resp_json(resp, 200, pt_view_sb(p, &sb, true));
	pt_sb_clear(&sb);
}

/* GET /sbv1/sandboxes/{id}/events */
static void h_events(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_sb sb;
	struct err e = ERR_INIT;
	json_t *ev;

	if (!sandbox_of(p, req, resp, &who, &sb))
		return;
	ev = pt_store_sb_events(p->st, sb.id, &e);
	if (ev)
		hsrv_resp_json(resp, 200, json_pack("{s:s, s:o}", "id", sb.id, "events", ev));
	else
		pt_resp_err(resp, &e);
	pt_sb_clear(&sb);
}

/* GET /sbv1/sandboxes/{id}/thumbnail?width=N */
static void h_thumbnail(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_sb sb;
	char w[8];
	int n;

	if (!sandbox_of(p, req, resp, &who, &sb))
		return;
	n = query_get(req->query, "width", w, sizeof(w));
	if (n == QUERY_ABSENT)
		snprintf(w, sizeof(w), "320");
	if (n == QUERY_BAD || !*w || strspn(w, "0123456789") != strlen(w) || atoi(w) < 16 ||
	    atoi(w) > 1280)
		bad_field(resp, "width", "`width` must be a number of pixels from 16 to 1280");
	else
		pt_thumb_get(p, &sb, atoi(w), req, resp);
	pt_sb_clear(&sb);
}

/* POST /sbv1/sandboxes/{id}/release */
static void h_release(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_sb sb;

	if (!sandbox_of(p, req, resp, &who, &sb))
		return;
	pt_core_release(p, &sb, resp);
	pt_sb_clear(&sb);
}

/* POST /sbv1/sandboxes/{id}/keepalive {ttl?} */
static void h_keepalive(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	static const char *const keys[] = {"ttl", NULL};
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_sb sb;
	json_t *body;
	long long ttl;

	if (!sandbox_of(p, req, resp, &who, &sb))
		return;
	body = body_object(req, resp);
	ttl = sb.ttl_s;
	if (body && only_fields(body, keys, "", resp) &&
	    int_field(body, "ttl", "ttl", 1, p->cfg.ttl_max_s, &ttl, resp))
		pt_core_keepalive(p, &sb, ttl, resp);
	json_decref(body);
	pt_sb_clear(&sb);
}

/* POST /sbv1/sandboxes/{id}/{hibernate,wake,fork}: the sandbox, the body's
 * {wait?} (and fork's {count?}), then the operation. */
enum hib_op { HIB_HIBERNATE, HIB_WAKE, HIB_FORK };

static void hib_handler(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp,
			enum hib_op op)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_sb sb;
	long long wait_s, count = 1;

	if (!sandbox_of(p, req, resp, &who, &sb))
		return;
	if (wait_body(p, req, resp, &wait_s, op == HIB_FORK ? &count : NULL)) {
		if (op == HIB_HIBERNATE)
			pt_hib_hibernate(p, &sb, wait_s, req, resp);
		else if (op == HIB_WAKE)
			pt_hib_wake(p, &sb, wait_s, req, resp);
		else
			pt_hib_fork(p, &who, &sb, (int)count, wait_s, req, resp);
	}
	pt_sb_clear(&sb);
}

static void h_hibernate(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	hib_handler(ud, req, resp, HIB_HIBERNATE);
}

static void h_wake(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	hib_handler(ud, req, resp, HIB_WAKE);
}

static void h_fork(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	hib_handler(ud, req, resp, HIB_FORK);
}

/* /sbv1/sandboxes/{id}/shares[/{share}] */
static void h_shares(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_sb sb;

	if (!sandbox_of(p, req, resp, &who, &sb))
		return;
	sb_shares(p, &who, &sb, hsrv_req_param(req, "share"), req, resp);
	pt_sb_clear(&sb);
}

/* Recordings and the trace (pt_rec.h): one route each. */
static void recordings(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp,
		       enum pt_rec_op op)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct pt_sb sb;

	if (!sandbox_of(p, req, resp, &who, &sb))
		return;
	pt_rec_handle(p, &sb, op, hsrv_req_param(req, "rec"), req, resp);
	pt_sb_clear(&sb);
}

static void h_rec_list(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	recordings(ud, req, resp, PT_REC_LIST);
}

static void h_rec_start(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	recordings(ud, req, resp, PT_REC_START);
}

static void h_rec_get(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	recordings(ud, req, resp, PT_REC_GET);
}

static void h_rec_stop(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	recordings(ud, req, resp, PT_REC_STOP);
}

static void h_trace(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	recordings(ud, req, resp, PT_REC_TRACE);
}

static void h_nodes(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	json_t *arr;

	if (!caller(p, req, resp, &who) || !admin_only(&who, resp))
		return;
	arr = json_array();
	for (struct pt_node *n = p->nodes; n; n = n->next)
		json_array_append_new(arr, pt_view_node(n));
	hsrv_resp_json(resp, 200, json_pack("{s:o}", "nodes", arr));
}

static void h_heartbeat(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	char h[320];
	struct err e = ERR_INIT;
	json_t *body;

	if (hsrv_req_header(req, "authorization", h, sizeof(h)) <= 0 ||
	    !pt_auth_node(h, p->cfg.node_cred, p->cfg.node_cred_len)) {
		fail(resp, 401, "a valid node credential is required");
		return;
	}
	body = cj_parse(req->body, req->body_len, 16u << 20, CJ_MAX_DEPTH, &e);
	if (!body || pt_core_heartbeat(p, body, &e) == -1)
		pt_resp_err(resp, &e);
	else
		hsrv_resp_json(resp, 200,
			       json_pack("{s:I}", "interval_ms", (json_int_t)p->cfg.heartbeat_ms));
	json_decref(body);
}

/* ---- what proxies ask: routes, the change feed, activity ---- */

static bool node_caller(struct pt_portal *p, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	char h[320];

	if (hsrv_req_header(req, "authorization", h, sizeof(h)) <= 0 ||
	    !pt_auth_node(h, p->cfg.node_cred, p->cfg.node_cred_len)) {
		fail(resp, 401, "a valid node credential is required");
		return false;
	}
	return true;
}

/* GET /sbv1/routes?after=SEQ: the sandboxes whose state changed since. */
static void h_routes(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct err e = ERR_INIT;
	char v[32];
	long long after = -1, seq = 0;
	json_t *ids;

	if (!node_caller(p, req, resp))
		return;
	if (query_get(req->query, "after", v, sizeof(v)) > 0)
		after = strtoll(v, NULL, 10);
	ids = json_array();
	if (pt_store_changes(p->st, after, &seq, ids, &e) == -1) {
		json_decref(ids);
		pt_resp_err(resp, &e);
		return;
	}
	hsrv_resp_json(resp, 200, json_pack("{s:I, s:o}", "seq", (json_int_t)seq, "changed", ids));
}

/* POST /sbv1/routes/activity: a proxy's batch; also tells where it is. */
static void h_activity(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = NULL;
	const char *node = NULL, *proxy = "";
	json_t *arr, *it;
	const char **ids = NULL;
	long long *at = NULL, now = pt_now_ms();
	size_t i, n = 0;

	if (!node_caller(p, req, resp))
		return;
	body = cj_parse(req->body, req->body_len, 4u << 20, CJ_MAX_DEPTH, &e);
	if (!body || json_unpack(body, "{s:s, s?s, s:o}", "node", &node, "proxy", &proxy,
				 "sandboxes", &arr) != 0 ||
	    !json_is_array(arr)) {
		fail(resp, 400, "want {node, proxy, sandboxes: [...]}");
		return;
	}
	{
		/* A node the portal has not heard from yet is not made here: its
		 * proxy reports again in a few seconds. */
		struct pt_node *nd = pt_nodes_find(p, node);

		if (nd && strlen(proxy) < sizeof(nd->proxy))
			snprintf(nd->proxy, sizeof(nd->proxy), "%s", proxy);
	}
	ids = calloc(json_array_size(arr) + 1, sizeof(*ids));
	at = calloc(json_array_size(arr) + 1, sizeof(*at));
	if (!ids || !at) {
		free(ids);
		free(at);
		fail(resp, 503, "out of memory");
		return;
	}
	json_array_foreach(arr, i, it) {
		const char *id = NULL;
		json_int_t idle = 0;

		if (json_unpack(it, "{s:s, s?I}", "id", &id, "idle_ms", &idle) != 0 || idle < 0)
			continue;
		ids[n] = id;
		at[n++] = now - idle;
	}
	if (pt_store_activity(p->st, ids, at, n, &e) == -1)
		pt_resp_err(resp, &e);
	else
		hsrv_resp_json(resp, 200, json_pack("{s:i}", "recorded", (int)n));
	free(ids);
	free(at);
}

/* A proxy's question about the sandbox of the route's {id}: its row, or
 * false after answering (401, 404). */
static bool route_row(struct pt_portal *p, const struct hsrv_req *req, struct hsrv_resp *resp,
		      struct pt_sb *sb)
{
	const char *id = hsrv_req_param(req, "id");
	struct err e = ERR_INIT;

	if (!node_caller(p, req, resp))
		return false;
	if (strlen(id) >= 40) {
		fail(resp, 404, "no such route");
		return false;
	}
	memset(sb, 0, sizeof(*sb));
	if (pt_store_sb_get(p->st, id, sb, &e) == -1) {
		pt_resp_err(resp, &e);
		return false;
	}
	return true;
}

/* POST /sbv1/routes/{id}/wake: a proxy holds a request for it.  Answered at
 * once: the proxy holds its request and follows the change feed until the
 * route is ready. */
static void h_route_wake(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_sb sb;

	if (!route_row(p, req, resp, &sb))
		return;
	pt_hib_wake(p, &sb, 0, NULL, resp);
	pt_sb_clear(&sb);
}

/* GET /sbv1/routes/{id}: where a sandbox is, for a proxy. */
static void h_route(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_sb sb;
	struct err e = ERR_INIT;
	struct pt_node *n;

	if (!route_row(p, req, resp, &sb))
		return;
	n = sb.node[0] ? pt_nodes_find(p, sb.node) : NULL;
	/* share links the proxies must refuse from now on (a revocation is an
	 * event of the sandbox, so the change feed brings them here) */
	json_t *revoked = pt_store_share_revoked(p->st, sb.id, pt_now_ms(), &e);
	if (!revoked) {
		pt_resp_err(resp, &e);
		pt_sb_clear(&sb);
		return;
	}
	hsrv_resp_json(resp, 200,
		       json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:o}", "id", sb.id, "state",
				 pt_state_name(sb.state), "node", sb.node[0] ? sb.node : NULL,
				 "node_sandbox_id", sb.node_sid[0] ? sb.node_sid : NULL, "proxy",
				 n && n->proxy[0] ? n->proxy : NULL, "revoked_shares", revoked));
	pt_sb_clear(&sb);
}

static void h_templates(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;

	if (!caller(p, req, resp, &who))
		return;
	hsrv_resp_json(resp, 200, json_pack("{s:o}", "templates", pt_view_templates(p)));
}

static json_t *key_view(const struct pt_key *k)
{
	char c[40], r[40];

	pt_time_str(k->created_at, c, sizeof(c));
	if (k->revoked_at)
		pt_time_str(k->revoked_at, r, sizeof(r));
	return json_pack("{s:s, s:s, s:s, s:s, s:s?}", "id", k->id, "name", k->name, "role",
			 k->role, "created_at", c, "revoked_at", k->revoked_at ? r : NULL);
}

static void list_key(const struct pt_key *k, void *ud)
{
	json_array_append_new(ud, key_view(k));
}

/* GET /sbv1/keys */
static void h_keys(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct err e = ERR_INIT;
	json_t *arr;

	if (!caller(p, req, resp, &who) || !admin_only(&who, resp))
		return;
	arr = json_array();
	if (pt_store_key_list(p->st, list_key, arr, &e) == -1) {
		json_decref(arr);
		pt_resp_err(resp, &e);
		return;
	}
	hsrv_resp_json(resp, 200, json_pack("{s:o}", "keys", arr));
}

/* POST /sbv1/keys {name, role?} */
static void h_key_create(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	static const char *const keys[] = {"name", "role", NULL};
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct err e = ERR_INIT;
	json_t *body, *v;
	const char *name = NULL, *role = "user";
	char key[PT_KEY_MAX];
	struct pt_key k;

	if (!caller(p, req, resp, &who) || !admin_only(&who, resp))
		return;
	body = body_object(req, resp);
	if (!body)
		return;
	if (!only_fields(body, keys, "", resp))
		goto done;
	v = json_object_get(body, "name");
	if (!json_is_string(v) || !name_ok(json_string_value(v), 100, "-_. @")) {
		bad_field(resp, "name", "`name` is required: 1-100 letters, digits, -_. @");
		goto done;
	}
	name = json_string_value(v);
	v = json_object_get(body, "role");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) || (strcmp(json_string_value(v), "admin") != 0 &&
					   strcmp(json_string_value(v), "user") != 0)) {
			bad_field(resp, "role", "`role` must be \"admin\" or \"user\"");
			goto done;
		}
		role = json_string_value(v);
	}
	if (pt_auth_key_create(p->st, name, role, key, &k, &e) == -1) {
		pt_resp_err(resp, &e);
		goto done;
	}
	{
		json_t *out = key_view(&k);

		json_object_set_new(out, "key", json_string(key));
		explicit_bzero(key, sizeof(key));
		hsrv_resp_json(resp, 201, out);
	}
	log_info("key created", "{s:s, s:s, s:s, s:s}", "key_id", k.id, "name", k.name, "role",
		 k.role, "by", who.key_id);
done:
	json_decref(body);
}

/* DELETE /sbv1/keys/{id}: revokes it. */
static void h_key(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct pt_caller who;
	struct err e = ERR_INIT;
	const char *id = hsrv_req_param(req, "id");
	struct pt_key k;

	if (!caller(p, req, resp, &who) || !admin_only(&who, resp))
		return;
	if (strlen(id) >= sizeof(k.id) || pt_store_key_revoke(p->st, id, pt_now_ms(), &e) == -1 ||
	    pt_store_key_get(p->st, id, &k, &e) != 1) {
		if (!e.http_status)
			err_http(&e, 404, "no key `%s`", id);
		pt_resp_err(resp, &e);
		return;
	}
	log_info("key revoked", "{s:s, s:s}", "key_id", k.id, "by", who.key_id);
	hsrv_resp_json(resp, 200, key_view(&k));
}

static void h_healthz(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;

	(void)req;
	hsrv_resp_json(resp, p->stopping ? 503 : 200,
		       json_pack("{s:s, s:s}", "status", p->stopping ? "stopping" : "ok", "version",
				 version_string()));
}

static void h_metrics(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	struct pt_portal *p = ud;
	struct buf b = BUF_INIT(4u << 20);

	(void)req;
	if (pt_metrics_render(p, &b) == -1) {
		buf_free(&b);
		fail(resp, 500, "metrics did not fit");
		return;
	}
	resp->status = 200;
	snprintf(resp->content_type, sizeof(resp->content_type), "text/plain; version=0.0.4");
	resp->body = buf_take(&b, &resp->body_len);
}

static void h_openapi(void *ud, const struct hsrv_req *req, struct hsrv_resp *resp)
{
	(void)ud;
	(void)req;
	hsrv_resp_text(resp, 200, "application/json", pt_openapi_json);
}

/* The routes, in the order the router tries them: a literal segment before
 * a {parameter} that would also match it.  Each is an operation of the
 * OpenAPI document (portal/openapi.json), which the integration test checks
 * against this table. */
int pt_api_routes(struct pt_portal *p, struct err *e)
{
	static const struct {
		const char *method, *path;
		hsrv_handler fn;
	} routes[] = {
		{"GET", "/healthz", h_healthz},
		{"GET", "/metrics", h_metrics},
		{"GET", "/sbv1/openapi.json", h_openapi},
		{"POST", "/sbv1/acquire", h_acquire},
		{"GET", "/sbv1/sandboxes", h_list},
		{"GET", "/sbv1/sandboxes/{id}", h_sandbox},
		{"GET", "/sbv1/sandboxes/{id}/events", h_events},
		{"GET", "/sbv1/sandboxes/{id}/thumbnail", h_thumbnail},
		{"POST", "/sbv1/sandboxes/{id}/release", h_release},
		{"POST", "/sbv1/sandboxes/{id}/keepalive", h_keepalive},
		{"POST", "/sbv1/sandboxes/{id}/hibernate", h_hibernate},
		{"POST", "/sbv1/sandboxes/{id}/wake", h_wake},
		{"POST", "/sbv1/sandboxes/{id}/fork", h_fork},
		{"GET", "/sbv1/sandboxes/{id}/shares", h_shares},
		{"POST", "/sbv1/sandboxes/{id}/shares", h_shares},
		{"GET", "/sbv1/sandboxes/{id}/shares/{share}", h_shares},
		{"DELETE", "/sbv1/sandboxes/{id}/shares/{share}", h_shares},
		{"GET", "/sbv1/sandboxes/{id}/recordings", h_rec_list},
		{"POST", "/sbv1/sandboxes/{id}/recordings", h_rec_start},
		{"GET", "/sbv1/sandboxes/{id}/recordings/{rec}", h_rec_get},
		{"POST", "/sbv1/sandboxes/{id}/recordings/{rec}/stop", h_rec_stop},
		{"GET", "/sbv1/sandboxes/{id}/trace", h_trace},
		{"POST", "/sbv1/nodes/heartbeat", h_heartbeat},
		{"GET", "/sbv1/nodes", h_nodes},
		{"GET", "/sbv1/templates", h_templates},
		{"GET", "/sbv1/keys", h_keys},
		{"POST", "/sbv1/keys", h_key_create},
		{"DELETE", "/sbv1/keys/{id}", h_key},
		{"GET", "/sbv1/routes", h_routes},
		{"POST", "/sbv1/routes/activity", h_activity},
		{"GET", "/sbv1/routes/{id}", h_route},
		{"POST", "/sbv1/routes/{id}/wake", h_route_wake},
	};

	if (pt_web_routes(p, e) == -1)
		return -1;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (hsrv_route(p->srv, routes[i].method, routes[i].path, routes[i].fn, p, e) == -1)
			return -1;
	return 0;
}
