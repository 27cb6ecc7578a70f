/* XTEST pointer and keyboard injection into an X display, shared by
 * cloche-vnc (viewer input) and mcp-desktop (an agent's actions): one piece
 * of code decides how a keysym becomes a keycode.
 *
 * Pointer: a button mask whose bits 0-7 are X buttons 1-8 (4/5 vertical
 * and 6/7 horizontal wheel) and an absolute position, like RFB's.
 *
 * Keyboard: callers speak keysyms, X wants keycodes.  A keysym found in
 * the core keymap (first or shifted column) is pressed on its keycode,
 * adding or temporarily lifting Shift so the character that arrives is
 * exactly the keysym ('!' arrives as '!' whether or not Shift is held).
 * A keysym with no keycode (é, €, CJK...) is bound to a spare (unbound)
 * keycode with XChangeKeyboardMapping; bindings are kept and reused (the
 * least recently used is rebound first, never one a queued event still
 * needs), the keysyms of a burst of queued key presses are bound together,
 * and events wait a little after each batch of bindings, because clients re-read the keymap asynchronously and a
 * key sent at once may be read with the old map.  Several processes may
 * share the display's spare keycodes: a keycode someone else bound is
 * left alone, and each process starts from its own end of the pool.
 *
 * Events go through a queue so that an event loop never sleeps: callers
 * with a loop poll x11_input_timeout_ms() and call x11_input_run();
 * callers without one call x11_input_settle(), which sleeps.
 *
 * Not thread-safe: one thread at a time per handle and per Display. */
#ifndef CLOCHE_X11_INPUT_H
#define CLOCHE_X11_INPUT_H

#include "common/err.h"

#include <X11/Xlib.h>
#include <stdbool.h>
#include <stdint.h>

struct x11_input;

/* Which end of the spare keycode pool this handle binds first. */
enum x11_spare_end { X11_SPARE_HIGH, X11_SPARE_LOW };

/* Reads the keyboard mapping of dpy and finds the spare keycodes.  The
 * pointer is clamped to the size of screen's root window.  Returns the
 * handle or NULL with e set.  dpy must outlive it.  The caller should
 * install a non-fatal X error handler (Xlib's default one exits). */
struct x11_input *x11_input_new(Display *dpy, int screen, enum x11_spare_end end,
				struct err *e);

/* Sets how long events wait after keycodes are (re)bound (default 60 ms;
 * 0 restores it).  Longer is safer when the receiving clients are slow to
 * re-read the keymap (Chromium recompiles it) and latency matters less. */
void x11_input_set_settle_ms(struct x11_input *in, int ms);

/* Tells the handle the screen's new size (after a RandR change). */
void x11_input_set_size(struct x11_input *in, int width, int height);

/* Queues a pointer event: absolute position and button mask. */
void x11_input_pointer(struct x11_input *in, int mask, int x, int y);

/* Queues a key event for keysym ks. */
void x11_input_key(struct x11_input *in, bool down, uint32_t ks);

/* Whether ks can be typed at all: it has a keycode, or a spare keycode
 * exists to bind it to. */
bool x11_input_can_type(const struct x11_input *in, uint32_t ks);

/* Releases every key and button this handle holds down, after any queued
 * events (e.g. when the last viewer leaves mid-keystroke). */
void x11_input_release_all(struct x11_input *in);

/* How many key presses so far found no keycode (no spare was free) and
 * were dropped; callers compare it before and after a burst. */
unsigned long x11_input_dropped(const struct x11_input *in);

/* The button mask of the last event sent. */
int x11_input_buttons(const struct x11_input *in);

/* Milliseconds until queued events may go, 0 if now, -1 if none queued. */
int x11_input_timeout_ms(const struct x11_input *in, uint64_t now_ms);

/* Sends queued events whose wait is over. */
void x11_input_run(struct x11_input *in, uint64_t now_ms);

/* Sends every queued event, sleeping through the waits, then XSync()s.
 * For callers without an event loop. */
void x11_input_settle(struct x11_input *in);

/* Consumes ev if it is a MappingNotify (reloading the keymap) and returns
 * true; false for anything else. */
bool x11_input_handle_event(struct x11_input *in, XEvent *ev);

/* Releases held keys and buttons, unbinds the spare keycodes this handle
 * still holds bound, and frees. */
void x11_input_free(struct x11_input *in);

#endif
