/* Unit tests for na_btrfs_stream_check: the name of the subvolume a btrfs
 * send stream creates, read from the stream's first command, and the walk
 * that refuses any stream holding more than that one subvolume (the import
 * checks both before receiving anything). */
#include "node-agent/na_btrfs.h"
#include "tests/unit/node/suites.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void setup(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/na-stream-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void teardown(void)
{
	unlink(path);
}

static void put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, unsigned long v)
{
	put16(p, (unsigned)(v & 0xffff));
	put16(p + 2, (unsigned)(v >> 16));
}

/* Appends a command head (length len of attributes to follow, command cmd,
 * crc 0) at b + *n. */
static void put_cmd(unsigned char *b, size_t *n, unsigned cmd, size_t len)
{
	put32(b + *n, (unsigned long)len);
	put16(b + *n + 4, cmd);
	put32(b + *n + 6, 0);
	*n += 10;
}

/* A SUBVOL (1) or SNAPSHOT (2) command with a UUID attribute (type 1, 16
 * bytes) and a PATH attribute (type 15) holding name. */
static void put_subvol(unsigned char *b, size_t *n, unsigned cmd, const char *name)
{
	size_t nl = strlen(name);

	put_cmd(b, n, cmd, 4 + 16 + 4 + nl);
	put16(b + *n, 1);
	put16(b + *n + 2, 16);
	memset(b + *n + 4, 0xab, 16);
	*n += 20;
	put16(b + *n, 15);
	put16(b + *n + 2, (unsigned)nl);
	memcpy(b + *n + 4, name, nl);
	*n += 4 + nl;
}

/* What write_stream puts after the first command. */
enum tail { T_END, T_NONE, T_SECOND_SUBVOL, T_SNAPSHOT, T_APPENDED, T_CUT_CMD };

/* A stream: magic, version 1, command cmd naming name, one MKFILE (3) with
 * a PATH, then what tail says; cut (when not 0) shortens it to that many
 * bytes. */
static void write_stream_tail(const char *magic, unsigned cmd, const char *name, enum tail tail,
			      size_t cut)
{
	unsigned char b[1024];
	size_t n = 0;
	FILE *f;

	memcpy(b, magic, strlen(magic) + 1);
	n = 13;
	put32(b + n, 1);
	n += 4;
	put_subvol(b, &n, cmd, name);
	put_cmd(b, &n, 3, 8);
	put16(b + n, 15);
	put16(b + n + 2, 4);
	memcpy(b + n + 4, "file", 4);
	n += 8;
	switch (tail) {
	case T_END:
		put_cmd(b, &n, 21, 0);
		break;
	case T_NONE:
		break;
	case T_SECOND_SUBVOL:
	case T_SNAPSHOT:
		put_subvol(b, &n, tail == T_SNAPSHOT ? 2 : 1, "desktop@ffffffffffff");
		put_cmd(b, &n, 21, 0);
		break;
	case T_APPENDED: /* a whole second stream after END (`btrfs send A B`) */
		put_cmd(b, &n, 21, 0);
		memcpy(b + n, magic, strlen(magic) + 1);
		n += 13;
		put32(b + n, 1);
		n += 4;
		put_subvol(b, &n, 1, "other@0123");
		put_cmd(b, &n, 21, 0);
		break;
	case T_CUT_CMD: /* a command whose length runs past the end */
		put_cmd(b, &n, 3, 500);
		break;
	}
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(b, 1, cut ? cut : n, f);
	fclose(f);
}

static void write_stream(const char *magic, unsigned cmd, const char *name, size_t cut)
{
	write_stream_tail(magic, cmd, name, T_END, cut);
}

/* na_btrfs_stream_check on the file at path. */
static int check_file(char *name, size_t len, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	ck_assert_int_ge(fd, 0);
	err_clear(e);
	rc = na_btrfs_stream_check(fd, name, len, e);
	close(fd);
	return rc;
}

START_TEST(reads_the_name)
{
	char name[256];
	struct err e = ERR_INIT;

	write_stream("btrfs-stream", 1, "desktop@0123abcd", 0);
	ck_assert_msg(check_file(name, sizeof(name), &e) == 0, "%s", e.msg);
	ck_assert_str_eq(name, "desktop@0123abcd");
}
END_TEST

START_TEST(refuses_what_is_not_a_stream)
{
	char name[256];
	struct err e = ERR_INIT;

	write_stream("btrfs-strean", 1, "x@1", 0);
	ck_assert_int_eq(check_file(name, sizeof(name), &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "not a btrfs send stream"));
	write_stream("btrfs-stream", 2, "x@1", 0); /* not SUBVOL first */
	ck_assert_int_eq(check_file(name, sizeof(name), &e), -1);
	write_stream("btrfs-stream", 1, "../etc", 0); /* a path, not a name */
	ck_assert_int_eq(check_file(name, sizeof(name), &e), -1);
	write_stream("btrfs-stream", 1, "desktop@0123abcd", 30); /* cut short */
	ck_assert_int_eq(check_file(name, sizeof(name), &e), -1);
	/* A name longer than the caller's buffer. */
	write_stream("btrfs-stream", 1, "desktop@0123abcd", 0);
	ck_assert_int_eq(check_file(name, 8, &e), -1);
}
END_TEST

/* A template stream holds exactly one subvolume and ends with END: what a
 * receive would take beyond that (without -e, or before the END) is
 * refused before anything is received. */
START_TEST(refuses_a_second_subvolume)
{
	static const struct {
		enum tail tail;
		const char *says;
	} cases[] = {
		{T_SECOND_SUBVOL, "more than one subvolume"},
		{T_SNAPSHOT, "more than one subvolume"},
		{T_APPENDED, "after its end marker"},
		{T_NONE, "without its end marker"},
		{T_CUT_CMD, "cut short"},
	};
	char name[256];
	struct err e = ERR_INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_stream_tail("btrfs-stream", 1, "desktop@0123abcd", cases[i].tail, 0);
		ck_assert_msg(check_file(name, sizeof(name), &e) == -1, "case %zu passed", i);
		ck_assert_msg(strstr(e.msg, cases[i].says), "case %zu: %s", i, e.msg);
	}
	/* A stream cut in the middle of a command head. */
	write_stream_tail("btrfs-stream", 1, "desktop@0123abcd", T_NONE, 0);
	{
		FILE *f = fopen(path, "ab");
		ck_assert_ptr_nonnull(f);
		fwrite("\x05\0\0", 1, 3, f); /* 3 of a command head's 10 bytes */
		fclose(f);
	}
	ck_assert_int_eq(check_file(name, sizeof(name), &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "cut short"));
}
END_TEST

Suite *suite_node_btrfs(void)
{
	Suite *s = suite_create("node_btrfs");
	TCase *tc = tcase_create("stream_name");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, reads_the_name);
	tcase_add_test(tc, refuses_what_is_not_a_stream);
	tcase_add_test(tc, refuses_a_second_subvolume);
	suite_add_tcase(s, tc);
	return s;
}
