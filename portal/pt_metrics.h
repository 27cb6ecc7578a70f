/* The portal's Prometheus metrics: counters and histograms kept in memory
 * on the loop thread, plus gauges read from the store and the node registry
 * when /metrics is scraped. */
#ifndef CLOCHE_PT_METRICS_H
#define CLOCHE_PT_METRICS_H
#include "common/buf.h"

#include <stdint.h>

#define PT_HIST_BUCKETS 14

struct pt_hist {
	uint64_t le[PT_HIST_BUCKETS]; /* counts per upper bound (not cumulative) */
	uint64_t count;
	double sum;                   /* seconds */
};

struct pt_metrics {
	struct pt_hist acquire;       /* request to answer, by every outcome */
	struct pt_hist queue_wait;    /* time spent queued, for those that were */
	uint64_t acquires_ok, acquires_warm, acquires_unavailable, acquires_failed;
	uint64_t lease_expiries;
	uint64_t heartbeats;
	uint64_t orphans_destroyed;
	uint64_t lost;
	/* checkpoints (pt_hib.c) */
	struct pt_hist wake;          /* a wake's start to ready, from a node's disk or S3 */
	uint64_t hib_ok, hib_refused, hib_failed;
	uint64_t wakes_ok, wakes_failed;
	uint64_t offloads_ok, offloads_failed;
	uint64_t forks_ok, forks_failed;
	uint64_t checkpoint_failures; /* runsc's checkpoint failed (rebooted or failed) */
	uint64_t idle_hibernations, retention_releases;
	/* dashboard thumbnails (pt_thumb.c) */
	uint64_t thumbs_fetched, thumbs_cached, thumbs_failed;
};

/* Adds one observation of seconds to h. */
void pt_hist_observe(struct pt_hist *h, double seconds);
/* Appends h in the text format under name, with HELP text. */
int pt_hist_write(struct buf *b, const char *name, const char *help, const struct pt_hist *h);

struct pt_portal;
/* The whole /metrics page into b: 0 or -1 (b full). */
int pt_metrics_render(struct pt_portal *p, struct buf *b);

#endif
