/* The OCI runtime spec (config.json) of a sandbox, built with jansson. */
#ifndef NA_SPEC_H
#define NA_SPEC_H

#include "common/err.h"

#include <jansson.h>

struct na_limits {
	long long memory_mb; /* linux.resources.memory.limit */
	double cpus;         /* cpu quota = cpus * period */
	long long pids;      /* pids.limit */
};

/* Writes bundle_dir/config.json for sandbox id with rootfs as its root,
 * cloche-init as process, the S-<id> netns and the given limits.  The file
 * is written to a temporary name and renamed.  0 or -1 with e set. */
int na_spec_write(const char *bundle_dir, const char *id, const char *rootfs,
		  const struct na_limits *lim, struct err *e);

/* Writes v to path atomically: path.tmp, fsync, rename.  0 or -1. */
int na_json_save(const char *path, const json_t *v, struct err *e);

#endif
