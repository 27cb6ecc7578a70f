/* Command-line options of cloche-vnc.
 *
 * The parsed options are a plain value: every other module reads them and
 * none keeps a pointer into argv beyond the lifetime of main(). */
#ifndef CLOCHE_VNC_OPTIONS_H
#define CLOCHE_VNC_OPTIONS_H

#include "common/err.h"
#include "common/log.h"

#include <stdbool.h>

struct vnc_options {
	const char *display;       /* X display name; NULL means $DISPLAY */
	const char *listen;        /* numeric IPv4 or IPv6 address to bind */
	int rfb_port;              /* plain RFB (and WebSocket) port; 0 disables */
	int http_port;             /* noVNC files + WebSocket; 0 disables */
	const char *web_dir;       /* directory served on http_port */
	const char *password_file; /* VNC password in its first line, or NULL */
	const char *allowed_hosts; /* extra Host/Origin names for WebSockets, or NULL */
	char *secret;              /* per-sandbox secret (CLOCHE_VNC_SECRET), or NULL;
				    * a copy the caller frees with vnc_options_free() */
	const char *state_dir;     /* what outlives a restart (state.h), or NULL
				    * (--state-dir, CLOCHE_VNC_STATE_DIR) */
	const char *name;          /* desktop name shown by viewers */
	int frame_ms;              /* least time between two screen grabs */
	bool view_only;            /* ignore every input event */
	bool shared_control;       /* no control lease: everyone drives at once */
	bool resize;               /* viewers with control may set the desktop size
				    * (--resize, CLOCHE_VNC_RESIZE) */
	int size_w, size_h;        /* the default desktop size (--size); 0 = the
				    * root window's size at start */
	enum log_level log_level;
};

enum vnc_options_result {
	VNC_OPTIONS_RUN,  /* options parsed: run */
	VNC_OPTIONS_EXIT, /* --help or --version printed: exit 0 */
	VNC_OPTIONS_BAD,  /* usage error, message in e: exit 2 */
};

/* Fills o from argv (getopt_long; --help writes usage to stdout, --version
 * "cloche-vnc VERSION").  Strings in
 * o point into argv or static storage.  Returns what main() should do; on
 * VNC_OPTIONS_BAD, e holds a sentence for the user. */
enum vnc_options_result vnc_options_parse(struct vnc_options *o, int argc, char **argv,
					  struct err *e);

/* Frees what vnc_options_parse() allocated (the secret, wiped first). */
void vnc_options_free(struct vnc_options *o);

/* Writes the usage text to the stream given (stdout for --help). */
void vnc_options_usage(const char *prog, int to_stderr);

#endif
