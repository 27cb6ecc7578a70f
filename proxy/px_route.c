/* The route table and its resolver thread; see px_route.h. */
#include "proxy/px_route.h"

#include "common/http_client.h"
#include "common/buf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RESOLVE_BATCH 32
#define WAIT_RECHECK_MS 300   /* a held request's sandbox is asked again this often */
#define FAIL_TTL_MS 1000      /* a failed answer is retried after this */
#define CHANGES_MS 500        /* the change feed is read this often */
#define EVICT_MS (10 * 60 * 1000)
#define PORTAL_TIMEOUT_MS 5000

struct px_routes {
	struct px_route_cfg cfg;
	char *statics;          /* our copy of cfg.static_routes */
	char auth[600];         /* "Authorization: Bearer ..." */
	void (*wake)(void *ud);
	void *wake_ud;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct px_rt *head;
	bool stop, started;
	pthread_t th;
	long long seq;          /* of the change feed; -1 until the first read */
};

/* "id=host:port,..." -> the address of id, into addr. */
static bool static_addr(const struct px_routes *r, const char *id, char *addr, size_t len)
{
	const char *s = r->statics;
	size_t n = strlen(id);

	while (s && *s) {
		const char *end = strchr(s, ',');
		size_t l = end ? (size_t)(end - s) : strlen(s);

		if (l > n && strncmp(s, id, n) == 0 && s[n] == '=') {
			snprintf(addr, len, "%.*s", (int)(l - n - 1), s + n + 1);
			return true;
		}
		s = end ? end + 1 : NULL;
	}
	return false;
}

struct px_routes *px_routes_new(const struct px_route_cfg *cfg, void (*wake)(void *ud),
				void *ud, struct err *e)
{
	struct px_routes *r = calloc(1, sizeof(*r));

	if (!r) {
		err_set(e, ENOMEM, "route table");
		return NULL;
	}
	r->cfg = *cfg;
	r->wake = wake;
	r->wake_ud = ud;
	r->seq = -1;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (cfg->static_routes && *cfg->static_routes) {
		r->statics = strdup(cfg->static_routes);
		for (const char *s = r->statics; s && *s;) {
			const char *end = strchr(s, ','), *eq = strchr(s, '='), *colon;
			size_t len = end ? (size_t)(end - s) : strlen(s);

			colon = memrchr(s, ':', len);
			if (!eq || (end && eq > end) || eq == s || !colon || colon < eq) {
				err_set(e, 0, "static route `%.*s` is not id=host:port",
					end ? (int)(end - s) : (int)strlen(s), s);
				px_routes_free(r);
				return NULL;
			}
			s = end ? end + 1 : NULL;
		}
	}
	if (cfg->credential)
		snprintf(r->auth, sizeof(r->auth), "Authorization: Bearer %s", cfg->credential);
	return r;
}

static bool have_portal(const struct px_routes *r)
{
	return r->cfg.portal && *r->cfg.portal;
}

/* Under mu: queues rt for the resolver unless it is already. */
static void want(struct px_routes *r, struct px_rt *rt)
{
	if (!rt->queued) {
		rt->queued = true;
		pthread_cond_signal(&r->cv);
	}
}

struct px_rt *px_routes_get(struct px_routes *r, const char *id)
{
	struct px_rt *rt;
	uint64_t now = util_now_ms();

	pthread_mutex_lock(&r->mu);
	for (rt = r->head; rt; rt = rt->next)
		if (strcmp(rt->id, id) == 0)
			break;
	if (!rt) {
		rt = calloc(1, sizeof(*rt));
		if (!rt) {
			pthread_mutex_unlock(&r->mu);
			return NULL;
		}
		snprintf(rt->id, sizeof(rt->id), "%s", id);
		rt->kind = PX_RT_PENDING;
		rt->linked = true;
		rt->next = r->head;
		r->head = rt;
		if (static_addr(r, id, rt->addr, sizeof(rt->addr))) {
			rt->kind = PX_RT_TCP;
			rt->checked_ms = UINT64_MAX / 2;
		}
	}
	rt->refs++;
	switch (rt->kind) {
	case PX_RT_PENDING:
		want(r, rt);
		break;
	case PX_RT_WAIT:
		rt->wanted_ms = now;
		if (now - rt->checked_ms >= WAIT_RECHECK_MS)
			want(r, rt);
		break;
	case PX_RT_FAIL:
		if (now - rt->checked_ms >= FAIL_TTL_MS)
			want(r, rt);
		break;
	case PX_RT_TCP:
		break;
	default:
		if (now - rt->checked_ms >= (uint64_t)r->cfg.ttl_ms)
			want(r, rt);
	}
	pthread_mutex_unlock(&r->mu);
	return rt;
}

static void rt_free(struct px_rt *rt)
{
	free(rt->revoked);
	free(rt);
}

void px_rt_put(struct px_routes *r, struct px_rt *rt)
{
	bool gone;

	if (!rt)
		return;
	pthread_mutex_lock(&r->mu);
	gone = --rt->refs == 0 && !rt->linked;
	pthread_mutex_unlock(&r->mu);
	if (gone)
		rt_free(rt);
}

void px_rt_ref(struct px_routes *r, struct px_rt *rt)
{
	pthread_mutex_lock(&r->mu);
	rt->refs++;
	pthread_mutex_unlock(&r->mu);
}

void px_rt_view(struct px_routes *r, struct px_rt *rt, struct px_rt_view *out)
{
	pthread_mutex_lock(&r->mu);
	out->kind = rt->kind;
	memcpy(out->addr, rt->addr, sizeof(out->addr));
	memcpy(out->sid, rt->sid, sizeof(out->sid));
	memcpy(out->state, rt->state, sizeof(out->state));
	memcpy(out->why, rt->why, sizeof(out->why));
	memcpy(out->vnc_secret, rt->vnc_secret, sizeof(out->vnc_secret));
	pthread_mutex_unlock(&r->mu);
}

bool px_rt_share_revoked(struct px_routes *r, struct px_rt *rt, const char *share)
{
	char key[48];
	bool revoked;

	snprintf(key, sizeof(key), ",%s,", share);
	pthread_mutex_lock(&r->mu);
	revoked = rt->revoked && strstr(rt->revoked, key);
	pthread_mutex_unlock(&r->mu);
	return revoked;
}

void px_rt_invalidate(struct px_routes *r, struct px_rt *rt)
{
	pthread_mutex_lock(&r->mu);
	if (rt->kind != PX_RT_TCP) {
		rt->kind = PX_RT_PENDING;
		atomic_fetch_add(&rt->gen, 1);
		want(r, rt);
	}
	pthread_mutex_unlock(&r->mu);
}

void px_routes_each(struct px_routes *r, void (*fn)(struct px_rt *rt, void *ud), void *ud)
{
	pthread_mutex_lock(&r->mu);
	for (struct px_rt *rt = r->head; rt; rt = rt->next)
		fn(rt, ud);
	pthread_mutex_unlock(&r->mu);
}

/* ---- asking the node agent ---- */

/* One request line to the node agent's socket, one answer line back
 * ("OK ..." or "ERR <status> <message>").  0 with the line in out, or -1. */
static int node_ask(const char *path, const char *line, char *out, size_t cap, struct err *e)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	AUTOCLOSE int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t got = 0;
	uint64_t deadline = util_now_ms() + PORTAL_TIMEOUT_MS;

	if (fd == -1)
		return err_set(e, errno, "socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		return err_set(e, errno, "connect to the node agent at %s", path);
	if (util_write_all(fd, line, strlen(line)) == -1)
		return err_set(e, errno, "write to the node agent");
	while (got < cap - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = util_now_ms();
		ssize_t n;

		if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
			return err_set(e, ETIMEDOUT, "the node agent did not answer");
		n = read(fd, out + got, cap - 1 - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(e, n ? errno : 0, "the node agent closed");
		got += (size_t)n;
		out[got] = '\0';
		if (memchr(out, '\n', got)) {
			out[strcspn(out, "\n")] = '\0';
			return 0;
		}
	}
	return err_set(e, 0, "the node agent's answer is too long");
}

/* The VNC secret of a local sandbox.  1 found, 0 the node has no such
 * sandbox, -1 could not ask. */
static int node_secret(struct px_routes *r, const char *id, char *out, size_t len, struct err *e)
{
	char line[128], ans[200];

	snprintf(line, sizeof(line), "SECRET %s\n", id);
	if (node_ask(r->cfg.node_socket, line, ans, sizeof(ans), e) == -1)
		return -1;
	if (strncmp(ans, "OK", 2) == 0) {
		snprintf(out, len, "%.*s", (int)len - 1, ans[2] == ' ' ? ans + 3 : "");
		return 1;
	}
	if (strncmp(ans, "ERR 404", 7) == 0)
		return 0;
	return err_set(e, 0, "node agent: %s", ans);
}

/* ---- asking the portal ---- */

struct answer {
	char id[40];
	enum px_rt_kind kind;
	char addr[64], sid[40], state[16], why[160], secret[64];
	char prev[16];          /* the state of the answer before this one */
	bool held;              /* a request is held for it: wake it when asleep */
	bool woke;
	char *revoked;          /* ",sh_a,sh_b,": its revoked share links; NULL: none */
};

static void addr_of_url(const char *url, char *out, size_t len)
{
	const char *s = strstr(url, "://");

	s = s ? s + 3 : url;
	snprintf(out, len, "%.*s", (int)strcspn(s, "/"), s);
}

/* Asks the portal to wake id (it answers at once; the route turns ready
 * later, which the change feed tells).  True when there is no point in
 * asking again: the wake was taken, or the portal says there is nothing
 * to wake (409); false when it could not take it now (no node has room,
 * the portal did not answer): the next look at the route asks again. */
static bool portal_wake(struct px_routes *r, const char *id)
{
	char url[512];
	const char *hdrs[] = {r->auth, NULL};
	struct http_json_opts o = {.timeout_ms = PORTAL_TIMEOUT_MS, .headers = hdrs};
	struct err e = ERR_INIT;

	snprintf(url, sizeof(url), "%s/sbv1/routes/%s/wake", r->cfg.portal, id);
	if (http_json("POST", url, NULL, NULL, &o, &e) < 0) {
		log_warn("wake on request failed", "{s:s, s:s}", "id", id, "error", e.msg);
		return e.http_status == 409;
	}
	log_info("woke a sandbox on request", "{s:s}", "id", id);
	return true;
}

/* Portal states in which a request is held, and those of them in which the
 * sandbox must be woken for it (a wake asked for while it hibernates or
 * offloads follows once that is done). */
static bool held_state(const char *s)
{
	static const char *const held[] = {"queued",	 "placing",    "starting",  "waking",
					   "hibernating", "hibernated", "offloading", "offloaded"};

	for (size_t i = 0; i < ARRAY_LEN(held); i++)
		if (strcmp(s, held[i]) == 0)
			return true;
	return false;
}

static bool asleep_state(const char *s)
{
	return !strcmp(s, "hibernating") || !strcmp(s, "hibernated") || !strcmp(s, "offloading") ||
	       !strcmp(s, "offloaded");
}

/* The revoked share ids of a route answer as ",a,b," (NULL: none). */
static char *revoked_list(const json_t *arr)
{
	struct buf b = BUF_INIT(1 << 16);
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v)
		if (json_is_string(v) && !strchr(json_string_value(v), ','))
			buf_appendf(&b, NULL, "%s%s,", b.len ? "" : ",", json_string_value(v));
	if (!b.len) {
		buf_free(&b);
		return NULL;
	}
	return b.data; /* taken from the buffer */
}

static void resolve(struct px_routes *r, struct answer *a, bool woke)
{
	char url[512];
	const char *hdrs[] = {r->auth, NULL};
	struct http_json_opts o = {.timeout_ms = PORTAL_TIMEOUT_MS, .headers = hdrs};
	struct err e = ERR_INIT;
	AUTOJSON json_t *j = NULL;
	const char *state = "", *node = "", *proxy = "", *sid = "";
	int st;

	a->woke = woke;
	snprintf(a->sid, sizeof(a->sid), "%s", a->id);
	if (!have_portal(r)) {
		a->kind = PX_RT_LOCAL;
		snprintf(a->state, sizeof(a->state), "ready");
	} else {
		snprintf(url, sizeof(url), "%s/sbv1/routes/%s", r->cfg.portal, a->id);
		st = http_json("GET", url, NULL, &j, &o, &e);
		if (st < 0 && e.http_status == 404) {
			a->kind = PX_RT_GONE;
			snprintf(a->why, sizeof(a->why), "no sandbox `%s`", a->id);
			return;
		}
		if (st < 0) {
			a->kind = PX_RT_FAIL;
			snprintf(a->why, sizeof(a->why), "the portal did not answer: %.120s", e.msg);
			log_warn("route lookup failed", "{s:s, s:s}", "id", a->id, "error", e.msg);
			return;
		}
		cj_get_str(j, "state", "", &state, NULL);
		cj_get_str(j, "node", "", &node, NULL);
		cj_get_str(j, "proxy", "", &proxy, NULL);
		cj_get_str(j, "node_sandbox_id", "", &sid, NULL);
		a->revoked = revoked_list(json_object_get(j, "revoked_shares"));
		if (*sid)
			snprintf(a->sid, sizeof(a->sid), "%s", sid);
		snprintf(a->state, sizeof(a->state), "%s", state);
		if (strcmp(state, "ready") == 0) {
			if (strcmp(node, r->cfg.node_name) == 0) {
				a->kind = PX_RT_LOCAL;
			} else if (*proxy) {
				a->kind = PX_RT_REMOTE;
				addr_of_url(proxy, a->addr, sizeof(a->addr));
			} else {
				a->kind = PX_RT_FAIL;
				snprintf(a->why, sizeof(a->why),
					 "sandbox `%s` is on node `%s`, whose proxy has not reported",
					 a->id, node);
			}
		} else if (held_state(state)) {
			a->kind = PX_RT_WAIT;
			/* A wake that failed brings it back asleep: ask again. */
			if (!strcmp(a->prev, "waking") && asleep_state(state))
				a->woke = false;
			/* Only for a request that waits: a kept connection or a
			 * drain (the node's, before the checkpoint) asks too. */
			if (asleep_state(state) && !a->woke && a->held)
				a->woke = portal_wake(r, a->id);
		} else {
			a->kind = PX_RT_GONE;
			snprintf(a->why, sizeof(a->why), "sandbox `%s` is %s", a->id, state);
		}
	}
	if (a->kind == PX_RT_LOCAL && !a->secret[0]) {
		int s = node_secret(r, a->sid, a->secret, sizeof(a->secret), &e);

		if (s == 0) {
			a->kind = have_portal(r) ? PX_RT_FAIL : PX_RT_GONE;
			snprintf(a->why, sizeof(a->why), "no sandbox `%s` on this node", a->id);
		} else if (s < 0) {
			a->kind = PX_RT_FAIL;
			snprintf(a->why, sizeof(a->why), "%.150s", e.msg);
		}
	}
}

/* The change feed: entries of sandboxes that changed are asked again. */
static void read_changes(struct px_routes *r)
{
	char url[512];
	const char *hdrs[] = {r->auth, NULL};
	struct http_json_opts o = {.timeout_ms = PORTAL_TIMEOUT_MS, .headers = hdrs};
	struct err e = ERR_INIT;
	AUTOJSON json_t *j = NULL;
	json_t *ids, *v;
	json_int_t seq;
	size_t i;

	snprintf(url, sizeof(url), "%s/sbv1/routes?after=%lld", r->cfg.portal, r->seq);
	if (http_json("GET", url, NULL, &j, &o, &e) < 0) {
		log_debug("change feed read failed", "{s:s}", "error", e.msg);
		return;
	}
	if (json_unpack(j, "{s:I, s:o}", "seq", &seq, "changed", &ids) != 0)
		return;
	pthread_mutex_lock(&r->mu);
	if (r->seq >= 0)
		json_array_foreach(ids, i, v) {
			for (struct px_rt *rt = r->head; rt; rt = rt->next)
				if (json_is_string(v) && strcmp(rt->id, json_string_value(v)) == 0 &&
				    rt->kind != PX_RT_TCP) {
					rt->checked_ms = 0;
					if (rt->refs)
						want(r, rt);
				}
		}
	r->seq = seq;
	pthread_mutex_unlock(&r->mu);
}

/* One batch of activity: every entry whose counters moved. */
static void report(struct px_routes *r)
{
	char url[512];
	const char *hdrs[] = {r->auth, NULL};
	struct http_json_opts o = {.timeout_ms = PORTAL_TIMEOUT_MS, .headers = hdrs};
	struct err e = ERR_INIT;
	AUTOJSON json_t *body = json_object();
	json_t *arr = json_array();
	uint64_t now = util_now_ms();

	pthread_mutex_lock(&r->mu);
	for (struct px_rt *rt = r->head; rt; rt = rt->next) {
		uint64_t q = atomic_load(&rt->requests), bi = atomic_load(&rt->bytes_in),
			 bo = atomic_load(&rt->bytes_out), seen = atomic_load(&rt->last_seen_ms);

		if (q == rt->rep_requests && bi == rt->rep_in && bo == rt->rep_out &&
		    seen == rt->rep_seen)
			continue;
		json_array_append_new(
			arr, json_pack("{s:s, s:I, s:I, s:I, s:I, s:i}", "id", rt->id, "requests",
				       (json_int_t)(q - rt->rep_requests), "bytes_in",
				       (json_int_t)(bi - rt->rep_in), "bytes_out",
				       (json_int_t)(bo - rt->rep_out), "idle_ms",
				       (json_int_t)(seen && now > seen ? now - seen : 0), "connections",
				       atomic_load(&rt->conns)));
		rt->rep_requests = q;
		rt->rep_in = bi;
		rt->rep_out = bo;
		rt->rep_seen = seen;
	}
	pthread_mutex_unlock(&r->mu);
	json_object_set_new(body, "node", json_string(r->cfg.node_name));
	json_object_set_new(body, "proxy", json_string(r->cfg.advertise ? r->cfg.advertise : ""));
	json_object_set_new(body, "sandboxes", arr);
	snprintf(url, sizeof(url), "%s/sbv1/routes/activity", r->cfg.portal);
	if (http_json("POST", url, body, NULL, &o, &e) < 0)
		log_warn("activity report failed", "{s:s}", "error", e.msg);
}

/* Under mu: frees entries nobody holds that were not used for a while. */
static void evict(struct px_routes *r, uint64_t now)
{
	struct px_rt **pp = &r->head;

	while (*pp) {
		struct px_rt *rt = *pp;
		uint64_t seen = atomic_load(&rt->last_seen_ms);

		if (rt->refs == 0 && !rt->queued && now - (seen ? seen : rt->checked_ms) > EVICT_MS &&
		    rt->kind != PX_RT_TCP && rt->rep_requests == atomic_load(&rt->requests)) {
			*pp = rt->next;
			rt_free(rt);
			continue;
		}
		pp = &rt->next;
	}
}

static void *resolver(void *arg)
{
	struct px_routes *r = arg;
	uint64_t last_changes = 0, last_report = 0;
	bool stop = false;

	while (!stop) {
		struct answer batch[RESOLVE_BATCH];
		size_t n = 0;
		uint64_t now;

		pthread_mutex_lock(&r->mu);
		for (;;) {
			struct timespec ts;

			if (r->stop)
				break;
			for (struct px_rt *rt = r->head; rt && n < RESOLVE_BATCH; rt = rt->next) {
				/* a held request: ask again on a short period */
				if (rt->kind == PX_RT_WAIT && rt->refs &&
				    util_now_ms() - rt->checked_ms >= WAIT_RECHECK_MS)
					rt->queued = true;
				if (rt->queued) {
					memset(&batch[n], 0, sizeof(batch[n]));
					snprintf(batch[n].id, sizeof(batch[n].id), "%s", rt->id);
					/* the secret is the node's: keep it while the sandbox stays */
					if (rt->kind == PX_RT_LOCAL)
						memcpy(batch[n].secret, rt->vnc_secret,
						       sizeof(batch[n].secret));
					batch[n].woke = rt->woke;
					memcpy(batch[n].prev, rt->state, sizeof(batch[n].prev));
					batch[n].held = atomic_load(&rt->held) > 0;
					n++;
				}
			}
			now = util_now_ms();
			if (n || (have_portal(r) && (now - last_report >= (uint64_t)r->cfg.report_ms ||
						     now - last_changes >= CHANGES_MS)))
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		}
		stop = r->stop;
		pthread_mutex_unlock(&r->mu);

		for (size_t i = 0; i < n; i++)
			resolve(r, &batch[i], batch[i].woke);
		if (n) {
			pthread_mutex_lock(&r->mu);
			now = util_now_ms();
			for (size_t i = 0; i < n; i++)
				for (struct px_rt *rt = r->head; rt; rt = rt->next)
					if (strcmp(rt->id, batch[i].id) == 0 && rt->kind != PX_RT_TCP) {
						rt->kind = batch[i].kind;
						memcpy(rt->addr, batch[i].addr, sizeof(rt->addr));
						memcpy(rt->sid, batch[i].sid, sizeof(rt->sid));
						memcpy(rt->state, batch[i].state, sizeof(rt->state));
						memcpy(rt->why, batch[i].why, sizeof(rt->why));
						memcpy(rt->vnc_secret, batch[i].secret,
						       sizeof(rt->vnc_secret));
						if (strcmp(rt->revoked ? rt->revoked : "",
							   batch[i].revoked ? batch[i].revoked : "") != 0)
							atomic_fetch_add(&rt->share_gen, 1);
						free(rt->revoked);
						rt->revoked = batch[i].revoked;
						batch[i].revoked = NULL;
						rt->woke = batch[i].kind == PX_RT_WAIT && batch[i].woke;
						rt->checked_ms = now;
						rt->queued = false;
						atomic_fetch_add(&rt->gen, 1);
						break;
					}
			pthread_mutex_unlock(&r->mu);
			for (size_t i = 0; i < n; i++)
				free(batch[i].revoked);
			r->wake(r->wake_ud);
		}
		now = util_now_ms();
		if (have_portal(r) && now - last_changes >= CHANGES_MS) {
			last_changes = now;
			read_changes(r);
		}
		if (have_portal(r) && (stop || now - last_report >= (uint64_t)r->cfg.report_ms)) {
			last_report = now;
			report(r);
		}
		pthread_mutex_lock(&r->mu);
		evict(r, now);
		pthread_mutex_unlock(&r->mu);
	}
	return NULL;
}

int px_routes_start(struct px_routes *r, struct err *e)
{
	int rc = pthread_create(&r->th, NULL, resolver, r);

	if (rc != 0)
		return err_set(e, rc, "start the resolver thread");
	r->started = true;
	return 0;
}

void px_routes_free(struct px_routes *r)
{
	if (!r)
		return;
	if (r->started) {
		pthread_mutex_lock(&r->mu);
		r->stop = true;
		pthread_cond_signal(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->th, NULL);
	}
	while (r->head) {
		struct px_rt *rt = r->head;

		r->head = rt->next;
		rt_free(rt);
	}
	free(r->statics);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}
