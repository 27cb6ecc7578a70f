/* The node registry and best-of-K placement; see pt_nodes.h. */
#include "portal/pt_nodes.h"

#include "common/json.h"
#include "common/log.h"
#include "common/rnd.h"

#include <stdlib.h>
#include <string.h>

#define MAX_NODES 1024
/* What the node adds to a sandbox's memory for gVisor itself (docs/node.md,
 * Limits): the host cgroup holds M + 192 + M/8 MiB. */
#define HOST_MB(m) ((m) + 192 + (m) / 8)

struct pt_node *pt_nodes_find(struct pt_portal *p, const char *name)
{
	for (struct pt_node *n = p->nodes; n; n = n->next)
		if (strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

struct pt_node *pt_nodes_get(struct pt_portal *p, const char *name)
{
	struct pt_node *n = pt_nodes_find(p, name);
	int count = 0;

	if (n)
		return n;
	for (n = p->nodes; n; n = n->next)
		count++;
	if (count >= MAX_NODES || strlen(name) >= sizeof(n->name))
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->next = p->nodes;
	p->nodes = n;
	return n;
}

void pt_nodes_free(struct pt_portal *p)
{
	while (p->nodes) {
		struct pt_node *n = p->nodes;

		p->nodes = n->next;
		json_decref(n->capacity);
		json_decref(n->templates);
		json_decref(n->sandboxes);
		free(n);
	}
}

bool pt_tmpl_match(const char *want, const char *resolved)
{
	size_t n = strlen(want);

	if (strchr(want, '@'))
		return strcmp(want, resolved) == 0;
	return strncmp(want, resolved, n) == 0 && resolved[n] == '@';
}

bool pt_node_has_template(const struct pt_node *n, const char *want)
{
	size_t i;
	json_t *t;

	if (!n->up || !n->templates)
		return false;
	json_array_foreach(n->templates, i, t) {
		const char *name = json_string_value(json_object_get(t, "template"));

		if (name && pt_tmpl_match(want, name))
			return true;
	}
	return false;
}

static bool valid_name(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("-_.", s[i])))
			return false;
	return true;
}

int pt_nodes_record(struct pt_portal *p, json_t *hb, struct pt_node **out, bool *rebooted,
		    struct err *e)
{
	const char *name, *url, *boot;
	json_t *cap, *tmpls, *sbs;
	struct pt_node *n;

	if (cj_req_str(hb, "name", &name, e) == -1 || cj_req_str(hb, "url", &url, e) == -1 ||
	    cj_req_str(hb, "boot_id", &boot, e) == -1 || cj_req_obj(hb, "capacity", &cap, e) == -1)
		return -1;
	tmpls = json_object_get(hb, "templates");
	sbs = json_object_get(hb, "sandboxes");
	if (!json_is_array(tmpls) || !json_is_array(sbs))
		return err_http(e, 400, "`templates` and `sandboxes` must be arrays");
	if (!valid_name(name, sizeof(n->name)))
		return err_http(e, 400, "`name` must be 1-63 letters, digits, '-', '_' or '.'");
	if ((strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
	    strlen(url) >= sizeof(n->url))
		return err_http(e, 400, "`url` must be an http(s) URL");
	if (strlen(boot) >= sizeof(n->boot_id))
		return err_http(e, 400, "`boot_id` is too long");
	n = pt_nodes_get(p, name);
	if (!n)
		return err_http(e, 503, "cannot register node `%s`: too many nodes", name);
	*rebooted = n->boot_id[0] && strcmp(n->boot_id, boot) != 0;
	snprintf(n->url, sizeof(n->url), "%s", url);
	snprintf(n->boot_id, sizeof(n->boot_id), "%s", boot);
	json_decref(n->capacity);
	json_decref(n->templates);
	json_decref(n->sandboxes);
	n->capacity = json_incref(cap);
	n->full = false; /* its own count again */
	n->templates = json_incref(tmpls);
	n->sandboxes = json_incref(sbs);
	*out = n;
	return 0;
}

static long long cap_int(const struct pt_node *n, const char *a, const char *b)
{
	json_t *v = json_object_get(n->capacity, a);

	if (b)
		v = json_object_get(v, b);
	return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* Ready, unclaimed members of want on n that taken() leaves; the first one's
 * id into sid when sid is not NULL. */
static int members(struct pt_portal *p, const struct pt_node *n, const char *want,
		   pt_taken_fn taken, char *sid, size_t len)
{
	size_t i;
	json_t *s;
	int count = 0;

	if (!n->sandboxes)
		return 0;
	json_array_foreach(n->sandboxes, i, s) {
		const char *id = json_string_value(json_object_get(s, "id"));
		const char *st = json_string_value(json_object_get(s, "state"));
		const char *t = json_string_value(json_object_get(s, "template"));

		if (!id || !st || !t || !json_is_true(json_object_get(s, "pooled")) ||
		    strcmp(st, "ready") != 0 || !pt_tmpl_match(want, t) || taken(p, n, id))
			continue;
		if (count++ == 0 && sid)
			snprintf(sid, len, "%s", id);
	}
	return count;
}

/* Reservoir-samples up to k of the candidates (by index) into pick[]. */
static int sample(struct pt_node **cand, int n, int k, struct pt_node **pick)
{
	int m = 0;

	for (int i = 0; i < n; i++) {
		unsigned r = 0;

		if (m < k) {
			pick[m++] = cand[i];
			continue;
		}
		if (rnd_bytes(&r, sizeof(r), NULL) == -1)
			r = (unsigned)i;
		if ((int)(r % (unsigned)(i + 1)) < k)
			pick[r % (unsigned)(i + 1)] = cand[i];
	}
	return m;
}

struct pt_node *pt_nodes_pick_warm(struct pt_portal *p, const char *want, pt_taken_fn taken,
				   char *sid, size_t len)
{
	struct pt_node *cand[MAX_NODES], *pick[MAX_NODES], *best = NULL;
	int nc = 0, best_n = 0, k = p->cfg.best_k;

	for (struct pt_node *n = p->nodes; n && nc < MAX_NODES; n = n->next)
		if (n->up && members(p, n, want, taken, NULL, 0) > 0)
			cand[nc++] = n;
	k = sample(cand, nc, k, pick);
	for (int i = 0; i < k; i++) {
		int m = members(p, pick[i], want, taken, NULL, 0);

		if (m > best_n) {
			best = pick[i];
			best_n = m;
		}
	}
	if (best)
		members(p, best, want, taken, sid, len);
	return best;
}

/* Lower is better: sandboxes per CPU plus the share of memory in use. */
static double load_score(const struct pt_node *n)
{
	long long cpus = cap_int(n, "cpus", NULL);
	long long total = cap_int(n, "memory", "total");
	long long avail = cap_int(n, "memory", "available") - n->inflight_mb * 1048576LL;
	double s = (double)(cap_int(n, "sandboxes", NULL) + n->inflight) / (double)(cpus > 0 ? cpus : 1);

	if (total > 0)
		s += 1.0 - (double)(avail > 0 ? avail : 0) / (double)total;
	return s;
}

static bool has_room(const struct pt_node *n, long long memory_mb)
{
	long long max = cap_int(n, "max_sandboxes", NULL);
	long long used = cap_int(n, "sandboxes", NULL) + n->inflight;
	long long avail = cap_int(n, "memory", "available") - n->inflight_mb * 1048576LL;

	if (n->full || (max > 0 && used >= max))
		return false;
	return avail >= HOST_MB(memory_mb) * 1048576LL;
}

struct pt_node *pt_nodes_pick_new(struct pt_portal *p, const char *want, long long memory_mb)
{
	struct pt_node *cand[MAX_NODES], *pick[MAX_NODES], *best = NULL;
	int nc = 0, k;
	double best_s = 0;

	for (struct pt_node *n = p->nodes; n && nc < MAX_NODES; n = n->next)
		if (pt_node_has_template(n, want) && has_room(n, memory_mb))
			cand[nc++] = n;
	k = sample(cand, nc, p->cfg.best_k, pick);
	for (int i = 0; i < k; i++) {
		double s = load_score(pick[i]);

		if (!best || s < best_s) {
			best = pick[i];
			best_s = s;
		}
	}
	return best;
}

void pt_node_forget(struct pt_node *n, const char *sid)
{
	size_t i;
	json_t *s;

	if (!n->sandboxes)
		return;
	json_array_foreach(n->sandboxes, i, s) {
		const char *id = json_string_value(json_object_get(s, "id"));

		if (id && strcmp(id, sid) == 0) {
			json_array_remove(n->sandboxes, i);
			return;
		}
	}
}

bool pt_node_lists(const struct pt_node *n, const char *sid, bool *pooled, const char **state)
{
	size_t i;
	json_t *s;

	if (!n->sandboxes)
		return false;
	json_array_foreach(n->sandboxes, i, s) {
		const char *id = json_string_value(json_object_get(s, "id"));

		if (id && strcmp(id, sid) == 0) {
			if (pooled)
				*pooled = json_is_true(json_object_get(s, "pooled"));
			if (state)
				*state = json_string_value(json_object_get(s, "state"));
			return true;
		}
	}
	return false;
}
