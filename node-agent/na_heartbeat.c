/* The heartbeat thread: reports the node to the portal (docs/node.md,
 * Heartbeat).  The body is made from the same views the node API serves,
 * so the portal sees exactly what GET /v1/capacity, /v1/templates and
 * /v1/sandboxes would show.  A change of the sandbox list (ready, failed,
 * claimed, destroyed) sends one at once, at most one per 100 ms. */
#include "node-agent/na_heartbeat.h"

#include "node-agent/na_sandbox.h"

#include "common/http_client.h"
#include "common/log.h"
#include "common/rnd.h"
#include "common/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HB_TIMEOUT_MS 2000
#define HB_MIN_GAP_MS 100
#define HB_INTERVAL_MIN 200
#define HB_INTERVAL_MAX 60000

struct na_heartbeat {
	struct na_node *node;
	char url[1100];      /* the portal's heartbeat URL */
	char name[128];
	char self[512];
	char authz[320];     /* "Authorization: Bearer ..." */
	char boot_id[33];
	long interval_ms;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, poke;
};

static void poke(void *ud)
{
	struct na_heartbeat *hb = ud;

	pthread_mutex_lock(&hb->mu);
	hb->poke = true;
	pthread_cond_signal(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
}

static json_t *body_of(struct na_heartbeat *hb)
{
	json_t *tmpls = na_node_templates_json(hb->node);
	json_t *sbs = na_node_list_json(hb->node);
	json_t *b = json_pack("{s:s, s:s, s:s, s:o, s:O, s:O}", "name", hb->name, "url", hb->self,
			      "boot_id", hb->boot_id, "capacity", na_node_capacity_json(hb->node),
			      "templates", json_object_get(tmpls, "templates"), "sandboxes",
			      json_object_get(sbs, "sandboxes"));

	json_decref(tmpls);
	json_decref(sbs);
	return b;
}

/* One heartbeat; logs only when the outcome changes (failing, recovered). */
static void beat(struct na_heartbeat *hb, bool *failing)
{
	const char *hdrs[] = {hb->authz, NULL};
	struct http_json_opts o = {.timeout_ms = HB_TIMEOUT_MS, .headers = hdrs};
	struct err e = ERR_INIT;
	json_t *body = body_of(hb), *out = NULL;
	int st = body ? http_json("POST", hb->url, body, &out, &o, &e)
		      : err_set(&e, ENOMEM, "heartbeat body");

	json_decref(body);
	if (st == -1) {
		if (!*failing)
			log_warn("heartbeat to the portal failing", "{s:s, s:s}", "portal", hb->url,
				 "error", e.msg);
		*failing = true;
		return;
	}
	if (*failing)
		log_info("heartbeat to the portal works again", "{s:s}", "portal", hb->url);
	*failing = false;
	{
		json_t *iv = json_object_get(out, "interval_ms");

		if (json_is_integer(iv)) {
			long v = (long)json_integer_value(iv);

			if (v < HB_INTERVAL_MIN)
				v = HB_INTERVAL_MIN;
			if (v > HB_INTERVAL_MAX)
				v = HB_INTERVAL_MAX;
			hb->interval_ms = v;
		}
	}
	json_decref(out);
}

/* Absolute CLOCK_REALTIME time ms from now, for pthread_cond_timedwait. */
static struct timespec after_ms(uint64_t ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += (time_t)(ms / 1000);
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static void *hb_thread(void *arg)
{
	struct na_heartbeat *hb = arg;
	bool failing = false;

	pthread_mutex_lock(&hb->mu);
	while (!hb->stop) {
		struct timespec until;
		uint64_t last;

		hb->poke = false;
		pthread_mutex_unlock(&hb->mu);
		beat(hb, &failing);
		last = util_now_ms();
		pthread_mutex_lock(&hb->mu);
		/* Until the interval passes or the sandbox list changes. */
		until = after_ms((uint64_t)hb->interval_ms);
		while (!hb->stop && !hb->poke &&
		       pthread_cond_timedwait(&hb->cv, &hb->mu, &until) != ETIMEDOUT)
			;
		/* A burst of changes makes one heartbeat: keep a minimal gap. */
		if (hb->poke && !hb->stop && util_now_ms() - last < HB_MIN_GAP_MS) {
			until = after_ms(HB_MIN_GAP_MS - (util_now_ms() - last));
			while (!hb->stop &&
			       pthread_cond_timedwait(&hb->cv, &hb->mu, &until) != ETIMEDOUT)
				;
		}
	}
	pthread_mutex_unlock(&hb->mu);
	return NULL;
}

struct na_heartbeat *na_heartbeat_start(struct na_node *n, const struct na_heartbeat_opts *o,
					struct err *e)
{
	struct na_heartbeat *hb = calloc(1, sizeof(*hb));
	int rc;

	if (!hb) {
		err_set(e, ENOMEM, "heartbeat");
		return NULL;
	}
	if (rnd_hex("", 16, hb->boot_id, sizeof(hb->boot_id), e) == -1) {
		free(hb);
		err_wrap(e, "boot id");
		return NULL;
	}
	hb->node = n;
	snprintf(hb->url, sizeof(hb->url), "%s/sbv1/nodes/heartbeat", o->portal);
	snprintf(hb->name, sizeof(hb->name), "%s", o->name);
	snprintf(hb->self, sizeof(hb->self), "%s", o->url);
	snprintf(hb->authz, sizeof(hb->authz), "Authorization: Bearer %s", o->credential);
	hb->interval_ms = o->interval_ms;
	pthread_mutex_init(&hb->mu, NULL);
	pthread_cond_init(&hb->cv, NULL);
	na_node_on_change(n, poke, hb);
	rc = pthread_create(&hb->th, NULL, hb_thread, hb);
	if (rc != 0) {
		na_node_on_change(n, NULL, NULL);
		pthread_mutex_destroy(&hb->mu);
		pthread_cond_destroy(&hb->cv);
		free(hb);
		err_set(e, rc, "heartbeat thread");
		return NULL;
	}
	log_info("heartbeat to the portal", "{s:s, s:s, s:s, s:s, s:i}", "portal", o->portal, "name",
		 hb->name, "url", hb->self, "boot_id", hb->boot_id, "interval_ms",
		 (int)hb->interval_ms);
	return hb;
}

void na_heartbeat_stop(struct na_heartbeat *hb)
{
	if (!hb)
		return;
	na_node_on_change(hb->node, NULL, NULL);
	pthread_mutex_lock(&hb->mu);
	hb->stop = true;
	pthread_cond_signal(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	pthread_join(hb->th, NULL);
	explicit_bzero(hb->authz, sizeof(hb->authz));
	pthread_mutex_destroy(&hb->mu);
	pthread_cond_destroy(&hb->cv);
	free(hb);
}
