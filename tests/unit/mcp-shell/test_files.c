/* The file tools (mcp/shell/files.c) through the server, on a temporary
 * $HOME: msh_path(), write_file and read_file (round trip, append, mode,
 * base64, parts), edit_file, the max_file limit, stat_path, delete_path,
 * list_directory, and the errors each names. */
#include "tests/unit/mcp-shell/suites.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void setup(void)
{
	msh_t_server_setup(&MSH_T_CONF);
}

static void setup_small(void)
{
	struct msh_conf c = MSH_T_CONF;

	c.max_file = 64;
	msh_t_server_setup(&c);
}

static mode_t mode_of(const char *rel)
{
	struct stat st;

	ck_assert_int_eq(lstat(msh_p(rel), &st), 0);
	return st.st_mode & 07777;
}

/* "<tool> <dir>/<rel>: <rest>" */
static const char *msg(const char *tool, const char *rel, const char *rest)
{
	static char m[4][PATH_MAX + 256];
	static int k;
	char *o = m[k++ % 4];

	snprintf(o, PATH_MAX + 256, "%s %s%s%s: %s", tool, msh_dir(), *rel ? "/" : "", rel, rest);
	return o;
}

START_TEST(paths_resolve_against_home)
{
	char out[PATH_MAX], want[PATH_MAX];
	const char *home = msh_dir();

	ck_assert_str_eq(msh_path("/etc/hosts", out), "/etc/hosts");
	snprintf(want, sizeof(want), "%s/a/b.txt", home);
	ck_assert_str_eq(msh_path("a/b.txt", out), want);
	ck_assert_str_eq(msh_path("~/a/b.txt", out), want);
	ck_assert_str_eq(msh_path("~", out), home);
	snprintf(want, sizeof(want), "%s/~other/x", home); /* ~user is not expanded */
	ck_assert_str_eq(msh_path("~other/x", out), want);
	ck_assert_ptr_eq(msh_path("x", out), out);
	ck_assert_int_eq(setenv("HOME", "", 1), 0);
	ck_assert_str_eq(msh_path("rel/x", out), "rel/x");
	ck_assert_int_eq(unsetenv("HOME"), 0);
	ck_assert_str_eq(msh_path("rel/x", out), "rel/x");
	ck_assert_int_eq(setenv("HOME", home, 1), 0);
}
END_TEST

START_TEST(write_then_read)
{
	const struct msh_ans *a;
	char want[PATH_MAX + 64];

	a = msh_call("write_file", "{s:s, s:s, s:b}", "path", "notes/a.txt", "content", "line1\nline2\n",
		     "create_dirs", 1);
	ck_assert_msg(a->code == 0 && !a->is_error, "%s%s", a->message, a->text);
	ck_assert_str_eq(msh_str(a->sc, "path"), msh_p("notes/a.txt"));
	ck_assert_int_eq(msh_int(a->sc, "bytes"), 12);
	snprintf(want, sizeof(want), "wrote 12 bytes to %s", msh_p("notes/a.txt"));
	ck_assert_str_eq(a->text, want);
	ck_assert_str_eq(msh_get("notes/a.txt"), "line1\nline2\n");
	ck_assert_int_eq(mode_of("notes/a.txt"), 0644); /* the default, under the fixture's umask 022 */

	a = msh_call("read_file", "{s:s}", "path", "notes/a.txt");
	ck_assert_msg(!a->is_error, "%s", a->text);
	ck_assert_str_eq(a->text, "line1\nline2\n");
	ck_assert_str_eq(msh_str(a->sc, "content"), "line1\nline2\n");
	ck_assert_str_eq(msh_str(a->sc, "encoding"), "utf8");
	ck_assert_str_eq(msh_str(a->sc, "path"), msh_p("notes/a.txt"));
	ck_assert_int_eq(msh_int(a->sc, "size"), 12);
	ck_assert_int_eq(msh_int(a->sc, "length"), 12);
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 0);

	/* Append, then read a part: the answer says what is left. */
	a = msh_call("write_file", "{s:s, s:s, s:b}", "path", "~/notes/a.txt", "content", "line3\n", "append", 1);
	ck_assert(!a->is_error);
	ck_assert_str_eq(msh_get("notes/a.txt"), "line1\nline2\nline3\n");
	a = msh_call("read_file", "{s:s, s:i, s:i}", "path", msh_p("notes/a.txt"), "offset", 6, "length", 5);
	ck_assert_str_eq(msh_str(a->sc, "content"), "line2");
	ck_assert_int_eq(msh_int(a->sc, "offset"), 6);
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 1);
	ck_assert_str_eq(msh_item(a, 1), "[... 7 more bytes: the file has 18; read on with offset 11 ...]");

	/* Overwrite with a mode. */
	a = msh_call("write_file", "{s:s, s:s, s:s}", "path", "notes/a.txt", "content", "#!/bin/sh\n", "mode", "0750");
	ck_assert(!a->is_error);
	ck_assert_str_eq(msh_get("notes/a.txt"), "#!/bin/sh\n");
	ck_assert_int_eq(mode_of("notes/a.txt"), 0750);
}
END_TEST

START_TEST(binary_content_as_base64)
{
	static const char bytes[] = {0, 1, 2, (char)0xff};
	const struct msh_ans *a;
	const char *got;
	char want[PATH_MAX + 128];

	a = msh_call("write_file", "{s:s, s:s, s:s}", "path", "bin", "content", "AAEC/w==", "encoding", "base64");
	ck_assert_msg(!a->is_error, "%s", a->text);
	ck_assert_int_eq(msh_int(a->sc, "bytes"), 4);
	got = msh_get("bin");
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(memcmp(got, bytes, 4), 0);

	a = msh_call("read_file", "{s:s}", "path", "bin");
	ck_assert_str_eq(msh_str(a->sc, "encoding"), "base64");
	ck_assert_str_eq(msh_str(a->sc, "content"), "AAEC/w==");
	snprintf(want, sizeof(want), "%s is binary: 4 bytes from offset 0, base64-encoded:\nAAEC/w==", msh_p("bin"));
	ck_assert_str_eq(a->text, want);
}
END_TEST

START_TEST(write_errors)
{
	const struct msh_ans *a;

	a = msh_call("write_file", "{s:s, s:s}", "path", "no/such/dir/f", "content", "x");
	ck_assert_int_eq(a->code, 0);
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("write_file", "no/such/dir/f",
				      "No such file or directory (set create_dirs to create the directory)"));
	ck_assert_ptr_null(msh_get("no"));

	a = msh_call("write_file", "{s:s, s:s, s:s}", "path", "f", "content", "x", "mode", "0999");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_str_eq(a->message, "`mode` must be octal like \"0644\"");
	a = msh_call("write_file", "{s:s, s:s, s:s}", "path", "f", "content", "@@@", "encoding", "base64");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`content` is not valid base64"), "%s", a->message);
	a = msh_call("write_file", "{s:s, s:s, s:s}", "path", "f", "content", "x", "encoding", "latin1");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`encoding` must be one of"), "%s", a->message);
	a = msh_call("write_file", "{s:s}", "path", "f");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`content` is required"), "%s", a->message);
	ck_assert_ptr_null(msh_get("f"));
}
END_TEST

START_TEST(read_errors)
{
	const struct msh_ans *a;

	a = msh_call("read_file", "{s:s}", "path", "missing.txt");
	ck_assert_int_eq(a->code, 0);
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("read_file", "missing.txt", "No such file or directory"));

	a = msh_call("read_file", "{s:s}", "path", "~");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("read_file", "", "Is a directory (use list_directory)"));

	a = msh_call("read_file", "{s:s, s:i}", "path", "missing.txt", "offset", -1);
	ck_assert_int_eq(a->code, -32602);
	ck_assert_msg(strstr(a->message, "`offset` must be at least 0"), "%s", a->message);
	a = msh_call("read_file", "{}");
	ck_assert_int_eq(a->code, -32602);
}
END_TEST

START_TEST(edit_replaces_a_unique_match)
{
	const struct msh_ans *a;

	msh_put("e.txt", "alpha\nbeta\ngamma\nbeta\n", -1);
	ck_assert_int_eq(chmod(msh_p("e.txt"), 0600), 0);

	a = msh_call("edit_file", "{s:s, s:s, s:s}", "path", "e.txt", "old_str", "gamma", "new_str", "GAMMA\nG2");
	ck_assert_msg(!a->is_error, "%s", a->text);
	ck_assert_int_eq(msh_int(a->sc, "replacements"), 1);
	ck_assert_int_eq(msh_int(a->sc, "line"), 3);
	{
		char want[PATH_MAX + 64];
		snprintf(want, sizeof(want), "replaced 1 occurrence in %s (first at line 3)", msh_p("e.txt"));
		ck_assert_str_eq(a->text, want);
	}
	ck_assert_str_eq(msh_get("e.txt"), "alpha\nbeta\nGAMMA\nG2\nbeta\n");
	ck_assert_int_eq(mode_of("e.txt"), 0600); /* the mode is kept */

	/* Several matches: nothing changes unless replace_all. */
	a = msh_call("edit_file", "{s:s, s:s, s:s}", "path", "e.txt", "old_str", "beta", "new_str", "B");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("edit_file", "e.txt",
				      "old_str occurs 2 times; add surrounding lines to make it unique, or set replace_all"));
	ck_assert_str_eq(msh_get("e.txt"), "alpha\nbeta\nGAMMA\nG2\nbeta\n");
	a = msh_call("edit_file", "{s:s, s:s, s:s, s:b}", "path", "e.txt", "old_str", "beta", "new_str", "B",
		     "replace_all", 1);
	ck_assert(!a->is_error);
	ck_assert_int_eq(msh_int(a->sc, "replacements"), 2);
	ck_assert_int_eq(msh_int(a->sc, "line"), 2);
	ck_assert_str_eq(msh_get("e.txt"), "alpha\nB\nGAMMA\nG2\nB\n");

	/* No match. */
	a = msh_call("edit_file", "{s:s, s:s, s:s}", "path", "e.txt", "old_str", "alpha ", "new_str", "x");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("edit_file", "e.txt",
				      "old_str was not found; read the file and copy the text exactly (whitespace included)"));
	ck_assert_str_eq(msh_get("e.txt"), "alpha\nB\nGAMMA\nG2\nB\n");

	/* Deleting text: new_str may be empty, old_str may not. */
	a = msh_call("edit_file", "{s:s, s:s, s:s}", "path", "e.txt", "old_str", "G2\n", "new_str", "");
	ck_assert(!a->is_error);
	ck_assert_str_eq(msh_get("e.txt"), "alpha\nB\nGAMMA\nB\n");
	a = msh_call("edit_file", "{s:s, s:s, s:s}", "path", "e.txt", "old_str", "", "new_str", "x");
	ck_assert_int_eq(a->code, -32602);
	ck_assert_str_eq(a->message, "`old_str` must not be empty");

	a = msh_call("edit_file", "{s:s, s:s, s:s}", "path", "nope.txt", "old_str", "a", "new_str", "b");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("edit_file", "nope.txt", "No such file or directory"));
}
END_TEST

/* max_file (64 here) bounds reads, writes and edits. */
START_TEST(limits)
{
	char big[101], want[PATH_MAX + 128];
	const struct msh_ans *a;

	for (int i = 0; i < 100; i++)
		big[i] = (char)('a' + i % 26);
	big[100] = '\0';
	msh_put("big.txt", big, 100);

	a = msh_call("read_file", "{s:s}", "path", "big.txt");
	ck_assert(!a->is_error);
	ck_assert_int_eq(msh_int(a->sc, "length"), 64);
	ck_assert_int_eq(msh_int(a->sc, "size"), 100);
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 1);
	ck_assert_int_eq(strlen(msh_str(a->sc, "content")), 64);
	ck_assert_int_eq(strncmp(msh_str(a->sc, "content"), big, 64), 0);
	ck_assert_str_eq(msh_item(a, 1), "[... 36 more bytes: the file has 100; read on with offset 64 ...]");
	/* A larger length is cut to the limit; the rest is a second read. */
	a = msh_call("read_file", "{s:s, s:i, s:i}", "path", "big.txt", "offset", 64, "length", 1000);
	ck_assert_str_eq(msh_str(a->sc, "content"), big + 64);
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 0);

	a = msh_call("write_file", "{s:s, s:s}", "path", "w.txt", "content", big);
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, "write_file: 100 bytes is more than the limit of 64");
	ck_assert_ptr_null(msh_get("w.txt"));
	big[64] = '\0';
	a = msh_call("write_file", "{s:s, s:s}", "path", "w.txt", "content", big);
	ck_assert_msg(!a->is_error, "%s", a->text);
	ck_assert_str_eq(msh_get("w.txt"), big);

	a = msh_call("edit_file", "{s:s, s:s, s:s}", "path", "big.txt", "old_str", "abc", "new_str", "x");
	ck_assert(a->is_error);
	snprintf(want, sizeof(want), "edit_file %s: the file is larger than the limit of 64 bytes", msh_p("big.txt"));
	ck_assert_str_eq(a->text, want);
	ck_assert_int_eq(strncmp(msh_get("big.txt"), "abcdefghijklmnopqrstuvwxyzabc", 29), 0);
	/* an edit that would grow a file past the limit is refused too */
	a = msh_call("edit_file", "{s:s, s:s, s:s, s:b}", "path", "w.txt", "old_str", "abc",
		     "new_str", "ABCD", "replace_all", 1);
	ck_assert(a->is_error);
	snprintf(want, sizeof(want),
		 "edit_file %s: the edited file would be 67 bytes, more than the limit of 64",
		 msh_p("w.txt"));
	ck_assert_str_eq(a->text, want);
	ck_assert_str_eq(msh_get("w.txt"), big);
	a = msh_call("edit_file", "{s:s, s:s, s:s, s:b}", "path", "w.txt", "old_str", "abc",
		     "new_str", "ABC", "replace_all", 1);
	ck_assert_msg(!a->is_error, "%s", a->text);
}
END_TEST

START_TEST(stat_path_reports)
{
	const struct msh_ans *a;
	char want[PATH_MAX + 256];

	msh_put("s.txt", "12345", -1);
	ck_assert_int_eq(chmod(msh_p("s.txt"), 0640), 0);
	ck_assert_int_eq(symlink("s.txt", msh_p("link")), 0);

	a = msh_call("stat_path", "{s:s}", "path", "s.txt");
	ck_assert(!a->is_error);
	ck_assert_int_eq(msh_bool(a->sc, "exists"), 1);
	ck_assert_str_eq(msh_str(a->sc, "type"), "file");
	ck_assert_int_eq(msh_int(a->sc, "size"), 5);
	ck_assert_str_eq(msh_str(a->sc, "mode"), "0640");
	ck_assert_int_eq(msh_int(a->sc, "uid"), (long long)getuid());
	ck_assert_int_eq(strlen(msh_str(a->sc, "modified")), 20);
	snprintf(want, sizeof(want), "%s: file, 5 bytes, mode 0640, uid %d, gid %d, modified %s", msh_p("s.txt"),
		 (int)getuid(), (int)msh_int(a->sc, "gid"), msh_str(a->sc, "modified"));
	ck_assert_str_eq(a->text, want);

	a = msh_call("stat_path", "{s:s}", "path", "~");
	ck_assert_str_eq(msh_str(a->sc, "type"), "directory");

	/* Links are not followed. */
	a = msh_call("stat_path", "{s:s}", "path", "link");
	ck_assert_str_eq(msh_str(a->sc, "type"), "symlink");
	ck_assert_str_eq(msh_str(a->sc, "link_target"), "s.txt");
	ck_assert_msg(strstr(a->text, ", -> s.txt"), "%s", a->text);

	/* A missing path is an answer, not a failure. */
	a = msh_call("stat_path", "{s:s}", "path", "ghost");
	ck_assert(!a->is_error);
	ck_assert_int_eq(msh_bool(a->sc, "exists"), 0);
	snprintf(want, sizeof(want), "%s does not exist", msh_p("ghost"));
	ck_assert_str_eq(a->text, want);
}
END_TEST

START_TEST(delete_path_removes)
{
	const struct msh_ans *a;
	char want[PATH_MAX + 64];

	msh_put("f.txt", "x", -1);
	msh_put("full/a/b.txt", "x", -1);
	msh_put("target/keep.txt", "x", -1);
	ck_assert_int_eq(mkdir(msh_p("empty"), 0755), 0);
	ck_assert_int_eq(symlink(msh_p("target"), msh_p("dirlink")), 0);

	a = msh_call("delete_path", "{s:s}", "path", "f.txt");
	ck_assert(!a->is_error);
	snprintf(want, sizeof(want), "deleted %s", msh_p("f.txt"));
	ck_assert_str_eq(a->text, want);
	ck_assert_int_eq(access(msh_p("f.txt"), F_OK), -1);

	a = msh_call("delete_path", "{s:s}", "path", "empty");
	snprintf(want, sizeof(want), "deleted %s (directory)", msh_p("empty"));
	ck_assert_str_eq(a->text, want);
	ck_assert_int_eq(access(msh_p("empty"), F_OK), -1);

	a = msh_call("delete_path", "{s:s}", "path", "full");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("delete_path", "full",
				      "Directory not empty (set recursive to delete its contents)"));
	ck_assert_int_eq(access(msh_p("full/a/b.txt"), F_OK), 0);
	a = msh_call("delete_path", "{s:s, s:b}", "path", "full", "recursive", 1);
	ck_assert_msg(!a->is_error, "%s", a->text);
	ck_assert_int_eq(access(msh_p("full"), F_OK), -1);

	/* A link to a directory goes, the directory stays. */
	a = msh_call("delete_path", "{s:s, s:b}", "path", "dirlink", "recursive", 1);
	ck_assert(!a->is_error);
	ck_assert_int_eq(access(msh_p("dirlink"), F_OK), -1);
	ck_assert_int_eq(access(msh_p("target/keep.txt"), F_OK), 0);

	a = msh_call("delete_path", "{s:s}", "path", "ghost");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("delete_path", "ghost", "No such file or directory"));

	/* The home directory, / and what holds home are refused, however
	 * they are spelled. */
#define REFUSED "refusing to delete the root directory, the home directory or a directory that holds it"
	a = msh_call("delete_path", "{s:s, s:b}", "path", "~", "recursive", 1);
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("delete_path", "", REFUSED));
	a = msh_call("delete_path", "{s:s, s:b}", "path", "/", "recursive", 1);
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, "delete_path /: " REFUSED);
	ck_assert_int_eq(symlink("/", msh_p("rootlink")), 0);
	{
		static const char *const spellings[] = {"~/", "~/.", ".", "./", "target/..", "..",
							"~/../", "rootlink/", "//"};

		for (size_t i = 0; i < sizeof(spellings) / sizeof(*spellings); i++) {
			a = msh_call("delete_path", "{s:s, s:b}", "path", spellings[i], "recursive", 1);
			ck_assert_msg(a->is_error && strstr(a->text, REFUSED), "%s: %s", spellings[i],
				      a->text);
		}
	}
	ck_assert_int_eq(access(msh_p("target/keep.txt"), F_OK), 0);
	/* the link to / itself may go: only the link is removed */
	a = msh_call("delete_path", "{s:s, s:b}", "path", "rootlink", "recursive", 1);
	ck_assert_msg(!a->is_error, "%s", a->text);
	ck_assert_int_eq(access("/etc", F_OK), 0);
#undef REFUSED
}
END_TEST

START_TEST(list_directory_lists)
{
	const struct msh_ans *a;
	const json_t *ent;

	msh_put("a.txt", "abc", -1);
	msh_put("b/c.txt", "hello", -1);
	msh_put(".hidden", "", 0);
	ck_assert_int_eq(mkdir(msh_p("empty"), 0755), 0);

	a = msh_call("list_directory", "{}"); /* default: $HOME */
	ck_assert(!a->is_error);
	ck_assert_str_eq(a->text, ".hidden\na.txt\nb/\nempty/\n");
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 0);
	ent = json_object_get(a->sc, "entries");
	ck_assert_uint_eq(json_array_size(ent), 4);
	ck_assert_str_eq(msh_str(json_array_get(ent, 1), "name"), "a.txt");
	ck_assert_str_eq(msh_str(json_array_get(ent, 1), "type"), "file");
	ck_assert_int_eq(msh_int(json_array_get(ent, 1), "size"), 3);
	ck_assert_str_eq(msh_str(json_array_get(ent, 2), "type"), "directory");

	a = msh_call("list_directory", "{s:s, s:b}", "path", msh_dir(), "recursive", 1);
	ck_assert_str_eq(a->text, ".hidden\na.txt\nb/\nb/c.txt\nempty/\n");
	ent = json_object_get(a->sc, "entries");
	ck_assert_uint_eq(json_array_size(ent), 5);
	ck_assert_str_eq(msh_str(json_array_get(ent, 3), "name"), "b/c.txt");
	ck_assert_int_eq(msh_int(json_array_get(ent, 3), "size"), 5);

	a = msh_call("list_directory", "{s:b, s:i}", "recursive", 1, "max_entries", 2);
	ck_assert_int_eq(msh_bool(a->sc, "truncated"), 1);
	ck_assert_uint_eq(json_array_size(json_object_get(a->sc, "entries")), 2);
	ck_assert_str_eq(a->text, ".hidden\na.txt\n[... stopped at 2 entries: raise max_entries or list a subdirectory ...]\n");

	a = msh_call("list_directory", "{s:s}", "path", "empty");
	ck_assert(!a->is_error);
	ck_assert_str_eq(a->text, "(empty directory)\n");

	a = msh_call("list_directory", "{s:s}", "path", "a.txt");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("list_directory", "a.txt", "Not a directory (use read_file or stat_path)"));
	a = msh_call("list_directory", "{s:s}", "path", "ghost");
	ck_assert(a->is_error);
	ck_assert_str_eq(a->text, msg("list_directory", "ghost", "No such file or directory"));
	a = msh_call("list_directory", "{s:i}", "max_entries", 0);
	ck_assert_int_eq(a->code, -32602);
}
END_TEST

Suite *suite_msh_files(void)
{
	Suite *s = suite_create("msh_files");
	TCase *tc = tcase_create("files"), *small = tcase_create("files_limits");

	tcase_add_unchecked_fixture(tc, msh_t_root_make, msh_t_root_remove);
	tcase_add_checked_fixture(tc, setup, msh_t_server_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, paths_resolve_against_home);
	tcase_add_test(tc, write_then_read);
	tcase_add_test(tc, binary_content_as_base64);
	tcase_add_test(tc, write_errors);
	tcase_add_test(tc, read_errors);
	tcase_add_test(tc, edit_replaces_a_unique_match);
	tcase_add_test(tc, stat_path_reports);
	tcase_add_test(tc, delete_path_removes);
	tcase_add_test(tc, list_directory_lists);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(small, msh_t_root_make, msh_t_root_remove);
	tcase_add_checked_fixture(small, setup_small, msh_t_server_teardown);
	tcase_set_timeout(small, 30);
	tcase_add_test(small, limits);
	suite_add_tcase(s, small);
	return s;
}
