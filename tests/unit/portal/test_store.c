/* Unit tests for portal/pt_store on a real SQLite file: migrations, compare
 * and set on state changes, events, idempotency keys, listing with filters
 * and cursors, keys, nodes. */
#include "portal/pt_store.h"
#include "tests/unit/portal/suites.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/pt-store-XXXXXX";
static char path[256];

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/pt-store-XXXXXX")));
	snprintf(path, sizeof(path), "%s/p.db", dir);
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void row(struct pt_sb *sb, const char *id, const char *owner, enum pt_state st,
		long long at)
{
	memset(sb, 0, sizeof(*sb));
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	snprintf(sb->owner, sizeof(sb->owner), "%s", owner);
	snprintf(sb->template, sizeof(sb->template), "desktop");
	sb->state = st;
	sb->ttl_s = 60;
	sb->memory_mb = 2048;
	sb->cpus = 1;
	sb->pids = 1024;
	sb->created_at = sb->updated_at = at;
}

START_TEST(migrates_once_and_refuses_newer)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	sqlite3 *db;

	ck_assert_msg(st != NULL, "%s", e.msg);
	ck_assert_int_eq(pt_store_version(st), 5);
	pt_store_close(st);
	st = pt_store_open(path, &e); /* again: nothing to do */
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(pt_store_version(st), 5);
	pt_store_close(st);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "UPDATE schema_version SET version = 99", 0, 0, 0), SQLITE_OK);
	sqlite3_close(db);
	ck_assert_ptr_null(pt_store_open(path, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "schema version 99"));
}
END_TEST

START_TEST(change_feed_and_activity)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	struct pt_sb a, b;
	json_t *ids = json_array();
	long long seq = -1, seq2 = -1, at[] = {5000};
	const char *who[] = {"sb-f"};

	row(&a, "sb-f", "k1", PT_QUEUED, 1000);
	ck_assert_int_eq(pt_store_sb_insert(st, &a, "made", &e), 0);
	/* the first read only learns where the feed is */
	ck_assert_int_eq(pt_store_changes(st, -1, &seq, ids, &e), 0);
	ck_assert_int_ge(seq, 1);
	ck_assert_int_eq(json_array_size(ids), 0);
	a.state = PT_PLACING;
	a.updated_at = 2000;
	ck_assert_int_eq(pt_store_sb_update(st, &a, PT_QUEUED, "placed", &e), 0);
	ck_assert_int_eq(pt_store_changes(st, seq, &seq2, ids, &e), 0);
	ck_assert_int_gt(seq2, seq);
	ck_assert_int_eq(json_array_size(ids), 1);
	ck_assert_str_eq(json_string_value(json_array_get(ids, 0)), "sb-f");
	json_array_clear(ids);
	ck_assert_int_eq(pt_store_changes(st, seq2, &seq, ids, &e), 0);
	ck_assert_int_eq(json_array_size(ids), 0);
	/* activity only moves forward */
	ck_assert_int_eq(pt_store_activity(st, who, at, 1, &e), 0);
	at[0] = 4000;
	ck_assert_int_eq(pt_store_activity(st, who, at, 1, &e), 0);
	ck_assert_int_eq(pt_store_sb_get(st, "sb-f", &b, &e), 0);
	ck_assert_int_eq(b.last_activity_at, 5000);
	pt_sb_clear(&a);
	pt_sb_clear(&b);
	json_decref(ids);
	pt_store_close(st);
}
END_TEST

START_TEST(state_change_is_compare_and_set)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	struct pt_sb a, b;
	json_t *ev;

	row(&a, "sb-1", "k1", PT_QUEUED, 1000);
	a.labels = strdup("{\"team\":\"x\"}");
	ck_assert_int_eq(pt_store_sb_insert(st, &a, "made", &e), 0);
	ck_assert_int_eq(pt_store_sb_insert(st, &a, "again", &e), -1);
	ck_assert_int_eq(e.http_status, 409);
	a.state = PT_PLACING;
	a.updated_at = 1001;
	snprintf(a.node, sizeof(a.node), "n1");
	ck_assert_int_eq(pt_store_sb_update(st, &a, PT_QUEUED, "placed", &e), 0);
	/* A second change from the old state loses: the row moved on. */
	a.state = PT_FAILED;
	ck_assert_int_eq(pt_store_sb_update(st, &a, PT_QUEUED, "late", &e), -1);
	ck_assert_int_eq(e.http_status, 409);
	ck_assert_int_eq(pt_store_sb_get(st, "sb-1", &b, &e), 0);
	ck_assert_int_eq(b.state, PT_PLACING);
	ck_assert_str_eq(b.node, "n1");
	ck_assert_str_eq(b.labels, "{\"team\":\"x\"}");
	ev = pt_store_sb_events(st, "sb-1", &e);
	ck_assert_int_eq(json_array_size(ev), 2);
	ck_assert(json_is_null(json_object_get(json_array_get(ev, 0), "from")));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, 1), "to")), "placing");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, 1), "reason")), "placed");
	json_decref(ev);
	ck_assert_int_eq(pt_store_sb_get(st, "sb-none", &b, &e), -1);
	ck_assert_int_eq(e.http_status, 404);
	free(a.labels);
	a.labels = NULL;
	pt_sb_clear(&b);
	pt_store_close(st);
}
END_TEST

START_TEST(idempotency_key_is_unique_per_owner)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	struct pt_sb a, got;

	row(&a, "sb-1", "k1", PT_QUEUED, 1);
	strcpy(a.idem_key, "retry-1");
	ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), 0);
	row(&a, "sb-2", "k1", PT_QUEUED, 2);
	strcpy(a.idem_key, "retry-1");
	ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), -1); /* same owner, same key */
	row(&a, "sb-3", "k2", PT_QUEUED, 3);
	strcpy(a.idem_key, "retry-1");
	ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), 0); /* another owner */
	row(&a, "sb-4", "k1", PT_QUEUED, 4); /* no key: never collides */
	ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), 0);
	row(&a, "sb-5", "k1", PT_QUEUED, 5);
	ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), 0);
	memset(&got, 0, sizeof(got));
	ck_assert_int_eq(pt_store_sb_by_idem(st, "k1", "retry-1", &got, &e), 1);
	ck_assert_str_eq(got.id, "sb-1");
	ck_assert_int_eq(pt_store_sb_by_idem(st, "k3", "retry-1", &got, &e), 0);
	pt_sb_clear(&got);
	pt_store_close(st);
}
END_TEST

struct seen {
	char ids[16][32];
	int n;
};

static void note(const struct pt_sb *sb, void *ud)
{
	struct seen *s = ud;

	snprintf(s->ids[s->n++], 32, "%s", sb->id);
}

START_TEST(list_filters_and_pages)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	struct pt_sb a;
	struct seen s;
	struct pt_filter f = {.state = -1, .limit = 2};

	for (int i = 0; i < 5; i++) {
		char id[16];

		snprintf(id, sizeof(id), "sb-%d", i);
		row(&a, id, i % 2 ? "odd" : "even", i == 4 ? PT_READY : PT_QUEUED, 100 + i);
		a.labels = strdup(i < 2 ? "{\"k\":\"v\"}" : "{}");
		ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), 0);
		free(a.labels);
	}
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(pt_store_sb_list(st, &f, note, &s, &e), 2);
	ck_assert_str_eq(s.ids[0], "sb-4"); /* newest first */
	ck_assert_str_eq(s.ids[1], "sb-3");
	f.before_at = 103;
	f.before_id = "sb-3";
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(pt_store_sb_list(st, &f, note, &s, &e), 2);
	ck_assert_str_eq(s.ids[0], "sb-2");
	ck_assert_str_eq(s.ids[1], "sb-1");
	memset(&f, 0, sizeof(f));
	f.state = -1;
	f.limit = 10;
	f.owner = "even";
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(pt_store_sb_list(st, &f, note, &s, &e), 3);
	f.owner = NULL;
	f.label_key = "k";
	f.label_val = "v";
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(pt_store_sb_list(st, &f, note, &s, &e), 2);
	f.label_key = NULL;
	f.state = PT_READY;
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(pt_store_sb_list(st, &f, note, &s, &e), 1);
	ck_assert_str_eq(s.ids[0], "sb-4");
	pt_store_close(st);
}
END_TEST

START_TEST(expiry_and_node_queries)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	struct pt_sb a, got;
	struct seen s;

	row(&a, "sb-a", "k", PT_READY, 1);
	strcpy(a.node, "n1");
	strcpy(a.node_sid, "sb-x");
	a.expires_at = 500;
	ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), 0);
	row(&a, "sb-b", "k", PT_READY, 2);
	strcpy(a.node, "n1");
	strcpy(a.node_sid, "sb-y");
	a.expires_at = 900;
	ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), 0);
	row(&a, "sb-c", "k", PT_RELEASED, 3);
	strcpy(a.node, "n1");
	strcpy(a.node_sid, "sb-z");
	ck_assert_int_eq(pt_store_sb_insert(st, &a, NULL, &e), 0);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(pt_store_sb_select(st, PT_READY, NULL, 600, note, &s, &e), 1);
	ck_assert_str_eq(s.ids[0], "sb-a");
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(pt_store_sb_on_node(st, "n1", note, &s, &e), 2); /* not the released one */
	memset(&got, 0, sizeof(got));
	ck_assert_int_eq(pt_store_sb_by_node_sid(st, "n1", "sb-y", &got, &e), 1);
	ck_assert_str_eq(got.id, "sb-b");
	ck_assert_int_eq(pt_store_sb_by_node_sid(st, "n1", "sb-z", &got, &e), 0);
	ck_assert_int_eq(pt_store_sb_by_node_sid(st, "n2", "sb-y", &got, &e), 0);
	pt_sb_clear(&got);
	pt_store_close(st);
}
END_TEST

/* The checkpoint columns: written at insert (policy, parent) and by updates
 * (hibernation, offload), read back; a note is an event without a change. */
START_TEST(checkpoint_columns)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	struct pt_sb a, b;
	json_t *ev;

	row(&a, "sb-h", "k", PT_READY, 10);
	strcpy(a.node, "n1");
	strcpy(a.node_sid, "sb-h");
	strcpy(a.forked_from, "sb-p");
	a.idle_timeout_s = 600;
	a.offload_after_s = 3600;
	ck_assert_int_eq(pt_store_sb_insert(st, &a, "forked", &e), 0);
	ck_assert_int_eq(pt_store_sb_get(st, "sb-h", &b, &e), 0);
	ck_assert_int_eq(b.idle_timeout_s, 600);
	ck_assert_int_eq(b.offload_after_s, 3600);
	ck_assert_str_eq(b.forked_from, "sb-p");
	ck_assert_ptr_null(b.checkpoint);
	ck_assert_int_eq(b.hibernated_at, 0);
	b.state = PT_HIBERNATED;
	b.hibernated_at = 20;
	b.checkpoint = strdup("{\"generation\":1}");
	ck_assert_int_eq(pt_store_sb_update(st, &b, PT_READY, "hibernated", &e), 0);
	b.state = PT_OFFLOADED;
	b.node[0] = '\0';
	b.offloaded_at = 30;
	strcpy(b.l2_prefix, "cloche/sb-h/");
	b.l2_generation = 1;
	ck_assert_int_eq(pt_store_sb_update(st, &b, PT_HIBERNATED, "offloaded", &e), 0);
	pt_sb_clear(&b);
	ck_assert_int_eq(pt_store_sb_get(st, "sb-h", &b, &e), 0);
	ck_assert_int_eq(b.state, PT_OFFLOADED);
	ck_assert_str_eq(b.node, "");
	ck_assert_str_eq(b.node_sid, "sb-h");
	ck_assert_str_eq(b.checkpoint, "{\"generation\":1}");
	ck_assert_str_eq(b.l2_prefix, "cloche/sb-h/");
	ck_assert_int_eq(b.l2_generation, 1);
	ck_assert_int_eq(b.hibernated_at, 20);
	ck_assert_int_eq(b.offloaded_at, 30);
	/* offloaded rows are on no node */
	ck_assert_int_eq(pt_store_sb_by_node_sid(st, "n1", "sb-h", &a, &e), 0);
	ck_assert_int_eq(pt_store_sb_note(st, "sb-h", PT_OFFLOADED, "a note", &e), 0);
	ev = pt_store_sb_events(st, "sb-h", &e);
	ck_assert_int_eq(json_array_size(ev), 4);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, 3), "from")),
			 "offloaded");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, 3), "reason")),
			 "a note");
	json_decref(ev);
	pt_sb_clear(&b);
	pt_store_close(st);
}
END_TEST

/* A database of schema 2 (before checkpoints) keeps its rows. */
START_TEST(migrates_from_2)
{
	struct err e = ERR_INIT;
	struct pt_store *st;
	struct pt_sb b;
	sqlite3 *db;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(
		sqlite3_exec(db,
			     "CREATE TABLE schema_version (version INTEGER NOT NULL);"
			     "INSERT INTO schema_version VALUES (2);"
			     "CREATE TABLE sandboxes (id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
			     " state TEXT NOT NULL, template TEXT NOT NULL, node TEXT, node_sid TEXT,"
			     " ttl BIGINT NOT NULL, persist INTEGER NOT NULL, memory_mb BIGINT NOT NULL,"
			     " cpus BIGINT NOT NULL, pids BIGINT NOT NULL, egress TEXT NOT NULL,"
			     " labels TEXT NOT NULL, metadata TEXT NOT NULL, idem_key TEXT, reason TEXT,"
			     " created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, ready_at BIGINT,"
			     " expires_at BIGINT, last_activity_at BIGINT);"
			     "INSERT INTO sandboxes VALUES ('sb-old', 'k', 'ready', 'desktop', 'n1',"
			     " 'sb-old', 60, 1, 2048, 1, 1024, '\"none\"', '{}', '{}', NULL, NULL, 1,"
			     " 1, 1, 99, NULL);",
			     0, 0, 0),
		SQLITE_OK);
	sqlite3_close(db);
	st = pt_store_open(path, &e);
	ck_assert_msg(st != NULL, "%s", e.msg);
	ck_assert_int_eq(pt_store_version(st), 5);
	ck_assert_int_eq(pt_store_sb_get(st, "sb-old", &b, &e), 0);
	ck_assert_int_eq(b.state, PT_READY);
	ck_assert(b.persist);
	ck_assert_int_eq(b.idle_timeout_s, 0);
	ck_assert_str_eq(b.forked_from, "");
	pt_sb_clear(&b);
	pt_store_close(st);
}
END_TEST

static void count_nodes(const char *name, const char *url, const char *boot, long long seen,
			void *ud)
{
	(void)url;
	(void)boot;
	(void)seen;
	ck_assert_str_eq(name, "n1");
	(*(int *)ud)++;
}

START_TEST(nodes_upsert)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	int n = 0;

	ck_assert_int_eq(pt_store_node_seen(st, "n1", "http://a", "b1", 1, &e), 0);
	ck_assert_int_eq(pt_store_node_seen(st, "n1", "http://b", "b2", 2, &e), 0);
	ck_assert_int_eq(pt_store_node_list(st, count_nodes, &n, &e), 0);
	ck_assert_int_eq(n, 1);
	pt_store_close(st);
}
END_TEST

START_TEST(times_format)
{
	char t[40];

	pt_time_str(0, t, sizeof(t));
	ck_assert_str_eq(t, "1970-01-01T00:00:00.000Z");
	pt_time_str(1795392000123LL, t, sizeof(t));
	ck_assert_str_eq(t, "2026-11-23T00:00:00.123Z");
}
END_TEST

static void count_share(const struct pt_share *sh, void *ud)
{
	int *n = ud;

	ck_assert_str_eq(sh->sandbox, "sb-s");
	*n += sh->revoked_at ? 100 : 1;
}

START_TEST(shares_made_listed_revoked)
{
	struct err e = ERR_INIT;
	struct pt_store *st = pt_store_open(path, &e);
	struct pt_share a = {"sh_a", "sb-s", "view", "", "k1", 1000, 2000000, 0};
	struct pt_share b = {"sh_b", "sb-s", "control", "pair", "k1", 1001, 3000, 0};
	int n = 0;
	json_t *r, *ev;

	ck_assert_msg(st != NULL, "%s", e.msg);
	ck_assert_int_eq(pt_store_share_insert(st, &a, "ready", &e), 0);
	ck_assert_int_eq(pt_store_share_insert(st, &b, "ready", &e), 0);
	ck_assert_int_eq(pt_store_share_insert(st, &b, "ready", &e), -1); /* the same id */
	ck_assert_int_eq(pt_store_share_each(st, "sb-s", NULL, count_share, &n, &e), 0);
	ck_assert_int_eq(n, 2);
	n = 0;
	ck_assert_int_eq(pt_store_share_each(st, "sb-s", "sh_b", count_share, &n, &e), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(pt_store_share_revoke(st, "sb-s", "sh_a", 5000, "ready", &e), 0);
	ck_assert_int_eq(pt_store_share_revoke(st, "sb-s", "sh_a", 6000, "ready", &e), -1);
	ck_assert_int_eq(e.http_status, 404);
	ck_assert_int_eq(pt_store_share_revoke(st, "sb-other", "sh_b", 6000, "ready", &e), -1);
	n = 0;
	ck_assert_int_eq(pt_store_share_each(st, "sb-s", NULL, count_share, &n, &e), 0);
	ck_assert_int_eq(n, 101);
	/* revoked and not expired: the proxies must refuse it */
	r = pt_store_share_revoked(st, "sb-s", 10000, &e);
	ck_assert_int_eq(json_array_size(r), 1);
	ck_assert_str_eq(json_string_value(json_array_get(r, 0)), "sh_a");
	json_decref(r);
	r = pt_store_share_revoked(st, "sb-s", 2000000, &e); /* expired since: no longer listed */
	ck_assert_int_eq(json_array_size(r), 0);
	json_decref(r);
	/* each change is an event of the sandbox (the proxies' change feed) */
	ev = pt_store_sb_events(st, "sb-s", &e);
	ck_assert_int_eq(json_array_size(ev), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ev, 2), "reason")), "share sh_a revoked");
	json_decref(ev);
	pt_store_close(st);
}
END_TEST

Suite *suite_portal_store(void)
{
	Suite *s = suite_create("portal_store");
	TCase *tc = tcase_create("sqlite");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, migrates_once_and_refuses_newer);
	tcase_add_test(tc, shares_made_listed_revoked);
	tcase_add_test(tc, change_feed_and_activity);
	tcase_add_test(tc, state_change_is_compare_and_set);
	tcase_add_test(tc, idempotency_key_is_unique_per_owner);
	tcase_add_test(tc, list_filters_and_pages);
	tcase_add_test(tc, expiry_and_node_queries);
	tcase_add_test(tc, nodes_upsert);
	tcase_add_test(tc, checkpoint_columns);
	tcase_add_test(tc, migrates_from_2);
	tcase_add_test(tc, times_format);
	suite_add_tcase(s, tc);
	return s;
}
