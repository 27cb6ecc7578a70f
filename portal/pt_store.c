/* The portal's SQLite store: schema, migrations and the queries the portal
 * makes.  See pt_store.h for the rules the SQL keeps to. */
#include "portal/pt_store.h"

#include "common/util.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct pt_store {
	sqlite3 *wr; /* every write */
	sqlite3 *rd; /* reads (WAL: never blocked by the writer) */
	int version;
};

/* Forward migrations: migrations[i] takes the schema from version i to i+1. */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE api_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL,"
	" hash TEXT NOT NULL, created_at BIGINT NOT NULL, revoked_at BIGINT);"
	"CREATE TABLE nodes (name TEXT PRIMARY KEY, url TEXT NOT NULL, boot_id TEXT,"
	" last_seen BIGINT NOT NULL);"
	"CREATE TABLE sandboxes (id TEXT PRIMARY KEY, owner TEXT NOT NULL, state TEXT NOT NULL,"
	" template TEXT NOT NULL, node TEXT, node_sid TEXT, ttl BIGINT NOT NULL,"
	" persist INTEGER NOT NULL, memory_mb BIGINT NOT NULL, cpus BIGINT NOT NULL,"
	" pids BIGINT NOT NULL, egress TEXT NOT NULL, labels TEXT NOT NULL,"
	" metadata TEXT NOT NULL, idem_key TEXT, reason TEXT, created_at BIGINT NOT NULL,"
	" updated_at BIGINT NOT NULL, ready_at BIGINT, expires_at BIGINT);"
	"CREATE UNIQUE INDEX sandboxes_idem ON sandboxes (owner, idem_key);"
	"CREATE INDEX sandboxes_state ON sandboxes (state, expires_at);"
	"CREATE INDEX sandboxes_node ON sandboxes (node, node_sid);"
	"CREATE INDEX sandboxes_created ON sandboxes (created_at, id);"
	"CREATE TABLE sandbox_labels (sandbox TEXT NOT NULL, key TEXT NOT NULL,"
	" value TEXT NOT NULL, PRIMARY KEY (sandbox, key));"
	"CREATE INDEX sandbox_labels_kv ON sandbox_labels (key, value);"
	"CREATE TABLE events (sandbox TEXT NOT NULL, at BIGINT NOT NULL, seq BIGINT NOT NULL,"
	" from_state TEXT, to_state TEXT NOT NULL, reason TEXT, PRIMARY KEY (sandbox, seq));",
	/* 1 -> 2: when a proxy last carried traffic of the sandbox */
	"ALTER TABLE sandboxes ADD COLUMN last_activity_at BIGINT;",
	/* 2 -> 3: hibernation, offload to S3 (L2), forks */
	"ALTER TABLE sandboxes ADD COLUMN idle_timeout BIGINT;"
	"ALTER TABLE sandboxes ADD COLUMN offload_after BIGINT;"
	"ALTER TABLE sandboxes ADD COLUMN hibernated_at BIGINT;"
	"ALTER TABLE sandboxes ADD COLUMN offloaded_at BIGINT;"
	"ALTER TABLE sandboxes ADD COLUMN l2_prefix TEXT;"
	"ALTER TABLE sandboxes ADD COLUMN l2_generation BIGINT;"
	"ALTER TABLE sandboxes ADD COLUMN checkpoint TEXT;"
	"ALTER TABLE sandboxes ADD COLUMN forked_from TEXT;"
	"CREATE INDEX sandboxes_forked ON sandboxes (forked_from);",
	/* 3 -> 4: share links to a sandbox's desktop */
	"CREATE TABLE shares (id TEXT PRIMARY KEY, sandbox TEXT NOT NULL, mode TEXT NOT NULL,"
	" label TEXT NOT NULL, created_by TEXT NOT NULL, created_at BIGINT NOT NULL,"
	" expires_at BIGINT NOT NULL, revoked_at BIGINT);"
	"CREATE INDEX shares_sandbox ON shares (sandbox, created_at);",
	/* 4 -> 5: the desktop switches of an acquire (NULL: the defaults) */
	"ALTER TABLE sandboxes ADD COLUMN desktop TEXT;",
};

long long pt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void pt_time_str(long long ms, char *out, size_t len)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static int db_err(struct err *e, sqlite3 *db, const char *what)
{
	int rc = sqlite3_extended_errcode(db);
	int st = (rc & 0xff) == SQLITE_CONSTRAINT ? 409 : 500;

	return err_http(e, st, "%s: %s", what, sqlite3_errmsg(db));
}

static int exec(sqlite3 *db, const char *sql, struct err *e)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		err_http(e, 500, "sqlite: %s", msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

static void finalizep(sqlite3_stmt **s)
{
	sqlite3_finalize(*s);
}
#define AUTOSTMT __attribute__((cleanup(finalizep)))

static sqlite3_stmt *prep(sqlite3 *db, const char *sql, struct err *e)
{
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
		db_err(e, db, "prepare");
		return NULL;
	}
	return s;
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v && *v)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

static void bind_ms(sqlite3_stmt *s, int i, long long v)
{
	if (v)
		sqlite3_bind_int64(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

static void col_copy(sqlite3_stmt *s, int i, char *out, size_t len)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(out, len, "%s", t ? (const char *)t : "");
}

static char *col_dup(sqlite3_stmt *s, int i, const char *def)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return strdup(t ? (const char *)t : def);
}

static int open_conn(const char *path, int flags, sqlite3 **out, struct err *e)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		err_http(e, 500, "open database `%s`: %s", path,
			 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return -1;
	}
	sqlite3_busy_timeout(db, 5000);
	*out = db;
	return 0;
}

/* The schema version, read inside the caller's transaction. */
static int read_version(struct pt_store *st, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(st->wr, "SELECT version FROM schema_version", e);

	if (!s)
		return -1;
	if (sqlite3_step(s) != SQLITE_ROW)
		return err_http(e, 500, "schema_version has no row");
	return sqlite3_column_int(s, 0);
}

/* Each migration runs in its own IMMEDIATE transaction that reads the
 * version first, so two processes opening a new database at once (the
 * portal and `key-create`) apply each step exactly once. */
static int migrate(struct pt_store *st, struct err *e)
{
	int n = (int)ARRAY_LEN(migrations);

	if (exec(st->wr, "BEGIN IMMEDIATE", e) == -1)
		return -1;
	if (exec(st->wr, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);"
			 "INSERT INTO schema_version (version) SELECT 0 WHERE NOT EXISTS"
			 " (SELECT 1 FROM schema_version);", e) == -1 ||
	    exec(st->wr, "COMMIT", e) == -1) {
		exec(st->wr, "ROLLBACK", NULL);
		return -1;
	}
	for (;;) {
		char bump[96];
		int v;

		if (exec(st->wr, "BEGIN IMMEDIATE", e) == -1)
			return -1;
		v = read_version(st, e);
		if (v == -1 || v >= n) {
			exec(st->wr, v == -1 ? "ROLLBACK" : "COMMIT", NULL);
			if (v == -1)
				return -1;
			st->version = v;
			if (v > n)
				return err_http(e, 500,
						"the database has schema version %d; this portal knows up "
						"to %d (a newer portal wrote it)",
						v, n);
			return 0;
		}
		snprintf(bump, sizeof(bump), "UPDATE schema_version SET version = %d;", v + 1);
		if (exec(st->wr, migrations[v], e) == -1 || exec(st->wr, bump, e) == -1) {
			exec(st->wr, "ROLLBACK", NULL);
			return err_wrap(e, "migrate schema %d -> %d", v, v + 1);
		}
		if (exec(st->wr, "COMMIT", e) == -1)
			return -1;
	}
}

struct pt_store *pt_store_open(const char *path, struct err *e)
{
	struct pt_store *st = calloc(1, sizeof(*st));

	if (!st) {
		err_set(e, 12, "out of memory");
		return NULL;
	}
	if (open_conn(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &st->wr, e) == -1)
		goto fail;
	/* WAL and FULL: every committed change is on disk before COMMIT returns.
	 * Switching a new database to WAL needs it to itself, and SQLite's busy
	 * timeout does not cover that: another process opening it at the same
	 * moment (key-create beside the portal) is waited out here. */
	for (int i = 0;; i++) {
		struct err e2 = ERR_INIT;

		if (exec(st->wr, "PRAGMA journal_mode=WAL", &e2) == 0)
			break;
		if (i == 100) {
			*e = e2;
			goto fail;
		}
		usleep(50 * 1000);
	}
	if (exec(st->wr, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", e) == -1 ||
	    migrate(st, e) == -1 ||
	    open_conn(path, SQLITE_OPEN_READONLY, &st->rd, e) == -1)
		goto fail;
	return st;
fail:
	err_wrap(e, "database `%s`", path);
	pt_store_close(st);
	return NULL;
}

void pt_store_close(struct pt_store *st)
{
	if (!st)
		return;
	sqlite3_close(st->rd);
	sqlite3_close(st->wr);
	free(st);
}

int pt_store_version(const struct pt_store *st)
{
	return st->version;
}

void pt_sb_clear(struct pt_sb *sb)
{
	free(sb->egress);
	free(sb->labels);
	free(sb->metadata);
	free(sb->checkpoint);
	free(sb->desktop);
	memset(sb, 0, sizeof(*sb));
}

#define SB_COLS                                                                            \
	"id, owner, state, template, node, node_sid, ttl, persist, memory_mb, cpus, pids,"  \
	" egress, labels, metadata, idem_key, reason, created_at, updated_at, ready_at,"   \
	" expires_at, last_activity_at, idle_timeout, offload_after, hibernated_at,"         \
	" offloaded_at, l2_prefix, l2_generation, checkpoint, forked_from, desktop"

static void sb_read(sqlite3_stmt *s, struct pt_sb *sb)
{
	char state[32];
	int st;

	memset(sb, 0, sizeof(*sb));
	col_copy(s, 0, sb->id, sizeof(sb->id));
	col_copy(s, 1, sb->owner, sizeof(sb->owner));
	col_copy(s, 2, state, sizeof(state));
	st = pt_state_parse(state);
	sb->state = st < 0 ? PT_FAILED : (enum pt_state)st;
	col_copy(s, 3, sb->template, sizeof(sb->template));
	col_copy(s, 4, sb->node, sizeof(sb->node));
	col_copy(s, 5, sb->node_sid, sizeof(sb->node_sid));
	sb->ttl_s = sqlite3_column_int64(s, 6);
	sb->persist = sqlite3_column_int(s, 7) != 0;
	sb->memory_mb = sqlite3_column_int64(s, 8);
	sb->cpus = sqlite3_column_int64(s, 9);
	sb->pids = sqlite3_column_int64(s, 10);
	sb->egress = col_dup(s, 11, "\"none\"");
	sb->labels = col_dup(s, 12, "{}");
	sb->metadata = col_dup(s, 13, "{}");
	col_copy(s, 14, sb->idem_key, sizeof(sb->idem_key));
	col_copy(s, 15, sb->reason, sizeof(sb->reason));
	sb->created_at = sqlite3_column_int64(s, 16);
	sb->updated_at = sqlite3_column_int64(s, 17);
	sb->ready_at = sqlite3_column_int64(s, 18);
	sb->expires_at = sqlite3_column_int64(s, 19);
	sb->last_activity_at = sqlite3_column_int64(s, 20);
	sb->idle_timeout_s = sqlite3_column_int64(s, 21);
	sb->offload_after_s = sqlite3_column_int64(s, 22);
	sb->hibernated_at = sqlite3_column_int64(s, 23);
	sb->offloaded_at = sqlite3_column_int64(s, 24);
	col_copy(s, 25, sb->l2_prefix, sizeof(sb->l2_prefix));
	sb->l2_generation = sqlite3_column_int64(s, 26);
	if (sqlite3_column_type(s, 27) != SQLITE_NULL)
		sb->checkpoint = col_dup(s, 27, "{}");
	col_copy(s, 28, sb->forked_from, sizeof(sb->forked_from));
	if (sqlite3_column_type(s, 29) != SQLITE_NULL)
		sb->desktop = col_dup(s, 29, "{}");
}

static int add_event(struct pt_store *st, const char *id, long long at, const char *from,
		     const char *to, const char *reason, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s =
		prep(st->wr,
		     "INSERT INTO events (sandbox, at, seq, from_state, to_state, reason)"
		     " SELECT ?1, ?2, COALESCE(MAX(seq), 0) + 1, ?3, ?4, ?5 FROM events"
		     " WHERE sandbox = ?1",
		     e);

	if (!s)
		return -1;
	bind_text(s, 1, id);
	sqlite3_bind_int64(s, 2, at);
	bind_text(s, 3, from);
	bind_text(s, 4, to);
	bind_text(s, 5, reason);
	if (sqlite3_step(s) != SQLITE_DONE)
		return db_err(e, st->wr, "record event");
	return 0;
}

/* The labels of a new row, one row each in sandbox_labels. */
static int add_labels(struct pt_store *st, const char *id, const char *labels, struct err *e)
{
	json_t *obj = json_loads(labels, 0, NULL);
	const char *k;
	json_t *v;
	int rc = 0;

	if (!obj)
		return 0;
	json_object_foreach(obj, k, v) {
		AUTOSTMT sqlite3_stmt *s = prep(
			st->wr, "INSERT INTO sandbox_labels (sandbox, key, value) VALUES (?, ?, ?)", e);

		if (!s || !json_is_string(v)) {
			rc = s ? 0 : -1;
			if (rc)
				break;
			continue;
		}
		sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(s, 2, k, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(s, 3, json_string_value(v), -1, SQLITE_TRANSIENT);
		if (sqlite3_step(s) != SQLITE_DONE) {
			rc = db_err(e, st->wr, "store label");
			break;
		}
	}
	json_decref(obj);
	return rc;
}

static int commit_or_rollback(struct pt_store *st, int rc, struct err *e)
{
	if (rc == 0 && exec(st->wr, "COMMIT", e) == 0)
		return 0;
	exec(st->wr, "ROLLBACK", NULL);
	return -1;
}

int pt_store_sb_insert(struct pt_store *st, const struct pt_sb *sb, const char *reason,
		       struct err *e)
{
	int rc = -1;

	if (exec(st->wr, "BEGIN IMMEDIATE", e) == -1)
		return -1;
	{
		AUTOSTMT sqlite3_stmt *s = prep(
			st->wr,
			"INSERT INTO sandboxes (" SB_COLS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
			" ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			e);
		if (s) {
			bind_text(s, 1, sb->id);
			bind_text(s, 2, sb->owner);
			bind_text(s, 3, pt_state_name(sb->state));
			bind_text(s, 4, sb->template);
			bind_text(s, 5, sb->node);
			bind_text(s, 6, sb->node_sid);
			sqlite3_bind_int64(s, 7, sb->ttl_s);
			sqlite3_bind_int(s, 8, sb->persist);
			sqlite3_bind_int64(s, 9, sb->memory_mb);
			sqlite3_bind_int64(s, 10, sb->cpus);
			sqlite3_bind_int64(s, 11, sb->pids);
			bind_text(s, 12, sb->egress ? sb->egress : "\"none\"");
			bind_text(s, 13, sb->labels ? sb->labels : "{}");
			bind_text(s, 14, sb->metadata ? sb->metadata : "{}");
			bind_text(s, 15, sb->idem_key);
			bind_text(s, 16, sb->reason);
			sqlite3_bind_int64(s, 17, sb->created_at);
			sqlite3_bind_int64(s, 18, sb->updated_at);
			bind_ms(s, 19, sb->ready_at);
			bind_ms(s, 20, sb->expires_at);
			sqlite3_bind_int64(s, 21, sb->idle_timeout_s);
			sqlite3_bind_int64(s, 22, sb->offload_after_s);
			bind_ms(s, 23, sb->hibernated_at);
			bind_ms(s, 24, sb->offloaded_at);
			bind_text(s, 25, sb->l2_prefix);
			bind_ms(s, 26, sb->l2_generation);
			bind_text(s, 27, sb->checkpoint);
			bind_text(s, 28, sb->forked_from);
			bind_text(s, 29, sb->desktop);
			rc = sqlite3_step(s) == SQLITE_DONE ? 0 : db_err(e, st->wr, "insert sandbox");
		}
	}
	if (rc == 0)
		rc = add_labels(st, sb->id, sb->labels ? sb->labels : "{}", e);
	if (rc == 0)
		rc = add_event(st, sb->id, sb->updated_at, NULL, pt_state_name(sb->state), reason, e);
	return commit_or_rollback(st, rc, e);
}

int pt_store_sb_update(struct pt_store *st, const struct pt_sb *sb, enum pt_state from,
		       const char *reason, struct err *e)
{
	int rc = -1;

	if (exec(st->wr, "BEGIN IMMEDIATE", e) == -1)
		return -1;
	{
		AUTOSTMT sqlite3_stmt *s =
			prep(st->wr,
			     "UPDATE sandboxes SET state = ?, node = ?, node_sid = ?, reason = ?,"
			     " idem_key = ?, ready_at = ?, expires_at = ?, updated_at = ?,"
			     " hibernated_at = ?, offloaded_at = ?, l2_prefix = ?, l2_generation = ?,"
			     " checkpoint = ? WHERE id = ? AND state = ?",
			     e);
		if (s) {
			bind_text(s, 1, pt_state_name(sb->state));
			bind_text(s, 2, sb->node);
			bind_text(s, 3, sb->node_sid);
			bind_text(s, 4, sb->reason);
			bind_text(s, 5, sb->idem_key);
			bind_ms(s, 6, sb->ready_at);
			bind_ms(s, 7, sb->expires_at);
			sqlite3_bind_int64(s, 8, sb->updated_at);
			bind_ms(s, 9, sb->hibernated_at);
			bind_ms(s, 10, sb->offloaded_at);
			bind_text(s, 11, sb->l2_prefix);
			bind_ms(s, 12, sb->l2_generation);
			bind_text(s, 13, sb->checkpoint);
			bind_text(s, 14, sb->id);
			bind_text(s, 15, pt_state_name(from));
			if (sqlite3_step(s) != SQLITE_DONE)
				rc = db_err(e, st->wr, "update sandbox");
			else if (sqlite3_changes(st->wr) != 1)
				rc = err_http(e, 409, "sandbox `%s` is no longer %s", sb->id,
					      pt_state_name(from));
			else
				rc = 0;
		}
	}
	if (rc == 0 && from != sb->state)
		rc = add_event(st, sb->id, sb->updated_at, pt_state_name(from),
			       pt_state_name(sb->state), reason, e);
	return commit_or_rollback(st, rc, e);
}

int pt_store_sb_note(struct pt_store *st, const char *id, enum pt_state state,
		     const char *reason, struct err *e)
{
	int rc;

	if (exec(st->wr, "BEGIN IMMEDIATE", e) == -1)
		return -1;
	rc = add_event(st, id, pt_now_ms(), pt_state_name(state), pt_state_name(state), reason, e);
	return commit_or_rollback(st, rc, e);
}

/* Steps a SELECT of SB_COLS that names at most one row: 1 read into out,
 * 0 none, -1 error. */
static int one_sb(struct pt_store *st, sqlite3_stmt *s, struct pt_sb *out, struct err *e)
{
	int rc = sqlite3_step(s);

	if (rc == SQLITE_ROW) {
		sb_read(s, out);
		return 1;
	}
	return rc == SQLITE_DONE ? 0 : db_err(e, st->rd, "read sandbox");
}

int pt_store_sb_get(struct pt_store *st, const char *id, struct pt_sb *out, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(st->rd, "SELECT " SB_COLS " FROM sandboxes WHERE id = ?", e);
	int rc;

	if (!s)
		return -1;
	bind_text(s, 1, id);
	rc = one_sb(st, s, out, e);
	if (rc == 0)
		return err_http(e, 404, "no sandbox `%s`", id);
	return rc == 1 ? 0 : -1;
}

int pt_store_sb_by_idem(struct pt_store *st, const char *owner, const char *key,
			struct pt_sb *out, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(
		st->rd, "SELECT " SB_COLS " FROM sandboxes WHERE owner = ? AND idem_key = ?", e);

	if (!s)
		return -1;
	bind_text(s, 1, owner);
	bind_text(s, 2, key);
	return one_sb(st, s, out, e);
}

/* Runs a SELECT of SB_COLS and calls fn per row. */
static int each_sb(struct pt_store *st, sqlite3_stmt *s,
		   void (*fn)(const struct pt_sb *sb, void *ud), void *ud, struct err *e)
{
	struct pt_sb sb;
	int n = 0, rc;

	memset(&sb, 0, sizeof(sb));
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		sb_read(s, &sb);
		fn(&sb, ud);
		pt_sb_clear(&sb);
		n++;
	}
	pt_sb_clear(&sb);
	return rc == SQLITE_DONE ? n : db_err(e, st->rd, "list sandboxes");
}

int pt_store_sb_list(struct pt_store *st, const struct pt_filter *f,
		     void (*fn)(const struct pt_sb *sb, void *ud), void *ud, struct err *e)
{
	/* One statement with optional terms: a NULL parameter switches a term off. */
	AUTOSTMT sqlite3_stmt *s = prep(
		st->rd,
		"SELECT " SB_COLS " FROM sandboxes WHERE (?1 IS NULL OR owner = ?1)"
		" AND (?2 IS NULL OR state = ?2) AND (?3 IS NULL OR template = ?3)"
		" AND (?4 IS NULL OR id IN (SELECT sandbox FROM sandbox_labels"
		"  WHERE key = ?4 AND value = ?5))"
		" AND (?6 IS NULL OR created_at < ?6 OR (created_at = ?6 AND id < ?7))"
		" ORDER BY created_at DESC, id DESC LIMIT ?8",
		e);

	if (!s)
		return -1;
	bind_text(s, 1, f->owner);
	bind_text(s, 2, f->state >= 0 ? pt_state_name((enum pt_state)f->state) : NULL);
	bind_text(s, 3, f->template);
	bind_text(s, 4, f->label_key);
	if (f->label_key)
		sqlite3_bind_text(s, 5, f->label_val ? f->label_val : "", -1, SQLITE_TRANSIENT);
	bind_ms(s, 6, f->before_at);
	bind_text(s, 7, f->before_id ? f->before_id : "");
	sqlite3_bind_int(s, 8, f->limit);
	return each_sb(st, s, fn, ud, e);
}

int pt_store_sb_select(struct pt_store *st, int state, const char *node, long long expires_before,
		       void (*fn)(const struct pt_sb *sb, void *ud), void *ud, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s =
		prep(st->rd,
		     "SELECT " SB_COLS " FROM sandboxes WHERE (?1 IS NULL OR state = ?1)"
		     " AND (?2 IS NULL OR node = ?2) AND (?3 IS NULL OR expires_at <= ?3)"
		     " ORDER BY created_at, id",
		     e);

	if (!s)
		return -1;
	bind_text(s, 1, state >= 0 ? pt_state_name((enum pt_state)state) : NULL);
	bind_text(s, 2, node);
	bind_ms(s, 3, expires_before > 0 ? expires_before : 0);
	return each_sb(st, s, fn, ud, e);
}

int pt_store_sb_on_node(struct pt_store *st, const char *node,
			void (*fn)(const struct pt_sb *sb, void *ud), void *ud, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(st->rd,
					"SELECT " SB_COLS " FROM sandboxes WHERE node = ?"
					" AND state IN " PT_ON_NODE_SQL " ORDER BY created_at, id",
					e);

	if (!s)
		return -1;
	bind_text(s, 1, node);
	return each_sb(st, s, fn, ud, e);
}

int pt_store_sb_by_node_sid(struct pt_store *st, const char *node, const char *sid,
			    struct pt_sb *out, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(st->rd,
					"SELECT " SB_COLS " FROM sandboxes WHERE node = ? AND"
					" node_sid = ? AND state IN " PT_ON_NODE_SQL,
					e);

	if (!s)
		return -1;
	bind_text(s, 1, node);
	bind_text(s, 2, sid);
	return one_sb(st, s, out, e);
}

json_t *pt_store_sb_events(struct pt_store *st, const char *id, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(st->rd,
					"SELECT at, from_state, to_state, reason FROM events"
					" WHERE sandbox = ? ORDER BY seq",
					e);
	json_t *arr;
	int rc;

	if (!s)
		return NULL;
	bind_text(s, 1, id);
	arr = json_array();
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		char at[40];
		const unsigned char *from = sqlite3_column_text(s, 1);
		const unsigned char *reason = sqlite3_column_text(s, 3);

		pt_time_str(sqlite3_column_int64(s, 0), at, sizeof(at));
		json_array_append_new(
			arr, json_pack("{s:s, s:s?, s:s, s:s?}", "at", at, "from", (const char *)from,
				       "to", (const char *)sqlite3_column_text(s, 2), "reason",
				       (const char *)reason));
	}
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		db_err(e, st->rd, "read events");
		return NULL;
	}
	return arr;
}

int pt_store_sb_counts(struct pt_store *st,
		       void (*fn)(const char *state, const char *node, long long n, void *ud),
		       void *ud, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(
		st->rd, "SELECT state, COALESCE(node, ''), COUNT(*) FROM sandboxes GROUP BY state, node",
		e);
	int rc;

	if (!s)
		return -1;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn((const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1),
		   sqlite3_column_int64(s, 2), ud);
	return rc == SQLITE_DONE ? 0 : db_err(e, st->rd, "count sandboxes");
}

int pt_store_key_insert(struct pt_store *st, const struct pt_key *k, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(
		st->wr, "INSERT INTO api_keys (id, name, role, hash, created_at) VALUES (?, ?, ?, ?, ?)",
		e);

	if (!s)
		return -1;
	bind_text(s, 1, k->id);
	sqlite3_bind_text(s, 2, k->name, -1, SQLITE_TRANSIENT);
	bind_text(s, 3, k->role);
	bind_text(s, 4, k->hash);
	sqlite3_bind_int64(s, 5, k->created_at);
	return sqlite3_step(s) == SQLITE_DONE ? 0 : db_err(e, st->wr, "insert key");
}

static void key_read(sqlite3_stmt *s, struct pt_key *k)
{
	memset(k, 0, sizeof(*k));
	col_copy(s, 0, k->id, sizeof(k->id));
	col_copy(s, 1, k->name, sizeof(k->name));
	col_copy(s, 2, k->role, sizeof(k->role));
	col_copy(s, 3, k->hash, sizeof(k->hash));
	k->created_at = sqlite3_column_int64(s, 4);
	k->revoked_at = sqlite3_column_int64(s, 5);
}

int pt_store_key_get(struct pt_store *st, const char *id, struct pt_key *out, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(
		st->rd, "SELECT id, name, role, hash, created_at, revoked_at FROM api_keys WHERE id = ?",
		e);
	int rc;

	if (!s)
		return -1;
	bind_text(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		key_read(s, out);
		return 1;
	}
	return rc == SQLITE_DONE ? 0 : db_err(e, st->rd, "read key");
}

int pt_store_key_list(struct pt_store *st, void (*fn)(const struct pt_key *k, void *ud), void *ud,
		      struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(st->rd,
					"SELECT id, name, role, hash, created_at, revoked_at FROM"
					" api_keys ORDER BY created_at, id",
					e);
	struct pt_key k;
	int rc;

	if (!s)
		return -1;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		key_read(s, &k);
		fn(&k, ud);
	}
	return rc == SQLITE_DONE ? 0 : db_err(e, st->rd, "list keys");
}

int pt_store_key_revoke(struct pt_store *st, const char *id, long long at, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(
		st->wr, "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", e);

	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, at);
	bind_text(s, 2, id);
	if (sqlite3_step(s) != SQLITE_DONE)
		return db_err(e, st->wr, "revoke key");
	return sqlite3_changes(st->wr) == 1 ? 0 : err_http(e, 404, "no key `%s`", id);
}

long long pt_store_key_admins(struct pt_store *st, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(
		st->rd, "SELECT COUNT(*) FROM api_keys WHERE role = 'admin' AND revoked_at IS NULL", e);

	if (!s)
		return -1;
	if (sqlite3_step(s) != SQLITE_ROW)
		return db_err(e, st->rd, "count keys");
	return sqlite3_column_int64(s, 0);
}

int pt_store_node_seen(struct pt_store *st, const char *name, const char *url, const char *boot_id,
		       long long at, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(
		st->wr,
		"INSERT INTO nodes (name, url, boot_id, last_seen) VALUES (?, ?, ?, ?)"
		" ON CONFLICT (name) DO UPDATE SET url = excluded.url, boot_id = excluded.boot_id,"
		" last_seen = excluded.last_seen",
		e);

	if (!s)
		return -1;
	bind_text(s, 1, name);
	bind_text(s, 2, url);
	bind_text(s, 3, boot_id);
	sqlite3_bind_int64(s, 4, at);
	return sqlite3_step(s) == SQLITE_DONE ? 0 : db_err(e, st->wr, "record node");
}

int pt_store_node_list(struct pt_store *st,
		       void (*fn)(const char *name, const char *url, const char *boot_id,
				  long long last_seen, void *ud),
		       void *ud, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s =
		prep(st->rd, "SELECT name, url, COALESCE(boot_id, ''), last_seen FROM nodes"
			     " ORDER BY name", e);
	int rc;

	if (!s)
		return -1;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn((const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1),
		   (const char *)sqlite3_column_text(s, 2), sqlite3_column_int64(s, 3), ud);
	return rc == SQLITE_DONE ? 0 : db_err(e, st->rd, "list nodes");
}

int pt_store_changes(struct pt_store *st, long long after, long long *seq, json_t *ids,
		     struct err *e)
{
	AUTOSTMT sqlite3_stmt *m = prep(st->rd, "SELECT COALESCE(MAX(rowid), 0) FROM events", e);
	AUTOSTMT sqlite3_stmt *s = NULL;
	int rc;

	if (!m)
		return -1;
	if (sqlite3_step(m) != SQLITE_ROW)
		return db_err(e, st->rd, "read the change feed");
	*seq = sqlite3_column_int64(m, 0);
	if (after < 0 || after >= *seq)
		return 0;
	s = prep(st->rd,
		 "SELECT DISTINCT sandbox FROM events WHERE rowid > ? AND rowid <= ? LIMIT 10000", e);
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, after);
	sqlite3_bind_int64(s, 2, *seq);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		json_array_append_new(ids, json_string((const char *)sqlite3_column_text(s, 0)));
	return rc == SQLITE_DONE ? 0 : db_err(e, st->rd, "read the change feed");
}

int pt_store_activity(struct pt_store *st, const char *const *ids, const long long *at, size_t n,
		      struct err *e)
{
	int rc = 0;

	if (n == 0)
		return 0;
	if (exec(st->wr, "BEGIN IMMEDIATE", e) == -1)
		return -1;
	{
		AUTOSTMT sqlite3_stmt *s = prep(
			st->wr,
			"UPDATE sandboxes SET last_activity_at = MAX(COALESCE(last_activity_at, 0), ?)"
			" WHERE id = ?",
			e);

		if (!s)
			rc = -1;
		for (size_t i = 0; rc == 0 && i < n; i++) {
			sqlite3_reset(s);
			sqlite3_bind_int64(s, 1, at[i]);
			bind_text(s, 2, ids[i]);
			if (sqlite3_step(s) != SQLITE_DONE)
				rc = db_err(e, st->wr, "record activity");
		}
	}
	return commit_or_rollback(st, rc, e);
}

/* --- shares ------------------------------------------------------------------------ */

json_t *pt_share_json(const struct pt_share *sh, long long now)
{
	char created[40], expires[40], revoked[40];

	pt_time_str(sh->created_at, created, sizeof(created));
	pt_time_str(sh->expires_at, expires, sizeof(expires));
	if (sh->revoked_at)
		pt_time_str(sh->revoked_at, revoked, sizeof(revoked));
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:s}", "id", sh->id, "sandbox",
			 sh->sandbox, "mode", sh->mode, "label", sh->label, "created_by", sh->created_by,
			 "created_at", created, "expires_at", expires, "revoked_at",
			 sh->revoked_at ? revoked : NULL, "state",
			 sh->revoked_at ? "revoked" : sh->expires_at <= now ? "expired" : "active");
}

int pt_store_share_insert(struct pt_store *st, const struct pt_share *sh, const char *state,
			  struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = NULL;
	char reason[200], until[40];
	int rc = -1;

	if (exec(st->wr, "BEGIN IMMEDIATE", e) == -1)
		return -1;
	s = prep(st->wr,
		 "INSERT INTO shares (id, sandbox, mode, label, created_by, created_at, expires_at)"
		 " VALUES (?, ?, ?, ?, ?, ?, ?)",
		 e);
	if (s) {
		bind_text(s, 1, sh->id);
		bind_text(s, 2, sh->sandbox);
		bind_text(s, 3, sh->mode);
		sqlite3_bind_text(s, 4, sh->label, -1, SQLITE_TRANSIENT); /* "" is a label */
		bind_text(s, 5, sh->created_by);
		sqlite3_bind_int64(s, 6, sh->created_at);
		sqlite3_bind_int64(s, 7, sh->expires_at);
		pt_time_str(sh->expires_at, until, sizeof(until));
		snprintf(reason, sizeof(reason), "share %s made (%s, until %s)", sh->id, sh->mode, until);
		if (sqlite3_step(s) != SQLITE_DONE)
			db_err(e, st->wr, "record share");
		else
			rc = add_event(st, sh->sandbox, sh->created_at, state, state, reason, e);
	}
	return commit_or_rollback(st, rc, e);
}

int pt_store_share_revoke(struct pt_store *st, const char *sandbox, const char *id, long long at,
			  const char *state, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = NULL;
	char reason[80];
	int rc = -1;

	if (exec(st->wr, "BEGIN IMMEDIATE", e) == -1)
		return -1;
	s = prep(st->wr,
		 "UPDATE shares SET revoked_at = ? WHERE id = ? AND sandbox = ? AND revoked_at IS NULL", e);
	if (s) {
		sqlite3_bind_int64(s, 1, at);
		bind_text(s, 2, id);
		bind_text(s, 3, sandbox);
		snprintf(reason, sizeof(reason), "share %s revoked", id);
		if (sqlite3_step(s) != SQLITE_DONE)
			db_err(e, st->wr, "revoke share");
		else if (sqlite3_changes(st->wr) != 1)
			err_http(e, 404, "sandbox %s has no share `%s` that is not revoked already", sandbox, id);
		else
			rc = add_event(st, sandbox, at, state, state, reason, e);
	}
	return commit_or_rollback(st, rc, e);
}

int pt_store_share_each(struct pt_store *st, const char *sandbox, const char *id,
			void (*fn)(const struct pt_share *sh, void *ud), void *ud, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(st->rd,
					"SELECT id, mode, label, created_by, created_at, expires_at, revoked_at"
					" FROM shares WHERE sandbox = ?1 AND (?2 IS NULL OR id = ?2)"
					" ORDER BY created_at, id",
					e);
	int rc;

	if (!s)
		return -1;
	bind_text(s, 1, sandbox);
	bind_text(s, 2, id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct pt_share sh = {.revoked_at = 0};

		col_copy(s, 0, sh.id, sizeof(sh.id));
		snprintf(sh.sandbox, sizeof(sh.sandbox), "%s", sandbox);
		col_copy(s, 1, sh.mode, sizeof(sh.mode));
		col_copy(s, 2, sh.label, sizeof(sh.label));
		col_copy(s, 3, sh.created_by, sizeof(sh.created_by));
		sh.created_at = sqlite3_column_int64(s, 4);
		sh.expires_at = sqlite3_column_int64(s, 5);
		if (sqlite3_column_type(s, 6) != SQLITE_NULL)
			sh.revoked_at = sqlite3_column_int64(s, 6);
		fn(&sh, ud);
	}
	return rc == SQLITE_DONE ? 0 : db_err(e, st->rd, "read shares");
}

json_t *pt_store_share_revoked(struct pt_store *st, const char *sandbox, long long now, struct err *e)
{
	AUTOSTMT sqlite3_stmt *s = prep(st->rd,
					"SELECT id FROM shares WHERE sandbox = ? AND revoked_at IS NOT NULL"
					" AND expires_at > ? ORDER BY id LIMIT 1000",
					e);
	json_t *arr;
	int rc;

	if (!s)
		return NULL;
	bind_text(s, 1, sandbox);
	sqlite3_bind_int64(s, 2, now);
	arr = json_array();
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		json_array_append_new(arr, json_string((const char *)sqlite3_column_text(s, 0)));
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		db_err(e, st->rd, "read revoked shares");
		return NULL;
	}
	return arr;
}
