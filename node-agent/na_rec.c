/* Recordings and the action trace, node side (na_rec.h).  One keep-alive
 * connection per request to cloche-rec, closed by us with a reset like
 * na_thumb's, so a checkpoint's census never meets a TIME_WAIT. */
#include "node-agent/na_rec.h"
#include "node-agent/na_ghttp.h"
#include "node-agent/na_netns.h"
#include "node-agent/na_sandbox.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/log.h"
#include "common/recid.h"
#include "common/rnd.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define REC_DIR "var/lib/cloche/rec"
#define TRACE_FILE "var/lib/cloche/trace/trace.jsonl"
#define REC_RECORD_MAX (64u << 10)

/* The sandbox's state and recorder secret; 404 when there is no such. */
static int sandbox_of(struct na_node *n, const char *id, char *state, size_t slen, char *secret,
		      size_t seclen, struct err *e)
{
	struct na_sb *s;

	if (!na_valid_id(id))
		return err_http(e, 404, "no sandbox `%.40s`", id);
	pthread_mutex_lock(&n->mu);
	s = na_find_locked(n, id);
	if (s) {
		snprintf(state, slen, "%s", s->state);
		snprintf(secret, seclen, "%s", s->desk.rec_secret);
	}
	pthread_mutex_unlock(&n->mu);
	if (!s)
		return err_http(e, 404, "no sandbox `%s`", id);
	return 0;
}

/* One call to the sandbox's cloche-rec: its JSON answer, or NULL with e set
 * (the recorder's own status and message for its refusals). */
static json_t *call_rec(struct na_node *n, const char *id, const char *method, const char *path,
			const json_t *body, bool any_state, struct err *e)
{
	char state[32], secret[64], hdrs[200];
	AUTOBUF struct buf b = BUF_INIT(REC_RECORD_MAX);
	AUTOFREE char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	AUTOCLOSE int fd = -1;
	const char *ans;
	json_t *j;
	int st;

	if (sandbox_of(n, id, state, sizeof(state), secret, sizeof(secret), e) == -1)
		return NULL;
	if (!any_state && strcmp(state, "ready") != 0) {
		err_http(e, 409, "sandbox `%s` is %s: only a running desktop can be recorded", id,
			 state);
		return NULL;
	}
	if (!secret[0]) {
		err_http(e, 409, "sandbox `%s` was made before recordings (no recorder secret)", id);
		return NULL;
	}
	fd = na_ghttp_connect(id, NA_REC_PORT, 2000, 25, e);
	if (fd == -1) {
		e->http_status = 502;
		return NULL;
	}
	snprintf(hdrs, sizeof(hdrs), "Content-Type: application/json\r\nX-Cloche-Rec-Secret: %s\r\n",
		 secret);
	st = na_ghttp_exchange(fd, method, path, NA_REC_PORT, hdrs, text, REC_RECORD_MAX, &b, &ans, e);
	explicit_bzero(hdrs, sizeof(hdrs));
	explicit_bzero(secret, sizeof(secret));
	if (st == -1) {
		e->http_status = 502;
		return NULL;
	}
	j = json_loadb(ans, b.len - (size_t)(ans - b.data), 0, NULL);
	if (st / 100 != 2) {
		const char *msg = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
		err_http(e, st == 403 ? 502 : st, "%s", msg ? msg : "the recorder refused");
		json_decref(j);
		return NULL;
	}
	if (!json_is_object(j)) {
		err_http(e, 502, "the recorder answered no JSON");
		json_decref(j);
		return NULL;
	}
	return j;
}

json_t *na_node_rec_start(struct na_node *n, const char *id, struct err *e)
{
	char rec[32];
	AUTOJSON json_t *body = NULL;
	json_t *ans;
	uint64_t t0 = util_now_ms();

	if (rnd_hex("rec-", 6, rec, sizeof(rec), e) == -1) {
		err_wrap(e, "recording id");
		return NULL;
	}
	body = json_pack("{s:s}", "id", rec);
	ans = call_rec(n, id, "POST", "/start", body, false, e);
	if (!ans) {
		err_wrap(e, "start a recording of %s", id);
		return NULL;
	}
	log_info("recording started", "{s:s, s:s, s:I}", "id", id, "recording", rec, "ms",
		 (json_int_t)(util_now_ms() - t0));
	return ans;
}

/* Opens path beneath dirfd without following any link (the guest writes
 * these directories).  An fd, or -1 with errno set. */
static int open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* The sandbox's rootfs, opened; 404 for an unknown sandbox, 409 when its
 * rootfs is not on this node (offloaded). */
static int rootfs_fd(struct na_node *n, const char *id, struct err *e)
{
	char state[32], secret[64], path[1200];
	int fd;

	if (sandbox_of(n, id, state, sizeof(state), secret, sizeof(secret), e) == -1)
		return -1;
	explicit_bzero(secret, sizeof(secret));
	na_sb_dir(n, id, path, sizeof(path));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/rootfs");
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1)
		return err_http(e, 409, "sandbox `%s` (%s) has no rootfs on this node", id, state);
	return fd;
}

static json_t *stop(struct na_node *n, const char *id, const char *rec, const char *reason,
		    bool any_state, struct err *e)
{
	AUTOJSON json_t *body = json_pack("{s:s}", "reason", reason ? reason : "api");
	AUTOJSON json_t *ans = NULL;
	char path[200];
	AUTOCLOSE int root = -1;
	AUTOCLOSE int fd = -1;
	json_t *out;
	uint64_t t0 = util_now_ms();

	if (rec && !recid_valid(rec, strlen(rec))) {
		err_http(e, 404, "no recording `%.60s`", rec);
		return NULL;
	}
	if (rec)
		json_object_set_new(body, "id", json_string(rec));
	ans = call_rec(n, id, "POST", "/stop", body, any_state, e);
	if (!ans) {
		err_wrap(e, "stop the recording of %s", id);
		return NULL;
	}
	log_info("recording stopped", "{s:s, s:s?, s:s, s:I}", "id", id, "recording", rec, "reason",
		 reason ? reason : "api", "ms", (json_int_t)(util_now_ms() - t0));
	/* The finished record is in the sidecar of the segment that ran (a
	 * recording goes on in new segments after a resize: docs/recording.md). */
	{
		const char *seg = json_string_value(json_object_get(ans, "stopped"));
		if (seg && recid_valid(seg, strlen(seg)))
			rec = seg;
	}
	root = rootfs_fd(n, id, e);
	if (rec && root != -1) {
		snprintf(path, sizeof(path), REC_DIR "/%s.json", rec);
		fd = open_beneath(root, path, O_RDONLY);
		if (fd != -1) {
			json_error_t je;
			out = json_loadfd(fd, 0, &je);
			if (json_is_object(out))
				return out;
			json_decref(out);
		}
	}
	return json_pack("{s:s?, s:s}", "id", rec, "state", "done");
}

json_t *na_node_rec_stop(struct na_node *n, const char *id, const char *rec, const char *reason,
			 struct err *e)
{
	return stop(n, id, rec, reason, false, e);
}

void na_node_rec_stop_quiet(struct na_node *n, const char *id, const char *reason)
{
	struct err e = ERR_INIT;
	AUTOJSON json_t *st = call_rec(n, id, "GET", "/status", NULL, true, &e);
	json_t *cur = json_object_get(st, "recording");
	AUTOJSON json_t *done = NULL;

	if (!json_is_object(cur))
		return;
	done = stop(n, id, json_string_value(json_object_get(cur, "id")), reason, true, &e);
	if (!done)
		log_warn("recording not stopped before a checkpoint", "{s:s, s:s}", "id", id, "error",
			 e.msg);
}

static int by_started(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t p = json_integer_value(json_object_get(x, "started_ms"));
	json_int_t q = json_integer_value(json_object_get(y, "started_ms"));

	return p < q ? -1 : p > q;
}

json_t *na_node_rec_list(struct na_node *n, const char *id, struct err *e)
{
	AUTOCLOSE int root = rootfs_fd(n, id, e);
	int dfd;
	DIR *d;
	struct dirent *de;
	json_t *items[512], *list;
	size_t count = 0;

	if (root == -1)
		return e->http_status == 409 ? json_pack("{s:[]}", "recordings") : NULL;
	dfd = open_beneath(root, REC_DIR, O_RDONLY | O_DIRECTORY);
	if (dfd == -1 || !(d = fdopendir(dfd))) {
		if (dfd != -1)
			close(dfd);
		return json_pack("{s:[]}", "recordings");
	}
	while ((de = readdir(d)) && count < ARRAY_LEN(items)) {
		size_t len = strlen(de->d_name);
		char name[64];
		AUTOCLOSE int fd = -1;
		json_error_t je;
		json_t *j;

		if (len < 10 || len > 60 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), de->d_name);
		if (!recid_valid(name, strlen(name)))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		j = fd == -1 ? NULL : json_loadfd(fd, 0, &je);
		if (json_is_object(j))
			items[count++] = j;
		else
			json_decref(j);
	}
	closedir(d);
	qsort(items, count, sizeof(items[0]), by_started);
	list = json_array();
	for (size_t i = 0; i < count; i++)
		json_array_append_new(list, items[i]);
	return json_pack("{s:o}", "recordings", list);
}

/* Appends the regular file path (beneath root) to b.  A missing file adds
 * nothing when optional. */
static int append_file(int root, const char *path, bool optional, struct buf *b, struct err *e)
{
	/* O_NONBLOCK: the guest may have left a FIFO there. */
	AUTOCLOSE int fd = open_beneath(root, path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	char chunk[65536];
	ssize_t r;

	if (fd == -1 && optional && errno == ENOENT)
		return 0;
	if (fd == -1)
		return err_http(e, errno == ENOENT ? 404 : 403, "open `%s`: %s", path, strerror(errno));
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return err_http(e, 403, "`%s` is not a regular file", path);
	if ((size_t)st.st_size > b->max - b->len)
		return err_http(e, 413, "`%s` is larger than a download may be (%zu bytes)", path,
				b->max);
	while ((r = read(fd, chunk, sizeof(chunk))) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return err_set(e, errno, "read `%s`", path);
		if (buf_append(b, chunk, (size_t)r, e) == -1)
			return err_http(e, 413, "`%s` grew past what a download may be", path);
	}
	return 0;
}

int na_node_rec_read(struct na_node *n, const char *id, const char *rec, size_t max, char **out,
		     size_t *len, struct err *e)
{
	AUTOCLOSE int root = -1;
	struct buf b = BUF_INIT(max);
	char path[200];

	if (rec && !recid_valid(rec, strlen(rec)))
		return err_http(e, 404, "no recording `%.60s`", rec);
	root = rootfs_fd(n, id, e);
	if (root == -1)
		return -1;
	if (rec) {
		AUTOCLOSE int fd = -1;
		AUTOJSON json_t *j = NULL;
		json_error_t je;
		const char *state;

		snprintf(path, sizeof(path), REC_DIR "/%s.json", rec);
		fd = open_beneath(root, path, O_RDONLY | O_NONBLOCK);
		j = fd == -1 ? NULL : json_loadfd(fd, 0, &je);
		if (!j)
			return err_http(e, 404, "no recording `%s` in sandbox `%s`", rec, id);
		state = json_string_value(json_object_get(j, "state"));
		if (state && strcmp(state, "recording") == 0)
			return err_http(e, 409, "recording `%s` is still running; stop it first", rec);
		/* A failed or interrupted one too: the MP4 is fragmented, so what
		 * was written plays up to its last fragment.  Only a file with
		 * nothing in it is gone. */
		snprintf(path, sizeof(path), REC_DIR "/%s.mp4", rec);
		if (append_file(root, path, false, &b, e) == -1)
			goto fail;
		if (b.len == 0 && state && strcmp(state, "done") != 0) {
			buf_free(&b);
			return err_http(e, 410, "recording `%s` is %s and holds no video", rec, state);
		}
	} else if (append_file(root, TRACE_FILE ".1", true, &b, e) == -1 ||
		   append_file(root, TRACE_FILE, true, &b, e) == -1) {
		goto fail;
	}
	*len = b.len;
	*out = b.data ? b.data : strdup("");
	if (!*out)
		return err_set(e, ENOMEM, "read");
	return 0;
fail:
	buf_free(&b);
	return -1;
}
