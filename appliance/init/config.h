/* cloche-init's service table, read from a JSON file (see docs/init.md).
 *
 * The file lists services in any order with their dependencies ("after"),
 * the user they run as, their readiness probe and their environment.
 * "${NAME}" in argv and env values expands from init's environment, falling
 * back to the file's "defaults" object, so one template serves sandboxes of
 * several display sizes. */
#ifndef CLOCHE_INIT_CONFIG_H
#define CLOCHE_INIT_CONFIG_H

#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum init_probe_kind { INIT_PROBE_NONE, INIT_PROBE_UNIX, INIT_PROBE_TCP, INIT_PROBE_EXEC };

struct init_probe {
	enum init_probe_kind kind;
	char *path;  /* INIT_PROBE_UNIX */
	int port;    /* INIT_PROBE_TCP, on 127.0.0.1 */
	char **argv; /* INIT_PROBE_EXEC; ready when it exits 0 */
	unsigned interval_ms;
	unsigned timeout_ms; /* not ready this long after start: restart */
};

struct init_service {
	char *name;
	char **argv;       /* NULL-terminated */
	char **env;        /* full environment, NULL-terminated "K=V" */
	char *cwd;
	uid_t uid;
	gid_t gid;
	char *user;
	size_t *after;     /* indexes of dependencies */
	size_t nafter;
	struct init_probe probe;
};

struct init_config {
	struct init_service *svc; /* in a valid start order: deps first */
	size_t nsvc;
	unsigned stop_timeout_ms;
};

/* Reads and validates path: unknown users, unknown or cyclic dependencies,
 * duplicate names and malformed probes are errors naming the service.
 * Returns 0, or -1 with e set; on error nothing is left allocated. */
int init_config_load(const char *path, struct init_config *cfg, struct err *e);

/* Same, from a JSON text (for tests). */
int init_config_parse(const char *text, struct init_config *cfg, struct err *e);

void init_config_free(struct init_config *cfg);

#endif
