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

enum init_probe_kind { INIT_PROBE_NONE, INIT_PROBE_UNIX, INIT_PROBE_TCP, INIT_PROBE_HTTP, INIT_PROBE_EXEC };

#define INIT_MAX_LISTEN 4  /* ports init holds for one service */
#define INIT_MAX_GROUPS 8  /* supplementary groups of a service's user */

struct init_probe {
	enum init_probe_kind kind;
	char *path;  /* INIT_PROBE_UNIX */
	int port;    /* INIT_PROBE_TCP, INIT_PROBE_HTTP: on 127.0.0.1 */
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
	gid_t groups[INIT_MAX_GROUPS]; /* the user's groups, primary first */
	int ngroups;
	/* "listen": TCP ports init binds once and hands to every run of the
	 * service as fds 3.. with LISTEN_FDS=n, so a restart never leaves the
	 * port free for someone else to take.  listen_fd[] is -1 until
	 * init_listen_open(). */
	int listen_port[INIT_MAX_LISTEN];
	int listen_fd[INIT_MAX_LISTEN];
	size_t nlisten;
	size_t *after;     /* indexes of dependencies */
	size_t nafter;
	struct init_probe probe;
};

/* "dirs": directories init makes before any service starts (on /run,
 * which is empty at boot), owned by a service's user so that the agent can
 * neither write there nor take a name there first. */
#define INIT_MAX_DIRS 8
struct init_dir {
	char *path;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

struct init_config {
	struct init_service *svc; /* in a valid start order: deps first */
	size_t nsvc;
	struct init_dir dirs[INIT_MAX_DIRS];
	size_t ndirs;
	unsigned stop_timeout_ms;
};

/* Reads and validates path: unknown users, unknown or cyclic dependencies,
 * duplicate names and malformed probes are errors naming the service.
 * Returns 0, or -1 with e set; on error nothing is left allocated. */
int init_config_load(const char *path, struct init_config *cfg, struct err *e);

/* Same, from a JSON text (for tests). */
int init_config_parse(const char *text, struct init_config *cfg, struct err *e);

void init_config_free(struct init_config *cfg);

/* Makes every "dirs" entry (parents as root 0755), then sets its owner and
 * mode whatever was there.  Returns 0, or -1 with e set naming the path. */
int init_dirs_make(const struct init_config *cfg, struct err *e);

/* Binds and listens on every service's "listen" ports (all addresses,
 * IPv4), close-on-exec in init.  Returns 0, or -1 with e set naming the
 * port; on error none is left open. */
int init_listen_open(struct init_config *cfg, struct err *e);

#endif
