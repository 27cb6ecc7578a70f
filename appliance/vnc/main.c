/* cloche-vnc: serves the sandbox's X display to VNC viewers and to noVNC in
 * a browser.  main() only parses flags, sets up logging and signals, and
 * hands over to app.c; see docs/vnc.md for the design. */
#include "app.h"
#include "options.h"

#include "common/err.h"
#include "common/log.h"

#include <signal.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	struct vnc_options o;
	struct err e = ERR_INIT;
	struct vnc_app *app;
	sigset_t mask;
	int status;

	log_init("cloche-vnc", LOG_INFO, 2);
	switch (vnc_options_parse(&o, argc, argv, &e)) {
	case VNC_OPTIONS_EXIT:
		return 0;
	case VNC_OPTIONS_BAD:
		vnc_options_free(&o);
		fprintf(stderr, "cloche-vnc: %s\nTry `cloche-vnc --help`.\n", e.msg);
		return 2;
	case VNC_OPTIONS_RUN:
		break;
	}
	log_init("cloche-vnc", o.log_level, 2);

	/* Read from a signalfd by the loop; blocked before any thread exists. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	app = vnc_app_start(&o, &e);
	if (!app) {
		log_error("start-up failed", "{s:s}", "error", e.msg);
		vnc_options_free(&o);
		return 1;
	}
	status = vnc_app_run(app);
	vnc_app_stop(app);
	vnc_options_free(&o);
	log_info("cloche-vnc stopped", "{s:i}", "status", status);
	return status;
}
