/* JSON helpers over jansson for request bodies, API answers and files.
 *
 * Parsing is bounded (bytes and nesting depth) and its errors say where the
 * text went wrong; typed getters turn "missing", "null" and "wrong type" into
 * the 400 errors an API answers with ("`ttl` must be an integer"), so
 * handlers read fields in one line each.  The prefix is cj_ ("cloche JSON")
 * because json_ belongs to jansson.  Getters return borrowed pointers into
 * the object: they stay valid while the caller holds its reference. */
#ifndef CLOCHE_JSON_H
#define CLOCHE_JSON_H

#include "common/buf.h"
#include "common/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A nesting depth no API document of ours comes near. */
#define CJ_MAX_DEPTH 32

/* Drops the reference when the variable goes out of scope. */
void cj_decrefp(json_t **v);
#define AUTOJSON __attribute__((cleanup(cj_decrefp)))

/* Parses len bytes at p (not necessarily NUL-terminated) as one JSON value
 * of any type.  Fails with 413 when len exceeds max_len, and with 400 when
 * the text nests deeper than max_depth arrays/objects, is not valid JSON
 * (message like "invalid JSON at line 2, column 7: ..."), contains a NUL
 * in a string, or repeats a key in an object.  Returns a new reference, or
 * NULL with e set. */
json_t *cj_parse(const char *p, size_t len, size_t max_len, int max_depth, struct err *e);

/* Reads and parses the file at path (at most max_len bytes, depth
 * CJ_MAX_DEPTH); errors name the file.  Returns a new reference or NULL. */
json_t *cj_load_file(const char *path, size_t max_len, struct err *e);

/* Writes v to path whole: a temporary file beside it (created with mode,
 * not following a link), then a rename, so a reader sees the old text or
 * the new, never part of one.  Ends the text with a newline.  0, or -1
 * with e set naming the file (the temporary file is removed). */
int cj_save_file(const char *path, const json_t *v, mode_t mode, struct err *e);

/* Serializes v compactly (any JSON type, keys in insertion order).
 * Returns a string the caller frees, or NULL when out of memory. */
char *cj_dump(const json_t *v);

/* Appends v's compact text to b, which bounds the size; as buf_append(). */
int cj_dump_buf(const json_t *v, struct buf *b, struct err *e);

/*
 * Typed field access.  All of them take a JSON object (anything else fails
 * with "expected a JSON object"), return 0 or -1, and set e with
 * http_status 400 on failure:
 *   "`key` is required"            (cj_req_*: key missing or null)
 *   "`key` must be a string"       (wrong type; also integer, boolean, ...)
 * cj_get_* treat a missing or null key as absent and store def instead.
 */

/* String field; *out points into obj. */
int cj_get_str(const json_t *obj, const char *key, const char *def, const char **out,
	       struct err *e);
int cj_req_str(const json_t *obj, const char *key, const char **out, struct err *e);

/* Integer field (a JSON integer; 5.0 is not one). */
int cj_get_int(const json_t *obj, const char *key, long long def, long long *out,
	       struct err *e);
int cj_req_int(const json_t *obj, const char *key, long long *out, struct err *e);

/* Boolean field. */
int cj_get_bool(const json_t *obj, const char *key, bool def, bool *out, struct err *e);
int cj_req_bool(const json_t *obj, const char *key, bool *out, struct err *e);

/* Object field; *out is borrowed from obj, NULL when absent (cj_get_obj). */
int cj_get_obj(const json_t *obj, const char *key, json_t **out, struct err *e);
int cj_req_obj(const json_t *obj, const char *key, json_t **out, struct err *e);

/* Array of strings, copied into a NULL-terminated vector made of ONE
 * allocation: the caller frees it with a single free().  An absent key gives
 * *out = NULL (cj_get_strv).  A non-string element fails with
 * "`key[2]` must be a string". */
int cj_get_strv(const json_t *obj, const char *key, char ***out, struct err *e);
int cj_req_strv(const json_t *obj, const char *key, char ***out, struct err *e);

#endif
