/* Hibernation policy: when a sandbox that nobody uses is hibernated, and
 * when a hibernated one is offloaded to S3.  Per template defaults come
 * from `--hibernate-policy`, global ones from `--idle-timeout-default` and
 * `--offload-after-default`; an acquire may name its own.  Pure data and
 * parsing, no portal state. */
#ifndef CLOCHE_PT_POLICY_H
#define CLOCHE_PT_POLICY_H
#include "common/err.h"

#include <stdbool.h>

#define PT_POLICY_MAX 32

struct pt_policy_tmpl {
	char name[64];             /* a template name, without @digest */
	long long idle_s, offload_s; /* -1: not given (the global default applies) */
};

struct pt_policy {
	long long idle_s, offload_s; /* global defaults; 0 = never */
	struct pt_policy_tmpl t[PT_POLICY_MAX];
	int n;
};

/* Parses spec into pol's per-template entries (keeping its globals):
 * "NAME:idle=DUR[,offload=DUR][;NAME:...]", DUR as cfg durations (30s, 10m,
 * 1h, 7d, 0 = never; whole seconds).  An empty spec is no entries.  0, or
 * -1 with e naming the bad part. */
int pt_policy_parse(struct pt_policy *pol, const char *spec, struct err *e);
/* The idle timeout and offload delay (seconds, 0 = never) for template
 * ("desktop" or "desktop@digest"): its entry's values, else the globals. */
void pt_policy_for(const struct pt_policy *pol, const char *template, long long *idle_s,
		   long long *offload_s);

#endif
