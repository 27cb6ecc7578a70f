/* The access commands (vnc, mcp-config); see cli_access.h.  The URLs come
 * from the portal's view of the sandbox; nothing is built here. */
#include "cli/cli_access.h"
#include "cli/cli_out.h"
#include "cli/cli_sandbox.h"

#include <stdio.h>

int cli_access_vnc(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *sb = NULL;
	const char *u;
	int rc = cli_one_id(a, cmd);

	if (rc || (rc = cli_sandbox_get(c, a->v[0], &sb)))
		goto out;
	u = json_string_value(json_object_get(json_object_get(sb, "urls"), "novnc"));
	if (!u || !json_object_get(sb, "token"))
		rc = cli_fail(5, "%s is %s: no desktop to open", a->v[0], cli_str(sb, "state"));
	else
		puts(u);
out:
	json_decref(sb);
	return rc;
}

int cli_access_mcp_config(struct cli_ctx *c, struct cli_args *a, const char *cmd)
{
	json_t *sb = NULL, *m;
	int rc = cli_one_id(a, cmd);

	if (rc || (rc = cli_sandbox_get(c, a->v[0], &sb)))
		goto out;
	m = cli_mcp_config(sb);
	if (!m)
		rc = cli_fail(5, "%s is %s: no MCP servers to reach", a->v[0], cli_str(sb, "state"));
	else
		cli_print_json(m);
	json_decref(m);
out:
	json_decref(sb);
	return rc;
}
