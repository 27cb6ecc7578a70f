/* What the CLI prints: tables that fit a terminal, relative times, the
 * MCP client configuration block (pure functions over JSON, unit-tested),
 * and the few writers every command shares: an error line on stderr, the
 * portal's JSON or a table on stdout. */
#ifndef CLI_OUT_H
#define CLI_OUT_H
#include "common/buf.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* "in 9m", "3h ago", "now": the RFC 3339 time iso relative to now_ms
 * (epoch ms); "-" for NULL or unparsable. */
void cli_reltime(const char *iso, long long now_ms, char *out, size_t len);
/* Renders rows (an array of arrays of strings) under the header names as
 * left-aligned columns separated by two spaces. */
int cli_table(struct buf *b, const char *const *header, size_t ncol, json_t *rows);
/* The block an MCP client (Claude Desktop, Cursor, the inspector) takes for
 * the sandbox's three servers: {"mcpServers": {"cloche-shell": {"type":
 * "http", "url", "headers": {"Authorization": "Bearer <token>"}}, ...}}.
 * New reference, or NULL when the sandbox has no URLs or token. */
json_t *cli_mcp_config(const json_t *sandbox);
/* The process exit code for an HTTP status (see cli/main.c). */
int cli_exit_code(long status);
/* The string member k of o, or "-" when it is absent or not a string.
 * Borrowed from o. */
const char *cli_str(const json_t *o, const char *k);

/* Appends p[0..n) to b with every byte a terminal would act on written
 * visibly instead: C0 controls but newline and tab as \xHH (ESC, BEL, CR,
 * backspace...), DEL as \x7f, and the C1 controls in UTF-8 (U+0080-U+009F,
 * CSI among them) as \u0080-\u009f.  Text that reached the CLI from inside
 * a sandbox (a trace, a help reason) is the agent's: it must not move the
 * cursor, retitle the window or rewrite what the operator sees.  0 or -1. */
int cli_term_escape(struct buf *b, const char *p, size_t n);
/* Writes p[0..n) to f: as it is when f is not a terminal (a file or a
 * pipe gets the exact bytes), through cli_term_escape when it is.  0, or
 * -1 with errno set. */
int cli_term_write(FILE *f, const char *p, size_t n);

/* Prints `cloche: <message>` and a newline on stderr.  Returns code, so a
 * failure site reads `return cli_fail(2, ...)`. */
int cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints v on stdout as indented JSON in its own key order, and a newline
 * (cli_term_write); nothing when it cannot be serialised. */
void cli_print_json(const json_t *v);
/* Prints rows (an array of arrays of n strings) under the header names h
 * as a table on stdout (cli_table, up to 16 MiB; cli_term_write). */
void cli_print_rows(const char *const *h, size_t n, json_t *rows);

#endif
