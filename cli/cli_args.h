/* A command's arguments and the helpers that read them: options given as
 * "--name V" or "--name=V", whole numbers in a range, KEY=VALUE pairs, a
 * lone sandbox id.  Every helper that rejects something has printed why
 * (`cloche: --ttl: `soon` is not a whole number in range`) and hands back
 * exit code 2, the usage error. */
#ifndef CLOCHE_CLI_ARGS_H
#define CLOCHE_CLI_ARGS_H
#include <jansson.h>
#include <stdbool.h>

/* What follows the command name on the command line, the global options
 * taken out.  Handlers walk it with i. */
struct cli_args {
	int n;    /* how many */
	char **v; /* borrowed from argv */
	int i;    /* the one being read */
};

/* The value of option name when a->v[a->i] is "--name V" (a->i then moves
 * onto V) or "--name=V"; NULL when it is another argument.  When the value
 * is missing, prints so, sets *bad and returns NULL.  Borrowed from argv. */
const char *cli_opt_val(struct cli_args *a, const char *name, bool *bad);
/* Parses s as a whole decimal number in lo..hi into *out.  True when it is
 * one; false (nothing printed, *out untouched) otherwise. */
bool cli_whole(const char *s, long lo, long hi, long *out);
/* Prints that option opt's value v is not a whole number in range.
 * Returns 2. */
int cli_bad_number(const char *opt, const char *v);
/* Sets obj[KEY] to the string VALUE for kv "KEY=VALUE" (KEY non-empty and
 * under 256 bytes).  0, or 2 with the complaint printed, naming opt. */
int cli_kv_into(json_t *obj, const char *opt, const char *kv);
/* Checks that a holds exactly one argument, not an option: a sandbox id
 * for command cmd.  0, or 2 with `usage: cloche CMD ID` printed. */
int cli_one_id(const struct cli_args *a, const char *cmd);

#endif
