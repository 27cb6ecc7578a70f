/* The rules for a desktop size a viewer asks for, without X or sockets:
 * parsing "WxH", the operator's on/off switch, and the verdict on one
 * SetDesktopSize request (an RFB ExtendedDesktopSize status code).
 *
 * Kept apart from resize.c so that the rules are unit-tested as plain
 * functions (tests/unit/appliance/test_size.c). */
#ifndef CLOCHE_VNC_SIZE_H
#define CLOCHE_VNC_SIZE_H

#include <stdbool.h>

/* The smallest desktop a viewer may ask for, and the largest (further
 * bounded by what the X server allows: Xvfb cannot grow past the size it
 * was started with). */
#define VNC_SIZE_MIN_W 640
#define VNC_SIZE_MIN_H 480
#define VNC_SIZE_MAX_W 3840
#define VNC_SIZE_MAX_H 2160

/* ExtendedDesktopSize status codes (RFC 6143 errata / rfbproto.h). */
enum vnc_size_status {
	VNC_SIZE_OK = 0,
	VNC_SIZE_PROHIBITED = 1,    /* resize is off, or the viewer only watches */
	VNC_SIZE_NO_RESOURCES = 2,  /* the X server refused */
	VNC_SIZE_INVALID = 3,       /* out of bounds, or not exactly one screen */
};

struct vnc_size_limits {
	int min_w, min_h, max_w, max_h;
};

/* Reads "WxH" (decimal, 1-65535 a side, nothing else) into w, h.
 * Returns 0, or -1 leaving w and h untouched. */
int vnc_size_parse(const char *s, int *w, int *h);

/* Reads an operator switch: "on", "true", "yes", "1" -> true; "off",
 * "false", "no", "0" -> false (any case).  Returns 0, or -1 for any other
 * word (on untouched). */
int vnc_switch_parse(const char *s, bool *on);

/* The limits for an X screen whose RandR range is max_w x max_h: the
 * fixed bounds above, narrowed to the server's. */
struct vnc_size_limits vnc_size_limits_for(int max_w, int max_h);

/* The verdict on a viewer's SetDesktopSize of w x h with nscreens screens:
 * enabled is the operator's switch, view_only whether the viewer may only
 * watch.  Returns a vnc_size_status. */
enum vnc_size_status vnc_size_verdict(bool enabled, bool view_only, int nscreens, int w, int h,
				      const struct vnc_size_limits *l);

/* A word for the status, for logs. */
const char *vnc_size_status_name(enum vnc_size_status st);

#endif
