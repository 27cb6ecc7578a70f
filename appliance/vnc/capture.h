/* Screen capture: keeps the RFB framebuffer equal to the X root window.
 *
 * XDamage says where the screen may have changed.  Those areas are only
 * hints (Chromium and the X server both over-report), so the module grabs
 * them with MIT-SHM, compares them with the current framebuffer in 32x32
 * tiles, and marks as modified only the tiles whose pixels differ.  Grabs
 * are coalesced: at most one every frame_ms while damage keeps coming, and
 * none at all while nothing changes (no timer runs when idle).  While no
 * viewer is connected the damage is left to accumulate in the X server and
 * read only when one connects, so an unwatched desktop costs nothing. */
#ifndef CLOCHE_VNC_CAPTURE_H
#define CLOCHE_VNC_CAPTURE_H

#include "display.h"

#include "common/err.h"

#include <X11/Xlib.h>
#include <rfb/rfb.h>
#include <stdbool.h>
#include <stdint.h>

struct vnc_capture;

/* Creates the capture for d: allocates the framebuffer (32 bits per pixel,
 * width*4 bytes a row), grabs the whole screen into it and starts tracking
 * damage.  Returns the handle (free with vnc_capture_free) or NULL with e
 * set.  d must outlive the capture. */
struct vnc_capture *vnc_capture_new(struct vnc_display *d, int frame_ms, struct err *e);

/* The framebuffer, owned by the capture; valid until vnc_capture_free()
 * or vnc_capture_resize(). */
char *vnc_capture_framebuffer(struct vnc_capture *c);

/* Tells the capture which screen to mark changes on (NULL detaches). */
void vnc_capture_attach(struct vnc_capture *c, rfbScreenInfoPtr screen);

/* Consumes ev if it is the capture's DamageNotify and returns true; false
 * for anything else (a new root size is resize.c's). */
bool vnc_capture_handle_event(struct vnc_capture *c, const XEvent *ev, uint64_t now_ms);

/* Sets whether any viewer is connected.  Turning it on schedules a grab of
 * everything damaged while nobody was watching. */
void vnc_capture_set_active(struct vnc_capture *c, bool active, uint64_t now_ms);

/* Milliseconds until the capture needs vnc_capture_run(), 0 if now, or -1
 * when nothing is pending (the caller may then block indefinitely). */
int vnc_capture_timeout_ms(const struct vnc_capture *c, uint64_t now_ms);

/* Follows a new root window size: a new framebuffer of width x height
 * filled from the screen, tile maps and the MIT-SHM segment made again,
 * damage so far dropped.  *old_fb gets the previous framebuffer, which the
 * caller frees once the screen no longer points at it (the new one is
 * vnc_capture_framebuffer()).  Returns 0, or -1 with e set (out of memory;
 * nothing changed). */
int vnc_capture_resize(struct vnc_capture *c, int width, int height, char **old_fb,
		       struct err *e);

/* Grabs and compares the damaged areas if a grab is due, marking changed
 * tiles on the attached screen. */
void vnc_capture_run(struct vnc_capture *c, uint64_t now_ms);

/* Logs counters (grabs, pixels grabbed, tiles compared and changed, mean
 * grab and compare times) at info level. */
void vnc_capture_log_stats(const struct vnc_capture *c);

/* Releases the shared memory, the damage object and the framebuffer. */
void vnc_capture_free(struct vnc_capture *c);

#endif
