/* The pointer tools: click, hover and drag on elements by ref, and the
 * coordinate tools of playwright-mcp's vision capability (the pointer at x, y
 * of the viewport, for what has no ref: a canvas, a map). */
#include "mcp/browser/input.h"
#include "mcp/browser/tools_int.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/util.h"

#include <math.h>
#include <string.h>

#define TM_MAX_XY 100000.0

static int tl_modifiers(const json_t *args, int *mods, struct err *e)
{
	const json_t *m = json_object_get(args, "modifiers");
	size_t i;
	json_t *v;

	*mods = 0;
	if (!m || json_is_null(m))
		return 0;
	if (!json_is_array(m))
		return err_http(e, 400, "`modifiers` must be an array of Alt, Control, ControlOrMeta, Meta, Shift");
	json_array_foreach(m, i, v) {
		int bit = json_is_string(v) ? in_modifier(json_string_value(v)) : 0;
		if (!bit)
			return err_http(e, 400, "`modifiers[%zu]` must be one of Alt, Control, ControlOrMeta, Meta, Shift", i);
		*mods |= bit;
	}
	return 0;
}

static int tl_click(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref, *button;
	struct br_el el;
	int mods;
	bool dbl;
	double x, y;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (cj_get_bool(args, "doubleClick", false, &dbl, e) == -1 ||
	    cj_get_str(args, "button", "left", &button, e) == -1 || tl_modifiers(args, &mods, e) == -1)
		return -1;
	if (strcmp(button, "left") != 0 && strcmp(button, "right") != 0 && strcmp(button, "middle") != 0)
		return err_http(e, 400, "`button` must be \"left\", \"right\" or \"middle\"");
	if (tl_element(t, args, &ref, &el, e) == -1 ||
	    in_element_point(t->b, &t->cx, &el, &x, &y, e) == -1)
		return -1;
	uint64_t mark = br_load_mark(t->b);
	if (in_click(t->b, &t->cx, x, y, button, dbl ? 2 : 1, mods, e) == -1 ||
	    br_wait_load(t->b, &t->cx, mark, 0, true, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "%s %s\n", dbl ? "Double-clicked" : "Clicked", tl_label(args, ref)) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static int tl_hover(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref;
	struct br_el el;
	double x, y;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (tl_element(t, args, &ref, &el, e) == -1 ||
	    in_element_point(t->b, &t->cx, &el, &x, &y, e) == -1 ||
	    in_move(t->b, &t->cx, x, y, 0, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "Hovered over %s\n", tl_label(args, ref)) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static int tl_drag(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *from, *to;
	struct br_el e1, e2;
	double x1, y1, x2, y2;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (tools_element_arg(args, "startTarget", "startRef", true, &from, e) == -1 ||
	    tools_element_arg(args, "endTarget", "endRef", true, &to, e) == -1)
		return -1;
	if (br_ref_resolve(t->b, &t->cx, from, &e1, e) == -1 ||
	    br_ref_resolve(t->b, &t->cx, to, &e2, e) == -1 ||
	    in_element_point(t->b, &t->cx, &e1, &x1, &y1, e) == -1 ||
	    in_element_point(t->b, &t->cx, &e2, &x2, &y2, e) == -1)
		return -1;
	/* the end point is measured after scrolling it into view, so the
	 * start is measured again in case that scrolled it */
	if (in_element_point(t->b, &t->cx, &e1, &x1, &y1, e) == -1 ||
	    in_drag(t->b, &t->cx, x1, y1, x2, y2, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "Dragged %s to %s\n", from, to) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

/* --- the pointer at coordinates -------------------------------------------------------- */

/* A coordinate argument: a finite number of CSS pixels in the viewport. */
static int tm_coord(const json_t *args, const char *name, double *v, struct err *e)
{
	const json_t *j = json_object_get(args, name);

	if (!json_is_number(j) || !isfinite(json_number_value(j)) || json_number_value(j) < 0 ||
	    json_number_value(j) > TM_MAX_XY)
		return err_http(e, 400, "`%s` must be a number of pixels from the viewport's left/top edge", name);
	*v = json_number_value(j);
	return 0;
}

static int tm_move_xy(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	double x, y;

	if (tm_coord(args, "x", &x, e) == -1 || tm_coord(args, "y", &y, e) == -1 ||
	    in_move(t->b, &t->cx, x, y, 0, e) == -1)
		return -1;
	return mcp_result_text(res, "Moved the mouse to (%g, %g)", x, y);
}

static int tm_click_xy(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	double x, y;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (tm_coord(args, "x", &x, e) == -1 || tm_coord(args, "y", &y, e) == -1)
		return -1;
	uint64_t mark = br_load_mark(t->b);
	if (in_click(t->b, &t->cx, x, y, "left", 1, 0, e) == -1 ||
	    br_wait_load(t->b, &t->cx, mark, 0, true, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "Clicked at (%g, %g)\n", x, y) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

static int tm_drag_xy(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	double x1, y1, x2, y2;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	if (tm_coord(args, "startX", &x1, e) == -1 || tm_coord(args, "startY", &y1, e) == -1 ||
	    tm_coord(args, "endX", &x2, e) == -1 || tm_coord(args, "endY", &y2, e) == -1 ||
	    in_drag(t->b, &t->cx, x1, y1, x2, y2, e) == -1)
		return -1;
	if (buf_appendf(&out, e, "Dragged from (%g, %g) to (%g, %g)\n", x1, y1, x2, y2) == -1)
		return -1;
	return tl_finish(t, &out, res, e);
}

/* --- the table ------------------------------------------------------------------------ */

#define XY_PROPS(x, y)                                                                      \
	"\"" x "\": {\"type\": \"number\", \"description\": \"X coordinate (CSS pixels of the viewport)\"}," \
	"\"" y "\": {\"type\": \"number\", \"description\": \"Y coordinate (CSS pixels of the viewport)\"}"
#define ELEMENT_PROP "\"element\": {\"type\": \"string\", \"description\": \"Human-readable description of what is there, for the record\"}"

static const struct tl_def mouse_defs[] = {
	{"browser_click", "Click", "Click an element of the page, named by its ref from the snapshot (`target`).",
	 "{\"type\": \"object\", \"properties\": {" TARGET_REQUIRED ","
	 "\"doubleClick\": {\"type\": \"boolean\", \"description\": \"Double-click instead of a single click\"},"
	 "\"button\": {\"type\": \"string\", \"enum\": [\"left\", \"right\", \"middle\"], \"description\": \"Button to click, left by default\"},"
	 "\"modifiers\": {\"type\": \"array\", \"items\": {\"type\": \"string\", \"enum\": [\"Alt\", \"Control\", \"ControlOrMeta\", \"Meta\", \"Shift\"]}, \"description\": \"Modifier keys held during the click\"}}}",
	 false, true, false, tl_click},
	{"browser_hover", "Hover", "Move the mouse over an element of the page.",
	 "{\"type\": \"object\", \"properties\": {" TARGET_REQUIRED "}}", false, false, false, tl_hover},
	{"browser_drag", "Drag mouse", "Drag and drop between two elements of the page.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"startElement\": {\"type\": \"string\", \"description\": \"Human-readable description of the source element\"},"
	 "\"startTarget\": " TARGET_DESC("source element", "required; older clients send it as `startRef`") ","
	 "\"startRef\": " ALIAS_DESC("startTarget") ","
	 "\"endElement\": {\"type\": \"string\", \"description\": \"Human-readable description of the target element\"},"
	 "\"endTarget\": " TARGET_DESC("target element", "required; older clients send it as `endRef`") ","
	 "\"endRef\": " ALIAS_DESC("endTarget") "}}",
	 false, true, false, tl_drag},
	{"browser_mouse_move_xy", "Move mouse",
	 "Move the mouse to a position of the viewport (for what has no ref; see browser_take_screenshot).",
	 "{\"type\": \"object\", \"properties\": {" ELEMENT_PROP "," XY_PROPS("x", "y") "}, \"required\": [\"x\", \"y\"]}",
	 false, false, false, tm_move_xy},
	{"browser_mouse_click_xy", "Click",
	 "Click the left button at a position of the viewport (for what has no ref; see browser_take_screenshot).",
	 "{\"type\": \"object\", \"properties\": {" ELEMENT_PROP "," XY_PROPS("x", "y") "}, \"required\": [\"x\", \"y\"]}",
	 false, true, false, tm_click_xy},
	{"browser_mouse_drag_xy", "Drag mouse",
	 "Drag with the left button from one position of the viewport to another.",
	 "{\"type\": \"object\", \"properties\": {" ELEMENT_PROP "," XY_PROPS("startX", "startY") ","
	 XY_PROPS("endX", "endY") "}, \"required\": [\"startX\", \"startY\", \"endX\", \"endY\"]}",
	 false, true, false, tm_drag_xy},
};

const struct tl_def *tl_mouse_defs(size_t *n)
{
	*n = ARRAY_LEN(mouse_defs);
	return mouse_defs;
}
