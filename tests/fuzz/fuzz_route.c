/* libFuzzer target: the router's matcher (hsrv_match), which reads the
 * path of every request a daemon serves.  The first byte picks a pattern
 * (a few malformed ones among them), the rest is the path.  Checks what
 * handlers rely on: a malformed pattern matches nothing; a match yields at
 * most HSRV_MAX_PARAMS values, each one non-empty segment without '/' that
 * fits HSRV_PARAM_MAX; hsrv_req_param finds them; and putting the values
 * back into the pattern gives the path (its start, for a '*' pattern). */
#include "common/http_server.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

static const struct {
	const char *pattern;
	bool valid;
} patterns[] = {
	{"/", true},
	{"/healthz", true},
	{"/v1/sandboxes/{id}", true},
	{"/v1/sandboxes/{id}/{action}", true},
	{"/v1/sandboxes/{id}/recordings/{rec}/stop", true},
	{"/{a}/{b}/{c}/{d}", true},
	{"/files/*", true},
	{"/v1/{id}/*", true},
	{"/{a}", true},
	{"/a{id}", false},
	{"/{id}x", false},
	{"/{}", false},
	{"/{a}/{b}/{c}/{d}/{e}", false},
	{"/a/*/b", false},
	{"v1/{id}", false},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hsrv_req req;
	char *path, back[8192];
	const char *pat;
	size_t at = 0;
	bool m;

	if (size < 1 || size > 4096)
		return 0;
	pat = patterns[data[0] % (sizeof(patterns) / sizeof(patterns[0]))].pattern;
	path = malloc(size);
	if (!path)
		return 0;
	memcpy(path, data + 1, size - 1);
	path[size - 1] = '\0';
	m = hsrv_match(pat, path, &req);
	if (!patterns[data[0] % (sizeof(patterns) / sizeof(patterns[0]))].valid)
		CHECK(!m && req.nparams == 0);
	if (m) {
		size_t n = 0;

		CHECK(req.nparams <= HSRV_MAX_PARAMS);
		for (size_t i = 0; i < req.nparams; i++) {
			size_t vl = strlen(req.params[i].value);

			CHECK(vl > 0 && vl < HSRV_PARAM_MAX && !strchr(req.params[i].value, '/'));
			CHECK(hsrv_req_param(&req, req.params[i].name) != NULL);
		}
		/* The pattern with its values put back is the path. */
		for (const char *p = pat; *p && at < sizeof(back) - HSRV_PARAM_MAX; p++) {
			if (*p == '*' && !p[1])
				break;
			if (*p == '{') {
				size_t vl = strlen(req.params[n].value);

				memcpy(back + at, req.params[n++].value, vl);
				at += vl;
				p = strchr(p, '}');
				continue;
			}
			back[at++] = *p;
		}
		CHECK(n == req.nparams);
		CHECK(strncmp(back, path, at) == 0);
		CHECK(pat[strlen(pat) - 1] == '*' || strlen(path) == at);
	}
	free(path);
	return 0;
}
