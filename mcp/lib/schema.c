/* Top-level JSON Schema checks for tool arguments; see schema.h. */
#include "mcp/lib/schema.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool type_is(const json_t *v, const char *type)
{
	if (strcmp(type, "string") == 0)
		return json_is_string(v);
	if (strcmp(type, "integer") == 0)
		return json_is_integer(v) ||
		       (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v));
	if (strcmp(type, "number") == 0)
		return json_is_number(v);
	if (strcmp(type, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(type, "object") == 0)
		return json_is_object(v);
	if (strcmp(type, "array") == 0)
		return json_is_array(v);
	if (strcmp(type, "null") == 0)
		return json_is_null(v);
	return true; /* an unknown type name constrains nothing */
}

static const char *article(const char *type)
{
	return strchr("aeiou", type[0]) ? "an" : "a";
}

static int check_prop(const char *key, const json_t *ps, const json_t *v, struct err *e)
{
	const json_t *type = json_object_get(ps, "type"), *en = json_object_get(ps, "enum");
	const json_t *min = json_object_get(ps, "minimum"), *max = json_object_get(ps, "maximum");

	if (json_is_string(type) && !type_is(v, json_string_value(type)))
		return err_set(e, 0, "`%s` must be %s %s", key, article(json_string_value(type)),
			       json_string_value(type));
	if (json_is_array(type)) {
		size_t i;
		const json_t *t;
		bool hit = false;
		json_array_foreach(type, i, t)
			if (json_is_string(t) && type_is(v, json_string_value(t)))
				hit = true;
		if (!hit && json_array_size(type))
			return err_set(e, 0, "`%s` has the wrong type", key);
	}
	if (json_is_array(en)) {
		size_t i;
		const json_t *x;
		bool hit = false;
		json_array_foreach(en, i, x)
			if (json_equal(x, v))
				hit = true;
		if (!hit) {
			char *list = json_dumps(en, JSON_COMPACT);
			err_set(e, 0, "`%s` must be one of %s", key, list ? list : "the listed values");
			free(list);
			return -1;
		}
	}
	if (json_is_number(v) && json_is_number(min) && json_number_value(v) < json_number_value(min))
		return err_set(e, 0, "`%s` must be at least %g", key, json_number_value(min));
	if (json_is_number(v) && json_is_number(max) && json_number_value(v) > json_number_value(max))
		return err_set(e, 0, "`%s` must be at most %g", key, json_number_value(max));
	return 0;
}

int mcp_schema_check(const json_t *schema, const json_t *args, struct err *e)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *req = json_object_get(schema, "required");
	const json_t *addl = json_object_get(schema, "additionalProperties");
	const char *key;
	json_t *v;
	size_t i;
	const json_t *r;

	if (!json_is_object(args))
		return err_set(e, 0, "`arguments` must be an object");
	json_array_foreach(req, i, r) {
		const json_t *got = json_is_string(r) ? json_object_get(args, json_string_value(r)) : NULL;
		if (json_is_string(r) && (!got || json_is_null(got)))
			return err_set(e, 0, "`%s` is required", json_string_value(r));
	}
	json_object_foreach((json_t *)args, key, v) {
		const json_t *ps = json_object_get(props, key);
		if (!ps) {
			if (json_is_false(addl))
				return err_set(e, 0, "unknown argument `%s`", key);
			continue;
		}
		if (json_is_null(v))
			continue; /* null reads as "not given" for optional arguments */
		if (check_prop(key, ps, v, e))
			return -1;
	}
	return 0;
}
