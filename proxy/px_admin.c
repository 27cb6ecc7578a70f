/* The operator's endpoints on the admin listener (loopback by default):
 *
 *	GET  /healthz                        200 while serving (and the version)
 *	GET  /metrics                        Prometheus text
 *	GET  /v1/sandboxes[/{id}]            what the proxy knows and counts per sandbox
 *	POST /v1/sandboxes/{id}/drain?hold_ms=N   cut its connections (ours first,
 *	                                     by reset) and refuse new ones for N ms
 *	POST /v1/sandboxes/{id}/resume       take new connections again
 *
 * Everything but /healthz and /metrics wants the node credential as a
 * bearer token.  The node agent drains a sandbox before it checkpoints it:
 * the answer is the sandbox's entry (its counters) as it was. */
#include "proxy/px_admin.h"
#include "proxy/px_answer.h"
#include "proxy/px_worker.h"

#include "common/secret.h"
#include "common/util.h"
#include "common/version.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reply(struct buf *out, int status, json_t *j)
{
	struct err e = ERR_INIT;
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct px_answer a = {.status = status, .body = s ? s : "{}", .type = "application/json"};

	json_decref(j);
	if (s) {
		size_t n = strlen(s);

		s = realloc(s, n + 2);
		if (s) {
			s[n] = '\n';
			s[n + 1] = '\0';
			a.body = s;
		}
	}
	(void)px_answer_build(&a, out, &e);
	free(s);
}

static void fail(struct buf *out, int status, const char *code, const char *msg)
{
	struct err e = ERR_INIT;
	struct px_answer a = {.status = status, .code = code, .message = msg};

	(void)px_answer_build(&a, out, &e);
}

static json_t *rt_json(struct px_rt *rt, uint64_t now)
{
	static const char *const kinds[] = {"pending", "local", "tcp", "remote", "waiting", "gone",
					    "failed"};
	uint64_t seen = atomic_load(&rt->last_seen_ms), drain = atomic_load(&rt->drain_until_ms);

	return json_pack("{s:s, s:s, s:i, s:I, s:I, s:I, s:o, s:I}", "id", rt->id, "route",
			 kinds[rt->kind], "connections", atomic_load(&rt->conns), "requests",
			 (json_int_t)atomic_load(&rt->requests), "bytes_in",
			 (json_int_t)atomic_load(&rt->bytes_in), "bytes_out",
			 (json_int_t)atomic_load(&rt->bytes_out), "idle_ms",
			 seen ? json_integer((json_int_t)(now - seen)) : json_null(),
			 "draining_ms", (json_int_t)(drain > now ? drain - now : 0));
}

struct drain_ctx {
	const char *id;
	bool drain;
	uint64_t now, until;
	json_t *answer; /* the first match's counters */
};

static void drain_apply(struct px_rt *rt, const struct drain_ctx *d)
{
	atomic_store(&rt->drain_until_ms, d->until);
	if (d->drain)
		atomic_fetch_add(&rt->drain_gen, 1);
}

/* px_routes_each: the entries of sandbox d->id, by the portal's id or by
 * the node agent's.  Not only while the route says the sandbox is here:
 * the resume after a wake can come while the entry still waits for the
 * portal to say it is ready again, and a resume that missed it would hold
 * its requests until the drain ran out (seen: a noVNC reconnect 504ed). */
static void drain_one(struct px_rt *rt, void *ud)
{
	struct drain_ctx *d = ud;

	if (strcmp(rt->id, d->id) != 0 && !(rt->kind != PX_RT_REMOTE && rt->kind != PX_RT_TCP &&
					    strcmp(rt->sid, d->id) == 0))
		return;
	drain_apply(rt, d);
	if (!d->answer)
		d->answer = rt_json(rt, d->now);
}

struct list_ctx {
	json_t *arr;
	const char *id;
	uint64_t now;
};

static void list_one(struct px_rt *rt, void *ud)
{
	struct list_ctx *l = ud;

	if (!l->id || strcmp(l->id, rt->id) == 0)
		json_array_append_new(l->arr, rt_json(rt, l->now));
}

static void metrics(struct px_proxy *p, struct buf *out)
{
	struct err e = ERR_INIT;
	struct buf m = BUF_INIT(1 << 20);
	struct px_stats *s = &p->st;
	struct px_answer a = {.status = 200, .type = "text/plain; version=0.0.4"};

#define C(name, help, v)                                                                           \
	buf_appendf(&m, &e, "# HELP cloche_proxy_" name " " help "\n# TYPE cloche_proxy_" name        \
			    " counter\ncloche_proxy_" name " %llu\n",                                 \
		    (unsigned long long)(v))
	C("connections_total", "Client connections accepted.", atomic_load(&s->accepted));
	C("requests_total", "Request heads read.", atomic_load(&s->requests));
	C("bytes_in_total", "Bytes sent into sandboxes (bodies and tunnels).",
	  atomic_load(&s->bytes_in));
	C("bytes_out_total", "Bytes sent back to clients (bodies and tunnels).",
	  atomic_load(&s->bytes_out));
	C("upstream_connects_total", "New connections into sandboxes.",
	  atomic_load(&s->upstream_connects));
	C("upstream_reused_total", "Requests sent on a kept connection.",
	  atomic_load(&s->upstream_reused));
	C("tunnels_total", "Upgrades (WebSocket) turned into tunnels.", atomic_load(&s->tunnels));
	C("refused_limit_total", "Connections refused by a connection limit.",
	  atomic_load(&s->refused_limit));
	C("timeouts_total", "Connections ended by a timeout.", atomic_load(&s->timeouts));
	C("bad_requests_total", "Malformed request heads.", atomic_load(&s->bad_requests));
	C("share_cut_total", "Connections on a share link cut when it expired or was revoked.",
	  atomic_load(&s->share_cut));
#undef C
	buf_appends(&m, "# HELP cloche_proxy_responses_total Responses by status class.\n"
			"# TYPE cloche_proxy_responses_total counter\n", &e);
	for (int i = 1; i <= 5; i++)
		buf_appendf(&m, &e, "cloche_proxy_responses_total{class=\"%dxx\"} %llu\n", i,
			    (unsigned long long)atomic_load(&s->status[i]));
	buf_appendf(&m, &e,
		    "# HELP cloche_proxy_connections Client connections open.\n"
		    "# TYPE cloche_proxy_connections gauge\ncloche_proxy_connections %d\n"
		    "# HELP cloche_proxy_tunnels Tunnels open.\n"
		    "# TYPE cloche_proxy_tunnels gauge\ncloche_proxy_tunnels %d\n",
		    atomic_load(&s->conns), atomic_load(&s->tunnels_open));
	a.body = buf_str(&m);
	(void)px_answer_build(&a, out, &e);
	buf_free(&m);
}

static long long query_int(struct px_span target, const char *name, long long def)
{
	char key[40];
	const char *q = memchr(target.p, '?', target.n), *hit;
	size_t kl = (size_t)snprintf(key, sizeof(key), "%s=", name);

	if (!q)
		return def;
	for (hit = q + 1; hit < target.p + target.n; hit++)
		if ((hit[-1] == '?' || hit[-1] == '&') && (size_t)(target.p + target.n - hit) > kl &&
		    strncmp(hit, key, kl) == 0)
			return strtoll(hit + kl, NULL, 10);
	return def;
}

void px_admin_answer(struct px_proxy *p, const struct px_head *h, struct buf *out)
{
	char path[256], id[48], action[32] = "";
	const struct px_header *auth = px_head_get(h, "authorization");
	const char *qm = memchr(h->target.p, '?', h->target.n);
	size_t plen = qm ? (size_t)(qm - h->target.p) : h->target.n;
	uint64_t now = util_now_ms();
	bool get = px_span_ieq(h->method, "GET"), post = px_span_ieq(h->method, "POST");

	if (plen >= sizeof(path)) {
		fail(out, 404, "not_found", "no such endpoint");
		return;
	}
	memcpy(path, h->target.p, plen);
	path[plen] = '\0';
	if (strcmp(path, "/healthz") == 0 && get) {
		reply(out, 200, json_pack("{s:b, s:b, s:s}", "ok", 1, "stopping",
					  atomic_load(&p->stopping), "version", version_string()));
		return;
	}
	if (strcmp(path, "/metrics") == 0 && get) {
		metrics(p, out);
		return;
	}
	{
		char want[600];
		size_t wl = (size_t)snprintf(want, sizeof(want), "Bearer %s",
					     p->s.credential ? p->s.credential : "");

		if (!p->s.credential || !auth ||
		    !secret_equal(auth->value.p, auth->value.n, want, wl)) {
			fail(out, 401, "credential_required",
			     "the admin endpoints want the node credential as a bearer token");
			return;
		}
	}
	if (strncmp(path, "/v1/sandboxes", 13) != 0 || (path[13] && path[13] != '/')) {
		fail(out, 404, "not_found", "no such endpoint");
		return;
	}
	if (!path[13] || !path[14]) {
		struct list_ctx l = {json_array(), NULL, now};

		if (!get) {
			fail(out, 405, "method_not_allowed", "GET only");
			json_decref(l.arr);
			return;
		}
		px_routes_each(p->routes, list_one, &l);
		reply(out, 200, json_pack("{s:o}", "sandboxes", l.arr));
		return;
	}
	if (sscanf(path + 14, "%47[a-z0-9-]/%31s", id, action) < 1 ||
	    strlen(path + 14) != strlen(id) + (action[0] ? strlen(action) + 1 : 0)) {
		fail(out, 404, "not_found", "no such endpoint");
		return;
	}
	if (!action[0] && get) {
		struct list_ctx l = {json_array(), id, now};
		json_t *one;

		px_routes_each(p->routes, list_one, &l);
		one = json_array_get(l.arr, 0);
		if (one)
			reply(out, 200, json_incref(one));
		else
			fail(out, 404, "unknown_sandbox", "this proxy has not seen that sandbox");
		json_decref(l.arr);
		return;
	}
	if ((strcmp(action, "drain") == 0 || strcmp(action, "resume") == 0) && post) {
		long long hold = query_int(h->target, "hold_ms", 30000);
		struct drain_ctx d = {id, action[0] == 'd', now, 0, NULL};

		if (hold < 0 || hold > 24LL * 3600 * 1000)
			hold = 30000;
		d.until = d.drain ? now + (uint64_t)hold : 0;
		/* The node agent names a sandbox by its own id, which is not the
		 * portal's when a warm member was claimed: both match. */
		px_routes_each(p->routes, drain_one, &d);
		if (!d.answer) {
			struct px_rt *rt = px_routes_get(p->routes, id);

			if (!rt) {
				fail(out, 503, "no_memory", "out of memory");
				return;
			}
			drain_apply(rt, &d);
			d.answer = rt_json(rt, now);
			px_rt_put(p->routes, rt);
		}
		/* A drain cuts connections; a resume lets held requests go on. */
		for (int i = 0; i < p->nworkers; i++)
			px_worker_poke(p->w[i]);
		reply(out, 200, d.answer);
		return;
	}
	fail(out, action[0] ? 404 : 405, action[0] ? "not_found" : "method_not_allowed",
	     "no such endpoint");
}
