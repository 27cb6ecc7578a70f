/* Offload to S3 and restore from it.  Files are compressed on the pool
 * (checkpoints/<id>/<gen>.l2, removed after) and sent with their sha256;
 * the manifest goes last, so a crash or an unreachable S3 never leaves a
 * generation in S3 that looks whole. */
#include "node-agent/na_l2.h"
#include "node-agent/na_btrfs.h"
#include "node-agent/na_ckpt.h"
#include "node-agent/na_cmd.h"
#include "node-agent/na_node.h"
#include "node-agent/na_s3.h"
#include "node-agent/na_seal.h"
#include "node-agent/na_test.h"

#include "common/digest.h"
#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NA_L2_MANIFEST_MAX (1 << 20)

/* The hex SHA-256 of a file's contents. */
static int sha256_file(const char *path, char out[65], struct err *e)
{
	AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd == -1 || fstat(fd, &st) == -1)
		return err_set(e, errno, "sha256 `%s`", path);
	if (digest_sha256_fd(fd, 0, (long long)st.st_size, out, e) == -1)
		return err_wrap(e, "sha256 `%s`", path);
	return 0;
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int zstd(bool decompress, const char *in, const char *out, struct err *e)
{
	char *argv[] = {"zstd", "-q", "-f", decompress ? "-d" : "-3", "-T2", (char *)in, "-o",
			(char *)out, NULL};

	if (na_cmd_check(argv, NULL, NULL, e) == -1)
		return err_wrap(e, "zstd %s `%s`", decompress ? "-d" : "", in);
	return 0;
}

static void key_of(const struct na_node *n, char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void key_of(const struct na_node *n, char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t pl;

	snprintf(out, len, "%s", n->s3_prefix);
	pl = strlen(out);
	va_start(ap, fmt);
	vsnprintf(out + pl, len - pl, fmt, ap);
	va_end(ap);
}

/* ---- templates in S3 ---- */

/* Makes sure S3 has template tpl as a full send stream.  uuid_out gets the
 * UUID deltas against it name. */
static int publish_template(struct na_node *n, const char *tpl, const char *tmpdir,
			    char *uuid_out, size_t ulen, struct err *e)
{
	char path[1400], key[1024], mkey[1024], file[1500], sha[65];
	AUTOBUF struct buf b = BUF_INIT(NA_L2_MANIFEST_MAX);
	AUTOJSON json_t *m = NULL;
	const char *u = NULL;

	snprintf(path, sizeof(path), "%s/templates/%s", n->pool, tpl);
	if (na_btrfs_uuid(path, uuid_out, ulen, e) == -1)
		return -1;
	key_of(n, mkey, sizeof(mkey), "templates/%s/manifest.json", tpl);
	if (na_s3_get_mem(n->s3, mkey, &b, NA_L2_MANIFEST_MAX, e) == 0 &&
	    !(m = na_unseal(&n->seal, b.data, b.len, e))) {
		/* Not a node's (an older version's, or forged): ours replaces it. */
		log_warn("the template's manifest in S3 fails its seal; publishing it again",
			 "{s:s, s:s}", "template", tpl, "error", e->msg);
		e->http_status = 404;
	} else if (m) {
		if (cj_get_str(m, "uuid", "", &u, NULL) == 0 && strcmp(u, uuid_out) == 0)
			return 0;
		/* Another node published the same name with other bytes: a
		 * delta against ours would not apply there. */
		return err_http(e, 409,
				"S3 has template %s with UUID %s, this node's is %s: import the "
				"template from S3 on this node instead of building it",
				tpl, u ? u : "?", uuid_out);
	}
	if (e->http_status != 404)
		return -1;
	err_clear(e);
	snprintf(file, sizeof(file), "%s/template.send.zst", tmpdir);
	key_of(n, key, sizeof(key), "templates/%s/stream.zst", tpl);
	if (na_btrfs_send_zst(path, NULL, file, e) == -1 || sha256_file(file, sha, e) == -1 ||
	    na_s3_put_file(n->s3, key, file, e) == -1)
		return -1;
	m = json_pack("{s:i, s:s, s:s, s:s, s:I, s:s}", "version", 1, "template", tpl, "uuid",
		      uuid_out, "key", key, "bytes", (json_int_t)file_size(file), "sha256", sha);
	buf_reset(&b);
	unlink(file);
	if (!m || na_seal(&n->seal, m, &b, e) == -1 ||
	    na_s3_put_mem(n->s3, mkey, b.data, b.len, e) == -1)
		return -1;
	log_info("template published to S3", "{s:s, s:s}", "template", tpl, "key", key);
	return 0;
}

/* Makes template tpl present here, from S3 (verified), unless it is. */
static int fetch_template(struct na_node *n, const char *tpl, const char *want_uuid,
			  const char *tmpdir, struct err *e)
{
	char path[1400], mkey[1024], file[1500], raw[1500], sha[65], uuid[64], name[256];
	AUTOBUF struct buf b = BUF_INIT(NA_L2_MANIFEST_MAX);
	AUTOJSON json_t *m = NULL;
	const char *key = NULL, *want_sha = NULL;
	struct stat st;

	snprintf(path, sizeof(path), "%s/templates/%s", n->pool, tpl);
	if (stat(path, &st) == 0) {
		if (na_btrfs_uuid(path, uuid, sizeof(uuid), e) == -1)
			return -1;
		if (strcmp(uuid, want_uuid) != 0)
			return err_http(e, 409,
					"template %s on this node (UUID %s) is not the one the checkpoint "
					"was made against (UUID %s)",
					tpl, uuid, want_uuid);
		return 0;
	}
	key_of(n, mkey, sizeof(mkey), "templates/%s/manifest.json", tpl);
	if (na_s3_get_mem(n->s3, mkey, &b, NA_L2_MANIFEST_MAX, e) == -1)
		return err_wrap(e, "template %s", tpl);
	m = na_unseal(&n->seal, b.data, b.len, e);
	if (!m)
		return err_wrap(e, "template %s", tpl);
	if (cj_req_str(m, "key", &key, e) == -1 || cj_req_str(m, "sha256", &want_sha, e) == -1 ||
	    !json_is_string(json_object_get(m, "template")) ||
	    strcmp(json_string_value(json_object_get(m, "template")), tpl) != 0)
		return err_http(e, 502, "template %s: unreadable manifest in S3", tpl);
	snprintf(file, sizeof(file), "%s/template.send.zst", tmpdir);
	snprintf(raw, sizeof(raw), "%s/template.send", tmpdir);
	if (na_s3_get_file(n->s3, key, file, e) == -1 || sha256_file(file, sha, e) == -1)
		return -1;
	if (strcmp(sha, want_sha) != 0)
		return err_http(e, 502, "template %s in S3 is corrupt (sha256 %.12s, expected %.12s)",
				tpl, sha, want_sha);
	if (zstd(true, file, raw, e) == -1)
		return -1;
	unlink(file);
	if (na_node_import_template(n, raw, name, sizeof(name), e) == -1 && e->http_status != 409)
		return -1;
	unlink(raw);
	log_info("template fetched from S3", "{s:s}", "template", tpl);
	return 0;
}

/* ---- offload ---- */

int na_node_offload_begin(struct na_node *n, const char *id, struct err *e)
{
	if (!n->s3)
		return err_http(e, 503, "this node has no S3 configured (--s3-endpoint)");
	return na_node_move(n, id, "hibernated", "offloading", e);
}

/* Compresses, hashes and uploads file src as key; appends its entry. */
static int put_object(struct na_node *n, const char *src, const char *zst, const char *key,
		      const char *name, json_t *objects, long long *bytes, struct err *e)
{
	char sha[65];
	long long raw = file_size(src), sz;

	if (zstd(false, src, zst, e) == -1 || sha256_file(zst, sha, e) == -1 ||
	    na_s3_put_file(n->s3, key, zst, e) == -1)
		return -1;
	sz = file_size(zst);
	*bytes += sz;
	unlink(zst);
	json_array_append_new(objects, json_pack("{s:s, s:s, s:I, s:I, s:s}", "name", name, "key",
						 key, "bytes", (json_int_t)sz, "raw_bytes",
						 (json_int_t)raw, "sha256", sha));
	return 0;
}

json_t *na_node_offload_run(struct na_node *n, const char *id, struct err *e)
{
	struct na_sb c, *s;
	char gdir[1400], tmp[1400], p[1600], z[1700], key[1600], prefix[768], uuid[64],
		tpl_path[1400], sha[65];
	AUTOJSON json_t *objects = json_array(), *manifest = NULL, *local = NULL;
	AUTOBUF struct buf b = BUF_INIT(NA_L2_MANIFEST_MAX);
	struct err e2 = ERR_INIT;
	long long bytes = 0, state_bytes = 0, rootfs_bytes;
	uint64_t t0 = util_now_ms();
	DIR *d;
	struct dirent *de;
	bool first = true;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s)
		c = *s;
	pthread_mutex_unlock(&n->mu);
	if (!s)
		return err_http(e, 404, "no sandbox `%s`", id), NULL;
	na_ckpt_gen_dir(n, id, c.generation, "", gdir, sizeof(gdir));
	na_ckpt_gen_dir(n, id, c.generation, ".l2", tmp, sizeof(tmp));
	key_of(n, prefix, sizeof(prefix), "sandboxes/%s/%d/", id, c.generation);
	na_rm_files(tmp);
	if (!na_ckpt_gen_complete(n, id, c.generation) || mkdir(tmp, 0700) == -1) {
		err_set(e, errno, "sandbox `%s` has no complete generation to offload", id);
		goto fail;
	}
	if (publish_template(n, c.template, tmp, uuid, sizeof(uuid), e) == -1)
		goto fail;
	/* The rootfs as a delta against the template. */
	snprintf(tpl_path, sizeof(tpl_path), "%s/templates/%s", n->pool, c.template);
	snprintf(p, sizeof(p), "%s/rootfs", gdir);
	snprintf(z, sizeof(z), "%s/rootfs.send.zst", tmp);
	snprintf(key, sizeof(key), "%srootfs.send.zst", prefix);
	if (na_btrfs_send_zst(p, tpl_path, z, e) == -1 || sha256_file(z, sha, e) == -1 ||
	    na_s3_put_file(n->s3, key, z, e) == -1)
		goto fail;
	rootfs_bytes = file_size(z);
	bytes += rootfs_bytes;
	unlink(z);
	json_array_append_new(objects, json_pack("{s:s, s:s, s:I, s:s}", "name", "rootfs", "key",
						 key, "bytes", (json_int_t)rootfs_bytes, "sha256",
						 sha));
	/* runsc's image, file by file. */
	snprintf(p, sizeof(p), "%s/state", gdir);
	d = opendir(p);
	while (d && (de = readdir(d)) != NULL) {
		char src[2048], name[300];
		if (de->d_name[0] == '.')
			continue;
		snprintf(src, sizeof(src), "%s/%s", p, de->d_name);
		snprintf(z, sizeof(z), "%s/%s.zst", tmp, de->d_name);
		snprintf(key, sizeof(key), "%sstate/%s.zst", prefix, de->d_name);
		snprintf(name, sizeof(name), "state/%s", de->d_name);
		if (put_object(n, src, z, key, name, objects, &state_bytes, e) == -1) {
			closedir(d);
			goto fail;
		}
		if (first)
			na_test_pause(NA_HOOK_UPLOAD);
		first = false;
	}
	if (d)
		closedir(d);
	bytes += state_bytes;
	/* The manifest last: from here on the generation in S3 is whole. */
	snprintf(p, sizeof(p), "%s/manifest.json", gdir);
	local = cj_load_file(p, NA_L2_MANIFEST_MAX, NULL);
	/* The secrets go sealed (na_seal.h); the restoring node replaces
	 * them anyway, since the state objects hold them in memory images. */
	manifest = json_pack("{s:i, s:s, s:i, s:s, s:s, s:O, s:O, s:{s:s, s:s}, s:O, s:I}",
			     "version", 2, "id", id, "generation", c.generation, "template",
			     c.template, "template_uuid", uuid, "limits",
			     local ? json_object_get(local, "limits") : json_null(), "egress",
			     local ? json_object_get(local, "egress") : json_null(), "secrets", "vnc",
			     c.vnc_secret, "rec", c.desk.rec_secret, "objects", objects, "bytes",
			     (json_int_t)bytes);
	if (manifest)
		json_object_set_new(manifest, "desktop", na_desk_json(&c.desk, false));
	snprintf(key, sizeof(key), "%smanifest.json", prefix);
	if (!manifest || na_seal(&n->seal, manifest, &b, e) == -1 ||
	    na_s3_put_mem(n->s3, key, b.data, b.len, e) == -1)
		goto fail;
	na_rm_files(tmp);
	/* In S3 now: this node lets it go. */
	na_set_state(n, id, "stopping");
	na_node_changed(n);
	if (na_teardown(n, id, &e2) == -1)
		log_error("removing the offloaded sandbox's local copy failed", "{s:s, s:s}", "id", id,
			  "error", e2.msg);
	pthread_mutex_lock(&n->mu);
	na_unlink_locked(n, id);
	pthread_mutex_unlock(&n->mu);
	na_node_changed(n);
	log_info("sandbox offloaded", "{s:s, s:s, s:I, s:I}", "id", id, "prefix", prefix, "bytes",
		 (json_int_t)bytes, "ms", (json_int_t)(util_now_ms() - t0));
	return json_pack("{s:s, s:{s:s, s:i, s:I, s:I, s:I, s:I}}", "id", id, "l2", "prefix", prefix,
			 "generation", c.generation, "bytes", (json_int_t)bytes, "state_bytes",
			 (json_int_t)state_bytes, "rootfs_bytes", (json_int_t)rootfs_bytes,
			 "upload_ms", (json_int_t)(util_now_ms() - t0));
fail:
	na_rm_files(tmp);
	na_set_state(n, id, "hibernated");
	na_node_changed(n);
	log_error("offload failed; the local copy is kept", "{s:s, s:s}", "id", id, "error", e->msg);
	if (!e->http_status || e->http_status == 502)
		e->http_status = 503;
	err_wrap(e, "offload %s (kept on this node, hibernated)", id);
	return NULL;
}

/* ---- restore ---- */

int na_node_restore_begin(struct na_node *n, const char *id, const json_t *body,
			  struct err *e)
{
	json_t *l2 = json_is_object(body) ? json_object_get(body, "l2") : NULL;
	const char *prefix = NULL;
	long long gen = 0;
	struct na_limits lim = na_default_limits;
	struct na_egress_policy pol = {0};
	int rc;

	if (!n->s3)
		return err_http(e, 503, "this node has no S3 configured (--s3-endpoint)");
	if (!na_valid_id(id))
		return err_http(e, 400, "`%s` is not a valid sandbox id", id);
	if (!json_is_object(l2) || cj_req_str(l2, "prefix", &prefix, e) == -1 ||
	    cj_req_int(l2, "generation", &gen, e) == -1)
		return err_http(e, 400, "the body must have l2: {prefix, generation}: %s", e->msg);
	if (gen < 1 || strlen(prefix) >= 512 || strstr(prefix, "..") ||
	    !strstr(prefix, "sandboxes/") || !strstr(prefix, id))
		return err_http(e, 400, "`l2` does not name a generation of sandbox `%s`", id);
	pthread_mutex_lock(&n->mu);
	if (!na_room_locked(n))
		rc = err_http(e, 503, "this node holds its maximum of %d sandboxes", n->max_sandboxes);
	else
		rc = na_reserve_locked(n, id, "", &lim, &pol, false, e);
	if (rc == 0)
		snprintf(na_find_locked(n, id)->state, sizeof(((struct na_sb *)0)->state), "waking");
	pthread_mutex_unlock(&n->mu);
	return rc;
}

void na_node_restore_cancel(struct na_node *n, const char *id)
{
	struct na_sb *s;

	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s && strcmp(s->state, "waking") == 0 && !s->template[0])
		na_unlink_locked(n, id);
	pthread_mutex_unlock(&n->mu);
}

/* Reads a limit of the request, else of the manifest. */
static long long pick(const json_t *req, const json_t *mlim, const char *k, long long def)
{
	long long v;

	if (cj_get_int(req, k, -1, &v, NULL) == 0 && v > 0)
		return v;
	if (mlim && cj_get_int(mlim, k, def, &v, NULL) == 0)
		return v;
	return def;
}

json_t *na_node_restore_run(struct na_node *n, const char *id, const json_t *body,
			    struct err *e)
{
	json_t *l2 = json_object_get(body, "l2"), *obj, *mlim, *v, *out = NULL;
	const char *prefix = json_string_value(json_object_get(l2, "prefix"));
	int gen = (int)json_integer_value(json_object_get(l2, "generation"));
	char key[1600], part[1400], done[1400], tmp[1400], sbdir[1100], p[1600], z[1700], sha[65];
	AUTOBUF struct buf b = BUF_INIT(NA_L2_MANIFEST_MAX);
	AUTOJSON json_t *m = NULL, *local = NULL;
	const char *tpl = NULL, *tuuid = NULL, *secret = "", *rsecret = "", *mid = NULL;
	struct na_sb *s, c;
	struct err e2 = ERR_INIT;
	uint64_t t0 = util_now_ms();
	size_t i;

	na_ckpt_gen_dir(n, id, gen, ".part", part, sizeof(part));
	na_ckpt_gen_dir(n, id, gen, "", done, sizeof(done));
	na_ckpt_gen_dir(n, id, gen, ".l2", tmp, sizeof(tmp));
	na_sb_dir(n, id, sbdir, sizeof(sbdir));
	snprintf(key, sizeof(key), "%smanifest.json", prefix);
	if (na_s3_get_mem(n->s3, key, &b, NA_L2_MANIFEST_MAX, e) == -1) {
		if (e->http_status == 404)
			err_http(e, 404, "no offloaded generation %d of `%s` in S3 (%s)", gen, id, key);
		goto fail;
	}
	/* The seal first: nothing the manifest names is fetched, let alone
	 * received, unless a node of this cluster wrote it for this sandbox
	 * and generation (a sealed manifest of another one moved here is
	 * refused too). */
	m = na_unseal(&n->seal, b.data, b.len, e);
	if (!m) {
		err_wrap(e, "sandbox `%s`", id);
		goto fail;
	}
	if (cj_req_str(m, "template", &tpl, e) == -1 ||
	    cj_req_str(m, "template_uuid", &tuuid, e) == -1 ||
	    !json_is_array(json_object_get(m, "objects")) || !na_valid_template(tpl) ||
	    !strchr(tpl, '@') || cj_get_str(m, "id", "", &mid, NULL) == -1 || strcmp(mid, id) != 0 ||
	    json_integer_value(json_object_get(m, "generation")) != gen ||
	    cj_get_str(json_object_get(m, "secrets"), "vnc", "", &secret, NULL) == -1 ||
	    cj_get_str(json_object_get(m, "secrets"), "rec", "", &rsecret, NULL) == -1) {
		err_http(e, 502, "the manifest of `%s` in S3 is unreadable, or is another sandbox's", id);
		goto fail;
	}
	/* Whatever an earlier attempt left goes first. */
	snprintf(p, sizeof(p), "%s/checkpoints/%s", n->pool, id);
	if (na_ckpt_remove_all(n, id, e) == -1)
		goto fail;
	if (mkdir(p, 0700) == -1 || mkdir(tmp, 0700) == -1 || mkdir(part, 0700) == -1) {
		err_set(e, errno, "make `%s`", part);
		goto fail;
	}
	if (fetch_template(n, tpl, tuuid, tmp, e) == -1)
		goto fail;
	snprintf(p, sizeof(p), "%s/state", part);
	if (mkdir(p, 0700) == -1) {
		err_set(e, errno, "mkdir `%s`", p);
		goto fail;
	}
	json_array_foreach(json_object_get(m, "objects"), i, obj) {
		const char *name = json_string_value(json_object_get(obj, "name"));
		const char *okey = json_string_value(json_object_get(obj, "key"));
		const char *want = json_string_value(json_object_get(obj, "sha256"));

		if (!name || !okey || !want || strstr(name, "..") || strncmp(okey, prefix, strlen(prefix)) != 0) {
			err_http(e, 502, "the manifest of `%s` names a bad object", id);
			goto fail;
		}
		snprintf(z, sizeof(z), "%s/object.zst", tmp);
		if (na_s3_get_file(n->s3, okey, z, e) == -1 || sha256_file(z, sha, e) == -1) {
			if (e->http_status == 404)
				err_http(e, 404, "object %s of `%s` is missing in S3", okey, id);
			goto fail;
		}
		if (strcmp(sha, want) != 0) {
			err_http(e, 502,
				 "object %s of `%s` is corrupt (sha256 %.12s..., the manifest says "
				 "%.12s...); not restored",
				 okey, id, sha, want);
			goto fail;
		}
		if (strcmp(name, "rootfs") == 0) {
			if (na_btrfs_receive_zst(z, part, e) == -1)
				goto fail;
		} else {
			snprintf(p, sizeof(p), "%s/%s", part, name);
			if (strncmp(name, "state/", 6) != 0 || strchr(name + 6, '/') ||
			    zstd(true, z, p, e) == -1)
				goto fail;
		}
		unlink(z);
	}
	/* The generation, complete, as hibernate would have left it. */
	local = json_deep_copy(m);
	if (local) {
		json_t *desk = json_object_get(local, "desktop");

		json_object_del(local, "secrets");
		json_object_set_new(local, "vnc_secret", json_string(secret));
		if (json_is_object(desk))
			json_object_set_new(desk, "rec_secret", json_string(rsecret));
	}
	snprintf(p, sizeof(p), "%s/manifest.json", part);
	if (!local || na_json_save(p, local, e) == -1 || rename(part, done) == -1) {
		if (!e->msg[0])
			err_set(e, errno, "rename `%s`", part);
		goto fail;
	}
	na_rm_files(tmp);
	if (!na_ckpt_gen_complete(n, id, gen)) {
		err_http(e, 502, "the received generation of `%s` is not complete", id);
		goto fail;
	}
	/* The registry entry becomes the sandbox of the manifest. */
	mlim = json_object_get(m, "limits");
	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s) {
		snprintf(s->template, sizeof(s->template), "%s", tpl);
		s->lim.memory_mb = pick(body, mlim, "memory_mb", na_default_limits.memory_mb);
		s->lim.pids = pick(body, mlim, "pids", na_default_limits.pids);
		v = json_object_get(body, "cpus");
		if (!json_is_number(v) && mlim)
			v = json_object_get(mlim, "cpus");
		if (json_is_number(v))
			s->lim.cpus = json_number_value(v);
		snprintf(s->vnc_secret, sizeof(s->vnc_secret), "%s", secret);
		if (na_desk_parse(json_object_get(m, "desktop"), false, &s->desk, &e2) == -1)
			log_warn("unreadable desktop switches; using the defaults", "{s:s, s:s}", "id",
				 id, "error", e2.msg);
		snprintf(s->desk.rec_secret, sizeof(s->desk.rec_secret), "%s", rsecret);
		/* The bucket's readers may have these: the wake replaces them. */
		s->rekey = true;
		v = json_object_get(body, "egress");
		if (na_egress_policy_parse(v ? v : json_object_get(m, "egress"), &s->egress, &e2) == -1)
			log_warn("unreadable egress policy; using none", "{s:s, s:s}", "id", id, "error",
				 e2.msg);
		s->generation = gen;
		snprintf(s->state, sizeof(s->state), "hibernated");
		c = *s;
	}
	pthread_mutex_unlock(&n->mu);
	if (!s) {
		err_http(e, 409, "sandbox `%s` went away during its restore", id);
		goto fail;
	}
	if ((mkdir(sbdir, 0700) == -1 && errno != EEXIST) || na_write_meta(n, &c, e) == -1)
		goto fail;
	/* From here it is a hibernated sandbox of this node: wake it. */
	if (na_node_wake_begin(n, id, e) == -1)
		goto fail;
	out = na_node_wake_run(n, id, e);
	if (!out)
		goto fail;
	json_object_set_new(out, "restore_ms", json_integer((json_int_t)(util_now_ms() - t0)));
	log_info("sandbox restored from S3", "{s:s, s:s, s:I}", "id", id, "prefix", prefix, "ms",
		 (json_int_t)(util_now_ms() - t0));
	return out;
fail:
	log_error("restore from S3 failed; nothing of it is left here", "{s:s, s:s}", "id", id,
		  "error", e->msg);
	na_rm_files(tmp);
	na_set_state(n, id, "stopping");
	na_node_changed(n);
	if (na_teardown(n, id, &e2) == -1)
		log_error("clean-up after a failed restore failed", "{s:s, s:s}", "id", id, "error",
			  e2.msg);
	pthread_mutex_lock(&n->mu);
	na_unlink_locked(n, id);
	pthread_mutex_unlock(&n->mu);
	na_node_changed(n);
	if (!e->http_status)
		e->http_status = 502;
	err_wrap(e, "restore %s from S3", id);
	return NULL;
}

long long na_node_l2_delete(struct na_node *n, const char *id, const char *prefix,
			    struct err *e)
{
	char want[1024];

	if (!n->s3)
		return err_http(e, 503, "this node has no S3 configured (--s3-endpoint)");
	key_of(n, want, sizeof(want), "sandboxes/%s/", id);
	if (!na_valid_id(id) || strncmp(prefix, want, strlen(want)) != 0 || strstr(prefix, ".."))
		return err_http(e, 400, "prefix must start with `%s`", want);
	return na_s3_delete_prefix(n->s3, prefix, e);
}
