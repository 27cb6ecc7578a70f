/* Unit tests for na_btrfs_stream_name: the name of the subvolume a btrfs
 * send stream creates, read from the stream's first command (the import
 * refuses what is not name@digest before receiving anything). */
#include "node-agent/na_btrfs.h"
#include "tests/unit/node/suites.h"

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

/* A stream head: magic, version 1, then command cmd with a UUID attribute
 * (type 1, 16 bytes) and a PATH attribute (type 15) holding name. */
static void write_stream(const char *magic, unsigned cmd, const char *name, size_t cut)
{
	unsigned char b[512];
	size_t n = 0, nl = strlen(name), body;
	FILE *f;

	memcpy(b, magic, strlen(magic) + 1);
	n = 13;
	put32(b + n, 1);
	n += 4;
	body = 4 + 16 + 4 + nl;
	put32(b + n, (unsigned long)body);
	put16(b + n + 4, cmd);
	put32(b + n + 6, 0);
	n += 10;
	put16(b + n, 1);
	put16(b + n + 2, 16);
	memset(b + n + 4, 0xab, 16);
	n += 20;
	put16(b + n, 15);
	put16(b + n + 2, (unsigned)nl);
	memcpy(b + n + 4, name, nl);
	n += 4 + nl;
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(b, 1, cut ? cut : n, f);
	fclose(f);
}

START_TEST(reads_the_name)
{
	char name[256];
	struct err e = ERR_INIT;

	write_stream("btrfs-stream", 1, "desktop@0123abcd", 0);
	ck_assert_msg(na_btrfs_stream_name(path, name, sizeof(name), &e) == 0, "%s", e.msg);
	ck_assert_str_eq(name, "desktop@0123abcd");
}
END_TEST

START_TEST(refuses_what_is_not_a_stream)
{
	char name[256];
	struct err e = ERR_INIT;

	write_stream("btrfs-strean", 1, "x@1", 0);
	ck_assert_int_eq(na_btrfs_stream_name(path, name, sizeof(name), &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "not a btrfs send stream"));
	write_stream("btrfs-stream", 2, "x@1", 0); /* not SUBVOL first */
	ck_assert_int_eq(na_btrfs_stream_name(path, name, sizeof(name), &e), -1);
	write_stream("btrfs-stream", 1, "../etc", 0); /* a path, not a name */
	ck_assert_int_eq(na_btrfs_stream_name(path, name, sizeof(name), &e), -1);
	write_stream("btrfs-stream", 1, "desktop@0123abcd", 30); /* cut short */
	ck_assert_int_eq(na_btrfs_stream_name(path, name, sizeof(name), &e), -1);
	ck_assert_int_eq(na_btrfs_stream_name("/nonexistent/stream", name, sizeof(name), &e), -1);
	/* A name longer than the caller's buffer. */
	write_stream("btrfs-stream", 1, "desktop@0123abcd", 0);
	ck_assert_int_eq(na_btrfs_stream_name(path, name, 8, &e), -1);
}
END_TEST

Suite *suite_node_btrfs(void)
{
	Suite *s = suite_create("node_btrfs");
	TCase *tc = tcase_create("stream_name");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, reads_the_name);
	tcase_add_test(tc, refuses_what_is_not_a_stream);
	suite_add_tcase(s, tc);
	return s;
}
