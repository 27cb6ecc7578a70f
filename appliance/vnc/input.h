/* Viewer input into the X display: cloche-vnc's side of the shared XTest
 * module (appliance/x11/x11_input.h), which has the details of how
 * keysyms become keycodes.  RFB's pointer mask and keysyms are the shared
 * module's own units, so this layer only binds it to cloche-vnc's display
 * and to the high end of the spare keycode pool (mcp-desktop, on the same
 * display, starts from the low end). */
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

/* Applies an RFB key event for keysym ks, or queues it until the keymap
 * has settled after a spare keycode was (re)bound. */
void vnc_input_key(struct vnc_input *in, bool down, uint32_t ks);

/* Releases every key and button this module holds down (e.g. when the
 * last viewer leaves mid-keystroke), after any queued events. */
void vnc_input_release_all(struct vnc_input *in);

/* The screen is now width x height: pointer positions are clamped to it. */
void vnc_input_set_size(struct vnc_input *in, int width, int height);

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
