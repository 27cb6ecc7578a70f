/* Parsing and validation of cloche-init's service table; see config.h.
 * Everything is checked before any service starts, so a bad template fails
 * with one clear sentence instead of a half-started desktop. */
#include "config.h"

#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define INIT_MAX_SERVICES 32

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/* Expands ${NAME} from the environment, then from defaults.  Unknown names
 * are an error: a typo must not silently become an empty argument. */
static char *expand(const char *in, json_t *defaults, struct err *e)
{
	size_t cap = strlen(in) + 64, at = 0;
	char *out = malloc(cap);

	if (!out) {
		err_set(e, ENOMEM, "expand `%s`", in);
		return NULL;
	}
	for (const char *p = in; *p;) {
		const char *val = NULL;
		size_t vlen = 1;
		char name[64];

		if (p[0] == '$' && p[1] == '{') {
			const char *end = strchr(p + 2, '}');
			size_t nlen = end ? (size_t)(end - p - 2) : 0;
			if (!end || nlen == 0 || nlen >= sizeof(name)) {
				free(out);
				err_set(e, 0, "bad variable reference in `%s`", in);
				return NULL;
			}
			memcpy(name, p + 2, nlen);
			name[nlen] = '\0';
			val = getenv(name);
			if (!val)
				val = json_string_value(json_object_get(defaults, name));
			if (!val) {
				free(out);
				err_set(e, 0, "`%s` uses ${%s}, which is neither in the environment nor in defaults", in, name);
				return NULL;
			}
			vlen = strlen(val);
			p = end + 1;
		} else {
			val = p++;
		}
		if (at + vlen + 1 > cap) {
			char *n;
			cap = (at + vlen + 1) * 2;
			n = realloc(out, cap);
			if (!n) {
				free(out);
				err_set(e, ENOMEM, "expand `%s`", in);
				return NULL;
			}
			out = n;
		}
		memcpy(out + at, val, vlen);
		at += vlen;
	}
	out[at] = '\0';
	return out;
}

/* A JSON array of strings -> NULL-terminated expanded vector. */
static char **strv_from_json(json_t *arr, json_t *defaults, const char *what, struct err *e)
{
	size_t n = json_array_size(arr), i;
	char **v;

	if (!json_is_array(arr) || n == 0) {
		err_set(e, 0, "%s must be a non-empty array of strings", what);
		return NULL;
	}
	v = calloc(n + 1, sizeof(*v));
	if (!v) {
		err_set(e, ENOMEM, "%s", what);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(arr, i));
		if (!s) {
			err_set(e, 0, "%s[%zu] must be a string", what, i);
			break;
		}
		v[i] = expand(s, defaults, e);
		if (!v[i])
			break;
	}
	if (i < n) {
		strv_free(v);
		return NULL;
	}
	return v;
}

static int strv_push(char ***v, size_t *n, char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(**v));

	if (!nv) {
		free(s);
		return -1;
	}
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

/* The environment of a service: a clean base for its user, the file's
 * global env, then the service's own (later entries win for a key). */
static char **build_env(const struct passwd *pw, json_t *genv, json_t *senv, json_t *defaults,
			struct err *e)
{
	char **v = NULL;
	size_t n = 0;
	json_t *layers[2] = {genv, senv};
	char *s;

	if (asprintf(&s, "HOME=%s", pw->pw_dir) < 0 || strv_push(&v, &n, s) ||
	    asprintf(&s, "USER=%s", pw->pw_name) < 0 || strv_push(&v, &n, s) ||
	    asprintf(&s, "LOGNAME=%s", pw->pw_name) < 0 || strv_push(&v, &n, s) ||
	    asprintf(&s, "SHELL=%s", pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh") < 0 ||
	    strv_push(&v, &n, s) ||
	    (s = strdup("PATH=/opt/cloche/bin:/usr/local/bin:/usr/bin:/bin")) == NULL ||
	    strv_push(&v, &n, s))
		goto oom;
	for (size_t l = 0; l < ARRAY_LEN(layers); l++) {
		const char *key;
		json_t *val;
		if (!layers[l])
			continue;
		if (!json_is_object(layers[l])) {
			strv_free(v);
			err_set(e, 0, "env must be an object of strings");
			return NULL;
		}
		json_object_foreach(layers[l], key, val) {
			char *x;
			size_t klen = strlen(key);
			if (!json_is_string(val) || klen == 0 || strchr(key, '=')) {
				strv_free(v);
				err_set(e, 0, "env `%s` must be a string with a plain name", key);
				return NULL;
			}
			x = expand(json_string_value(val), defaults, e);
			if (!x) {
				strv_free(v);
				return NULL;
			}
			/* Drop an earlier value of the same key. */
			for (size_t i = 0; i < n; i++)
				if (strncmp(v[i], key, klen) == 0 && v[i][klen] == '=') {
					free(v[i]);
					memmove(&v[i], &v[i + 1], (n - i) * sizeof(*v));
					n--;
					break;
				}
			if (asprintf(&s, "%s=%s", key, x) < 0) {
				free(x);
				goto oom;
			}
			free(x);
			if (strv_push(&v, &n, s))
				goto oom;
		}
	}
	return v;
oom:
	strv_free(v);
	err_set(e, ENOMEM, "environment");
	return NULL;
}

static int parse_probe(json_t *j, json_t *defaults, struct init_probe *p, struct err *e)
{
	json_t *x;

	p->interval_ms = 0;
	p->timeout_ms = 60000;
	if (!j)
		return 0;
	if (!json_is_object(j))
		return err_set(e, 0, "ready must be an object");
	/* Connecting is cheap, running a probe program under gVisor is not. */
	p->interval_ms = json_object_get(j, "exec") ? 500 : 100;
	if ((x = json_object_get(j, "interval_ms")) && json_integer_value(x) > 0)
		p->interval_ms = (unsigned)json_integer_value(x);
	if ((x = json_object_get(j, "timeout_ms")) && json_integer_value(x) > 0)
		p->timeout_ms = (unsigned)json_integer_value(x);
	if ((x = json_object_get(j, "unix"))) {
		if (!json_is_string(x))
			return err_set(e, 0, "ready.unix must be a socket path");
		p->kind = INIT_PROBE_UNIX;
		p->path = expand(json_string_value(x), defaults, e);
		return p->path ? 0 : -1;
	}
	if ((x = json_object_get(j, "tcp")) || (x = json_object_get(j, "http"))) {
		json_int_t port = json_integer_value(x);
		bool http = !json_object_get(j, "tcp");
		if (!json_is_integer(x) || port < 1 || port > 65535)
			return err_set(e, 0, "ready.%s must be a port number", http ? "http" : "tcp");
		p->kind = http ? INIT_PROBE_HTTP : INIT_PROBE_TCP;
		p->port = (int)port;
		return 0;
	}
	if ((x = json_object_get(j, "exec"))) {
		p->kind = INIT_PROBE_EXEC;
		p->argv = strv_from_json(x, defaults, "ready.exec", e);
		if (p->argv && p->argv[0][0] != '/')
			return err_set(e, 0, "ready.exec[0] `%s` must be an absolute path", p->argv[0]);
		return p->argv ? 0 : -1;
	}
	return err_set(e, 0, "ready needs one of unix, tcp, http or exec");
}

static int parse_listen(json_t *j, struct init_service *s, struct err *e)
{
	size_t i;
	json_t *x;

	for (i = 0; i < INIT_MAX_LISTEN; i++)
		s->listen_fd[i] = -1;
	if (!j)
		return 0;
	if (!json_is_array(j) || json_array_size(j) > INIT_MAX_LISTEN)
		return err_set(e, 0, "listen must be an array of at most %d ports", INIT_MAX_LISTEN);
	json_array_foreach(j, i, x) {
		json_int_t port = json_integer_value(x);
		if (!json_is_integer(x) || port < 1 || port > 65535)
			return err_set(e, 0, "listen[%zu] must be a port number", i);
		s->listen_port[s->nlisten++] = (int)port;
	}
	return 0;
}

/* Adds LISTEN_FDS=n to a service's environment when init holds its ports. */
static int listen_env(struct init_service *s, struct err *e)
{
	size_t n = 0;
	char *kv;

	if (s->nlisten == 0)
		return 0;
	while (s->env[n])
		n++;
	if (asprintf(&kv, "LISTEN_FDS=%zu", s->nlisten) < 0 || strv_push(&s->env, &n, kv))
		return err_set(e, ENOMEM, "environment");
	return 0;
}

static void listen_close(struct init_service *s)
{
	for (size_t i = 0; i < s->nlisten; i++)
		if (s->listen_fd[i] >= 0) {
			close(s->listen_fd[i]);
			s->listen_fd[i] = -1;
		}
}

static void service_free(struct init_service *s)
{
	free(s->name);
	strv_free(s->argv);
	strv_free(s->env);
	free(s->cwd);
	free(s->user);
	free(s->after);
	free(s->probe.path);
	strv_free(s->probe.argv);
	listen_close(s);
}

static int parse_service(json_t *j, json_t *root, struct init_service *s, struct err *e)
{
	json_t *defaults = json_object_get(root, "defaults");
	const char *name = json_string_value(json_object_get(j, "name"));
	const char *user = json_string_value(json_object_get(j, "user"));
	const char *cwd = json_string_value(json_object_get(j, "cwd"));
	struct passwd *pw;

	if (!json_is_object(j) || !name || !*name)
		return err_set(e, 0, "every service needs a name");
	s->name = strdup(name);
	if (!s->name)
		return err_set(e, ENOMEM, "service");
	if (!user)
		user = json_string_value(json_object_get(root, "user"));
	if (!user)
		user = "root";
	errno = 0;
	pw = getpwnam(user);
	if (!pw)
		return err_set(e, errno, "user `%s` does not exist", user);
	s->user = strdup(user);
	s->uid = pw->pw_uid;
	s->gid = pw->pw_gid;
	s->ngroups = INIT_MAX_GROUPS;
	if (getgrouplist(user, pw->pw_gid, s->groups, &s->ngroups) == -1)
		return err_set(e, 0, "user `%s` is in more than %d groups", user, INIT_MAX_GROUPS);
	if (parse_listen(json_object_get(j, "listen"), s, e))
		return -1;
	s->cwd = strdup(cwd ? cwd : pw->pw_dir);
	if (!s->user || !s->cwd)
		return err_set(e, ENOMEM, "service");
	s->argv = strv_from_json(json_object_get(j, "argv"), defaults, "argv", e);
	if (!s->argv)
		return -1;
	if (s->argv[0][0] != '/')
		return err_set(e, 0, "argv[0] `%s` must be an absolute path", s->argv[0]);
	s->env = build_env(pw, json_object_get(root, "env"), json_object_get(j, "env"), defaults, e);
	if (!s->env || listen_env(s, e))
		return -1;
	return parse_probe(json_object_get(j, "ready"), defaults, &s->probe, e);
}

static int parse_dirs(json_t *j, struct init_config *c, struct err *e)
{
	size_t i;
	json_t *d;

	if (!j)
		return 0;
	if (!json_is_array(j) || json_array_size(j) > INIT_MAX_DIRS)
		return err_set(e, 0, "dirs must be an array of at most %d objects", INIT_MAX_DIRS);
	json_array_foreach(j, i, d) {
		const char *path = json_string_value(json_object_get(d, "path"));
		const char *user = json_string_value(json_object_get(d, "user"));
		const char *group = json_string_value(json_object_get(d, "group"));
		const char *mode = json_string_value(json_object_get(d, "mode"));
		struct init_dir *x = &c->dirs[c->ndirs];
		struct passwd *pw;
		struct group *gr;
		char *end;
		long m;

		if (!path || path[0] != '/' || strstr(path, "..") || !user || !mode)
			return err_set(e, 0, "dirs[%zu] needs an absolute path, a user and a mode", i);
		m = strtol(mode, &end, 8);
		if (*end || m < 0 || m > 07777)
			return err_set(e, 0, "dirs[%zu]: mode `%s` is not octal", i, mode);
		if (!(pw = getpwnam(user)))
			return err_set(e, 0, "dirs[%zu]: user `%s` does not exist", i, user);
		x->uid = pw->pw_uid;
		x->gid = pw->pw_gid;
		if (group) {
			if (!(gr = getgrnam(group)))
				return err_set(e, 0, "dirs[%zu]: group `%s` does not exist", i, group);
			x->gid = gr->gr_gid;
		}
		x->mode = (mode_t)m;
		if (!(x->path = strdup(path)))
			return err_set(e, ENOMEM, "dirs");
		c->ndirs++;
	}
	return 0;
}

int init_dirs_make(const struct init_config *c, struct err *e)
{
	for (size_t i = 0; i < c->ndirs; i++) {
		const struct init_dir *d = &c->dirs[i];
		struct stat st;

		if ((util_mkdir_parents(d->path, 0755) == -1 ||
		     (mkdir(d->path, d->mode) == -1 && errno != EEXIST)))
			return err_set(e, errno, "make `%s`", d->path);
		/* Never follow a link someone left in the directory's place. */
		if (lstat(d->path, &st) == -1 || !S_ISDIR(st.st_mode))
			return err_set(e, ENOTDIR, "`%s` is not a directory", d->path);
		if (lchown(d->path, d->uid, d->gid) == -1 || chmod(d->path, d->mode) == -1)
			return err_set(e, errno, "own `%s`", d->path);
	}
	return 0;
}

/* A port can be held for one service only. */
static int check_listen_once(const struct init_config *c, struct err *e)
{
	int seen[INIT_MAX_SERVICES * INIT_MAX_LISTEN];
	size_t nseen = 0;

	for (size_t i = 0; i < c->nsvc; i++)
		for (size_t k = 0; k < c->svc[i].nlisten; k++) {
			int port = c->svc[i].listen_port[k];

			for (size_t j = 0; j < nseen; j++)
				if (seen[j] == port)
					return err_set(e, 0, "port %d is in listen twice", port);
			seen[nseen++] = port;
		}
	return 0;
}

static ssize_t find_service(const struct init_config *c, const char *name)
{
	for (size_t i = 0; i < c->nsvc; i++)
		if (strcmp(c->svc[i].name, name) == 0)
			return (ssize_t)i;
	return -1;
}

/* Resolves "after" names to indexes, then reorders the table so that every
 * service comes after its dependencies (depth-first topological sort). */
static int resolve_order(struct init_config *c, json_t *jsvcs, struct err *e)
{
	size_t n = c->nsvc, done = 0;
	struct init_service *sorted = calloc(n, sizeof(*sorted));
	size_t *newidx = calloc(n, sizeof(*newidx));
	bool *placed = calloc(n, sizeof(*placed));
	int rc = -1;

	if (!sorted || !newidx || !placed) {
		err_set(e, ENOMEM, "services");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *after = json_object_get(json_array_get(jsvcs, i), "after");
		size_t k;
		json_t *dep;
		if (after && !json_is_array(after)) {
			err_set(e, 0, "service `%s`: after must be an array of names", c->svc[i].name);
			goto out;
		}
		c->svc[i].after = calloc(json_array_size(after) + 1, sizeof(size_t));
		if (!c->svc[i].after) {
			err_set(e, ENOMEM, "services");
			goto out;
		}
		json_array_foreach(after, k, dep) {
			ssize_t d = json_is_string(dep) ? find_service(c, json_string_value(dep)) : -1;
			if (d < 0) {
				err_set(e, 0, "service `%s`: depends on unknown service `%s`",
					c->svc[i].name, json_is_string(dep) ? json_string_value(dep) : "?");
				goto out;
			}
			c->svc[i].after[c->svc[i].nafter++] = (size_t)d;
		}
	}
	/* Kahn's algorithm over a small table: repeatedly place every service
	 * whose dependencies are placed; no progress means a cycle. */
	while (done < n) {
		size_t before = done;
		for (size_t i = 0; i < n; i++) {
			bool ready = !placed[i];
			for (size_t k = 0; ready && k < c->svc[i].nafter; k++)
				ready = placed[c->svc[i].after[k]];
			if (!ready)
				continue;
			newidx[i] = done;
			sorted[done++] = c->svc[i];
			placed[i] = true;
		}
		if (done == before) {
			err_set(e, 0, "services depend on each other in a cycle");
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < sorted[i].nafter; k++)
			sorted[i].after[k] = newidx[sorted[i].after[k]];
	free(c->svc);
	c->svc = sorted;
	sorted = NULL;
	rc = 0;
out:
	free(sorted);
	free(newidx);
	free(placed);
	return rc;
}

int init_config_parse(const char *text, struct init_config *c, struct err *e)
{
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	json_t *jsvcs, *x;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->stop_timeout_ms = 5000;
	if (!root)
		return err_set(e, 0, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
	jsvcs = json_object_get(root, "services");
	if (!json_is_array(jsvcs) || json_array_size(jsvcs) == 0 ||
	    json_array_size(jsvcs) > INIT_MAX_SERVICES) {
		err_set(e, 0, "services must be an array of 1 to %d services", INIT_MAX_SERVICES);
		goto out;
	}
	if ((x = json_object_get(root, "stop_timeout_ms")) && json_integer_value(x) > 0)
		c->stop_timeout_ms = (unsigned)json_integer_value(x);
	if (parse_dirs(json_object_get(root, "dirs"), c, e))
		goto out;
	c->svc = calloc(json_array_size(jsvcs), sizeof(*c->svc));
	if (!c->svc) {
		err_set(e, ENOMEM, "services");
		goto out;
	}
	for (size_t i = 0; i < json_array_size(jsvcs); i++) {
		const char *name = json_string_value(json_object_get(json_array_get(jsvcs, i), "name"));
		if (name && find_service(c, name) >= 0) {
			err_set(e, 0, "service `%s` is defined twice", name);
			goto out;
		}
		c->nsvc++; /* counted before parsing so a failure frees it */
		if (parse_service(json_array_get(jsvcs, i), root, &c->svc[i], e)) {
			err_wrap(e, "service `%s`", name ? name : "?");
			goto out;
		}
	}
	if (check_listen_once(c, e))
		goto out;
	rc = resolve_order(c, jsvcs, e);
out:
	json_decref(root);
	if (rc)
		init_config_free(c);
	return rc;
}

int init_config_load(const char *path, struct init_config *c, struct err *e)
{
	FILE *f = fopen(path, "re");
	AUTOFREE char *text = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return err_set(e, errno, "open `%s`", path);
	n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	if (n < 0)
		return err_set(e, errno ? errno : EINVAL, "read `%s`", path);
	if (init_config_parse(text, c, e))
		return err_wrap(e, "%s", path);
	return 0;
}

void init_config_free(struct init_config *c)
{
	for (size_t i = 0; i < c->nsvc; i++)
		service_free(&c->svc[i]);
	for (size_t i = 0; i < c->ndirs; i++)
		free(c->dirs[i].path);
	free(c->svc);
	memset(c, 0, sizeof(*c));
}

static int listen_one(int port, struct err *e)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	AUTOCLOSE int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (fd == -1)
		return err_set(e, errno, "socket for port %d", port);
	/* Neither SO_REUSEADDR nor SO_REUSEPORT: gVisor lets a second socket
	 * bind 10.0.2.15:port beside a wildcard listener when both ask for
	 * SO_REUSEADDR (measured; Linux refuses), and the more specific one
	 * would then take the connections.  init binds once per boot. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 || listen(fd, 128) == -1)
		return err_set(e, errno, "listen on port %d", port);
	return take_fd(&fd);
}

int init_listen_open(struct init_config *c, struct err *e)
{
	for (size_t i = 0; i < c->nsvc; i++)
		for (size_t k = 0; k < c->svc[i].nlisten; k++) {
			int fd = listen_one(c->svc[i].listen_port[k], e);

			if (fd == -1) {
				for (size_t j = 0; j < c->nsvc; j++)
					listen_close(&c->svc[j]);
				return err_wrap(e, "service `%s`", c->svc[i].name);
			}
			c->svc[i].listen_fd[k] = fd;
		}
	return 0;
}
