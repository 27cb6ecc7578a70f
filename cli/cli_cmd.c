/* The command table and the help it prints; see cli_cmd.h.  The help's
 * layout: two spaces, the synopsis (its continuation lines under the
 * first argument), and the help from column HELP_COL, on the next line
 * when the synopsis reaches that far. */
#include "cli/cli_cmd.h"
#include "cli/cli_access.h"
#include "cli/cli_admin.h"
#include "cli/cli_record.h"
#include "cli/cli_sandbox.h"
#include "cli/cli_share.h"

#include <string.h>

#define HELP_COL 41

static const struct cli_cmd cmds[] = {
	{.name = "acquire", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_acquire,
	 .synopsis = "acquire [--template T] [--ttl S] [--wait S] [--persist] [--memory MB] "
		     "[--cpus N]\n"
		     "[--pids N] [--egress none|HOST,HOST...] [--label K=V]... [--meta K=V]...\n"
		     "[--no-clipboard] [--resize] [--record]\n"
		     "[--idempotency-key K]",
	 .help = "lease a sandbox (waits until it is ready)"},
	{.name = "list", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_list,
	 .synopsis = "list [--state S] [--label K=V] [--template T] [--history] [--all]",
	 .help = "live sandboxes (--history: ended ones too;\n--all: every page)"},
	{.name = "ls", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_list},
	{.name = "get", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_show,
	 .synopsis = "get ID", .help = "one sandbox"},
	{.name = "events", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_events,
	 .synopsis = "events ID", .help = "its state changes"},
	{.name = "release", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_action,
	 .synopsis = "release ID...", .help = "end leases (the sandboxes are destroyed)"},
	{.name = "keepalive", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_action,
	 .synopsis = "keepalive ID [--ttl S]", .help = "extend a lease"},
	{.name = "hibernate", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_action,
	 .synopsis = "hibernate ID", .help = "checkpoint it and stop it (state kept)"},
	{.name = "wake", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_action,
	 .synopsis = "wake ID", .help = "bring it back; renews the lease"},
	{.name = "fork", .group = CLI_GROUP_SANDBOX, .run = cli_sandbox_action,
	 .synopsis = "fork ID [--count N]", .help = "N copies (1..8) with their own tokens"},

	{.name = "vnc", .group = CLI_GROUP_ACCESS, .run = cli_access_vnc,
	 .synopsis = "vnc ID", .help = "the noVNC URL"},
	{.name = "mcp-config", .group = CLI_GROUP_ACCESS, .run = cli_access_mcp_config,
	 .synopsis = "mcp-config ID", .help = "the mcpServers block for an MCP client"},

	{.name = "nodes", .group = CLI_GROUP_ADMIN, .run = cli_admin_nodes,
	 .synopsis = "nodes", .no_args = true},
	{.name = "templates", .group = CLI_GROUP_ADMIN, .run = cli_admin_templates,
	 .synopsis = "templates", .joined = true, .no_args = true},
	{.name = "keys", .group = CLI_GROUP_ADMIN, .run = cli_admin_keys,
	 .synopsis = "keys create NAME [--role user|admin] | keys list | keys revoke ID"},

	{.name = "share", .group = CLI_GROUP_SHARE, .run = cli_share_create,
	 .synopsis = "share ID [--mode view|control] [--ttl S] [--label L]",
	 .help = "a link to its desktop (view-only by default)"},
	{.name = "shares", .group = CLI_GROUP_SHARE, .run = cli_share_list,
	 .synopsis = "shares ID", .help = "its share links"},
	{.name = "unshare", .group = CLI_GROUP_SHARE, .run = cli_share_revoke,
	 .synopsis = "unshare ID SHARE", .help = "revoke one", .joined = true},

	{.name = "record", .group = CLI_GROUP_RECORD, .run = cli_record_start,
	 .synopsis = "record ID [--stop REC]", .help = "start recording its screen (or stop REC)"},
	{.name = "recordings", .group = CLI_GROUP_RECORD, .run = cli_record_list,
	 .synopsis = "recordings ID", .help = "its recordings"},
	{.name = "download", .group = CLI_GROUP_RECORD, .run = cli_record_download,
	 .synopsis = "download ID REC [-o FILE]", .help = "a recording's MP4 (default REC.mp4)"},
	{.name = "trace", .group = CLI_GROUP_RECORD, .run = cli_record_trace,
	 .synopsis = "trace ID", .help = "its action trace (JSON lines) on stdout"},
};

static const char help_head[] =
	"usage: cloche [--url URL] [--api-key KEY] [--json] [--timeout S] COMMAND [ARGS]\n"
	"\n"
	"commands:\n";

static const char help_tail[] =
	"\n"
	"The portal and key come from --url/--api-key, else CLOCHE_URL/CLOCHE_API_KEY,\n"
	"else ~/.config/cloche/config, else /var/lib/cloche/aio.env (written by make run).\n"
	"exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 not allowed, 5 conflict,\n"
	"            6 unavailable (or the wait ran out), 7 cannot reach the portal\n";

const struct cli_cmd *cli_cmd_find(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

const struct cli_cmd *cli_cmd_all(size_t *n)
{
	*n = sizeof(cmds) / sizeof(cmds[0]);
	return cmds;
}

/* Prints text, each line after a '\n' indented by indent spaces.  Returns
 * the width of the last line, counting col for the first. */
static int print_lines(FILE *f, const char *text, int col, int indent)
{
	for (const char *nl; (nl = strchr(text, '\n')); text = nl + 1) {
		fprintf(f, "%.*s\n%*s", (int)(nl - text), text, indent, "");
		col = indent;
	}
	fputs(text, f);
	return col + (int)strlen(text);
}

/* One line of the help: row r's synopsis, the joined rows' after " | ",
 * then their help.  Returns the number of rows it covered. */
static size_t help_line(FILE *f, const struct cli_cmd *r, size_t left)
{
	int col = 2;
	size_t n = 0;
	const char *sep = "";

	fputs("  ", f);
	do {
		if (n) {
			fputs(" | ", f);
			col += 3;
		}
		col = print_lines(f, r[n].synopsis, col, 2 + (int)strlen(r[n].name) + 1);
	} while (++n < left && r[n].joined);
	for (size_t i = 0; i < n; i++) {
		if (!r[i].help)
			continue;
		if (!*sep && col + 2 > HELP_COL) { /* no room: under it, in the column */
			fputc('\n', f);
			col = 0;
		}
		if (!*sep)
			fprintf(f, "%*s", HELP_COL - col, "");
		fputs(sep, f);
		print_lines(f, r[i].help, HELP_COL, HELP_COL);
		sep = "; ";
	}
	fputc('\n', f);
	return n;
}

void cli_cmd_help(FILE *f)
{
	size_t n = sizeof(cmds) / sizeof(cmds[0]);

	fputs(help_head, f);
	for (size_t i = 0; i < n;) {
		if (!cmds[i].synopsis)
			i++;
		else
			i += help_line(f, &cmds[i], n - i);
	}
	fputs(help_tail, f);
}
