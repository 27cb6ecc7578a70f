/* The keeper thread: once a second it marks dead sandboxes failed (with
 * the reason their cgroups tell) and keeps each warm pool at its target.
 * See docs/node.md, Warm pools and Keeper. */
#include "node-agent/na_node.h"
#include "node-agent/na_spec.h"

#include "common/cfg.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int add_warm(const char *name, long count, void *ud, struct err *e)
{
	struct na_node *n = ud;

	if (!na_valid_template(name) || strchr(name, '@') || strlen(name) >= sizeof(n->warm[0].name))
		return err_set(e, 0, "--warm-pool: `%s` is not a template name", name);
	if (n->nwarm == NA_WARM_MAX)
		return err_set(e, 0, "--warm-pool: at most %d templates", NA_WARM_MAX);
	for (int i = 0; i < n->nwarm; i++)
		if (strcmp(n->warm[i].name, name) == 0)
			return err_set(e, 0, "--warm-pool: `%s` given twice", name);
	snprintf(n->warm[n->nwarm].name, sizeof(n->warm[0].name), "%s", name);
	n->warm[n->nwarm++].target = (int)count;
	return 0;
}

/* "desktop=2,other=1" into n->warm.  -1 with e when malformed. */
int na_parse_warm(struct na_node *n, const char *spec, struct err *e)
{
	return cfg_each_count(spec, "warm-pool", 0, 1000, add_warm, n, e);
}

/* Warm members of template tpl (name@digest) counted by state.  Caller
 * holds n->mu. */
void na_warm_count_locked(struct na_node *n, const char *tpl, int *ready, int *starting)
{
	*ready = *starting = 0;
	for (struct na_sb *s = n->list; s; s = s->next) {
		if (!s->pooled || strcmp(s->template, tpl) != 0)
			continue;
		if (strcmp(s->state, "ready") == 0)
			(*ready)++;
		else if (strcmp(s->state, "starting") == 0)
			(*starting)++;
	}
}

/* An unclaimed, ready member of pool w whose template is not the newest
 * (resolved) one, and that no egress change holds (its destroy would get
 * 409 and the keeper would retry at once, spinning).  Caller holds n->mu. */
static struct na_sb *warm_stale_locked(struct na_node *n, const struct na_warm *w,
				       const char *resolved)
{
	size_t nl = strlen(w->name);

	for (struct na_sb *s = n->list; s; s = s->next)
		if (s->pooled && !s->busy && strcmp(s->state, "ready") == 0 &&
		    strncmp(s->template, w->name, nl) == 0 && s->template[nl] == '@' &&
		    strcmp(s->template, resolved) != 0)
			return s;
	return NULL;
}

/* One round of the warm thread, under n->mu (dropped around slow work).
 * Returns true when it did something (so the next round follows at once). */
static bool warm_round_locked(struct na_node *n)
{
	char resolved[NA_WARM_MAX][256], id[32];
	struct na_limits lim = na_default_limits;
	struct na_egress_policy none = {0};
	struct err e = ERR_INIT;
	int nwarm = n->nwarm;

	pthread_mutex_unlock(&n->mu);
	for (int i = 0; i < nwarm; i++)
		if (na_resolve_template(n, n->warm[i].name, resolved[i], sizeof(resolved[i]), NULL) == -1)
			resolved[i][0] = '\0';
	pthread_mutex_lock(&n->mu);
	for (int i = 0; i < nwarm && !n->warm_stop; i++) {
		struct na_warm *w = &n->warm[i];
		struct na_sb *stale;
		int ready, starting, rc;
		uint64_t t0;

		if (!resolved[i][0])
			continue;
		stale = warm_stale_locked(n, w, resolved[i]);
		if (stale) {
			snprintf(id, sizeof(id), "%s", stale->id);
			pthread_mutex_unlock(&n->mu);
			log_info("retiring warm sandbox of an older template", "{s:s, s:s}", "id", id,
				 "template", resolved[i]);
			if (na_node_destroy(n, id, &e) == -1)
				log_error("cannot retire warm sandbox", "{s:s, s:s}", "id", id, "error",
					  e.msg);
			pthread_mutex_lock(&n->mu);
			return true;
		}
		na_warm_count_locked(n, resolved[i], &ready, &starting);
		if (ready + starting >= w->target || util_now_ms() < w->retry_at ||
		    !na_room_locked(n))
			continue;
		if (na_random_id(id, sizeof(id), &e) == -1 ||
		    na_reserve_locked(n, id, resolved[i], &lim, &none, true, &e) == -1)
			continue;
		pthread_mutex_unlock(&n->mu);
		t0 = util_now_ms();
		rc = na_node_create_run(n, id, &e);
		pthread_mutex_lock(&n->mu);
		if (rc == 0) {
			w->failures = 0;
			w->retry_at = 0;
			na_warm_count_locked(n, resolved[i], &ready, &starting);
			log_info("warm sandbox added", "{s:s, s:s, s:I, s:i}", "id", id, "template",
				 resolved[i], "ms", (json_int_t)(util_now_ms() - t0), "ready", ready);
		} else {
			uint64_t delay = 1000ull << (w->failures < 9 ? w->failures : 9);
			w->failures++;
			if (delay > NA_WARM_RETRY_MAX_MS)
				delay = NA_WARM_RETRY_MAX_MS;
			w->retry_at = util_now_ms() + delay;
			log_error("warm pool create failed", "{s:s, s:i, s:I, s:s}", "template",
				  resolved[i], "failures", w->failures, "retry_ms", (json_int_t)delay,
				  "error", e.msg);
		}
		return true;
	}
	return false;
}

/* A number from a "key N" line of a cgroup file, or 0. */
static long long cgroup_count(const char *ctl, const char *id, const char *file, const char *key)
{
	char path[256], line[128];
	size_t kl = strlen(key);
	long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s/%s", ctl, id, file);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
			v = strtoll(line + kl + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Marks ready sandboxes whose sandbox process is gone as failed, with the
 * reason the cgroups tell.  Caller holds n->mu. */
static void check_alive_locked(struct na_node *n)
{
	for (struct na_sb *s = n->list; s; s = s->next) {
		if (strcmp(s->state, "ready") != 0 || s->sandbox_pid <= 0 ||
		    kill(s->sandbox_pid, 0) == 0 || errno != ESRCH)
			continue;
		if (cgroup_count("pids", s->id, "pids.events", "max") > 0)
			snprintf(s->reason, sizeof(s->reason),
				 "stopped: reached its host task limit of %lld (pids)",
				 na_spec_host_pids(s->lim.pids));
		else if (cgroup_count("memory", s->id, "memory.oom_control", "oom_kill") > 0)
			snprintf(s->reason, sizeof(s->reason),
				 "stopped: the host killed it for exceeding its memory limit");
		else
			snprintf(s->reason, sizeof(s->reason), "stopped: its sandbox process exited");
		snprintf(s->state, sizeof(s->state), "failed");
		log_error("sandbox died", "{s:s, s:s, s:b}", "id", s->id, "reason", s->reason,
			  "pooled", s->pooled);
		na_node_changed(n);
	}
}

/* A dead warm member (nobody's sandbox) to remove.  Caller holds n->mu. */
static bool reap_dead_member_locked(struct na_node *n)
{
	char id[32];
	struct err e = ERR_INIT;

	for (struct na_sb *s = n->list; s; s = s->next) {
		/* A busy one would refuse the destroy (409) and the keeper
		 * would ask again at once: wait for the change to end. */
		if (!s->pooled || s->busy || strcmp(s->state, "failed") != 0)
			continue;
		snprintf(id, sizeof(id), "%s", s->id);
		pthread_mutex_unlock(&n->mu);
		if (na_node_destroy(n, id, &e) == -1)
			log_error("cannot remove dead warm sandbox", "{s:s, s:s}", "id", id, "error",
				  e.msg);
		pthread_mutex_lock(&n->mu);
		return true;
	}
	return false;
}

/* The keeper: once a second it checks that ready sandboxes are alive and
 * brings each warm pool to its target. */
static void *keeper_thread(void *arg)
{
	struct na_node *n = arg;

	pthread_mutex_lock(&n->mu);
	while (!n->warm_stop) {
		struct timespec ts;

		check_alive_locked(n);
		if (reap_dead_member_locked(n) || warm_round_locked(n))
			continue;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&n->wake, &n->mu, &ts);
	}
	n->warm_running = false;
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

int na_node_keeper_start(struct na_node *n, struct err *e)
{
	int r;

	n->warm_running = true;
	r = pthread_create(&n->warm_th, NULL, keeper_thread, n);
	if (r != 0) {
		n->warm_running = false;
		return err_set(e, r, "start keeper thread");
	}
	return 0;
}

bool na_node_keeper_stop(struct na_node *n)
{
	bool idle;

	pthread_mutex_lock(&n->mu);
	n->warm_stop = true;
	pthread_cond_broadcast(&n->wake);
	pthread_mutex_unlock(&n->mu);
	/* Wait a little for a create in progress; a longer one is left to the
	 * next start, which adopts or cleans it up. */
	for (int i = 0; i < 50; i++) {
		pthread_mutex_lock(&n->mu);
		idle = !n->warm_running;
		pthread_mutex_unlock(&n->mu);
		if (idle) {
			pthread_join(n->warm_th, NULL);
			return true;
		}
		usleep(100 * 1000);
	}
	pthread_detach(n->warm_th);
	return false;
}
