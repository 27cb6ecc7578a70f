/* Where the cloche CLI finds its portal and key: flags, then the
 * environment (CLOCHE_URL, CLOCHE_API_KEY), then ~/.config/cloche/config,
 * then /var/lib/cloche/aio.env (what `make run` writes).  Both files hold
 * shell-style KEY=VALUE lines with # comments and optional quotes. */
#ifndef CLI_CONFIG_H
#define CLI_CONFIG_H
#include <stdbool.h>
#include <stddef.h>

struct cli_config {
	char url[512];
	char key[256];
	char url_from[300]; /* where each came from, for error messages */
	char key_from[300];
};

/* Fills c from the sources above; a field already set (by a flag) is kept.
 * home and aio may be NULL for the defaults ($HOME/.config/cloche/config
 * and /var/lib/cloche/aio.env). */
void cli_config_load(struct cli_config *c, const char *home_cfg, const char *aio_env);
/* The value of KEY in the KEY=VALUE file at path into out: true when found. */
bool cli_config_file_get(const char *path, const char *key, char *out, size_t len);

#endif
