/* Unit tests for the portal's OpenAPI document (portal/openapi.json, as
 * compiled in): it is JSON, and its Error schema lists exactly the codes of
 * the shared status table (common/http_status.h), so a client generated
 * from the document knows every code the portal (or a node's answer it
 * passes on) can give. */
#include "common/http_status.h"
#include "portal/pt_openapi.h"
#include "tests/unit/portal/suites.h"

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

static json_t *error_code_enum(json_t *doc)
{
	json_t *err = json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
				      "Error");
	json_t *code = json_object_get(
		json_object_get(json_object_get(json_object_get(err, "properties"), "error"),
				"properties"),
		"code");

	return json_object_get(code, "enum");
}

static bool has(json_t *arr, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

START_TEST(error_codes_match_the_table)
{
	json_error_t je;
	json_t *doc = json_loads(pt_openapi_json, 0, &je), *codes;
	json_t *table = json_array();
	size_t i;
	json_t *v;

	ck_assert_msg(doc, "openapi.json: %s at line %d", je.text, je.line);
	codes = error_code_enum(doc);
	ck_assert_msg(json_is_array(codes), "the Error schema's code has no enum");
	for (int st = 0; st < 1000; st++)
		if (!has(table, http_status_code(st)))
			json_array_append_new(table, json_string(http_status_code(st)));
	json_array_foreach(table, i, v)
		ck_assert_msg(has(codes, json_string_value(v)), "`%s` is not in the document",
			      json_string_value(v));
	json_array_foreach(codes, i, v)
		ck_assert_msg(has(table, json_string_value(v)), "`%s` is not in the table",
			      json_string_value(v));
	json_decref(table);
	json_decref(doc);
}
END_TEST

Suite *suite_portal_openapi(void)
{
	Suite *s = suite_create("portal_openapi");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, error_codes_match_the_table);
	suite_add_tcase(s, tc);
	return s;
}
