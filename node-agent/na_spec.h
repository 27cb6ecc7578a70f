/* The OCI runtime spec (config.json) of a sandbox, built with jansson. */
#ifndef NA_SPEC_H
#define NA_SPEC_H

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>

/* What a caller asks for; na_spec_write turns it into what the host and
 * the guest enforce (see na_spec_reserve_mb and na_spec_host_pids). */
/* The desktop's per-sandbox switches and the recorder's secret
 * (docs/recording.md, docs/portal.md "desktop"): fixed for the sandbox's
 * life, kept in meta.json and in checkpoint manifests, since the guest's
 * processes read them once at boot and a restore brings those back. */
struct na_desk {
	bool clipboard;      /* CLOCHE_CLIPBOARD=on|off (cloche-vnc, mcp-desktop) */
	bool resize;         /* CLOCHE_VNC_RESIZE=on|off (viewer-driven resize) */
	char rec_secret[40]; /* CLOCHE_REC_SECRET: what cloche-rec wants from us */
};

/* The defaults: clipboard on, resize off, no secret. */
extern const struct na_desk na_desk_default;

/* {"clipboard","resize"} of d, plus "rec_secret" when stored (meta.json,
 * manifests; never in what callers of the API see): a new reference. */
json_t *na_desk_json(const struct na_desk *d, bool stored);

/* Reads "clipboard" and "resize" (booleans, both optional) of v (an object
 * or NULL) over the defaults into d, and when stored also "rec_secret";
 * otherwise d's secret is kept.  Unknown keys are an error.  0, or -1 with
 * e set (400). */
int na_desk_parse(const json_t *v, bool stored, struct na_desk *d, struct err *e);

struct na_limits {
	long long memory_mb; /* memory the sandbox's processes may use */
	double cpus;         /* cpu quota = cpus * period */
	long long pids;      /* processes + threads of the sandbox's non-root users */
};

/* Memory the cgroup gets on top of memory_mb for gVisor's own sentry and
 * gofer.  The guest sees memory_mb + reserve as MemTotal, and cloche-init's
 * memory guard kills the largest process when less than the reserve is
 * left, so a memory bomb ends inside the sandbox instead of the host
 * killing all of it. */
long long na_spec_reserve_mb(long long memory_mb);

/* The host pids.limit for a guest limit of pids (RLIMIT_NPROC inside):
 * under the ptrace platform each guest thread costs the host several tasks
 * (sentry thread, stub), and reaching the host limit kills the sandbox, so
 * the guest limit must bite first. */
long long na_spec_host_pids(long long pids);

/* Writes bundle_dir/config.json for sandbox id with rootfs as its root,
 * cloche-init as process, the S-<id> netns and the given limits; a
 * non-empty vnc_secret goes to the guest as CLOCHE_VNC_SECRET, a non-empty
 * proxy_domain as CLOCHE_PROXY_HOSTS=*.<domain> (the names the sandbox's
 * servers accept besides localhost: requests come through the proxy with
 * their Host kept), and desk (NULL: the defaults) as CLOCHE_CLIPBOARD,
 * CLOCHE_VNC_RESIZE and CLOCHE_REC_SECRET.  The file is written to a temporary name and renamed.
 * 0 or -1 with e set. */
int na_spec_write(const char *bundle_dir, const char *id, const char *rootfs,
		  const struct na_limits *lim, const char *vnc_secret, const char *proxy_domain,
		  const struct na_desk *desk, struct err *e);

/* Writes v to path atomically for a crash of the agent: path.tmp, then
 * rename (no fsync: see na_spec.c).  0 or -1. */
int na_json_save(const char *path, const json_t *v, struct err *e);

#endif
