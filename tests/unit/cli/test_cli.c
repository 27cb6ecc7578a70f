/* Unit tests for the cloche CLI's pure parts: config files and their
 * precedence, relative times, tables, the MCP client block, exit codes,
 * argument helpers, and the command table with the help it prints. */
#include "cli/cli_args.h"
#include "cli/cli_cmd.h"
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

/* What the agent wrote must not act on the operator's terminal. */
START_TEST(term_escape)
{
	static const char in[] = "ok\tline\n\x1b]0;pwned\x07\x1b[2J\rX\x7f \xc2\x9b" "31m \xc2\xa0\xc3\xa9";
	struct buf b = BUF_INIT(4 * sizeof(in));

	ck_assert_int_eq(cli_term_escape(&b, in, sizeof(in) - 1), 0);
	ck_assert_str_eq(buf_str(&b), "ok\tline\n\\x1b]0;pwned\\x07\\x1b[2J\\x0dX\\x7f \\u009b31m \xc2\xa0\xc3\xa9");
	buf_free(&b);
	/* a lone 0xc2 at the end is left as it is (not a C1 control) */
	ck_assert_int_eq(cli_term_escape(&b, "a\xc2", 2), 0);
	ck_assert_int_eq(b.len, 2);
	buf_free(&b);
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

START_TEST(args)
{
	static const struct {
		const char *s;
		long lo, hi;
		bool ok;
		long v;
	} nums[] = {{"5", 1, 10, true, 5},   {"1", 1, 10, true, 1},   {"10", 1, 10, true, 10},
		    {"0", 1, 10, false, 0},  {"11", 1, 10, false, 0}, {"", 1, 10, false, 0},
		    {"5s", 1, 10, false, 0}, {"-1", -1, 10, true, -1}};
	char *v[] = {"--ttl", "5", "--ttl=6", "--ttlx", "--ttl"};
	struct cli_args a = {.n = 5, .v = v};
	json_t *o = json_object();
	bool bad = false;

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		long got = 0;

		ck_assert_msg(cli_whole(nums[i].s, nums[i].lo, nums[i].hi, &got) == nums[i].ok, "%s",
			      nums[i].s);
		if (nums[i].ok)
			ck_assert_int_eq(got, nums[i].v);
	}
	a.i = 0; /* "--ttl V" moves onto V */
	ck_assert_str_eq(cli_opt_val(&a, "--ttl", &bad), "5");
	ck_assert_int_eq(a.i, 1);
	a.i = 2;
	ck_assert_str_eq(cli_opt_val(&a, "--ttl", &bad), "6");
	a.i = 3; /* another option that starts the same */
	ck_assert_ptr_null(cli_opt_val(&a, "--ttl", &bad));
	ck_assert(!bad);
	a.i = 4; /* the last argument, its value missing */
	ck_assert_ptr_null(cli_opt_val(&a, "--ttl", &bad));
	ck_assert(bad);
	ck_assert_int_eq(cli_kv_into(o, "--label", "k=v=w"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "k")), "v=w");
	ck_assert_int_eq(cli_kv_into(o, "--label", "=v"), 2);
	ck_assert_int_eq(cli_kv_into(o, "--label", "k"), 2);
	json_decref(o);
}
END_TEST

/* The table: unique names, a handler each, a group's rows together, an
 * alias only where its command is listed, joins only onto a listed row. */
START_TEST(cmd_table)
{
	size_t n;
	const struct cli_cmd *t = cli_cmd_all(&n);

	ck_assert_uint_gt(n, 20);
	for (size_t i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(t[i].run);
		ck_assert_ptr_eq(cli_cmd_find(t[i].name), &t[i]);
		if (i > 0)
			ck_assert_msg(t[i].group >= t[i - 1].group, "%s: its group is elsewhere",
				      t[i].name);
		if (t[i].synopsis)
			ck_assert_msg(strncmp(t[i].synopsis, t[i].name, strlen(t[i].name)) == 0,
				      "%s: the synopsis starts with the name", t[i].name);
		if (t[i].joined)
			ck_assert(i > 0 && t[i - 1].synopsis && t[i].synopsis);
		if (!t[i].synopsis) {
			bool listed = false;

			for (size_t j = 0; j < n; j++)
				listed |= t[j].synopsis && t[j].run == t[i].run;
			ck_assert_msg(listed, "%s: an alias of nothing listed", t[i].name);
		}
	}
	ck_assert_ptr_eq(cli_cmd_find("ls")->run, cli_cmd_find("list")->run);
	ck_assert_ptr_null(cli_cmd_find("bogus"));
	ck_assert_ptr_null(cli_cmd_find(""));
	ck_assert(cli_cmd_find("nodes")->no_args);
	ck_assert(!cli_cmd_find("keys")->no_args);
}
END_TEST

/* The help's layout: help text from column 41, or under it when the
 * synopsis reaches that far; continuations; joined rows. */
START_TEST(cmd_help)
{
	char *text = NULL;
	size_t len = 0, n;
	FILE *f = open_memstream(&text, &len);
	const struct cli_cmd *t = cli_cmd_all(&n);

	ck_assert_ptr_nonnull(f);
	cli_cmd_help(f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert(strncmp(text, "usage: cloche [--url URL] [--api-key KEY] [--json] [--timeout S] "
				"COMMAND [ARGS]\n\ncommands:\n  acquire [--template T]",
			  strlen("usage: cloche [--url URL] [--api-key KEY] [--json] [--timeout S] "
				 "COMMAND [ARGS]\n\ncommands:\n  acquire [--template T]")) == 0);
	ck_assert_ptr_nonnull(strstr(text, "\n  get ID                                 one sandbox\n"));
	ck_assert_ptr_nonnull(strstr(text, "[--cpus N]\n          [--pids N] [--egress"));
	ck_assert_ptr_nonnull(strstr(text, "\n          [--idempotency-key K]          lease a"));
	ck_assert_ptr_nonnull(strstr(text, "[--all]\n                                         live "
					   "sandboxes (--history: ended ones too;\n"
					   "                                         --all: every page)\n"));
	ck_assert_ptr_nonnull(strstr(text, "\n  nodes | templates\n"));
	ck_assert_ptr_nonnull(strstr(text, "\n  shares ID | unshare ID SHARE           its share "
					   "links; revoke one\n"));
	ck_assert_ptr_nonnull(strstr(text, "6 unavailable (or the wait ran out), 7 cannot reach the "
					   "portal\n"));
	ck_assert_ptr_null(strstr(text, "  ls"));
	for (size_t i = 0; i < n; i++) {
		char first[128];

		if (!t[i].synopsis)
			continue;
		snprintf(first, sizeof(first), "%.*s", (int)strcspn(t[i].synopsis, "\n"),
			 t[i].synopsis);
		ck_assert_msg(strstr(text, first), "%s is not in the help", t[i].name);
	}
	free(text);
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
	tcase_add_test(tc, args);
	tcase_add_test(tc, cmd_table);
	tcase_add_test(tc, cmd_help);
	tcase_add_test(tc, term_escape);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
