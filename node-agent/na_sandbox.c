/* The sandbox registry and lifecycle.  Each step of create leaves something
 * that teardown() knows how to remove even when later steps never ran, so
 * rollback after a failure and destroy are the same function, and so is the
 * clean-up of half-made sandboxes found at start-up. */
#include "node-agent/na_node.h"
#include "node-agent/na_btrfs.h"
#include "node-agent/na_ckpt.h"
#include "node-agent/na_egress.h"
#include "node-agent/na_ghttp.h"
#include "node-agent/na_netns.h"
#include "node-agent/na_runsc.h"
#include "node-agent/na_spec.h"
#include "node-agent/na_test.h"

#include "common/json.h"
#include "common/log.h"
#include "common/rnd.h"
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

const struct na_limits na_default_limits = {2048, 1, 1024};

void na_sb_dir(const struct na_node *n, const char *id, char *out, size_t len)
{
	snprintf(out, len, "%s/sandboxes/%s", n->pool, id);
}

struct na_sb *na_find_locked(struct na_node *n, const char *id)
{
	for (struct na_sb *s = n->list; s; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

void na_unlink_locked(struct na_node *n, const char *id)
{
	for (struct na_sb **p = &n->list; *p; p = &(*p)->next) {
		if (strcmp((*p)->id, id) == 0) {
			struct na_sb *s = *p;
			*p = s->next;
			json_decref(s->checkpoint);
			free(s);
			return;
		}
	}
}

void na_set_state(struct na_node *n, const char *id, const char *state)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s)
		snprintf(s->state, sizeof(s->state), "%s", state);
	pthread_mutex_unlock(&n->mu);
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
	snprintf(n->proxy_domain, sizeof(n->proxy_domain), "%s",
		 o->proxy_domain ? o->proxy_domain : "");
	snprintf(n->template_name, sizeof(n->template_name), "%s", o->template_name);
	snprintf(n->proxy_admin, sizeof(n->proxy_admin), "%s", o->proxy_admin ? o->proxy_admin : "");
	snprintf(n->cred, sizeof(n->cred), "%s", o->credential ? o->credential : "");
	n->s3 = o->s3;
	if (o->seal)
		n->seal = *o->seal;
	snprintf(n->s3_prefix, sizeof(n->s3_prefix), "%s", o->s3_prefix ? o->s3_prefix : "");
	n->egress = o->egress;
	n->max_sandboxes = o->max_sandboxes;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->wake, NULL);
	if (na_parse_warm(n, o->warm, e) == -1) {
		na_node_free(n);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/sandboxes", n->pool);
	if (mkdir(path, 0700) == -1 && errno != EEXIST) {
		err_set(e, errno, "mkdir `%s`", path);
		na_node_free(n);
		return NULL;
	}
	/* /run/cloche may be missing on a fresh boot. */
	if (util_mkdir_parents(n->runsc_root, 0700) == -1 ||
	    (mkdir(n->runsc_root, 0700) == -1 && errno != EEXIST)) {
		err_set(e, errno, "mkdir `%s`", n->runsc_root);
		na_node_free(n);
		return NULL;
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
		json_decref(s->checkpoint);
		free(s);
	}
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->mu);
	free(n);
}

int na_random_id(char *out, size_t len, struct err *e)
{
	return rnd_hex("sb-", 5, out, len, e);
}

/* Registers id in state "starting".  Caller holds n->mu.  409 when the id
 * is taken in memory or on disk. */
/* runsc finds a container by prefix: with both `sb-1` and `sb-11` present,
 * every command naming `sb-1` fails as ambiguous.  So no id may be a prefix
 * of another on the node. */
struct prefix_check {
	const char *id;
	char clash[32];
};

static void prefix_clash(const char *other, void *ud)
{
	struct prefix_check *pc = ud;
	size_t a = strlen(pc->id), b = strlen(other);

	if (!pc->clash[0] && a != b && strncmp(pc->id, other, a < b ? a : b) == 0)
		snprintf(pc->clash, sizeof(pc->clash), "%s", other);
}

int na_reserve_locked(struct na_node *n, const char *id, const char *tpl,
		      const struct na_limits *lim, const struct na_egress_policy *pol, bool pooled,
		      struct err *e)
{
	char dir[1100];
	struct na_sb *s;
	struct stat st;
	struct prefix_check pc = {.id = id};

	na_sb_dir(n, id, dir, sizeof(dir));
	if (na_find_locked(n, id) || stat(dir, &st) == 0)
		return err_http(e, 409, "sandbox `%s` already exists", id);
	for (s = n->list; s; s = s->next)
		prefix_clash(s->id, &pc);
	na_runsc_each(n->runsc_root, prefix_clash, &pc, NULL);
	if (pc.clash[0])
		return err_http(e, 409,
				"id `%s` and the existing `%s` would be ambiguous to runsc (one is "
				"a prefix of the other); choose another id",
				id, pc.clash);
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(e, ENOMEM, "create %s", id);
	snprintf(s->id, sizeof(s->id), "%s", id);
	snprintf(s->template, sizeof(s->template), "%s", tpl);
	snprintf(s->state, sizeof(s->state), "starting");
	s->desk = na_desk_default;
	if (rnd_token(18, s->vnc_secret, sizeof(s->vnc_secret), e) == -1 ||
	    rnd_token(18, s->desk.rec_secret, sizeof(s->desk.rec_secret), e) == -1) {
		free(s);
		return err_wrap(e, "create %s: secret", id);
	}
	util_rfc3339(s->created_at, sizeof(s->created_at));
	s->lim = *lim;
	s->egress = *pol;
	s->pooled = pooled;
	s->boot_ms = -1;
	s->wake_ms = -1;
	s->sandbox_pid = -1;
	s->next = n->list;
	n->list = s;
	return 0;
}

/* Opens, changes or closes sandbox id's egress proxy listener to match p. */
int na_apply_egress(struct na_node *n, const char *id, const struct na_egress_policy *p,
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


void na_node_changed(struct na_node *n)
{
	if (n->changed)
		n->changed(n->changed_ud);
}

void na_node_on_change(struct na_node *n, void (*fn)(void *ud), void *ud)
{
	pthread_mutex_lock(&n->mu);
	n->changed = fn;
	n->changed_ud = ud;
	pthread_mutex_unlock(&n->mu);
}

bool na_room_locked(const struct na_node *n)
{
	int count = 0;

	if (n->max_sandboxes <= 0)
		return true;
	for (const struct na_sb *s = n->list; s; s = s->next)
		count++;
	return count < n->max_sandboxes;
}

static bool claimable(const struct na_sb *s)
{
	return s->pooled && !s->busy && strcmp(s->state, "ready") == 0;
}

/* Takes a ready, unclaimed warm pool member for a caller: member want_id
 * when given, else any of template tpl.  Gives it policy pol and records
 * that in meta.json.  Returns 1 with its id in id_out, 0 when there is none
 * to take (with want_id: e says why, 404 or 409), -1 with e set. */
static int claim(struct na_node *n, const char *tpl, const char *want_id,
		 const struct na_egress_policy *pol, char *id_out, struct err *e)
{
	struct na_sb *s, copy;

	pthread_mutex_lock(&n->mu);
	if (want_id) {
		s = na_find_locked(n, want_id);
		if (!s || !claimable(s)) {
			pthread_mutex_unlock(&n->mu);
			if (!s)
				return err_http(e, 404, "no sandbox `%s`", want_id);
			return err_http(e, 409, "sandbox `%s` is not a ready, unclaimed pool member",
					want_id);
		}
	} else {
		for (s = n->list; s; s = s->next)
			if (claimable(s) && strcmp(s->template, tpl) == 0)
				break;
	}
	if (s) {
		/* "starting" keeps DELETE, other claims and the warm thread away. */
		s->pooled = false;
		snprintf(s->state, sizeof(s->state), "starting");
		copy = *s;
	}
	pthread_mutex_unlock(&n->mu);
	if (!s)
		return 0;
	copy.egress = *pol;
	snprintf(copy.state, sizeof(copy.state), "ready");
	if (na_apply_egress(n, copy.id, pol, e) == -1 || na_write_meta(n, &copy, e) == -1) {
		struct na_egress_policy none = {0};
		na_apply_egress(n, copy.id, &none, NULL);
		pthread_mutex_lock(&n->mu);
		s = na_find_locked(n, copy.id);
		if (s) {
			s->pooled = true;
			snprintf(s->state, sizeof(s->state), "ready");
		}
		pthread_mutex_unlock(&n->mu);
		return -1;
	}
	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, copy.id);
	if (s) {
		s->egress = *pol;
		s->claimed = true;
		snprintf(s->state, sizeof(s->state), "ready");
	}
	pthread_cond_broadcast(&n->wake); /* refill */
	pthread_mutex_unlock(&n->mu);
	log_info("warm sandbox claimed", "{s:s, s:s}", "id", copy.id, "template", copy.template);
	na_node_changed(n);
	snprintf(id_out, 32, "%s", copy.id);
	return 1;
}

int na_node_claim(struct na_node *n, const char *id, const json_t *body, struct err *e)
{
	struct na_egress_policy pol;
	char out[32];
	int rc;

	if (!na_valid_id(id))
		return err_http(e, 404, "no sandbox `%s`", id);
	if (!json_is_object(body))
		return err_http(e, 400, "the body must be a JSON object");
	if (na_egress_policy_parse(json_object_get(body, "egress"), &pol, e) == -1)
		return -1;
	rc = claim(n, NULL, id, &pol, out, e);
	return rc == 1 ? 0 : -1;
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
	struct na_desk desk;
	int rc;

	*claimed = false;
	if (!json_is_object(req))
		return err_http(e, 400, "the body must be a JSON object");
	if (cj_get_str(req, "id", NULL, &id, e) == -1 ||
	    cj_get_str(req, "template", n->template_name, &tname, e) == -1 ||
	    cj_get_int(req, "memory_mb", na_default_limits.memory_mb, &mem, e) == -1 ||
	    cj_get_int(req, "pids", na_default_limits.pids, &pids, e) == -1)
		return -1;
	cpus_v = json_object_get(req, "cpus");
	if (!cpus_v || json_is_null(cpus_v)) {
		cpus = na_default_limits.cpus;
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
	if (na_egress_policy_parse(json_object_get(req, "egress"), &pol, e) == -1 ||
	    na_desk_parse(json_object_get(req, "desktop"), false, &desk, e) == -1)
		return -1;
	if (na_resolve_template(n, tname, tpl, sizeof(tpl), e) == -1)
		return -1;
	lim.memory_mb = mem;
	lim.cpus = cpus;
	lim.pids = pids;
	/* Warm members have the default limits and desktop switches (the guest
	 * read those at its boot) and a node-chosen id. */
	if (!id && mem == na_default_limits.memory_mb && cpus == na_default_limits.cpus &&
	    pids == na_default_limits.pids && desk.clipboard == na_desk_default.clipboard &&
	    desk.resize == na_desk_default.resize) {
		rc = claim(n, tpl, NULL, &pol, id_out, e);
		if (rc != 0) {
			*claimed = rc == 1;
			return rc == 1 ? 0 : -1;
		}
	}
	if (!id) {
		if (na_random_id(id_buf, sizeof(id_buf), e) == -1)
			return -1;
		id = id_buf;
	}
	pthread_mutex_lock(&n->mu);
	if (!na_room_locked(n))
		rc = err_http(e, 503, "this node holds its maximum of %d sandboxes",
			      n->max_sandboxes);
	else
		rc = na_reserve_locked(n, id, tpl, &lim, &pol, false, e);
	if (rc == 0) {
		struct na_sb *s = na_find_locked(n, id);
		s->desk.clipboard = desk.clipboard;
		s->desk.resize = desk.resize;
	}
	pthread_mutex_unlock(&n->mu);
	if (rc == -1)
		return -1;
	snprintf(id_out, 32, "%s", id);
	return 0;
}

void na_node_create_cancel(struct na_node *n, const char *id)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s && strcmp(s->state, "starting") == 0)
		na_unlink_locked(n, id);
	pthread_mutex_unlock(&n->mu);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) == -1 && errno != ENOENT ? -1 : 0;
	return unlink(path) == -1 && errno != ENOENT ? -1 : 0;
}

/* Removes whatever exists of sandbox id, in the reverse order of create.
 * Every step runs even when an earlier one failed; returns -1 with the first
 * error when something could not be removed. */
int na_rm_files(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int na_teardown(struct na_node *n, const char *id, struct err *e)
{
	char dir[1100], rootfs[1200], state[32];
	struct err e2 = ERR_INIT;
	int rc = 0;
	uint64_t deadline;
	struct stat st;

	na_sb_dir(n, id, dir, sizeof(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	if (n->egress)
		na_egress_detach(n->egress, id);
	na_test_pause(NA_HOOK_TEARDOWN);
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
	if (na_ckpt_remove_all(n, id, &e2) == -1 && rc == 0) {
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

int na_sandbox_get(const char *id, const char *path, struct buf *body)
{
	struct err e = ERR_INIT;
	AUTOCLOSE int fd = na_ghttp_connect(id, NA_HEALTH_PORT, 1000, 2, &e);
	size_t max = body ? body->max : 1 << 16;
	AUTOBUF struct buf answer = BUF_INIT(max + 8192); /* the body and its head */
	const char *got;
	int status;

	if (fd == -1)
		return 0;
	status = na_ghttp_exchange(fd, "GET", path, NA_HEALTH_PORT, "", NULL, max, &answer, &got,
				   &e);
	if (status <= 0)
		return 0;
	if (body && buf_append(body, got, answer.len - (size_t)(got - answer.data), NULL) == -1)
		return 0;
	return status;
}

/* The HTTP status of the sandbox's health endpoint, 0 when nothing answered. */
int na_health_status(const char *id)
{
	return na_sandbox_get(id, "/health", NULL);
}

int na_write_meta(struct na_node *n, const struct na_sb *s, struct err *e)
{
	char path[1200];
	AUTOJSON json_t *m = json_pack(
		"{s:i, s:s, s:s, s:s, s:s, s:{s:I, s:f, s:I}, s:s, s:s, s:o, s:b, s:s, s:s, s:i, s:s}",
		"version", 1,
		"id", s->id, "template", s->template, "created_at", s->created_at, "inner_addr",
		NA_INNER_ADDR, "limits", "memory_mb", (json_int_t)s->lim.memory_mb, "cpus",
		s->lim.cpus, "pids", (json_int_t)s->lim.pids, "runsc_root", n->runsc_root, "netns",
		s->id, "egress", na_egress_policy_json(&s->egress), "pooled", s->pooled, "vnc_secret",
		s->vnc_secret, "state", s->state, "generation", s->generation, "forked_from",
		s->forked_from);

	if (!m)
		return err_set(e, ENOMEM, "meta.json");
	json_object_set_new(m, "desktop", na_desk_json(&s->desk, true));
	na_sb_dir(n, s->id, path, sizeof(path));
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

int na_wait_ready(struct na_node *n, const char *id, uint64_t deadline, int poll_ms,
		  const char *log_path, struct err *e)
{
	char state[32];
	int tries = 0, st = 0;
	int check_every = poll_ms > 0 && poll_ms < 2000 ? 2000 / poll_ms : 1;

	for (;;) {
		st = na_health_status(id);
		if (st == 200)
			return 0;
		if (++tries % check_every == 0) {
			na_runsc_state(n->runsc_root, id, state, sizeof(state));
			if (strcmp(state, "running") != 0)
				return err_set(e, 0, "container is %s before it became ready (see %s)",
					       state, log_path);
		}
		if (util_now_ms() > deadline)
			return err_set(e, ETIMEDOUT, "health did not answer 200 in time (last %d)", st);
		usleep((useconds_t)poll_ms * 1000);
	}
}

int na_node_create_run(struct na_node *n, const char *id, struct err *e)
{
	char dir[1100], tpl[1400], rootfs[1200], bundle[1200], log_path[1200];
	struct na_sb copy;
	struct na_sb *s;
	uint64_t t0 = util_now_ms(), t_run;
	int pid;
	long long boot_ms;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s)
		copy = *s;
	pthread_mutex_unlock(&n->mu);
	if (!s)
		return err_http(e, 404, "no sandbox `%s`", id);
	na_sb_dir(n, id, dir, sizeof(dir));
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
	    na_apply_egress(n, id, &copy.egress, e) == -1 ||
	    na_spec_write(bundle, id, rootfs, &copy.lim, copy.vnc_secret, n->proxy_domain,
			  &copy.desk, e) == -1 ||
	    na_write_meta(n, &copy, e) == -1)
		goto fail;
	t_run = util_now_ms();
	if (na_runsc_run(n->runsc_root, id, bundle, log_path, e) == -1)
		goto fail;
	log_info("sandbox started", "{s:s, s:s, s:I}", "id", id, "template", copy.template,
		 "prepare_ms", (json_int_t)(t_run - t0));
	if (na_wait_ready(n, id, t0 + NA_READY_TIMEOUT_MS, 200, log_path, e) == -1)
		goto fail;
	boot_ms = (long long)(util_now_ms() - t0);
	pid = na_runsc_sandbox_pid(n->runsc_root, id);
	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s) {
		snprintf(s->state, sizeof(s->state), "ready");
		s->boot_ms = boot_ms;
		s->sandbox_pid = pid;
	}
	pthread_mutex_unlock(&n->mu);
	log_info("sandbox ready", "{s:s, s:I}", "id", id, "boot_ms", (json_int_t)boot_ms);
	na_node_changed(n);
	return 0;

fail: {
	struct err e2 = ERR_INIT;
	log_console_tail(id, log_path);
	if (na_teardown(n, id, &e2) == -1)
		log_error("rollback failed", "{s:s, s:s}", "id", id, "error", e2.msg);
}
fail_nodir:
	err_wrap(e, "create sandbox %s", id);
	log_error("sandbox create failed", "{s:s, s:s}", "id", id, "error", e->msg);
	pthread_mutex_lock(&n->mu);
	na_unlink_locked(n, id);
	pthread_mutex_unlock(&n->mu);
	na_node_changed(n);
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
	na_sb_dir(n, id, dir, sizeof(dir));
	na_netns_path(id, 'R', path, sizeof(path));
	na_test_pause(NA_HOOK_DESTROY);
	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	known = s != NULL;
	if (s && strcmp(s->state, "starting") == 0) {
		pthread_mutex_unlock(&n->mu);
		return err_http(e, 409, "sandbox `%s` is still starting", id);
	}
	if (s && strcmp(s->state, "stopping") == 0) {
		pthread_mutex_unlock(&n->mu);
		return err_http(e, 409, "sandbox `%s` is already being destroyed", id);
	}
	if (s && (strcmp(s->state, "hibernating") == 0 || strcmp(s->state, "waking") == 0 ||
		  strcmp(s->state, "forking") == 0 || strcmp(s->state, "offloading") == 0)) {
		char now[16];
		snprintf(now, sizeof(now), "%s", s->state);
		pthread_mutex_unlock(&n->mu);
		return err_http(e, 409, "sandbox `%s` is %s; try again when that is done", id, now);
	}
	if (s && s->busy) {
		pthread_mutex_unlock(&n->mu);
		return err_http(e, 409, "sandbox `%s` is being changed (egress); try again", id);
	}
	if (s)
		snprintf(s->state, sizeof(s->state), "stopping");
	pthread_mutex_unlock(&n->mu);
	on_disk = stat(dir, &st) == 0 || na_netns_exists(id) || access(path, F_OK) == 0;
	if (!known && !on_disk)
		return err_http(e, 404, "no sandbox `%s`", id);
	if (na_teardown(n, id, e) == -1) {
		na_set_state(n, id, "failed");
		return -1;
	}
	pthread_mutex_lock(&n->mu);
	na_unlink_locked(n, id);
	pthread_mutex_unlock(&n->mu);
	log_info("sandbox destroyed", "{s:s}", "id", id);
	na_node_changed(n);
	return 0;
}

struct na_sb *na_sb_from_meta(const char *id, const json_t *meta)
{
	const char *tpl = NULL, *created = NULL, *secret = NULL, *parent = NULL;
	json_t *lim = NULL, *v;
	struct na_sb *s;
	struct err e = ERR_INIT;
	long long x;

	if (cj_get_str(meta, "template", "", &tpl, NULL) == -1 || !*tpl ||
	    cj_get_str(meta, "created_at", "", &created, NULL) == -1)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->id, sizeof(s->id), "%.31s", id);
	snprintf(s->template, sizeof(s->template), "%s", tpl);
	snprintf(s->created_at, sizeof(s->created_at), "%s", created);
	snprintf(s->state, sizeof(s->state), "ready");
	if (cj_get_str(meta, "vnc_secret", "", &secret, NULL) == 0)
		snprintf(s->vnc_secret, sizeof(s->vnc_secret), "%s", secret);
	s->desk = na_desk_default;
	if (na_desk_parse(json_object_get(meta, "desktop"), true, &s->desk, &e) == -1)
		log_warn("unreadable desktop switches; using the defaults", "{s:s, s:s}", "id", id,
			 "error", e.msg);
	s->boot_ms = -1;
	s->wake_ms = -1;
	s->sandbox_pid = -1;
	if (cj_get_int(meta, "generation", 0, &x, NULL) == 0 && x > 0 && x < 1 << 30)
		s->generation = (int)x;
	if (cj_get_str(meta, "forked_from", "", &parent, NULL) == 0)
		snprintf(s->forked_from, sizeof(s->forked_from), "%.31s", parent);
	s->lim = na_default_limits;
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
	return s;
}

/* Registers the running sandbox described by meta.  false when meta lacks
 * what is needed. */
static bool adopt_one(struct na_node *n, const char *id, const json_t *meta)
{
	struct na_sb *s = na_sb_from_meta(id, meta);
	struct err e = ERR_INIT;

	if (!s)
		return false;
	s->sandbox_pid = na_runsc_sandbox_pid(n->runsc_root, id);
	if (s->egress.n && na_apply_egress(n, s->id, &s->egress, &e) == -1)
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
	na_sb_dir(n, id, dir, sizeof(dir));
	pthread_mutex_lock(&n->mu);
	known = na_find_locked(n, id) != NULL;
	pthread_mutex_unlock(&n->mu);
	if (known || lstat(dir, &st) == 0)
		return;
	log_warn("removing orphan container", "{s:s}", "id", id);
	if (na_teardown(n, id, &e) == -1)
		log_error("orphan clean-up failed", "{s:s, s:s}", "id", id, "error", e.msg);
}

void na_node_adopt(struct na_node *n)
{
	char dir[1100], path[1400], state[32];
	const char *mstate;
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
		mstate = meta ? json_string_value(json_object_get(meta, "state")) : NULL;
		mstate = mstate ? mstate : "";
		/* Caught in a checkpoint: whatever runsc says now (a checkpoint
		 * the last run started may still be stopping the container), no
		 * part of it is used; na_ckpt.c boots the rootfs again. */
		if (meta && (strcmp(mstate, "hibernating") == 0 || strcmp(mstate, "forking") == 0) &&
		    na_ckpt_adopt(n, de->d_name, meta))
			continue;
		/* A warm member whose create the last run did not finish, or a
		 * sandbox whose wake it did not finish, is not known to be
		 * healthy: replace or undo rather than hand it out. */
		if (meta && strcmp(state, "running") == 0 &&
		    !((json_is_true(json_object_get(meta, "pooled")) ||
		       strcmp(mstate, "hibernated") == 0) &&
		      na_health_status(de->d_name) != 200) &&
		    adopt_one(n, de->d_name, meta))
			continue;
		/* Hibernated: na_ckpt.c keeps it. */
		if (meta && na_ckpt_adopt(n, de->d_name, meta))
			continue;
		log_warn("cleaning up half-made sandbox", "{s:s, s:s, s:s}", "id", de->d_name,
			 "container", state, "meta", meta ? "present" : e.msg);
		if (na_teardown(n, de->d_name, &e) == -1)
			log_error("clean-up failed", "{s:s, s:s}", "id", de->d_name, "error", e.msg);
	}
	if (d)
		closedir(d);
	na_sweep_imports(n);
	na_ckpt_sweep(n);
	if (na_runsc_each(n->runsc_root, sweep_orphan, n, &e) == -1)
		log_error("orphan sweep failed", "{s:s}", "error", e.msg);
}

int na_node_egress_begin(struct na_node *n, const char *id, const json_t *policy,
			 struct na_egress_policy *pol, struct err *e)
{
	struct na_sb *s;
	int rc = 0;

	if (na_egress_policy_parse(policy, pol, e) == -1)
		return -1;
	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (!s)
		rc = err_http(e, 404, "no sandbox `%s`", id);
	else if (strcmp(s->state, "ready") != 0)
		rc = err_http(e, 409, "sandbox `%s` is %s", id, s->state);
	else if (s->busy)
		rc = err_http(e, 409, "sandbox `%s` is being changed; try again", id);
	else
		s->busy = true;
	pthread_mutex_unlock(&n->mu);
	return rc;
}

int na_node_egress_run(struct na_node *n, const char *id, const struct na_egress_policy *pol,
		       struct err *e)
{
	struct na_egress_policy old;
	struct na_sb *s, copy;
	int rc = 0;

	/* busy keeps DELETE away, so the entry stays until this ends. */
	na_test_pause(NA_HOOK_EGRESS_APPLY);
	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s) {
		old = s->egress;
		copy = *s;
		copy.egress = *pol;
	}
	pthread_mutex_unlock(&n->mu);
	if (!s)
		return err_http(e, 404, "no sandbox `%s`", id);
	if (na_apply_egress(n, id, pol, e) == -1 || na_write_meta(n, &copy, e) == -1) {
		na_apply_egress(n, id, &old, NULL);
		rc = -1;
	}
	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s) {
		if (rc == 0)
			s->egress = *pol;
		s->busy = false;
	}
	pthread_mutex_unlock(&n->mu);
	if (rc == 0)
		log_info("egress policy set", "{s:s, s:i}", "id", id, "rules", pol->n);
	return rc;
}

void na_node_egress_cancel(struct na_node *n, const char *id)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s)
		s->busy = false;
	pthread_mutex_unlock(&n->mu);
}

/* CPU time the sandbox's cgroup used so far (gVisor itself included), in
 * ms, or -1: cgroup v1 cpuacct.usage (ns) or v2 cpu.stat usage_usec.  The
 * portal's idle policy compares it between heartbeats. */
static long long cpu_ms(const char *id)
{
	char path[256], buf[4096];
	long long v = -1;
	AUTOCLOSE int fd = -1;
	ssize_t r;
	const char *u;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuacct/%s/cpuacct.usage", id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd != -1) {
		r = read(fd, buf, sizeof(buf) - 1);
		buf[r > 0 ? r : 0] = '\0';
		return r > 0 ? strtoll(buf, NULL, 10) / 1000000 : -1;
	}
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cpu.stat", id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	r = read(fd, buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = '\0';
	u = strstr(buf, "usage_usec ");
	if (u)
		v = strtoll(u + 11, NULL, 10) / 1000;
	return v;
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
	if (s->vnc_secret[0])
		json_object_set_new(j, "vnc_secret", json_string(s->vnc_secret));
	json_object_set_new(j, "desktop", na_desk_json(&s->desk, false));
	if (s->boot_ms >= 0)
		json_object_set_new(j, "boot_ms", json_integer(s->boot_ms));
	if (s->pooled)
		json_object_set_new(j, "pooled", json_true());
	if (s->claimed)
		json_object_set_new(j, "warm", json_true());
	if (s->reason[0])
		json_object_set_new(j, "reason", json_string(s->reason));
	if (s->generation > 0)
		json_object_set_new(j, "generation", json_integer(s->generation));
	if (s->last_error[0])
		json_object_set_new(j, "last_error", json_string(s->last_error));
	if (s->forked_from[0])
		json_object_set_new(j, "forked_from", json_string(s->forked_from));
	if (s->wake_ms >= 0)
		json_object_set_new(j, "wake_ms", json_integer(s->wake_ms));
	if (s->checkpoint)
		json_object_set(j, "checkpoint", s->checkpoint);
	if (strcmp(s->state, "ready") == 0) {
		long long c = cpu_ms(s->id);
		if (c >= 0)
			json_object_set_new(j, "cpu_ms", json_integer(c));
	}
	return j;
}

bool na_node_state(struct na_node *n, const char *id, char *out, size_t len)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s)
		snprintf(out, len, "%s", s->state);
	pthread_mutex_unlock(&n->mu);
	return s != NULL;
}

bool na_node_secret(struct na_node *n, const char *id, char *out, size_t len)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s)
		snprintf(out, len, "%s", s->vnc_secret);
	pthread_mutex_unlock(&n->mu);
	return s != NULL;
}

json_t *na_node_get_json(struct na_node *n, const char *id)
{
	json_t *j = NULL;
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
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
json_t *na_node_capacity_json(struct na_node *n)
{
	struct statvfs vfs;
	long long disk_free = 0, disk_total = 0;
	int running = 0, total = 0;
	json_t *ckpt;

	if (statvfs(n->pool, &vfs) == 0) {
		disk_free = (long long)vfs.f_bavail * (long long)vfs.f_frsize;
		disk_total = (long long)vfs.f_blocks * (long long)vfs.f_frsize;
	}
	char resolved[NA_WARM_MAX][256];
	json_t *warm = json_array();

	for (int i = 0; i < n->nwarm; i++)
		if (na_resolve_template(n, n->warm[i].name, resolved[i], sizeof(resolved[i]), NULL) == -1)
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
			na_warm_count_locked(n, resolved[i], &ready, &starting);
		json_array_append_new(warm, json_pack("{s:s, s:s, s:i, s:i, s:i}", "template",
						      n->warm[i].name, "resolved", resolved[i],
						      "target", n->warm[i].target, "ready", ready,
						      "starting", starting));
	}
	ckpt = json_pack("{s:I, s:I, s:I, s:I, s:I}", "ok", (json_int_t)n->ckpt_ok, "failed",
			 (json_int_t)n->ckpt_failed, "refused", (json_int_t)n->ckpt_refused, "wakes",
			 (json_int_t)n->wakes, "wake_failures", (json_int_t)n->wake_failures);
	pthread_mutex_unlock(&n->mu);
	return json_pack("{s:{s:I, s:I}, s:i, s:{s:I, s:I}, s:i, s:i, s:i, s:o, s:o, s:o}", "memory",
			 "total", (json_int_t)meminfo("MemTotal"), "available",
			 (json_int_t)meminfo("MemAvailable"), "cpus",
			 (int)sysconf(_SC_NPROCESSORS_ONLN), "disk", "free", (json_int_t)disk_free,
			 "total", (json_int_t)disk_total, "running", running, "sandboxes", total,
			 "max_sandboxes", n->max_sandboxes, "free_slots",
			 n->max_sandboxes > 0 ? json_integer(n->max_sandboxes > total
								 ? n->max_sandboxes - total : 0)
					      : json_null(),
			 "warm", warm, "checkpoints", ckpt);
}

