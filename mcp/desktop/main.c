/* mcp-desktop: an MCP server (Streamable HTTP, port 8100) that lets an
 * agent see and drive the sandbox's X display with the computer-use
 * vocabulary models are trained on.  Options come through common/cfg
 * (defaults < --config file < MCP_DESKTOP_* environment < flags). */
#include "actions.h"
#include "control.h"
#include "geom.h"
#include "screen.h"
#include "tools.h"

#include "appliance/x11/x11_clip.h"
#include "mcp/lib/mcp.h"

#include "common/cfg.h"
#include "common/daemon.h"
#include "common/log.h"
#include "common/util.h"
#include "common/version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct cfg_opt desk_opts[] = {
	{"port", CFG_INT, "8100", "port of the MCP endpoint (/mcp); 0 picks one"},
	{"listen", CFG_STR, NULL, "address to listen on (default: all)"},
	{"display", CFG_STR, NULL, "X display (default: $DISPLAY)"},
	{"allowed-hosts", CFG_STR, NULL,
	 "extra host names accepted in Host/Origin, comma-separated (exact or *.suffix)"},
	{"screen-size", CFG_STR, "",
	 "scale screenshots to this size and read coordinates in it: WxH, xga (1024x768), "
	 "wxga (1280x800), fwxga (1366x768), auto (the preset of the display's aspect ratio "
	 "when smaller) or native; default: the display's own size"},
	{"settle", CFG_DURATION, "300ms",
	 "pause between an action and the screenshot it returns"},
	{"action-screenshot", CFG_BOOL, "true",
	 "actions that change the screen answer with a screenshot"},
	{"png-level", CFG_INT, "1", "zlib level of screenshots, 0-9 (1: fast)"},
	{"pointer", CFG_BOOL, "true", "draw the pointer into screenshots and zooms"},
	{"clipboard", CFG_BOOL, "true",
	 "clipboard_get and clipboard_set work (--no-clipboard: they answer an error)"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
};

/* SIGTERM is mcp_server_run()'s. */
static const struct daemon_opts start = {
	.prog = "mcp-desktop",
	.opts = desk_opts,
	.nopts = ARRAY_LEN(desk_opts),
	.env_prefix = "MCP_DESKTOP",
	.usage_status = 2,
};

int main(int argc, char **argv)
{
	struct daemon d;
	struct cfg *c;
	struct desk_actions_opts ao = {0};
	struct desk_screen *scr = NULL;
	struct desk_actions *act = NULL;
	struct x11_clip *clip = NULL;
	struct mcp_server *srv = NULL;
	struct err e = ERR_INIT;
	long long port, level;
	int status = 1, w, h;

	daemon_start(&start, argc, argv, &d);
	c = d.cfg;
	port = cfg_int(c, "port");
	level = cfg_int(c, "png-level");
	if (port < 0 || port > 65535 || level < 0 || level > 9) {
		err_set(&e, 0, "bad --port or --png-level");
		daemon_die(2, "bad configuration", &e);
	}
	if (desk_size_parse(cfg_str(c, "screen-size"), 0, 0, &w, &h, &e) == -1)
		daemon_die(2, "bad configuration", &e);
	ao.settle_ms = (long)cfg_duration_ms(c, "settle");
	ao.screenshot_after = cfg_bool(c, "action-screenshot");
	ao.png_level = (int)level;
	ao.pointer = cfg_bool(c, "pointer");

	scr = desk_screen_open(cfg_str(c, "display"), &e);
	if (!scr)
		goto out;
	desk_screen_size(scr, &w, &h);
	/* Again with the display's size, which `auto` needs. */
	if (desk_size_parse(cfg_str(c, "screen-size"), w, h, &ao.model_w, &ao.model_h, &e) == -1)
		goto out;
	desk_control_init(cfg_str(c, "display"));
	ao.model_auto = cfg_str(c, "screen-size") && strcasecmp(cfg_str(c, "screen-size"), "auto") == 0;
	act = desk_actions_new(scr, &ao, &e);
	if (!act)
		goto out;
	/* The sandbox's switch (CLOCHE_CLIPBOARD, shared with cloche-vnc) and
	 * ours must both allow it. */
	if (cfg_bool(c, "clipboard") && x11_clip_env_enabled() &&
	    !(clip = x11_clip_open(cfg_str(c, "display"), 0, 0, &e)))
		goto out;
	srv = mcp_server_new(&(struct mcp_server_opts){.name = "cloche-desktop",
						      .version = version_string(),
						      .instructions = "Computer use on a Linux "
								      "desktop: take a screenshot "
								      "first, then act on what "
								      "it shows.",
						      .listen = cfg_str(c, "listen"),
						      .port = (int)port,
						      .allowed_hosts = cfg_str(c, "allowed-hosts")},
			     &e);
	if (!srv || desk_tools_register(srv, act, clip, &e) == -1)
		goto out;
	desk_screen_size(scr, &w, &h);
	desk_actions_model_size(act, &ao.model_w, &ao.model_h);
	log_info("mcp-desktop started", "{s:i, s:i, s:i, s:i, s:i, s:I, s:b, s:b, s:b, s:s}", "port",
		 mcp_server_port(srv), "width", w, "height", h, "model_width", ao.model_w,
		 "model_height", ao.model_h, "settle_ms", (json_int_t)ao.settle_ms,
		 "action_screenshot", ao.screenshot_after, "clipboard", clip != NULL, "pointer",
		 ao.pointer, "version", version_string());
	status = mcp_server_run(srv) == 0 ? 0 : 1;
out:
	if (status && e.msg[0])
		log_error("mcp-desktop failed", "{s:s}", "error", e.msg);
	mcp_server_free(srv);
	desk_tools_release();
	x11_clip_close(clip);
	desk_actions_free(act);
	desk_screen_close(scr);
	daemon_end(&d);
	return status;
}
