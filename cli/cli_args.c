/* Reading a command's arguments; see cli_args.h. */
#include "cli/cli_args.h"
#include "cli/cli_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cli_opt_val(struct cli_args *a, const char *name, bool *bad)
{
	const char *s = a->v[a->i];
	size_t n = strlen(name);

	if (strncmp(s, name, n) != 0)
		return NULL;
	if (s[n] == '=')
		return s + n + 1;
	if (s[n] != '\0')
		return NULL;
	if (a->i + 1 >= a->n) {
		*bad = true;
		cli_fail(2, "%s needs a value", name);
		return NULL;
	}
	return a->v[++a->i];
}

bool cli_whole(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

int cli_bad_number(const char *opt, const char *v)
{
	return cli_fail(2, "%s: `%s` is not a whole number in range", opt, v);
}

int cli_kv_into(json_t *obj, const char *opt, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char k[256];

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(k))
		return cli_fail(2, "%s takes KEY=VALUE, not `%s`", opt, kv);
	snprintf(k, sizeof(k), "%.*s", (int)(eq - kv), kv);
	json_object_set_new(obj, k, json_string(eq + 1));
	return 0;
}

int cli_one_id(const struct cli_args *a, const char *cmd)
{
	if (a->n != 1 || a->v[0][0] == '-')
		return cli_fail(2, "usage: cloche %s ID", cmd);
	return 0;
}
