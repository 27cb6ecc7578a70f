/* Prometheus text for /metrics; see pt_metrics.h. */
#include "portal/pt_core.h"

#include "common/json.h"

#include <string.h>

static const double bounds[PT_HIST_BUCKETS] = {0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
					       0.5,   1,     2.5,  5,     10,   30,  120};

void pt_hist_observe(struct pt_hist *h, double seconds)
{
	for (int i = 0; i < PT_HIST_BUCKETS; i++)
		if (seconds <= bounds[i]) {
			h->le[i]++;
			break;
		}
	h->count++;
	h->sum += seconds;
}

int pt_hist_write(struct buf *b, const char *name, const char *help, const struct pt_hist *h)
{
	struct err e = ERR_INIT;
	uint64_t cum = 0;

	if (buf_appendf(b, &e, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name) == -1)
		return -1;
	for (int i = 0; i < PT_HIST_BUCKETS; i++) {
		cum += h->le[i];
		if (buf_appendf(b, &e, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i],
				(unsigned long long)cum) == -1)
			return -1;
	}
	return buf_appendf(b, &e, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
			   (unsigned long long)h->count, name, h->sum, name,
			   (unsigned long long)h->count);
}

struct counts {
	struct buf *b;
	int rc;
};

static void count_row(const char *state, const char *node, long long n, void *ud)
{
	struct counts *c = ud;
	struct err e = ERR_INIT;

	if (buf_appendf(c->b, &e, "cloche_portal_sandboxes{state=\"%s\",node=\"%s\"} %lld\n", state,
			node, n) == -1)
		c->rc = -1;
}

static long long cap_of(const struct pt_node *n, const char *a, const char *b)
{
	json_t *v = json_object_get(n->capacity, a);

	if (b)
		v = json_object_get(v, b);
	return json_is_integer(v) ? json_integer_value(v) : 0;
}

int pt_metrics_render(struct pt_portal *p, struct buf *b)
{
	struct err e = ERR_INIT;
	const struct pt_metrics *m = &p->metrics;
	struct counts c = {b, 0};

	if (pt_hist_write(b, "cloche_portal_acquire_seconds",
			  "time from an acquire request to its answer", &m->acquire) == -1 ||
	    pt_hist_write(b, "cloche_portal_queue_wait_seconds",
			  "time acquires spent in the queue before placement", &m->queue_wait) == -1)
		return -1;
	if (buf_appendf(b, &e,
			"# HELP cloche_portal_acquires_total acquire answers by result\n"
			"# TYPE cloche_portal_acquires_total counter\n"
			"cloche_portal_acquires_total{result=\"ok\"} %llu\n"
			"cloche_portal_acquires_total{result=\"unavailable\"} %llu\n"
			"cloche_portal_acquires_total{result=\"failed\"} %llu\n"
			"# HELP cloche_portal_acquires_warm_total acquires served by a warm pool member\n"
			"# TYPE cloche_portal_acquires_warm_total counter\n"
			"cloche_portal_acquires_warm_total %llu\n"
			"# HELP cloche_portal_queue_depth acquires waiting for room\n"
			"# TYPE cloche_portal_queue_depth gauge\n"
			"cloche_portal_queue_depth %d\n"
			"# HELP cloche_portal_lease_expiries_total leases that ran out\n"
			"# TYPE cloche_portal_lease_expiries_total counter\n"
			"cloche_portal_lease_expiries_total %llu\n"
			"# HELP cloche_portal_lost_total sandboxes lost with their node\n"
			"# TYPE cloche_portal_lost_total counter\n"
			"cloche_portal_lost_total %llu\n"
			"# HELP cloche_portal_orphans_destroyed_total sandboxes no lease owned, destroyed\n"
			"# TYPE cloche_portal_orphans_destroyed_total counter\n"
			"cloche_portal_orphans_destroyed_total %llu\n"
			"# HELP cloche_portal_heartbeats_total node heartbeats received\n"
			"# TYPE cloche_portal_heartbeats_total counter\n"
			"cloche_portal_heartbeats_total %llu\n"
			"# HELP cloche_portal_sandboxes sandboxes by state and node\n"
			"# TYPE cloche_portal_sandboxes gauge\n",
			(unsigned long long)m->acquires_ok, (unsigned long long)m->acquires_unavailable,
			(unsigned long long)m->acquires_failed, (unsigned long long)m->acquires_warm,
			p->queue_len, (unsigned long long)m->lease_expiries,
			(unsigned long long)m->lost, (unsigned long long)m->orphans_destroyed,
			(unsigned long long)m->heartbeats) == -1)
		return -1;
	if (pt_store_sb_counts(p->st, count_row, &c, &e) == -1 || c.rc == -1)
		return -1;
	if (pt_hist_write(b, "cloche_portal_wake_seconds",
			  "time from a wake's start to ready (from a node's disk or from S3)",
			  &m->wake) == -1 ||
	    buf_appendf(b, &e,
			"# HELP cloche_portal_hibernations_total hibernates by result\n"
			"# TYPE cloche_portal_hibernations_total counter\n"
			"cloche_portal_hibernations_total{result=\"ok\"} %llu\n"
			"cloche_portal_hibernations_total{result=\"refused\"} %llu\n"
			"cloche_portal_hibernations_total{result=\"failed\"} %llu\n"
			"# HELP cloche_portal_idle_hibernations_total hibernates started by the idle policy\n"
			"# TYPE cloche_portal_idle_hibernations_total counter\n"
			"cloche_portal_idle_hibernations_total %llu\n"
			"# HELP cloche_portal_checkpoint_failures_total checkpoints that failed on the node\n"
			"# TYPE cloche_portal_checkpoint_failures_total counter\n"
			"cloche_portal_checkpoint_failures_total %llu\n"
			"# HELP cloche_portal_wakes_total wakes (and restores from S3) by result\n"
			"# TYPE cloche_portal_wakes_total counter\n"
			"cloche_portal_wakes_total{result=\"ok\"} %llu\n"
			"cloche_portal_wakes_total{result=\"failed\"} %llu\n"
			"# HELP cloche_portal_offloads_total offloads to S3 by result\n"
			"# TYPE cloche_portal_offloads_total counter\n"
			"cloche_portal_offloads_total{result=\"ok\"} %llu\n"
			"cloche_portal_offloads_total{result=\"failed\"} %llu\n"
			"# HELP cloche_portal_forks_total forks by result\n"
			"# TYPE cloche_portal_forks_total counter\n"
			"cloche_portal_forks_total{result=\"ok\"} %llu\n"
			"cloche_portal_forks_total{result=\"failed\"} %llu\n"
			"# HELP cloche_portal_retention_releases_total offloaded sandboxes deleted after --offload-retention\n"
			"# TYPE cloche_portal_retention_releases_total counter\n"
			"cloche_portal_retention_releases_total %llu\n"
			"# HELP cloche_portal_thumbnails_total dashboard thumbnails: fetched from a sandbox, served from the cache, failed\n"
			"# TYPE cloche_portal_thumbnails_total counter\n"
			"cloche_portal_thumbnails_total{result=\"fetched\"} %llu\n"
			"cloche_portal_thumbnails_total{result=\"cached\"} %llu\n"
			"cloche_portal_thumbnails_total{result=\"failed\"} %llu\n",
			(unsigned long long)m->hib_ok, (unsigned long long)m->hib_refused,
			(unsigned long long)m->hib_failed, (unsigned long long)m->idle_hibernations,
			(unsigned long long)m->checkpoint_failures, (unsigned long long)m->wakes_ok,
			(unsigned long long)m->wakes_failed, (unsigned long long)m->offloads_ok,
			(unsigned long long)m->offloads_failed, (unsigned long long)m->forks_ok,
			(unsigned long long)m->forks_failed,
			(unsigned long long)m->retention_releases, (unsigned long long)m->thumbs_fetched,
			(unsigned long long)m->thumbs_cached, (unsigned long long)m->thumbs_failed) == -1)
		return -1;
	if (buf_appends(b,
			"# HELP cloche_portal_node_up 1 when the node heartbeats\n"
			"# TYPE cloche_portal_node_up gauge\n"
			"# HELP cloche_portal_node_memory_bytes node memory (total, available)\n"
			"# TYPE cloche_portal_node_memory_bytes gauge\n"
			"# HELP cloche_portal_node_sandboxes sandboxes a node holds, and its limit (0: none)\n"
			"# TYPE cloche_portal_node_sandboxes gauge\n"
			"# HELP cloche_portal_node_cpus CPUs of a node\n"
			"# TYPE cloche_portal_node_cpus gauge\n",
			&e) == -1)
		return -1;
	for (const struct pt_node *n = p->nodes; n; n = n->next)
		if (buf_appendf(b, &e,
				"cloche_portal_node_up{node=\"%s\"} %d\n"
				"cloche_portal_node_memory_bytes{node=\"%s\",kind=\"total\"} %lld\n"
				"cloche_portal_node_memory_bytes{node=\"%s\",kind=\"available\"} %lld\n"
				"cloche_portal_node_sandboxes{node=\"%s\",kind=\"held\"} %lld\n"
				"cloche_portal_node_sandboxes{node=\"%s\",kind=\"max\"} %lld\n"
				"cloche_portal_node_cpus{node=\"%s\"} %lld\n",
				n->name, n->up && n->heard, n->name, cap_of(n, "memory", "total"),
				n->name, cap_of(n, "memory", "available"), n->name,
				cap_of(n, "sandboxes", NULL), n->name, cap_of(n, "max_sandboxes", NULL),
				n->name, cap_of(n, "cpus", NULL)) == -1)
			return -1;
	return 0;
}
