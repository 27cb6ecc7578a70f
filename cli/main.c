/* cloche: the command-line client of the cloche portal (docs/cli.md).
 *
 *	cloche [--url URL] [--api-key KEY] [--json] [--timeout S] COMMAND [ARGS]
 *
 * Human tables by default, the server's JSON with --json.  Exit codes:
 * 0 ok, 1 other error (5xx...), 2 usage (bad flags or a request the portal
 * refused as malformed), 3 not found, 4 not allowed (401/403), 5 conflict
 * (409), 6 unavailable (503, or acquire's wait ran out), 7 cannot reach the
 * portal.  The API key is never printed, also not in errors.
 *
 * This file reads the global options and hands the rest to the command's
 * handler from the table in cli_cmd.c; the commands live in one file per
 * group (cli_sandbox, cli_access, cli_admin, cli_share, cli_record) over
 * cli_http (requests) and cli_out (what is printed). */
#include "cli/cli_cmd.h"
#include "cli/cli_config.h"
#include "cli/cli_out.h"

#include "common/version.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct cli_ctx ctx = {.timeout_s = 60};
	char *rest[256];
	struct cli_args a = {0};
	const struct cli_cmd *row;
	const char *cmd = NULL;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *val = NULL;

		if (!cmd && (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0 || strcmp(s, "help") == 0)) {
			cli_cmd_help(stdout);
			return 0;
		}
		if (!cmd && strcmp(s, "--version") == 0) {
			version_print("cloche");
			return 0;
		}
		if (strcmp(s, "--json") == 0) {
			ctx.json = true;
			continue;
		}
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
			cli_cmd_help(stdout);
			return 0;
		}
		for (int k = 0; k < 3; k++) {
			static const char *const names[] = {"--url", "--api-key", "--timeout"};
			size_t n = strlen(names[k]);

			if (strncmp(s, names[k], n) == 0 && (s[n] == '=' || s[n] == '\0')) {
				if (s[n] == '=')
					val = s + n + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else
					return cli_fail(2, "%s needs a value", names[k]);
				if (k == 0)
					snprintf(ctx.cfg.url, sizeof(ctx.cfg.url), "%s", val);
				else if (k == 1)
					snprintf(ctx.cfg.key, sizeof(ctx.cfg.key), "%s", val);
				else if (!cli_whole(val, 1, 86400, &ctx.timeout_s))
					return cli_bad_number("--timeout", val);
			}
		}
		if (val)
			continue;
		if (!cmd) {
			if (s[0] == '-')
				return cli_fail(2, "unknown option `%s` (cloche --help)", s);
			cmd = s;
		} else if (a.n < (int)(sizeof(rest) / sizeof(rest[0]))) {
			rest[a.n++] = argv[i];
		}
	}
	a.v = rest;
	if (!cmd) {
		cli_cmd_help(stderr);
		return 2;
	}
	cli_config_load(&ctx.cfg, NULL, NULL);
	row = cli_cmd_find(cmd);
	if (!row || (row->no_args && a.n > 0))
		rc = cli_fail(2, "unknown command `%s` (cloche --help)", cmd);
	else
		rc = row->run(&ctx, &a, cmd);
	explicit_bzero(ctx.cfg.key, sizeof(ctx.cfg.key));
	return rc;
}
