/* The computer-use actions of mcp-desktop, independent of MCP: each takes
 * the arguments object of Anthropic's computer tool (action, coordinate,
 * start_coordinate, text, scroll_direction, scroll_amount, duration,
 * region) and answers with a reply: a line of text, optionally a PNG.
 *
 * Coordinates are in "model pixels": the display's own pixels, or, when a
 * model size was configured (--screen-size), pixels of screenshots scaled
 * to that size; they are mapped back to real pixels here (geom.h).  Every
 * image comes with a note that states the display's real size and the
 * image's scale, so no reader has to guess which pixels it is looking at.
 *
 * `screenshot` and `wait` take `if_changed`: when the screen's pixels hash
 * the same as the last whole-screen image the same client was sent (any
 * screenshot, wait or action screenshot), the reply is a line of text
 * with the hash instead of the PNG.
 *
 * Safe to call from several threads at once (the screen serialises X);
 * a call that waits (wait, hold_key, the settle delay before the screenshot
 * an action returns) does so without holding the X connection. */
#ifndef CLOCHE_DESK_ACTIONS_H
#define CLOCHE_DESK_ACTIONS_H

#include "image.h"
#include "screen.h"
#include "seen.h"

#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum desk_action {
	DESK_SCREENSHOT,
	DESK_MOUSE_MOVE,
	DESK_LEFT_CLICK,
	DESK_RIGHT_CLICK,
	DESK_MIDDLE_CLICK,
	DESK_DOUBLE_CLICK,
	DESK_TRIPLE_CLICK,
	DESK_LEFT_CLICK_DRAG,
	DESK_LEFT_MOUSE_DOWN,
	DESK_LEFT_MOUSE_UP,
	DESK_SCROLL,
	DESK_KEY,
	DESK_TYPE,
	DESK_HOLD_KEY,
	DESK_WAIT,
	DESK_CURSOR_POSITION,
	DESK_ZOOM,
	DESK_ACTION_COUNT
};

/* The actions at one point that may press a button: a click of any kind, or
 * the left button going down or up.  They take `coordinate` (optional: the
 * pointer stays where it is) and `text` (modifier keys held meanwhile). */
static inline bool desk_action_is_button(enum desk_action act)
{
	return (act >= DESK_LEFT_CLICK && act <= DESK_TRIPLE_CLICK) ||
	       act == DESK_LEFT_MOUSE_DOWN || act == DESK_LEFT_MOUSE_UP;
}

#define DESK_MAX_DURATION_S 100
#define DESK_MAX_TYPE_CHARS 20000

struct desk_actions_opts {
	int model_w, model_h; /* 0: the display's own size */
	bool model_auto;      /* --screen-size auto: model_w/h follow the display's size */
	long settle_ms;       /* pause before the screenshot an action returns */
	bool screenshot_after; /* whether actions that change the screen return one */
	int png_level;        /* zlib level 0-9 */
	bool pointer;         /* draw the pointer into screenshots and zooms */
};

/* What a call may ask of its caller while it runs (both may be NULL), and
 * who the caller is (client: an MCP session id; NULL is one anonymous
 * client). */
struct desk_call_ctx {
	bool (*cancelled)(void *ud);
	void (*progress)(void *ud, double done, double total, const char *msg);
	void *ud;
	const char *client;
};

struct desk_reply {
	bool failed;          /* a runtime failure; text says what */
	char text[512];       /* "" when there is none */
	unsigned char *png;   /* malloc'ed PNG or NULL */
	size_t png_len;
	int png_w, png_h;
	bool has_cursor;      /* cursor_position: x, y in model pixels */
	int cursor_x, cursor_y;
	int display_w, display_h; /* model size the call worked in */
	int real_w, real_h;       /* the display's real size */
	char note[400];           /* with an image or unchanged: what it shows, sizes, scale */
	bool whole;               /* png (or unchanged) is of the whole screen */
	uint64_t hash;            /* whole: desk_image_hash() of the real pixels */
	bool unchanged;           /* if_changed and the client had this screen: no png */
	int64_t seen_ms;          /* unchanged: wall time (ms) that image was sent */
	bool has_region;          /* zoom: */
	int region[4];            /* the region asked, model pixels, x1 y1 exclusive */
	int real_region[4];       /* the real pixels it covers */
};

struct desk_actions;

/* Creates the action layer over s (which must outlive it).  NULL with e. */
struct desk_actions *desk_actions_new(struct desk_screen *s, const struct desk_actions_opts *o,
				      struct err *e);
void desk_actions_free(struct desk_actions *a);

/* The action's name ("left_click"), or NULL. */
const char *desk_action_name(enum desk_action act);

/* Looks up an action name; -1 when unknown. */
int desk_action_parse(const char *name);

/* The size screenshots have and coordinates are given in. */
void desk_actions_model_size(struct desk_actions *a, int *w, int *h);

/* The display's real size. */
void desk_actions_real_size(struct desk_actions *a, int *w, int *h);

/* Runs act with args.  Returns 0 with r filled (r->failed for runtime
 * failures), or -1 with e set when the arguments are wrong (bad type,
 * missing, out of range, unknown key name).  Free r with
 * desk_reply_free(). */
int desk_actions_run(struct desk_actions *a, enum desk_action act, const json_t *args,
		     const struct desk_call_ctx *ctx, struct desk_reply *r, struct err *e);

/* Reads the `action` member of args and runs it, like the computer tool. */
int desk_actions_run_json(struct desk_actions *a, const json_t *args,
			  const struct desk_call_ctx *ctx, struct desk_reply *r, struct err *e);

void desk_reply_free(struct desk_reply *r);

#endif
