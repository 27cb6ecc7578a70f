/* The rest of playwright-mcp's core tools: file upload (files from the
 * sandbox into a page's file input), the network requests of the page, the
 * page saved as PDF, and the coordinate tools of its vision capability
 * (pointer at x, y of the viewport, for what has no ref: a canvas, a map). */
#include "mcp/browser/input.h"
#include "mcp/browser/tools_int.h"

#include "common/buf.h"
#include "common/json.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TM_MAX_FILES 64
#define TM_MAX_XY 100000.0

/* --- file upload ------------------------------------------------------------------ */

/* Checks `paths`: absolute names of readable regular files. */
static int tm_paths(const json_t *paths, struct err *e)
{
	size_t i;
	json_t *p;
	struct stat st;

	if (!json_is_array(paths))
		return err_http(e, 400, "`paths` must be an array of absolute file names");
	if (json_array_size(paths) > TM_MAX_FILES)
		return err_http(e, 400, "at most %d files at once", TM_MAX_FILES);
	json_array_foreach(paths, i, p) {
		const char *f = json_string_value(p);

		if (!f || f[0] != '/')
			return err_http(e, 400, "`paths[%zu]` must be an absolute file name", i);
		if (stat(f, &st) == -1)
			return err_http(e, 400, "`%.300s`: %s", f, strerror(errno));
		if (!S_ISREG(st.st_mode))
			return err_http(e, 400, "`%.300s` is not a regular file", f);
		if (access(f, R_OK) == -1)
			return err_http(e, 400, "`%.300s` cannot be read: %s", f, strerror(errno));
	}
	return 0;
}

static int tm_upload(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *ref;
	const json_t *paths = json_object_get(args, "paths");
	AUTOJSON json_t *files = NULL, *r = NULL;
	AUTOBUF struct buf out = BUF_INIT(4u << 20);
	struct br_el el = {.session = ""};
	int backend = 0;
	bool multiple = false, chooser = false;

	if (tl_target(args, false, &ref, e) == -1)
		return -1;
	files = paths && !json_is_null(paths) ? json_incref((json_t *)paths) : json_array();
	if (tm_paths(files, e) == -1)
		return -1;
	if (ref) {
		AUTOJSON json_t *m = NULL;

		if (br_ref_resolve(t->b, &t->cx, ref, &el, e) == -1 ||
		    !(m = tl_call_on(t, &el,
				     "function() { return this instanceof HTMLInputElement && this.type === 'file'"
				     " ? this.multiple : null; }",
				     NULL, e)))
			return -1;
		if (!json_is_boolean(m))
			return err_http(e, 400, "%s is not a file input", tl_label(args, ref));
		multiple = json_is_true(m);
		backend = el.backend;
	} else if (!(backend = br_file_chooser(t->b, &multiple))) {
		return err_http(e, 400, "no file chooser is open: click the page's file input first "
				"(browser_click), or give the input's `target`");
	} else {
		chooser = true;
	}
	if (json_array_size(files) > 1 && !multiple)
		return err_http(e, 400, "this file input takes one file, and %zu were given",
				json_array_size(files));
	r = br_cdp_s(t->b, &t->cx, el.session, "DOM.setFileInputFiles",
		     json_pack("{s:O, s:i}", "files", files, "backendNodeId", backend), e);
	if (!r)
		return err_wrap(e, "file upload%s", ref ? " (is the target a file input?)" : "");
	if (json_array_size(files) == 0)
		buf_appendf(&out, e, "%s\n", chooser ? "Cancelled the file chooser" : "Cleared the file input");
	else
		buf_appendf(&out, e, "Set %zu file%s on %s\n", json_array_size(files),
			    json_array_size(files) == 1 ? "" : "s", ref ? tl_label(args, ref) : "the file chooser");
	return tl_finish(t, &out, res, e);
}

/* --- network requests, PDF ---------------------------------------------------------- */

static int tm_network(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	AUTOBUF struct buf out = BUF_INIT(4u << 20);

	(void)args;
	if (br_network(t->b, &out, e) == -1)
		return -1;
	return mcp_result_textn(res, buf_str(&out), out.len);
}

/* Where a file the agent names goes: absolute as given, else in $HOME
 * (the sandbox user's, where mcp-shell starts too), else /tmp. */
static int tm_out_path(const char *name, char *path, size_t len, struct err *e)
{
	const char *home = getenv("HOME");

	if (!name[0] || strlen(name) > 255 || strstr(name, "/../") || strncmp(name, "../", 3) == 0)
		return err_http(e, 400, "`filename` must be a file name without `..`");
	if (name[0] == '/')
		snprintf(path, len, "%s", name);
	else
		snprintf(path, len, "%s/%s", home && home[0] == '/' ? home : "/tmp", name);
	return 0;
}

static int tm_pdf(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e)
{
	const char *name = NULL;
	char def[64], path[PATH_MAX];
	time_t now = time(NULL);
	struct tm tmv;
	AUTOJSON json_t *r = NULL;
	AUTOFREE unsigned char *pdf = NULL;
	const char *data;
	long n;

	if (cj_get_str(args, "filename", NULL, &name, e) == -1)
		return -1;
	gmtime_r(&now, &tmv);
	strftime(def, sizeof(def), "page-%Y%m%d-%H%M%S.pdf", &tmv);
	if (tm_out_path(name ? name : def, path, sizeof(path), e) == -1)
		return -1;
	r = tl_cdp(t, "Page.printToPDF", json_pack("{s:b}", "printBackground", 1), e);
	if (!r)
		return err_wrap(e, "save as PDF");
	data = json_string_value(json_object_get(r, "data"));
	if (!data || !(pdf = malloc(strlen(data) / 4 * 3 + 3)) ||
	    (n = tools_base64_decode(data, strlen(data), pdf)) < 0)
		return err_set(e, 0, "save as PDF: Chromium's answer holds no PDF");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd == -1)
		return err_http(e, 400, "cannot write `%s`: %s", path, strerror(errno));
	if (util_write_all(fd, pdf, (size_t)n) == -1) {
		err_set(e, errno, "write `%s`", path);
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return mcp_result_text(res, "Saved the page as PDF: %s (%ld bytes)", path, n);
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

static const struct tl_def tm_defs[] = {
	{"browser_file_upload", "Upload files",
	 "Set files from the sandbox's file system on the page's file input: the one whose file chooser the last click opened, or the input given as `target`. Without `paths` the chooser is cancelled.",
	 "{\"type\": \"object\", \"properties\": {"
	 "\"paths\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": \"Absolute paths of the files; none cancels the file chooser\"},"
	 TARGET_PROPS("optional: the file input, when no file chooser was opened by a click") "}}",
	 false, true, false, tm_upload},
	{"browser_network_requests", "List network requests",
	 "List the network requests of the current page since it was loaded: method, URL, status (or the error) and kind.",
	 "{\"type\": \"object\", \"properties\": {}}", true, false, true, tm_network},
	{"browser_pdf_save", "Save as PDF",
	 "Save the current page as a PDF file in the sandbox (in the home directory unless the name is absolute).",
	 "{\"type\": \"object\", \"properties\": {\"filename\": {\"type\": \"string\", \"description\": \"File name, page-<time>.pdf by default\"}}}",
	 false, false, false, tm_pdf},
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

const struct tl_def *tl_more_defs(size_t *n)
{
	*n = ARRAY_LEN(tm_defs);
	return tm_defs;
}
