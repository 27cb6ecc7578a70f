/* Viewer input into the X display through XTEST.
 *
 * Pointer: RFB button mask bits 0-7 become X buttons 1-8 (4/5 vertical and
 * 6/7 horizontal wheel), motion becomes absolute XTest motion.
 *
 * Keyboard: RFB sends keysyms, X wants keycodes.  A keysym found in the
 * core keymap (first or shifted column) is pressed on its keycode, adding
 * or temporarily lifting Shift so the character that arrives is exactly
 * the keysym (noVNC sends '!' with Shift already down; a bare client may
 * send 'A' without Shift).  A keysym with no keycode (é, €, CJK...) is
 * bound to a spare keycode with XChangeKeyboardMapping; bindings are kept
 * and reused (least recently used is rebound first), and events wait a
 * little after each binding, because clients re-read the keymap
 * asynchronously and a key sent at once may be read with the old map.
 * All bindings are undone when the handle is freed. */
#ifndef CLOCHE_VNC_INPUT_H
#define CLOCHE_VNC_INPUT_H

#include "display.h"

#include "common/err.h"

#include <X11/Xlib.h>
#include <stdbool.h>
#include <stdint.h>

struct vnc_input;

/* Reads the keyboard mapping of d and finds the spare keycodes.  Returns
 * the handle or NULL with e set.  d must outlive it. */
struct vnc_input *vnc_input_new(struct vnc_display *d, struct err *e);

/* Applies an RFB pointer event: absolute position and button mask.  Like
 * key events it may be queued behind a key waiting for a fresh binding. */
void vnc_input_pointer(struct vnc_input *in, int mask, int x, int y);

/* Applies an RFB key event for keysym ks, or queues it: after a spare
 * keycode is (re)bound, events wait BIND_SETTLE_MS so that clients have
 * re-read the keymap before the key arrives. */
void vnc_input_key(struct vnc_input *in, bool down, uint32_t ks);

/* Releases every key and button this module holds down (e.g. when the
 * last viewer leaves mid-keystroke), after any queued events. */
void vnc_input_release_all(struct vnc_input *in);

/* Milliseconds until queued events may go, 0 if now, -1 if none queued. */
int vnc_input_timeout_ms(const struct vnc_input *in, uint64_t now_ms);

/* Sends queued events whose wait is over. */
void vnc_input_run(struct vnc_input *in, uint64_t now_ms);

/* Consumes ev if it is a MappingNotify (reloading the keymap) and returns
 * true; false for anything else. */
bool vnc_input_handle_event(struct vnc_input *in, XEvent *ev);

/* Releases held keys, restores the spare keycodes to unbound and frees. */
void vnc_input_free(struct vnc_input *in);

#endif
