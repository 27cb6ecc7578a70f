/* What every browser_* tool uses (see tools_int.h): DevTools calls on the
 * current tab and on an element, the element and count arguments, and the
 * end of an action's answer with the page state. */
#include "mcp/browser/tools_int.h"

#include "common/b64.h"
#include "common/buf.h"
#include "common/json.h"
#include "mcp/browser/snapshot.h"

#include <string.h>

long tools_base64_decode(const char *in, size_t len, unsigned char *out)
{
	ssize_t n = b64_decode(in, len, B64_PAD_OPTIONAL, out, b64_decoded_max(len));

	return n < 0 ? -1 : (long)n;
}

json_t *tl_cdp(struct tl *t, const char *method, json_t *params, struct err *e)
{
	return br_cdp(t->b, &t->cx, true, method, params, e);
}

json_t *tl_call_on(struct tl *t, const struct br_el *el, const char *fn, json_t *args,
		   struct err *e)
{
	json_t *argv = json_array();
	size_t i;
	json_t *a;

	json_array_foreach(args, i, a)
		json_array_append_new(argv, json_pack("{s:O}", "value", a));
	json_decref(args);
	AUTOJSON json_t *r = br_cdp_s(t->b, &t->cx, el->session, "Runtime.callFunctionOn",
				      json_pack("{s:s, s:s, s:o, s:b, s:b}", "functionDeclaration", fn,
						"objectId", el->obj, "arguments", argv, "returnByValue", 1,
						"awaitPromise", 1),
				      e);
	if (!r)
		return NULL;
	const json_t *ex = json_object_get(r, "exceptionDetails");
	if (ex) {
		const char *d = json_string_value(json_object_get(json_object_get(ex, "exception"), "description"));
		const char *tx = json_string_value(json_object_get(ex, "text"));
		err_set(e, 0, "%s", d ? d : tx ? tx : "the page threw an exception");
		return NULL;
	}
	json_t *v = json_object_get(json_object_get(r, "result"), "value");
	return json_incref(v ? v : json_null());
}

/* Appends the page state after an action, when configured. */
static int tl_page_state(struct tl *t, struct buf *out, struct err *e)
{
	if (!t->o->snapshot_after_action)
		return 0;
	if (buf_appends(out, "\n### Page state\n", e) == -1)
		return -1;
	/* a short outline: an action's answer should not be a whole huge
	 * page; the note says how to read on */
	/* an action's page state is the start of the page: a walk bounded by
	 * what the answer holds, so a huge page does not cost its whole walk */
	return snapshot_take(t->b, &t->cx, NULL, 0, 0, t->o->max_snapshot / 4, t->o->max_snapshot / 8, out, e);
}

int tl_finish(struct tl *t, struct buf *out, struct mcp_result *res, struct err *e)
{
	char type[16], msg[512];

	if (br_dialog(t->b, type, sizeof(type), msg, sizeof(msg))) {
		/* the page is blocked: a snapshot would only time out */
		if (buf_appendf(out, e, "\n### Modal state\n- [%s dialog]: \"%s\": answer it with browser_handle_dialog\n",
				type, msg) == -1)
			return -1;
	} else if (tl_page_state(t, out, e) == -1) {
		return -1;
	}
	return mcp_result_textn(res, out->data ? out->data : "", out->len);
}

const char *tl_label(const json_t *args, const char *ref)
{
	const char *el = json_string_value(json_object_get(args, "element"));
	return el && el[0] ? el : ref;
}

int tools_element_arg(const json_t *args, const char *name, const char *alias, bool required,
		      const char **ref, struct err *e)
{
	const char *cur, *old;

	*ref = NULL;
	if (cj_get_str(args, name, NULL, &cur, e) == -1 || cj_get_str(args, alias, NULL, &old, e) == -1)
		return -1;
	if (cur && old && strcmp(cur, old) != 0)
		return err_http(e, 400, "`%s` and `%s` name different elements (\"%.40s\" and \"%.40s\"): give only `%s`",
				name, alias, cur, old, name);
	*ref = cur ? cur : old;
	if (!*ref && required)
		return err_http(e, 400, "`%s` is required: the element's ref from browser_snapshot, e.g. \"e12\"", name);
	return 0;
}

/* The element argument of most tools: `target`, or its older name `ref`. */
int tl_target(const json_t *args, bool required, const char **ref, struct err *e)
{
	return tools_element_arg(args, "target", "ref", required, ref, e);
}

/* Reads the required element argument and resolves it to a live element. */
int tl_element(struct tl *t, const json_t *args, const char **ref, struct br_el *el, struct err *e)
{
	if (tl_target(args, true, ref, e) == -1 ||
	    cj_get_str(args, "element", NULL, &(const char *){NULL}, e) == -1)
		return -1;
	return br_ref_resolve(t->b, &t->cx, *ref, el, e);
}

/* An optional whole-number argument within [lo, hi]; *v keeps its default
 * when it is absent or null.  0 or -1 (a bad request). */
int tl_count(const json_t *args, const char *name, long long lo, long long hi, long long *v,
		    struct err *e)
{
	const json_t *j = json_object_get(args, name);

	if (!j || json_is_null(j))
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi)
		return err_http(e, 400, "`%s` must be a whole number from %lld to %lld", name, lo, hi);
	*v = json_integer_value(j);
	return 0;
}
