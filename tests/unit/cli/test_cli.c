/* Unit tests for the cloche CLI's pure parts: config files and their
 * precedence, relative times, tables, the MCP client block, exit codes. */
#include "cli/cli_config.h"
#include "cli/cli_out.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/cli-unit-XXXXXX")));
	unsetenv("CLOCHE_URL");
	unsetenv("CLOCHE_API_KEY");
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(file_values)
{
	char p[128], v[128];

	snprintf(p, sizeof(p), "%s/env", dir);
	write_file(p, "# a comment\n  CLOCHE_URL = no\nCLOCHE_URL=\"http://a:1/\"\n"
		      "export CLOCHE_API_KEY='ck_x'  \nOTHER=1\nCLOCHE_API_KEYX=bad\n");
	ck_assert(cli_config_file_get(p, "CLOCHE_URL", v, sizeof(v)));
	ck_assert_str_eq(v, "http://a:1/");
	ck_assert(cli_config_file_get(p, "CLOCHE_API_KEY", v, sizeof(v)));
	ck_assert_str_eq(v, "ck_x");
	ck_assert(!cli_config_file_get(p, "MISSING", v, sizeof(v)));
	ck_assert(!cli_config_file_get("/nonexistent/x", "CLOCHE_URL", v, sizeof(v)));
}
END_TEST

START_TEST(precedence)
{
	char home[128], aio[128];
	struct cli_config c;

	snprintf(home, sizeof(home), "%s/config", dir);
	snprintf(aio, sizeof(aio), "%s/aio.env", dir);
	write_file(home, "CLOCHE_URL=http://home\n");
	write_file(aio, "CLOCHE_URL=http://aio\nCLOCHE_API_KEY=ck_aio\n");
	memset(&c, 0, sizeof(c));
	cli_config_load(&c, home, aio);
	ck_assert_str_eq(c.url, "http://home"); /* ~/.config before aio.env */
	ck_assert_str_eq(c.key, "ck_aio");     /* each value from the first that has it */
	ck_assert_str_eq(c.key_from, aio);
	setenv("CLOCHE_URL", "http://env/", 1);
	memset(&c, 0, sizeof(c));
	cli_config_load(&c, home, aio);
	ck_assert_str_eq(c.url, "http://env"); /* the environment first; trailing / dropped */
	memset(&c, 0, sizeof(c));
	strcpy(c.url, "http://flag");
	cli_config_load(&c, home, aio);
	ck_assert_str_eq(c.url, "http://flag"); /* a flag before all */
}
END_TEST

START_TEST(reltime)
{
	char o[32];
	long long now = 1795392000000LL; /* 2026-11-23T00:00:00Z */

	cli_reltime("2026-11-23T00:09:30.000Z", now, o, sizeof(o));
	ck_assert_str_eq(o, "in 9m");
	cli_reltime("2026-11-22T21:00:00.000Z", now, o, sizeof(o));
	ck_assert_str_eq(o, "3h ago");
	cli_reltime("2026-11-23T00:00:00.400Z", now, o, sizeof(o));
	ck_assert_str_eq(o, "now");
	cli_reltime("2026-11-30T00:00:00Z", now, o, sizeof(o));
	ck_assert_str_eq(o, "in 7d");
	cli_reltime("2026-11-23T00:00:42Z", now, o, sizeof(o));
	ck_assert_str_eq(o, "in 42s");
	cli_reltime(NULL, now, o, sizeof(o));
	ck_assert_str_eq(o, "-");
	cli_reltime("yesterday", now, o, sizeof(o));
	ck_assert_str_eq(o, "-");
}
END_TEST

START_TEST(table)
{
	static const char *const h[] = {"ID", "STATE"};
	json_t *rows = json_pack("[[s, s], [s, n]]", "sb-1", "ready", "sb-22222", NULL);
	struct buf b = BUF_INIT(4096);

	ck_assert_int_eq(cli_table(&b, h, 2, rows), 0);
	ck_assert_str_eq(buf_str(&b), "ID        STATE\nsb-1      ready\nsb-22222  -\n");
	buf_free(&b);
	json_decref(rows);
}
END_TEST

START_TEST(mcp_config)
{
	json_t *sb = json_pack("{s:s, s:{s:{s:s, s:s, s:s}}}", "token", "st1.sb-1.mac", "urls", "mcp",
			       "shell", "http://8889-sb-1.d/mcp", "desktop", "http://8100-sb-1.d/mcp",
			       "browser", "http://7999-sb-1.d/mcp");
	json_t *m = cli_mcp_config(sb), *s;

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(json_object_size(json_object_get(m, "mcpServers")), 3);
	s = json_object_get(json_object_get(m, "mcpServers"), "cloche-desktop");
	ck_assert_str_eq(json_string_value(json_object_get(s, "type")), "http");
	ck_assert_str_eq(json_string_value(json_object_get(s, "url")), "http://8100-sb-1.d/mcp");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(s, "headers"), "Authorization")),
			 "Bearer st1.sb-1.mac");
	json_decref(m);
	json_object_del(sb, "token"); /* a released sandbox has no token */
	ck_assert_ptr_null(cli_mcp_config(sb));
	json_decref(sb);
}
END_TEST

START_TEST(exit_codes)
{
	static const struct {
		long status;
		int code;
	} t[] = {{200, 0}, {201, 0}, {202, 0}, {0, 7}, {400, 2}, {401, 4}, {403, 4}, {404, 3},
		 {409, 5}, {503, 6}, {504, 6}, {500, 1}, {501, 1}, {502, 1}};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(cli_exit_code(t[i].status) == t[i].code, "%ld", t[i].status);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("pure");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, file_values);
	tcase_add_test(tc, precedence);
	tcase_add_test(tc, reltime);
	tcase_add_test(tc, table);
	tcase_add_test(tc, mcp_config);
	tcase_add_test(tc, exit_codes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
