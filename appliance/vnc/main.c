/* cloche-vnc: serves the sandbox's X display to VNC viewers and to noVNC in
 * a browser.  main() only parses flags, sets up logging and signals, and
 * hands over to app.c; see docs/vnc.md for the design.
 *
 * Of the common start-up (common/daemon.h) it takes the signals and the
 * die, not the configuration: its flags are getopt's (options.c), with
 * environment fall-backs of their own and a secret wiped from the
 * environment as it is read, which an option table does not describe. */
#include "app.h"
#include "options.h"

#include "common/daemon.h"
#include "common/err.h"
#include "common/log.h"

#include <signal.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	struct vnc_options o;
	struct err e = ERR_INIT;
	struct daemon d = {.cfg = NULL, .sigfd = -1};
	struct vnc_app *app;
	int status;

	log_init("cloche-vnc", LOG_INFO, 2);
	switch (vnc_options_parse(&o, argc, argv, &e)) {
	case VNC_OPTIONS_EXIT:
		return 0;
	case VNC_OPTIONS_BAD:
		vnc_options_free(&o);
		daemon_die(2, "bad configuration", &e);
	case VNC_OPTIONS_RUN:
		break;
	}
	log_init("cloche-vnc", o.log_level, 2);

	/* Blocked before any thread exists; the loop in app.c reads them from
	 * a signalfd of its own. */
	if (daemon_signals(&d, DAEMON_SIG_BLOCK, &e) == -1)
		daemon_die(1, "start-up failed", &e);
	app = vnc_app_start(&o, &e);
	if (!app) {
		vnc_options_free(&o);
		daemon_die(1, "start-up failed", &e);
	}
	status = vnc_app_run(app);
	vnc_app_stop(app);
	vnc_options_free(&o);
	daemon_end(&d);
	log_info("cloche-vnc stopped", "{s:i}", "status", status);
	return status;
}
