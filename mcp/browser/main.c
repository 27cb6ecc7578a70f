/* mcp-browser: the MCP server (port 7999) that drives the sandbox's visible
 * Chromium, the one people watch over VNC.  It starts Chromium itself with
 * the command line after "--" plus --remote-debugging-pipe, waits until
 * DevTools answers and the window is painted, and only then serves and
 * opens its readiness socket (cloche-init's "unix" probe): so "ready" in
 * health means the browser is on screen and drivable.  A socket rather
 * than a file: one left behind by a killed run refuses connections, so it
 * can never report a new run ready early.  When Chromium dies, mcp-browser
 * exits and init restarts the pair, which keeps restart policy and health
 * in one place.
 *
 *	mcp-browser [--port 7999] -- /usr/bin/chromium --no-sandbox ... URL */
#include "mcp/browser/browser.h"
#include "mcp/browser/cdp.h"
#include "mcp/browser/chrome.h"
#include "mcp/browser/tools.h"
#include "mcp/lib/mcp.h"

#include "common/cfg.h"
#include "common/daemon.h"
#include "common/log.h"
#include "common/util.h"
#include "common/version.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const struct cfg_opt opts[] = {
	{"port", CFG_INT, "7999", "MCP port (Streamable HTTP at /mcp)"},
	{"listen", CFG_STR, NULL, "address to listen on (default: all)"},
	{"allowed-hosts", CFG_STR, NULL, "extra Host/Origin names accepted (comma-separated, *.suffix)"},
	{"start-url", CFG_STR, "about:blank", "page browser_close leaves open"},
	{"window-probe", CFG_STR,
	 "/opt/cloche/bin/cloche-xprobe --class chromium --min-width 640 --min-height 480 --min-colours 8",
	 "command that exits 0 once the window is painted (\"\" to skip)"},
	{"start-timeout", CFG_DURATION, "90s", "bound on DevTools answering and the window being painted"},
	{"cdp-timeout", CFG_DURATION, "30s", "bound on one DevTools command"},
	{"nav-timeout", CFG_DURATION, "30s", "bound on a navigation reaching its load event"},
	{"max-snapshot", CFG_SIZE, "40000", "characters of one snapshot outline"},
	{"max-result", CFG_SIZE, "100000", "characters of one browser_evaluate answer"},
	{"max-message", CFG_SIZE, "64M", "largest DevTools message accepted"},
	{"snapshot-after-action", CFG_BOOL, "true", "actions answer with the page snapshot"},
	{"ready-socket", CFG_STR, "/tmp/.mcp-browser-ready",
	 "unix socket opened once serving, for init's readiness probe (\"\" for none)"},
	{"log-level", CFG_STR, "info", "debug, info, warn or error"},
};

/* SIGTERM is mcp_server_run()'s; the arguments are the browser's command. */
static const struct daemon_opts start = {
	.prog = "mcp-browser",
	.opts = opts,
	.nopts = ARRAY_LEN(opts),
	.env_prefix = "CLOCHE_BROWSER",
	.args = true,
	.usage_status = 2,
};

static atomic_bool chrome_gone;
static atomic_bool serving;
static atomic_bool stopping;

/* DevTools events go to the browser state; the end of the connection means
 * Chromium died: stop serving so init restarts us with a new one. */
static void on_event(void *ud, const char *session, const char *method, json_t *params)
{
	browser_on_event(ud, session, method, params);
	if (!method && !atomic_load(&stopping)) {
		atomic_store(&chrome_gone, true);
		log_warn("the browser's DevTools connection closed; exiting so init restarts the browser", NULL);
		if (atomic_load(&serving))
			kill(getpid(), SIGTERM);
	}
}

static void *ready_accept(void *arg)
{
	int fd = (int)(intptr_t)arg;

	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0)
			close(c);
		else if (errno != EINTR && errno != ECONNABORTED)
			return NULL;
	}
}

/* Binds path (replacing a leftover) and answers every connection.  The
 * thread lives until exit; the socket closes with the process. */
static int ready_open(const char *path, struct err *e)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	pthread_t t;
	int fd;

	if (!path || !path[0])
		return 0;
	if (strlen(path) >= sizeof(a.sun_path))
		return err_set(e, 0, "ready socket path `%s` is too long", path);
	strcpy(a.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return err_set(e, errno, "ready socket");
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == -1 || listen(fd, 16) == -1) {
		close(fd);
		return err_set(e, errno, "bind ready socket `%s`", path);
	}
	if (pthread_create(&t, NULL, ready_accept, (void *)(intptr_t)fd) != 0) {
		close(fd);
		return err_set(e, 0, "ready socket thread");
	}
	pthread_detach(t);
	return 0;
}

int main(int argc, char **argv)
{
	struct daemon d;
	struct cfg *c;
	struct err e = ERR_INIT;
	struct chrome ch = {-1, -1, -1};
	struct cdp *cdp = NULL;
	struct browser *b = NULL;
	struct mcp_server *srv = NULL;
	struct tools *tools = NULL;
	int rc = 1;
	size_t nargs;

	daemon_start(&start, argc, argv, &d);
	c = d.cfg;
	char *const *cmd = cfg_args(c, &nargs);
	if (nargs == 0) {
		err_set(&e, 0, "give the browser's command line after --, e.g. -- /usr/bin/chromium "
			       "--no-sandbox URL");
		daemon_die(2, "bad configuration", &e);
	}

	/* Before any thread: the fork in chrome_launch() stays simple. */
	if (chrome_launch(cmd, &ch, &e) == -1) {
		log_error("cannot start the browser", "{s:s}", "error", e.msg);
		goto out;
	}
	struct browser_opts bo = {(unsigned)cfg_duration_ms(c, "cdp-timeout"),
				  (unsigned)cfg_duration_ms(c, "nav-timeout"), cfg_str(c, "start-url")};
	uint64_t t0 = util_now_ms();
	unsigned start_ms = (unsigned)cfg_duration_ms(c, "start-timeout");
	if (!(b = browser_new(&bo)) ||
	    !(cdp = cdp_new(ch.wfd, ch.rfd, cfg_size(c, "max-message"), on_event, b, &e))) {
		log_error("cannot start the DevTools client", "{s:s}", "error", b ? e.msg : "out of memory");
		goto out;
	}
	ch.wfd = ch.rfd = -1; /* the client owns them now */
	if (browser_start(b, cdp, start_ms, &e) == -1) {
		log_error("the browser's DevTools did not come up", "{s:s}", "error", e.msg);
		goto out;
	}
	log_info("DevTools answers", "{s:I}", "ms", (json_int_t)(util_now_ms() - t0));
	uint64_t spent = util_now_ms() - t0;
	if (chrome_wait_window(&ch, cfg_str(c, "window-probe"),
			       spent < start_ms ? (unsigned)(start_ms - spent) : 1, &e) == -1) {
		log_error("the browser window did not appear", "{s:s}", "error", e.msg);
		goto out;
	}
	log_info("browser window painted", "{s:I}", "ms", (json_int_t)(util_now_ms() - t0));

	struct mcp_server_opts so = {
		.name = "cloche-browser",
		.version = version_string(),
		.instructions = "Drives the sandbox's visible Chromium (the one on its VNC screen). "
				"Take a browser_snapshot to get element refs, then act with them; "
				"refs go stale when the page changes.",
		.listen = cfg_str(c, "listen"),
		.port = (int)cfg_int(c, "port"),
		.allowed_hosts = cfg_str(c, "allowed-hosts"),
	};
	struct tools_opts to = {cfg_size(c, "max-snapshot"), cfg_bool(c, "snapshot-after-action"),
				cfg_size(c, "max-result")};
	if (!(srv = mcp_server_new(&so, &e)) || !(tools = tools_register(srv, b, &to, &e))) {
		log_error("cannot start the MCP server", "{s:s}", "error", e.msg);
		goto out;
	}
	atomic_store(&serving, true);
	if (atomic_load(&chrome_gone))
		goto out;
	if (ready_open(cfg_str(c, "ready-socket"), &e) == -1) {
		log_error("cannot signal readiness", "{s:s}", "error", e.msg);
		goto out;
	}
	log_info("serving", "{s:i, s:s}", "port", mcp_server_port(srv), "version", version_string());
	if (mcp_server_run(srv) == -1)
		log_error("the MCP server loop failed", NULL);
	rc = atomic_load(&chrome_gone) ? 1 : 0;
out:
	atomic_store(&stopping, true);
	if (cfg_str(c, "ready-socket") && cfg_str(c, "ready-socket")[0])
		unlink(cfg_str(c, "ready-socket"));
	mcp_server_free(srv);
	chrome_stop(&ch, 3000);
	cdp_free(cdp);
	tools_free(tools);
	browser_free(b);
	if (ch.wfd >= 0)
		close(ch.wfd);
	if (ch.rfd >= 0)
		close(ch.rfd);
	daemon_end(&d);
	return rc;
}
