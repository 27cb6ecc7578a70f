/* Bounded JSON parsing and typed field access over jansson; see json.h.
 * The nesting depth is checked by a pre-scan of the raw text, before jansson
 * allocates anything, so a hostile "[[[[..." costs one linear pass and no
 * memory.  Field errors are 400s because every caller is reading something a
 * client sent or a peer answered. */
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cj_decrefp(json_t **v)
{
	json_decref(*v);
	*v = NULL;
}

/* Finds the first place where arrays/objects nest deeper than max, skipping
 * brackets inside strings.  Malformed text is left for jansson to report. */
static int cj_check_depth(const char *p, size_t len, int max, struct err *e)
{
	int depth = 0, line = 1, col = 0;
	bool in_str = false, esc = false;

	for (size_t i = 0; i < len; i++) {
		char c = p[i];

		col++;
		if (c == '\n') {
			line++;
			col = 0;
		}
		if (in_str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			if (++depth > max)
				return err_http(e, 400,
						"invalid JSON at line %d, column %d: nested deeper than %d levels",
						line, col, max);
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return 0;
}

json_t *cj_parse(const char *p, size_t len, size_t max_len, int max_depth, struct err *e)
{
	json_error_t jerr;
	json_t *v;

	if (len > max_len) {
		err_http(e, 413, "JSON text of %zu bytes exceeds the limit of %zu bytes", len, max_len);
		if (e)
			e->code = E2BIG;
		return NULL;
	}
	if (cj_check_depth(p, len, max_depth, e) == -1)
		return NULL;
	v = json_loadb(p, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (!v) {
		if (json_error_code(&jerr) == json_error_out_of_memory)
			err_set(e, ENOMEM, "parse JSON");
		else
			err_http(e, 400, "invalid JSON at line %d, column %d: %s", jerr.line,
				 jerr.column, jerr.text);
		return NULL;
	}
	return v;
}

int cj_save_file(const char *path, const json_t *v, mode_t mode, struct err *e)
{
	AUTOFREE char *text = cj_dump(v);
	AUTOFREE char *tmp = NULL;
	AUTOCLOSE int fd = -1;

	if (!text || asprintf(&tmp, "%s.tmp", path) == -1) {
		tmp = NULL;
		return err_set(e, ENOMEM, "write `%s`", path);
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd == -1)
		return err_set(e, errno, "open `%s`", tmp);
	if (util_write_all(fd, text, strlen(text)) == -1 || util_write_all(fd, "\n", 1) == -1 ||
	    rename(tmp, path) == -1) {
		err_set(e, errno, "write `%s`", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

json_t *cj_load_file(const char *path, size_t max_len, struct err *e)
{
	AUTOCLOSE int fd = -1;
	AUTOBUF struct buf b = BUF_INIT(max_len);
	char chunk[8192];
	json_t *v;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return err_set(e, errno, "open `%s`", path), NULL;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return err_set(e, errno, "read `%s`", path), NULL;
		if (n == 0)
			break;
		if (buf_append(&b, chunk, (size_t)n, e) == -1)
			return err_wrap(e, "read `%s`", path), NULL;
	}
	v = cj_parse(buf_str(&b), b.len, max_len, CJ_MAX_DEPTH, e);
	if (!v)
		err_wrap(e, "`%s`", path);
	return v;
}

char *cj_dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

struct cj_sink {
	struct buf *b;
	struct err *e;
	bool failed;
};

static int cj_sink_write(const char *p, size_t n, void *data)
{
	struct cj_sink *s = data;

	if (buf_append(s->b, p, n, s->e) == -1) {
		s->failed = true;
		return -1;
	}
	return 0;
}

int cj_dump_buf(const json_t *v, struct buf *b, struct err *e)
{
	struct cj_sink sink = {b, e, false};
	size_t was = b->len;

	if (json_dump_callback(v, cj_sink_write, &sink, JSON_COMPACT | JSON_ENCODE_ANY) == -1) {
		/* Take back a partial text so b is unchanged on failure. */
		b->len = was;
		if (b->data)
			b->data[was] = '\0';
		if (!sink.failed)
			err_set(e, ENOMEM, "serialize JSON");
		return -1;
	}
	return 0;
}

/* Looks key up in obj; *out is NULL when the key is missing or null. */
static int cj_field(const json_t *obj, const char *key, json_t **out, struct err *e)
{
	json_t *v;

	if (!json_is_object(obj))
		return err_http(e, 400, "expected a JSON object");
	v = json_object_get(obj, key);
	*out = json_is_null(v) ? NULL : v;
	return 0;
}

static int cj_required(const char *key, struct err *e)
{
	return err_http(e, 400, "`%s` is required", key);
}

static int cj_wrong_type(const char *key, const char *what, struct err *e)
{
	return err_http(e, 400, "`%s` must be %s", key, what);
}

/* cj_typed: looks key up and checks its type.  Returns 1 with *out set when
 * the key holds a value of the type, 0 with *out NULL when it is missing or
 * null, -1 (e says which, *out NULL) when it holds anything else. */
static int cj_typed(const json_t *obj, const char *key, json_type type, const char *what,
		    json_t **out, struct err *e)
{
	if (cj_field(obj, key, out, e) == -1)
		return -1;
	if (!*out)
		return 0;
	/* JSON_TRUE and JSON_FALSE are one type here: a boolean. */
	if (type == JSON_TRUE ? !json_is_boolean(*out) : json_typeof(*out) != type) {
		*out = NULL;
		return cj_wrong_type(key, what, e);
	}
	return 1;
}

int cj_get_str(const json_t *obj, const char *key, const char *def, const char **out,
	       struct err *e)
{
	json_t *v;
	int rc = cj_typed(obj, key, JSON_STRING, "a string", &v, e);

	if (rc >= 0)
		*out = rc ? json_string_value(v) : def;
	return rc < 0 ? -1 : 0;
}

int cj_req_str(const json_t *obj, const char *key, const char **out, struct err *e)
{
	if (cj_get_str(obj, key, NULL, out, e) == -1)
		return -1;
	return *out ? 0 : cj_required(key, e);
}

int cj_get_int(const json_t *obj, const char *key, long long def, long long *out,
	       struct err *e)
{
	json_t *v;
	int rc = cj_typed(obj, key, JSON_INTEGER, "an integer", &v, e);

	if (rc >= 0)
		*out = rc ? json_integer_value(v) : def;
	return rc < 0 ? -1 : 0;
}

int cj_req_int(const json_t *obj, const char *key, long long *out, struct err *e)
{
	json_t *v;
	int rc = cj_typed(obj, key, JSON_INTEGER, "an integer", &v, e);

	if (rc == 0)
		return cj_required(key, e);
	if (rc > 0)
		*out = json_integer_value(v);
	return rc < 0 ? -1 : 0;
}

int cj_get_bool(const json_t *obj, const char *key, bool def, bool *out, struct err *e)
{
	json_t *v;
	int rc = cj_typed(obj, key, JSON_TRUE, "a boolean", &v, e);

	if (rc >= 0)
		*out = rc ? json_is_true(v) : def;
	return rc < 0 ? -1 : 0;
}

int cj_req_bool(const json_t *obj, const char *key, bool *out, struct err *e)
{
	json_t *v;
	int rc = cj_typed(obj, key, JSON_TRUE, "a boolean", &v, e);

	if (rc == 0)
		return cj_required(key, e);
	if (rc > 0)
		*out = json_is_true(v);
	return rc < 0 ? -1 : 0;
}

int cj_get_obj(const json_t *obj, const char *key, json_t **out, struct err *e)
{
	return cj_typed(obj, key, JSON_OBJECT, "an object", out, e) < 0 ? -1 : 0;
}

int cj_req_obj(const json_t *obj, const char *key, json_t **out, struct err *e)
{
	if (cj_get_obj(obj, key, out, e) == -1)
		return -1;
	return *out ? 0 : cj_required(key, e);
}

int cj_get_strv(const json_t *obj, const char *key, char ***out, struct err *e)
{
	size_t n, i, bytes;
	json_t *v, *item;
	char **vec, *s;

	*out = NULL;
	if (cj_field(obj, key, &v, e) == -1)
		return -1;
	if (!v)
		return 0;
	if (!json_is_array(v))
		return cj_wrong_type(key, "an array of strings", e);
	n = json_array_size(v);
	bytes = (n + 1) * sizeof(char *);
	json_array_foreach(v, i, item) {
		if (!json_is_string(item))
			return err_http(e, 400, "`%s[%zu]` must be a string", key, i);
		bytes += json_string_length(item) + 1;
	}
	/* Pointers first, then the strings they point to, in one block. */
	vec = malloc(bytes);
	if (!vec)
		return err_set(e, ENOMEM, "copy `%s`", key);
	s = (char *)(vec + n + 1);
	json_array_foreach(v, i, item) {
		size_t len = json_string_length(item);

		memcpy(s, json_string_value(item), len + 1);
		vec[i] = s;
		s += len + 1;
	}
	vec[n] = NULL;
	*out = vec;
	return 0;
}

int cj_req_strv(const json_t *obj, const char *key, char ***out, struct err *e)
{
	if (cj_get_strv(obj, key, out, e) == -1)
		return -1;
	return *out ? 0 : cj_required(key, e);
}
