/* Key names and text for mcp-desktop: xdotool-style key combinations
 * ("ctrl+l", "Return", "ctrl+shift+t", "super", "Page_Down") become
 * keysyms, and UTF-8 text becomes one keysym per character.
 *
 * A name is looked up as: a common alias, case-insensitively ("ctrl",
 * "enter", "esc", "pagedown", "cmd", "f5"...), then an X keysym name
 * exactly as xdotool takes it ("Return", "Page_Down", "a", "A", "F5",
 * "XF86AudioMute"), then a single character ("é", "/").  Unknown names
 * are errors, never guesses. */
#ifndef CLOCHE_DESK_KEYS_H
#define CLOCHE_DESK_KEYS_H

#include "common/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DESK_COMBO_MAX 8

/* Keys pressed together, in press order (released in reverse). */
struct desk_combo {
	uint32_t ks[DESK_COMBO_MAX];
	int n;
};

/* Parses one name into a keysym.  0 or -1 with e set. */
int desk_keys_name(const char *name, size_t len, uint32_t *ks, struct err *e);

/* Parses a combination "a+b+c" of len bytes.  0 or -1 with e set. */
int desk_keys_combo(const char *s, size_t len, struct desk_combo *c, struct err *e);

/* Parses whitespace-separated combinations ("ctrl+a BackSpace") into at
 * most max combos; *n receives the count (at least 1).  0 or -1 with e. */
int desk_keys_sequence(const char *s, struct desk_combo *out, int max, int *n, struct err *e);

/* Parses a combination that may hold only modifiers (the `text` of click
 * and scroll actions: "shift", "ctrl+alt").  0 or -1 with e set. */
int desk_keys_modifiers(const char *s, struct desk_combo *c, struct err *e);

/* The keysym that types code point cp (Latin-1 and ASCII are their own
 * keysyms, the rest 0x01000000 + cp; newline and tab are Return and Tab).
 * 0 for control characters that have no key. */
uint32_t desk_keys_char(uint32_t cp);

/* Whether ks is a modifier key (Shift, Control, Alt, Super, Meta...). */
bool desk_keys_is_modifier(uint32_t ks);

#endif
