/* Unit suite of mcp-browser's pure parts and of its DevTools client: the
 * snapshot renderer on hand-made accessibility trees (pruning, folding,
 * states, refs, the bound, one element's outline), the element argument
 * (`target` and its older name `ref`) and the tool schemas that declare it,
 * base64, and the pipe client against a fake Chromium on a socket pair
 * (answers by id, events, protocol errors, oversized answers, timeouts, the
 * end of the connection). */
#include "common/buf.h"
#include "common/json.h"
#include "mcp/browser/cdp.h"
#include "mcp/browser/snapshot.h"
#include "mcp/browser/tools.h"
#include "mcp/lib/schema.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* --- snapshot ---------------------------------------------------------------- */

static unsigned next_ref;
static unsigned ref_for(void *ud, int backend)
{
	(void)ud;
	(void)backend;
	return ++next_ref;
}

/* The outline of nodes_json from line offset, depth levels (0: all), within
 * max characters; *omitted gets the lines not written after the offset. */
static char *render_part(const char *nodes_json, size_t max, int depth, size_t offset, size_t *omitted)
{
	struct err e = ERR_INIT;
	json_t *nodes = cj_parse(nodes_json, strlen(nodes_json), 1 << 22, 32, &e);
	struct buf out = BUF_INIT(1 << 22);
	struct snap_opts o = {NULL, max, depth, offset, "https://x.test/docs/api/index.html?v=1", ref_for, NULL};
	struct snap_stats st;

	ck_assert_msg(nodes != NULL, "%s", e.msg);
	next_ref = 0;
	snapshot_render(nodes, &o, &out, &st);
	if (omitted)
		*omitted = st.lines - offset - st.shown;
	json_decref(nodes);
	return buf_take(&out, NULL);
}

static char *render(const char *nodes_json, size_t max, size_t *omitted)
{
	return render_part(nodes_json, max, 0, 0, omitted);
}

#define N(id, role, name, kids, extra) \
	"{\"nodeId\":\"" id "\",\"role\":{\"value\":\"" role "\"},\"name\":{\"value\":\"" name "\"},\"childIds\":" kids extra "}"

static const struct {
	const char *what, *nodes, *want;
} snap_cases[] = {
	{"root and generic containers are lifted, text folds into its element",
	 "[" N("1", "RootWebArea", "T", "[\"2\"]", "") "," N("2", "generic", "", "[\"3\"]", ",\"parentId\":\"1\",\"backendDOMNodeId\":5")
	 "," N("3", "paragraph", "", "[\"4\"]", ",\"parentId\":\"2\",\"backendDOMNodeId\":6") "," N("4", "StaticText", "Hello  world", "[]", ",\"parentId\":\"3\"") "]",
	 "- paragraph: Hello world\n"},
	{"a name equal to the text drops the text child; states and level show",
	 "[" N("1", "RootWebArea", "T", "[\"2\",\"5\"]", "") "," N("2", "heading", "Hi \\\"you\\\"", "[\"3\"]",
	 ",\"backendDOMNodeId\":7,\"properties\":[{\"name\":\"level\",\"value\":{\"value\":2}}]") "," N("3", "StaticText", "Hi \\\"you\\\"", "[]", "")
	 "," N("5", "checkbox", "Agree", "[]", ",\"backendDOMNodeId\":8,\"properties\":[{\"name\":\"checked\",\"value\":{\"value\":\"true\"}},{\"name\":\"focused\",\"value\":{\"value\":true}}]") "]",
	 "- heading \"Hi \\\"you\\\"\" [level=2] [ref=e1]\n- checkbox \"Agree\" [checked] [active] [ref=e2]\n"},
	{"ignored nodes and inline text boxes vanish; textbox shows its value; nesting indents",
	 "[" N("1", "RootWebArea", "T", "[\"2\"]", "") "," N("2", "form", "", "[\"3\",\"4\"]", ",\"backendDOMNodeId\":1")
	 "," N("3", "none", "", "[]", ",\"ignored\":true") "," N("4", "textbox", "Name", "[\"5\"]", ",\"backendDOMNodeId\":2,\"value\":{\"value\":\"Ada\"}")
	 "," N("5", "InlineTextBox", "Ada", "[]", "") "]",
	 "- form [ref=e1]\n - textbox \"Name\" [ref=e2]: Ada\n"},
	{"links show their url, relative to the page",
	 "[" N("1", "RootWebArea", "T", "[\"2\",\"4\",\"5\"]", "") "," N("2", "link", "Docs", "[\"3\"]",
	 ",\"backendDOMNodeId\":3,\"properties\":[{\"name\":\"url\",\"value\":{\"value\":\"https://x.test/d\"}}]") "," N("3", "StaticText", "Docs", "[]", "")
	 "," N("4", "link", "fs", "[]", ",\"backendDOMNodeId\":4,\"properties\":[{\"name\":\"url\",\"value\":{\"value\":\"https://x.test/docs/api/fs.html#read\"}}]")
	 "," N("5", "link", "up", "[]", ",\"backendDOMNodeId\":5,\"properties\":[{\"name\":\"url\",\"value\":{\"value\":\"https://x.test/docs/api/index.html#top\"}}]") "]",
	 "- link \"Docs\" [url=/d] [ref=e1]\n- link \"fs\" [url=fs.html#read] [ref=e2]\n- link \"up\" [url=#top] [ref=e3]\n"},
	{"list markers go, list items carry no ref, their links do",
	 "[" N("1", "RootWebArea", "T", "[\"2\"]", "") "," N("2", "list", "", "[\"3\"]", ",\"backendDOMNodeId\":2")
	 "," N("3", "listitem", "", "[\"4\",\"5\"]", ",\"backendDOMNodeId\":3") "," N("4", "ListMarker", "•", "[]", ",\"backendDOMNodeId\":4")
	 "," N("5", "StaticText", "An item", "[]", "") "]",
	 "- list\n - listitem: An item\n"},
	{"inline content goes on its element's line: a link as [label][ref], code in backticks; list items show no level",
	 "[" N("1", "RootWebArea", "T", "[\"2\"]", "") "," N("2", "listitem", "", "[\"3\"]", ",\"backendDOMNodeId\":2,\"properties\":[{\"name\":\"level\",\"value\":{\"value\":1}}]")
	 "," N("3", "link", "Class: Foo", "[\"4\",\"5\"]", ",\"backendDOMNodeId\":3") "," N("4", "StaticText", "Class: ", "[]", "")
	 "," N("5", "code", "", "[\"6\"]", ",\"backendDOMNodeId\":5") "," N("6", "StaticText", "Foo", "[]", "") "]",
	 "- listitem: [Class: `Foo`][ref=e1]\n"},
	{"text and links side by side in an unshown container read as one line",
	 "[" N("1", "RootWebArea", "T", "[\"2\",\"7\"]", "") "," N("2", "generic", "", "[\"3\",\"4\",\"6\"]", ",\"backendDOMNodeId\":2")
	 "," N("3", "StaticText", "Read the", "[]", "") "," N("4", "link", "docs", "[\"5\"]",
	 ",\"backendDOMNodeId\":4,\"properties\":[{\"name\":\"url\",\"value\":{\"value\":\"https://x.test/docs/api/d.html\"}}]")
	 "," N("5", "StaticText", "docs", "[]", "") "," N("6", "StaticText", ", then go.", "[]", "")
	 "," N("7", "button", "Go", "[]", ",\"backendDOMNodeId\":7") "]",
	 "- text: Read the [docs](d.html)[ref=e1], then go.\n- button \"Go\" [ref=e2]\n"},
	{"anything focusable gets a ref",
	 "[" N("1", "RootWebArea", "T", "[\"2\"]", "") "," N("2", "group", "Box", "[]",
	 ",\"backendDOMNodeId\":2,\"properties\":[{\"name\":\"focusable\",\"value\":{\"value\":true}}]") "]",
	 "- group \"Box\" [ref=e1]\n"},
	{"the page walker's nodes: plain strings, properties in p",
	 "[{\"nodeId\":\"1\",\"role\":\"RootWebArea\",\"name\":\"T\",\"childIds\":[\"2\",\"4\",\"5\"]},"
	 "{\"nodeId\":\"2\",\"parentId\":\"1\",\"role\":\"heading\",\"name\":\"Intro\",\"p\":{\"level\":2},"
	 "\"childIds\":[\"3\"],\"backendDOMNodeId\":3},{\"nodeId\":\"3\",\"parentId\":\"2\",\"role\":\"StaticText\",\"name\":\"Intro\"},"
	 "{\"nodeId\":\"4\",\"parentId\":\"1\",\"role\":\"checkbox\",\"name\":\"Agree\",\"p\":{\"checked\":\"true\",\"focused\":true},"
	 "\"backendDOMNodeId\":5},{\"nodeId\":\"5\",\"parentId\":\"1\",\"role\":\"textbox\",\"name\":\"Name\",\"value\":\"Ada\","
	 "\"backendDOMNodeId\":6}]",
	 "- heading \"Intro\" [level=2] [ref=e1]\n- checkbox \"Agree\" [checked] [active] [ref=e2]\n- textbox \"Name\" [ref=e3]: Ada\n"},
	{"a row of inline cells is one line, its cells between bars; a row of header cells says so",
	 "[{\"nodeId\":\"1\",\"role\":\"RootWebArea\",\"childIds\":[\"2\"]},"
	 "{\"nodeId\":\"2\",\"parentId\":\"1\",\"role\":\"table\",\"childIds\":[\"3\",\"6\"],\"backendDOMNodeId\":2},"
	 "{\"nodeId\":\"3\",\"parentId\":\"2\",\"role\":\"row\",\"childIds\":[\"4\",\"5\"]},"
	 "{\"nodeId\":\"4\",\"parentId\":\"3\",\"role\":\"columnheader\",\"name\":\"Name\"},"
	 "{\"nodeId\":\"5\",\"parentId\":\"3\",\"role\":\"columnheader\",\"name\":\"Where\"},"
	 "{\"nodeId\":\"6\",\"parentId\":\"2\",\"role\":\"row\",\"childIds\":[\"7\",\"8\"]},"
	 "{\"nodeId\":\"7\",\"parentId\":\"6\",\"role\":\"cell\",\"name\":\"fs\"},"
	 "{\"nodeId\":\"8\",\"parentId\":\"6\",\"role\":\"cell\",\"childIds\":[\"9\"]},"
	 "{\"nodeId\":\"9\",\"parentId\":\"8\",\"role\":\"link\",\"name\":\"Docs\",\"p\":{\"url\":\"https://x.test/docs/api/d.html\"},"
	 "\"backendDOMNodeId\":9,\"childIds\":[\"10\"]},{\"nodeId\":\"10\",\"parentId\":\"9\",\"role\":\"StaticText\",\"name\":\"Docs\"}]",
	 "- table [ref=e1]\n - row [header]: Name | Where\n - row: fs | [Docs](d.html)[ref=e2]\n"},
	{"a row holding more than inline content keeps its cells",
	 "[{\"nodeId\":\"1\",\"role\":\"RootWebArea\",\"childIds\":[\"3\"]},"
	 "{\"nodeId\":\"3\",\"parentId\":\"1\",\"role\":\"row\",\"childIds\":[\"4\"]},"
	 "{\"nodeId\":\"4\",\"parentId\":\"3\",\"role\":\"cell\",\"childIds\":[\"5\"]},"
	 "{\"nodeId\":\"5\",\"parentId\":\"4\",\"role\":\"button\",\"name\":\"Go\",\"backendDOMNodeId\":5}]",
	 "- row\n - cell\n  - button \"Go\" [ref=e1]\n"},
	{"a bare paragraph that is an only child goes on its parent's line",
	 "[{\"nodeId\":\"1\",\"role\":\"RootWebArea\",\"childIds\":[\"2\"]},"
	 "{\"nodeId\":\"2\",\"parentId\":\"1\",\"role\":\"definition\",\"childIds\":[\"3\"]},"
	 "{\"nodeId\":\"3\",\"parentId\":\"2\",\"role\":\"paragraph\",\"childIds\":[\"4\"]},"
	 "{\"nodeId\":\"4\",\"parentId\":\"3\",\"role\":\"StaticText\",\"name\":\"Says what it is.\"}]",
	 "- definition: Says what it is.\n"},
	{"inline content before a block goes on the line, the block below it",
	 "[{\"nodeId\":\"1\",\"role\":\"RootWebArea\",\"childIds\":[\"2\"]},"
	 "{\"nodeId\":\"2\",\"parentId\":\"1\",\"role\":\"listitem\",\"childIds\":[\"3\",\"5\"]},"
	 "{\"nodeId\":\"3\",\"parentId\":\"2\",\"role\":\"link\",\"name\":\"Intro\",\"p\":{\"url\":\"https://x.test/m.html#intro\"},"
	 "\"backendDOMNodeId\":3,\"childIds\":[\"4\"]},{\"nodeId\":\"4\",\"parentId\":\"3\",\"role\":\"StaticText\",\"name\":\"Intro\"},"
	 "{\"nodeId\":\"5\",\"parentId\":\"2\",\"role\":\"list\",\"childIds\":[\"6\"]},"
	 "{\"nodeId\":\"6\",\"parentId\":\"5\",\"role\":\"listitem\",\"childIds\":[\"7\"]},"
	 "{\"nodeId\":\"7\",\"parentId\":\"6\",\"role\":\"StaticText\",\"name\":\"One\"}]",
	 "- listitem: [Intro](/m.html#intro)[ref=e1]\n - list\n  - listitem: One\n"},
	{"unknown child ids and an empty tree are harmless",
	 "[" N("1", "RootWebArea", "T", "[\"9\"]", "") "]", ""},
};

START_TEST(test_snapshot_cases)
{
	size_t omitted = 99;
	char *got = render(snap_cases[_i].nodes, 10000, &omitted);

	ck_assert_msg(strcmp(got, snap_cases[_i].want) == 0, "%s:\ngot:\n%s\nwant:\n%s", snap_cases[_i].what, got,
		      snap_cases[_i].want);
	ck_assert_uint_eq(omitted, 0);
	free(got);
}
END_TEST

START_TEST(test_snapshot_bound)
{
	struct buf nodes = BUF_INIT(1 << 20);
	size_t omitted = 0;

	buf_appends(&nodes, "[{\"nodeId\":\"0\",\"role\":{\"value\":\"RootWebArea\"},\"childIds\":[", NULL);
	for (int i = 1; i <= 500; i++)
		buf_appendf(&nodes, NULL, "%s\"%d\"", i > 1 ? "," : "", i);
	buf_appends(&nodes, "]}", NULL);
	for (int i = 1; i <= 500; i++)
		buf_appendf(&nodes, NULL, ",{\"nodeId\":\"%d\",\"role\":{\"value\":\"button\"},\"name\":{\"value\":\"Button number %d\"},"
			    "\"backendDOMNodeId\":%d,\"childIds\":[]}", i, i, i);
	buf_appends(&nodes, "]", NULL);
	char *got = render(nodes.data, 1000, &omitted);
	ck_assert_uint_le(strlen(got), 1000);
	ck_assert_uint_gt(omitted, 400);
	ck_assert_uint_eq(omitted + next_ref, 500); /* only shown lines get refs */
	ck_assert_ptr_nonnull(strstr(got, "- button \"Button number 1\" [ref=e1]\n"));
	free(got);

	/* continuation: parts from each offset the last one ended at cover
	 * every line once, in order */
	size_t offset = 0, parts = 0;
	for (int want = 1; offset < 500; parts++) {
		size_t left = 0;
		char *part = render_part(nodes.data, 1000, 0, offset, &left);
		size_t shown = 500 - offset - left;
		char line[64];

		ck_assert_uint_gt(shown, 0);
		for (size_t k = 0; k < shown; k++, want++) {
			snprintf(line, sizeof(line), "\"Button number %d\"", want);
			ck_assert_msg(strstr(part, line), "part %zu lacks %s", parts, line);
		}
		snprintf(line, sizeof(line), "\"Button number %d\"", want);
		ck_assert_ptr_null(strstr(part, line));
		offset += shown;
		free(part);
	}
	ck_assert_uint_eq(offset, 500);
	ck_assert_uint_gt(parts, 10);
	buf_free(&nodes);
}
END_TEST

/* One element's outline: the node for its DOM node is found in the whole
 * page's tree and rendered as a page snapshot would show it, without what
 * lies outside it; an element that is a bare container lifts its children. */
START_TEST(test_snapshot_element)
{
	static const char nodes_json[] =
		"[" N("1", "RootWebArea", "T", "[\"2\",\"3\"]", ",\"backendDOMNodeId\":1")
		"," N("2", "heading", "Form test", "[]", ",\"parentId\":\"1\",\"backendDOMNodeId\":10")
		"," N("3", "generic", "", "[\"4\"]", ",\"parentId\":\"1\",\"backendDOMNodeId\":11")
		"," N("4", "form", "", "[\"5\"]", ",\"parentId\":\"3\",\"backendDOMNodeId\":12")
		"," N("5", "textbox", "Name", "[]", ",\"parentId\":\"4\",\"backendDOMNodeId\":13,\"value\":{\"value\":\"Ada\"}") "]";
	static const struct {
		int backend;
		const char *want;
	} cases[] = {
		{12, "- form [ref=e1]\n - textbox \"Name\" [ref=e2]: Ada\n"},
		{11, "- form [ref=e1]\n - textbox \"Name\" [ref=e2]: Ada\n"},
		{13, "- textbox \"Name\" [ref=e1]: Ada\n"},
		{1, "- heading \"Form test\" [ref=e1]\n- form [ref=e2]\n - textbox \"Name\" [ref=e3]: Ada\n"},
	};
	struct err e = ERR_INIT;
	json_t *nodes = cj_parse(nodes_json, strlen(nodes_json), 1 << 20, 32, &e);

	ck_assert_msg(nodes != NULL, "%s", e.msg);
	ck_assert_ptr_null(snapshot_find(nodes, 99));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf out = BUF_INIT(1 << 20);
		const json_t *root = snapshot_find(nodes, cases[i].backend);
		struct snap_opts o = {root, 10000, 0, 0, NULL, ref_for, NULL};
		struct snap_stats st;
		ck_assert_ptr_nonnull(root);
		next_ref = 0;
		snapshot_render(nodes, &o, &out, &st);
		ck_assert_uint_eq(st.lines, st.shown);
		ck_assert_msg(strcmp(buf_str(&out), cases[i].want) == 0, "backend %d:\ngot:\n%s\nwant:\n%s",
			      cases[i].backend, buf_str(&out), cases[i].want);
		buf_free(&out);
	}
	json_decref(nodes);
}
END_TEST

/* A depth limit shows the top levels; what it hides is counted on its
 * element, which gets a ref to be looked into. */
START_TEST(test_snapshot_depth)
{
	static const char nodes_json[] =
		"[" N("1", "RootWebArea", "T", "[\"2\"]", "")
		"," N("2", "navigation", "Side", "[\"3\"]", ",\"parentId\":\"1\",\"backendDOMNodeId\":2")
		"," N("3", "list", "", "[\"4\",\"6\"]", ",\"parentId\":\"2\",\"backendDOMNodeId\":3")
		"," N("4", "listitem", "", "[\"5\"]", ",\"parentId\":\"3\",\"backendDOMNodeId\":4")
		"," N("5", "link", "A", "[]", ",\"parentId\":\"4\",\"backendDOMNodeId\":5")
		"," N("6", "listitem", "", "[\"7\"]", ",\"parentId\":\"3\",\"backendDOMNodeId\":6")
		"," N("7", "link", "B", "[]", ",\"parentId\":\"6\",\"backendDOMNodeId\":7") "]";
	char *got = render_part(nodes_json, 10000, 2, 0, NULL);

	ck_assert_str_eq(got, "- navigation \"Side\" [ref=e1]\n - list [ref=e2] (2 inside)\n");
	free(got);
	got = render_part(nodes_json, 10000, 1, 0, NULL);
	ck_assert_str_eq(got, "- navigation \"Side\" [ref=e1] (1 inside)\n");
	free(got);
	got = render_part(nodes_json, 10000, 0, 2, NULL);
	ck_assert_str_eq(got, "  - listitem: [A][ref=e1]\n  - listitem: [B][ref=e2]\n");
	free(got);
}
END_TEST

/* browser_find: the element holding each match, once, with its ref, its
 * line in the outline and the text around the match. */
START_TEST(test_snapshot_search)
{
	static const char nodes_json[] =
		"[" N("1", "RootWebArea", "T", "[\"2\",\"4\",\"6\"]", "")
		"," N("2", "heading", "Intro", "[\"3\"]", ",\"parentId\":\"1\",\"backendDOMNodeId\":2")
		"," N("3", "StaticText", "Intro", "[]", ",\"parentId\":\"2\"")
		"," N("4", "paragraph", "", "[\"5\"]", ",\"parentId\":\"1\",\"backendDOMNodeId\":4")
		"," N("5", "StaticText", "The deep sentence sits here, far down.", "[]", ",\"parentId\":\"4\"")
		"," N("6", "link", "Deep link", "[\"7\"]", ",\"parentId\":\"1\",\"backendDOMNodeId\":6")
		"," N("7", "StaticText", "Deep link", "[]", ",\"parentId\":\"6\"") "]";
	struct err e = ERR_INIT;
	json_t *nodes = cj_parse(nodes_json, strlen(nodes_json), 1 << 20, 32, &e);
	struct buf out = BUF_INIT(1 << 20);
	struct snap_query q = {"DEEP", NULL, 20};
	regex_t re;

	ck_assert_ptr_nonnull(nodes);
	next_ref = 0;
	ck_assert_uint_eq(snapshot_search(nodes, &q, NULL, ref_for, NULL, &out), 2);
	ck_assert_str_eq(buf_str(&out), "- paragraph [ref=e1] [line=1]: The deep sentence sits here, far down.\n"
					"- link \"Deep link\" [ref=e2] [line=2]: Deep link\n");
	buf_reset(&out);
	q.limit = 1;
	ck_assert_uint_eq(snapshot_search(nodes, &q, NULL, ref_for, NULL, &out), 2);
	ck_assert_ptr_null(strstr(buf_str(&out), "Deep link"));
	buf_reset(&out);
	ck_assert_int_eq(regcomp(&re, "^Int[a-z]+$", REG_EXTENDED), 0);
	q = (struct snap_query){NULL, &re, 20};
	ck_assert_uint_eq(snapshot_search(nodes, &q, NULL, ref_for, NULL, &out), 1);
	ck_assert_ptr_nonnull(strstr(buf_str(&out), "- heading \"Intro\" [ref="));
	ck_assert_ptr_nonnull(strstr(buf_str(&out), "[line=0]: Intro\n"));
	regfree(&re);
	buf_reset(&out);
	q = (struct snap_query){"absent", NULL, 20};
	ck_assert_uint_eq(snapshot_search(nodes, &q, NULL, ref_for, NULL, &out), 0);
	ck_assert_uint_eq(out.len, 0);
	buf_free(&out);
	json_decref(nodes);
}
END_TEST

static const struct {
	const char *page, *url, *want;
} rel_cases[] = {
	{"file:///usr/share/doc/a/index.html", "file:///usr/share/doc/a/fs.html#x", "fs.html#x"},
	{"file:///usr/share/doc/a/index.html", "file:///usr/share/doc/a/index.html#x", "#x"},
	{"file:///usr/share/doc/a/index.html", "file:///usr/share/doc/a/index.html", "index.html"},
	{"file:///usr/share/doc/a/index.html", "file:///usr/share/doc/b/x.html", "/usr/share/doc/b/x.html"},
	{"https://x.test/a/b.html?q=1#f", "https://x.test/a/b.html?q=2", "?q=2"},
	{"https://x.test/a/b.html", "https://y.test/a/b.html", "https://y.test/a/b.html"},
	{"https://x.test/a/b.html", "https://x.test.evil/a/b.html", "https://x.test.evil/a/b.html"},
	{"https://x.test/a/b.html", "mailto:a@x.test", "mailto:a@x.test"},
	{NULL, "https://x.test/a", "https://x.test/a"},
};

START_TEST(test_rel_url)
{
	struct buf out = BUF_INIT(1 << 16);

	snapshot_rel_url(rel_cases[_i].page, rel_cases[_i].url, &out);
	ck_assert_msg(strcmp(buf_str(&out), rel_cases[_i].want) == 0, "%s from %s: got %s", rel_cases[_i].url,
		      rel_cases[_i].page ? rel_cases[_i].page : "(none)", buf_str(&out));
	buf_free(&out);
}
END_TEST

/* --- the element argument: `target`, and `ref` as before ------------------------- */

static const struct {
	const char *what, *args, *name, *alias;
	bool required;
	const char *ref; /* what is read, or NULL */
	const char *err; /* the start of the error, or NULL for success */
} element_cases[] = {
	{"target", "{\"target\":\"e4\"}", "target", "ref", true, "e4", NULL},
	{"ref, from older clients", "{\"ref\":\"e4\"}", "target", "ref", true, "e4", NULL},
	{"both, naming the same element", "{\"target\":\"e4\",\"ref\":\"e4\"}", "target", "ref", true, "e4", NULL},
	{"both, naming different elements", "{\"target\":\"e4\",\"ref\":\"e5\"}", "target", "ref", false, NULL,
	 "`target` and `ref` name different elements (\"e4\" and \"e5\"): give only `target`"},
	{"neither, where one is needed: the error names target", "{\"element\":\"Greet\"}", "target", "ref", true, NULL,
	 "`target` is required"},
	{"neither, where it is optional", "{}", "target", "ref", false, NULL, NULL},
	{"null reads as not given", "{\"target\":null,\"ref\":\"e4\"}", "target", "ref", true, "e4", NULL},
	{"a target that is not a string", "{\"target\":4}", "target", "ref", true, NULL, "`target` must be a string"},
	{"a ref that is not a string", "{\"target\":\"e4\",\"ref\":[]}", "target", "ref", true, NULL, "`ref` must be a string"},
	{"arguments that are not an object", "[]", "target", "ref", true, NULL, "expected a JSON object"},
	{"drag: startTarget", "{\"startTarget\":\"e1\",\"endRef\":\"e2\"}", "startTarget", "startRef", true, "e1", NULL},
	{"drag: endRef, from older clients", "{\"startTarget\":\"e1\",\"endRef\":\"e2\"}", "endTarget", "endRef", true, "e2", NULL},
	{"drag: different end elements", "{\"endTarget\":\"e2\",\"endRef\":\"e3\"}", "endTarget", "endRef", true, NULL,
	 "`endTarget` and `endRef` name different elements"},
	{"drag: no end element", "{\"startTarget\":\"e1\"}", "endTarget", "endRef", true, NULL, "`endTarget` is required"},
};

START_TEST(test_element_arg)
{
	struct err e = ERR_INIT;
	json_t *args = cj_parse(element_cases[_i].args, strlen(element_cases[_i].args), 4096, 8, &e);
	const char *ref = "unset";

	ck_assert_msg(args != NULL, "%s", e.msg);
	int rc = tools_element_arg(args, element_cases[_i].name, element_cases[_i].alias, element_cases[_i].required,
				   &ref, &e);
	if (element_cases[_i].err) {
		ck_assert_msg(rc == -1 && e.http_status == 400 &&
			      strncmp(e.msg, element_cases[_i].err, strlen(element_cases[_i].err)) == 0,
			      "%s: rc %d, status %d, \"%s\"", element_cases[_i].what, rc, e.http_status, e.msg);
	} else {
		ck_assert_msg(rc == 0, "%s: %s", element_cases[_i].what, e.msg);
		ck_assert_msg(element_cases[_i].ref ? ref && strcmp(ref, element_cases[_i].ref) == 0 : ref == NULL,
			      "%s: read %s", element_cases[_i].what, ref ? ref : "(null)");
	}
	json_decref(args);
}
END_TEST

static const char *const all_tools[] = {
	"browser_navigate", "browser_navigate_back", "browser_snapshot", "browser_click", "browser_hover",
	"browser_type", "browser_press_key", "browser_select_option", "browser_fill_form", "browser_wait_for",
	"browser_take_screenshot", "browser_evaluate", "browser_console_messages", "browser_tabs",
	"browser_resize", "browser_handle_dialog", "browser_drag", "browser_close",
};

static const char *const element_keys[][2] = {
	{"target", "ref"}, {"startTarget", "startRef"}, {"endTarget", "endRef"}};

/* Walks a schema: wherever an element key is declared, its other name is
 * too, both as strings, and no "required" names either of them. */
static void check_element_schema(const char *tool, const json_t *node)
{
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_array(node))
		json_array_foreach(node, i, v)
			check_element_schema(tool, v);
	if (!json_is_object(node))
		return;
	const json_t *props = json_object_get(node, "properties");
	for (size_t k = 0; k < sizeof(element_keys) / sizeof(element_keys[0]); k++) {
		const json_t *cur = json_object_get(props, element_keys[k][0]);
		const json_t *old = json_object_get(props, element_keys[k][1]);
		ck_assert_msg(!cur == !old, "%s declares only one of `%s` and `%s`", tool, element_keys[k][0],
			      element_keys[k][1]);
		if (cur)
			ck_assert_msg(strcmp(json_string_value(json_object_get(cur, "type")), "string") == 0 &&
				      strcmp(json_string_value(json_object_get(old, "type")), "string") == 0,
				      "%s: `%s` and `%s` are strings", tool, element_keys[k][0], element_keys[k][1]);
		json_array_foreach(json_object_get(node, "required"), i, v)
			ck_assert_msg(strcmp(json_string_value(v), element_keys[k][0]) != 0 &&
				      strcmp(json_string_value(v), element_keys[k][1]) != 0,
				      "%s requires `%s`: a client sending the other name would be refused", tool,
				      json_string_value(v));
	}
	json_object_foreach((json_t *)node, key, v)
		check_element_schema(tool, v);
}

START_TEST(test_schemas_declare_target)
{
	struct err e = ERR_INIT;
	int with_target = 0;

	for (size_t i = 0; i < sizeof(all_tools) / sizeof(all_tools[0]); i++) {
		const char *text = tools_schema(all_tools[i]);
		ck_assert_msg(text != NULL, "no tool %s", all_tools[i]);
		json_t *schema = cj_parse(text, strlen(text), 1 << 20, 32, &e);
		ck_assert_msg(schema != NULL, "%s: %s", all_tools[i], e.msg);
		ck_assert_str_eq(json_string_value(json_object_get(schema, "type")), "object");
		check_element_schema(all_tools[i], schema);
		if (json_object_get(json_object_get(schema, "properties"), "target"))
			with_target++;
		json_decref(schema);
	}
	/* snapshot, click, hover, type, select, screenshot, evaluate */
	ck_assert_int_eq(with_target, 7);
	ck_assert_ptr_null(tools_schema("browser_frobnicate"));
}
END_TEST

/* Calls as new and old clients make them pass the library's argument check
 * against each tool's schema (which used to require `ref`). */
static const struct {
	const char *tool, *args;
} element_calls[] = {
	{"browser_snapshot", "{\"target\":\"e1\"}"},
	{"browser_click", "{\"target\":\"e1\",\"element\":\"Greet button\"}"},
	{"browser_click", "{\"ref\":\"e1\"}"},
	{"browser_hover", "{\"target\":\"e1\"}"},
	{"browser_type", "{\"target\":\"e1\",\"text\":\"Ada\"}"},
	{"browser_type", "{\"ref\":\"e1\",\"text\":\"Ada\"}"},
	{"browser_select_option", "{\"target\":\"e1\",\"values\":[\"blue\"]}"},
	{"browser_take_screenshot", "{\"target\":\"e1\"}"},
	{"browser_evaluate", "{\"target\":\"e1\",\"function\":\"(el) => el.id\"}"},
	{"browser_drag", "{\"startTarget\":\"e1\",\"endTarget\":\"e2\"}"},
	{"browser_drag", "{\"startRef\":\"e1\",\"endRef\":\"e2\"}"},
	{"browser_fill_form", "{\"fields\":[{\"target\":\"e1\",\"value\":\"Ada\"}]}"},
};

START_TEST(test_schemas_accept_target)
{
	struct err e = ERR_INIT;
	const char *text = tools_schema(element_calls[_i].tool);
	json_t *schema = cj_parse(text, strlen(text), 1 << 20, 32, &e);
	json_t *args = cj_parse(element_calls[_i].args, strlen(element_calls[_i].args), 4096, 8, &e);

	ck_assert_ptr_nonnull(schema);
	ck_assert_ptr_nonnull(args);
	ck_assert_msg(mcp_schema_check(schema, args, &e) == 0, "%s %s: %s", element_calls[_i].tool,
		      element_calls[_i].args, e.msg);
	json_decref(args);
	json_decref(schema);
}
END_TEST

START_TEST(test_base64)
{
	static const struct {
		const char *in, *out;
		long len;
	} cases[] = {{"", "", 0}, {"Zg==", "f", 1}, {"Zm8=", "fo", 2}, {"Zm9v", "foo", 3},
		     {"Zm9vYmFy", "foobar", 6}, {"Zm9v!mFy", NULL, -1}, {"AP8=", "\0\xff", 2}};
	unsigned char out[16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long n = tools_base64_decode(cases[i].in, strlen(cases[i].in), out);
		ck_assert_int_eq(n, cases[i].len);
		if (n > 0)
			ck_assert_mem_eq(out, cases[i].out, (size_t)n);
	}
}
END_TEST

/* --- DevTools client against a fake Chromium ------------------------------------ */

struct fake {
	int fd; /* its end of the socket pair: reads requests, writes answers */
	int events;
	int closed;
	pthread_mutex_t mu;
};

static void on_event(void *ud, const char *session, const char *method, json_t *params)
{
	struct fake *f = ud;

	pthread_mutex_lock(&f->mu);
	if (!method)
		f->closed++;
	else if (strcmp(method, "Page.loadEventFired") == 0 && session && strcmp(session, "S1") == 0 &&
		 json_integer_value(json_object_get(params, "n")) == 7)
		f->events++;
	pthread_mutex_unlock(&f->mu);
}

/* Answers each request by its method: "Echo" returns params, "Fail" a
 * protocol error, "Huge" an answer over the limit, "Slow" nothing, "Bye"
 * closes.  An event precedes every answer. */
static void *fake_chromium(void *arg)
{
	struct fake *f = arg;
	struct buf in = BUF_INIT(1 << 20);
	char c;

	while (read(f->fd, &c, 1) == 1) {
		if (c) {
			buf_append(&in, &c, 1, NULL);
			continue;
		}
		json_t *req = json_loads(in.data, 0, NULL);
		buf_reset(&in);
		const char *m = json_string_value(json_object_get(req, "method"));
		json_int_t id = json_integer_value(json_object_get(req, "id"));
		char *ev = "{\"method\":\"Page.loadEventFired\",\"sessionId\":\"S1\",\"params\":{\"n\":7}}";
		ck_assert_int_eq(write(f->fd, ev, strlen(ev) + 1), (ssize_t)strlen(ev) + 1);
		char *ans = NULL;
		if (strcmp(m, "Echo") == 0) {
			json_t *a = json_pack("{s:I, s:O}", "id", id, "result", json_object_get(req, "params"));
			ans = json_dumps(a, JSON_COMPACT);
			json_decref(a);
		} else if (strcmp(m, "Fail") == 0) {
			ck_assert_int_ne(asprintf(&ans, "{\"id\":%lld,\"error\":{\"code\":-32000,\"message\":\"No node\"}}", (long long)id), -1);
		} else if (strcmp(m, "Huge") == 0) {
			ans = malloc(5000);
			int n = snprintf(ans, 5000, "{\"id\":%lld,\"result\":{\"x\":\"", (long long)id);
			memset(ans + n, 'a', 4000);
			strcpy(ans + n + 4000, "\"}}");
		} else if (strcmp(m, "Bye") == 0) {
			json_decref(req);
			break;
		}
		if (ans)
			ck_assert_int_eq(write(f->fd, ans, strlen(ans) + 1), (ssize_t)strlen(ans) + 1);
		free(ans);
		json_decref(req);
	}
	buf_free(&in);
	close(f->fd);
	return NULL;
}

START_TEST(test_cdp_client)
{
	int sv[2];
	struct fake f = {.events = 0};
	pthread_t t;
	struct err e = ERR_INIT;

	pthread_mutex_init(&f.mu, NULL);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f.fd = sv[1];
	pthread_create(&t, NULL, fake_chromium, &f);
	int rfd = dup(sv[0]);
	struct cdp *c = cdp_new(sv[0], rfd, 1024, on_event, &f, &e);
	ck_assert_ptr_nonnull(c);

	json_t *r = cdp_call(c, "S1", "Echo", json_pack("{s:i}", "v", 42), 2000, NULL, NULL, &e);
	ck_assert_msg(r != NULL, "%s", e.msg);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "v")), 42);
	json_decref(r);

	ck_assert_ptr_null(cdp_call(c, NULL, "Fail", NULL, 2000, NULL, NULL, &e));
	ck_assert_str_eq(e.msg, "Fail: No node");
	ck_assert_ptr_null(cdp_call(c, NULL, "Huge", NULL, 2000, NULL, NULL, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "larger than the message limit"));
	ck_assert_ptr_null(cdp_call(c, NULL, "Slow", NULL, 200, NULL, NULL, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "no answer from the browser within 200 ms"));
	/* the client still works after all that */
	r = cdp_call(c, NULL, "Echo", NULL, 2000, NULL, NULL, &e);
	ck_assert_ptr_nonnull(r);
	json_decref(r);
	ck_assert_ptr_null(cdp_call(c, NULL, "Bye", NULL, 2000, NULL, NULL, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "closed"));
	ck_assert(!cdp_alive(c));
	pthread_join(t, NULL);
	/* the end-of-connection callback runs just after waiters are failed */
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&f.mu);
		int closed = f.closed;
		pthread_mutex_unlock(&f.mu);
		if (closed)
			break;
		usleep(10000);
	}
	pthread_mutex_lock(&f.mu);
	ck_assert_int_eq(f.events, 6);
	ck_assert_int_eq(f.closed, 1);
	pthread_mutex_unlock(&f.mu);
	cdp_free(c);
	pthread_mutex_destroy(&f.mu);
}
END_TEST

static Suite *suite_mcp_browser(void)
{
	Suite *s = suite_create("mcp-browser");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 20);
	tcase_add_loop_test(tc, test_snapshot_cases, 0, sizeof(snap_cases) / sizeof(snap_cases[0]));
	tcase_add_test(tc, test_snapshot_bound);
	tcase_add_test(tc, test_snapshot_element);
	tcase_add_test(tc, test_snapshot_depth);
	tcase_add_test(tc, test_snapshot_search);
	tcase_add_loop_test(tc, test_rel_url, 0, sizeof(rel_cases) / sizeof(rel_cases[0]));
	tcase_add_loop_test(tc, test_element_arg, 0, sizeof(element_cases) / sizeof(element_cases[0]));
	tcase_add_test(tc, test_schemas_declare_target);
	tcase_add_loop_test(tc, test_schemas_accept_target, 0, sizeof(element_calls) / sizeof(element_calls[0]));
	tcase_add_test(tc, test_base64);
	tcase_add_test(tc, test_cdp_client);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite_mcp_browser());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
