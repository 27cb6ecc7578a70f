/* A small picture of a sandbox's screen (na_thumb.c). */
#ifndef CLOCHE_NA_THUMB_H
#define CLOCHE_NA_THUMB_H
#include "common/err.h"

#include <jansson.h>

struct na_node;

/* {id, mime, data (base64 PNG), width, height, ms}: the screen of ready
 * sandbox id scaled to width pixels, from its mcp-desktop.  Blocks for the
 * exchange (tens of ms): call it off the loop thread.  NULL with e set
 * (404 unknown, 409 not ready, 400 bad width, 502 the sandbox's answer). */
json_t *na_node_thumbnail(struct na_node *n, const char *id, int width, struct err *e);

#endif
