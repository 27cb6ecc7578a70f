/* The X connection cloche-vnc serves: opening it, checking the extensions
 * the other modules rely on (MIT-SHM, DAMAGE, XFIXES, XTEST, and XInput 2
 * when present), and turning
 * a lost connection into a logged, non-zero exit the supervisor can see.
 *
 * The struct is public: capture, input and cursor all talk to the same
 * Display, and hiding it behind accessors would only add noise. */
#ifndef CLOCHE_VNC_DISPLAY_H
#define CLOCHE_VNC_DISPLAY_H

#include "common/err.h"

#include <X11/Xlib.h>
#include <stdbool.h>

struct vnc_display {
	Display *dpy;
	int screen;
	Window root;
	Visual *visual;
	int depth;
	int width, height;
	int damage_event, damage_error; /* DAMAGE extension bases */
	int fixes_event, fixes_error;   /* XFIXES extension bases */
	int xi_opcode;                  /* XInputExtension 2.2 major opcode, 0 if absent */
	bool have_shm;                  /* MIT-SHM usable (else XGetImage) */
};

/* Opens the display name given, checks the extensions and the pixel format
 * (24-bit TrueColor, 32 bits per pixel, red mask 0xff0000) and installs
 * the error handlers.  Returns 0 or -1 with e set; d is filled either way
 * and must be closed with vnc_display_close(). */
int vnc_display_open(struct vnc_display *d, const char *name, struct err *e);

/* Closes the connection (no-op if not open). */
void vnc_display_close(struct vnc_display *d);

/* Runs XSync() and reports whether an X protocol error happened since the
 * previous call (the non-fatal error handler only records errors). */
bool vnc_display_sync_failed(struct vnc_display *d);

/* Clears the recorded error state without a round trip. */
void vnc_display_clear_error(void);

/* Whether an X error happened since the last clear. */
bool vnc_display_had_error(void);

#endif
