/* Daemon configuration from defaults, a file, the environment and flags.
 *
 * A program declares its options once, in a table; cfg_load() then fills
 * them in, each source overriding the one before:
 *
 *	defaults < config file < environment < command-line flags
 *
 * The file (chosen with `--config FILE` or <PREFIX>_CONFIG) holds
 * `name = value` lines, `#` comment lines and blank lines; an unknown name
 * is an error that cites file:line.  The environment variable of option
 * `health-port` with prefix "CLOCHE" is CLOCHE_HEALTH_PORT.  Flags are
 * `--name=value`, `--name value`, and for booleans `--name` / `--no-name`;
 * `--help` prints a help text generated from the table, and `--version` is
 * reported to the caller, which knows the version.  In file keys and
 * flags, '_' and '-' are interchangeable.  Values are checked as they are
 * read, and errors say where the bad value came from:
 * "--health-port: `abc` is not an integer".
 *
 *	static const struct cfg_opt opts[] = {
 *		{"listen", CFG_STR, "127.0.0.1:8080", "address to serve on"},
 *		{"idle-timeout", CFG_DURATION, "5m", "hibernate after this long idle"},
 *	};
 *	struct cfg *c = cfg_new(opts, ARRAY_LEN(opts), "CLOCHE");
 *	int r = cfg_load(c, argc, argv, &e);	// 1: help printed, 2: --version
 *	long long idle_ms = cfg_duration_ms(c, "idle-timeout");
 */
#ifndef CLOCHE_CFG_H
#define CLOCHE_CFG_H

#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cfg_type {
	CFG_STR,
	CFG_INT,      /* decimal, signed 64-bit */
	CFG_BOOL,     /* true/false, yes/no, on/off, 1/0 */
	CFG_DURATION, /* "500ms", "5s", "2m", "1h", "0"; read in milliseconds */
	CFG_SIZE,     /* bytes: "4096", "64K", "64M", "2G", "1T" (powers of 1024) */
};

struct cfg_opt {
	const char *name; /* lower case with '-', e.g. "health-port" */
	enum cfg_type type;
	const char *def;  /* default in the same syntax as a flag; NULL for none */
	const char *help; /* one line for --help */
};

struct cfg;

/* Creates a configuration for the n options of opts (which must outlive it
 * and may not use the names "config", "help" or "version").  env_prefix names the
 * environment variables ("CLOCHE" -> CLOCHE_<NAME>); NULL disables them.
 * Returns NULL only when out of memory.  Free with cfg_free(). */
struct cfg *cfg_new(const struct cfg_opt *opts, size_t n, const char *env_prefix);

/* Frees c; NULL is allowed. */
void cfg_free(struct cfg *c);

/* Reads every source in order of precedence.  argv[0] is the program name;
 * arguments that are not flags, and all those after "--", are kept for
 * cfg_args().  Returns 0 when loaded, 1 when --help was printed to stdout
 * (the program should exit 0), 2 when --version was given and not --help
 * (nothing printed: the program prints its version and exits 0), or -1 with
 * e naming the source and the problem.  Call it once per cfg. */
int cfg_load(struct cfg *c, int argc, char **argv, struct err *e);

/* Writes the help text for --help to out: usage line, then one entry per
 * option with its type, help, default and environment variable. */
void cfg_help(const struct cfg *c, const char *prog, FILE *out);

/* Typed values by option name.  Asking for a name that is not in the table,
 * or with a getter of the wrong type, is a programming error: it aborts.
 * cfg_str() returns NULL for an option with no default that was never set;
 * the others return 0 / false then.  Pointers stay valid until cfg_free(). */
const char *cfg_str(const struct cfg *c, const char *name);
long long cfg_int(const struct cfg *c, const char *name);
bool cfg_bool(const struct cfg *c, const char *name);
long long cfg_duration_ms(const struct cfg *c, const char *name);
unsigned long long cfg_size(const struct cfg *c, const char *name);

/* Where the value of name came from: "default", "FILE:LINE", the name of
 * the environment variable, "--flag", or "unset"; NULL for an unknown name.
 * For diagnostics such as a start-up log line. */
const char *cfg_source(const struct cfg *c, const char *name);

/* Parses a duration as CFG_DURATION options take it ("500ms", "5s", "2m",
 * "1h", "7d", "0") into *ms.  0, or -1 with e. */
int cfg_parse_duration(const char *s, long long *ms, struct err *e);

/* Calls fn(name, n, ud, e) for each `name=N` of a comma-separated list
 * such as "desktop=2,other=1" (the value of option opt, which errors name).
 * N must be a whole number in min..max.  Returns 0, or -1 with e set here
 * (malformed entry, N out of range) or by fn (when fn returns -1). */
int cfg_each_count(const char *list, const char *opt, long min, long max,
		   int (*fn)(const char *name, long n, void *ud, struct err *e), void *ud,
		   struct err *e);

/* The arguments left after flags, NULL-terminated, borrowed from argv;
 * *n (when not NULL) receives their count. */
char *const *cfg_args(const struct cfg *c, size_t *n);

#endif
