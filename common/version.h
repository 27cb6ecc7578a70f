/* The version of cloche: one number for every program of the tree, read
 * from the file VERSION at the top when the tree is built.  It is what
 * `--version` prints, what each daemon's start-up log line and health
 * answer carry, and what the MCP servers give as serverInfo.version, so
 * that a log, a probe or a client can tell which build answered.
 *
 * Only common/version.c sees the number (-DCLOCHE_VERSION, from
 * common/module.mk): a new VERSION rebuilds that one object and relinks. */
#ifndef CLOCHE_VERSION_H
#define CLOCHE_VERSION_H

/* The version, e.g. "0.1.0": MAJOR.MINOR.PATCH with an optional
 * "-PRERELEASE" (semver 2.0's core and pre-release; tests/unit/common
 * checks the form).  A static string: never NULL, never freed. */
const char *version_string(void);

/* Writes "PROG VERSION\n" to stdout and flushes it: the answer of every
 * program to --version (prog is the program's name, e.g. "cloche-portal"). */
void version_print(const char *prog);

#endif
