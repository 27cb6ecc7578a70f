/* Unit tests for node-agent/na_api: the node API's routes, each request
 * sent over HTTP to the real router and handlers, with the node itself
 * replaced by test doubles (below) that record what they are asked.  Each
 * case names the status, a piece of the body and the node calls it must
 * cause: the credential check, 404 and 405, path parameters, the checks a
 * handler makes before the node is asked, jobs and their error answers. */
#include "node-agent/na_api.h"
#include "node-agent/na_ckpt.h"
#include "node-agent/na_egress.h"
#include "node-agent/na_l2.h"
#include "node-agent/na_rec.h"
#include "node-agent/na_sandbox.h"
#include "node-agent/na_thumb.h"
#include "tests/unit/node/suites.h"

#include "common/http_client.h"
#include "common/http_server.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the node's doubles --------------------------------------------------
 *
 * Ids choose the outcome: "sb-fail*" fails with 502, "sb-busy*" 409,
 * "sb-full*" 503, "sb-gone*" 410, "sb-none*" 404; a run of "sb-late*" 504. */

static char stub_calls[8192];
static pthread_mutex_t stub_mu = PTHREAD_MUTEX_INITIALIZER;

static void stub_reset(void)
{
	pthread_mutex_lock(&stub_mu);
	stub_calls[0] = '\0';
	pthread_mutex_unlock(&stub_mu);
}

__attribute__((format(printf, 1, 2))) static void rec(const char *fmt, ...)
{
	va_list ap;
	size_t at;

	pthread_mutex_lock(&stub_mu);
	at = strlen(stub_calls);
	va_start(ap, fmt);
	vsnprintf(stub_calls + at, sizeof(stub_calls) - at, fmt, ap);
	va_end(ap);
	at = strlen(stub_calls);
	if (at + 2 < sizeof(stub_calls)) {
		stub_calls[at] = ';';
		stub_calls[at + 1] = '\0';
	}
	pthread_mutex_unlock(&stub_mu);
}

/* The outcome the id asks for (above): 0, or -1 with e set. */
static int outcome(const char *what, const char *id, struct err *e)
{
	if (strncmp(id, "sb-fail", 7) == 0)
		return err_http(e, 502, "%s %s: the node's peer failed", what, id);
	if (strncmp(id, "sb-busy", 7) == 0)
		return err_http(e, 409, "%s %s: busy", what, id);
	if (strncmp(id, "sb-full", 7) == 0)
		return err_http(e, 503, "%s %s: this node holds its maximum", what, id);
	if (strncmp(id, "sb-gone", 7) == 0)
		return err_http(e, 410, "%s %s: gone", what, id);
	if (strncmp(id, "sb-none", 7) == 0)
		return err_http(e, 404, "no sandbox `%s`", id);
	return 0;
}

int na_node_create_begin(struct na_node *n, const json_t *req, char *id_out, bool *claimed,
			 struct err *e)
{
	const char *id = json_string_value(json_object_get(req, "id"));

	(void)n;
	rec("create_begin(%s)", id ? id : "");
	if (outcome("create", id ? id : "", e))
		return -1;
	snprintf(id_out, 32, "%s", id ? id : "sb-new");
	*claimed = json_is_true(json_object_get(req, "warm"));
	return 0;
}

int na_node_claim(struct na_node *n, const char *id, const json_t *body, struct err *e)
{
	(void)n;
	rec("claim(%s,%d)", id, (int)json_object_size(body));
	return outcome("claim", id, e);
}

void na_node_create_cancel(struct na_node *n, const char *id)
{
	(void)n;
	rec("create_cancel(%s)", id);
}

int na_node_create_run(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	rec("create_run(%s)", id);
	if (strncmp(id, "sb-late", 7) == 0)
		return err_http(e, 504, "create %s: timed out", id);
	return 0;
}

int na_node_destroy(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	rec("destroy(%s)", id);
	return outcome("destroy", id, e);
}

int na_node_egress_begin(struct na_node *n, const char *id, const json_t *policy,
			 struct na_egress_policy *out, struct err *e)
{
	(void)n;
	(void)policy;
	memset(out, 0, sizeof(*out));
	rec("egress_begin(%s)", id);
	return outcome("egress", id, e);
}

int na_node_egress_run(struct na_node *n, const char *id, const struct na_egress_policy *pol,
		       struct err *e)
{
	(void)n;
	(void)pol;
	(void)e;
	rec("egress_run(%s)", id);
	return 0;
}

void na_node_egress_cancel(struct na_node *n, const char *id)
{
	(void)n;
	rec("egress_cancel(%s)", id);
}

int na_node_import_template(struct na_node *n, const char *file, char *name_out, size_t len,
			    struct err *e)
{
	(void)n;
	rec("import(%s)", file);
	if (strstr(file, "bad"))
		return err_http(e, 400, "`%s` is not a send stream", file);
	snprintf(name_out, len, "tpl@%s", "0123abcd");
	return 0;
}

json_t *na_node_get_json(struct na_node *n, const char *id)
{
	(void)n;
	rec("get(%s)", id);
	if (strncmp(id, "sb-", 3) != 0 || strncmp(id, "sb-none", 7) == 0)
		return NULL;
	return json_pack("{s:s, s:s}", "id", id, "state", "ready");
}

json_t *na_node_list_json(struct na_node *n)
{
	(void)n;
	rec("list");
	return json_pack("{s:[]}", "sandboxes");
}

json_t *na_node_capacity_json(struct na_node *n)
{
	(void)n;
	rec("capacity");
	return json_pack("{s:i}", "free_slots", 3);
}

json_t *na_node_templates_json(struct na_node *n)
{
	(void)n;
	rec("templates");
	return json_pack("{s:[]}", "templates");
}

int na_node_hibernate_begin(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	rec("hibernate_begin(%s)", id);
	return outcome("hibernate", id, e);
}

int na_node_wake_begin(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	rec("wake_begin(%s)", id);
	return outcome("wake", id, e);
}

int na_node_fork_begin(struct na_node *n, const char *id, const json_t *body, struct err *e)
{
	(void)n;
	rec("fork_begin(%s,%d)", id, (int)json_object_size(body));
	return outcome("fork", id, e);
}

void na_node_ckpt_cancel(struct na_node *n, const char *id)
{
	(void)n;
	rec("ckpt_cancel(%s)", id);
}

static json_t *run(const char *what, const char *id, struct err *e)
{
	rec("%s_run(%s)", what, id);
	if (strncmp(id, "sb-late", 7) == 0)
		return err_http(e, 504, "%s %s: timed out", what, id), NULL;
	return json_pack("{s:s, s:s}", "id", id, "done", what);
}

json_t *na_node_hibernate_run(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	return run("hibernate", id, e);
}

json_t *na_node_wake_run(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	return run("wake", id, e);
}

json_t *na_node_fork_run(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	return run("fork", id, e);
}

int na_node_offload_begin(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	rec("offload_begin(%s)", id);
	return outcome("offload", id, e);
}

json_t *na_node_offload_run(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	return run("offload", id, e);
}

int na_node_restore_begin(struct na_node *n, const char *id, const json_t *body, struct err *e)
{
	(void)n;
	rec("restore_begin(%s,%d)", id, (int)json_object_size(body));
	return outcome("restore", id, e);
}

void na_node_restore_cancel(struct na_node *n, const char *id)
{
	(void)n;
	rec("restore_cancel(%s)", id);
}

json_t *na_node_restore_run(struct na_node *n, const char *id, const json_t *body, struct err *e)
{
	(void)n;
	rec("restore_body(%d)", (int)json_object_size(body));
	return run("restore", id, e);
}

json_t *na_node_thumbnail(struct na_node *n, const char *id, int width, struct err *e)
{
	(void)n;
	rec("thumbnail(%s,%d)", id, width);
	if (outcome("thumbnail", id, e))
		return NULL;
	return json_pack("{s:i}", "width", width);
}

json_t *na_node_rec_start(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	rec("rec_start(%s)", id);
	if (outcome("rec_start", id, e))
		return NULL;
	return json_pack("{s:{s:s}}", "recording", "id", "rec-1");
}

json_t *na_node_rec_stop(struct na_node *n, const char *id, const char *r, const char *reason,
			 struct err *e)
{
	(void)n;
	rec("rec_stop(%s,%s,%s)", id, r, reason);
	if (outcome("rec_stop", id, e))
		return NULL;
	return json_pack("{s:{s:s}}", "recording", "id", r);
}

json_t *na_node_rec_list(struct na_node *n, const char *id, struct err *e)
{
	(void)n;
	rec("rec_list(%s)", id);
	if (outcome("rec_list", id, e))
		return NULL;
	return json_pack("{s:[]}", "recordings");
}

int na_node_rec_read(struct na_node *n, const char *id, const char *r, size_t max, char **out,
		     size_t *len, struct err *e)
{
	(void)n;
	rec("rec_read(%s,%s,%zu)", id, r ? r : "(trace)", max);
	if (outcome("rec_read", id, e))
		return -1;
	*out = strdup(r ? "MP4" : "{\"t\":1}\n");
	*len = strlen(*out);
	return 0;
}

long long na_node_l2_delete(struct na_node *n, const char *id, const char *prefix, struct err *e)
{
	(void)n;
	rec("l2_delete(%s,%s)", id, prefix);
	if (outcome("l2_delete", id, e))
		return -1;
	return 3;
}

/* --- the API over HTTP ------------------------------------------------- */

#define CRED "0123456789abcdef-credential"

static struct {
	struct hsrv *srv;
	struct na_api *api;
	pthread_t loop;
	int port;
	int node; /* stands for the node: only its address is passed on */
} fx;

static void *loop(void *arg)
{
	hsrv_run(arg);
	return NULL;
}

static void stop_loop(void *ud)
{
	hsrv_stop(ud);
}

static void setup(void)
{
	struct err e = ERR_INIT;

	memset(&fx, 0, sizeof(fx));
	fx.srv = hsrv_new(&(struct hsrv_opts){.listen = "127.0.0.1", .port = 0, .max_body = 1 << 16},
			  &e);
	ck_assert_msg(fx.srv, "%s", e.msg);
	fx.port = hsrv_port(fx.srv);
	fx.api = na_api_new(fx.srv, (struct na_node *)&fx.node, CRED, strlen(CRED), &e);
	ck_assert_msg(fx.api, "%s", e.msg);
	ck_assert_int_eq(pthread_create(&fx.loop, NULL, loop, fx.srv), 0);
}

static void teardown(void)
{
	hsrv_post(fx.srv, stop_loop, fx.srv);
	pthread_join(fx.loop, NULL);
	ck_assert_int_eq(na_api_wait(fx.api, 5000), 0);
	na_api_free(fx.api);
	hsrv_free(fx.srv);
}

enum { NONE, GOOD, BAD }; /* the credential sent */

static const struct {
	const char *method, *path, *body;
	int auth;
	long status;
	const char *needle; /* in the body */
	const char *calls;  /* the node calls, in order */
} cases[] = {
	{"GET", "/healthz", NULL, NONE, 200, "\"status\":\"ok\"", ""},
	/* the credential, before anything else a route does */
	{"GET", "/v1/sandboxes", NULL, NONE, 401, "\"code\":\"unauthorized\"", ""},
	{"GET", "/v1/sandboxes", NULL, BAD, 401, "\"code\":\"unauthorized\"", ""},
	{"DELETE", "/v1/sandboxes/sb-1", NULL, BAD, 401, "unauthorized", ""},
	{"POST", "/v1/sandboxes/sb-1/hibernate", "{}", NONE, 401, "unauthorized", ""},
	{"GET", "/v1/sandboxes/sb-1/trace", NULL, BAD, 401, "unauthorized", ""},
	{"GET", "/v1/sandboxes", NULL, GOOD, 200, "\"sandboxes\":[]", "list;"},
	/* the router's answers */
	{"PATCH", "/v1/sandboxes", "{}", GOOD, 405, "method_not_allowed", ""},
	{"GET", "/v1/sandboxes/sb-1/claim", NULL, GOOD, 405, "method_not_allowed", ""},
	{"GET", "/v1/nothing", NULL, GOOD, 404, "\"code\":\"not_found\"", ""},
	{"GET", "/v1/sandboxes/sb-1/", NULL, GOOD, 404, "not_found", ""},
	{"GET", "/v1/sandboxes/sb-1/recordings/rec-1/x", NULL, GOOD, 404, "not_found", ""},
	/* create: a warm member at once, a new one through a job */
	{"POST", "/v1/sandboxes", "{}", GOOD, 201, "\"id\":\"sb-new\"",
	 "create_begin();create_run(sb-new);get(sb-new);"},
	{"POST", "/v1/sandboxes", "{\"id\":\"sb-w1\",\"warm\":true}", GOOD, 201, "\"id\":\"sb-w1\"",
	 "create_begin(sb-w1);get(sb-w1);"},
	{"POST", "/v1/sandboxes", "{\"id\":\"sb-full\"}", GOOD, 503, "\"code\":\"unavailable\"",
	 "create_begin(sb-full);"},
	{"POST", "/v1/sandboxes", "{\"id\":\"sb-late1\"}", GOOD, 504, "\"code\":\"timeout\"",
	 "create_begin(sb-late1);create_run(sb-late1);"},
	{"POST", "/v1/sandboxes", "{bad", GOOD, 400, "\"code\":\"bad_request\"", ""},
	/* one sandbox; %XX is decoded before routing */
	{"GET", "/v1/sandboxes/sb-1", NULL, GOOD, 200, "\"id\":\"sb-1\"", "get(sb-1);"},
	{"GET", "/v1/sandboxes/sb%2D1", NULL, GOOD, 200, "\"id\":\"sb-1\"", "get(sb-1);"},
	{"GET", "/v1/sandboxes/sb-none", NULL, GOOD, 404, "no sandbox `sb-none`", "get(sb-none);"},
	{"DELETE", "/v1/sandboxes/sb-1", NULL, GOOD, 200, "\"state\":\"destroyed\"", "destroy(sb-1);"},
	{"DELETE", "/v1/sandboxes/sb-fail", NULL, GOOD, 502, "\"code\":\"bad_gateway\"",
	 "destroy(sb-fail);"},
	{"DELETE", "/v1/sandboxes/NOPE", NULL, GOOD, 404, "no such sandbox", ""},
	/* egress */
	{"PUT", "/v1/sandboxes/sb-1/egress", "{\"allow\":[]}", GOOD, 200, "\"id\":\"sb-1\"",
	 "egress_begin(sb-1);egress_run(sb-1);get(sb-1);"},
	{"PUT", "/v1/sandboxes/sb-busy/egress", "{}", GOOD, 409, "\"code\":\"conflict\"",
	 "egress_begin(sb-busy);"},
	{"PUT", "/v1/sandboxes/BAD/egress", "{}", GOOD, 404, "no sandbox `BAD`", ""},
	{"PUT", "/v1/sandboxes/sb-1/egress", "{bad", GOOD, 400, "bad_request", ""},
	/* actions */
	{"POST", "/v1/sandboxes/sb-1/claim", "", GOOD, 201, "\"id\":\"sb-1\"",
	 "claim(sb-1,0);get(sb-1);"},
	{"POST", "/v1/sandboxes/sb-1/claim", "{bad", GOOD, 400, "bad_request", ""},
	{"POST", "/v1/sandboxes/sb-1/hibernate", "{}", GOOD, 200, "\"done\":\"hibernate\"",
	 "hibernate_begin(sb-1);hibernate_run(sb-1);"},
	{"POST", "/v1/sandboxes/sb-1/wake", "", GOOD, 200, "\"done\":\"wake\"",
	 "wake_begin(sb-1);wake_run(sb-1);"},
	{"POST", "/v1/sandboxes/sb-1/fork", "{\"n\":1}", GOOD, 200, "\"done\":\"fork\"",
	 "fork_begin(sb-1,1);fork_run(sb-1);"},
	{"POST", "/v1/sandboxes/sb-late/hibernate", "{}", GOOD, 504,
	 "\"sandbox\":{\"id\":\"sb-late\"", "hibernate_begin(sb-late);hibernate_run(sb-late);get(sb-late);"},
	{"POST", "/v1/sandboxes/sb-busy/wake", "{}", GOOD, 409, "conflict", "wake_begin(sb-busy);"},
	{"POST", "/v1/sandboxes/BAD/hibernate", "{}", GOOD, 404, "no sandbox `BAD`", ""},
	{"POST", "/v1/sandboxes/sb-1/offload", "{}", GOOD, 200, "\"done\":\"offload\"",
	 "offload_begin(sb-1);offload_run(sb-1);"},
	{"POST", "/v1/sandboxes/sb-1/restore", "{\"a\":1,\"b\":2}", GOOD, 200, "\"done\":\"restore\"",
	 "restore_begin(sb-1,2);restore_body(2);restore_run(sb-1);"},
	{"POST", "/v1/sandboxes/sb-1/bogus", "{}", GOOD, 404, "no such resource", ""},
	{"POST",
	 "/v1/sandboxes/sb-0123456789012345678901234567890123456789012345678901234567890123/claim",
	 "{}", GOOD, 404, "no such resource", ""},
	/* thumbnails */
	{"GET", "/v1/sandboxes/sb-1/thumbnail", NULL, GOOD, 200, "\"width\":320", "thumbnail(sb-1,320);"},
	{"GET", "/v1/sandboxes/sb-1/thumbnail?width=640", NULL, GOOD, 200, "\"width\":640",
	 "thumbnail(sb-1,640);"},
	{"GET", "/v1/sandboxes/sb-1/thumbnail?width=abc", NULL, GOOD, 400, "number of pixels", ""},
	{"GET", "/v1/sandboxes/sb-0123456789012345678901234567890123456789/thumbnail", NULL, GOOD,
	 404, "no such resource", ""},
	/* recordings and the trace */
	{"GET", "/v1/sandboxes/sb-1/recordings", NULL, GOOD, 200, "\"recordings\":[]", "rec_list(sb-1);"},
	{"GET", "/v1/sandboxes/sb-gone/recordings", NULL, GOOD, 410, "\"code\":\"gone\"",
	 "rec_list(sb-gone);"},
	{"GET", "/v1/sandboxes/sb-1/recordings/rec-1", NULL, GOOD, 200, "MP4",
	 "rec_read(sb-1,rec-1,536870912);"},
	{"GET", "/v1/sandboxes/sb-1/recordings/rec-012345678901234567890123456789012345678901234567",
	 NULL, GOOD, 404, "no such path", ""},
	{"GET", "/v1/sandboxes/sb-1/trace", NULL, GOOD, 200, "{\"t\":1}",
	 "rec_read(sb-1,(trace),536870912);"},
	{"POST", "/v1/sandboxes/sb-1/recordings", "", GOOD, 201, "\"id\":\"rec-1\"", "rec_start(sb-1);"},
	{"POST", "/v1/sandboxes/sb-1/recordings", "{bad", GOOD, 400, "bad_request", ""},
	{"POST", "/v1/sandboxes/BAD/recordings", "{}", GOOD, 404, "no such sandbox", ""},
	{"POST", "/v1/sandboxes/sb-1/recordings/rec-1/stop", "{}", GOOD, 200, "\"id\":\"rec-1\"",
	 "rec_stop(sb-1,rec-1,api);"},
	{"POST",
	 "/v1/sandboxes/sb-1/recordings/rec-012345678901234567890123456789012345678901234567/stop",
	 "{}", GOOD, 404, "no such resource", ""},
	/* checkpoints in S3, capacity, templates */
	{"DELETE", "/v1/checkpoints/sb-1?prefix=cloche%2Fsandboxes%2Fsb-1%2F", NULL, GOOD, 200,
	 "\"deleted\":3", "l2_delete(sb-1,cloche/sandboxes/sb-1/);"},
	{"DELETE", "/v1/checkpoints/sb-1", NULL, GOOD, 400, "give DELETE /v1/checkpoints", ""},
	{"GET", "/v1/capacity", NULL, GOOD, 200, "\"free_slots\":3", "capacity;"},
	{"GET", "/v1/templates", NULL, GOOD, 200, "\"templates\":[]", "templates;"},
	{"POST", "/v1/templates", "{\"import\":\"/tmp/x.stream\"}", GOOD, 201,
	 "\"template\":\"tpl@0123abcd\"", "import(/tmp/x.stream);"},
	{"POST", "/v1/templates", "{\"file\":1}", GOOD, 400, "the body must be", ""},
	{"POST", "/v1/templates", "{\"import\":\"/tmp/bad.stream\"}", GOOD, 400, "not a send stream",
	 "import(/tmp/bad.stream);"},
};

START_TEST(routes)
{
	char url[512], auth[128];
	const char *hdrs[] = {auth, "Content-Type: application/json", NULL};
	struct http_resp r = {0};
	struct err e = ERR_INIT;
	const char *body = cases[_i].body;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", fx.port, cases[_i].path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s%s", CRED,
		 cases[_i].auth == BAD ? "x" : "");
	stub_reset();
	ck_assert_msg(http_request(&(struct http_req){.method = cases[_i].method, .url = url,
						     .headers = cases[_i].auth ? hdrs : hdrs + 1,
						     .body = body, .body_len = body ? strlen(body) : 0,
						     .timeout_ms = 5000},
				   &r, &e) == 0,
		      "%s", e.msg);
	ck_assert_msg(r.status == cases[_i].status, "%s %s: %ld %s", cases[_i].method,
		      cases[_i].path, r.status, r.body.data);
	ck_assert_msg(r.body.data && strstr(r.body.data, cases[_i].needle), "%s %s: %s",
		      cases[_i].method, cases[_i].path, r.body.data);
	pthread_mutex_lock(&stub_mu);
	ck_assert_msg(strcmp(stub_calls, cases[_i].calls) == 0, "%s %s: calls %s", cases[_i].method,
		      cases[_i].path, stub_calls);
	pthread_mutex_unlock(&stub_mu);
	http_resp_free(&r);
}
END_TEST

Suite *suite_node_api(void)
{
	Suite *s = suite_create("node_api");
	TCase *tc = tcase_create("routes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, routes, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	suite_add_tcase(s, tc);
	return s;
}
