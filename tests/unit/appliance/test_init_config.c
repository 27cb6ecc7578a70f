/* Unit tests for cloche-init's service table: start order from "after",
 * ${NAME} expansion, environment layering, probes, and every validation
 * error a broken template can hit. */
#include "appliance/init/config.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static const char *env_get(char **env, const char *key)
{
	size_t n = strlen(key);
	for (; env && *env; env++)
		if (strncmp(*env, key, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

START_TEST(orders_by_dependencies)
{
	struct init_config c;
	struct err e = ERR_INIT;
	const char *text =
		"{\"services\":["
		"{\"name\":\"browser\",\"after\":[\"x\",\"vnc\"],\"argv\":[\"/bin/b\"]},"
		"{\"name\":\"vnc\",\"after\":[\"x\"],\"argv\":[\"/bin/v\"],\"ready\":{\"tcp\":6080}},"
		"{\"name\":\"x\",\"argv\":[\"/bin/x\"],\"ready\":{\"unix\":\"/tmp/.X11-unix/X0\"}}]}";

	ck_assert_msg(init_config_parse(text, &c, &e) == 0, "%s", e.msg);
	ck_assert_uint_eq(c.nsvc, 3);
	ck_assert_str_eq(c.svc[0].name, "x");
	ck_assert_str_eq(c.svc[1].name, "vnc");
	ck_assert_str_eq(c.svc[2].name, "browser");
	ck_assert_uint_eq(c.svc[2].nafter, 2);
	ck_assert_str_eq(c.svc[c.svc[2].after[0]].name, "x");
	ck_assert_str_eq(c.svc[c.svc[2].after[1]].name, "vnc");
	ck_assert_int_eq(c.svc[1].probe.kind, INIT_PROBE_TCP);
	ck_assert_int_eq(c.svc[1].probe.port, 6080);
	ck_assert_int_eq(c.svc[0].probe.kind, INIT_PROBE_UNIX);
	ck_assert_int_eq(c.svc[2].probe.kind, INIT_PROBE_NONE);
	ck_assert_uint_eq(c.stop_timeout_ms, 5000);
	init_config_free(&c);
}
END_TEST

START_TEST(expands_variables_and_layers_env)
{
	struct init_config c;
	struct err e = ERR_INIT;
	const char *text =
		"{\"defaults\":{\"W\":\"1280\",\"H\":\"800\"},\"stop_timeout_ms\":1500,"
		"\"env\":{\"DISPLAY\":\":0\",\"A\":\"global\"},"
		"\"services\":[{\"name\":\"x\",\"argv\":[\"/bin/x\",\"${W}x${H}x24\"],"
		"\"env\":{\"A\":\"own\",\"SIZE\":\"${W}\"},\"ready\":{\"exec\":[\"/bin/p\",\"${H}\"]}}]}";

	setenv("W", "1920", 1);
	ck_assert_msg(init_config_parse(text, &c, &e) == 0, "%s", e.msg);
	unsetenv("W");
	ck_assert_str_eq(c.svc[0].argv[1], "1920x800x24");
	ck_assert_str_eq(env_get(c.svc[0].env, "A"), "own");
	ck_assert_str_eq(env_get(c.svc[0].env, "DISPLAY"), ":0");
	ck_assert_str_eq(env_get(c.svc[0].env, "SIZE"), "1920");
	ck_assert_str_eq(env_get(c.svc[0].env, "USER"), "root");
	ck_assert_ptr_nonnull(env_get(c.svc[0].env, "PATH"));
	ck_assert_int_eq(c.svc[0].probe.kind, INIT_PROBE_EXEC);
	ck_assert_str_eq(c.svc[0].probe.argv[1], "800");
	ck_assert_uint_eq(c.svc[0].probe.interval_ms, 500);
	ck_assert_uint_eq(c.stop_timeout_ms, 1500);
	init_config_free(&c);
}
END_TEST

/* Held ports, the http probe, runtime directories and the user's groups. */
START_TEST(parses_listen_dirs_and_groups)
{
	struct init_config c;
	struct err e = ERR_INIT;
	const char *text =
		"{\"dirs\":[{\"path\":\"/run/cloche/t\",\"user\":\"root\",\"group\":\"root\",\"mode\":\"0750\"}],"
		"\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"listen\":[6080,5900],"
		"\"ready\":{\"http\":6080}}, {\"name\":\"b\",\"argv\":[\"/b\"]}]}";

	ck_assert_msg(init_config_parse(text, &c, &e) == 0, "%s", e.msg);
	ck_assert_uint_eq(c.ndirs, 1);
	ck_assert_str_eq(c.dirs[0].path, "/run/cloche/t");
	ck_assert_uint_eq(c.dirs[0].mode, 0750);
	ck_assert_uint_eq(c.svc[0].nlisten, 2);
	ck_assert_int_eq(c.svc[0].listen_port[1], 5900);
	ck_assert_int_eq(c.svc[0].listen_fd[0], -1);
	ck_assert_str_eq(env_get(c.svc[0].env, "LISTEN_FDS"), "2");
	ck_assert_ptr_null(env_get(c.svc[1].env, "LISTEN_FDS"));
	ck_assert_int_eq(c.svc[0].probe.kind, INIT_PROBE_HTTP);
	ck_assert_int_eq(c.svc[0].probe.port, 6080);
	ck_assert_int_ge(c.svc[0].ngroups, 1);
	ck_assert_uint_eq(c.svc[0].groups[0], 0);
	init_config_free(&c);
}
END_TEST

START_TEST(rejects_broken_tables)
{
	static const struct {
		const char *text, *needle;
	} cases[] = {
		{"{", "line 1"},
		{"{\"services\":[]}", "services must be an array"},
		{"{\"services\":[{\"argv\":[\"/bin/a\"]}]}", "needs a name"},
		{"{\"services\":[{\"name\":\"a\"}]}", "argv must be a non-empty array"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"a\"]}]}", "must be an absolute path"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\",3]}]}", "argv[1] must be a string"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"]},{\"name\":\"a\",\"argv\":[\"/b\"]}]}",
		 "defined twice"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"after\":[\"zz\"]}]}", "unknown service `zz`"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"after\":[\"b\"]},"
		 "{\"name\":\"b\",\"argv\":[\"/b\"],\"after\":[\"a\"]}]}", "cycle"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\",\"${NOPE_NOT_SET}\"]}]}", "${NOPE_NOT_SET}"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\",\"${\"]}]}", "bad variable reference"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"user\":\"no-such-user-x\"}]}",
		 "user `no-such-user-x` does not exist"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"ready\":{\"tcp\":70000}}]}", "port number"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"ready\":{\"udp\":1}}]}", "one of unix, tcp, http or exec"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"ready\":{\"http\":0}}]}", "ready.http must be a port"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"listen\":[80,0]}]}", "listen[1] must be a port"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"listen\":[1,2,3,4,5]}]}", "at most 4 ports"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"listen\":[81]},"
		 "{\"name\":\"b\",\"argv\":[\"/b\"],\"listen\":[81]}]}", "port 81 is in listen twice"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"listen\":[82,82]}]}", "port 82 is in listen twice"},
		{"{\"dirs\":[{\"path\":\"rel\",\"user\":\"root\",\"mode\":\"0750\"}],"
		 "\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"]}]}", "needs an absolute path"},
		{"{\"dirs\":[{\"path\":\"/run/x\",\"user\":\"root\",\"mode\":\"9\"}],"
		 "\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"]}]}", "is not octal"},
		{"{\"dirs\":[{\"path\":\"/run/x\",\"user\":\"no-such-user-x\",\"mode\":\"0750\"}],"
		 "\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"]}]}", "user `no-such-user-x`"},
		{"{\"dirs\":[{\"path\":\"/run/x\",\"user\":\"root\",\"group\":\"no-such-group-x\",\"mode\":\"0750\"}],"
		 "\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"]}]}", "group `no-such-group-x`"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"ready\":{\"exec\":[\"p\"]}}]}", "absolute path"},
		{"{\"services\":[{\"name\":\"a\",\"argv\":[\"/a\"],\"env\":{\"A\":1}}]}", "env `A` must be a string"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct init_config c;
		struct err e = ERR_INIT;
		ck_assert_msg(init_config_parse(cases[i].text, &c, &e) == -1, "case %zu parsed", i);
		ck_assert_msg(strstr(e.msg, cases[i].needle), "case %zu: `%s` lacks `%s`", i, e.msg,
			      cases[i].needle);
		ck_assert_uint_eq(c.nsvc, 0);
	}
}
END_TEST

START_TEST(load_reports_the_file)
{
	struct init_config c;
	struct err e = ERR_INIT;

	ck_assert_int_eq(init_config_load("/nonexistent/init.json", &c, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "open `/nonexistent/init.json`: No such file"));
}
END_TEST

Suite *suite_init_config(void)
{
	Suite *s = suite_create("init_config");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, orders_by_dependencies);
	tcase_add_test(tc, expands_variables_and_layers_env);
	tcase_add_test(tc, parses_listen_dirs_and_groups);
	tcase_add_test(tc, rejects_broken_tables);
	tcase_add_test(tc, load_reports_the_file);
	suite_add_tcase(s, tc);
	return s;
}
