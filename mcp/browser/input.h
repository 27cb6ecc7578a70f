/* Mouse and keyboard through DevTools Input.* commands, aimed at elements
 * by ref: the element is scrolled into view and its first content quad's
 * centre is where the pointer goes, as a person would click it. */
#ifndef CLOCHE_MCP_BROWSER_INPUT_H
#define CLOCHE_MCP_BROWSER_INPUT_H

#include "common/err.h"
#include "mcp/browser/browser.h"

#include <stdbool.h>

/* DevTools modifier bits. */
enum { IN_ALT = 1, IN_CTRL = 2, IN_META = 4, IN_SHIFT = 8 };

/* Scrolls the element into view and gives the centre of its box in CSS
 * pixels of the tab's viewport (inside a frame of another process too).
 * Fails with a readable error for elements that have no box (hidden,
 * display:none). */
int in_element_point(struct browser *b, const struct br_cx *cx, const struct br_el *el, double *x,
		     double *y, struct err *e);

/* Moves the pointer to (x, y). */
int in_move(struct browser *b, const struct br_cx *cx, double x, double y, int modifiers,
	    struct err *e);

/* Clicks at (x, y): button "left", "right" or "middle"; clicks 1 or 2. */
int in_click(struct browser *b, const struct br_cx *cx, double x, double y, const char *button,
	     int clicks, int modifiers, struct err *e);

/* Presses the left button at (x1, y1), moves to (x2, y2) in steps (so
 * pages see a drag), and releases it there. */
int in_drag(struct browser *b, const struct br_cx *cx, double x1, double y1, double x2, double y2,
	    struct err *e);

/* Presses one key or a chord such as "Control+a", "Shift+Tab", "Enter",
 * "ArrowDown" or "é".  Unknown names are an error (400) that lists how
 * keys are named. */
int in_press(struct browser *b, const struct br_cx *cx, const char *chord, struct err *e);

/* Types text at the focus: all at once (insertText) or key by key. */
int in_type(struct browser *b, const struct br_cx *cx, const char *text, bool slowly,
	    struct err *e);

/* Parses a modifier name ("Alt", "Control", "ControlOrMeta", "Meta",
 * "Shift"); 0 when unknown. */
int in_modifier(const char *name);

#endif
