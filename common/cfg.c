/* Layered configuration; see cfg.h.  Flags are parsed first but applied
 * last: the first pass finds --help and --config (which decide what else is
 * read) and rejects malformed flags before any file is opened; the recorded
 * assignments are applied after the file and the environment, so that a
 * flag always wins.  Every value is parsed when it is set, so an error can
 * name the exact source, and getters never fail. */
#include "common/cfg.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cfg_val {
	char *str;     /* current value as text, or NULL */
	long long num; /* parsed CFG_INT, CFG_BOOL, CFG_DURATION */
	unsigned long long size;
	char *env;     /* name of the environment variable, or NULL */
	char src[128];
};

struct cfg {
	const struct cfg_opt *opts;
	size_t n;
	struct cfg_val *vals;
	char *config_env; /* <PREFIX>_CONFIG, or NULL */
	char **args;
	size_t nargs;
};

/* A flag seen in the first pass, applied in the last. */
struct cfg_flag {
	size_t idx;
	const char *val;
};

/* Matches names treating '-' and '_' alike; n bounds a, which need not end there. */
static bool cfg_name_eq(const char *a, size_t n, const char *b)
{
	size_t i;

	for (i = 0; i < n && b[i]; i++) {
		char x = a[i] == '_' ? '-' : a[i], y = b[i] == '_' ? '-' : b[i];
		if (x != y)
			return false;
	}
	return i == n && !b[i];
}

static long cfg_find(const struct cfg *c, const char *name, size_t n)
{
	for (size_t i = 0; i < c->n; i++)
		if (cfg_name_eq(name, n, c->opts[i].name))
			return (long)i;
	return -1;
}

static char *cfg_env_name(const char *prefix, const char *name)
{
	size_t n = strlen(prefix) + 1 + strlen(name) + 1;
	char *s = malloc(n), *p;

	if (!s)
		return NULL;
	snprintf(s, n, "%s_%s", prefix, name);
	for (p = s; *p; p++)
		*p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
	return s;
}

struct cfg *cfg_new(const struct cfg_opt *opts, size_t n, const char *env_prefix)
{
	struct cfg *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->opts = opts;
	c->n = n;
	c->vals = calloc(n ? n : 1, sizeof(*c->vals));
	if (!c->vals)
		goto fail;
	if (env_prefix) {
		c->config_env = cfg_env_name(env_prefix, "config");
		if (!c->config_env)
			goto fail;
		for (size_t i = 0; i < n; i++) {
			c->vals[i].env = cfg_env_name(env_prefix, opts[i].name);
			if (!c->vals[i].env)
				goto fail;
		}
	}
	return c;
fail:
	cfg_free(c);
	return NULL;
}

void cfg_free(struct cfg *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->vals && i < c->n; i++) {
		free(c->vals[i].str);
		free(c->vals[i].env);
	}
	free(c->vals);
	free(c->config_env);
	free(c->args);
	free(c);
}

/* Parses an unsigned decimal prefix of s into *v; returns the rest, or NULL
 * when there are no digits or the number overflows. */
static const char *cfg_digits(const char *s, unsigned long long *v)
{
	unsigned long long x = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (x > (ULLONG_MAX - d) / 10)
			return NULL;
		x = x * 10 + d;
	}
	*v = x;
	return p == s ? NULL : p;
}

int cfg_parse_duration(const char *s, long long *out, struct err *e)
{
	static const struct { const char *unit; unsigned long long ms; } units[] = {
		{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
	};
	unsigned long long v;
	const char *unit = cfg_digits(s, &v);

	if (unit && !*unit && v == 0) {
		*out = 0;
		return 0;
	}
	for (size_t i = 0; unit && i < ARRAY_LEN(units); i++) {
		if (strcmp(unit, units[i].unit) != 0)
			continue;
		if (v > (unsigned long long)LLONG_MAX / units[i].ms)
			return err_set(e, 0, "`%s` is out of range", s);
		*out = (long long)(v * units[i].ms);
		return 0;
	}
	return err_set(e, 0, "`%s` is not a duration (such as 500ms, 5s, 2m, 1h)", s);
}

static int cfg_parse_size(const char *s, unsigned long long *out, struct err *e)
{
	unsigned long long v, mult = 1;
	const char *p = cfg_digits(s, &v);
	const char *q;

	if (!p)
		goto bad;
	if (*p && (q = strchr("kmgt", tolower((unsigned char)*p)))) {
		mult = 1ULL << (10 * (q - "kmgt" + 1));
		p++;
		if (strcasecmp(p, "ib") == 0)
			p += 2;
	}
	if (*p == 'b' || *p == 'B')
		p++;
	if (*p)
		goto bad;
	if (v > ULLONG_MAX / mult)
		return err_set(e, 0, "`%s` is out of range", s);
	*out = v * mult;
	return 0;
bad:
	return err_set(e, 0, "`%s` is not a size (such as 4096, 64K, 64M, 2G)", s);
}

static int cfg_parse_bool(const char *s, long long *out, struct err *e)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};

	for (size_t i = 0; i < ARRAY_LEN(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
			*out = strcasecmp(s, yes[i]) == 0;
			return 0;
		}
	}
	return err_set(e, 0, "`%s` is not a boolean (true or false)", s);
}

static int cfg_parse_int(const char *s, long long *out, struct err *e)
{
	const char *digits = s[0] == '-' || s[0] == '+' ? s + 1 : s;
	char *end;

	/* strtoll() would also take leading spaces and an empty string. */
	if (!isdigit((unsigned char)digits[0]))
		return err_set(e, 0, "`%s` is not an integer", s);
	errno = 0;
	*out = strtoll(s, &end, 10);
	if (*end)
		return err_set(e, 0, "`%s` is not an integer", s);
	if (errno == ERANGE)
		return err_set(e, 0, "`%s` is out of range", s);
	return 0;
}

/* Parses s as option idx's type and, when valid, makes it the value. */
static int cfg_set(struct cfg *c, size_t idx, const char *s, const char *src, struct err *e)
{
	struct cfg_val *v = &c->vals[idx], next = *v;
	int r = 0;

	switch (c->opts[idx].type) {
	case CFG_STR:
		break;
	case CFG_INT:
		r = cfg_parse_int(s, &next.num, e);
		break;
	case CFG_BOOL:
		r = cfg_parse_bool(s, &next.num, e);
		break;
	case CFG_DURATION:
		r = cfg_parse_duration(s, &next.num, e);
		break;
	case CFG_SIZE:
		r = cfg_parse_size(s, &next.size, e);
		break;
	}
	if (r == -1)
		return -1;
	next.str = strdup(s);
	if (!next.str)
		return err_set(e, ENOMEM, "copy value");
	free(v->str);
	*v = next;
	snprintf(v->src, sizeof(v->src), "%s", src);
	return 0;
}

static char *cfg_trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int cfg_load_file(struct cfg *c, const char *path, struct err *e)
{
	FILE *f = fopen(path, "re");
	AUTOFREE char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	char src[128];
	int r = 0;

	if (!f)
		return err_set(e, errno, "open config `%s`", path);
	while (r == 0 && getline(&line, &cap, f) != -1) {
		char *key = cfg_trim(line), *eq, *val;
		long idx;
		size_t vlen;

		lineno++;
		snprintf(src, sizeof(src), "%s:%u", path, lineno);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq || eq == key) {
			r = err_set(e, 0, "%s: expected `name = value`", src);
			break;
		}
		*eq = '\0';
		key = cfg_trim(key);
		val = cfg_trim(eq + 1);
		/* Quotes keep leading or trailing spaces; nothing is unescaped. */
		vlen = strlen(val);
		if (vlen >= 2 && val[0] == '"' && val[vlen - 1] == '"') {
			val[vlen - 1] = '\0';
			val++;
		}
		idx = cfg_find(c, key, strlen(key));
		if (idx < 0)
			r = err_set(e, 0, "%s: unknown option `%s`", src, key);
		else if (cfg_set(c, (size_t)idx, val, src, e) == -1)
			r = err_wrap(e, "%s: %s", src, c->opts[idx].name);
	}
	if (r == 0 && ferror(f))
		r = err_set(e, EIO, "read config `%s`", path);
	fclose(f);
	return r;
}

/* First pass: records flag assignments, collects arguments and spots
 * --help, --version and --config.  Returns 1 for --help, 2 for --version. */
static int cfg_scan_flags(struct cfg *c, int argc, char **argv, struct cfg_flag *flags,
			  size_t *nflags, const char **config, struct err *e)
{
	bool help = false, version = false, rest = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *val;
		size_t len;
		long idx;

		if (rest || a[0] != '-' || a[1] == '\0') {
			c->args[c->nargs++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			rest = true;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			help = true;
			continue;
		}
		if (strcmp(a, "--version") == 0) {
			version = true;
			continue;
		}
		if (a[1] != '-')
			return err_set(e, 0, "unknown flag `%s` (see --help)", a);
		name = a + 2;
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		val = eq ? eq + 1 : NULL;
		idx = cfg_find(c, name, len);
		if (idx < 0 && !val && len > 3 && strncmp(name, "no-", 3) == 0) {
			idx = cfg_find(c, name + 3, len - 3);
			if (idx >= 0 && c->opts[idx].type == CFG_BOOL)
				val = "false";
			else
				idx = -1;
		}
		if (idx < 0 && !cfg_name_eq(name, len, "config"))
			return err_set(e, 0, "unknown flag `--%.*s` (see --help)", (int)len, name);
		if (!val && idx >= 0 && c->opts[idx].type == CFG_BOOL)
			val = "true";
		if (!val) {
			if (i + 1 >= argc)
				return err_set(e, 0, "--%.*s: missing value", (int)len, name);
			val = argv[++i];
		}
		if (idx < 0)
			*config = val;
		else
			flags[(*nflags)++] = (struct cfg_flag){(size_t)idx, val};
	}
	c->args[c->nargs] = NULL;
	return help ? 1 : version ? 2 : 0;
}

int cfg_load(struct cfg *c, int argc, char **argv, struct err *e)
{
	AUTOFREE struct cfg_flag *flags = calloc((size_t)argc + 1, sizeof(*flags));
	const char *config = c->config_env ? getenv(c->config_env) : NULL;
	size_t nflags = 0;
	char src[160];
	int r;

	free(c->args);
	c->nargs = 0;
	c->args = calloc((size_t)argc + 1, sizeof(*c->args));
	if (!flags || !c->args)
		return err_set(e, ENOMEM, "parse flags");
	r = cfg_scan_flags(c, argc, argv, flags, &nflags, &config, e);
	if (r == 1) {
		cfg_help(c, argc > 0 ? argv[0] : NULL, stdout);
		fflush(stdout);
	}
	if (r != 0)
		return r;
	for (size_t i = 0; i < c->n; i++)
		if (c->opts[i].def && cfg_set(c, i, c->opts[i].def, "default", e) == -1)
			return err_wrap(e, "default of %s", c->opts[i].name);
	if (config && cfg_load_file(c, config, e) == -1)
		return -1;
	for (size_t i = 0; i < c->n; i++) {
		const char *env = c->vals[i].env ? getenv(c->vals[i].env) : NULL;

		if (env && cfg_set(c, i, env, c->vals[i].env, e) == -1)
			return err_wrap(e, "%s", c->vals[i].env);
	}
	for (size_t i = 0; i < nflags; i++) {
		snprintf(src, sizeof(src), "--%s", c->opts[flags[i].idx].name);
		if (cfg_set(c, flags[i].idx, flags[i].val, src, e) == -1)
			return err_wrap(e, "%s", src);
	}
	return 0;
}

static const char *const cfg_metavar[] = {
	[CFG_STR] = "=STR", [CFG_INT] = "=N", [CFG_BOOL] = "",
	[CFG_DURATION] = "=DURATION", [CFG_SIZE] = "=SIZE",
};

static void cfg_help_entry(FILE *out, const char *flag, const char *help, const char *def,
			   const char *env)
{
	if (strlen(flag) <= 26)
		fprintf(out, "  %-26s  %s\n", flag, help ? help : "");
	else
		fprintf(out, "  %s\n  %-26s  %s\n", flag, "", help ? help : "");
	if (def || env)
		fprintf(out, "  %-26s  (%s%s%s%s%s)\n", "", def ? "default: " : "", def ? def : "",
			def && env ? "; " : "", env ? "env: " : "", env ? env : "");
}

void cfg_help(const struct cfg *c, const char *prog, FILE *out)
{
	const char *base = prog ? strrchr(prog, '/') : NULL;
	char flag[96];

	fprintf(out, "Usage: %s [OPTION]... [ARG]...\n\nOptions:\n",
		base ? base + 1 : prog ? prog : "program");
	for (size_t i = 0; i < c->n; i++) {
		const struct cfg_opt *o = &c->opts[i];

		snprintf(flag, sizeof(flag), "--%s%s%s", o->type == CFG_BOOL ? "[no-]" : "",
			 o->name, cfg_metavar[o->type]);
		cfg_help_entry(out, flag, o->help, o->def, c->vals[i].env);
	}
	cfg_help_entry(out, "--config=FILE", "read `name = value` lines from FILE", NULL,
		       c->config_env);
	cfg_help_entry(out, "--help", "print this help and exit", NULL, NULL);
	cfg_help_entry(out, "--version", "print the version and exit", NULL, NULL);
}

static const struct cfg_val *cfg_get(const struct cfg *c, const char *name, enum cfg_type t)
{
	for (size_t i = 0; i < c->n; i++) {
		if (strcmp(c->opts[i].name, name) != 0)
			continue;
		if (c->opts[i].type != t)
			break;
		return &c->vals[i];
	}
	/* A typo in a program, not a user error: stop where it is obvious. */
	fprintf(stderr, "cfg: no option `%s` of the requested type\n", name);
	abort();
}

const char *cfg_str(const struct cfg *c, const char *name)
{
	return cfg_get(c, name, CFG_STR)->str;
}

long long cfg_int(const struct cfg *c, const char *name)
{
	return cfg_get(c, name, CFG_INT)->num;
}

bool cfg_bool(const struct cfg *c, const char *name)
{
	return cfg_get(c, name, CFG_BOOL)->num != 0;
}

long long cfg_duration_ms(const struct cfg *c, const char *name)
{
	return cfg_get(c, name, CFG_DURATION)->num;
}

unsigned long long cfg_size(const struct cfg *c, const char *name)
{
	return cfg_get(c, name, CFG_SIZE)->size;
}

const char *cfg_source(const struct cfg *c, const char *name)
{
	long idx = cfg_find(c, name, strlen(name));

	if (idx < 0)
		return NULL;
	return c->vals[idx].src[0] ? c->vals[idx].src : "unset";
}

char *const *cfg_args(const struct cfg *c, size_t *n)
{
	static char *const none[] = {NULL};

	if (n)
		*n = c->nargs;
	return c->args ? c->args : none;
}

int cfg_each_count(const char *list, const char *opt, long min, long max,
		   int (*fn)(const char *name, long n, void *ud, struct err *e), void *ud,
		   struct err *e)
{
	char buf[1024], *save = NULL, *tok;

	if (!list || !*list)
		return 0;
	if (strlen(list) >= sizeof(buf))
		return err_set(e, 0, "--%s: too long", opt);
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end = NULL;
		long v;

		if (!eq)
			return err_set(e, 0, "--%s: `%s` is not name=N", opt, tok);
		*eq = '\0';
		errno = 0;
		v = strtol(eq + 1, &end, 10);
		if (end == eq + 1 || *end || errno || v < min || v > max)
			return err_set(e, 0, "--%s: the number of `%s` must be %ld..%ld", opt, tok,
				       min, max);
		if (fn(tok, v, ud, e) == -1)
			return -1;
	}
	return 0;
}
