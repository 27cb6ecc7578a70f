/* Unit tests for cloche-init's memory guard on a /proc-shaped tree written
 * by the test: meminfo parsing, victim choice by RSS and oom_score_adj, and
 * a real SIGKILL of a child process when memory is short. */
#include "appliance/init/memguard.h"
#include "tests/unit/unit.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void proc_entry(long pid, const char *name, long rss_kb, int adj)
{
	char rel[160], text[256];

	snprintf(rel, sizeof(rel), "%s/%ld", root, pid);
	mkdir(rel, 0700);
	snprintf(rel, sizeof(rel), "%ld/status", pid);
	if (rss_kb >= 0)
		snprintf(text, sizeof(text), "Name:\t%s\nState:\tS (sleeping)\nVmRSS:\t  %ld kB\n",
			 name, rss_kb);
	else
		snprintf(text, sizeof(text), "Name:\t%s\nState:\tS (sleeping)\n", name);
	put(rel, text);
	snprintf(rel, sizeof(rel), "%ld/oom_score_adj", pid);
	snprintf(text, sizeof(text), "%d\n", adj);
	put(rel, text);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/memguard-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(parses_meminfo)
{
	long long total, avail;

	ck_assert_int_eq(memguard_parse_meminfo("MemTotal:        1048576 kB\nMemFree:   "
						"477176 kB\nMemAvailable:     400000 kB\n",
						&total, &avail),
			 0);
	ck_assert_int_eq(total, 1048576);
	ck_assert_int_eq(avail, 400000);
	/* No MemAvailable: MemFree stands in. */
	ck_assert_int_eq(memguard_parse_meminfo("MemTotal: 100 kB\nMemFree: 7 kB\n", &total, &avail),
			 0);
	ck_assert_int_eq(avail, 7);
	ck_assert_int_eq(memguard_parse_meminfo("garbage", &total, &avail), -1);
	ck_assert_int_eq(memguard_parse_meminfo("", &total, &avail), -1);
}
END_TEST

START_TEST(picks_by_rss_and_adj)
{
	char comm[32];
	long long rss = 0;

	proc_entry(1, "cloche-init", 900000, 0);  /* pid 1: never */
	proc_entry(10, "chromium", 300000, 0);
	proc_entry(11, "tail", 500000, 0);
	proc_entry(12, "Xvfb", 800000, -1000);   /* protected */
	proc_entry(13, "kthread", -1, 0);        /* no VmRSS */
	ck_assert_int_eq(memguard_pick(root, 99999, 1000000, comm, sizeof(comm), &rss), 11);
	ck_assert_str_eq(comm, "tail");
	ck_assert_int_eq(rss, 500000);
	/* +500 of a 1 GB total weighs like 500 MB more: chromium wins. */
	proc_entry(10, "chromium", 300000, 500);
	ck_assert_int_eq(memguard_pick(root, 99999, 1000000, comm, sizeof(comm), &rss), 10);
	/* The caller itself is never picked. */
	ck_assert_int_eq(memguard_pick(root, 10, 1000000, NULL, 0, &rss), 11);
}
END_TEST

START_TEST(kills_the_largest_when_short)
{
	struct memguard g = {.reserve_kb = 100000};
	pid_t child = fork();
	int status;

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	snprintf(g.proc, sizeof(g.proc), "%s", root);
	proc_entry(child, "bomb", 700000, 0);
	proc_entry(child + 100000, "small", 1000, 0);
	/* Plenty available: nothing happens. */
	put("meminfo", "MemTotal: 1048576 kB\nMemAvailable: 500000 kB\n");
	ck_assert_int_eq(memguard_check(&g, 1000), 0);
	/* Short: the child goes, with SIGKILL. */
	put("meminfo", "MemTotal: 1048576 kB\nMemAvailable: 50000 kB\n");
	ck_assert_int_eq(memguard_check(&g, 2000), child);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_uint_eq(g.kills, 1);
	/* Right after a kill it waits for the memory to come back. */
	ck_assert_int_eq(memguard_check(&g, 2500), 0);
	/* Unreadable meminfo is reported. */
	snprintf(g.proc, sizeof(g.proc), "%s/nonexistent", root);
	ck_assert_int_eq(memguard_check(&g, 9000), -1);
}
END_TEST

Suite *suite_memguard(void)
{
	Suite *s = suite_create("memguard");
	TCase *tc = tcase_create("memguard");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, parses_meminfo);
	tcase_add_test(tc, picks_by_rss_and_adj);
	tcase_add_test(tc, kills_the_largest_when_short);
	suite_add_tcase(s, tc);
	return s;
}
