/* The sandbox registry and lifecycle.  Each step of create leaves something
 * that teardown() knows how to remove even when later steps never ran, so
 * rollback after a failure and destroy are the same function, and so is the
 * clean-up of half-made sandboxes found at start-up. */
#include "node-agent/na_sandbox.h"
#include "node-agent/na_btrfs.h"
#include "node-agent/na_egress.h"
#include "node-agent/na_netns.h"
#include "node-agent/na_runsc.h"
#include "node-agent/na_spec.h"

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define NA_READY_TIMEOUT_MS 180000
#define NA_STOP_WAIT_MS 8000
#define NA_HEALTH_PORT 8080

#define NA_WARM_MAX 16
#define NA_WARM_RETRY_MAX_MS 300000

static const struct na_limits default_limits = {2048, 1, 1024};

struct na_sb {
	char id[32];
	char template[256]; /* name@digest */
	char state[16];     /* starting, ready, stopping, failed */
	char created_at[40];
	struct na_limits lim;
	struct na_egress_policy egress;
	bool pooled;        /* an unclaimed warm pool member */
	bool claimed;       /* was a warm pool member, now someone's */
	long long boot_ms;  /* create to ready; -1 when adopted */
	int sandbox_pid;    /* runsc's sandbox process once ready, or -1 */
	char reason[160];   /* why it is "failed" */
	struct na_sb *next;
};

/* One warm pool: keep `target` ready, unclaimed members of template `name`. */
struct na_warm {
	char name[128];
	int target;
	int failures;      /* creates failed in a row */
	uint64_t retry_at; /* no new create before this (monotonic ms) */
};

struct na_node {
	char pool[1024];
	char runsc_root[1024];
	char template_name[128];
	struct na_egress *egress;
	pthread_mutex_t mu;
	pthread_cond_t wake;
	struct na_sb *list;
	struct na_warm warm[NA_WARM_MAX];
	int nwarm;
	bool warm_running, warm_stop;
	pthread_t warm_th;
};

bool na_valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > 31 || id[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
	}
	return true;
}

static bool valid_template(const char *t)
{
	if (!*t || *t == '.' || strlen(t) > 200)
		return false;
	for (; *t; t++) {
		char c = *t;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.' || c == '@'))
			return false;
	}
	return true;
}

static void sb_dir(const struct na_node *n, const char *id, char *out, size_t len)
{
	snprintf(out, len, "%s/sandboxes/%s", n->pool, id);
}

static struct na_sb *find_locked(struct na_node *n, const char *id)
{
	for (struct na_sb *s = n->list; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

static void unlink_locked(struct na_node *n, const char *id)
{
	for (struct na_sb **p = &n->list; *p; p = &(*p)->next) {
		if (strcmp((*p)->id, id) == 0) {
			struct na_sb *s = *p;
			*p = s->next;
			free(s);
			return;
		}
	}
}

static void set_state(struct na_node *n, const char *id, const char *state, long long boot_ms)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = find_locked(n, id);
	if (s) {
		snprintf(s->state, sizeof(s->state), "%s", state);
		if (boot_ms >= 0)
			s->boot_ms = boot_ms;
	}
	pthread_mutex_unlock(&n->mu);
}

/* "desktop=2,other=1" into n->warm.  -1 with e when malformed. */
static int parse_warm(struct na_node *n, const char *spec, struct err *e)
{
	char buf[1024], *save = NULL, *tok;

	if (!spec || !*spec)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return err_set(e, 0, "--warm-pool: too long");
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end = NULL;
		long v;

		if (!eq)
			return err_set(e, 0, "--warm-pool: `%s` is not name=count", tok);
		*eq = '\0';
		v = strtol(eq + 1, &end, 10);
		if (!valid_template(tok) || strchr(tok, '@') || strlen(tok) >= sizeof(n->warm[0].name))
			return err_set(e, 0, "--warm-pool: `%s` is not a template name", tok);
		if (end == eq + 1 || *end || v < 0 || v > 1000)
			return err_set(e, 0, "--warm-pool: count of `%s` must be 0..1000", tok);
		if (n->nwarm == NA_WARM_MAX)
			return err_set(e, 0, "--warm-pool: at most %d templates", NA_WARM_MAX);
		for (int i = 0; i < n->nwarm; i++)
			if (strcmp(n->warm[i].name, tok) == 0)
				return err_set(e, 0, "--warm-pool: `%s` given twice", tok);
		snprintf(n->warm[n->nwarm].name, sizeof(n->warm[0].name), "%s", tok);
		n->warm[n->nwarm++].target = (int)v;
	}
	return 0;
}

struct na_node *na_node_new(const struct na_node_opts *o, struct err *e)
{
	struct na_node *n = calloc(1, sizeof(*n));
	char path[1100];

	if (!n) {
		err_set(e, ENOMEM, "node");
		return NULL;
	}
	snprintf(n->pool, sizeof(n->pool), "%s", o->pool);
	snprintf(n->runsc_root, sizeof(n->runsc_root), "%s", o->runsc_root);
	snprintf(n->template_name, sizeof(n->template_name), "%s", o->template_name);
	n->egress = o->egress;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->wake, NULL);
	if (parse_warm(n, o->warm, e) == -1) {
		na_node_free(n);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/sandboxes", n->pool);
	if (mkdir(path, 0700) == -1 && errno != EEXIST) {
		err_set(e, errno, "mkdir `%s`", path);
		na_node_free(n);
		return NULL;
	}
	if (mkdir(n->runsc_root, 0700) == -1 && errno != EEXIST) {
		/* /run/cloche may be missing on a fresh boot. */
		snprintf(path, sizeof(path), "%s", n->runsc_root);
		char *slash = strrchr(path, '/');
		if (slash && slash != path) {
			*slash = '\0';
			(void)mkdir(path, 0700);
		}
		if (mkdir(n->runsc_root, 0700) == -1 && errno != EEXIST) {
			err_set(e, errno, "mkdir `%s`", n->runsc_root);
			na_node_free(n);
			return NULL;
		}
	}
	return n;
}

void na_node_free(struct na_node *n)
{
	if (!n)
		return;
	while (n->list) {
		struct na_sb *s = n->list;
		n->list = s->next;
		free(s);
	}
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->mu);
	free(n);
}

/* Resolves a template name to name@digest: an exact name@digest, or the
 * newest (by mtime) read-only subvolume templates/<name>@*.  Writes the
 * resolved name into out.  0 or -1 with 404. */
static int resolve_template(const struct na_node *n, const char *name, char *out, size_t len,
			    struct err *e)
{
	char dir[1100], path[1400];
	DIR *d;
	struct dirent *de;
	size_t nl = strlen(name);
	time_t best = 0;
	struct stat st;

	if (!valid_template(name))
		return err_http(e, 400, "`template`: `%s` is not a template name", name);
	snprintf(dir, sizeof(dir), "%s/templates", n->pool);
	if (strchr(name, '@')) {
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (!na_btrfs_is_readonly(path))
			return err_http(e, 404, "no template `%s`", name);
		snprintf(out, len, "%s", name);
		return 0;
	}
	d = opendir(dir);
	if (!d)
		return err_http(e, 404, "no template `%s` (%s: %s)", name, dir, strerror(errno));
	out[0] = '\0';
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, name, nl) != 0 || de->d_name[nl] != '@')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!na_btrfs_is_readonly(path) || stat(path, &st) == -1)
			continue;
		if (!out[0] || st.st_mtime > best) {
			best = st.st_mtime;
			snprintf(out, len, "%s", de->d_name);
		}
	}
	closedir(d);
	if (!out[0])
		return err_http(e, 404, "no template `%s`", name);
	return 0;
}

json_t *na_node_templates_json(struct na_node *n)
{
	char dir[1100], path[1400], when[40];
	json_t *arr = json_array();
	DIR *d;
	struct dirent *de;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/templates", n->pool);
	d = opendir(dir);
	while (d && arr && (de = readdir(d)) != NULL) {
		const char *at = strchr(de->d_name, '@');
		int users = 0;
		struct tm tm;

		if (de->d_name[0] == '.' || !at || !valid_template(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!na_btrfs_is_readonly(path) || stat(path, &st) == -1)
			continue;
		gmtime_r(&st.st_mtime, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		pthread_mutex_lock(&n->mu);
		for (struct na_sb *s = n->list; s; s = s->next)
			users += strcmp(s->template, de->d_name) == 0;
		pthread_mutex_unlock(&n->mu);
		json_array_append_new(arr, json_pack("{s:s, s:s%, s:s, s:s, s:i}", "template",
						     de->d_name, "name", de->d_name,
						     (int)(at - de->d_name), "digest", at + 1,
						     "created_at", when, "sandboxes", users));
	}
	if (d)
		closedir(d);
	return json_pack("{s:o}", "templates", arr);
}

int na_node_import_template(struct na_node *n, const char *file, char *name_out, size_t len,
			    struct err *e)
{
	char name[256], dir[1100], path[1400];
	struct stat st;

	if (file[0] != '/' || stat(file, &st) == -1 || !S_ISREG(st.st_mode))
		return err_http(e, 400, "`import`: `%s` is not a readable file (absolute path)",
				file);
	if (na_btrfs_stream_name(file, name, sizeof(name), e) == -1) {
		e->http_status = 400;
		return -1;
	}
	if (!valid_template(name) || !strchr(name, '@') || name[0] == '@')
		return err_http(e, 400, "the stream holds `%s`, not a template (name@digest)", name);
	snprintf(dir, sizeof(dir), "%s/templates", n->pool);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &st) == 0)
		return err_http(e, 409, "template `%s` already exists", name);
	/* Received in place: until the stream is complete the subvolume is
	 * writable, and writable subvolumes are not templates to creates. */
	if (na_btrfs_receive(file, dir, e) == -1 || !na_btrfs_is_readonly(path)) {
		if (!e->msg[0])
			err_set(e, 0, "`%s` did not arrive as a read-only subvolume", name);
		if (na_btrfs_delete(path, NULL) == -1 && lstat(path, &st) == 0)
			log_error("cannot remove a failed import", "{s:s}", "path", path);
		e->http_status = 400;
		return -1;
	}
	snprintf(name_out, len, "%s", name);
	log_info("template imported", "{s:s, s:s}", "template", name, "from", file);
	return 0;
}

/* Removes what an import interrupted by a crash left: a name@digest
 * subvolume in templates/ that never became read-only. */
static void sweep_imports(struct na_node *n)
{
	char dir[1100], path[1400];
	DIR *d;
	struct dirent *de;
	struct err e = ERR_INIT;

	snprintf(dir, sizeof(dir), "%s/templates", n->pool);
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !strchr(de->d_name, '@'))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!na_btrfs_is_subvolume(path) || na_btrfs_is_readonly(path))
			continue;
		log_warn("removing an unfinished template import", "{s:s}", "template", de->d_name);
		if (na_btrfs_delete(path, &e) == -1)
			log_error("cannot remove it", "{s:s, s:s}", "template", de->d_name, "error",
				  e.msg);
	}
	if (d)
		closedir(d);
}

static void random_id(char *out, size_t len)
{
	unsigned char r[5] = {0};
	AUTOCLOSE int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd == -1 || read(fd, r, sizeof(r)) != (ssize_t)sizeof(r)) {
		uint64_t t = util_now_ms() ^ (uint64_t)getpid();
		memcpy(r, &t, sizeof(r));
	}
	snprintf(out, len, "sb-%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4]);
}

/* Registers id in state "starting".  Caller holds n->mu.  409 when the id
 * is taken in memory or on disk. */
static int reserve_locked(struct na_node *n, const char *id, const char *tpl,
			  const struct na_limits *lim, const struct na_egress_policy *pol,
			  bool pooled, struct err *e)
{
	char dir[1100];
	struct na_sb *s;
	struct stat st;

	sb_dir(n, id, dir, sizeof(dir));
	if (find_locked(n, id) || stat(dir, &st) == 0)
		return err_http(e, 409, "sandbox `%s` already exists", id);
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(e, ENOMEM, "create %s", id);
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->template, sizeof(s->template), "%s", tpl);
	snprintf(s->state, sizeof(s->state), "starting");
	util_rfc3339(s->created_at, sizeof(s->created_at));
	s->lim = *lim;
	s->egress = *pol;
	s->pooled = pooled;
	s->boot_ms = -1;
	s->sandbox_pid = -1;
	s->next = n->list;
	n->list = s;
	return 0;
}

/* Opens, changes or closes sandbox id's egress proxy listener to match p. */
static int apply_egress(struct na_node *n, const char *id, const struct na_egress_policy *p,
			struct err *e)
{
	int fd;

	if (!n->egress)
		return p->n == 0 ? 0 : err_set(e, 0, "egress proxy is not running");
	if (p->n == 0) {
		na_egress_detach(n->egress, id);
		return 0;
	}
	if (na_egress_set_policy(n->egress, id, p, NULL) == 0)
		return 0;
	fd = na_netns_listen(id, NA_EGRESS_PORT, e);
	if (fd == -1 || na_egress_attach(n->egress, id, fd, p, e) == -1)
		return err_wrap(e, "egress proxy for %s", id);
	return 0;
}

static int write_meta(struct na_node *n, const struct na_sb *s, struct err *e);

/* Takes a ready, unclaimed warm pool member of template tpl for a caller:
 * gives it policy pol and records that in meta.json.  Returns 1 with its id
 * in id_out, 0 when the pool has none ready, -1 with e set. */
static int claim(struct na_node *n, const char *tpl, const struct na_egress_policy *pol,
		 char *id_out, struct err *e)
{
	struct na_sb *s, copy;

	pthread_mutex_lock(&n->mu);
	for (s = n->list; s; s = s->next)
		if (s->pooled && strcmp(s->state, "ready") == 0 && strcmp(s->template, tpl) == 0)
			break;
	if (s) {
		/* "starting" keeps DELETE and the warm thread away meanwhile. */
		s->pooled = false;
		snprintf(s->state, sizeof(s->state), "starting");
		copy = *s;
	}
	pthread_mutex_unlock(&n->mu);
	if (!s)
		return 0;
	copy.egress = *pol;
	snprintf(copy.state, sizeof(copy.state), "ready");
	if (apply_egress(n, copy.id, pol, e) == -1 || write_meta(n, &copy, e) == -1) {
		struct na_egress_policy none = {0};
		apply_egress(n, copy.id, &none, NULL);
		pthread_mutex_lock(&n->mu);
		s = find_locked(n, copy.id);
		if (s) {
			s->pooled = true;
			snprintf(s->state, sizeof(s->state), "ready");
		}
		pthread_mutex_unlock(&n->mu);
		return -1;
	}
	pthread_mutex_lock(&n->mu);
	s = find_locked(n, copy.id);
	if (s) {
		s->egress = *pol;
		s->claimed = true;
		snprintf(s->state, sizeof(s->state), "ready");
	}
	pthread_cond_broadcast(&n->wake); /* refill */
	pthread_mutex_unlock(&n->mu);
	log_info("warm sandbox claimed", "{s:s, s:s}", "id", copy.id, "template", tpl);
	snprintf(id_out, 32, "%s", copy.id);
	return 1;
}

int na_node_create_begin(struct na_node *n, const json_t *req, char *id_out, bool *claimed,
			 struct err *e)
{
	const char *id = NULL, *tname = NULL;
	long long mem, pids;
	json_t *cpus_v;
	double cpus;
	char id_buf[32], tpl[256];
	struct na_limits lim;
	struct na_egress_policy pol;
	int rc;

	*claimed = false;
	if (!json_is_object(req))
		return err_http(e, 400, "the body must be a JSON object");
	if (cj_get_str(req, "id", NULL, &id, e) == -1 ||
	    cj_get_str(req, "template", n->template_name, &tname, e) == -1 ||
	    cj_get_int(req, "memory_mb", default_limits.memory_mb, &mem, e) == -1 ||
	    cj_get_int(req, "pids", default_limits.pids, &pids, e) == -1)
		return -1;
	cpus_v = json_object_get(req, "cpus");
	if (!cpus_v || json_is_null(cpus_v)) {
		cpus = default_limits.cpus;
	} else if (json_is_number(cpus_v)) {
		cpus = json_number_value(cpus_v);
	} else {
		return err_http(e, 400, "`cpus` must be a number");
	}
	if (mem < 256 || mem > 1024 * 1024)
		return err_http(e, 400, "`memory_mb` must be between 256 and 1048576");
	if (!(cpus >= 0.1 && cpus <= 1024))
		return err_http(e, 400, "`cpus` must be between 0.1 and 1024");
	if (pids < 256 || pids > 65536)
		return err_http(e, 400, "`pids` must be between 256 and 65536");
	if (id && !na_valid_id(id))
		return err_http(e, 400, "`id`: `%s` is not valid (1-31 of a-z, 0-9 and -)", id);
	if (na_egress_policy_parse(json_object_get(req, "egress"), &pol, e) == -1)
		return -1;
	if (resolve_template(n, tname, tpl, sizeof(tpl), e) == -1)
		return -1;
	lim.memory_mb = mem;
	lim.cpus = cpus;
	lim.pids = pids;
	/* Warm members have the default limits and a node-chosen id. */
	if (!id && mem == default_limits.memory_mb && cpus == default_limits.cpus &&
	    pids == default_limits.pids) {
		rc = claim(n, tpl, &pol, id_out, e);
		if (rc != 0) {
			*claimed = rc == 1;
			return rc == 1 ? 0 : -1;
		}
	}
	if (!id) {
		random_id(id_buf, sizeof(id_buf));
		id = id_buf;
	}
	pthread_mutex_lock(&n->mu);
	rc = reserve_locked(n, id, tpl, &lim, &pol, false, e);
	pthread_mutex_unlock(&n->mu);
	if (rc == -1)
		return -1;
	snprintf(id_out, 32, "%s", id);
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) == -1 ? -1 : 0;
	return unlink(path) == -1 ? -1 : 0;
}

/* Removes whatever exists of sandbox id, in the reverse order of create.
 * Every step runs even when an earlier one failed; returns -1 with the first
 * error when something could not be removed. */
static int teardown(struct na_node *n, const char *id, struct err *e)
{
	char dir[1100], rootfs[1200], state[32];
	struct err e2 = ERR_INIT;
	int rc = 0;
	uint64_t deadline;
	struct stat st;

	sb_dir(n, id, dir, sizeof(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	if (n->egress)
		na_egress_detach(n->egress, id);
	na_runsc_state(n->runsc_root, id, state, sizeof(state));
	if (strcmp(state, "running") == 0) {
		/* TERM first so cloche-init stops its services in order. */
		if (na_runsc_kill(n->runsc_root, id, "TERM", &e2) == -1)
			log_warn("sandbox stop signal failed", "{s:s, s:s}", "id", id, "error", e2.msg);
		deadline = util_now_ms() + NA_STOP_WAIT_MS;
		while (util_now_ms() < deadline) {
			na_runsc_state(n->runsc_root, id, state, sizeof(state));
			if (strcmp(state, "running") != 0)
				break;
			usleep(100 * 1000);
		}
	}
	if (na_runsc_delete(n->runsc_root, id, &e2) == -1 && rc == 0) {
		*e = e2;
		rc = -1;
	}
	if (na_netns_destroy(id, &e2) == -1 && rc == 0) {
		*e = e2;
		rc = -1;
	}
	if (na_btrfs_delete(rootfs, &e2) == -1 && rc == 0) {
		*e = e2;
		rc = -1;
	}
	/* Last, and only when everything else is gone: the directory is the
	 * record that the rest belongs to this node (start-up clean-up finds
	 * leftovers through it), and a file walk must never enter a live
	 * rootfs. */
	if (rc == 0 && lstat(rootfs, &st) == -1 && errno == ENOENT && lstat(dir, &st) == 0 &&
	    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == -1)
		rc = err_set(e, errno, "remove `%s`", dir);
	if (rc == -1)
		err_wrap(e, "tear down %s", id);
	return rc;
}

/* Asks the sandbox's health endpoint once.  Returns the HTTP status, or 0
 * when nothing answered. */
static int health_status(const char *id)
{
	static const char req[] = "GET /health HTTP/1.0\r\nHost: sandbox\r\n\r\n";
	struct err e = ERR_INIT;
	AUTOCLOSE int fd = na_netns_connect(id, NA_HEALTH_PORT, 1000, &e);
	struct timeval tv = {2, 0};
	char head[64] = {0};
	size_t got = 0;
	ssize_t r;
	int status = 0;

	if (fd == -1)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (util_write_all(fd, req, sizeof(req) - 1) == -1)
		return 0;
	while (got < sizeof(head) - 1) {
		r = read(fd, head + got, sizeof(head) - 1 - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (memchr(head, '\n', got))
			break;
	}
	if (sscanf(head, "HTTP/%*d.%*d %d", &status) != 1)
		return 0;
	return status;
}

static int write_meta(struct na_node *n, const struct na_sb *s, struct err *e)
{
	char path[1200];
	AUTOJSON json_t *m = json_pack(
		"{s:i, s:s, s:s, s:s, s:s, s:{s:I, s:f, s:I}, s:s, s:s, s:o, s:b}", "version", 1,
		"id", s->id, "template", s->template, "created_at", s->created_at, "inner_addr",
		NA_INNER_ADDR, "limits", "memory_mb", (json_int_t)s->lim.memory_mb, "cpus",
		s->lim.cpus, "pids", (json_int_t)s->lim.pids, "runsc_root", n->runsc_root, "netns",
		s->id, "egress", na_egress_policy_json(&s->egress), "pooled", s->pooled);

	if (!m)
		return err_set(e, ENOMEM, "meta.json");
	sb_dir(n, s->id, path, sizeof(path));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/meta.json");
	return na_json_save(path, m, e);
}

/* Logs the end of runsc's console log before rollback removes it. */
static void log_console_tail(const char *id, const char *path)
{
	char buf[1024];
	AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t end;
	ssize_t r;

	if (fd == -1)
		return;
	end = lseek(fd, 0, SEEK_END);
	if (end > (off_t)sizeof(buf) - 1)
		lseek(fd, end - (off_t)sizeof(buf) + 1, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	r = read(fd, buf, sizeof(buf) - 1);
	if (r <= 0)
		return;
	buf[r] = '\0';
	log_error("console of the failed sandbox (end)", "{s:s, s:s}", "id", id, "console", buf);
}

int na_node_create_run(struct na_node *n, const char *id, struct err *e)
{
	char dir[1100], tpl[1400], rootfs[1200], bundle[1200], log_path[1200], state[32];
	struct na_sb copy;
	struct na_sb *s;
	uint64_t t0 = util_now_ms(), deadline, t_run;
	int tries = 0;

	pthread_mutex_lock(&n->mu);
	s = find_locked(n, id);
	if (s)
		copy = *s;
	pthread_mutex_unlock(&n->mu);
	if (!s)
		return err_http(e, 404, "no sandbox `%s`", id);
	sb_dir(n, id, dir, sizeof(dir));
	snprintf(tpl, sizeof(tpl), "%s/templates/%s", n->pool, copy.template);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(bundle, sizeof(bundle), "%s/bundle", dir);
	snprintf(log_path, sizeof(log_path), "%s/console.log", dir);

	if (mkdir(dir, 0700) == -1) {
		err_set(e, errno, "mkdir `%s`", dir);
		goto fail_nodir;
	}
	if (mkdir(bundle, 0700) == -1) {
		err_set(e, errno, "mkdir `%s`", bundle);
		goto fail;
	}
	if (na_btrfs_snapshot(tpl, rootfs, e) == -1 || na_netns_create(id, e) == -1 ||
	    apply_egress(n, id, &copy.egress, e) == -1 ||
	    na_spec_write(bundle, id, rootfs, &copy.lim, e) == -1 || write_meta(n, &copy, e) == -1)
		goto fail;
	t_run = util_now_ms();
	if (na_runsc_run(n->runsc_root, id, bundle, log_path, e) == -1)
		goto fail;
	log_info("sandbox started", "{s:s, s:s, s:I}", "id", id, "template", copy.template,
		 "prepare_ms", (json_int_t)(t_run - t0));
	deadline = t0 + NA_READY_TIMEOUT_MS;
	for (;;) {
		int st = health_status(id);
		if (st == 200)
			break;
		if (++tries % 10 == 0) {
			na_runsc_state(n->runsc_root, id, state, sizeof(state));
			if (strcmp(state, "running") != 0) {
				err_set(e, 0, "container is %s before it became ready (see %s)", state,
					log_path);
				goto fail;
			}
		}
		if (util_now_ms() > deadline) {
			err_set(e, ETIMEDOUT, "health did not answer 200 within %d s (last %d)",
				NA_READY_TIMEOUT_MS / 1000, st);
			goto fail;
		}
		usleep(200 * 1000);
	}
	pthread_mutex_lock(&n->mu);
	s = find_locked(n, id);
	if (s)
		s->sandbox_pid = na_runsc_sandbox_pid(n->runsc_root, id);
	pthread_mutex_unlock(&n->mu);
	set_state(n, id, "ready", (long long)(util_now_ms() - t0));
	log_info("sandbox ready", "{s:s, s:I}", "id", id, "boot_ms",
		 (json_int_t)(util_now_ms() - t0));
	return 0;

fail: {
	struct err e2 = ERR_INIT;
	log_console_tail(id, log_path);
	if (teardown(n, id, &e2) == -1)
		log_error("rollback failed", "{s:s, s:s}", "id", id, "error", e2.msg);
}
fail_nodir:
	err_wrap(e, "create sandbox %s", id);
	log_error("sandbox create failed", "{s:s, s:s}", "id", id, "error", e->msg);
	pthread_mutex_lock(&n->mu);
	unlink_locked(n, id);
	pthread_mutex_unlock(&n->mu);
	return -1;
}

int na_node_destroy(struct na_node *n, const char *id, struct err *e)
{
	char dir[1100], path[128];
	struct na_sb *s;
	struct stat st;
	bool known, on_disk;

	if (!na_valid_id(id))
		return err_http(e, 404, "no sandbox `%s`", id);
	sb_dir(n, id, dir, sizeof(dir));
	na_netns_path(id, 'R', path, sizeof(path));
	pthread_mutex_lock(&n->mu);
	s = find_locked(n, id);
	known = s != NULL;
	if (s && strcmp(s->state, "starting") == 0) {
		pthread_mutex_unlock(&n->mu);
		return err_http(e, 409, "sandbox `%s` is still starting", id);
	}
	if (s && strcmp(s->state, "stopping") == 0) {
		pthread_mutex_unlock(&n->mu);
		return err_http(e, 409, "sandbox `%s` is already being destroyed", id);
	}
	if (s)
		snprintf(s->state, sizeof(s->state), "stopping");
	pthread_mutex_unlock(&n->mu);
	on_disk = stat(dir, &st) == 0 || na_netns_exists(id) || access(path, F_OK) == 0;
	if (!known && !on_disk)
		return err_http(e, 404, "no sandbox `%s`", id);
	if (teardown(n, id, e) == -1) {
		set_state(n, id, "failed", -1);
		return -1;
	}
	pthread_mutex_lock(&n->mu);
	unlink_locked(n, id);
	pthread_mutex_unlock(&n->mu);
	log_info("sandbox destroyed", "{s:s}", "id", id);
	return 0;
}

/* Registers the running sandbox described by meta.  false when meta lacks
 * what is needed. */
static bool adopt_one(struct na_node *n, const char *id, const json_t *meta)
{
	const char *tpl = NULL, *created = NULL;
	json_t *lim = NULL, *v;
	struct na_sb *s;
	struct err e = ERR_INIT;
	long long x;

	if (cj_get_str(meta, "template", "", &tpl, NULL) == -1 || !*tpl ||
	    cj_get_str(meta, "created_at", "", &created, NULL) == -1)
		return false;
	s = calloc(1, sizeof(*s));
	if (!s)
		return false;
	snprintf(s->id, sizeof(s->id), "%.31s", id);
	snprintf(s->template, sizeof(s->template), "%s", tpl);
	snprintf(s->created_at, sizeof(s->created_at), "%s", created);
	snprintf(s->state, sizeof(s->state), "ready");
	s->boot_ms = -1;
	s->sandbox_pid = na_runsc_sandbox_pid(n->runsc_root, id);
	s->lim = default_limits;
	cj_get_obj(meta, "limits", &lim, NULL);
	if (lim) {
		if (cj_get_int(lim, "memory_mb", s->lim.memory_mb, &x, NULL) == 0)
			s->lim.memory_mb = x;
		if (cj_get_int(lim, "pids", s->lim.pids, &x, NULL) == 0)
			s->lim.pids = x;
		v = json_object_get(lim, "cpus");
		if (json_is_number(v))
			s->lim.cpus = json_number_value(v);
	}
	v = json_object_get(meta, "pooled");
	s->pooled = json_is_true(v);
	if (na_egress_policy_parse(json_object_get(meta, "egress"), &s->egress, &e) == -1)
		log_warn("unreadable egress policy in meta.json; using none", "{s:s, s:s}", "id",
			 s->id, "error", e.msg);
	else if (apply_egress(n, s->id, &s->egress, &e) == -1)
		log_error("cannot reopen the egress proxy", "{s:s, s:s}", "id", s->id, "error",
			  e.msg);
	pthread_mutex_lock(&n->mu);
	s->next = n->list;
	n->list = s;
	pthread_mutex_unlock(&n->mu);
	log_info("sandbox re-adopted", "{s:s, s:s, s:b}", "id", s->id, "template", s->template,
		 "pooled", s->pooled);
	return true;
}

/* na_runsc_each callback: a container under this node's runsc root with
 * no directory in sandboxes/ is a leftover of this node; remove it (and its
 * netns pair). */
static void sweep_orphan(const char *id, void *ud)
{
	struct na_node *n = ud;
	char dir[1100];
	struct stat st;
	struct err e = ERR_INIT;
	bool known;

	if (!na_valid_id(id))
		return;
	sb_dir(n, id, dir, sizeof(dir));
	pthread_mutex_lock(&n->mu);
	known = find_locked(n, id) != NULL;
	pthread_mutex_unlock(&n->mu);
	if (known || lstat(dir, &st) == 0)
		return;
	log_warn("removing orphan container", "{s:s}", "id", id);
	if (teardown(n, id, &e) == -1)
		log_error("orphan clean-up failed", "{s:s, s:s}", "id", id, "error", e.msg);
}

void na_node_adopt(struct na_node *n)
{
	char dir[1100], path[1400], state[32];
	DIR *d;
	struct dirent *de;
	struct err e = ERR_INIT;

	snprintf(dir, sizeof(dir), "%s/sandboxes", n->pool);
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL) {
		AUTOJSON json_t *meta = NULL;

		if (de->d_name[0] == '.')
			continue;
		if (!na_valid_id(de->d_name)) {
			log_warn("ignoring foreign entry in sandboxes/", "{s:s}", "name", de->d_name);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s/meta.json", dir, de->d_name);
		err_clear(&e);
		meta = cj_load_file(path, 1 << 16, &e);
		na_runsc_state(n->runsc_root, de->d_name, state, sizeof(state));
		/* A warm member whose create the last run did not finish is not
		 * known to be healthy: replace it rather than hand it out. */
		if (meta && strcmp(state, "running") == 0 &&
		    !(json_is_true(json_object_get(meta, "pooled")) &&
		      health_status(de->d_name) != 200) &&
		    adopt_one(n, de->d_name, meta))
			continue;
		log_warn("cleaning up half-made sandbox", "{s:s, s:s, s:s}", "id", de->d_name,
			 "container", state, "meta", meta ? "present" : e.msg);
		if (teardown(n, de->d_name, &e) == -1)
			log_error("clean-up failed", "{s:s, s:s}", "id", de->d_name, "error", e.msg);
	}
	if (d)
		closedir(d);
	sweep_imports(n);
	if (na_runsc_each(n->runsc_root, sweep_orphan, n, &e) == -1)
		log_error("orphan sweep failed", "{s:s}", "error", e.msg);
}

int na_node_set_egress(struct na_node *n, const char *id, const json_t *policy, struct err *e)
{
	struct na_egress_policy pol, old;
	struct na_sb *s, copy;

	if (na_egress_policy_parse(policy, &pol, e) == -1)
		return -1;
	pthread_mutex_lock(&n->mu);
	s = find_locked(n, id);
	if (s)
		copy = *s;
	if (s && strcmp(s->state, "ready") == 0) {
		old = s->egress;
		s->egress = pol;
		copy.egress = pol;
	}
	pthread_mutex_unlock(&n->mu);
	if (!s)
		return err_http(e, 404, "no sandbox `%s`", id);
	if (strcmp(copy.state, "ready") != 0)
		return err_http(e, 409, "sandbox `%s` is %s", id, copy.state);
	if (apply_egress(n, id, &pol, e) == -1 || write_meta(n, &copy, e) == -1) {
		apply_egress(n, id, &old, NULL);
		pthread_mutex_lock(&n->mu);
		s = find_locked(n, id);
		if (s)
			s->egress = old;
		pthread_mutex_unlock(&n->mu);
		return -1;
	}
	log_info("egress policy set", "{s:s, s:i}", "id", id, "rules", pol.n);
	return 0;
}

static json_t *sb_json(const struct na_sb *s)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:{s:I, s:f, s:I}}", "id", s->id, "state",
			      s->state, "template", s->template, "created_at", s->created_at,
			      "limits", "memory_mb", (json_int_t)s->lim.memory_mb, "cpus",
			      s->lim.cpus, "pids", (json_int_t)s->lim.pids);
	if (!j)
		return NULL;
	json_object_set_new(j, "egress", na_egress_policy_json(&s->egress));
	if (s->boot_ms >= 0)
		json_object_set_new(j, "boot_ms", json_integer(s->boot_ms));
	if (s->pooled)
		json_object_set_new(j, "pooled", json_true());
	if (s->claimed)
		json_object_set_new(j, "warm", json_true());
	if (s->reason[0])
		json_object_set_new(j, "reason", json_string(s->reason));
	return j;
}

bool na_node_state(struct na_node *n, const char *id, char *out, size_t len)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = find_locked(n, id);
	if (s)
		snprintf(out, len, "%s", s->state);
	pthread_mutex_unlock(&n->mu);
	return s != NULL;
}

json_t *na_node_get_json(struct na_node *n, const char *id)
{
	json_t *j = NULL;
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = find_locked(n, id);
	if (s)
		j = sb_json(s);
	pthread_mutex_unlock(&n->mu);
	return j;
}

json_t *na_node_list_json(struct na_node *n)
{
	json_t *arr = json_array();

	pthread_mutex_lock(&n->mu);
	for (struct na_sb *s = n->list; s && arr; s = s->next)
		json_array_append_new(arr, sb_json(s));
	pthread_mutex_unlock(&n->mu);
	return json_pack("{s:o}", "sandboxes", arr);
}

/* Reads a "Name:   123 kB" line of /proc/meminfo, in bytes; 0 when absent. */
static long long meminfo(const char *name)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	long long v = 0;
	size_t nl = strlen(name);

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, nl) == 0 && line[nl] == ':') {
			v = strtoll(line + nl + 1, NULL, 10) * 1024;
			break;
		}
	fclose(f);
	return v;
}

/* Warm members of template tpl (name@digest) counted by state.  Caller
 * holds n->mu. */
static void warm_count_locked(struct na_node *n, const char *tpl, int *ready, int *starting)
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
 * (resolved) one.  Caller holds n->mu. */
static struct na_sb *warm_stale_locked(struct na_node *n, const struct na_warm *w,
				       const char *resolved)
{
	size_t nl = strlen(w->name);

	for (struct na_sb *s = n->list; s; s = s->next)
		if (s->pooled && strcmp(s->state, "ready") == 0 &&
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
	struct na_limits lim = default_limits;
	struct na_egress_policy none = {0};
	struct err e = ERR_INIT;
	int nwarm = n->nwarm;

	pthread_mutex_unlock(&n->mu);
	for (int i = 0; i < nwarm; i++)
		if (resolve_template(n, n->warm[i].name, resolved[i], sizeof(resolved[i]), NULL) == -1)
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
		warm_count_locked(n, resolved[i], &ready, &starting);
		if (ready + starting >= w->target || util_now_ms() < w->retry_at)
			continue;
		random_id(id, sizeof(id));
		if (reserve_locked(n, id, resolved[i], &lim, &none, true, &e) == -1)
			continue;
		pthread_mutex_unlock(&n->mu);
		t0 = util_now_ms();
		rc = na_node_create_run(n, id, &e);
		pthread_mutex_lock(&n->mu);
		if (rc == 0) {
			w->failures = 0;
			w->retry_at = 0;
			warm_count_locked(n, resolved[i], &ready, &starting);
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
	}
}

/* A dead warm member (nobody's sandbox) to remove.  Caller holds n->mu. */
static bool reap_dead_member_locked(struct na_node *n)
{
	char id[32];
	struct err e = ERR_INIT;

	for (struct na_sb *s = n->list; s; s = s->next) {
		if (!s->pooled || strcmp(s->state, "failed") != 0)
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

json_t *na_node_capacity_json(struct na_node *n)
{
	struct statvfs vfs;
	long long disk_free = 0, disk_total = 0;
	int running = 0, total = 0;

	if (statvfs(n->pool, &vfs) == 0) {
		disk_free = (long long)vfs.f_bavail * (long long)vfs.f_frsize;
		disk_total = (long long)vfs.f_blocks * (long long)vfs.f_frsize;
	}
	char resolved[NA_WARM_MAX][256];
	json_t *warm = json_array();

	for (int i = 0; i < n->nwarm; i++)
		if (resolve_template(n, n->warm[i].name, resolved[i], sizeof(resolved[i]), NULL) == -1)
			resolved[i][0] = '\0';
	pthread_mutex_lock(&n->mu);
	for (struct na_sb *s = n->list; s; s = s->next) {
		total++;
		if (strcmp(s->state, "ready") == 0)
			running++;
	}
	for (int i = 0; i < n->nwarm && warm; i++) {
		int ready = 0, starting = 0;
		if (resolved[i][0])
			warm_count_locked(n, resolved[i], &ready, &starting);
		json_array_append_new(warm, json_pack("{s:s, s:s, s:i, s:i, s:i}", "template",
						      n->warm[i].name, "resolved", resolved[i],
						      "target", n->warm[i].target, "ready", ready,
						      "starting", starting));
	}
	pthread_mutex_unlock(&n->mu);
	return json_pack("{s:{s:I, s:I}, s:i, s:{s:I, s:I}, s:i, s:i, s:o}", "memory", "total",
			 (json_int_t)meminfo("MemTotal"), "available",
			 (json_int_t)meminfo("MemAvailable"), "cpus",
			 (int)sysconf(_SC_NPROCESSORS_ONLN), "disk", "free", (json_int_t)disk_free,
			 "total", (json_int_t)disk_total, "running", running, "sandboxes", total,
			 "warm", warm);
}
