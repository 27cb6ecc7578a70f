/* The CLI's commands in one table: each row names a command, its group,
 * its handler and its line in `cloche --help`.  main() looks commands up
 * here and prints the help from here, so a new command is one row in
 * cli_cmd.c and a handler in its group's file. */
#ifndef CLOCHE_CLI_CMD_H
#define CLOCHE_CLI_CMD_H
#include "cli/cli_args.h"
#include "cli/cli_http.h"

#include <stdbool.h>
#include <stdio.h>

/* What users do with a command, and the file its handler is in.  The
 * table keeps a group's rows together: the help lists them in its order. */
enum cli_group {
	CLI_GROUP_SANDBOX, /* the lifecycle of a lease: cli_sandbox.c */
	CLI_GROUP_ACCESS,  /* URLs and client blocks into one: cli_access.c */
	CLI_GROUP_ADMIN,   /* nodes, templates, API keys: cli_admin.c */
	CLI_GROUP_SHARE,   /* links to a desktop: cli_share.c */
	CLI_GROUP_RECORD,  /* screen recordings and the action trace: cli_record.c */
};

/* Runs command cmd (as typed, so handlers shared by several rows can tell
 * them apart) with the arguments after it.  Returns the process exit code,
 * having printed the result or the error. */
typedef int cli_handler(struct cli_ctx *c, struct cli_args *a, const char *cmd);

struct cli_cmd {
	const char *name;
	enum cli_group group;
	cli_handler *run;
	/* What to type, the name first, for the help; lines after a '\n' are
	 * the same synopsis continued.  NULL: an alias, not in the help. */
	const char *synopsis;
	/* One line on what it does, or NULL; a '\n' continues it below. */
	const char *help;
	bool joined;  /* in the help, on the line of the row before, after " | " */
	bool no_args; /* given any argument, the name is taken for an unknown command */
};

/* The row of command name, or NULL when there is none. */
const struct cli_cmd *cli_cmd_find(const char *name);
/* The whole table; *n gets its length. */
const struct cli_cmd *cli_cmd_all(size_t *n);
/* Prints `cloche --help` to f: the global options, every command's
 * synopsis and help in table order, where the portal and key come from,
 * the exit codes. */
void cli_cmd_help(FILE *f);

#endif
