/* Checkpoints on the local disk: the gate, hibernate, wake, fork, and the
 * start-up view of them.  The order of every step is chosen so that a crash
 * of the agent between any two leaves either a running sandbox, a complete
 * generation that meta.json names, or a rootfs to boot from (na_ckpt.h). */
#include "node-agent/na_ckpt.h"
#include "node-agent/na_btrfs.h"
#include "node-agent/na_netns.h"
#include "node-agent/na_rec.h"
#include "node-agent/na_rekey.h"
#include "node-agent/na_node.h"
#include "node-agent/na_runsc.h"
#include "node-agent/na_spec.h"
#include "node-agent/na_test.h"

#include "common/http_client.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* How long connections the proxy and the egress engine just cut may take
 * to leave the sandbox's table, and how long the proxy holds new ones. */
#define NA_CENSUS_WAIT_MS 3000
#define NA_DRAIN_HOLD_MS 120000
#define NA_RESTORE_TIMEOUT_MS 60000
#define NA_REBOOT_TIMEOUT_MS 180000

static void ckpt_dir(const struct na_node *n, const char *id, char *out, size_t len)
{
	snprintf(out, len, "%s/checkpoints/%s", n->pool, id);
}

void na_ckpt_gen_dir(const struct na_node *n, const char *id, int gen, const char *suffix,
		    char *out, size_t len)
{
	snprintf(out, len, "%s/checkpoints/%s/%d%s", n->pool, id, gen, suffix);
}

/* ---- registry helpers ---- */

/* One more of an outcome counter (capacity JSON reads them under mu). */
static void count(struct na_node *n, long long *c)
{
	pthread_mutex_lock(&n->mu);
	(*c)++;
	pthread_mutex_unlock(&n->mu);
}

/* Moves id from one of the states in `from` ("a|b") to `to`; 404/409. */
int na_node_move(struct na_node *n, const char *id, const char *from, const char *to,
		 struct err *e)
{
	struct na_sb *s;
	int rc = 0;
	char want[80];

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	snprintf(want, sizeof(want), "|%s|", from);
	if (!s) {
		rc = err_http(e, 404, "no sandbox `%s`", id);
	} else {
		char have[24];
		snprintf(have, sizeof(have), "|%s|", s->state);
		if (!strstr(want, have) || s->busy || (s->pooled && strcmp(to, "hibernating") == 0))
			rc = err_http(e, 409, "sandbox `%s` is %s%s", id,
				      s->pooled ? "an unclaimed pool member, " : "",
				      s->busy ? "being changed" : s->state);
		else
			snprintf(s->state, sizeof(s->state), "%s", to);
	}
	pthread_mutex_unlock(&n->mu);
	if (rc == 0)
		na_node_changed(n);
	return rc;
}

static bool snapshot_of(struct na_node *n, const char *id, struct na_sb *out)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s) {
		*out = *s;
		out->checkpoint = NULL; /* not ours */
		out->next = NULL;
	}
	pthread_mutex_unlock(&n->mu);
	return s != NULL;
}

/* Writes the outcome back: state, and the fields a step changed. */
static void settle(struct na_node *n, const struct na_sb *c, json_t *figures)
{
	struct na_sb *s;
	struct err e = ERR_INIT;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, c->id);
	if (s) {
		snprintf(s->state, sizeof(s->state), "%s", c->state);
		s->generation = c->generation;
		snprintf(s->last_error, sizeof(s->last_error), "%s", c->last_error);
		s->wake_ms = c->wake_ms;
		s->sandbox_pid = c->sandbox_pid;
		/* fresh secrets of a fork child or a sandbox from S3 (na_rekey); the
		 * same ones otherwise */
		snprintf(s->vnc_secret, sizeof(s->vnc_secret), "%s", c->vnc_secret);
		s->rekey = c->rekey;
		snprintf(s->desk.rec_secret, sizeof(s->desk.rec_secret), "%s", c->desk.rec_secret);
		if (figures) {
			json_decref(s->checkpoint);
			s->checkpoint = json_incref(figures);
		}
	}
	pthread_mutex_unlock(&n->mu);
	if (s && na_write_meta(n, c, &e) == -1)
		log_error("cannot record the sandbox's state", "{s:s, s:s, s:s}", "id", c->id,
			  "state", c->state, "error", e.msg);
	na_node_changed(n);
}

int na_node_hibernate_begin(struct na_node *n, const char *id, struct err *e)
{
	return na_node_move(n, id, "ready", "hibernating", e);
}

int na_node_wake_begin(struct na_node *n, const char *id, struct err *e)
{
	return na_node_move(n, id, "hibernated", "waking", e);
}

void na_node_ckpt_cancel(struct na_node *n, const char *id)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s && (strcmp(s->state, "hibernating") == 0 || strcmp(s->state, "forking") == 0))
		snprintf(s->state, sizeof(s->state), "ready");
	else if (s && strcmp(s->state, "waking") == 0)
		snprintf(s->state, sizeof(s->state), "hibernated");
	/* Children reserved by a fork that will not run. */
	for (struct na_sb **p = &n->list; *p;) {
		struct na_sb *c = *p;
		if (strcmp(c->forked_from, id) == 0 && strcmp(c->state, "starting") == 0) {
			*p = c->next;
			free(c);
		} else {
			p = &c->next;
		}
	}
	pthread_mutex_unlock(&n->mu);
	na_node_changed(n);
}

/* ---- the proxy ---- */

/* POSTs /v1/sandboxes/<id>/<action> to this node's proxy.  0 or -1
 * (logged by the caller). */
static int proxy_call(struct na_node *n, const char *id, const char *action, struct err *e)
{
	char url[512], auth[300];
	const char *hdrs[] = {auth, NULL};
	struct http_json_opts o = {.timeout_ms = 3000, .headers = hdrs};

	if (!n->proxy_admin[0])
		return 0;
	snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/%s?hold_ms=%d", n->proxy_admin, id, action,
		 NA_DRAIN_HOLD_MS);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", n->cred);
	return http_json("POST", url, NULL, NULL, &o, e) < 0 ? -1 : 0;
}

/* ---- the gate ---- */

struct gate {
	long long census_ms; /* spent until no connection was open */
	bool proxy_drained;
};

/* Lets traffic in again after a refused checkpoint, or after a wake. */
static void ungate(struct na_node *n, const struct na_sb *c)
{
	struct err e = ERR_INIT;

	if (c->egress.n && na_apply_egress(n, c->id, &c->egress, &e) == -1)
		log_error("cannot reopen the egress proxy", "{s:s, s:s}", "id", c->id, "error", e.msg);
	err_clear(&e);
	if (proxy_call(n, c->id, "resume", &e) == -1)
		log_warn("proxy resume failed", "{s:s, s:s}", "id", c->id, "error", e.msg);
}

/* Reads GET /connections: the count, and the first entry into first. */
static int census(const char *id, char *first, size_t len)
{
	AUTOBUF struct buf b = BUF_INIT(1 << 20);
	AUTOJSON json_t *j = NULL;
	json_t *c0;
	long long open = -1;

	first[0] = '\0';
	if (na_sandbox_get(id, "/connections", &b) != 200)
		return -1;
	j = cj_parse(buf_str(&b), b.len, 1 << 20, CJ_MAX_DEPTH, NULL);
	if (!j || cj_get_int(j, "open", -1, &open, NULL) == -1 || open < 0)
		return -1;
	c0 = json_array_get(json_object_get(j, "connections"), 0);
	if (c0)
		snprintf(first, len, "%s <- %s %s",
			 json_string_value(json_object_get(c0, "local")) ?: "?",
			 json_string_value(json_object_get(c0, "remote")) ?: "?",
			 json_string_value(json_object_get(c0, "state")) ?: "?");
	return (int)open;
}

/* Makes sure runsc will not refuse the checkpoint (FACTS: a refusal kills
 * the sandbox).  On -1 the caller ungates. */
static int gate(struct na_node *n, const struct na_sb *c, struct gate *g, struct err *e)
{
	struct err pe = ERR_INIT;
	uint64_t t0, deadline;
	char first[200];
	int open;

	memset(g, 0, sizeof(*g));
	/* 0. Room for the image (at most the sandbox's memory) and the
	 * snapshots' metadata: runsc failing half-way through writing it
	 * would take the sandbox with it. */
	{
		struct statvfs vfs;
		long long need = (c->lim.memory_mb + na_spec_reserve_mb(c->lim.memory_mb) + 256) << 20;
		long long have;

		if (statvfs(n->pool, &vfs) == 0) {
			have = (long long)vfs.f_bavail * (long long)vfs.f_frsize;
			if (have < need)
				return err_http(e, 507,
						"the pool has %lld MiB free and a checkpoint of this "
						"sandbox may need %lld MiB; not checkpointed (it keeps "
						"running)",
						have >> 20, need >> 20);
		}
	}
	/* 1. No new connections through the proxy; its own are reset. */
	if (proxy_call(n, c->id, "drain", &pe) == -1)
		log_warn("proxy drain failed; going on (a connection it holds will refuse the "
			 "checkpoint below)",
			 "{s:s, s:s}", "id", c->id, "error", pe.msg);
	else
		g->proxy_drained = n->proxy_admin[0] != 0;
	/* 2. The egress proxy's connections out of the sandbox, reset. */
	if (n->egress)
		na_egress_detach(n->egress, c->id);
	/* 3. No TIME_WAIT to wait out: it needs a FIN from outside, and the
	 * proxy, the egress engine and our probes only ever reset.
	 * 4. The census inside: nothing open through the interface. */
	t0 = util_now_ms();
	deadline = t0 + NA_CENSUS_WAIT_MS;
	for (;;) {
		open = census(c->id, first, sizeof(first));
		if (open == 0)
			break;
		if (util_now_ms() > deadline) {
			if (open < 0)
				return err_http(e, 502,
						"the sandbox does not answer its census of connections; "
						"not checkpointed (it keeps running)");
			return err_http(e, 409,
					"%d connection%s through the sandbox's interface stay%s open "
					"(%s); not checkpointed (it keeps running)",
					open, open == 1 ? "" : "s", open == 1 ? "s" : "", first);
		}
		usleep(100 * 1000);
	}
	g->census_ms = (long long)(util_now_ms() - t0);
	return 0;
}

/* ---- generations ---- */

/* Removes a generation directory: its subvolumes, then the files. */
static int remove_gen(const char *dir, struct err *e)
{
	char p[1400];
	struct stat st;

	if (lstat(dir, &st) == -1 && errno == ENOENT)
		return 0;
	snprintf(p, sizeof(p), "%s/rootfs", dir);
	if (na_btrfs_delete(p, e) == -1)
		return -1;
	snprintf(p, sizeof(p), "%s/rescue", dir);
	if (na_btrfs_delete(p, e) == -1)
		return -1;
	if (na_rm_files(dir) == -1)
		return err_set(e, errno, "remove `%s`", dir);
	return 0;
}

/* Removes the generations of id other than keep (0: all), and any *.part. */
static int remove_gens(struct na_node *n, const char *id, int keep, struct err *e)
{
	char dir[1100], p[1400];
	DIR *d;
	struct dirent *de;
	int rc = 0;

	ckpt_dir(n, id, dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : err_set(e, errno, "open `%s`", dir);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || (keep > 0 && atoi(de->d_name) == keep &&
					     !strchr(de->d_name, '.')))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (remove_gen(p, e) == -1)
			rc = -1;
	}
	closedir(d);
	if (rc == 0 && keep == 0 && rmdir(dir) == -1 && errno != ENOENT)
		rc = err_set(e, errno, "remove `%s`", dir);
	return rc;
}

int na_ckpt_remove_all(struct na_node *n, const char *id, struct err *e)
{
	return remove_gens(n, id, 0, e);
}

bool na_ckpt_gen_complete(struct na_node *n, const char *id, int gen)
{
	char p[1400];
	struct stat st;

	if (gen <= 0)
		return false;
	na_ckpt_gen_dir(n, id, gen, "/manifest.json", p, sizeof(p));
	if (stat(p, &st) == -1)
		return false;
	na_ckpt_gen_dir(n, id, gen, "/rootfs", p, sizeof(p));
	return na_btrfs_is_readonly(p);
}

/* Sum of the sizes of the files in dir, with their list in files. */
static long long dir_bytes(const char *dir, json_t *files)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct stat st;
	char p[2048];
	long long sum = 0;

	while (d && (de = readdir(d)) != NULL) {
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (de->d_name[0] == '.' || stat(p, &st) == -1 || !S_ISREG(st.st_mode))
			continue;
		sum += (long long)st.st_size;
		if (files)
			json_array_append_new(files, json_pack("{s:s, s:I}", "name", de->d_name,
							       "bytes", (json_int_t)st.st_size));
	}
	if (d)
		closedir(d);
	return sum;
}

/* Makes the container of c run again from a rootfs (files kept, processes
 * restarted): the answer to a failed checkpoint.  src is the read-only
 * snapshot to start from (NULL: keep the live rootfs as it is). */
static int reboot(struct na_node *n, struct na_sb *c, const char *src, struct err *e)
{
	char dir[1100], rootfs[1200], bundle[1200], log_path[1200];
	struct err e2 = ERR_INIT;

	na_sb_dir(n, c->id, dir, sizeof(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(bundle, sizeof(bundle), "%s/bundle", dir);
	snprintf(log_path, sizeof(log_path), "%s/console.log", dir);
	if (n->egress)
		na_egress_detach(n->egress, c->id);
	if (na_runsc_delete(n->runsc_root, c->id, &e2) == -1)
		log_warn("delete of the stopped container failed", "{s:s, s:s}", "id", c->id,
			 "error", e2.msg);
	if (na_netns_destroy(c->id, e) == -1)
		return -1;
	if (src && (na_btrfs_delete(rootfs, e) == -1 || na_btrfs_snapshot(src, rootfs, e) == -1))
		return -1;
	if (na_netns_create(c->id, e) == -1 || na_apply_egress(n, c->id, &c->egress, e) == -1 ||
	    na_spec_write(bundle, c->id, rootfs, &c->lim, c->vnc_secret, n->proxy_domain, &c->desk,
			  e) == -1 ||
	    na_runsc_run(n->runsc_root, c->id, bundle, log_path, e) == -1 ||
	    na_wait_ready(n, c->id, util_now_ms() + NA_REBOOT_TIMEOUT_MS, 200, log_path, e) == -1)
		return -1;
	c->sandbox_pid = na_runsc_sandbox_pid(n->runsc_root, c->id);
	return 0;
}

/* After a failed checkpoint: boot again from rescue, report.  Sets c's
 * state and last_error, and e (500). */
static void recover(struct na_node *n, struct na_sb *c, const char *rescue, const char *why,
		    struct err *e)
{
	struct err re = ERR_INIT;

	log_error("checkpoint failed; booting the sandbox again from its rootfs snapshot",
		  "{s:s, s:s}", "id", c->id, "error", why);
	if (reboot(n, c, rescue, &re) == 0) {
		snprintf(c->state, sizeof(c->state), "ready");
		snprintf(c->last_error, sizeof(c->last_error),
			 "checkpoint failed (%.120s); rebooted from its rootfs snapshot: files kept, "
			 "processes restarted",
			 why);
		log_info("sandbox rebooted after a failed checkpoint", "{s:s}", "id", c->id);
	} else {
		snprintf(c->state, sizeof(c->state), "failed");
		snprintf(c->last_error, sizeof(c->last_error),
			 "checkpoint failed (%.90s); reboot failed too (%.90s)", why, re.msg);
		log_error("reboot after a failed checkpoint failed", "{s:s, s:s}", "id", c->id,
			  "error", re.msg);
	}
	err_http(e, 500, "%s", c->last_error);
}

/* Checkpoints the gated sandbox c into generation gen.  On success the
 * container is gone and checkpoints/<id>/<gen> is complete; the live rootfs
 * and the netns pair are still there.  *figures gets the numbers.  On -1:
 * *runsc_ran tells whether the container was touched (then c was
 * recovered: see recover()); otherwise it runs on untouched. */
static int checkpoint_gen(struct na_node *n, struct na_sb *c, int gen, const struct gate *g,
			  bool durable, json_t **figures, bool *runsc_ran, struct err *e)
{
	char dir[1100], part[1400], p[1500], rootfs[1200], done[1400], log_path[1200];
	struct err e2 = ERR_INIT;
	AUTOJSON json_t *files = json_array(), *manifest = NULL;
	uint64_t t0 = util_now_ms(), t_ckpt;
	long long state_bytes;

	*runsc_ran = false;
	na_sb_dir(n, c->id, dir, sizeof(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(log_path, sizeof(log_path), "%s/console.log", dir);
	ckpt_dir(n, c->id, p, sizeof(p));
	na_ckpt_gen_dir(n, c->id, gen, ".part", part, sizeof(part));
	na_ckpt_gen_dir(n, c->id, gen, "", done, sizeof(done));
	if ((mkdir(p, 0700) == -1 && errno != EEXIST) || remove_gen(part, e) == -1 ||
	    remove_gen(done, e) == -1 || mkdir(part, 0700) == -1) {
		err_set(e, errno, "make `%s`", part);
		goto undo;
	}
	/* The rescue copy first: should runsc fail, the sandbox boots from it. */
	snprintf(p, sizeof(p), "%s/rescue", part);
	if (na_btrfs_snapshot_ro(rootfs, p, e) == -1)
		goto undo;
	snprintf(p, sizeof(p), "%s/state", part);
	if (mkdir(p, 0700) == -1) {
		err_set(e, errno, "mkdir `%s`", p);
		goto undo;
	}
	na_test_pause(NA_HOOK_CHECKPOINT);
	*runsc_ran = true;
	t_ckpt = util_now_ms();
	if (na_runsc_checkpoint(n->runsc_root, c->id, p, log_path, &e2) == -1) {
		snprintf(p, sizeof(p), "%s/rescue", part);
		recover(n, c, p, e2.msg, e);
		if (remove_gen(part, &e2) == -1)
			log_warn("cannot remove a failed checkpoint", "{s:s, s:s}", "id", c->id,
				 "error", e2.msg);
		return -1;
	}
	t_ckpt = util_now_ms() - t_ckpt;
	na_test_pause(NA_HOOK_CHECKPOINT_DONE);
	state_bytes = dir_bytes(p, files);
	/* The container is stopped; what it wrote is final.  That rootfs,
	 * not the rescue copy taken while it ran, goes with the image. */
	if (na_runsc_delete(n->runsc_root, c->id, &e2) == -1)
		log_warn("delete of the checkpointed container failed", "{s:s, s:s}", "id", c->id,
			 "error", e2.msg);
	snprintf(p, sizeof(p), "%s/rootfs", part);
	if (na_btrfs_snapshot_ro(rootfs, p, &e2) == -1) {
		snprintf(p, sizeof(p), "%s/rescue", part);
		recover(n, c, NULL, e2.msg, e);
		remove_gen(part, &e2);
		return -1;
	}
	snprintf(p, sizeof(p), "%s/rescue", part);
	if (na_btrfs_delete(p, &e2) == -1)
		log_warn("cannot remove the rescue snapshot", "{s:s, s:s}", "id", c->id, "error",
			 e2.msg);
	*figures = json_pack("{s:i, s:I, s:I, s:I, s:I}", "generation", gen, "state_bytes",
			     (json_int_t)state_bytes, "checkpoint_ms", (json_int_t)t_ckpt,
			     "census_ms", (json_int_t)g->census_ms, "total_ms",
			     (json_int_t)(util_now_ms() - t0));
	manifest = json_pack("{s:i, s:s, s:i, s:s, s:{s:I, s:f, s:I}, s:o, s:s, s:o, s:O}",
			     "version", 1, "id", c->id, "generation", gen, "template", c->template,
			     "limits", "memory_mb", (json_int_t)c->lim.memory_mb, "cpus", c->lim.cpus,
			     "pids", (json_int_t)c->lim.pids, "egress",
			     na_egress_policy_json(&c->egress), "vnc_secret", c->vnc_secret, "files",
			     json_incref(files), "figures", *figures);
	if (manifest)
		json_object_set_new(manifest, "desktop", na_desk_json(&c->desk, true));
	snprintf(p, sizeof(p), "%s/manifest.json", part);
	if (!manifest || na_json_save(p, manifest, &e2) == -1 || rename(part, done) == -1) {
		if (!e2.msg[0])
			err_set(&e2, errno, "rename `%s`", part);
		recover(n, c, NULL, e2.msg, e);
		remove_gen(part, &e2);
		return -1;
	}
	/* Durable before meta.json names it (a fork's generation lives only
	 * until its restores are done: a crash boots the parent's rootfs). */
	if (durable) {
		AUTOCLOSE int fd = open(n->pool, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd != -1)
			syncfs(fd);
	}
	return 0;
undo:
	remove_gen(part, &e2);
	return err_wrap(e, "checkpoint %s (it keeps running)", c->id);
}

/* Makes sandbox t run from generation directory gdir: a writable snapshot
 * of its rootfs, a fresh netns pair with the same inner address, the egress
 * listener, the spec, runsc restore, health 200, and with rekey (a fork
 * child, a sandbox restored from S3) fresh secrets in its cloche-vnc and
 * cloche-rec (t gets them, and t->rekey is cleared).  On
 * -1 what it made is removed again (the generation is untouched). */
static int restore_into(struct na_node *n, struct na_sb *t, const char *gdir, bool rekey,
			struct err *e)
{
	char dir[1100], rootfs[1200], bundle[1200], log_path[1200], p[1400];
	struct err e2 = ERR_INIT;
	uint64_t t0 = util_now_ms(), t1, t2, t3, t4;

	na_sb_dir(n, t->id, dir, sizeof(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	snprintf(bundle, sizeof(bundle), "%s/bundle", dir);
	snprintf(log_path, sizeof(log_path), "%s/console.log", dir);
	/* Leftovers of an earlier attempt or of the checkpoint. */
	if (n->egress)
		na_egress_detach(n->egress, t->id);
	na_runsc_delete(n->runsc_root, t->id, &e2);
	if (na_netns_destroy(t->id, e) == -1 || na_btrfs_delete(rootfs, e) == -1)
		goto fail;
	if ((mkdir(dir, 0700) == -1 && errno != EEXIST) ||
	    (mkdir(bundle, 0700) == -1 && errno != EEXIST)) {
		err_set(e, errno, "mkdir `%s`", bundle);
		goto fail;
	}
	snprintf(p, sizeof(p), "%s/rootfs", gdir);
	t1 = util_now_ms();
	if (na_btrfs_snapshot(p, rootfs, e) == -1)
		goto fail;
	t2 = util_now_ms();
	if (na_netns_create(t->id, e) == -1 || na_apply_egress(n, t->id, &t->egress, e) == -1 ||
	    na_spec_write(bundle, t->id, rootfs, &t->lim, t->vnc_secret, n->proxy_domain, &t->desk,
			  e) == -1)
		goto fail;
	na_test_pause(NA_HOOK_RESTORE);
	t3 = util_now_ms();
	snprintf(p, sizeof(p), "%s/state", gdir);
	if (na_runsc_restore(n->runsc_root, t->id, bundle, p, log_path, e) == -1)
		goto fail;
	t4 = util_now_ms();
	if (na_wait_ready(n, t->id, t0 + NA_RESTORE_TIMEOUT_MS, 20, log_path, e) == -1 ||
	    (rekey && na_rekey(t, e) == -1))
		goto fail;
	t->rekey = false;
	log_debug("restore steps", "{s:s, s:I, s:I, s:I, s:I, s:I}", "id", t->id, "cleanup_ms",
		  (json_int_t)(t1 - t0), "snapshot_ms", (json_int_t)(t2 - t1), "netns_spec_ms",
		  (json_int_t)(t3 - t2), "runsc_restore_ms", (json_int_t)(t4 - t3), "health_ms",
		  (json_int_t)(util_now_ms() - t4));
	t->sandbox_pid = na_runsc_sandbox_pid(n->runsc_root, t->id);
	t->wake_ms = (long long)(util_now_ms() - t0);
	return 0;
fail:
	if (n->egress)
		na_egress_detach(n->egress, t->id);
	na_runsc_delete(n->runsc_root, t->id, &e2);
	na_netns_destroy(t->id, &e2);
	na_btrfs_delete(rootfs, &e2);
	return err_wrap(e, "restore %s", t->id);
}

/* ---- hibernate ---- */

/* The steps both hibernate and fork take: gate, checkpoint.  c is updated
 * (state, last_error) on failure. */
static int take_checkpoint(struct na_node *n, struct na_sb *c, bool durable, json_t **figures,
			   struct err *e)
{
	struct gate g;
	bool ran;
	int gen = c->generation + 1;
	struct err me = ERR_INIT;

	/* A recording ends here, whole, in the rootfs the checkpoint keeps
	 * (docs/recording.md): an ffmpeg carried through a checkpoint would
	 * write on past the rootfs snapshot and leave a broken file. */
	na_node_rec_stop_quiet(n, c->id, "hibernate");
	if (gate(n, c, &g, e) == -1) {
		ungate(n, c);
		snprintf(c->state, sizeof(c->state), "ready");
		count(n, &n->ckpt_refused);
		log_warn("checkpoint not taken", "{s:s, s:s}", "id", c->id, "error", e->msg);
		return -1;
	}
	/* meta.json says a checkpoint is under way: a restart of the agent
	 * that finds no running container then boots the rootfs again. */
	snprintf(c->state, sizeof(c->state), "hibernating");
	if (na_write_meta(n, c, &me) == -1)
		log_warn("cannot record the checkpoint in meta.json", "{s:s, s:s}", "id", c->id,
			 "error", me.msg);
	if (checkpoint_gen(n, c, gen, &g, durable, figures, &ran, e) == -1) {
		if (!ran)
			snprintf(c->state, sizeof(c->state), "ready");
		ungate(n, c);
		count(n, &n->ckpt_failed);
		return -1;
	}
	c->generation = gen;
	count(n, &n->ckpt_ok);
	return 0;
}

json_t *na_node_hibernate_run(struct na_node *n, const char *id, struct err *e)
{
	struct na_sb c;
	AUTOJSON json_t *figures = NULL;
	char dir[1100], rootfs[1200];
	struct err e2 = ERR_INIT;

	if (!snapshot_of(n, id, &c))
		return err_http(e, 404, "no sandbox `%s`", id), NULL;
	c.last_error[0] = '\0';
	if (take_checkpoint(n, &c, true, &figures, e) == -1) {
		settle(n, &c, NULL);
		return NULL;
	}
	snprintf(c.state, sizeof(c.state), "hibernated");
	c.sandbox_pid = -1;
	settle(n, &c, figures); /* meta.json names the generation from here on */
	na_sb_dir(n, id, dir, sizeof(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	if (na_netns_destroy(id, &e2) == -1 || na_btrfs_delete(rootfs, &e2) == -1 ||
	    remove_gens(n, id, c.generation, &e2) == -1)
		log_warn("clean-up after a checkpoint failed", "{s:s, s:s}", "id", id, "error",
			 e2.msg);
	/* New requests now find it hibernated and wake it. */
	if (proxy_call(n, id, "resume", &e2) == -1)
		log_warn("proxy resume failed", "{s:s, s:s}", "id", id, "error", e2.msg);
	log_info("sandbox hibernated", "{s:s, s:O}", "id", id, "checkpoint", figures);
	return na_node_get_json(n, id);
}

/* ---- wake ---- */

json_t *na_node_wake_run(struct na_node *n, const char *id, struct err *e)
{
	struct na_sb c;
	char gdir[1400];
	struct err e2 = ERR_INIT;

	if (!snapshot_of(n, id, &c))
		return err_http(e, 404, "no sandbox `%s`", id), NULL;
	na_ckpt_gen_dir(n, id, c.generation, "", gdir, sizeof(gdir));
	if (!na_ckpt_gen_complete(n, id, c.generation)) {
		snprintf(c.state, sizeof(c.state), "hibernated");
		settle(n, &c, NULL);
		return err_http(e, 500, "sandbox `%s` has no complete checkpoint to wake from", id),
		       NULL;
	}
	if (restore_into(n, &c, gdir, c.rekey, e) == -1) {
		snprintf(c.state, sizeof(c.state), "hibernated");
		snprintf(c.last_error, sizeof(c.last_error), "wake failed: %.200s", e->msg);
		count(n, &n->wake_failures);
		settle(n, &c, NULL);
		log_error("wake failed; the sandbox stays hibernated", "{s:s, s:s}", "id", id,
			  "error", e->msg);
		err_http(e, 500, "%s", c.last_error);
		return NULL;
	}
	snprintf(c.state, sizeof(c.state), "ready");
	c.last_error[0] = '\0';
	count(n, &n->wakes);
	settle(n, &c, NULL);
	/* It runs on its own copy now; the generation is history. */
	if (remove_gens(n, id, 0, &e2) == -1)
		log_warn("cannot remove the used checkpoint", "{s:s, s:s}", "id", id, "error", e2.msg);
	ungate(n, &c);
	log_info("sandbox woken", "{s:s, s:I}", "id", id, "wake_ms", (json_int_t)c.wake_ms);
	return na_node_get_json(n, id);
}

/* ---- fork ---- */

int na_node_fork_begin(struct na_node *n, const char *id, const json_t *body, struct err *e)
{
	json_t *ids = json_is_object(body) ? json_object_get(body, "ids") : NULL;
	struct na_sb *p, *c;
	size_t count = json_array_size(ids), i, held = 0;
	int rc = 0;

	if (!json_is_array(ids) || count < 1 || count > NA_FORK_MAX)
		return err_http(e, 400, "`ids` must be an array of 1 to %d new sandbox ids",
				NA_FORK_MAX);
	for (i = 0; i < count; i++) {
		const char *cid = json_string_value(json_array_get(ids, i));
		if (!cid || !na_valid_id(cid))
			return err_http(e, 400, "`ids[%zu]` is not a valid id (1-31 of a-z, 0-9, -)",
					i);
		for (size_t k = 0; k < i; k++)
			if (strcmp(cid, json_string_value(json_array_get(ids, k))) == 0)
				return err_http(e, 400, "`ids` names `%s` twice", cid);
	}
	pthread_mutex_lock(&n->mu);
	p = na_find_locked(n, id);
	for (c = n->list; c; c = c->next)
		held++;
	if (!p)
		rc = err_http(e, 404, "no sandbox `%s`", id);
	else if (strcmp(p->state, "ready") != 0 || p->busy || p->pooled)
		rc = err_http(e, 409, "sandbox `%s` is %s", id,
			      p->pooled ? "an unclaimed pool member" : p->busy ? "being changed"
									  : p->state);
	else if (n->max_sandboxes > 0 && held + count > (size_t)n->max_sandboxes)
		rc = err_http(e, 503, "this node holds %zu of its %d sandboxes; %zu more do not fit",
			      held, n->max_sandboxes, count);
	for (i = 0; rc == 0 && i < count; i++) {
		const char *cid = json_string_value(json_array_get(ids, i));
		rc = na_reserve_locked(n, cid, p->template, &p->lim, &p->egress, false, e);
		if (rc == 0) {
			c = na_find_locked(n, cid);
			snprintf(c->forked_from, sizeof(c->forked_from), "%s", id);
			/* cloche-vnc and cloche-rec inside are the parent's, restored
			 * with its secrets, until na_rekey gives them their own. */
			snprintf(c->vnc_secret, sizeof(c->vnc_secret), "%s", p->vnc_secret);
			c->desk = p->desk;
		}
	}
	if (rc == 0)
		snprintf(p->state, sizeof(p->state), "forking");
	pthread_mutex_unlock(&n->mu);
	if (rc == -1 && p) {
		/* Drop the children reserved before the failing one. */
		pthread_mutex_lock(&n->mu);
		for (size_t k = 0; k < i; k++) {
			const char *cid = json_string_value(json_array_get(ids, k));
			c = na_find_locked(n, cid);
			if (c && strcmp(c->forked_from, id) == 0 && strcmp(c->state, "starting") == 0)
				na_unlink_locked(n, cid);
		}
		pthread_mutex_unlock(&n->mu);
	}
	return rc;
}

struct restore_job {
	struct na_node *n;
	struct na_sb sb;
	const char *gdir;
	struct err e;
	int rc;
	pthread_t th;
	bool started;
	bool child; /* a fork child (gets fresh secrets), not the parent */
};

static void *restore_thread(void *arg)
{
	struct restore_job *j = arg;

	j->rc = restore_into(j->n, &j->sb, j->gdir, j->child, &j->e);
	return NULL;
}

json_t *na_node_fork_run(struct na_node *n, const char *id, struct err *e)
{
	struct restore_job jobs[NA_FORK_MAX + 1];
	struct na_sb c;
	AUTOJSON json_t *figures = NULL;
	json_t *children, *failed, *out;
	char gdir[1400];
	struct err e2 = ERR_INIT;
	int nj = 1;
	uint64_t t0 = util_now_ms();

	if (!snapshot_of(n, id, &c))
		return err_http(e, 404, "no sandbox `%s`", id), NULL;
	memset(jobs, 0, sizeof(jobs));
	pthread_mutex_lock(&n->mu);
	for (struct na_sb *s = n->list; s && nj < NA_FORK_MAX + 1; s = s->next)
		if (strcmp(s->forked_from, id) == 0 && strcmp(s->state, "starting") == 0) {
			jobs[nj].sb = *s;
			jobs[nj].sb.next = NULL;
			jobs[nj].sb.checkpoint = NULL;
			nj++;
		}
	pthread_mutex_unlock(&n->mu);
	c.last_error[0] = '\0';
	if (take_checkpoint(n, &c, false, &figures, e) == -1) {
		settle(n, &c, NULL);
		na_node_ckpt_cancel(n, id); /* the children */
		return NULL;
	}
	na_ckpt_gen_dir(n, id, c.generation, "", gdir, sizeof(gdir));
	jobs[0].sb = c;
	for (int i = 0; i < nj; i++) {
		jobs[i].n = n;
		jobs[i].gdir = gdir;
		jobs[i].child = i > 0;
		jobs[i].started = pthread_create(&jobs[i].th, NULL, restore_thread, &jobs[i]) == 0;
		if (!jobs[i].started)
			restore_thread(&jobs[i]);
	}
	for (int i = 0; i < nj; i++)
		if (jobs[i].started)
			pthread_join(jobs[i].th, NULL);
	/* The parent. */
	if (jobs[0].rc == 0) {
		c = jobs[0].sb;
		snprintf(c.state, sizeof(c.state), "ready");
	} else {
		/* Its generation is complete: it can be woken from there. */
		snprintf(c.state, sizeof(c.state), "hibernated");
		snprintf(c.last_error, sizeof(c.last_error), "restore after fork failed: %.180s",
			 jobs[0].e.msg);
		log_error("parent not restored after a fork; left hibernated", "{s:s, s:s}", "id", id,
			  "error", jobs[0].e.msg);
	}
	children = json_array();
	failed = json_array();
	for (int i = 1; i < nj; i++) {
		struct na_sb *k = &jobs[i].sb;
		if (jobs[i].rc == 0) {
			snprintf(k->state, sizeof(k->state), "ready");
			k->generation = 0;
			settle(n, k, NULL);
			json_array_append_new(children, na_node_get_json(n, k->id));
			log_info("fork child ready", "{s:s, s:s, s:I}", "id", k->id, "parent", id,
				 "restore_ms", (json_int_t)k->wake_ms);
		} else {
			log_error("fork child failed", "{s:s, s:s, s:s}", "id", k->id, "parent", id,
				  "error", jobs[i].e.msg);
			if (na_teardown(n, k->id, &e2) == -1)
				log_error("clean-up of a fork child failed", "{s:s, s:s}", "id", k->id,
					  "error", e2.msg);
			pthread_mutex_lock(&n->mu);
			na_unlink_locked(n, k->id);
			pthread_mutex_unlock(&n->mu);
			json_array_append_new(failed, json_pack("{s:s, s:s}", "id", k->id, "error",
								jobs[i].e.msg));
		}
	}
	settle(n, &c, figures);
	if (jobs[0].rc == 0) {
		if (remove_gens(n, id, 0, &e2) == -1)
			log_warn("cannot remove the fork's checkpoint", "{s:s, s:s}", "id", id, "error",
				 e2.msg);
		ungate(n, &c);
	}
	na_node_changed(n);
	log_info("sandbox forked", "{s:s, s:i, s:i, s:I}", "id", id, "children",
		 (int)json_array_size(children), "failed", (int)json_array_size(failed), "ms",
		 (json_int_t)(util_now_ms() - t0));
	out = json_pack("{s:o, s:o, s:o, s:I}", "parent", na_node_get_json(n, id), "children",
			children, "failed", failed, "fork_ms", (json_int_t)(util_now_ms() - t0));
	return out;
}

/* ---- start-up ---- */

static void register_sb(struct na_node *n, struct na_sb *s)
{
	pthread_mutex_lock(&n->mu);
	s->next = n->list;
	n->list = s;
	pthread_mutex_unlock(&n->mu);
}

bool na_ckpt_adopt(struct na_node *n, const char *id, const json_t *meta)
{
	const char *state = NULL;
	struct na_sb *s;
	struct err e = ERR_INIT;
	char dir[1100], rootfs[1200];

	if (cj_get_str(meta, "state", "", &state, NULL) == -1 || !state)
		return false;
	s = na_sb_from_meta(id, meta);
	if (!s)
		return false;
	na_sb_dir(n, id, dir, sizeof(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	if (strcmp(state, "hibernated") == 0 && na_ckpt_gen_complete(n, id, s->generation)) {
		/* A wake the last run did not finish leaves a container, a netns
		 * pair or a rootfs copy: the generation is what counts. */
		na_runsc_delete(n->runsc_root, id, &e);
		if (na_netns_destroy(id, &e) == -1 || na_btrfs_delete(rootfs, &e) == -1 ||
		    remove_gens(n, id, s->generation, &e) == -1)
			log_warn("clean-up of a hibernated sandbox failed", "{s:s, s:s}", "id", id,
				 "error", e.msg);
		snprintf(s->state, sizeof(s->state), "hibernated");
		register_sb(n, s);
		log_info("hibernated sandbox re-adopted", "{s:s, s:i}", "id", id, "generation",
			 s->generation);
		return true;
	}
	if ((strcmp(state, "hibernating") == 0 || strcmp(state, "forking") == 0) &&
	    na_btrfs_is_subvolume(rootfs)) {
		/* Caught in a checkpoint: no generation it made is used.  The
		 * rootfs is whole (the container is stopped): boot it. */
		if (remove_gens(n, id, 0, &e) == -1)
			log_warn("cannot remove an unfinished checkpoint", "{s:s, s:s}", "id", id,
				 "error", e.msg);
		s->generation = 0;
		if (reboot(n, s, NULL, &e) == -1) {
			log_error("cannot boot a sandbox caught in a checkpoint", "{s:s, s:s}", "id", id,
				  "error", e.msg);
			free(s);
			return false;
		}
		snprintf(s->state, sizeof(s->state), "ready");
		snprintf(s->last_error, sizeof(s->last_error),
			 "the node agent stopped during a checkpoint; rebooted from its rootfs: files "
			 "kept, processes restarted");
		/* The proxy may still hold it drained. */
		if (proxy_call(n, id, "resume", &e) == -1)
			log_warn("proxy resume failed", "{s:s, s:s}", "id", id, "error", e.msg);
		err_clear(&e);
		if (na_write_meta(n, s, &e) == -1)
			log_warn("cannot record the sandbox's state", "{s:s, s:s}", "id", id, "error",
				 e.msg);
		register_sb(n, s);
		log_warn("sandbox caught in a checkpoint rebooted", "{s:s}", "id", id);
		return true;
	}
	free(s);
	return false;
}

void na_ckpt_sweep(struct na_node *n)
{
	char dir[1100], p[1400];
	DIR *d;
	struct dirent *de;
	struct err e = ERR_INIT;
	struct stat st;
	int gen;

	snprintf(dir, sizeof(dir), "%s/checkpoints", n->pool);
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !na_valid_id(de->d_name))
			continue;
		na_sb_dir(n, de->d_name, p, sizeof(p));
		pthread_mutex_lock(&n->mu);
		{
			struct na_sb *s = na_find_locked(n, de->d_name);
			/* hibernated: keep its generation; running: keep none; not
			 * registered: the adoption pass is tearing its directory down
			 * (that removes these too), or it is long gone. */
			gen = !s ? -1 : strcmp(s->state, "hibernated") == 0 ? s->generation : 0;
		}
		pthread_mutex_unlock(&n->mu);
		if (gen < 0 && lstat(p, &st) == 0)
			continue;
		log_info(gen < 0 ? "removing checkpoints of a sandbox this node no longer has"
				 : "removing unused checkpoint generations",
			 "{s:s}", "id", de->d_name);
		if (remove_gens(n, de->d_name, gen < 0 ? 0 : gen, &e) == -1)
			log_error("checkpoint clean-up failed", "{s:s, s:s}", "id", de->d_name, "error",
				  e.msg);
	}
	if (d)
		closedir(d);
}
