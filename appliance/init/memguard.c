/* See memguard.h.  Everything reads a /proc-shaped tree given by path, so
 * the unit tests run it on files they write. */
#include "memguard.h"

#include "common/log.h"
#include "common/util.h"

#include <ctype.h>
#include <jansson.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEMGUARD_QUIET_MS 1000

/* Reads a small file into buf (NUL-terminated).  Bytes read, or -1. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t r;

	if (fd == -1)
		return -1;
	while (got < len - 1) {
		r = read(fd, buf + got, len - 1 - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

/* The value of "Name:  123 kB" in text, or -1. */
static long long field_kb(const char *text, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, nl) == 0 && p[nl] == ':')
			return strtoll(p + nl + 1, NULL, 10);
	return -1;
}

int memguard_parse_meminfo(const char *text, long long *total_kb, long long *avail_kb)
{
	*total_kb = field_kb(text, "MemTotal");
	*avail_kb = field_kb(text, "MemAvailable");
	if (*avail_kb < 0)
		*avail_kb = field_kb(text, "MemFree");
	return *total_kb > 0 && *avail_kb >= 0 ? 0 : -1;
}

pid_t memguard_pick(const char *proc, pid_t self, long long total_kb, char *comm,
		    size_t comm_len, long long *rss_kb)
{
	DIR *d = opendir(proc);
	struct dirent *de;
	pid_t best = 0;
	long long best_score = 0;
	char path[512], buf[4096];

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		long long rss, adj = 0, score;

		if (!isdigit((unsigned char)de->d_name[0]) || *end || pid <= 1 || pid == self)
			continue;
		snprintf(path, sizeof(path), "%s/%s/status", proc, de->d_name);
		if (slurp(path, buf, sizeof(buf)) <= 0)
			continue;
		rss = field_kb(buf, "VmRSS");
		if (rss <= 0)
			continue; /* kernel threads, zombies */
		snprintf(path, sizeof(path), "%s/%s/oom_score_adj", proc, de->d_name);
		if (slurp(path, buf + 2048, 64) > 0)
			adj = strtoll(buf + 2048, NULL, 10);
		if (adj <= -1000)
			continue;
		score = rss + adj * total_kb / 1000;
		if (score <= best_score)
			continue;
		best = (pid_t)pid;
		best_score = score;
		*rss_kb = rss;
		if (comm) {
			char *nm = strstr(buf, "Name:");
			snprintf(comm, comm_len, "%s", "?");
			if (nm) {
				nm += 5;
				nm += strspn(nm, " \t");
				snprintf(comm, comm_len, "%.*s", (int)strcspn(nm, "\n"), nm);
			}
		}
	}
	closedir(d);
	return best;
}

pid_t memguard_check(struct memguard *g, uint64_t now_ms)
{
	char path[256], text[4096], comm[64];
	long long total, avail, rss = 0;
	pid_t victim;

	snprintf(path, sizeof(path), "%s/meminfo", g->proc);
	if (slurp(path, text, sizeof(text)) <= 0 || memguard_parse_meminfo(text, &total, &avail))
		return -1;
	if (avail >= g->reserve_kb || now_ms < g->quiet_until)
		return 0;
	victim = memguard_pick(g->proc, getpid(), total, comm, sizeof(comm), &rss);
	if (victim <= 0)
		return 0;
	if (kill(victim, SIGKILL) == -1)
		return 0;
	g->kills++;
	g->quiet_until = now_ms + MEMGUARD_QUIET_MS;
	log_warn("out of memory: killed the largest process", "{s:i, s:s, s:I, s:I, s:I}", "pid",
		 (int)victim, "comm", comm, "rss_kb", (json_int_t)rss, "available_kb",
		 (json_int_t)avail, "reserve_kb", (json_int_t)g->reserve_kb);
	return victim;
}
