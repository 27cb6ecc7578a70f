/* Structured logging: one JSON object per line.
 *
 * Every line has "ts" (RFC 3339 UTC), "level", "prog" and "msg"; callers add
 * fields with a jansson json_pack() object format, so values are always
 * escaped correctly:
 *
 *	log_info("service started", "{s:s, s:i}", "svc", name, "pid", pid);
 *
 * The logger is the only global state common/ keeps.  A line is written with
 * one write(2), so lines from several processes sharing a pipe never mix. */
#ifndef CLOCHE_LOG_H
#define CLOCHE_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Sets the program name, the lowest level written and the fd written to
 * (normally 2).  Safe to call again, e.g. after parsing flags. */
void log_init(const char *prog, enum log_level min, int fd);

/* Parses "debug", "info", "warn" or "error"; returns -1 for anything else. */
int log_level_parse(const char *s);

/* Writes one line.  fields is a json_pack() format for an object ("{s:s}")
 * or NULL for none; a bad format is logged as a field, never dropped. */
void log_emit(enum log_level level, const char *msg, const char *fields, ...);

#define log_debug(...) log_emit(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_emit(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_emit(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_emit(LOG_ERROR, __VA_ARGS__)

#endif
