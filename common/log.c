/* JSON-lines logger; see log.h.  Fields are packed with jansson so messages
 * taken from child processes or peers cannot break the line structure. */
#include "log.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static struct {
	char prog[64];
	enum log_level min;
	int fd;
} g_log = {"cloche", LOG_INFO, 2};

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_init(const char *prog, enum log_level min, int fd)
{
	snprintf(g_log.prog, sizeof(g_log.prog), "%s", prog ? prog : "cloche");
	g_log.min = min;
	g_log.fd = fd;
}

/* jansson refuses text that is not valid UTF-8 (a child's output, a peer's
 * header), and json_pack() then fails as a whole, which lost the line.  Keep
 * such text with its non-ASCII bytes replaced by '?'. */
static json_t *log_string(const char *s)
{
	json_t *v = json_string(s);
	char *copy;

	if (v)
		return v;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	v = json_string(copy);
	free(copy);
	return v;
}

int log_level_parse(const char *s)
{
	for (size_t i = 0; i < ARRAY_LEN(level_names); i++)
		if (s && strcmp(s, level_names[i]) == 0)
			return (int)i;
	return -1;
}

void log_emit(enum log_level level, const char *msg, const char *fields, ...)
{
	int saved = errno;
	char ts[40];
	json_t *line;
	char *text;

	if (level < g_log.min)
		return;
	util_rfc3339(ts, sizeof(ts));
	line = json_pack("{s:s, s:s, s:o, s:o}", "ts", ts, "level", level_names[level],
			 "prog", log_string(g_log.prog), "msg", log_string(msg ? msg : ""));
	if (!line)
		goto out;
	if (fields) {
		json_error_t jerr;
		va_list ap;
		json_t *extra;

		va_start(ap, fields);
		extra = json_vpack_ex(&jerr, 0, fields, ap);
		va_end(ap);
		if (extra && json_is_object(extra))
			json_object_update(line, extra);
		else
			json_object_set_new(line, "log_format_error", json_string(jerr.text));
		json_decref(extra);
	}
	text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(line);
	if (text) {
		size_t n = strlen(text);
		text[n] = '\n'; /* overwrite the NUL: one write(2) per line */
		util_write_all(g_log.fd, text, n + 1);
		free(text);
	}
out:
	errno = saved;
}
