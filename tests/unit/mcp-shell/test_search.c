/* glob and grep (mcp/shell/search.c) through the server, over a small tree
 * made in the temporary $HOME: matches, options, limits, what is skipped
 * (.git, binary files, hidden names for glob), and the errors. */
#include "tests/unit/mcp-shell/suites.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void setup(void)
{
	msh_t_server_setup(&MSH_T_CONF);
	msh_put("src/main.c", "int main(void)\n{\n\treturn foo();\n}\n", -1);
	msh_put("src/lib/foo.c", "int foo(void)\n{\n\treturn 42; /* FOO */\n}\n", -1);
	msh_put("src/lib/foo.h", "int foo(void);\n", -1);
	msh_put("README.md", "foo and bar\nAxB\nA.B\n", -1);
	msh_put(".git/config", "foo in git\n", -1);
	msh_put("bin.dat", "foo\0binary\n", 11);
	msh_put(".env", "foo=1\n", -1);
}

/* Whether a glob answer's matches hold rel. */
static bool globbed(const struct msh_ans *a, const char *rel)
{
	const json_t *m;
	size_t i;

	json_array_foreach(json_object_get(a->sc, "matches"), i, m)
		if (strcmp(json_string_value(m), rel) == 0)
			return true;
	return false;
}

/* Whether a grep answer's matches hold <dir>/rel:line:text. */
static bool grepped(const struct msh_ans *a, const char *rel, int line, const char *text)
{
	const json_t *m;
	size_t i;

	json_array_foreach(json_object_get(a->sc, "matches"), i, m)
		if (strcmp(msh_str(m, "path"), msh_p(rel)) == 0 && msh_int(m, "line") == line &&
		    strcmp(msh_str(m, "text"), text) == 0)
			return true;
	return false;
}

static size_t nmatches(const struct msh_ans *a)
{
	return json_array_size(json_object_get(a->sc, "matches"));
}

START_TEST(glob_matches_names)
{
	const struct msh_ans *a = msh_call("glob", "{s:s}", "pattern", "**/*.c");

	ck_assert_msg(a->code == 0 && !a->is_error, "%s%s", a->message, a->text);
	ck_assert_uint_eq(nmatches(a), 2);
	ck_assert(globbed(a, "src/main.c"));
	ck_assert(globbed(a, "src/lib/foo.c"));
	ck_assert_msg(strstr(a->text, "src/main.c\n") && strstr(a->text, "src/lib/foo.c\n"), "%s", a->text);
	ck_assert_str_eq(msh_str(a->sc, "cwd"), msh_p("."));
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 0);
	ck_assert_int_eq(msh_int(json_object_get(a->sc, "walk"), "visited"), 9); /* .git/config is not */

	a = msh_call("glob", "{s:s}", "pattern", "*.md");
	ck_assert_uint_eq(nmatches(a), 1);
	ck_assert(globbed(a, "README.md"));

	/* Hidden names need an explicit dot; .git is listed, not entered. */
	a = msh_call("glob", "{s:s}", "pattern", "*");
	ck_assert(globbed(a, "README.md"));
	ck_assert(!globbed(a, ".env"));
	ck_assert(!globbed(a, ".git"));
	a = msh_call("glob", "{s:s}", "pattern", ".e*");
	ck_assert_uint_eq(nmatches(a), 1);
	ck_assert(globbed(a, ".env"));
	a = msh_call("glob", "{s:s}", "pattern", ".git*");
	ck_assert_uint_eq(nmatches(a), 1);
	ck_assert(globbed(a, ".git"));

	/* '*' stays within one directory; "**" spans any number, none too */
	a = msh_call("glob", "{s:s}", "pattern", "*.c");
	ck_assert_uint_eq(nmatches(a), 0);
	a = msh_call("glob", "{s:s}", "pattern", "src/*.c");
	ck_assert_uint_eq(nmatches(a), 1);
	ck_assert(globbed(a, "src/main.c"));
	a = msh_call("glob", "{s:s}", "pattern", "src/**/*.c");
	ck_assert_uint_eq(nmatches(a), 2);
	a = msh_call("glob", "{s:s}", "pattern", "s*/l*/f?o.[ch]");
	ck_assert_uint_eq(nmatches(a), 2);
	ck_assert(globbed(a, "src/lib/foo.h"));
	a = msh_call("glob", "{s:s}", "pattern", "src/**");
	ck_assert(globbed(a, "src/lib/foo.c") && globbed(a, "src/lib"));
	a = msh_call("glob", "{s:s}", "pattern", "**/lib");
	ck_assert_uint_eq(nmatches(a), 1);
	ck_assert(globbed(a, "src/lib"));
	msh_put(".cache/x/y.c", "int y;\n", -1);
	a = msh_call("glob", "{s:s}", "pattern", "**/*.c");
	ck_assert_uint_eq(nmatches(a), 2); /* not .cache/x/y.c */
	a = msh_call("glob", "{s:s}", "pattern", ".cache/**/*.c");
	ck_assert_uint_eq(nmatches(a), 1);
	ck_assert(globbed(a, ".cache/x/y.c"));
	ck_assert_int_eq(unlink(msh_p(".cache/x/y.c")), 0);
	ck_assert_int_eq(rmdir(msh_p(".cache/x")), 0);
	ck_assert_int_eq(rmdir(msh_p(".cache")), 0);

	/* cwd: relative to $HOME; matches are relative to it. */
	a = msh_call("glob", "{s:s, s:s}", "pattern", "lib/*.h", "cwd", "src");
	ck_assert_uint_eq(nmatches(a), 1);
	ck_assert(globbed(a, "lib/foo.h"));
	ck_assert_str_eq(msh_str(a->sc, "cwd"), msh_p("src"));
	ck_assert_str_eq(a->text, "lib/foo.h\n");
}
END_TEST

START_TEST(glob_limits_and_misses)
{
	char want[PATH_MAX + 64];
	const struct msh_ans *a;

	a = msh_call("glob", "{s:s, s:i}", "pattern", "**/*.c", "max_results", 1);
	ck_assert_uint_eq(nmatches(a), 1);
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 1);
	ck_assert_msg(strstr(a->text, "\n[... stopped after 1 matches: narrow the pattern or raise max_results ...]\n"),
		      "%s", a->text);

	a = msh_call("glob", "{s:s}", "pattern", "*.zig");
	ck_assert(!a->is_error);
	ck_assert_uint_eq(nmatches(a), 0);
	snprintf(want, sizeof(want), "no match for *.zig in %s\n", msh_p("."));
	ck_assert_str_eq(a->text, want);

	a = msh_call("glob", "{s:s, s:i}", "pattern", "*", "max_results", 0);
	ck_assert_int_eq(a->code, -32602);
	a = msh_call("glob", "{}");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`pattern` is required"), "%s", a->message);
}
END_TEST

START_TEST(grep_finds_lines)
{
	char want[PATH_MAX + 64];
	const struct msh_ans *a = msh_call("grep", "{s:s, s:s}", "pattern", "foo", "path", msh_dir());

	ck_assert_msg(a->code == 0 && !a->is_error, "%s%s", a->message, a->text);
	/* bin.dat (binary) and .git/config are skipped; .env is not. */
	ck_assert_int_eq(msh_int(a->sc, "count"), 5);
	ck_assert_uint_eq(nmatches(a), 5);
	ck_assert(grepped(a, "src/main.c", 3, "\treturn foo();"));
	ck_assert(grepped(a, "src/lib/foo.c", 1, "int foo(void)"));
	ck_assert(grepped(a, "src/lib/foo.h", 1, "int foo(void);"));
	ck_assert(grepped(a, "README.md", 1, "foo and bar"));
	ck_assert(grepped(a, ".env", 1, "foo=1"));
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 0);
	snprintf(want, sizeof(want), "%s:3:\treturn foo();\n", msh_p("src/main.c"));
	ck_assert_msg(strstr(a->text, want), "%s", a->text);

	/* One file. */
	a = msh_call("grep", "{s:s, s:s}", "pattern", "return", "path", "src/main.c");
	ck_assert_int_eq(msh_int(a->sc, "count"), 1);
	ck_assert(grepped(a, "src/main.c", 3, "\treturn foo();"));
	snprintf(want, sizeof(want), "%s:3:\treturn foo();\n", msh_p("src/main.c"));
	ck_assert_str_eq(a->text, want);

	/* The default path is $HOME. */
	a = msh_call("grep", "{s:s}", "pattern", "and bar");
	ck_assert_int_eq(msh_int(a->sc, "count"), 1);
	ck_assert_msg(strstr(a->text, "/README.md:1:foo and bar\n"), "%s", a->text);
}
END_TEST

START_TEST(grep_options)
{
	const struct msh_ans *a;

	a = msh_call("grep", "{s:s, s:s, s:b, s:s}", "pattern", "FOO", "path", msh_dir(), "ignore_case", 1,
		     "include", "*.c");
	ck_assert_int_eq(msh_int(a->sc, "count"), 3);
	ck_assert(grepped(a, "src/main.c", 3, "\treturn foo();"));
	ck_assert(grepped(a, "src/lib/foo.c", 1, "int foo(void)"));
	ck_assert(grepped(a, "src/lib/foo.c", 3, "\treturn 42; /* FOO */"));

	a = msh_call("grep", "{s:s, s:s}", "pattern", "FOO", "path", "src");
	ck_assert_int_eq(msh_int(a->sc, "count"), 1);

	a = msh_call("grep", "{s:s, s:s}", "pattern", "A.B", "path", "README.md");
	ck_assert_int_eq(msh_int(a->sc, "count"), 2);
	a = msh_call("grep", "{s:s, s:s, s:b}", "pattern", "A.B", "path", "README.md", "fixed_strings", 1);
	ck_assert_int_eq(msh_int(a->sc, "count"), 1);
	ck_assert(grepped(a, "README.md", 3, "A.B"));
	a = msh_call("grep", "{s:s, s:s, s:b}", "pattern", "a.b", "path", "README.md", "fixed_strings", 1);
	ck_assert_int_eq(msh_int(a->sc, "count"), 0);
	a = msh_call("grep", "{s:s, s:s, s:b, s:b}", "pattern", "a.b", "path", "README.md", "fixed_strings", 1,
		     "ignore_case", 1);
	ck_assert_int_eq(msh_int(a->sc, "count"), 1);

	/* Extended syntax, anchored per line. */
	a = msh_call("grep", "{s:s, s:s}", "pattern", "^int (foo|main)\\(void\\)$", "path", msh_dir());
	ck_assert_int_eq(msh_int(a->sc, "count"), 2);
	ck_assert(grepped(a, "src/main.c", 1, "int main(void)"));
	ck_assert(grepped(a, "src/lib/foo.c", 1, "int foo(void)"));
}
END_TEST

START_TEST(grep_limits_misses_and_errors)
{
	char want[PATH_MAX + 128];
	const struct msh_ans *a;

	a = msh_call("grep", "{s:s, s:i}", "pattern", "foo", "max_matches", 2);
	ck_assert_int_eq(msh_int(a->sc, "count"), 2);
	ck_assert_uint_eq(nmatches(a), 2);
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 1);
	ck_assert_msg(strstr(a->text, "[... stopped after 2 matches: narrow the search or raise max_matches ...]\n"),
		      "%s", a->text);

	a = msh_call("grep", "{s:s, s:s}", "pattern", "zzz", "path", msh_dir());
	ck_assert(!a->is_error);
	ck_assert_int_eq(msh_int(a->sc, "count"), 0);
	snprintf(want, sizeof(want), "no match for zzz in %s (6 files searched)\n", msh_dir());
	ck_assert_str_eq(a->text, want);

	a = msh_call("grep", "{s:s, s:s, s:b}", "pattern", "foo", "path", "src", "recursive", 0);
	ck_assert(a->is_error);
	snprintf(want, sizeof(want), "grep %s: Is a directory (set recursive)", msh_p("src"));
	ck_assert_str_eq(a->text, want);

	a = msh_call("grep", "{s:s, s:s}", "pattern", "foo", "path", "nope");
	ck_assert(a->is_error);
	snprintf(want, sizeof(want), "grep %s: No such file or directory", msh_p("nope"));
	ck_assert_str_eq(a->text, want);

	a = msh_call("grep", "{s:s}", "pattern", "(");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`pattern` is not a valid extended regular expression"), "%s", a->message);
	a = msh_call("grep", "{s:s, s:i}", "pattern", "x", "max_matches", 0);
	ck_assert_int_eq(a->code, -32602);
}
END_TEST

Suite *suite_msh_search(void)
{
	Suite *s = suite_create("msh_search");
	TCase *tc = tcase_create("search");

	tcase_add_unchecked_fixture(tc, msh_t_root_make, msh_t_root_remove);
	tcase_add_checked_fixture(tc, setup, msh_t_server_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, glob_matches_names);
	tcase_add_test(tc, glob_limits_and_misses);
	tcase_add_test(tc, grep_finds_lines);
	tcase_add_test(tc, grep_options);
	tcase_add_test(tc, grep_limits_misses_and_errors);
	suite_add_tcase(s, tc);
	return s;
}
