/* The browser_* tools; see tools.h.  Each handler validates its arguments
 * (a wrong type is a 400, which the MCP library answers as JSON-RPC
 * -32602), takes the browser lock, acts through DevTools, and reports a
 * failure the model can act on as an isError result.  Actions answer with
 * the page state afterwards, as playwright-mcp does, so an agent rarely
 * needs a separate snapshot call.
 *
 * This file registers the tools and runs their calls; the handlers are in
 * the tl_*.c files by what they do (tools_int.h), over tl_base.c. */
#include "mcp/browser/tools.h"
#include "mcp/browser/tools_int.h"

#include "common/json.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tl_bound {
	const struct tl_def *def;
	struct tools *owner;
};

struct tools {
	struct browser *b;
	struct tools_opts o;
	struct tl_bound *bound;
};

static bool tl_cancelled(void *ud)
{
	return mcp_call_cancelled(ud);
}

/* --- the table ------------------------------------------------------------------ */

/* The groups' tables (tools_int.h). */
static const struct tl_def *(*const tl_groups[])(size_t *n) = {
	tl_nav_defs, tl_page_defs, tl_mouse_defs, tl_form_defs, tl_wait_defs,
};

/* The order of tools/list, kept here apart from the groups: moving a tool
 * to another file does not move it in the list the clients show. */
static const char *const tl_order[] = {
	"browser_navigate",
	"browser_navigate_back",
	"browser_snapshot",
	"browser_find",
	"browser_click",
	"browser_hover",
	"browser_type",
	"browser_press_key",
	"browser_select_option",
	"browser_fill_form",
	"browser_wait_for",
	"browser_take_screenshot",
	"browser_evaluate",
	"browser_console_messages",
	"browser_tabs",
	"browser_resize",
	"browser_handle_dialog",
	"browser_drag",
	"browser_close",
	"browser_file_upload",
	"browser_network_requests",
	"browser_pdf_save",
	"browser_mouse_move_xy",
	"browser_mouse_click_xy",
	"browser_mouse_drag_xy",
};

/* The tool called name in the groups' tables, or NULL. */
static const struct tl_def *tl_by_name(const char *name)
{
	for (size_t g = 0; g < ARRAY_LEN(tl_groups); g++) {
		size_t n;
		const struct tl_def *d = tl_groups[g](&n);

		for (size_t i = 0; i < n; i++)
			if (strcmp(d[i].name, name) == 0)
				return &d[i];
	}
	return NULL;
}

/* The i-th tool of tools/list, NULL past the end. */
static const struct tl_def *tl_nth(size_t i)
{
	return i < ARRAY_LEN(tl_order) ? tl_by_name(tl_order[i]) : NULL;
}

/* Whether tl_order names every tool of the groups' tables: -1 with e set
 * when one is left out of tools/list or is named without a handler (a name
 * given twice the server refuses at registration). */
static int tl_check_order(struct err *e)
{
	size_t all = 0;

	for (size_t g = 0; g < ARRAY_LEN(tl_groups); g++) {
		size_t n;

		tl_groups[g](&n);
		all += n;
	}
	for (size_t i = 0; i < ARRAY_LEN(tl_order); i++)
		if (!tl_by_name(tl_order[i]))
			return err_set(e, 0, "tools: %s is in no table", tl_order[i]);
	if (all != ARRAY_LEN(tl_order))
		return err_set(e, 0, "tools: %zu in the tables, %zu in the order", all, ARRAY_LEN(tl_order));
	return 0;
}

const char *tools_schema(const char *name)
{
	const struct tl_def *d = tl_by_name(name);

	return d ? d->schema : NULL;
}

static int tl_dispatch(struct mcp_call *call, const json_t *args, struct mcp_result *res,
		       struct err *e)
{
	const struct tl_bound *bd = mcp_call_ud(call);
	struct tools *owner = bd->owner;
	struct tl t = {owner->b, {tl_cancelled, call}, call, &owner->o};
	uint64_t t0 = util_now_ms();
	AUTOJSON json_t *none = json_object();
	int rc;

	if (args && !json_is_object(args))
		return err_http(e, 400, "arguments must be a JSON object");
	if (br_lock(t.b, &t.cx, e) == -1)
		return mcp_result_error(res, "%s", e->msg) == -1 ? -1 : 0;
	char type[16], msg[512];
	if (!bd->def->during_dialog && br_dialog(t.b, type, sizeof(type), msg, sizeof(msg))) {
		br_unlock(t.b);
		return mcp_result_error(res, "A dialog is open in the page (%s: \"%s\"). Answer it with "
				       "browser_handle_dialog (accept, and promptText for a prompt) first.",
				       type, msg) == -1 ? -1 : 0;
	}
	rc = bd->def->fn(&t, args ? args : none, res, e);
	br_unlock(t.b);
	log_debug("tool call", "{s:s, s:i, s:I}", "tool", bd->def->name, "rc", rc,
		  "ms", (json_int_t)(util_now_ms() - t0));
	if (rc == 0)
		return 0;
	if (e->http_status == 400)
		return -1;
	/* a failure the model can read and act on */
	mcp_result_error(res, "%s", e->msg);
	return 0;
}

struct tools *tools_register(struct mcp_server *s, struct browser *b, const struct tools_opts *o,
			     struct err *e)
{
	struct tools *t;
	size_t n = ARRAY_LEN(tl_order);

	if (tl_check_order(e) == -1)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t || !(t->bound = calloc(n, sizeof(*t->bound)))) {
		free(t);
		err_set(e, ENOMEM, "tools");
		return NULL;
	}
	t->b = b;
	t->o = *o;
	for (size_t i = 0; i < n; i++) {
		const struct tl_def *d = tl_nth(i);
		struct mcp_tool tool = {d->name, d->title, d->desc, d->schema, NULL, d->read_only,
					d->destructive, tl_dispatch, &t->bound[i]};
		t->bound[i] = (struct tl_bound){d, t};
		if (mcp_server_add_tool(s, &tool, e) == -1) {
			err_wrap(e, "register %s", d->name);
			tools_free(t);
			return NULL;
		}
	}
	return t;
}

void tools_free(struct tools *t)
{
	if (!t)
		return;
	free(t->bound);
	free(t);
}
