/* The two pixel spaces of mcp-desktop: the display's real pixels and the
 * "model pixels" screenshots are scaled to (--screen-size), in which every
 * coordinate a tool takes or gives is read.
 *
 * Sizes come as WxH or as the presets Anthropic's computer-use guidance
 * names: XGA 1024x768, WXGA 1280x800 and FWXGA 1366x768, or `auto`, the
 * reference demo's choice (the preset of the display's aspect ratio when
 * it is smaller than the display, else no scaling). */
#ifndef CLOCHE_DESK_GEOM_H
#define CLOCHE_DESK_GEOM_H

#include "common/err.h"

/* Reads a model size: "" or "native" (the display's own: 0, 0), "WxH"
 * (16-8192 a side), "xga", "wxga", "fwxga" (any case) or "auto".  `auto`
 * needs the real size: with real_w 0 it only checks the word and gives
 * 0, 0.  0, or -1 with e set saying what is accepted. */
int desk_size_parse(const char *s, int real_w, int real_h, int *w, int *h, struct err *e);

/* The `auto` model size for a real_w x real_h display: the preset of its
 * aspect ratio when smaller than the display, else 0, 0 (no scaling). */
void desk_size_auto(int real_w, int real_h, int *w, int *h);

/* Model pixel -> real pixel on one axis of model and real pixels: pixel
 * centres map onto pixel centres, the result is within [0, real). */
int desk_to_real(int v, int model, int real);

/* Real pixel -> model pixel; the inverse of desk_to_real on centres. */
int desk_to_model(int v, int model, int real);

#endif
