/* cloche-vnc as a whole: builds every module from the options, runs the
 * single-threaded event loop, and tears everything down again.
 *
 * The loop blocks in poll() on the X connection, the listeners, the viewer
 * sockets and a signalfd, with a timeout only while a screen grab is due
 * or an HTTP connection has a deadline, so an idle server does not wake. */
#ifndef CLOCHE_VNC_APP_H
#define CLOCHE_VNC_APP_H

#include "options.h"

#include "common/err.h"

struct vnc_app;

/* Connects to the display, opens the ports and prepares everything.
 * SIGTERM and SIGINT must already be blocked in the calling thread (they
 * are read from a signalfd).  Returns the app or NULL with e set. */
struct vnc_app *vnc_app_start(const struct vnc_options *o, struct err *e);

/* Serves until SIGTERM/SIGINT (returns 0) or a fatal condition such as no
 * memory for a resized screen (returns 1 after logging it).  Losing the X connection
 * exits the process from the X I/O error handler with status 1. */
int vnc_app_run(struct vnc_app *app);

/* Disconnects viewers, restores the keyboard mapping and frees everything. */
void vnc_app_stop(struct vnc_app *app);

#endif
