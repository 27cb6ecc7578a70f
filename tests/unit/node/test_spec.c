/* Unit tests for na_spec: the OCI config.json of a sandbox carries the
 * request's limits the way docs/node.md says (memory plus gVisor's reserve,
 * guest RLIMIT_NPROC and the larger host pids limit, CPU quota), its netns
 * path and init's environment; na_json_save leaves no temporary file. */
#include "node-agent/na_spec.h"
#include "tests/unit/node/suites.h"

#include "common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/na-spec-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/config.json", dir);
	unlink(path);
	rmdir(dir);
}

static json_t *load_spec(void)
{
	char path[128];
	struct err e = ERR_INIT;
	json_t *j;

	snprintf(path, sizeof(path), "%s/config.json", dir);
	j = cj_load_file(path, 1 << 20, &e);
	ck_assert_msg(j != NULL, "%s", e.msg);
	return j;
}

static bool has_env(const json_t *spec, const char *want)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(json_object_get(spec, "process"), "env"), i, v)
		if (strcmp(json_string_value(v), want) == 0)
			return true;
	return false;
}

static json_int_t rlimit(const json_t *spec, const char *type)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(json_object_get(spec, "process"), "rlimits"), i, v)
		if (strcmp(json_string_value(json_object_get(v, "type")), type) == 0)
			return json_integer_value(json_object_get(v, "hard"));
	return -1;
}

START_TEST(limits_reach_the_spec)
{
	struct na_limits lim = {.memory_mb = 1024, .cpus = 1.5, .pids = 2048};
	struct err e = ERR_INIT;
	json_t *spec, *res;

	ck_assert_msg(na_spec_write(dir, "sb-1", "/pool/sandboxes/sb-1/rootfs", &lim,
				    "s3cret-Token_1", "cloche.example.com", NULL, &e) == 0,
		      "%s", e.msg);
	spec = load_spec();
	{
		/* The VNC secret reaches cloche-init through the environment. */
		json_t *env = json_object_get(json_object_get(spec, "process"), "env"), *v;
		size_t i;
		bool found = false;
		json_array_foreach(env, i, v)
			found |= strcmp(json_string_value(v), "CLOCHE_VNC_SECRET=s3cret-Token_1") == 0;
		ck_assert_msg(found, "CLOCHE_VNC_SECRET in process.env");
		found = false;
		json_array_foreach(env, i, v)
			found |= strcmp(json_string_value(v), "CLOCHE_PROXY_HOSTS=*.cloche.example.com") == 0;
		ck_assert_msg(found, "CLOCHE_PROXY_HOSTS in process.env");
	}
	res = json_object_get(json_object_get(spec, "linux"), "resources");
	/* 1024 MiB + 192 + 1024/8 MiB for gVisor. */
	ck_assert_int_eq(na_spec_reserve_mb(1024), 320);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(res, "memory"), "limit")),
			 (json_int_t)(1024 + 320) << 20);
	ck_assert(has_env(spec, "CLOCHE_MEMORY_RESERVE_MB=320"));
	ck_assert(has_env(spec, "CLOCHE_SANDBOX_ID=sb-1"));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(res, "cpu"), "quota")),
			 150000);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(res, "cpu"), "period")),
			 100000);
	ck_assert_int_eq(rlimit(spec, "RLIMIT_NPROC"), 2048);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(res, "pids"), "limit")),
			 na_spec_host_pids(2048));
	ck_assert_int_gt(na_spec_host_pids(2048), 4 * 2048);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(spec, "root"), "path")),
			 "/pool/sandboxes/sb-1/rootfs");
	json_decref(spec);
}
END_TEST

START_TEST(netns_and_mounts)
{
	struct na_limits lim = {.memory_mb = 256, .cpus = 0.001, .pids = 256};
	struct err e = ERR_INIT;
	json_t *spec, *ns, *m;
	size_t i;
	bool netns = false, tmp = false, host_bind = false;

	ck_assert_msg(na_spec_write(dir, "sb-2", "/r", &lim, NULL, NULL, NULL, &e) == 0, "%s", e.msg);
	spec = load_spec();
	json_array_foreach(json_object_get(json_object_get(spec, "linux"), "namespaces"), i, ns)
		if (strcmp(json_string_value(json_object_get(ns, "type")), "network") == 0)
			netns = json_string_value(json_object_get(ns, "path")) &&
				strcmp(json_string_value(json_object_get(ns, "path")),
				       "/var/run/netns/S-sb-2") == 0;
	ck_assert(netns);
	json_array_foreach(json_object_get(spec, "mounts"), i, m) {
		const char *type = json_string_value(json_object_get(m, "type"));
		if (strcmp(json_string_value(json_object_get(m, "destination")), "/tmp") == 0)
			tmp = strcmp(type, "tmpfs") == 0;
		if (strcmp(type, "bind") == 0)
			host_bind = true;
	}
	ck_assert(tmp);
	ck_assert(!host_bind); /* no host paths inside a sandbox */
	/* A tiny cpus value still gets a usable quota (1 ms per 100 ms). */
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(json_object_get(json_object_get(spec, "linux"),
								 "resources"),
						 "cpu"),
				 "quota")),
			 1000);
	json_decref(spec);
}
END_TEST

START_TEST(json_save_is_atomic)
{
	char path[128], tmp[140];
	struct err e = ERR_INIT;
	json_t *v = json_pack("{s:i}", "a", 1);
	struct stat st;

	snprintf(path, sizeof(path), "%s/config.json", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ck_assert_int_eq(na_json_save(path, v, &e), 0);
	ck_assert_int_eq(stat(tmp, &st), -1);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	/* A directory that does not exist: an error naming the file. */
	ck_assert_int_eq(na_json_save("/nonexistent-dir/x.json", v, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent-dir/x.json"));
	json_decref(v);
}
END_TEST

/* The desktop switches: parsed strictly from an acquire, read back with
 * the recorder's secret from meta.json, and in the guest's environment. */
START_TEST(desktop_switches)
{
	static const struct {
		const char *json;
		int rc;
		bool clipboard, resize;
		const char *msg; /* part of the error */
	} cases[] = {
		{"null", 0, true, false, NULL},
		{"{}", 0, true, false, NULL},
		{"{\"clipboard\":false}", 0, false, false, NULL},
		{"{\"resize\":true,\"clipboard\":true}", 0, true, true, NULL},
		{"{\"clipboard\":\"off\"}", -1, true, false, "desktop.clipboard"},
		{"{\"zoom\":true}", -1, true, false, "desktop.zoom"},
		{"{\"rec_secret\":\"x\"}", -1, true, false, "desktop.rec_secret"},
		{"[]", -1, true, false, "must be an object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct err e = ERR_INIT;
		struct na_desk d = {.clipboard = false, .resize = true, .rec_secret = "kept"};
		json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
		int rc = na_desk_parse(v, false, &d, &e);

		ck_assert_msg(rc == cases[i].rc, "%s: rc %d", cases[i].json, rc);
		if (rc == 0) {
			ck_assert(d.clipboard == cases[i].clipboard && d.resize == cases[i].resize);
			ck_assert_str_eq(d.rec_secret, "kept");
		} else {
			ck_assert_int_eq(e.http_status, 400);
			ck_assert_msg(strstr(e.msg, cases[i].msg), "%s: %s", cases[i].json, e.msg);
		}
		json_decref(v);
	}
	{
		/* Stored (meta.json): the secret round-trips; the API view has none. */
		struct na_desk d = {.clipboard = false, .resize = true, .rec_secret = "s3cret"}, back;
		struct err e = ERR_INIT;
		json_t *stored = na_desk_json(&d, true), *shown = na_desk_json(&d, false);

		ck_assert_int_eq(na_desk_parse(stored, true, &back, &e), 0);
		ck_assert(!back.clipboard && back.resize);
		ck_assert_str_eq(back.rec_secret, "s3cret");
		ck_assert_ptr_null(json_object_get(shown, "rec_secret"));
		json_decref(stored);
		json_decref(shown);
	}
	{
		struct na_limits lim = {1024, 1, 512};
		struct na_desk d = {.clipboard = false, .resize = true, .rec_secret = "r-Secret_1"};
		struct err e = ERR_INIT;
		json_t *spec, *env;
		size_t i;
		int found = 0;

		ck_assert_msg(na_spec_write(dir, "sb-3", "/r", &lim, NULL, NULL, &d, &e) == 0, "%s",
			      e.msg);
		spec = load_spec();
		env = json_object_get(json_object_get(spec, "process"), "env");
		for (i = 0; i < json_array_size(env); i++) {
			const char *kv = json_string_value(json_array_get(env, i));
			found += strcmp(kv, "CLOCHE_CLIPBOARD=off") == 0;
			found += strcmp(kv, "CLOCHE_VNC_RESIZE=on") == 0;
			found += strcmp(kv, "CLOCHE_REC_SECRET=r-Secret_1") == 0;
		}
		ck_assert_int_eq(found, 3);
		json_decref(spec);
	}
}
END_TEST

Suite *suite_node_spec(void)
{
	Suite *s = suite_create("node_spec");
	TCase *tc = tcase_create("spec");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, limits_reach_the_spec);
	tcase_add_test(tc, netns_and_mounts);
	tcase_add_test(tc, json_save_is_atomic);
	tcase_add_test(tc, desktop_switches);
	suite_add_tcase(s, tc);
	return s;
}
