/* The CLI's configuration sources; see cli_config.h. */
#include "cli/cli_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_config_file_get(const char *path, const char *key, char *out, size_t len)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	bool found = false;
	size_t klen = strlen(key);

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *v, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "export ", 7) == 0)
			p += 7;
		if (*p == '#' || strncmp(p, key, klen) != 0 || p[klen] != '=')
			continue;
		v = p + klen + 1;
		v[strcspn(v, "\r\n")] = '\0';
		end = v + strlen(v);
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
		if (end - v >= 2 && (*v == '"' || *v == '\'') && end[-1] == *v) {
			end[-1] = '\0';
			v++;
		}
		snprintf(out, len, "%s", v);
		found = true; /* the last one wins, as in a shell */
	}
	fclose(f);
	return found;
}

static void take(char *dst, size_t dlen, char *from, size_t flen, const char *val,
		 const char *src)
{
	size_t n;

	if (dst[0] || !val || !*val)
		return;
	n = strnlen(val, dlen - 1);
	memcpy(dst, val, n);
	dst[n] = '\0';
	n = strnlen(src, flen - 1);
	memcpy(from, src, n);
	from[n] = '\0';
}

void cli_config_load(struct cli_config *c, const char *home_cfg, const char *aio_env)
{
	char path[600], v[512];
	const char *home = getenv("HOME");

	take(c->url, sizeof(c->url), c->url_from, sizeof(c->url_from), getenv("CLOCHE_URL"),
	     "CLOCHE_URL");
	take(c->key, sizeof(c->key), c->key_from, sizeof(c->key_from), getenv("CLOCHE_API_KEY"),
	     "CLOCHE_API_KEY");
	if (home_cfg)
		snprintf(path, sizeof(path), "%s", home_cfg);
	else
		snprintf(path, sizeof(path), "%s/.config/cloche/config", home ? home : "/root");
	for (int i = 0; i < 2; i++) {
		const char *file = i == 0 ? path : aio_env ? aio_env : "/var/lib/cloche/aio.env";

		if (!c->url[0] && cli_config_file_get(file, "CLOCHE_URL", v, sizeof(v)))
			take(c->url, sizeof(c->url), c->url_from, sizeof(c->url_from), v, file);
		if (!c->key[0] && cli_config_file_get(file, "CLOCHE_API_KEY", v, sizeof(v)))
			take(c->key, sizeof(c->key), c->key_from, sizeof(c->key_from), v, file);
	}
	while (strlen(c->url) > 1 && c->url[strlen(c->url) - 1] == '/')
		c->url[strlen(c->url) - 1] = '\0';
}
