/* The memory guard of cloche-init: an out-of-memory killer inside the
 * sandbox.
 *
 * gVisor has none of its own: when the guest's memory reaches the sandbox's
 * cgroup limit, the host kernel kills the whole sandbox (its sentry).  So
 * the node gives the cgroup `reserve` MiB more than the sandbox may use, and
 * init checks /proc/meminfo every few hundred ms: when MemAvailable falls
 * below that reserve, the process with the highest score (resident memory,
 * shifted by its oom_score_adj as Linux does; -1000 never) is killed with
 * SIGKILL and logged.  Its service, if it was one, is restarted by the
 * supervisor as for any other death. */
#ifndef INIT_MEMGUARD_H
#define INIT_MEMGUARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct memguard {
	char proc[128];        /* "/proc"; a directory tree of the same shape in tests */
	long long reserve_kb;  /* act when MemAvailable drops below this */
	uint64_t quiet_until;  /* after a kill, give the memory time to come back */
	unsigned kills;
};

/* Reads MemTotal and MemAvailable (kB) from meminfo text.  0 or -1. */
int memguard_parse_meminfo(const char *text, long long *total_kb, long long *avail_kb);

/* The process to kill: the highest rss_kb + oom_score_adj * total_kb / 1000
 * among proc/<pid> (pid 1 and `self` excluded, oom_score_adj -1000 never).
 * Returns its pid and fills comm (may be NULL) and *rss_kb, or 0 when there
 * is none. */
pid_t memguard_pick(const char *proc, pid_t self, long long total_kb, char *comm,
		    size_t comm_len, long long *rss_kb);

/* One check at time now_ms: kills a process when memory is short.  Returns
 * the pid killed, 0 when nothing was to do, -1 when meminfo is unreadable. */
pid_t memguard_check(struct memguard *g, uint64_t now_ms);

#endif
