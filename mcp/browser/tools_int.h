/* What the tool modules of mcp-browser share: a call's context, the table
 * entry of a tool, the helpers that read arguments and finish an answer
 * (tl_base.c), each group's table, the schema macros.  The groups are
 * tl_nav.c (pages, tabs, the window), tl_page.c (reading the page),
 * tl_mouse.c (the pointer), tl_form.c (the keyboard and form fields) and
 * tl_wait.c (waits and dialogs); tools.c registers them all. */
#ifndef CLOCHE_MCP_BROWSER_TOOLS_INT_H
#define CLOCHE_MCP_BROWSER_TOOLS_INT_H

#include "common/err.h"
#include "mcp/browser/browser.h"
#include "mcp/browser/tools.h"
#include "mcp/lib/mcp.h"

#include <stdbool.h>

struct tl {
	struct browser *b;
	struct br_cx cx;
	struct mcp_call *call;
	const struct tools_opts *o;
};

typedef int (*tl_fn)(struct tl *t, const json_t *args, struct mcp_result *res, struct err *e);

struct tl_def {
	const char *name, *title, *desc, *schema;
	bool read_only, destructive;
	bool during_dialog; /* usable while a JavaScript dialog blocks the page */
	tl_fn fn;
};

/* A DevTools command to the current tab. */
json_t *tl_cdp(struct tl *t, const char *method, json_t *params, struct err *e);

/* Calls fn (JavaScript function text) with `this` = the element and args
 * (a JSON array of plain values, stolen; NULL: none).  Returns the
 * by-value result or NULL; a thrown exception is an error with its text. */
json_t *tl_call_on(struct tl *t, const struct br_el *el, const char *fn, json_t *args,
		   struct err *e);

/* Ends an action's answer: out, then the page state (or the dialog that
 * blocks the page). */
int tl_finish(struct tl *t, struct buf *out, struct mcp_result *res, struct err *e);

/* What to call the element in an answer: its `element` text, or ref. */
const char *tl_label(const json_t *args, const char *ref);

/* The element argument (`target`, or `ref`), optional or required. */
int tl_target(const json_t *args, bool required, const char **ref, struct err *e);

/* Reads the required element argument and resolves it to a live element. */
int tl_element(struct tl *t, const json_t *args, const char **ref, struct br_el *el, struct err *e);

/* An optional whole-number argument within [lo, hi] (*v keeps its default
 * when absent or null).  0 or -1 (a bad request). */
int tl_count(const json_t *args, const char *name, long long lo, long long hi, long long *v,
	     struct err *e);

/* Each group's table and its length. */
const struct tl_def *tl_nav_defs(size_t *n);
const struct tl_def *tl_page_defs(size_t *n);
const struct tl_def *tl_mouse_defs(size_t *n);
const struct tl_def *tl_form_defs(size_t *n);
const struct tl_def *tl_wait_defs(size_t *n);

/* An element argument is `target` (playwright-mcp's name since 2026) or `ref`
 * (its name before), so neither can be in "required": saying "one of the
 * two" takes a top-level anyOf, which some model APIs refuse in a tool
 * schema.  The descriptions say it and tools_element_arg() enforces it. */
#define TARGET_DESC(what, need) \
	"{\"type\": \"string\", \"description\": \"Exact " what " ref from the page snapshot, e.g. e12 (" need ")\"}"
#define ALIAS_DESC(name) "{\"type\": \"string\", \"description\": \"Older name of `" name "`, still accepted\"}"
#define TARGET_PROPS(need)                                                                  \
	"\"element\": {\"type\": \"string\", \"description\": \"Human-readable description of " \
	"the element, for the record\"},"                                                       \
	"\"target\": " TARGET_DESC("element", need) ", \"ref\": " ALIAS_DESC("target")
#define TARGET_REQUIRED TARGET_PROPS("required; older clients send it as `ref`")

#endif
